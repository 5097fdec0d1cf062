/* AVX2 GEMV for q4_1 weights against q8_1 activations (decode, 1-15
 * activation rows; kernels/gemv.h's interface), for x86 without a q4_1 GEMV
 * of its own (the AVX-512 and AMX families take it too, as they take the
 * AVX2 q4_1 GEMM and vec_dot).
 *
 * Per (weight row, activation row) the float operations are those of
 * dot_q4_1_q8_1 (vec_dot_avx2.c) and of the plain C kernel, in their order,
 * so a row gets vec_dot's bits and hence the q4_1 GEMM's (gemm_avx2_q4_1.c).
 * What it adds, as
 * gemv_avx2.c does for the other types: 4 weight rows at once share the
 * activation block's load and its converted scales (prepared once per
 * matmul), and each row prefetches the row PF_ROWS rows ahead.
 *
 * Prepared row: qs points at the q8_1 row itself; d holds each block's d as
 * f32, xs its s (d * sum(qs), rounded to f16 by the quantizer). */
#include "kernels/gemv.h"
#include "kernels/wpack.h"

#if defined(__x86_64__) || defined(__i386__)
#include "kernels/quant_blocks.h"
#include "kernels/x86/avx2/avx2_util.h"

#define INLINE static inline __attribute__((always_inline))

enum {
    NR = 4,      /* weight rows at once */
    PF_ROWS = 8, /* prefetch distance in rows: two groups ahead */
};

static void prep_q8_1(npl_gemv_x *gx, void *mem, const void *xq, int64_t k) {
    const block_q8_1 *y = xq;
    float *d = (float *)(((uintptr_t)mem + 63) & ~(uintptr_t)63), *s = d + k / QK8_1;
    for (int64_t i = 0; i < k / QK8_1; i++) d[i] = h2f(y[i].d), s[i] = h2f(y[i].s);
    gx->k = gx->kp = k;
    gx->qs = (const int8_t *)xq;
    gx->d = d;
    gx->xs = s;
    gx->cz = NULL;
}

/* NR rows against activation row g: per block the 4 rows' exact int32
 * totals (an hadd tree), then plain C's step acc + ((dw * dx) * total +
 * m * s), 4 rows in the lanes of acc. The rows' d and m of a block are one
 * f16 conversion, [d0 m0 d1 m1 ...], split into [d0..d3] and [m0..m3]. */
static void rows4(const block_q4_1 *const *x, const npl_gemv_x *g, float *out, size_t pf) {
    const block_q8_1 *y = (const block_q8_1 *)g->qs;
    __m128 acc = _mm_setzero_ps();
    for (int64_t b = 0; b < g->k / QK8_1; b++) {
        const __m256i yv = _mm256_loadu_si256((const __m256i *)y[b].qs);
        uint32_t dm[NR];
        __m256i l[NR];
        for (int j = 0; j < NR; j++) {
            /* a block is 20 bytes: one prefetch per 60 bytes of the row */
            if (pf && b % 3 == 0) _mm_prefetch((const char *)(x[j] + b) + pf, _MM_HINT_T0);
            memcpy(&dm[j], &x[j][b], sizeof dm[j]); /* d, m */
            l[j] = avx2_dot_u8i8_i32(avx2_nibbles32(x[j][b].qs), yv);
        }
        const __m256i h = _mm256_hadd_epi32(_mm256_hadd_epi32(l[0], l[1]), _mm256_hadd_epi32(l[2], l[3]));
        const __m128 t = _mm_cvtepi32_ps(_mm_add_epi32(_mm256_castsi256_si128(h), _mm256_extracti128_si256(h, 1)));
        const __m256 f = _mm256_cvtph_ps(_mm_setr_epi32((int)dm[0], (int)dm[1], (int)dm[2], (int)dm[3]));
        const __m128 f0 = _mm256_castps256_ps128(f), f1 = _mm256_extractf128_ps(f, 1);
        const __m128 dw = _mm_shuffle_ps(f0, f1, 0x88), mw = _mm_shuffle_ps(f0, f1, 0xDD);
        const __m128 pd = avx2_opaque_ps128(_mm_mul_ps(_mm_mul_ps(dw, _mm_set1_ps(g->d[b])), t));
        const __m128 pm = avx2_opaque_ps128(_mm_mul_ps(mw, _mm_set1_ps(g->xs[b])));
        acc = _mm_add_ps(acc, _mm_add_ps(pd, pm));
    }
    _mm_storeu_ps(out, acc);
}

/* Rows [r0, r1) in groups of NR; the first activation row prefetches (the
 * later ones find the group in cache). Prefetches past the matrix do not
 * fault. */
static void rows_q4_1(const void *w, size_t w_row, int64_t r0, int64_t r1, const npl_gemv_x *gx, int m, float *y,
                      int64_t ldy) {
    const size_t pf = (size_t)PF_ROWS * w_row;
    for (int64_t r = r0; r < r1; r += NR) {
        const int nr = r1 - r < NR ? (int)(r1 - r) : NR;
        /* past r1, the group's last row again (computed, not stored) */
        const block_q4_1 *x[NR];
        for (int j = 0; j < NR; j++) x[j] = (const block_q4_1 *)((const uint8_t *)w + (size_t)(r + (j < nr ? j : nr - 1)) * w_row);
        for (int c = 0; c < m; c++) {
            float out[NR];
            rows4(x, &gx[c], out, c ? 0 : pf);
            memcpy(y + (int64_t)c * ldy + r, out, sizeof(float) * (size_t)nr);
        }
    }
}

/* ---- packed q4_1 (kernels/wpack.h's Q4_1 x 8): a panel's block as 8
 * vectors u (vector g: elements 4g..4g+3, row j in int32 lane j) against
 * each activation's 4 bytes broadcast, maddubs summed in int16 over the
 * block (16 products of at most 15 x 128 a lane), one madd the 8 rows'
 * totals; then the same float step as above, 8 rows in the lanes: the
 * GEMM's (gemm_avx2_q4_1.c) and plain C's bits with no horizontal sums. ---- */

#ifndef PACKED_PF
#define PACKED_PF 4096 /* bytes ahead of the block being read */
#endif

INLINE void panel_q4_1(const uint8_t *pp, int64_t nb, const npl_gemv_x *gx, int m, float *y, int64_t ldy) {
    const __m256i m4 = _mm256_set1_epi8(0x0F), ones = _mm256_set1_epi16(1);
    __m256 acc[16];
    for (int c = 0; c < m; c++) acc[c] = _mm256_setzero_ps();
    for (int64_t b = 0; b < nb; b++, pp += NPL_WPACK_Q4_1_BLOCK) {
        for (int o = 0; o < NPL_WPACK_Q4_1_BLOCK; o += 64) _mm_prefetch((const char *)pp + PACKED_PF + o, _MM_HINT_T0);
        __m256i u[8];
        for (int h = 0; h < 4; h++) {
            const __m256i n = _mm256_loadu_si256((const __m256i *)(pp + 32 + 32 * h));
            u[h] = _mm256_and_si256(n, m4);
            u[h + 4] = _mm256_and_si256(_mm256_srli_epi16(n, 4), m4);
        }
        const __m256 dw = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)pp));
        const __m256 mw = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(pp + 16)));
        for (int c = 0; c < m; c++) {
            const int8_t *xq = ((const block_q8_1 *)gx[c].qs)[b].qs;
            __m256i s = _mm256_setzero_si256();
            for (int g = 0; g < 8; g++) {
                int32_t x4;
                memcpy(&x4, xq + 4 * g, sizeof x4);
                s = _mm256_add_epi16(s, _mm256_maddubs_epi16(u[g], _mm256_set1_epi32(x4)));
            }
            const __m256 t = _mm256_cvtepi32_ps(_mm256_madd_epi16(s, ones));
            const __m256 pd = avx2_opaque_ps(_mm256_mul_ps(_mm256_mul_ps(dw, _mm256_set1_ps(gx[c].d[b])), t));
            const __m256 pm = avx2_opaque_ps(_mm256_mul_ps(mw, _mm256_set1_ps(gx[c].xs[b])));
            acc[c] = _mm256_add_ps(acc[c], _mm256_add_ps(pd, pm));
        }
    }
    for (int c = 0; c < m; c++) _mm256_storeu_ps(y + (int64_t)c * ldy, acc[c]);
}

static void rows_q4_1_packed(const void *w, size_t w_row, int64_t r0, int64_t r1, const npl_gemv_x *gx, int m, float *y,
                             int64_t ldy) {
    const int64_t nb = gx[0].k / QK4_1;
    for (int64_t r = r0; r < r1; r += NPL_WPACK_ROWS) {
        const uint8_t *pp = (const uint8_t *)w + (size_t)r * w_row;
        if (m == 1) panel_q4_1(pp, nb, gx, 1, y + r, ldy);
        else panel_q4_1(pp, nb, gx, m, y + r, ldy);
    }
}

static const npl_gemv_kernels gemv_q4_1 = {prep_q8_1, rows_q4_1}, gemv_q4_1_packed = {prep_q8_1, rows_q4_1_packed};

const npl_gemv_kernels *npl_gemv_get_avx2_q4_1(void) { return &gemv_q4_1; }
const npl_gemv_kernels *npl_gemv_get_avx2_q4_1_packed(void) { return &gemv_q4_1_packed; }

#else
const npl_gemv_kernels *npl_gemv_get_avx2_q4_1(void) { return NULL; }
const npl_gemv_kernels *npl_gemv_get_avx2_q4_1_packed(void) { return NULL; }
#endif
