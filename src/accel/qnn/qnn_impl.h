/* Internals of the QNN HTP adapter (libnpl_accel_qnn-htp.so): the npullm accelerator
 * ABI (include/npullm_accel.h) on Qualcomm's QNN HTP backend.
 *
 * Object model: an ABI backend owns the dlopen'ed libQnnHtp.so, a QNN log
 * and a QNN backend; an ABI device is a QNN device carrying the target SoC;
 * an ABI context is a QNN context. ABI tensors are context-wide records;
 * QNN tensors are per graph, so each graph creates the QNN tensor of a
 * record the first time one of its nodes uses it (STATIC weights used by two
 * graphs are created in both — weight sharing in the binary is issue 16's). */
#ifndef NPL_QNN_IMPL_H
#define NPL_QNN_IMPL_H
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "accel/qnn/qnn_api.h"
#include "npullm_accel.h"

/* One Snapdragon SoC QNN knows: name, QNN soc model id, HTP architecture,
 * and whether its HTP computes fp16 (else only INT4 / INT8 / INT16). */
typedef struct {
    const char *name;
    uint32_t soc_id;
    uint32_t arch;
    int fp16;
} qnn_soc;
const qnn_soc *qnn_soc_find(const char *name);
/* The table (n entries), for listings and tests. */
const qnn_soc *qnn_soc_table(uint32_t *n);

struct npl_accel_backend {
    void *lib, *syslib;
    const QnnInterface_t *prov;
    const QnnIface_t *q;
    Qnn_Handle_t log, be;
    const QnnSysIface_t *sys; /* libQnnSystem, loaded by the first binary_info */
    Qnn_Handle_t sysctx;
    char lib_dir[512];
    char err[2048];
    npl_accel_op_info *ops; /* list_ops' answer, built on first call (qnn_validate.c) */
    npl_accel_param_info *op_params;
    uint32_t n_ops;
    int profile;            /* backend option "profile" > 0: each graph's execute times to stderr when its context is freed */
};

struct npl_accel_device {
    npl_accel_backend *be;
    Qnn_Handle_t dev;
    const qnn_soc *soc; /* NULL: the library's default target */
};

typedef struct {
    char *name;
    npl_accel_kind kind;
    npl_accel_dtype dtype;
    uint32_t rank, dims[NPL_ACCEL_MAX_RANK];
    npl_accel_quant quant; /* arrays owned */
    void *data;            /* STATIC: QNN-ready bytes (INT16 stored as uint16); APP_READWRITE: the host buffer */
    uint64_t bytes;        /* ABI byte size */
    struct npl_accel_graph *graph; /* owner of a non-STATIC tensor */
    int hidden;                    /* an input / output the adapter binds at execute (Rope's cos / sin, Attention's) */
    int bits4;                     /* STATIC INT8 per-axis whose values fit 4 bits: QNN's bitwidth-4 encoding */
    /* STATIC INT8 [N, K] per-block (axis 0): QNN's blockwise expansion (LPBQ),
     * the ABI's block scales factored into a scale per channel times 1..15 */
    float *lpbq_sc;                /* [N] */
    uint8_t *lpbq_m;               /* [N * lpbq_nb] */
    uint32_t lpbq_nb;              /* blocks per channel */
    uint32_t gather_rows;          /* an INT32 input of a Gather over this many rows: clamped at execute */
} qnn_tensor;

/* A Rope node's angles, computed on the host at execute from the bound
 * positions (precise at any position; fp16 sin/cos of large angles in the
 * graph would not be) and given to the graph as the hidden inputs cos, sin. */
typedef struct {
    npl_accel_tensor_id pos, cos, sin;
    uint32_t n_pos, half;
    int f16, neox;
    double base, freq_scale, ext_factor, attn_factor, corr_lo, corr_hi;
    float *factors; /* [half] or NULL */
    uint32_t width; /* 0: cos / sin [S, 1, half(, 1)]; D: interleaved in full width [S, 1, D], cos
                       repeated per pair and 1 past n_rot, sin signed (-s, s) per pair and 0 past n_rot */
} qnn_rope;

/* An Attention node's host side (qnn_attn.c). The KV caches are APP_READWRITE
 * context tensors: host buffers owned by the context (on a phone: shared
 * memory registered with QNN), bound to every graph that reads them as the
 * hidden inputs kin / vin (the first `len` cache rows); the chunk's new rows
 * leave the graph as the hidden outputs kout / vout and are written into the
 * buffers at their positions after execute. The causal / window mask over
 * [len cache rows | S new rows] is made on the host from the positions. */
typedef struct {
    npl_accel_tensor_id pos, kc, vc;           /* graph input positions; context caches [C, Hkv, D] */
    npl_accel_tensor_id kin, vin, mask, kout, vout;
    uint32_t n_pos, len, window;
} qnn_attn;

typedef struct npl_accel_graph {
    npl_accel_context *ctx;
    char *name;
    Qnn_Handle_t g;
    int finalized;
    uint32_t n_nodes;
    Qnn_Tensor_t *qt;   /* per context tensor id: QNN tensor of this graph (version 0 = none) */
    uint32_t *qdims;    /* dims storage for qt, NPL_ACCEL_MAX_RANK per id */
    Qnn_ScaleOffset_t **qso; /* per id: axis scale/offsets given to QNN */
    uint32_t cap;
    void *keep; /* blocks QNN reads until finalize (param tensors, fillers) */
    qnn_rope *ropes;
    uint32_t n_ropes;
    qnn_attn *attns;
    uint32_t n_attns;
    uint64_t finalize_ns, exec_ns_total, exec_ns_last, exec_ns_min, exec_ns_max, executions;
    uint32_t lpbq_widest; /* widest blockwise-expansion FullyConnected (output channels) lowered, 0 = none */
} qnn_graph;

struct npl_accel_context {
    npl_accel_backend *be;
    npl_accel_device *dev;
    Qnn_Handle_t ctx;
    int from_binary;
    int validate; /* validate_node's scratch context: no QNN context; nodes go to backendValidateOpConfig */
    qnn_tensor *t;
    uint32_t n_t, cap_t;
    qnn_graph **g;
    uint32_t n_g, cap_g;
    /* test option lpbq_refuse_above=W: finalize refuses a graph holding an LPBQ
     * slice wider than W, as the emulator's 1002 does for some graphs, so a
     * test drives the compiler's retry (compile_lower.c); 0 = off */
    uint32_t lpbq_refuse;
};

/* qnn_lib.c: loading, logs and errors. */
npl_accel_status qnn_load(npl_accel_backend *be, const char *dir);
void qnn_unload(npl_accel_backend *be);
/* Records "what: QNN error N (message)[; log lines]" as the backend's error
 * and returns the ABI status for that QNN code. */
npl_accel_status qnn_fail_q(npl_accel_backend *be, Qnn_ErrorHandle_t e, npl_accel_status st, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
npl_accel_status qnn_fail(npl_accel_backend *be, npl_accel_status st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Forgets the log lines collected so far (called before each QNN call that may fail). */
void qnn_log_reset(void);
/* libQnnSystem binary info: graph count and entries (NULL on failure, message set). */
const void *qnn_binary_info(npl_accel_backend *be, const void *bin, uint64_t size, uint32_t *n_graphs);
const QnnSystemContext_GraphInfo_t *qnn_binary_graph(const void *info, uint32_t i);
/* This process's RssAnon in KiB (/proc/self/status; -1 where there is none):
 * the profile's account of what QNN's own calls allocate. */
long qnn_rss_anon_kb(void);

/* qnn_tensor.c: types and tensors. */
uint32_t qnn_dtype(npl_accel_dtype dt); /* 0 if the ABI type has no QNN mapping */
int qnn_dtype_to_abi(uint32_t qdt, npl_accel_dtype *out);
uint64_t qnn_elem_bytes(npl_accel_dtype dt);
/* The QNN tensor of context tensor `id` in graph g, creating it on first use. */
npl_accel_status qnn_graph_tensor(qnn_graph *g, npl_accel_tensor_id id, Qnn_Tensor_t **out);
/* A QNN STATIC tensor of the graph for a node parameter or filler data. */
npl_accel_status qnn_static_tensor(qnn_graph *g, const char *name, uint32_t qdt, const Qnn_QuantizeParams_t *qp, uint32_t rank,
                                   const uint32_t *dims, const void *data, uint32_t bytes, Qnn_Tensor_t *out);
uint16_t qnn_f32_to_f16(float f);
/* Grows g's per-id arrays to n ids. */
npl_accel_status qnn_graph_reserve(qnn_graph *g, uint32_t n);
/* qnn_rope.c: fills the hidden cos / sin inputs of rope r from the positions. */
void qnn_rope_angles(const qnn_rope *r, const int32_t *pos, void *cos, void *sin);

/* The [N, K] copy of a rank-2 STATIC weight [K, N] (per-axis scales on N) for FullyConnected. */
/* A STATIC float record as F16 / F32 ("<name>.f16" / ".f32", made once per context). */
npl_accel_status qnn_static_as(npl_accel_context *c, npl_accel_tensor_id id, npl_accel_dtype dt, npl_accel_tensor_id *out);
npl_accel_status qnn_weight_nk(npl_accel_context *c, npl_accel_tensor_id id, npl_accel_tensor_id *out);
/* Rows n0 .. n0 + n - 1 of an [N, K] STATIC weight (its scales with them), a
 * context record "<name>.n<n0>_<n>" made once and shared by every graph. */
npl_accel_status qnn_weight_rows(npl_accel_context *c, npl_accel_tensor_id id, uint32_t n0, uint32_t n, npl_accel_tensor_id *out);
/* Zeroed memory with QNN_PAD zero bytes after n, for the arrays an LPBQ
 * tensor hands QNN (qnn_lpbq.c says why). */
enum { QNN_PAD = 4096 };
static inline void *qnn_zalloc_padded(size_t n) { return calloc(n + QNN_PAD, 1); }
/* The ABI's per-block scales of t (INT8 [N, K], axis 0, values -8..7) as
 * LPBQ: t->lpbq_*; UNSUPPORTED with the reason when they are not a scale
 * per channel times an integer 1..15 (qnn_lpbq.c). */
npl_accel_status qnn_lpbq_factor(npl_accel_backend *be, qnn_tensor *t, const int8_t *values);
/* The output-channel slice width a blockwise-expansion FullyConnected of
 * K inputs and N outputs is lowered in (N: no slicing); 0 if none works. */
uint32_t qnn_lpbq_slice(uint32_t K, uint32_t N);

/* qnn_ops.c: lowering of one ABI node into QNN nodes. */
enum { QNN_MAX_IN = 16, QNN_MAX_PARAMS = 8 };
struct qnn_lw;
typedef struct {
    const char *abi, *qnn; /* ABI op name; the QNN op(s) it becomes */
    uint8_t min_in, max_in;
    const char *params[QNN_MAX_PARAMS]; /* accepted ABI param names */
    npl_accel_status (*lower)(struct qnn_lw *L);
} qnn_op_row;
/* One node being lowered: its graph, description and QNN output tensor. */
typedef struct qnn_lw {
    qnn_graph *g;
    npl_accel_backend *be;
    const npl_accel_node_desc *n;
    const char *nm;
    const qnn_op_row *row;
    Qnn_Tensor_t out;
    npl_accel_dtype cdt; /* F16 / F32: the float type the node computes in (its output's); NPL_ACCEL_DT_COUNT: none */
    int trust_finalize;  /* QNN's validation refuses the next node wrongly: skip it (finalize and execute decide) */
} qnn_lw;
const qnn_op_row *qnn_op_table(uint32_t *n);
npl_accel_status qnn_lower_node(qnn_graph *g, const npl_accel_node_desc *n);
void *qnn_keep(qnn_graph *g, size_t bytes); /* freed at finalize / graph free */
void qnn_keep_free(qnn_graph *g);
char *qnn_keep_name(qnn_graph *g, const char *base, const char *suffix);
const npl_accel_param *qnn_param(const npl_accel_node_desc *n, const char *name);
Qnn_Param_t qnn_scalar(const char *name, uint32_t dt);
/* Input i of the node as a QNN tensor of the graph; its context record. A
 * float input of the other float type than L->cdt comes converted (QNN's ops
 * take one float type): a STATIC one as a converted copy, others through a
 * QNN Cast. */
npl_accel_status qnn_in(qnn_lw *L, uint32_t i, Qnn_Tensor_t *out);
const qnn_tensor *qnn_lw_t(const qnn_lw *L, uint32_t i);
/* A STATIC graph tensor named node name + suffix with a copy of data (qp NULL: not quantized). */
npl_accel_status qnn_const(qnn_graph *g, const char *nm, const char *suffix, uint32_t qdt, const Qnn_QuantizeParams_t *qp,
                           uint32_t rank, const uint32_t *dims, const void *data, uint32_t bytes, Qnn_Tensor_t *out);
npl_accel_status qnn_tensor_param(qnn_graph *g, const char *nm, const char *pname, uint32_t qdt, uint32_t rank,
                                  const uint32_t *dims, const void *data, uint32_t bytes, Qnn_Param_t *out);
/* A NATIVE intermediate of like's type and quant params. */
npl_accel_status qnn_native(qnn_graph *g, const char *nm, const char *suffix, const Qnn_Tensor_t *like, uint32_t rank,
                            const uint32_t *dims, Qnn_Tensor_t *out);
/* Adds one QNN node named node name + suffix. */
npl_accel_status qnn_node(qnn_lw *L, const char *suffix, const char *type, Qnn_Tensor_t *in, uint32_t n_in,
                          Qnn_Tensor_t *out, Qnn_Param_t *prm, uint32_t np);
npl_accel_status qnn_scalar_const(qnn_lw *L, const char *suffix, const qnn_tensor *x, double v, Qnn_Tensor_t *out);
/* A hidden graph tensor (APP_WRITE input or APP_READ output) named node name + sfx, bound by the adapter at execute. */
npl_accel_status qnn_hidden_tensor(qnn_lw *L, const char *sfx, npl_accel_kind kind, npl_accel_dtype dt, uint32_t rank,
                                   const uint32_t *dims, npl_accel_tensor_id *id, Qnn_Tensor_t *q);
/* qnn_ops_compose.c: ops QNN HTP has no single op for. */
npl_accel_status qnn_lower_silu(qnn_lw *L);
npl_accel_status qnn_lower_glu(qnn_lw *L);
npl_accel_status qnn_lower_rope(qnn_lw *L);
/* qnn_attn.c: Attention composed of MatMul / Concat / Softmax with host caches. */
npl_accel_status qnn_lower_attention(qnn_lw *L);
/* Mask of attention a from the positions: [S, len + S] F16, 0 or a large negative (in_chunk: len bytes of scratch). */
void qnn_attn_mask(const qnn_attn *a, const int32_t *pos, uint16_t *mask, uint8_t *in_chunk);
/* Writes the new rows (kout / vout bytes) into the caches at their positions. */
void qnn_attn_store(npl_accel_context *c, const qnn_attn *a, const int32_t *pos, const void *knew, const void *vnew);

/* qnn_plugin.c: objects shared with qnn_exec.c. */
uint64_t qnn_now_ns(void);
uint64_t qnn_n_elems(uint32_t rank, const uint32_t *dims);
npl_accel_status qnn_context_new(npl_accel_backend *be, npl_accel_device *dev, npl_accel_context **out);
npl_accel_status qnn_context_free(npl_accel_context *c);
qnn_graph *qnn_find_graph(npl_accel_context *c, const char *name);
npl_accel_status qnn_add_graph(npl_accel_context *c, const char *name, qnn_graph **out);
void qnn_graph_free(qnn_graph *g);
void qnn_tensor_release(qnn_tensor *t);
qnn_tensor *qnn_context_append_tensor(npl_accel_context *c);
/* A static tensor derived from another, by name (malloc'd; this takes it):
 * found, *t = NULL and *out its id; or a new entry *t named name for the
 * caller to fill and then make c->n_t++ (appending may move c->t). */
npl_accel_status qnn_derived_tensor(npl_accel_context *c, char *name, npl_accel_tensor_id *out, qnn_tensor **t);
/* tensor_create's checks and record (g NULL: a context tensor). */
npl_accel_status qnn_new_tensor(npl_accel_context *c, qnn_graph *g, const npl_accel_tensor_desc *d, npl_accel_tensor_id *out);

/* qnn_binrec.c: the Rope and Attention records after QNN's bytes in a context binary. */
uint64_t qnn_binrec_size(const npl_accel_context *c); /* 0: no Rope or Attention, the binary is QNN's alone */
void qnn_binrec_write(const npl_accel_context *c, uint64_t qnn_size, uint8_t *dst);
/* The size of the QNN binary at the start of bin (size if there is no record). */
uint64_t qnn_binrec_split(const void *bin, uint64_t size);
/* Rebuilds the graphs' Rope and Attention records of a loaded context (their inputs hidden again, the caches created). */
npl_accel_status qnn_binrec_load(npl_accel_context *c, const void *bin, uint64_t qnn_size, uint64_t size);

/* qnn_validate.c: the version-2 methods validate_node and list_ops. */
npl_accel_status qnn_validate_node(npl_accel_backend *be, const npl_accel_node_desc *node, const npl_accel_tensor_desc *inputs,
                                   const npl_accel_tensor_desc *outputs, char *reason, uint32_t reason_len);
npl_accel_status qnn_list_ops(npl_accel_backend *be, const npl_accel_op_info **ops, uint32_t *n_ops);
void qnn_ops_free(npl_accel_backend *be);

/* qnn_exec.c: execute, profiles and context binaries (ABI methods). */
npl_accel_status qnn_graph_execute(npl_accel_graph *g, const npl_accel_buffer *in, uint32_t n_in,
                                   const npl_accel_buffer *out, uint32_t n_out);
npl_accel_status qnn_graph_retrieve(npl_accel_context *c, const char *name, npl_accel_graph **out);
npl_accel_status qnn_graph_get_profile(npl_accel_graph *g, npl_accel_profile *out);
npl_accel_status qnn_context_get_binary_size(npl_accel_context *c, uint64_t *size);
npl_accel_status qnn_context_get_binary(npl_accel_context *c, void *buf, uint64_t buf_size, uint64_t *written);
npl_accel_status qnn_context_create_from_binary(npl_accel_backend *be, npl_accel_device *dev, const npl_accel_option *opts,
                                                uint32_t n_opts, const void *bin, uint64_t size, npl_accel_context **out);
npl_accel_status qnn_binary_info_get(npl_accel_backend *be, const void *bin, uint64_t size, npl_accel_binary_info **out);
void qnn_binary_info_free(npl_accel_backend *be, npl_accel_binary_info *info);
npl_accel_status qnn_context_tensor_data(npl_accel_context *c, const char *name, void **data, uint64_t *size);
#endif
