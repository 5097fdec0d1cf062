/* aarch64 NEON row kernels: norms, SwiGLU / GeGLU, add, scale, softmax,
 * attention.
 * Same contracts as generic/nn_generic.c and the algorithms of
 * x86/avx2/nn_avx2.c (the same exp polynomial and range reduction) on 4
 * lanes; tails go through a zero-padded 4-lane copy. Attention is the plain
 * C tile's algorithm on 4 lanes. Every family of the aarch64 build (NEON, dotprod, i8mm) takes
 * this table. A row's result depends only on that row. */
#include <arm_neon.h>
#include <math.h>
#include <string.h>

#include "kernels/nn_kernels.h"

#define NPL_AI static inline __attribute__((always_inline))

/* e^r for r = x - n ln2 (|r| <= ln2/2), degree-6 polynomial (nn_avx2.c's) */
NPL_AI float32x4_t exp_reduced(float32x4_t x, float32x4_t n) {
    float32x4_t r = vfmsq_f32(x, n, vdupq_n_f32(0.693359375f));
    r = vfmsq_f32(r, n, vdupq_n_f32(-2.12194440e-4f));
    float32x4_t y = vdupq_n_f32(1.9875691500e-4f);
    y = vfmaq_f32(vdupq_n_f32(1.3981999507e-3f), y, r);
    y = vfmaq_f32(vdupq_n_f32(8.3334519073e-3f), y, r);
    y = vfmaq_f32(vdupq_n_f32(4.1665795894e-2f), y, r);
    y = vfmaq_f32(vdupq_n_f32(1.6666665459e-1f), y, r);
    y = vfmaq_f32(vdupq_n_f32(5.0000001201e-1f), y, r);
    return vfmaq_f32(vaddq_f32(r, vdupq_n_f32(1.0f)), y, vmulq_f32(r, r));
}

/* exp(x), x clamped to [-120, 89], 2^n as 2^(n/2) * 2^(n - n/2) (both normal) */
NPL_AI float32x4_t exp4(float32x4_t x) {
    x = vminq_f32(vdupq_n_f32(89.0f), vmaxq_f32(vdupq_n_f32(-120.0f), x));
    const float32x4_t n = vrndnq_f32(vmulq_f32(x, vdupq_n_f32(1.44269504088896341f)));
    const float32x4_t y = exp_reduced(x, n);
    const int32x4_t ni = vcvtq_s32_f32(n);
    const int32x4_t n1 = vshrq_n_s32(ni, 1), n2 = vsubq_s32(ni, n1);
    const int32x4_t bias = vdupq_n_s32(127);
    const float32x4_t p1 = vreinterpretq_f32_s32(vshlq_n_s32(vaddq_s32(n1, bias), 23));
    const float32x4_t p2 = vreinterpretq_f32_s32(vshlq_n_s32(vaddq_s32(n2, bias), 23));
    return vmulq_f32(vmulq_f32(y, p1), p2);
}

/* exp(x) for the sigmoids, x clamped to [-87, 88] (one 2^n factor) */
NPL_AI float32x4_t exp4_sig(float32x4_t x) {
    x = vminq_f32(vdupq_n_f32(88.0f), vmaxq_f32(vdupq_n_f32(-87.0f), x));
    const float32x4_t n = vrndnq_f32(vmulq_f32(x, vdupq_n_f32(1.44269504088896341f)));
    const float32x4_t y = exp_reduced(x, n);
    const int32x4_t e = vshlq_n_s32(vaddq_s32(vcvtq_s32_f32(n), vdupq_n_s32(127)), 23);
    return vmulq_f32(y, vreinterpretq_f32_s32(e));
}

NPL_AI float32x4_t silu_mul4(float32x4_t x, float32x4_t u) {
    const float32x4_t e = exp4_sig(vnegq_f32(x));
    return vmulq_f32(vdivq_f32(x, vaddq_f32(vdupq_n_f32(1.0f), e)), u);
}

/* gelu_tanh(x) = x * sigmoid(2 sqrt(2/pi) (x + 0.044715 x^3)), as the generic version */
NPL_AI float32x4_t gelu_mul4(float32x4_t x, float32x4_t u) {
    const float c = -2.0f * 0.7978845608028654f;
    const float32x4_t cx2 = vfmaq_f32(vdupq_n_f32(c), vmulq_f32(x, x), vdupq_n_f32(c * 0.044715f));
    const float32x4_t e = exp4_sig(vmulq_f32(x, cx2));
    return vmulq_f32(vdivq_f32(x, vaddq_f32(vdupq_n_f32(1.0f), e)), u);
}

/* the last n % 4 elements through a zero-padded copy */
NPL_AI float32x4_t load_tail(const float *p, int left) {
    float t[4] = {0, 0, 0, 0};
    memcpy(t, p, sizeof(float) * (size_t)left);
    return vld1q_f32(t);
}
NPL_AI void store_tail(float *p, float32x4_t v, int left) {
    float t[4];
    vst1q_f32(t, v);
    memcpy(p, t, sizeof(float) * (size_t)left);
}

static void rms_norm_neon(const float *x, const float *w, float *y, int n, float eps) {
    float32x4_t s0 = vdupq_n_f32(0), s1 = s0, s2 = s0, s3 = s0;
    int i = 0;
    for (; i + 16 <= n; i += 16) {
        const float32x4_t a = vld1q_f32(x + i), b = vld1q_f32(x + i + 4);
        const float32x4_t c = vld1q_f32(x + i + 8), d = vld1q_f32(x + i + 12);
        s0 = vfmaq_f32(s0, a, a);
        s1 = vfmaq_f32(s1, b, b);
        s2 = vfmaq_f32(s2, c, c);
        s3 = vfmaq_f32(s3, d, d);
    }
    for (; i + 4 <= n; i += 4) {
        const float32x4_t a = vld1q_f32(x + i);
        s0 = vfmaq_f32(s0, a, a);
    }
    if (i < n) {
        const float32x4_t a = load_tail(x + i, n - i);
        s0 = vfmaq_f32(s0, a, a);
    }
    const float ss = vaddvq_f32(vaddq_f32(vaddq_f32(s0, s1), vaddq_f32(s2, s3)));
    const float32x4_t sc = vdupq_n_f32(1.0f / sqrtf(ss / (float)(n > 0 ? n : 1) + eps));
    for (i = 0; i + 4 <= n; i += 4) {
        float32x4_t v = vmulq_f32(vld1q_f32(x + i), sc);
        if (w) v = vmulq_f32(v, vld1q_f32(w + i));
        vst1q_f32(y + i, v);
    }
    if (i < n) {
        float32x4_t v = vmulq_f32(load_tail(x + i, n - i), sc);
        if (w) v = vmulq_f32(v, load_tail(w + i, n - i));
        store_tail(y + i, v, n - i);
    }
}

static void swiglu_neon(const float *g, const float *u, float *y, int n) {
    int i = 0;
    for (; i + 4 <= n; i += 4) vst1q_f32(y + i, silu_mul4(vld1q_f32(g + i), vld1q_f32(u + i)));
    if (i < n) store_tail(y + i, silu_mul4(load_tail(g + i, n - i), load_tail(u + i, n - i)), n - i);
}

static void geglu_neon(const float *g, const float *u, float *y, int n) {
    int i = 0;
    for (; i + 4 <= n; i += 4) vst1q_f32(y + i, gelu_mul4(vld1q_f32(g + i), vld1q_f32(u + i)));
    if (i < n) store_tail(y + i, gelu_mul4(load_tail(g + i, n - i), load_tail(u + i, n - i)), n - i);
}

static void add_neon(const float *x, const float *b, float *y, int n) {
    int i = 0;
    for (; i + 4 <= n; i += 4) vst1q_f32(y + i, vaddq_f32(vld1q_f32(x + i), vld1q_f32(b + i)));
    for (; i < n; i++) y[i] = x[i] + b[i];
}

static void scale_neon(const float *x, float s, float *y, int n) {
    int i = 0;
    for (; i + 4 <= n; i += 4) vst1q_f32(y + i, vmulq_n_f32(vld1q_f32(x + i), s));
    for (; i < n; i++) y[i] = x[i] * s;
}

static void softmax_neon(float *x, int n) {
    if (n <= 0) return;
    float32x4_t vm = vdupq_n_f32(-INFINITY);
    int i = 0;
    for (; i + 4 <= n; i += 4) vm = vmaxq_f32(vm, vld1q_f32(x + i));
    float mx = vmaxvq_f32(vm);
    for (int j = i; j < n; j++) mx = x[j] > mx ? x[j] : mx;
    const float32x4_t vmx = vdupq_n_f32(mx);
    float32x4_t vs = vdupq_n_f32(0);
    for (i = 0; i + 4 <= n; i += 4) {
        const float32x4_t e = exp4(vsubq_f32(vld1q_f32(x + i), vmx));
        vs = vaddq_f32(vs, e);
        vst1q_f32(x + i, e);
    }
    if (i < n) {
        /* padding lanes: exp(-inf) = 0 adds nothing */
        float t[4] = {-INFINITY, -INFINITY, -INFINITY, -INFINITY};
        memcpy(t, x + i, sizeof(float) * (size_t)(n - i));
        const float32x4_t e = exp4(vsubq_f32(vld1q_f32(t), vmx));
        vs = vaddq_f32(vs, e);
        store_tail(x + i, e, n - i);
    }
    const float inv = 1.0f / vaddvq_f32(vs);
    for (i = 0; i + 4 <= n; i += 4) vst1q_f32(x + i, vmulq_n_f32(vld1q_f32(x + i), inv));
    for (; i < n; i++) x[i] *= inv;
}

/* ---- attention: the plain C tile's algorithm (online softmax one key at a
 * time, each K/V row converted once per tile) with 4-lane f16 conversion,
 * dot and accumulator updates; a row's operations depend only on its own
 * range, so chunked and unchunked prefill agree bit for bit. Heads that are
 * not a multiple of 4 take the plain C kernel. ---- */

static void attn_tile_neon(const npl_attn_args *a, const npl_attn_tile *t) {
    const int hd = a->hd;
    const int64_t ks = (int64_t)a->n_kv * hd;
    const uint16_t *kb = a->kc + (int64_t)t->kvh * hd, *vb = a->vc + (int64_t)t->kvh * hd;
    float kf[NPL_ATTN_MAX_HD], vf[NPL_ATTN_MAX_HD], acc[NPL_ATTN_TILE][NPL_ATTN_MAX_HD]; /* 24 KiB */
    float m[NPL_ATTN_TILE], l[NPL_ATTN_TILE];
    int lo = t->j0[0], hi = t->j1[0];
    for (int r = 0; r < t->n; r++) {
        m[r] = -INFINITY;
        l[r] = 0.0f;
        memset(acc[r], 0, (size_t)hd * sizeof(float));
        lo = t->j0[r] < lo ? t->j0[r] : lo;
        hi = t->j1[r] > hi ? t->j1[r] : hi;
    }
    for (int j = lo; j < hi; j++) {
        for (int c = 0; c < hd; c += 4) {
            vst1q_f32(kf + c, vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(kb + j * ks + c))));
            vst1q_f32(vf + c, vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(vb + j * ks + c))));
        }
        for (int r = 0; r < t->n; r++) {
            if (j < t->j0[r] || j >= t->j1[r]) continue;
            const float *q = t->q[r];
            float32x4_t d = vdupq_n_f32(0);
            for (int c = 0; c < hd; c += 4) d = vfmaq_f32(d, vld1q_f32(q + c), vld1q_f32(kf + c));
            float s = vaddvq_f32(d) * a->scale;
            if (a->softcap > 0.0f) s = a->softcap * tanhf(s / a->softcap);
            float p = 1.0f;
            if (s > m[r]) {
                const float corr = expf(m[r] - s); /* 0 for the first key */
                for (int c = 0; c < hd; c += 4) vst1q_f32(acc[r] + c, vmulq_n_f32(vld1q_f32(acc[r] + c), corr));
                l[r] *= corr;
                m[r] = s;
            } else {
                p = expf(s - m[r]);
            }
            for (int c = 0; c < hd; c += 4)
                vst1q_f32(acc[r] + c, vfmaq_n_f32(vld1q_f32(acc[r] + c), vld1q_f32(vf + c), p));
            l[r] += p;
        }
    }
    for (int r = 0; r < t->n; r++) {
        const float inv = 1.0f / l[r];
        for (int c = 0; c < hd; c += 4) vst1q_f32(t->o[r] + c, vmulq_n_f32(vld1q_f32(acc[r] + c), inv));
    }
}

static void attention_neon(const npl_attn_args *a, int ith, int nth) {
    if (a->hd % 4) {
        npl_nn_kernels_get(NPL_ISA_GENERIC)->attention(a, ith, nth);
        return;
    }
    npl_attn_run(a, ith, nth, attn_tile_neon, NPL_ATTN_TILE);
}

const npl_nn_kernels npl_nn_kernels_neon = {
    .attention = attention_neon,
    .rms_norm = rms_norm_neon,
    .swiglu = swiglu_neon,
    .geglu = geglu_neon,
    .add = add_neon,
    .scale = scale_neon,
    .softmax = softmax_neon,
};
