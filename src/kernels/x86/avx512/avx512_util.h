/* Shared AVX-512 (F/BW/VL/DQ/VNNI) helpers for the kernels under x86/avx512. */
#ifndef NPL_AVX512_UTIL_H
#define NPL_AVX512_UTIL_H
#include <immintrin.h>
#include <stdint.h>

#include "kernels/quant_blocks.h"
#include "kernels/x86/avx2/avx2_util.h"

void npl_kernels_fill_avx512_k(npl_kernels *k);
void npl_dot4_fill_avx512_k(npl_vec_dot4_fn *d4);
void npl_kernels_fill_avx512_iq4(npl_kernels *k);
void npl_dot4_fill_avx512_iq4(npl_vec_dot4_fn *d4);

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

/* Four f16 scales at a byte stride (one per 32-block) as floats. */
static inline __m128 half4_ps(const void *p, size_t stride) {
    const uint8_t *b = p;
    uint16_t h[4];
    for (int k = 0; k < 4; k++) memcpy(&h[k], b + k * stride, 2);
    __m128i v;
    memcpy(&v, h, 8);
    return _mm_cvtph_ps(v);
}

/* [d0 x 8 | d1 x 8] and [d2 x 8 | d3 x 8]: per-block scales over the lanes
 * of two registers that each hold two blocks. */
static inline void spread4(__m128 d, __m512 *s01, __m512 *s23) {
    const __m512 dz = _mm512_castps128_ps512(d);
    *s01 = _mm512_permutexvar_ps(_mm512_setr_epi32(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1), dz);
    *s23 = _mm512_permutexvar_ps(_mm512_setr_epi32(2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3), dz);
}

/* Products of the x and y scales of blocks i..i+3. */
static inline void scales4(const uint16_t *xd, size_t xstride, const uint16_t *yd, size_t ystride,
                           __m512 *s01, __m512 *s23) {
    spread4(_mm_mul_ps(half4_ps(xd, xstride), half4_ps(yd, ystride)), s01, s23);
}

/* Nibbles of two 32-blocks as [lo0 hi0 lo1 hi1] (16 bytes each): the
 * element order of the two blocks' q8 quants. */
static inline __m512i nibbles2x32(const uint8_t *a, const uint8_t *b) {
    __m256i t = _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_loadu_si128((const __m128i *)a)),
                                        _mm_loadu_si128((const __m128i *)b), 1);
    __m512i z = _mm512_inserti64x4(_mm512_castsi256_si512(t), _mm256_srli_epi16(t, 4), 1);
    z = _mm512_and_si512(z, _mm512_set1_epi8(0x0F));
    return _mm512_permutexvar_epi64(_mm512_setr_epi64(0, 1, 4, 5, 2, 3, 6, 7), z);
}

/* ---- one weight row against four q8_0 activation rows (the dot4 kernels) ---- */

#define ROW(y, j, by) ((const block_q8_0 *)((const uint8_t *)(y) + (size_t)(j) * (by)))

/* acc[j] += per-block scaled dots of the signed pair registers w01, w23
 * (blocks i..i+3) with activation rows j = 0..3 */
static inline __attribute__((always_inline)) void dot4_accumulate(__m512 acc[4], __m512i w01, __m512i w23, __m128 dx,
                                                                  const void *vy, size_t by, int i) {
    const __m512i a01 = _mm512_abs_epi8(w01), a23 = _mm512_abs_epi8(w23);
    const __mmask64 n01 = _mm512_movepi8_mask(w01), n23 = _mm512_movepi8_mask(w23);
    const __m512i zero = _mm512_setzero_si512();
    _Pragma("GCC unroll 4") for (int j = 0; j < 4; j++) {
        const block_q8_0 *y = ROW(vy, j, by) + i;
        __m512i y01 = load2x256(y[0].qs, y[1].qs), y23 = load2x256(y[2].qs, y[3].qs);
        y01 = _mm512_mask_sub_epi8(y01, n01, zero, y01);
        y23 = _mm512_mask_sub_epi8(y23, n23, zero, y23);
        __m512 s01, s23;
        spread4(_mm_mul_ps(dx, half4_ps(&y[0].d, sizeof *y)), &s01, &s23);
        acc[j] = _mm512_fmadd_ps(s01, _mm512_cvtepi32_ps(_mm512_dpbusd_epi32(zero, a01, y01)), acc[j]);
        acc[j] = _mm512_fmadd_ps(s23, _mm512_cvtepi32_ps(_mm512_dpbusd_epi32(zero, a23, y23)), acc[j]);
    }
}

static inline void dot4_finish(__m512 acc[4], float *s, size_t bs, const float tail[4]) {
    for (int j = 0; j < 4; j++) s[j * bs] = _mm512_reduce_add_ps(acc[j]) + tail[j];
}

/* *acc += the int16 pairs of a times those of b (dpwssd in place: gcc's
 * intrinsic copies each accumulator in and out, and spills them) */
static inline __attribute__((always_inline)) void dpwssd_to(__m512i *acc, __m512i a, __m512i b) {
    __asm__("vpdpwssd %2, %1, %0" : "+v"(*acc) : "v"(a), "v"(b));
}

/* Two k-quant sub-blocks at once, AVX2's integers (x86/avx512 q4_K / q6_K
 * GEMM and GEMV): dpbusd gives each int32 lane l the 4-element sum of ua .
 * xa (and of ub . xb), which fits int16 (|sum| <= 4 x 63 x 128); a shift
 * and a word blend put the two side by side in lane l and one dpwssd adds
 * scale_a x sum_a + scale_b x sum_b, sc holding lane l's two scales as its
 * words 2l, 2l + 1. AVX2 spends a maddubs and a madd per sub-block: 4
 * multiplies per 2 sub-blocks, here 3 (on an AMD EPYC Zen 4 the multiplies
 * share one zmm per cycle; shifts and blends do not take from it, a word
 * permute would). */
static inline __attribute__((always_inline)) void sum_pair(__m512i *acc, __m512i ua, __m512i xa, __m512i ub, __m512i xb,
                                                           __m512i sc) {
    const __m512i ta = _mm512_dpbusd_epi32(_mm512_setzero_si512(), ua, xa);
    const __m512i tb = _mm512_dpbusd_epi32(_mm512_setzero_si512(), ub, xb);
    dpwssd_to(acc, _mm512_mask_blend_epi16(0xAAAAAAAA, ta, _mm512_slli_epi32(tb, 16)), sc);
}

#endif
