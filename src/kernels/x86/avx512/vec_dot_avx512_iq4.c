/* AVX-512 (VNNI) dot products of iq4_nl and mxfp4 rows with q8_0 and iq4_xs rows with
 * q8_K: two 32-blocks per register, codes turned into their int8 levels by
 * one in-lane byte shuffle of the 16-entry table, signed products through
 * dpbusd. iq4_xs keeps a super-block's sum in int32 (6-bit scale times each
 * sub-block's products, exact) and converts once per 256 values. */
#include <immintrin.h>

#include "kernels/quant_blocks.h"
#include "kernels/vec_dot_impl.h"
#include "kernels/x86/avx512/avx512_util.h"

static inline __m512i iq4_table512(void) {
    return _mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)npl_kvalues_iq4nl));
}

/* Levels of two 32-blocks of codes, in the element order of their q8 quants. */
static inline __m512i iq4_levels2x32(const uint8_t *a, const uint8_t *b, __m512i table) {
    return _mm512_shuffle_epi8(table, nibbles2x32(a, b));
}

static void dot_iq4_nl_q8_0(int n, float *s, const void *vx, const void *vy) {
    const block_iq4_nl *x = vx;
    const block_q8_0 *y = vy;
    const int nb = n / QK4_NL;
    const __m512i table = iq4_table512();
    __m512 acc0 = _mm512_setzero_ps(), acc1 = _mm512_setzero_ps();
    int i = 0;
    for (; i + 3 < nb; i += 4) {
        prefetch_weights(x + i, 4 * sizeof *x);
        __m512 s01, s23;
        scales4(&x[i].d, sizeof *x, &y[i].d, sizeof *y, &s01, &s23);
        __m512i p01 = dot_i8_i32(iq4_levels2x32(x[i].qs, x[i + 1].qs, table), load2x256(y[i].qs, y[i + 1].qs));
        __m512i p23 = dot_i8_i32(iq4_levels2x32(x[i + 2].qs, x[i + 3].qs, table), load2x256(y[i + 2].qs, y[i + 3].qs));
        acc0 = _mm512_fmadd_ps(s01, _mm512_cvtepi32_ps(p01), acc0);
        acc1 = _mm512_fmadd_ps(s23, _mm512_cvtepi32_ps(p23), acc1);
    }
    float sum = _mm512_reduce_add_ps(_mm512_add_ps(acc0, acc1));
    const __m256i t256 = _mm512_castsi512_si256(table);
    __m256 acc = _mm256_setzero_ps();
    for (; i < nb; i++) {
        __m256i q = _mm256_shuffle_epi8(t256, avx2_nibbles32(x[i].qs));
        __m256 p = avx2_dot_i8_f32(q, _mm256_loadu_si256((const __m256i *)y[i].qs));
        acc = _mm256_fmadd_ps(_mm256_set1_ps(h2f(x[i].d) * h2f(y[i].d)), p, acc);
    }
    *s = sum + avx2_hsum_f32(acc);
}

static void dot_mxfp4_q8_0(int n, float *s, const void *vx, const void *vy) {
    const block_mxfp4 *x = vx;
    const block_q8_0 *y = vy;
    const int nb = n / QK_MXFP4;
    const __m512i table = _mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)npl_kvalues_mxfp4));
    __m512 acc0 = _mm512_setzero_ps(), acc1 = _mm512_setzero_ps();
    int i = 0;
    for (; i + 3 < nb; i += 4) {
        prefetch_weights(x + i, 4 * sizeof *x);
        __m512 s01, s23;
        spread4(_mm_mul_ps(half4_ps(&y[i].d, sizeof *y),
                           _mm_setr_ps(npl_e8m0_to_f32_half(x[i].e), npl_e8m0_to_f32_half(x[i + 1].e),
                                       npl_e8m0_to_f32_half(x[i + 2].e), npl_e8m0_to_f32_half(x[i + 3].e))),
                &s01, &s23);
        __m512i p01 = dot_i8_i32(iq4_levels2x32(x[i].qs, x[i + 1].qs, table), load2x256(y[i].qs, y[i + 1].qs));
        __m512i p23 = dot_i8_i32(iq4_levels2x32(x[i + 2].qs, x[i + 3].qs, table), load2x256(y[i + 2].qs, y[i + 3].qs));
        acc0 = _mm512_fmadd_ps(s01, _mm512_cvtepi32_ps(p01), acc0);
        acc1 = _mm512_fmadd_ps(s23, _mm512_cvtepi32_ps(p23), acc1);
    }
    float sum = _mm512_reduce_add_ps(_mm512_add_ps(acc0, acc1));
    const __m256i t256 = _mm512_castsi512_si256(table);
    __m256 acc = _mm256_setzero_ps();
    for (; i < nb; i++) {
        __m256i q = _mm256_shuffle_epi8(t256, avx2_nibbles32(x[i].qs));
        __m256 p = avx2_dot_i8_f32(q, _mm256_loadu_si256((const __m256i *)y[i].qs));
        acc = _mm256_fmadd_ps(_mm256_set1_ps(h2f(y[i].d) * npl_e8m0_to_f32_half(x[i].e)), p, acc);
    }
    *s = sum + avx2_hsum_f32(acc);
}

static void dot_iq4_xs_q8_K(int n, float *s, const void *vx, const void *vy) {
    const block_iq4_xs *x = vx;
    const block_q8_K *y = vy;
    const __m512i table = iq4_table512();
    __m512 acc = _mm512_setzero_ps();
    for (int i = 0; i < n / QK_K; i++) {
        prefetch_weights(x + i, sizeof *x);
        const uint8_t *qs = x[i].qs;
        __m512i sumi = _mm512_setzero_si512();
        for (int j = 0; j < QK_K / 64; j++) {
            __m512i p = dot_i8_i32(iq4_levels2x32(qs + 32 * j, qs + 32 * j + 16, table), load512(y[i].qs + 64 * j));
            const __m512i sc = _mm512_inserti64x4(_mm512_set1_epi32(npl_iq4_xs_scale(&x[i], 2 * j)),
                                                  _mm256_set1_epi32(npl_iq4_xs_scale(&x[i], 2 * j + 1)), 1);
            sumi = _mm512_add_epi32(sumi, _mm512_mullo_epi32(p, sc));
        }
        acc = _mm512_fmadd_ps(_mm512_set1_ps(h2f(x[i].d) * y[i].d), _mm512_cvtepi32_ps(sumi), acc);
    }
    *s = _mm512_reduce_add_ps(acc);
}

/* One weight row against four activation rows (prefill), decoding the
 * levels once: each output as vec_dot's up to f32 rounding. */
static void dot4_iq4_nl(int n, float *s, size_t bs, const void *vx, const void *vy, size_t by) {
    const block_iq4_nl *x = vx;
    const int nb = n / QK4_NL;
    const __m512i table = iq4_table512();
    __m512 acc[4] = {_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps()};
    int i = 0;
    for (; i + 3 < nb; i += 4) {
        prefetch_weights(x + i, 4 * sizeof *x);
        dot4_accumulate(acc, iq4_levels2x32(x[i].qs, x[i + 1].qs, table),
                        iq4_levels2x32(x[i + 2].qs, x[i + 3].qs, table), half4_ps(&x[i].d, sizeof *x), vy, by, i);
    }
    float tail[4];
    for (int j = 0; j < 4; j++) dot_iq4_nl_q8_0(n - i * QK4_NL, &tail[j], x + i, ROW(vy, j, by) + i);
    dot4_finish(acc, s, bs, tail);
}

static void dot4_mxfp4(int n, float *s, size_t bs, const void *vx, const void *vy, size_t by) {
    const block_mxfp4 *x = vx;
    const int nb = n / QK_MXFP4;
    const __m512i table = _mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)npl_kvalues_mxfp4));
    __m512 acc[4] = {_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps()};
    int i = 0;
    for (; i + 3 < nb; i += 4) {
        prefetch_weights(x + i, 4 * sizeof *x);
        const __m128 dx = _mm_setr_ps(npl_e8m0_to_f32_half(x[i].e), npl_e8m0_to_f32_half(x[i + 1].e),
                                      npl_e8m0_to_f32_half(x[i + 2].e), npl_e8m0_to_f32_half(x[i + 3].e));
        dot4_accumulate(acc, iq4_levels2x32(x[i].qs, x[i + 1].qs, table),
                        iq4_levels2x32(x[i + 2].qs, x[i + 3].qs, table), dx, vy, by, i);
    }
    float tail[4];
    for (int j = 0; j < 4; j++) dot_mxfp4_q8_0(n - i * QK_MXFP4, &tail[j], x + i, ROW(vy, j, by) + i);
    dot4_finish(acc, s, bs, tail);
}

void npl_dot4_fill_avx512_iq4(npl_vec_dot4_fn *d4) {
    d4[NPL_TYPE_IQ4_NL] = dot4_iq4_nl;
    d4[NPL_TYPE_MXFP4] = dot4_mxfp4;
}

void npl_kernels_fill_avx512_iq4(npl_kernels *k) {
    k->vec_dot[NPL_TYPE_MXFP4] = dot_mxfp4_q8_0;
    k->vec_dot[NPL_TYPE_IQ4_NL] = dot_iq4_nl_q8_0;
    k->vec_dot[NPL_TYPE_IQ4_XS] = dot_iq4_xs_q8_K;
}
