/* AVX-512 GEMV for q4_K and q6_K in the AVX2 family's order (gemm.h): the
 * AVX2 GEMV's arithmetic (x86/avx2/gemv_avx2.c rows_q4_K_nr / rows_q6_K_nr,
 * the AVX2 vec_dot's), two rows per zmm.
 *
 * Rows a and b of a pair sit in the two halves of a zmm, each half what the
 * AVX2 kernel keeps for its row: 8 int32 lanes of scaled sums per
 * super-block (the same integers as AVX2's maddubs, madd and add, two
 * sub-blocks at a time: avx512_util.h's sum_pair), the same fma into 8 float lanes, q4_K's
 * mins in 4 lanes of a ymm half, the same horizontal sums at the end. So
 * the AVX2 vec_dot's bits, one unpacking instruction for two rows. Rows go
 * as NR streams, as the AVX2 GEMV takes them. */
#include "kernels/gemv.h"

#if defined(__x86_64__) || defined(__i386__)
#include <string.h>

#include "kernels/quant.h"
#include "kernels/quant_blocks.h"
#include "kernels/x86/avx2/avx2_util.h"
#include "kernels/x86/avx512/avx512_util.h"
#include "kernels/x86/avx512/gemv_hint.h"

#define INLINE static inline __attribute__((always_inline))

#ifndef PF_ROWS
/* each stream prefetches its row PF_ROWS / NR groups ahead (gemv_bench
 * token, AMD EPYC Zen 5: Gemma's q6_K 31 GB/s at 8, 34 at 32) */
#define PF_ROWS 32
#endif
enum { NR = 4 }; /* weight rows (streams) at once: two pairs */

INLINE __m512i dup256(const void *p) { return _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)p)); }
INLINE __m512i ctl512(const uint8_t c[32]) { return dup256(c); }
INLINE __m512 pair_ps(float a, float b) { return _mm512_insertf32x8(_mm512_set1_ps(a), _mm256_set1_ps(b), 1); }

/* shuffle_epi8 controls for sum_pair's scales. q4_K (scales 0-7 as words
 * of each 128 bits): sub-blocks 2q, 2q + 1, in every lane. q6_K (a half's
 * 16-element group scales 0-7, each 128 bits): 32-element sub-blocks 2k,
 * 2k + 1, whose lanes 0-3 (low 128 bits) take groups 4k, 4k + 2 and lanes
 * 4-7 groups 4k + 1, 4k + 3. */
#define W4(a, b) 2 * (a), 2 * (a) + 1, 2 * (b), 2 * (b) + 1
#define L16(a, b) W4(a, b), W4(a, b), W4(a, b), W4(a, b)
static const uint8_t k4_pair_ctl[4][32] __attribute__((aligned(32))) = {
    {L16(0, 1), L16(0, 1)}, {L16(2, 3), L16(2, 3)}, {L16(4, 5), L16(4, 5)}, {L16(6, 7), L16(6, 7)}};
static const uint8_t k6_pair_ctl[2][32] __attribute__((aligned(32))) = {{L16(0, 2), L16(1, 3)}, {L16(4, 6), L16(5, 7)}};
#undef L16
#undef W4

/* the AVX2 family's horizontal sums (avx2_hsum_f32; its mins' 4 lanes) */
INLINE float hsum8(const float *v) {
    const float a0 = v[4] + v[0], a1 = v[5] + v[1], a2 = v[6] + v[2], a3 = v[7] + v[3];
    return (a0 + a2) + (a1 + a3);
}
INLINE float hsum4(const float *v) { return (v[0] + v[2]) + (v[1] + v[3]); }

INLINE void prefetch_blk(const void *b, size_t pf, size_t bytes) {
    if (!pf) return;
    for (size_t o = 0; o < bytes; o += 64) _mm_prefetch((const char *)b + pf + o, NPL_GEMV_WEIGHT_HINT);
}

/* rows xa, xb against the q8_K row g: out[0], out[1] */
INLINE void pair_q4_K(const uint8_t *xa, const uint8_t *xb, const npl_gemv_x *g, float out[2], size_t pf) {
    const block_q8_K *y = (const block_q8_K *)g->qs;
    const __m512i m4 = _mm512_set1_epi8(0xF);
    __m512 acc = _mm512_setzero_ps();
    __m256 accm = _mm256_setzero_ps();
    for (int64_t i = 0; i < g->k / QK_K; i++) {
        const block_q4_K *A = (const block_q4_K *)xa + i, *B = (const block_q4_K *)xb + i;
        prefetch_blk(A, pf, 192);
        prefetch_blk(B, pf, 192);
        const __m256i bs = _mm256_loadu_si256((const __m256i *)y[i].bsums);
        const __m128i bs2 = _mm_hadd_epi16(_mm256_castsi256_si128(bs), _mm256_extracti128_si256(bs, 1));
        const __m256i msa = _mm256_cvtepu8_epi16(unpack_k4_scales(A->scales)), msb = _mm256_cvtepu8_epi16(unpack_k4_scales(B->scales));
        const __m256i mins = _mm256_inserti128_si256(_mm256_castsi128_si256(_mm256_extracti128_si256(msa, 1)), _mm256_extracti128_si256(msb, 1), 1);
        const __m256i pm = _mm256_madd_epi16(mins, _mm256_broadcastsi128_si256(bs2));
        const __m256 dmin = _mm256_insertf128_ps(_mm256_castps128_ps256(_mm_set1_ps(-y[i].d * h2f(A->dmin))),
                                                 _mm_set1_ps(-y[i].d * h2f(B->dmin)), 1);
        accm = _mm256_fmadd_ps(dmin, _mm256_cvtepi32_ps(pm), accm);
        const __m128i sa = _mm256_castsi256_si128(msa), sb = _mm256_castsi256_si128(msb);
        const __m512i sc = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_set_m128i(sa, sa)), _mm256_set_m128i(sb, sb), 1);
        __m512i sumi = _mm512_setzero_si512();
        for (int q = 0; q < 4; q++) { /* sub-blocks 2q, 2q + 1: the low and the high nibbles */
            const __m512i y0 = dup256(y[i].qs + 64 * q), y1 = dup256(y[i].qs + 64 * q + 32);
            const __m512i bits = load2x256(A->qs + 32 * q, B->qs + 32 * q);
            const __m512i ql = _mm512_and_si512(bits, m4), qh = _mm512_and_si512(_mm512_srli_epi16(bits, 4), m4);
            sum_pair(&sumi, ql, y0, qh, y1, _mm512_shuffle_epi8(sc, ctl512(k4_pair_ctl[q])));
        }
        acc = _mm512_fmadd_ps(pair_ps(y[i].d * h2f(A->d), y[i].d * h2f(B->d)), _mm512_cvtepi32_ps(sumi), acc);
    }
    _Alignas(64) float a[16], m[8];
    _mm512_store_ps(a, acc);
    _mm256_store_ps(m, accm);
    out[0] = hsum8(a) + hsum4(m);
    out[1] = hsum8(a + 8) + hsum4(m + 4);
}

INLINE void pair_q6_K(const uint8_t *xa, const uint8_t *xb, const npl_gemv_x *g, float out[2], size_t pf) {
    const block_q8_K *y = (const block_q8_K *)g->qs;
    const __m512i m4 = _mm512_set1_epi8(0xF);
    __m512 acc = _mm512_setzero_ps();
    for (int64_t i = 0; i < g->k / QK_K; i++) {
        const block_q6_K *A = (const block_q6_K *)xa + i, *B = (const block_q6_K *)xb + i;
        prefetch_blk(A, pf, sizeof *A);
        prefetch_blk(B, pf, sizeof *B);
        const __m512i sc = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)A->scales))),
                                              _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)B->scales)), 1);
        /* weights enter as q + 32 in [0, 63]; take 32 * sum(scale * q8) back out */
        __m512i sumi = _mm512_sub_epi32(_mm512_setzero_si512(), _mm512_slli_epi32(_mm512_madd_epi16(sc, dup256(y[i].bsums)), 5));
        for (int h = 0; h < 2; h++) {
            const int8_t *q8 = y[i].qs + 128 * h;
            const __m512i sch = h ? _mm512_shuffle_i64x2(sc, sc, _MM_SHUFFLE(3, 3, 1, 1)) : _mm512_shuffle_i64x2(sc, sc, _MM_SHUFFLE(2, 2, 0, 0));
            const __m512i l0 = load2x256(A->ql + 64 * h, B->ql + 64 * h), l1 = load2x256(A->ql + 64 * h + 32, B->ql + 64 * h + 32);
            const __m512i hb = load2x256(A->qh + 32 * h, B->qh + 32 * h);
            const __m512i q0 = _mm512_or_si512(_mm512_and_si512(l0, m4), _mm512_slli_epi16(_mm512_and_si512(hb, _mm512_set1_epi8(0x03)), 4));
            const __m512i q1 = _mm512_or_si512(_mm512_and_si512(l1, m4), _mm512_slli_epi16(_mm512_and_si512(hb, _mm512_set1_epi8(0x0C)), 2));
            const __m512i q2 = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(l0, 4), m4), _mm512_and_si512(hb, _mm512_set1_epi8(0x30)));
            const __m512i q3 = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(l1, 4), m4),
                                               _mm512_srli_epi16(_mm512_and_si512(hb, _mm512_set1_epi8((char)0xC0)), 2));
            sum_pair(&sumi, q0, dup256(q8), q1, dup256(q8 + 32), _mm512_shuffle_epi8(sch, ctl512(k6_pair_ctl[0])));
            sum_pair(&sumi, q2, dup256(q8 + 64), q3, dup256(q8 + 96), _mm512_shuffle_epi8(sch, ctl512(k6_pair_ctl[1])));
        }
        acc = _mm512_fmadd_ps(pair_ps(y[i].d * h2f(A->d), y[i].d * h2f(B->d)), _mm512_cvtepi32_ps(sumi), acc);
    }
    _Alignas(64) float a[16];
    _mm512_store_ps(a, acc);
    out[0] = hsum8(a);
    out[1] = hsum8(a + 8);
}

/* rows x[0..nr) against one activation row (an odd last row pairs with itself) */
INLINE void rows_nr(const int K6, const int nr, const uint8_t *const *x, const npl_gemv_x *g, float *out, size_t pf) {
    for (int j = 0; j < nr; j += 2) {
        float o[2];
        const uint8_t *xb = j + 1 < nr ? x[j + 1] : x[j];
        if (K6) pair_q6_K(x[j], xb, g, o, pf);
        else pair_q4_K(x[j], xb, g, o, pf);
        out[j] = o[0];
        if (j + 1 < nr) out[j + 1] = o[1];
    }
}

/* Rows [r0, r1) as NR streams, as the AVX2 GEMV takes them */
#include "kernels/x86/avx2/gemv_rows.h"

NPL_GEMV_ROWS_FN(q4_K, 0)
NPL_GEMV_ROWS_FN(q6_K, 1)

static void prep_q4_K(npl_gemv_x *gx, void *mem, const void *xq, int64_t k) { npl_gemv_get_avx2(NPL_TYPE_Q4_K)->prep(gx, mem, xq, k); }
static void prep_q6_K(npl_gemv_x *gx, void *mem, const void *xq, int64_t k) { npl_gemv_get_avx2(NPL_TYPE_Q6_K)->prep(gx, mem, xq, k); }

static const npl_gemv_kernels k_q4_K = {prep_q4_K, rows_q4_K}, k_q6_K = {prep_q6_K, rows_q6_K};

const npl_gemv_kernels *npl_gemv_get_avx512_k(npl_type t) {
    return t == NPL_TYPE_Q4_K ? &k_q4_K : t == NPL_TYPE_Q6_K ? &k_q6_K : NULL;
}

#else
const npl_gemv_kernels *npl_gemv_get_avx512_k(npl_type t) {
    (void)t;
    return NULL;
}
#endif
