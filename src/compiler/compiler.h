/* The offline compiler: GGUF model -> package (DESIGN.md "The offline
 * compiler"). Stages: build graph + IO samples, partition, lower per shape
 * through the accelerator ABI, check against the samples, replace each
 * subgraph by one "accel" plugin node, merge the shapes' graphs into one
 * context binary, write the package (tmp dir + rename).
 *
 * The target: an accelerator plugin (src/plugin/plugin.h: a provider, or
 * libnpl_accel_<target>.so next to libnpullm.so / the executable, or in
 * plugin_dir), loaded before any stage. Partition asks it about every node
 * it would get (validate.c); a node it refuses is a break op and stays on
 * the CPU. The package records the target (config.json "accel", each plugin
 * node's "accel" attribute, npullm.package.target) and the runtime loads
 * that plugin.
 *
 * The output directory (package_dir.h): -o must not exist, or with --force
 * be an npullm package (config.json "npullm_package_version", or an older
 * package's model.gguf with npullm.package.version) holding only the files
 * a compile writes; anything else is refused and left alone. Its parent is
 * probed before any stage. The package is written into OUT.tmp.PID and
 * moved into place in one rename; a failed or aborted compile removes it.
 *
 * Package layout:
 *   PKG/config.json     npullm_package_version, llm_model, chunk_limits [N, 1],
 *                       max_context_length, precision, weights, accel (the target),
 *                       context binaries
 *   PKG/model.gguf      graph file (format/graph_file.h): every metadata key
 *                       of the source GGUF (hparams, tokenizer.*), the graph,
 *                       the CPU-side weights (embedding table), npullm.package.*
 *   PKG/accel_<i>.bin   one context binary per plugin node */
#ifndef NPL_COMPILER_H
#define NPL_COMPILER_H
#include <stddef.h>
#include <stdio.h>

#include "core/graph.h"
#include "npullm_accel.h"
#include "plugin/plugin.h"

/* npl_compile_guard: a compile's files on disk until they are in place,
 * shared with a thread that may stop it (public: npullm_compile.h). */
#include "npullm_compile.h"

typedef enum { NPL_ACT_F32, NPL_ACT_F16, NPL_ACT_BF16, NPL_ACT_INT16 } npl_act_prec;
/* W8 / W4: int8 with a scale per output channel (values -8..7 for W4), the
 * integer weights QNN HTP takes; Q4 / Q8: GGML q4_0 / q8_0 blocks. */
typedef enum { NPL_WEIGHTS_KEEP, NPL_WEIGHTS_Q4, NPL_WEIGHTS_Q8, NPL_WEIGHTS_W8, NPL_WEIGHTS_W4 } npl_weight_prec;

typedef struct {
    int chunk;                /* prefill graph size (default 128) */
    int n_ctx;                /* 0: the model's, capped at 4096 */
    npl_act_prec act;         /* activations inside the accelerator graphs */
    npl_weight_prec weights;  /* keep: types the accelerator takes as they are, others -> q8_0 */
    int output_weights;       /* type of the output (logits) matrix: NPL_TYPE_Q4_0 / Q5_0 / Q8_0,
                                 or -1 (default): as `weights` says. Decode reads this matrix once
                                 per token: for Gemma 3 270M it is 178 of the 247 MB in q8_0 */
    int keep_intermediate;    /* leave stage outputs in PKG/intermediate */
    int force;                /* replace an existing package (and nothing else) at out_dir */
    int n_threads;            /* 0: one per core */
    int check;                /* verify lowered graphs on IO samples (default 1) */
    double tolerance;         /* relative RMS error accepted (0: 0.25) */
    FILE *log;                /* progress and summary (NULL: silent) */
    npl_compile_guard *guard; /* NULL: one of its own */
    const char *stall_at;     /* test hook "S:D[:MS]": after the progress line of stage S
                                 (1-6) at step D, wait MS ms (default 60000) or until aborted */
    int lpbq_refuse_above;    /* test hook (> 0): the target's context option lpbq_refuse_above=N, its
                                 finalize refusing LPBQ slices wider than N (the retry's test) */
    const char *target;       /* accelerator plugin name (letters, digits, '-', '_'); default
                                 the build's NPL_DEFAULT_TARGET */
    const char *plugin_dir;   /* look for the plugin only here (NULL: next to libnpullm.so,
                                 or to the executable it is linked into) */
    const npl_plugin_provider *providers; /* built-in accelerators (a static build), n_providers */
    int n_providers;
    const char *keep_f32;     /* comma list of tensor classes whose activations stay f32 whatever
                                 `act` says (norm_in, qkv, qknorm, rope, attn, o, post, gu, glu,
                                 down, other; see lower.c); NULL: none */
    const char *soc;          /* the target's device option "soc" (qnn-htp: SM8650 ...); NULL: default */
    const char *calib;        /* calibration text (UTF-8, non-empty): its tokens are the IO samples'
                                 (the check runs on real text); NULL: built-in token ids */
    int weight_sharing;       /* the target's weight sharing between a binary's graphs (qnn-htp:
                                 each weight once; such a binary loads on a device, not in QNN's
                                 x86 emulator, so the check runs before serialization) */
    const char *buckets;      /* decode KV-length buckets (npl_compile_buckets); NULL: the default */
    int split_layers;         /* cut the subgraphs at decoder layer boundaries (npl_partition_graph) */
    int tied_lookup_cpu;      /* qnn-htp: keep a tied embedding / output matrix's row lookup on the CPU
                                 (1: the matrix twice, int8 in the binary, the GGUF's exact rows in
                                 model.gguf); default 0: on the NPU from the output matmul's int8 table
                                 (the matrix once; Gemma 3 270M: perplexity +1.26 % against -0.56 %) */
} npl_compile_params;

npl_compile_params npl_compile_default_params(void);
const char *npl_act_prec_name(npl_act_prec p);
const char *npl_weight_prec_name(npl_weight_prec p);

/* The decode KV-length buckets below n_ctx of list (comma-separated lengths
 * in [1, n_ctx]; n_ctx itself is dropped: its AR-1 graph always exists;
 * "none" or "": no bucket; NULL: 512, 1024, 2048, ... below n_ctx), ascending
 * and distinct in out (at most NPL_MAX_BUCKETS). Their count, or -1 with err. */
#define NPL_MAX_BUCKETS 8
int npl_compile_buckets(const char *list, int n_ctx, int *out, char *err, size_t errlen);

/* Compiles model_path into the package directory out_dir. 0, or -1 with a
 * message in err; on failure nothing is left at out_dir (or its old content
 * is untouched) and no temp directory remains. */
int npl_compile(const char *model_path, const char *out_dir, const npl_compile_params *p, char *err, size_t errlen);

/* ---- stages, shared by the tests ---- */

/* A subgraph: op nodes in graph order, with its boundary. */
#define NPL_SEG_MAX_IO 16
#define NPL_WHY_LEN 96
typedef struct {
    int *nodes;                 /* op node ids (no leaves), ascending */
    int n_nodes;
    int inputs[NPL_SEG_MAX_IO]; /* consumed-not-produced (INPUT or CPU-computed) */
    int n_inputs;
    int outputs[NPL_SEG_MAX_IO];/* produced-and-used-later (or graph outputs) */
    int n_outputs;
    int n_matmul;
    int layer;                  /* with split_layers: its decoder layer (INT_MAX: the output head), else -1 */
    int keep;                   /* lowered to the accelerator */
    char why[160];              /* why it stays on the CPU */
} npl_segment;

typedef struct {
    npl_segment *segs;
    int n_segs;
    int *cpu_ops;               /* needed op nodes left on the CPU */
    int n_cpu_ops;
    char (*cpu_why)[NPL_WHY_LEN]; /* reason per cpu op */
} npl_partition;

/* Partition the part of g needed for `outputs`. refused (NULL: none) gives
 * per node id the target's reason to refuse it ("" = taken): those nodes
 * are break ops too. split_layers: a subgraph also ends where the ops of
 * the next decoder layer begin (the first op reading a weight "blk.N." or a
 * cache "kcache.N" / "vcache.N" of a later layer than its own; the output
 * head's "output*" weights count as after the last), so each layer is its
 * own subgraph with the residual stream as its one output. tied >= 0: the row
 * lookups in that weight are lowered too (npl_lower_args.tied). 0 or -1 with err. */
int npl_partition_graph(const npl_graph *g, const int *outputs, int n_outputs, const char (*refused)[NPL_WHY_LEN],
                        int split_layers, int tied, npl_partition *out, char *err, size_t errlen);
void npl_partition_free(npl_partition *p);
/* Why op node id cannot be lowered to any target, or NULL if it can. */
const char *npl_partition_break_reason(const npl_graph *g, int id);

#endif
