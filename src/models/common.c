/* Building blocks shared by the architecture builders: checked weight lookup,
 * attention, feed-forward and the output tail. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "core/status.h"
#include "models/model.h"

static int mb_fail(npl_mb *b, const char *fmt, ...) {
    if (!b->failed) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(b->err, b->errlen, fmt, ap);
        va_end(ap);
        b->failed = 1;
    }
    return -1;
}

int npl_mb_weight(npl_mb *b, int n_dims, int64_t ne0, int64_t ne1, int optional, const char *fmt, int il) {
    if (b->failed) return -1;
    char name[96];
    snprintf(name, sizeof(name), fmt, il);
    const npl_gguf_tensor *t = npl_gguf_find_tensor(b->f, name);
    if (!t) return optional ? -1 : mb_fail(b, "%s: tensor %s: missing", npl_gguf_path(b->f), name);
    int64_t want[2] = {ne0, n_dims > 1 ? ne1 : 1};
    int dims = t->n_dims;
    while (dims > 1 && t->ne[dims - 1] == 1) dims--;
    if (dims > n_dims || t->ne[0] != want[0] || t->ne[1] != want[1])
        return mb_fail(b, "%s: tensor %s: shape [%lld, %lld] contradicts the hyperparameters (expected [%lld, %lld])",
                       npl_gguf_path(b->f), name, (long long)t->ne[0], (long long)t->ne[1], (long long)want[0],
                       (long long)want[1]);
    /* norms and biases are f32 rows; matrices need a dot kernel */
    static const int matrix_types[] = {NPL_TYPE_F32, NPL_TYPE_F16, NPL_TYPE_BF16, NPL_TYPE_Q4_0, NPL_TYPE_Q4_1,
                                       NPL_TYPE_Q5_0, NPL_TYPE_Q5_1, NPL_TYPE_Q8_0, NPL_TYPE_Q2_K, NPL_TYPE_Q3_K,
                                       NPL_TYPE_Q4_K, NPL_TYPE_Q5_K, NPL_TYPE_Q6_K, NPL_TYPE_IQ4_NL,
                                       NPL_TYPE_IQ4_XS, NPL_TYPE_MXFP4};
    int type_ok = 0;
    if (n_dims == 1) type_ok = t->type == NPL_TYPE_F32;
    else
        for (size_t k = 0; k < sizeof(matrix_types) / sizeof(matrix_types[0]); k++) type_ok |= t->type == matrix_types[k];
    if (!type_ok)
        return mb_fail(b, "%s: tensor %s: type %s is not supported here (%s)", npl_gguf_path(b->f), name,
                       npl_type_name(t->type), n_dims == 1 ? "expected f32" : "expected a float or block-quantized type");
    int64_t ne[2] = {want[0], want[1]};
    int id = npl_weight(b->g, name, (npl_type)t->type, n_dims, ne, t->data);
    if (id < 0) return mb_fail(b, "%s: tensor %s: %s", npl_gguf_path(b->f), name, npl_graph_error(b->g));
    return id;
}

int npl_mb_weight_rows(npl_mb *b, int64_t ne0, int64_t ne1, int64_t row0, int64_t rows, const char *part,
                       const char *fmt, int il) {
    if (npl_mb_weight(b, 2, ne0, ne1, 0, fmt, il) < 0) return -1;
    char name[96], pname[112];
    snprintf(name, sizeof(name), fmt, il);
    const npl_gguf_tensor *t = npl_gguf_find_tensor(b->f, name);
    size_t row;
    if (npl_row_size((npl_type)t->type, ne0, &row) || row0 < 0 || rows <= 0 || row0 + rows > ne1)
        return mb_fail(b, "%s: tensor %s: rows %lld..%lld of %lld", npl_gguf_path(b->f), name, (long long)row0,
                       (long long)(row0 + rows), (long long)ne1);
    snprintf(pname, sizeof(pname), "%s:%s", name, part);
    int64_t ne[2] = {ne0, rows};
    int id = npl_weight(b->g, pname, (npl_type)t->type, 2, ne, (const char *)t->data + (size_t)row0 * row);
    if (id < 0) return mb_fail(b, "%s: tensor %s: %s", npl_gguf_path(b->f), name, npl_graph_error(b->g));
    return id;
}

/* yarn's correction dims, as ggml_rope_yarn_corr_dims computes them (in
 * float): the pairs whose wavelength spans beta_fast resp. beta_slow turns
 * over the original context. */
static float yarn_corr_dim(int n_dims, int n_ctx_orig, float n_rot, float base) {
    return n_dims * logf(n_ctx_orig / (n_rot * 2 * (float)M_PI)) / (2 * logf(base));
}

/* The yarn / magnitude parameters of a RoPE with this base, or NULL when
 * RoPE is plain (no yarn, magnitude 1). llama.cpp passes the same ext_factor
 * and attn_factor to every layer, the sliding-window ones included. */
static const npl_rope_yarn *rope_yarn(const npl_hparams *hp, float base, npl_rope_yarn *y) {
    if (hp->rope_ext_factor == 0.0f && hp->rope_attn_factor == 1.0f) return NULL;
    const float lo = floorf(yarn_corr_dim(hp->n_rot, hp->rope_n_ctx_orig, hp->rope_beta_fast, base));
    const float hi = ceilf(yarn_corr_dim(hp->n_rot, hp->rope_n_ctx_orig, hp->rope_beta_slow, base));
    *y = (npl_rope_yarn){.ext_factor = hp->rope_ext_factor, .attn_factor = hp->rope_attn_factor,
                         .corr_lo = lo > 0 ? (int)lo : 0, .corr_hi = hi < hp->n_rot - 1 ? (int)hi : hp->n_rot - 1};
    return y;
}

int npl_mb_attention(npl_mb *b, int il, int x, const npl_mb_attn *a) {
    const npl_hparams *hp = b->hp;
    npl_graph *g = b->g;
    int64_t hd = hp->head_dim;
    int q = npl_matmul(g, a->wq, x); /* [hd*n_head, seq] */
    int k = npl_matmul(g, a->wk, x); /* [hd*n_kv, seq] */
    int v = npl_matmul(g, a->wv, x);
    if (a->bq >= 0) q = npl_add(g, q, a->bq);
    if (a->bk >= 0) k = npl_add(g, k, a->bk);
    if (a->bv >= 0) v = npl_add(g, v, a->bv);
    int64_t qs[3] = {hd, hp->n_head, -1}, ks[3] = {hd, hp->n_head_kv, -1};
    q = npl_reshape(g, q, 3, qs); /* [hd, n_head, seq] */
    k = npl_reshape(g, k, 3, ks);
    v = npl_reshape(g, v, 3, ks);
    if (a->q_norm >= 0) q = npl_rms_norm(g, q, a->q_norm, hp->norm_eps);
    if (a->k_norm >= 0) k = npl_rms_norm(g, k, a->k_norm, hp->norm_eps);
    npl_rope_yarn yarn;
    const npl_rope_yarn *y = rope_yarn(hp, a->rope_base, &yarn);
    if (!a->no_rope) {
        q = npl_apply_rope_ext(g, q, b->pos, b->rope_freqs, hp->n_rot, hp->rope_neox, a->rope_base, a->rope_freq_scale, y);
        k = npl_apply_rope_ext(g, k, b->pos, b->rope_freqs, hp->n_rot, hp->rope_neox, a->rope_base, a->rope_freq_scale, y);
    }
    char name[32];
    int64_t cs[2] = {hd * hp->n_head_kv, b->n_ctx};
    snprintf(name, sizeof(name), "kcache.%d", il);
    int kc = npl_state(g, name, NPL_TYPE_F16, 2, cs);
    snprintf(name, sizeof(name), "vcache.%d", il);
    int vc = npl_state(g, name, NPL_TYPE_F16, 2, cs);
    float scale = hp->attn_scale;
    if (a->prescale_q) {
        q = npl_scale(g, q, scale);
        scale = 1.0f;
    }
    int o = npl_attention(g, q, k, v, kc, vc, b->pos, scale, a->window, hp->attn_softcap); /* [hd*n_head, seq] */
    return npl_matmul(g, a->wo, o);
}

int npl_mb_gemma_layer(npl_mb *b, int il, int x, const npl_mb_attn *a) {
    const npl_hparams *hp = b->hp;
    npl_graph *g = b->g;
    int64_t E = hp->n_embd, F = hp->n_ff;
    int attn_norm = npl_mb_weight(b, 1, E, 1, 0, "blk.%d.attn_norm.weight", il);
    int attn_post = npl_mb_weight(b, 1, E, 1, 0, "blk.%d.post_attention_norm.weight", il);
    int cur = npl_rms_norm(g, x, attn_norm, hp->norm_eps);
    cur = npl_mb_attention(b, il, cur, a);
    cur = npl_rms_norm(g, cur, attn_post, hp->norm_eps);
    x = npl_add(g, cur, x);

    int ffn_norm = npl_mb_weight(b, 1, E, 1, 0, "blk.%d.ffn_norm.weight", il);
    int ffn_post = npl_mb_weight(b, 1, E, 1, 0, "blk.%d.post_ffw_norm.weight", il);
    cur = npl_rms_norm(g, x, ffn_norm, hp->norm_eps);
    cur = npl_mb_ffn(b, cur, npl_mb_weight(b, 2, E, F, 0, "blk.%d.ffn_gate.weight", il),
                     npl_mb_weight(b, 2, E, F, 0, "blk.%d.ffn_up.weight", il),
                     npl_mb_weight(b, 2, F, E, 0, "blk.%d.ffn_down.weight", il), 1);
    cur = npl_rms_norm(g, cur, ffn_post, hp->norm_eps);
    x = npl_add(g, cur, x);
    return x;
}

int npl_mb_ffn(npl_mb *b, int x, int gate, int up, int down, int gelu) {
    int gt = npl_matmul(b->g, gate, x), u = npl_matmul(b->g, up, x);
    int h = gelu ? npl_geglu(b->g, gt, u) : npl_swiglu(b->g, gt, u);
    return npl_matmul(b->g, down, h);
}

int npl_mb_output(npl_mb *b, int x, npl_model_graph *out) {
    const npl_hparams *hp = b->hp;
    int64_t one = NPL_DIM_SEQ;
    out->out_rows = npl_input(b->g, "out_rows", NPL_TYPE_I32, 1, &one);
    x = npl_get_rows(b->g, x, out->out_rows); /* only the rows whose logits are wanted */
    int norm = npl_mb_weight(b, 1, hp->n_embd, 1, 0, "output_norm.weight", 0);
    x = npl_rms_norm(b->g, x, norm, hp->norm_eps);
    int w = npl_mb_weight(b, 2, hp->n_embd, hp->n_vocab, 1, "output.weight", 0);
    if (w < 0 && !b->failed) w = npl_graph_find(b->g, "token_embd.weight"); /* tied embedding */
    int logits = npl_matmul(b->g, w, x);
    if (hp->logit_scale != 1.0f) logits = npl_scale(b->g, logits, 1.0f / hp->logit_scale); /* granite, as llama.cpp */
    if (hp->final_softcap > 0) logits = npl_softcap(b->g, logits, hp->final_softcap);
    if (logits >= 0) npl_graph_set_name(b->g, logits, "logits");
    out->logits = logits;
    return logits;
}

int npl_model_build(const npl_gguf *f, const npl_hparams *hp, int n_ctx, npl_model_graph *out, char *err,
                    size_t errlen) {
    memset(out, 0, sizeof(*out));
    if (n_ctx <= 0) {
        snprintf(err, errlen, "context length %d must be positive", n_ctx);
        return -1;
    }
    npl_mb b = {.f = f, .hp = hp, .err = err, .errlen = errlen, .n_ctx = n_ctx, .rope_freqs = -1};
    b.g = npl_graph_new();
    if (!b.g) return npl_err_memory(err, errlen), -1;
    int64_t seq = NPL_DIM_SEQ;
    b.tokens = npl_input(b.g, "tokens", NPL_TYPE_I32, 1, &seq);
    b.pos = npl_input(b.g, "pos", NPL_TYPE_I32, 1, &seq);
    out->g = b.g;
    out->tokens = b.tokens;
    out->pos = b.pos;
    out->n_ctx = n_ctx;
    /* Llama 3.x stores its RoPE frequency factors as rope_freqs.weight; llama.cpp
     * reads it for llama, granite, mistral3 and gemma4 only (and refuses files with
     * tensors it does not use). Phi-3's LongRoPE has two sets, as llama.cpp's
     * get_rope_factors: rope_factors_long.weight for a context longer than the
     * original one, else rope_factors_short.weight (with rope.scaling.attn_factor
     * as the cos/sin magnitude, hparams.c) */
    const int reads_freqs = hp->arch == NPL_ARCH_LLAMA || hp->arch == NPL_ARCH_GRANITE || hp->arch == NPL_ARCH_MISTRAL3 ||
                            hp->arch == NPL_ARCH_GEMMA4; /* gemma4: its full layers' proportional RoPE */
    const char *freqs = "rope_freqs.weight";
    if (hp->arch == NPL_ARCH_PHI3)
        freqs = n_ctx > hp->rope_n_ctx_orig ? "rope_factors_long.weight" : "rope_factors_short.weight";
    if (reads_freqs || hp->arch == NPL_ARCH_PHI3) b.rope_freqs = npl_mb_weight(&b, 1, hp->n_rot / 2, 1, 1, freqs, 0);
    if (b.rope_freqs >= 0) { /* divisors of the angles: 0, negative or NaN would poison every logit */
        const unsigned char *ff = npl_gguf_find_tensor(f, freqs)->data;
        for (int i = 0; i < hp->n_rot / 2 && !b.failed; i++) {
            float v;
            memcpy(&v, ff + 4 * (size_t)i, sizeof v);
            if (!(v > 0) || !isfinite(v))
                mb_fail(&b, "%s: tensor %s: entry %d is %g (must be positive and finite)", npl_gguf_path(f), freqs, i,
                        (double)v);
        }
    }
    if (!reads_freqs && npl_gguf_find_tensor(f, "rope_freqs.weight"))
        mb_fail(&b, "%s: tensor rope_freqs.weight: not supported for %s (llama.cpp reads it for llama, granite, mistral3 and gemma4 only)",
                npl_gguf_path(f), hp->arch_name);
    int rc;
    switch (hp->arch) {
    case NPL_ARCH_LLAMA:
    case NPL_ARCH_QWEN2: rc = npl_build_llama(&b, out); break;
    case NPL_ARCH_QWEN3: rc = npl_build_qwen3(&b, out); break;
    case NPL_ARCH_GEMMA3: rc = npl_build_gemma3(&b, out); break;
    case NPL_ARCH_GEMMA2: rc = npl_build_gemma2(&b, out); break;
    case NPL_ARCH_GRANITE: rc = npl_build_granite(&b, out); break;
    case NPL_ARCH_SMOLLM3: rc = npl_build_smollm3(&b, out); break;
    case NPL_ARCH_PHI3: rc = npl_build_phi3(&b, out); break;
    case NPL_ARCH_MISTRAL3: rc = npl_build_mistral3(&b, out); break;
    case NPL_ARCH_GEMMA4: rc = npl_build_gemma4(&b, out); break;
    default: rc = mb_fail(&b, "%s: architecture not supported", npl_gguf_path(f));
    }
    if (!b.failed && npl_graph_error(b.g)) mb_fail(&b, "%s: building graph: %s", npl_gguf_path(f), npl_graph_error(b.g));
    if (b.failed || rc < 0 || out->logits < 0) {
        if (!b.failed) snprintf(err, errlen, "%s: building graph failed", npl_gguf_path(f));
        npl_graph_free(b.g);
        memset(out, 0, sizeof(*out));
        return -1;
    }
    return 0;
}
