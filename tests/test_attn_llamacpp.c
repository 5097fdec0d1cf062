/* npl_attention_llamacpp (llama.cpp's key-by-key flash attention with an f16
 * accumulator) against a double-precision softmax attention: it must be
 * within f16 accumulation error (a few 2^-11 of the output scale), cover
 * GQA, windows, softcap and padding rows, and it must differ from the f32
 * kernel by that rounding (otherwise it would not model llama.cpp). */
#include <math.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "core/quant.h"
#include "cpu/kernels/nn_kernels.h"

static uint64_t rng = 0x2545F4914F6CDD1Dull;
static float rnd(float lo, float hi) {
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return lo + (hi - lo) * (float)(rng >> 40) * 0x1p-24f;
}

static void run_case(int hd, int nh, int nkv, int n_q, int p0, int window, float softcap) {
    const int n_ctx = p0 + n_q;
    const int64_t row = (int64_t)nkv * hd;
    float *q = malloc(sizeof(float) * (size_t)(n_q * nh * hd)), *o = malloc(sizeof(float) * (size_t)(n_q * nh * hd));
    float *of = malloc(sizeof(float) * (size_t)(n_q * nh * hd));
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
    npl_attn_args af = a;
    af.out = of;
    npl_nn_kernels_get(NPL_ISA_GENERIC)->attention(&af, 0, 1);
    double max_err = 0, max_diff_f32 = 0;
    for (int i = 0; i < n_q; i++)
        for (int h = 0; h < nh; h++) {
            const float *qi = q + (i * nh + h) * hd, *oi = o + (i * nh + h) * hd, *fi = of + (i * nh + h) * hd;
            if (pos[i] < 0) {
                for (int c = 0; c < hd; c++) CHECK(oi[c] == 0.0f);
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
                double r = 0;
                for (int j = j0; j < j1; j++) r += w[j] / sum * npl_f16_to_f32(vc[j * row + (h / (nh / nkv)) * hd + c]);
                max_err = fmax(max_err, fabs(oi[c] - r));
                max_diff_f32 = fmax(max_diff_f32, fabs(oi[c] - fi[c]));
            }
            free(w);
        }
    printf("hd %d heads %d/%d n_q %d from %d window %d softcap %g: max err vs double %.2e, vs f32 kernel %.2e\n",
           hd, nh, nkv, n_q, p0, window, (double)softcap, max_err, max_diff_f32);
    CHECK(max_err < 8e-3);      /* |V| <= 2: a few f16 ulps of the accumulator */
    CHECK(max_diff_f32 > 1e-6); /* the f16 accumulator really rounds */
    free(q), free(o), free(of), free(kc), free(vc), free(pos);
}

int main(void) {
    run_case(32, 4, 2, 7, 0, 0, 0.0f);
    run_case(64, 4, 1, 5, 100, 0, 0.0f);
    run_case(256, 4, 1, 3, 600, 512, 0.0f);
    run_case(80, 8, 8, 4, 30, 16, 50.0f);
    TEST_MAIN_END();
}
