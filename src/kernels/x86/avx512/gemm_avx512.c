/* AVX-512 VNNI GEMM for prefill (see gemm.h for the packed layout): a tile
 * of 4 weight rows x up to 4 activation rows keeps 16 accumulators; per
 * 64-element step each pair costs dpbusd(u, x), a conversion, the product
 * of the two broadcast group scales and an fma. Weights are decoded 16 rows
 * at a time onto the stack and reused across every activation row.
 *
 * q8_0 (u = q + 128) starts each dpbusd at -128 * (the lane's four x), so the
 * lane's integer sum is exact before it meets a float, instead of taking the
 * offset off at the end as d * 128 * sum(x): that float cancellation cost
 * q8_0 models 10x the plain C path's logit error (test_model_reference). */
#include "kernels/gemm.h"

#if defined(__x86_64__) || defined(__i386__)
#include "kernels/x86/avx512/gemm_decode.h"

enum { TR = 4, TC = 4, BATCH = 16 }; /* tile rows, tile columns, weight rows decoded at once */

/* ---- the tile ---- */

static inline __attribute__((always_inline)) void tile(const int nc, const int exact, const wpanel *p, int r, int nr,
                                                       const npl_gemm_x *xp, int64_t c0, float *y, int64_t ldy) {
    const int64_t kp = p->kp, nd = kp / 16, ng = p->ng;
    const uint8_t *u = p->u + r * kp;
    const float *wd = p->d + r * nd, *wm = p->m + r * ng;
    const int8_t *xs = xp->qs + c0 * kp;
    const float *xd = xp->d + c0 * nd, *xm = xp->sum + c0 * ng;
    __m512 acc[TR][TC];
    for (int i = 0; i < TR; i++)
        for (int c = 0; c < TC; c++) acc[i][c] = _mm512_setzero_ps();
    for (int64_t s = 0; s < kp / 64; s++) {
        __m512i ur[TR];
        __m512 wr[TR];
        for (int i = 0; i < TR; i++) {
            ur[i] = _mm512_load_si512(u + i * kp + s * 64);
            wr[i] = _mm512_broadcast_f32x4(_mm_loadu_ps(wd + i * nd + s * 4));
        }
        for (int c = 0; c < nc; c++) {
            const __m512i x = _mm512_load_si512(xs + c * kp + s * 64);
            const __m512 sx = _mm512_broadcast_f32x4(_mm_loadu_ps(xd + c * nd + s * 4));
            const __m512i z = _mm512_setzero_si512(),
                          x0 = exact ? _mm512_sub_epi32(z, _mm512_dpbusd_epi32(z, _mm512_set1_epi8((char)0x80), x)) : z;
            for (int i = 0; i < TR; i++) {
                const __m512i t = _mm512_dpbusd_epi32(x0, ur[i], x);
                acc[i][c] = _mm512_fmadd_ps(_mm512_mul_ps(wr[i], sx), _mm512_cvtepi32_ps(t), acc[i][c]);
            }
        }
    }
    /* offsets and mins: sum over groups of w_m * x_sum */
    for (int64_t g = 0; g < ng && !exact; g += 16)
        for (int i = 0; i < TR; i++) {
            const __m512 m = _mm512_loadu_ps(wm + i * ng + g);
            for (int c = 0; c < nc; c++)
                acc[i][c] = _mm512_fmadd_ps(m, _mm512_loadu_ps(xm + c * ng + g), acc[i][c]);
        }
    /* per activation row: the four weight rows' sums side by side */
    const __mmask8 keep = (__mmask8)((1u << nr) - 1);
    for (int c = 0; c < nc; c++) {
        const __m512 ab = _mm512_add_ps(_mm512_unpacklo_ps(acc[0][c], acc[1][c]), _mm512_unpackhi_ps(acc[0][c], acc[1][c]));
        const __m512 cd = _mm512_add_ps(_mm512_unpacklo_ps(acc[2][c], acc[3][c]), _mm512_unpackhi_ps(acc[2][c], acc[3][c]));
        /* per 128-bit lane: [a0+a2 b0+b2 a1+a3 b1+b3], likewise c, d */
        const __m512 v = _mm512_add_ps(_mm512_shuffle_ps(ab, cd, _MM_SHUFFLE(1, 0, 1, 0)),
                                       _mm512_shuffle_ps(ab, cd, _MM_SHUFFLE(3, 2, 3, 2)));
        const __m256 h = _mm256_add_ps(_mm512_castps512_ps256(v), _mm512_extractf32x8_ps(v, 1));
        const __m128 q = _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
        _mm_mask_storeu_ps(y + (c0 + c) * ldy, keep, q);
    }
}

#define TILE_FN(name, nc, exact)                                                                           \
    static void name(const wpanel *p, int r, int nr, const npl_gemm_x *xp, int64_t c0, float *y, int64_t ldy) { \
        tile(nc, exact, p, r, nr, xp, c0, y, ldy);                                                            \
    }
TILE_FN(tile1, 1, 0)
TILE_FN(tile2, 2, 0)
TILE_FN(tile3, 3, 0)
TILE_FN(tile4, 4, 0)
TILE_FN(tile1x, 1, 1)
TILE_FN(tile2x, 2, 1)
TILE_FN(tile3x, 3, 1)
TILE_FN(tile4x, 4, 1)
typedef void (*tile_fn)(const wpanel *, int, int, const npl_gemm_x *, int64_t, float *, int64_t);
static const tile_fn tiles[2][4] = {{tile1, tile2, tile3, tile4}, {tile1x, tile2x, tile3x, tile4x}};

static void rows_with(decode_fn dec, int exact, const void *w, size_t w_row, int64_t r0, int64_t r1,
                      const npl_gemm_x *xp, float *y, int64_t ldy) {
    const int64_t kp = xp->kp, ng = xp->ng;
    const size_t bytes = (size_t)BATCH * (size_t)(kp + kp / 16 * 4 + ng * 4) + 64;
    uint8_t raw[bytes];
    wpanel p = {kp, ng, (uint8_t *)(((uintptr_t)raw + 63) & ~(uintptr_t)63), NULL, NULL};
    p.d = (float *)(p.u + BATCH * kp);
    p.m = p.d + BATCH * (kp / 16);
    for (int64_t rb = r0; rb < r1; rb += BATCH) {
        const int nrow = r1 - rb < BATCH ? (int)(r1 - rb) : BATCH;
        const int npad = (nrow + TR - 1) / TR * TR;
        for (int j = 0; j < nrow; j++) dec((const uint8_t *)w + (rb + j) * (int64_t)w_row, xp->k, &p, j);
        for (int j = nrow; j < npad; j++) decode_tail(&p, j, 0);
        for (int64_t c0 = 0; c0 < xp->m; c0 += TC) {
            const int64_t nc = xp->m - c0 < TC ? xp->m - c0 : TC;
            for (int r = 0; r < nrow; r += TR) {
                const int nr = nrow - r < TR ? nrow - r : TR;
                tiles[exact][nc - 1](&p, r, nr, xp, c0, y + rb + r, ldy);
            }
        }
    }
}

#define ROWS_FN(name, dec, exact)                                                                           \
    static void name(const void *w, size_t w_row, int64_t r0, int64_t r1, const npl_gemm_x *xp, float *y, \
                     int64_t ldy) {                                                                         \
        rows_with(dec, exact, w, w_row, r0, r1, xp, y, ldy);                                                \
    }
ROWS_FN(rows_q4_0, decode_q4_0, 0)
ROWS_FN(rows_q5_0, decode_q5_0, 0)
ROWS_FN(rows_q8_0, decode_q8_0, 1)
ROWS_FN(rows_q4_K, decode_q4_K, 0)
ROWS_FN(rows_q6_K, decode_q6_K, 0)

static const npl_gemm_kernels k_q4_0 = {pack_q8_0, rows_q4_0}, k_q5_0 = {pack_q8_0, rows_q5_0},
                              k_q8_0 = {pack_q8_0, rows_q8_0}, k_q4_K = {pack_q8_K, rows_q4_K},
                              k_q6_K = {pack_q8_K, rows_q6_K};

const npl_gemm_kernels *npl_gemm_get(npl_isa want, npl_type t) {
    const npl_isa best = npl_cpu_best_isa();
    if ((int)want < (int)NPL_ISA_AVX512 || (int)best < (int)NPL_ISA_AVX512)
        return (int)want >= (int)NPL_ISA_AVX2 && (int)best >= (int)NPL_ISA_AVX2 ? npl_gemm_get_avx2(t) : NULL;
    if ((int)want >= (int)NPL_ISA_AMX && (int)best >= (int)NPL_ISA_AMX) {
        const npl_gemm_kernels *a = npl_gemm_get_amx(t);
        if (a) return a;
    } else if (npl_avx512_takes_avx2(t)) {
        const npl_gemm_kernels *v = npl_gemm_get_avx512_k(t, 0);
        if (!v) v = npl_gemm_get_avx512_b32(t);
        return v ? v : npl_gemm_get_avx2(t);
    }
    switch (t) {
    case NPL_TYPE_Q4_0: return &k_q4_0;
    case NPL_TYPE_Q5_0: return &k_q5_0;
    case NPL_TYPE_Q8_0: return &k_q8_0;
    case NPL_TYPE_Q4_K: return &k_q4_K;
    case NPL_TYPE_Q6_K: return &k_q6_K;
    case NPL_TYPE_Q4_1: return npl_gemm_get_avx512_b32(t); /* its q4_1 vec_dot is AVX2's: that order, plain C's bits */
    default: return NULL;
    }
}

#else
const npl_gemm_kernels *npl_gemm_get(npl_isa want, npl_type t) {
    (void)want, (void)t;
    return NULL;
}
#endif
