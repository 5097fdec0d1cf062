/* Packing activations and decoding weights for the prefill GEMMs (see
 * kernels/gemm.h) of the AMX kernels (the AVX-512 tile that shared them
 * is gone). Weights come
 * out as unsigned bytes u per 64-element step in the interleaved order, with
 * a scale d and a min m per group of 16: w = d * u + m (m = -d * offset for
 * the 32-block types). */
#ifndef NPL_GEMM_DECODE_H
#define NPL_GEMM_DECODE_H
#include <immintrin.h>
#include <string.h>

#include "kernels/quant.h"
#include "kernels/quant_blocks.h"
#include "kernels/gemm.h"
#include "kernels/x86/avx2/q6k_unpack.h"
#include "kernels/x86/avx512/avx512_util.h"

/* Decoded weight rows: u [rows][kp], d [rows][kp/16], m [rows][ng]. */
typedef struct {
    int64_t kp, ng;
    uint8_t *u;
    float *d, *m;
} wpanel;

/* plain element order -> lane 4q + g holds elements 4q..4q+3 of group g */
static inline __m512i interleave(__m512i v) {
    return _mm512_permutexvar_epi32(_mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15), v);
}

/* ---- activation packing (once per matmul; cost m * k) ---- */

/* Where group g of row r keeps its scale: the 16 rows of a tile side by
 * side (stride 16). */
static inline float *scale_at(float *base, int64_t per_row, int64_t r) { return base + (r / 16) * per_row * 16 + r % 16; }

/* One 64-element step of row r, each block of bk (32 or 16) where a 16 x bk
 * tile of rows r & ~15 .. r | 15 keeps it, tiles of one row group in block
 * order. */
static inline void store_step(const npl_gemm_x *xp, int64_t r, int64_t s, __m512i q, int bk) {
    _Alignas(64) int8_t b[64];
    _mm512_store_si512(b, q);
    int8_t *t = xp->qs + (r & ~(int64_t)15) * xp->kp + (r & 15) * bk;
    for (int i = 0; i < 64 / bk; i++) memcpy(t + (s * 64 / bk + i) * 16 * bk, b + i * bk, (size_t)bk);
}

static inline void pack_tail(const npl_gemm_x *xp, int64_t r, int64_t done, int bk) {
    const int64_t st = 16;
    float *d = scale_at(xp->d, xp->kp / 16, r), *sum = scale_at(xp->sum, xp->ng, r);
    for (int64_t s = done / 64; s < xp->kp / 64; s++) store_step(xp, r, s, _mm512_setzero_si512(), bk);
    for (int64_t g = done / 16; g < xp->kp / 16; g++) d[g * st] = 0;
    for (int64_t g = done / 16; g < xp->ng; g++) sum[g * st] = 0;
}

static inline int group_sum(const int8_t *q) {
    int s = 0;
    for (int i = 0; i < 16; i++) s += q[i];
    return s;
}

/* in AMX tile order (bk: the tile's block size) */
static inline __attribute__((always_inline)) void pack_q8_0_as(const npl_gemm_x *xp, int64_t r, const void *row,
                                                               int bk) {
    const block_q8_0 *x = row;
    const int64_t nb = xp->k / QK8_0;
    const int64_t st = 16;
    float *d = scale_at(xp->d, xp->kp / 16, r), *sum = scale_at(xp->sum, xp->ng, r);
    const block_q8_0 zero = {0};
    for (int64_t i = 0; i < nb; i += 2) {
        const block_q8_0 *a = &x[i], *b = i + 1 < nb ? &x[i + 1] : &zero;
        store_step(xp, r, i / 2, load2x256(a->qs, b->qs), bk);
        const float da = h2f(a->d), db = h2f(b->d);
        d[2 * i * st] = d[(2 * i + 1) * st] = da;
        d[(2 * i + 2) * st] = d[(2 * i + 3) * st] = db;
        sum[2 * i * st] = da * (float)group_sum(a->qs);
        sum[(2 * i + 1) * st] = da * (float)group_sum(a->qs + 16);
        sum[(2 * i + 2) * st] = db * (float)group_sum(b->qs);
        sum[(2 * i + 3) * st] = db * (float)group_sum(b->qs + 16);
    }
    pack_tail(xp, r, (nb + 1) / 2 * 64, bk);
}

static inline __attribute__((always_inline)) void pack_q8_K_as(const npl_gemm_x *xp, int64_t r, const void *row,
                                                               int bk) {
    const block_q8_K *x = row;
    const int64_t nb = xp->k / QK_K;
    const int64_t st = 16;
    float *d = scale_at(xp->d, xp->kp / 16, r), *sum = scale_at(xp->sum, xp->ng, r);
    for (int64_t i = 0; i < nb; i++)
        for (int j = 0; j < 4; j++) {
            const int64_t s = i * 4 + j;
            store_step(xp, r, s, _mm512_loadu_si512(x[i].qs + 64 * j), bk);
            for (int g = 0; g < 4; g++) {
                d[(4 * s + g) * st] = x[i].d;
                sum[(4 * s + g) * st] = x[i].d * (float)x[i].bsums[4 * j + g];
            }
        }
    pack_tail(xp, r, nb * QK_K, bk);
}

static inline void pack_q8_0_tiles(const npl_gemm_x *xp, int64_t r, const void *row) { pack_q8_0_as(xp, r, row, 32); }
static inline void pack_q8_K_tiles32(const npl_gemm_x *xp, int64_t r, const void *row) { pack_q8_K_as(xp, r, row, 32); }
static inline void pack_q8_K_tiles16(const npl_gemm_x *xp, int64_t r, const void *row) { pack_q8_K_as(xp, r, row, 16); }

/* ---- weight decoding (cost n * k per matmul, amortized over m rows) ---- */

typedef void (*decode_fn)(const void *row, int64_t k, const wpanel *p, int j);

static inline void put_step(const wpanel *p, int j, int64_t s, __m512i plain, __m128 d, __m128 m) {
    _mm512_store_si512(p->u + j * p->kp + s * 64, interleave(plain));
    _mm_storeu_ps(p->d + j * (p->kp / 16) + s * 4, d);
    _mm_storeu_ps(p->m + j * p->ng + s * 4, m);
}

static inline void decode_tail(const wpanel *p, int j, int64_t done) {
    memset(p->u + j * p->kp + done, 0, (size_t)(p->kp - done));
    for (int64_t g = done / 16; g < p->kp / 16; g++) p->d[j * (p->kp / 16) + g] = 0;
    for (int64_t g = done / 16; g < p->ng; g++) p->m[j * p->ng + g] = 0;
}

/* [a a b b] and -o * [a a b b] */
static inline void pair_scales(uint16_t ha, uint16_t hb, float o, __m128 *d, __m128 *m) {
    const float a = h2f(ha), b = h2f(hb);
    *d = _mm_setr_ps(a, a, b, b);
    *m = _mm_mul_ps(*d, _mm_set1_ps(-o));
}

static inline void decode_q4_0(const void *row, int64_t k, const wpanel *p, int j) {
    const block_q4_0 *x = row;
    const int64_t nb = k / QK4_0;
    const block_q4_0 zero = {0};
    for (int64_t i = 0; i < nb; i += 2) {
        const block_q4_0 *a = &x[i], *b = i + 1 < nb ? &x[i + 1] : &zero;
        __m128 d, m;
        pair_scales(a->d, b->d, 8.0f, &d, &m);
        put_step(p, j, i / 2, nibbles2x32(a->qs, b->qs), d, m);
    }
    decode_tail(p, j, (nb + 1) / 2 * 64);
}

static inline void decode_q5_0(const void *row, int64_t k, const wpanel *p, int j) {
    const block_q5_0 *x = row;
    const int64_t nb = k / QK5_0;
    const block_q5_0 zero = {0};
    for (int64_t i = 0; i < nb; i += 2) {
        const block_q5_0 *a = &x[i], *b = i + 1 < nb ? &x[i + 1] : &zero;
        uint32_t ha, hb;
        memcpy(&ha, a->qh, 4);
        memcpy(&hb, b->qh, 4);
        __m512i u = nibbles2x32(a->qs, b->qs);
        u = _mm512_mask_add_epi8(u, (__mmask64)ha | ((__mmask64)hb << 32), u, _mm512_set1_epi8(16));
        __m128 d, m;
        pair_scales(a->d, b->d, 16.0f, &d, &m);
        put_step(p, j, i / 2, u, d, m);
    }
    decode_tail(p, j, (nb + 1) / 2 * 64);
}

static inline void decode_q8_0(const void *row, int64_t k, const wpanel *p, int j) {
    const block_q8_0 *x = row;
    const int64_t nb = k / QK8_0;
    const block_q8_0 zero = {0};
    for (int64_t i = 0; i < nb; i += 2) {
        const block_q8_0 *a = &x[i], *b = i + 1 < nb ? &x[i + 1] : &zero;
        const __m512i u = _mm512_xor_si512(load2x256(a->qs, b->qs), _mm512_set1_epi8((char)0x80));
        __m128 d, m;
        pair_scales(a->d, b->d, 128.0f, &d, &m);
        put_step(p, j, i / 2, u, d, m);
    }
    decode_tail(p, j, (nb + 1) / 2 * 64);
}

static inline void decode_q4_K(const void *row, int64_t k, const wpanel *p, int j) {
    const block_q4_K *x = row;
    const int64_t nb = k / QK_K;
    const __m256i lo4 = _mm256_set1_epi8(0x0F);
    for (int64_t i = 0; i < nb; i++) {
        const float d = h2f(x[i].d), dmin = h2f(x[i].dmin);
        for (int c = 0; c < 4; c++) {
            uint8_t sc0, m0, sc1, m1;
            npl_get_scale_min_k4(2 * c, x[i].scales, &sc0, &m0);
            npl_get_scale_min_k4(2 * c + 1, x[i].scales, &sc1, &m1);
            const __m256i q = _mm256_loadu_si256((const __m256i *)(x[i].qs + 32 * c));
            const __m512i u = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_and_si256(q, lo4)),
                                                 _mm256_and_si256(_mm256_srli_epi16(q, 4), lo4), 1);
            const float a = d * sc0, b = d * sc1, ma = -dmin * m0, mb = -dmin * m1;
            put_step(p, j, i * 4 + c, u, _mm_setr_ps(a, a, b, b), _mm_setr_ps(ma, ma, mb, mb));
        }
    }
    decode_tail(p, j, nb * QK_K);
}

static inline void decode_q6_K(const void *row, int64_t k, const wpanel *p, int j) {
    const block_q6_K *x = row;
    const int64_t nb = k / QK_K;
    for (int64_t i = 0; i < nb; i++) {
        const float d = h2f(x[i].d);
        for (int h = 0; h < 2; h++) {
            const int8_t *sc = x[i].scales + 8 * h;
            __m256i q[4];
            q6k_unpack128(x[i].ql + 64 * h, x[i].qh + 32 * h, q);
            for (int c = 0; c < 2; c++) {
                const __m128 ds = _mm_mul_ps(_mm_set1_ps(d), _mm_setr_ps(sc[4 * c], sc[4 * c + 1], sc[4 * c + 2],
                                                                        sc[4 * c + 3]));
                const __m512i u = _mm512_inserti64x4(_mm512_castsi256_si512(q[2 * c]), q[2 * c + 1], 1);
                put_step(p, j, i * 4 + h * 2 + c, u, ds, _mm_mul_ps(ds, _mm_set1_ps(-32.0f)));
            }
        }
    }
    decode_tail(p, j, nb * QK_K);
}

#endif
