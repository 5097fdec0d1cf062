/* Unpacking a block of packed q5_0 (kernels/wpack.h's Q5_0 x 8 panels),
 * shared by the AVX2 packed GEMV (gemv_avx2_packed.c) and GEMM
 * (gemm_avx2.c). */
#ifndef NPL_Q5_0_PACKED_H
#define NPL_Q5_0_PACKED_H
#include <immintrin.h>
#include <stdint.h>

/* The 8 vectors of block pb: u[g] = elements 4g..4g+3 of the 8 rows */
static inline __attribute__((always_inline)) void q5_0_packed_unpack(const uint8_t *pb, __m256i u[8]) {
    const __m256i lo4 = _mm256_set1_epi8(0x0F), b4 = _mm256_set1_epi8(0x10);
    const __m256i hb = _mm256_loadu_si256((const __m256i *)(pb + 16));
    for (int h = 0; h < 4; h++) {
        const __m256i n = _mm256_loadu_si256((const __m256i *)(pb + 48 + 32 * h));
        u[h] = _mm256_and_si256(n, lo4);
        u[h + 4] = _mm256_and_si256(_mm256_srli_epi16(n, 4), lo4);
    }
    /* bit g to bit 4: shifts within 16-bit lanes carry nothing into bit 4
     * of the other byte (g + 4 - g = 4 never crosses a byte) */
    u[0] = _mm256_or_si256(u[0], _mm256_and_si256(_mm256_slli_epi16(hb, 4), b4));
    u[1] = _mm256_or_si256(u[1], _mm256_and_si256(_mm256_slli_epi16(hb, 3), b4));
    u[2] = _mm256_or_si256(u[2], _mm256_and_si256(_mm256_slli_epi16(hb, 2), b4));
    u[3] = _mm256_or_si256(u[3], _mm256_and_si256(_mm256_slli_epi16(hb, 1), b4));
    u[4] = _mm256_or_si256(u[4], _mm256_and_si256(hb, b4));
    u[5] = _mm256_or_si256(u[5], _mm256_and_si256(_mm256_srli_epi16(hb, 1), b4));
    u[6] = _mm256_or_si256(u[6], _mm256_and_si256(_mm256_srli_epi16(hb, 2), b4));
    u[7] = _mm256_or_si256(u[7], _mm256_and_si256(_mm256_srli_epi16(hb, 3), b4));
}

#endif
