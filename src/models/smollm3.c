/* SmolLM3: Llama whose every fourth layer (3, 7, ...) attends without RoPE
 * (NoPE), as llama.cpp's models/smollm3.cpp (n_no_rope_layer_step 4). */
#include "models/model.h"

int npl_build_smollm3(npl_mb *b, npl_model_graph *out) {
    const npl_hparams *hp = b->hp;
    npl_graph *g = b->g;
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
            .no_rope = hp->nope_step > 0 && (il + 1) % hp->nope_step == 0,
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
