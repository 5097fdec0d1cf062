/* Reference quantizers (from_float), operation for operation the same as
 * llama.cpp's quantize_row_*_ref: activations quantized here must round
 * exactly as llama.cpp's do, and test models made here must be files
 * llama.cpp would have written. Float expressions keep llama.cpp's order. */
#include <float.h>
#include <math.h>
#include <stdbool.h>
#include <string.h>

#include "kernels/dtype.h"
#include "kernels/quant.h"
#include "kernels/quant_blocks.h"

#define F2H(f) npl_f32_to_f16(f)
#define H2F(h) npl_f16_to_f32(h)
#define GROUP_MAX_EPS 1e-15f

static inline int imin(int a, int b) { return a < b ? a : b; }

/* Round to nearest, ties to even, through the 1.5*2^23 bias (llama.cpp's
 * nearest_int); valid for |f| < 2^22. */
static inline int nearest_int(float f) {
    float v = f + 12582912.f;
    int32_t i;
    memcpy(&i, &v, sizeof i);
    return (i & 0x007fffff) - 0x00400000;
}

/* ---- 32-element blocks ---- */

void npl_quantize_row_q4_0_ref(const float *x, void *vy, int64_t n) {
    block_q4_0 *y = vy;
    for (int64_t i = 0; i < n / QK4_0; i++, x += QK4_0) {
        float amax = 0.0f, max = 0.0f;
        for (int j = 0; j < QK4_0; j++)
            if (amax < fabsf(x[j])) { amax = fabsf(x[j]); max = x[j]; }
        const float d = max / -8;
        const float id = d ? 1.0f / d : 0.0f;
        y[i].d = F2H(d);
        for (int j = 0; j < QK4_0 / 2; j++) {
            const uint8_t q0 = (uint8_t)imin(15, (int8_t)(x[j] * id + 8.5f));
            const uint8_t q1 = (uint8_t)imin(15, (int8_t)(x[j + QK4_0 / 2] * id + 8.5f));
            y[i].qs[j] = (uint8_t)(q0 | (q1 << 4));
        }
    }
}

void npl_quantize_row_q4_1_ref(const float *x, void *vy, int64_t n) {
    block_q4_1 *y = vy;
    for (int64_t i = 0; i < n / QK4_1; i++, x += QK4_1) {
        float min = FLT_MAX, max = -FLT_MAX;
        for (int j = 0; j < QK4_1; j++) {
            if (x[j] < min) min = x[j];
            if (x[j] > max) max = x[j];
        }
        const float d = (max - min) / 15;
        const float id = d ? 1.0f / d : 0.0f;
        y[i].d = F2H(d);
        y[i].m = F2H(min);
        for (int j = 0; j < QK4_1 / 2; j++) {
            const uint8_t q0 = (uint8_t)imin(15, (int8_t)((x[j] - min) * id + 0.5f));
            const uint8_t q1 = (uint8_t)imin(15, (int8_t)((x[j + QK4_1 / 2] - min) * id + 0.5f));
            y[i].qs[j] = (uint8_t)(q0 | (q1 << 4));
        }
    }
}

void npl_quantize_row_q5_0_ref(const float *x, void *vy, int64_t n) {
    block_q5_0 *y = vy;
    for (int64_t i = 0; i < n / QK5_0; i++, x += QK5_0) {
        float amax = 0.0f, max = 0.0f;
        for (int j = 0; j < QK5_0; j++)
            if (amax < fabsf(x[j])) { amax = fabsf(x[j]); max = x[j]; }
        const float d = max / -16;
        const float id = d ? 1.0f / d : 0.0f;
        y[i].d = F2H(d);
        uint32_t qh = 0;
        for (int j = 0; j < QK5_0 / 2; j++) {
            const uint8_t q0 = (uint8_t)imin(31, (int8_t)(x[j] * id + 16.5f));
            const uint8_t q1 = (uint8_t)imin(31, (int8_t)(x[j + QK5_0 / 2] * id + 16.5f));
            y[i].qs[j] = (uint8_t)((q0 & 0x0F) | ((q1 & 0x0F) << 4));
            qh |= ((q0 & 0x10u) >> 4) << j;
            qh |= ((q1 & 0x10u) >> 4) << (j + QK5_0 / 2);
        }
        memcpy(y[i].qh, &qh, sizeof qh);
    }
}

void npl_quantize_row_q5_1_ref(const float *x, void *vy, int64_t n) {
    block_q5_1 *y = vy;
    for (int64_t i = 0; i < n / QK5_1; i++, x += QK5_1) {
        float min = FLT_MAX, max = -FLT_MAX;
        for (int j = 0; j < QK5_1; j++) {
            if (x[j] < min) min = x[j];
            if (x[j] > max) max = x[j];
        }
        const float d = (max - min) / 31;
        const float id = d ? 1.0f / d : 0.0f;
        y[i].d = F2H(d);
        y[i].m = F2H(min);
        uint32_t qh = 0;
        for (int j = 0; j < QK5_1 / 2; j++) {
            const uint8_t q0 = (uint8_t)((x[j] - min) * id + 0.5f);
            const uint8_t q1 = (uint8_t)((x[j + QK5_1 / 2] - min) * id + 0.5f);
            y[i].qs[j] = (uint8_t)((q0 & 0x0F) | ((q1 & 0x0F) << 4));
            qh |= ((q0 & 0x10u) >> 4) << j;
            qh |= ((q1 & 0x10u) >> 4) << (j + QK5_1 / 2);
        }
        memcpy(y[i].qh, &qh, sizeof qh);
    }
}

/* roundf to int8. Finite activations always land in [-127, 127], as in
 * llama.cpp; only blocks whose scale underflows (inverse overflows) or that
 * hold inf / NaN reach the clamp, NaN giving 0, so no input is undefined. */
static inline int8_t round_q8(float v) {
    v = roundf(v);
    return v >= -127 && v <= 127 ? (int8_t)v : v > 127 ? 127 : v < -127 ? -127 : 0;
}

/* |x| maximum of a block; NaN elements are skipped */
static inline float absmax(const float *x, int n) {
    float amax = 0.0f;
    for (int j = 0; j < n; j++)
        if (fabsf(x[j]) > amax) amax = fabsf(x[j]);
    return amax;
}

void npl_quantize_row_q8_0_ref(const float *x, void *vy, int64_t n) {
    block_q8_0 *y = vy;
    for (int64_t i = 0; i < n / QK8_0; i++, x += QK8_0) {
        const float d = absmax(x, QK8_0) / 127;
        const float id = d ? 1.0f / d : 0.0f;
        y[i].d = F2H(d);
        for (int j = 0; j < QK8_0; j++) y[i].qs[j] = round_q8(x[j] * id);
    }
}

void npl_quantize_row_q8_1_ref(const float *x, void *vy, int64_t n) {
    block_q8_1 *y = vy;
    for (int64_t i = 0; i < n / QK8_1; i++, x += QK8_1) {
        const float d = absmax(x, QK8_1) / 127;
        const float id = d ? 1.0f / d : 0.0f;
        y[i].d = F2H(d);
        int sum = 0;
        for (int j = 0; j < QK8_1; j++) {
            y[i].qs[j] = round_q8(x[j] * id);
            sum += y[i].qs[j];
        }
        y[i].s = F2H(sum * d);
    }
}

/* ---- Q8_K: activation type of the K-quants ---- */

void npl_quantize_row_q8_K_ref(const float *x, void *vy, int64_t n) {
    block_q8_K *y = vy;
    for (int64_t i = 0; i < n / QK_K; i++, x += QK_K) {
        float max = 0, amax = 0;
        for (int j = 0; j < QK_K; j++)
            if (fabsf(x[j]) > amax) { amax = fabsf(x[j]); max = x[j]; }
        if (!amax) {
            y[i].d = 0;
            memset(y[i].qs, 0, QK_K);
            memset(y[i].bsums, 0, sizeof y[i].bsums);
            continue;
        }
        /* -127 (not -128) keeps every quant in [-127, 127] */
        const float iscale = -127.f / max;
        if (!isfinite(iscale)) { /* max so small its inverse overflows: a zero block */
            memset(&y[i], 0, sizeof y[i]);
            continue;
        }
        for (int j = 0; j < QK_K; j++) {
            const float v = iscale * x[j];
            y[i].qs[j] = (int8_t)(v == v ? imin(127, nearest_int(v)) : 0); /* NaN: 0 */
        }
        for (int j = 0; j < QK_K / 16; j++) {
            int sum = 0;
            for (int l = 0; l < 16; l++) sum += y[i].qs[16 * j + l];
            y[i].bsums[j] = (int16_t)sum;
        }
        y[i].d = 1 / iscale;
    }
}
