/* Attention on AMX tiles (TDPBF16PS): the AMX family's one attention
 * arithmetic, for the CPU backend and vnpu, decode and prefill alike.
 *
 * A tile is 16 query rows that read one kv head (the heads of a group for
 * 16 / group nearby queries). Scores are computed transposed, S^T = K Q^T
 * (A = 16 cache rows, B = the tile's q in the pair-interleaved layout), so
 * the online softmax runs with one query row per vector lane; the output
 * too, O^T = V^T P^T, with V^T prepared once per call for every tile.
 *
 * Precision: every bf16 operand is split into hi + lo (x = hi + lo, both
 * bf16) and products take hi.hi + hi.lo + lo.hi, so f16 inputs (K, V and
 * q, which callers round to f16) enter exactly and products keep ~16 bits:
 * the result stays within f32 rounding noise of the f32 kernels.
 *
 * Batch invariance: every score and every block update of a row is computed
 * from that row's own q and range alone (AMX and the vector code work per
 * element / per lane); blocks sit at absolute multiples of KG; a block the
 * row does not attend leaves it exactly unchanged (corr = exp(0) = 1, p = 0,
 * and cache rows nobody attends are prepared as zeros, so NaN in them stays
 * out). Which rows share a tile, and how many queries a call has, does not
 * change a row's bits. */
#include "kernels/x86/amx/attn_amx.h"

#include <immintrin.h>
#include <math.h>
#include <stdatomic.h>
#include <string.h>

#include "kernels/x86/amx/amx_tiles.h"
#include "kernels/x86/avx512/avx512_math.h"

#define KG NPL_ATTN_AMX_KG
#define PREP_CAP ((size_t)64 << 20) /* prepared bytes per pass: kv heads beyond it take more passes */

typedef struct {
    const float *q[16]; /* NULL: padding or no row */
    float *o[16];       /* NULL: no row */
    int32_t j0[16], j1[16];
    int64_t k0, k1; /* blocks covering every row's range */
} tile;

/* Per tile state: q in B layout, O^T [hd][16 rows], S^T [keys][16 rows],
 * P^T in B layout, running max and sum. */
typedef struct {
    _Alignas(64) uint32_t qth[16 * 256], qtl[16 * 256]; /* hd <= 512: 16 k-steps */
    _Alignas(64) float ot[512 * 16];
    _Alignas(64) float st[KG * 16];
    _Alignas(64) uint32_t pth[KG / 32][256], ptl[KG / 32][256];
    __m512 m, l;
    __m512i j0, j1;
} tile_state;

/* One call's plan: kv heads [h0, h0 + nh) prepared over keys
 * [kb0, kb0 + groups KG); each head's block at prep + (h - h0) head_bytes
 * holds K hi, K lo ([key][hd] u16), V^T hi, V^T lo (1 KiB tiles per 32 keys
 * and 16 dims). */
typedef struct {
    const npl_attn_args *a;
    int64_t kb0, groups;
    const int32_t *live; /* live[j - kb0]: some row of the call attends key j */
    uint8_t *prep;
    size_t head_bytes;
    int h0, nh, qb, n_tiles, n_pairs;
    int fused;         /* one tile unit per kv head: each unit prepares its blocks as it goes */
    tile_state *state; /* 2 per thread */
    uint8_t *blocks;   /* fused: one prepared block (head_bytes(KG)) per thread */
    void (*unit)(const void *j, int ith, int64_t u);
    int64_t n_units;
    atomic_llong next;
} job;

static int64_t round_up(int64_t v, int64_t m) { return (v + m - 1) / m * m; }

int npl_attn_amx_fits(int n_head, int n_kv, int hd) {
    return n_kv > 0 && n_head % n_kv == 0 && hd > 0 && hd % 32 == 0 && hd <= 512 && 16 % (n_head / n_kv) == 0;
}

static size_t head_bytes(int64_t rows, int hd) { return (size_t)rows * (size_t)hd * 8; }

/* kv heads prepared per pass for a cache of n_ctx rows */
static int heads_per_pass(int64_t n_ctx, int n_kv, int hd) {
    const size_t hb = head_bytes(round_up(n_ctx, KG) + KG, hd);
    const size_t n = PREP_CAP / hb;
    return n < 1 ? 1 : n > (size_t)n_kv ? n_kv : (int)n;
}

size_t npl_attn_amx_scratch(int64_t n_ctx, int n_kv, int hd, int nth) {
    const int64_t rows = round_up(n_ctx, KG) + KG;
    return 64 + (size_t)(nth > 0 ? nth : 1) * (2 * sizeof(tile_state) + head_bytes(KG, hd)) +
           (size_t)round_up((rows + 1) * 4, 64) +
           (size_t)heads_per_pass(n_ctx, n_kv, hd) * head_bytes(rows, hd);
}

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

/* 16 x 16 transpose of 32-bit words: column d of src gathered into row d */
static inline void transpose16(const uint32_t *src, uint32_t *dst) {
    const __m512i idx = _mm512_mullo_epi32(_mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0),
                                           _mm512_set1_epi32(16));
    for (int d = 0; d < 16; d++) _mm512_storeu_si512(dst + d * 16, _mm512_i32gather_epi32(idx, src + d, 4));
}

/* 16 f16 cache values split exactly into bf16 hi (truncated) and lo =
 * x - hi, as f32 bit patterns whose low halves are zero: an f16 value has
 * 11 significant bits, hi takes 8 and lo the other 3 (no rounding needed,
 * and cheaper than split16); keys nobody attends give zeros. */
static inline void cache_split(const uint16_t *p, int ok, __m512i *hi, __m512i *lo) {
    const __m512 x = ok ? _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)p)) : _mm512_setzero_ps();
    *hi = _mm512_and_si512(_mm512_castps_si512(x), _mm512_set1_epi32((int)0xFFFF0000u));
    *lo = _mm512_castps_si512(_mm512_sub_ps(x, _mm512_castsi512_ps(*hi)));
}

/* Prepares keys [key0, key0 + KG) of kv head kvh as group g of a buffer
 * of `rows` keys at base (layout in the job comment); live[k]: key0 + k is
 * attended by some row (others are zeros). The cache rows are strided and
 * often in DRAM (decode reads each once): while K is split, this group's V
 * rows and, with more = 1, the next group's K rows are prefetched. */
static void prep_group(const npl_attn_args *a, int kvh, int64_t key0, const int32_t *live, uint8_t *base, int64_t rows,
                       int64_t g, int more) {
    const int hd = a->hd;
    const int64_t ks = (int64_t)a->n_kv * hd;
    const uint16_t *kc = a->kc + (int64_t)kvh * hd, *vc = a->vc + (int64_t)kvh * hd;
    uint16_t *khi = (uint16_t *)base + g * KG * hd, *klo = (uint16_t *)base + (rows + g * KG) * hd;
    uint32_t *vhi = (uint32_t *)((uint16_t *)base + 2 * rows * hd), *vlo = vhi + rows * hd / 2;
    /* K rows: bf16 hi / lo, row-major (the A operand of S^T = K Q^T) */
    const __m512i odd16 = _mm512_add_epi16(_mm512_slli_epi16(
        _mm512_set_epi16(31, 30, 29, 28, 27, 26, 25, 24, 23, 22, 21, 20, 19, 18, 17, 16, 15, 14, 13, 12, 11, 10, 9, 8, 7,
                         6, 5, 4, 3, 2, 1, 0), 1), _mm512_set1_epi16(1));
    for (int k = 0; k < KG; k++) {
        const uint16_t *src = kc + (key0 + k) * ks;
        for (int d = 0; d < hd; d += 32) {
            if (more) _mm_prefetch((const char *)(src + KG * ks + d), _MM_HINT_T0);
            if (live[k]) _mm_prefetch((const char *)(vc + (key0 + k) * ks + d), _MM_HINT_T0);
        }
        for (int d = 0; d < hd; d += 32) { /* the upper halves of two vectors' words, in order */
            __m512i h[2], l[2];
            cache_split(src + d, live[k], &h[0], &l[0]);
            cache_split(src + d + 16, live[k], &h[1], &l[1]);
            _mm512_storeu_si512(khi + k * hd + d, _mm512_permutex2var_epi16(h[0], odd16, h[1]));
            _mm512_storeu_si512(klo + k * hd + d, _mm512_permutex2var_epi16(l[0], odd16, l[1]));
        }
    }
    /* V^T tiles: per 32 keys and 16 dims, row d holds the 16 key pairs
     * (V[2kk][d], V[2kk+1][d]) (the A operand of O^T = V^T P^T) */
    _Alignas(64) uint32_t th[256], tl[256];
    for (int sub = 0; sub < KG / 32; sub++)
        for (int t = 0; t < hd / 16; t++) {
            for (int kk = 0; kk < 16; kk++) {
                __m512i h[2], l[2];
                for (int e = 0; e < 2; e++) {
                    const int k = sub * 32 + 2 * kk + e;
                    cache_split(vc + (key0 + k) * ks + t * 16, live[k], &h[e], &l[e]);
                }
                _mm512_store_si512(th + kk * 16, _mm512_or_si512(_mm512_srli_epi32(h[0], 16), h[1]));
                _mm512_store_si512(tl + kk * 16, _mm512_or_si512(_mm512_srli_epi32(l[0], 16), l[1]));
            }
            const int64_t off = ((g * (KG / 32) + sub) * (hd / 16) + t) * 256;
            transpose16(th, vhi + off);
            transpose16(tl, vlo + off);
        }
}

/* group g of kv head h0 + hh of the pass, u = hh * groups + g */
static void prep_unit(const void *jv, int ith, int64_t u) {
    const job *j = jv;
    (void)ith;
    const int hh = (int)(u / j->groups);
    const int64_t g = u % j->groups;
    prep_group(j->a, j->h0 + hh, j->kb0 + g * KG, j->live + g * KG, j->prep + (size_t)hh * j->head_bytes,
               j->groups * KG, g, g + 1 < j->groups);
}

/* q rows of a tile to the pair-interleaved, transposed B layout, hi and lo:
 * per k-step s, word [kk][r] = dims (32 s + 2 kk, 32 s + 2 kk + 1) of row r */
static void prep_q(const tile *t, int hd, uint32_t *qth, uint32_t *qtl) {
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

/* online softmax of one tile over keys [kb, kb + KG): st -> P^T, rescales O^T */
static void softmax_block(tile_state *z, int hd, int64_t kb, float scale_f, float cap) {
    const __m512 scale = _mm512_set1_ps(scale_f), ninf = _mm512_set1_ps(-INFINITY);
    __m512 mb = z->m;
    for (int k = 0; k < KG; k++) {
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
    for (int k = 0; k < KG; k += 2) {
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
    /* once the running maxima settle every corr is 1: skip the exact no-op */
    if (_mm512_cmp_ps_mask(corr, _mm512_set1_ps(1.0f), _CMP_NEQ_UQ))
        for (int d = 0; d < hd; d++) _mm512_store_ps(z->ot + d * 16, _mm512_mul_ps(_mm512_load_ps(z->ot + d * 16), corr));
}

/* Tiles t[0..nt) (nt = 1 or 2) of kv head hh (of the pass) over the union
 * of their key blocks: every K and V tile loaded serves both, halving the
 * cache traffic per row. Tile registers: QK: C tmm0-1 (one per tile), A = K
 * hi/lo of 16 keys tmm2-3, B = q hi/lo tmm4-5 (tile 0), tmm6-7 (tile 1);
 * PV: C tmm0-1 (one 16-dim slice of each tile's O^T), A = V^T hi/lo tmm2-3,
 * B = P^T hi/lo tmm4-7. */
static void run_tiles(const job *j, int hh, const tile *t, int nt, tile_state *z, uint8_t *block) {
    const int hd = j->a->hd, nks = hd / 32, ndt = hd / 16;
    const int64_t rows = j->fused ? KG : j->groups * KG;
    const uint16_t *kbase = (const uint16_t *)(j->fused ? block : j->prep + (size_t)hh * j->head_bytes);
    const uint32_t *vhi = (const uint32_t *)(kbase + 2 * rows * hd), *vlo = vhi + rows * hd / 2;
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
    for (int64_t kb = k0; kb < k1; kb += KG) {
        int64_t g = (kb - j->kb0) / KG;
        if (j->fused) { /* the same bits as the shared prepared group, written to a block that stays in cache */
            prep_group(j->a, j->h0 + hh, kb, j->live + g * KG, block, KG, 0, kb + KG < k1);
            g = 0;
        }
        const uint16_t *khi = kbase + g * KG * hd, *klo = kbase + (rows + g * KG) * hd;
        for (int k16 = 0; k16 < KG / 16; k16++) {
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
        for (int u = 0; u < nt; u++) softmax_block(&z[u], hd, kb, j->a->scale, j->a->softcap);
        for (int d = 0; d < ndt; d++) {
            _tile_loadd(0, z[0].ot + d * 256, 64);
            if (nt > 1) _tile_loadd(1, z[1].ot + d * 256, 64);
            for (int sub = 0; sub < KG / 32; sub++) {
                const int64_t vt = ((g * (KG / 32) + sub) * ndt + d) * 256;
                _tile_loadd(2, vhi + vt, 64);
                _tile_loadd(3, vlo + vt, 64);
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

static void attn_range(const npl_attn_args *a, int32_t p, int32_t *j0, int32_t *j1) {
    *j1 = p + 1;
    *j0 = a->window > 0 && p >= a->window ? p - a->window + 1 : 0;
}

/* tile ti of kv head kvh: queries [ti qb, ti qb + qb), all heads of the group */
static void build_tile(const npl_attn_args *a, int qb, int kvh, int ti, tile *t) {
    const int group = a->n_head / a->n_kv, hd = a->hd;
    memset(t, 0, sizeof *t);
    int64_t lo = INT64_MAX, hi = 0;
    for (int qi = 0; qi < qb && ti * qb + qi < a->n_q; qi++) {
        const int i = ti * qb + qi;
        for (int hh = 0; hh < group; hh++) {
            const int h = kvh * group + hh, r = qi * group + hh;
            t->o[r] = a->out + i * a->out_stride + (int64_t)h * hd;
            if (a->pos[i] < 0) continue; /* padding: no keys, zeros out */
            t->q[r] = a->q + i * a->q_stride + (int64_t)h * hd;
            attn_range(a, a->pos[i], &t->j0[r], &t->j1[r]);
            lo = t->j0[r] < lo ? t->j0[r] : lo;
            hi = t->j1[r] > hi ? t->j1[r] : hi;
        }
    }
    if (hi > 0) {
        t->k0 = lo / KG * KG;
        t->k1 = round_up(hi, KG);
    }
}

/* pair u of tiles, longest first (the last queries attend the most) */
static void tile_unit(const void *jv, int ith, int64_t u) {
    const job *j = jv;
    const int hh = (int)(u % j->nh), pair = j->n_pairs - 1 - (int)(u / j->nh);
    const int nt = 2 * pair + 1 < j->n_tiles ? 2 : 1;
    tile t[2];
    for (int k = 0; k < nt; k++) build_tile(j->a, j->qb, j->h0 + hh, 2 * pair + k, &t[k]);
    run_tiles(j, hh, t, nt, j->state + 2 * ith, j->blocks + (size_t)ith * head_bytes(KG, j->a->hd));
}

static void share(void *arg, int ith, int nth) {
    job *j = arg;
    (void)nth;
    for (int64_t u; (u = atomic_fetch_add_explicit(&j->next, 1, memory_order_relaxed)) < j->n_units;)
        j->unit(j, ith, u);
}

static void run_units(job *j, npl_pool *pool, void (*unit)(const void *, int, int64_t), int64_t n) {
    j->unit = unit;
    j->n_units = n;
    atomic_store_explicit(&j->next, 0, memory_order_relaxed);
    if (n <= 1 || npl_pool_size(pool) <= 1) {
        for (int64_t u = 0; u < n; u++) unit(j, 0, u);
        return;
    }
    npl_pool_run(pool, share, j);
}

void npl_attention_amx(const npl_attn_args *a, int64_t n_ctx, void *scratch, npl_pool *pool) {
    if (a->n_q <= 0 || a->n_head <= 0) return;
    const int hd = a->hd, group = a->n_head / a->n_kv, nth = npl_pool_size(pool);
    const int64_t rows_max = round_up(n_ctx, KG) + KG;
    uint8_t *base = (uint8_t *)(((uintptr_t)scratch + 63) & ~(uintptr_t)63);
    job j;
    memset(&j, 0, sizeof j);
    j.a = a;
    j.state = (tile_state *)base;
    j.blocks = base + (size_t)nth * 2 * sizeof(tile_state);
    int32_t *live = (int32_t *)(j.blocks + (size_t)nth * head_bytes(KG, hd));
    j.prep = (uint8_t *)live + round_up((rows_max + 1) * 4, 64);
    /* keys some row attends: a difference array over the union of ranges */
    int64_t lo = INT64_MAX, hi = 0;
    for (int i = 0; i < a->n_q; i++) {
        if (a->pos[i] < 0) continue;
        int32_t j0, j1;
        attn_range(a, a->pos[i], &j0, &j1);
        lo = j0 < lo ? j0 : lo;
        hi = j1 > hi ? j1 : hi;
    }
    if (hi == 0) lo = 0;
    j.kb0 = lo / KG * KG;
    j.groups = (round_up(hi, KG) - j.kb0) / KG;
    const int64_t rows = j.groups * KG;
    memset(live, 0, sizeof(int32_t) * (size_t)(rows + 1));
    for (int i = 0; i < a->n_q; i++) {
        if (a->pos[i] < 0) continue;
        int32_t j0, j1;
        attn_range(a, a->pos[i], &j0, &j1);
        live[j0 - j.kb0]++;
        live[j1 - j.kb0]--;
    }
    for (int64_t k = 0, c = 0; k < rows; k++) {
        c += live[k];
        live[k] = c > 0;
    }
    j.live = live;
    j.head_bytes = head_bytes(rows, hd);
    j.qb = 16 / group;
    j.n_tiles = (a->n_q + j.qb - 1) / j.qb;
    j.n_pairs = (j.n_tiles + 1) / 2;
    /* Decode and short chunks (one unit per kv head) prepare each block in
     * the unit instead: the same work, without writing and re-reading a
     * prepared copy of the whole attended cache. */
    j.fused = j.n_pairs == 1;
    const int per_pass = j.fused ? a->n_kv : heads_per_pass(n_ctx, a->n_kv, hd);
    for (j.h0 = 0; j.h0 < a->n_kv; j.h0 += j.nh) {
        j.nh = a->n_kv - j.h0 < per_pass ? a->n_kv - j.h0 : per_pass;
        if (!j.fused) run_units(&j, pool, prep_unit, j.nh * j.groups);
        run_units(&j, pool, tile_unit, (int64_t)j.nh * j.n_pairs);
    }
}
