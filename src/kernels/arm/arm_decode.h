/* aarch64 weight decoders shared by the dot products (arm/arm_dot.h, one
 * copy per family) and the i8mm GEMM (arm/i8mm/gemm_i8mm.c): a block's
 * weights as int8 vectors in element order and its scales. Include with
 * NPL_ARM_DOTPROD 0 or 1 (dot16: smull + sadalp or sdot). */
#ifndef NPL_ARM_DECODE_H
#define NPL_ARM_DECODE_H
#include <arm_neon.h>
#include <stdint.h>
#include <string.h>

#include "kernels/quant.h"
#include "kernels/quant_blocks.h"

#ifndef NPL_ARM_DOTPROD
#error "define NPL_ARM_DOTPROD 0 or 1 before including arm_decode.h"
#endif

/* f16 -> f32 by the FPU (fcvt: exact, as npl_f16_to_f32, inlined) */
static inline float arm_h2f(uint16_t h) {
    __fp16 v;
    memcpy(&v, &h, sizeof v);
    return (float)v;
}
#define H2F(h) arm_h2f(h)

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

/* Each quantized type is a weight decoder (a block's weights as int8 or
 * small unsigned quants, its scales) and a row step (one activation block:
 * exact int32 sums, one f32 fma into the row's accumulator). vec_dot is the
 * step over one row, dot4 the same step over four rows sharing each decoded
 * block: the same operations on each row in the same order, so dot4 gives
 * each row vec_dot's bits (test_vec_dot checks equality on aarch64) and a
 * prefill batch the bits of decode. */

/* ---- 32-element blocks against q8_0 ---- */

typedef struct {
    int8x16_t w0, w1; /* elements 0-15, 16-31 */
    float d;
} dec32;

static inline void dec_q8_0(const block_q8_0 *x, dec32 *o) {
    o->w0 = vld1q_s8(x->qs);
    o->w1 = vld1q_s8(x->qs + 16);
    o->d = H2F(x->d);
}

static inline void dec_q4_0(const block_q4_0 *x, dec32 *o) {
    const uint8x16_t v = vld1q_u8(x->qs), m4 = vdupq_n_u8(0xF);
    const int8x16_t off = vdupq_n_s8(8);
    o->w0 = vsubq_s8(vreinterpretq_s8_u8(vandq_u8(v, m4)), off);
    o->w1 = vsubq_s8(vreinterpretq_s8_u8(vshrq_n_u8(v, 4)), off);
    o->d = H2F(x->d);
}

/* 0x10 in lane j where bit j of the 16 bits b is set */
static inline uint8x16_t bits16(uint32_t b) {
    const uint8x16_t bit = vreinterpretq_u8_u64(vdupq_n_u64(0x8040201008040201ull));
    const uint8x16_t v = vcombine_u8(vdup_n_u8((uint8_t)b), vdup_n_u8((uint8_t)(b >> 8)));
    return vandq_u8(vtstq_u8(v, bit), vdupq_n_u8(0x10));
}

static inline void dec_q5_0(const block_q5_0 *x, dec32 *o) {
    uint32_t qh;
    memcpy(&qh, x->qh, sizeof qh);
    const uint8x16_t v = vld1q_u8(x->qs), m4 = vdupq_n_u8(0xF);
    const int8x16_t off = vdupq_n_s8(16);
    o->w0 = vsubq_s8(vreinterpretq_s8_u8(vorrq_u8(vandq_u8(v, m4), bits16(qh))), off);
    o->w1 = vsubq_s8(vreinterpretq_s8_u8(vorrq_u8(vshrq_n_u8(v, 4), bits16(qh >> 16))), off);
    o->d = H2F(x->d);
}

/* Four blocks at once: their int32 sums in four lanes, the four scale
 * products by one conversion and one multiply, one fma. */
typedef struct {
    int8x16_t w[8];
    float32x4_t d;
} dec32x4;

static inline float32x4_t h2f4(uint16_t a, uint16_t b, uint16_t c, uint16_t d) {
    const uint16_t t[4] = {a, b, c, d};
    return vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(t)));
}

static inline float32x4_t step32x4(const dec32x4 *w, const block_q8_0 *y, float32x4_t acc) {
    int32x4_t p[4];
    for (int b = 0; b < 4; b++)
        p[b] = dot16(dot16(vdupq_n_s32(0), w->w[2 * b], vld1q_s8(y[b].qs)), w->w[2 * b + 1], vld1q_s8(y[b].qs + 16));
    const int32x4_t sums = vpaddq_s32(vpaddq_s32(p[0], p[1]), vpaddq_s32(p[2], p[3]));
    const float32x4_t yd = h2f4(y[0].d, y[1].d, y[2].d, y[3].d);
    return vfmaq_f32(acc, vcvtq_f32_s32(sums), vmulq_f32(w->d, yd));
}

/* decw4: the weights only (the GEMV forms the scale products itself) */
#define NPL_ARM_DEC32X4(T, XT)                                                                                 \
    static inline void decw4_##T(const XT *x, dec32x4 *o) {                                                   \
        for (int b = 0; b < 4; b++) {                                                                          \
            dec32 t;                                                                                           \
            dec_##T(&x[b], &t);                                                                                \
            o->w[2 * b] = t.w0;                                                                                \
            o->w[2 * b + 1] = t.w1;                                                                            \
        }                                                                                                      \
    }                                                                                                          \
    static inline void dec4_##T(const XT *x, dec32x4 *o) {                                                    \
        decw4_##T(x, o);                                                                                       \
        o->d = h2f4(x[0].d, x[1].d, x[2].d, x[3].d);                                                           \
    }


NPL_ARM_DEC32X4(q8_0, block_q8_0)
NPL_ARM_DEC32X4(q4_0, block_q4_0)
NPL_ARM_DEC32X4(q5_0, block_q5_0)

/* ---- K quants against q8_K ---- */

typedef struct {
    int8x16_t w[16]; /* 256 quants in q8_K's element order */
    int32_t sc[16];  /* scale per 16 elements */
    int32_t m[8];    /* q4_K, q5_K: min per 32 elements */
    const uint8_t *scales; /* q2_K: its scale bytes (the mins' high nibbles) */
    float d, dmin;
} deck;

static inline void dec_q4_K(const block_q4_K *x, deck *o) {
    const uint8x16_t m4 = vdupq_n_u8(0xF);
    for (int j = 0; j < QK_K / 64; j++) {
        uint8_t sc0, m0, sc1, m1;
        npl_get_scale_min_k4(2 * j, x->scales, &sc0, &m0);
        npl_get_scale_min_k4(2 * j + 1, x->scales, &sc1, &m1);
        const uint8x16_t v0 = vld1q_u8(x->qs + 32 * j), v1 = vld1q_u8(x->qs + 32 * j + 16);
        o->w[4 * j + 0] = vreinterpretq_s8_u8(vandq_u8(v0, m4));
        o->w[4 * j + 1] = vreinterpretq_s8_u8(vandq_u8(v1, m4));
        o->w[4 * j + 2] = vreinterpretq_s8_u8(vshrq_n_u8(v0, 4));
        o->w[4 * j + 3] = vreinterpretq_s8_u8(vshrq_n_u8(v1, 4));
        o->sc[4 * j + 0] = o->sc[4 * j + 1] = sc0;
        o->sc[4 * j + 2] = o->sc[4 * j + 3] = sc1;
        o->m[2 * j] = m0;
        o->m[2 * j + 1] = m1;
    }
    o->d = H2F(x->d);
    o->dmin = H2F(x->dmin);
}

static inline void dec_q6_K(const block_q6_K *x, deck *o) {
    const uint8x16_t m4 = vdupq_n_u8(0xF), m30 = vdupq_n_u8(0x30);
    const int8x16_t off = vdupq_n_s8(32);
    for (int h = 0; h < QK_K / 128; h++) {
        const uint8_t *ql = x->ql + 64 * h, *qh = x->qh + 32 * h;
        for (int b = 0; b < 2; b++) { /* elements 16b .. 16b + 15 of each quarter of 32 */
            const uint8x16_t la = vld1q_u8(ql + 16 * b), lb = vld1q_u8(ql + 32 + 16 * b);
            const uint8x16_t hb = vld1q_u8(qh + 16 * b);
            const uint8x16_t u1 = vorrq_u8(vandq_u8(la, m4), vandq_u8(vshlq_n_u8(hb, 4), m30));
            const uint8x16_t u2 = vorrq_u8(vandq_u8(lb, m4), vandq_u8(vshlq_n_u8(hb, 2), m30));
            const uint8x16_t u3 = vorrq_u8(vshrq_n_u8(la, 4), vandq_u8(hb, m30));
            const uint8x16_t u4 = vorrq_u8(vshrq_n_u8(lb, 4), vandq_u8(vshrq_n_u8(hb, 2), m30));
            int8x16_t *w = o->w + 8 * h;
            w[0 + b] = vsubq_s8(vreinterpretq_s8_u8(u1), off);
            w[2 + b] = vsubq_s8(vreinterpretq_s8_u8(u2), off);
            w[4 + b] = vsubq_s8(vreinterpretq_s8_u8(u3), off);
            w[6 + b] = vsubq_s8(vreinterpretq_s8_u8(u4), off);
        }
        /* scale g covers elements 16g .. 16g + 15 */
        for (int g = 0; g < 8; g++) o->sc[8 * h + g] = x->scales[8 * h + g];
    }
    o->d = H2F(x->d);
    o->dmin = 0;
}

/* one activation super-block: sum_g sc_g * (w_g . y_g), exact in int32 */
static inline int32_t isumk(const deck *w, const block_q8_K *y) {
    int32x4_t isum = vdupq_n_s32(0);
    for (int g = 0; g < 16; g++)
        isum = vmlaq_n_s32(isum, dot16(vdupq_n_s32(0), w->w[g], vld1q_s8(y->qs + 16 * g)), w->sc[g]);
    return vaddvq_s32(isum);
}

/* q4_K's mins: y.d * dmin * sum_j m_j * (sum of the activation quants of part j) */
static inline float mins_q4_K(const deck *w, const block_q8_K *y) {
    int summs = 0;
    for (int j = 0; j < 8; j++) summs += w->m[j] * (y->bsums[2 * j] + y->bsums[2 * j + 1]);
    return y->d * w->dmin * (float)summs;
}
static inline float mins_q6_K(const deck *w, const block_q8_K *y) { return (void)w, (void)y, 0.0f; }

#endif
