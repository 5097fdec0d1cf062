/* AVX-512 row kernels (the attention tile is in attn_avx512.c). Same
 * contracts as the plain C versions in generic/nn_generic.c. */
#include <immintrin.h>
#include <math.h>
#include <string.h>

#include "kernels/nn_kernels.h"

#include "kernels/x86/avx512/avx512_math.h"

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
    .attention = npl_attention_avx512,
};
