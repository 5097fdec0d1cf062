/* Byte-level BPE session, as llama.cpp's llm_tokenizer_bpe_session with
 * unicode_regex_split.
 *
 * 1. The fragment is decoded into code points the lenient llama.cpp way
 *    (an invalid byte becomes U+FFFD; overlong forms and surrogates pass).
 * 2. The pre-tokenizer regex (PCRE2, UTF) cuts it into words; matches and
 *    the gaps between them are both words, like std::regex_iterator use in
 *    llama.cpp. "\s" is spelled out as llama.cpp's whitespace set and the
 *    letters/numbers PCRE2's older Unicode tables lack are added, so the
 *    regex classifies every code point as llama.cpp's hand-written
 *    splitter does (checked over all of U+0000..U+10FFFF against
 *    llama.cpp's unicode-data.cpp with PCRE2 10.42).
 * 3. Each word is re-encoded to UTF-8, every byte mapped to its GPT-2
 *    character, and merged by rank (lowest first, ties leftmost) with the
 *    pair tree of tokenizer_impl.h: O(m log m) for a word of m bytes. */
#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "llm/tokenizer_impl.h"

/* llama.cpp's unicode_set_whitespace */
#define WS "\\t\\n\\x0B\\f\\r\\x20\\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}\\x{205F}\\x{3000}"
/* Letters and numbers of Unicode 15.0/15.1 that llama.cpp's tables have
 * and PCRE2 10.42 (Unicode 14) lacks; harmless with a newer PCRE2. */
#define L_NEW "\\x{1123F}-\\x{11240}\\x{11F02}\\x{11F04}-\\x{11F10}\\x{11F12}-\\x{11F33}\\x{1342F}\\x{13441}-\\x{13446}" \
              "\\x{1B132}\\x{1B155}\\x{1DF25}-\\x{1DF2A}\\x{1E030}-\\x{1E06D}\\x{1E4D0}-\\x{1E4EB}\\x{2B739}" \
              "\\x{2EBF0}-\\x{2EE5D}\\x{31350}-\\x{323AF}"
#define N_NEW "\\x{11F50}-\\x{11F59}\\x{1D2C0}-\\x{1D2D3}\\x{1E4F0}-\\x{1E4F9}"
#define PL "\\p{L}" L_NEW   /* inside a class */
#define PN "\\p{N}" N_NEW

static const char k_re_llama3[] =
    "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n" PL PN "]?[" PL "]+|[" PN "]{1,3}"
    "| ?[^" WS PL PN "]+[\\r\\n]*|[" WS "]*[\\r\\n]+|[" WS "]+(?![^" WS "])|[" WS "]+";
static const char k_re_qwen2[] =
    "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n" PL PN "]?[" PL "]+|[" PN "]"
    "| ?[^" WS PL PN "]+[\\r\\n]*|[" WS "]*[\\r\\n]+|[" WS "]+(?![^" WS "])|[" WS "]+";
/* qwen35: qwen2 whose letter runs also take combining marks (\p{M}), as
 * llama.cpp's unicode_regex_split_custom_qwen35 */
static const char k_re_qwen35[] =
    "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n" PL PN "]?[" PL "\\p{M}]+|[" PN "]"
    "| ?[^" WS PL "\\p{M}" PN "]+[\\r\\n]*|[" WS "]*[\\r\\n]+|[" WS "]+(?![^" WS "])|[" WS "]+";
static const char k_re_gpt2[] =
    "'s|'t|'re|'ve|'m|'ll|'d| ?[" PL "]+| ?[" PN "]+| ?[^" WS PL PN "]+|[" WS "]+(?![^" WS "])";
/* llama.cpp's starcoder family splits "\p{N}" first (every number its own
 * word), then applies the gpt2 regex inside each piece. One regex does the
 * same: a number alone comes first, " ?\p{N}+" is gone, and a whitespace
 * run before a number is kept whole (a piece ends there, as at the end of
 * the text). */
static const char k_re_starcoder[] =
    "[" PN "]|'s|'t|'re|'ve|'m|'ll|'d| ?[" PL "]+| ?[^" WS PL PN "]+|[" WS "]+(?![^" WS PN "])";

int npl_bpe_init(npl_tokenizer *t, char *msg, size_t msglen) {
    const char *re = t->pre == NPL_PRE_LLAMA3 ? k_re_llama3 : t->pre == NPL_PRE_QWEN2 ? k_re_qwen2
                   : t->pre == NPL_PRE_QWEN35 ? k_re_qwen35 : t->pre == NPL_PRE_STARCODER ? k_re_starcoder : k_re_gpt2;
    int ec;
    PCRE2_SIZE eo;
    pcre2_code *code = pcre2_compile((PCRE2_SPTR)re, PCRE2_ZERO_TERMINATED, PCRE2_UTF | PCRE2_UCP, &ec, &eo, NULL);
    if (!code) {
        PCRE2_UCHAR buf[120];
        pcre2_get_error_message(ec, buf, sizeof(buf));
        npl_errf(msg, msglen, ec == PCRE2_ERROR_HEAP_FAILED ? NPL_ERR_MEMORY : NPL_ERR_RUNTIME,
                 "pre-tokenizer regex does not compile at %zu: %s", (size_t)eo, (const char *)buf);
        return -1;
    }
    (void)pcre2_jit_compile(code, PCRE2_JIT_COMPLETE);   /* the interpreter is the fallback */
    t->re = code;
    /* A whitespace run is matched with backtracking over the whole run
     * ([\s]*[\r\n]+ first), linear but counted against PCRE2's default match
     * limit of 10M: lift the limits so a 16 MB run of spaces still splits.
     * The context is only read while matching, so threads share it. */
    pcre2_match_context *mc = pcre2_match_context_create(NULL);
    if (!mc) { npl_err_memory(msg, msglen); return -1; }
    pcre2_set_match_limit(mc, UINT32_MAX);
    pcre2_set_depth_limit(mc, UINT32_MAX);
    pcre2_set_heap_limit(mc, UINT32_MAX);
    t->re_ctx = mc;
    return 0;
}

void npl_bpe_free(npl_tokenizer *t) {
    if (t->re) pcre2_code_free((pcre2_code *)t->re);
    if (t->re_ctx) pcre2_match_context_free((pcre2_match_context *)t->re_ctx);
    t->re = NULL;
    t->re_ctx = NULL;
}

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
        /* llama.cpp looks each byte of the symbol up as a one-byte token */
        for (uint32_t j = 0; j < S->n; j++) {
            int32_t bid = npl_tok_lookup(t, sc->word + S->start + j, 1);
            if (bid >= 0) npl_tok_out_push(out, bid);
        }
    }
    return out->oom ? -1 : 0;
}

/* ------------------------------------------------------------------ */
/* fragment                                                            */

int npl_bpe_encode(const npl_tokenizer *t, const char *text, size_t len, npl_tok_out *out) {
    const unsigned char *s = (const unsigned char *)text;
    uint32_t *cpt = malloc(sizeof(uint32_t) * (len ? len : 1));
    char *shadow = malloc(len * 3 + 4);   /* U+FFFD for one bad byte is 3 bytes */
    pcre2_match_data *md = pcre2_match_data_create(1, NULL);
    bpe_scratch sc;
    memset(&sc, 0, sizeof(sc));
    int rc = -1;
    npl_status why = NPL_ERR_MEMORY; /* what a failure below was */
    if (!cpt || !shadow || !md) goto done;

    /* code points, and a valid UTF-8 copy for PCRE2: surrogates and values
     * past U+10FFFF (which llama.cpp also lets through) are matched as
     * U+FFFD, a symbol like them */
    size_t n_cpt = 0, sl = 0;
    for (size_t off = 0; off < len;) {
        uint32_t c = npl_utf8_decode_lenient(s, len, &off);
        cpt[n_cpt++] = c;
        uint32_t c2 = (c >= 0xd800 && c <= 0xdfff) || c > 0x10ffff ? 0xfffd : c;
        sl += (size_t)npl_utf8_encode(c2, shadow + sl);
    }

    const pcre2_code *code = (const pcre2_code *)t->re;
    size_t at = 0;          /* byte offset in shadow */
    size_t ci = 0, cb = 0;  /* code point index at byte offset cb */
    size_t prev_ci = 0;     /* first code point not yet emitted */
    uint32_t opts = PCRE2_NO_UTF_CHECK;
    while (at < sl) {
        int mr = pcre2_match(code, (PCRE2_SPTR)shadow, sl, at, opts, md, (pcre2_match_context *)t->re_ctx);
        if (mr == PCRE2_ERROR_NOMATCH) break;
        if (mr < 0) {
            if (!(opts & PCRE2_NO_JIT)) { opts |= PCRE2_NO_JIT; continue; }
            if (mr != PCRE2_ERROR_NOMEMORY) why = NPL_ERR_RUNTIME;
            goto done;
        }
        PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
        size_t ms = ov[0], me = ov[1];
        if (me == ms) {   /* cannot happen with these patterns; step one character */
            at = ms + npl_utf8_len_lead((unsigned char)shadow[ms]);
            continue;
        }
        /* byte offsets -> code point indices */
        while (cb < ms) { cb += npl_utf8_len_lead((unsigned char)shadow[cb]); ci++; }
        size_t ms_ci = ci;
        while (cb < me) { cb += npl_utf8_len_lead((unsigned char)shadow[cb]); ci++; }
        if (ms_ci > prev_ci && bpe_word(t, &sc, cpt + prev_ci, ms_ci - prev_ci, out)) goto done;
        if (bpe_word(t, &sc, cpt + ms_ci, ci - ms_ci, out)) goto done;
        prev_ci = ci;
        at = me;
    }
    if (n_cpt > prev_ci && bpe_word(t, &sc, cpt + prev_ci, n_cpt - prev_ci, out)) goto done;
    rc = 0;
done:
    if (rc) npl_status_note(why);
    free(cpt);
    free(shadow);
    if (md) pcre2_match_data_free(md);
    free(sc.word);
    free(sc.sym);
    free(sc.tree.v);
    return rc;
}
