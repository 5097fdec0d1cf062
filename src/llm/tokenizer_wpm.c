/* WordPiece (tokenizer.ggml.model = "bert"), as llama.cpp's
 * llm_tokenizer_wpm_session (llama-vocab.cpp).
 *
 * A fragment is first cut into words like BERT's BasicTokenizer: whitespace
 * (llama.cpp's set) ends a word; NUL, U+FFFD and control/format/private/
 * surrogate code points are dropped; punctuation, ASCII symbols and CJK
 * ideographs are words of their own. With the normalizer's lowercase (on
 * unless tokenizer.ggml.normalizer.lowercase says otherwise) every code
 * point is lowered, and with strip_accents (default: as lowercase) it is
 * replaced by the first code point of its canonical decomposition and
 * combining marks are dropped. Then each word, "▁" in front, is covered
 * greedily by the longest vocabulary texts from its first byte on; a word
 * that cannot be covered is one [UNK].
 *
 * The character data (categories, simple lowercase, decompositions) come
 * from utf8proc (Unicode 15.0 in Debian 12), llama.cpp's tables are of
 * Unicode 15.x: the 15.1 additions are letters or non-ASCII symbols, kept
 * inside words by either table, so the words are the same. */
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

#include "llm/tokenizer_impl.h"

/* llama.cpp's unicode whitespace set */
uint32_t npl_tok_lower(uint32_t c) {
    return c > 0x10ffff ? c : (uint32_t)utf8proc_tolower((utf8proc_int32_t)c);
}

static int wpm_space(uint32_t c) {
    return (c >= 0x09 && c <= 0x0d) || c == 0x20 || c == 0x85 || c == 0xa0 || c == 0x1680 ||
           (c >= 0x2000 && c <= 0x200a) || c == 0x2028 || c == 0x2029 || c == 0x202f || c == 0x205f ||
           c == 0x3000;
}

/* llm_tokenizer_wpm_session::is_chinese_char (0x2B920 as in Hugging Face's code) */
static int wpm_chinese(uint32_t c) {
    return (c >= 0x4e00 && c <= 0x9fff) || (c >= 0x3400 && c <= 0x4dbf) || (c >= 0x20000 && c <= 0x2a6df) ||
           (c >= 0x2a700 && c <= 0x2b73f) || (c >= 0x2b740 && c <= 0x2b81f) || (c >= 0x2b920 && c <= 0x2ceaf) ||
           (c >= 0xf900 && c <= 0xfaff) || (c >= 0x2f800 && c <= 0x2fa1f);
}

/* first code point of c's NFD (llama.cpp's unicode_ranges_nfd) */
static uint32_t wpm_nfd_first(uint32_t c) {
    utf8proc_int32_t d[32];
    int last = 0;
    utf8proc_ssize_t n = utf8proc_decompose_char((utf8proc_int32_t)c, d, 32, UTF8PROC_DECOMPOSE, &last);
    return n >= 1 && n <= 32 ? (uint32_t)d[0] : c;
}

typedef struct { char *v; size_t n, cap; } wpm_buf;

static int buf_put(wpm_buf *b, const char *p, size_t n) {
    if (b->n + n > b->cap) {
        size_t nc = b->cap ? b->cap * 2 : 64;
        while (nc < b->n + n) nc *= 2;
        char *nv = realloc(b->v, nc);
        if (!nv) return -1;
        b->v = nv;
        b->cap = nc;
    }
    memcpy(b->v + b->n, p, n);
    b->n += n;
    return 0;
}

/* One word (w[0..3) is "▁"): longest vocabulary text at every position;
 * any position without one makes the whole word [UNK]. */
static int wpm_word(const npl_tokenizer *t, const char *w, size_t n, npl_tok_out *out) {
    size_t start = out->n;
    for (size_t i = 0; i < n; i++) {
        size_t hi = i + t->max_token_len + 1 < n ? i + t->max_token_len + 1 : n;
        int32_t id = -1;
        size_t j;
        for (j = hi; j > i; j--)
            if ((id = npl_tok_lookup(t, w + i, j - i)) >= 0) break;
        if (id < 0) { out->n = start; break; }
        if (npl_tok_out_push(out, id)) return -1;
        i = j - 1;
    }
    if (out->n == start && t->unk >= 0 && npl_tok_out_push(out, t->unk)) return -1;
    return 0;
}

int npl_wpm_encode(const npl_tokenizer *t, const char *text, size_t len, npl_tok_out *out) {
    const unsigned char *s = (const unsigned char *)text;
    wpm_buf w = { NULL, 0, 0 };
    int rc = -1;
    if (buf_put(&w, "\xe2\x96\x81", 3)) goto done;
    for (size_t off = 0; off < len;) {
        uint32_t c = npl_utf8_decode_lenient(s, len, &off);
        /* past U+10FFFF (lenient decoding): llama.cpp throws; dropped here */
        if (c > 0x10ffff) continue;
        if (t->wpm_strip_accents && (c < 0xd800 || c > 0xdfff)) c = wpm_nfd_first(c);
        if (wpm_space(c)) {   /* ends a word */
            if (w.n > 3 && wpm_word(t, w.v, w.n, out)) goto done;
            w.n = 3;
            continue;
        }
        utf8proc_category_t cat = utf8proc_category((utf8proc_int32_t)c);
        if (c == 0 || c == 0xfffd || cat == UTF8PROC_CATEGORY_CC || cat == UTF8PROC_CATEGORY_CF ||
            cat == UTF8PROC_CATEGORY_CO || cat == UTF8PROC_CATEGORY_CS)
            continue;
        if (t->wpm_strip_accents &&
            (cat == UTF8PROC_CATEGORY_MN || cat == UTF8PROC_CATEGORY_MC || cat == UTF8PROC_CATEGORY_ME))
            continue;
        int alone = (cat >= UTF8PROC_CATEGORY_PC && cat <= UTF8PROC_CATEGORY_PO) ||
                    (c < 0x7f && cat >= UTF8PROC_CATEGORY_SM && cat <= UTF8PROC_CATEGORY_SO) || wpm_chinese(c);
        if (t->wpm_lowercase) c = npl_tok_lower(c);
        char enc[4];
        int k = npl_utf8_encode(c, enc);
        if (alone) {   /* a word of its own */
            if (w.n > 3 && wpm_word(t, w.v, w.n, out)) goto done;
            w.n = 3;
            if (buf_put(&w, enc, (size_t)k) || wpm_word(t, w.v, w.n, out)) goto done;
            w.n = 3;
        } else if (buf_put(&w, enc, (size_t)k)) {
            goto done;
        }
    }
    if (w.n > 3 && wpm_word(t, w.v, w.n, out)) goto done;
    rc = 0;
done:
    if (rc) npl_status_note(NPL_ERR_MEMORY);
    free(w.v);
    return rc;
}
