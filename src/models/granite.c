/* Granite (3.x dense): Llama with four multipliers, as llama.cpp's
 * models/granite.cpp: the embeddings times embedding_scale, the attention
 * and FFN outputs times residual_scale before each residual add, scores
 * scaled by attention.scale instead of 1/sqrt(head size), and the logits
 * divided by logit_scale (hparams.c reads them; npl_mb_output divides). */
#include "models/model.h"

int npl_build_granite(npl_mb *b, npl_model_graph *out) {
    const npl_hparams *hp = b->hp;
    npl_graph *g = b->g;
    int64_t E = hp->n_embd, hd = hp->head_dim, F = hp->n_ff;
    int emb = npl_mb_weight(b, 2, E, hp->n_vocab, 0, "token_embd.weight", 0);
    int x = npl_get_rows(g, emb, b->tokens); /* [E, seq] */
    if (hp->embd_scale != 1.0f) x = npl_scale(g, x, hp->embd_scale);
    for (int il = 0; il < hp->n_layer; il++) {
        npl_mb_attn a = {
            .wq = npl_mb_weight(b, 2, E, hd * hp->n_head, 0, "blk.%d.attn_q.weight", il),
            .wk = npl_mb_weight(b, 2, E, hd * hp->n_head_kv, 0, "blk.%d.attn_k.weight", il),
            .wv = npl_mb_weight(b, 2, E, hd * hp->n_head_kv, 0, "blk.%d.attn_v.weight", il),
            .wo = npl_mb_weight(b, 2, hd * hp->n_head, E, 0, "blk.%d.attn_output.weight", il),
            .bq = -1, .bk = -1, .bv = -1,
            .q_norm = -1, .k_norm = -1,
            .rope_base = hp->rope_base,
            .rope_freq_scale = hp->rope_freq_scale,
        };
        int cur = npl_rms_norm(g, x, npl_mb_weight(b, 1, E, 1, 0, "blk.%d.attn_norm.weight", il), hp->norm_eps);
        cur = npl_mb_attention(b, il, cur, &a);
        if (hp->residual_scale != 1.0f) cur = npl_scale(g, cur, hp->residual_scale);
        x = npl_add(g, cur, x);
        cur = npl_rms_norm(g, x, npl_mb_weight(b, 1, E, 1, 0, "blk.%d.ffn_norm.weight", il), hp->norm_eps);
        cur = npl_mb_ffn(b, cur, npl_mb_weight(b, 2, E, F, 0, "blk.%d.ffn_gate.weight", il),
                         npl_mb_weight(b, 2, E, F, 0, "blk.%d.ffn_up.weight", il),
                         npl_mb_weight(b, 2, F, E, 0, "blk.%d.ffn_down.weight", il), 0);
        if (hp->residual_scale != 1.0f) cur = npl_scale(g, cur, hp->residual_scale);
        x = npl_add(g, cur, x);
    }
    return npl_mb_output(b, x, out);
}
