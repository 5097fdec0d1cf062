/* vnpu element conversions: any float-valued tensor to / from f32, and
 * the dynamic int16 layout (NPL_ACCEL_QUANT_DYNAMIC). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "accel/vnpu/vnpu_convert.h"
#include "kernels/dtype.h"

/* Index along the quant axis of flat element i (row-major dims). */
static int64_t axis_index(const vnpu_tensor *t, int64_t i) {
    int64_t inner = 1;
    for (uint32_t d = (uint32_t)t->q.axis + 1; d < t->rank; d++) inner *= t->dims[d];
    return (i / inner) % t->dims[t->q.axis];
}

static void qparams(const vnpu_tensor *t, int64_t i, float *scale, float *off) {
    int64_t j = 0;
    if (t->q.enc == NPL_ACCEL_QUANT_PER_AXIS) {
        j = axis_index(t, i);
    } else if (t->q.enc == NPL_ACCEL_QUANT_PER_BLOCK) { /* rank 2 */
        int64_t r = i / t->dims[1], c = i % t->dims[1];
        int64_t ch = t->q.axis == 0 ? r : c, along = t->q.axis == 0 ? c : r;
        int64_t nb = t->dims[1 - t->q.axis] / t->q.block;
        j = ch * nb + along / t->q.block;
    }
    *scale = t->q.enc ? t->q.scales[j] : 1.0f;
    *off = t->q.offsets ? (float)t->q.offsets[j] : 0.0f;
}

/* ---- dynamic int16 ----
 * Why a scale per block computed at run time rather than QNN's per-tensor
 * scale / offset from calibration: Gemma's activations span orders of
 * magnitude between channels and between tokens (norm outputs reach ~1e3
 * in a few channels, the rest sit near 1), so one calibrated scale per
 * tensor gives the ordinary values a step of ~0.03, as coarse as the int8
 * grid the matmuls quantize to afterwards, and clips whatever the
 * calibration text never reached. A scale per block of consecutive
 * elements (at most the row, 32..1024, chosen by the compiler) follows
 * each token and keeps the step at max|block| / 32767, 16 bits more than
 * int8's max|block| / 127 (needs no calibration data either). */

size_t vnpu_dyn_scale_off(int64_t nelem) { return ((size_t)nelem * 2 + VNPU_ALIGN - 1) & ~(size_t)(VNPU_ALIGN - 1); }

npl_accel_status vnpu_dyn_quant(struct npl_accel_backend *be, vnpu_quant *dst, const npl_accel_quant *q,
                                uint32_t dtype, uint32_t rank, const int64_t *dims, const char *tname) {
    memset(dst, 0, sizeof *dst);
    if (dtype != NPL_ACCEL_DT_INT16)
        return vnpu_fail(be, NPL_ACCEL_ERR_TYPE_MISMATCH, "vnpu: tensor '%s': dynamic quant is for int16 tensors, not %s",
                         tname, vnpu_dtype_name(dtype));
    const uint32_t b = q->block_size;
    if (b < 32 || b > 1024 || (b & (b - 1)) || rank < 1 || rank > NPL_ACCEL_MAX_RANK || dims[rank - 1] <= 0 ||
        dims[rank - 1] % b)
        return vnpu_fail(be, NPL_ACCEL_ERR_INVALID_ARG, "vnpu: tensor '%s': dynamic quant block_size %u must be a power "
                         "of two from 32 to 1024 dividing the last dimension", tname, b);
    if (q->n_scales || q->scales || q->offsets || q->axis)
        return vnpu_fail(be, NPL_ACCEL_ERR_INVALID_ARG, "vnpu: tensor '%s': dynamic quant takes no scales, offsets or "
                         "axis (the scales are computed at run time)", tname);
    dst->enc = NPL_ACCEL_QUANT_DYNAMIC;
    dst->block = b;
    return NPL_ACCEL_OK;
}

npl_accel_status vnpu_dyn_tensor(struct npl_accel_backend *be, uint32_t kind, const vnpu_quant *q, uint32_t rank,
                                 const int64_t *dims, size_t *nbytes, const char *tname) {
    if (kind != NPL_ACCEL_NATIVE)
        return vnpu_fail(be, NPL_ACCEL_ERR_INVALID_ARG, "vnpu: tensor '%s': dynamic int16 is for NATIVE tensors only, "
                         "not %s", tname, vnpu_kind_name(kind));
    int64_t n = 1;
    for (uint32_t d = 0; d < rank; d++) {
        if (dims[d] <= 0 || n > ((int64_t)1 << 40) / dims[d])
            return vnpu_fail(be, NPL_ACCEL_ERR_SHAPE_MISMATCH, "vnpu: tensor '%s': too large", tname);
        n *= dims[d];
    }
    *nbytes = vnpu_dyn_scale_off(n) + (size_t)(n / q->block) * 4;
    return NPL_ACCEL_OK;
}

static void dyn_to_f32(const vnpu_tensor *t, const uint8_t *b, int64_t i0, int64_t n, float *out) {
    const int16_t *q = (const int16_t *)b;
    const float *sc = (const float *)(b + vnpu_dyn_scale_off(t->nelem));
    const int64_t blk = t->q.block;
    for (int64_t i = 0; i < n;) {
        const int64_t bi = (i0 + i) / blk, stop = (bi + 1) * blk - i0 < n ? (bi + 1) * blk - i0 : n;
        const float s = sc[bi];
        const int16_t *qb = q + i0;
        for (; i < stop; i++) out[i] = (float)qb[i] * s;
    }
}

/* i0 and n are multiples of the block (see vnpu_convert.h). */
static void dyn_from_f32(const vnpu_tensor *t, const float *in, int64_t i0, int64_t n, uint8_t *b) {
    int16_t *q = (int16_t *)b + i0;
    const int64_t blk = t->q.block;
    float *sc = (float *)(b + vnpu_dyn_scale_off(t->nelem)) + i0 / blk;
    for (int64_t o = 0; o < n; o += blk, sc++) {
        const float *x = in + o;
        float amax = 0.0f;
        int bad = 0; /* plain compares, so the loops vectorize */
        for (int64_t i = 0; i < blk; i++) {
            const float a = fabsf(x[i]);
            amax = a > amax ? a : amax;
            bad |= !(a <= 3.4e38f);
        }
        if (bad) { /* inf or NaN: the block reads back as NaN */
            *sc = NAN;
            memset(q + o, 0, (size_t)blk * 2);
            continue;
        }
        *sc = amax / 32767.0f;
        const float id = amax > 0.0f ? 32767.0f / amax : 0.0f;
        for (int64_t i = 0; i < blk; i++) {
            /* round half to even (as nearbyintf) by the 1.5 * 2^23 trick: |v| <= 32767 up to rounding of id */
            float v = x[i] * id;
            v = (v + 12582912.0f) - 12582912.0f;
            q[o + i] = (int16_t)(v > 32767.0f ? 32767.0f : v < -32767.0f ? -32767.0f : v);
        }
    }
}

void vnpu_to_f32(const vnpu_tensor *t, const void *data, int64_t i0, int64_t n, float *out) {
    const uint8_t *b = data;
    if (vnpu_is_dynamic(t)) {
        dyn_to_f32(t, b, i0, n, out);
        return;
    }
    switch (t->dtype) {
    case NPL_ACCEL_DT_F32: memcpy(out, b + i0 * 4, (size_t)n * 4); return;
    case NPL_ACCEL_DT_F16: {
        const uint16_t *h = (const uint16_t *)b + i0;
        for (int64_t i = 0; i < n; i++) out[i] = npl_f16_to_f32(h[i]);
        return;
    }
    case NPL_ACCEL_DT_BF16: {
        const uint16_t *h = (const uint16_t *)b + i0;
        for (int64_t i = 0; i < n; i++) out[i] = npl_bf16_to_f32(h[i]);
        return;
    }
    default: break;
    }
    if (vnpu_dtype_ggml(t->dtype) >= 0) { /* callers pass whole rows */
        const npl_type_traits *tr = npl_type_get(vnpu_dtype_ggml(t->dtype));
        tr->to_float(b + (size_t)(i0 / tr->block_size) * tr->type_size, out, n);
        return;
    }
    float scale = 1.0f, off = 0.0f;
    int per_elem = t->q.enc == NPL_ACCEL_QUANT_PER_AXIS || t->q.enc == NPL_ACCEL_QUANT_PER_BLOCK;
    if (!per_elem) qparams(t, 0, &scale, &off);
    for (int64_t i = 0; i < n; i++) {
        int64_t k = i0 + i;
        float q;
        switch (t->dtype) {
        case NPL_ACCEL_DT_INT8: q = (float)((const int8_t *)b)[k]; break;
        case NPL_ACCEL_DT_UINT8: q = (float)b[k]; break;
        case NPL_ACCEL_DT_INT16: { int16_t v; memcpy(&v, b + k * 2, 2); q = (float)v; break; }
        default: { int32_t v; memcpy(&v, b + k * 4, 4); q = (float)v; break; }
        }
        if (per_elem) qparams(t, k, &scale, &off);
        out[i] = (q + off) * scale;
    }
}

static int32_t quantize(float x, float scale, float off, int32_t lo, int32_t hi) {
    float v = scale != 0.0f ? x / scale - off : 0.0f;
    if (!(v == v)) v = 0.0f;
    v = nearbyintf(v);
    if (v < (float)lo) return lo;
    if (v > (float)hi) return hi;
    return (int32_t)v;
}

void vnpu_from_f32(const vnpu_tensor *t, const float *in, int64_t i0, int64_t n, void *data) {
    uint8_t *b = data;
    float scale = 1.0f, off = 0.0f;
    if (vnpu_is_dynamic(t)) {
        dyn_from_f32(t, in, i0, n, b);
        return;
    }
    switch (t->dtype) {
    case NPL_ACCEL_DT_F32: memcpy(b + i0 * 4, in, (size_t)n * 4); return;
    case NPL_ACCEL_DT_F16: {
        uint16_t *h = (uint16_t *)b + i0;
        for (int64_t i = 0; i < n; i++) h[i] = npl_f32_to_f16(in[i]);
        return;
    }
    case NPL_ACCEL_DT_BF16: {
        uint16_t *h = (uint16_t *)b + i0;
        for (int64_t i = 0; i < n; i++) h[i] = npl_f32_to_bf16(in[i]);
        return;
    }
    default: break;
    }
    qparams(t, 0, &scale, &off); /* outputs are per-tensor (checked) */
    for (int64_t i = 0; i < n; i++) {
        int64_t k = i0 + i;
        switch (t->dtype) {
        case NPL_ACCEL_DT_INT8: ((int8_t *)b)[k] = (int8_t)quantize(in[i], scale, off, -128, 127); break;
        case NPL_ACCEL_DT_UINT8: b[k] = (uint8_t)quantize(in[i], scale, off, 0, 255); break;
        case NPL_ACCEL_DT_INT16: {
            int16_t v = (int16_t)quantize(in[i], scale, off, -32768, 32767);
            memcpy(b + k * 2, &v, 2);
            break;
        }
        default: break;
        }
    }
}
