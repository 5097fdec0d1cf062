/* Backend interface: a table of per-op executions. The CPU backend
 * (src/cpu/cpu_backend.c) is always there; upper layers may register extra
 * executions (the plugin op) into a backend they own — registration flows
 * downward, core never calls up by name. */
#ifndef NPL_BACKEND_H
#define NPL_BACKEND_H
#include <stddef.h>

#include "core/graph.h"
#include "core/shape.h"
#include "kernels/threadpool.h"

/* A concrete, contiguous tensor during execution. */
typedef struct {
    npl_type type;
    npl_shape shape;
    void *data;
} npl_tensor;

typedef struct npl_exec_ctx {
    const npl_graph *graph;
    int id;
    const npl_node *node;
    int n_src;
    npl_tensor src[NPL_MAX_SRC];
    npl_tensor dst;
    void *scratch;          /* per-run scratch, at least scratch_size() bytes */
    npl_pool *pool;
    const void *backend_ctx;/* backend's own data (kernel tables, ...) */
    void *op_state;         /* from create(), NULL otherwise */
    char *err;              /* for failures: message buffer */
    size_t errlen;
} npl_exec_ctx;

typedef struct {
    /* optional: per-session state, created once when the session is created */
    int (*create)(npl_exec_ctx *ctx, void **state);
    /* optional: called when input shapes change (a new plan is made) */
    int (*resize)(npl_exec_ctx *ctx);
    /* required: run the op; returns 0 or -1 with ctx->err filled */
    int (*exec)(npl_exec_ctx *ctx);
    /* optional: scratch bytes needed for these shapes */
    size_t (*scratch)(const npl_exec_ctx *ctx);
    void (*destroy)(void *state);
    /* optional: run n > 1 nodes of this op that come one after another in
     * the session's order and read the same src[1] (a matmul's activations:
     * q, k and v; gate and up) together, each ctx with its own scratch of
     * scratch() bytes; returns 0 when done, 1 to have them run one by one
     * (nothing written then), -1 with ctx[0].err filled */
    int (*exec_group)(npl_exec_ctx *ctx, int n);
    /* optional: start bringing in what exec (exec_group for n > 1) will read
     * from memory, a matmul's weights, while the ops before it, which read
     * none, run; a hint: no result, no writes */
    void (*prefetch)(const npl_exec_ctx *ctx, int n);
} npl_op_exec;

typedef struct npl_backend {
    const char *name;
    npl_op_exec ops[NPL_OP_COUNT];
    const void *ctx;                     /* passed as ctx->backend_ctx */
    npl_plugin_shape_hook plugin_shape;  /* shape kernel for PLUGIN nodes */
} npl_backend;

#endif
