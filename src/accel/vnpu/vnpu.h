/* vnpu internals: handles, tensors, nodes, packed constants and the op set.
 *
 * vnpu is the reference implementation of include/npullm_accel.h. It acts
 * like an NPU: graphs are static; finalize is the compile step (validate,
 * fuse, pre-pack STATIC weights for the kernel family, plan one arena); a
 * context holds several graphs that share STATIC tensors and APP_READWRITE
 * context tensors; its binary is position-independent and used in place.
 *
 * Files: vnpu_api.c (handles, creation calls, errors), vnpu_ops.c (op table,
 * params, shape/type checks), vnpu_compile.c (finalize: order, fusion,
 * packing, arena), vnpu_pack.c (weight packing), vnpu_matmul.c (matmul
 * driver + generic kernels), {avx2,avx512,amx}/vnpu_mm_*.c (ISA kernels),
 * vnpu_exec.c (execute), vnpu_ops_exec.c (non-matmul kernels),
 * vnpu_binary.c (context binary). */
#ifndef NPL_VNPU_H
#define NPL_VNPU_H
#include <stddef.h>
#include <stdint.h>

#include "accel/vnpu/vnpu_api.h"
#include "accel/vnpu/vnpu_mm.h"
#include "kernels/threadpool.h"
#include "kernels/nn_kernels.h"
#include "npullm_accel.h"

#define VNPU_MAX_IN 16
#define VNPU_MAX_OUT 2
#define VNPU_MAX_INTS 8
#define VNPU_MAX_FLOATS 4
#define VNPU_NONE UINT32_MAX
#define VNPU_ALIGN 64
#define VNPU_MAGIC_BACKEND 0x564e4201u
#define VNPU_MAGIC_DEVICE 0x564e4402u
#define VNPU_MAGIC_CONTEXT 0x564e4303u
#define VNPU_MAGIC_GRAPH 0x564e4704u

/* The op set, one row per op: X(ENUM, "TypeName", min inputs, max inputs,
 * outputs, params) where params names a param array of vnpu_ops.c
 * (NP(array)) or NP_NONE. VNPU_OPS are the ops callers add (list_ops shows
 * them); VNPU_INTERNAL_OPS are fusion results, named "vnpu.*", which callers
 * cannot add. */
#define VNPU_OPS(X)                                                                                      \
    X(MATMUL, "MatMul", 2, 3, 1, NP(p_matmul)) X(FULLY_CONNECTED, "FullyConnected", 2, 3, 1, NP(p_fc))  \
    X(RMS_NORM, "RmsNorm", 1, 2, 1, NP(p_rms)) X(ROPE, "Rope", 2, 3, 1, NP(p_rope))                      \
    X(ATTENTION, "Attention", 6, 6, 1, NP(p_attn)) X(ADD, "Add", 2, 2, 1, NP_NONE)                       \
    X(MUL, "Mul", 2, 2, 1, NP_NONE) X(SCALE, "Scale", 1, 1, 1, NP(p_scale))                              \
    X(SILU, "Silu", 1, 1, 1, NP_NONE) X(GELU, "Gelu", 1, 1, 1, NP_NONE)                                  \
    X(SWIGLU, "SwiGLU", 2, 2, 1, NP_NONE) X(GEGLU, "GeGLU", 2, 2, 1, NP_NONE)                            \
    X(SOFTMAX, "Softmax", 1, 1, 1, NP(p_softmax)) X(RESHAPE, "Reshape", 1, 1, 1, NP_NONE)                \
    X(TRANSPOSE, "Transpose", 1, 1, 1, NP(p_transpose)) X(CONCAT, "Concat", 1, VNPU_MAX_IN, 1, NP(p_axis)) \
    X(GATHER, "Gather", 2, 2, 1, NP(p_axis)) X(CAST, "Cast", 1, 1, 1, NP_NONE)
#define VNPU_INTERNAL_OPS(X) X(MATMUL_GATED, "vnpu.MatMulGated", 3, 3, 1, NP_NONE)

typedef enum {
#define VNPU_OP_ENUM(e, ...) VNPU_OP_##e,
    VNPU_OPS(VNPU_OP_ENUM) VNPU_INTERNAL_OPS(VNPU_OP_ENUM)
#undef VNPU_OP_ENUM
    VNPU_OP_COUNT
} vnpu_op;

/* ops callers may add: the enum's leading VNPU_OP_N_PUBLIC values */
#define VNPU_OP_ONE(...) +1
enum { VNPU_OP_N_PUBLIC = 0 VNPU_OPS(VNPU_OP_ONE) };
#undef VNPU_OP_ONE

typedef struct {
    uint32_t enc;
    int32_t axis;
    uint32_t block;
    uint32_t n;
    float *scales;    /* owned */
    int32_t *offsets; /* owned; NULL = zeros */
} vnpu_quant;

typedef struct {
    char *name;
    uint32_t kind, dtype, rank;
    int64_t dims[NPL_ACCEL_MAX_RANK];
    int64_t nelem;
    size_t nbytes;
    vnpu_quant q;
    int32_t graph;         /* owning graph index; -1 for STATIC / APP_READWRITE */
    const uint8_t *raw;    /* STATIC bytes: owned copy (online) or inside the binary */
    uint8_t *raw_owned;
    uint8_t *rw;           /* APP_READWRITE memory, owned, zeroed */
} vnpu_tensor;

typedef struct {
    uint32_t op;
    uint32_t n_in, n_out;
    uint32_t in[VNPU_MAX_IN];
    uint32_t out[VNPU_MAX_OUT];
    int64_t ip[VNPU_MAX_INTS];
    uint32_t n_ip;         /* ints given for array params (Transpose perm) */
    float fp[VNPU_MAX_FLOATS];
    int32_t pack;          /* compiled MatMul weights: pack index, -1 */
    uint8_t sel_dep;       /* compiled step depends on the graph's row selection (vnpu_plan) */
    char *name;            /* owned, may be NULL */
} vnpu_node;

/* Per-op description: param schema and checks (vnpu_ops.c). */
typedef struct {
    const char *name;
    int min_in, max_in, n_out;
    int internal;
    uint32_t n_params;
    const npl_accel_param_info *params; /* in slot order, see vnpu_ops.c */
} vnpu_op_info;

typedef struct {
    uint64_t executions, total_ns, last_ns, min_ns, max_ns, finalize_ns;
} vnpu_counters;

struct npl_accel_backend {
    uint32_t magic;
    int family;            /* kernels compiled for */
    int cpu_family;        /* best this machine has (capped by the cpu_max_family option) */
    int n_threads;
    npl_pool *pool;
    const npl_nn_kernels *nn;
    vnpu_mm_table mm[VNPU_FAM_COUNT]; /* per family; entries only for families <= cpu_family */
    struct vnpu_prof *prof; /* option "profile": step times (vnpu_prof.c); NULL: off */
    char err[512];
};

struct npl_accel_device {
    uint32_t magic;
    struct npl_accel_backend *be;
};

typedef struct npl_accel_graph vnpu_graph;
typedef struct vnpu_prof vnpu_prof;

struct npl_accel_context {
    uint32_t magic;
    struct npl_accel_backend *be;
    int family;
    int from_binary;
    vnpu_tensor *t;
    uint32_t n_t, cap_t;
    vnpu_graph **g;
    uint32_t n_g, cap_g;
    vnpu_pack *packs;
    uint32_t n_packs, cap_packs;
};

struct npl_accel_graph {
    uint32_t magic;
    struct npl_accel_context *ctx;
    int32_t index;
    char *name;
    int finalized;
    vnpu_node *nodes;      /* as added */
    uint32_t n_nodes, cap_nodes;
    vnpu_node *steps;      /* compiled, in execution order */
    uint32_t n_steps;
    uint32_t n_added;      /* nodes as added (kept for a graph from a binary) */
    uint32_t n_fused;
    /* memory plan */
    size_t arena_size, scratch_off;
    uint8_t *arena;
    uint32_t n_tmap;       /* tensors of the context when planned */
    size_t *toff;          /* NATIVE tensor offsets in the arena (SIZE_MAX = not ours) */
    void **addr;           /* per tensor id, resolved at execute */
    uint8_t *bound;        /* per tensor id: bound by the caller (execute's scratch) */
    /* RoPE cos/sin tables' storage, kept across executes (grown on first use
     * only) so a run allocates nothing: slot i of vnpu_run's tables */
    float *rope_buf[4];
    size_t rope_cap[4];
    /* Row selection: an APP_WRITE int32 tensor of row indices read by Gathers
     * of activation rows (a language model's out_rows). When every index is
     * negative no row is wanted: the steps that depend on the Gathers
     * (sel_dep) are skipped and the outputs they make are zero-filled. Only
     * set when none of those steps touches state (Attention, APP_READWRITE). */
    uint32_t sel_in;       /* tensor id or VNPU_NONE */
    vnpu_counters prof;
    char detail[256];
};

/* ---- vnpu_api.c ---- */
npl_accel_status vnpu_fail(struct npl_accel_backend *be, npl_accel_status st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
const char *vnpu_dtype_name(uint32_t dt);
const char *vnpu_kind_name(uint32_t k);
const char *vnpu_family_name(int fam);
int vnpu_family_from_name(const char *s);
/* element size in bytes; block types give 0 (use vnpu_tensor_nbytes) */
size_t vnpu_dtype_size(uint32_t dt);
/* byte size of a dense tensor; 1 on overflow or a bad block multiple */
int vnpu_tensor_nbytes(uint32_t dt, uint32_t rank, const int64_t *dims, size_t *out);
void *vnpu_aligned_alloc(size_t size);    /* zeroed, VNPU_ALIGN-aligned */
/* Zeroed, VNPU_ALIGN-aligned, resident only once written (large sizes are
 * mapped); free with vnpu_big_free only. */
void *vnpu_big_alloc(size_t size);
void vnpu_big_free(void *p);
/* The GGML block type (npl_type) of a block dtype (Q4_0 .. Q6_K), or -1. */
int vnpu_dtype_ggml(uint32_t dt);
void vnpu_context_release(struct npl_accel_context *ctx);
void vnpu_graph_release(vnpu_graph *g);
uint32_t vnpu_find_tensor(const struct npl_accel_context *ctx, const char *name);
npl_accel_status vnpu_context_new(struct npl_accel_backend *be, int family, struct npl_accel_context **out);
npl_accel_status vnpu_graph_new(struct npl_accel_context *ctx, const char *name, vnpu_graph **out);
npl_accel_status vnpu_quant_copy(struct npl_accel_backend *be, vnpu_quant *dst, const npl_accel_quant *src,
                                 uint32_t dtype, uint32_t rank, const int64_t *dims, const char *tname);
int vnpu_pack_add(struct npl_accel_context *ctx, const vnpu_pack *p); /* -1 on OOM */

/* ---- vnpu_ops.c ---- */
const vnpu_op_info *vnpu_op_get(uint32_t op);
/* the public rows of the op table in the ABI's form (list_ops) */
const npl_accel_op_info *vnpu_op_list(uint32_t *n);
/* graph_add_node's checks, shared with validate_node (vnpu_ops.c, vnpu_api.c):
 * op type and input / output counts (n zeroed and set up); an output's kind;
 * params, the FullyConnected rewrite and the type / shape check against the
 * tensors ctx->t[n->in[i]], ctx->t[n->out[0]]; one tensor description
 * (with_data: also STATIC bytes) into dims, byte size and quant params. */
npl_accel_status vnpu_node_begin(struct npl_accel_backend *be, const npl_accel_node_desc *d, const char *where,
                                 vnpu_node *n);
npl_accel_status vnpu_check_output_kind(struct npl_accel_backend *be, const char *where, const char *tname,
                                        uint32_t kind);
npl_accel_status vnpu_node_end(struct npl_accel_backend *be, const struct npl_accel_context *ctx, vnpu_node *n,
                               const npl_accel_node_desc *d, const char *where);
npl_accel_status vnpu_desc_check(struct npl_accel_backend *be, const npl_accel_tensor_desc *d, const char *nm,
                                 int with_data, int64_t *dims, size_t *nbytes, vnpu_quant *q);
int vnpu_backend_ok(const struct npl_accel_backend *be);
/* the ABI's validate_node and list_ops (vnpu_validate.c) */
npl_accel_status vnpu_validate_node(struct npl_accel_backend *be, const npl_accel_node_desc *node,
                                    const npl_accel_tensor_desc *inputs, const npl_accel_tensor_desc *outputs,
                                    char *reason, uint32_t reason_len);
npl_accel_status vnpu_list_ops(struct npl_accel_backend *be, const npl_accel_op_info **ops, uint32_t *n_ops);
int vnpu_op_from_name(const char *name); /* -1 if unknown */
/* Parse caller params into n (defaults applied first). */
npl_accel_status vnpu_parse_params(struct npl_accel_backend *be, vnpu_node *n, const npl_accel_param *p,
                                   uint32_t np, const char *where);
/* Type and shape checks of one node against the context's tensors. */
npl_accel_status vnpu_check_node(struct npl_accel_backend *be, const struct npl_accel_context *ctx,
                                 const vnpu_node *n, const char *where);
/* Is dt usable as a float-valued activation (F32/F16/BF16 or a quantized
 * int type with per-tensor params)? */
int vnpu_is_floatlike(const vnpu_tensor *t);

/* ---- vnpu_pack.c ---- */
/* The pack format for weights of type dt in a context of `family`. */
uint32_t vnpu_pack_fmt(int family, uint32_t dt);
/* Geometry and layout of a pack of n_parts weights (w, optional biases b);
 * -1 with a message if they cannot be packed together. */
int vnpu_pack_plan(vnpu_pack *p, const struct npl_accel_context *ctx, uint32_t n_parts, const uint32_t *w,
                   const uint32_t *b, uint32_t trans, char *err, size_t errlen);
/* Writes p->size bytes at dst from the weights' and biases' bytes. */
void vnpu_pack_fill(const vnpu_pack *p, const struct npl_accel_context *ctx, uint8_t *dst, const void *const *wdata,
                    const void *const *bdata, npl_pool *pool);

/* ---- vnpu_matmul.c ---- */
/* Scratch bytes of vnpu_matmul for m rows. */
size_t vnpu_matmul_scratch(const vnpu_mm_table *tab, const vnpu_pack *p, int64_t m);
/* y[m][ncols] (row stride y_stride) = x[m][k] (f32) . packed weights, using
 * the kernels of `tab`. scratch: vnpu_matmul_scratch bytes, 64-aligned. */
void vnpu_matmul(const vnpu_mm_table *tab, npl_pool *pool, const vnpu_pack *p, const float *x, int64_t m,
                 float *y, int64_t y_stride, int64_t ncols, uint8_t *scratch);

/* ---- vnpu_mm_ggml.c ---- */
/* Does the host have a dot kernel and an activation quantizer for GGML type gtype? */
int vnpu_matmul_ggml_ok(int gtype);
size_t vnpu_matmul_ggml_scratch(const vnpu_pack *p, int64_t m);
/* y[m][.] (row stride y_stride; part i at column col0[i]) = x[m][k] . blocks
 * of a GGML pack, with the host kernels of `isa`. */
void vnpu_matmul_ggml(int isa, npl_pool *pool, const vnpu_pack *p, const float *x, int64_t m, float *y,
                      int64_t y_stride, uint8_t *scratch);
/* The fused prefill path (one pool job: quantize from the input type, GEMM,
 * bias / gating, output conversion), when the ISA has a GEMM for the type
 * and m is large enough. */
typedef struct {
    int family;
    const vnpu_tensor *xt;     /* input [m, k] of any float-like type, bytes at x */
    const void *x;
    const vnpu_tensor *ot;     /* output [m, n[0]], bytes at out */
    void *out;
    const float *bias;         /* n[0] floats or NULL (one part only) */
    int geglu;                 /* two parts: GeGLU (else SwiGLU) of gate (part 0) and up (part 1) */
    const npl_nn_kernels *nn;
    int x_ready;               /* scratch already holds x packed for this pack (vnpu_ggml_same_x) */
} vnpu_ggml_io;
int vnpu_ggml_fused_ok(int isa, const vnpu_pack *p, int64_t m);
size_t vnpu_ggml_fused_scratch(const vnpu_pack *p, int64_t m, int n_shares);
/* Do packs a and b take the same packed activations (quantizer, packing, k)? */
int vnpu_ggml_same_x(int isa, const vnpu_pack *a, const vnpu_pack *b, int64_t m);
void vnpu_ggml_fused(int isa, npl_pool *pool, const vnpu_pack *p, const vnpu_ggml_io *io, int64_t m,
                     uint8_t *scratch);

/* ---- vnpu_compile.c ---- */
npl_accel_status vnpu_finalize(vnpu_graph *g);
/* Shared with binary loading: plan the arena of the compiled steps (and
 * allocate it when alloc is set). */
npl_accel_status vnpu_plan(vnpu_graph *g, int alloc);

/* ---- vnpu_exec.c ---- */
npl_accel_status vnpu_execute(vnpu_graph *g, const npl_accel_buffer *in, uint32_t n_in,
                              const npl_accel_buffer *out, uint32_t n_out);
/* Scratch bytes one compiled step needs (planned into the arena). */
size_t vnpu_step_scratch(const vnpu_graph *g, const vnpu_node *n);

/* ---- vnpu_binary.c ---- */
npl_accel_status vnpu_binary_size(struct npl_accel_context *ctx, uint64_t *size);
npl_accel_status vnpu_binary_write(struct npl_accel_context *ctx, void *buf, uint64_t cap, uint64_t *written);
npl_accel_status vnpu_binary_load(struct npl_accel_backend *be, const void *bin, uint64_t size,
                                  struct npl_accel_context **out);
npl_accel_status vnpu_binary_info(struct npl_accel_backend *be, const void *bin, uint64_t size,
                                  npl_accel_binary_info **out);
void vnpu_binary_info_free(npl_accel_binary_info *info);

#endif
