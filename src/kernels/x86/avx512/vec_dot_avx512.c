/* AVX-512 dot products (F/BW/VL/DQ plus VNNI's dpbusd) for the 32-element
 * block types and the float types; two 32-blocks share one register. Only
 * called after npl_cpu_best_isa() saw all of these. */
#include <immintrin.h>

#include "kernels/quant_blocks.h"
#include "kernels/vec_dot_impl.h"
#include "kernels/x86/avx512/avx512_util.h"

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

/* ---- one weight row against four activation rows ----
 * The weights are decoded once into signed bytes; each activation row then
 * costs a sign transfer, a dpbusd and its block scales. */

static void dot4_q8_0(int n, float *s, size_t bs, const void *vx, const void *vy, size_t by) {
    const block_q8_0 *x = vx;
    const int nb = n / QK8_0;
    __m512 acc[4] = {_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps()};
    int i = 0;
    for (; i + 3 < nb; i += 4) {
        prefetch_weights(x + i, 4 * sizeof *x);
        const __m512i w01 = load2x256(x[i].qs, x[i + 1].qs), w23 = load2x256(x[i + 2].qs, x[i + 3].qs);
        dot4_accumulate(acc, w01, w23, half4_ps(&x[i].d, sizeof *x), vy, by, i);
    }
    float tail[4];
    for (int j = 0; j < 4; j++) dot_q8_0_q8_0(n - i * QK8_0, &tail[j], x + i, ROW(vy, j, by) + i);
    dot4_finish(acc, s, bs, tail);
}

static inline __m512i q4_0_pair(const block_q4_0 *x) {
    return _mm512_sub_epi8(nibbles2x32(x[0].qs, x[1].qs), _mm512_set1_epi8(8));
}

static void dot4_q4_0(int n, float *s, size_t bs, const void *vx, const void *vy, size_t by) {
    const block_q4_0 *x = vx;
    const int nb = n / QK8_0;
    __m512 acc[4] = {_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps()};
    int i = 0;
    for (; i + 3 < nb; i += 4) {
        prefetch_weights(x + i, 4 * sizeof *x);
        dot4_accumulate(acc, q4_0_pair(x + i), q4_0_pair(x + i + 2), half4_ps(&x[i].d, sizeof *x), vy, by, i);
    }
    float tail[4];
    for (int j = 0; j < 4; j++) dot_q4_0_q8_0(n - i * QK8_0, &tail[j], x + i, ROW(vy, j, by) + i);
    dot4_finish(acc, s, bs, tail);
}

/* two q5_0 blocks as signed values in element order */
static inline __m512i q5_0_pair(const block_q5_0 *x) {
    uint32_t h0, h1;
    memcpy(&h0, x[0].qh, 4);
    memcpy(&h1, x[1].qh, 4);
    const __m512i u = nibbles2x32(x[0].qs, x[1].qs);
    const __mmask64 hb = (__mmask64)h0 | ((__mmask64)h1 << 32);
    /* fifth bit set: nibble; clear: nibble - 16 */
    return _mm512_mask_sub_epi8(u, ~hb, u, _mm512_set1_epi8(16));
}

static void dot4_q5_0(int n, float *s, size_t bs, const void *vx, const void *vy, size_t by) {
    const block_q5_0 *x = vx;
    const int nb = n / QK8_0;
    __m512 acc[4] = {_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps()};
    int i = 0;
    for (; i + 3 < nb; i += 4) {
        prefetch_weights(x + i, 4 * sizeof *x);
        dot4_accumulate(acc, q5_0_pair(x + i), q5_0_pair(x + i + 2), half4_ps(&x[i].d, sizeof *x), vy, by, i);
    }
    float tail[4];
    for (int j = 0; j < 4; j++) dot_q5_0_q8_0(n - i * QK8_0, &tail[j], x + i, ROW(vy, j, by) + i);
    dot4_finish(acc, s, bs, tail);
}

void npl_dot4_fill_avx512(npl_vec_dot4_fn *d4) {
    d4[NPL_TYPE_Q4_0] = dot4_q4_0;
    d4[NPL_TYPE_Q5_0] = dot4_q5_0;
    d4[NPL_TYPE_Q8_0] = dot4_q8_0;
    npl_dot4_fill_avx512_k(d4);
    npl_dot4_fill_avx512_iq4(d4);
}

void npl_kernels_fill_avx512(npl_kernels *k, int has_bf16) {
    k->vec_dot[NPL_TYPE_F32] = dot_f32;
    k->vec_dot[NPL_TYPE_F16] = dot_f16;
    k->vec_dot[NPL_TYPE_BF16] = has_bf16 ? dot_bf16_dp : dot_bf16;
    k->vec_dot[NPL_TYPE_Q4_0] = dot_q4_0_q8_0;
    k->vec_dot[NPL_TYPE_Q5_0] = dot_q5_0_q8_0;
    k->vec_dot[NPL_TYPE_Q8_0] = dot_q8_0_q8_0;
    npl_kernels_fill_avx512_k(k);
    npl_kernels_fill_avx512_iq4(k);
}
