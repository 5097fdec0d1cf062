/* Llama (and Qwen2, which adds q/k/v biases): pre-norm attention with RoPE,
 * SwiGLU feed-forward, residuals around both. SmolLM3 and Mistral 3 are this
 * graph too (smollm3.c, mistral3.c): hp->nope_step names SmolLM3's layers
 * without RoPE. */
#include "models/model.h"

static int build_llama_like(npl_mb *b, npl_model_graph *out, int qk_norm) {
    const npl_hparams *hp = b->hp;
    npl_graph *g = b->g;
    int64_t E = hp->n_embd, hd = hp->head_dim, F = hp->n_ff;
    int emb = npl_mb_weight(b, 2, E, hp->n_vocab, 0, "token_embd.weight", 0);
    int x = npl_get_rows(g, emb, b->tokens); /* [E, seq] */
    int bias = hp->arch == NPL_ARCH_QWEN2;
    for (int il = 0; il < hp->n_layer; il++) {
        npl_mb_attn a = {
            .wq = npl_mb_weight(b, 2, E, hd * hp->n_head, 0, "blk.%d.attn_q.weight", il),
            .wk = npl_mb_weight(b, 2, E, hd * hp->n_head_kv, 0, "blk.%d.attn_k.weight", il),
            .wv = npl_mb_weight(b, 2, E, hd * hp->n_head_kv, 0, "blk.%d.attn_v.weight", il),
            .wo = npl_mb_weight(b, 2, hd * hp->n_head, E, 0, "blk.%d.attn_output.weight", il),
            .bq = npl_mb_weight(b, 1, hd * hp->n_head, 1, !bias, "blk.%d.attn_q.bias", il),
            .bk = npl_mb_weight(b, 1, hd * hp->n_head_kv, 1, !bias, "blk.%d.attn_k.bias", il),
            .bv = npl_mb_weight(b, 1, hd * hp->n_head_kv, 1, !bias, "blk.%d.attn_v.bias", il),
            .q_norm = qk_norm ? npl_mb_weight(b, 1, hd, 1, 0, "blk.%d.attn_q_norm.weight", il) : -1,
            .k_norm = qk_norm ? npl_mb_weight(b, 1, hd, 1, 0, "blk.%d.attn_k_norm.weight", il) : -1,
            .rope_base = hp->rope_base,
            .rope_freq_scale = hp->rope_freq_scale,
            .window = 0,
            .no_rope = hp->nope_step > 0 && (il + 1) % hp->nope_step == 0, /* smollm3 */
        };
        int cur = npl_rms_norm(g, x, npl_mb_weight(b, 1, E, 1, 0, "blk.%d.attn_norm.weight", il), hp->norm_eps);
        cur = npl_mb_attention(b, il, cur, &a);
        x = npl_add(g, cur, x);
        cur = npl_rms_norm(g, x, npl_mb_weight(b, 1, E, 1, 0, "blk.%d.ffn_norm.weight", il), hp->norm_eps);
        cur = npl_mb_ffn(b, cur, npl_mb_weight(b, 2, E, F, 0, "blk.%d.ffn_gate.weight", il),
                         npl_mb_weight(b, 2, E, F, 0, "blk.%d.ffn_up.weight", il),
                         npl_mb_weight(b, 2, F, E, 0, "blk.%d.ffn_down.weight", il), 0);
        x = npl_add(g, cur, x);
    }
    return npl_mb_output(b, x, out);
}

int npl_build_llama(npl_mb *b, npl_model_graph *out) { return build_llama_like(b, out, 0); }

/* Qwen3 is Llama plus per-head RMSNorm of q and k before RoPE. */
int npl_build_qwen3(npl_mb *b, npl_model_graph *out) { return build_llama_like(b, out, 1); }
