/* Byte-level BPE session, as llama.cpp's llm_tokenizer_bpe_session.
 *
 * 1. The fragment is decoded into code points the lenient llama.cpp way
 *    (an invalid byte becomes U+FFFD; overlong forms and surrogates pass).
 * 2. The pre-tokenizer (tokenizer_pre.c: llama.cpp's regex list for
 *    tokenizer.ggml.pre, through PCRE2) cuts it into words.
 * 3. Each word is re-encoded to UTF-8, every byte mapped to its GPT-2
 *    character (or kept as it is where llama.cpp's byte_encode is off:
 *    gemma4, sarvam-moe, whitespace), and merged by rank (lowest first, ties leftmost) with the
 *    pair tree of tokenizer_impl.h: O(m log m) for a word of m bytes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "llm/tokenizer_impl.h"

/* ------------------------------------------------------------------ */
/* one word                                                            */

typedef struct {
    char *word; size_t word_cap;
    struct bpe_sym { uint32_t start, n; int32_t prev, next; } *sym; size_t sym_cap;
    npl_tok_tree tree;
} bpe_scratch;

/* priority of merging symbol l with its right neighbour */
static uint64_t pair_prio(const npl_tokenizer *t, const bpe_scratch *sc, int32_t l) {
    int32_t r = sc->sym[l].next;
    if (r < 0) return NPL_TOK_NONE;
    const struct bpe_sym *L = &sc->sym[l], *R = &sc->sym[r];
    int32_t rank = npl_tok_merge_rank(t, sc->word + L->start, L->n, sc->word + R->start, R->n);
    if (rank < 0) return NPL_TOK_NONE;
    return npl_tok_prio((uint32_t)rank, l);
}

static int grow(void **p, size_t *cap, size_t need, size_t elem) {
    if (need <= *cap) return 0;
    size_t nc = *cap ? *cap : 64;
    while (nc < need) nc *= 2;
    void *np = realloc(*p, nc * elem);
    if (!np) return -1;
    *p = np;
    *cap = nc;
    return 0;
}

static int bpe_word(const npl_tokenizer *t, bpe_scratch *sc, const uint32_t *cpt, size_t n_cpt, npl_tok_out *out) {
    /* code points -> UTF-8 -> GPT-2 characters (at most 4 * 2 bytes each) */
    if (grow((void **)&sc->word, &sc->word_cap, n_cpt * 8 + 1, 1)) return -1;
    size_t m = 0;
    for (size_t i = 0; i < n_cpt; i++) {
        char u[4];
        int k = npl_utf8_encode(cpt[i], u);
        for (int j = 0; j < k; j++) {
            unsigned char b = (unsigned char)u[j];
            memcpy(sc->word + m, t->byte_enc[b], t->byte_enc_len[b]);
            m += t->byte_enc_len[b];
        }
    }
    if (t->ignore_merges) {
        int32_t id = npl_tok_lookup(t, sc->word, m);
        if (id >= 0) return npl_tok_out_push(out, id);
    }
    size_t nl = 0;
    while (t->gemma4_nl && nl < m && sc->word[nl] == '\n') nl++;
    if (m > 0 && nl == m) { /* llama.cpp's gemma4 fix: a newline run that is a token */
        int32_t id = npl_tok_lookup(t, sc->word, m);
        if (id >= 0) return npl_tok_out_push(out, id);
    }
    if (grow((void **)&sc->sym, &sc->sym_cap, m + 1, sizeof(struct bpe_sym))) return -1;
    int32_t ns = 0;
    for (size_t off = 0; off < m;) {
        size_t cl = npl_utf8_len_lead((unsigned char)sc->word[off]);
        if (cl > m - off) cl = m - off;
        sc->sym[ns].start = (uint32_t)off;
        sc->sym[ns].n = (uint32_t)cl;
        sc->sym[ns].prev = ns - 1;
        off += cl;
        sc->sym[ns].next = off == m ? -1 : ns + 1;
        ns++;
    }
    if (npl_tok_tree_reset(&sc->tree, (size_t)ns)) return -1;
    for (int32_t i = 0; i < ns; i++) sc->tree.v[sc->tree.leaves + (size_t)i] = pair_prio(t, sc, i);
    npl_tok_tree_build(&sc->tree);
    for (uint64_t top; (top = npl_tok_tree_top(&sc->tree)) != NPL_TOK_NONE;) {
        int32_t l = (int32_t)(uint32_t)top;
        struct bpe_sym *L = &sc->sym[l];
        int32_t r = L->next;
        struct bpe_sym *R = &sc->sym[r];
        L->n += R->n;
        R->n = 0;
        L->next = R->next;
        if (R->next >= 0) sc->sym[R->next].prev = l;
        npl_tok_tree_set(&sc->tree, (size_t)r, NPL_TOK_NONE);
        npl_tok_tree_set(&sc->tree, (size_t)l, pair_prio(t, sc, l));
        if (L->prev >= 0) npl_tok_tree_set(&sc->tree, (size_t)L->prev, pair_prio(t, sc, L->prev));
    }
    for (int32_t i = 0; i < ns; i++) {
        const struct bpe_sym *S = &sc->sym[i];
        if (S->n == 0) continue;
        int32_t id = npl_tok_lookup(t, sc->word + S->start, S->n);
        if (id >= 0) { npl_tok_out_push(out, id); continue; }
        /* llama.cpp looks each byte of the symbol up as a one-byte token
         * (raw UTF-8, byte_encode off: as its <0xXX> token) */
        for (uint32_t j = 0; j < S->n; j++) {
            char hex[7];
            snprintf(hex, sizeof(hex), "<0x%02X>", (unsigned char)sc->word[S->start + j]);
            int32_t bid = t->raw_bytes ? npl_tok_lookup(t, hex, 6) : npl_tok_lookup(t, sc->word + S->start + j, 1);
            if (bid >= 0) npl_tok_out_push(out, bid);
        }
    }
    return out->oom ? -1 : 0;
}

/* ------------------------------------------------------------------ */
/* fragment                                                            */

/* cpt[0..n): the pre-tokenizer's words, each merged */
static int encode_cpts(const npl_tokenizer *t, bpe_scratch *sc, const uint32_t *cpt, size_t n, npl_tok_out *out) {
    uint32_t *words = NULL;
    size_t n_words = 0, at = 0;
    if (npl_pre_split(t, cpt, n, &words, &n_words)) return -1;   /* status noted */
    for (size_t w = 0; w < n_words; w++) {
        if (bpe_word(t, sc, cpt + at, words[w], out)) { npl_status_note(NPL_ERR_MEMORY); free(words); return -1; }
        at += words[w];
    }
    free(words);
    return 0;
}

/* llama.cpp's unicode_set_whitespace */
static int is_ws(uint32_t c) {
    return (c >= 9 && c <= 13) || c == 32 || c == 0x85 || c == 0xA0 || c == 0x1680 || (c >= 0x2000 && c <= 0x200A) ||
           c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

/* llm_tokenizer_whitespace_session (tokenizer model "whitespace"): whitespace
 * is dropped, each run between is lowered (normalizer lowercase) and
 * tokenized on its own */
static int encode_ws_model(const npl_tokenizer *t, bpe_scratch *sc, uint32_t *cpt, size_t n, npl_tok_out *out) {
    for (size_t i = 0; i < n;) {
        if (is_ws(cpt[i])) { i++; continue; }
        size_t j = i;
        for (; j < n && !is_ws(cpt[j]); j++)
            if (t->wpm_lowercase) cpt[j] = npl_tok_lower(cpt[j]);
        if (encode_cpts(t, sc, cpt + i, j - i, out)) return -1;
        i = j;
    }
    return 0;
}

int npl_bpe_encode(const npl_tokenizer *t, const char *text, size_t len, npl_tok_out *out) {
    const unsigned char *s = (const unsigned char *)text;
    unsigned char *esc = NULL;
    if (t->escape_ws) { /* gemma4 &c.: ' ' -> "▁" (E2 96 81) first, as llama.cpp's escape_whitespaces */
        esc = malloc(len * 3 + 1);
        if (!esc) return npl_status_note(NPL_ERR_MEMORY), -1;
        size_t o = 0;
        for (size_t i = 0; i < len; i++) {
            if (s[i] == ' ') { memcpy(esc + o, "\xe2\x96\x81", 3); o += 3; }
            else esc[o++] = s[i];
        }
        s = esc;
        len = o;
    }
    uint32_t *cpt = malloc(sizeof(uint32_t) * (len ? len : 1));
    bpe_scratch sc;
    memset(&sc, 0, sizeof(sc));
    int rc = -1;
    if (!cpt) { npl_status_note(NPL_ERR_MEMORY); goto done; }
    size_t n_cpt = 0;
    for (size_t off = 0; off < len;) cpt[n_cpt++] = npl_utf8_decode_lenient(s, len, &off);
    rc = t->ws_model ? encode_ws_model(t, &sc, cpt, n_cpt, out) : encode_cpts(t, &sc, cpt, n_cpt, out);
done:
    free(esc);
    free(cpt);
    free(sc.word);
    free(sc.sym);
    free(sc.tree.v);
    return rc;
}
