/* AVX2 dot products of the K-quants with q8_K activations. Weights are
 * unpacked to unsigned bytes for maddubs; sub-block scales multiply the
 * int16 pair sums through madd; constant offsets (q3_K's -4, q6_K's -32)
 * and mins are settled once per super-block against the q8_K bsums. */
#include <immintrin.h>

#include "kernels/quant.h"
#include "kernels/quant_blocks.h"
#include "kernels/x86/avx2/avx2_util.h"

/* lanes (2k, 2k+1) */
static inline __m256i bcast_pair(__m256i v, int k) {
    return _mm256_shuffle_epi8(v, _mm256_load_si256((const __m256i *)bcast_pair_ctl[k]));
}
/* lane j in both halves */
static inline __m256i bcast_same(__m256i v, int j) {
    return _mm256_shuffle_epi8(v, _mm256_load_si256((const __m256i *)bcast_same_ctl[j]));
}

static inline __m256i dup128(__m128i v) { return _mm256_broadcastsi128_si256(v); }

static inline __m256i load256(const void *p) { return _mm256_loadu_si256((const __m256i *)p); }

/* 32 u8 weights x 32 q8, pair sums scaled by a per-16 int16 scale vector. */
static inline __m256i scaled_dot(__m256i q, const int8_t *q8, __m256i scale) {
    return _mm256_madd_epi16(scale, _mm256_maddubs_epi16(q, load256(q8)));
}

static void dot_q2_K_q8_K(int n, float *s, const void *vx, const void *vy) {
    const block_q2_K *x = vx;
    const block_q8_K *y = vy;
    const __m256i m3 = _mm256_set1_epi8(3);
    __m256 acc = _mm256_setzero_ps();
    for (int i = 0; i < n / QK_K; i++) {
        const float dall = y[i].d * h2f(x[i].d), dmin = -y[i].d * h2f(x[i].dmin);
        const __m128i sc8 = _mm_loadu_si128((const __m128i *)x[i].scales);
        const __m256i mins = _mm256_cvtepu8_epi16(_mm_and_si128(_mm_srli_epi16(sc8, 4), _mm_set1_epi8(0xF)));
        const __m256i scales = _mm256_cvtepu8_epi16(_mm_and_si128(sc8, _mm_set1_epi8(0xF)));
        const __m256i summ = _mm256_madd_epi16(mins, load256(y[i].bsums));
        acc = _mm256_fmadd_ps(_mm256_set1_ps(dmin), _mm256_cvtepi32_ps(summ), acc);

        const int8_t *q8 = y[i].qs;
        __m256i sumi = _mm256_setzero_si256();
        _Pragma("GCC unroll 2") for (int h = 0; h < 2; h++) {
            const __m256i sch = dup128(h ? _mm256_extracti128_si256(scales, 1) : _mm256_castsi256_si128(scales));
            const __m256i bits = load256(x[i].qs + 32 * h);
            _Pragma("GCC unroll 4") for (int k = 0; k < 4; k++, q8 += 32) {
                __m256i q = _mm256_and_si256(_mm256_srli_epi16(bits, 2 * k), m3);
                sumi = _mm256_add_epi32(sumi, scaled_dot(q, q8, bcast_pair(sch, k)));
            }
        }
        acc = _mm256_fmadd_ps(_mm256_set1_ps(dall), _mm256_cvtepi32_ps(sumi), acc);
    }
    *s = avx2_hsum_f32(acc);
}

static void dot_q3_K_q8_K(int n, float *s, const void *vx, const void *vy) {
    const block_q3_K *x = vx;
    const block_q8_K *y = vy;
    const __m256i m3 = _mm256_set1_epi8(3);
    __m256 acc = _mm256_setzero_ps();
    for (int i = 0; i < n / QK_K; i++) {
        const float d = y[i].d * h2f(x[i].d);
        int8_t sc[16];
        npl_q3_K_scales(x[i].scales, sc);
        const __m256i scales = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)sc));
        /* weights enter as q + 4 in [0, 7]; take 4 * sum(scale * q8) back out */
        __m256i sumi = _mm256_slli_epi32(_mm256_madd_epi16(scales, load256(y[i].bsums)), 2);
        sumi = _mm256_sub_epi32(_mm256_setzero_si256(), sumi);
        const __m256i hm = load256(x[i].hmask);
        const int8_t *q8 = y[i].qs;
        _Pragma("GCC unroll 2") for (int h = 0; h < 2; h++) {
            const __m256i sch = dup128(h ? _mm256_extracti128_si256(scales, 1) : _mm256_castsi256_si128(scales));
            const __m256i bits = load256(x[i].qs + 32 * h);
            _Pragma("GCC unroll 4") for (int k = 0; k < 4; k++, q8 += 32) {
                const __m256i bit = _mm256_set1_epi8((char)(1 << (4 * h + k)));
                __m256i hb = _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(hm, bit), bit), _mm256_set1_epi8(4));
                __m256i q = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(bits, 2 * k), m3), hb);
                sumi = _mm256_add_epi32(sumi, scaled_dot(q, q8, bcast_pair(sch, k)));
            }
        }
        acc = _mm256_fmadd_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(sumi), acc);
    }
    *s = avx2_hsum_f32(acc);
}

/* q4_K and q5_K share everything but the fifth bit. */
static inline __attribute__((always_inline)) void dot_k4(int n, float *s, const void *vx, const void *vy, int five) {
    const block_q8_K *y = vy;
    const __m256i m4 = _mm256_set1_epi8(0xF);
    __m256 acc = _mm256_setzero_ps();
    __m128 accm = _mm_setzero_ps();
    const size_t bsz = five ? sizeof(block_q5_K) : sizeof(block_q4_K);
    for (int i = 0; i < n / QK_K; i++) {
        const uint8_t *blk = (const uint8_t *)vx + (size_t)i * bsz;
        /* both block types start with d, dmin, scales[12] */
        const block_q4_K *hdr = (const block_q4_K *)blk;
        prefetch_weights(blk, bsz);
        const uint8_t *qs = five ? ((const block_q5_K *)blk)->qs : hdr->qs;
        const float d = y[i].d * h2f(hdr->d), dmin = -y[i].d * h2f(hdr->dmin);
        const __m256i ms = _mm256_cvtepu8_epi16(unpack_k4_scales(hdr->scales));
        const __m256i bs = load256(y[i].bsums);
        const __m128i bs2 = _mm_hadd_epi16(_mm256_castsi256_si128(bs), _mm256_extracti128_si256(bs, 1));
        const __m128i pm = _mm_madd_epi16(_mm256_extracti128_si256(ms, 1), bs2);
        accm = _mm_fmadd_ps(_mm_set1_ps(dmin), _mm_cvtepi32_ps(pm), accm);

        const __m256i sc = dup128(_mm256_castsi256_si128(ms));
        const __m256i hbits = five ? load256(((const block_q5_K *)blk)->qh) : _mm256_setzero_si256();
        const int8_t *q8 = y[i].qs;
        __m256i sumi = _mm256_setzero_si256();
        _Pragma("GCC unroll 4") for (int j = 0; j < 4; j++, qs += 32, q8 += 64) {
            const __m256i bits = load256(qs);
            __m256i ql = _mm256_and_si256(bits, m4);
            __m256i qh = _mm256_and_si256(_mm256_srli_epi16(bits, 4), m4);
            if (five) {
                const __m256i b0 = _mm256_set1_epi8((char)(1 << (2 * j)));
                const __m256i b1 = _mm256_set1_epi8((char)(2 << (2 * j)));
                const __m256i sixteen = _mm256_set1_epi8(16);
                ql = _mm256_or_si256(ql, _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(hbits, b0), b0), sixteen));
                qh = _mm256_or_si256(qh, _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(hbits, b1), b1), sixteen));
            }
            const __m256i pl = scaled_dot(ql, q8, bcast_same(sc, 2 * j));
            const __m256i ph = scaled_dot(qh, q8 + 32, bcast_same(sc, 2 * j + 1));
            sumi = _mm256_add_epi32(sumi, _mm256_add_epi32(pl, ph));
        }
        acc = _mm256_fmadd_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(sumi), acc);
    }
    accm = _mm_add_ps(accm, _mm_movehl_ps(accm, accm));
    accm = _mm_add_ss(accm, _mm_movehdup_ps(accm));
    *s = avx2_hsum_f32(acc) + _mm_cvtss_f32(accm);
}

static void dot_q4_K_q8_K(int n, float *s, const void *vx, const void *vy) { dot_k4(n, s, vx, vy, 0); }
static void dot_q5_K_q8_K(int n, float *s, const void *vx, const void *vy) { dot_k4(n, s, vx, vy, 1); }

static void dot_q6_K_q8_K(int n, float *s, const void *vx, const void *vy) {
    const block_q6_K *x = vx;
    const block_q8_K *y = vy;
    const __m256i m4 = _mm256_set1_epi8(0xF);
    __m256 acc = _mm256_setzero_ps();
    for (int i = 0; i < n / QK_K; i++) {
        prefetch_weights(x + i, sizeof *x);
        const float d = y[i].d * h2f(x[i].d);
        const __m256i scales = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)x[i].scales));
        /* weights enter as q + 32 in [0, 63]; take 32 * sum(scale * q8) back out */
        __m256i sumi = _mm256_slli_epi32(_mm256_madd_epi16(scales, load256(y[i].bsums)), 5);
        sumi = _mm256_sub_epi32(_mm256_setzero_si256(), sumi);
        const uint8_t *ql = x[i].ql, *qh = x[i].qh;
        const int8_t *q8 = y[i].qs;
        _Pragma("GCC unroll 2") for (int h = 0; h < 2; h++, ql += 64, qh += 32, q8 += 128) {
            const __m256i sch = dup128(h ? _mm256_extracti128_si256(scales, 1) : _mm256_castsi256_si128(scales));
            const __m256i l0 = load256(ql), l1 = load256(ql + 32), hb = load256(qh);
            const __m256i q0 = _mm256_or_si256(_mm256_and_si256(l0, m4),
                                               _mm256_slli_epi16(_mm256_and_si256(hb, _mm256_set1_epi8(0x03)), 4));
            const __m256i q1 = _mm256_or_si256(_mm256_and_si256(l1, m4),
                                               _mm256_slli_epi16(_mm256_and_si256(hb, _mm256_set1_epi8(0x0C)), 2));
            const __m256i q2 = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l0, 4), m4),
                                               _mm256_and_si256(hb, _mm256_set1_epi8(0x30)));
            const __m256i q3 = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l1, 4), m4),
                                               _mm256_srli_epi16(_mm256_and_si256(hb, _mm256_set1_epi8((char)0xC0)), 2));
            sumi = _mm256_add_epi32(sumi, scaled_dot(q0, q8, bcast_pair(sch, 0)));
            sumi = _mm256_add_epi32(sumi, scaled_dot(q1, q8 + 32, bcast_pair(sch, 1)));
            sumi = _mm256_add_epi32(sumi, scaled_dot(q2, q8 + 64, bcast_pair(sch, 2)));
            sumi = _mm256_add_epi32(sumi, scaled_dot(q3, q8 + 96, bcast_pair(sch, 3)));
        }
        acc = _mm256_fmadd_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(sumi), acc);
    }
    *s = avx2_hsum_f32(acc);
}

void npl_kernels_fill_avx2_k(npl_kernels *k) {
    k->vec_dot[NPL_TYPE_Q2_K] = dot_q2_K_q8_K;
    k->vec_dot[NPL_TYPE_Q3_K] = dot_q3_K_q8_K;
    k->vec_dot[NPL_TYPE_Q4_K] = dot_q4_K_q8_K;
    k->vec_dot[NPL_TYPE_Q5_K] = dot_q5_K_q8_K;
    k->vec_dot[NPL_TYPE_Q6_K] = dot_q6_K_q8_K;
}
