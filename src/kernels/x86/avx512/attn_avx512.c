/* AVX-512 attention tile (contract in nn_kernels.h).
 *
 * A tile holds up to NPL_ATTN_TILE_MAX rows that read one kv head: the heads
 * of a group for several nearby queries. Keys go in blocks of BLK; each
 * block's K and V rows are read once (and, for more than one group of rows,
 * converted to f32 once) and then used from cache by every group of 4 rows
 * (scores for 4 keys at a time, one online-softmax update per row, then P.V
 * with the output chunk held in registers). With long prompts this is what
 * makes attention FMA-bound: a one-query tile streams and converts the whole
 * cache per query (2x slower at 8k tokens).
 *
 * Blocks start at multiples of BLK in absolute cache rows, and every score
 * is reduced the same way, so a row's result does not depend on which other
 * rows share its tile: chunked and unchunked prefill agree bit for bit. */
#include <immintrin.h>
#include <math.h>
#include <string.h>

#include "kernels/nn_kernels.h"
#include "kernels/x86/avx512/avx512_math.h"

#define BLK 32
#define GROUP 4 /* rows whose accumulators fit the registers at once */
/* Stack per tile, as for heads of 512: accumulators for at most ACC_MAX
 * floats (heads over 512 take fewer rows), and converted K/V blocks only for
 * heads up to CONV_MAX_HD (larger ones read the f16 rows, the same values). */
#define ACC_MAX (NPL_ATTN_TILE_MAX * 512)
#define CONV_MAX_HD 512

/* {sum(a), sum(b), sum(c), sum(d)}, each as ((x0 + x1) + (x2 + x3)) of its folded quarters */
NPL_AI __m128 hsum4(__m512 a, __m512 b, __m512 c, __m512 d) {
#define NPL_FOLD(v) _mm_add_ps(_mm256_castps256_ps128(_mm256_add_ps(_mm512_castps512_ps256(v), _mm512_extractf32x8_ps(v, 1))), \
                              _mm256_extractf128_ps(_mm256_add_ps(_mm512_castps512_ps256(v), _mm512_extractf32x8_ps(v, 1)), 1))
    const __m128 a4 = NPL_FOLD(a), b4 = NPL_FOLD(b), c4 = NPL_FOLD(c), d4 = NPL_FOLD(d);
#undef NPL_FOLD
    return _mm_hadd_ps(_mm_hadd_ps(a4, b4), _mm_hadd_ps(c4, d4));
}

/* 16 elements of row k at column c of a block: f16 cache rows (stride ks)
 * or, with F32, the block already converted (stride hd). */
NPL_AI __m512 ld16(const uint16_t *h, const float *f, int64_t stride, int k, int c, const int F32) {
    return F32 ? _mm512_loadu_ps(f + k * stride + c)
               : _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(h + k * stride + c)));
}

/* Cache rows are strided (n_kv heads per position) and may come from DRAM:
 * while one block's scores are computed, the next block's K rows and this
 * block's V rows are prefetched, a few rows per step. */
NPL_AI void prefetch_rows(const uint16_t *p, int64_t ks, int k0, int k1, int hd) {
    for (int k = k0; k < k1; k++)
        for (int c = 0; c < hd; c += 32) _mm_prefetch((const char *)(p + k * ks + c), _MM_HINT_T0);
}

/* s[g][k] = q[g] . K[k] for k0 <= k < n and the NB <= GROUP rows g; prefetches rows
 * [0, npk) of pk and [0, npv) of pv (npk = npv = 0: none) */
NPL_AI void scores512(const float *const *q, const uint16_t *K, const float *Kf, int64_t ks, int k0, int n, int hd,
                      float (*s)[BLK], const uint16_t *pk, int npk, const uint16_t *pv, int npv, const int NB,
                      const int F32) {
    const int64_t st = F32 ? hd : ks;
    int k = k0;
    for (; k + 4 <= n; k += 4) {
        prefetch_rows(pk, ks, k, k + 4 < npk ? k + 4 : npk, hd);
        prefetch_rows(pv, ks, k, k + 4 < npv ? k + 4 : npv, hd);
        __m512 acc[GROUP][4];
        for (int g = 0; g < NB; g++)
            for (int u = 0; u < 4; u++) acc[g][u] = _mm512_setzero_ps();
        for (int c = 0; c < hd; c += 16) {
            __m512 kv[4];
            for (int u = 0; u < 4; u++) kv[u] = ld16(K, Kf, st, k + u, c, F32);
            for (int g = 0; g < NB; g++) {
                const __m512 qv = _mm512_loadu_ps(q[g] + c);
                for (int u = 0; u < 4; u++) acc[g][u] = _mm512_fmadd_ps(qv, kv[u], acc[g][u]);
            }
        }
        for (int g = 0; g < NB; g++) _mm_storeu_ps(&s[g][k], hsum4(acc[g][0], acc[g][1], acc[g][2], acc[g][3]));
    }
    for (; k < n; k++) { /* the same sum, reduced the same way as in the 4-key loop */
        __m512 acc[GROUP];
        for (int g = 0; g < NB; g++) acc[g] = _mm512_setzero_ps();
        for (int c = 0; c < hd; c += 16) {
            const __m512 kv = ld16(K, Kf, st, k, c, F32);
            for (int g = 0; g < NB; g++) acc[g] = _mm512_fmadd_ps(_mm512_loadu_ps(q[g] + c), kv, acc[g]);
        }
        for (int g = 0; g < NB; g++) s[g][k] = _mm_cvtss_f32(hsum4(acc[g], acc[g], acc[g], acc[g]));
    }
}

/* acc[g] = acc[g] * corr[g] + sum_{k0 <= k < n} s[g][k] V[k] for the NB <= GROUP rows g */
NPL_AI void pv512(const uint16_t *V, const float *Vf, int64_t ks, int k0, int n, int hd, float (*s)[BLK],
                  const float *corr, float *acc, const int NB, const int F32) {
    const int64_t st = F32 ? hd : ks;
    int c = 0;
    for (; c + 64 <= hd; c += 64) {
        __m512 o[GROUP][4];
        for (int g = 0; g < NB; g++) {
            const __m512 cf = _mm512_set1_ps(corr[g]);
            for (int u = 0; u < 4; u++) o[g][u] = _mm512_mul_ps(_mm512_loadu_ps(acc + g * hd + c + 16 * u), cf);
        }
        for (int k = k0; k < n; k++) {
            __m512 v[4];
            for (int u = 0; u < 4; u++) v[u] = ld16(V, Vf, st, k, c + 16 * u, F32);
            for (int g = 0; g < NB; g++) {
                const __m512 p = _mm512_set1_ps(s[g][k]);
                for (int u = 0; u < 4; u++) o[g][u] = _mm512_fmadd_ps(p, v[u], o[g][u]);
            }
        }
        for (int g = 0; g < NB; g++)
            for (int u = 0; u < 4; u++) _mm512_storeu_ps(acc + g * hd + c + 16 * u, o[g][u]);
    }
    for (; c < hd; c += 16) {
        __m512 o[GROUP];
        for (int g = 0; g < NB; g++) o[g] = _mm512_mul_ps(_mm512_loadu_ps(acc + g * hd + c), _mm512_set1_ps(corr[g]));
        for (int k = k0; k < n; k++) {
            const __m512 v = ld16(V, Vf, st, k, c, F32);
            for (int g = 0; g < NB; g++) o[g] = _mm512_fmadd_ps(_mm512_set1_ps(s[g][k]), v, o[g]);
        }
        for (int g = 0; g < NB; g++) _mm512_storeu_ps(acc + g * hd + c, o[g]);
    }
}

/* One group of nb <= GROUP rows, dispatched on nb so the register arrays
 * have fixed sizes (F: the block is already converted to f32). */
NPL_AI void scores_group(int nb, const float *const *q, const uint16_t *K, const float *Kf, int64_t ks, int k0, int n,
                         int hd, float (*s)[BLK], const uint16_t *pk, int npk, const uint16_t *pv, int npv,
                         const int F) {
    switch (nb) {
    case 1: scores512(q, K, Kf, ks, k0, n, hd, s, pk, npk, pv, npv, 1, F); break;
    case 2: scores512(q, K, Kf, ks, k0, n, hd, s, pk, npk, pv, npv, 2, F); break;
    case 3: scores512(q, K, Kf, ks, k0, n, hd, s, pk, npk, pv, npv, 3, F); break;
    default: scores512(q, K, Kf, ks, k0, n, hd, s, pk, npk, pv, npv, 4, F); break;
    }
}

NPL_AI void pv_group(int nb, const uint16_t *V, const float *Vf, int64_t ks, int k0, int n, int hd, float (*s)[BLK],
                     const float *corr, float *acc, const int F) {
    switch (nb) {
    case 1: pv512(V, Vf, ks, k0, n, hd, s, corr, acc, 1, F); break;
    case 2: pv512(V, Vf, ks, k0, n, hd, s, corr, acc, 2, F); break;
    case 3: pv512(V, Vf, ks, k0, n, hd, s, corr, acc, 3, F); break;
    default: pv512(V, Vf, ks, k0, n, hd, s, corr, acc, 4, F); break;
    }
}

static void attn_tile_avx512(const npl_attn_args *a, const npl_attn_tile *t) {
    const int hd = a->hd, nr = t->n;
    const int64_t ks = (int64_t)a->n_kv * hd;
    const uint16_t *K = a->kc + (int64_t)t->kvh * hd, *V = a->vc + (int64_t)t->kvh * hd;
    float acc[nr * hd] __attribute__((aligned(64))); /* sized to the tile: callers' stacks may be small */
    float s[NPL_ATTN_TILE_MAX][BLK] __attribute__((aligned(64)));
    /* with more than one group, each block is converted to f32 once and the
     * groups read it from cache instead of converting it again */
    const int conv = nr > GROUP && hd <= CONV_MAX_HD;
    float kf[conv ? BLK * hd : 1] __attribute__((aligned(64))), vf[conv ? BLK * hd : 1] __attribute__((aligned(64)));
    float m[NPL_ATTN_TILE_MAX], l[NPL_ATTN_TILE_MAX], corr[NPL_ATTN_TILE_MAX];
    int lo = t->j0[0], hi = t->j1[0];
    for (int g = 0; g < nr; g++) {
        m[g] = -INFINITY;
        l[g] = 0.0f;
        lo = t->j0[g] < lo ? t->j0[g] : lo;
        hi = t->j1[g] > hi ? t->j1[g] : hi;
    }
    memset(acc, 0, sizeof(float) * (size_t)(nr * hd));
    memset(s, 0, sizeof s);
    const __m512 scale = _mm512_set1_ps(a->scale), ninf = _mm512_set1_ps(-INFINITY);
    const float cap = a->softcap;
    const __m512 vcap = _mm512_set1_ps(cap), vicap = _mm512_set1_ps(cap > 0.0f ? 1.0f / cap : 0.0f);

    for (int jb = lo - lo % BLK; jb < hi; jb += BLK) {
        const int n = hi - jb < BLK ? hi - jb : BLK;
        /* keys before lo are skipped, not read: no row attends them (their
         * weight would be exactly 0), and rows outside every range may hold
         * anything */
        const int k0 = jb < lo ? lo - jb : 0;
        const int nnext = hi - jb - BLK < BLK ? hi - jb - BLK : BLK; /* rows of the next block */
        if (conv)
            for (int k = k0; k < n; k++) {
                npl_f16_to_f32_row_avx512(K + (int64_t)(jb + k) * ks, kf + k * hd, hd);
                npl_f16_to_f32_row_avx512(V + (int64_t)(jb + k) * ks, vf + k * hd, hd);
            }
        for (int g0 = 0; g0 < nr; g0 += GROUP) {
            /* the first group prefetches the next block (and, unconverted, this block's V) */
            const int first = g0 == 0;
            const uint16_t *pk = nnext > 0 ? K + (jb + BLK) * ks : K;
            const int npk = first && nnext > 0 ? nnext : 0, npv = first && !conv ? n : 0;
            if (conv)
                scores_group(nr - g0, t->q + g0, K + jb * ks, kf, ks, k0, n, hd, s + g0, pk, npk, V + jb * ks, npv, 1);
            else
                scores_group(nr - g0, t->q + g0, K + jb * ks, kf, ks, k0, n, hd, s + g0, pk, npk, V + jb * ks, npv, 0);
        }
        for (int g = 0; g < nr; g++) {
            /* keys [g_lo, g_hi) of this block that row g attends */
            const int g_lo = t->j0[g] - jb > 0 ? t->j0[g] - jb : 0;
            const int g_hi = t->j1[g] - jb < n ? t->j1[g] - jb : n;
            const uint64_t bits = g_hi > g_lo ? ((1ull << g_hi) - 1) & ~((1ull << g_lo) - 1) : 0;
            __m512 v0 = _mm512_mul_ps(_mm512_load_ps(s[g]), scale);
            __m512 v1 = _mm512_mul_ps(_mm512_load_ps(s[g] + 16), scale);
            if (cap > 0.0f) {
                v0 = _mm512_mul_ps(vcap, tanh512(_mm512_mul_ps(v0, vicap)));
                v1 = _mm512_mul_ps(vcap, tanh512(_mm512_mul_ps(v1, vicap)));
            }
            v0 = _mm512_mask_mov_ps(ninf, (__mmask16)bits, v0);
            v1 = _mm512_mask_mov_ps(ninf, (__mmask16)(bits >> 16), v1);
            const float mnew = fmaxf(m[g], _mm512_reduce_max_ps(_mm512_max_ps(v0, v1)));
            if (mnew == -INFINITY) { /* nothing attended yet */
                corr[g] = 1.0f;
                memset(s[g], 0, sizeof s[g]);
                continue;
            }
            corr[g] = expf(m[g] - mnew);
            const __m512 vm = _mm512_set1_ps(mnew);
            const __m512 e0 = exp512(_mm512_sub_ps(v0, vm)), e1 = exp512(_mm512_sub_ps(v1, vm));
            _mm512_store_ps(s[g], e0);
            _mm512_store_ps(s[g] + 16, e1);
            l[g] = l[g] * corr[g] + _mm512_reduce_add_ps(_mm512_add_ps(e0, e1));
            m[g] = mnew;
        }
        for (int g0 = 0; g0 < nr; g0 += GROUP) {
            if (conv)
                pv_group(nr - g0, V + jb * ks, vf, ks, k0, n, hd, s + g0, corr + g0, acc + g0 * hd, 1);
            else
                pv_group(nr - g0, V + jb * ks, vf, ks, k0, n, hd, s + g0, corr + g0, acc + g0 * hd, 0);
        }
    }
    for (int g = 0; g < nr; g++) {
        const __m512 inv = _mm512_set1_ps(1.0f / l[g]);
        for (int c = 0; c < hd; c += 16) _mm512_storeu_ps(t->o[g] + c, _mm512_mul_ps(_mm512_load_ps(acc + g * hd + c), inv));
    }
}

void npl_attention_avx512(const npl_attn_args *a, int ith, int nth) {
    if (a->hd % 16) { /* rare head sizes: the AVX2 kernel handles multiples of 8 */
        npl_nn_kernels_avx2.attention(a, ith, nth);
        return;
    }
    const int rows = ACC_MAX / a->hd < NPL_ATTN_TILE_MAX ? ACC_MAX / a->hd : NPL_ATTN_TILE_MAX;
    npl_attn_run(a, ith, nth, attn_tile_avx512, rows > 0 ? rows : 1);
}
