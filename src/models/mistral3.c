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
    if (hp->attn_temp_scale != 0.0f && b->n_ctx > hp->attn_temp_floor) {
        snprintf(b->err, b->errlen,
                 "%s: %s.attention.temperature_scale: positions from %d on need Llama 4 attention temperature "
                 "scaling, which is not implemented (context %d; use at most %d)",
                 npl_gguf_path(b->f), hp->arch_name, hp->attn_temp_floor, b->n_ctx, hp->attn_temp_floor);
        b->failed = 1;
        return -1;
    }
    return npl_build_llama(b, out); /* below the original context: Llama's graph */
}
