/* AVX-512 VNNI GEMMs for the 32-block types the x86 families read in
 * AVX2's order, for prefill: q5_0 (packed, kernels/wpack.h, or the file's
 * rows), q4_0 and q8_0 (the file's rows) and q4_1 (both; every x86 family
 * reads q4_1 so, AMX's too). Below, q5_0's arithmetic; q4_0 and q8_0 differ
 * in the offset (8; 128, u = w ^ 0x80), q4_1 in its float step (tile1).
 *
 * The AVX-512 family reads q5_0 in the AVX2 kernels' order (gemm.h): per
 * (weight row, activation row, 32-block) the exact int32 total, then plain
 * C's step acc = acc + (float)total * dw * dx, blocks in order. This kernel
 * keeps that order, so it gives plain C's bits as the AVX2 packed GEMV
 * (decode) does, and a row in a prefill batch gets decode's bits.
 *
 * Two 8-row panels side by side fill a zmm: vector g of a block holds
 * elements 4g..4g+3 of 16 rows, row j in int32 lane j. The weights stay
 * unsigned (u = w + 16, 0..31) and the activations signed, broadcast 4
 * bytes at a time from memory into dpbusd: each lane gets u . x, exact, and
 * starting it at -16 x the block's sum of x (packed with the activations)
 * leaves w . x. One 32-block of 16 rows x one activation row is 8 dpbusd,
 * a conversion, two products and an add (AVX2's maddubs path takes twice
 * the instructions for 8 rows).
 *
 * Activation layout (in npl_gemm_x): rows in tiles of NC, each 32-block of
 * a tile's rows together so one pointer and constant offsets reach them:
 * quants at qs + tile * NC * kp + b * NC * 32 + c * 32; scale and offset at
 * [tile * NC * (kp / 16) + b * NC + c] of d and of sum (as int32). */
#include "kernels/gemm.h"

#if defined(__x86_64__) || defined(__i386__)
#include <string.h>

#include "kernels/quant.h"
#include "kernels/quant_blocks.h"
#include "kernels/wpack.h"
#include "kernels/x86/avx2/avx2_util.h"
#include "kernels/x86/avx512/q5_0_packed512.h"

#define INLINE static inline __attribute__((always_inline))

enum {
    NC = 8,       /* activation rows per pass: 8 weight vectors + 8 accumulators + 8 sums fit 32 registers */
    ROWS = 16,    /* weight rows per pass: two packed panels */
    PANEL = 8,    /* rows of one packed panel */
    BLOCK = 176,  /* bytes of one panel's 32-block */
};

static inline int8_t *x_qs(const npl_gemm_x *xp, int64_t r) { return xp->qs + (r / NC) * NC * xp->kp + (r % NC) * 32; }
static inline float *x_d(const npl_gemm_x *xp, int64_t r) { return xp->d + (r / NC) * NC * (xp->kp / 16) + r % NC; }
static inline int32_t *x_off(const npl_gemm_x *xp, int64_t r) {
    return (int32_t *)xp->sum + (r / NC) * NC * (xp->kp / 16) + r % NC;
}

/* Activation row r from its q8_0 row, the offset -o x each block's sum (o: u = w + o) */
INLINE void pack_as(const npl_gemm_x *xp, int64_t r, const void *row, int o) {
    const block_q8_0 *x = row;
    const int64_t nb = xp->k / QK8_0, nbp = xp->kp / 32;
    int8_t *qs = x_qs(xp, r);
    float *d = x_d(xp, r);
    int32_t *off = x_off(xp, r);
    for (int64_t b = 0; b < nbp; b++) {
        if (b >= nb) { /* padding to kp: zero quants, zero scale */
            memset(qs + b * NC * 32, 0, 32);
            d[b * NC] = 0;
            off[b * NC] = 0;
            continue;
        }
        memcpy(qs + b * NC * 32, x[b].qs, 32);
        int32_t s = 0;
        for (int i = 0; i < 32; i++) s += x[b].qs[i];
        off[b * NC] = -o * s;
        d[b * NC] = h2f(x[b].d);
    }
}

static void pack_x(const npl_gemm_x *xp, int64_t r, const void *row) { pack_as(xp, r, row, 16); }  /* q5_0 */
static void pack_x8(const npl_gemm_x *xp, int64_t r, const void *row) { pack_as(xp, r, row, 8); } /* q4_0 */
static void pack_x128(const npl_gemm_x *xp, int64_t r, const void *row) { pack_as(xp, r, row, 128); } /* q8_0 */

/* Panels p0 and p1 (NULL: none, zeros) of the packed matrix as nb x 8
 * vectors of u and nb x 16 scales. */
static void unpack_rows(const uint8_t *p0, const uint8_t *p1, int64_t nb, __m512i *u, float *dw) {
    static const uint8_t zero[BLOCK];
    const uint8_t *q1 = p1 ? p1 : zero;
    const int64_t step1 = p1 ? BLOCK : 0;
    for (int64_t b = 0; b < nb; b++, p0 += BLOCK, q1 += step1) {
        unpack16(p0, q1, u + 8 * b);
        _mm512_store_ps(dw + 16 * b, scales16(p0, q1));
    }
}

/* The 16 rows against activation rows [c0, c0 + nc) of one tile. */
INLINE void tile(const int nc, const __m512i *u, const float *dw, int64_t nb, const npl_gemm_x *xp, int64_t c0,
                 float *y, int64_t ldy, __mmask16 keep) {
    const int8_t *xq = x_qs(xp, c0);
    const float *xd = x_d(xp, c0);
    const int32_t *xo = x_off(xp, c0);
    __m512 acc[NC];
    for (int c = 0; c < nc; c++) acc[c] = _mm512_setzero_ps();
    for (int64_t b = 0; b < nb; b++, xq += NC * 32, xd += NC, xo += NC) {
        __m512i w[8];
        for (int g = 0; g < 8; g++) w[g] = _mm512_load_si512(u + 8 * b + g);
        const __m512 d = _mm512_load_ps(dw + 16 * b);
        for (int c = 0; c < nc; c++) {
            __m512i s = _mm512_set1_epi32(xo[c]);
            for (int g = 0; g < 8; g++) dpbusd_bcast(&s, w[g], xq + 32 * c + 4 * g);
            __m512 f = _mm512_mul_ps(_mm512_mul_ps(_mm512_cvtepi32_ps(s), d), _mm512_set1_ps(xd[c]));
            __asm__("" : "+v"(f)); /* no fma: plain C rounds the product */
            acc[c] = _mm512_add_ps(acc[c], f);
        }
    }
    for (int c = 0; c < nc; c++) _mm512_mask_storeu_ps(y + (c0 + c) * ldy, keep, acc[c]);
}

/* the tiles of one 16-row pass against every activation row */
INLINE void pass(const __m512i *u, const float *dw, int64_t nb, const npl_gemm_x *xp, float *yb, int64_t ldy, __mmask16 keep) {
    const int64_t m = xp->m;
    int64_t c0 = 0;
    for (; c0 + NC <= m; c0 += NC) tile(NC, u, dw, nb, xp, c0, yb, ldy, keep);
    switch (m - c0) { /* a constant count each, so the accumulators stay in registers */
    case 7: tile(7, u, dw, nb, xp, c0, yb, ldy, keep); break;
    case 6: tile(6, u, dw, nb, xp, c0, yb, ldy, keep); break;
    case 5: tile(5, u, dw, nb, xp, c0, yb, ldy, keep); break;
    case 4: tile(4, u, dw, nb, xp, c0, yb, ldy, keep); break;
    case 3: tile(3, u, dw, nb, xp, c0, yb, ldy, keep); break;
    case 2: tile(2, u, dw, nb, xp, c0, yb, ldy, keep); break;
    case 1: tile(1, u, dw, nb, xp, c0, yb, ldy, keep); break;
    default: break;
    }
}

static void gemm_rows(const void *w, size_t w_row, int64_t r0, int64_t r1, const npl_gemm_x *xp, float *y, int64_t ldy) {
    const int64_t nb = xp->k / QK5_0;
    __m512i u[8 * nb];
    _Alignas(64) float dw[16 * nb];
    for (int64_t rb = r0; rb < r1; rb += ROWS) {
        const int two = r1 - rb > PANEL;
        const uint8_t *p0 = (const uint8_t *)w + rb * (int64_t)w_row;
        unpack_rows(p0, two ? p0 + PANEL * (int64_t)w_row : NULL, nb, u, dw);
        pass(u, dw, nb, xp, y + rb, ldy, two ? 0xFFFF : 0x00FF);
    }
}

/* ---- the file's q5_0 / q4_0 / q4_1 rows: each 16-row pass decodes its
 * rows into the same u vectors and scales (u = w + 16; q4_0's w + 8 and
 * q4_1's quant: the nibble), 8 rows at a time through an 8 x 8 transpose,
 * then the tiles. The decoding is a small part of a pass against 16 or
 * more activation rows (prefill), so prefill needs no packed copy. ---- */

enum { F_Q5_0, F_Q4_0, F_Q4_1, F_Q8_0 };

/* Activation row r of a q4_1 GEMM, a q8_1 row: quants, d, and q8_1's s
 * (d * sum, rounded to f16 by the quantizer) as a float in the offset's place */
static void pack_x1(const npl_gemm_x *xp, int64_t r, const void *row) {
    const block_q8_1 *x = row;
    const int64_t nb = xp->k / QK8_1, nbp = xp->kp / 32;
    int8_t *qs = x_qs(xp, r);
    float *d = x_d(xp, r), *sm = (float *)x_off(xp, r);
    for (int64_t b = 0; b < nbp; b++) {
        if (b >= nb) {
            memset(qs + b * NC * 32, 0, 32);
            d[b * NC] = sm[b * NC] = 0;
            continue;
        }
        memcpy(qs + b * NC * 32, x[b].qs, 32);
        d[b * NC] = h2f(x[b].d);
        sm[b * NC] = h2f(x[b].s);
    }
}

INLINE size_t fsize(const int F) {
    return F == F_Q5_0 ? sizeof(block_q5_0) : F == F_Q4_0 ? sizeof(block_q4_0) : F == F_Q8_0 ? sizeof(block_q8_0) : sizeof(block_q4_1);
}

/* block b of a row as 32 bytes of u in element order */
INLINE __m256i u32_of(const int F, const uint8_t *row, int64_t b) {
    const uint8_t *blk = row + (size_t)b * fsize(F);
    if (F == F_Q8_0) /* u = w + 128 */
        return _mm256_xor_si256(_mm256_loadu_si256((const __m256i *)(blk + 2)), _mm256_set1_epi8((char)0x80));
    const __m128i q = _mm_loadu_si128((const __m128i *)(blk + (F == F_Q5_0 ? 6 : F == F_Q4_0 ? 2 : 4)));
    const __m256i u = _mm256_and_si256(_mm256_inserti128_si256(_mm256_castsi128_si256(q), _mm_srli_epi16(q, 4), 1),
                                       _mm256_set1_epi8(0x0F));
    if (F != F_Q5_0) return u;
    uint32_t qh;
    memcpy(&qh, blk + 2, sizeof qh); /* bit e: the 5th bit of element e */
    return _mm256_mask_add_epi8(u, (__mmask32)qh, u, _mm256_set1_epi8(16));
}

/* rows [0, nr) of w (nr <= 16; the rest zero) as nb x 8 vectors of u and
 * nb x 16 scales (and, q4_1, mins) */
INLINE void decode_file_rows(const int F, const uint8_t *w, size_t w_row, int nr, int64_t nb, __m512i *u, float *dw,
                             float *mw) {
    for (int64_t b = 0; b < nb; b++) {
        for (int half = 0; half < 2; half++) {
            __m256i r[8];
            for (int j = 0; j < 8; j++) {
                const int row = 8 * half + j;
                uint16_t h[2] = {0, 0}; /* d, and q4_1's m */
                if (row < nr) memcpy(h, w + (size_t)row * w_row + (size_t)b * fsize(F), F == F_Q4_1 ? 4 : 2);
                r[j] = row < nr ? u32_of(F, w + (size_t)row * w_row, b) : _mm256_setzero_si256();
                dw[16 * b + row] = h2f(h[0]);
                if (F == F_Q4_1) mw[16 * b + row] = h2f(h[1]);
            }
            avx2_transpose8_epi32(r); /* r[g] lane j: elements 4g..4g+3 of row j */
            for (int g = 0; g < 8; g++) _mm256_store_si256((__m256i *)(u + 8 * b + g) + half, r[g]);
        }
    }
}

/* q4_1: the 16 rows against activation rows [c0, c0 + nc) of one tile, the
 * AVX2 q4_1 kernels' float step (plain C's): acc + ((dw * dx) * total + m * s) */
INLINE void tile1(const int nc, const __m512i *u, const float *dw, const float *mw, int64_t nb, const npl_gemm_x *xp,
                  int64_t c0, float *y, int64_t ldy, __mmask16 keep) {
    const int8_t *xq = x_qs(xp, c0);
    const float *xd = x_d(xp, c0), *xs = (const float *)x_off(xp, c0);
    __m512 acc[NC];
    for (int c = 0; c < nc; c++) acc[c] = _mm512_setzero_ps();
    for (int64_t b = 0; b < nb; b++, xq += NC * 32, xd += NC, xs += NC) {
        __m512i w[8];
        for (int g = 0; g < 8; g++) w[g] = _mm512_load_si512(u + 8 * b + g);
        const __m512 d = _mm512_load_ps(dw + 16 * b), m = _mm512_load_ps(mw + 16 * b);
        for (int c = 0; c < nc; c++) {
            __m512i s = _mm512_setzero_si512();
            for (int g = 0; g < 8; g++) dpbusd_bcast(&s, w[g], xq + 32 * c + 4 * g);
            __m512 pd = _mm512_mul_ps(_mm512_mul_ps(d, _mm512_set1_ps(xd[c])), _mm512_cvtepi32_ps(s));
            __m512 pm = _mm512_mul_ps(m, _mm512_set1_ps(xs[c]));
            __asm__("" : "+v"(pd), "+v"(pm)); /* no fma: plain C rounds each product */
            acc[c] = _mm512_add_ps(acc[c], _mm512_add_ps(pd, pm));
        }
    }
    for (int c = 0; c < nc; c++) _mm512_mask_storeu_ps(y + (c0 + c) * ldy, keep, acc[c]);
}

INLINE void pass1(const __m512i *u, const float *dw, const float *mw, int64_t nb, const npl_gemm_x *xp, float *yb, int64_t ldy,
                  __mmask16 keep) {
    const int64_t m = xp->m;
    int64_t c0 = 0;
    for (; c0 + NC <= m; c0 += NC) tile1(NC, u, dw, mw, nb, xp, c0, yb, ldy, keep);
    switch (m - c0) {
    case 7: tile1(7, u, dw, mw, nb, xp, c0, yb, ldy, keep); break;
    case 6: tile1(6, u, dw, mw, nb, xp, c0, yb, ldy, keep); break;
    case 5: tile1(5, u, dw, mw, nb, xp, c0, yb, ldy, keep); break;
    case 4: tile1(4, u, dw, mw, nb, xp, c0, yb, ldy, keep); break;
    case 3: tile1(3, u, dw, mw, nb, xp, c0, yb, ldy, keep); break;
    case 2: tile1(2, u, dw, mw, nb, xp, c0, yb, ldy, keep); break;
    case 1: tile1(1, u, dw, mw, nb, xp, c0, yb, ldy, keep); break;
    default: break;
    }
}

/* packed q4_1 (wpack.h's Q4_1 x 8): panels p0, p1 (p1 may repeat p0) as u vectors, scales and mins */
static void unpack_q4_1(const uint8_t *p0, const uint8_t *p1, int64_t nb, __m512i *u, float *dw, float *mw) {
    const __m512i m4 = _mm512_set1_epi8(0x0F);
    for (int64_t b = 0; b < nb; b++, p0 += NPL_WPACK_Q4_1_BLOCK, p1 += NPL_WPACK_Q4_1_BLOCK) {
        for (int h = 0; h < 4; h++) {
            const __m512i n = load2x256(p0 + 32 + 32 * h, p1 + 32 + 32 * h);
            _mm512_store_si512(u + 8 * b + h, _mm512_and_si512(n, m4));
            _mm512_store_si512(u + 8 * b + h + 4, _mm512_and_si512(_mm512_srli_epi16(n, 4), m4));
        }
        _mm512_store_ps(dw + 16 * b, scales16(p0, p1));
        _mm512_store_ps(mw + 16 * b, scales16(p0 + 16, p1 + 16));
    }
}

/* rows [r0, r1) of the file's rows (PACKED = 0) or a packed q4_1 matrix */
INLINE void rows_of(const int F, const int PACKED, const void *w, size_t w_row, int64_t r0, int64_t r1, const npl_gemm_x *xp,
                    float *y, int64_t ldy) {
    const int64_t nb = xp->k / 32;
    __m512i u[8 * nb];
    _Alignas(64) float dw[16 * nb], mw[F == F_Q4_1 ? 16 * nb : 1];
    for (int64_t rb = r0; rb < r1; rb += ROWS) {
        const int nr = r1 - rb < ROWS ? (int)(r1 - rb) : ROWS;
        const uint8_t *wb = (const uint8_t *)w + (size_t)rb * w_row;
        if (PACKED) unpack_q4_1(wb, nr > PANEL ? wb + PANEL * w_row : wb, nb, u, dw, mw);
        else decode_file_rows(F, wb, w_row, nr, nb, u, dw, mw);
        const __mmask16 keep = (__mmask16)((1u << nr) - 1);
        if (F == F_Q4_1) pass1(u, dw, mw, nb, xp, y + rb, ldy, keep);
        else pass(u, dw, nb, xp, y + rb, ldy, keep);
    }
}
static void rows_q5_0(const void *w, size_t w_row, int64_t r0, int64_t r1, const npl_gemm_x *xp, float *y, int64_t ldy) {
    rows_of(F_Q5_0, 0, w, w_row, r0, r1, xp, y, ldy);
}
static void rows_q4_0(const void *w, size_t w_row, int64_t r0, int64_t r1, const npl_gemm_x *xp, float *y, int64_t ldy) {
    rows_of(F_Q4_0, 0, w, w_row, r0, r1, xp, y, ldy);
}
static void rows_q4_1(const void *w, size_t w_row, int64_t r0, int64_t r1, const npl_gemm_x *xp, float *y, int64_t ldy) {
    rows_of(F_Q4_1, 0, w, w_row, r0, r1, xp, y, ldy);
}
static void rows_q8_0(const void *w, size_t w_row, int64_t r0, int64_t r1, const npl_gemm_x *xp, float *y, int64_t ldy) {
    rows_of(F_Q8_0, 0, w, w_row, r0, r1, xp, y, ldy);
}
static void rows_q4_1_packed(const void *w, size_t w_row, int64_t r0, int64_t r1, const npl_gemm_x *xp, float *y,
                             int64_t ldy) {
    rows_of(F_Q4_1, 1, w, w_row, r0, r1, xp, y, ldy);
}

static const npl_gemm_kernels k_q5_0_packed = {pack_x, gemm_rows}, k_q5_0 = {pack_x, rows_q5_0}, k_q4_0 = {pack_x8, rows_q4_0},
                              k_q4_1 = {pack_x1, rows_q4_1}, k_q4_1_packed = {pack_x1, rows_q4_1_packed},
                              k_q8_0 = {pack_x128, rows_q8_0};

const npl_gemm_kernels *npl_gemm_get_avx512_packed(npl_type t) {
    return t == NPL_TYPE_Q5_0 ? &k_q5_0_packed : t == NPL_TYPE_Q4_1 ? &k_q4_1_packed : NULL;
}
const npl_gemm_kernels *npl_gemm_get_avx512_b32(npl_type t) {
    return t == NPL_TYPE_Q5_0 ? &k_q5_0 : t == NPL_TYPE_Q4_0 ? &k_q4_0 : t == NPL_TYPE_Q4_1 ? &k_q4_1 : t == NPL_TYPE_Q8_0 ? &k_q8_0 : NULL;
}

#else
const npl_gemm_kernels *npl_gemm_get_avx512_packed(npl_type t) {
    (void)t;
    return NULL;
}
const npl_gemm_kernels *npl_gemm_get_avx512_b32(npl_type t) {
    (void)t;
    return NULL;
}
#endif
