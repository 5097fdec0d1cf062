/* aarch64 dot products, shared by the NEON family (arm/neon, int8 products
 * by smull + sadalp) and the dotprod family (arm/dotprod, sdot): each file
 * includes this once, with NPL_ARM_DOTPROD 0 or 1, compiled with its
 * family's -march flags.
 *
 * Arithmetic: per block an exact int32 sum (as the plain C kernels), the K
 * quants' group scales applied in int32 too (exact, no overflow: |isum| <
 * 2^28 per super-block), then block (super-block) i one f32 fma into lane
 * i % 4, the lanes summed at the end (vaddvq_f32); the i8mm GEMM
 * (arm/i8mm/gemm_i8mm.c) computes exactly these steps. Activations come from the reference quantizers (bit for bit
 * the generic bytes), so the kernels differ from plain C only in the f32
 * order across blocks. A row's result depends only on that row: the matmul
 * driver's vec_dot path gives a row the same bits in decode and prefill. */
#ifndef NPL_ARM_DOT_H
#define NPL_ARM_DOT_H
#include <stdint.h>
#include <string.h>

#include "kernels/gemv.h"
#include "kernels/arm/arm_decode.h"
#include "kernels/vec_dot_impl.h"

#ifndef NPL_ARM_DOTPROD
#error "define NPL_ARM_DOTPROD 0 or 1 before including arm_dot.h"
#endif

#define NPL_ARM_DOT32(T, XT)                                                                                   \
    NPL_ARM_DEC32X4(T, XT)                                                                                     \
    NPL_ARM_DOT32_BODY(T, XT)

/* A row's last nb % 4 blocks are a group of 4 padded with zero blocks (zero
 * quants and scales: a no-op fma), so block i always goes to lane i % 4
 * whatever the row's length: the GEMM (arm/i8mm) follows the same rule. */
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
        if (i < nb) {                                                                                          \
            XT xt[4];                                                                                          \
            block_q8_0 yt[4];                                                                                  \
            memset(xt, 0, sizeof xt), memset(yt, 0, sizeof yt);                                                \
            memcpy(xt, &x[i], (size_t)(nb - i) * sizeof *x), memcpy(yt, &y[i], (size_t)(nb - i) * sizeof *y);  \
            dec32x4 w;                                                                                         \
            dec4_##T(xt, &w);                                                                                  \
            acc = step32x4(&w, yt, acc);                                                                       \
        }                                                                                                      \
        *s = vaddvq_f32(acc);                                                                                  \
    }                                                                                                          \
    static void dot4_##T(int n, float *s, size_t bs, const void *vx, const void *vy, size_t by) {             \
        const XT *x = vx;                                                                                      \
        const block_q8_0 *y[4];                                                                                \
        float32x4_t a[4];                                                                                      \
        for (int r = 0; r < 4; r++) y[r] = (const void *)((const char *)vy + (size_t)r * by), a[r] = vdupq_n_f32(0); \
        const int nb = n / QK8_0;                                                                              \
        int i = 0;                                                                                             \
        for (; i + 4 <= nb; i += 4) {                                                                          \
            dec32x4 w;                                                                                         \
            dec4_##T(&x[i], &w);                                                                               \
            for (int r = 0; r < 4; r++) a[r] = step32x4(&w, &y[r][i], a[r]);                                   \
        }                                                                                                      \
        if (i < nb) {                                                                                          \
            XT xt[4];                                                                                          \
            memset(xt, 0, sizeof xt);                                                                          \
            memcpy(xt, &x[i], (size_t)(nb - i) * sizeof *x);                                                   \
            dec32x4 w;                                                                                         \
            dec4_##T(xt, &w);                                                                                  \
            for (int r = 0; r < 4; r++) {                                                                      \
                block_q8_0 yt[4];                                                                              \
                memset(yt, 0, sizeof yt);                                                                      \
                memcpy(yt, &y[r][i], (size_t)(nb - i) * sizeof yt[0]);                                        \
                a[r] = step32x4(&w, yt, a[r]);                                                                 \
            }                                                                                                  \
        }                                                                                                      \
        for (int r = 0; r < 4; r++) s[(size_t)r * bs] = vaddvq_f32(a[r]);                                      \
    }

NPL_ARM_DOT32_BODY(q8_0, block_q8_0)
NPL_ARM_DOT32_BODY(q4_0, block_q4_0)
NPL_ARM_DOT32_BODY(q5_0, block_q5_0)

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
 * its order (the conversions are exact), so the GEMV gives vec_dot's bits.
 *
 * The scale product w.d * y.d of two f16 values is exact in f32 (11-bit
 * mantissas, a 22-bit product), so rows builds it from integers (mantissa
 * product, exponent sum) instead of fcvtl + fmul: the same bits, and under
 * emulation vector float ops cost ~20x an integer op. prep stores per
 * activation block its mantissa and sign + exponent term (gx->cz, or NULL
 * when a scale is zero, subnormal, inf or nan: then the float path); a group
 * of 4 weight blocks with such a scale takes the float path too. */
static void prep_q8_0x(npl_gemv_x *gx, void *mem, const void *xq, int64_t k) {
    const block_q8_0 *y = xq;
    const int64_t nb = k / QK8_0, nbp = (nb + 15) & ~(int64_t)15;
    float *d = (float *)(((uintptr_t)mem + 63) & ~(uintptr_t)63);
    uint32_t *ym = (uint32_t *)(d + nbp), *ye = ym + nbp;
    int normal = 1;
    for (int64_t i = 0; i < nb; i++) {
        const uint32_t h = y[i].d, e = (h >> 10) & 31;
        d[i] = H2F(y[i].d);
        normal &= e != 0 && e != 31;
        ym[i] = (h & 0x3ff) | 0x400;
        ye[i] = ((h >> 15) << 31) + ((e + 97) << 23);
    }
    gx->k = gx->kp = k;
    gx->qs = (const int8_t *)xq;
    gx->d = d;
    gx->cz = normal ? (const int32_t *)ym : NULL;
    gx->xs = NULL;
}

/* The 4 products hw[b] * y.d[b] (f16 bits; y's mantissas my, sign +
 * exponent terms ey from prep) into *o, exactly; 0 if a weight scale is not
 * a normal number. A normal f16 is M * 2^(e - 25), M = 0x400 | mantissa: the
 * product P = Mw * My is in [2^20, 2^22), so the f32 exponent field is
 * ew + ey - 30 + 127 (+ 1 when P >= 2^21) and the fraction P's bits below
 * its leading one; the sign bits add (mod 2^32) as an xor. */
static inline int scale4(uint16x4_t hw, uint32x4_t my, uint32x4_t ey, float32x4_t *o) {
    const uint32x4_t w = vmovl_u16(hw), e = vandq_u32(w, vdupq_n_u32(0x7c00));
    if (vmaxvq_u32(vorrq_u32(vceqzq_u32(e), vceqq_u32(e, vdupq_n_u32(0x7c00))))) return 0;
    const uint32x4_t p = vmulq_u32(vorrq_u32(vandq_u32(w, vdupq_n_u32(0x3ff)), vdupq_n_u32(0x400)), my);
    const uint32x4_t big = vcgtq_u32(p, vdupq_n_u32((1u << 21) - 1));
    const uint32x4_t m = vandq_u32(vbslq_u32(big, vshlq_n_u32(p, 2), vshlq_n_u32(p, 3)), vdupq_n_u32(0x7fffff));
    const uint32x4_t se = vaddq_u32(vshlq_n_u32(e, 13), vshlq_n_u32(vandq_u32(w, vdupq_n_u32(0x8000)), 16));
    *o = vreinterpretq_f32_u32(vaddq_u32(vaddq_u32(se, ey), vaddq_u32(m, vandq_u32(big, vdupq_n_u32(1u << 23)))));
    return 1;
}

static inline uint16x4_t ld_h4(const npl_half *a, const npl_half *b, const npl_half *c, const npl_half *d) {
    uint16x4_t v = vld1_dup_u16(a);
    v = vld1_lane_u16(b, v, 1);
    v = vld1_lane_u16(c, v, 2);
    return vld1_lane_u16(d, v, 3);
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
                const uint32_t *ym = (const uint32_t *)gx[c].cz;                                               \
                const int64_t nbp = (nb + 15) & ~15;                                                           \
                float32x4_t acc[4] = {vdupq_n_f32(0), vdupq_n_f32(0), vdupq_n_f32(0), vdupq_n_f32(0)};         \
                int i = 0;                                                                                     \
                for (; i + 4 <= nb; i += 4) {                                                                  \
                    int8x16_t yq[8];                                                                           \
                    for (int b = 0; b < 4; b++) {                                                              \
                        yq[2 * b] = vld1q_s8(yb[i + b].qs);                                                    \
                        yq[2 * b + 1] = vld1q_s8(yb[i + b].qs + 16);                                           \
                    }                                                                                          \
                    const float32x4_t ydv = vld1q_f32(yd + i);                                                 \
                    const uint32x4_t ymv = ym ? vld1q_u32(ym + i) : vdupq_n_u32(0);                            \
                    const uint32x4_t yev = ym ? vld1q_u32(ym + nbp + i) : vdupq_n_u32(0);                      \
                    for (int j = 0; j < nr; j++) {                                                             \
                        const XT *xb = x[j] + i;                                                               \
                        dec32x4 wd;                                                                            \
                        decw4_##T(xb, &wd);                                                                    \
                        int32x4_t p[4];                                                                        \
                        for (int b = 0; b < 4; b++)                                                            \
                            p[b] = dot16(dot16(vdupq_n_s32(0), wd.w[2 * b], yq[2 * b]), wd.w[2 * b + 1], yq[2 * b + 1]); \
                        const int32x4_t sums = vpaddq_s32(vpaddq_s32(p[0], p[1]), vpaddq_s32(p[2], p[3]));     \
                        const uint16x4_t hw = ld_h4(&xb[0].d, &xb[1].d, &xb[2].d, &xb[3].d);                   \
                        float32x4_t sc;                                                                        \
                        if (!ym || !scale4(hw, ymv, yev, &sc)) sc = vmulq_f32(vcvt_f32_f16(vreinterpret_f16_u16(hw)), ydv); \
                        acc[j] = vfmaq_f32(acc[j], vcvtq_f32_s32(sums), sc);                                   \
                    }                                                                                          \
                }                                                                                              \
                if (i < nb) { /* vec_dot's zero-padded last group */                                                   \
                    block_q8_0 yt[4];                                                                                  \
                    float ydt[4] = {0, 0, 0, 0};                                                                       \
                    memset(yt, 0, sizeof yt);                                                                          \
                    memcpy(yt, &yb[i], (size_t)(nb - i) * sizeof yt[0]);                                               \
                    memcpy(ydt, yd + i, (size_t)(nb - i) * sizeof(float));                                             \
                    const float32x4_t ydv = vld1q_f32(ydt);                                                            \
                    for (int j = 0; j < nr; j++) {                                                                     \
                        XT xt[4];                                                                                      \
                        memset(xt, 0, sizeof xt);                                                                      \
                        memcpy(xt, x[j] + i, (size_t)(nb - i) * sizeof xt[0]);                                         \
                        dec32x4 wd;                                                                                    \
                        dec4_##T(xt, &wd);                                                                             \
                        int32x4_t p[4];                                                                                \
                        for (int b = 0; b < 4; b++)                                                                    \
                            p[b] = dot16(dot16(vdupq_n_s32(0), wd.w[2 * b], vld1q_s8(yt[b].qs)), wd.w[2 * b + 1], vld1q_s8(yt[b].qs + 16)); \
                        const int32x4_t sums = vpaddq_s32(vpaddq_s32(p[0], p[1]), vpaddq_s32(p[2], p[3]));             \
                        acc[j] = vfmaq_f32(acc[j], vcvtq_f32_s32(sums), vmulq_f32(wd.d, ydv));                         \
                    }                                                                                                  \
                }                                                                                                      \
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


/* K quants: super-block i's exact int32 sum goes to lane i % 4 (groups of
 * 4, the last one padded with zeros, as the 32-element blocks), times
 * y.d * w.d; the mins (q4_K, q5_K, q2_K) are a scalar sum in super-block
 * order, taken off at the end. The i8mm GEMM computes the same. */
#define NPL_ARM_DOTK(T, XT)                                                                                            \
    static void dot_##T##_q8_K(int n, float *s, const void *vx, const void *vy) {                                      \
        const XT *x = vx;                                                                                              \
        const block_q8_K *y = vy;                                                                                      \
        float32x4_t acc = vdupq_n_f32(0);                                                                              \
        float mn = 0;                                                                                                  \
        const int nsb = n / QK_K;                                                                                      \
        for (int i = 0; i < nsb; i += 4) {                                                                             \
            int32_t t[4] = {0, 0, 0, 0};                                                                               \
            float sd[4] = {0, 0, 0, 0};                                                                                \
            for (int b = 0; b < 4 && i + b < nsb; b++) {                                                               \
                deck w;                                                                                                \
                dec_##T(&x[i + b], &w);                                                                                \
                t[b] = isumk(&w, &y[i + b]);                                                                           \
                sd[b] = y[i + b].d * w.d;                                                                              \
                mn += mins_##T(&w, &y[i + b]);                                                                         \
            }                                                                                                          \
            acc = vfmaq_f32(acc, vcvtq_f32_s32(vld1q_s32(t)), vld1q_f32(sd));                                          \
        }                                                                                                              \
        *s = vaddvq_f32(acc) - mn;                                                                                     \
    }                                                                                                                  \
    static void dot4_##T(int n, float *s, size_t bs, const void *vx, const void *vy, size_t by) {                      \
        const XT *x = vx;                                                                                              \
        const block_q8_K *y[4];                                                                                        \
        float32x4_t acc[4];                                                                                            \
        float mn[4];                                                                                                   \
        for (int r = 0; r < 4; r++) {                                                                                  \
            y[r] = (const void *)((const char *)vy + (size_t)r * by);                                                  \
            acc[r] = vdupq_n_f32(0);                                                                                   \
            mn[r] = 0;                                                                                                 \
        }                                                                                                              \
        const int nsb = n / QK_K;                                                                                      \
        for (int i = 0; i < nsb; i += 4) {                                                                             \
            int32_t t[4][4];                                                                                           \
            float sd[4][4];                                                                                            \
            memset(t, 0, sizeof t), memset(sd, 0, sizeof sd);                                                          \
            for (int b = 0; b < 4 && i + b < nsb; b++) {                                                               \
                deck w;                                                                                                \
                dec_##T(&x[i + b], &w);                                                                                \
                for (int r = 0; r < 4; r++) {                                                                          \
                    t[r][b] = isumk(&w, &y[r][i + b]);                                                                 \
                    sd[r][b] = y[r][i + b].d * w.d;                                                                    \
                    mn[r] += mins_##T(&w, &y[r][i + b]);                                                               \
                }                                                                                                      \
            }                                                                                                          \
            for (int r = 0; r < 4; r++) acc[r] = vfmaq_f32(acc[r], vcvtq_f32_s32(vld1q_s32(t[r])), vld1q_f32(sd[r]));  \
        }                                                                                                              \
        for (int r = 0; r < 4; r++) s[(size_t)r * bs] = vaddvq_f32(acc[r]) - mn[r];                                    \
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
