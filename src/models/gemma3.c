/* Gemma 3: embeddings scaled by sqrt(n_embd); norms before and after both
 * attention and FFN; QK-norm; 5 sliding-window layers (local RoPE base) to 1
 * global; GeGLU with tanh GELU; output tied to the embedding. */
#include "models/model.h"

int npl_build_gemma3(npl_mb *b, npl_model_graph *out) {
    const npl_hparams *hp = b->hp;
    npl_graph *g = b->g;
    int64_t E = hp->n_embd, hd = hp->head_dim;
    int emb = npl_mb_weight(b, 2, E, hp->n_vocab, 0, "token_embd.weight", 0);
    int x = npl_get_rows(g, emb, b->tokens); /* [E, seq] */
    x = npl_scale(g, x, hp->embd_scale);
    for (int il = 0; il < hp->n_layer; il++) {
        int swa = npl_hparams_layer_is_swa(hp, il);
        npl_mb_attn a = {
            .wq = npl_mb_weight(b, 2, E, hd * hp->n_head, 0, "blk.%d.attn_q.weight", il),
            .wk = npl_mb_weight(b, 2, E, hd * hp->n_head_kv, 0, "blk.%d.attn_k.weight", il),
            .wv = npl_mb_weight(b, 2, E, hd * hp->n_head_kv, 0, "blk.%d.attn_v.weight", il),
            .wo = npl_mb_weight(b, 2, hd * hp->n_head, E, 0, "blk.%d.attn_output.weight", il),
            .bq = -1, .bk = -1, .bv = -1,
            .q_norm = npl_mb_weight(b, 1, hd, 1, 0, "blk.%d.attn_q_norm.weight", il),
            .k_norm = npl_mb_weight(b, 1, hd, 1, 0, "blk.%d.attn_k_norm.weight", il),
            .rope_base = swa ? hp->rope_base_swa : hp->rope_base,
            .rope_freq_scale = swa ? 1.0f : hp->rope_freq_scale,
            .window = swa ? hp->n_swa : 0,
        };
        x = npl_mb_gemma_layer(b, il, x, &a);
    }
    return npl_mb_output(b, x, out);
}
