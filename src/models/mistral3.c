/* Mistral 3 (Ministral 3), as llama.cpp's models/mistral3.cpp: Llama with
 * normal RoPE (yarn's beta_fast / beta_slow / log multiplier read by
 * hparams.c, rope_freqs.weight if present) and Llama 4's attention
 * temperature, q *= 1 + s ln(floor(pos / F) + 1), F the original context:
 * exactly 1 for positions below F, so a context of at most F positions
 * runs it and a longer one is refused. */
#include <stdio.h>

#include "models/model.h"

int npl_build_mistral3(npl_mb *b, npl_model_graph *out) {
    const npl_hparams *hp = b->hp;
    npl_graph *g = b->g;
    if (hp->attn_temp_scale != 0.0f && b->n_ctx > hp->attn_temp_floor) {
        snprintf(b->err, b->errlen,
                 "%s: %s.attention.temperature_scale: positions from %d on need Llama 4 attention temperature "
                 "scaling, which is not implemented (context %d; use at most %d)",
                 npl_gguf_path(b->f), hp->arch_name, hp->attn_temp_floor, b->n_ctx, hp->attn_temp_floor);
        b->failed = 1;
        return -1;
    }
    int64_t E = hp->n_embd, hd = hp->head_dim, F = hp->n_ff;
    int emb = npl_mb_weight(b, 2, E, hp->n_vocab, 0, "token_embd.weight", 0);
    int x = npl_get_rows(g, emb, b->tokens); /* [E, seq] */
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
        x = npl_add(g, cur, x);
        cur = npl_rms_norm(g, x, npl_mb_weight(b, 1, E, 1, 0, "blk.%d.ffn_norm.weight", il), hp->norm_eps);
        cur = npl_mb_ffn(b, cur, npl_mb_weight(b, 2, E, F, 0, "blk.%d.ffn_gate.weight", il),
                         npl_mb_weight(b, 2, E, F, 0, "blk.%d.ffn_up.weight", il),
                         npl_mb_weight(b, 2, F, E, 0, "blk.%d.ffn_down.weight", il), 0);
        x = npl_add(g, cur, x);
    }
    return npl_mb_output(b, x, out);
}
