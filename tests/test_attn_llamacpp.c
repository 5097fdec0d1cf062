/* The kernels that model llama.cpp's CPU arithmetic for verification runs.
 * npl_attention_llamacpp (key-by-key flash attention with an f16
 * accumulator) against a double-precision softmax attention: it must be
 * within f16 accumulation error (a few 2^-11 of the output scale), cover
 * GQA, windows, softcap and padding rows, and it must differ from the f32
 * kernel by that rounding (otherwise it would not model llama.cpp).
 * npl_attention_llamacpp_noflash (probabilities rounded to f16 before P.V)
 * against the double reference with and without that rounding.
 * npl_rope_llamacpp (float theta recurrence) against exact angles.
 * npl_geglu_llamacpp (gelu from an f16 table) against double GELU. */
#include <math.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "kernels/quant.h"
#include "kernels/nn_kernels.h"

static uint64_t rng = 0x2545F4914F6CDD1Dull;
static float rnd(float lo, float hi) {
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return lo + (hi - lo) * (float)(rng >> 40) * 0x1p-24f;
}

static void run_case(int hd, int nh, int nkv, int n_q, int p0, int window, float softcap) {
    const int n_ctx = p0 + n_q;
    const int64_t row = (int64_t)nkv * hd;
    float *q = malloc(sizeof(float) * (size_t)(n_q * nh * hd)), *o = malloc(sizeof(float) * (size_t)(n_q * nh * hd));
    float *of = malloc(sizeof(float) * (size_t)(n_q * nh * hd)), *on = malloc(sizeof(float) * (size_t)(n_q * nh * hd));
    uint16_t *kc = malloc(sizeof(uint16_t) * (size_t)(n_ctx * row)), *vc = malloc(sizeof(uint16_t) * (size_t)(n_ctx * row));
    int32_t *pos = malloc(sizeof(int32_t) * (size_t)n_q);
    for (int i = 0; i < n_q * nh * hd; i++) q[i] = npl_f16_to_f32(npl_f32_to_f16(rnd(-1.0f, 1.0f)));
    for (int64_t i = 0; i < n_ctx * row; i++) kc[i] = npl_f32_to_f16(rnd(-1.0f, 1.0f)), vc[i] = npl_f32_to_f16(rnd(-2.0f, 2.0f));
    for (int i = 0; i < n_q; i++) pos[i] = p0 + i;
    if (n_q > 2) pos[1] = -1; /* a padding row */
    const npl_attn_args a = {.q = q, .q_stride = nh * hd, .kc = kc, .vc = vc, .out = o, .out_stride = nh * hd,
                             .pos = pos, .n_q = n_q, .n_head = nh, .n_kv = nkv, .hd = hd,
                             .scale = 1.0f / sqrtf((float)hd), .softcap = softcap, .window = window};
    for (int ith = 0; ith < 3; ith++) npl_attention_llamacpp(&a, ith, 3);
    npl_attn_args af = a, an = a;
    af.out = of;
    npl_nn_kernels_get(NPL_ISA_GENERIC)->attention(&af, 0, 1);
    an.out = on;
    for (int ith = 0; ith < 2; ith++) npl_attention_llamacpp_noflash(&an, ith, 2);
    double max_err = 0, max_diff_f32 = 0, nf_err16 = 0, nf_err = 0;
    long nf_far = 0, nf_n = 0;
    for (int i = 0; i < n_q; i++)
        for (int h = 0; h < nh; h++) {
            const float *qi = q + (i * nh + h) * hd, *oi = o + (i * nh + h) * hd, *fi = of + (i * nh + h) * hd;
            const float *ni = on + (i * nh + h) * hd;
            if (pos[i] < 0) {
                for (int c = 0; c < hd; c++) CHECK(oi[c] == 0.0f && ni[c] == 0.0f);
                continue;
            }
            const int j1 = pos[i] + 1, j0 = window > 0 && pos[i] >= window ? pos[i] - window + 1 : 0;
            double *w = malloc(sizeof(double) * (size_t)j1), mx = -INFINITY, sum = 0;
            for (int j = j0; j < j1; j++) {
                double s = 0;
                for (int c = 0; c < hd; c++) s += (double)qi[c] * npl_f16_to_f32(kc[j * row + (h / (nh / nkv)) * hd + c]);
                s *= 1.0 / sqrt((double)hd);
                if (softcap > 0) s = softcap * tanh(s / softcap);
                w[j] = s;
                mx = s > mx ? s : mx;
            }
            for (int j = j0; j < j1; j++) sum += (w[j] = exp(w[j] - mx));
            for (int c = 0; c < hd; c++) {
                double r = 0, r16 = 0;
                for (int j = j0; j < j1; j++) {
                    const double v = npl_f16_to_f32(vc[j * row + (h / (nh / nkv)) * hd + c]);
                    r += w[j] / sum * v;
                    r16 += npl_f16_to_f32(npl_f32_to_f16((float)(w[j] / sum))) * v;
                }
                max_err = fmax(max_err, fabs(oi[c] - r));
                max_diff_f32 = fmax(max_diff_f32, fabs(oi[c] - fi[c]));
                nf_err16 = fmax(nf_err16, fabs(ni[c] - r16));
                nf_err = fmax(nf_err, fabs(ni[c] - r));
                nf_far += fabs(ni[c] - r16) > 1e-5;
                nf_n++;
            }
            free(w);
        }
    printf("hd %d heads %d/%d n_q %d from %d window %d softcap %g: max err vs double %.2e, vs f32 kernel %.2e\n",
           hd, nh, nkv, n_q, p0, window, (double)softcap, max_err, max_diff_f32);
    CHECK(max_err < 8e-3);      /* |V| <= 2: a few f16 ulps of the accumulator */
    CHECK(max_diff_f32 > 1e-6); /* the f16 accumulator really rounds */
    printf("  no-flash: max err vs double with p in f16 %.2e (%ld of %ld beyond 1e-5), without %.2e\n", nf_err16,
           nf_far, nf_n, nf_err);
    /* a p whose float and double values round to neighbouring halves moves
     * an output by one f16 ulp of p (|V| <= 2): rare, and never more */
    CHECK(nf_err16 < 2e-3);
    CHECK(nf_far * 100 <= nf_n);
    CHECK(nf_err > 1e-5); /* the rounding of p is really there */
    free(q), free(o), free(of), free(on), free(kc), free(vc), free(pos);
}

/* ggml_rope_cache_init's angles drift from the exact ones by float
 * roundings that grow with the position; at position 0 nothing turns. */
static void rope_case(int32_t pos, int neox, double tol) {
    enum { NH = 2, HD = 128 };
    float x[NH * HD], y[NH * HD];
    for (int i = 0; i < NH * HD; i++) x[i] = rnd(-1.0f, 1.0f);
    memcpy(y, x, sizeof x);
    npl_rope_llamacpp(y, NH, HD, HD, pos, 10000.0f, 1.0f, neox);
    double err = 0;
    for (int h = 0; h < NH; h++)
        for (int i = 0; i < HD / 2; i++) {
            const double th = (double)pos * pow(10000.0, -2.0 * i / HD);
            const int i0 = neox ? i : 2 * i, i1 = neox ? i + HD / 2 : 2 * i + 1;
            const float x0 = x[h * HD + i0], x1 = x[h * HD + i1];
            err = fmax(err, fabs(y[h * HD + i0] - (x0 * cos(th) - x1 * sin(th))));
            err = fmax(err, fabs(y[h * HD + i1] - (x0 * sin(th) + x1 * cos(th))));
        }
    printf("rope llama.cpp pos %d neox %d: max err vs exact angles %.2e\n", pos, neox, err);
    CHECK(err <= tol);
    if (pos == 0) CHECK(!memcmp(x, y, sizeof x));
}

/* gelu at x rounded to f16, the result rounded to f16: within a few f16
 * ulps of the exact value, and visibly rounded; 0 and x*u past +-10. */
static void geglu_case(void) {
    enum { N = 4096 };
    static float g[N], u[N], y[N];
    for (int i = 0; i < N; i++) g[i] = rnd(-12.0f, 12.0f), u[i] = rnd(-2.0f, 2.0f);
    g[0] = -10.0f, g[1] = 10.0f, g[2] = 0.0f;
    npl_geglu_llamacpp(g, u, y, N);
    double worst = 0, any = 0;
    for (int i = 0; i < N; i++) {
        const double x = g[i], ref = 0.5 * x * (1.0 + tanh(0.7978845608028654 * (x + 0.044715 * x * x * x))) * u[i];
        /* f16 input rounding moves gelu by up to |gelu'| (<= 1.13) x 2^-11 |x|, the output rounding by 2^-11 */
        const double tol = (1.2 * fabs(x) * 0x1p-11 + fabs(ref / u[i]) * 0x1p-11) * fabs(u[i]) + 1e-7;
        if (x <= -10.0) CHECK(y[i] == 0.0f);
        else if (x >= 10.0) CHECK(y[i] == g[i] * u[i]);
        else worst = fmax(worst, fabs(y[i] - ref) / tol), any = fmax(any, fabs(y[i] - ref));
    }
    printf("geglu llama.cpp: worst error / f16 bound %.3f, max abs error %.2e\n", worst, any);
    CHECK(worst <= 1.0);
    CHECK(any > 1e-4); /* the f16 table really rounds */
}

int main(void) {
    geglu_case();
    rope_case(0, 0, 0.0);
    rope_case(1, 1, 1e-6);
    rope_case(500, 0, 2e-4);
    rope_case(8191, 1, 3e-3);
    run_case(32, 4, 2, 7, 0, 0, 0.0f);
    run_case(64, 4, 1, 5, 100, 0, 0.0f);
    run_case(256, 4, 1, 3, 600, 512, 0.0f);
    run_case(80, 8, 8, 4, 30, 16, 50.0f);
    /* heads past 512 up to the kernels' limit, and an odd size */
    run_case(768, 2, 1, 4, 20, 0, 0.0f);
    run_case(NPL_ATTN_MAX_HD, 2, 2, 3, 10, 8, 50.0f);
    run_case(100, 4, 2, 5, 7, 0, 0.0f);
    TEST_MAIN_END();
}
