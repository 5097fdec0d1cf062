/* Shared AVX-512 (F/BW/VL/DQ/VNNI) helpers for the kernels under x86/avx512. */
#ifndef NPL_AVX512_UTIL_H
#define NPL_AVX512_UTIL_H
#include <immintrin.h>
#include <stdint.h>

#include "cpu/kernels/x86/avx2/avx2_util.h"

void npl_kernels_fill_avx512_k(npl_kernels *k);

static inline __m512i load512(const void *p) { return _mm512_loadu_si512(p); }

/* Two unaligned 32-byte pieces into one register: [a | b]. */
static inline __m512i load2x256(const void *a, const void *b) {
    __m512i r = _mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *)a));
    return _mm512_inserti64x4(r, _mm256_loadu_si256((const __m256i *)b), 1);
}

/* [a x 8 | b x 8] */
static inline __m512 set2_ps(float a, float b) {
    return _mm512_insertf32x8(_mm512_set1_ps(a), _mm256_set1_ps(b), 1);
}

/* Signed x signed in groups of 4 through dpbusd: |x| (unsigned) against y
 * carrying x's sign. */
static inline __m512i dot_i8_i32(__m512i x, __m512i y) {
    const __mmask64 neg = _mm512_movepi8_mask(x);
    const __m512i sy = _mm512_mask_sub_epi8(y, neg, _mm512_setzero_si512(), y);
    return _mm512_dpbusd_epi32(_mm512_setzero_si512(), _mm512_abs_epi8(x), sy);
}

#endif
