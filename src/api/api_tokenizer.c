/* Public tokenizer calls (npullm_tokenizer.h) over the model's vocabulary. */
#include "api/api_impl.h"
#include "npullm_tokenizer.h"

int64_t npl_model_tokenize(const npl_model *m, const char *text, size_t len, int add_special, int parse_special,
                           int32_t *ids, int64_t cap) {
    if (!m || !m->tok || (!text && len) || cap < 0 || (cap && !ids)) return -1;
    return npl_tokenize(m->tok, text ? text : "", len, add_special, parse_special, ids, cap);
}

int npl_model_token_to_piece(const npl_model *m, int32_t id, char *buf, int cap, int special) {
    if (!m || !m->tok || cap < 0 || (cap && !buf)) return -1;
    return npl_token_to_piece(m->tok, id, buf, cap, special);
}

int64_t npl_model_detokenize(const npl_model *m, const int32_t *ids, int64_t n, char *buf, int64_t cap,
                             int remove_special, int unparse_special) {
    if (!m || !m->tok || n < 0 || (n && !ids) || cap < 0 || (cap && !buf)) return -1;
    for (int64_t i = 0; i < n; i++)
        if (ids[i] < 0 || ids[i] >= npl_tokenizer_n_vocab(m->tok)) return -1;
    return npl_detokenize(m->tok, ids, n, buf, cap, remove_special, unparse_special);
}

int npl_model_has_vocab(const npl_model *m) { return m && m->tok; }
int32_t npl_model_token_bos(const npl_model *m) { return m && m->tok ? npl_tokenizer_bos(m->tok) : -1; }
int32_t npl_model_token_eos(const npl_model *m) { return m && m->tok ? npl_tokenizer_eos(m->tok) : -1; }
int npl_model_add_bos(const npl_model *m) { return m && m->tok ? npl_tokenizer_add_bos(m->tok) : 0; }
int npl_model_token_is_eog(const npl_model *m, int32_t id) {
    return m && m->tok ? npl_tokenizer_is_eog(m->tok, id) : 0;
}
