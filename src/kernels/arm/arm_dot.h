/* aarch64 dot products, shared by the NEON family (arm/neon, int8 products
 * by smull + sadalp) and the dotprod family (arm/dotprod, sdot): each file
 * includes this once, with NPL_ARM_DOTPROD 0 or 1, compiled with its
 * family's -march flags.
 *
 * Arithmetic: per block an exact int32 sum (as the plain C kernels), the K
 * quants' group scales applied in int32 too (exact, no overflow: |isum| <
 * 2^28 per super-block), then per block one f32 fma into four lanes summed
 * at the end. Activations come from the reference quantizers (bit for bit
 * the generic bytes), so the kernels differ from plain C only in the f32
 * order across blocks. A row's result depends only on that row: the matmul
 * driver's vec_dot path gives a row the same bits in decode and prefill. */
#ifndef NPL_ARM_DOT_H
#define NPL_ARM_DOT_H
#include <arm_neon.h>
#include <string.h>

#include "kernels/quant.h"
#include "kernels/quant_blocks.h"
#include "kernels/vec_dot_impl.h"

#ifndef NPL_ARM_DOTPROD
#error "define NPL_ARM_DOTPROD 0 or 1 before including arm_dot.h"
#endif

#define H2F(h) npl_f16_to_f32(h)

/* acc + the 16 products a[i] * b[i], four per lane */
static inline int32x4_t dot16(int32x4_t acc, int8x16_t a, int8x16_t b) {
#if NPL_ARM_DOTPROD
    return vdotq_s32(acc, a, b);
#else
    const int16x8_t lo = vmull_s8(vget_low_s8(a), vget_low_s8(b));
    const int16x8_t hi = vmull_high_s8(a, b);
    return vpadalq_s16(vpadalq_s16(acc, lo), hi);
#endif
}

/* ---- 32-element blocks against q8_0 ---- */

static inline int32x4_t q8_pair(int8x16_t w0, int8x16_t w1, const block_q8_0 *y) {
    return dot16(dot16(vdupq_n_s32(0), w0, vld1q_s8(y->qs)), w1, vld1q_s8(y->qs + 16));
}

static void dot_q8_0_q8_0(int n, float *s, const void *vx, const void *vy) {
    const block_q8_0 *x = vx;
    const block_q8_0 *y = vy;
    float32x4_t acc = vdupq_n_f32(0);
    for (int i = 0; i < n / QK8_0; i++) {
        const int32x4_t p = q8_pair(vld1q_s8(x[i].qs), vld1q_s8(x[i].qs + 16), &y[i]);
        acc = vfmaq_n_f32(acc, vcvtq_f32_s32(p), H2F(x[i].d) * H2F(y[i].d));
    }
    *s = vaddvq_f32(acc);
}

static void dot_q4_0_q8_0(int n, float *s, const void *vx, const void *vy) {
    const block_q4_0 *x = vx;
    const block_q8_0 *y = vy;
    const uint8x16_t m4 = vdupq_n_u8(0xF);
    const int8x16_t off = vdupq_n_s8(8);
    float32x4_t acc = vdupq_n_f32(0);
    for (int i = 0; i < n / QK8_0; i++) {
        const uint8x16_t v = vld1q_u8(x[i].qs);
        const int8x16_t lo = vsubq_s8(vreinterpretq_s8_u8(vandq_u8(v, m4)), off);
        const int8x16_t hi = vsubq_s8(vreinterpretq_s8_u8(vshrq_n_u8(v, 4)), off);
        acc = vfmaq_n_f32(acc, vcvtq_f32_s32(q8_pair(lo, hi, &y[i])), H2F(x[i].d) * H2F(y[i].d));
    }
    *s = vaddvq_f32(acc);
}

/* 0x10 in lane j where bit j of the 16 bits b is set */
static inline uint8x16_t bits16(uint32_t b, uint8x16_t bit) {
    const uint8x16_t v = vcombine_u8(vdup_n_u8((uint8_t)b), vdup_n_u8((uint8_t)(b >> 8)));
    return vandq_u8(vtstq_u8(v, bit), vdupq_n_u8(0x10));
}

static void dot_q5_0_q8_0(int n, float *s, const void *vx, const void *vy) {
    const block_q5_0 *x = vx;
    const block_q8_0 *y = vy;
    static const uint8_t bit_tab[16] = {1, 2, 4, 8, 16, 32, 64, 128, 1, 2, 4, 8, 16, 32, 64, 128};
    const uint8x16_t bit = vld1q_u8(bit_tab), m4 = vdupq_n_u8(0xF);
    const int8x16_t off = vdupq_n_s8(16);
    float32x4_t acc = vdupq_n_f32(0);
    for (int i = 0; i < n / QK8_0; i++) {
        uint32_t qh;
        memcpy(&qh, x[i].qh, sizeof qh);
        const uint8x16_t v = vld1q_u8(x[i].qs);
        const int8x16_t lo = vsubq_s8(vreinterpretq_s8_u8(vorrq_u8(vandq_u8(v, m4), bits16(qh, bit))), off);
        const int8x16_t hi = vsubq_s8(vreinterpretq_s8_u8(vorrq_u8(vshrq_n_u8(v, 4), bits16(qh >> 16, bit))), off);
        acc = vfmaq_n_f32(acc, vcvtq_f32_s32(q8_pair(lo, hi, &y[i])), H2F(x[i].d) * H2F(y[i].d));
    }
    *s = vaddvq_f32(acc);
}

/* ---- K quants against q8_K ---- */

static void dot_q4_K_q8_K(int n, float *s, const void *vx, const void *vy) {
    const block_q4_K *x = vx;
    const block_q8_K *y = vy;
    const uint8x16_t m4 = vdupq_n_u8(0xF);
    float32x4_t acc = vdupq_n_f32(0);
    float sum_min = 0;
    for (int i = 0; i < n / QK_K; i++) {
        const uint8_t *q4 = x[i].qs;
        const int8_t *q8 = y[i].qs;
        int32x4_t isum = vdupq_n_s32(0);
        int summs = 0;
        for (int j = 0; j < QK_K / 64; j++, q4 += 32, q8 += 64) {
            uint8_t sc0, m0, sc1, m1;
            npl_get_scale_min_k4(2 * j, x[i].scales, &sc0, &m0);
            npl_get_scale_min_k4(2 * j + 1, x[i].scales, &sc1, &m1);
            const uint8x16_t v0 = vld1q_u8(q4), v1 = vld1q_u8(q4 + 16);
            int32x4_t lo = dot16(vdupq_n_s32(0), vreinterpretq_s8_u8(vandq_u8(v0, m4)), vld1q_s8(q8));
            lo = dot16(lo, vreinterpretq_s8_u8(vandq_u8(v1, m4)), vld1q_s8(q8 + 16));
            int32x4_t hi = dot16(vdupq_n_s32(0), vreinterpretq_s8_u8(vshrq_n_u8(v0, 4)), vld1q_s8(q8 + 32));
            hi = dot16(hi, vreinterpretq_s8_u8(vshrq_n_u8(v1, 4)), vld1q_s8(q8 + 48));
            isum = vmlaq_n_s32(isum, lo, sc0);
            isum = vmlaq_n_s32(isum, hi, sc1);
            summs += m0 * (y[i].bsums[4 * j] + y[i].bsums[4 * j + 1]) +
                     m1 * (y[i].bsums[4 * j + 2] + y[i].bsums[4 * j + 3]);
        }
        acc = vfmaq_n_f32(acc, vcvtq_f32_s32(isum), y[i].d * H2F(x[i].d));
        sum_min += y[i].d * H2F(x[i].dmin) * (float)summs;
    }
    *s = vaddvq_f32(acc) - sum_min;
}

static void dot_q6_K_q8_K(int n, float *s, const void *vx, const void *vy) {
    const block_q6_K *x = vx;
    const block_q8_K *y = vy;
    const uint8x16_t m4 = vdupq_n_u8(0xF), m30 = vdupq_n_u8(0x30);
    const int8x16_t off = vdupq_n_s8(32);
    float32x4_t acc = vdupq_n_f32(0);
    for (int i = 0; i < n / QK_K; i++) {
        const uint8_t *ql = x[i].ql, *qh = x[i].qh;
        const int8_t *sc = x[i].scales, *q8 = y[i].qs;
        int32x4_t isum = vdupq_n_s32(0);
        for (int h = 0; h < QK_K / 128; h++, ql += 64, qh += 32, sc += 8, q8 += 128) {
            for (int b = 0; b < 2; b++) { /* elements 16b .. 16b + 15 of each quarter */
                const uint8x16_t la = vld1q_u8(ql + 16 * b), lb = vld1q_u8(ql + 32 + 16 * b);
                const uint8x16_t hb = vld1q_u8(qh + 16 * b);
                const uint8x16_t u1 = vorrq_u8(vandq_u8(la, m4), vandq_u8(vshlq_n_u8(hb, 4), m30));
                const uint8x16_t u2 = vorrq_u8(vandq_u8(lb, m4), vandq_u8(vshlq_n_u8(hb, 2), m30));
                const uint8x16_t u3 = vorrq_u8(vshrq_n_u8(la, 4), vandq_u8(hb, m30));
                const uint8x16_t u4 = vorrq_u8(vshrq_n_u8(lb, 4), vandq_u8(vshrq_n_u8(hb, 2), m30));
                const int32x4_t z = vdupq_n_s32(0);
                const int32x4_t p1 = dot16(z, vsubq_s8(vreinterpretq_s8_u8(u1), off), vld1q_s8(q8 + 16 * b));
                const int32x4_t p2 = dot16(z, vsubq_s8(vreinterpretq_s8_u8(u2), off), vld1q_s8(q8 + 32 + 16 * b));
                const int32x4_t p3 = dot16(z, vsubq_s8(vreinterpretq_s8_u8(u3), off), vld1q_s8(q8 + 64 + 16 * b));
                const int32x4_t p4 = dot16(z, vsubq_s8(vreinterpretq_s8_u8(u4), off), vld1q_s8(q8 + 96 + 16 * b));
                isum = vmlaq_n_s32(isum, p1, sc[b + 0]);
                isum = vmlaq_n_s32(isum, p2, sc[b + 2]);
                isum = vmlaq_n_s32(isum, p3, sc[b + 4]);
                isum = vmlaq_n_s32(isum, p4, sc[b + 6]);
            }
        }
        acc = vfmaq_n_f32(acc, vcvtq_f32_s32(isum), H2F(x[i].d) * y[i].d);
    }
    *s = vaddvq_f32(acc);
}

/* ---- plain float types ---- */

static void dot_f32(int n, float *s, const void *vx, const void *vy) {
    const float *x = vx, *y = vy;
    float32x4_t a0 = vdupq_n_f32(0), a1 = a0, a2 = a0, a3 = a0;
    int i = 0;
    for (; i + 16 <= n; i += 16) {
        a0 = vfmaq_f32(a0, vld1q_f32(x + i), vld1q_f32(y + i));
        a1 = vfmaq_f32(a1, vld1q_f32(x + i + 4), vld1q_f32(y + i + 4));
        a2 = vfmaq_f32(a2, vld1q_f32(x + i + 8), vld1q_f32(y + i + 8));
        a3 = vfmaq_f32(a3, vld1q_f32(x + i + 12), vld1q_f32(y + i + 12));
    }
    for (; i + 4 <= n; i += 4) a0 = vfmaq_f32(a0, vld1q_f32(x + i), vld1q_f32(y + i));
    float sum = vaddvq_f32(vaddq_f32(vaddq_f32(a0, a1), vaddq_f32(a2, a3)));
    for (; i < n; i++) sum += x[i] * y[i];
    *s = sum;
}

static inline float32x4_t ld_f16x4(const uint16_t *p) { return vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(p))); }

static void dot_f16(int n, float *s, const void *vx, const void *vy) {
    const uint16_t *x = vx, *y = vy;
    float32x4_t a0 = vdupq_n_f32(0), a1 = a0, a2 = a0, a3 = a0;
    int i = 0;
    for (; i + 16 <= n; i += 16) {
        a0 = vfmaq_f32(a0, ld_f16x4(x + i), ld_f16x4(y + i));
        a1 = vfmaq_f32(a1, ld_f16x4(x + i + 4), ld_f16x4(y + i + 4));
        a2 = vfmaq_f32(a2, ld_f16x4(x + i + 8), ld_f16x4(y + i + 8));
        a3 = vfmaq_f32(a3, ld_f16x4(x + i + 12), ld_f16x4(y + i + 12));
    }
    for (; i + 4 <= n; i += 4) a0 = vfmaq_f32(a0, ld_f16x4(x + i), ld_f16x4(y + i));
    float sum = vaddvq_f32(vaddq_f32(vaddq_f32(a0, a1), vaddq_f32(a2, a3)));
    for (; i < n; i++) sum += npl_f16_to_f32(x[i]) * npl_f16_to_f32(y[i]);
    *s = sum;
}

/* The entries this file implements (quantize_row stays the reference's). */
static inline void arm_dot_fill(npl_kernels *k) {
    k->vec_dot[NPL_TYPE_F32] = dot_f32;
    k->vec_dot[NPL_TYPE_F16] = dot_f16;
    k->vec_dot[NPL_TYPE_Q4_0] = dot_q4_0_q8_0;
    k->vec_dot[NPL_TYPE_Q5_0] = dot_q5_0_q8_0;
    k->vec_dot[NPL_TYPE_Q8_0] = dot_q8_0_q8_0;
    k->vec_dot[NPL_TYPE_Q4_K] = dot_q4_K_q8_K;
    k->vec_dot[NPL_TYPE_Q6_K] = dot_q6_K_q8_K;
}

#endif
