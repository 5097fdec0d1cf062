/* Row kernels the CPU ops are made of (norms, activations, RoPE, attention).
 * Pure functions over plain arrays, no graph types, so that the CPU backend,
 * vnpu and tests share them. Each has a generic C version (the reference the
 * tests exercise) and, where it pays, AVX2 / AVX-512 versions chosen at run
 * time through npl_nn_kernels_get(). Work splitting: functions taking
 * (ith, nth) do the ith of nth equal shares and may be called from nth
 * threads at once. */
#ifndef NPL_NN_KERNELS_H
#define NPL_NN_KERNELS_H
#include <stdint.h>
#include "kernels/vec_dot.h"

/* The largest head size (hd) the attention kernels take, the one limit on
 * a model's shape that they have: the plain C and llama.cpp-arithmetic
 * tiles keep a few rows of this many floats on the stack, and the x86 tiles
 * shrink their tiles for large heads so that their stack use stays bounded
 * too. Every size from 1 to this one runs on every kernel family (sizes
 * that are not multiples of 32, 16 or 8 take the next lower family's
 * kernel). Whatever builds an attention from a file checks it: the model
 * loader (src/models/hparams.c, attention.key_length), the CPU backend's
 * attention (graph files) and vnpu's Attention check (packages). */
#define NPL_ATTN_MAX_HD 1024

/* Attention over an f16 KV cache.
 *   q   [n_q][n_head][hd] f32 (row stride q_stride floats between positions)
 *   kc  [n_ctx][n_kv][hd] f16 (cache rows already written for every position used)
 *   vc  [n_ctx][n_kv][hd] f16
 *   out [n_q][n_head][hd] f32 (row stride out_stride)
 *   pos [n_q]: absolute position of each query; -1 marks a padding row whose
 *       output is set to 0.
 * Query at position p attends cache positions j with j <= p and, if window > 0,
 * p - j < window. Scores s = scale * q.k; if softcap > 0, s = softcap*tanh(s/softcap).
 * Heads are grouped: head h reads kv head h / (n_head / n_kv).
 * Computed with an online softmax (never materializes n_q x n_ctx scores); cost
 * follows the attended range, not n_ctx. Work split over (query, head) pairs. */
typedef struct {
    const float *q; int64_t q_stride;
    const uint16_t *kc, *vc;
    float *out; int64_t out_stride;
    const int32_t *pos;
    int n_q, n_head, n_kv, hd;
    float scale, softcap;
    int window;
} npl_attn_args;

typedef struct {
    /* y[i] = x[i] / sqrt(mean(x^2) + eps) * w[i]  (w may be NULL: no weight) */
    void (*rms_norm)(const float *x, const float *w, float *y, int n, float eps);
    /* y = silu(g) * u ; silu(x) = x / (1 + exp(-x)) */
    void (*swiglu)(const float *g, const float *u, float *y, int n);
    /* y = gelu_tanh(g) * u ; gelu_tanh(x) = 0.5x(1 + tanh(sqrt(2/pi)(x + 0.044715x^3))) */
    void (*geglu)(const float *g, const float *u, float *y, int n);
    /* y = x + b */
    void (*add)(const float *x, const float *b, float *y, int n);
    /* y = x * s */
    void (*scale)(const float *x, float s, float *y, int n);
    /* in-place softmax over n values */
    void (*softmax)(float *x, int n);
    void (*attention)(const npl_attn_args *a, int ith, int nth);
} npl_nn_kernels;

const npl_nn_kernels *npl_nn_kernels_get(npl_isa want);

/* Attention with llama.cpp's CPU flash-attention rounding (f16 P.V
 * accumulator, key by key): slow, for verifying agreement with llama.cpp. */
void npl_attention_llamacpp(const npl_attn_args *a, int ith, int nth);
/* ... and without flash attention: softmax in f32, probabilities rounded to
 * f16 before P.V (llama.cpp's mul_mat path). Also slow. */
void npl_attention_llamacpp_noflash(const npl_attn_args *a, int ith, int nth);

/* RoPE in place on one position's heads: x [n_heads][hd], rotating the first
 * n_rot dims of each head. neox=0: pairs (2i, 2i+1); neox=1: pairs (i, i+n_rot/2).
 * theta_i = pos * freq_scale * base^(-2i/n_rot). Generic only (cheap). */
void npl_rope(float *x, int n_heads, int hd, int n_rot, int32_t pos, float base,
              float freq_scale, int neox);
/* llama.cpp's GEGLU: gelu from an f16 table at x rounded to f16
 * (verification runs only). */
void npl_geglu_llamacpp(const float *g, const float *u, float *y, int n);

/* The same with llama.cpp's float theta recurrence (verification runs only). */
void npl_rope_llamacpp(float *x, int n_heads, int hd, int n_rot, int32_t pos, float base,
                       float freq_scale, int neox);

/* RoPE with llama.cpp's extensions (ggml_rope_ext, ggml-cpu rope_yarn): pair
 * i's extrapolated angle is pos * base^(-2i/n_rot) / freq_factors[i]; without
 * yarn (ext_factor 0) it is scaled by freq_scale, with yarn mixed with the
 * scaled one by a ramp over the correction dims [corr_lo, corr_hi]; cos and
 * sin are multiplied by attn_factor (and yarn's 1 + 0.1 ln(1/freq_scale)).
 * Defaults (no factors, ext_factor 0, attn_factor 1) give npl_rope exactly. */
typedef struct {
    int n_rot, neox;
    float base, freq_scale;
    const float *freq_factors; /* [n_rot/2] or NULL */
    float ext_factor, attn_factor;
    float corr_lo, corr_hi;
} npl_rope_args;
void npl_rope_ext(float *x, int n_heads, int hd, int32_t pos, const npl_rope_args *a);
/* npl_rope_ext's cos and sin for one position: pair i's at cs[i] and
 * cs[n_rot/2 + i] (the tables of vnpu's Rope). */
void npl_rope_cos_sin(const npl_rope_args *a, int32_t pos, float *cs);
/* x turned by the angles cs of npl_rope_cos_sin: npl_rope_ext's result, bit for bit. */
void npl_rope_apply(float *x, int n_heads, int hd, const float *cs, const npl_rope_args *a);
/* ... with llama.cpp's float theta recurrence and rope_yarn (verification runs only). */
void npl_rope_llamacpp_ext(float *x, int n_heads, int hd, int32_t pos, const npl_rope_args *a);

/* f32 <-> f16 rows, F16C/AVX-512 where present, picked once at run time.
 * (kernels/quant.h has the scalar npl_f32_to_f16_row used by the traits table.) */
void npl_f32_to_f16_row_fast(const float *x, uint16_t *y, int64_t n);
void npl_f16_to_f32_row_fast(const uint16_t *x, float *y, int64_t n);

/* ---- Internal: shared by the per-ISA kernel files, not for callers ---- */

/* An attention tile: up to NPL_ATTN_TILE query rows (heads of one query, or
 * one head group of nearby queries) that read the same kv head, so each f16
 * K/V row is converted once for all of them. Row r attends cache rows
 * [j0[r], j1[r]); the tile kernel writes normalized outputs to o[r] after
 * reading every q[r] (so out may alias q). */
#define NPL_ATTN_TILE 4      /* rows per tile of the generic kernel */
#define NPL_ATTN_TILE_MAX 64 /* AVX2 (16) and AVX-512 (64): several queries share each K/V block read */
typedef struct {
    const float *q[NPL_ATTN_TILE_MAX];
    float *o[NPL_ATTN_TILE_MAX];
    int j0[NPL_ATTN_TILE_MAX], j1[NPL_ATTN_TILE_MAX];
    int n, kvh;
} npl_attn_tile;
typedef void (*npl_attn_tile_fn)(const npl_attn_args *a, const npl_attn_tile *t);

/* The shared attention driver: gives thread ith of nth its share of the
 * (query, head) pairs, balanced by attended length, zeroes padding rows and
 * calls fn on tiles of at most max_rows (<= NPL_ATTN_TILE_MAX) of the rest. */
void npl_attn_run(const npl_attn_args *a, int ith, int nth, npl_attn_tile_fn fn, int max_rows);

/* Per-ISA tables (NULL entries fall back to the next lower ISA in
 * npl_nn_kernels_get) and row converters. Call only after a CPU check. */
extern const npl_nn_kernels npl_nn_kernels_avx2;
extern const npl_nn_kernels npl_nn_kernels_avx512;
void npl_attention_avx512(const npl_attn_args *a, int ith, int nth);
void npl_f32_to_f16_row_f16c(const float *x, uint16_t *y, int64_t n);
void npl_f16_to_f32_row_f16c(const uint16_t *x, float *y, int64_t n);
void npl_f32_to_f16_row_avx512(const float *x, uint16_t *y, int64_t n);
void npl_f16_to_f32_row_avx512(const uint16_t *x, float *y, int64_t n);
/* aarch64 (arm/neon/quantize_neon.c): fcvt, every aarch64 CPU */
void npl_f32_to_f16_row_neon(const float *x, uint16_t *y, int64_t n);
void npl_f16_to_f32_row_neon(const uint16_t *x, float *y, int64_t n);

#endif
