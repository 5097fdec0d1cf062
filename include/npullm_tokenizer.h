/* npullm tokenizer: a model's vocabulary, as llama.cpp tokenizes (the ids
 * equal llama.cpp's; tests/data/tokenizer/ holds the fixtures).
 *
 *   npl_model_params mp = npl_model_default_params();
 *   mp.vocab_only = 1;                      // no weights needed
 *   npl_model *m = npl_model_open("model.gguf", &mp, NULL, err, sizeof err);
 *   int64_t n = npl_model_tokenize(m, text, len, 1, 1, NULL, 0);   // count
 *   ... npl_model_tokenize(m, text, len, 1, 1, ids, n) ...
 *
 * The vocabulary is immutable: these calls may run on one model from many
 * threads at once. A model file without a vocabulary (no
 * tokenizer.ggml.model) opens, unless vocab_only, and runs on token ids;
 * these calls then fail (-1). */
#ifndef NPULLM_TOKENIZER_H
#define NPULLM_TOKENIZER_H

#include "npullm.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Token ids of text[0..len): the count (at most cap written; ids may be
 * NULL with cap 0 to ask for it), or -1 on failure (out of memory).
 * add_special: BOS/EOS as the vocabulary adds them; parse_special: special
 * token text (e.g. "<end_of_turn>") becomes its token rather than plain text. */
/* Text of ids[0..n): bytes written (at most cap, not NUL-terminated), or
 * the size needed when it exceeds cap, -1 on failure (an id out of range).
 * remove_special drops BOS/EOS as tokenize added them; unparse_special
 * renders control tokens' text (else ""). llama_detokenize's semantics. */
NPL_API int64_t npl_model_detokenize(const npl_model *m, const int32_t *ids, int64_t n, char *buf, int64_t cap,
                                     int remove_special, int unparse_special);
/* 1 if the model has a vocabulary (see above). */
NPL_API int npl_model_has_vocab(const npl_model *m);
NPL_API int64_t npl_model_tokenize(const npl_model *m, const char *text, size_t len, int add_special,
                                   int parse_special, int32_t *ids, int64_t cap);
/* The text of token id: bytes written, or the size needed when it exceeds
 * cap (nothing written then), -1 if id is out of range. special: 1 renders
 * control tokens' text, 0 renders them as "". Not NUL-terminated. */
NPL_API int npl_model_token_to_piece(const npl_model *m, int32_t id, char *buf, int cap, int special);
NPL_API int32_t npl_model_token_bos(const npl_model *m);  /* -1 if the vocabulary has none */
NPL_API int32_t npl_model_token_eos(const npl_model *m);  /* -1 if none */
/* 1 if tokenize with add_special puts BOS first (tokenizer.ggml.add_bos_token). */
NPL_API int npl_model_add_bos(const npl_model *m);
/* 1 if id ends generation (EOS, EOT and the like). */
NPL_API int npl_model_token_is_eog(const npl_model *m, int32_t id);

#ifdef __cplusplus
}
#endif
#endif
