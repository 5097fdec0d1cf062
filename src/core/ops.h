/* The op list. One X-macro drives the enum, the names, the shape functions
 * (src/core/shape.c) and the CPU executions (src/cpu/), so they cannot drift.
 * X(ENUM, "name", n_src_min, n_src_max) */
#ifndef NPL_OPS_H
#define NPL_OPS_H

#define NPL_OP_LIST(X)                                                                    \
    X(INPUT, "input", 0, 0)         /* bound by the caller at run time */                 \
    X(WEIGHT, "weight", 0, 0)       /* constant data (usually in the mapped model file) */\
    X(STATE, "state", 0, 0)         /* persistent buffer owned by the caller (KV cache) */\
    X(GET_ROWS, "get_rows", 2, 2)   /* table[ne0, rows], ids i32[n] -> f32[ne0, n] */      \
    X(RMS_NORM, "rms_norm", 1, 2)   /* x[ne0, ...] (, w[ne0]) -> f32 */                   \
    X(MATMUL, "matmul", 2, 2)       /* w[k, n], x[k, m] -> f32[n, m] */                   \
    X(ADD, "add", 2, 2)             /* a + b, b broadcast over rows when b has one row */ \
    X(MUL, "mul", 2, 2)             /* a * b, same broadcast */                           \
    X(SCALE, "scale", 1, 1)         /* x * f[0] */                                        \
    X(ROPE, "rope", 2, 3)           /* x[hd, heads, seq], pos i32[seq] (, factors[n_rot/2]) */\
    X(ATTENTION, "attention", 6, 6) /* q, k, v, kcache, vcache, pos -> [hd*heads, seq] */ \
    X(SWIGLU, "swiglu", 2, 2)       /* silu(g) * u */                                     \
    X(GEGLU, "geglu", 2, 2)         /* gelu_tanh(g) * u */                                \
    X(SOFTCAP, "softcap", 1, 1)     /* f[0] * tanh(x / f[0]) */                           \
    X(RESHAPE, "reshape", 1, 1)     /* view with a new shape (ints: ne, -1 = infer) */    \
    X(PLUGIN, "plugin", 0, 16)      /* opaque op run by a plugin kernel (attrs) */

typedef enum {
#define NPL_OP_ENUM(e, name, lo, hi) NPL_OP_##e,
    NPL_OP_LIST(NPL_OP_ENUM)
#undef NPL_OP_ENUM
    NPL_OP_COUNT
} npl_op;

const char *npl_op_name(npl_op op);
int npl_op_min_src(npl_op op);
int npl_op_max_src(npl_op op);

#endif
