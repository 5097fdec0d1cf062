/* AVX2 GEMM for prefill, for x86 without AVX-512 (no VNNI: maddubs + madd
 * make the dot of 4 bytes).
 *
 * It computes what the AVX2 vec_dot kernels (vec_dot_avx2.c,
 * vec_dot_avx2_k.c) compute, bit for bit, as does the AVX2 GEMV that decode
 * and small batches take (gemv_avx2.c), so a row inside a prefill batch gets
 * decode's bits: chunked prefill equals unchunked.
 *
 * q4_0 / q5_0 / q8_0: per (weight row, activation row, 32-block) the exact
 * int32 total, then the plain C step acc = acc + (float)total * dw * dx,
 * blocks in order (so these equal the plain C kernels too). The panel keeps
 * each block as 8 vectors, vector g holding elements 4g..4g+3 of the 8 rows
 * side by side (row j in int32 lane j), and an activation's 4 bytes are
 * broadcast against it: maddubs + madd give the 8 rows' sums in 8 lanes, so
 * there is no horizontal sum, and one float step serves 8 rows. q4_0 / q5_0
 * add a block's 8 maddubs results in int16 lanes (16 elements each) onto
 * -128 x their sums of w (cw): the adds wrap, but the lanes end at the exact
 * sums of x . w, which fit (|x| <= 127, |w| <= 16: at most 32512), so one
 * madd gives the totals.
 *
 * q4_K / q6_K keep vec_dot's float accumulators per (weight row, activation
 * row): 8 lanes of integer sums per super-block (sub-block scales inside
 * madd, q4_K's mins in a 4-lane accumulator) and its final horizontal sums.
 *
 * Weights are decoded 8 rows at a time into a panel on the stack and reused
 * by every activation row. maddubs saturates a pair of u8 x i8 products at
 * int16, so its unsigned side stays small: q4_0 / q5_0 keep w signed against
 * x + 128 (packed so), and the panel holds 128 x each row's block sum of w
 * to take off; q6_K stores u = w + 32 (32 x the activation's group sums,
 * from Q8_K's bsums, taken off); q8_0 keeps its signed quants as
 * maddubs(|w|, sign(x, w)). Integer lanes are exact, so any of these gives
 * the exact sums.
 *
 * Activation layout (npl_gemm_x): quants in element order, a scale per group
 * of 16, and in the sum array Q8_K's int16 bsums (k-quants). */
#include "kernels/gemm.h"

#if defined(__x86_64__) || defined(__i386__)
#include "kernels/x86/avx2/gemm_kpanel.h"

#define INLINE static inline __attribute__((always_inline))

enum {
    RH = 4, /* panel rows per kernel pass (vec_dot's accumulators for 4 rows fit the 16 registers) */
};

typedef void (*decode_fn)(const void *row, int64_t k, const panel *p, int j);

typedef struct {
    decode_fn dec;
    int offset;   /* u = w + offset: q6_K 32 (taken off through the bsums); 0 for the rest */
    int is_signed, kquant, has_min;
    int xbias;    /* signed w against x + 128 (q4_0, q5_0; offset then unused) */
} wtype;

/* ---- weight decoding (8 rows per panel) ---- */

static inline void put_scale(const panel *p, int j, int64_t b, float d) { p->dw[b * R + j] = d; }

/* q4_0 / q5_0 keep w signed (the activations are stored as x + 128,
 * unsigned, for maddubs); the correction 128 x sum(w) is made per panel
 * (interleave) rather than per activation row */
static void put_signed(const panel *p, int j, int64_t b, __m256i w) { _mm256_store_si256((__m256i *)u_at(p, j, b), w); }

/* The 32-blocks' panel layout: the 8 rows x 8 int32 of a block transposed,
 * so vector g holds elements 4g..4g+3 of row j in lane j; and, for the
 * signed types, cw[b] = -128 x the sums of w that the int16 lanes of the
 * block's maddubs results take (int16 lanes 2j, 2j + 1: row j), wrapping. */
static void interleave(const panel *p, int64_t nb, int xbias) {
    for (int64_t b = 0; b < nb; b++) {
        __m256i *v = (__m256i *)u_at(p, 0, b), r[R];
        for (int j = 0; j < R; j++) r[j] = _mm256_load_si256(v + j);
        avx2_transpose8_epi32(r);
        __m256i cw = _mm256_setzero_si256();
        for (int g = 0; g < R; g++) {
            _mm256_store_si256(v + g, r[g]);
            if (xbias) cw = _mm256_sub_epi16(cw, _mm256_maddubs_epi16(_mm256_set1_epi8((char)0x80), r[g]));
        }
        if (xbias) p->cw[b] = cw;
    }
}

static void decode_q4_0(const void *row, int64_t k, const panel *p, int j) {
    const block_q4_0 *x = row;
    for (int64_t b = 0; b < k / QK4_0; b++) {
        put_signed(p, j, b, _mm256_sub_epi8(avx2_nibbles32(x[b].qs), _mm256_set1_epi8(8)));
        put_scale(p, j, b, h2f(x[b].d));
    }
}

static void decode_q5_0(const void *row, int64_t k, const panel *p, int j) {
    const block_q5_0 *x = row;
    for (int64_t b = 0; b < k / QK5_0; b++) {
        const __m256i hi = _mm256_and_si256(avx2_bits32(x[b].qh), _mm256_set1_epi8(16));
        put_signed(p, j, b, _mm256_sub_epi8(_mm256_or_si256(avx2_nibbles32(x[b].qs), hi), _mm256_set1_epi8(16)));
        put_scale(p, j, b, h2f(x[b].d));
    }
}

static void decode_q8_0(const void *row, int64_t k, const panel *p, int j) {
    const block_q8_0 *x = row;
    for (int64_t b = 0; b < k / QK8_0; b++) {
        _mm256_store_si256((__m256i *)u_at(p, j, b), _mm256_loadu_si256((const __m256i *)x[b].qs));
        put_scale(p, j, b, h2f(x[b].d));
    }
}

/* rows past the weight matrix's end: zero weights, results not stored */
static void zero_row(const panel *p, int j, const wtype *t) {
    if (t->kquant) {
        zero_row_k(p, j);
        return;
    }
    for (int64_t b = 0; b < p->kp / 32; b++) memset(u_at(p, j, b), 0, 32);
    for (int64_t b = 0; b < p->kp / 32; b++) p->dw[b * R + j] = 0;
}

/* ---- activation rows ---- */

typedef struct {
    const int8_t *qs;  /* [kp] quants in element order */
    const float *d;    /* [kp / 16] scale per group of 16 */
    const int16_t *bs; /* k-quants: [kp / 16] Q8_K's bsums */
    int64_t k;         /* elements (the kernels stop at k, the panel runs to kp) */
} xrow;

static void fill_q8_0(int8_t *qs, float *d, const void *xq, int64_t k, int64_t kp, int xbias) {
    const block_q8_0 *x = xq;
    const __m256i bias = _mm256_set1_epi8(xbias ? (char)0x80 : 0);
    for (int64_t b = 0; b < k / QK8_0; b++) {
        _mm256_storeu_si256((__m256i *)(qs + 32 * b), _mm256_xor_si256(_mm256_loadu_si256((const __m256i *)x[b].qs), bias));
        d[2 * b] = d[2 * b + 1] = h2f(x[b].d);
    }
    memset(qs + k, 0, (size_t)(kp - k));
    for (int64_t g = k / 16; g < kp / 16; g++) d[g] = 0;
}

enum { X_Q8_0, X_Q8_K, X_Q8_0_BIASED /* x + 128, unsigned */ };

static void fill_as(int kind, int8_t *qs, float *d, float *sum, const void *xq, int64_t k, int64_t kp) {
    if (kind == X_Q8_K) fill_q8_K(qs, d, (int16_t *)sum, xq, k, kp);
    else fill_q8_0(qs, d, xq, k, kp, kind == X_Q8_0_BIASED);
}

/* ---- the kernels ----
 *
 * q4_0 / q5_0 / q8_0: the 8 panel rows against QX activation rows per pass
 * (each weight load serves them all; measured on Zen 3, settable with -D). */
#ifndef QX
#define QX 4
#endif
enum { NXM = 2 }; /* k-quants: activation rows per pass */

/* The 8 panel rows against NX activation rows: out[c] = the rows' results,
 * per block acc = acc + (float)total * dw * dx (plain C's order). */
INLINE void dot_panel_q0(const wtype *t, const panel *p, const int NX, const xrow *x, __m256 *out) {
    const __m256i ones = _mm256_set1_epi16(1);
    __m256 acc[QX];
    for (int c = 0; c < NX; c++) acc[c] = _mm256_setzero_ps();
    const int64_t nb = x[0].k / 32;
    const uint8_t *wb = p->u;
    for (int64_t b = 0; b < nb; b++, wb += R * 32) {
        __m256i s[QX], s32[QX];
        for (int g = 0; g < 8; g++) {
            const __m256i w = _mm256_load_si256((const __m256i *)(wb + 32 * g));
            const __m256i aw = t->is_signed ? _mm256_sign_epi8(w, w) : w;
            for (int c = 0; c < NX; c++) {
                int32_t x4;
                memcpy(&x4, x[c].qs + 32 * b + 4 * g, sizeof x4);
                const __m256i xb = _mm256_set1_epi32(x4);
                if (t->is_signed) { /* q8_0: |w| . sign(x, w), pair sums do not fit twice in int16 */
                    const __m256i v = _mm256_madd_epi16(_mm256_maddubs_epi16(aw, _mm256_sign_epi8(xb, w)), ones);
                    s32[c] = g ? _mm256_add_epi32(s32[c], v) : v;
                } else { /* (x + 128) . w from -128 sum(w) in int16, then madd */
                    s[c] = _mm256_add_epi16(g ? s[c] : p->cw[b], _mm256_maddubs_epi16(xb, w));
                    __asm__("" : "+x"(s[c])); /* in order: gcc would make all 32 products first, and spill */
                    if (g == 7) s32[c] = _mm256_madd_epi16(s[c], ones);
                }
            }
        }
        const __m256 dw = _mm256_load_ps(p->dw + b * R);
        for (int c = 0; c < NX; c++) {
            const __m256 f = _mm256_mul_ps(_mm256_mul_ps(_mm256_cvtepi32_ps(s32[c]), dw), _mm256_broadcast_ss(x[c].d + 2 * b));
            acc[c] = _mm256_add_ps(acc[c], avx2_opaque_ps(f)); /* no fma: plain C rounds the product */
        }
    }
    for (int c = 0; c < NX; c++) out[c] = acc[c];
}

/* q4_K / q6_K: dot_k4's and dot_q6_K_q8_K's arithmetic, RH rows x NX
 * activation rows; the float accumulators change once per super-block and
 * live in memory, the integer sums of the 8 blocks in registers */
INLINE void dot_rows_k(const wtype *t, const panel *p, int q0, const int NX, int64_t k, const xrow *x,
                       float out[NXM][R]) {
    __m256 acc[NXM][RH];
    __m128 accm[NXM][RH];
    for (int c = 0; c < NX; c++)
        for (int r = 0; r < RH; r++) acc[c][r] = _mm256_setzero_ps(), accm[c][r] = _mm_setzero_ps();
    for (int64_t i = 0; i < k / QK_K; i++) {
        __m256i sumi[NXM][RH];
        float yd[NXM];
        for (int c = 0; c < NX; c++) {
            const __m256i bs = _mm256_loadu_si256((const __m256i *)(x[c].bs + 16 * i));
            yd[c] = x[c].d[16 * i];
            if (t->has_min) { /* q4_K: the mins against the 32-element sums of x */
                const __m128i bs2 = _mm_hadd_epi16(_mm256_castsi256_si128(bs), _mm256_extracti128_si256(bs, 1));
                for (int r = 0; r < RH; r++) {
                    const __m128i pm = _mm_madd_epi16(_mm_load_si128((const __m128i *)(p->aux + (i * R + q0 + r) * 16)), bs2);
                    accm[c][r] = _mm_fmadd_ps(_mm_set1_ps(-yd[c] * p->dmin[i * R + q0 + r]), _mm_cvtepi32_ps(pm), accm[c][r]);
                    sumi[c][r] = _mm256_setzero_si256();
                }
            } else { /* q6_K: w = q - 32, so minus 32 x scale x group sum */
                for (int r = 0; r < RH; r++) {
                    const __m256i g = _mm256_load_si256((const __m256i *)(p->aux + (i * R + q0 + r) * 16));
                    sumi[c][r] = _mm256_sub_epi32(_mm256_setzero_si256(), _mm256_slli_epi32(_mm256_madd_epi16(g, bs), 5));
                }
            }
        }
        /* the panel's rows of a block are 32 bytes apart: walk pointers, so
         * the loop has no per-row address arithmetic */
        const uint8_t *ub = u_at(p, q0, 8 * i);
        const int16_t *sb = sc_at(p, q0, 8 * i);
        _Pragma("GCC unroll 1") /* unrolled, the rows x 8 blocks spill */
        for (int b = 0; b < 8; b++, ub += R * 32, sb += R * 16) {
            __m256i xv[NXM];
            for (int c = 0; c < NX; c++) xv[c] = _mm256_load_si256((const __m256i *)(x[c].qs + QK_K * i + 32 * b));
            for (int r = 0; r < RH; r++) {
                const __m256i w = _mm256_load_si256((const __m256i *)(ub + 32 * r));
                const __m256i s = _mm256_load_si256((const __m256i *)(sb + 16 * r));
                for (int c = 0; c < NX; c++)
                    sumi[c][r] = _mm256_add_epi32(sumi[c][r], _mm256_madd_epi16(s, _mm256_maddubs_epi16(w, xv[c])));
            }
        }
        for (int c = 0; c < NX; c++)
            for (int r = 0; r < RH; r++)
                acc[c][r] = _mm256_fmadd_ps(_mm256_set1_ps(yd[c] * p->dw[i * R + q0 + r]), _mm256_cvtepi32_ps(sumi[c][r]), acc[c][r]);
    }
    for (int c = 0; c < NX; c++)
        for (int r = 0; r < RH; r++) {
            __m128 m = _mm_add_ps(accm[c][r], _mm_movehl_ps(accm[c][r], accm[c][r]));
            m = _mm_add_ss(m, _mm_movehdup_ps(m));
            out[c][q0 + r] = t->has_min ? avx2_hsum_f32(acc[c][r]) + _mm_cvtss_f32(m) : avx2_hsum_f32(acc[c][r]);
        }
}

/* One panel against the k-quant kernel's activation rows c and, with NX = 2, c + 1. */
INLINE void panel_cols_k(const wtype *t, const panel *p, int nrow, const int NX, const xrow *x, float out[NXM][R]) {
    for (int q0 = 0; q0 < nrow; q0 += RH) dot_rows_k(t, p, q0, NX, x[0].k, x, out);
}

static inline xrow xrow_at(const npl_gemm_x *xp, int64_t c) {
    return (xrow){xp->qs + c * xp->kp, xp->d + c * (xp->kp / 16), (const int16_t *)(xp->sum + c * xp->ng), xp->k};
}

static inline void store_row(float *y, const float *v, int nrow) {
    if (nrow == R) _mm256_storeu_ps(y, _mm256_load_ps(v)); /* not a memmove call */
    else memcpy(y, v, (size_t)nrow * sizeof(float));
}

/* The 32-block types: the panel against activation rows [c, c + NX). */
INLINE void cols_q0(const wtype *t, const panel *p, int nrow, const int NX, const npl_gemm_x *xp, int64_t c,
                    float *y, int64_t ldy, int64_t rb) {
    xrow x[QX];
    for (int i = 0; i < NX; i++) x[i] = xrow_at(xp, c + i);
    _Alignas(32) __m256 out[QX];
    dot_panel_q0(t, p, NX, x, out);
    for (int i = 0; i < NX; i++) store_row(y + (c + i) * ldy + rb, (const float *)&out[i], nrow);
}

/* The panel against every activation row. */
INLINE void all_cols_q0(const wtype *t, const panel *p, int nrow, const npl_gemm_x *xp, float *y, int64_t ldy, int64_t rb) {
    const int64_t m = xp->m;
    int64_t c = 0;
    for (; c + QX <= m; c += QX) cols_q0(t, p, nrow, QX, xp, c, y, ldy, rb);
    switch (m - c) { /* a constant count each, so the accumulators stay in registers */
    case 3: cols_q0(t, p, nrow, 3 < QX ? 3 : QX, xp, c, y, ldy, rb); break;
    case 2: cols_q0(t, p, nrow, 2 < QX ? 2 : QX, xp, c, y, ldy, rb); break;
    case 1: cols_q0(t, p, nrow, 1, xp, c, y, ldy, rb); break;
    default: break;
    }
}

/* The k-quant panel against every activation row. */
INLINE void all_cols_k(const wtype *t, const panel *p, int nrow, const npl_gemm_x *xp, float *y, int64_t ldy, int64_t rb) {
    const int64_t m = xp->m;
    for (int64_t c = 0; c < m; c += NXM) {
        const int nx = m - c < NXM ? (int)(m - c) : NXM;
        xrow x[NXM];
        for (int i = 0; i < nx; i++) x[i] = xrow_at(xp, c + i);
        _Alignas(32) float out[NXM][R] = {{0}}; /* nrow < R: the rest is not stored */
        if (nx == NXM) panel_cols_k(t, p, nrow, NXM, x, out);
        else panel_cols_k(t, p, nrow, 1, x, out);
        for (int i = 0; i < nx; i++) store_row(y + (c + i) * ldy + rb, out[i], nrow);
    }
}

/* Weight rows [r0, r1) against the packed activation rows. */
INLINE void rows_with(const wtype *t, const void *w, size_t w_row, int64_t r0, int64_t r1, const npl_gemm_x *xp,
                      float *y, int64_t ldy) {
    const int64_t k = xp->k, kp = xp->kp, nsb = t->kquant ? kp / QK_K : 1;
    uint8_t raw[R * kp + 32];
    float dw[kp / 32 * R], dmin[nsb * R];
    __m256i cwm[t->xbias ? kp / 32 : 1];
    int16_t scr[t->kquant ? R * kp / 2 + 16 : 1], auxr[R * nsb * 16 + 16]; /* + 16: alignment */
    const panel p = {kp, (uint8_t *)(((uintptr_t)raw + 31) & ~(uintptr_t)31), dw, dmin,
                     (int16_t *)(((uintptr_t)scr + 31) & ~(uintptr_t)31), (int16_t *)(((uintptr_t)auxr + 31) & ~(uintptr_t)31),
                     cwm};
    for (int64_t rb = r0; rb < r1; rb += R) {
        const int nrow = r1 - rb < R ? (int)(r1 - rb) : R;
        for (int j = 0; j < nrow; j++) t->dec((const uint8_t *)w + (rb + j) * (int64_t)w_row, k, &p, j);
        for (int j = nrow; j < R; j++) zero_row(&p, j, t);
        if (!t->kquant) {
            interleave(&p, k / 32, t->xbias);
            all_cols_q0(t, &p, nrow, xp, y, ldy, rb);
            continue;
        }
        all_cols_k(t, &p, nrow, xp, y, ldy, rb);
    }
}

static const wtype t_q4_0 = {decode_q4_0, 0, 0, 0, 0, 1}, t_q5_0 = {decode_q5_0, 0, 0, 0, 0, 1},
                   t_q8_0 = {decode_q8_0, 0, 1, 0, 0, 0}, t_q4_K = {decode_q4_K, 0, 0, 1, 1, 0},
                   t_q6_K = {decode_q6_K, 32, 0, 1, 0, 0};

#define KERNELS(name, wt, kind)                                                                                  \
    static void gemm_pack_##name(const npl_gemm_x *xp, int64_t r, const void *row) {                          \
        fill_as(kind, xp->qs + r * xp->kp, xp->d + r * (xp->kp / 16), xp->sum + r * xp->ng, row, xp->k, xp->kp); \
    }                                                                                                         \
    static void gemm_rows_##name(const void *w, size_t w_row, int64_t r0, int64_t r1, const npl_gemm_x *xp,   \
                                 float *y, int64_t ldy) {                                                     \
        rows_with(&wt, w, w_row, r0, r1, xp, y, ldy);                                                         \
    }                                                                                                         \
    static const npl_gemm_kernels gemm_##name = {gemm_pack_##name, gemm_rows_##name};
KERNELS(q4_0, t_q4_0, X_Q8_0_BIASED)
KERNELS(q5_0, t_q5_0, X_Q8_0_BIASED)
KERNELS(q8_0, t_q8_0, X_Q8_0)
KERNELS(q4_K, t_q4_K, X_Q8_K)
KERNELS(q6_K, t_q6_K, X_Q8_K)

/* ---- packed q5_0 (kernels/wpack.h): its blocks are the panel's vectors
 * already, so a panel costs the unpacking alone (no per-row decode, no
 * transpose); then the same kernel and bits as the unpacked q5_0 ---- */

static void decode_packed_q5_0(const uint8_t *pp, int64_t nb, const panel *p) {
    const __m256i sixteen = _mm256_set1_epi8(16), x80 = _mm256_set1_epi8((char)0x80);
    for (int64_t b = 0; b < nb; b++, pp += 176) {
        __m256i u[8], cw = _mm256_setzero_si256();
        q5_0_packed_unpack(pp, u);
        __m256i *v = (__m256i *)u_at(p, 0, b);
        for (int g = 0; g < R; g++) {
            const __m256i w = _mm256_sub_epi8(u[g], sixteen);
            _mm256_store_si256(v + g, w);
            cw = _mm256_sub_epi16(cw, _mm256_maddubs_epi16(x80, w));
        }
        p->cw[b] = cw;
        _mm256_storeu_ps(p->dw + b * R, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)pp)));
    }
}

static void gemm_rows_q5_0_packed(const void *w, size_t w_row, int64_t r0, int64_t r1, const npl_gemm_x *xp, float *y,
                                  int64_t ldy) {
    const int64_t kp = xp->kp;
    uint8_t raw[R * kp + 32];
    float dw[kp / 32 * R];
    __m256i cwm[kp / 32];
    const panel p = {kp, (uint8_t *)(((uintptr_t)raw + 31) & ~(uintptr_t)31), dw, NULL, NULL, NULL, cwm};
    for (int64_t rb = r0; rb < r1; rb += R) {
        decode_packed_q5_0((const uint8_t *)w + rb * (int64_t)w_row, xp->k / QK5_0, &p);
        all_cols_q0(&t_q5_0, &p, R, xp, y, ldy, rb);
    }
}

/* a packed k-quant matrix's 8-row panels, decoded (dec: decode_packed_*,
 * bsb bytes per super-block of a panel), against every activation row */
typedef void (*packed_dec_fn)(const uint8_t *pp, int64_t nsb, const panel *p);
INLINE void rows_packed_k(const wtype *t, packed_dec_fn dec, size_t bsb, const void *w, int64_t r0, int64_t r1,
                          const npl_gemm_x *xp, float *y, int64_t ldy) {
    const int64_t kp = xp->kp, nsb = kp / QK_K;
    uint8_t raw[R * kp + 32];
    float dw[kp / 32 * R], dmin[nsb * R];
    int16_t scr[R * kp / 2 + 16], auxr[R * nsb * 16 + 16];
    const panel p = {kp, (uint8_t *)(((uintptr_t)raw + 31) & ~(uintptr_t)31), dw, dmin,
                     (int16_t *)(((uintptr_t)scr + 31) & ~(uintptr_t)31), (int16_t *)(((uintptr_t)auxr + 31) & ~(uintptr_t)31),
                     NULL};
    for (int64_t rb = r0; rb < r1; rb += R) {
        dec((const uint8_t *)w + (size_t)(rb / R) * (size_t)(xp->k / QK_K) * bsb, xp->k / QK_K, &p);
        all_cols_k(t, &p, R, xp, y, ldy, rb);
    }
}

static void gemm_rows_q4_K_packed(const void *w, size_t w_row, int64_t r0, int64_t r1, const npl_gemm_x *xp, float *y,
                                  int64_t ldy) {
    (void)w_row;
    rows_packed_k(&t_q4_K, decode_packed_q4_K, NPL_WPACK_Q4_K_BLOCK, w, r0, r1, xp, y, ldy);
}

static void gemm_rows_q6_K_packed(const void *w, size_t w_row, int64_t r0, int64_t r1, const npl_gemm_x *xp, float *y,
                                  int64_t ldy) {
    (void)w_row;
    rows_packed_k(&t_q6_K, decode_packed_q6_K, NPL_WPACK_Q6_K_BLOCK, w, r0, r1, xp, y, ldy);
}

static const npl_gemm_kernels gemm_q5_0_packed = {gemm_pack_q5_0, gemm_rows_q5_0_packed},
                              gemm_q4_K_packed = {gemm_pack_q4_K, gemm_rows_q4_K_packed},
                              gemm_q6_K_packed = {gemm_pack_q6_K, gemm_rows_q6_K_packed};

const npl_gemm_kernels *npl_gemm_get_avx2_packed(npl_type t) {
    return t == NPL_TYPE_Q5_0 ? &gemm_q5_0_packed : t == NPL_TYPE_Q4_K ? &gemm_q4_K_packed
         : t == NPL_TYPE_Q6_K ? &gemm_q6_K_packed : NULL;
}

const npl_gemm_kernels *npl_gemm_get_avx2(npl_type t) {
    switch (t) {
    case NPL_TYPE_Q4_0: return &gemm_q4_0;
    case NPL_TYPE_Q4_1: return npl_gemm_get_avx2_q4_1();
    case NPL_TYPE_Q5_0: return &gemm_q5_0;
    case NPL_TYPE_Q8_0: return &gemm_q8_0;
    case NPL_TYPE_Q4_K: return &gemm_q4_K;
    case NPL_TYPE_Q6_K: return &gemm_q6_K;
    default: return NULL;
    }
}

#endif
