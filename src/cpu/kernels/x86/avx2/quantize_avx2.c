/* AVX2 activation quantizers, byte for byte the reference ones
 * (llama.cpp's quantize_row_*_ref): the same scale arithmetic, roundf's
 * half-away-from-zero for q8_0 / q8_1 and round-half-even for q8_K. */
#include <immintrin.h>
#include <math.h>
#include <string.h>

#include "core/dtype.h"
#include "core/quant_blocks.h"
#include "cpu/kernels/x86/avx2/avx2_util.h"

static inline float hmax8(__m256 v) {
    __m128 m = _mm_max_ps(_mm256_extractf128_ps(v, 1), _mm256_castps256_ps128(v));
    m = _mm_max_ps(m, _mm_movehl_ps(m, m));
    m = _mm_max_ss(m, _mm_movehdup_ps(m));
    return _mm_cvtss_f32(m);
}

static inline __m256 abs8(__m256 v) { return _mm256_andnot_ps(_mm256_set1_ps(-0.0f), v); }

/* round_q8 of the reference: roundf as x + copysign(0.49999997, x)
 * truncated (checked against roundf for every float of magnitude <= 140),
 * clamped to [-127, 127], NaN to 0. */
static inline __m256i round_away8(__m256 v) {
    const __m256 h = _mm256_or_ps(_mm256_and_ps(v, _mm256_set1_ps(-0.0f)), _mm256_set1_ps(0x1.fffffep-2f));
    __m256 r = _mm256_add_ps(v, h);
    r = _mm256_and_ps(r, _mm256_cmp_ps(r, r, _CMP_ORD_Q));
    r = _mm256_min_ps(_mm256_max_ps(r, _mm256_set1_ps(-127.0f)), _mm256_set1_ps(127.0f));
    return _mm256_cvttps_epi32(r);
}

/* 4 x 8 int32 in [-127, 127] -> 32 int8 in order */
static inline __m256i pack32(__m256i i0, __m256i i1, __m256i i2, __m256i i3) {
    const __m256i p = _mm256_packs_epi16(_mm256_packs_epi32(i0, i1), _mm256_packs_epi32(i2, i3));
    return _mm256_permutevar8x32_epi32(p, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
}

static inline int hsum_i32x8(__m256i v) {
    __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    s = _mm_add_epi32(s, _mm_unpackhi_epi64(s, s));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 1));
    return _mm_cvtsi128_si32(s);
}

/* one 32-block: quants into qs, returns the scale d; *sum gets sum(qs) */
static inline float quant32(const float *x, int8_t *qs, int *sum) {
    const __m256 v0 = _mm256_loadu_ps(x), v1 = _mm256_loadu_ps(x + 8);
    const __m256 v2 = _mm256_loadu_ps(x + 16), v3 = _mm256_loadu_ps(x + 24);
    /* max_ps returns its second operand when the first is NaN: NaN skipped */
    __m256 am = _mm256_max_ps(abs8(v0), _mm256_setzero_ps());
    am = _mm256_max_ps(abs8(v1), am);
    am = _mm256_max_ps(abs8(v2), am);
    am = _mm256_max_ps(abs8(v3), am);
    const float amax = hmax8(am);
    const float d = amax / 127;
    const float id = d ? 1.0f / d : 0.0f;
    const __m256 m = _mm256_set1_ps(id);
    const __m256i i0 = round_away8(_mm256_mul_ps(v0, m)), i1 = round_away8(_mm256_mul_ps(v1, m));
    const __m256i i2 = round_away8(_mm256_mul_ps(v2, m)), i3 = round_away8(_mm256_mul_ps(v3, m));
    _mm256_storeu_si256((__m256i *)qs, pack32(i0, i1, i2, i3));
    if (sum) *sum = hsum_i32x8(_mm256_add_epi32(_mm256_add_epi32(i0, i1), _mm256_add_epi32(i2, i3)));
    return d;
}

static void quantize_q8_0(const float *x, void *vy, int64_t n) {
    block_q8_0 *y = vy;
    for (int64_t i = 0; i < n / QK8_0; i++) y[i].d = npl_f32_to_f16(quant32(x + i * QK8_0, y[i].qs, NULL));
}

static void quantize_q8_1(const float *x, void *vy, int64_t n) {
    block_q8_1 *y = vy;
    for (int64_t i = 0; i < n / QK8_1; i++) {
        int sum;
        const float d = quant32(x + i * QK8_1, y[i].qs, &sum);
        y[i].d = npl_f32_to_f16(d);
        y[i].s = npl_f32_to_f16(sum * d);
    }
}

static void quantize_q8_K(const float *x, void *vy, int64_t n) {
    block_q8_K *y = vy;
    for (int64_t i = 0; i < n / QK_K; i++, x += QK_K) {
        __m256 am = _mm256_setzero_ps();
        for (int j = 0; j < QK_K; j += 8) am = _mm256_max_ps(abs8(_mm256_loadu_ps(x + j)), am);
        const float amax = hmax8(am);
        if (!amax) {
            memset(&y[i], 0, sizeof y[i]);
            continue;
        }
        /* the reference keeps the first element of largest magnitude */
        float max = 0;
        const __m256 ab = _mm256_set1_ps(amax);
        for (int j = 0; j < QK_K; j += 8) {
            const int hit = _mm256_movemask_ps(_mm256_cmp_ps(abs8(_mm256_loadu_ps(x + j)), ab, _CMP_EQ_OQ));
            if (hit) {
                max = x[j + __builtin_ctz((unsigned)hit)];
                break;
            }
        }
        const float iscale = -127.f / max;
        if (!isfinite(iscale)) {
            memset(&y[i], 0, sizeof y[i]);
            continue;
        }
        const __m256 m = _mm256_set1_ps(iscale);
        const __m256i lim = _mm256_set1_epi32(127);
        for (int j = 0; j < QK_K; j += 32) {
            /* cvtps rounds half to even under the default MXCSR, as nearest_int */
            __m256i q[4];
            for (int k = 0; k < 4; k++) {
                __m256 v = _mm256_mul_ps(_mm256_loadu_ps(x + j + 8 * k), m);
                v = _mm256_and_ps(v, _mm256_cmp_ps(v, v, _CMP_ORD_Q)); /* NaN: 0 */
                q[k] = _mm256_min_epi32(_mm256_cvtps_epi32(v), lim);
            }
            const __m256i b = pack32(q[0], q[1], q[2], q[3]);
            _mm256_storeu_si256((__m256i *)(y[i].qs + j), b);
            /* sums of 8 bytes through sad on the bytes offset by 128 */
            const __m256i s8 = _mm256_sad_epu8(_mm256_xor_si256(b, _mm256_set1_epi8((char)0x80)), _mm256_setzero_si256());
            int64_t s[4];
            _mm256_storeu_si256((__m256i *)s, s8);
            y[i].bsums[j / 16] = (int16_t)(s[0] + s[1] - 16 * 128);
            y[i].bsums[j / 16 + 1] = (int16_t)(s[2] + s[3] - 16 * 128);
        }
        y[i].d = 1 / iscale;
    }
}

/* f16 by F16C (round to nearest even, as npl_f32_to_f16) */
static void quantize_f16(const float *x, void *vy, int64_t n) {
    uint16_t *y = vy;
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm_storeu_si128((__m128i *)(y + i), _mm256_cvtps_ph(_mm256_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT));
    for (; i < n; i++) y[i] = npl_f32_to_f16(x[i]);
}

void npl_quantize_fill_avx2(npl_kernels *k) {
    k->quantize_row[NPL_TYPE_Q8_0] = quantize_q8_0;
    k->quantize_row[NPL_TYPE_Q8_1] = quantize_q8_1;
    k->quantize_row[NPL_TYPE_Q8_K] = quantize_q8_K;
    k->quantize_row[NPL_TYPE_F16] = quantize_f16;
}
