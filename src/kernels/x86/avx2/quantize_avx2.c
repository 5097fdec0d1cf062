/* AVX2 activation quantizers, byte for byte the reference ones
 * (llama.cpp's quantize_row_*_ref): the same scale arithmetic, roundf's
 * half-away-from-zero for q8_0 / q8_1 and round-half-even for q8_K. */
#include <immintrin.h>
#include <math.h>
#include <stddef.h>
#include <string.h>

#include "kernels/dtype.h"
#include "kernels/quant_blocks.h"
#include "kernels/x86/avx2/avx2_util.h"

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

/* f32 -> f16 by F16C, round to nearest even: npl_f32_to_f16's bits, without
 * a call in the loop (which would clobber every vector register) */
static inline uint16_t f2h(float f) { return (uint16_t)_cvtss_sh(f, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }

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

/* max over lanes of each of 8 vectors -> one vector, lane b = hmax(a[b])
 * (max is exact, so the order does not matter) */
static inline __m256 hmax8x8(const __m256 *a) {
    __m256 m[4];
    for (int p = 0; p < 4; p++) /* lanes {0,2}/{1,3} paired: [a0 a1 a0 a1 | ...] */
        m[p] = _mm256_max_ps(_mm256_unpacklo_ps(a[2 * p], a[2 * p + 1]), _mm256_unpackhi_ps(a[2 * p], a[2 * p + 1]));
    const __m256 m03 = _mm256_max_ps(_mm256_shuffle_ps(m[0], m[1], 0x44), _mm256_shuffle_ps(m[0], m[1], 0xEE));
    const __m256 m47 = _mm256_max_ps(_mm256_shuffle_ps(m[2], m[3], 0x44), _mm256_shuffle_ps(m[2], m[3], 0xEE));
    return _mm256_max_ps(_mm256_permute2f128_ps(m03, m47, 0x20), _mm256_permute2f128_ps(m03, m47, 0x31));
}

/* nb <= 8 blocks of 32 at x: quants into qs of each block (stride bytes
 * apart), scales d (f16) into the d field at dofs, and with SUM the f16
 * d * sum(qs) at sofs. The block maxima, scales and their inverses are
 * computed for the 8 blocks at once: one vector division pair instead of 16
 * scalar ones in the dependency chain of each block. */
static inline __attribute__((always_inline)) void quant32x8(const float *x, int nb, uint8_t *y, size_t stride,
                                                           size_t qofs, size_t dofs, size_t sofs, const int SUM) {
    __m256 am[8];
    for (int b = 0; b < 8; b++) {
        if (b >= nb) {
            am[b] = _mm256_setzero_ps();
            continue;
        }
        const float *xb = x + 32 * b;
        /* max_ps returns its second operand when the first is NaN: NaN skipped */
        __m256 m = _mm256_max_ps(abs8(_mm256_loadu_ps(xb)), _mm256_setzero_ps());
        m = _mm256_max_ps(abs8(_mm256_loadu_ps(xb + 8)), m);
        m = _mm256_max_ps(abs8(_mm256_loadu_ps(xb + 16)), m);
        am[b] = _mm256_max_ps(abs8(_mm256_loadu_ps(xb + 24)), m);
    }
    /* the reference's d = amax / 127 and id = d ? 1 / d : 0, lane by lane */
    const __m256 d = _mm256_div_ps(hmax8x8(am), _mm256_set1_ps(127.0f));
    const __m256 id = _mm256_and_ps(_mm256_div_ps(_mm256_set1_ps(1.0f), d),
                                    _mm256_cmp_ps(d, _mm256_setzero_ps(), _CMP_NEQ_UQ));
    float dv[8], idv[8];
    uint16_t dh[8];
    _mm256_storeu_ps(dv, d);
    _mm256_storeu_ps(idv, id);
    _mm_storeu_si128((__m128i *)dh, _mm256_cvtps_ph(d, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    for (int b = 0; b < nb; b++) {
        const float *xb = x + 32 * b;
        uint8_t *yb = y + (size_t)b * stride;
        const __m256 m = _mm256_broadcast_ss(&idv[b]);
        const __m256i i0 = round_away8(_mm256_mul_ps(_mm256_loadu_ps(xb), m));
        const __m256i i1 = round_away8(_mm256_mul_ps(_mm256_loadu_ps(xb + 8), m));
        const __m256i i2 = round_away8(_mm256_mul_ps(_mm256_loadu_ps(xb + 16), m));
        const __m256i i3 = round_away8(_mm256_mul_ps(_mm256_loadu_ps(xb + 24), m));
        _mm256_storeu_si256((__m256i *)(yb + qofs), pack32(i0, i1, i2, i3));
        memcpy(yb + dofs, &dh[b], sizeof dh[b]);
        if (SUM) {
            const int sum = hsum_i32x8(_mm256_add_epi32(_mm256_add_epi32(i0, i1), _mm256_add_epi32(i2, i3)));
            const uint16_t sh = f2h((float)sum * dv[b]);
            memcpy(yb + sofs, &sh, sizeof sh);
        }
    }
}

static void quantize_q8_0(const float *x, void *vy, int64_t n) {
    block_q8_0 *y = vy;
    for (int64_t i = 0; i < n / QK8_0; i += 8) {
        const int nb = n / QK8_0 - i < 8 ? (int)(n / QK8_0 - i) : 8;
        quant32x8(x + i * QK8_0, nb, (uint8_t *)(y + i), sizeof *y, offsetof(block_q8_0, qs),
                  offsetof(block_q8_0, d), 0, 0);
    }
}

static void quantize_q8_1(const float *x, void *vy, int64_t n) {
    block_q8_1 *y = vy;
    for (int64_t i = 0; i < n / QK8_1; i += 8) {
        const int nb = n / QK8_1 - i < 8 ? (int)(n / QK8_1 - i) : 8;
        quant32x8(x + i * QK8_1, nb, (uint8_t *)(y + i), sizeof *y, offsetof(block_q8_1, qs),
                  offsetof(block_q8_1, d), offsetof(block_q8_1, s), 1);
    }
}

/* 4 int32 vectors of 8 quants each (values 0-31 of a 32-chunk) -> the chunk's
 * two 16-value sums, as int32 lanes 0 and 1 (lanes 2, 3: the same again) */
static inline __m128i bsums32(__m256i q0, __m256i q1, __m256i q2, __m256i q3) {
    const __m256i h = _mm256_hadd_epi32(_mm256_add_epi32(q0, q1), _mm256_add_epi32(q2, q3));
    const __m256i h2 = _mm256_hadd_epi32(h, h); /* per 128-bit half: [s01 s23 s01 s23] */
    return _mm_add_epi32(_mm256_castsi256_si128(h2), _mm256_extracti128_si256(h2, 1));
}

static void quantize_q8_K(const float *x, void *vy, int64_t n) {
    block_q8_K *y = vy;
    for (int64_t i = 0; i < n / QK_K; i++, x += QK_K) {
        /* max_ps returns its second operand when the first is NaN: NaN skipped */
        __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
        for (int j = 0; j < QK_K; j += 32) {
            a0 = _mm256_max_ps(abs8(_mm256_loadu_ps(x + j)), a0);
            a1 = _mm256_max_ps(abs8(_mm256_loadu_ps(x + j + 8)), a1);
            a2 = _mm256_max_ps(abs8(_mm256_loadu_ps(x + j + 16)), a2);
            a3 = _mm256_max_ps(abs8(_mm256_loadu_ps(x + j + 24)), a3);
        }
        const float amax = hmax8(_mm256_max_ps(_mm256_max_ps(a0, a1), _mm256_max_ps(a2, a3)));
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
        for (int j = 0; j < QK_K; j += 64) {
            /* cvtps rounds half to even under the default MXCSR, as nearest_int */
            __m256i q[8];
            for (int k = 0; k < 8; k++) {
                __m256 v = _mm256_mul_ps(_mm256_loadu_ps(x + j + 8 * k), m);
                v = _mm256_and_ps(v, _mm256_cmp_ps(v, v, _CMP_ORD_Q)); /* NaN: 0 */
                q[k] = _mm256_min_epi32(_mm256_cvtps_epi32(v), lim);
            }
            _mm256_storeu_si256((__m256i *)(y[i].qs + j), pack32(q[0], q[1], q[2], q[3]));
            _mm256_storeu_si256((__m256i *)(y[i].qs + j + 32), pack32(q[4], q[5], q[6], q[7]));
            /* sums of 16 quants, |sum| <= 2032: exact in int16 */
            const __m128i s = _mm_unpacklo_epi64(bsums32(q[0], q[1], q[2], q[3]), bsums32(q[4], q[5], q[6], q[7]));
            _mm_storel_epi64((__m128i *)(y[i].bsums + j / 16), _mm_packs_epi32(s, s));
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
