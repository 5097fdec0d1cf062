/* AVX2 dot products of iq4_nl and mxfp4 rows with q8_0 and iq4_xs rows with q8_K: the
 * 4-bit codes become their int8 levels through one byte shuffle of the
 * 16-entry table, then signed 8-bit products as for q4_0. iq4_xs keeps a
 * super-block's sum in int32 (6-bit scale times each sub-block's products,
 * exact) and converts once per 256 values. */
#include <immintrin.h>

#include "kernels/quant_blocks.h"
#include "kernels/vec_dot_impl.h"
#include "kernels/x86/avx2/avx2_util.h"

/* The levels of 32 codes (16 bytes of nibbles) in element order. */
static inline __m256i iq4_levels32(const uint8_t *qs, __m256i table) {
    return _mm256_shuffle_epi8(table, avx2_nibbles32(qs));
}

static inline __m256i table256(const int8_t *values) {
    return _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)values));
}
static inline __m256i iq4_table(void) { return table256(npl_kvalues_iq4nl); }

static void dot_mxfp4_q8_0(int n, float *s, const void *vx, const void *vy) {
    const block_mxfp4 *x = vx;
    const block_q8_0 *y = vy;
    const __m256i table = table256(npl_kvalues_mxfp4);
    __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
    const int nb = n / QK_MXFP4;
    int i = 0;
    for (; i + 1 < nb; i += 2) {
        prefetch_weights(x + i, 2 * sizeof *x);
        __m256 p0 = avx2_dot_i8_f32(iq4_levels32(x[i].qs, table), _mm256_loadu_si256((const __m256i *)y[i].qs));
        __m256 p1 = avx2_dot_i8_f32(iq4_levels32(x[i + 1].qs, table), _mm256_loadu_si256((const __m256i *)y[i + 1].qs));
        acc0 = _mm256_fmadd_ps(_mm256_set1_ps(h2f(y[i].d) * npl_e8m0_to_f32_half(x[i].e)), p0, acc0);
        acc1 = _mm256_fmadd_ps(_mm256_set1_ps(h2f(y[i + 1].d) * npl_e8m0_to_f32_half(x[i + 1].e)), p1, acc1);
    }
    for (; i < nb; i++) {
        __m256 p0 = avx2_dot_i8_f32(iq4_levels32(x[i].qs, table), _mm256_loadu_si256((const __m256i *)y[i].qs));
        acc0 = _mm256_fmadd_ps(_mm256_set1_ps(h2f(y[i].d) * npl_e8m0_to_f32_half(x[i].e)), p0, acc0);
    }
    *s = avx2_hsum_f32(_mm256_add_ps(acc0, acc1));
}

static void dot_iq4_nl_q8_0(int n, float *s, const void *vx, const void *vy) {
    const block_iq4_nl *x = vx;
    const block_q8_0 *y = vy;
    const __m256i table = iq4_table();
    __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
    const int nb = n / QK4_NL;
    int i = 0;
    for (; i + 1 < nb; i += 2) {
        prefetch_weights(x + i, 2 * sizeof *x);
        __m256 p0 = avx2_dot_i8_f32(iq4_levels32(x[i].qs, table), _mm256_loadu_si256((const __m256i *)y[i].qs));
        __m256 p1 = avx2_dot_i8_f32(iq4_levels32(x[i + 1].qs, table), _mm256_loadu_si256((const __m256i *)y[i + 1].qs));
        acc0 = _mm256_fmadd_ps(_mm256_set1_ps(h2f(y[i].d) * h2f(x[i].d)), p0, acc0);
        acc1 = _mm256_fmadd_ps(_mm256_set1_ps(h2f(y[i + 1].d) * h2f(x[i + 1].d)), p1, acc1);
    }
    for (; i < nb; i++) {
        __m256 p0 = avx2_dot_i8_f32(iq4_levels32(x[i].qs, table), _mm256_loadu_si256((const __m256i *)y[i].qs));
        acc0 = _mm256_fmadd_ps(_mm256_set1_ps(h2f(y[i].d) * h2f(x[i].d)), p0, acc0);
    }
    *s = avx2_hsum_f32(_mm256_add_ps(acc0, acc1));
}

/* Signed x signed products in groups of 4 as int32 (|x| <= 127). */
static inline __m256i dot_i8_i32(__m256i x, __m256i y) {
    return avx2_dot_u8i8_i32(_mm256_sign_epi8(x, x), _mm256_sign_epi8(y, x));
}

static void dot_iq4_xs_q8_K(int n, float *s, const void *vx, const void *vy) {
    const block_iq4_xs *x = vx;
    const block_q8_K *y = vy;
    const __m256i table = iq4_table();
    __m256 acc = _mm256_setzero_ps();
    for (int i = 0; i < n / QK_K; i++) {
        prefetch_weights(x + i, sizeof *x);
        __m256i sumi = _mm256_setzero_si256();
        for (int ib = 0; ib < QK_K / 32; ib++) {
            __m256i p = dot_i8_i32(iq4_levels32(x[i].qs + 16 * ib, table),
                                   _mm256_loadu_si256((const __m256i *)(y[i].qs + 32 * ib)));
            sumi = _mm256_add_epi32(sumi, _mm256_mullo_epi32(p, _mm256_set1_epi32(npl_iq4_xs_scale(&x[i], ib))));
        }
        acc = _mm256_fmadd_ps(_mm256_set1_ps(h2f(x[i].d) * y[i].d), _mm256_cvtepi32_ps(sumi), acc);
    }
    *s = avx2_hsum_f32(acc);
}

void npl_kernels_fill_avx2_iq4(npl_kernels *k) {
    k->vec_dot[NPL_TYPE_MXFP4] = dot_mxfp4_q8_0;
    k->vec_dot[NPL_TYPE_IQ4_NL] = dot_iq4_nl_q8_0;
    k->vec_dot[NPL_TYPE_IQ4_XS] = dot_iq4_xs_q8_K;
}
