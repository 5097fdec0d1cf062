/* AVX-512 dot products of q4_K, q5_K and q6_K with q8_K. Each register
 * holds 64 weights of two sub-blocks; maddubs makes int16 pair sums and
 * VNNI's dpwssd multiplies them by the sub-block scales while accumulating.
 * Mins and q6_K's -32 offset are settled per super-block from q8_K bsums. */
#include <immintrin.h>

#include "core/quant.h"
#include "core/quant_blocks.h"
#include "cpu/kernels/x86/avx512/avx512_util.h"

/* vpermw indices giving [s[a] x 16 | s[b] x 16] */
#define W16(a) a, a, a, a, a, a, a, a, a, a, a, a, a, a, a, a
static const uint16_t perm_pair16[4][32] __attribute__((aligned(64))) = {
    {W16(0), W16(2)}, {W16(1), W16(3)}, {W16(4), W16(6)}, {W16(5), W16(7)}};
#undef W16
/* vpermw indices giving [s[a] x 8 | s[a+1] x 8 | s[a+2] x 8 | s[a+3] x 8] */
#define W8(a) a, a, a, a, a, a, a, a
static const uint16_t perm_quad8[4][32] __attribute__((aligned(64))) = {
    {W8(0), W8(1), W8(2), W8(3)}, {W8(4), W8(5), W8(6), W8(7)},
    {W8(8), W8(9), W8(10), W8(11)}, {W8(12), W8(13), W8(14), W8(15)}};
#undef W8

static inline __m512i perm16(const uint16_t *idx, __m512i v) {
    return _mm512_permutexvar_epi16(_mm512_load_si512(idx), v);
}

/* sum over groups of 2 of u8*i8, times int16 scale, accumulated into int32 */
static inline __m512i scaled_dot(__m512i acc, __m512i q, __m512i y, __m512i scale) {
    return _mm512_dpwssd_epi32(acc, _mm512_maddubs_epi16(q, y), scale);
}

/* q4_K (five = 0) and q5_K (five = 1) */
static inline void dot_k4(int n, float *s, const void *vx, const void *vy, int five) {
    const block_q8_K *y = vy;
    const __m512i m4 = _mm512_set1_epi8(0xF);
    const __m512i sixteen = _mm512_set1_epi8(16);
    /* fifth-bit selectors per pair of 64-groups: (lo, hi) for groups 0-1, 2-3 */
    const __m512i hsel[2][2] = {
        {_mm512_inserti64x4(_mm512_set1_epi8(0x01), _mm256_set1_epi8(0x04), 1),
         _mm512_inserti64x4(_mm512_set1_epi8(0x02), _mm256_set1_epi8(0x08), 1)},
        {_mm512_inserti64x4(_mm512_set1_epi8(0x10), _mm256_set1_epi8(0x40), 1),
         _mm512_inserti64x4(_mm512_set1_epi8(0x20), _mm256_set1_epi8((char)0x80), 1)}};
    __m512 acc = _mm512_setzero_ps();
    __m128 accm = _mm_setzero_ps();
    const size_t bsz = five ? sizeof(block_q5_K) : sizeof(block_q4_K);
    for (int i = 0; i < n / QK_K; i++) {
        const uint8_t *blk = (const uint8_t *)vx + (size_t)i * bsz;
        const block_q4_K *hdr = (const block_q4_K *)blk; /* d, dmin, scales lead both */
        const uint8_t *qs = five ? ((const block_q5_K *)blk)->qs : hdr->qs;
        const float d = y[i].d * h2f(hdr->d), dmin = -y[i].d * h2f(hdr->dmin);
        uint8_t sm[16];
        npl_unpack_k4_scales(hdr->scales, sm);
        const __m256i ms = _mm256_cvtepu8_epi16(_mm_loadu_si128((const __m128i *)sm));
        const __m256i bs = _mm256_loadu_si256((const __m256i *)y[i].bsums);
        const __m128i bs2 = _mm_hadd_epi16(_mm256_castsi256_si128(bs), _mm256_extracti128_si256(bs, 1));
        const __m128i pm = _mm_madd_epi16(_mm256_extracti128_si256(ms, 1), bs2);
        accm = _mm_fmadd_ps(_mm_set1_ps(dmin), _mm_cvtepi32_ps(pm), accm);

        const __m512i sc = _mm512_castsi256_si512(ms);
        const __m512i hz = five ? _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)((const block_q5_K *)blk)->qh))
                                : _mm512_setzero_si512();
        const int8_t *q8 = y[i].qs;
        __m512i sumi = _mm512_setzero_si512();
        _Pragma("GCC unroll 2") for (int jj = 0; jj < 2; jj++, qs += 64, q8 += 128) {
            /* groups a = 2jj, b = 2jj+1: low nibbles are elements 0-31 of
             * each group, high nibbles 32-63 */
            const __m512i bits = load512(qs);
            __m512i lo = _mm512_and_si512(bits, m4);
            __m512i hi = _mm512_and_si512(_mm512_srli_epi16(bits, 4), m4);
            if (five) {
                lo = _mm512_mask_add_epi8(lo, _mm512_test_epi8_mask(hz, hsel[jj][0]), lo, sixteen);
                hi = _mm512_mask_add_epi8(hi, _mm512_test_epi8_mask(hz, hsel[jj][1]), hi, sixteen);
            }
            sumi = scaled_dot(sumi, lo, load2x256(q8, q8 + 64), perm16(perm_pair16[2 * jj], sc));
            sumi = scaled_dot(sumi, hi, load2x256(q8 + 32, q8 + 96), perm16(perm_pair16[2 * jj + 1], sc));
        }
        acc = _mm512_fmadd_ps(_mm512_set1_ps(d), _mm512_cvtepi32_ps(sumi), acc);
    }
    accm = _mm_add_ps(accm, _mm_movehl_ps(accm, accm));
    accm = _mm_add_ss(accm, _mm_movehdup_ps(accm));
    *s = _mm512_reduce_add_ps(acc) + _mm_cvtss_f32(accm);
}

static void dot_q4_K_q8_K(int n, float *s, const void *vx, const void *vy) { dot_k4(n, s, vx, vy, 0); }
static void dot_q5_K_q8_K(int n, float *s, const void *vx, const void *vy) { dot_k4(n, s, vx, vy, 1); }

static void dot_q6_K_q8_K(int n, float *s, const void *vx, const void *vy) {
    const block_q6_K *x = vx;
    const block_q8_K *y = vy;
    const __m512i m4 = _mm512_set1_epi8(0xF);
    const __m512i m30 = _mm512_set1_epi8(0x30);
    __m512 acc = _mm512_setzero_ps();
    for (int i = 0; i < n / QK_K; i++) {
        const float d = y[i].d * h2f(x[i].d);
        const __m256i sc16 = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)x[i].scales));
        const __m512i sc = _mm512_castsi256_si512(sc16);
        /* quants enter as q + 32 in [0, 63]; 32 * sum(scale * bsum) comes off */
        const __m256i corr = _mm256_slli_epi32(
            _mm256_madd_epi16(sc16, _mm256_loadu_si256((const __m256i *)y[i].bsums)), 5);
        __m512i sumi = _mm512_sub_epi32(_mm512_setzero_si512(), _mm512_zextsi256_si512(corr));
        const uint8_t *ql = x[i].ql, *qh = x[i].qh;
        const int8_t *q8 = y[i].qs;
        _Pragma("GCC unroll 2") for (int h = 0; h < 2; h++, ql += 64, qh += 32, q8 += 128) {
            const __m512i bits = load512(ql); /* [ql 0-31 | ql 32-63] */
            const __m256i h8 = _mm256_loadu_si256((const __m256i *)qh);
            /* [qh | qh >> 2]: 2-bit fields for elements 0-31 | 32-63 at bits
             * 0-1, for 64-95 | 96-127 at bits 4-5 */
            const __m512i hz = _mm512_inserti64x4(_mm512_castsi256_si512(h8), _mm256_srli_epi16(h8, 2), 1);
            const __m512i q_lo = _mm512_or_si512(_mm512_and_si512(bits, m4),
                                                 _mm512_and_si512(_mm512_slli_epi16(hz, 4), m30));
            const __m512i q_hi = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(bits, 4), m4),
                                                 _mm512_and_si512(hz, m30));
            sumi = scaled_dot(sumi, q_lo, load512(q8), perm16(perm_quad8[2 * h], sc));
            sumi = scaled_dot(sumi, q_hi, load512(q8 + 64), perm16(perm_quad8[2 * h + 1], sc));
        }
        acc = _mm512_fmadd_ps(_mm512_set1_ps(d), _mm512_cvtepi32_ps(sumi), acc);
    }
    *s = _mm512_reduce_add_ps(acc);
}

void npl_kernels_fill_avx512_k(npl_kernels *k) {
    k->vec_dot[NPL_TYPE_Q4_K] = dot_q4_K_q8_K;
    k->vec_dot[NPL_TYPE_Q5_K] = dot_q5_K_q8_K;
    k->vec_dot[NPL_TYPE_Q6_K] = dot_q6_K_q8_K;
}
