/* One-row matmul for the AVX-512 family without AMX: each weight row's sum
 * takes the float steps of the AVX-512 GEMM (gemm_avx512.c), in its order,
 * so a row decoded alone gets the bits it gets inside a prefill batch.
 *
 * The GEMM keeps 16 float lanes per (weight row, activation row): per
 * 64-element step, lane 4q + g (interleaved order) gets
 * fma(dw_g * dx_g, (float)dpbusd, lane) of elements 16g + 4q .. + 3; after
 * the steps, lane l gets fma(m_j, xsum_j, lane) for groups j = l, l + 16, ...;
 * then a fixed add tree. Here the quants stay in element order (no permute
 * per step): lane 4g + q is the GEMM's lane 4q + g, the mins come in
 * transposed, and the add tree pairs the same lanes. R weight rows are in
 * flight at once, each read front to back (contiguous rows: one stream),
 * the next R rows prefetched during the steps. */
#include "kernels/gemv.h"

#if defined(__x86_64__) || defined(__i386__)
#include <string.h>

#include "kernels/gemm.h"
#include "kernels/quant.h"
#include "kernels/quant_blocks.h"
#include "kernels/x86/avx512/avx512_util.h"
#include "kernels/x86/avx512/gemv_hint.h"

/* R: weight rows per pass. Q8_AHEAD: passes ahead that q8_0 prefetches
 * with several activation rows (one: rows_as below).
 * The k-quants' unpacking keeps them at ~20 GB/s a core, in cache or not, so
 * their next pass is far enough; q8_0 takes 55 GB/s hot, and one pass (Gemma's
 * output rows: 2.7 KB) ahead is less than the memory's latency: 4 passes read
 * 32 against 26 GB/s cold on one core (AMD EPYC Zen 5, bench/gemv_bench.c cold),
 * 2.7 against 3.3 ms for the 262144 x 640 output matrix on two; the k-quants
 * lose there (q6_K 0.35 -> 0.81 ms over Gemma's nine). */
#ifndef Q8_AHEAD
#define Q8_AHEAD 4
#endif
enum { R = 4 };
#define INLINE static inline __attribute__((always_inline))

/* ---- the activation row, as the GEMM packs it (gemm_decode.h) ---- */

/* qs [kp] in element order; d: [kp / 64][16] the groups' scales, lane p =
 * group p / 4 of the step; xs: [ng] d * sum per group, transposed per 16:
 * lane p of a chunk = group 4 (p % 4) + p / 4 (the GEMM's lane p). */
static void layout(npl_gemv_x *gx, void *mem, int64_t k, int8_t **qs, float **d, float **xs, int64_t *ng) {
    const int64_t kp = npl_gemm_kp(k);
    *ng = npl_gemm_ng(k);
    uintptr_t p = ((uintptr_t)mem + 63) & ~(uintptr_t)63;
    *qs = (int8_t *)p;
    *d = (float *)(p + (uintptr_t)kp);
    *xs = *d + kp / 4;
    memset(*qs, 0, (size_t)kp);
    memset(*d, 0, (size_t)(kp / 4 + *ng) * sizeof(float));
    gx->k = k, gx->kp = kp, gx->qs = *qs, gx->cz = NULL, gx->d = *d, gx->xs = *xs;
}

INLINE void put_group(float *d, float *xs, int64_t g, float dg, float sg) {
    for (int q = 0; q < 4; q++) d[(g / 4) * 16 + (g % 4) * 4 + q] = dg;
    const int64_t l = g % 16;
    xs[g - l + 4 * (l % 4) + l / 4] = sg;
}

static int group_sum(const int8_t *q) {
    int s = 0;
    for (int i = 0; i < 16; i++) s += q[i];
    return s;
}

static void prep_q8_0(npl_gemv_x *gx, void *mem, const void *xq, int64_t k) {
    int8_t *qs;
    float *d, *xs;
    int64_t ng;
    layout(gx, mem, k, &qs, &d, &xs, &ng);
    const block_q8_0 *x = xq;
    for (int64_t b = 0; b < k / QK8_0; b++) { /* the pad block of an odd count: d 0, sums 0, as memset */
        memcpy(qs + 32 * b, x[b].qs, 32);
        const float db = h2f(x[b].d);
        put_group(d, xs, 2 * b, db, db * (float)group_sum(x[b].qs));
        put_group(d, xs, 2 * b + 1, db, db * (float)group_sum(x[b].qs + 16));
    }
}

static void prep_q8_K(npl_gemv_x *gx, void *mem, const void *xq, int64_t k) {
    int8_t *qs;
    float *d, *xs;
    int64_t ng;
    layout(gx, mem, k, &qs, &d, &xs, &ng);
    const block_q8_K *x = xq;
    for (int64_t i = 0; i < k / QK_K; i++) {
        memcpy(qs + QK_K * i, x[i].qs, QK_K);
        for (int g = 0; g < QK_K / 16; g++) put_group(d, xs, 16 * i + g, x[i].d, x[i].d * (float)x[i].bsums[g]);
    }
}

/* ---- one 64-element step of a weight row, as gemm_decode.h decodes it:
 * unsigned quants u in element order, the four groups' scales d4 and
 * mins m4 (w = d * u + m) ---- */

typedef enum { T_Q4_0, T_Q5_0, T_Q8_0, T_Q4_K, T_Q6_K } wtype;

/* the four groups' [a a b b] of pair_scales, each group's value in its four
 * lanes: [a x8 | b x8], and -o times it */
INLINE void pair16(uint16_t ha, uint16_t hb, float o, __m512 *d, __m512 *m) {
    *d = _mm512_cvtph_ps(_mm256_mask_set1_epi16(_mm256_set1_epi16((short)ha), (__mmask16)0xFF00, (short)hb));
    *m = _mm512_mul_ps(*d, _mm512_set1_ps(-o));
}

/* A K super-block's scales, once per row and super-block: the products
 * decode_q4_K / decode_q6_K form (d * sc, -dmin * m), 16 lanes. */
INLINE __m512 sb_scales(wtype t, const uint8_t *row, int64_t i) {
    if (t == T_Q6_K) {
        const block_q6_K *x = (const block_q6_K *)row + i;
        return _mm512_mul_ps(_mm512_set1_ps(h2f(x->d)),
                             _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)x->scales))));
    }
    const block_q4_K *x = (const block_q4_K *)row + i;
    uint32_t q[3]; /* npl_get_scale_min_k4 for j = 0..7, four bytes at a time: scales, then mins */
    memcpy(q, x->scales, 12);
    const uint32_t m6 = 0x3f3f3f3f, m4 = 0x0f0f0f0f, m2 = 0x03030303;
    const __m128i sm = _mm_setr_epi32((int)(q[0] & m6), (int)((q[2] & m4) | (((q[0] >> 6) & m2) << 4)),
                                      (int)(q[1] & m6), (int)(((q[2] >> 4) & m4) | (((q[1] >> 6) & m2) << 4)));
    const __m512 f = _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(sm));
    const float dd = h2f(x->d), dmin = h2f(x->dmin);
    return _mm512_mul_ps(_mm512_mask_blend_ps((__mmask16)0xFF00, _mm512_set1_ps(dd), _mm512_set1_ps(-dmin)), f);
}

INLINE __m512i step_w(wtype t, const uint8_t *row, int64_t s, int64_t k, __m512 sb, __m512 *d, __m512 *m) {
    /* group g of the step in lanes 4g .. 4g + 3: q4_K's two sub-blocks, q6_K's four groups */
    const __m512i pick_k = _mm512_setr_epi32(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1);
    const __m512i pick_6 = _mm512_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3);
    if (t == T_Q4_K) { /* sb: d * sc_j in lanes 0-7, -dmin * m_j in 8-15 */
        const block_q4_K *x = (const block_q4_K *)row + s / 4;
        const int c = (int)(s % 4);
        *d = _mm512_permutexvar_ps(_mm512_add_epi32(pick_k, _mm512_set1_epi32(2 * c)), sb);
        *m = _mm512_permutexvar_ps(_mm512_add_epi32(pick_k, _mm512_set1_epi32(8 + 2 * c)), sb);
        const __m256i lo4 = _mm256_set1_epi8(0x0F);
        const __m256i q = _mm256_loadu_si256((const __m256i *)(x->qs + 32 * c));
        return _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_and_si256(q, lo4)),
                                  _mm256_and_si256(_mm256_srli_epi16(q, 4), lo4), 1);
    }
    if (t == T_Q6_K) { /* sb: d * sc_j, j = 0..15 */
        const block_q6_K *x = (const block_q6_K *)row + s / 4;
        const int st = (int)(s % 4), h = st / 2, c = st % 2;
        /* q6k_unpack128's q[2c] | q[2c + 1], the only two this step needs: the
         * low 4 bits from ql's nibble c, bits 4-5 from qh's bit pairs 2c and 2c + 1 */
        const __m512i ql = _mm512_loadu_si512(x->ql + 64 * h);
        const __m512i qh = _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)(x->qh + 32 * h)));
        const __m512i sh = _mm512_inserti64x4(_mm512_set1_epi16((short)(4 * c)), _mm256_set1_epi16((short)(4 * c + 2)), 1);
        const __m512i hi = _mm512_slli_epi16(_mm512_and_si512(_mm512_srlv_epi16(qh, sh), _mm512_set1_epi8(3)), 4);
        *d = _mm512_permutexvar_ps(_mm512_add_epi32(pick_6, _mm512_set1_epi32(4 * st)), sb);
        *m = _mm512_mul_ps(*d, _mm512_set1_ps(-32.0f));
        return _mm512_or_si512(_mm512_and_si512(c ? _mm512_srli_epi16(ql, 4) : ql, _mm512_set1_epi8(0x0F)), hi);
    }
    static const uint8_t zero[sizeof(block_q8_0)]; /* the pad block of an odd count */
    const size_t bb = t == T_Q4_0 ? sizeof(block_q4_0) : t == T_Q5_0 ? sizeof(block_q5_0) : sizeof(block_q8_0);
    const uint8_t *a = row + (size_t)(2 * s) * bb, *b = 2 * s + 1 < k / 32 ? a + bb : zero;
    if (t == T_Q8_0) {
        pair16(((const block_q8_0 *)a)->d, ((const block_q8_0 *)b)->d, 128.0f, d, m);
        return _mm512_xor_si512(load2x256(((const block_q8_0 *)a)->qs, ((const block_q8_0 *)b)->qs),
                                _mm512_set1_epi8((char)0x80));
    }
    if (t == T_Q4_0) {
        pair16(((const block_q4_0 *)a)->d, ((const block_q4_0 *)b)->d, 8.0f, d, m);
        return nibbles2x32(((const block_q4_0 *)a)->qs, ((const block_q4_0 *)b)->qs);
    }
    const block_q5_0 *x = (const block_q5_0 *)a, *y = (const block_q5_0 *)b;
    uint32_t ha, hb;
    memcpy(&ha, x->qh, 4);
    memcpy(&hb, y->qh, 4);
    pair16(x->d, y->d, 16.0f, d, m);
    const __m512i u = nibbles2x32(x->qs, y->qs);
    return _mm512_mask_add_epi8(u, (__mmask64)ha | ((__mmask64)hb << 32), u, _mm512_set1_epi8(16));
}

/* The next rows' lines, prefetched a slice per step: S slices of `per`
 * lines from `first` (the division once per pass, not per step). */
typedef struct {
    uintptr_t first;
    size_t lines, per;
} ahead_plan;
INLINE ahead_plan ahead_of(const uint8_t *next, size_t bytes, int64_t S) {
    ahead_plan a = {(uintptr_t)next & ~(uintptr_t)63, 0, 0};
    if (bytes) a.lines = ((uintptr_t)next + bytes - a.first + 63) / 64, a.per = (a.lines + (size_t)S - 1) / (size_t)S;
    return a;
}
INLINE void ahead(const ahead_plan *a, int64_t s) {
    const size_t from = (size_t)s * a->per, to = from + a->per < a->lines ? from + a->per : a->lines;
    for (size_t i = from; i < to; i++) _mm_prefetch((const char *)(a->first + 64 * i), NPL_GEMV_WEIGHT_HINT);
}

/* the GEMM tile's add tree over a (weight row, activation row) pair's lanes,
 * here in element order: lanes p and p ^ 8, then p ^ 4, p ^ 2, p ^ 1 */
INLINE float tree(__m512 v) {
    const __m256 h = _mm256_add_ps(_mm512_castps512_ps256(v), _mm512_extractf32x8_ps(v, 1));
    const __m128 q = _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
    const __m128 r = _mm_add_ps(q, _mm_movehl_ps(q, q));
    return _mm_cvtss_f32(_mm_add_ss(r, _mm_shuffle_ps(r, r, 1)));
}

/* nR (1 or R, a constant) rows a pass; the pass `lead` bytes ahead is
 * prefetched during the steps. */
INLINE void rows_n(wtype t, int nR, size_t lead, const void *w, size_t w_row, int64_t r0, int64_t r1,
                   const npl_gemv_x *gx, int m, float *y, int64_t ldy) {
    const int64_t k = gx->k, S = gx->kp / 64, ng = npl_gemm_ng(k);
    /* lane p of 16 groups from their 4 steps' mins: step p % 4, group p / 4 (lane 4 (p / 4)) */
    const __m512i pick = _mm512_setr_epi32(0, 16, 0, 16, 4, 20, 4, 20, 8, 24, 8, 24, 12, 28, 12, 28);
    _Alignas(64) float mins[R][ng / 4][16]; /* per row and step as the lanes; zero past kp / 64 as the GEMM's */
    memset(mins, 0, sizeof mins);
    const uint8_t *end = (const uint8_t *)w + r1 * (int64_t)w_row;
    for (int64_t rb = r0; rb < r1; rb += nR) {
        const int nr = r1 - rb < nR ? (int)(r1 - rb) : nR;
        const uint8_t *p[R];
        for (int i = 0; i < nR; i++) p[i] = (const uint8_t *)w + (rb + (i < nr ? i : nr - 1)) * (int64_t)w_row;
        const size_t pass = (size_t)nR * w_row;
        const uint8_t *next = p[0] + lead;
        const size_t nbytes = next < end ? (size_t)(end - next) < pass ? (size_t)(end - next) : pass : 0;
        const ahead_plan pa = ahead_of(next, nbytes, S);
        for (int c = 0; c < m; c++) {
            const npl_gemv_x *x = gx + c;
            __m512 acc[R], sb[R];
            for (int i = 0; i < nR; i++) acc[i] = sb[i] = _mm512_setzero_ps();
            for (int64_t s = 0; s < S; s++) {
                const __m512i xq = _mm512_load_si512(x->qs + 64 * s);
                const __m512 sx = _mm512_load_ps(x->d + 16 * s);
                /* q8_0: the lanes' exact sums, as the GEMM (gemm_avx512.c) */
                const __m512i z = _mm512_setzero_si512(),
                              x0 = t == T_Q8_0 ? _mm512_sub_epi32(z, _mm512_dpbusd_epi32(z, _mm512_set1_epi8((char)0x80), xq)) : z;
                if (c == 0) ahead(&pa, s);
#pragma GCC unroll 4
                for (int i = 0; i < nR; i++) {
                    __m512 wd, wm;
                    if ((t == T_Q4_K || t == T_Q6_K) && s % 4 == 0) sb[i] = sb_scales(t, p[i], s / 4);
                    const __m512i u = step_w(t, p[i], s, k, sb[i], &wd, &wm);
                    if (c == 0 && t != T_Q8_0) _mm512_store_ps(mins[i][s], wm);
                    const __m512i dot = _mm512_dpbusd_epi32(x0, u, xq);
                    acc[i] = _mm512_fmadd_ps(_mm512_mul_ps(wd, sx), _mm512_cvtepi32_ps(dot), acc[i]);
                }
            }
            for (int64_t g = 0; g < ng && t != T_Q8_0; g += 16) {
                const __m512 xs = _mm512_load_ps(x->xs + g);
                for (int i = 0; i < nR; i++) {
                    const float *st = mins[i][g / 4];
                    const __m512 lo = _mm512_permutex2var_ps(_mm512_load_ps(st), pick, _mm512_load_ps(st + 16));
                    const __m512 hi = _mm512_permutex2var_ps(_mm512_load_ps(st + 32), pick, _mm512_load_ps(st + 48));
                    acc[i] = _mm512_fmadd_ps(_mm512_mask_blend_ps((__mmask16)0xCCCC, lo, hi), xs, acc[i]);
                }
            }
            for (int i = 0; i < nr; i++) y[c * ldy + rb + i] = tree(acc[i]);
        }
    }
}

/* With one activation row (decode) the weight rows go one after another:
 * one linear stream, which the hardware prefetchers follow, where R rows
 * side by side are R short streams (Gemma's output rows: 680 bytes) they do
 * not; each row prefetches the row LEAD bytes ahead. A row's sum takes the
 * same steps either way: the same bits. One core cold (AMD EPYC Zen 5,
 * bench/gemv_bench.c cold, alternated): q8_0 33 -> 40-41 GB/s at 16 of
 * Gemma's output rows ahead (32-36 at 4-8), hot 55 -> 51 GB/s. q8_0 only:
 * it is the type that reaches this file on AVX-512 without AMX (the others
 * take AVX2's order there, gemm.h npl_avx512_takes_avx2). */
#ifndef LEAD
#define LEAD (16 * 680)
#endif
INLINE void rows_as(wtype t, const void *w, size_t w_row, int64_t r0, int64_t r1, const npl_gemv_x *gx, int m,
                    float *y, int64_t ldy) {
    if (m == 1 && t == T_Q8_0) rows_n(t, 1, LEAD, w, w_row, r0, r1, gx, m, y, ldy);
    else rows_n(t, R, (size_t)(t == T_Q8_0 ? Q8_AHEAD : 1) * R * w_row, w, w_row, r0, r1, gx, m, y, ldy);
}

#define ROWS_FN(name, t)                                                                                       \
    static void name(const void *w, size_t w_row, int64_t r0, int64_t r1, const npl_gemv_x *gx, int m, float *y, \
                     int64_t ldy) {                                                                            \
        rows_as(t, w, w_row, r0, r1, gx, m, y, ldy);                                                           \
    }
ROWS_FN(rows_q4_0, T_Q4_0)
ROWS_FN(rows_q5_0, T_Q5_0)
ROWS_FN(rows_q8_0, T_Q8_0)
ROWS_FN(rows_q4_K, T_Q4_K)
ROWS_FN(rows_q6_K, T_Q6_K)

static const npl_gemv_kernels k_q4_0 = {prep_q8_0, rows_q4_0}, k_q5_0 = {prep_q8_0, rows_q5_0},
                              k_q8_0 = {prep_q8_0, rows_q8_0}, k_q4_K = {prep_q8_K, rows_q4_K},
                              k_q6_K = {prep_q8_K, rows_q6_K};

const npl_gemv_kernels *npl_gemv_get_avx512_gemm(npl_type t) {
    switch (t) {
    case NPL_TYPE_Q4_0: return &k_q4_0;
    case NPL_TYPE_Q5_0: return &k_q5_0;
    case NPL_TYPE_Q8_0: return &k_q8_0;
    case NPL_TYPE_Q4_K: return &k_q4_K;
    case NPL_TYPE_Q6_K: return &k_q6_K;
    default: return NULL;
    }
}

#else
const npl_gemv_kernels *npl_gemv_get_avx512_gemm(npl_type t) {
    (void)t;
    return NULL;
}
#endif
