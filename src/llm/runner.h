/* Runner: a model ready to run forwards — the graph, one graph session and
 * the KV cache (owned once, shared by prefill and decode) over a base that
 * holds the mapped GGUF and the thread pool, shared by a model's runners. The engine, perplexity, bench and eval-logits sit on it. */
#ifndef NPL_RUNNER_H
#define NPL_RUNNER_H
#include <stddef.h>
#include <stdint.h>

#include "core/session.h"
#include "cpu/cpu_backend.h"
#include "models/model.h"
#include "plugin/plugin.h"

typedef struct {
    int n_ctx;            /* 0: the model's, capped at 4096 */
    int n_threads;        /* 0: one per core */
    int isa;              /* -1: best this CPU has; else an npl_isa to cap at */
    size_t kv_budget;     /* max bytes for the KV cache; 0: 4 GiB */
    const char *plugin_dir; /* a package's accelerator libraries: only here (NULL: next to
                               libnpullm.so / the executable, then the package directory) */
    const npl_plugin_provider *providers; /* built-in accelerators (a static build), n_providers */
    int n_providers;
    int arith;            /* NPL_ARITH_* (cpu_backend.h): this runner's CPU arithmetic */
    int profile;          /* a package's accelerator profile (backend option "profile"), 0: off */
    int no_repack;        /* 1: matmul weights stay as the file has them (kernels/wpack.h: packed
                             where the family has packed kernels, by default) */
    int repack_mib;       /* at most this many MiB packed; 0: NPL_WPACK_DEFAULT_MIB */
} npl_runner_params;

typedef struct npl_runner npl_runner;
/* What the runners of one model share: the read-only mapping, hyperparameters,
 * kernel choice (isa, arith of the params) and one thread pool that their
 * forwards take turns on (a FIFO lock around each forward). Immutable
 * after open apart from that lock. */
typedef struct npl_runner_base npl_runner_base;

npl_runner_params npl_runner_default_params(void);
/* with_pool 0: no pool (vocabulary only: no runners on it). */
npl_runner_base *npl_runner_base_open(const char *path, const npl_runner_params *p, int with_pool, char *err,
                                      size_t errlen);
void npl_runner_base_close(npl_runner_base *b); /* after its runners */
const npl_hparams *npl_runner_base_hparams(const npl_runner_base *b);
const npl_gguf *npl_runner_base_gguf(const npl_runner_base *b);
int npl_runner_base_n_threads(const npl_runner_base *b);
const char *npl_runner_base_path(const npl_runner_base *b); /* the GGUF it mapped */
/* Bytes of the weights b keeps packed for its kernel family (kernels/wpack.h; 0: none). */
size_t npl_runner_base_packed_bytes(const npl_runner_base *b);
const npl_runner_base *npl_runner_base_of(const npl_runner *r);
/* A runner on b (n_ctx, kv_budget, profile, plugin_dir, providers of p; the
 * rest is b's): its graph, session and KV cache. */
npl_runner *npl_runner_new(npl_runner_base *b, const npl_runner_params *p, char *err, size_t errlen);
/* base_open + new; the runner owns its base. */
npl_runner *npl_runner_open(const char *path, const npl_runner_params *p, char *err, size_t errlen);
void npl_runner_close(npl_runner *r);
/* Layer's K (v = 0) or V cache, [n_ctx][*row_bytes]; NULL for a package. */
uint16_t *npl_runner_kv(npl_runner *r, int layer, int v, size_t *row_bytes);

const npl_hparams *npl_runner_hparams(const npl_runner *r);
const npl_gguf *npl_runner_gguf(const npl_runner *r);
int npl_runner_n_ctx(const npl_runner *r);
const char *npl_runner_isa(const npl_runner *r);
int npl_runner_n_threads(const npl_runner *r); /* the threads the pool runs */

/* Runs n tokens at positions pos0..pos0+n-1 (their K/V rows are written into
 * the cache), and returns logits for the last n_out positions:
 * [n_out][n_vocab], valid until the next call. n_out in 1..n. */
const float *npl_runner_forward(npl_runner *r, const int32_t *tokens, int n, int pos0, int n_out,
                                char *err, size_t errlen);
/* Same with explicit positions (-1 = padding) and output rows. */
const float *npl_runner_forward_ex(npl_runner *r, const int32_t *tokens, const int32_t *pos, int n,
                                   const int32_t *out_rows, int n_out, char *err, size_t errlen);

#endif
