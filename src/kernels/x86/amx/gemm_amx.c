/* AMX-INT8 GEMM for prefill (see gemm.h): C[16 activation rows][16 weight
 * rows] per block of 32 (16 for q6_K) by one TDPBSSD, then scaled into f32
 * accumulators with AVX-512 (one conversion, scale product and fma per
 * activation row). Weights are decoded 16 rows at a time by the AVX-512
 * decoders and regathered into the tile's VNNI layout (four bytes of K per
 * column) as signed bytes, so only q4_K's mins need a float correction: a
 * 16 x 16 transpose of 4-byte lanes per 64-element step (64 shuffles) rather
 * than a 16-element gather per B row (~16 loads each; the gathers were ~40 %
 * of a weight panel's time). vnpu's fused GGML matmuls use this GEMM too.
 * Activations are packed tile by tile: 16 rows x one block, contiguous. */
#include "kernels/gemm.h"

#if defined(__x86_64__)
#include <immintrin.h>

#include "kernels/x86/amx/amx_tiles.h"
#include "kernels/x86/avx512/gemm_decode.h"

/* v[l] = dword l of each of the 16 inputs (v[r] dword l in, v[l] dword r out) */
static inline __attribute__((always_inline)) void transpose16(__m512i v[16]) {
    __m512i t[16];
    for (int i = 0; i < 8; i++) {
        t[2 * i] = _mm512_unpacklo_epi32(v[2 * i], v[2 * i + 1]);
        t[2 * i + 1] = _mm512_unpackhi_epi32(v[2 * i], v[2 * i + 1]);
    }
    for (int i = 0; i < 4; i++) { /* v[4i + j], 128-bit lane L: column 4L + j of rows 4i..4i+3 */
        v[4 * i] = _mm512_unpacklo_epi64(t[4 * i], t[4 * i + 2]);
        v[4 * i + 1] = _mm512_unpackhi_epi64(t[4 * i], t[4 * i + 2]);
        v[4 * i + 2] = _mm512_unpacklo_epi64(t[4 * i + 1], t[4 * i + 3]);
        v[4 * i + 3] = _mm512_unpackhi_epi64(t[4 * i + 1], t[4 * i + 3]);
    }
    for (int j = 0; j < 4; j++) {
        t[j] = _mm512_shuffle_i32x4(v[j], v[4 + j], 0x88);      /* columns j, j+8 of row groups 0, 1 */
        t[j + 4] = _mm512_shuffle_i32x4(v[j], v[4 + j], 0xdd);  /* columns j+4, j+12 of groups 0, 1 */
        t[j + 8] = _mm512_shuffle_i32x4(v[8 + j], v[12 + j], 0x88);
        t[j + 12] = _mm512_shuffle_i32x4(v[8 + j], v[12 + j], 0xdd);
    }
    for (int j = 0; j < 4; j++) {
        v[j] = _mm512_shuffle_i32x4(t[j], t[j + 8], 0x88);
        v[j + 8] = _mm512_shuffle_i32x4(t[j], t[j + 8], 0xdd);
        v[j + 4] = _mm512_shuffle_i32x4(t[j + 4], t[j + 12], 0x88);
        v[j + 12] = _mm512_shuffle_i32x4(t[j + 4], t[j + 12], 0xdd);
    }
}

enum { N = 16 }; /* weight rows per panel = activation rows per tile */

/* tmm0-3: C (16 x 16 int32) of four blocks, tmm4 / tmm6: A activations
 * (16 x bk bytes), tmm5 / tmm7: B weights (bk/4 x 64 bytes) */
static void configure(int bk) {
    const uint8_t rows[8] = {16, 16, 16, 16, 16, (uint8_t)(bk / 4), 16, (uint8_t)(bk / 4)};
    const uint16_t colsb[8] = {64, 64, 64, 64, (uint16_t)bk, 64, (uint16_t)bk, 64};
    npl_amx_configure(8, rows, colsb);
}

typedef struct {
    decode_fn dec;
    int bk;        /* elements per scale block: 32, or 16 for q6_K */
    int offset;    /* subtracted from u to make w signed (0: keep u, add the mins) */
    int has_min;
} amx_type;

/* acc[c] += dx[c] * dw * C[c] for the 16 activation rows c of one block */
static inline __attribute__((always_inline)) void scale_block(__m512 acc[N], const int32_t *cb, const float *dw,
                                                              const float *dx) {
    const __m512 d = _mm512_load_ps(dw);
    for (int c = 0; c < N; c++)
        acc[c] = _mm512_fmadd_ps(_mm512_mul_ps(_mm512_set1_ps(dx[c]), d),
                                 _mm512_cvtepi32_ps(_mm512_load_si512(cb + c * 16)), acc[c]);
}

static void rows_amx(const amx_type *at, const void *w, size_t w_row, int64_t r0, int64_t r1,
                     const npl_gemm_x *xp, float *y, int64_t ldy) {
    const int64_t kp = xp->kp, ng = xp->ng, nd = kp / 16, bk = at->bk, nb = kp / bk, gpb = bk / 16;
    /* decoded rows (u, d, m), the tile-ordered weights, per-block scales and mins over the 16 rows */
    const size_t dec_bytes = (size_t)N * (size_t)(kp + nd * 4 + ng * 4);
    const size_t b_bytes = (size_t)N * (size_t)kp, s_bytes = (size_t)(nb + nd) * N * 4;
    uint8_t raw[dec_bytes + b_bytes + s_bytes + 2 * 64 + 4 * 16 * 64];
    uint8_t *base = (uint8_t *)(((uintptr_t)raw + 63) & ~(uintptr_t)63);
    wpanel p = {kp, ng, base, NULL, NULL};
    p.d = (float *)(p.u + N * kp);
    p.m = p.d + N * nd;
    int8_t *bt = (int8_t *)(((uintptr_t)(p.m + N * ng) + 63) & ~(uintptr_t)63); /* [nb][bk/4][64] */
    float *dw = (float *)(bt + b_bytes);   /* [nb][16] */
    float *mw = dw + nb * N;               /* [nd][16] */
    int32_t *cbuf = (int32_t *)(((uintptr_t)(mw + nd * N) + 63) & ~(uintptr_t)63);
    const __m512i rows_d = _mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                                              _mm512_set1_epi32((int)nd));
    const __m512i rows_m = _mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                                              _mm512_set1_epi32((int)ng));
    const __m512i off = _mm512_set1_epi8((char)at->offset);
    configure((int)bk);
    for (int64_t rb = r0; rb < r1; rb += N) {
        const int nrow = r1 - rb < N ? (int)(r1 - rb) : N;
        for (int j = 0; j < nrow; j++) at->dec((const uint8_t *)w + (rb + j) * (int64_t)w_row, xp->k, &p, j);
        for (int j = nrow; j < N; j++) decode_tail(&p, j, 0);
        /* regather: B row q of block b = elements 4q..4q+3 of the block in
         * each of the 16 rows, i.e. one 4-byte lane of the step holding it:
         * a 16 x 16 transpose of the step's lanes per step instead of a
         * gather per B row */
        for (int64_t s = 0; s < kp / 64; s++) {
            __m512i v[N];
            for (int j = 0; j < N; j++) v[j] = _mm512_load_si512(p.u + j * kp + s * 64);
            transpose16(v);
            for (int64_t b = s * (64 / bk); b < (s + 1) * (64 / bk); b++) {
                const int g0 = (int)((b * bk % 64) / 16);
                for (int q = 0; q < bk / 4; q++)
                    _mm512_store_si512(bt + (b * (bk / 4) + q) * 64, _mm512_sub_epi8(v[4 * (q % 4) + g0 + q / 4], off));
            }
        }
        for (int64_t b = 0; b < nb; b++) _mm512_store_ps(dw + b * N, _mm512_i32gather_ps(rows_d, p.d + b * gpb, 4));
        if (at->has_min)
            for (int64_t g = 0; g < nd; g++) _mm512_store_ps(mw + g * N, _mm512_i32gather_ps(rows_m, p.m + g, 4));
        const __mmask16 keep = (__mmask16)((1u << nrow) - 1);
        for (int64_t c0 = 0; c0 < xp->m; c0 += N) {
            const int nc = xp->m - c0 < N ? (int)(xp->m - c0) : N;
            const int8_t *xa = xp->qs + c0 * kp;
            /* activation scales and sums of this tile: [group][16 rows] */
            const float *xd = xp->d + c0 * nd, *xs = xp->sum + c0 * ng;
            __m512 acc[N];
            for (int c = 0; c < N; c++) acc[c] = _mm512_setzero_ps();
            int64_t b = 0;
            /* four blocks in flight: their products are independent, so the
             * tile unit runs ahead while earlier blocks are scaled */
            for (; b + 4 <= nb; b += 4) {
                _tile_zero(0);
                _tile_zero(1);
                _tile_zero(2);
                _tile_zero(3);
                _tile_loadd(4, xa + b * bk * 16, bk);
                _tile_loadd(5, bt + b * bk * 16, 64);
                _tile_dpbssd(0, 4, 5);
                _tile_loadd(6, xa + (b + 1) * bk * 16, bk);
                _tile_loadd(7, bt + (b + 1) * bk * 16, 64);
                _tile_dpbssd(1, 6, 7);
                _tile_loadd(4, xa + (b + 2) * bk * 16, bk);
                _tile_loadd(5, bt + (b + 2) * bk * 16, 64);
                _tile_dpbssd(2, 4, 5);
                _tile_loadd(6, xa + (b + 3) * bk * 16, bk);
                _tile_loadd(7, bt + (b + 3) * bk * 16, 64);
                _tile_dpbssd(3, 6, 7);
                _tile_stored(0, cbuf, 64);
                _tile_stored(1, cbuf + 256, 64);
                _tile_stored(2, cbuf + 512, 64);
                _tile_stored(3, cbuf + 768, 64);
                for (int i = 0; i < 4; i++) scale_block(acc, cbuf + 256 * i, dw + (b + i) * N, xd + (b + i) * gpb * N);
            }
            for (; b < nb; b++) {
                _tile_zero(0);
                _tile_loadd(4, xa + b * bk * 16, bk);
                _tile_loadd(5, bt + b * bk * 16, 64);
                _tile_dpbssd(0, 4, 5);
                _tile_stored(0, cbuf, 64);
                scale_block(acc, cbuf, dw + b * N, xd + b * gpb * N);
            }
            if (at->has_min)
                for (int64_t g = 0; g < nd; g++) {
                    const __m512 m = _mm512_load_ps(mw + g * N);
                    for (int c = 0; c < N; c++) acc[c] = _mm512_fmadd_ps(_mm512_set1_ps(xs[g * N + c]), m, acc[c]);
                }
            for (int c = 0; c < nc; c++) _mm512_mask_storeu_ps(y + (c0 + c) * ldy + rb, keep, acc[c]);
        }
    }
    _tile_release();
}

static const amx_type t_q4_0 = {decode_q4_0, 32, 8, 0}, t_q5_0 = {decode_q5_0, 32, 16, 0},
                      t_q8_0 = {decode_q8_0, 32, 128, 0}, t_q4_K = {decode_q4_K, 32, 0, 1},
                      t_q6_K = {decode_q6_K, 16, 32, 0};

#define ROWS_FN(name, at)                                                                                   \
    static void name(const void *w, size_t w_row, int64_t r0, int64_t r1, const npl_gemm_x *xp, float *y, \
                     int64_t ldy) {                                                                         \
        rows_amx(&at, w, w_row, r0, r1, xp, y, ldy);                                                        \
    }
ROWS_FN(rows_q4_0, t_q4_0)
ROWS_FN(rows_q5_0, t_q5_0)
ROWS_FN(rows_q8_0, t_q8_0)
ROWS_FN(rows_q4_K, t_q4_K)
ROWS_FN(rows_q6_K, t_q6_K)

static const npl_gemm_kernels k_q4_0 = {pack_q8_0_tiles, rows_q4_0}, k_q5_0 = {pack_q8_0_tiles, rows_q5_0},
                              k_q8_0 = {pack_q8_0_tiles, rows_q8_0}, k_q4_K = {pack_q8_K_tiles32, rows_q4_K},
                              k_q6_K = {pack_q8_K_tiles16, rows_q6_K};

const npl_gemm_kernels *npl_gemm_get_amx(npl_type t) {
    switch (t) {
    case NPL_TYPE_Q4_0: return &k_q4_0;
    case NPL_TYPE_Q5_0: return &k_q5_0;
    case NPL_TYPE_Q8_0: return &k_q8_0;
    case NPL_TYPE_Q4_K: return &k_q4_K;
    case NPL_TYPE_Q6_K: return &k_q6_K;
    default: return NULL;
    }
}

#else
const npl_gemm_kernels *npl_gemm_get_amx(npl_type t) {
    (void)t;
    return NULL;
}
#endif
