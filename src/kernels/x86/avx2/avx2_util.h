/* Shared AVX2 helpers for the kernels under x86/avx2 (and reused by the
 * AVX-512 files, which are compiled with a superset of these flags). */
#ifndef NPL_AVX2_UTIL_H
#define NPL_AVX2_UTIL_H
#include <immintrin.h>
#include <stdint.h>
#include <string.h>

#include "kernels/dtype.h"
#include "kernels/vec_dot.h"

void npl_kernels_fill_avx2_k(npl_kernels *k);
void npl_quantize_fill_avx2(npl_kernels *k);
void npl_kernels_fill_avx2_iq4(npl_kernels *k);

static inline float h2f(uint16_t h) { return _cvtsh_ss(h); }

/* Decode streams weight rows from DRAM; the hardware prefetcher alone left
 * the q8_0 output projection at half the read bandwidth. Each kernel asks
 * for the lines of the weights it will read PREFETCH_AHEAD bytes from now
 * (past the row end that is the next row, which a matmul reads next;
 * prefetches never fault). */
enum { PREFETCH_AHEAD = 2048 };
static inline void prefetch_weights(const void *p, size_t bytes) {
    for (size_t o = 0; o < bytes; o += 64) _mm_prefetch((const char *)p + PREFETCH_AHEAD + o, _MM_HINT_T0);
}

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

/* q4_0 / q5_0 / q8_0 (and q4_1's d term) take one float step per 32-block
 * and row on the block's exact int32 total, as the plain C kernels do:
 * acc + (float)total * dw * dx, blocks in order. opaque() keeps the compiler
 * from contracting the product and the add into an fma (-ffp-contract=fast
 * with -mfma), which would round once less than plain C. */
static inline float avx2_opaque_f32(float v) {
    __asm__("" : "+x"(v));
    return v;
}
static inline __m128 avx2_opaque_ps128(__m128 v) {
    __asm__("" : "+x"(v));
    return v;
}
static inline __m256 avx2_opaque_ps(__m256 v) {
    __asm__("" : "+x"(v));
    return v;
}
static inline float avx2_block_step(float acc, int32_t total, float dw, float dx) {
    return acc + avx2_opaque_f32((float)total * dw * dx);
}

/* q4_1: plain C's acc + ((dw * dx) * total + m * s); dw * dx and m * s are
 * products of two f16 values, exact in f32 */
static inline float avx2_block_step_q4_1(float acc, int32_t total, float dw, float dx, float m, float s) {
    return acc + (avx2_opaque_f32(dw * dx * (float)total) + avx2_opaque_f32(m * s));
}

static inline int32_t avx2_hsum_i32(__m256i v) {
    __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4E));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xB1));
    return _mm_cvtsi128_si32(s);
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
static inline __m256i avx2_dot_i8_i32(__m256i x, __m256i y) {
    return avx2_dot_u8i8_i32(_mm256_sign_epi8(x, x), _mm256_sign_epi8(y, x));
}
static inline __m256 avx2_dot_i8_f32(__m256i x, __m256i y) { return _mm256_cvtepi32_ps(avx2_dot_i8_i32(x, y)); }

/* The 8 x 8 int32 matrix r (row j = r[j]) transposed in place: r[g] lane j
 * = old r[j] lane g. The GEMMs' 32-block panels: 4 bytes of 8 weight rows
 * side by side. */
static inline void avx2_transpose8_epi32(__m256i r[8]) {
    __m256i t[8];
    for (int j = 0; j < 8; j += 2) t[j] = _mm256_unpacklo_epi32(r[j], r[j + 1]), t[j + 1] = _mm256_unpackhi_epi32(r[j], r[j + 1]);
    for (int j = 0; j < 8; j += 4)
        for (int h = 0; h < 2; h++)
            r[j + h] = _mm256_unpacklo_epi64(t[j + h], t[j + h + 2]), r[j + h + 2] = _mm256_unpackhi_epi64(t[j + h], t[j + h + 2]);
    /* r[0..3]: rows 0-3, columns (0, 4), (2, 6), (1, 5), (3, 7) in the 128-bit halves; r[4..7] rows 4-7 */
    static const int gi[4] = {0, 2, 1, 3};
    for (int q = 0; q < 4; q++) {
        t[gi[q]] = _mm256_permute2x128_si256(r[q], r[q + 4], 0x20);
        t[gi[q] + 4] = _mm256_permute2x128_si256(r[q], r[q + 4], 0x31);
    }
    for (int j = 0; j < 8; j++) r[j] = t[j];
}

/* q4_K / q5_K 12-byte scales -> 16 bytes [scale 0-7 | min 0-7], in
 * registers (a scalar unpack through memory stalls on store forwarding).
 * Reads 16 bytes at s; the quants follow the scales, so this stays inside
 * the block. */
static inline __m128i unpack_k4_scales(const uint8_t *s) {
    const __m128i v = _mm_loadu_si128((const __m128i *)s);
    /* a = [s0-3 s8-11 s4-7 s8-11], b = [s0-3 s0-3 s4-7 s4-7] */
    const __m128i a = _mm_shuffle_epi8(v, _mm_setr_epi8(0, 1, 2, 3, 8, 9, 10, 11, 4, 5, 6, 7, 8, 9, 10, 11));
    const __m128i b = _mm_shuffle_epi8(v, _mm_setr_epi8(0, 1, 2, 3, 0, 1, 2, 3, 4, 5, 6, 7, 4, 5, 6, 7));
    const __m128i m4 = _mm_set1_epi8(0x0F);
    /* scales 4-7: low nibbles of s8-11; mins 4-7: high nibbles */
    const __m128i lo4 = _mm_blend_epi32(_mm_and_si128(a, m4), _mm_and_si128(_mm_srli_epi16(a, 4), m4), 0x8);
    /* their top two bits are the top bits of s0-3 (scales) and s4-7 (mins) */
    const __m128i hi2 = _mm_and_si128(_mm_srli_epi16(b, 2), _mm_set1_epi8(0x30));
    return _mm_blend_epi32(_mm_and_si128(b, _mm_set1_epi8(0x3F)), _mm_or_si128(lo4, hi2), 0xA);
}

/* shuffle_epi8 controls broadcasting int16 lane a of the low 128 bits over
 * the low half and lane b of the high 128 bits over the high half
 * (shuffle_epi8 stays within 128-bit lanes): the K-quant scales of vec_dot
 * and of the GEMV. Tables, so that no control vector is built at run time. */
#define B2(a) (2 * (a)), (2 * (a) + 1)
#define B16(a) B2(a), B2(a), B2(a), B2(a), B2(a), B2(a), B2(a), B2(a)
static const uint8_t bcast_pair_ctl[4][32] __attribute__((aligned(32))) = {
    {B16(0), B16(1)}, {B16(2), B16(3)}, {B16(4), B16(5)}, {B16(6), B16(7)}};
static const uint8_t bcast_same_ctl[8][32] __attribute__((aligned(32))) = {
    {B16(0), B16(0)}, {B16(1), B16(1)}, {B16(2), B16(2)}, {B16(3), B16(3)},
    {B16(4), B16(4)}, {B16(5), B16(5)}, {B16(6), B16(6)}, {B16(7), B16(7)}};
#undef B16
#undef B2

#endif
