/* AVX2 GEMV on packed q5_0 weights (kernels/wpack.h's Q5_0 x 8 panels):
 * decode and small batches.
 *
 * Per block of a panel the 8 rows' unsigned quants u = w + 16 come out as
 * 8 vectors (vector g: elements 4g..4g+3, row j in int32 lane j): a nibble
 * vector gives two (and, shift + and), the high-bit vector's bit g moves to
 * bit 4 (a shift) and is or-ed in. Against each activation row the 4 bytes
 * of elements 4g..4g+3 are broadcast: maddubs (pair sums <= 2 x 31 x 127),
 * four of them added in int16 (<= 31496), one madd per half; so the 8
 * rows' exact int32 totals need no horizontal sum. Then the unpacked
 * kernels' step (gemv_avx2.c, plain C's): acc + (float)(total - 16 sum(x))
 * x dw x dx per block, blocks in order, so a row gets plain C's bits here
 * as in the packed GEMM (gemm_avx2.c).
 *
 * Against the unpacked GEMV (one thread, one matrix hot in cache, AMD EPYC
 * Zen 3, loaded machine; bench/gemv_bench hot): 640 x 2048 12.5 -> 24.0
 * GB/s, 640 x 1024 12.9 -> 24.6, 640 x 256 12.8 -> 25.1. */
#include "kernels/wpack.h"

#if defined(__x86_64__) || defined(__i386__)
#include "kernels/quant.h"
#include "kernels/quant_blocks.h"
#include "kernels/x86/avx2/avx2_util.h"
#include "kernels/x86/avx2/q5_0_packed.h"

#define INLINE static inline __attribute__((always_inline))

enum { PB = 176, MAXM = 16 }; /* bytes of a panel block; activation rows at most (gemv.h: fewer than 16) */

#ifndef PACKED_PF
/* bytes ahead of the block being read (gemv_bench token, 2 threads, AMD
 * EPYC Zen 5, packed q4_K from DRAM: 29-32 GB/s at 1024, 33-36 at 4096) */
#define PACKED_PF 4096
#endif

static inline void *align64(void *p) { return (void *)(((uintptr_t)p + 63) & ~(uintptr_t)63); }

/* d: each block's activation scale as f32; cz: 16 x the block's quant sum
 * (u = w + 16: taken off the totals) */
static void prep_q5_0_packed(npl_gemv_x *gx, void *mem, const void *xq, int64_t k) {
    const block_q8_0 *y = xq;
    const int64_t nb = k / QK8_0;
    float *d = align64(mem);
    int32_t *cz = align64(d + nb);
    const __m256i sixteen = _mm256_set1_epi8(16);
    for (int64_t b = 0; b < nb; b++) {
        d[b] = h2f(y[b].d);
        cz[b] = avx2_hsum_i32(avx2_dot_u8i8_i32(sixteen, _mm256_loadu_si256((const __m256i *)y[b].qs)));
    }
    gx->k = gx->kp = k;
    gx->qs = (const int8_t *)xq;
    gx->d = d;
    gx->cz = cz;
    gx->xs = NULL;
}

/* the 8 rows' totals of u . x for activation block xq (32 quants) */
INLINE __m256i totals(const __m256i u[8], const int8_t *xq) {
    const __m256i ones = _mm256_set1_epi16(1);
    __m256i s[2];
    for (int half = 0; half < 2; half++) {
        __m256i a = _mm256_setzero_si256();
        for (int g = 4 * half; g < 4 * half + 4; g++) {
            int32_t x4;
            memcpy(&x4, xq + 4 * g, sizeof x4);
            a = _mm256_add_epi16(a, _mm256_maddubs_epi16(u[g], _mm256_set1_epi32(x4)));
        }
        s[half] = _mm256_madd_epi16(a, ones);
    }
    return _mm256_add_epi32(s[0], s[1]);
}

/* one panel (8 rows, nb blocks) against M activation rows (M constant for
 * M = 1, the decode case; else m at run time) */
INLINE void panel(const uint8_t *pp, int64_t nb, const npl_gemv_x *gx, const int M, int m, float *y, int64_t ldy) {
    if (M) m = M;
    __m256 acc[MAXM];
    for (int c = 0; c < m; c++) acc[c] = _mm256_setzero_ps();
    for (int64_t b = 0; b < nb; b++, pp += PB) {
        _mm_prefetch((const char *)pp + PACKED_PF, _MM_HINT_T0);
        _mm_prefetch((const char *)pp + PACKED_PF + 64, _MM_HINT_T0);
        _mm_prefetch((const char *)pp + PACKED_PF + 128, _MM_HINT_T0);
        __m256i u[8];
        q5_0_packed_unpack(pp, u);
        const __m256 dw = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)pp));
        for (int c = 0; c < m; c++) {
            const block_q8_0 *xb = (const block_q8_0 *)gx[c].qs + b;
            const __m256i tot = _mm256_sub_epi32(totals(u, xb->qs), _mm256_set1_epi32(gx[c].cz[b]));
            const __m256 f = _mm256_mul_ps(_mm256_mul_ps(_mm256_cvtepi32_ps(tot), dw), _mm256_set1_ps(gx[c].d[b]));
            acc[c] = _mm256_add_ps(acc[c], avx2_opaque_ps(f)); /* no fma: plain C rounds the product */
        }
    }
    for (int c = 0; c < m; c++) _mm256_storeu_ps(y + (int64_t)c * ldy, acc[c]);
}

static void rows_q5_0_packed(const void *w, size_t w_row, int64_t r0, int64_t r1, const npl_gemv_x *gx, int m,
                             float *y, int64_t ldy) {
    const int64_t nb = gx[0].k / QK5_0;
    for (int64_t r = r0; r < r1; r += NPL_WPACK_ROWS) {
        const uint8_t *pp = (const uint8_t *)w + (size_t)r * w_row;
        if (m == 1) panel(pp, nb, gx, 1, 1, y + r, ldy);
        else panel(pp, nb, gx, 0, m, y + r, ldy);
    }
}

/* ---- q4_K x 8 against q8_K rows: the AVX2 q4_K vec_dot's arithmetic
 * (vec_dot_avx2_k.c, gemv_avx2.c's rows_q4_K_nr) lane for lane. There,
 * row j keeps 8 float lanes, lane l fed per super-block by the int32 sum
 * over its sub-blocks s of scale_s x (elements 4l..4l+3 of s . x), and 4
 * lanes of mins (lane i: sub-blocks 2i, 2i + 1); here vector l holds lane
 * l of the 8 rows, so the same fmas run 8 rows wide and the final sums
 * take the same tree. ---- */

/* the q8_K row as it is: the unpacked kernels' preparation */
static void prep_q4_K_packed(npl_gemv_x *gx, void *mem, const void *xq, int64_t k) {
    npl_gemv_get_avx2(NPL_TYPE_Q4_K)->prep(gx, mem, xq, k);
}

INLINE void panel_q4_K(const uint8_t *pp, int64_t nsb, const npl_gemv_x *g, float *y) {
    const block_q8_K *yb = (const block_q8_K *)g->qs;
    const __m256i m4 = _mm256_set1_epi8(0x0F);
    __m256 acc[8], accm[4];
    for (int l = 0; l < 8; l++) acc[l] = _mm256_setzero_ps();
    for (int q = 0; q < 4; q++) accm[q] = _mm256_setzero_ps();
    for (int64_t i = 0; i < nsb; i++, pp += NPL_WPACK_Q4_K_BLOCK) {
        for (int o = 0; o < NPL_WPACK_Q4_K_BLOCK; o += 64) _mm_prefetch((const char *)pp + PACKED_PF + o, _MM_HINT_T0);
        const block_q8_K *yi = yb + i;
        const __m256 d = _mm256_mul_ps(_mm256_set1_ps(yi->d), _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)pp)));
        const __m256 dmin = _mm256_mul_ps(_mm256_set1_ps(-yi->d), _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(pp + 16))));
        const __m256i bs = _mm256_loadu_si256((const __m256i *)yi->bsums);
        _Alignas(16) int32_t b2[4]; /* int16 pairs: the x sums of sub-blocks 2q, 2q + 1 */
        _mm_store_si128((__m128i *)b2, _mm_hadd_epi16(_mm256_castsi256_si128(bs), _mm256_extracti128_si256(bs, 1)));
        for (int q = 0; q < 4; q++) {
            const __m256i mm = _mm256_cvtepu8_epi16(_mm_loadu_si128((const __m128i *)(pp + 96 + 16 * q)));
            accm[q] = _mm256_fmadd_ps(dmin, _mm256_cvtepi32_ps(_mm256_madd_epi16(mm, _mm256_set1_epi32(b2[q]))), accm[q]);
        }
        __m256i v[8];
        for (int l = 0; l < 8; l++) v[l] = _mm256_setzero_si256();
        for (int s = 0; s < 8; s++) {
            const __m128i s8 = _mm_loadl_epi64((const __m128i *)(pp + 32 + 8 * s));
            const __m256i sc = _mm256_cvtepu8_epi16(_mm_unpacklo_epi8(s8, s8)); /* row j's scale in int16 lanes 2j, 2j + 1 */
            const uint8_t *nb = pp + 160 + 128 * s;
            const int8_t *xs = yi->qs + 32 * s;
            for (int h = 0; h < 4; h++) {
                const __m256i n = _mm256_loadu_si256((const __m256i *)(nb + 32 * h));
                int32_t xa, xb;
                memcpy(&xa, xs + 4 * h, 4);
                memcpy(&xb, xs + 4 * h + 16, 4);
                v[h] = _mm256_add_epi32(v[h], _mm256_madd_epi16(sc, _mm256_maddubs_epi16(_mm256_and_si256(n, m4), _mm256_set1_epi32(xa))));
                v[h + 4] = _mm256_add_epi32(
                    v[h + 4], _mm256_madd_epi16(sc, _mm256_maddubs_epi16(_mm256_and_si256(_mm256_srli_epi16(n, 4), m4), _mm256_set1_epi32(xb))));
            }
        }
        for (int l = 0; l < 8; l++) acc[l] = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(v[l]), acc[l]);
    }
    /* avx2_hsum_f32's tree, ((0 + 4) + (2 + 6)) + ((1 + 5) + (3 + 7)), and the mins' (0 + 2) + (1 + 3) */
    const __m256 h8 = _mm256_add_ps(_mm256_add_ps(_mm256_add_ps(acc[4], acc[0]), _mm256_add_ps(acc[6], acc[2])),
                                    _mm256_add_ps(_mm256_add_ps(acc[5], acc[1]), _mm256_add_ps(acc[7], acc[3])));
    const __m256 h4 = _mm256_add_ps(_mm256_add_ps(accm[0], accm[2]), _mm256_add_ps(accm[1], accm[3]));
    _mm256_storeu_ps(y, _mm256_add_ps(h8, h4));
}

/* a packed k-quant matrix's panels (bsb bytes per super-block) against the m rows */
typedef void (*panel_k_fn)(const uint8_t *pp, int64_t nsb, const npl_gemv_x *g, float *y);
INLINE void rows_packed_k(panel_k_fn panel, size_t bsb, const void *w, int64_t r0, int64_t r1, const npl_gemv_x *gx, int m,
                          float *y, int64_t ldy) {
    const int64_t nsb = gx[0].k / QK_K;
    for (int64_t r = r0; r < r1; r += NPL_WPACK_ROWS) {
        const uint8_t *pp = (const uint8_t *)w + (size_t)(r / NPL_WPACK_ROWS) * (size_t)nsb * bsb;
        for (int c = 0; c < m; c++) panel(pp, nsb, &gx[c], y + (int64_t)c * ldy + r);
    }
}

static void panel_q4_K_fn(const uint8_t *pp, int64_t nsb, const npl_gemv_x *g, float *y) { panel_q4_K(pp, nsb, g, y); }

static void rows_q4_K_packed(const void *w, size_t w_row, int64_t r0, int64_t r1, const npl_gemv_x *gx, int m,
                             float *y, int64_t ldy) {
    (void)w_row;
    rows_packed_k(panel_q4_K_fn, NPL_WPACK_Q4_K_BLOCK, w, r0, r1, gx, m, y, ldy);
}

/* ---- q6_K x 8: the AVX2 q6_K vec_dot's lanes (rows_q6_K_nr): lane l of
 * row j gets -32 x (scale . x sums) of groups 2l, 2l + 1 and, from every
 * 32-element group, elements 4l..4l+3 times their 16-element scale ---- */

INLINE void panel_q6_K(const uint8_t *pp, int64_t nsb, const npl_gemv_x *g, float *y) {
    const block_q8_K *yb = (const block_q8_K *)g->qs;
    __m256 acc[8];
    for (int l = 0; l < 8; l++) acc[l] = _mm256_setzero_ps();
    for (int64_t i = 0; i < nsb; i++, pp += NPL_WPACK_Q6_K_BLOCK) {
        for (int o = 0; o < NPL_WPACK_Q6_K_BLOCK; o += 64) _mm_prefetch((const char *)pp + PACKED_PF + o, _MM_HINT_T0);
        const block_q8_K *yi = yb + i;
        const __m256 d = _mm256_mul_ps(_mm256_set1_ps(yi->d), _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)pp)));
        const uint8_t *sc8 = pp + 16;
        __m256i v[8];
        for (int l = 0; l < 8; l++) {
            /* row j's scales of groups 2l, 2l + 1 in int16 lanes 2j, 2j + 1, against those groups' x sums */
            const __m128i pr = _mm_unpacklo_epi8(_mm_loadl_epi64((const __m128i *)(sc8 + 16 * l)),
                                                 _mm_loadl_epi64((const __m128i *)(sc8 + 16 * l + 8)));
            int32_t bs2;
            memcpy(&bs2, yi->bsums + 2 * l, 4);
            v[l] = _mm256_sub_epi32(_mm256_setzero_si256(),
                                    _mm256_slli_epi32(_mm256_madd_epi16(_mm256_cvtepi8_epi16(pr), _mm256_set1_epi32(bs2)), 5));
        }
        for (int G = 0; G < 8; G++) {
            __m256i u[8];
            q6_K_packed_unpack(pp + 144 + 128 * G, pp + 1168 + 64 * G, u);
            const __m128i s0 = _mm_loadl_epi64((const __m128i *)(sc8 + 8 * (2 * G))),
                          s1 = _mm_loadl_epi64((const __m128i *)(sc8 + 8 * (2 * G + 1)));
            const __m256i sa = _mm256_cvtepi8_epi16(_mm_unpacklo_epi8(s0, s0)), sb = _mm256_cvtepi8_epi16(_mm_unpacklo_epi8(s1, s1));
            const int8_t *xs = yi->qs + 32 * G;
            for (int l = 0; l < 8; l++) {
                int32_t x4;
                memcpy(&x4, xs + 4 * l, 4);
                v[l] = _mm256_add_epi32(v[l], _mm256_madd_epi16(l < 4 ? sa : sb, _mm256_maddubs_epi16(u[l], _mm256_set1_epi32(x4))));
            }
        }
        for (int l = 0; l < 8; l++) acc[l] = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(v[l]), acc[l]);
    }
    _mm256_storeu_ps(y, _mm256_add_ps(_mm256_add_ps(_mm256_add_ps(acc[4], acc[0]), _mm256_add_ps(acc[6], acc[2])),
                                      _mm256_add_ps(_mm256_add_ps(acc[5], acc[1]), _mm256_add_ps(acc[7], acc[3]))));
}

static void panel_q6_K_fn(const uint8_t *pp, int64_t nsb, const npl_gemv_x *g, float *y) { panel_q6_K(pp, nsb, g, y); }

static void rows_q6_K_packed(const void *w, size_t w_row, int64_t r0, int64_t r1, const npl_gemv_x *gx, int m,
                             float *y, int64_t ldy) {
    (void)w_row;
    rows_packed_k(panel_q6_K_fn, NPL_WPACK_Q6_K_BLOCK, w, r0, r1, gx, m, y, ldy);
}

static const npl_gemv_kernels g_q5_0_packed = {prep_q5_0_packed, rows_q5_0_packed},
                              g_q4_K_packed = {prep_q4_K_packed, rows_q4_K_packed},
                              g_q6_K_packed = {prep_q4_K_packed, rows_q6_K_packed}; /* the q8_K row as it is */

const npl_gemv_kernels *npl_gemv_get_avx2_packed(npl_type t) {
    if (t == NPL_TYPE_Q4_1) return npl_gemv_get_avx2_q4_1_packed();
    return t == NPL_TYPE_Q5_0 ? &g_q5_0_packed : t == NPL_TYPE_Q4_K ? &g_q4_K_packed : t == NPL_TYPE_Q6_K ? &g_q6_K_packed : NULL;
}

#else
const npl_gemv_kernels *npl_gemv_get_avx2_packed(npl_type t) {
    (void)t;
    return NULL;
}
#endif
