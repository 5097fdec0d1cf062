/* The op table. One row per op drives the enum, the name, the arity and, in
 * each layer, the op's own functions, so adding an op is one row here plus
 * its functions there and nothing can drift:
 *
 *   X(ENUM, "name", n_src_min, n_src_max, shape, cpu, file, lower)
 *     shape  shape_<shape>: output shape from the inputs' (core/shape.c)
 *     cpu    cpu_<cpu>: the CPU execution, an npl_op_exec (cpu/cpu_backend.c);
 *            none: the CPU runs no code for it (leaves, plugin ops)
 *     file   load_<file>: rebuilds the node from what a graph file stores
 *            (op, type, shape, sources, ip/fp params; attributes are
 *            generic) (format/graph_file.c)
 *     lower  lower_<lower>: lowers the node into an accelerator graph
 *            (compiler/lower.c); cpu_only: a break op, it stays on the CPU
 *
 * Rows are append-only: graph files and packages store the enum value. */
#ifndef NPL_OPS_H
#define NPL_OPS_H

#define NPL_OP_LIST(X)                                                                                             \
    /* bound by the caller at run time */                                                                          \
    X(INPUT, "input", 0, 0, leaf, none, input, leaf)                                                               \
    /* constant data (usually in the mapped model file) */                                                         \
    X(WEIGHT, "weight", 0, 0, leaf, none, weight, leaf)                                                            \
    /* persistent buffer owned by the caller (KV cache) */                                                         \
    X(STATE, "state", 0, 0, leaf, none, state, leaf)                                                               \
    /* table[ne0, rows], ids i32[n] -> f32[ne0, n] */                                                              \
    X(GET_ROWS, "get_rows", 2, 2, get_rows, get_rows, plain, get_rows)                                             \
    /* x[ne0, ...] (, w[ne0]) -> f32; fp: eps */                                                                   \
    X(RMS_NORM, "rms_norm", 1, 2, rms_norm, rms_norm, plain, rms_norm)                                             \
    /* w[k, n], x[k, m] -> f32[n, m] */                                                                            \
    X(MATMUL, "matmul", 2, 2, matmul, matmul, plain, matmul)                                                       \
    /* a + b, b broadcast over rows when b has one row */                                                          \
    X(ADD, "add", 2, 2, binary, add, plain, add)                                                                   \
    /* a * b, same broadcast */                                                                                    \
    X(MUL, "mul", 2, 2, binary, mul, plain, mul)                                                                   \
    /* x * fp[0] */                                                                                                \
    X(SCALE, "scale", 1, 1, same, scale, plain, scale)                                                             \
    /* x[hd, heads, seq], pos i32[seq] (, factors[n_rot/2]) */                                                     \
    X(ROPE, "rope", 2, 3, rope, rope, plain, rope)                                                                 \
    /* q, k, v, kcache, vcache, pos -> [hd*heads, seq] */                                                          \
    X(ATTENTION, "attention", 6, 6, attention, attention, plain, attention)                                        \
    /* silu(g) * u */                                                                                              \
    X(SWIGLU, "swiglu", 2, 2, glu, swiglu, plain, swiglu)                                                          \
    /* gelu_tanh(g) * u */                                                                                         \
    X(GEGLU, "geglu", 2, 2, glu, geglu, plain, geglu)                                                              \
    /* fp[0] * tanh(x / fp[0]) */                                                                                  \
    X(SOFTCAP, "softcap", 1, 1, same, softcap, plain, cpu_only)                                                    \
    /* view with a new shape (ip: n_dims, ne..., -1 = infer) */                                                    \
    X(RESHAPE, "reshape", 1, 1, reshape, reshape, reshape, reshape)                                                \
    /* opaque op run by a plugin kernel (attrs) */                                                                 \
    X(PLUGIN, "plugin", 0, 16, plugin, none, plugin, plugin)                                                      \
    /* softmax over ne0 of fp[0] * x (routers, attention written out as ops) */                                    \
    X(SOFTMAX, "softmax", 1, 1, same, softmax, plain, softmax)                                                    \
    /* x[ne0, ...] -> f32[ip[1], ...]: elements ip[0] .. ip[0] + ip[1] of each row (gemma4's per-layer inputs) */ \
    X(SLICE, "slice", 1, 1, slice, slice, plain, cpu_only)

typedef enum {
#define NPL_OP_ENUM(e, name, lo, hi, shape, cpu, file, lower) NPL_OP_##e,
    NPL_OP_LIST(NPL_OP_ENUM)
#undef NPL_OP_ENUM
    NPL_OP_COUNT
} npl_op;

const char *npl_op_name(npl_op op);
int npl_op_min_src(npl_op op);
int npl_op_max_src(npl_op op);

#endif
