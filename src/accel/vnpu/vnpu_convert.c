/* vnpu element conversions: any float-valued tensor to / from f32. */
#include <math.h>
#include <string.h>

#include "accel/vnpu/vnpu_convert.h"
#include "core/dtype.h"

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

void vnpu_to_f32(const vnpu_tensor *t, const void *data, int64_t i0, int64_t n, float *out) {
    const uint8_t *b = data;
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
