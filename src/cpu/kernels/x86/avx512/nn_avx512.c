/* AVX-512 row kernels and attention tile. Same contracts as the plain C
 * versions in generic/nn_generic.c; exp and tanh are Cephes-style
 * polynomials (about 1e-7 relative error). */
#include <immintrin.h>
#include <math.h>
#include <string.h>

#include "cpu/kernels/nn_kernels.h"

#define NPL_AI static inline __attribute__((always_inline))

/* ---- vector math ---- */

/* exp(x): x = n ln2 + r, |r| <= ln2/2, degree-6 polynomial, scaled by 2^n
 * with scalef (which handles overflow to inf and underflow to 0). The clamp
 * keeps r finite for +-inf; NaN propagates. */
NPL_AI __m512 exp512(__m512 x) {
    x = _mm512_min_ps(_mm512_set1_ps(89.0f), _mm512_max_ps(_mm512_set1_ps(-120.0f), x));
    const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
                                          _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), x);
    r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
    __m512 y = _mm512_set1_ps(1.9875691500e-4f);
    y = _mm512_fmadd_ps(y, r, _mm512_set1_ps(1.3981999507e-3f));
    y = _mm512_fmadd_ps(y, r, _mm512_set1_ps(8.3334519073e-3f));
    y = _mm512_fmadd_ps(y, r, _mm512_set1_ps(4.1665795894e-2f));
    y = _mm512_fmadd_ps(y, r, _mm512_set1_ps(1.6666665459e-1f));
    y = _mm512_fmadd_ps(y, r, _mm512_set1_ps(5.0000001201e-1f));
    y = _mm512_fmadd_ps(y, _mm512_mul_ps(r, r), _mm512_add_ps(r, _mm512_set1_ps(1.0f)));
    return _mm512_scalef_ps(y, n);
}

/* tanh(x): odd polynomial for |x| <= 0.625, else 1 - 2/(exp(2|x|) + 1). */
NPL_AI __m512 tanh512(__m512 x) {
    const __m512 ax = _mm512_abs_ps(x);
    const __m512 z = _mm512_mul_ps(x, x);
    __m512 p = _mm512_set1_ps(-5.70498872745e-3f);
    p = _mm512_fmadd_ps(p, z, _mm512_set1_ps(2.06390887954e-2f));
    p = _mm512_fmadd_ps(p, z, _mm512_set1_ps(-5.37397155531e-2f));
    p = _mm512_fmadd_ps(p, z, _mm512_set1_ps(1.33314422036e-1f));
    p = _mm512_fmadd_ps(p, z, _mm512_set1_ps(-3.33332819422e-1f));
    p = _mm512_fmadd_ps(_mm512_mul_ps(p, z), x, x);
    const __m512 e = exp512(_mm512_add_ps(ax, ax));
    __m512 big = _mm512_sub_ps(_mm512_set1_ps(1.0f),
                               _mm512_div_ps(_mm512_set1_ps(2.0f), _mm512_add_ps(e, _mm512_set1_ps(1.0f))));
    big = _mm512_or_ps(big, _mm512_and_ps(x, _mm512_set1_ps(-0.0f))); /* sign of x */
    return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(ax, _mm512_set1_ps(0.625f), _CMP_GT_OQ), p, big);
}

NPL_AI __mmask16 tail_mask(int64_t left) {
    return left >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << left) - 1);
}

/* ---- elementwise and row kernels ---- */

static void rms_norm_avx512(const float *x, const float *w, float *y, int n, float eps) {
    __m512 s0 = _mm512_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;
    int i = 0;
    for (; i + 64 <= n; i += 64) {
        const __m512 a = _mm512_loadu_ps(x + i), b = _mm512_loadu_ps(x + i + 16);
        const __m512 c = _mm512_loadu_ps(x + i + 32), d = _mm512_loadu_ps(x + i + 48);
        s0 = _mm512_fmadd_ps(a, a, s0);
        s1 = _mm512_fmadd_ps(b, b, s1);
        s2 = _mm512_fmadd_ps(c, c, s2);
        s3 = _mm512_fmadd_ps(d, d, s3);
    }
    for (; i < n; i += 16) {
        const __m512 a = _mm512_maskz_loadu_ps(tail_mask(n - i), x + i);
        s0 = _mm512_fmadd_ps(a, a, s0);
    }
    const float ss = _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(s0, s1), _mm512_add_ps(s2, s3)));
    const __m512 sc = _mm512_set1_ps(1.0f / sqrtf(ss / (float)(n > 0 ? n : 1) + eps));
    for (i = 0; i < n; i += 16) {
        const __mmask16 m = tail_mask(n - i);
        __m512 v = _mm512_mul_ps(_mm512_maskz_loadu_ps(m, x + i), sc);
        if (w) v = _mm512_mul_ps(v, _mm512_maskz_loadu_ps(m, w + i));
        _mm512_mask_storeu_ps(y + i, m, v);
    }
}

static void swiglu_avx512(const float *g, const float *u, float *y, int n) {
    const __m512 one = _mm512_set1_ps(1.0f);
    for (int i = 0; i < n; i += 16) {
        const __mmask16 m = tail_mask(n - i);
        const __m512 x = _mm512_maskz_loadu_ps(m, g + i);
        const __m512 e = exp512(_mm512_sub_ps(_mm512_setzero_ps(), x));
        const __m512 v = _mm512_mul_ps(_mm512_div_ps(x, _mm512_add_ps(one, e)), _mm512_maskz_loadu_ps(m, u + i));
        _mm512_mask_storeu_ps(y + i, m, v);
    }
}

/* gelu_tanh(x) = x * sigmoid(2 sqrt(2/pi) (x + 0.044715 x^3)), as in the generic version */
static void geglu_avx512(const float *g, const float *u, float *y, int n) {
    const __m512 one = _mm512_set1_ps(1.0f);
    const __m512 c1 = _mm512_set1_ps(-2.0f * 0.7978845608028654f), c2 = _mm512_set1_ps(0.044715f);
    for (int i = 0; i < n; i += 16) {
        const __mmask16 m = tail_mask(n - i);
        const __m512 x = _mm512_maskz_loadu_ps(m, g + i);
        const __m512 inner = _mm512_fmadd_ps(_mm512_mul_ps(c2, x), x, one);
        const __m512 e = exp512(_mm512_mul_ps(_mm512_mul_ps(c1, x), inner));
        const __m512 v = _mm512_mul_ps(_mm512_div_ps(x, _mm512_add_ps(one, e)), _mm512_maskz_loadu_ps(m, u + i));
        _mm512_mask_storeu_ps(y + i, m, v);
    }
}

static void add_avx512(const float *x, const float *b, float *y, int n) {
    for (int i = 0; i < n; i += 16) {
        const __mmask16 m = tail_mask(n - i);
        _mm512_mask_storeu_ps(y + i, m, _mm512_add_ps(_mm512_maskz_loadu_ps(m, x + i), _mm512_maskz_loadu_ps(m, b + i)));
    }
}

static void scale_avx512(const float *x, float s, float *y, int n) {
    const __m512 vs = _mm512_set1_ps(s);
    for (int i = 0; i < n; i += 16) {
        const __mmask16 m = tail_mask(n - i);
        _mm512_mask_storeu_ps(y + i, m, _mm512_mul_ps(_mm512_maskz_loadu_ps(m, x + i), vs));
    }
}

static void softmax_avx512(float *x, int n) {
    if (n <= 0) return;
    const __m512 ninf = _mm512_set1_ps(-INFINITY);
    __m512 vm = ninf;
    for (int i = 0; i < n; i += 16) vm = _mm512_max_ps(vm, _mm512_mask_loadu_ps(ninf, tail_mask(n - i), x + i));
    const __m512 mx = _mm512_set1_ps(_mm512_reduce_max_ps(vm));
    __m512 vs = _mm512_setzero_ps();
    for (int i = 0; i < n; i += 16) {
        const __mmask16 m = tail_mask(n - i);
        const __m512 e = exp512(_mm512_sub_ps(_mm512_maskz_loadu_ps(m, x + i), mx));
        vs = _mm512_mask_add_ps(vs, m, vs, e);
        _mm512_mask_storeu_ps(x + i, m, e);
    }
    const __m512 inv = _mm512_set1_ps(1.0f / _mm512_reduce_add_ps(vs));
    for (int i = 0; i < n; i += 16) {
        const __mmask16 m = tail_mask(n - i);
        _mm512_mask_storeu_ps(x + i, m, _mm512_mul_ps(_mm512_maskz_loadu_ps(m, x + i), inv));
    }
}

/* ---- attention tile ----
 * Keys go in blocks of BLK: scores for every row of the tile (4 keys at a
 * time, each f16 K chunk converted once and used by all rows), one online
 * softmax update per row and block, then P.V with the output chunk of every
 * row held in registers across the block's keys. */

#define BLK 32

/* {sum(a), sum(b), sum(c), sum(d)} */
NPL_AI __m128 hsum4(__m512 a, __m512 b, __m512 c, __m512 d) {
#define NPL_FOLD(v) _mm_add_ps(_mm256_castps256_ps128(_mm256_add_ps(_mm512_castps512_ps256(v), _mm512_extractf32x8_ps(v, 1))), \
                              _mm256_extractf128_ps(_mm256_add_ps(_mm512_castps512_ps256(v), _mm512_extractf32x8_ps(v, 1)), 1))
    const __m128 a4 = NPL_FOLD(a), b4 = NPL_FOLD(b), c4 = NPL_FOLD(c), d4 = NPL_FOLD(d);
#undef NPL_FOLD
    return _mm_hadd_ps(_mm_hadd_ps(a4, b4), _mm_hadd_ps(c4, d4));
}

/* Cache rows are strided (n_kv heads per position) and may come from DRAM:
 * while one block's scores are computed, the next block's K rows and this
 * block's V rows are prefetched, a few rows per step. */
NPL_AI void prefetch_rows(const uint16_t *p, int64_t ks, int k0, int k1, int hd) {
    for (int k = k0; k < k1; k++)
        for (int c = 0; c < hd; c += 32) _mm_prefetch((const char *)(p + k * ks + c), _MM_HINT_T0);
}

/* s[g][k] = q[g] . K[k] for k < n; prefetches rows [0, npk) of pk and [0, npv) of pv */
NPL_AI void scores512(const float *const *q, const uint16_t *K, int64_t ks, int n, int hd, float s[][BLK],
                      const uint16_t *pk, int npk, const uint16_t *pv, int npv, const int NB) {
    int k = 0;
    for (; k + 4 <= n; k += 4) {
        prefetch_rows(pk, ks, k, k + 4 < npk ? k + 4 : npk, hd);
        prefetch_rows(pv, ks, k, k + 4 < npv ? k + 4 : npv, hd);
        __m512 acc[NPL_ATTN_TILE][4];
        for (int g = 0; g < NB; g++)
            for (int u = 0; u < 4; u++) acc[g][u] = _mm512_setzero_ps();
        const uint16_t *kr = K + k * ks;
        for (int c = 0; c < hd; c += 16) {
            __m512 kv[4];
            for (int u = 0; u < 4; u++) kv[u] = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(kr + u * ks + c)));
            for (int g = 0; g < NB; g++) {
                const __m512 qv = _mm512_loadu_ps(q[g] + c);
                for (int u = 0; u < 4; u++) acc[g][u] = _mm512_fmadd_ps(qv, kv[u], acc[g][u]);
            }
        }
        for (int g = 0; g < NB; g++) _mm_storeu_ps(&s[g][k], hsum4(acc[g][0], acc[g][1], acc[g][2], acc[g][3]));
    }
    for (; k < n; k++) {
        __m512 acc[NPL_ATTN_TILE];
        for (int g = 0; g < NB; g++) acc[g] = _mm512_setzero_ps();
        const uint16_t *kr = K + k * ks;
        for (int c = 0; c < hd; c += 16) {
            const __m512 kv = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(kr + c)));
            for (int g = 0; g < NB; g++) acc[g] = _mm512_fmadd_ps(_mm512_loadu_ps(q[g] + c), kv, acc[g]);
        }
        for (int g = 0; g < NB; g++) s[g][k] = _mm512_reduce_add_ps(acc[g]);
    }
}

/* acc[g] = acc[g] * corr[g] + sum_k s[g][k] V[k] */
NPL_AI void pv512(const uint16_t *V, int64_t ks, int n, int hd, float s[][BLK], const float *corr, float *acc,
                  const int NB) {
    int c = 0;
    for (; c + 64 <= hd; c += 64) {
        __m512 o[NPL_ATTN_TILE][4];
        for (int g = 0; g < NB; g++) {
            const __m512 cf = _mm512_set1_ps(corr[g]);
            for (int u = 0; u < 4; u++) o[g][u] = _mm512_mul_ps(_mm512_loadu_ps(acc + g * hd + c + 16 * u), cf);
        }
        const uint16_t *vr = V + c;
        for (int k = 0; k < n; k++, vr += ks) {
            __m512 v[4];
            for (int u = 0; u < 4; u++) v[u] = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(vr + 16 * u)));
            for (int g = 0; g < NB; g++) {
                const __m512 p = _mm512_set1_ps(s[g][k]);
                for (int u = 0; u < 4; u++) o[g][u] = _mm512_fmadd_ps(p, v[u], o[g][u]);
            }
        }
        for (int g = 0; g < NB; g++)
            for (int u = 0; u < 4; u++) _mm512_storeu_ps(acc + g * hd + c + 16 * u, o[g][u]);
    }
    for (; c < hd; c += 16) {
        __m512 o[NPL_ATTN_TILE];
        for (int g = 0; g < NB; g++) o[g] = _mm512_mul_ps(_mm512_loadu_ps(acc + g * hd + c), _mm512_set1_ps(corr[g]));
        const uint16_t *vr = V + c;
        for (int k = 0; k < n; k++, vr += ks) {
            const __m512 v = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)vr));
            for (int g = 0; g < NB; g++) o[g] = _mm512_fmadd_ps(_mm512_set1_ps(s[g][k]), v, o[g]);
        }
        for (int g = 0; g < NB; g++) _mm512_storeu_ps(acc + g * hd + c, o[g]);
    }
}

NPL_AI void tile512(const npl_attn_args *a, const npl_attn_tile *t, const int NB) {
    const int hd = a->hd;
    const int64_t ks = (int64_t)a->n_kv * hd;
    const uint16_t *K = a->kc + (int64_t)t->kvh * hd, *V = a->vc + (int64_t)t->kvh * hd;
    float acc[NPL_ATTN_TILE * 512] __attribute__((aligned(64)));
    float s[NPL_ATTN_TILE][BLK] __attribute__((aligned(64)));
    float m[NPL_ATTN_TILE], l[NPL_ATTN_TILE], corr[NPL_ATTN_TILE];
    const float *q[NPL_ATTN_TILE];
    int lo = t->j0[0], hi = t->j1[0];
    for (int g = 0; g < NB; g++) {
        q[g] = t->q[g];
        m[g] = -INFINITY;
        l[g] = 0.0f;
        lo = t->j0[g] < lo ? t->j0[g] : lo;
        hi = t->j1[g] > hi ? t->j1[g] : hi;
    }
    memset(acc, 0, sizeof(float) * (size_t)(NB * hd));
    memset(s, 0, sizeof s);
    const __m512 scale = _mm512_set1_ps(a->scale), ninf = _mm512_set1_ps(-INFINITY);
    const float cap = a->softcap;
    const __m512 vcap = _mm512_set1_ps(cap), vicap = _mm512_set1_ps(cap > 0.0f ? 1.0f / cap : 0.0f);

    for (int jb = lo; jb < hi; jb += BLK) {
        const int n = hi - jb < BLK ? hi - jb : BLK;
        const int nnext = hi - jb - BLK < BLK ? hi - jb - BLK : BLK; /* rows of the next block */
        scores512(q, K + jb * ks, ks, n, hd, s, nnext > 0 ? K + (jb + BLK) * ks : K, nnext, V + jb * ks, n, NB);
        for (int g = 0; g < NB; g++) {
            /* keys of this block that row g attends */
            const int k0 = t->j0[g] - jb > 0 ? t->j0[g] - jb : 0;
            const int k1 = t->j1[g] - jb < n ? t->j1[g] - jb : n;
            const uint64_t bits = k1 > k0 ? ((1ull << k1) - 1) & ~((1ull << k0) - 1) : 0;
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
        pv512(V + jb * ks, ks, n, hd, s, corr, acc, NB);
    }
    for (int g = 0; g < NB; g++) {
        const __m512 inv = _mm512_set1_ps(1.0f / l[g]);
        for (int c = 0; c < hd; c += 16) _mm512_storeu_ps(t->o[g] + c, _mm512_mul_ps(_mm512_load_ps(acc + g * hd + c), inv));
    }
}

static void attn_tile_avx512(const npl_attn_args *a, const npl_attn_tile *t) {
    switch (t->n) {
    case 1: tile512(a, t, 1); break;
    case 2: tile512(a, t, 2); break;
    case 3: tile512(a, t, 3); break;
    default: tile512(a, t, 4); break;
    }
}

static void attention_avx512(const npl_attn_args *a, int ith, int nth) {
    if (a->hd % 16) { /* rare head sizes: the AVX2 kernel handles multiples of 8 */
        npl_nn_kernels_avx2.attention(a, ith, nth);
        return;
    }
    npl_attn_run(a, ith, nth, attn_tile_avx512);
}

/* ---- f16 rows ---- */

void npl_f16_to_f32_row_avx512(const uint16_t *x, float *y, int64_t n) {
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) _mm512_storeu_ps(y + i, _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(x + i))));
    if (i < n) {
        const __mmask16 m = tail_mask(n - i);
        _mm512_mask_storeu_ps(y + i, m, _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, x + i)));
    }
}

void npl_f32_to_f16_row_avx512(const float *x, uint16_t *y, int64_t n) {
    int64_t i = 0;
    for (; i + 16 <= n; i += 16)
        _mm256_storeu_si256((__m256i *)(y + i), _mm512_cvtps_ph(_mm512_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    if (i < n) {
        const __mmask16 m = tail_mask(n - i);
        const __m256i h = _mm512_cvtps_ph(_mm512_maskz_loadu_ps(m, x + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        _mm256_mask_storeu_epi16(y + i, m, h);
    }
}

const npl_nn_kernels npl_nn_kernels_avx512 = {
    .rms_norm = rms_norm_avx512,
    .swiglu = swiglu_avx512,
    .geglu = geglu_avx512,
    .add = add_avx512,
    .scale = scale_avx512,
    .softmax = softmax_avx512,
    .attention = attention_avx512,
};
