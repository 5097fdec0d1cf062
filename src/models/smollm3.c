/* SmolLM3: Llama whose every fourth layer (3, 7, ...) attends without RoPE
 * (NoPE), as llama.cpp's models/smollm3.cpp (n_no_rope_layer_step 4): Llama's
 * graph, whose attention skips RoPE where hp->nope_step says. */
#include "models/model.h"

int npl_build_smollm3(npl_mb *b, npl_model_graph *out) { return npl_build_llama(b, out); }
