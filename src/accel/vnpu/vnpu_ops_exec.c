/* vnpu kernels of the non-MatMul ops, in f32 over the shared row kernels
 * of kernels/nn_kernels.h (norms, gating, softmax, RoPE), run over whole
 * tensors: the row-local ones normally run in row groups (vnpu_rows.c) and
 * come here only when a step cannot (or to measure its scratch). Each op
 * takes its buffers first and returns early in measuring mode (see
 * vnpu_exec.h). */
#include <math.h>
#include <string.h>

#include "accel/vnpu/vnpu_convert.h"
#include "accel/vnpu/vnpu_exec.h"
#include "kernels/dtype.h"

#define T(i) vnpu_xc_t(x, x->n->in[i])
#define OUT vnpu_xc_t(x, x->n->out[0])

static npl_accel_status short_scratch(vnpu_xc *x) {
    return vnpu_fail(x->be, NPL_ACCEL_ERR_INTERNAL, "vnpu: scratch plan too small for a %s step",
                     vnpu_op_get(x->n->op)->name);
}

static int64_t last_dim(const vnpu_tensor *t) { return t->dims[t->rank - 1]; }

static npl_accel_status op_rms_norm(vnpu_xc *x) {
    const float *a = vnpu_xc_in_f32(x, 0);
    const float *w = x->n->n_in == 2 ? vnpu_xc_in_f32(x, 1) : NULL;
    float *y = vnpu_xc_out_f32(x);
    if (vnpu_xc_measuring(x)) return NPL_ACCEL_OK;
    if (!a || !y || (x->n->n_in == 2 && !w)) return short_scratch(x);
    const int64_t d = last_dim(T(0)), rows = T(0)->nelem / d;
    for (int64_t r = 0; r < rows; r++) x->be->nn->rms_norm(a + r * d, w, y + r * d, (int)d, x->n->fp[0]);
    vnpu_xc_out_done(x, y);
    return NPL_ACCEL_OK;
}

static npl_accel_status op_rope(vnpu_xc *x) {
    const float *a = vnpu_xc_in_f32(x, 0);
    float *y = vnpu_xc_out_f32(x);
    if (vnpu_xc_measuring(x)) return NPL_ACCEL_OK;
    if (!a || !y) return short_scratch(x);
    const vnpu_tensor *t = T(0);
    const int64_t s = t->dims[0], h = t->dims[1], d = t->dims[2];
    const int32_t *pos = vnpu_xc_addr(x, x->n->in[1]);
    const int n_rot = x->n->ip[0] < 0 ? (int)d : (int)x->n->ip[0];
    const npl_rope_args ra = vnpu_rope_args(x->n, n_rot, x->n->n_in == 3 ? vnpu_xc_addr(x, x->n->in[2]) : NULL);
    if (y != a) memcpy(y, a, (size_t)t->nelem * 4);
    for (int64_t i = 0; i < s; i++)
        if (pos[i] >= 0) npl_rope_ext(y + i * h * d, (int)h, (int)d, pos[i], &ra);
    vnpu_xc_out_done(x, y);
    return NPL_ACCEL_OK;
}

static npl_accel_status op_binary(vnpu_xc *x) {
    const float *a = vnpu_xc_in_f32(x, 0), *b = vnpu_xc_in_f32(x, 1);
    float *y = vnpu_xc_out_f32(x);
    if (vnpu_xc_measuring(x)) return NPL_ACCEL_OK;
    if (!a || !b || !y) return short_scratch(x);
    int64_t na = T(0)->nelem, nb = T(1)->nelem, n = OUT->nelem;
    const int mul = x->n->op == VNPU_OP_MUL;
    for (int64_t i = 0; i < n; i++) {
        float u = a[na == n ? i : i % na], v = b[nb == n ? i : i % nb];
        y[i] = mul ? u * v : u + v;
    }
    vnpu_xc_out_done(x, y);
    return NPL_ACCEL_OK;
}

static npl_accel_status op_unary(vnpu_xc *x) {
    const float *a = vnpu_xc_in_f32(x, 0);
    const float *b = (x->n->op == VNPU_OP_SWIGLU || x->n->op == VNPU_OP_GEGLU) ? vnpu_xc_in_f32(x, 1) : NULL;
    float *y = vnpu_xc_out_f32(x);
    if (vnpu_xc_measuring(x)) return NPL_ACCEL_OK;
    if (!a || !y || ((x->n->op == VNPU_OP_SWIGLU || x->n->op == VNPU_OP_GEGLU) && !b)) return short_scratch(x);
    const int64_t n = OUT->nelem, d = last_dim(OUT), rows = n / d;
    const npl_nn_kernels *nn = x->be->nn;
    switch (x->n->op) {
    case VNPU_OP_SCALE: for (int64_t i = 0; i < n; i++) y[i] = a[i] * x->n->fp[0]; break;
    case VNPU_OP_SILU: for (int64_t i = 0; i < n; i++) y[i] = a[i] / (1.0f + expf(-a[i])); break;
    case VNPU_OP_GELU:
        for (int64_t i = 0; i < n; i++)
            y[i] = 0.5f * a[i] * (1.0f + tanhf(0.7978845608028654f * (a[i] + 0.044715f * a[i] * a[i] * a[i])));
        break;
    case VNPU_OP_SWIGLU: for (int64_t r = 0; r < rows; r++) nn->swiglu(a + r * d, b + r * d, y + r * d, (int)d); break;
    case VNPU_OP_GEGLU: for (int64_t r = 0; r < rows; r++) nn->geglu(a + r * d, b + r * d, y + r * d, (int)d); break;
    case VNPU_OP_SOFTMAX:
        for (int64_t r = 0; r < rows; r++) {
            float *yr = y + r * d;
            for (int64_t i = 0; i < d; i++) yr[i] = a[r * d + i] * x->n->fp[0];
            nn->softmax(yr, (int)d);
        }
        break;
    default: if (y != a) memcpy(y, a, (size_t)n * 4); break; /* CAST: the conversion is in out_done */
    }
    vnpu_xc_out_done(x, y);
    return NPL_ACCEL_OK;
}

static size_t elem_bytes(const vnpu_tensor *t) { return t->nbytes / (size_t)t->nelem; }

static npl_accel_status op_transpose(vnpu_xc *x) {
    if (vnpu_xc_measuring(x)) return NPL_ACCEL_OK;
    const vnpu_tensor *t = T(0), *o = OUT;
    const uint8_t *src = vnpu_xc_addr(x, x->n->in[0]);
    uint8_t *dst = vnpu_xc_addr(x, x->n->out[0]);
    const size_t es = elem_bytes(t);
    int64_t istride[NPL_ACCEL_MAX_RANK], idx[NPL_ACCEL_MAX_RANK] = {0};
    int64_t st = 1;
    for (int d = (int)t->rank - 1; d >= 0; d--) {
        istride[d] = st;
        st *= t->dims[d];
    }
    for (int64_t i = 0; i < o->nelem; i++) {
        int64_t off = 0;
        for (uint32_t d = 0; d < o->rank; d++) off += idx[d] * istride[x->n->ip[d]];
        memcpy(dst + (size_t)i * es, src + (size_t)off * es, es);
        for (int d = (int)o->rank - 1; d >= 0; d--) {
            if (++idx[d] < o->dims[d]) break;
            idx[d] = 0;
        }
    }
    return NPL_ACCEL_OK;
}

static npl_accel_status op_concat(vnpu_xc *x) {
    if (vnpu_xc_measuring(x)) return NPL_ACCEL_OK;
    const vnpu_tensor *o = OUT;
    const int64_t axis = x->n->ip[0] < 0 ? x->n->ip[0] + o->rank : x->n->ip[0];
    const size_t es = elem_bytes(o);
    int64_t outer = 1, inner = 1;
    for (int64_t d = 0; d < axis; d++) outer *= o->dims[d];
    for (uint32_t d = (uint32_t)axis + 1; d < o->rank; d++) inner *= o->dims[d];
    uint8_t *dst = vnpu_xc_addr(x, x->n->out[0]);
    for (int64_t r = 0; r < outer; r++)
        for (uint32_t i = 0; i < x->n->n_in; i++) {
            size_t chunk = (size_t)(T(i)->dims[axis] * inner) * es;
            memcpy(dst, (const uint8_t *)vnpu_xc_addr(x, x->n->in[i]) + (size_t)r * chunk, chunk);
            dst += chunk;
        }
    return NPL_ACCEL_OK;
}

static npl_accel_status op_gather(vnpu_xc *x) {
    float *y = vnpu_xc_out_f32(x);
    if (vnpu_xc_measuring(x)) return NPL_ACCEL_OK;
    if (!y) return short_scratch(x);
    const vnpu_tensor *tab = T(0), *it = T(1);
    const int64_t v = tab->dims[0], d = tab->dims[1];
    const int32_t *idx = vnpu_xc_addr(x, x->n->in[1]);
    const void *data = vnpu_xc_addr(x, x->n->in[0]);
    for (int64_t i = 0; i < it->nelem; i++) {
        if (idx[i] < 0 || idx[i] >= v)
            return vnpu_fail(x->be, NPL_ACCEL_ERR_INVALID_ARG, "vnpu: Gather: index %d out of range [0, %lld)", idx[i],
                             (long long)v);
        vnpu_to_f32(tab, data, idx[i] * d, d, y + i * d);
    }
    vnpu_xc_out_done(x, y);
    return NPL_ACCEL_OK;
}

npl_accel_status vnpu_exec_op(vnpu_xc *x) {
    switch (x->n->op) {
    case VNPU_OP_RMS_NORM: return op_rms_norm(x);
    case VNPU_OP_ROPE: return op_rope(x);
    case VNPU_OP_ATTENTION: return vnpu_op_attention(x);
    case VNPU_OP_ADD: case VNPU_OP_MUL: return op_binary(x);
    case VNPU_OP_SCALE: case VNPU_OP_SILU: case VNPU_OP_GELU: case VNPU_OP_SWIGLU: case VNPU_OP_GEGLU:
    case VNPU_OP_SOFTMAX: case VNPU_OP_CAST:
        return op_unary(x);
    case VNPU_OP_RESHAPE:
        if (!vnpu_xc_measuring(x) && vnpu_xc_addr(x, x->n->out[0]) != vnpu_xc_addr(x, x->n->in[0]))
            memcpy(vnpu_xc_addr(x, x->n->out[0]), vnpu_xc_addr(x, x->n->in[0]), T(0)->nbytes);
        return NPL_ACCEL_OK;
    case VNPU_OP_TRANSPOSE: return op_transpose(x);
    case VNPU_OP_CONCAT: return op_concat(x);
    case VNPU_OP_GATHER: return op_gather(x);
    default:
        return vnpu_fail(x->be, NPL_ACCEL_ERR_INTERNAL, "vnpu: no kernel for op %u", x->n->op);
    }
}
