/* Ops QNN HTP has no single op for, as compositions of QNN ops. Their
 * intermediates are NATIVE tensors of the output's type, so these take
 * float (F16 / F32) tensors only: a quantized intermediate would need
 * calibrated scales the ABI node does not carry.
 *   Silu          x * Sigmoid(x)
 *   SwiGLU        (gate * Sigmoid(gate)) * up
 *   GeGLU         Gelu(gate) * up  (QNN's Gelu is the erf form; vnpu's the tanh
 *                 form: they differ by < 5e-4)
 *   Rope          see qnn_rope.c */
#include <string.h>

#include "accel/qnn/qnn_impl.h"

static npl_accel_status float_only(qnn_lw *L) {
    for (uint32_t i = 0; i < L->n->n_inputs; i++) {
        npl_accel_dtype dt = qnn_lw_t(L, i)->dtype;
        if (dt != NPL_ACCEL_DT_F16 && dt != NPL_ACCEL_DT_F32)
            return qnn_fail(L->be, NPL_ACCEL_ERR_UNSUPPORTED,
                            "qnn-htp: node '%s': %s of a quantized tensor is not lowered (its intermediates would need scales); "
                            "use F16 / F32", L->nm, L->n->op);
    }
    return NPL_ACCEL_OK;
}

/* out = act(a) * b, act = Sigmoid-times-a (silu) or Gelu. */
static npl_accel_status act_mul(qnn_lw *L, int gelu, Qnn_Tensor_t a, Qnn_Tensor_t b) {
    Qnn_Tensor_t t1, t2, in[2];
    const uint32_t *dims = a.v2.dimensions, rank = a.v2.rank;
    npl_accel_status st = qnn_native(L->g, L->nm, ".act", &L->out, rank, dims, &t1);
    if (st) return st;
    if (gelu) {
        if ((st = qnn_node(L, ".gelu", "Gelu", &a, 1, &t1, NULL, 0))) return st;
    } else {
        if ((st = qnn_node(L, ".sigmoid", "Sigmoid", &a, 1, &t1, NULL, 0))) return st;
        if ((st = qnn_native(L->g, L->nm, ".silu", &L->out, rank, dims, &t2))) return st;
        in[0] = a, in[1] = t1;
        if ((st = qnn_node(L, ".silu", "ElementWiseMultiply", in, 2, &t2, NULL, 0))) return st;
        t1 = t2;
    }
    in[0] = t1, in[1] = b;
    return qnn_node(L, "", "ElementWiseMultiply", in, 2, &L->out, NULL, 0);
}

npl_accel_status qnn_lower_silu(qnn_lw *L) {
    Qnn_Tensor_t x, s, in[2];
    npl_accel_status st = float_only(L);
    if (!st) st = qnn_in(L, 0, &x);
    if (!st) st = qnn_native(L->g, L->nm, ".sigmoid", &L->out, x.v2.rank, x.v2.dimensions, &s);
    if (!st) st = qnn_node(L, ".sigmoid", "Sigmoid", &x, 1, &s, NULL, 0);
    in[0] = x, in[1] = s;
    return st ? st : qnn_node(L, "", "ElementWiseMultiply", in, 2, &L->out, NULL, 0);
}

npl_accel_status qnn_lower_glu(qnn_lw *L) {
    Qnn_Tensor_t gate, up;
    npl_accel_status st = float_only(L);
    if (!st) st = qnn_in(L, 0, &gate);
    if (!st) st = qnn_in(L, 1, &up);
    return st ? st : act_mul(L, !strcmp(L->n->op, "GeGLU"), gate, up);
}
