/* The CPU backend: executions for every op, kernels chosen at run time. */
#ifndef NPL_CPU_BACKEND_H
#define NPL_CPU_BACKEND_H
#include "core/backend.h"
#include "kernels/nn_kernels.h"
#include "kernels/vec_dot.h"

/* The arithmetic of a CPU backend (npl_cpu_ctx.arith), for verification runs
 * against llama.cpp: NPL_ARITH_OURS (default) our kernels; NPL_ARITH_LLAMACPP_FA llama.cpp's RoPE
 * (float theta recurrence), GEGLU (f16 gelu table) and CPU flash attention: below 64 queries its
 * key-by-key f16-accumulating path (npl_attention_llamacpp), from 64 on its
 * tiled path's f32 q; NPL_ARITH_LLAMACPP_NOFA its RoPE and its mul_mat +
 * soft_max attention (probabilities rounded to f16,
 * npl_attention_llamacpp_noflash). Read by every rope / geglu / attention op
 * of that backend only: two engines in one process may use different ones. */
enum { NPL_ARITH_OURS = 0, NPL_ARITH_LLAMACPP_FA = 1, NPL_ARITH_LLAMACPP_NOFA = 2 };

typedef struct {
    npl_isa isa;
    const npl_kernels *k;
    const npl_nn_kernels *nn;
    int arith;   /* NPL_ARITH_*; npl_cpu_backend_init sets NPL_ARITH_OURS */
    int no_gfni; /* 1: the GEMV kernels without GFNI even where the CPU has it (tests, benchmarks) */
    const struct npl_wpack_table *wpack; /* or NULL: packed copies of weights (kernels/wpack.h), by address */
    struct npl_rope_cache *rope; /* the session's RoPE angles (cpu/rope_cache.h), made by its rope nodes:
                                    the one member the backend writes; one session per context */
} npl_cpu_ctx;

/* Fills `be` with the CPU executions using kernels for `isa` (clamped to what
 * this CPU has); `ctx` must outlive the backend. */
void npl_cpu_backend_init(npl_backend *be, npl_cpu_ctx *ctx, npl_isa isa);

/* MatMul on tensors, y[n, m] = w[k, n] . x[k, m] (kernels/matmul.h on npl_tensor; tests and tools call it too). */
int npl_cpu_matmul(const npl_cpu_ctx *cc, npl_pool *pool, const npl_tensor *w, const npl_tensor *x,
                   npl_tensor *y, void *scratch, char *err, size_t errlen);
size_t npl_cpu_matmul_scratch(const npl_tensor *w, const npl_tensor *x);
/* n matmul nodes on the same activations in one dispatch where the kernels
 * allow it (npl_matmul_kernel_group): 0 done, 1 run them one by one. */
int npl_cpu_matmul_group(const npl_cpu_ctx *cc, npl_pool *pool, npl_exec_ctx *c, int n);
/* The pool's idle workers start reading the weights the matmuls c[0..n)
 * read first (npl_matmul_kernel_prefetch). */
void npl_cpu_matmul_prefetch(const npl_cpu_ctx *cc, npl_pool *pool, const npl_exec_ctx *c, int n);

#endif
