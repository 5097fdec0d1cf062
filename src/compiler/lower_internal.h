/* What lower.c shares with lower_tied.c (private to the compiler): the
 * lowering state of one graph and the helpers that create its tensors and
 * nodes (lower.c documents them). */
#ifndef NPL_COMPILER_LOWER_INTERNAL_H
#define NPL_COMPILER_LOWER_INTERNAL_H
#include "compiler/lower.h"

typedef struct npl_lw {
    const npl_accel_api *api;
    npl_accel_backend *be;
    npl_accel_context *actx;
    npl_accel_graph *ag;
    npl_lower_args *a;
    uint32_t *tid;   /* per node: its tensor */
    npl_accel_dtype *tdt;
    char *err;
    size_t errlen;
    uint8_t *cons;   /* per node: op of its first consumer in the segment (+1; 0 = none) */
    uint32_t f32cls;  /* bit per class: kept in f32 (npl_lower_args.f32_classes) */
    uint32_t *blk;   /* per node: int16 block of its tensors (0: none fits) */
    int cur;         /* node being lowered */
    int rid;         /* static int16: node whose range the next INT16 tensor takes (-1: cur) */
    uint32_t *qin, *deq16, *deq32; /* static int16, per node: its INT16 copy, its f16 / f32 copy (NONE: not yet) */
    int tied_counted; /* the tied matrix's bytes are in static_bytes (its lookup and matmul share one tensor) */
    float rs;        /* the residual stream's scale (1: none; npl_lower_args.resid_scale) */
    uint8_t *rsc;    /* per node: its tensor holds value * rs */
    uint32_t *up, *down; /* per node: its copy times rs, divided by rs (NONE: not yet) */
} npl_lw;

int npl_lw_fail_api(npl_lw *l, const char *what);
void npl_lw_dims_of(const npl_shape *s, npl_accel_tensor_desc *d);
int npl_lw_mk(npl_lw *l, const char *name, npl_accel_kind kind, npl_accel_dtype dt, const npl_shape *s, uint32_t *out);
/* a node named "n<id>.<op><sfx>" (validate.c reads the id back) */
int npl_lw_node(npl_lw *l, const char *op, const char *sfx, const npl_accel_param *p, uint32_t np, const uint32_t *in,
                uint32_t nin, uint32_t out, int id);
int npl_lw_weight_bytes(npl_lw *l, int id, int use);
int npl_lw_weight_tensor(npl_lw *l, int id, int use, uint32_t *out);
int npl_lw_src_tensor(npl_lw *l, int id, uint32_t *out);
int npl_lw_out_tensor(npl_lw *l, int id, npl_accel_dtype natural, uint32_t *out);

/* lower_resid.c: the residual stream's scale (npl_lower_args.resid_scale).
 * Node id's tensor src (in dt) times k, made once into *slot; and a
 * residual-stream op (Add, Scale) whose output holds x * rs, x again as the
 * segment's output. */
int npl_lw_rescaled(npl_lw *l, int id, uint32_t src, npl_accel_dtype dt, float k, uint32_t *slot, uint32_t *out);
int npl_lw_resid_node(npl_lw *l, int id, const char *op, const npl_accel_param *p, uint32_t np, const uint32_t *in,
                      uint32_t nin);

/* lower_tied.c: the tied embedding / output matrix (npl_lower_args.tied).
 * Its one scale g (the tensor's per-tensor quant) and the row factors. */
int npl_lw_tied_factors(npl_lw *l, int id, float *g);
int npl_lw_tied_matmul(npl_lw *l, int id); /* the output matmul (MATMUL node id) */
int npl_lw_tied_rows(npl_lw *l, int id);   /* a row lookup (GET_ROWS node id) */

#endif
