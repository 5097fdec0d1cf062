/* SentencePiece (SPM) session, as llama.cpp's llm_tokenizer_spm_session.
 *
 * Spaces become "▁" (and one is prefixed when the vocabulary asks), the
 * text is cut into UTF-8 characters by their lead byte (no validation, as
 * in llama.cpp), and adjacent symbols are merged best score first (ties:
 * leftmost) for as long as the merged text is a token: O(n log n) with the
 * pair tree of tokenizer_impl.h. Symbols that are not a token at the end
 * fall back to byte tokens <0xXX>. */
#include <stdlib.h>
#include <string.h>

#include "llm/tokenizer_impl.h"

typedef struct {
    uint32_t start, n;     /* bytes in the escaped text; n == 0 once merged away */
    int32_t prev, next;
} spm_sym;

/* priority of merging symbol l with its right neighbour */
static uint64_t pair_prio(const npl_tokenizer *t, const char *text, const spm_sym *sym, int32_t l) {
    int32_t r = sym[l].next;
    if (r < 0) return NPL_TOK_NONE;
    int32_t id = npl_tok_lookup(t, text + sym[l].start, sym[l].n + sym[r].n);
    if (id < 0) return NPL_TOK_NONE;
    return npl_tok_prio(npl_tok_score_key(t->tok[id].score), l);
}

int npl_spm_encode(const npl_tokenizer *t, const char *text, size_t len, int add_prefix, npl_tok_out *out) {
    /* escape: ' ' -> "▁" (E2 96 81) */
    size_t spaces = add_prefix ? 1 : 0;
    for (size_t i = 0; i < len; i++) spaces += text[i] == ' ';
    size_t n = len + (add_prefix ? 1 : 0) + 2 * spaces;
    char *buf = malloc(n ? n : 1);
    spm_sym *sym = malloc(sizeof(spm_sym) * (n ? n : 1));
    npl_tok_tree tree = { NULL, 0, 0 };
    int rc = -1;
    if (!buf || !sym) goto done;
    size_t o = 0;
    if (add_prefix) { memcpy(buf, "\xe2\x96\x81", 3); o = 3; }
    for (size_t i = 0; i < len; i++) {
        if (text[i] == ' ') { memcpy(buf + o, "\xe2\x96\x81", 3); o += 3; }
        else buf[o++] = text[i];
    }

    /* one symbol per (lead-byte) character */
    int32_t ns = 0;
    for (size_t off = 0; off < n;) {
        size_t cl = npl_utf8_len_lead((unsigned char)buf[off]);
        if (cl > n - off) cl = n - off;
        sym[ns].start = (uint32_t)off;
        sym[ns].n = (uint32_t)cl;
        sym[ns].prev = ns - 1;
        off += cl;
        sym[ns].next = off == n ? -1 : ns + 1;
        ns++;
    }
    if (npl_tok_tree_reset(&tree, (size_t)ns)) goto done;
    for (int32_t i = 0; i < ns; i++) tree.v[tree.leaves + (size_t)i] = pair_prio(t, buf, sym, i);
    npl_tok_tree_build(&tree);
    for (uint64_t top; (top = npl_tok_tree_top(&tree)) != NPL_TOK_NONE;) {
        int32_t l = (int32_t)(uint32_t)top, r = sym[l].next;
        sym[l].n += sym[r].n;
        sym[r].n = 0;
        sym[l].next = sym[r].next;
        if (sym[r].next >= 0) sym[sym[r].next].prev = l;
        npl_tok_tree_set(&tree, (size_t)r, NPL_TOK_NONE);
        npl_tok_tree_set(&tree, (size_t)l, pair_prio(t, buf, sym, l));
        if (sym[l].prev >= 0) npl_tok_tree_set(&tree, (size_t)sym[l].prev, pair_prio(t, buf, sym, sym[l].prev));
    }

    /* resegment: a final symbol is a token or becomes bytes (llama.cpp's
     * rev_merge lookup can only hit texts that are tokens, so it never
     * applies to a symbol that is not one) */
    for (int32_t i = ns > 0 ? 0 : -1; i != -1; i = sym[i].next) {
        int32_t id = npl_tok_lookup(t, buf + sym[i].start, sym[i].n);
        if (id >= 0) { npl_tok_out_push(out, id); continue; }
        for (uint32_t j = 0; j < sym[i].n; j++) {
            int32_t bid = t->byte_to_id[(unsigned char)buf[sym[i].start + j]];
            if (bid < 0) bid = t->unk;   /* llama.cpp throws here */
            if (bid >= 0) npl_tok_out_push(out, bid);
        }
    }
    rc = out->oom ? -1 : 0;
done:
    if (rc) npl_status_note(NPL_ERR_MEMORY); /* the only way it fails */
    free(buf);
    free(sym);
    free(tree.v);
    return rc;
}
