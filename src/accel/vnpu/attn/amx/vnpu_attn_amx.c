/* vnpu attention on AMX tiles (TDPBF16PS), for prefill chunks.
 *
 * A tile is 16 query rows that read one kv head (the heads of a group for
 * 16 / group nearby queries). Scores are computed transposed, S^T = K Q^T
 * (A = 16 cache rows, B = the tile's q in the pair-interleaved layout), so
 * the online softmax runs with one query row per vector lane; the output
 * too, O^T = V^T P^T, with V^T prepared once per step for every tile.
 *
 * Precision: every bf16 operand is split into hi + lo (x = hi + lo, both
 * bf16) and products take hi.hi + hi.lo + lo.hi, so f16 inputs (K, V and
 * f16 activations) enter exactly and products keep ~16 bits: the result
 * stays within f32 rounding noise of the f32 kernels, not bf16's 8 bits.
 *
 * Called only for the AMX family (the tile permission was granted). */
#include <immintrin.h>
#include <math.h>
#include <stddef.h>
#include <string.h>

#include "accel/vnpu/vnpu_attn.h"
#include "cpu/kernels/x86/amx/amx_tiles.h"
#include "cpu/kernels/x86/avx512/avx512_math.h"

/* every tile 16 rows x 64 bytes */
static void configure_tiles(void) {
    const uint8_t rows[8] = {16, 16, 16, 16, 16, 16, 16, 16};
    const uint16_t colsb[8] = {64, 64, 64, 64, 64, 64, 64, 64};
    npl_amx_configure(8, rows, colsb);
}

/* bf16 hi and lo parts of 16 floats, each zero-extended into 32-bit lanes */
static inline void split16(__m512 x, __m512i *hi, __m512i *lo) {
    const __m256i h = (__m256i)_mm512_cvtneps_pbh(x);
    const __m512i hw = _mm512_cvtepu16_epi32(h);
    const __m512 hf = _mm512_castsi512_ps(_mm512_slli_epi32(hw, 16));
    *hi = hw;
    *lo = _mm512_cvtepu16_epi32((__m256i)_mm512_cvtneps_pbh(_mm512_sub_ps(x, hf)));
}

/* 16 x 16 transpose of 32-bit words through memory (prep and per-tile setup only) */
static void transpose16(const uint32_t *src, uint32_t *dst) {
    for (int i = 0; i < 16; i++)
        for (int j = 0; j < 16; j++) dst[j * 16 + i] = src[i * 16 + j];
}

void vnpu_attn_amx_prep(const vnpu_attn_prep *p, int64_t g) {
    const int hd = p->hd;
    const int64_t key0 = p->kb0 + g * VNPU_ATTN_KG;
    uint16_t *khi = p->khi + g * VNPU_ATTN_KG * hd, *klo = p->klo + g * VNPU_ATTN_KG * hd;
    /* K rows: bf16 hi / lo, row-major (the A operand of S^T = K Q^T) */
    for (int k = 0; k < VNPU_ATTN_KG; k++) {
        const int64_t j = key0 + k;
        const int ok = j >= p->lo && j < p->hi;
        const uint16_t *src = p->kc + j * p->row_stride;
        for (int d = 0; d < hd; d += 16) {
            __m512i h, l;
            split16(ok ? _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(src + d))) : _mm512_setzero_ps(), &h, &l);
            _mm256_storeu_si256((__m256i *)(khi + k * hd + d), _mm512_cvtepi32_epi16(h));
            _mm256_storeu_si256((__m256i *)(klo + k * hd + d), _mm512_cvtepi32_epi16(l));
        }
    }
    /* V^T tiles: per 32 keys and 16 dims, row d holds the 16 key pairs
     * (V[2kk][d], V[2kk+1][d]) (the A operand of O^T = V^T P^T) */
    _Alignas(64) uint32_t th[256], tl[256];
    for (int sub = 0; sub < VNPU_ATTN_KG / 32; sub++)
        for (int t = 0; t < hd / 16; t++) {
            for (int kk = 0; kk < 16; kk++) {
                __m512i h[2], l[2];
                for (int e = 0; e < 2; e++) {
                    const int64_t j = key0 + sub * 32 + 2 * kk + e;
                    const int ok = j >= p->lo && j < p->hi;
                    const __m512 v = ok ? _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(p->vc + j * p->row_stride + t * 16)))
                                        : _mm512_setzero_ps();
                    split16(v, &h[e], &l[e]);
                }
                _mm512_store_si512(th + kk * 16, _mm512_or_si512(h[0], _mm512_slli_epi32(h[1], 16)));
                _mm512_store_si512(tl + kk * 16, _mm512_or_si512(l[0], _mm512_slli_epi32(l[1], 16)));
            }
            const int64_t tile = ((g * (VNPU_ATTN_KG / 32) + sub) * (hd / 16) + t) * 256;
            transpose16(th, p->vhi + tile);
            transpose16(tl, p->vlo + tile);
        }
}

/* q rows of a tile to the pair-interleaved, transposed B layout, hi and lo:
 * per k-step s, word [kk][r] = dims (32 s + 2 kk, 32 s + 2 kk + 1) of row r */
static void prep_q(const vnpu_attn_tile *t, int hd, uint32_t *qth, uint32_t *qtl) {
    _Alignas(64) uint32_t tmp_h[256], tmp_l[256];
    const __m512i idx_even = _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0);
    const __m512i idx_odd = _mm512_set_epi32(31, 29, 27, 25, 23, 21, 19, 17, 15, 13, 11, 9, 7, 5, 3, 1);
    for (int s = 0; s < hd / 32; s++) {
        for (int r = 0; r < 16; r++) {
            __m512i h[2], l[2];
            for (int e = 0; e < 2; e++)
                split16(t->q[r] ? _mm512_loadu_ps(t->q[r] + s * 32 + e * 16) : _mm512_setzero_ps(), &h[e], &l[e]);
            const __m512i he = _mm512_permutex2var_epi32(h[0], idx_even, h[1]), ho = _mm512_permutex2var_epi32(h[0], idx_odd, h[1]);
            const __m512i le = _mm512_permutex2var_epi32(l[0], idx_even, l[1]), lo = _mm512_permutex2var_epi32(l[0], idx_odd, l[1]);
            _mm512_store_si512(tmp_h + r * 16, _mm512_or_si512(he, _mm512_slli_epi32(ho, 16)));
            _mm512_store_si512(tmp_l + r * 16, _mm512_or_si512(le, _mm512_slli_epi32(lo, 16)));
        }
        transpose16(tmp_h, qth + s * 256);
        transpose16(tmp_l, qtl + s * 256);
    }
}

/* Per tile state: q in B layout, O^T [hd][16 rows], S^T [keys][16 rows],
 * P^T in B layout, running max and sum. */
typedef struct {
    _Alignas(64) uint32_t qth[16 * 256], qtl[16 * 256]; /* hd <= 512: 16 k-steps */
    _Alignas(64) float ot[512 * 16];
    _Alignas(64) float st[VNPU_ATTN_KG * 16];
    _Alignas(64) uint32_t pth[VNPU_ATTN_KG / 32][256], ptl[VNPU_ATTN_KG / 32][256];
    __m512 m, l;
    __m512i j0, j1;
} tile_state;

/* online softmax of one tile over keys [kb, kb + KG): st -> P^T, rescales O^T */
static void softmax_block(tile_state *z, int hd, int64_t kb, float scale_f, float cap) {
    const __m512 scale = _mm512_set1_ps(scale_f), ninf = _mm512_set1_ps(-INFINITY);
    __m512 mb = z->m;
    for (int k = 0; k < VNPU_ATTN_KG; k++) {
        __m512 s = _mm512_mul_ps(_mm512_load_ps(z->st + k * 16), scale);
        if (cap > 0.0f) { /* cap * tanh(s / cap), tanh(x) = 1 - 2 / (exp(2x) + 1) */
            const __m512 e = exp512(_mm512_mul_ps(s, _mm512_set1_ps(2.0f / cap)));
            s = _mm512_mul_ps(_mm512_set1_ps(cap), _mm512_sub_ps(_mm512_set1_ps(1.0f),
                              _mm512_div_ps(_mm512_set1_ps(2.0f), _mm512_add_ps(e, _mm512_set1_ps(1.0f)))));
        }
        const __m512i kj = _mm512_set1_epi32((int)(kb + k));
        const __mmask16 ok = _mm512_cmpge_epi32_mask(kj, z->j0) & _mm512_cmplt_epi32_mask(kj, z->j1);
        s = _mm512_mask_mov_ps(ninf, ok, s);
        _mm512_store_ps(z->st + k * 16, s);
        mb = _mm512_max_ps(mb, s);
    }
    /* rows with nothing attended yet keep m = -inf: use 0 as their reference (all p = 0) */
    const __mmask16 live = _mm512_cmp_ps_mask(mb, ninf, _CMP_NEQ_OQ);
    const __m512 mref = _mm512_maskz_mov_ps(live, mb);
    const __m512 corr = _mm512_mask_mov_ps(_mm512_set1_ps(1.0f), live, exp512(_mm512_sub_ps(z->m, mref)));
    z->m = _mm512_mask_mov_ps(z->m, live, mb);
    __m512 sum = _mm512_setzero_ps();
    for (int k = 0; k < VNPU_ATTN_KG; k += 2) {
        const __m512 se = _mm512_load_ps(z->st + k * 16), so = _mm512_load_ps(z->st + (k + 1) * 16);
        const __m512 pe = _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(se, ninf, _CMP_NEQ_OQ), exp512(_mm512_sub_ps(se, mref)));
        const __m512 po = _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(so, ninf, _CMP_NEQ_OQ), exp512(_mm512_sub_ps(so, mref)));
        sum = _mm512_add_ps(sum, _mm512_add_ps(pe, po));
        __m512i he, le, ho, lo;
        split16(pe, &he, &le);
        split16(po, &ho, &lo);
        _mm512_store_si512(z->pth[k / 32] + (k % 32 / 2) * 16, _mm512_or_si512(he, _mm512_slli_epi32(ho, 16)));
        _mm512_store_si512(z->ptl[k / 32] + (k % 32 / 2) * 16, _mm512_or_si512(le, _mm512_slli_epi32(lo, 16)));
    }
    z->l = _mm512_fmadd_ps(z->l, corr, sum);
    for (int d = 0; d < hd; d++) _mm512_store_ps(z->ot + d * 16, _mm512_mul_ps(_mm512_load_ps(z->ot + d * 16), corr));
}

/* Tiles t[0..nt) (nt = 1 or 2) over the union of their key blocks: every
 * K and V tile loaded serves both, halving the cache traffic per row. Tile
 * registers: QK: C tmm0-1 (one per tile), A = K hi/lo of 16 keys tmm2-3,
 * B = q hi/lo tmm4-5 (tile 0), tmm6-7 (tile 1); PV: C tmm0-1 (one 16-dim
 * slice of each tile's O^T), A = V^T hi/lo tmm2-3, B = P^T hi/lo tmm4-7. */
void vnpu_attn_amx_tiles(const vnpu_attn_prep *p, const vnpu_attn_tile *t, int nt, void *state) {
    const int hd = p->hd, nks = hd / 32, ndt = hd / 16;
    tile_state *z = state;
    int64_t k0 = INT64_MAX, k1 = 0; /* the union of the tiles' key blocks */
    for (int u = 0; u < nt; u++) {
        prep_q(&t[u], hd, z[u].qth, z[u].qtl);
        memset(z[u].ot, 0, sizeof(float) * (size_t)(hd * 16));
        z[u].m = _mm512_set1_ps(-INFINITY);
        z[u].l = _mm512_setzero_ps();
        z[u].j0 = _mm512_loadu_si512(t[u].j0);
        z[u].j1 = _mm512_loadu_si512(t[u].j1);
        if (t[u].k1 > t[u].k0) {
            k0 = t[u].k0 < k0 ? t[u].k0 : k0;
            k1 = t[u].k1 > k1 ? t[u].k1 : k1;
        }
    }
    if (k1 == 0) k0 = 0;
    configure_tiles();
    for (int64_t kb = k0; kb < k1; kb += VNPU_ATTN_KG) {
        const int64_t g = (kb - p->kb0) / VNPU_ATTN_KG;
        const uint16_t *khi = p->khi + g * VNPU_ATTN_KG * hd, *klo = p->klo + g * VNPU_ATTN_KG * hd;
        for (int k16 = 0; k16 < VNPU_ATTN_KG / 16; k16++) {
            _tile_zero(0);
            _tile_zero(1);
            const uint16_t *kh = khi + k16 * 16 * hd, *kl = klo + k16 * 16 * hd;
            for (int s = 0; s < nks; s++) {
                _tile_loadd(2, kh + s * 32, hd * 2);
                _tile_loadd(3, kl + s * 32, hd * 2);
                _tile_loadd(4, z[0].qth + s * 256, 64);
                _tile_loadd(5, z[0].qtl + s * 256, 64);
                _tile_dpbf16ps(0, 2, 4);
                _tile_dpbf16ps(0, 2, 5);
                _tile_dpbf16ps(0, 3, 4);
                if (nt > 1) {
                    _tile_loadd(6, z[1].qth + s * 256, 64);
                    _tile_loadd(7, z[1].qtl + s * 256, 64);
                    _tile_dpbf16ps(1, 2, 6);
                    _tile_dpbf16ps(1, 2, 7);
                    _tile_dpbf16ps(1, 3, 6);
                }
            }
            _tile_stored(0, z[0].st + k16 * 16 * 16, 64);
            if (nt > 1) _tile_stored(1, z[1].st + k16 * 16 * 16, 64);
        }
        for (int u = 0; u < nt; u++) softmax_block(&z[u], hd, kb, p->scale, p->softcap);
        for (int d = 0; d < ndt; d++) {
            _tile_loadd(0, z[0].ot + d * 256, 64);
            if (nt > 1) _tile_loadd(1, z[1].ot + d * 256, 64);
            for (int sub = 0; sub < VNPU_ATTN_KG / 32; sub++) {
                const int64_t vt = ((g * (VNPU_ATTN_KG / 32) + sub) * ndt + d) * 256;
                _tile_loadd(2, p->vhi + vt, 64);
                _tile_loadd(3, p->vlo + vt, 64);
                _tile_loadd(4, z[0].pth[sub], 64);
                _tile_loadd(5, z[0].ptl[sub], 64);
                _tile_dpbf16ps(0, 2, 4);
                _tile_dpbf16ps(0, 2, 5);
                _tile_dpbf16ps(0, 3, 4);
                if (nt > 1) {
                    _tile_loadd(6, z[1].pth[sub], 64);
                    _tile_loadd(7, z[1].ptl[sub], 64);
                    _tile_dpbf16ps(1, 2, 6);
                    _tile_dpbf16ps(1, 2, 7);
                    _tile_dpbf16ps(1, 3, 6);
                }
            }
            _tile_stored(0, z[0].ot + d * 256, 64);
            if (nt > 1) _tile_stored(1, z[1].ot + d * 256, 64);
        }
    }
    _tile_release();
    /* out row r = O^T[.][r] / l[r]; rows that attended nothing (padding) get 0 */
    for (int u = 0; u < nt; u++) {
        _Alignas(64) float inv[16];
        _mm512_store_ps(inv, _mm512_maskz_div_ps(_mm512_cmp_ps_mask(z[u].l, _mm512_setzero_ps(), _CMP_GT_OQ),
                                                 _mm512_set1_ps(1.0f), z[u].l));
        for (int r = 0; r < 16; r++)
            if (t[u].o[r])
                for (int d = 0; d < hd; d++) t[u].o[r][d] = z[u].ot[d * 16 + r] * inv[r];
    }
}

size_t vnpu_attn_amx_state_size(void) { return 2 * sizeof(tile_state); }
