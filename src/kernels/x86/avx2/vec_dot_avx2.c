/* AVX2 + FMA + F16C dot products for the 32-element block types and the
 * plain float types. Only called after npl_cpu_best_isa() saw AVX2.
 *
 * q4_0 / q5_0 / q8_0 / q4_1: the exact int32 total of each block, then
 * plain C's float step (avx2_block_step*), so these give the plain C
 * kernels' bits, and the AVX2 GEMV's and GEMM's (gemv_avx2*.c,
 * gemm_avx2*.c). */
#include <immintrin.h>
#include <string.h>

#include "kernels/quant_blocks.h"
#include "kernels/vec_dot_impl.h"
#include "kernels/x86/avx2/avx2_util.h"

/* ---- 32-element blocks ---- */

static void dot_q4_0_q8_0(int n, float *s, const void *vx, const void *vy) {
    const block_q4_0 *x = vx;
    const block_q8_0 *y = vy;
    const __m256i off = _mm256_set1_epi8(8);
    float acc = 0;
    for (int i = 0; i < n / QK8_0; i++) {
        if (i % 2 == 0) prefetch_weights(x + i, 2 * sizeof *x);
        const __m256i q = _mm256_sub_epi8(avx2_nibbles32(x[i].qs), off);
        const int32_t t = avx2_hsum_i32(avx2_dot_i8_i32(q, _mm256_loadu_si256((const __m256i *)y[i].qs)));
        acc = avx2_block_step(acc, t, h2f(x[i].d), h2f(y[i].d));
    }
    *s = acc;
}

static void dot_q4_1_q8_1(int n, float *s, const void *vx, const void *vy) {
    const block_q4_1 *x = vx;
    const block_q8_1 *y = vy;
    float acc = 0;
    for (int i = 0; i < n / QK8_1; i++) {
        const int32_t t = avx2_hsum_i32(avx2_dot_u8i8_i32(avx2_nibbles32(x[i].qs), _mm256_loadu_si256((const __m256i *)y[i].qs)));
        acc = avx2_block_step_q4_1(acc, t, h2f(x[i].d), h2f(y[i].d), h2f(x[i].m), h2f(y[i].s));
    }
    *s = acc;
}

static void dot_q5_0_q8_0(int n, float *s, const void *vx, const void *vy) {
    const block_q5_0 *x = vx;
    const block_q8_0 *y = vy;
    float acc = 0;
    for (int i = 0; i < n / QK8_0; i++) {
        if (i % 4 == 0) prefetch_weights(x + i, 4 * sizeof *x);
        /* a clear 5th bit means value - 16: set the high nibble, making the
         * byte (nibble - 16) as int8 */
        __m256i hi = _mm256_andnot_si256(avx2_bits32(x[i].qh), _mm256_set1_epi8((char)0xF0));
        __m256i q = _mm256_or_si256(avx2_nibbles32(x[i].qs), hi);
        const int32_t t = avx2_hsum_i32(avx2_dot_i8_i32(q, _mm256_loadu_si256((const __m256i *)y[i].qs)));
        acc = avx2_block_step(acc, t, h2f(x[i].d), h2f(y[i].d));
    }
    *s = acc;
}

static void dot_q5_1_q8_1(int n, float *s, const void *vx, const void *vy) {
    const block_q5_1 *x = vx;
    const block_q8_1 *y = vy;
    __m256 acc = _mm256_setzero_ps();
    float summs = 0;
    for (int i = 0; i < n / QK8_1; i++) {
        summs += h2f(x[i].m) * h2f(y[i].s);
        __m256i hi = _mm256_and_si256(avx2_bits32(x[i].qh), _mm256_set1_epi8(0x10));
        __m256i q = _mm256_or_si256(avx2_nibbles32(x[i].qs), hi);
        __m256 p = avx2_dot_u8i8_f32(q, _mm256_loadu_si256((const __m256i *)y[i].qs));
        acc = _mm256_fmadd_ps(_mm256_set1_ps(h2f(x[i].d) * h2f(y[i].d)), p, acc);
    }
    *s = avx2_hsum_f32(acc) + summs;
}

static void dot_q8_0_q8_0(int n, float *s, const void *vx, const void *vy) {
    const block_q8_0 *x = vx;
    const block_q8_0 *y = vy;
    float acc = 0;
    for (int i = 0; i < n / QK8_0; i++) {
        if (i % 2 == 0) prefetch_weights(x + i, 2 * sizeof *x);
        const int32_t t = avx2_hsum_i32(avx2_dot_i8_i32(_mm256_loadu_si256((const __m256i *)x[i].qs),
                                                         _mm256_loadu_si256((const __m256i *)y[i].qs)));
        acc = avx2_block_step(acc, t, h2f(x[i].d), h2f(y[i].d));
    }
    *s = acc;
}

/* ---- plain float types: 4 accumulators of 8, scalar tail ---- */

static void dot_f32(int n, float *s, const void *vx, const void *vy) {
    const float *x = vx, *y = vy;
    __m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps(), a2 = _mm256_setzero_ps(),
           a3 = _mm256_setzero_ps();
    int i = 0;
    for (; i + 32 <= n; i += 32) {
        a0 = _mm256_fmadd_ps(_mm256_loadu_ps(x + i), _mm256_loadu_ps(y + i), a0);
        a1 = _mm256_fmadd_ps(_mm256_loadu_ps(x + i + 8), _mm256_loadu_ps(y + i + 8), a1);
        a2 = _mm256_fmadd_ps(_mm256_loadu_ps(x + i + 16), _mm256_loadu_ps(y + i + 16), a2);
        a3 = _mm256_fmadd_ps(_mm256_loadu_ps(x + i + 24), _mm256_loadu_ps(y + i + 24), a3);
    }
    for (; i + 8 <= n; i += 8) a0 = _mm256_fmadd_ps(_mm256_loadu_ps(x + i), _mm256_loadu_ps(y + i), a0);
    float sum = avx2_hsum_f32(_mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3)));
    for (; i < n; i++) sum += x[i] * y[i];
    *s = sum;
}

static inline __m256 load_f16x8(const uint16_t *p) {
    return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)p));
}

static void dot_f16(int n, float *s, const void *vx, const void *vy) {
    const uint16_t *x = vx, *y = vy;
    __m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps(), a2 = _mm256_setzero_ps(),
           a3 = _mm256_setzero_ps();
    int i = 0;
    for (; i + 32 <= n; i += 32) {
        a0 = _mm256_fmadd_ps(load_f16x8(x + i), load_f16x8(y + i), a0);
        a1 = _mm256_fmadd_ps(load_f16x8(x + i + 8), load_f16x8(y + i + 8), a1);
        a2 = _mm256_fmadd_ps(load_f16x8(x + i + 16), load_f16x8(y + i + 16), a2);
        a3 = _mm256_fmadd_ps(load_f16x8(x + i + 24), load_f16x8(y + i + 24), a3);
    }
    for (; i + 8 <= n; i += 8) a0 = _mm256_fmadd_ps(load_f16x8(x + i), load_f16x8(y + i), a0);
    float sum = avx2_hsum_f32(_mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3)));
    for (; i < n; i++) sum += h2f(x[i]) * h2f(y[i]);
    *s = sum;
}

static inline __m256 load_bf16x8(const uint16_t *p) {
    __m256i w = _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)p));
    return _mm256_castsi256_ps(_mm256_slli_epi32(w, 16));
}

static void dot_bf16(int n, float *s, const void *vx, const void *vy) {
    const uint16_t *x = vx, *y = vy;
    __m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps(), a2 = _mm256_setzero_ps(),
           a3 = _mm256_setzero_ps();
    int i = 0;
    for (; i + 32 <= n; i += 32) {
        a0 = _mm256_fmadd_ps(load_bf16x8(x + i), load_bf16x8(y + i), a0);
        a1 = _mm256_fmadd_ps(load_bf16x8(x + i + 8), load_bf16x8(y + i + 8), a1);
        a2 = _mm256_fmadd_ps(load_bf16x8(x + i + 16), load_bf16x8(y + i + 16), a2);
        a3 = _mm256_fmadd_ps(load_bf16x8(x + i + 24), load_bf16x8(y + i + 24), a3);
    }
    for (; i + 8 <= n; i += 8) a0 = _mm256_fmadd_ps(load_bf16x8(x + i), load_bf16x8(y + i), a0);
    float sum = avx2_hsum_f32(_mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3)));
    for (; i < n; i++) sum += npl_bf16_to_f32(x[i]) * npl_bf16_to_f32(y[i]);
    *s = sum;
}

void npl_kernels_fill_avx2(npl_kernels *k) {
    k->vec_dot[NPL_TYPE_F32] = dot_f32;
    k->vec_dot[NPL_TYPE_F16] = dot_f16;
    k->vec_dot[NPL_TYPE_BF16] = dot_bf16;
    k->vec_dot[NPL_TYPE_Q4_0] = dot_q4_0_q8_0;
    k->vec_dot[NPL_TYPE_Q4_1] = dot_q4_1_q8_1;
    k->vec_dot[NPL_TYPE_Q5_0] = dot_q5_0_q8_0;
    k->vec_dot[NPL_TYPE_Q5_1] = dot_q5_1_q8_1;
    k->vec_dot[NPL_TYPE_Q8_0] = dot_q8_0_q8_0;
    npl_kernels_fill_avx2_k(k);
    npl_kernels_fill_avx2_iq4(k);
    npl_quantize_fill_avx2(k);
}
