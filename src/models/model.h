/* Model: hyperparameters read from GGUF metadata and the forward graph built
 * by the architecture's builder (one file per architecture). The graph has
 *   inputs  "tokens"   i32 [seq]      token ids
 *           "pos"      i32 [seq]      absolute positions, -1 = padding row
 *           "out_rows" i32 [n_out]    rows of the sequence whose logits are wanted
 *   states  "kcache.L", "vcache.L"    f16 [head_dim * n_head_kv, n_ctx] per layer
 *   output  "logits"   f32 [n_vocab, n_out] */
#ifndef NPL_MODEL_H
#define NPL_MODEL_H
#include <stddef.h>

#include "core/graph.h"
#include "format/gguf.h"

typedef enum {
    NPL_ARCH_LLAMA,
    NPL_ARCH_QWEN2,
    NPL_ARCH_QWEN3,
    NPL_ARCH_GEMMA3,
    NPL_ARCH_GEMMA2,
    NPL_ARCH_GRANITE,
    NPL_ARCH_SMOLLM3,
    NPL_ARCH_PHI3,
    NPL_ARCH_MISTRAL3,
    NPL_ARCH_GEMMA4,
    NPL_ARCH_COUNT
} npl_arch;

#define NPL_MAX_SWA_LAYERS 256 /* layers a per-layer sliding-window pattern may describe */

/* rope.scaling.type values implemented (llama.cpp's names): "none", "linear", "yarn" */
typedef enum { NPL_ROPE_SCALING_NONE, NPL_ROPE_SCALING_LINEAR, NPL_ROPE_SCALING_YARN } npl_rope_scaling;

typedef struct {
    npl_arch arch;
    char arch_name[32];
    int n_vocab, n_ctx_train, n_embd, n_layer, n_head, n_head_kv, head_dim, n_ff, n_rot;
    float norm_eps;
    float rope_base, rope_base_swa, rope_freq_scale;
    int rope_neox;
    /* RoPE scaling as llama.cpp derives it from rope.scaling.* (llama-context.cpp):
     * ext_factor 1 for yarn (0 otherwise), attn_factor the cos/sin magnitude
     * (yarn's, times rope.scaling.attn_factor), beta_fast/slow and n_ctx_orig
     * (rope.scaling.original_context_length) give yarn's correction dims. */
    npl_rope_scaling rope_scaling;
    float rope_ext_factor, rope_attn_factor, rope_beta_fast, rope_beta_slow;
    int rope_n_ctx_orig;
    int n_swa;           /* sliding window (0 = none) */
    int swa_pattern;     /* every swa_pattern-th layer is global (gemma3: 6) */
    float attn_scale;    /* multiplies q.k */
    float final_softcap; /* 0 = none */
    float attn_softcap;  /* 0 = none; else scores s = cap * tanh(s / cap) (gemma2) */
    float embd_scale;    /* 1, sqrt(n_embd) (gemma) or granite's embedding_scale */
    float residual_scale; /* 1, or granite's: multiplies attention and FFN outputs */
    float logit_scale;    /* 1, or granite's: logits are divided by it */
    int nope_step;        /* > 0: every nope_step-th layer has no RoPE (smollm3: 4) */
    float attn_temp_scale; /* mistral3's attention.temperature_scale (0 = none) */
    int attn_temp_floor;   /* its position floor (the original context length) */
    /* gemma4: per-layer sliding-window flags (attention.sliding_window_pattern),
     * the sliding-window layers' head size and rotary dims (head_dim / n_rot
     * are the full-attention layers'), the per-layer embedding width (0 =
     * none) and the layers with a KV cache of their own: layer il >= n_layer_kv
     * reads the cache of layer n_layer_kv - 2 (sliding) or - 1 (full), as
     * llama.cpp's layer reuse */
    unsigned char layer_swa[NPL_MAX_SWA_LAYERS];
    int head_dim_swa, n_rot_swa;
    int n_embd_per_layer;
    int n_layer_kv;
} npl_hparams;

typedef struct {
    npl_graph *g;
    int tokens, pos, out_rows, logits;
    int n_ctx;
} npl_model_graph;

/* Reads and validates hyperparameters; errors name the file and the key. */
int npl_hparams_load(const npl_gguf *f, npl_hparams *hp, char *err, size_t errlen);
const char *npl_arch_supported_list(void);
int npl_hparams_layer_is_swa(const npl_hparams *hp, int il);
/* The layer whose KV cache layer il attends over (il itself unless gemma4 shares it). */
int npl_hparams_kv_layer(const npl_hparams *hp, int il);

/* Builds the forward graph for a KV cache of n_ctx positions. Weights point
 * into the mapped file (no copy). Returns 0 or -1 with err. */
int npl_model_build(const npl_gguf *f, const npl_hparams *hp, int n_ctx, npl_model_graph *out,
                    char *err, size_t errlen);

/* ---- shared by the architecture builders (models/common.c) ---- */
typedef struct {
    const npl_gguf *f;
    const npl_hparams *hp;
    npl_graph *g;
    int tokens, pos, n_ctx;
    int rope_freqs; /* rope_freqs.weight (Llama 3's per-pair RoPE divisors) or -1 */
    char *err;
    size_t errlen;
    int failed;
} npl_mb;

/* Weight node for tensor `name` (printf-style with the layer), checked to have
 * exactly the given dims; optional weights return -1 without error when absent. */
int npl_mb_weight(npl_mb *b, int n_dims, int64_t ne0, int64_t ne1, int optional, const char *fmt, int il);
/* Rows [row0, row0 + rows) of the matrix `fmt` (checked to be [ne0, ne1]) as
 * a weight of their own, named "NAME:part", pointing into the mapping: the
 * pieces of a fused matrix (phi3's attn_qkv, ffn_up = gate | up). Each row's
 * dot is the one the fused matmul computes. */
int npl_mb_weight_rows(npl_mb *b, int64_t ne0, int64_t ne1, int64_t row0, int64_t rows, const char *part,
                       const char *fmt, int il);
/* x [n_embd, seq] -> attention block output [n_embd, seq] (no residual). */
typedef struct {
    int wq, wk, wv, wo;
    int bq, bk, bv;        /* -1 if none (qwen2 has them) */
    int q_norm, k_norm;    /* -1 if none (qwen3, gemma3 have them) */
    float rope_base, rope_freq_scale;
    int window;
    int prescale_q;        /* 1: q *= hp->attn_scale after RoPE, scores unscaled (gemma2, as llama.cpp) */
    int no_rope;           /* 1: no RoPE in this layer (smollm3's NoPE layers) */
} npl_mb_attn;
int npl_mb_attention(npl_mb *b, int il, int x, const npl_mb_attn *a);
int npl_mb_ffn(npl_mb *b, int x, int gate, int up, int down, int gelu);
/* Gemma 2 / 3's layer: norms before and after both attention (a) and the
 * GeGLU FFN, each added to the residual x. */
int npl_mb_gemma_layer(npl_mb *b, int il, int x, const npl_mb_attn *a);
/* The common tail: pick out_rows, final norm, output matrix (tied if absent), softcap. */
int npl_mb_output(npl_mb *b, int x, npl_model_graph *out);

int npl_build_llama(npl_mb *b, npl_model_graph *out);  /* llama, qwen2 */
int npl_build_qwen3(npl_mb *b, npl_model_graph *out);
int npl_build_gemma3(npl_mb *b, npl_model_graph *out);
int npl_build_gemma2(npl_mb *b, npl_model_graph *out);
int npl_build_granite(npl_mb *b, npl_model_graph *out);
int npl_build_smollm3(npl_mb *b, npl_model_graph *out);
int npl_build_phi3(npl_mb *b, npl_model_graph *out);
int npl_build_mistral3(npl_mb *b, npl_model_graph *out);
int npl_build_gemma4(npl_mb *b, npl_model_graph *out);

#endif
