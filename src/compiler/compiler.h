/* The offline compiler: GGUF model -> package (DESIGN.md "The offline
 * compiler"). Stages: build graph + IO samples, partition, lower per shape
 * through the accelerator ABI, check against the samples, replace each
 * subgraph by one "accel" plugin node, merge the shapes' graphs into one
 * context binary, write the package (tmp dir + rename).
 *
 * Package layout:
 *   PKG/config.json     llm_model, chunk_limits [N, 1], max_context_length,
 *                       precision, weights, context binaries
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

typedef enum { NPL_ACT_F32, NPL_ACT_F16, NPL_ACT_BF16, NPL_ACT_INT16 } npl_act_prec;
typedef enum { NPL_WEIGHTS_KEEP, NPL_WEIGHTS_Q4, NPL_WEIGHTS_Q8 } npl_weight_prec;

typedef struct {
    int chunk;                /* prefill graph size (default 128) */
    int n_ctx;                /* 0: the model's, capped at 4096 */
    npl_act_prec act;         /* activations inside the accelerator graphs */
    npl_weight_prec weights;  /* keep: types the accelerator takes as they are, others -> q8_0 */
    int output_weights;       /* type of the output (logits) matrix: NPL_TYPE_Q4_0 / Q5_0 / Q8_0,
                                 or -1 (default): as `weights` says. Decode reads this matrix once
                                 per token: for Gemma 3 270M it is 178 of the 247 MB in q8_0 */
    int keep_intermediate;    /* leave stage outputs in PKG/intermediate */
    int force;                /* replace an existing output directory */
    int n_threads;            /* 0: one per core */
    int check;                /* verify lowered graphs on IO samples (default 1) */
    double tolerance;         /* relative RMS error accepted (0: 0.25) */
    FILE *log;                /* progress and summary (NULL: silent) */
} npl_compile_params;

npl_compile_params npl_compile_default_params(void);
const char *npl_act_prec_name(npl_act_prec p);
const char *npl_weight_prec_name(npl_weight_prec p);

/* Compiles model_path into the package directory out_dir. 0, or -1 with a
 * message in err; on failure nothing is left at out_dir (or its old content
 * is untouched). */
int npl_compile(const char *model_path, const char *out_dir, const npl_compile_params *p, char *err, size_t errlen);

/* ---- stages, shared by the tests ---- */

/* A subgraph: op nodes in graph order, with its boundary. */
#define NPL_SEG_MAX_IO 16
typedef struct {
    int *nodes;                 /* op node ids (no leaves), ascending */
    int n_nodes;
    int inputs[NPL_SEG_MAX_IO]; /* consumed-not-produced (INPUT or CPU-computed) */
    int n_inputs;
    int outputs[NPL_SEG_MAX_IO];/* produced-and-used-later (or graph outputs) */
    int n_outputs;
    int n_matmul;
    int keep;                   /* lowered to the accelerator */
    char why[160];              /* why it stays on the CPU */
} npl_segment;

typedef struct {
    npl_segment *segs;
    int n_segs;
    int *cpu_ops;               /* needed op nodes left on the CPU */
    int n_cpu_ops;
    char (*cpu_why)[96];        /* reason per cpu op */
} npl_partition;

/* Partition the part of g needed for `outputs`. 0 or -1 with err. */
int npl_partition_graph(const npl_graph *g, const int *outputs, int n_outputs, npl_partition *out, char *err,
                        size_t errlen);
void npl_partition_free(npl_partition *p);
/* Why op node id cannot run on the accelerator, or NULL if it can. */
const char *npl_partition_break_reason(const npl_graph *g, int id);

#endif
