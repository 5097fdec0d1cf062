/* AVX-512 VNNI GEMV on packed q5_0 (kernels/wpack.h's Q5_0 x 8 panels):
 * decode and small batches, in AVX2's order (gemm.h), so plain C's bits.
 *
 * As the packed GEMM (gemm_avx512_q5_0.c): two panels side by side fill a
 * zmm (row j of the pair in int32 lane j), the weights stay unsigned
 * (u = w + 16) against the activation's 4 bytes broadcast from memory, and
 * each lane's dpbusd total starts at -16 x the block's quant sum: the exact
 * int32 w . x, then acc + (float)total x dw x dx per block, blocks in
 * order. 16 rows per unpacking instead of the AVX2 kernel's 8 (the
 * unpacking is most of a decode GEMV's instructions). The activation row
 * is the AVX2 packed GEMV's (gemv_avx2_packed.c): the q8_0 row as it is,
 * its scales as floats and 16 x its quant sums. */
#include "kernels/wpack.h"

#if defined(__x86_64__) || defined(__i386__)
#include <string.h>

#include "kernels/quant_blocks.h"
#include "kernels/x86/avx512/avx512_util.h"
#include "kernels/x86/avx512/gemv_hint.h"
#include "kernels/x86/avx512/q5_0_packed512.h"

#define INLINE static inline __attribute__((always_inline))

enum { PB = 176, PANEL = 8, MAXM = 16 }; /* bytes of a panel block; rows of a panel; activation rows at most */

#ifndef PACKED_PF
/* bytes ahead of the block being read, in each of the two streams
 * (gemv_bench cold, one thread, AMD EPYC Zen 4: q5_0 and q4_K 23-26 GB/s
 * at 512-1536, 14-15 at 16384; q4_K 15 at 256, inside its super-block) */
#define PACKED_PF 1024
#endif

/* Lanes 0-7 of v to y0, 8-15 to y1 (NULL: not stored) */
INLINE void store_pair(float *y0, float *y1, __m512 v) {
    _mm256_storeu_ps(y0, _mm512_castps512_ps256(v));
    if (y1) _mm256_storeu_ps(y1, _mm512_extractf32x8_ps(v, 1));
}

/* panels p0, p1 (p1 may repeat p0: y1 NULL) against M activation rows (M
 * constant for M = 1, the decode case; else m), rows to y0 and y1 */
INLINE void pair(const uint8_t *p0, const uint8_t *p1, int64_t nb, const npl_gemv_x *gx, const int M, int m, float *y0,
                 float *y1, int64_t ldy) {
    if (M) m = M;
    __m512 acc[MAXM];
    for (int c = 0; c < m; c++) acc[c] = _mm512_setzero_ps();
    for (int64_t b = 0; b < nb; b++, p0 += PB, p1 += PB) {
        for (int o = 0; o < 192; o += 64) {
            _mm_prefetch((const char *)p0 + PACKED_PF + o, NPL_GEMV_WEIGHT_HINT);
            _mm_prefetch((const char *)p1 + PACKED_PF + o, NPL_GEMV_WEIGHT_HINT);
        }
        __m512i u[8];
        unpack16(p0, p1, u);
        const __m512 dw = scales16(p0, p1);
        for (int c = 0; c < m; c++) {
            const int8_t *xq = ((const block_q8_0 *)gx[c].qs + b)->qs;
            __m512i s = _mm512_set1_epi32(-gx[c].cz[b]);
            for (int g = 0; g < 8; g++) dpbusd_bcast(&s, u[g], xq + 4 * g);
            __m512 f = _mm512_mul_ps(_mm512_mul_ps(_mm512_cvtepi32_ps(s), dw), _mm512_set1_ps(gx[c].d[b]));
            __asm__("" : "+v"(f)); /* no fma: plain C rounds the product */
            acc[c] = _mm512_add_ps(acc[c], f);
        }
    }
    for (int c = 0; c < m; c++) store_pair(y0 + (int64_t)c * ldy, y1 ? y1 + (int64_t)c * ldy : NULL, acc[c]);
}

/* Rows [r0, r1) go as pairs of panels: panel i of the range's first half
 * with panel i + h of its second (h = half the panels, rounded up; the
 * last of an odd count alone). A zmm holds two panels' block; taking them
 * from the two halves makes two streams far apart, each front to back,
 * where two adjacent panels side by side read 2-3 times slower from DRAM
 * on AMD Zen 4 (bench/panel_walk.c, one core: 12-15 against 27-29 GB/s,
 * the same loads with no arithmetic). */
INLINE int64_t half_panels(int64_t r0, int64_t r1, int64_t *np) {
    *np = (r1 - r0) / PANEL;
    return (*np + 1) / 2;
}

static void prep_q5_0_packed(npl_gemv_x *gx, void *mem, const void *xq, int64_t k) {
    npl_gemv_get_avx2_packed(NPL_TYPE_Q5_0)->prep(gx, mem, xq, k);
}

/* ---- q4_K x 8 (wpack.h) two panels per zmm: the AVX2 packed kernel's
 * lanes (gemv_avx2_packed.c panel_q4_K: vector l holds lane l of the AVX2
 * q4_K vec_dot's 8 float accumulators for each row) with row j of the pair
 * in lane j, so the same fmas per lane and the same final tree: the AVX2
 * family's bits for 16 rows per unpacking, and madd + add as one dpwssd
 * (the same exact int32 sums). One core, weights in cache (gemv_bench hot,
 * AMD EPYC Zen 5): Gemma's o 37 -> 81 GB/s, q4_K down 39 -> 71 against the
 * AVX2 packed kernel; from DRAM in decode (token) no faster, the memory is
 * the limit there: what it saves is CPU time, and the weights' passes from
 * cache when several rows are decoded at once. ---- */


INLINE __m256i load2x128(const uint8_t *a, const uint8_t *b) {
    return _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_loadu_si128((const __m128i *)a)), _mm_loadu_si128((const __m128i *)b), 1);
}
INLINE __m512i load2(const uint8_t *a, const uint8_t *b) {
    return _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *)a)),
                              _mm256_loadu_si256((const __m256i *)b), 1);
}

/* panels p0, p1 (p1 may repeat p0: y1 NULL) against one q8_K row, rows
 * to y0 and y1, prefetching the super-block pf bytes ahead in each */
INLINE void pair_q4_K(const uint8_t *p0, const uint8_t *p1, int64_t nsb, const npl_gemv_x *g, float *y0, float *y1,
                      size_t pf) {
    const block_q8_K *yb = (const block_q8_K *)g->qs;
    const __m512i m4 = _mm512_set1_epi8(0x0F);
    __m512 acc[8], accm[4];
    for (int l = 0; l < 8; l++) acc[l] = _mm512_setzero_ps();
    for (int q = 0; q < 4; q++) accm[q] = _mm512_setzero_ps();
    for (int64_t i = 0; i < nsb; i++, p0 += NPL_WPACK_Q4_K_BLOCK, p1 += NPL_WPACK_Q4_K_BLOCK) {
        for (int o = 0; pf && o < NPL_WPACK_Q4_K_BLOCK; o += 64) {
            _mm_prefetch((const char *)p0 + pf + o, NPL_GEMV_WEIGHT_HINT);
            _mm_prefetch((const char *)p1 + pf + o, NPL_GEMV_WEIGHT_HINT);
        }
        const block_q8_K *yi = yb + i;
        const __m512 hd = _mm512_cvtph_ps(load2x128(p0, p1)), hm = _mm512_cvtph_ps(load2x128(p0 + 16, p1 + 16));
        const __m512 d = _mm512_mul_ps(_mm512_set1_ps(yi->d), hd), dmin = _mm512_mul_ps(_mm512_set1_ps(-yi->d), hm);
        const __m256i bs = _mm256_loadu_si256((const __m256i *)yi->bsums);
        _Alignas(16) int32_t b2[4]; /* int16 pairs: the x sums of sub-blocks 2q, 2q + 1 */
        _mm_store_si128((__m128i *)b2, _mm_hadd_epi16(_mm256_castsi256_si128(bs), _mm256_extracti128_si256(bs, 1)));
        for (int q = 0; q < 4; q++) {
            const __m512i mm = _mm512_cvtepu8_epi16(load2x128(p0 + 96 + 16 * q, p1 + 96 + 16 * q));
            accm[q] = _mm512_fmadd_ps(dmin, _mm512_cvtepi32_ps(_mm512_madd_epi16(mm, _mm512_set1_epi32(b2[q]))), accm[q]);
        }
        __m512i v[8];
        for (int l = 0; l < 8; l++) v[l] = _mm512_setzero_si512();
        for (int s = 0; s < 8; s++) {
            /* row j's scale in both int16 halves of int32 lane j */
            const __m512i s32 = _mm512_cvtepu8_epi32(_mm_unpacklo_epi64(_mm_loadl_epi64((const __m128i *)(p0 + 32 + 8 * s)),
                                                                        _mm_loadl_epi64((const __m128i *)(p1 + 32 + 8 * s))));
            const __m512i sc = _mm512_or_si512(s32, _mm512_slli_epi32(s32, 16));
            const int8_t *xs = yi->qs + 32 * s;
            for (int h = 0; h < 4; h++) {
                const __m512i n = load2(p0 + 160 + 128 * s + 32 * h, p1 + 160 + 128 * s + 32 * h);
                int32_t xa, xb;
                memcpy(&xa, xs + 4 * h, 4);
                memcpy(&xb, xs + 4 * h + 16, 4);
                dpwssd_to(&v[h], _mm512_maddubs_epi16(_mm512_and_si512(n, m4), _mm512_set1_epi32(xa)), sc);
                dpwssd_to(&v[h + 4], _mm512_maddubs_epi16(_mm512_and_si512(_mm512_srli_epi16(n, 4), m4), _mm512_set1_epi32(xb)), sc);
            }
        }
        for (int l = 0; l < 8; l++) acc[l] = _mm512_fmadd_ps(d, _mm512_cvtepi32_ps(v[l]), acc[l]);
    }
    /* the AVX2 kernel's tree, ((0 + 4) + (2 + 6)) + ((1 + 5) + (3 + 7)), and the mins' (0 + 2) + (1 + 3) */
    const __m512 h8 = _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(acc[4], acc[0]), _mm512_add_ps(acc[6], acc[2])),
                                    _mm512_add_ps(_mm512_add_ps(acc[5], acc[1]), _mm512_add_ps(acc[7], acc[3])));
    const __m512 h4 = _mm512_add_ps(_mm512_add_ps(accm[0], accm[2]), _mm512_add_ps(accm[1], accm[3]));
    store_pair(y0, y1, _mm512_add_ps(h8, h4));
}

static void rows_q4_K_packed(const void *w, size_t w_row, int64_t r0, int64_t r1, const npl_gemv_x *gx, int m,
                             float *y, int64_t ldy) {
    (void)w_row;
    const int64_t nsb = gx[0].k / QK_K;
    const size_t panel = (size_t)nsb * NPL_WPACK_Q4_K_BLOCK;
    const uint8_t *w0 = (const uint8_t *)w + (size_t)(r0 / PANEL) * panel;
    int64_t np;
    for (int64_t i = 0, h = half_panels(r0, r1, &np); i < h; i++) {
        const int64_t j = i + h < np ? i + h : i;
        for (int c = 0; c < m; c++) {
            float *yc = y + (int64_t)c * ldy + r0;
            pair_q4_K(w0 + i * panel, w0 + j * panel, nsb, &gx[c], yc + PANEL * i, j != i ? yc + PANEL * j : NULL,
                      c ? 0 : PACKED_PF);
        }
    }
}

/* the q8_K row as it is: the unpacked kernels' preparation */
static void prep_q4_K_packed(npl_gemv_x *gx, void *mem, const void *xq, int64_t k) {
    npl_gemv_get_avx2_packed(NPL_TYPE_Q4_K)->prep(gx, mem, xq, k);
}

/* ---- q4_1 x 8 (wpack.h) two panels per zmm: the AVX2 packed kernel's
 * steps (gemv_avx2_q4_1.c panel_q4_1) 16 rows wide, the block's exact
 * totals by dpbusd instead of maddubs + madd: plain C's bits. ---- */

/* panels p0, p1 (p1 may repeat p0: y1 NULL) against M activation rows, rows to y0 and y1 */
INLINE void pair_q4_1(const uint8_t *p0, const uint8_t *p1, int64_t nb, const npl_gemv_x *gx, const int M, int m,
                      float *y0, float *y1, int64_t ldy) {
    if (M) m = M;
    const __m512i m4 = _mm512_set1_epi8(0x0F);
    __m512 acc[MAXM];
    for (int c = 0; c < m; c++) acc[c] = _mm512_setzero_ps();
    for (int64_t b = 0; b < nb; b++, p0 += NPL_WPACK_Q4_1_BLOCK, p1 += NPL_WPACK_Q4_1_BLOCK) {
        for (int o = 0; o < NPL_WPACK_Q4_1_BLOCK; o += 64) {
            _mm_prefetch((const char *)p0 + PACKED_PF + o, NPL_GEMV_WEIGHT_HINT);
            _mm_prefetch((const char *)p1 + PACKED_PF + o, NPL_GEMV_WEIGHT_HINT);
        }
        __m512i u[8];
        for (int h = 0; h < 4; h++) {
            const __m512i n = load2(p0 + 32 + 32 * h, p1 + 32 + 32 * h);
            u[h] = _mm512_and_si512(n, m4);
            u[h + 4] = _mm512_and_si512(_mm512_srli_epi16(n, 4), m4);
        }
        const __m512 dw = _mm512_cvtph_ps(load2x128(p0, p1)), mw = _mm512_cvtph_ps(load2x128(p0 + 16, p1 + 16));
        for (int c = 0; c < m; c++) {
            const int8_t *xq = ((const block_q8_1 *)gx[c].qs)[b].qs;
            __m512i s = _mm512_setzero_si512();
            for (int g = 0; g < 8; g++) dpbusd_bcast(&s, u[g], xq + 4 * g);
            __m512 pd = _mm512_mul_ps(_mm512_mul_ps(dw, _mm512_set1_ps(gx[c].d[b])), _mm512_cvtepi32_ps(s));
            __m512 pm = _mm512_mul_ps(mw, _mm512_set1_ps(gx[c].xs[b]));
            __asm__("" : "+v"(pd), "+v"(pm)); /* no fma: plain C rounds each product */
            acc[c] = _mm512_add_ps(acc[c], _mm512_add_ps(pd, pm));
        }
    }
    for (int c = 0; c < m; c++) store_pair(y0 + (int64_t)c * ldy, y1 ? y1 + (int64_t)c * ldy : NULL, acc[c]);
}

/* Rows [r0, r1) of packed q5_0 (Q41 = 0) or q4_1 as pairs of panels (blocks of 32 for both) */
INLINE void rows_pairs(const int Q41, const void *w, size_t w_row, int64_t r0, int64_t r1, const npl_gemv_x *gx, int m,
                       float *y, int64_t ldy) {
    const int64_t nb = gx[0].k / 32;
    const uint8_t *w0 = (const uint8_t *)w + (size_t)r0 * w_row;
    const size_t panel = PANEL * w_row;
    int64_t np;
    for (int64_t i = 0, h = half_panels(r0, r1, &np); i < h; i++) {
        const int64_t j = i + h < np ? i + h : i;
        const uint8_t *p0 = w0 + i * panel, *p1 = w0 + j * panel;
        float *y0 = y + r0 + PANEL * i, *y1 = j != i ? y + r0 + PANEL * j : NULL;
        if (Q41 && m == 1) pair_q4_1(p0, p1, nb, gx, 1, 1, y0, y1, ldy);
        else if (Q41) pair_q4_1(p0, p1, nb, gx, 0, m, y0, y1, ldy);
        else if (m == 1) pair(p0, p1, nb, gx, 1, 1, y0, y1, ldy);
        else pair(p0, p1, nb, gx, 0, m, y0, y1, ldy);
    }
}
static void rows_q5_0_packed(const void *w, size_t w_row, int64_t r0, int64_t r1, const npl_gemv_x *gx, int m,
                             float *y, int64_t ldy) {
    rows_pairs(0, w, w_row, r0, r1, gx, m, y, ldy);
}
static void rows_q4_1_packed(const void *w, size_t w_row, int64_t r0, int64_t r1, const npl_gemv_x *gx, int m,
                             float *y, int64_t ldy) {
    rows_pairs(1, w, w_row, r0, r1, gx, m, y, ldy);
}

/* the AVX2 kernel's activation row (gemv_avx2_q4_1.c): the q8_1 row, d and s as floats */
static void prep_q4_1_packed(npl_gemv_x *gx, void *mem, const void *xq, int64_t k) {
    npl_gemv_get_avx2_q4_1_packed()->prep(gx, mem, xq, k);
}

static const npl_gemv_kernels k_q5_0_packed = {prep_q5_0_packed, rows_q5_0_packed},
                              k_q4_1_packed = {prep_q4_1_packed, rows_q4_1_packed},
                              k_q4_K_packed = {prep_q4_K_packed, rows_q4_K_packed};

const npl_gemv_kernels *npl_gemv_get_avx512_packed(npl_type t) {
    return t == NPL_TYPE_Q5_0 ? &k_q5_0_packed : t == NPL_TYPE_Q4_1 ? &k_q4_1_packed : t == NPL_TYPE_Q4_K ? &k_q4_K_packed : NULL;
}

#else
const npl_gemv_kernels *npl_gemv_get_avx512_packed(npl_type t) {
    (void)t;
    return NULL;
}
#endif
