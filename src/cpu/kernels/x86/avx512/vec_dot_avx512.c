/* AVX-512 dot products (F/BW/VL/DQ plus VNNI's dpbusd) for the 32-element
 * block types and the float types; two 32-blocks share one register. Only
 * called after npl_cpu_best_isa() saw all of these. */
#include <immintrin.h>

#include "core/quant_blocks.h"
#include "cpu/kernels/vec_dot_impl.h"
#include "cpu/kernels/x86/avx512/avx512_util.h"

/* Per-block scales of blocks i..i+3 (products of x and y scales), spread to
 * two registers [d0 x 8 | d1 x 8] and [d2 x 8 | d3 x 8]. */
static inline void scales4(const uint16_t *xd, size_t xstride, const uint16_t *yd, size_t ystride,
                           __m512 *s01, __m512 *s23) {
    const uint8_t *xp = (const uint8_t *)xd, *yp = (const uint8_t *)yd;
    uint16_t xh[4], yh[4];
    for (int k = 0; k < 4; k++) {
        memcpy(&xh[k], xp + k * xstride, 2);
        memcpy(&yh[k], yp + k * ystride, 2);
    }
    __m128i xv, yv;
    memcpy(&xv, xh, 8);
    memcpy(&yv, yh, 8);
    const __m128 d = _mm_mul_ps(_mm_cvtph_ps(xv), _mm_cvtph_ps(yv));
    const __m512 dz = _mm512_castps128_ps512(d);
    *s01 = _mm512_permutexvar_ps(_mm512_setr_epi32(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1), dz);
    *s23 = _mm512_permutexvar_ps(_mm512_setr_epi32(2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3), dz);
}

static void dot_q8_0_q8_0(int n, float *s, const void *vx, const void *vy) {
    const block_q8_0 *x = vx;
    const block_q8_0 *y = vy;
    const int nb = n / QK8_0;
    __m512 acc0 = _mm512_setzero_ps(), acc1 = _mm512_setzero_ps();
    int i = 0;
    for (; i + 3 < nb; i += 4) {
        prefetch_weights(x + i, 4 * sizeof *x);
        __m512 s01, s23;
        scales4(&x[i].d, sizeof *x, &y[i].d, sizeof *y, &s01, &s23);
        __m512i p01 = dot_i8_i32(load2x256(x[i].qs, x[i + 1].qs), load2x256(y[i].qs, y[i + 1].qs));
        __m512i p23 = dot_i8_i32(load2x256(x[i + 2].qs, x[i + 3].qs), load2x256(y[i + 2].qs, y[i + 3].qs));
        acc0 = _mm512_fmadd_ps(s01, _mm512_cvtepi32_ps(p01), acc0);
        acc1 = _mm512_fmadd_ps(s23, _mm512_cvtepi32_ps(p23), acc1);
    }
    float sum = _mm512_reduce_add_ps(_mm512_add_ps(acc0, acc1));
    __m256 acc = _mm256_setzero_ps();
    for (; i < nb; i++) {
        __m256 p = avx2_dot_i8_f32(_mm256_loadu_si256((const __m256i *)x[i].qs),
                                   _mm256_loadu_si256((const __m256i *)y[i].qs));
        acc = _mm256_fmadd_ps(_mm256_set1_ps(h2f(x[i].d) * h2f(y[i].d)), p, acc);
    }
    *s = sum + avx2_hsum_f32(acc);
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

/* sum((u - off) * y) in groups of 4, for unsigned u */
static inline __m512i dot_off_i32(__m512i u, __m512i y, __m512i off) {
    __m512i p = _mm512_dpbusd_epi32(_mm512_setzero_si512(), u, y);
    return _mm512_sub_epi32(p, _mm512_dpbusd_epi32(_mm512_setzero_si512(), off, y));
}

static void dot_q4_0_q8_0(int n, float *s, const void *vx, const void *vy) {
    const block_q4_0 *x = vx;
    const block_q8_0 *y = vy;
    const int nb = n / QK8_0;
    const __m512i eight = _mm512_set1_epi8(8);
    __m512 acc0 = _mm512_setzero_ps(), acc1 = _mm512_setzero_ps();
    int i = 0;
    for (; i + 3 < nb; i += 4) {
        prefetch_weights(x + i, 4 * sizeof *x);
        __m512 s01, s23;
        scales4(&x[i].d, sizeof *x, &y[i].d, sizeof *y, &s01, &s23);
        __m512i p01 = dot_off_i32(nibbles2x32(x[i].qs, x[i + 1].qs), load2x256(y[i].qs, y[i + 1].qs), eight);
        __m512i p23 = dot_off_i32(nibbles2x32(x[i + 2].qs, x[i + 3].qs), load2x256(y[i + 2].qs, y[i + 3].qs), eight);
        acc0 = _mm512_fmadd_ps(s01, _mm512_cvtepi32_ps(p01), acc0);
        acc1 = _mm512_fmadd_ps(s23, _mm512_cvtepi32_ps(p23), acc1);
    }
    float sum = _mm512_reduce_add_ps(_mm512_add_ps(acc0, acc1));
    __m256 acc = _mm256_setzero_ps();
    for (; i < nb; i++) {
        __m256i q = _mm256_sub_epi8(avx2_nibbles32(x[i].qs), _mm256_set1_epi8(8));
        __m256 p = avx2_dot_i8_f32(q, _mm256_loadu_si256((const __m256i *)y[i].qs));
        acc = _mm256_fmadd_ps(_mm256_set1_ps(h2f(x[i].d) * h2f(y[i].d)), p, acc);
    }
    *s = sum + avx2_hsum_f32(acc);
}

static void dot_q5_0_q8_0(int n, float *s, const void *vx, const void *vy) {
    const block_q5_0 *x = vx;
    const block_q8_0 *y = vy;
    const int nb = n / QK8_0;
    const __m512i sixteen = _mm512_set1_epi8(16);
    __m512 acc0 = _mm512_setzero_ps(), acc1 = _mm512_setzero_ps();
    int i = 0;
    for (; i + 3 < nb; i += 4) {
        prefetch_weights(x + i, 4 * sizeof *x);
        __m512 s01, s23;
        scales4(&x[i].d, sizeof *x, &y[i].d, sizeof *y, &s01, &s23);
        uint32_t h0, h1, h2, h3;
        memcpy(&h0, x[i].qh, 4);
        memcpy(&h1, x[i + 1].qh, 4);
        memcpy(&h2, x[i + 2].qh, 4);
        memcpy(&h3, x[i + 3].qh, 4);
        /* the fifth bits in element order are exactly qh of block a, then b */
        __m512i u01 = nibbles2x32(x[i].qs, x[i + 1].qs);
        __m512i u23 = nibbles2x32(x[i + 2].qs, x[i + 3].qs);
        u01 = _mm512_mask_add_epi8(u01, (__mmask64)h0 | ((__mmask64)h1 << 32), u01, sixteen);
        u23 = _mm512_mask_add_epi8(u23, (__mmask64)h2 | ((__mmask64)h3 << 32), u23, sixteen);
        __m512i p01 = dot_off_i32(u01, load2x256(y[i].qs, y[i + 1].qs), sixteen);
        __m512i p23 = dot_off_i32(u23, load2x256(y[i + 2].qs, y[i + 3].qs), sixteen);
        acc0 = _mm512_fmadd_ps(s01, _mm512_cvtepi32_ps(p01), acc0);
        acc1 = _mm512_fmadd_ps(s23, _mm512_cvtepi32_ps(p23), acc1);
    }
    float sum = _mm512_reduce_add_ps(_mm512_add_ps(acc0, acc1));
    __m256 acc = _mm256_setzero_ps();
    for (; i < nb; i++) {
        __m256i hi = _mm256_andnot_si256(avx2_bits32(x[i].qh), _mm256_set1_epi8((char)0xF0));
        __m256i q = _mm256_or_si256(avx2_nibbles32(x[i].qs), hi);
        __m256 p = avx2_dot_i8_f32(q, _mm256_loadu_si256((const __m256i *)y[i].qs));
        acc = _mm256_fmadd_ps(_mm256_set1_ps(h2f(x[i].d) * h2f(y[i].d)), p, acc);
    }
    *s = sum + avx2_hsum_f32(acc);
}

/* ---- float types: masked tails, no scalar loop ---- */

static void dot_f32(int n, float *s, const void *vx, const void *vy) {
    const float *x = vx, *y = vy;
    __m512 a0 = _mm512_setzero_ps(), a1 = _mm512_setzero_ps(), a2 = _mm512_setzero_ps(),
           a3 = _mm512_setzero_ps();
    int i = 0;
    for (; i + 64 <= n; i += 64) {
        a0 = _mm512_fmadd_ps(_mm512_loadu_ps(x + i), _mm512_loadu_ps(y + i), a0);
        a1 = _mm512_fmadd_ps(_mm512_loadu_ps(x + i + 16), _mm512_loadu_ps(y + i + 16), a1);
        a2 = _mm512_fmadd_ps(_mm512_loadu_ps(x + i + 32), _mm512_loadu_ps(y + i + 32), a2);
        a3 = _mm512_fmadd_ps(_mm512_loadu_ps(x + i + 48), _mm512_loadu_ps(y + i + 48), a3);
    }
    for (; i < n; i += 16) {
        const __mmask16 m = n - i >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (n - i)) - 1);
        a0 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, x + i), _mm512_maskz_loadu_ps(m, y + i), a0);
    }
    *s = _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3)));
}

static inline __m512 load_f16x16(const uint16_t *p, __mmask16 m) {
    return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, p));
}

static void dot_f16(int n, float *s, const void *vx, const void *vy) {
    const uint16_t *x = vx, *y = vy;
    __m512 a0 = _mm512_setzero_ps(), a1 = _mm512_setzero_ps(), a2 = _mm512_setzero_ps(),
           a3 = _mm512_setzero_ps();
    const __mmask16 all = 0xFFFF;
    int i = 0;
    for (; i + 64 <= n; i += 64) {
        a0 = _mm512_fmadd_ps(load_f16x16(x + i, all), load_f16x16(y + i, all), a0);
        a1 = _mm512_fmadd_ps(load_f16x16(x + i + 16, all), load_f16x16(y + i + 16, all), a1);
        a2 = _mm512_fmadd_ps(load_f16x16(x + i + 32, all), load_f16x16(y + i + 32, all), a2);
        a3 = _mm512_fmadd_ps(load_f16x16(x + i + 48, all), load_f16x16(y + i + 48, all), a3);
    }
    for (; i < n; i += 16) {
        const __mmask16 m = n - i >= 16 ? all : (__mmask16)((1u << (n - i)) - 1);
        a0 = _mm512_fmadd_ps(load_f16x16(x + i, m), load_f16x16(y + i, m), a0);
    }
    *s = _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3)));
}

static inline __m512 load_bf16x16(const uint16_t *p, __mmask16 m) {
    __m512i w = _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(m, p));
    return _mm512_castsi512_ps(_mm512_slli_epi32(w, 16));
}

static void dot_bf16(int n, float *s, const void *vx, const void *vy) {
    const uint16_t *x = vx, *y = vy;
    __m512 a0 = _mm512_setzero_ps(), a1 = _mm512_setzero_ps();
    const __mmask16 all = 0xFFFF;
    int i = 0;
    for (; i + 32 <= n; i += 32) {
        a0 = _mm512_fmadd_ps(load_bf16x16(x + i, all), load_bf16x16(y + i, all), a0);
        a1 = _mm512_fmadd_ps(load_bf16x16(x + i + 16, all), load_bf16x16(y + i + 16, all), a1);
    }
    for (; i < n; i += 16) {
        const __mmask16 m = n - i >= 16 ? all : (__mmask16)((1u << (n - i)) - 1);
        a0 = _mm512_fmadd_ps(load_bf16x16(x + i, m), load_bf16x16(y + i, m), a0);
    }
    *s = _mm512_reduce_add_ps(_mm512_add_ps(a0, a1));
}

/* AVX512_BF16: 32 products per instruction, pairs summed exactly-rounded
 * into f32 (inputs and outputs denormals flushed, as the ISA defines). */
static void dot_bf16_dp(int n, float *s, const void *vx, const void *vy) {
    const uint16_t *x = vx, *y = vy;
    __m512 a0 = _mm512_setzero_ps(), a1 = _mm512_setzero_ps();
    int i = 0;
    for (; i + 64 <= n; i += 64) {
        a0 = _mm512_dpbf16_ps(a0, (__m512bh)load512(x + i), (__m512bh)load512(y + i));
        a1 = _mm512_dpbf16_ps(a1, (__m512bh)load512(x + i + 32), (__m512bh)load512(y + i + 32));
    }
    for (; i < n; i += 32) {
        const __mmask32 m = n - i >= 32 ? (__mmask32)0xFFFFFFFFu : (__mmask32)((1u << (n - i)) - 1);
        a0 = _mm512_dpbf16_ps(a0, (__m512bh)_mm512_maskz_loadu_epi16(m, x + i),
                              (__m512bh)_mm512_maskz_loadu_epi16(m, y + i));
    }
    *s = _mm512_reduce_add_ps(_mm512_add_ps(a0, a1));
}

void npl_kernels_fill_avx512(npl_kernels *k, int has_bf16) {
    k->vec_dot[NPL_TYPE_F32] = dot_f32;
    k->vec_dot[NPL_TYPE_F16] = dot_f16;
    k->vec_dot[NPL_TYPE_BF16] = has_bf16 ? dot_bf16_dp : dot_bf16;
    k->vec_dot[NPL_TYPE_Q4_0] = dot_q4_0_q8_0;
    k->vec_dot[NPL_TYPE_Q5_0] = dot_q5_0_q8_0;
    k->vec_dot[NPL_TYPE_Q8_0] = dot_q8_0_q8_0;
    npl_kernels_fill_avx512_k(k);
}
