/* Shared AVX2 helpers for the kernels under x86/avx2 (and reused by the
 * AVX-512 files, which are compiled with a superset of these flags). */
#ifndef NPL_AVX2_UTIL_H
#define NPL_AVX2_UTIL_H
#include <immintrin.h>
#include <stdint.h>
#include <string.h>

#include "core/dtype.h"
#include "cpu/kernels/vec_dot.h"

void npl_kernels_fill_avx2_k(npl_kernels *k);

static inline float h2f(uint16_t h) { return _cvtsh_ss(h); }

static inline float avx2_hsum_f32(__m256 x) {
    __m128 r = _mm_add_ps(_mm256_extractf128_ps(x, 1), _mm256_castps256_ps128(x));
    r = _mm_add_ps(r, _mm_movehl_ps(r, r));
    r = _mm_add_ss(r, _mm_movehdup_ps(r));
    return _mm_cvtss_f32(r);
}

/* 16 bytes of packed nibbles -> 32 bytes: low nibbles then high nibbles,
 * the element order of a 32-block. */
static inline __m256i avx2_nibbles32(const uint8_t *p) {
    __m128i t = _mm_loadu_si128((const __m128i *)p);
    __m256i b = _mm256_inserti128_si256(_mm256_castsi128_si256(t), _mm_srli_epi16(t, 4), 1);
    return _mm256_and_si256(b, _mm256_set1_epi8(0x0F));
}

/* 32 bits -> 32 bytes of 0xFF (bit set) or 0x00. */
static inline __m256i avx2_bits32(const uint8_t *p) {
    uint32_t v;
    memcpy(&v, p, sizeof v);
    const __m256i shuf = _mm256_set_epi64x(0x0303030303030303, 0x0202020202020202,
                                           0x0101010101010101, 0x0000000000000000);
    __m256i b = _mm256_shuffle_epi8(_mm256_set1_epi32((int)v), shuf);
    b = _mm256_or_si256(b, _mm256_set1_epi64x(0x7fbfdfeff7fbfdfe));
    return _mm256_cmpeq_epi8(b, _mm256_set1_epi64x(-1));
}

/* Sum of u8*i8 products in groups of 4, as 8 int32. maddubs saturates each
 * pair sum at int16: safe for u8 <= 128 against |i8| <= 127. */
static inline __m256i avx2_dot_u8i8_i32(__m256i u, __m256i s) {
    return _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), _mm256_set1_epi16(1));
}
static inline __m256 avx2_dot_u8i8_f32(__m256i u, __m256i s) {
    return _mm256_cvtepi32_ps(avx2_dot_u8i8_i32(u, s));
}
/* Signed x signed: move x's sign onto y so maddubs sees |x| unsigned. */
static inline __m256 avx2_dot_i8_f32(__m256i x, __m256i y) {
    return avx2_dot_u8i8_f32(_mm256_sign_epi8(x, x), _mm256_sign_epi8(y, x));
}

#endif
