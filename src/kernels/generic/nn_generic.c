/* Plain C row kernels (the reference every ISA version is tested against),
 * RoPE, f16 row conversion, the shared attention driver and the per-ISA
 * table lookup. */
#include "kernels/nn_kernels.h"

#include <assert.h>
#include <math.h>
#include <pthread.h>
#include <string.h>

#include "kernels/dtype.h"

#if defined(__x86_64__) || defined(__i386__)
#define NPL_NN_X86 1
#else
#define NPL_NN_X86 0
#endif
#if defined(__aarch64__)
#define NPL_NN_ARM 1
extern const npl_nn_kernels npl_nn_kernels_neon; /* arm/neon/nn_neon.c */
#else
#define NPL_NN_ARM 0
#endif

/* ---- elementwise and row kernels ---- */

static void rms_norm_generic(const float *x, const float *w, float *y, int n, float eps) {
    double ss = 0.0;
    for (int i = 0; i < n; i++) ss += (double)x[i] * x[i];
    const float s = (float)(1.0 / sqrt(ss / (n > 0 ? n : 1) + eps));
    if (w) {
        for (int i = 0; i < n; i++) y[i] = x[i] * s * w[i];
    } else {
        for (int i = 0; i < n; i++) y[i] = x[i] * s;
    }
}

/* silu(g) = g * sigmoid(g) */
static void swiglu_generic(const float *g, const float *u, float *y, int n) {
    for (int i = 0; i < n; i++) y[i] = g[i] / (1.0f + expf(-g[i])) * u[i];
}

/* gelu_tanh(x) = 0.5x(1 + tanh(z)) with z = sqrt(2/pi)(x + 0.044715x^3).
 * Computed as x * sigmoid(2z), which is the same function without the
 * cancellation 1 + tanh(z) suffers for negative x. */
#define NPL_GELU_C1 0.7978845608028654f /* sqrt(2/pi) */
#define NPL_GELU_C2 0.044715f
static void geglu_generic(const float *g, const float *u, float *y, int n) {
    for (int i = 0; i < n; i++) {
        const float x = g[i];
        const float z2 = 2.0f * NPL_GELU_C1 * x * (1.0f + NPL_GELU_C2 * x * x);
        y[i] = x / (1.0f + expf(-z2)) * u[i];
    }
}

static void add_generic(const float *x, const float *b, float *y, int n) {
    for (int i = 0; i < n; i++) y[i] = x[i] + b[i];
}

static void scale_generic(const float *x, float s, float *y, int n) {
    for (int i = 0; i < n; i++) y[i] = x[i] * s;
}

static void softmax_generic(float *x, int n) {
    if (n <= 0) return;
    float mx = x[0];
    for (int i = 1; i < n; i++) mx = x[i] > mx ? x[i] : mx;
    double sum = 0.0;
    for (int i = 0; i < n; i++) {
        x[i] = expf(x[i] - mx);
        sum += x[i];
    }
    const float inv = (float)(1.0 / sum);
    for (int i = 0; i < n; i++) x[i] *= inv;
}

/* ---- attention: the shared driver ---- */

/* Cache rows [*j0, *j1) that a query at position p attends. */
static inline void attn_range(const npl_attn_args *a, int32_t p, int *j0, int *j1) {
    *j1 = p + 1;
    *j0 = (a->window > 0 && p >= a->window) ? p - a->window + 1 : 0;
}

/* Relative cost of one (query, head) pair: its attended rows plus a fixed
 * per-pair overhead; padding rows only get zeroed. */
static inline int64_t attn_cost(const npl_attn_args *a, int i) {
    const int32_t p = a->pos[i];
    if (p < 0) return 1;
    int j0, j1;
    attn_range(a, p, &j0, &j1);
    return (int64_t)(j1 - j0) + 16;
}

/* Index of the first (query, head) pair, in query-major order, whose
 * cumulative start cost s satisfies s * nth >= target. */
static int64_t attn_first_pair(const npl_attn_args *a, int nth, int64_t target) {
    int64_t s = 0;
    for (int i = 0; i < a->n_q; i++) {
        const int64_t c = attn_cost(a, i) * nth;
        if (s >= target) return (int64_t)i * a->n_head;
        const int64_t h = (target - s + c - 1) / c; /* first head at or past target */
        if (h < a->n_head) return (int64_t)i * a->n_head + h;
        s += c * a->n_head;
    }
    return (int64_t)a->n_q * a->n_head;
}

/* A row may join a tile if its range touches the tile's (so every cache row
 * the tile reads is attended by one of its rows) and the union wastes little. */
static int attn_tile_accepts(const npl_attn_tile *t, int j0, int j1, int max_rows) {
    if (t->n == 0) return 1;
    if (t->n == max_rows) return 0;
    int lo = j0, hi = j1;
    for (int r = 0; r < t->n; r++) {
        if (t->j0[r] > j1 || t->j1[r] < j0) return 0;
        lo = t->j0[r] < lo ? t->j0[r] : lo;
        hi = t->j1[r] > hi ? t->j1[r] : hi;
    }
    for (int r = 0; r < t->n; r++)
        if ((hi - lo) - (t->j1[r] - t->j0[r]) > 32) return 0;
    return (hi - lo) - (j1 - j0) <= 32;
}

void npl_attn_run(const npl_attn_args *a, int ith, int nth, npl_attn_tile_fn fn, int max_rows) {
    assert(a->n_kv > 0 && a->n_head % a->n_kv == 0 && a->hd > 0 && a->hd <= NPL_ATTN_MAX_HD && nth > 0);
    assert(max_rows > 0 && max_rows <= NPL_ATTN_TILE_MAX);
    if (a->n_q <= 0 || a->n_head <= 0) return;
    if (a->hd > NPL_ATTN_MAX_HD) { /* callers refuse such heads first; a call that did not gets NaN, not a stack overrun */
        for (int i = ith; i < a->n_q; i += nth)
            for (int64_t e = 0; e < (int64_t)a->n_head * a->hd; e++) a->out[i * a->out_stride + e] = NAN;
        return;
    }
    int64_t total = 0;
    for (int i = 0; i < a->n_q; i++) total += attn_cost(a, i);
    total *= a->n_head;
    const int64_t t0 = attn_first_pair(a, nth, total * ith);
    const int64_t t1 = attn_first_pair(a, nth, total * (ith + 1));
    if (t0 >= t1) return;

    const int hd = a->hd, group = a->n_head / a->n_kv;
    /* Queries per tile: the heads of one group, or several nearby queries of
     * one head when groups are smaller than a tile. */
    const int qb = group >= max_rows ? 1 : max_rows / group;
    for (int i = (int)(t0 / a->n_head); (int64_t)i * a->n_head < t1; i += qb) {
        const int i_end = i + qb < a->n_q ? i + qb : a->n_q;
        for (int kvh = 0; kvh < a->n_kv; kvh++) {
            npl_attn_tile t = {.n = 0, .kvh = kvh};
            for (int ii = i; ii < i_end; ii++) {
                const int32_t p = a->pos[ii];
                for (int h = kvh * group; h < (kvh + 1) * group; h++) {
                    const int64_t pair = (int64_t)ii * a->n_head + h;
                    if (pair < t0 || pair >= t1) continue;
                    float *o = a->out + ii * a->out_stride + (int64_t)h * hd;
                    if (p < 0) {
                        memset(o, 0, (size_t)hd * sizeof(float));
                        continue;
                    }
                    int j0, j1;
                    attn_range(a, p, &j0, &j1);
                    if (!attn_tile_accepts(&t, j0, j1, max_rows)) {
                        fn(a, &t);
                        t.n = 0;
                    }
                    t.q[t.n] = a->q + ii * a->q_stride + (int64_t)h * hd;
                    t.o[t.n] = o;
                    t.j0[t.n] = j0;
                    t.j1[t.n] = j1;
                    t.n++;
                }
            }
            if (t.n) fn(a, &t);
        }
    }
}

/* ---- attention: plain C tile, online softmax one key at a time ---- */

static void attn_tile_generic(const npl_attn_args *a, const npl_attn_tile *t) {
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
    /* each K/V row is converted once for all rows of the tile */
    for (int j = lo; j < hi; j++) {
        for (int c = 0; c < hd; c++) kf[c] = npl_f16_to_f32(kb[j * ks + c]);
        for (int c = 0; c < hd; c++) vf[c] = npl_f16_to_f32(vb[j * ks + c]);
        for (int r = 0; r < t->n; r++) {
            if (j < t->j0[r] || j >= t->j1[r]) continue;
            const float *q = t->q[r];
            float d[4] = {0, 0, 0, 0};
            int c = 0;
            for (; c + 4 <= hd; c += 4)
                for (int u = 0; u < 4; u++) d[u] += q[c + u] * kf[c + u];
            for (; c < hd; c++) d[0] += q[c] * kf[c];
            float s = ((d[0] + d[1]) + (d[2] + d[3])) * a->scale;
            if (a->softcap > 0.0f) s = a->softcap * tanhf(s / a->softcap);
            float p = 1.0f;
            if (s > m[r]) {
                const float corr = expf(m[r] - s); /* 0 for the first key */
                for (c = 0; c < hd; c++) acc[r][c] *= corr;
                l[r] *= corr;
                m[r] = s;
            } else {
                p = expf(s - m[r]);
            }
            for (c = 0; c < hd; c++) acc[r][c] += p * vf[c];
            l[r] += p;
        }
    }
    for (int r = 0; r < t->n; r++) {
        const float inv = 1.0f / l[r];
        for (int c = 0; c < hd; c++) t->o[r][c] = acc[r][c] * inv;
    }
}

static void attention_generic(const npl_attn_args *a, int ith, int nth) {
    npl_attn_run(a, ith, nth, attn_tile_generic, NPL_ATTN_TILE);
}

/* ---- RoPE ---- */

/* one pair of dims (i0, i1) of every head turned by the angle (c, s) */
static inline void rotate_pair(float *x, int n_heads, int hd, int i0, int i1, float c, float s) {
    for (int h = 0; h < n_heads; h++) {
        float *xh = x + (int64_t)h * hd;
        const float x0 = xh[i0], x1 = xh[i1];
        xh[i0] = x0 * c - x1 * s;
        xh[i1] = x0 * s + x1 * c;
    }
}

/* Pair i's cos and sin. fr = pos * freq_scale * step^i and ex = pos * step^i
 * (step = base^(-2/n_rot)) come from the callers' double recurrences; theta
 * is reduced to [-pi, pi] before the float sin/cos, so large positions (8k
 * and more) keep full precision. Without factors and yarn this is the plain
 * RoPE's arithmetic exactly. */
static inline void rope_pair(const npl_rope_args *a, int i, double fr, double ex, float *c, float *s) {
    const double two_pi = 6.283185307179586;
    double th = fr;
    float ms = a->attn_factor;
    if (a->freq_factors) {
        th /= a->freq_factors[i];
        ex /= a->freq_factors[i];
    }
    if (a->ext_factor != 0.0f) { /* yarn, as ggml's rope_yarn */
        const double y = (i - a->corr_lo) / fmax(0.001, (double)a->corr_hi - a->corr_lo);
        const double mix = (1.0 - fmin(1.0, fmax(0.0, y))) * a->ext_factor;
        th = th * (1.0 - mix) + ex * mix;
        ms *= 1.0f + 0.1f * logf(1.0f / a->freq_scale);
    }
    th -= two_pi * nearbyint(th / two_pi);
    *c = cosf((float)th);
    *s = sinf((float)th);
    if (ms != 1.0f) *c *= ms, *s *= ms;
}

void npl_rope_ext(float *x, int n_heads, int hd, int32_t pos, const npl_rope_args *a) {
    const double step = pow((double)a->base, -2.0 / a->n_rot);
    double fr = (double)pos * a->freq_scale, ex = (double)pos;
    const int half = a->n_rot / 2;
    for (int i = 0; i < half; i++, fr *= step, ex *= step) {
        float c, s;
        rope_pair(a, i, fr, ex, &c, &s);
        rotate_pair(x, n_heads, hd, a->neox ? i : 2 * i, a->neox ? i + half : 2 * i + 1, c, s);
    }
}

void npl_rope_cos_sin(const npl_rope_args *a, int32_t pos, float *cs) {
    const double step = pow((double)a->base, -2.0 / a->n_rot);
    double fr = (double)pos * a->freq_scale, ex = (double)pos;
    const int half = a->n_rot / 2;
    for (int i = 0; i < half; i++, fr *= step, ex *= step) rope_pair(a, i, fr, ex, &cs[i], &cs[half + i]);
}

void npl_rope_apply(float *x, int n_heads, int hd, const float *cs, const npl_rope_args *a) {
    const int half = a->n_rot / 2;
    const float *c = cs, *s = cs + half;
    for (int h = 0; h < n_heads; h++) { /* head by head: NeoX's halves are runs the compiler vectorizes */
        float *xh = x + (int64_t)h * hd;
        if (a->neox) {
            float *lo = xh, *hi = xh + half;
            for (int i = 0; i < half; i++) {
                const float x0 = lo[i], x1 = hi[i];
                lo[i] = x0 * c[i] - x1 * s[i];
                hi[i] = x0 * s[i] + x1 * c[i];
            }
        } else {
            for (int i = 0; i < half; i++) {
                const float x0 = xh[2 * i], x1 = xh[2 * i + 1];
                xh[2 * i] = x0 * c[i] - x1 * s[i];
                xh[2 * i + 1] = x0 * s[i] + x1 * c[i];
            }
        }
    }
}

void npl_rope(float *x, int n_heads, int hd, int n_rot, int32_t pos, float base, float freq_scale,
              int neox) {
    const npl_rope_args a = {.n_rot = n_rot, .neox = neox, .base = base, .freq_scale = freq_scale, .attn_factor = 1.0f};
    npl_rope_ext(x, n_heads, hd, pos, &a);
}

/* llama.cpp's RoPE (ggml_rope_cache_init, rope_yarn): theta kept in float and
 * multiplied by powf(base, -2/n_rot) pair after pair, so its angles drift
 * from the exact ones by float roundings (about 1e-4 rad at position 500).
 * Only for verification runs against llama.cpp (npl_cpu_ctx.arith). */
void npl_rope_llamacpp_ext(float *x, int n_heads, int hd, int32_t pos, const npl_rope_args *a) {
    const float theta_scale = powf(a->base, -2.0f / (float)a->n_rot);
    float theta = (float)pos;
    const int half = a->n_rot / 2;
    for (int i = 0; i < half; i++, theta *= theta_scale) {
        const float te = a->freq_factors ? theta / a->freq_factors[i] : theta, ti = a->freq_scale * te;
        float th = ti, ms = a->attn_factor;
        if (a->ext_factor != 0.0f) {
            const float y = ((float)i - a->corr_lo) / fmaxf(0.001f, a->corr_hi - a->corr_lo);
            const float mix = (1.0f - fminf(1.0f, fmaxf(0.0f, y))) * a->ext_factor;
            th = ti * (1.0f - mix) + te * mix;
            ms *= 1.0f + 0.1f * logf(1.0f / a->freq_scale);
        }
        const float c = cosf(th) * ms, s = sinf(th) * ms;
        rotate_pair(x, n_heads, hd, a->neox ? i : 2 * i, a->neox ? i + half : 2 * i + 1, c, s);
    }
}

void npl_rope_llamacpp(float *x, int n_heads, int hd, int n_rot, int32_t pos, float base, float freq_scale,
                       int neox) {
    const npl_rope_args a = {.n_rot = n_rot, .neox = neox, .base = base, .freq_scale = freq_scale, .attn_factor = 1.0f};
    npl_rope_llamacpp_ext(x, n_heads, hd, pos, &a);
}

/* llama.cpp's GEGLU (ggml_vec_geglu_f32 with GGML_GELU_FP16, its CPU
 * default): gelu looked up in a 65536-entry f16 table at x rounded to f16, so
 * both its input and its output carry f16 rounding (2^-11), far above our f32
 * GELU's error. The table is built once, with ggml_gelu_f32's expression. */
static uint16_t gelu_f16_table[1 << 16];
static pthread_once_t gelu_f16_once = PTHREAD_ONCE_INIT;
static void gelu_f16_init(void) {
    for (int i = 0; i < 1 << 16; i++) {
        const float x = npl_f16_to_f32((uint16_t)i);
        gelu_f16_table[i] =
            npl_f32_to_f16(0.5f * x * (1.0f + tanhf(0.79788456080286535587989211986876f * x * (1.0f + 0.044715f * x * x))));
    }
}
void npl_geglu_llamacpp(const float *g, const float *u, float *y, int n) {
    pthread_once(&gelu_f16_once, gelu_f16_init);
    for (int i = 0; i < n; i++) {
        if (g[i] <= -10.0f) y[i] = 0.0f;
        else if (g[i] >= 10.0f) y[i] = g[i] * u[i];
        else y[i] = npl_f16_to_f32(gelu_f16_table[npl_f32_to_f16(g[i])]) * u[i];
    }
}

/* ---- tables, resolved once ---- */

static const npl_nn_kernels nn_generic = {
    .rms_norm = rms_norm_generic,
    .swiglu = swiglu_generic,
    .geglu = geglu_generic,
    .add = add_generic,
    .scale = scale_generic,
    .softmax = softmax_generic,
    .attention = attention_generic,
};

static void f16_to_f32_row_generic(const uint16_t *x, float *y, int64_t n) {
    for (int64_t i = 0; i < n; i++) y[i] = npl_f16_to_f32(x[i]);
}
static void f32_to_f16_row_generic(const float *x, uint16_t *y, int64_t n) {
    for (int64_t i = 0; i < n; i++) y[i] = npl_f32_to_f16(x[i]);
}

/* Written once under pthread_once, read-only afterwards. */
static struct {
    npl_nn_kernels tab[NPL_ISA_AVX512 + 1];
    void (*to_f32)(const uint16_t *, float *, int64_t);
    void (*to_f16)(const float *, uint16_t *, int64_t);
} nn_resolved;
static pthread_once_t nn_once = PTHREAD_ONCE_INIT;

#if NPL_NN_X86 || NPL_NN_ARM
/* dst = lower table with the entries `own` implements replaced. */
static void nn_merge(npl_nn_kernels *dst, const npl_nn_kernels *lower, const npl_nn_kernels *own) {
    *dst = *lower;
#define NPL_NN_TAKE(f) if (own->f) dst->f = own->f
    NPL_NN_TAKE(rms_norm);
    NPL_NN_TAKE(swiglu);
    NPL_NN_TAKE(geglu);
    NPL_NN_TAKE(add);
    NPL_NN_TAKE(scale);
    NPL_NN_TAKE(softmax);
    NPL_NN_TAKE(attention);
#undef NPL_NN_TAKE
}
#endif

static void nn_resolve(void) {
    nn_resolved.tab[NPL_ISA_GENERIC] = nn_generic;
    nn_resolved.to_f32 = f16_to_f32_row_generic;
    nn_resolved.to_f16 = f32_to_f16_row_generic;
#if NPL_NN_X86
    const npl_isa best = npl_cpu_best_isa();
    nn_merge(&nn_resolved.tab[NPL_ISA_AVX2], &nn_resolved.tab[NPL_ISA_GENERIC], &npl_nn_kernels_avx2);
    nn_merge(&nn_resolved.tab[NPL_ISA_AVX512], &nn_resolved.tab[NPL_ISA_AVX2], &npl_nn_kernels_avx512);
    if (best >= NPL_ISA_AVX512) {
        nn_resolved.to_f32 = npl_f16_to_f32_row_avx512;
        nn_resolved.to_f16 = npl_f32_to_f16_row_avx512;
    } else if (best >= NPL_ISA_AVX2) {
        nn_resolved.to_f32 = npl_f16_to_f32_row_f16c;
        nn_resolved.to_f16 = npl_f32_to_f16_row_f16c;
    }
#elif NPL_NN_ARM
    /* NEON is every aarch64 CPU's: dotprod and i8mm take its table */
    nn_merge(&nn_resolved.tab[NPL_ISA_NEON], &nn_resolved.tab[NPL_ISA_GENERIC], &npl_nn_kernels_neon);
    nn_resolved.tab[NPL_ISA_DOTPROD] = nn_resolved.tab[NPL_ISA_NEON];
    if (npl_cpu_best_isa() >= NPL_ISA_NEON) {
        nn_resolved.to_f32 = npl_f16_to_f32_row_neon;
        nn_resolved.to_f16 = npl_f32_to_f16_row_neon;
    }
#else
    nn_resolved.tab[NPL_ISA_AVX2] = nn_generic;
    nn_resolved.tab[NPL_ISA_AVX512] = nn_generic;
#endif
}

const npl_nn_kernels *npl_nn_kernels_get(npl_isa want) {
    pthread_once(&nn_once, nn_resolve);
#if NPL_NN_X86 || NPL_NN_ARM
    npl_isa isa = npl_cpu_best_isa();
#else
    npl_isa isa = NPL_ISA_GENERIC;
#endif
    if ((int)want < (int)isa) isa = want;
    if ((int)isa < 0) isa = NPL_ISA_GENERIC;
    if (isa > NPL_ISA_AVX512) isa = NPL_ISA_AVX512; /* AMX: no nn kernels of its own */
    return &nn_resolved.tab[isa];
}

void npl_f16_to_f32_row_fast(const uint16_t *x, float *y, int64_t n) {
    pthread_once(&nn_once, nn_resolve);
    nn_resolved.to_f32(x, y, n);
}

void npl_f32_to_f16_row_fast(const float *x, uint16_t *y, int64_t n) {
    pthread_once(&nn_once, nn_resolve);
    nn_resolved.to_f16(x, y, n);
}
