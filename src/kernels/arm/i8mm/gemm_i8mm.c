/* aarch64 i8mm GEMM for prefill (smmla: a 2x8 by 8x2 int8 product into the
 * four int32 lanes [r0.c0, r0.c1, r1.c0, r1.c1]), for q4_0, q5_0, q8_0,
 * q4_K and q6_K.
 *
 * It computes what the dotprod vec_dot kernels (arm/arm_dot.h, the i8mm
 * family's vec_dot, dot4 and GEMV) compute, bit for bit, so a row gets the
 * same bits in decode (GEMV / vec_dot) and inside a prefill batch (this
 * GEMM): per (weight row, activation row) an exact int32 sum per block (the
 * K quants: per super-block, group scales applied in int32), then block i
 * (super-block i) as fma(acc[i % 4], (float)isum, dw * dx) in block order,
 * the four accumulators summed as (a0 + a1) + (a2 + a3) (vaddvq_f32's
 * order), q4_K's mins a separate sum (dx * dmin) * (float)summs in
 * super-block order taken off at the end. Int sums are exact in any order,
 * so only the float steps have to match; test_gemm checks the bits.
 *
 * Layout: two rows side by side per 8 elements (the smmla operand): byte
 * (e / 8) * 16 + 8 * h + e % 8 holds element e of row h of a pair. Weights
 * are decoded 4 rows (2 pairs) at a time onto the stack and reused by every
 * activation pair; activations are packed once per matmul (npl_gemm_x: qs
 * per pair of rows, d the pair's scales as [x0 x1 x0 x1] per block, sum the
 * pair's 32-element Q8_K sums as int32 [x0 x1 x0 x1] for q4_K's mins). */
#include "kernels/gemm.h"

#define NPL_ARM_DOTPROD 1
#include "kernels/arm/arm_decode.h"

#define INLINE static inline __attribute__((always_inline))

enum { WR = 4 }; /* weight rows per panel: 2 pairs */

/* ---- activations ---- */

/* element e of row h of a pair */
static inline size_t pair_at(int64_t e, int h) { return (size_t)(e / 8 * 16 + 8 * h + e % 8); }

typedef struct {
    int8_t *qs;
    float *d;
    int32_t *bs;
} xpair;

static inline xpair xpair_of(const npl_gemm_x *xp, int64_t q) {
    return (xpair){xp->qs + q * 2 * xp->kp, xp->d + q * 2 * (xp->kp / 16), (int32_t *)xp->sum + q * 2 * xp->ng};
}

/* row h of pair p from a q8_0 row, or zeros (xq NULL) */
static void pack_q8_0_half(xpair p, int h, const block_q8_0 *x, int64_t k) {
    for (int64_t b = 0; b < k / QK8_0; b++) {
        for (int j = 0; j < 4; j++) {
            if (x) memcpy(p.qs + pair_at(32 * b + 8 * j, h), x[b].qs + 8 * j, 8);
            else memset(p.qs + pair_at(32 * b + 8 * j, h), 0, 8);
        }
        p.d[4 * b + h] = p.d[4 * b + 2 + h] = x ? H2F(x[b].d) : 0.0f;
    }
}

static void pack_q8_K_half(xpair p, int h, const block_q8_K *x, int64_t k) {
    for (int64_t i = 0; i < k / QK_K; i++) {
        for (int j = 0; j < QK_K / 8; j++) {
            if (x) memcpy(p.qs + pair_at(QK_K * i + 8 * j, h), x[i].qs + 8 * j, 8);
            else memset(p.qs + pair_at(QK_K * i + 8 * j, h), 0, 8);
        }
        p.d[4 * i + h] = p.d[4 * i + 2 + h] = x ? x[i].d : 0.0f;
        for (int j = 0; j < 8; j++)
            p.bs[32 * i + 4 * j + h] = p.bs[32 * i + 4 * j + 2 + h] = x ? x[i].bsums[2 * j] + x[i].bsums[2 * j + 1] : 0;
    }
}

/* Row r; the last row of an odd count also zeroes its missing partner
 * (whose results are never stored). */
static void pack_q8_0(const npl_gemm_x *xp, int64_t r, const void *row) {
    const xpair p = xpair_of(xp, r / 2);
    pack_q8_0_half(p, (int)(r % 2), row, xp->k);
    if (r % 2 == 0 && r + 1 == xp->m) pack_q8_0_half(p, 1, NULL, xp->k);
}

static void pack_q8_K(const npl_gemm_x *xp, int64_t r, const void *row) {
    const xpair p = xpair_of(xp, r / 2);
    pack_q8_K_half(p, (int)(r % 2), row, xp->k);
    if (r % 2 == 0 && r + 1 == xp->m) pack_q8_K_half(p, 1, NULL, xp->k);
}

/* ---- weight panels ---- */

/* rows A and B's 16 elements as the two 8-element smmla operands */
INLINE void put_pair16(int8_t *dst, int8x16_t a, int8x16_t b) {
    vst1q_s8(dst, vreinterpretq_s8_s64(vzip1q_s64(vreinterpretq_s64_s8(a), vreinterpretq_s64_s8(b))));
    vst1q_s8(dst + 16, vreinterpretq_s8_s64(vzip2q_s64(vreinterpretq_s64_s8(a), vreinterpretq_s64_s8(b))));
}

typedef struct {
    int8_t *u;     /* [2][kp * 2] the pairs' quants */
    float *d;      /* [2][blocks][4] [dA dA dB dB] per block (K: per super-block) */
    float *dmin;   /* K: [2][nsb][4] */
    int32_t *sc;   /* K: [2][nsb][16][4] group scales [sA sA sB sB] */
    int32_t *mins; /* q4_K: [2][nsb][8][4] */
    int64_t kp, nblk;
} panel;

typedef void (*panel_fn)(const panel *p, const void *const rows[WR], int64_t k);

#define NPL_PANEL32(T, XT)                                                                                     \
    static void panel_##T(const panel *p, const void *const rows[WR], int64_t k) {                            \
        for (int q = 0; q < 2; q++)                                                                            \
            for (int64_t b = 0; b < k / 32; b++) {                                                             \
                dec32 w[2];                                                                                    \
                for (int h = 0; h < 2; h++) {                                                                  \
                    if (rows[2 * q + h]) dec_##T((const XT *)rows[2 * q + h] + b, &w[h]);                      \
                    else memset(&w[h], 0, sizeof w[h]);                                                        \
                }                                                                                              \
                int8_t *u = p->u + q * 2 * p->kp + 64 * b;                                                     \
                put_pair16(u, w[0].w0, w[1].w0);                                                               \
                put_pair16(u + 32, w[0].w1, w[1].w1);                                                          \
                float *d = p->d + (q * p->nblk + b) * 4;                                                       \
                d[0] = d[1] = w[0].d;                                                                          \
                d[2] = d[3] = w[1].d;                                                                          \
            }                                                                                                  \
    }
NPL_PANEL32(q4_0, block_q4_0)
NPL_PANEL32(q5_0, block_q5_0)
NPL_PANEL32(q8_0, block_q8_0)

#define NPL_PANELK(T, XT)                                                                                      \
    static void panel_##T(const panel *p, const void *const rows[WR], int64_t k) {                            \
        for (int q = 0; q < 2; q++)                                                                            \
            for (int64_t i = 0; i < k / QK_K; i++) {                                                           \
                deck w[2];                                                                                     \
                memset(w, 0, sizeof w); /* q6_K leaves the mins unset */                                       \
                for (int h = 0; h < 2; h++) {                                                                  \
                    if (rows[2 * q + h]) dec_##T((const XT *)rows[2 * q + h] + i, &w[h]);                      \
                    else memset(&w[h], 0, sizeof w[h]);                                                        \
                }                                                                                              \
                int8_t *u = p->u + q * 2 * p->kp + 2 * QK_K * i;                                               \
                for (int g = 0; g < 16; g++) put_pair16(u + 32 * g, w[0].w[g], w[1].w[g]);                     \
                const int64_t s = q * p->nblk + i;                                                             \
                for (int h = 0; h < 2; h++) {                                                                  \
                    p->d[4 * s + 2 * h] = p->d[4 * s + 2 * h + 1] = w[h].d;                                    \
                    p->dmin[4 * s + 2 * h] = p->dmin[4 * s + 2 * h + 1] = w[h].dmin;                           \
                    for (int g = 0; g < 16; g++)                                                               \
                        p->sc[(16 * s + g) * 4 + 2 * h] = p->sc[(16 * s + g) * 4 + 2 * h + 1] = w[h].sc[g];    \
                    for (int j = 0; j < 8; j++)                                                                \
                        p->mins[(8 * s + j) * 4 + 2 * h] = p->mins[(8 * s + j) * 4 + 2 * h + 1] = w[h].m[j];   \
                }                                                                                              \
            }                                                                                                  \
    }
NPL_PANELK(q4_K, block_q4_K)
NPL_PANELK(q6_K, block_q6_K)

/* ---- the kernels: 2 weight pairs x 1 activation pair ---- */

/* y rows c, c + 1 (if < m), weight rows r, r + 1 (if < r1) from lanes [r.c, r.c1, r1.c, r1.c1] */
INLINE void store4(float32x4_t v, float *y, int64_t ldy, int64_t r, int64_t r1, int64_t c, int64_t m) {
    float o[4];
    vst1q_f32(o, v);
    if (r < r1) y[c * ldy + r] = o[0];
    if (r < r1 && c + 1 < m) y[(c + 1) * ldy + r] = o[1];
    if (r + 1 < r1) y[c * ldy + r + 1] = o[2];
    if (r + 1 < r1 && c + 1 < m) y[(c + 1) * ldy + r + 1] = o[3];
}

INLINE int32x4_t mm64(const int8_t *w, const int8x16_t x[4]) {
    int32x4_t s = vdupq_n_s32(0);
    for (int j = 0; j < 4; j++) s = vmmlaq_s32(s, vld1q_s8(w + 16 * j), x[j]);
    return s;
}

/* one 32-element block b into the accumulators a0 (pair 0), a1 (pair 1) */
INLINE void blk32(const panel *p, xpair x, int64_t b, float32x4_t *a0, float32x4_t *a1) {
    int8x16_t xv[4];
    for (int j = 0; j < 4; j++) xv[j] = vld1q_s8(x.qs + 64 * b + 16 * j);
    const float32x4_t xd = vld1q_f32(x.d + 4 * b);
    const int32x4_t s0 = mm64(p->u + 64 * b, xv), s1 = mm64(p->u + 2 * p->kp + 64 * b, xv);
    *a0 = vfmaq_f32(*a0, vcvtq_f32_s32(s0), vmulq_f32(vld1q_f32(p->d + 4 * b), xd));
    *a1 = vfmaq_f32(*a1, vcvtq_f32_s32(s1), vmulq_f32(vld1q_f32(p->d + (p->nblk + b) * 4), xd));
}

static void kern32(const panel *p, xpair x, int64_t k, float32x4_t out[2]) {
    float32x4_t a[2][4];
    for (int q = 0; q < 2; q++)
        for (int l = 0; l < 4; l++) a[q][l] = vdupq_n_f32(0);
    const int64_t nb = k / 32;
    int64_t b = 0;
    for (; b + 4 <= nb; b += 4) {
        blk32(p, x, b, &a[0][0], &a[1][0]);
        blk32(p, x, b + 1, &a[0][1], &a[1][1]);
        blk32(p, x, b + 2, &a[0][2], &a[1][2]);
        blk32(p, x, b + 3, &a[0][3], &a[1][3]);
    }
    for (int l = 0; b < nb; b++, l++) blk32(p, x, b, &a[0][l], &a[1][l]);
    for (int q = 0; q < 2; q++) out[q] = vaddq_f32(vaddq_f32(a[q][0], a[q][1]), vaddq_f32(a[q][2], a[q][3]));
}

/* one super-block i: exact int32 sums for both pairs into lane-slot accumulators */
INLINE void sbk(const panel *p, xpair x, int64_t i, int has_min, float32x4_t *a0, float32x4_t *a1, float32x4_t mn[2]) {
    const int8_t *xs = x.qs + 2 * QK_K * i;
    int32x4_t is[2] = {vdupq_n_s32(0), vdupq_n_s32(0)};
    for (int g = 0; g < 16; g++) {
        const int8x16_t x0 = vld1q_s8(xs + 32 * g), x1 = vld1q_s8(xs + 32 * g + 16);
        for (int q = 0; q < 2; q++) {
            const int8_t *u = p->u + q * 2 * p->kp + 2 * QK_K * i + 32 * g;
            const int32x4_t t = vmmlaq_s32(vmmlaq_s32(vdupq_n_s32(0), vld1q_s8(u), x0), vld1q_s8(u + 16), x1);
            is[q] = vmlaq_s32(is[q], t, vld1q_s32(p->sc + (16 * (q * p->nblk + i) + g) * 4));
        }
    }
    const float32x4_t xd = vld1q_f32(x.d + 4 * i);
    float32x4_t *acc[2] = {a0, a1};
    for (int q = 0; q < 2; q++) {
        const int64_t s = q * p->nblk + i;
        *acc[q] = vfmaq_f32(*acc[q], vcvtq_f32_s32(is[q]), vmulq_f32(xd, vld1q_f32(p->d + 4 * s)));
        if (has_min) {
            int32x4_t summs = vdupq_n_s32(0);
            for (int j = 0; j < 8; j++) summs = vmlaq_s32(summs, vld1q_s32(p->mins + (8 * s + j) * 4), vld1q_s32(x.bs + 32 * i + 4 * j));
            mn[q] = vaddq_f32(mn[q], vmulq_f32(vmulq_f32(xd, vld1q_f32(p->dmin + 4 * s)), vcvtq_f32_s32(summs)));
        }
    }
}

INLINE void kernk(const panel *p, xpair x, int64_t k, int has_min, float32x4_t out[2]) {
    float32x4_t a[2][4], mn[2] = {vdupq_n_f32(0), vdupq_n_f32(0)};
    for (int q = 0; q < 2; q++)
        for (int l = 0; l < 4; l++) a[q][l] = vdupq_n_f32(0);
    const int64_t nsb = k / QK_K;
    for (int64_t i = 0; i < nsb; i++) sbk(p, x, i, has_min, &a[0][i % 4], &a[1][i % 4], mn);
    for (int q = 0; q < 2; q++) {
        out[q] = vaddq_f32(vaddq_f32(a[q][0], a[q][1]), vaddq_f32(a[q][2], a[q][3]));
        if (has_min) out[q] = vsubq_f32(out[q], mn[q]);
    }
}

static void kern_q4_K(const panel *p, xpair x, int64_t k, float32x4_t out[2]) { kernk(p, x, k, 1, out); }
static void kern_q6_K(const panel *p, xpair x, int64_t k, float32x4_t out[2]) { kernk(p, x, k, 0, out); }

typedef void (*kern_fn)(const panel *p, xpair x, int64_t k, float32x4_t out[2]);

static void rows_with(panel_fn pf, kern_fn kf, int kquant, const void *w, size_t w_row, int64_t r0, int64_t r1,
                      const npl_gemm_x *xp, float *y, int64_t ldy) {
    const int64_t k = xp->k, kp = xp->kp, nblk = kquant ? kp / QK_K : kp / 32, nk = kquant ? nblk : 1;
    _Alignas(16) int8_t u[4 * kp];
    _Alignas(16) float d[2 * nblk * 4], dmin[2 * nk * 4];
    _Alignas(16) int32_t sc[2 * nk * 16 * 4], mins[2 * nk * 8 * 4];
    const panel p = {u, d, dmin, sc, mins, kp, nblk};
    for (int64_t rb = r0; rb < r1; rb += WR) {
        const void *rows[WR];
        for (int j = 0; j < WR; j++) rows[j] = rb + j < r1 ? (const char *)w + (size_t)(rb + j) * w_row : NULL;
        pf(&p, rows, k);
        for (int64_t c = 0; c < xp->m; c += 2) {
            float32x4_t out[2];
            kf(&p, xpair_of(xp, c / 2), k, out);
            store4(out[0], y, ldy, rb, r1, c, xp->m);
            store4(out[1], y, ldy, rb + 2, r1, c, xp->m);
        }
    }
}

#define NPL_GEMM_I8MM(T, PACK, KQ)                                                                             \
    static void gemm_rows_##T(const void *w, size_t w_row, int64_t r0, int64_t r1, const npl_gemm_x *xp,       \
                              float *y, int64_t ldy) {                                                         \
        rows_with(panel_##T, kern_##T, KQ, w, w_row, r0, r1, xp, y, ldy);                                   \
    }                                                                                                          \
    static const npl_gemm_kernels gemm_##T = {PACK, gemm_rows_##T};

static void kern_q4_0(const panel *p, xpair x, int64_t k, float32x4_t out[2]) { kern32(p, x, k, out); }
static void kern_q5_0(const panel *p, xpair x, int64_t k, float32x4_t out[2]) { kern32(p, x, k, out); }
static void kern_q8_0(const panel *p, xpair x, int64_t k, float32x4_t out[2]) { kern32(p, x, k, out); }
NPL_GEMM_I8MM(q4_0, pack_q8_0, 0)
NPL_GEMM_I8MM(q5_0, pack_q8_0, 0)
NPL_GEMM_I8MM(q8_0, pack_q8_0, 0)
NPL_GEMM_I8MM(q4_K, pack_q8_K, 1)
NPL_GEMM_I8MM(q6_K, pack_q8_K, 1)

const npl_gemm_kernels *npl_gemm_get_i8mm(npl_type t) {
    switch (t) {
    case NPL_TYPE_Q4_0: return &gemm_q4_0;
    case NPL_TYPE_Q5_0: return &gemm_q5_0;
    case NPL_TYPE_Q8_0: return &gemm_q8_0;
    case NPL_TYPE_Q4_K: return &gemm_q4_K;
    case NPL_TYPE_Q6_K: return &gemm_q6_K;
    default: return NULL;
    }
}
