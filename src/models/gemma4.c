/* Gemma 4, the dense E2B / E4B family, as llama.cpp's models/gemma4.cpp:
 *  - embeddings times sqrt(n_embd); per-layer embeddings (PLE): for every
 *    layer a [n_pl] input per token, (rms_norm(proj_l(x) / sqrt(n_embd)) +
 *    per_layer_token_embd_l[token] * sqrt(n_pl)) / sqrt(2), gating a
 *    projection added after the FFN;
 *  - a sliding-window flag per layer, and per kind its own head size, rotary
 *    dims and RoPE base; the full layers' RoPE divided by rope_freqs.weight
 *    (proportional RoPE: huge divisors leave pairs unrotated);
 *  - QK-norm, V rms-normalized without a weight, V = K when attn_v is
 *    absent, attention scale 1;
 *  - the last shared_kv_layers layers have no K/V of their own and attend
 *    over an earlier layer's cache (npl_hparams_kv_layer);
 *  - norms before and after attention and the GeGLU FFN, a per-layer output
 *    scale, output tied to the embedding, logits soft-capped.
 * MoE layers (26B-A4B) and fused attn_qkv are refused. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "models/model.h"

static int g4_fail(npl_mb *b, const char *name, const char *what) {
    if (!b->failed) {
        snprintf(b->err, b->errlen, "%s: tensor %s: %s", npl_gguf_path(b->f), name, what);
        b->failed = 1;
    }
    return -1;
}

/* Refuse tensors of gemma4 variants not implemented here. */
static int refuse_variant(npl_mb *b, int il) {
    static const char *const names[] = {"blk.%d.attn_qkv.weight", "blk.%d.ffn_gate_inp.weight"};
    static const char *const why[] = {"fused qkv is not supported for gemma4", "MoE layers are not supported for gemma4"};
    for (int k = 0; k < 2; k++) {
        char name[96];
        snprintf(name, sizeof(name), names[k], il);
        if (npl_gguf_find_tensor(b->f, name)) return g4_fail(b, name, why[k]);
    }
    return 0;
}

/* blk.il.layer_output_scale.weight: one f32 multiplying the layer's output
 * (1 when absent). */
static float layer_scale(npl_mb *b, int il) {
    char name[96];
    snprintf(name, sizeof(name), "blk.%d.layer_output_scale.weight", il);
    const npl_gguf_tensor *t = npl_gguf_find_tensor(b->f, name);
    if (!t) return 1.0f;
    float v = 0.0f;
    if (t->type != NPL_TYPE_F32 || t->ne[0] != 1 || t->ne[1] != 1 || t->ne[2] != 1 || t->ne[3] != 1)
        return g4_fail(b, name, "expected one f32"), 1.0f;
    memcpy(&v, t->data, sizeof v);
    if (!isfinite(v)) return g4_fail(b, name, "not finite"), 1.0f;
    return v;
}

/* The per-layer inputs ple[il] [n_pl, seq] of every layer, built before the
 * first layer (llama.cpp's project_per_layer_inputs). Layer il's share of
 * per_layer_model_proj is its rows il*n_pl.. (the same dot products as the
 * whole matrix); of the looked-up per_layer_token_embd rows, a slice. */
static int per_layer_inputs(npl_mb *b, int x, int *ple) {
    const npl_hparams *hp = b->hp;
    npl_graph *g = b->g;
    const int64_t E = hp->n_embd, P = hp->n_embd_per_layer, L = hp->n_layer;
    int tab = npl_mb_weight(b, 2, P * L, hp->n_vocab, 0, "per_layer_token_embd.weight", 0);
    int rows = npl_get_rows(g, tab, b->tokens); /* [P*L, seq] */
    rows = npl_scale(g, rows, sqrtf((float)P));
    int norm = npl_mb_weight(b, 1, P, 1, 0, "per_layer_proj_norm.weight", 0);
    for (int il = 0; il < hp->n_layer; il++) {
        char part[16];
        snprintf(part, sizeof(part), "layer%d", il);
        int w = npl_mb_weight_rows(b, E, P * L, il * P, P, part, "per_layer_model_proj.weight", 0);
        int p = npl_scale(g, npl_matmul(g, w, x), 1.0f / sqrtf((float)E));
        p = npl_rms_norm(g, p, norm, hp->norm_eps);
        ple[il] = npl_scale(g, npl_add(g, p, npl_slice(g, rows, il * P, P)), 1.0f / sqrtf(2.0f));
    }
    return b->failed ? -1 : 0;
}

typedef struct {
    int k, v, kc, vc; /* a KV layer's RoPE'd K, normed V and caches, for the layers sharing them */
} kv_nodes;

/* Attention of layer il on its normed input x -> [n_embd, seq] (before the post-norm). */
static int attention(npl_mb *b, int il, int x, kv_nodes *kv) {
    const npl_hparams *hp = b->hp;
    npl_graph *g = b->g;
    const int swa = npl_hparams_layer_is_swa(hp, il);
    const int64_t E = hp->n_embd, hd = swa ? hp->head_dim_swa : hp->head_dim;
    const int n_rot = swa ? hp->n_rot_swa : hp->n_rot, freqs = swa ? -1 : b->rope_freqs;
    const float base = swa ? hp->rope_base_swa : hp->rope_base, fscale = swa ? 1.0f : hp->rope_freq_scale;
    int wq = npl_mb_weight(b, 2, E, hd * hp->n_head, 0, "blk.%d.attn_q.weight", il);
    int wo = npl_mb_weight(b, 2, hd * hp->n_head, E, 0, "blk.%d.attn_output.weight", il);
    int q_norm = npl_mb_weight(b, 1, hd, 1, 0, "blk.%d.attn_q_norm.weight", il);
    int64_t qs[3] = {hd, hp->n_head, -1}, ks[3] = {hd, hp->n_head_kv, -1};
    int q = npl_reshape(g, npl_matmul(g, wq, x), 3, qs);
    q = npl_rms_norm(g, q, q_norm, hp->norm_eps);
    q = npl_apply_rope_ext(g, q, b->pos, freqs, n_rot, 1, base, fscale, NULL);
    /* every layer has cache states (the runner binds kcache.L / vcache.L for
     * each); a shared layer's stay unused */
    char name[32];
    int64_t cs[2] = {hd * hp->n_head_kv, b->n_ctx};
    snprintf(name, sizeof(name), "kcache.%d", il);
    int kc = npl_state(g, name, NPL_TYPE_F16, 2, cs);
    snprintf(name, sizeof(name), "vcache.%d", il);
    int vc = npl_state(g, name, NPL_TYPE_F16, 2, cs);
    const int src = npl_hparams_kv_layer(hp, il);
    if (src == il) {
        int wk = npl_mb_weight(b, 2, E, hd * hp->n_head_kv, 0, "blk.%d.attn_k.weight", il);
        int wv = npl_mb_weight(b, 2, E, hd * hp->n_head_kv, 1, "blk.%d.attn_v.weight", il);
        int k_norm = npl_mb_weight(b, 1, hd, 1, 0, "blk.%d.attn_k_norm.weight", il);
        int kp = npl_matmul(g, wk, x);
        int k = npl_reshape(g, kp, 3, ks);
        int v = npl_reshape(g, wv >= 0 ? npl_matmul(g, wv, x) : kp, 3, ks); /* no attn_v: V = K */
        k = npl_rms_norm(g, k, k_norm, hp->norm_eps);
        v = npl_rms_norm(g, v, -1, hp->norm_eps);
        k = npl_apply_rope_ext(g, k, b->pos, freqs, n_rot, 1, base, fscale, NULL);
        kv[il] = (kv_nodes){k, v, kc, vc};
    } else {
        kv[il] = kv[src]; /* writes the same rows again, then attends: llama.cpp's reuse */
    }
    int o = npl_attention(g, q, kv[il].k, kv[il].v, kv[il].kc, kv[il].vc, b->pos, hp->attn_scale,
                          swa ? hp->n_swa : 0, 0.0f);
    return npl_matmul(g, wo, o);
}

int npl_build_gemma4(npl_mb *b, npl_model_graph *out) {
    const npl_hparams *hp = b->hp;
    npl_graph *g = b->g;
    const int64_t E = hp->n_embd, F = hp->n_ff, P = hp->n_embd_per_layer;
    int has_full = 0;
    for (int il = 0; il < hp->n_layer; il++) has_full |= !npl_hparams_layer_is_swa(hp, il);
    if (has_full && b->rope_freqs < 0 && !b->failed) /* llama.cpp requires it for the full layers */
        return g4_fail(b, "rope_freqs.weight", "missing (gemma4's full-attention layers need it)");
    int *ple = calloc((size_t)hp->n_layer, sizeof(int));
    kv_nodes *kv = calloc((size_t)hp->n_layer, sizeof(kv_nodes));
    if (!ple || !kv) {
        free(ple);
        free(kv);
        snprintf(b->err, b->errlen, "out of memory");
        b->failed = 1;
        return -1;
    }
    int emb = npl_mb_weight(b, 2, E, hp->n_vocab, 0, "token_embd.weight", 0);
    int x = npl_scale(g, npl_get_rows(g, emb, b->tokens), hp->embd_scale); /* [E, seq] */
    if (P > 0) per_layer_inputs(b, x, ple);
    for (int il = 0; il < hp->n_layer && !b->failed; il++) {
        if (refuse_variant(b, il)) break;
        int attn_norm = npl_mb_weight(b, 1, E, 1, 0, "blk.%d.attn_norm.weight", il);
        int attn_post = npl_mb_weight(b, 1, E, 1, 0, "blk.%d.post_attention_norm.weight", il);
        int cur = attention(b, il, npl_rms_norm(g, x, attn_norm, hp->norm_eps), kv);
        x = npl_add(g, npl_rms_norm(g, cur, attn_post, hp->norm_eps), x);

        int ffn_norm = npl_mb_weight(b, 1, E, 1, 0, "blk.%d.ffn_norm.weight", il);
        int ffn_post = npl_mb_weight(b, 1, E, 1, 0, "blk.%d.post_ffw_norm.weight", il);
        cur = npl_mb_ffn(b, npl_rms_norm(g, x, ffn_norm, hp->norm_eps),
                         npl_mb_weight(b, 2, E, F, 0, "blk.%d.ffn_gate.weight", il),
                         npl_mb_weight(b, 2, E, F, 0, "blk.%d.ffn_up.weight", il),
                         npl_mb_weight(b, 2, F, E, 0, "blk.%d.ffn_down.weight", il), 1);
        x = npl_add(g, npl_rms_norm(g, cur, ffn_post, hp->norm_eps), x);

        if (P > 0) { /* gelu(inp_gate(x)) * ple: llama.cpp's gelu then mul, one GEGLU here */
            int gate = npl_mb_weight(b, 2, E, P, 0, "blk.%d.inp_gate.weight", il);
            int proj = npl_mb_weight(b, 2, P, E, 0, "blk.%d.proj.weight", il);
            int post = npl_mb_weight(b, 1, E, 1, 0, "blk.%d.post_norm.weight", il);
            cur = npl_matmul(g, proj, npl_geglu(g, npl_matmul(g, gate, x), ple[il]));
            x = npl_add(g, x, npl_rms_norm(g, cur, post, hp->norm_eps));
        }
        float s = layer_scale(b, il);
        if (s != 1.0f) x = npl_scale(g, x, s);
    }
    free(ple);
    free(kv);
    if (b->failed) return -1;
    return npl_mb_output(b, x, out);
}
