/* The AVX2 k-quant GEMM's weight panel (gemm_avx2.c): 8 rows of q4_K or
 * q6_K decoded for the AVX2 vec_dot's lanes, from the file's rows or from
 * the packed copies (kernels/wpack.h), and the q8_K activation rows as
 * that GEMM reads them. Shared with the AVX-512 VNNI GEMM that keeps the
 * same order (x86/avx512/gemm_avx512_k.c). */
#ifndef NPL_GEMM_KPANEL_H
#define NPL_GEMM_KPANEL_H
#include <immintrin.h>
#include <string.h>

#include "kernels/quant.h"
#include "kernels/quant_blocks.h"
#include "kernels/wpack.h"
#include "kernels/x86/avx2/avx2_util.h"
#include "kernels/x86/avx2/q5_0_packed.h"
#include "kernels/x86/avx2/q6k_unpack.h"

enum { R = 8 }; /* weight rows per panel = lanes */

/* Block-major: the 8 rows of a block side by side, so the kernel reaches
 * each row's data at a constant offset from the block's (no per-row address
 * arithmetic in the inner loop). */
typedef struct {
    int64_t kp;
    uint8_t *u;     /* [kp / 32][R][32] */
    float *dw;      /* [kp / 32][R] scale per block; k-quants: [kp / 256][R] d */
    float *dmin;    /* k-quants: [kp / 256][R] q4_K's dmin */
    int16_t *sc;    /* k-quants: [kp / 32][R][16] the scale of each int16 pair sum
                       (q4_K: the block's, broadcast here, so the kernel's madd
                       takes it from memory instead of a broadcast per pair) */
    int16_t *aux;   /* k-quants: [kp / 256][R][16] q6_K: the 16 group scales; q4_K: the 8 mins */
    __m256i *cw;    /* q4_0 / q5_0: [kp / 32] -128 x sums of w per int16 lane (interleave) */
} panel;

/* where row j keeps block b's 32 values u, or its 16 pair scales */
static inline uint8_t *u_at(const panel *p, int j, int64_t b) { return p->u + (b * R + j) * 32; }
static inline int16_t *sc_at(const panel *p, int j, int64_t b) { return p->sc + (b * R + j) * 16; }

static inline void decode_q4_K(const void *row, int64_t k, const panel *p, int j) {
    const block_q4_K *x = row;
    const __m256i lo4 = _mm256_set1_epi8(0x0F);
    for (int64_t i = 0; i < k / QK_K; i++) {
        int16_t *aux = p->aux + (i * R + j) * 16;
        uint8_t sm[16]; /* scales 0-7, mins 0-7 */
        _mm_storeu_si128((__m128i *)sm, unpack_k4_scales(x[i].scales));
        for (int c = 0; c < 4; c++) {
            const __m256i q = _mm256_loadu_si256((const __m256i *)(x[i].qs + 32 * c));
            _mm256_store_si256((__m256i *)u_at(p, j, 8 * i + 2 * c), _mm256_and_si256(q, lo4));
            _mm256_store_si256((__m256i *)u_at(p, j, 8 * i + 2 * c + 1), _mm256_and_si256(_mm256_srli_epi16(q, 4), lo4));
        }
        for (int b = 0; b < 8; b++) {
            _mm256_store_si256((__m256i *)sc_at(p, j, 8 * i + b), _mm256_set1_epi16(sm[b]));
            aux[b] = sm[8 + b];
        }
        p->dw[i * R + j] = h2f(x[i].d);
        p->dmin[i * R + j] = h2f(x[i].dmin);
    }
}

static inline void decode_q6_K(const void *row, int64_t k, const panel *p, int j) {
    const block_q6_K *x = row;
    for (int64_t i = 0; i < k / QK_K; i++) {
        for (int h = 0; h < 2; h++) {
            __m256i q[4];
            q6k_unpack128(x[i].ql + 64 * h, x[i].qh + 32 * h, q);
            for (int s = 0; s < 4; s++) _mm256_store_si256((__m256i *)u_at(p, j, 8 * i + 4 * h + s), q[s]);
        }
        /* pair sums 0-7 of a 32-element step are group 2b, 8-15 group 2b + 1 */
        const __m256i g16 = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)x[i].scales));
        _mm256_store_si256((__m256i *)(p->aux + (i * R + j) * 16), g16);
        for (int b = 0; b < 8; b++) {
            const __m128i a = _mm_set1_epi16(x[i].scales[2 * b]), c = _mm_set1_epi16(x[i].scales[2 * b + 1]);
            _mm256_store_si256((__m256i *)sc_at(p, j, 8 * i + b), _mm256_set_m128i(c, a));
        }
        p->dw[i * R + j] = h2f(x[i].d);
    }
}

/* packed q4_K: back to the k-quant panel (rows side by side, not
 * transposed: vec_dot's per-row lanes), its 32-element vectors transposed
 * back, the scales already unpacked */
static inline void decode_packed_q4_K(const uint8_t *pp, int64_t nsb, const panel *p) {
    const __m256i m4 = _mm256_set1_epi8(0x0F);
    for (int64_t i = 0; i < nsb; i++, pp += NPL_WPACK_Q4_K_BLOCK) {
        _mm256_storeu_ps(p->dw + i * R, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)pp)));
        _mm256_storeu_ps(p->dmin + i * R, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(pp + 16))));
        for (int s = 0; s < 8; s++) {
            __m256i r[R];
            for (int h = 0; h < 4; h++) {
                const __m256i n = _mm256_loadu_si256((const __m256i *)(pp + 160 + 128 * s + 32 * h));
                r[h] = _mm256_and_si256(n, m4);
                r[h + 4] = _mm256_and_si256(_mm256_srli_epi16(n, 4), m4);
            }
            avx2_transpose8_epi32(r);
            for (int j = 0; j < R; j++) {
                _mm256_store_si256((__m256i *)u_at(p, j, 8 * i + s), r[j]);
                _mm256_store_si256((__m256i *)sc_at(p, j, 8 * i + s), _mm256_set1_epi16(pp[32 + 8 * s + j]));
            }
        }
        for (int j = 0; j < R; j++) {
            int16_t *aux = p->aux + (i * R + j) * 16;
            for (int b = 0; b < 8; b++) aux[b] = pp[96 + 16 * (b / 2) + 2 * j + b % 2];
        }
    }
}

/* packed q6_K: back to the k-quant panel as decode_q6_K leaves it */
static inline void decode_packed_q6_K(const uint8_t *pp, int64_t nsb, const panel *p) {
    for (int64_t i = 0; i < nsb; i++, pp += NPL_WPACK_Q6_K_BLOCK) {
        _mm256_storeu_ps(p->dw + i * R, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)pp)));
        const int8_t *sc8 = (const int8_t *)pp + 16; /* [group c][row j] */
        for (int G = 0; G < 8; G++) {
            __m256i r[R];
            q6_K_packed_unpack(pp + 144 + 128 * G, pp + 1168 + 64 * G, r);
            avx2_transpose8_epi32(r);
            for (int j = 0; j < R; j++) {
                _mm256_store_si256((__m256i *)u_at(p, j, 8 * i + G), r[j]);
                _mm256_store_si256((__m256i *)sc_at(p, j, 8 * i + G),
                                   _mm256_set_m128i(_mm_set1_epi16(sc8[8 * (2 * G + 1) + j]), _mm_set1_epi16(sc8[8 * (2 * G) + j])));
            }
        }
        for (int j = 0; j < R; j++) {
            int16_t *aux = p->aux + (i * R + j) * 16;
            for (int c = 0; c < 16; c++) aux[c] = sc8[8 * c + j];
        }
    }
}

static inline void fill_q8_K(int8_t *qs, float *d, int16_t *bs, const void *xq, int64_t k, int64_t kp) {
    const block_q8_K *x = xq;
    for (int64_t i = 0; i < k / QK_K; i++) {
        memcpy(qs + QK_K * i, x[i].qs, QK_K);
        memcpy(bs + 16 * i, x[i].bsums, sizeof x[i].bsums);
        for (int g = 0; g < QK_K / 16; g++) d[16 * i + g] = x[i].d;
    }
    memset(qs + k, 0, (size_t)(kp - k));
}

/* rows past the weight matrix's end: zero weights, results not stored */
static inline void zero_row_k(const panel *p, int j) {
    for (int64_t b = 0; b < p->kp / 32; b++) memset(u_at(p, j, b), 0, 32);
    for (int64_t b = 0; b < p->kp / 32; b++) memset(sc_at(p, j, b), 0, 32);
    for (int64_t i = 0; i < p->kp / QK_K; i++) memset(p->aux + (i * R + j) * 16, 0, 32);
    for (int64_t i = 0; i < p->kp / QK_K; i++) p->dw[i * R + j] = p->dmin[i * R + j] = 0;
}

#endif
