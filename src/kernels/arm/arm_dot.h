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
#include <stdint.h>
#include <string.h>

#include "kernels/gemv.h"
#include "kernels/quant.h"
#include "kernels/quant_blocks.h"
#include "kernels/vec_dot_impl.h"

#ifndef NPL_ARM_DOTPROD
#error "define NPL_ARM_DOTPROD 0 or 1 before including arm_dot.h"
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

static inline float32x4_t step32(const dec32 *w, const block_q8_0 *y, float32x4_t acc) {
    const int32x4_t p = dot16(dot16(vdupq_n_s32(0), w->w0, vld1q_s8(y->qs)), w->w1, vld1q_s8(y->qs + 16));
    return vfmaq_n_f32(acc, vcvtq_f32_s32(p), w->d * H2F(y->d));
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

#define NPL_ARM_DEC32X4(T, XT)                                                                                 \
    static inline void dec4_##T(const XT *x, dec32x4 *o) {                                                    \
        for (int b = 0; b < 4; b++) {                                                                          \
            dec32 t;                                                                                           \
            dec_##T(&x[b], &t);                                                                                \
            o->w[2 * b] = t.w0;                                                                                \
            o->w[2 * b + 1] = t.w1;                                                                            \
        }                                                                                                      \
        o->d = h2f4(x[0].d, x[1].d, x[2].d, x[3].d);                                                           \
    }

#define NPL_ARM_DOT32(T, XT)                                                                                   \
    NPL_ARM_DEC32X4(T, XT)                                                                                     \
    NPL_ARM_DOT32_BODY(T, XT)

#define NPL_ARM_DOT32_BODY(T, XT)                                                                              \
    static void dot_##T##_q8_0(int n, float *s, const void *vx, const void *vy) {                            \
        const XT *x = vx;                                                                                      \
        const block_q8_0 *y = vy;                                                                              \
        float32x4_t acc = vdupq_n_f32(0);                                                                      \
        const int nb = n / QK8_0;                                                                              \
        int i = 0;                                                                                             \
        for (; i + 4 <= nb; i += 4) {                                                                          \
            dec32x4 w;                                                                                         \
            dec4_##T(&x[i], &w);                                                                               \
            acc = step32x4(&w, &y[i], acc);                                                                    \
        }                                                                                                      \
        for (; i < nb; i++) {                                                                                  \
            dec32 w;                                                                                           \
            dec_##T(&x[i], &w);                                                                                \
            acc = step32(&w, &y[i], acc);                                                                      \
        }                                                                                                      \
        *s = vaddvq_f32(acc);                                                                                  \
    }                                                                                                          \
    static void dot4_##T(int n, float *s, size_t bs, const void *vx, const void *vy, size_t by) {             \
        const XT *x = vx;                                                                                      \
        const block_q8_0 *y0 = vy, *y1 = (const void *)((const char *)vy + by),                               \
                         *y2 = (const void *)((const char *)vy + 2 * by),                                     \
                         *y3 = (const void *)((const char *)vy + 3 * by);                                     \
        float32x4_t a0 = vdupq_n_f32(0), a1 = a0, a2 = a0, a3 = a0;                                            \
        const int nb = n / QK8_0;                                                                              \
        int i = 0;                                                                                             \
        for (; i + 4 <= nb; i += 4) {                                                                          \
            dec32x4 w;                                                                                         \
            dec4_##T(&x[i], &w);                                                                               \
            a0 = step32x4(&w, &y0[i], a0);                                                                     \
            a1 = step32x4(&w, &y1[i], a1);                                                                     \
            a2 = step32x4(&w, &y2[i], a2);                                                                     \
            a3 = step32x4(&w, &y3[i], a3);                                                                     \
        }                                                                                                      \
        for (; i < nb; i++) {                                                                                  \
            dec32 w;                                                                                           \
            dec_##T(&x[i], &w);                                                                                \
            a0 = step32(&w, &y0[i], a0);                                                                       \
            a1 = step32(&w, &y1[i], a1);                                                                       \
            a2 = step32(&w, &y2[i], a2);                                                                       \
            a3 = step32(&w, &y3[i], a3);                                                                       \
        }                                                                                                      \
        s[0] = vaddvq_f32(a0), s[bs] = vaddvq_f32(a1), s[2 * bs] = vaddvq_f32(a2), s[3 * bs] = vaddvq_f32(a3); \
    }

NPL_ARM_DOT32(q8_0, block_q8_0)
NPL_ARM_DOT32(q4_0, block_q4_0)
NPL_ARM_DOT32(q5_0, block_q5_0)

/* iq4_nl and mxfp4 against q8_0: nibbles index the type's 16 levels (tbl) */
static inline void dec_tab32(const uint8_t *qs, int8x16_t tab, dec32 *o) {
    const uint8x16_t v = vld1q_u8(qs);
    o->w0 = vqtbl1q_s8(tab, vandq_u8(v, vdupq_n_u8(0xF)));
    o->w1 = vqtbl1q_s8(tab, vshrq_n_u8(v, 4));
}
static inline void dec_iq4_nl(const block_iq4_nl *x, dec32 *o) {
    dec_tab32(x->qs, vld1q_s8(npl_kvalues_iq4nl), o);
    o->d = H2F(x->d);
}
static inline void dec_mxfp4(const block_mxfp4 *x, dec32 *o) {
    dec_tab32(x->qs, vld1q_s8(npl_kvalues_mxfp4), o);
    o->d = npl_e8m0_to_f32_half(x->e);
}
static inline void dec4_mxfp4(const block_mxfp4 *x, dec32x4 *o) {
    float d[4];
    for (int b = 0; b < 4; b++) {
        dec32 t;
        dec_mxfp4(&x[b], &t);
        o->w[2 * b] = t.w0;
        o->w[2 * b + 1] = t.w1;
        d[b] = t.d;
    }
    o->d = vld1q_f32(d);
}
NPL_ARM_DOT32(iq4_nl, block_iq4_nl)
NPL_ARM_DOT32_BODY(mxfp4, block_mxfp4)

/* GEMV (kernels/gemv.h's interface, aarch64's own prepared row): 1-15
 * activation rows against 4 weight rows at a time. prep keeps a pointer to
 * the q8_0 row (npl_gemv_x.qs) and its scales converted to f32 once
 * (npl_gemv_x.d, one per block); rows loads each activation block once for
 * 4 weight rows. Per (row, column) the operations are vec_dot's above, in
 * its order (the conversions are exact), so the GEMV gives vec_dot's bits. */
static void prep_q8_0x(npl_gemv_x *gx, void *mem, const void *xq, int64_t k) {
    const block_q8_0 *y = xq;
    float *d = (float *)(((uintptr_t)mem + 63) & ~(uintptr_t)63);
    for (int64_t i = 0; i < k / QK8_0; i++) d[i] = H2F(y[i].d);
    gx->k = gx->kp = k;
    gx->qs = (const int8_t *)xq;
    gx->d = d;
    gx->cz = NULL;
    gx->xs = NULL;
}

#define NPL_ARM_GEMV32(T, XT)                                                                                  \
    static void rows_##T(const void *w, size_t w_row, int64_t r0, int64_t r1, const npl_gemv_x *gx, int m,   \
                         float *y, int64_t ldy) {                                                              \
        const int nb = (int)(gx[0].k / QK8_0);                                                                 \
        for (int64_t r = r0; r < r1; r += 4) {                                                                 \
            const int nr = r1 - r < 4 ? (int)(r1 - r) : 4;                                                     \
            const XT *x[4];                                                                                    \
            for (int j = 0; j < 4; j++) x[j] = (const XT *)((const char *)w + (size_t)(r + (j < nr ? j : 0)) * w_row); \
            for (int c = 0; c < m; c++) {                                                                      \
                const block_q8_0 *yb = (const block_q8_0 *)gx[c].qs;                                           \
                const float *yd = gx[c].d;                                                                     \
                float32x4_t acc[4] = {vdupq_n_f32(0), vdupq_n_f32(0), vdupq_n_f32(0), vdupq_n_f32(0)};         \
                int i = 0;                                                                                     \
                for (; i + 4 <= nb; i += 4) {                                                                  \
                    int8x16_t yq[8];                                                                           \
                    for (int b = 0; b < 4; b++) {                                                              \
                        yq[2 * b] = vld1q_s8(yb[i + b].qs);                                                    \
                        yq[2 * b + 1] = vld1q_s8(yb[i + b].qs + 16);                                           \
                    }                                                                                          \
                    const float32x4_t ydv = vld1q_f32(yd + i);                                                 \
                    for (int j = 0; j < nr; j++) {                                                             \
                        dec32x4 wd;                                                                            \
                        dec4_##T(x[j] + i, &wd);                                                               \
                        int32x4_t p[4];                                                                        \
                        for (int b = 0; b < 4; b++)                                                            \
                            p[b] = dot16(dot16(vdupq_n_s32(0), wd.w[2 * b], yq[2 * b]), wd.w[2 * b + 1], yq[2 * b + 1]); \
                        const int32x4_t sums = vpaddq_s32(vpaddq_s32(p[0], p[1]), vpaddq_s32(p[2], p[3]));     \
                        acc[j] = vfmaq_f32(acc[j], vcvtq_f32_s32(sums), vmulq_f32(wd.d, ydv));                 \
                    }                                                                                          \
                }                                                                                              \
                for (; i < nb; i++)                                                                            \
                    for (int j = 0; j < nr; j++) {                                                             \
                        dec32 wd;                                                                              \
                        dec_##T(x[j] + i, &wd);                                                                \
                        const int32x4_t p = dot16(dot16(vdupq_n_s32(0), wd.w0, vld1q_s8(yb[i].qs)), wd.w1,     \
                                                  vld1q_s8(yb[i].qs + 16));                                    \
                        acc[j] = vfmaq_n_f32(acc[j], vcvtq_f32_s32(p), wd.d * yd[i]);                          \
                    }                                                                                          \
                for (int j = 0; j < nr; j++) y[(int64_t)c * ldy + r + j] = vaddvq_f32(acc[j]);                 \
            }                                                                                                  \
        }                                                                                                      \
    }

NPL_ARM_GEMV32(q8_0, block_q8_0)
NPL_ARM_GEMV32(q4_0, block_q4_0)
NPL_ARM_GEMV32(q5_0, block_q5_0)

static const npl_gemv_kernels gemv_q8_0 = {prep_q8_0x, rows_q8_0}, gemv_q4_0 = {prep_q8_0x, rows_q4_0},
                              gemv_q5_0 = {prep_q8_0x, rows_q5_0};

static inline const npl_gemv_kernels *arm_gemv(npl_type t) {
    switch (t) {
    case NPL_TYPE_Q8_0: return &gemv_q8_0;
    case NPL_TYPE_Q4_0: return &gemv_q4_0;
    case NPL_TYPE_Q5_0: return &gemv_q5_0;
    default: return NULL;
    }
}

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

/* one activation super-block: acc += d * sum_g sc_g * (w_g . y_g) */
static inline float32x4_t stepk(const deck *w, const block_q8_K *y, float32x4_t acc) {
    int32x4_t isum = vdupq_n_s32(0);
    for (int g = 0; g < 16; g++)
        isum = vmlaq_n_s32(isum, dot16(vdupq_n_s32(0), w->w[g], vld1q_s8(y->qs + 16 * g)), w->sc[g]);
    return vfmaq_n_f32(acc, vcvtq_f32_s32(isum), y->d * w->d);
}

/* q4_K's mins: y.d * dmin * sum_j m_j * (sum of the activation quants of part j) */
static inline float mins_q4_K(const deck *w, const block_q8_K *y) {
    int summs = 0;
    for (int j = 0; j < 8; j++) summs += w->m[j] * (y->bsums[2 * j] + y->bsums[2 * j + 1]);
    return y->d * w->dmin * (float)summs;
}
static inline float mins_q6_K(const deck *w, const block_q8_K *y) { return (void)w, (void)y, 0.0f; }

#define NPL_ARM_DOTK(T, XT)                                                                                    \
    static void dot_##T##_q8_K(int n, float *s, const void *vx, const void *vy) {                            \
        const XT *x = vx;                                                                                      \
        const block_q8_K *y = vy;                                                                              \
        float32x4_t acc = vdupq_n_f32(0);                                                                      \
        float mn = 0;                                                                                          \
        for (int i = 0; i < n / QK_K; i++) {                                                                   \
            deck w;                                                                                            \
            dec_##T(&x[i], &w);                                                                                \
            acc = stepk(&w, &y[i], acc);                                                                       \
            mn += mins_##T(&w, &y[i]);                                                                         \
        }                                                                                                      \
        *s = vaddvq_f32(acc) - mn;                                                                             \
    }                                                                                                          \
    static void dot4_##T(int n, float *s, size_t bs, const void *vx, const void *vy, size_t by) {             \
        const XT *x = vx;                                                                                      \
        const block_q8_K *y[4];                                                                                \
        float32x4_t acc[4];                                                                                    \
        float mn[4];                                                                                           \
        for (int r = 0; r < 4; r++) {                                                                          \
            y[r] = (const void *)((const char *)vy + (size_t)r * by);                                         \
            acc[r] = vdupq_n_f32(0);                                                                           \
            mn[r] = 0;                                                                                         \
        }                                                                                                      \
        for (int i = 0; i < n / QK_K; i++) {                                                                   \
            deck w;                                                                                            \
            dec_##T(&x[i], &w);                                                                                \
            for (int r = 0; r < 4; r++) {                                                                      \
                acc[r] = stepk(&w, &y[r][i], acc[r]);                                                          \
                mn[r] += mins_##T(&w, &y[r][i]);                                                               \
            }                                                                                                  \
        }                                                                                                      \
        for (int r = 0; r < 4; r++) s[(size_t)r * bs] = vaddvq_f32(acc[r]) - mn[r];                            \
    }

NPL_ARM_DOTK(q4_K, block_q4_K)
NPL_ARM_DOTK(q6_K, block_q6_K)

/* ---- the other block types: one block per step, a row's state being
 * its f32 lanes and a scalar for the min / offset terms ---- */

typedef struct {
    float32x4_t acc;
    float mn;
} rowst;

#define NPL_ARM_DOTB(NAME, XT, YT, QK, DECT, DEC, STEP)                                                        \
    static void dot_##NAME(int n, float *s, const void *vx, const void *vy) {                                \
        const XT *x = vx;                                                                                      \
        const YT *y = vy;                                                                                      \
        rowst st = {vdupq_n_f32(0), 0};                                                                        \
        for (int i = 0; i < n / (QK); i++) {                                                                   \
            DECT w;                                                                                            \
            DEC(&x[i], &w);                                                                                    \
            STEP(&w, &y[i], &st);                                                                              \
        }                                                                                                      \
        *s = vaddvq_f32(st.acc) + st.mn;                                                                       \
    }                                                                                                          \
    static void dot4_##NAME(int n, float *s, size_t bs, const void *vx, const void *vy, size_t by) {          \
        const XT *x = vx;                                                                                      \
        const YT *y[4];                                                                                        \
        rowst st[4];                                                                                           \
        for (int r = 0; r < 4; r++) {                                                                          \
            y[r] = (const void *)((const char *)vy + (size_t)r * by);                                         \
            st[r].acc = vdupq_n_f32(0);                                                                        \
            st[r].mn = 0;                                                                                      \
        }                                                                                                      \
        for (int i = 0; i < n / (QK); i++) {                                                                   \
            DECT w;                                                                                            \
            DEC(&x[i], &w);                                                                                    \
            for (int r = 0; r < 4; r++) STEP(&w, &y[r][i], &st[r]);                                            \
        }                                                                                                      \
        for (int r = 0; r < 4; r++) s[(size_t)r * bs] = vaddvq_f32(st[r].acc) + st[r].mn;                      \
    }

/* q4_1 / q5_1 / q8_1 against q8_1: d * dy * sum + m * y.s (y.s = dy * sum(y.qs)) */
typedef struct {
    int8x16_t w0, w1;
    float d, m;
} dec32m;

static inline void dec_q4_1(const block_q4_1 *x, dec32m *o) {
    const uint8x16_t v = vld1q_u8(x->qs), m4 = vdupq_n_u8(0xF);
    o->w0 = vreinterpretq_s8_u8(vandq_u8(v, m4));
    o->w1 = vreinterpretq_s8_u8(vshrq_n_u8(v, 4));
    o->d = H2F(x->d);
    o->m = H2F(x->m);
}

static inline void dec_q5_1(const block_q5_1 *x, dec32m *o) {
    uint32_t qh;
    memcpy(&qh, x->qh, sizeof qh);
    const uint8x16_t v = vld1q_u8(x->qs), m4 = vdupq_n_u8(0xF);
    o->w0 = vreinterpretq_s8_u8(vorrq_u8(vandq_u8(v, m4), bits16(qh)));
    o->w1 = vreinterpretq_s8_u8(vorrq_u8(vshrq_n_u8(v, 4), bits16(qh >> 16)));
    o->d = H2F(x->d);
    o->m = H2F(x->m);
}

static inline void dec_q8_1(const block_q8_1 *x, dec32m *o) {
    o->w0 = vld1q_s8(x->qs);
    o->w1 = vld1q_s8(x->qs + 16);
    o->d = H2F(x->d);
    o->m = 0;
}

static inline void step_q8_1(const dec32m *w, const block_q8_1 *y, rowst *st) {
    const int32x4_t p = dot16(dot16(vdupq_n_s32(0), w->w0, vld1q_s8(y->qs)), w->w1, vld1q_s8(y->qs + 16));
    st->acc = vfmaq_n_f32(st->acc, vcvtq_f32_s32(p), w->d * H2F(y->d));
    st->mn += w->m * H2F(y->s);
}

NPL_ARM_DOTB(q4_1_q8_1, block_q4_1, block_q8_1, QK8_1, dec32m, dec_q4_1, step_q8_1)
NPL_ARM_DOTB(q5_1_q8_1, block_q5_1, block_q8_1, QK8_1, dec32m, dec_q5_1, step_q8_1)
NPL_ARM_DOTB(q8_1_q8_1, block_q8_1, block_q8_1, QK8_1, dec32m, dec_q8_1, step_q8_1)

/* q5_K: q4_K's layout plus a fifth bit per quant (qh bit 2j / 2j + 1 of
 * byte l for part j's low / high 32) */
static inline void dec_q5_K(const block_q5_K *x, deck *o) {
    const uint8x16_t m4 = vdupq_n_u8(0xF), m10 = vdupq_n_u8(0x10);
    const uint8x16_t h0 = vld1q_u8(x->qh), h1 = vld1q_u8(x->qh + 16);
    for (int j = 0; j < QK_K / 64; j++) {
        uint8_t sc0, m0, sc1, m1;
        npl_get_scale_min_k4(2 * j, x->scales, &sc0, &m0);
        npl_get_scale_min_k4(2 * j + 1, x->scales, &sc1, &m1);
        const int8x16_t sl = vdupq_n_s8((int8_t)(4 - 2 * j)), sh = vdupq_n_s8((int8_t)(3 - 2 * j));
        const uint8x16_t v0 = vld1q_u8(x->qs + 32 * j), v1 = vld1q_u8(x->qs + 32 * j + 16);
        o->w[4 * j + 0] = vreinterpretq_s8_u8(vorrq_u8(vandq_u8(v0, m4), vandq_u8(vshlq_u8(h0, sl), m10)));
        o->w[4 * j + 1] = vreinterpretq_s8_u8(vorrq_u8(vandq_u8(v1, m4), vandq_u8(vshlq_u8(h1, sl), m10)));
        o->w[4 * j + 2] = vreinterpretq_s8_u8(vorrq_u8(vshrq_n_u8(v0, 4), vandq_u8(vshlq_u8(h0, sh), m10)));
        o->w[4 * j + 3] = vreinterpretq_s8_u8(vorrq_u8(vshrq_n_u8(v1, 4), vandq_u8(vshlq_u8(h1, sh), m10)));
        o->sc[4 * j + 0] = o->sc[4 * j + 1] = sc0;
        o->sc[4 * j + 2] = o->sc[4 * j + 3] = sc1;
        o->m[2 * j] = m0;
        o->m[2 * j + 1] = m1;
    }
    o->d = H2F(x->d);
    o->dmin = H2F(x->dmin);
}
static inline float mins_q5_K(const deck *w, const block_q8_K *y) { return mins_q4_K(w, y); }
NPL_ARM_DOTK(q5_K, block_q5_K)

/* q2_K: 2-bit quants, a 4-bit scale and min per 16 */
static inline void dec_q2_K(const block_q2_K *x, deck *o) {
    const uint8x16_t m3 = vdupq_n_u8(3);
    for (int h = 0; h < QK_K / 128; h++)
        for (int sh = 0; sh < 4; sh++)
            for (int half = 0; half < 2; half++) {
                const int g = 8 * h + 2 * sh + half;
                const uint8x16_t v = vld1q_u8(x->qs + 32 * h + 16 * half);
                o->w[g] = vreinterpretq_s8_u8(vandq_u8(vshlq_u8(v, vdupq_n_s8((int8_t)(-2 * sh))), m3));
                o->sc[g] = x->scales[g] & 0xF;
            }
    o->scales = x->scales;
    o->d = H2F(x->d);
    o->dmin = H2F(x->dmin);
}
static inline float mins_q2_K(const deck *w, const block_q8_K *y) {
    int summs = 0;
    for (int j = 0; j < 16; j++) summs += y->bsums[j] * (w->scales[j] >> 4);
    return y->d * w->dmin * (float)summs;
}
NPL_ARM_DOTK(q2_K, block_q2_K)

/* q3_K: 2 low bits, a high bit (hmask; clear means -4), 6-bit signed scales */
static inline void dec_q3_K(const block_q3_K *x, deck *o) {
    int8_t sc[16];
    npl_q3_K_scales(x->scales, sc);
    const uint8x16_t m3 = vdupq_n_u8(3), four = vdupq_n_u8(4);
    for (int h = 0; h < QK_K / 128; h++)
        for (int sh = 0; sh < 4; sh++)
            for (int half = 0; half < 2; half++) {
                const int g = 8 * h + 2 * sh + half;
                const uint8x16_t v = vld1q_u8(x->qs + 32 * h + 16 * half);
                const uint8x16_t u = vandq_u8(vshlq_u8(v, vdupq_n_s8((int8_t)(-2 * sh))), m3);
                const uint8x16_t hb = vtstq_u8(vld1q_u8(x->hmask + 16 * half), vdupq_n_u8((uint8_t)(1u << (4 * h + sh))));
                o->w[g] = vsubq_s8(vreinterpretq_s8_u8(u), vreinterpretq_s8_u8(vbicq_u8(four, hb)));
                o->sc[g] = sc[g];
            }
    o->d = H2F(x->d);
    o->dmin = 0;
}
static inline float mins_q3_K(const deck *w, const block_q8_K *y) { return (void)w, (void)y, 0.0f; }
NPL_ARM_DOTK(q3_K, block_q3_K)

/* iq4_xs: iq4_nl's levels in super-blocks, a 6-bit scale (offset 32) per 32 */
static inline void dec_iq4_xs(const block_iq4_xs *x, deck *o) {
    const int8x16_t tab = vld1q_s8(npl_kvalues_iq4nl);
    for (int ib = 0; ib < QK_K / 32; ib++) {
        const uint8x16_t v = vld1q_u8(x->qs + 16 * ib);
        o->w[2 * ib] = vqtbl1q_s8(tab, vandq_u8(v, vdupq_n_u8(0xF)));
        o->w[2 * ib + 1] = vqtbl1q_s8(tab, vshrq_n_u8(v, 4));
        o->sc[2 * ib] = o->sc[2 * ib + 1] = npl_iq4_xs_scale(x, ib);
    }
    o->d = H2F(x->d);
    o->dmin = 0;
}
static inline float mins_iq4_xs(const deck *w, const block_q8_K *y) { return (void)w, (void)y, 0.0f; }
NPL_ARM_DOTK(iq4_xs, block_iq4_xs)

/* q8_K against q8_K */
typedef struct {
    const int8_t *qs;
    float d;
} dec8k;
static inline void dec_q8_K(const block_q8_K *x, dec8k *o) {
    o->qs = x->qs;
    o->d = x->d;
}
static inline void step_q8_K(const dec8k *w, const block_q8_K *y, rowst *st) {
    int32x4_t p = vdupq_n_s32(0);
    for (int g = 0; g < QK_K / 16; g++) p = dot16(p, vld1q_s8(w->qs + 16 * g), vld1q_s8(y->qs + 16 * g));
    st->acc = vfmaq_n_f32(st->acc, vcvtq_f32_s32(p), w->d * y->d);
}
NPL_ARM_DOTB(q8_K_q8_K, block_q8_K, block_q8_K, QK_K, dec8k, dec_q8_K, step_q8_K)

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
    for (; i < n; i++) sum += H2F(x[i]) * H2F(y[i]);
    *s = sum;
}

static inline float32x4_t ld_bf16x4(const uint16_t *p) {
    return vreinterpretq_f32_u32(vshll_n_u16(vld1_u16(p), 16));
}

static void dot_bf16(int n, float *s, const void *vx, const void *vy) {
    const uint16_t *x = vx, *y = vy;
    float32x4_t a0 = vdupq_n_f32(0), a1 = a0, a2 = a0, a3 = a0;
    int i = 0;
    for (; i + 16 <= n; i += 16) {
        a0 = vfmaq_f32(a0, ld_bf16x4(x + i), ld_bf16x4(y + i));
        a1 = vfmaq_f32(a1, ld_bf16x4(x + i + 4), ld_bf16x4(y + i + 4));
        a2 = vfmaq_f32(a2, ld_bf16x4(x + i + 8), ld_bf16x4(y + i + 8));
        a3 = vfmaq_f32(a3, ld_bf16x4(x + i + 12), ld_bf16x4(y + i + 12));
    }
    for (; i + 4 <= n; i += 4) a0 = vfmaq_f32(a0, ld_bf16x4(x + i), ld_bf16x4(y + i));
    float sum = vaddvq_f32(vaddq_f32(vaddq_f32(a0, a1), vaddq_f32(a2, a3)));
    for (; i < n; i++) sum += npl_bf16_to_f32(x[i]) * npl_bf16_to_f32(y[i]);
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
    k->vec_dot[NPL_TYPE_BF16] = dot_bf16;
    k->vec_dot[NPL_TYPE_Q4_1] = dot_q4_1_q8_1;
    k->vec_dot[NPL_TYPE_Q5_1] = dot_q5_1_q8_1;
    k->vec_dot[NPL_TYPE_Q8_1] = dot_q8_1_q8_1;
    k->vec_dot[NPL_TYPE_Q5_K] = dot_q5_K_q8_K;
    k->vec_dot[NPL_TYPE_Q8_K] = dot_q8_K_q8_K;
    k->vec_dot[NPL_TYPE_Q2_K] = dot_q2_K_q8_K;
    k->vec_dot[NPL_TYPE_Q3_K] = dot_q3_K_q8_K;
    k->vec_dot[NPL_TYPE_IQ4_NL] = dot_iq4_nl_q8_0;
    k->vec_dot[NPL_TYPE_MXFP4] = dot_mxfp4_q8_0;
    k->vec_dot[NPL_TYPE_IQ4_XS] = dot_iq4_xs_q8_K;
}

/* ... and the four-row kernels that go with them, indexed by weight type */
static inline void arm_dot4_fill(npl_vec_dot4_fn *d4) {
    d4[NPL_TYPE_Q4_0] = dot4_q4_0;
    d4[NPL_TYPE_Q5_0] = dot4_q5_0;
    d4[NPL_TYPE_Q8_0] = dot4_q8_0;
    d4[NPL_TYPE_Q4_K] = dot4_q4_K;
    d4[NPL_TYPE_Q6_K] = dot4_q6_K;
    d4[NPL_TYPE_Q4_1] = dot4_q4_1_q8_1;
    d4[NPL_TYPE_Q5_1] = dot4_q5_1_q8_1;
    d4[NPL_TYPE_Q8_1] = dot4_q8_1_q8_1;
    d4[NPL_TYPE_Q5_K] = dot4_q5_K;
    d4[NPL_TYPE_Q8_K] = dot4_q8_K_q8_K;
    d4[NPL_TYPE_Q2_K] = dot4_q2_K;
    d4[NPL_TYPE_Q3_K] = dot4_q3_K;
    d4[NPL_TYPE_IQ4_NL] = dot4_iq4_nl;
    d4[NPL_TYPE_MXFP4] = dot4_mxfp4;
    d4[NPL_TYPE_IQ4_XS] = dot4_iq4_xs;
}

#endif
