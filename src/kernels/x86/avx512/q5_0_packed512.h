/* Packed q5_0 (kernels/wpack.h's Q5_0 x 8) for AVX-512: two panels'
 * block as 8 zmm of u = w + 16, and dpbusd against 4 activation bytes
 * broadcast from memory; shared by the packed GEMM (gemm_avx512_q5_0.c)
 * and GEMV (gemv_avx512_packed.c). The ymm form is x86/avx2/q5_0_packed.h. */
#ifndef NPL_Q5_0_PACKED512_H
#define NPL_Q5_0_PACKED512_H
#include <immintrin.h>
#include <stdint.h>

#include "kernels/x86/avx512/avx512_util.h"

/* the 16 rows' u for one block of panels p0 and p1 */
static inline __attribute__((always_inline)) void unpack16(const uint8_t *p0, const uint8_t *p1, __m512i v[8]) {
    const __m512i lo4 = _mm512_set1_epi8(0x0F), b4 = _mm512_set1_epi8(0x10);
    const __m512i hb = load2x256(p0 + 16, p1 + 16);
    for (int h = 0; h < 4; h++) {
        const __m512i n = load2x256(p0 + 48 + 32 * h, p1 + 48 + 32 * h);
        v[h] = _mm512_and_si512(n, lo4);
        v[h + 4] = _mm512_and_si512(_mm512_srli_epi16(n, 4), lo4);
    }
    /* bit g of the high-bit vector to bit 4 of vector g (no carry across bytes: q5_0_packed.h) */
    v[0] = _mm512_or_si512(v[0], _mm512_and_si512(_mm512_slli_epi16(hb, 4), b4));
    v[1] = _mm512_or_si512(v[1], _mm512_and_si512(_mm512_slli_epi16(hb, 3), b4));
    v[2] = _mm512_or_si512(v[2], _mm512_and_si512(_mm512_slli_epi16(hb, 2), b4));
    v[3] = _mm512_or_si512(v[3], _mm512_and_si512(_mm512_slli_epi16(hb, 1), b4));
    v[4] = _mm512_or_si512(v[4], _mm512_and_si512(hb, b4));
    v[5] = _mm512_or_si512(v[5], _mm512_and_si512(_mm512_srli_epi16(hb, 1), b4));
    v[6] = _mm512_or_si512(v[6], _mm512_and_si512(_mm512_srli_epi16(hb, 2), b4));
    v[7] = _mm512_or_si512(v[7], _mm512_and_si512(_mm512_srli_epi16(hb, 3), b4));
}

/* the 16 rows' block scales d */
static inline __m512 scales16(const uint8_t *p0, const uint8_t *p1) {
    __m256i h16 = _mm256_castsi128_si256(_mm_loadu_si128((const __m128i *)p0));
    h16 = _mm256_inserti128_si256(h16, _mm_loadu_si128((const __m128i *)p1), 1);
    return _mm512_cvtph_ps(h16);
}

/* *s += u . x per lane, x the 4 bytes at p broadcast from memory */
static inline __attribute__((always_inline)) void dpbusd_bcast(__m512i *s, __m512i u, const int8_t *p) {
    __asm__("vpdpbusd %2%{1to16%}, %1, %0" : "+v"(*s) : "v"(u), "m"(*(const int32_t *)(const void *)p));
}

#endif
