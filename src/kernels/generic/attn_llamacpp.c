/* Attention with llama.cpp's CPU flash-attention arithmetic, for verifying
 * agreement with llama.cpp (`npullm eval-logits --arith llamacpp`).
 *
 * llama.cpp (ggml_compute_forward_flash_attn_ext_f16) walks the keys of a
 * query one at a time and keeps the P.V accumulator in f16 when V is f16:
 * every rescale and every v * p update rounds the accumulator to f16. That
 * rounding is far above f32 noise (2^-11 per step), and it is most of the
 * difference between llama.cpp's logits and an f32 attention such as ours on
 * quantized models. This kernel repeats it step for step: key order, the
 * score as ggml_vec_dot_f16 sums it (4 x 16-lane f32 accumulators over
 * 64-element steps, the rest in double), the max / rescale rule, f16
 * rounding of the accumulator, and the final multiply by 1/S. Plain C, one
 * row at a time: slow, and meant only for verification runs. */
#include <math.h>
#include <string.h>

#include "kernels/quant.h"
#include "kernels/nn_kernels.h"

/* ggml_vec_dot_f16 with AVX-512: fma into sum[j][lane] for 64-element steps,
 * then sum[0]+sum[2], sum[1]+sum[3], sum[0]+sum[1], a 16 -> 1 lane tree, and
 * the leftover elements added in double. */
static float dot_f16_like_ggml(const float *q, const uint16_t *k, int n) {
    float sum[4][16];
    memset(sum, 0, sizeof sum);
    const int np = n & ~63;
    for (int i = 0; i < np; i += 64)
        for (int j = 0; j < 4; j++)
            for (int l = 0; l < 16; l++) {
                const int e = i + j * 16 + l;
                sum[j][l] = fmaf(q[e], npl_f16_to_f32(k[e]), sum[j][l]);
            }
    double r = 0.0;
    if (np) {
        float a[16], t[8];
        /* GGML_F32x16_REDUCE: x0 + x2, x1 + x3, then the two */
        for (int l = 0; l < 16; l++) a[l] = (sum[0][l] + sum[2][l]) + (sum[1][l] + sum[3][l]);
        for (int l = 0; l < 8; l++) t[l] = a[l] + a[l + 8];
        for (int l = 0; l < 4; l++) t[l] = t[l] + t[l + 4];
        for (int l = 0; l < 2; l++) t[l] = t[l] + t[l + 2];
        r = (double)(t[0] + t[1]);
    }
    for (int i = np; i < n; i++) r += (double)(q[i] * npl_f16_to_f32(k[i]));
    return (float)r;
}

static void attn_row(const npl_attn_args *a, const float *q, float *o, int kvh, int j0, int j1) {
    const int hd = a->hd;
    const int64_t ks = (int64_t)a->n_kv * hd;
    const uint16_t *K = a->kc + (int64_t)kvh * hd, *V = a->vc + (int64_t)kvh * hd;
    uint16_t acc[NPL_ATTN_MAX_HD];
    memset(acc, 0, sizeof(uint16_t) * (size_t)hd);
    /* with a softcap, llama.cpp folds the scale into it first */
    const float scale = a->softcap > 0.0f ? a->scale / a->softcap : a->scale;
    float M = -INFINITY, S = 0.0f;
    for (int j = j0; j < j1; j++) {
        float s = dot_f16_like_ggml(q, K + j * ks, hd) * scale;
        if (a->softcap > 0.0f) s = a->softcap * tanhf(s);
        const float Mold = M;
        float ms = 1.0f, vs = 1.0f;
        if (s > M) {
            M = s;
            ms = expf(Mold - M);
            for (int c = 0; c < hd; c++) acc[c] = npl_f32_to_f16(npl_f16_to_f32(acc[c]) * ms);
        } else {
            vs = expf(s - M);
        }
        const uint16_t *v = V + j * ks;
        for (int c = 0; c < hd; c++) acc[c] = npl_f32_to_f16(fmaf(npl_f16_to_f32(v[c]), vs, npl_f16_to_f32(acc[c])));
        S = S * ms + vs;
    }
    const float inv = S == 0.0f ? 0.0f : 1.0f / S;
    for (int c = 0; c < hd; c++) o[c] = npl_f16_to_f32(acc[c]) * inv;
}

static void tile_llamacpp(const npl_attn_args *a, const npl_attn_tile *t) {
    for (int r = 0; r < t->n; r++) attn_row(a, t->q[r], t->o[r], t->kvh, t->j0[r], t->j1[r]);
}

void npl_attention_llamacpp(const npl_attn_args *a, int ith, int nth) {
    npl_attn_run(a, ith, nth, tile_llamacpp, 1);
}

/* llama.cpp without flash attention (llama-cpp-python's default): KQ =
 * mul_mat(K, q) in f32 from f16 operands, soft_max_ext in f32 (the sum in
 * double), then KQV = mul_mat(V^T, KQ), which converts the probabilities to
 * f16 first. That last rounding (2^-12 relative) is the one that matters; the
 * summation orders of the two products only move results by f32 ulps. The
 * scores are recomputed in each of the three passes instead of stored, so any
 * context length runs without scratch memory. */
static void attn_row_noflash(const npl_attn_args *a, const float *q, float *o, int kvh, int j0, int j1) {
    const int hd = a->hd;
    const int64_t ks = (int64_t)a->n_kv * hd;
    const uint16_t *K = a->kc + (int64_t)kvh * hd, *V = a->vc + (int64_t)kvh * hd;
#define SCORE(j) (a->softcap > 0.0f ? a->softcap * tanhf(dot_f16_like_ggml(q, K + (j) * ks, hd) * (a->scale / a->softcap)) \
                                    : dot_f16_like_ggml(q, K + (j) * ks, hd) * a->scale)
    float M = -INFINITY;
    for (int j = j0; j < j1; j++) M = fmaxf(M, SCORE(j));
    double S = 0.0;
    for (int j = j0; j < j1; j++) S += (double)expf(SCORE(j) - M);
    const float inv = S == 0.0 ? 0.0f : (float)(1.0 / S);
    double acc[NPL_ATTN_MAX_HD];
    for (int c = 0; c < hd; c++) acc[c] = 0.0;
    for (int j = j0; j < j1; j++) {
        const float p = npl_f16_to_f32(npl_f32_to_f16(expf(SCORE(j) - M) * inv));
        const uint16_t *v = V + j * ks;
        for (int c = 0; c < hd; c++) acc[c] += (double)(npl_f16_to_f32(v[c]) * p);
    }
#undef SCORE
    for (int c = 0; c < hd; c++) o[c] = (float)acc[c];
}

static void tile_llamacpp_noflash(const npl_attn_args *a, const npl_attn_tile *t) {
    for (int r = 0; r < t->n; r++) attn_row_noflash(a, t->q[r], t->o[r], t->kvh, t->j0[r], t->j1[r]);
}

void npl_attention_llamacpp_noflash(const npl_attn_args *a, int ith, int nth) {
    npl_attn_run(a, ith, nth, tile_llamacpp_noflash, 1);
}
