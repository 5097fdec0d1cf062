/* npullm accelerator ABI — the table a matrix accelerator implements, shaped
 * like the QNN API (QnnBackend / QnnDevice / QnnContext / QnnGraph /
 * QnnTensor / QnnProfile).
 *
 * A vendor library exports one C symbol, npl_accel_get_api, returning a
 * constant table of function pointers for the ABI version the caller asks
 * for (NULL if it cannot serve that version). The loader checks abi_version
 * and struct_size (npl_accel_api_check below) before calling anything.
 * Methods are only ever APPENDED to the table; a field is never removed,
 * reordered or retyped, so a table of a newer version is a valid table of
 * every older one. Caller-filled structs (descs, options, buffers) follow
 * the ABI version the caller requested and are also append-only.
 *
 *   uint32_t v;  const npl_accel_api *api = npl_accel_get_newest_api(get_api, &v);
 *   if (npl_accel_api_check(api, 1)) ...refuse...;   // then NPL_ACCEL_API_HAS per v2 method
 *   npl_accel_backend *be;  npl_accel_device *dev;  npl_accel_context *ctx;
 *   api->backend_create(NULL, 0, &be, err, sizeof err);
 *   api->device_create(be, NULL, 0, &dev);
 *   api->context_create(be, dev, NULL, 0, &ctx);
 *   npl_accel_graph *g;  api->graph_create(ctx, "matmul", &g);
 *   ... tensor_create x 3, graph_add_node("MatMul", {a, w}, {c}) ...
 *   api->graph_finalize(g);                         // compile
 *   npl_accel_buffer in = {"a", a_data, a_bytes}, out = {"c", c_data, c_bytes};
 *   api->graph_execute(g, &in, 1, &out, 1);
 *
 * Errors: every method returns an npl_accel_status; last_error(backend)
 * gives the message of the most recent failure of any call on that backend
 * or its devices, contexts and graphs. A backend and everything created from
 * it must be used by one thread at a time (the implementation may use its
 * own worker threads, or the host's pool given to backend_create_on_pool,
 * inside a call).
 *
 * Shapes: dims[0] is the OUTERMOST dimension and dims[rank-1] the contiguous
 * one (QNN's row-major order; note this is the reverse of ggml's ne[]).
 * Tensors are dense and contiguous.
 *
 * Version 2 appends validate_node (would this node be accepted, and if not
 * why), list_ops (the op set with its params) and backend_create_on_pool
 * (run on the host's thread pool instead of the implementation's own
 * threads). A version-2 implementation may leave any of the three NULL (not
 * offered); test with NPL_ACCEL_API_HAS(api, method), which also handles a
 * version-1 table. A loader asks for the newest version first and then older
 * ones (npl_accel_get_newest_api), so version-1 libraries keep loading.
 *
 * Plain C, no dependency headers: this file must compile on its own. */
#ifndef NPULLM_ACCEL_H
#define NPULLM_ACCEL_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define NPL_ACCEL_ABI_VERSION 2u
#define NPL_ACCEL_MAX_RANK 6
/* The symbol a plugin library exports (for dlsym). */
#define NPL_ACCEL_ENTRY_POINT "npl_accel_get_api"

/* ---- status codes ---- */
typedef int32_t npl_accel_status;
enum {
    NPL_ACCEL_OK = 0,
    NPL_ACCEL_ERR_INVALID_ARG = 1,     /* NULL, out-of-range enum, unknown option, bad value */
    NPL_ACCEL_ERR_INVALID_HANDLE = 2,  /* handle of another backend or already freed */
    NPL_ACCEL_ERR_UNSUPPORTED = 3,     /* well-formed but not implemented here */
    NPL_ACCEL_ERR_UNKNOWN_OP = 4,      /* op type name not in the op set */
    NPL_ACCEL_ERR_BAD_PARAM = 5,       /* unknown node param name, wrong param type or value */
    NPL_ACCEL_ERR_TYPE_MISMATCH = 6,   /* tensor data types an op cannot take */
    NPL_ACCEL_ERR_SHAPE_MISMATCH = 7,  /* inconsistent shapes / ranks / input counts */
    NPL_ACCEL_ERR_DUPLICATE_NAME = 8,  /* tensor or graph name already used in the context */
    NPL_ACCEL_ERR_GRAPH_CYCLE = 9,     /* the nodes do not form a DAG */
    NPL_ACCEL_ERR_STATE = 10,          /* wrong order: execute before finalize, add after finalize */
    NPL_ACCEL_ERR_NOT_FOUND = 11,      /* no graph / tensor of that name */
    NPL_ACCEL_ERR_BINDING = 12,        /* missing, unknown or wrong-size execute buffer */
    NPL_ACCEL_ERR_BINARY_CORRUPT = 13, /* truncated, checksum mismatch, inconsistent tables */
    NPL_ACCEL_ERR_BINARY_VERSION = 14, /* binary of another ABI / format version or byte order */
    NPL_ACCEL_ERR_HW_UNSUPPORTED = 15, /* binary or option needs hardware this machine lacks */
    NPL_ACCEL_ERR_NO_MEMORY = 16,
    NPL_ACCEL_ERR_IO = 17,             /* a file could not be written or read */
    NPL_ACCEL_ERR_ABI_VERSION = 18,    /* no table for the requested ABI version */
    NPL_ACCEL_ERR_INTERNAL = 19
};

/* ---- data types ----
 * Q4_0 and Q8_0 are GGML's block-quantized layouts, bit-exact with
 * llama.cpp (blocks of 32 along the contiguous dimension: Q4_0 = f16 scale +
 * 16 bytes of nibbles, value = (nibble - 8) * d; Q8_0 = f16 scale + 32 int8,
 * value = q * d). They are for STATIC weights; the scale lives in the block,
 * so their quant encoding must be NONE.
 * The block types from Q4_1 on (appended) are GGML's other layouts, equally
 * bit-exact with llama.cpp: Q4_1, Q5_0, Q5_1 in blocks of 32; the k-quants
 * Q2_K..Q6_K in super-blocks of 256 (so the contiguous dimension must be a
 * multiple of 256). Same rules: STATIC weights, quant encoding NONE. */
typedef uint32_t npl_accel_dtype;
enum {
    NPL_ACCEL_DT_F32 = 0,
    NPL_ACCEL_DT_F16 = 1,
    NPL_ACCEL_DT_BF16 = 2,
    NPL_ACCEL_DT_INT8 = 3,
    NPL_ACCEL_DT_UINT8 = 4,
    NPL_ACCEL_DT_INT16 = 5,
    NPL_ACCEL_DT_INT32 = 6,
    NPL_ACCEL_DT_Q4_0 = 7,
    NPL_ACCEL_DT_Q8_0 = 8,
    NPL_ACCEL_DT_Q4_1 = 9,
    NPL_ACCEL_DT_Q5_0 = 10,
    NPL_ACCEL_DT_Q5_1 = 11,
    NPL_ACCEL_DT_Q2_K = 12,
    NPL_ACCEL_DT_Q3_K = 13,
    NPL_ACCEL_DT_Q4_K = 14,
    NPL_ACCEL_DT_Q5_K = 15,
    NPL_ACCEL_DT_Q6_K = 16,
    NPL_ACCEL_DT_COUNT
};

/* ---- tensor kinds (QNN_TENSOR_TYPE_*) ---- */
typedef uint32_t npl_accel_kind;
enum {
    NPL_ACCEL_APP_WRITE = 0,     /* graph input: the app binds a buffer at execute */
    NPL_ACCEL_APP_READ = 1,      /* graph output: the app binds a buffer at execute */
    NPL_ACCEL_NATIVE = 2,        /* internal to one graph; lives in the implementation */
    NPL_ACCEL_STATIC = 3,        /* constant data given at create (weights); context-wide */
    NPL_ACCEL_APP_READWRITE = 4, /* context tensor shared by the graphs of one context
                                  * (e.g. the KV cache); owned by the context, zeroed at
                                  * creation, optionally overridden by a bound buffer */
    NPL_ACCEL_KIND_COUNT
};

/* ---- quantization parameters ----
 * QNN's convention: float = (q + offset) * scale, for INT8 / UINT8 / INT16
 * (and INT32 biases). Arrays are read during the create call (copied).
 *   PER_TENSOR: n_scales = 1.
 *   PER_AXIS:   n_scales = dims[axis]; scale i applies to index i along axis
 *               (for a weight [K, N] the output channel is axis 1; for [N, K]
 *               it is axis 0).
 *   PER_BLOCK:  rank-2 tensors only. axis is the channel axis as above; the
 *               other dimension is cut into blocks of block_size elements;
 *               n_scales = dims[axis] * (dims[other] / block_size), stored
 *               channel-major: scales[c * n_blocks + b].
 * offsets may be NULL (all zero).
 *   DYNAMIC (appended): INT16 NATIVE tensors only. Symmetric scales the
 *               implementation computes each time the tensor is written, one
 *               per block of block_size consecutive elements (row-major;
 *               block_size a power of two from 32 to 1024 dividing the last
 *               dimension): scale = max |x| of the block / 32767. n_scales
 *               0, scales and offsets NULL, axis 0. The scales live with the
 *               data, so the tensor takes more than 2 bytes per element;
 *               a graph whose activations need no calibration uses it. */
typedef uint32_t npl_accel_quant_encoding;
enum {
    NPL_ACCEL_QUANT_NONE = 0,
    NPL_ACCEL_QUANT_PER_TENSOR = 1,
    NPL_ACCEL_QUANT_PER_AXIS = 2,
    NPL_ACCEL_QUANT_PER_BLOCK = 3,
    NPL_ACCEL_QUANT_DYNAMIC = 4
};

typedef struct {
    npl_accel_quant_encoding encoding;
    int32_t axis;
    uint32_t block_size;
    uint32_t n_scales;
    const float *scales;
    const int32_t *offsets;
} npl_accel_quant;

/* ---- opaque handles ---- */
typedef struct npl_accel_backend npl_accel_backend;
typedef struct npl_accel_device npl_accel_device;
typedef struct npl_accel_context npl_accel_context;
typedef struct npl_accel_graph npl_accel_graph;
/* Tensors are named by ids, unique within their context. */
typedef uint32_t npl_accel_tensor_id;

/* ---- caller-filled descriptions ---- */

/* "key" = "value" options (backend, device and context creation). Unknown
 * keys are an error, so typos do not pass silently. */
typedef struct {
    const char *key;
    const char *value;
} npl_accel_option;

/* A tensor. Names are unique within a context, with one exception that
 * gives weight sharing: creating a STATIC or APP_READWRITE tensor whose name
 * already exists in the context, with an identical description (kind, type,
 * dims, quant params and, for STATIC, identical bytes), returns the
 * existing tensor's id. STATIC data is copied during the call. */
typedef struct {
    const char *name;
    npl_accel_kind kind;
    npl_accel_dtype dtype;
    uint32_t rank;                       /* 1..NPL_ACCEL_MAX_RANK */
    uint32_t dims[NPL_ACCEL_MAX_RANK];   /* dims[0] outermost; unused entries ignored */
    npl_accel_quant quant;
    const void *data;                    /* STATIC only */
    uint64_t data_size;                  /* STATIC only: exact byte size */
} npl_accel_tensor_desc;

/* A node parameter: a small typed key/value (QNN's Qnn_Param_t). */
typedef uint32_t npl_accel_param_type;
enum {
    NPL_ACCEL_PARAM_INT = 0,     /* i (booleans are 0/1) */
    NPL_ACCEL_PARAM_FLOAT = 1,   /* f */
    NPL_ACCEL_PARAM_INTS = 2,    /* ints[count] */
    NPL_ACCEL_PARAM_FLOATS = 3,  /* floats[count] */
    NPL_ACCEL_PARAM_STRING = 4   /* str */
};

typedef struct {
    const char *name;
    npl_accel_param_type type;
    uint32_t count;
    int64_t i;
    double f;
    const int64_t *ints;
    const float *floats;
    const char *str;
} npl_accel_param;

/* A node: op type by name (see the implementation's op set), params, and
 * tensor ids. The ids must belong to the node's graph or be context tensors
 * (STATIC / APP_READWRITE). Output tensors are declared by the caller with
 * their full shape and type; finalize checks them against the op. */
typedef struct {
    const char *name;                    /* optional, used in messages */
    const char *op;
    const npl_accel_param *params;
    uint32_t n_params;
    const npl_accel_tensor_id *inputs;
    uint32_t n_inputs;
    const npl_accel_tensor_id *outputs;
    uint32_t n_outputs;
} npl_accel_node_desc;

/* An execute-time buffer bound to a tensor by name; size must equal the
 * tensor's byte size exactly. */
typedef struct {
    const char *name;
    void *data;
    uint64_t size;
} npl_accel_buffer;

/* ---- the op vocabulary ----
 * Op type names for graph_add_node, validate_node and list_ops. Every
 * implementation offers a subset (list_ops says which, validate_node which
 * tensor types / shapes); an adapter maps each to its vendor's op (QNN:
 * MatMul -> MatMul / FullyConnected, RmsNorm -> RmsNorm, Softmax -> Softmax,
 * ...). Shapes are outermost first; "float" is F32 / F16 / BF16 or an
 * integer type with quant params (what an implementation takes of those it
 * says in validate_node); arithmetic is as in f32. Inputs marked ? are
 * optional (trailing). Params in [] with their default; a FLOAT param may
 * also be given as an INT value.
 *
 *   MatMul         x [.., M, K], w [K, N] (or [N, K] with transpose_in1=1), bias [N]?
 *                  -> [.., M, N]. [transpose_in0 INT 0, transpose_in1 INT 0].
 *                  w may be a quantized / block type (STATIC).
 *   FullyConnected x [M, K], w [N, K], bias [N]? -> [M, N]  (MatMul with transpose_in1=1).
 *                  [keep_dims INT 0]
 *   RmsNorm        x [.., D], gamma [D]? -> x shape: x / sqrt(mean(x^2) + epsilon) * gamma.
 *                  [epsilon FLOAT 1e-6]
 *   Rope           x [S, H, D], positions INT32 [S], freq_factors F32 [n_rot/2]? -> x shape.
 *                  llama.cpp's ggml_rope_ext on the first n_rot dims of each head:
 *                  [n_rot INT D, neox INT 0 (1: pairs (i, i + n_rot/2), 0: (2i, 2i+1)),
 *                  base FLOAT 10000, freq_scale FLOAT 1, ext_factor FLOAT 0,
 *                  attn_factor FLOAT 1, corr_low INT 0, corr_high INT 0 (YaRN ramp)].
 *                  freq_factors divide pair i's angle; position -1 leaves the row unchanged.
 *   Attention      q [S, Hq, D], k [S, Hkv, D], v [S, Hkv, D], k_cache, v_cache
 *                  (APP_READWRITE F16 [C, Hkv, D]), positions INT32 [S] -> [S, Hq, D].
 *                  Writes the k / v rows into the caches at their positions
 *                  (position -1 = padding: not written, output row 0), then
 *                  causal attention of each q row over cache rows <= its position
 *                  (Hq / Hkv query heads share a KV head):
 *                  softmax(softcap(q.k * scale)) . v.
 *                  [scale FLOAT 1/sqrt(D), window INT 0 (> 0: only the last window
 *                  positions), softcap FLOAT 0 (> 0: softcap * tanh(s / softcap)),
 *                  kv_len INT 0 (> 0: reads only the first kv_len cache rows, a
 *                  KV-length bucket's graph; every position must be below it)]
 *   Add, Mul       a, b -> the larger's shape; the smaller broadcasts over the
 *                  other's leading dims (its trailing dims equal, leading ones 1).
 *   Scale          x -> x * scale. [scale FLOAT 1]
 *   Silu, Gelu     x -> x * sigmoid(x), gelu (tanh approximation).
 *   SwiGLU, GeGLU  gate, up (same shape) -> silu(gate) * up, gelu(gate) * up.
 *   Softmax        x -> softmax(beta * x) over the last dim. [beta FLOAT 1]
 *   Reshape        x -> same element count and type, any shape (no data movement).
 *   Transpose      x -> x permuted: out dims[i] = x dims[perm[i]]. [perm INTS]
 *   Concat         x1..xn (same type; shapes equal except along axis) -> joined
 *                  along axis. [axis INT 0; negative counts from the end]
 *   Gather         table [V, D], indices INT32 [..] -> [.., D]: rows of the table.
 *                  [axis INT 0 (only 0)]
 *   Cast           x -> the output's type (same shape): a conversion.
 *
 * Composite ops (Attention, Rope, the gated FFN SwiGLU / GeGLU) are offered
 * by a target that has them; for a target that does not, the compiler
 * decomposes them into primitives it accepts (MatMul, Mul, Add, Softmax,
 * ...), or leaves them on the CPU. An implementation may accept extra
 * vendor ops; their names carry a prefix ("qnn.", "vnpu.") so they never
 * collide with this vocabulary. */

/* ---- information returned by the implementation ---- */

typedef struct {
    const char *name;                    /* "vnpu", "record", "qnn-htp", ... */
    char kernel_family[32];              /* the kernels this backend compiles for */
    char available_families[96];         /* comma-separated, best first */
    uint32_t n_threads;
} npl_accel_backend_info;

typedef struct {
    const char *name;
    npl_accel_kind kind;
    npl_accel_dtype dtype;
    uint32_t rank;
    uint32_t dims[NPL_ACCEL_MAX_RANK];
    npl_accel_quant quant;               /* arrays point into the info's memory */
} npl_accel_tensor_info;

typedef struct {
    const char *name;
    uint32_t n_inputs, n_outputs;        /* APP_WRITE, APP_READ tensors */
    const npl_accel_tensor_info *inputs;
    const npl_accel_tensor_info *outputs;
    uint32_t n_nodes;                    /* compiled nodes (after fusion) */
    uint64_t arena_bytes;                /* activation arena of the graph */
} npl_accel_graph_info;

typedef struct {
    uint32_t abi_version;
    uint32_t format_version;
    char kernel_family[32];
    uint64_t total_size;
    uint64_t static_bytes;               /* pre-packed constant data */
    uint32_t n_graphs;
    const npl_accel_graph_info *graphs;
    uint32_t n_context_tensors;          /* APP_READWRITE tensors */
    const npl_accel_tensor_info *context_tensors;
} npl_accel_binary_info;

/* Per-graph profiling counters. */
typedef struct {
    uint64_t executions;
    uint64_t total_ns;                   /* sum over executions */
    uint64_t last_ns, min_ns, max_ns;
    uint64_t finalize_ns;                /* compile time (0 for a graph from a binary) */
    uint64_t arena_bytes;
    uint64_t static_bytes;               /* packed constants this graph uses */
    uint32_t n_nodes;                    /* as added */
    uint32_t n_compiled;                 /* after fusion */
    char kernel_family[32];
    char detail[256];                    /* free text: kernels per op, fusions */
} npl_accel_profile;

/* An op of the implementation's set (list_ops). */
typedef struct {
    const char *name;                    /* param name for npl_accel_param */
    npl_accel_param_type type;           /* FLOAT params also take INT values */
} npl_accel_param_info;

typedef struct {
    const char *name;                    /* op type, see the op vocabulary above */
    uint32_t min_inputs, max_inputs;     /* optional inputs are trailing */
    uint32_t n_outputs;
    uint32_t n_params;
    const npl_accel_param_info *params;  /* every param the op takes (all optional) */
} npl_accel_op_info;

/* The host's thread pool (backend_create_on_pool). run() calls
 * fn(arg, i, n_tasks) once for every i in [0, n_tasks) on the host's threads
 * (the calling thread included) and returns when all are done. Tasks may run
 * one after another on one thread, so a task must not wait for another. The
 * implementation calls run only from inside one of its own calls, one call
 * at a time, never from inside a task; it typically uses n_tasks = n_threads. */
typedef void (*npl_accel_task_fn)(void *arg, int task, int n_tasks);
typedef struct {
    void *pool;                          /* the host's handle, passed to run */
    uint32_t n_threads;                  /* threads run spreads tasks over (>= 1) */
    void (*run)(void *pool, int n_tasks, npl_accel_task_fn fn, void *arg);
} npl_accel_host_pool;

/* ---- the table ---- */
typedef struct npl_accel_api {
    uint32_t abi_version;                /* NPL_ACCEL_ABI_VERSION the table implements */
    uint32_t struct_size;                /* sizeof(npl_accel_api) of the implementation */
    const char *name;

    /* Backend: options are implementation-defined. On failure *out is NULL
     * and err (may be NULL) receives the message. */
    npl_accel_status (*backend_create)(const npl_accel_option *opts, uint32_t n_opts,
                                       npl_accel_backend **out, char *err, uint32_t errlen);
    void (*backend_free)(npl_accel_backend *be);
    /* Message of the last failure on this backend; "" if none. */
    const char *(*last_error)(const npl_accel_backend *be);
    npl_accel_status (*backend_get_info)(npl_accel_backend *be, npl_accel_backend_info *out);

    npl_accel_status (*device_create)(npl_accel_backend *be, const npl_accel_option *opts,
                                      uint32_t n_opts, npl_accel_device **out);
    void (*device_free)(npl_accel_device *dev);

    npl_accel_status (*context_create)(npl_accel_backend *be, npl_accel_device *dev,
                                       const npl_accel_option *opts, uint32_t n_opts,
                                       npl_accel_context **out);
    /* Frees the context and its graphs (an implementation that writes files
     * may report a failure here). */
    npl_accel_status (*context_free)(npl_accel_context *ctx);

    /* Graph names are unique within a context. */
    npl_accel_status (*graph_create)(npl_accel_context *ctx, const char *name, npl_accel_graph **out);
    /* A tensor of the graph (any kind; STATIC and APP_READWRITE ones are
     * context-wide and shared by name, see npl_accel_tensor_desc). */
    npl_accel_status (*tensor_create)(npl_accel_graph *g, const npl_accel_tensor_desc *desc,
                                      npl_accel_tensor_id *out);
    /* A context tensor (STATIC or APP_READWRITE only). */
    npl_accel_status (*context_tensor_create)(npl_accel_context *ctx, const npl_accel_tensor_desc *desc,
                                              npl_accel_tensor_id *out);
    npl_accel_status (*graph_add_node)(npl_accel_graph *g, const npl_accel_node_desc *node);
    /* Compile: validate, fuse, pre-pack constants, plan memory. After it the
     * graph is immutable; before it, execute fails with ERR_STATE. */
    npl_accel_status (*graph_finalize)(npl_accel_graph *g);
    /* Runs the graph synchronously. Every APP_WRITE and APP_READ tensor must
     * be bound by name; APP_READWRITE tensors may be bound to replace the
     * context's own memory for this call. */
    npl_accel_status (*graph_execute)(npl_accel_graph *g, const npl_accel_buffer *inputs, uint32_t n_inputs,
                                      const npl_accel_buffer *outputs, uint32_t n_outputs);
    /* A finalized graph of the context by name (contexts from a binary hold
     * only finalized graphs). */
    npl_accel_status (*graph_retrieve)(npl_accel_context *ctx, const char *name, npl_accel_graph **out);
    npl_accel_status (*graph_get_profile)(npl_accel_graph *g, npl_accel_profile *out);

    /* Context binary: every graph of the context must be finalized. */
    npl_accel_status (*context_get_binary_size)(npl_accel_context *ctx, uint64_t *size);
    npl_accel_status (*context_get_binary)(npl_accel_context *ctx, void *buf, uint64_t buf_size,
                                           uint64_t *written);
    /* From a binary in caller memory (e.g. an mmap): the implementation may
     * point into it instead of copying constants, so the buffer must stay
     * valid and unchanged until context_free. Verified before use. */
    npl_accel_status (*context_create_from_binary)(npl_accel_backend *be, npl_accel_device *dev,
                                                   const npl_accel_option *opts, uint32_t n_opts,
                                                   const void *binary, uint64_t size,
                                                   npl_accel_context **out);
    /* Graphs with their input / output tensors; free with binary_info_free. */
    npl_accel_status (*binary_info_get)(npl_accel_backend *be, const void *binary, uint64_t size,
                                        npl_accel_binary_info **out);
    void (*binary_info_free)(npl_accel_backend *be, npl_accel_binary_info *info);

    /* The memory of an APP_READWRITE tensor of the context (to reset or
     * inspect a KV cache). */
    npl_accel_status (*context_tensor_data)(npl_accel_context *ctx, const char *name, void **data,
                                            uint64_t *size);
    /* ---- version 1 ends here; newer methods are appended below ---- */

    /* ---- version 2 (each may be NULL: not offered; see NPL_ACCEL_API_HAS) ---- */
    /* Would graph_add_node accept this node? Nothing is created. The node's
     * tensors come as descriptions instead of ids: inputs[i] stands for the
     * i-th input and outputs[j] for the j-th output (node->n_inputs and
     * node->n_outputs count them; the id arrays node->inputs / node->outputs
     * are not read and may be NULL). Descriptions are those tensor_create
     * takes; names may be NULL, STATIC data is not read (data may be NULL,
     * data_size 0). Returns NPL_ACCEL_OK if supported, else the status
     * graph_add_node would return (UNKNOWN_OP, SHAPE_MISMATCH for input
     * counts or shapes, TYPE_MISMATCH, BAD_PARAM, UNSUPPORTED, ...) with a
     * one-line reason naming the node, the tensor or param and what is wrong,
     * in reason (if not NULL) and in last_error. Like QNN's
     * backendValidateOpConfig and ggml's supports_op. */
    npl_accel_status (*validate_node)(npl_accel_backend *be, const npl_accel_node_desc *node,
                                      const npl_accel_tensor_desc *inputs, const npl_accel_tensor_desc *outputs,
                                      char *reason, uint32_t reason_len);
    /* The op set graph_add_node accepts: *ops points to *n_ops entries owned by
     * the implementation, valid until backend_free. */
    npl_accel_status (*list_ops)(npl_accel_backend *be, const npl_accel_op_info **ops, uint32_t *n_ops);
    /* backend_create on the host's thread pool (see npl_accel_host_pool): the
     * backend starts no compute threads of its own and runs its parallel work
     * through pool->run. *pool is copied; the host's pool must stay valid
     * until backend_free. pool NULL is backend_create. */
    npl_accel_status (*backend_create_on_pool)(const npl_accel_option *opts, uint32_t n_opts,
                                               const npl_accel_host_pool *pool, npl_accel_backend **out,
                                               char *err, uint32_t errlen);
    /* ---- version 2 ends here ---- */
} npl_accel_api;

/* Size of a version-1 table: everything up to and including context_tensor_data. */
#define NPL_ACCEL_API_V1_SIZE (offsetof(npl_accel_api, context_tensor_data) + sizeof(void (*)(void)))
/* Size of a version-2 table: up to and including backend_create_on_pool. */
#define NPL_ACCEL_API_V2_SIZE (offsetof(npl_accel_api, backend_create_on_pool) + sizeof(void (*)(void)))

/* Whether the table offers `method` (a member appended after version 1):
 * the table is large enough to hold it and it is not NULL. */
#define NPL_ACCEL_API_HAS(api, method)                                                                   \
    ((api)->struct_size >= offsetof(npl_accel_api, method) + sizeof((api)->method) && (api)->method != 0)

/* The entry point: a constant table for `requested_version`, or NULL if this
 * library cannot serve it. */
typedef const npl_accel_api *(*npl_accel_get_api_fn)(uint32_t requested_version);

/* The loader's check: NULL if `api` may be used as a table of
 * `wanted_version` (the oldest version the caller can work with), else a
 * message saying why not. A table must be at least as large as the table of
 * the version it claims (up to the newest this header knows). */
static inline const char *npl_accel_api_check(const npl_accel_api *api, uint32_t wanted_version) {
    if (!api) return "the library returned no table for this ABI version";
    if (wanted_version == 0 || wanted_version > NPL_ACCEL_ABI_VERSION) return "this header does not know that ABI version";
    if (api->abi_version < wanted_version) return "the table is of an older ABI version";
    if (api->struct_size < NPL_ACCEL_API_V1_SIZE) return "the table is smaller than a version-1 table";
    if (api->abi_version >= 2 && api->struct_size < NPL_ACCEL_API_V2_SIZE)
        return "the table claims ABI version 2 but is smaller than a version-2 table";
    return (const char *)0;
}

/* Asks `get` for the newest ABI version this header knows, then older ones,
 * down to 1; returns the first table served (NULL if none) and the version
 * asked for in *version (0 if none). Check it with npl_accel_api_check. */
static inline const npl_accel_api *npl_accel_get_newest_api(npl_accel_get_api_fn get, uint32_t *version) {
    for (uint32_t v = NPL_ACCEL_ABI_VERSION; v >= 1; v--) {
        const npl_accel_api *api = get(v);
        if (api) {
            *version = v;
            return api;
        }
    }
    *version = 0;
    return (const npl_accel_api *)0;
}

#ifdef __cplusplus
}
#endif
#endif
