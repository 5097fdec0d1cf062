/* q6_K's 6-bit quants, 128 at a time (one half of a super-block), as
 * unsigned bytes in element order: shared by the AVX2 GEMM's panel decoder
 * and the AVX-512 / AMX decoders (compiled with a superset of these flags). */
#ifndef NPL_Q6K_UNPACK_H
#define NPL_Q6K_UNPACK_H
#include <immintrin.h>
#include <stdint.h>

/* q[s] = elements 32s .. 32s + 31 of the half whose low bits are ql[64]
 * and high bits qh[32] */
static inline void q6k_unpack128(const uint8_t *ql, const uint8_t *qh, __m256i q[4]) {
    const __m256i lo4 = _mm256_set1_epi8(0x0F), lo2 = _mm256_set1_epi8(0x03);
    const __m256i la = _mm256_loadu_si256((const __m256i *)ql);
    const __m256i lb = _mm256_loadu_si256((const __m256i *)(ql + 32));
    const __m256i hh = _mm256_loadu_si256((const __m256i *)qh);
    __m256i hb[4];
    for (int s = 0; s < 4; s++) hb[s] = _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hh, 2 * s), lo2), 4);
    q[0] = _mm256_or_si256(_mm256_and_si256(la, lo4), hb[0]);
    q[1] = _mm256_or_si256(_mm256_and_si256(lb, lo4), hb[1]);
    q[2] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(la, 4), lo4), hb[2]);
    q[3] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(lb, 4), lo4), hb[3]);
}

#endif
