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
 *   const npl_accel_api *api = get_api(NPL_ACCEL_ABI_VERSION);
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
 * own worker threads inside a call).
 *
 * Shapes: dims[0] is the OUTERMOST dimension and dims[rank-1] the contiguous
 * one (QNN's row-major order; note this is the reverse of ggml's ne[]).
 * Tensors are dense and contiguous.
 *
 * Plain C, no dependency headers: this file must compile on its own. */
#ifndef NPULLM_ACCEL_H
#define NPULLM_ACCEL_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define NPL_ACCEL_ABI_VERSION 1u
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
} npl_accel_api;

/* Size of a version-1 table: everything up to and including context_tensor_data. */
#define NPL_ACCEL_API_V1_SIZE (offsetof(npl_accel_api, context_tensor_data) + sizeof(void (*)(void)))

/* The entry point: a constant table for `requested_version`, or NULL if this
 * library cannot serve it. */
typedef const npl_accel_api *(*npl_accel_get_api_fn)(uint32_t requested_version);

/* The loader's check: NULL if `api` may be used as a table of
 * `wanted_version`, else a message saying why not. */
static inline const char *npl_accel_api_check(const npl_accel_api *api, uint32_t wanted_version) {
    if (!api) return "the library returned no table for this ABI version";
    if (wanted_version == 0 || wanted_version > NPL_ACCEL_ABI_VERSION) return "this header does not know that ABI version";
    if (api->abi_version < wanted_version) return "the table is of an older ABI version";
    if (api->struct_size < NPL_ACCEL_API_V1_SIZE) return "the table is smaller than a version-1 table";
    return (const char *)0;
}

#ifdef __cplusplus
}
#endif
#endif
