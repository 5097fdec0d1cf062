/* AVX2 + FMA + F16C row kernels and attention tile. Same contracts as the
 * plain C versions in generic/nn_generic.c and the same algorithms as the
 * AVX-512 file, on 8 lanes and 16 registers. */
#include <immintrin.h>
#include <math.h>
#include <string.h>

#include "kernels/nn_kernels.h"

#define NPL_AI static inline __attribute__((always_inline))

/* ---- vector math ---- */

/* e^r for r = x - n ln2 (|r| <= ln2/2), by a degree-6 polynomial: the part
 * both exps below share */
NPL_AI __m256 exp_reduced(__m256 x, __m256 n) {
    __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), x);
    r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);
    __m256 y = _mm256_set1_ps(1.9875691500e-4f);
    y = _mm256_fmadd_ps(y, r, _mm256_set1_ps(1.3981999507e-3f));
    y = _mm256_fmadd_ps(y, r, _mm256_set1_ps(8.3334519073e-3f));
    y = _mm256_fmadd_ps(y, r, _mm256_set1_ps(4.1665795894e-2f));
    y = _mm256_fmadd_ps(y, r, _mm256_set1_ps(1.6666665459e-1f));
    y = _mm256_fmadd_ps(y, r, _mm256_set1_ps(5.0000001201e-1f));
    y = _mm256_fmadd_ps(y, _mm256_mul_ps(r, r), _mm256_add_ps(r, _mm256_set1_ps(1.0f)));
    return y;
}

/* exp(x): x = n ln2 + r, |r| <= ln2/2, degree-6 polynomial, times 2^n built
 * as 2^(n/2) * 2^(n - n/2) so both factors stay normal over the clamped range
 * (the product overflows to inf and underflows to 0 as it should). */
NPL_AI __m256 exp256(__m256 x) {
    x = _mm256_min_ps(_mm256_set1_ps(89.0f), _mm256_max_ps(_mm256_set1_ps(-120.0f), x));
    const __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                                     _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    const __m256 y = exp_reduced(x, n);
    const __m256i ni = _mm256_cvtps_epi32(n);
    const __m256i n1 = _mm256_srai_epi32(ni, 1), n2 = _mm256_sub_epi32(ni, n1);
    const __m256i bias = _mm256_set1_epi32(127);
    const __m256 p1 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n1, bias), 23));
    const __m256 p2 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n2, bias), 23));
    return _mm256_mul_ps(_mm256_mul_ps(y, p1), p2);
}

/* tanh(x): odd polynomial for |x| <= 0.625, else 1 - 2/(exp(2|x|) + 1). */
NPL_AI __m256 tanh256(__m256 x) {
    const __m256 sign = _mm256_set1_ps(-0.0f);
    const __m256 ax = _mm256_andnot_ps(sign, x);
    const __m256 z = _mm256_mul_ps(x, x);
    __m256 p = _mm256_set1_ps(-5.70498872745e-3f);
    p = _mm256_fmadd_ps(p, z, _mm256_set1_ps(2.06390887954e-2f));
    p = _mm256_fmadd_ps(p, z, _mm256_set1_ps(-5.37397155531e-2f));
    p = _mm256_fmadd_ps(p, z, _mm256_set1_ps(1.33314422036e-1f));
    p = _mm256_fmadd_ps(p, z, _mm256_set1_ps(-3.33332819422e-1f));
    p = _mm256_fmadd_ps(_mm256_mul_ps(p, z), x, x);
    const __m256 e = exp256(_mm256_add_ps(ax, ax));
    __m256 big = _mm256_sub_ps(_mm256_set1_ps(1.0f),
                               _mm256_div_ps(_mm256_set1_ps(2.0f), _mm256_add_ps(e, _mm256_set1_ps(1.0f))));
    big = _mm256_or_ps(big, _mm256_and_ps(x, sign));
    return _mm256_blendv_ps(p, big, _mm256_cmp_ps(ax, _mm256_set1_ps(0.625f), _CMP_GT_OQ));
}

/* lanes < left set (left clamped to 8) */
NPL_AI __m256i tail_mask8(int64_t left) {
    const __m256i idx = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(left >= 8 ? 8 : (int)left), idx);
}

NPL_AI float hsum8(__m256 v) {
    __m128 x = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    x = _mm_add_ps(x, _mm_movehl_ps(x, x));
    x = _mm_add_ss(x, _mm_movehdup_ps(x));
    return _mm_cvtss_f32(x);
}

NPL_AI float hmax8(__m256 v) {
    __m128 x = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    x = _mm_max_ps(x, _mm_movehl_ps(x, x));
    x = _mm_max_ss(x, _mm_movehdup_ps(x));
    return _mm_cvtss_f32(x);
}

/* ---- elementwise and row kernels (tails through masked loads/stores) ---- */

static void rms_norm_avx2(const float *x, const float *w, float *y, int n, float eps) {
    __m256 s0 = _mm256_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;
    int i = 0;
    for (; i + 32 <= n; i += 32) {
        const __m256 a = _mm256_loadu_ps(x + i), b = _mm256_loadu_ps(x + i + 8);
        const __m256 c = _mm256_loadu_ps(x + i + 16), d = _mm256_loadu_ps(x + i + 24);
        s0 = _mm256_fmadd_ps(a, a, s0);
        s1 = _mm256_fmadd_ps(b, b, s1);
        s2 = _mm256_fmadd_ps(c, c, s2);
        s3 = _mm256_fmadd_ps(d, d, s3);
    }
    for (; i < n; i += 8) {
        const __m256 a = _mm256_maskload_ps(x + i, tail_mask8(n - i));
        s0 = _mm256_fmadd_ps(a, a, s0);
    }
    const float ss = hsum8(_mm256_add_ps(_mm256_add_ps(s0, s1), _mm256_add_ps(s2, s3)));
    const __m256 sc = _mm256_set1_ps(1.0f / sqrtf(ss / (float)(n > 0 ? n : 1) + eps));
    for (i = 0; i + 8 <= n; i += 8) {
        __m256 v = _mm256_mul_ps(_mm256_loadu_ps(x + i), sc);
        if (w) v = _mm256_mul_ps(v, _mm256_loadu_ps(w + i));
        _mm256_storeu_ps(y + i, v);
    }
    if (i < n) {
        const __m256i m = tail_mask8(n - i);
        __m256 v = _mm256_mul_ps(_mm256_maskload_ps(x + i, m), sc);
        if (w) v = _mm256_mul_ps(v, _mm256_maskload_ps(w + i, m));
        _mm256_maskstore_ps(y + i, m, v);
    }
}

/* exp(x) for the sigmoids below, with x clamped to [-87, 88]: one float 2^n
 * (n in [-126, 127]) built from the bits of the rounding add, 5 vector ops
 * fewer than exp256. The clamp only bends the ends: 1 + e^-87 is 1 in floats,
 * and x / (1 + e^88) is below 1e-36 for any |x| < 1e2. */
NPL_AI __m256 exp256_sig(__m256 x) {
    x = _mm256_min_ps(_mm256_set1_ps(88.0f), _mm256_max_ps(_mm256_set1_ps(-87.0f), x));
    const __m256 magic = _mm256_set1_ps(0x1.8p23f); /* x log2(e) + magic: round to nearest in the low bits */
    const __m256 t = _mm256_fmadd_ps(x, _mm256_set1_ps(1.44269504088896341f), magic);
    const __m256 n = _mm256_sub_ps(t, magic);
    const __m256 y = exp_reduced(x, n);
    /* bits(t) = bits(magic) + n: 2^n = (n + 127) << 23 */
    const __m256i bits = _mm256_add_epi32(_mm256_castps_si256(t), _mm256_set1_epi32(127 - 0x4B400000));
    const __m256i e = _mm256_slli_epi32(bits, 23);
    return _mm256_mul_ps(y, _mm256_castsi256_ps(e));
}

NPL_AI __m256 silu_mul8(__m256 x, __m256 u) {
    const __m256 e = exp256_sig(_mm256_sub_ps(_mm256_setzero_ps(), x));
    return _mm256_mul_ps(_mm256_div_ps(x, _mm256_add_ps(_mm256_set1_ps(1.0f), e)), u);
}

/* gelu_tanh(x) = x * sigmoid(2 sqrt(2/pi) (x + 0.044715 x^3)), as in the generic version */
NPL_AI __m256 gelu_mul8(__m256 x, __m256 u) {
    const float c = -2.0f * 0.7978845608028654f;
    const __m256 cx2 = _mm256_fmadd_ps(_mm256_mul_ps(x, x), _mm256_set1_ps(c * 0.044715f), _mm256_set1_ps(c));
    const __m256 z = _mm256_mul_ps(x, cx2);
    const __m256 e = exp256_sig(z);
    return _mm256_mul_ps(_mm256_div_ps(x, _mm256_add_ps(_mm256_set1_ps(1.0f), e)), u);
}

static void swiglu_avx2(const float *g, const float *u, float *y, int n) {
    int i = 0;
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, silu_mul8(_mm256_loadu_ps(g + i), _mm256_loadu_ps(u + i)));
    if (i < n) {
        const __m256i m = tail_mask8(n - i);
        _mm256_maskstore_ps(y + i, m, silu_mul8(_mm256_maskload_ps(g + i, m), _mm256_maskload_ps(u + i, m)));
    }
}

static void geglu_avx2(const float *g, const float *u, float *y, int n) {
    int i = 0;
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, gelu_mul8(_mm256_loadu_ps(g + i), _mm256_loadu_ps(u + i)));
    if (i < n) {
        const __m256i m = tail_mask8(n - i);
        _mm256_maskstore_ps(y + i, m, gelu_mul8(_mm256_maskload_ps(g + i, m), _mm256_maskload_ps(u + i, m)));
    }
}

static void add_avx2(const float *x, const float *b, float *y, int n) {
    int i = 0;
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, _mm256_add_ps(_mm256_loadu_ps(x + i), _mm256_loadu_ps(b + i)));
    if (i < n) {
        const __m256i m = tail_mask8(n - i);
        _mm256_maskstore_ps(y + i, m, _mm256_add_ps(_mm256_maskload_ps(x + i, m), _mm256_maskload_ps(b + i, m)));
    }
}

static void scale_avx2(const float *x, float s, float *y, int n) {
    const __m256 vs = _mm256_set1_ps(s);
    int i = 0;
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, _mm256_mul_ps(_mm256_loadu_ps(x + i), vs));
    if (i < n) {
        const __m256i m = tail_mask8(n - i);
        _mm256_maskstore_ps(y + i, m, _mm256_mul_ps(_mm256_maskload_ps(x + i, m), vs));
    }
}

static void softmax_avx2(float *x, int n) {
    if (n <= 0) return;
    const __m256 ninf = _mm256_set1_ps(-INFINITY);
    __m256 vm = ninf;
    int i = 0;
    for (; i + 8 <= n; i += 8) vm = _mm256_max_ps(vm, _mm256_loadu_ps(x + i));
    if (i < n) {
        const __m256i m = tail_mask8(n - i);
        vm = _mm256_max_ps(vm, _mm256_blendv_ps(ninf, _mm256_maskload_ps(x + i, m), _mm256_castsi256_ps(m)));
    }
    const __m256 mx = _mm256_set1_ps(hmax8(vm));
    __m256 vs = _mm256_setzero_ps();
    for (i = 0; i + 8 <= n; i += 8) {
        const __m256 e = exp256(_mm256_sub_ps(_mm256_loadu_ps(x + i), mx));
        vs = _mm256_add_ps(vs, e);
        _mm256_storeu_ps(x + i, e);
    }
    if (i < n) {
        const __m256i m = tail_mask8(n - i);
        const __m256 e = _mm256_and_ps(exp256(_mm256_sub_ps(_mm256_maskload_ps(x + i, m), mx)), _mm256_castsi256_ps(m));
        vs = _mm256_add_ps(vs, e);
        _mm256_maskstore_ps(x + i, m, e);
    }
    const __m256 inv = _mm256_set1_ps(1.0f / hsum8(vs));
    for (i = 0; i + 8 <= n; i += 8) _mm256_storeu_ps(x + i, _mm256_mul_ps(_mm256_loadu_ps(x + i), inv));
    if (i < n) {
        const __m256i m = tail_mask8(n - i);
        _mm256_maskstore_ps(x + i, m, _mm256_mul_ps(_mm256_maskload_ps(x + i, m), inv));
    }
}

/* ---- attention tile (contract in nn_kernels.h; the structure of
 * x86/avx512/attn_avx512.c on 8 lanes and 16 registers) ----
 *
 * A tile holds up to ATT_ROWS rows that read one kv head: the heads of a group
 * for several nearby queries (4 queries of Gemma 3's 4-head group). Keys go in
 * blocks of BLK; each block's f16 K and V rows are read from memory once per
 * tile and then from cache by every group of up to GROUP rows: scores for KEYS
 * keys at a time (NB x KEYS accumulators: 4 x 3 is the best fit for 16
 * registers), one online-softmax update per row, then P.V with NB x CW output
 * vectors in registers. Unlike AVX-512, the blocks are not converted to f32
 * first: on Zen 3 converting in the inner loops is free, while an f32 copy
 * of a block falls out of L1.
 *
 * Batch invariance: blocks start at multiples of BLK in absolute cache rows,
 * every score is reduced in one order (red4), and the softmax and P.V of a row
 * do not depend on the other rows of its tile, so chunked and unchunked
 * prefill agree bit for bit. */

#define BLK 48       /* keys per block: 16 passes of 3 keys, 12 of 4 */
#define GROUP 4      /* rows whose accumulators fit the registers at once */
#define ATT_ROWS 16  /* rows per tile */
#define ACC_MAX (ATT_ROWS * 512) /* accumulator floats per tile (32 KiB of stack): heads over 512 take fewer rows */

NPL_AI __m128 fold8(__m256 v) { return _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1)); }

/* {sum(a), sum(b), sum(c), sum(d)}, each as ((f0 + f1) + (f2 + f3)) of its folded quarters f.
 * (Three 256-bit hadds would take 5 instructions instead of 11 and gain ~1%,
 * but their order moved one Gemma position of test_model_reference past its
 * llama.cpp tolerance: top-5 max 3.4 for 3.) */
NPL_AI __m128 red4(__m256 a, __m256 b, __m256 c, __m256 d) {
    return _mm_hadd_ps(_mm_hadd_ps(fold8(a), fold8(b)), _mm_hadd_ps(fold8(c), fold8(d)));
}

/* 8 elements of cache row k (stride ks) at column c, converted */
NPL_AI __m256 ld8(const uint16_t *h, int64_t ks, int k, int c) {
    return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(h + k * ks + c)));
}

/* Cache rows are strided (n_kv heads per position) and may come from DRAM:
 * while one block's scores are computed, the next block's K rows and this
 * block's V rows are prefetched, a few rows per step. */
NPL_AI void prefetch_rows(const uint16_t *p, int64_t ks, int k0, int k1, int hd) {
    for (int k = k0; k < k1; k++)
        for (int c = 0; c < hd; c += 32) _mm_prefetch((const char *)(p + k * ks + c), _MM_HINT_T0);
}

/* s[g][k] = q[g] . K[k] for k in [k, k + KEYS) and the NB <= GROUP rows g */
NPL_AI void score_keys(const float *const *q, const uint16_t *K, int64_t ks, int k, int hd, float (*s)[BLK],
                       const int NB, const int KEYS) {
    __m256 acc[GROUP][4];
    for (int g = 0; g < NB; g++)
        for (int u = 0; u < KEYS; u++) acc[g][u] = _mm256_setzero_ps();
    for (int c = 0; c < hd; c += 8) {
        __m256 kv[4];
        for (int u = 0; u < KEYS; u++) kv[u] = ld8(K, ks, k + u, c);
        for (int g = 0; g < NB; g++) {
            const __m256 qv = _mm256_loadu_ps(q[g] + c);
            for (int u = 0; u < KEYS; u++) acc[g][u] = _mm256_fmadd_ps(qv, kv[u], acc[g][u]);
        }
    }
    for (int g = 0; g < NB; g++) {
        /* the same reduction whatever KEYS: lanes of red4 are independent */
        if (KEYS == 4) {
            _mm_storeu_ps(&s[g][k], red4(acc[g][0], acc[g][1], acc[g][2], acc[g][3]));
        } else if (KEYS == 3) {
            const __m128 h = red4(acc[g][0], acc[g][1], acc[g][2], acc[g][2]);
            _mm_storel_pi((__m64 *)&s[g][k], h);
            _mm_store_ss(&s[g][k + 2], _mm_movehl_ps(h, h));
        } else if (KEYS == 2) {
            _mm_storel_pi((__m64 *)&s[g][k], red4(acc[g][0], acc[g][1], acc[g][0], acc[g][1]));
        } else {
            _mm_store_ss(&s[g][k], red4(acc[g][0], acc[g][0], acc[g][0], acc[g][0]));
        }
    }
}

/* s[g][k] = q[g] . K[k] for k0 <= k < n and the NB <= GROUP rows g; prefetches
 * rows [0, npk) of pk and [0, npv) of pv as it goes */
NPL_AI void scores256(const float *const *q, const uint16_t *K, int64_t ks, int k0, int n, int hd, float (*s)[BLK],
                      const uint16_t *pk, int npk, const uint16_t *pv, int npv, const int NB, const int KEYS) {
    int k = k0;
    for (; k + KEYS <= n; k += KEYS) {
        prefetch_rows(pk, ks, k, k + KEYS < npk ? k + KEYS : npk, hd);
        prefetch_rows(pv, ks, k, k + KEYS < npv ? k + KEYS : npv, hd);
        score_keys(q, K, ks, k, hd, s, NB, KEYS);
    }
    if (KEYS > 2 && k + 2 <= n) { /* a pair left */
        prefetch_rows(pk, ks, k, k + 2 < npk ? k + 2 : npk, hd);
        prefetch_rows(pv, ks, k, k + 2 < npv ? k + 2 : npv, hd);
        score_keys(q, K, ks, k, hd, s, NB, 2);
        k += 2;
    }
    for (; k < n; k++) {
        prefetch_rows(pk, ks, k, k + 1 < npk ? k + 1 : npk, hd);
        prefetch_rows(pv, ks, k, k + 1 < npv ? k + 1 : npv, hd);
        score_keys(q, K, ks, k, hd, s, NB, 1);
    }
}

/* acc[g][c, c + 8 CW) = acc[g] * corr[g] + sum_{k0 <= k < n} s[g][k] V[k] for the NB <= GROUP rows g */
NPL_AI void pv_cols(const uint16_t *V, int64_t ks, int k0, int n, int hd, int c, float (*s)[BLK], const float *corr,
                    float *acc, const int NB, const int CW) {
    __m256 o[GROUP][4];
    for (int g = 0; g < NB; g++) {
        const __m256 cf = _mm256_set1_ps(corr[g]);
        for (int u = 0; u < CW; u++) o[g][u] = _mm256_mul_ps(_mm256_loadu_ps(acc + g * hd + c + 8 * u), cf);
    }
    for (int k = k0; k < n; k++) {
        __m256 v[4];
        for (int u = 0; u < CW; u++) v[u] = ld8(V, ks, k, c + 8 * u);
        for (int g = 0; g < NB; g++) {
            const __m256 p = _mm256_broadcast_ss(&s[g][k]);
            for (int u = 0; u < CW; u++) o[g][u] = _mm256_fmadd_ps(p, v[u], o[g][u]);
        }
    }
    for (int g = 0; g < NB; g++)
        for (int u = 0; u < CW; u++) _mm256_storeu_ps(acc + g * hd + c + 8 * u, o[g][u]);
}

/* every output element gets the same sum whatever chunk it falls in */
NPL_AI void pv256(const uint16_t *V, int64_t ks, int k0, int n, int hd, float (*s)[BLK], const float *corr,
                  float *acc, const int NB, const int CW) {
    int c = 0;
    for (; c + 8 * CW <= hd; c += 8 * CW) pv_cols(V, ks, k0, n, hd, c, s, corr, acc, NB, CW);
    if (CW > 2) /* at most once, but as a loop gcc keeps the accumulators in registers */
        for (; c + 16 <= hd; c += 16) pv_cols(V, ks, k0, n, hd, c, s, corr, acc, NB, 2);
    for (; c < hd; c += 8) pv_cols(V, ks, k0, n, hd, c, s, corr, acc, NB, 1);
}

/* One group of nb <= GROUP rows, dispatched on nb so the register arrays have fixed sizes */
NPL_AI void scores_group(int nb, const float *const *q, const uint16_t *K, int64_t ks, int k0, int n, int hd,
                         float (*s)[BLK], const uint16_t *pk, int npk, const uint16_t *pv, int npv) {
    switch (nb) {
    case 1: scores256(q, K, ks, k0, n, hd, s, pk, npk, pv, npv, 1, 4); break;
    case 2: scores256(q, K, ks, k0, n, hd, s, pk, npk, pv, npv, 2, 4); break;
    case 3: scores256(q, K, ks, k0, n, hd, s, pk, npk, pv, npv, 3, 3); break;
    default: scores256(q, K, ks, k0, n, hd, s, pk, npk, pv, npv, 4, 3); break;
    }
}

NPL_AI void pv_group(int nb, const uint16_t *V, int64_t ks, int k0, int n, int hd, float (*s)[BLK], const float *corr,
                     float *acc) {
    switch (nb) {
    case 1: pv256(V, ks, k0, n, hd, s, corr, acc, 1, 4); break;
    case 2: pv256(V, ks, k0, n, hd, s, corr, acc, 2, 4); break;
    case 3: pv256(V, ks, k0, n, hd, s, corr, acc, 3, 3); break;
    default: pv256(V, ks, k0, n, hd, s, corr, acc, 4, 3); break;
    }
}

static void attn_tile_avx2(const npl_attn_args *a, const npl_attn_tile *t) {
    const int hd = a->hd, nr = t->n;
    const int64_t ks = (int64_t)a->n_kv * hd;
    const uint16_t *K = a->kc + (int64_t)t->kvh * hd, *V = a->vc + (int64_t)t->kvh * hd;
    float acc[nr * hd] __attribute__((aligned(32))); /* sized to the tile: callers' stacks may be small */
    float s[ATT_ROWS][BLK] __attribute__((aligned(32)));
    float m[ATT_ROWS], l[ATT_ROWS], corr[ATT_ROWS];
    int lo = t->j0[0], hi = t->j1[0];
    for (int g = 0; g < nr; g++) {
        m[g] = -INFINITY;
        l[g] = 0.0f;
        lo = t->j0[g] < lo ? t->j0[g] : lo;
        hi = t->j1[g] > hi ? t->j1[g] : hi;
    }
    memset(acc, 0, sizeof(float) * (size_t)(nr * hd));
    memset(s, 0, sizeof s);
    const __m256 scale = _mm256_set1_ps(a->scale), ninf = _mm256_set1_ps(-INFINITY);
    const float cap = a->softcap;
    const __m256 vcap = _mm256_set1_ps(cap), vicap = _mm256_set1_ps(cap > 0.0f ? 1.0f / cap : 0.0f);
    const __m256i idx = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);

    for (int jb = lo - lo % BLK; jb < hi; jb += BLK) {
        const int n = hi - jb < BLK ? hi - jb : BLK;
        /* keys before lo are skipped, not read: no row attends them (their
         * weight would be exactly 0), and rows outside every range may hold
         * anything */
        const int k0 = jb < lo ? lo - jb : 0;
        const int nnext = hi - jb - BLK < BLK ? hi - jb - BLK : BLK; /* rows of the next block */
        for (int g0 = 0; g0 < nr; g0 += GROUP) {
            /* a one-group tile (decode) prefetches the next block's K and this
             * block's V; several groups (prefill) read blocks sequentially and
             * often enough for the hardware prefetcher, the prefetches cost more */
            const int first = nr <= GROUP;
            const uint16_t *pk = nnext > 0 ? K + (jb + BLK) * ks : K;
            const int npk = first && nnext > 0 ? nnext : 0, npv = first ? n : 0;
            scores_group(nr - g0, t->q + g0, K + jb * ks, ks, k0, n, hd, s + g0, pk, npk, V + jb * ks, npv);
        }
        for (int g = 0; g < nr; g++) {
            /* keys [g_lo, g_hi) of this block that row g attends */
            const int g_lo = t->j0[g] - jb > 0 ? t->j0[g] - jb : 0;
            const int g_hi = t->j1[g] - jb < n ? t->j1[g] - jb : n;
            const int whole = g_lo == 0 && g_hi == BLK; /* most blocks: no key masked */
            __m256 v[BLK / 8];
            __m256 vmax = ninf;
            for (int u = 0; u < BLK / 8; u++) {
                v[u] = _mm256_mul_ps(_mm256_load_ps(s[g] + 8 * u), scale);
                if (cap > 0.0f) v[u] = _mm256_mul_ps(vcap, tanh256(_mm256_mul_ps(v[u], vicap)));
                if (!whole) {
                    const __m256i kk = _mm256_add_epi32(idx, _mm256_set1_epi32(8 * u));
                    const __m256i in = _mm256_andnot_si256(_mm256_cmpgt_epi32(_mm256_set1_epi32(g_lo), kk),
                                                           _mm256_cmpgt_epi32(_mm256_set1_epi32(g_hi), kk));
                    v[u] = _mm256_blendv_ps(ninf, v[u], _mm256_castsi256_ps(in));
                }
                vmax = _mm256_max_ps(vmax, v[u]);
            }
            const float mnew = fmaxf(m[g], hmax8(vmax));
            if (mnew == -INFINITY) { /* nothing attended yet */
                corr[g] = 1.0f;
                memset(s[g], 0, sizeof s[g]);
                continue;
            }
            /* exp256, not a libm call that would spill v: exp(-inf) = 0 there too */
            corr[g] = _mm256_cvtss_f32(exp256(_mm256_set1_ps(m[g] - mnew)));
            const __m256 vm = _mm256_set1_ps(mnew);
            __m256 sum = _mm256_setzero_ps();
            for (int u = 0; u < BLK / 8; u++) {
                const __m256 e = exp256(_mm256_sub_ps(v[u], vm));
                _mm256_store_ps(s[g] + 8 * u, e);
                sum = _mm256_add_ps(sum, e);
            }
            l[g] = l[g] * corr[g] + hsum8(sum);
            m[g] = mnew;
        }
        for (int g0 = 0; g0 < nr; g0 += GROUP)
            pv_group(nr - g0, V + jb * ks, ks, k0, n, hd, s + g0, corr + g0, acc + g0 * hd);
    }
    for (int g = 0; g < nr; g++) {
        const __m256 inv = _mm256_set1_ps(1.0f / l[g]);
        for (int c = 0; c < hd; c += 8) _mm256_storeu_ps(t->o[g] + c, _mm256_mul_ps(_mm256_load_ps(acc + g * hd + c), inv));
    }
}

static void attention_avx2(const npl_attn_args *a, int ith, int nth) {
    if (a->hd % 8) { /* rare head sizes: plain C */
        npl_nn_kernels_get(NPL_ISA_GENERIC)->attention(a, ith, nth);
        return;
    }
    const int rows = ACC_MAX / a->hd < ATT_ROWS ? ACC_MAX / a->hd : ATT_ROWS; /* >= 8 for hd <= NPL_ATTN_MAX_HD */
    npl_attn_run(a, ith, nth, attn_tile_avx2, rows > 0 ? rows : 1);
}

/* ---- f16 rows (F16C) ---- */

void npl_f16_to_f32_row_f16c(const uint16_t *x, float *y, int64_t n) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(x + i))));
    if (i < n) {
        uint16_t h[8] = {0};
        float f[8];
        memcpy(h, x + i, (size_t)(n - i) * sizeof *h);
        _mm256_storeu_ps(f, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)h)));
        memcpy(y + i, f, (size_t)(n - i) * sizeof *f);
    }
}

void npl_f32_to_f16_row_f16c(const float *x, uint16_t *y, int64_t n) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm_storeu_si128((__m128i *)(y + i), _mm256_cvtps_ph(_mm256_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    if (i < n) {
        float f[8] = {0};
        uint16_t h[8];
        memcpy(f, x + i, (size_t)(n - i) * sizeof *f);
        _mm_storeu_si128((__m128i *)h, _mm256_cvtps_ph(_mm256_loadu_ps(f), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
        memcpy(y + i, h, (size_t)(n - i) * sizeof *h);
    }
}

const npl_nn_kernels npl_nn_kernels_avx2 = {
    .rms_norm = rms_norm_avx2,
    .swiglu = swiglu_avx2,
    .geglu = geglu_avx2,
    .add = add_avx2,
    .scale = scale_avx2,
    .softmax = softmax_avx2,
    .attention = attention_avx2,
};
