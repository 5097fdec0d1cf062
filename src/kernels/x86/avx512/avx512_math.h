/* AVX-512 vector math shared by the row kernels (nn_avx512.c) and the
 * attention tile (attn_avx512.c); exp and tanh are Cephes-style
 * polynomials (about 1e-7 relative error). */
#ifndef NPL_AVX512_MATH_H
#define NPL_AVX512_MATH_H
#include <immintrin.h>
#include <stdint.h>

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

#endif
