/* Lowering of one subgraph at one shape into an accelerator graph (private
 * to the compiler). */
#ifndef NPL_COMPILER_LOWER_H
#define NPL_COMPILER_LOWER_H
#include "compiler/compiler.h"
#include "core/graph.h"
#include "npullm_accel.h"

/* Converted weight bytes per (node, use), shared by every shape's graph so
 * the context stores them once. */
typedef struct {
    void *data[2];     /* [0] matmul layout, [1] f32 (norms, biases) */
    size_t size[2];
    npl_accel_dtype dt[2];
    float *scales;     /* --weights w8 / w4: one per output channel of data[0] (requant.c), or with
                          block > 0 one per block of `block` weights along k, scales[row * (k / block) + b] */
    uint32_t n_scales;
    uint32_t block;    /* 0: per output channel; 32: 4-bit blockwise (LPBQ, npl_requant_lpbq) */
    double rq_se, rq_ss; /* requantization: squared error and squared sum of the weights */
} npl_lower_weight;

typedef struct {
    const npl_graph *g;
    const npl_segment *seg;
    const npl_shape *shapes;    /* every node's shape at this graph's input shapes */
    npl_accel_dtype act;
    npl_weight_prec wprec;
    uint32_t f32_classes;       /* bit per tensor class kept f32 (npl_lower_f32_classes) */
    int out_weight;             /* node id of the output matrix with its own type, or -1
                                   (set it explicitly: 0 is a node id) */
    npl_type out_type;
    /* node id of a tied embedding / output matrix whose row lookups (GET_ROWS)
     * are lowered with its output matmul, the matrix stored once (int8, see
     * lower_tied.c), or -1 (set it explicitly) */
    int tied;
    npl_lower_weight *wc;       /* per node id, owned by the caller */
    int kv_len;                 /* > 0: the cache rows Attention reads (a decode bucket), 0: all */
    /* int16 with static ranges (a target without dynamic int16, QNN): per
     * node id the calibrated min / max of its values (npl_calib_ranges); NULL:
     * int16 is the ABI's dynamic int16 */
    const float *act_lo, *act_hi;
    const char *gname;
    /* the residual stream's scale in the lowered graph, a power of two (0 or
     * 1: none); see lower.c. QNN HTP: 2^-4, its f32 ops compute in f16 */
    float resid_scale;
    int no_lpbq;                /* w4 weights one scale per output channel even where LPBQ would go
                                   (the compile's retry after a refused finalize; reconverts cached ones) */
    /* out: accelerator tensor names of the segment's inputs and output */
    char in_names[NPL_SEG_MAX_IO][96];
    char out_name[96];
    uint64_t static_bytes;      /* weight bytes created by this call (new or shared) */
    int finalize_failed;        /* out: the target refused the graph at finalize (the compiler may retry) */
} npl_lower_args;

int npl_lower_segment(const npl_accel_api *api, npl_accel_backend *be, npl_accel_context *ctx, npl_lower_args *a,
                      char *err, size_t errlen);
/* NULL if the lowering lowers node id of g, else why the node stays on the
 * CPU (its op has no accelerator op, or this use of it is not worth one). */
const char *npl_lower_refusal(const npl_graph *g, int id);
/* The same, with the row lookups in table node `tied` (npl_lower_args.tied,
 * -1: none) lowered too. */
const char *npl_lower_refusal_tied(const npl_graph *g, int id, int tied);
/* NULL if weight node `w` of g can be lowered tied (npl_lower_args.tied:
 * a 2-D matrix, --weights w8, fp16 activations; lower_tied.c), else why not. */
const char *npl_lower_tied_refusal(const npl_graph *g, int w, npl_weight_prec wprec, npl_accel_dtype act);
/* Parses a comma list of tensor class names (norm_in, qkv, qknorm, rope,
 * attn, o, post, gu, glu, down, other) into a bit mask; NULL or "" is 0.
 * 0, or -1 with the unknown name and the known ones in err. */
int npl_lower_f32_classes(const char *list, uint32_t *mask, char *err, size_t errlen);
void npl_lower_weights_free(npl_lower_weight *wc, int n);
/* Shapes of every node of g for inputs tokens/pos [seq] and out_rows
 * [n_out] (INPUT nodes with a symbolic dim get seq, or n_out for
 * "out_rows"). 0 or -1 with err. */
int npl_infer_all(const npl_graph *g, int seq, int n_out, npl_shape *shapes, char *err, size_t errlen);

#endif
