/* Unpacking a block of packed q5_0 and q6_K (kernels/wpack.h's panels),
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

/* Packed q6_K (Q6_K x 8): group pg's 8 vectors of u = w + 32 (0..63),
 * u[g] = elements 4g..4g+3 of the 8 rows: low nibbles as q5_0's, the 2
 * high bits of vector g at bits 2(g mod 4) of the group's vector a (g < 4)
 * or b, moved to bits 4-5. */
static inline __attribute__((always_inline)) void q6_K_packed_unpack(const uint8_t *lo, const uint8_t *hi, __m256i u[8]) {
    const __m256i lo4 = _mm256_set1_epi8(0x0F), b45 = _mm256_set1_epi8(0x30);
    const __m256i ha = _mm256_loadu_si256((const __m256i *)hi), hb = _mm256_loadu_si256((const __m256i *)(hi + 32));
    for (int h = 0; h < 4; h++) {
        const __m256i n = _mm256_loadu_si256((const __m256i *)(lo + 32 * h));
        u[h] = _mm256_and_si256(n, lo4);
        u[h + 4] = _mm256_and_si256(_mm256_srli_epi16(n, 4), lo4);
    }
    /* bits 2g, 2g + 1 to 4, 5: within a byte, as q5_0's (no carry into bits 4-5 of the other byte) */
    u[0] = _mm256_or_si256(u[0], _mm256_and_si256(_mm256_slli_epi16(ha, 4), b45));
    u[1] = _mm256_or_si256(u[1], _mm256_and_si256(_mm256_slli_epi16(ha, 2), b45));
    u[2] = _mm256_or_si256(u[2], _mm256_and_si256(ha, b45));
    u[3] = _mm256_or_si256(u[3], _mm256_and_si256(_mm256_srli_epi16(ha, 2), b45));
    u[4] = _mm256_or_si256(u[4], _mm256_and_si256(_mm256_slli_epi16(hb, 4), b45));
    u[5] = _mm256_or_si256(u[5], _mm256_and_si256(_mm256_slli_epi16(hb, 2), b45));
    u[6] = _mm256_or_si256(u[6], _mm256_and_si256(hb, b45));
    u[7] = _mm256_or_si256(u[7], _mm256_and_si256(_mm256_srli_epi16(hb, 2), b45));
}

#endif
