/* aarch64 NEON activation quantizers and f16 rows, byte for byte the
 * reference ones (quant_ref.c, llama.cpp's quantize_row_*_ref), for every
 * aarch64 family: the same scale arithmetic (scalar, as the reference),
 * roundf's half-away-from-zero by fcvtas for q8_0 / q8_1, nearest_int's
 * half-to-even by fcvtns for q8_K (both give 0 for NaN, as the reference),
 * and f32 -> f16 by fcvtn (round to nearest even, NaN payloads kept as
 * npl_f32_to_f16 keeps them). test_vec_dot compares the bytes with the plain
 * C ones on edge patterns (ties, NaN, infinities, subnormals). */
#include <arm_neon.h>
#include <math.h>
#include <stddef.h>
#include <string.h>

#include "kernels/dtype.h"
#include "kernels/nn_kernels.h"
#include "kernels/quant_blocks.h"
#include "kernels/vec_dot_impl.h"

/* largest |x| of 4n floats; NaN is skipped (a greater-than compare, as the reference's) */
static inline float absmax4n(const float *x, int n4) {
    float32x4_t m = vdupq_n_f32(0);
    for (int j = 0; j < n4; j++) {
        const float32x4_t a = vabsq_f32(vld1q_f32(x + 4 * j));
        m = vbslq_f32(vcgtq_f32(a, m), a, m);
    }
    return vmaxvq_f32(m);
}

/* 32 floats times id, rounded half away from zero, clamped to [-127, 127] */
static inline int8x16x2_t round32(const float *x, float id, int32x4_t *sum) {
    int16x8_t h[4];
    for (int j = 0; j < 4; j++) {
        int32x4_t a = vcvtaq_s32_f32(vmulq_n_f32(vld1q_f32(x + 8 * j), id));
        int32x4_t b = vcvtaq_s32_f32(vmulq_n_f32(vld1q_f32(x + 8 * j + 4), id));
        a = vmaxq_s32(vminq_s32(a, vdupq_n_s32(127)), vdupq_n_s32(-127));
        b = vmaxq_s32(vminq_s32(b, vdupq_n_s32(127)), vdupq_n_s32(-127));
        *sum = vaddq_s32(*sum, vaddq_s32(a, b));
        h[j] = vcombine_s16(vmovn_s32(a), vmovn_s32(b));
    }
    int8x16x2_t q;
    q.val[0] = vcombine_s8(vmovn_s16(h[0]), vmovn_s16(h[1]));
    q.val[1] = vcombine_s8(vmovn_s16(h[2]), vmovn_s16(h[3]));
    return q;
}

/* One block of 32: scale d = absmax / 127, the rounded int8 values into qs;
 * returns d, and the values' int32 sum in *sum (q8_1 keeps it as s = d * sum). */
static float quantize_block32(const float *x, int8_t *qs, int32_t *sum) {
    const float d = absmax4n(x, 32 / 4) / 127;
    const float id = d ? 1.0f / d : 0.0f;
    int32x4_t acc = vdupq_n_s32(0);
    const int8x16x2_t q = round32(x, id, &acc);
    vst1q_s8(qs, q.val[0]);
    vst1q_s8(qs + 16, q.val[1]);
    *sum = vaddvq_s32(acc);
    return d;
}

static void quantize_q8_0(const float *x, void *vy, int64_t n) {
    block_q8_0 *y = vy;
    int32_t sum;
    for (int64_t i = 0; i < n / QK8_0; i++, x += QK8_0) y[i].d = npl_f32_to_f16(quantize_block32(x, y[i].qs, &sum));
}

static void quantize_q8_1(const float *x, void *vy, int64_t n) {
    block_q8_1 *y = vy;
    for (int64_t i = 0; i < n / QK8_1; i++, x += QK8_1) {
        int32_t sum;
        const float d = quantize_block32(x, y[i].qs, &sum);
        y[i].d = npl_f32_to_f16(d);
        y[i].s = npl_f32_to_f16((float)sum * d);
    }
}

static void quantize_q8_K(const float *x, void *vy, int64_t n) {
    block_q8_K *y = vy;
    for (int64_t i = 0; i < n / QK_K; i++, x += QK_K) {
        const float amax = absmax4n(x, QK_K / 4);
        if (!amax) {
            memset(&y[i], 0, sizeof y[i]);
            continue;
        }
        /* the reference keeps the first element of largest magnitude */
        float max = 0;
        for (int j = 0; j < QK_K; j++)
            if (fabsf(x[j]) == amax) {
                max = x[j];
                break;
            }
        const float iscale = -127.f / max;
        if (!isfinite(iscale)) {
            memset(&y[i], 0, sizeof y[i]);
            continue;
        }
        for (int j = 0; j < QK_K; j += 16) {
            int32x4_t q[4];
            for (int l = 0; l < 4; l++)
                q[l] = vminq_s32(vcvtnq_s32_f32(vmulq_n_f32(vld1q_f32(x + j + 4 * l), iscale)), vdupq_n_s32(127));
            const int16x8_t h0 = vcombine_s16(vmovn_s32(q[0]), vmovn_s32(q[1]));
            const int16x8_t h1 = vcombine_s16(vmovn_s32(q[2]), vmovn_s32(q[3]));
            const int8x16_t b = vcombine_s8(vmovn_s16(h0), vmovn_s16(h1));
            vst1q_s8(y[i].qs + j, b);
            y[i].bsums[j / 16] = vaddlvq_s8(b); /* |sum| <= 2032 */
        }
        y[i].d = 1 / iscale;
    }
}

void npl_f32_to_f16_row_neon(const float *x, uint16_t *y, int64_t n) {
    int64_t i = 0;
    for (; i + 4 <= n; i += 4) vst1_u16(y + i, vreinterpret_u16_f16(vcvt_f16_f32(vld1q_f32(x + i))));
    for (; i < n; i++) y[i] = npl_f32_to_f16(x[i]);
}

void npl_f16_to_f32_row_neon(const uint16_t *x, float *y, int64_t n) {
    int64_t i = 0;
    for (; i + 4 <= n; i += 4) vst1q_f32(y + i, vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(x + i))));
    for (; i < n; i++) y[i] = npl_f16_to_f32(x[i]);
}

static void quantize_f16(const float *x, void *vy, int64_t n) { npl_f32_to_f16_row_neon(x, vy, n); }

void npl_quantize_fill_neon(npl_kernels *k) {
    k->quantize_row[NPL_TYPE_Q8_0] = quantize_q8_0;
    k->quantize_row[NPL_TYPE_Q8_1] = quantize_q8_1;
    k->quantize_row[NPL_TYPE_Q8_K] = quantize_q8_K;
    k->quantize_row[NPL_TYPE_F16] = quantize_f16;
}
