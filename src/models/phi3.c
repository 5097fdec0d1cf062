/* Phi-3 / Phi-4-mini, as llama.cpp's models/phi3.cpp: Llama-shaped with
 * the q, k and v matrices fused into attn_qkv (rows q | k | v; separate ones
 * are read too) and gate and up fused into ffn_up (rows gate | up, SwiGLU),
 * NEOX RoPE over rope.dimension_count (partial rotary), q scaled by
 * 1/sqrt(head size) before the scores, untied output unless absent. The
 * fused matrices are read as row ranges of the mapped tensor, so every
 * output is the dot the fused matmul computes. LongRoPE (Phi-3.5 / Phi-4-mini):
 * rope_factors_long / _short as the per-pair divisors (npl_model_build picks
 * one by the context, as llama.cpp) and rope.scaling.attn_factor. */
#include "models/model.h"

int npl_build_phi3(npl_mb *b, npl_model_graph *out) {
    const npl_hparams *hp = b->hp;
    npl_graph *g = b->g;
    int64_t E = hp->n_embd, hd = hp->head_dim, F = hp->n_ff;
    const int64_t nq = hd * hp->n_head, nkv = hd * hp->n_head_kv;
    int emb = npl_mb_weight(b, 2, E, hp->n_vocab, 0, "token_embd.weight", 0);
    int x = npl_get_rows(g, emb, b->tokens); /* [E, seq] */
    for (int il = 0; il < hp->n_layer; il++) {
        char name[64];
        snprintf(name, sizeof(name), "blk.%d.attn_qkv.weight", il);
        const int fused = npl_gguf_find_tensor(b->f, name) != NULL;
        const char *qkv = "blk.%d.attn_qkv.weight";
        npl_mb_attn a = {
            .wq = fused ? npl_mb_weight_rows(b, E, nq + 2 * nkv, 0, nq, "q", qkv, il)
                        : npl_mb_weight(b, 2, E, nq, 0, "blk.%d.attn_q.weight", il),
            .wk = fused ? npl_mb_weight_rows(b, E, nq + 2 * nkv, nq, nkv, "k", qkv, il)
                        : npl_mb_weight(b, 2, E, nkv, 0, "blk.%d.attn_k.weight", il),
            .wv = fused ? npl_mb_weight_rows(b, E, nq + 2 * nkv, nq + nkv, nkv, "v", qkv, il)
                        : npl_mb_weight(b, 2, E, nkv, 0, "blk.%d.attn_v.weight", il),
            .wo = npl_mb_weight(b, 2, nq, E, 0, "blk.%d.attn_output.weight", il),
            .bq = -1, .bk = -1, .bv = -1,
            .q_norm = -1, .k_norm = -1,
            .rope_base = hp->rope_base,
            .rope_freq_scale = hp->rope_freq_scale,
            .prescale_q = 1,
        };
        int cur = npl_rms_norm(g, x, npl_mb_weight(b, 1, E, 1, 0, "blk.%d.attn_norm.weight", il), hp->norm_eps);
        cur = npl_mb_attention(b, il, cur, &a);
        x = npl_add(g, cur, x);
        cur = npl_rms_norm(g, x, npl_mb_weight(b, 1, E, 1, 0, "blk.%d.ffn_norm.weight", il), hp->norm_eps);
        cur = npl_mb_ffn(b, cur, npl_mb_weight_rows(b, E, 2 * F, 0, F, "gate", "blk.%d.ffn_up.weight", il),
                         npl_mb_weight_rows(b, E, 2 * F, F, F, "up", "blk.%d.ffn_up.weight", il),
                         npl_mb_weight(b, 2, F, E, 0, "blk.%d.ffn_down.weight", il), 0);
        x = npl_add(g, cur, x);
    }
    return npl_mb_output(b, x, out);
}
