/* Vocabulary: load and validate tokenizer.* metadata, the lookup tables,
 * llama.cpp's special-token detection by text, and token -> text. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "format/gguf.h"
#include "llm/tokenizer_impl.h"

/* ------------------------------------------------------------------ */
/* errors                                                              */

static void fail(char *err, size_t errlen, const npl_gguf *g, const char *field, const char *fmt, ...) {
    if (!err || errlen == 0) return;
    const char *file = g ? npl_gguf_path(g) : NULL;
    int n = snprintf(err, errlen, "%s: %s: ", file ? file : "(gguf)", field);
    if (n < 0 || (size_t)n >= errlen) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err + n, errlen - (size_t)n, fmt, ap);
    va_end(ap);
}

/* fail() for element i of an array key: "FILE: KEY[i]: ..." */
static void fail_at(char *err, size_t errlen, const npl_gguf *g, const char *key, uint64_t i, const char *fmt, ...) {
    if (!err || errlen == 0) return;
    const char *file = g ? npl_gguf_path(g) : NULL;
    int n = snprintf(err, errlen, "%s: %s[%llu]: ", file ? file : "(gguf)", key, (unsigned long long)i);
    if (n < 0 || (size_t)n >= errlen) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err + n, errlen - (size_t)n, fmt, ap);
    va_end(ap);
}

/* ------------------------------------------------------------------ */
/* UTF-8 helpers (llama.cpp unicode.cpp semantics)                    */

uint32_t npl_utf8_decode_lenient(const unsigned char *s, size_t n, size_t *off) {
    size_t o = *off;
    unsigned c = s[o];
    if (!(c & 0x80)) { *off = o + 1; return c; }
    if (!(c & 0x40)) goto bad;
    if (!(c & 0x20)) {
        if (o + 1 >= n || (s[o + 1] & 0xc0) != 0x80) goto bad;
        *off = o + 2;
        return ((c & 0x1fu) << 6) | (s[o + 1] & 0x3fu);
    }
    if (!(c & 0x10)) {
        if (o + 2 >= n || (s[o + 1] & 0xc0) != 0x80 || (s[o + 2] & 0xc0) != 0x80) goto bad;
        *off = o + 3;
        return ((c & 0x0fu) << 12) | ((s[o + 1] & 0x3fu) << 6) | (s[o + 2] & 0x3fu);
    }
    if (!(c & 0x08)) {
        if (o + 3 >= n || (s[o + 1] & 0xc0) != 0x80 || (s[o + 2] & 0xc0) != 0x80 || (s[o + 3] & 0xc0) != 0x80) goto bad;
        *off = o + 4;
        return ((c & 0x07u) << 18) | ((s[o + 1] & 0x3fu) << 12) | ((s[o + 2] & 0x3fu) << 6) | (s[o + 3] & 0x3fu);
    }
bad:
    *off = o + 1;
    return 0xFFFD;
}

int npl_utf8_encode(uint32_t cpt, char out[4]) {
    if (cpt <= 0x7f) { out[0] = (char)cpt; return 1; }
    if (cpt <= 0x7ff) {
        out[0] = (char)(0xc0 | (cpt >> 6)); out[1] = (char)(0x80 | (cpt & 0x3f));
        return 2;
    }
    if (cpt > 0x10ffff) cpt = 0xFFFD;   /* llama.cpp throws here */
    if (cpt <= 0xffff) {
        out[0] = (char)(0xe0 | (cpt >> 12)); out[1] = (char)(0x80 | ((cpt >> 6) & 0x3f));
        out[2] = (char)(0x80 | (cpt & 0x3f));
        return 3;
    }
    out[0] = (char)(0xf0 | (cpt >> 18)); out[1] = (char)(0x80 | ((cpt >> 12) & 0x3f));
    out[2] = (char)(0x80 | ((cpt >> 6) & 0x3f)); out[3] = (char)(0x80 | (cpt & 0x3f));
    return 4;
}

/* ------------------------------------------------------------------ */
/* hash tables                                                         */

static uint32_t pow2_at_least(uint64_t n) {
    uint64_t c = 16;
    while (c < n) c <<= 1;
    return (uint32_t)c;
}

int32_t npl_tok_lookup(const npl_tokenizer *t, const char *s, size_t n) {
    if (n == 0 || n > t->max_token_len) return -1;
    uint64_t h = npl_tok_hash(s, n);
    uint32_t tag = (uint32_t)(h >> 32);
    for (uint32_t i = (uint32_t)h & t->tok_mask;; i = (i + 1) & t->tok_mask) {
        const npl_tok_slot *sl = &t->tok_slots[i];
        if (sl->val < 0) return -1;
        if (sl->tag == tag) {
            const npl_tok_entry *e = &t->tok[sl->val];
            if (e->len == n && memcmp(t->arena + e->off, s, n) == 0) return sl->val;
        }
    }
}

static uint64_t pair_hash(const char *l, size_t ln, const char *r, size_t rn) {
    return npl_tok_hash(l, ln) * 0x9e3779b97f4a7c15ull ^ npl_tok_hash(r, rn);
}

int32_t npl_tok_merge_rank(const npl_tokenizer *t, const char *l, size_t ln, const char *r, size_t rn) {
    if (!t->merge_slots || ln + rn > t->max_merge_len) return -1;
    uint64_t h = pair_hash(l, ln, r, rn);
    uint32_t tag = (uint32_t)(h >> 32);
    for (uint32_t i = (uint32_t)h & t->merge_mask;; i = (i + 1) & t->merge_mask) {
        const npl_tok_slot *sl = &t->merge_slots[i];
        if (sl->val < 0) return -1;
        if (sl->tag == tag) {
            const npl_tok_merge *m = &t->merges[sl->val];
            if (m->llen == ln && m->rlen == rn && memcmp(t->arena + m->loff, l, ln) == 0 &&
                memcmp(t->arena + m->roff, r, rn) == 0)
                return sl->val;
        }
    }
}

/* ------------------------------------------------------------------ */
/* metadata readers                                                    */

/* Optional integer id key. 0 ok (and *id set when present), -1 error. */
static int read_id(const npl_gguf *g, const char *key, int32_t n_vocab, int32_t *id, char *err, size_t errlen) {
    int64_t v;
    int rc = npl_gguf_get_i64(g, key, &v);
    if (rc == -1) return 0;
    if (rc != 0) { fail(err, errlen, g, key, "expected an integer token id"); return -1; }
    if (v < 0 || v >= n_vocab) {
        fail(err, errlen, g, key, "token id %lld out of range [0, %d)", (long long)v, (int)n_vocab);
        return -1;
    }
    *id = (int32_t)v;
    return 0;
}

static int read_bool(const npl_gguf *g, const char *key, int *out, char *err, size_t errlen) {
    int v;
    int rc = npl_gguf_get_bool(g, key, &v);
    if (rc == -1) return 0;
    if (rc != 0) { fail(err, errlen, g, key, "expected a bool"); return -1; }
    *out = v ? 1 : 0;
    return 0;
}

/* Array key of the given element type; returns its index or -1 (absent,
 * *bad = 0) / -1 with *bad = 1 after writing err. */
static int64_t find_array(const npl_gguf *g, const char *key, npl_gguf_vtype et, int *bad, char *err, size_t errlen) {
    *bad = 0;
    int64_t i = npl_gguf_find_key(g, key);
    if (i < 0) return -1;
    if (npl_gguf_kv_type(g, i) != NPL_GGUF_ARRAY) {
        fail(err, errlen, g, key, "expected an array, found %s", npl_gguf_vtype_name(npl_gguf_kv_type(g, i)));
        *bad = 1;
        return -1;
    }
    if (npl_gguf_arr_type(g, i) != et) {
        fail(err, errlen, g, key, "expected an array of %s, found an array of %s",
             npl_gguf_vtype_name(et), npl_gguf_vtype_name(npl_gguf_arr_type(g, i)));
        *bad = 1;
        return -1;
    }
    return i;
}

/* ------------------------------------------------------------------ */
/* llama.cpp's special-token detection by text                         */

static const char *const k_eot_texts[] = {
    "<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>", "<|end_of_text|>",
    "<EOT>", "_<EOT>", "[EOT]", "<\xef\xbd\x9c" "end\xe2\x96\x81of\xe2\x96\x81sentence\xef\xbd\x9c>",
    "<end_of_utterance>", NULL };
static const char *const k_eom_texts[] = { "<|eom_id|>", NULL };
static const char *const k_fim_pre_texts[] = {
    "<|fim_prefix|>", "<fim-prefix>", "<fim_prefix>", "<\xef\xbd\x9c" "fim\xe2\x96\x81" "begin\xef\xbd\x9c>",
    "<PRE>", "\xe2\x96\x81<PRE>", "<|code_prefix|>", "<|prefix|>", NULL };
static const char *const k_fim_suf_texts[] = {
    "<|fim_suffix|>", "<fim-suffix>", "<fim_suffix>", "<\xef\xbd\x9c" "fim\xe2\x96\x81hole\xef\xbd\x9c>",
    "<SUF>", "\xe2\x96\x81<SUF>", "<|code_suffix|>", "<|suffix|>", NULL };
static const char *const k_fim_mid_texts[] = {
    "<|fim_middle|>", "<fim-middle>", "<fim_middle>", "<\xef\xbd\x9c" "fim\xe2\x96\x81" "end\xef\xbd\x9c>",
    "<MID>", "\xe2\x96\x81<MID>", "<|code_middle|>", "<|middle|>", NULL };
static const char *const k_fim_pad_texts[] = { "<|fim_pad|>", "<fim-pad>", "<fim_pad>", "<PAD>", "[PAD]", NULL };
static const char *const k_fim_rep_texts[] = { "<|fim_repo|>", "<|repo_name|>", "<fim-repo>", "<REPO>", "<reponame>", NULL };
static const char *const k_fim_sep_texts[] = { "<|file_sep|>", NULL };
static const char *const k_eog_texts[] = {
    "<|eot_id|>", "<|im_end|>", "<|end|>", "<|return|>", "<|call|>", "<|flush|>", "<|calls|>",
    "<end_of_turn>", "<|endoftext|>", "</s>", "<|eom_id|>", "<EOT>", "_<EOT>", "[EOT]", "[EOS]",
    "<|end_of_text|>", "<end_of_utterance>", "<eos>", "<turn|>", "<|tool_response>",
    "<\xef\xbd\x9c" "end\xe2\x96\x81of\xe2\x96\x81sentence\xef\xbd\x9c>", "[e~[", NULL };
static const char *const k_user_defined_texts[] = { "<|channel|>", "<|message|>", "<|start|>", "<|constrain|>", NULL };

static int32_t find_cstr(const npl_tokenizer *t, const char *s) { return npl_tok_lookup(t, s, strlen(s)); }

/* If *id is unset, the first text of the list that is a token. (llama.cpp
 * takes the first in its hash-map order; which one that is differs between
 * builds, and only matters when a vocabulary has several of the texts:
 * every one of them is end-of-generation anyway.) */
static void detect_by_text(npl_tokenizer *t, int32_t *id, const char *const *texts) {
    if (*id >= 0) return;
    for (int k = 0; texts[k]; k++) {
        int32_t i = find_cstr(t, texts[k]);
        if (i >= 0) {
            *id = i;
            t->tok[i].attr |= NPL_TOKEN_ATTR_CONTROL;
            return;
        }
    }
}

static int text_is(const npl_tokenizer *t, int32_t id, const char *s) {
    size_t n = strlen(s);
    return t->tok[id].len == n && memcmp(npl_tok_text(t, id), s, n) == 0;
}

static void detect_special(npl_tokenizer *t, int32_t fim_pad, int32_t fim_rep, int32_t fim_sep,
                           int32_t fim_pre, int32_t fim_suf, int32_t fim_mid) {
    detect_by_text(t, &t->eot, k_eot_texts);
    detect_by_text(t, &t->eom, k_eom_texts);
    detect_by_text(t, &fim_pre, k_fim_pre_texts);
    detect_by_text(t, &fim_suf, k_fim_suf_texts);
    detect_by_text(t, &fim_mid, k_fim_mid_texts);
    detect_by_text(t, &fim_pad, k_fim_pad_texts);
    detect_by_text(t, &fim_rep, k_fim_rep_texts);
    detect_by_text(t, &fim_sep, k_fim_sep_texts);

    /* control tokens whose text says "unused" */
    for (int32_t i = 0; i < t->n_vocab; i++) {
        npl_tok_entry *e = &t->tok[i];
        if ((e->attr & NPL_TOKEN_ATTR_CONTROL) && !(e->attr & NPL_TOKEN_ATTR_UNUSED) &&
            memmem(t->arena + e->off, e->len, "unused", 6))
            e->attr |= NPL_TOKEN_ATTR_UNUSED;
    }

    /* end-of-generation set */
    if (fim_pad >= 0) t->tok[fim_pad].eog = 1;
    if (fim_rep >= 0) t->tok[fim_rep].eog = 1;
    if (fim_sep >= 0) t->tok[fim_sep].eog = 1;
    for (int k = 0; k_eog_texts[k]; k++) {
        int32_t i = find_cstr(t, k_eog_texts[k]);
        if (i < 0) continue;
        t->tok[i].eog = 1;
        t->tok[i].attr |= NPL_TOKEN_ATTR_CONTROL;
    }
    for (int k = 0; k_user_defined_texts[k]; k++) {
        int32_t i = find_cstr(t, k_user_defined_texts[k]);
        if (i >= 0) t->tok[i].attr = NPL_TOKEN_ATTR_USER_DEFINED;
    }
    if (t->eos >= 0) t->tok[t->eos].eog = 1;
    if (t->eot >= 0) t->tok[t->eot].eog = 1;
    if (t->eom >= 0) t->tok[t->eom].eog = 1;

    /* o200k_harmony / solar-open: "<|end|>" is not end of generation there */
    int has_return = 0, has_call = 0, has_flush = 0;
    int32_t end_id = -1;
    int has_normal_s_marker = 0;
    int32_t s_id = -1;
    for (int32_t i = 0; i < t->n_vocab; i++) {
        if (!t->tok[i].eog) continue;
        if (text_is(t, i, "<|return|>")) has_return = 1;
        else if (text_is(t, i, "<|call|>") || text_is(t, i, "<|calls|>")) has_call = 1;
        else if (text_is(t, i, "<|flush|>")) has_flush = 1;
        else if (text_is(t, i, "<|end|>")) end_id = i;
    }
    if (end_id >= 0 && ((has_return && has_call) || (has_call && has_flush))) {
        t->tok[end_id].eog = 0;
        t->tok[end_id].attr = NPL_TOKEN_ATTR_USER_DEFINED;
    }
    for (int32_t i = 0; i < t->n_vocab; i++) {
        if (!t->tok[i].eog) continue;
        if (text_is(t, i, "<|tool_response>") || text_is(t, i, "<|plamo:eos|>")) has_normal_s_marker = 1;
        else if (text_is(t, i, "</s>")) s_id = i;
    }
    if (has_normal_s_marker && s_id >= 0) {
        t->tok[s_id].eog = 0;
        t->tok[s_id].attr = NPL_TOKEN_ATTR_NORMAL;
    }
}

/* ------------------------------------------------------------------ */
/* special-token groups (partitioning the input, see tokenizer.c)       */

static int cmp_special(const void *a, const void *b, void *ctx) {
    const npl_tokenizer *t = (const npl_tokenizer *)ctx;
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    if (t->tok[x].len != t->tok[y].len) return t->tok[x].len > t->tok[y].len ? -1 : 1;
    return (x > y) - (x < y);
}

static int build_special_groups(npl_tokenizer *t) {
    const uint16_t sp = NPL_TOKEN_ATTR_CONTROL | NPL_TOKEN_ATTR_USER_DEFINED | NPL_TOKEN_ATTR_UNKNOWN;
    int32_t n = 0;
    for (int32_t i = 0; i < t->n_vocab; i++) n += (t->tok[i].attr & sp) != 0;
    if (n == 0) return 0;
    int32_t *ids = malloc(sizeof(int32_t) * (size_t)n);
    if (!ids) return -1;
    n = 0;
    for (int32_t i = 0; i < t->n_vocab; i++) if (t->tok[i].attr & sp) ids[n++] = i;
    qsort_r(ids, (size_t)n, sizeof(int32_t), cmp_special, t);

    int ng = 0;
    for (int32_t i = 0; i < n; i++) if (i == 0 || t->tok[ids[i]].len != t->tok[ids[i - 1]].len) ng++;
    t->groups = calloc((size_t)ng, sizeof(*t->groups));
    if (!t->groups) { free(ids); return -1; }
    t->n_groups = ng;

    int gi = -1;
    for (int32_t i = 0, j; i < n; i = j) {
        uint32_t len = t->tok[ids[i]].len;
        for (j = i; j < n && t->tok[ids[j]].len == len; j++) {}
        npl_tok_special_group *gr = &t->groups[++gi];
        gr->len = len;
        uint32_t slots = pow2_at_least((uint64_t)(j - i) * 2);
        gr->mask = slots - 1;
        gr->keys = calloc(slots, sizeof(uint64_t));
        gr->ids = malloc(sizeof(int32_t) * slots);
        if (!gr->keys || !gr->ids) { free(ids); return -1; }
        for (uint32_t s = 0; s < slots; s++) gr->ids[s] = -1;
        uint64_t pw = 1;
        for (uint32_t k = 0; k < len; k++) pw *= NPL_TOK_ROLL;
        gr->pow = pw;
        /* ids in priority order: the lowest id wins a slot collision
         * only through probing order, never by replacing */
        for (int32_t k = i; k < j; k++) {
            const unsigned char *s = (const unsigned char *)npl_tok_text(t, ids[k]);
            uint64_t h = 0;
            for (uint32_t c = 0; c < len; c++) h = h * NPL_TOK_ROLL + s[c];
            uint32_t slot = (uint32_t)(h ^ (h >> 29)) & gr->mask;
            while (gr->ids[slot] >= 0) slot = (slot + 1) & gr->mask;
            gr->keys[slot] = h;
            gr->ids[slot] = ids[k];
            gr->first[s[0] >> 3] |= (uint8_t)(1u << (s[0] & 7));
            t->special_first[s[0] >> 3] |= (uint8_t)(1u << (s[0] & 7));
        }
    }
    free(ids);
    return 0;
}

/* ------------------------------------------------------------------ */
/* GPT-2 byte <-> unicode                                              */

static void build_byte_tables(npl_tokenizer *t) {
    int n = 0;
    for (int i = 0; i < 0x144; i++) t->byte_dec[i] = -1;
    for (int b = 0; b < 256; b++) {
        int printable = (b >= 0x21 && b <= 0x7e) || (b >= 0xa1 && b <= 0xac) || (b >= 0xae && b <= 0xff);
        uint32_t cpt = printable ? (uint32_t)b : (uint32_t)(256 + n++);
        char buf[4];
        int len = npl_utf8_encode(cpt, buf);
        memcpy(t->byte_enc[b], buf, (size_t)len);
        t->byte_enc_len[b] = (uint8_t)len;
        t->byte_dec[cpt] = (int16_t)b;
    }
}

/* ------------------------------------------------------------------ */
/* load                                                                */

void npl_tokenizer_free(npl_tokenizer *t) {
    if (!t) return;
    npl_pre_free(t);
    for (int i = 0; i < t->n_groups; i++) { free(t->groups[i].keys); free(t->groups[i].ids); }
    free(t->groups);
    free(t->tok);
    free(t->arena);
    free(t->tok_slots);
    free(t->merges);
    free(t->merge_slots);
    free(t);
}

npl_tokenizer *npl_tokenizer_load(const npl_gguf *g, char *err, size_t errlen) {
    if (err && errlen) err[0] = '\0';
    if (!g) { fail(err, errlen, NULL, "tokenizer", "no GGUF"); return NULL; }
    npl_tokenizer *t = calloc(1, sizeof(*t));
    if (!t) { fail(err, errlen, g, "tokenizer", "out of memory"), npl_status_note(NPL_ERR_MEMORY); return NULL; }
    t->bos = t->eos = t->eot = t->eom = t->unk = t->pad = t->sep = -1;
    int bad;

    /* ---- model / pre ---- */
    npl_gguf_str model, pre = { NULL, 0 };
    int rc = npl_gguf_get_str(g, "tokenizer.ggml.model", &model);
    if (rc == -1) { fail(err, errlen, g, "tokenizer.ggml.model", "missing"); goto fail; }
    if (rc != 0) { fail(err, errlen, g, "tokenizer.ggml.model", "expected a string"); goto fail; }
    rc = npl_gguf_get_str(g, "tokenizer.ggml.pre", &pre);
    if (rc == -2) { fail(err, errlen, g, "tokenizer.ggml.pre", "expected a string"); goto fail; }
    if (rc == -1) pre.len = 0;

    int32_t def_bos = -1, def_eos = -1, def_unk = -1, def_sep = -1, def_pad = -1;
    int pre_flags = 0;
    if (model.len == 5 && memcmp(model.ptr, "llama", 5) == 0) {
        t->type = NPL_VOCAB_SPM;
        def_bos = 1; def_eos = 2; def_unk = 0;
        t->add_space_prefix = 1; t->add_bos = 1;
    } else if ((model.len == 4 && memcmp(model.ptr, "gpt2", 4) == 0) ||
               (model.len == 10 && memcmp(model.ptr, "whitespace", 10) == 0)) {
        /* "whitespace" is gpt2 whose session drops whitespace and lowers the rest first */
        t->type = NPL_VOCAB_BPE;
        t->ws_model = model.len == 10;
        def_bos = 11; def_eos = 11;
        t->clean_spaces = 1;
        /* llama.cpp takes a missing name as "default" (with a warning) */
        int pf = 0;
        t->pre_exprs = pre.len == 0 ? npl_pre_default() : npl_pre_find(pre.ptr, pre.len, &pf);
        if (!t->pre_exprs) {
            char known[2000];
            npl_pre_known_names(known, sizeof(known));
            fail(err, errlen, g, "tokenizer.ggml.pre", "unsupported pre-tokenizer \"%.*s\" (known: %s)",
                 (int)(pre.len > 64 ? 64 : pre.len), pre.ptr, known);
            goto fail;
        }
        if (npl_pre_flag(pf, NPL_PRE_NO_CLEAN)) t->clean_spaces = 0;
        if (npl_pre_flag(pf, NPL_PRE_IGNORE_MERGES)) t->ignore_merges = 1;
        if (npl_pre_flag(pf, NPL_PRE_ADD_BOS)) t->add_bos = 1;
        if (npl_pre_flag(pf, NPL_PRE_NO_BOS)) def_bos = -1;
        pre_flags = pf;
    } else if (model.len == 6 && memcmp(model.ptr, "gemma4", 6) == 0) {
        /* llama.cpp's gemma4: the gpt2 model with tokenizer.ggml.pre taken
         * as "gemma4" whatever it says (BPE merges over raw UTF-8 with SPM's
         * "▁" for spaces, <0xXX> byte tokens, runs of newlines and of the
         * rest, BOS always added), and no default special ids */
        t->type = NPL_VOCAB_BPE;
        t->clean_spaces = 1;
        t->pre_exprs = npl_pre_find("gemma4", 6, &pre_flags);
    } else if (model.len == 4 && memcmp(model.ptr, "bert", 4) == 0) {
        /* llama.cpp's WPM defaults: [CLS] 101 (as BOS), [UNK] 100, [SEP] 102, [PAD] 0;
         * tokenizer.ggml.pre is not read */
        t->type = NPL_VOCAB_WPM;
        def_bos = 101; def_unk = 100; def_sep = 102; def_pad = 0;
        t->add_bos = 1; t->clean_spaces = 1;
    } else {
        fail(err, errlen, g, "tokenizer.ggml.model", "unsupported tokenizer model \"%.*s\"", (int)(model.len > 64 ? 64 : model.len), model.ptr);
        goto fail;
    }

    t->escape_ws = npl_pre_flag(pre_flags, NPL_PRE_ESCAPE_WS);
    t->raw_bytes = npl_pre_flag(pre_flags, NPL_PRE_RAW_BYTES);
    t->gemma4_nl = npl_pre_flag(pre_flags, NPL_PRE_GEMMA4);

    /* ---- tokens, scores, types ---- */
    int64_t ti = find_array(g, "tokenizer.ggml.tokens", NPL_GGUF_STRING, &bad, err, errlen);
    if (bad) goto fail;
    if (ti < 0) { fail(err, errlen, g, "tokenizer.ggml.tokens", "missing"); goto fail; }
    uint64_t n = npl_gguf_arr_n(g, ti);
    if (n == 0) { fail(err, errlen, g, "tokenizer.ggml.tokens", "empty vocabulary"); goto fail; }
    if (n > (uint64_t)INT32_MAX / 4) { fail(err, errlen, g, "tokenizer.ggml.tokens", "%llu tokens is too many", (unsigned long long)n); goto fail; }
    t->n_vocab = (int32_t)n;

    /* f32 only: llama.cpp reads the array's bytes as floats whatever they are */
    int64_t si = find_array(g, "tokenizer.ggml.scores", NPL_GGUF_FLOAT32, &bad, err, errlen);
    if (bad) goto fail;
    if (si >= 0) {
        if (npl_gguf_arr_n(g, si) != n) {
            fail(err, errlen, g, "tokenizer.ggml.scores", "%llu scores for %llu tokens",
                 (unsigned long long)npl_gguf_arr_n(g, si), (unsigned long long)n);
            goto fail;
        }
    }
    int64_t yi = find_array(g, "tokenizer.ggml.token_type", NPL_GGUF_INT32, &bad, err, errlen);
    if (bad) goto fail;
    if (yi >= 0 && npl_gguf_arr_n(g, yi) != n) {
        fail(err, errlen, g, "tokenizer.ggml.token_type", "%llu types for %llu tokens",
             (unsigned long long)npl_gguf_arr_n(g, yi), (unsigned long long)n);
        goto fail;
    }
    const unsigned char *scores = si >= 0 ? npl_gguf_arr_data(g, si) : NULL;
    const unsigned char *types = yi >= 0 ? npl_gguf_arr_data(g, yi) : NULL;
    if ((si >= 0 && !scores) || (yi >= 0 && !types)) {
        fail(err, errlen, g, si >= 0 && !scores ? "tokenizer.ggml.scores" : "tokenizer.ggml.token_type", "unreadable array");
        goto fail;
    }

    /* merges (BPE) */
    int64_t mi = -1;
    uint64_t n_merges = 0;
    if (t->type == NPL_VOCAB_BPE) {
        mi = find_array(g, "tokenizer.ggml.merges", NPL_GGUF_STRING, &bad, err, errlen);
        if (bad) goto fail;
        /* llama.cpp lets kimi-k2 go without merges (every code point its own symbol) */
        if (mi < 0 && !npl_pre_flag(pre_flags, NPL_PRE_NO_MERGES_OK)) {
            fail(err, errlen, g, "tokenizer.ggml.merges", "missing (required for gpt2 vocabularies)");
            goto fail;
        }
        n_merges = mi < 0 ? 0 : npl_gguf_arr_n(g, mi);
        if (n_merges > (uint64_t)INT32_MAX / 4) { fail(err, errlen, g, "tokenizer.ggml.merges", "too many merges"); goto fail; }
    }

    /* arena size */
    uint64_t arena = 0;
    for (uint64_t i = 0; i < n; i++) {
        npl_gguf_str s = npl_gguf_arr_str(g, ti, i);
        if (!s.ptr && s.len) { fail(err, errlen, g, "tokenizer.ggml.tokens", "unreadable string at index %llu", (unsigned long long)i); goto fail; }
        arena += (s.len ? s.len : 32) + 1;
    }
    for (uint64_t i = 0; i < n_merges; i++) arena += npl_gguf_arr_str(g, mi, i).len + 2;
    if (arena >= UINT32_MAX) { fail(err, errlen, g, "tokenizer.ggml.tokens", "vocabulary text too large"); goto fail; }

    t->tok = calloc((size_t)n, sizeof(*t->tok));
    t->arena = malloc((size_t)arena + 1);
    uint32_t tslots = pow2_at_least(n * 2);
    t->tok_slots = malloc(sizeof(npl_tok_slot) * tslots);
    if (!t->tok || !t->arena || !t->tok_slots) { fail(err, errlen, g, "tokenizer", "out of memory"), npl_status_note(NPL_ERR_MEMORY); goto fail; }
    t->tok_mask = tslots - 1;
    for (uint32_t i = 0; i < tslots; i++) t->tok_slots[i].val = -1;

    size_t ap = 0;
    for (uint64_t i = 0; i < n; i++) {
        npl_gguf_str s = npl_gguf_arr_str(g, ti, i);
        npl_tok_entry *e = &t->tok[i];
        char q[256];
        size_t bad_at = npl_tok_utf8_invalid_at((const unsigned char *)s.ptr, s.len);
        if (bad_at < s.len) { /* GGUF strings are UTF-8, and so are both vocabulary kinds' texts */
            npl_tok_quote(s.ptr, s.len, q, sizeof q);
            fail_at(err, errlen, g, "tokenizer.ggml.tokens", i, "text %s is not valid UTF-8 (byte %zu)", q, bad_at);
            goto fail;
        }
        e->off = (uint32_t)ap;
        if (s.len == 0) {
            int w = snprintf(t->arena + ap, 32, "[EMPTY_%llu]", (unsigned long long)i);
            e->len = (uint32_t)w;
        } else {
            memcpy(t->arena + ap, s.ptr, s.len);
            e->len = (uint32_t)s.len;
        }
        t->arena[ap + e->len] = '\0';
        ap += e->len + 1;
        if (e->len > t->max_token_len) t->max_token_len = e->len;

        if (scores) {
            memcpy(&e->score, scores + 4 * i, 4);
            if (isnan(e->score)) { /* NaN has no merge order */
                fail_at(err, errlen, g, "tokenizer.ggml.scores", i, "NaN");
                goto fail;
            }
        }
        e->attr = NPL_TOKEN_ATTR_NORMAL;
        if (types) {
            int32_t ty;
            memcpy(&ty, types + 4 * i, 4);
            switch (ty) {
            case 0: e->attr = 0; break;
            case 1: e->attr = NPL_TOKEN_ATTR_NORMAL; break;
            case 2: e->attr = NPL_TOKEN_ATTR_UNKNOWN; break;
            case 3: e->attr = NPL_TOKEN_ATTR_CONTROL; break;
            case 4: e->attr = NPL_TOKEN_ATTR_USER_DEFINED; break;
            case 5: e->attr = NPL_TOKEN_ATTR_UNUSED; break;
            case 6: e->attr = NPL_TOKEN_ATTR_BYTE; break;
            default:
                fail_at(err, errlen, g, "tokenizer.ggml.token_type", i, "type %d is not one of 0..6", (int)ty);
                goto fail;
            }
        }
        if ((e->attr & NPL_TOKEN_ATTR_BYTE) && !npl_tok_is_byte_text(t->arena + e->off, e->len)) {
            npl_tok_quote(t->arena + e->off, e->len, q, sizeof q);
            fail_at(err, errlen, g, "tokenizer.ggml.tokens", i, "byte token %s is not <0xHH>", q);
            goto fail;
        }
    }
    /* text -> id; duplicates make llama.cpp abort, so they are an error */
    for (int32_t i = 0; i < t->n_vocab; i++) {
        const npl_tok_entry *e = &t->tok[i];
        uint64_t h = npl_tok_hash(t->arena + e->off, e->len);
        uint32_t tag = (uint32_t)(h >> 32), s;
        for (s = (uint32_t)h & t->tok_mask; t->tok_slots[s].val >= 0; s = (s + 1) & t->tok_mask) {
            const npl_tok_entry *o = &t->tok[t->tok_slots[s].val];
            if (t->tok_slots[s].tag == tag && o->len == e->len && memcmp(t->arena + o->off, t->arena + e->off, e->len) == 0) {
                fail_at(err, errlen, g, "tokenizer.ggml.tokens", (uint64_t)i, "the same text as token %d",
                        (int)t->tok_slots[s].val);
                goto fail;
            }
        }
        t->tok_slots[s].tag = tag;
        t->tok_slots[s].val = i;
    }

    /* merges: "left right", split at the first space after the first byte;
     * a pair listed twice keeps its first rank. Both halves and their
     * concatenation must be tokens (Hugging Face tokenizers refuse a BPE
     * otherwise); llama.cpp keeps an entry without a space as a pair that
     * never matches, which here is an error too. */
    if (t->type == NPL_VOCAB_BPE) {
        t->merges = malloc(sizeof(npl_tok_merge) * (n_merges ? n_merges : 1));
        uint32_t mslots = pow2_at_least(n_merges * 2);
        t->merge_slots = malloc(sizeof(npl_tok_slot) * mslots);
        if (!t->merges || !t->merge_slots) { fail(err, errlen, g, "tokenizer", "out of memory"), npl_status_note(NPL_ERR_MEMORY); goto fail; }
        t->merge_mask = mslots - 1;
        for (uint32_t i = 0; i < mslots; i++) t->merge_slots[i].val = -1;
        for (uint64_t i = 0; i < n_merges; i++) {
            npl_gguf_str s = npl_gguf_arr_str(g, mi, i);
            npl_tok_merge *m = &t->merges[i];
            memset(m, 0, sizeof(*m));
            if (!s.ptr && s.len) { fail(err, errlen, g, "tokenizer.ggml.merges", "unreadable string at index %llu", (unsigned long long)i); goto fail; }
            char q[256];
            npl_tok_quote(s.ptr, s.len, q, sizeof q);
            size_t bad_at = npl_tok_utf8_invalid_at((const unsigned char *)s.ptr, s.len);
            if (bad_at < s.len) {
                fail_at(err, errlen, g, "tokenizer.ggml.merges", i, "%s is not valid UTF-8 (byte %zu)", q, bad_at);
                goto fail;
            }
            const char *sp = s.len > 1 ? memchr(s.ptr + 1, ' ', s.len - 1) : NULL;
            size_t ln = sp ? (size_t)(sp - s.ptr) : 0, rn = sp ? s.len - ln - 1 : 0;
            if (!sp || rn == 0) {
                fail_at(err, errlen, g, "tokenizer.ggml.merges", i, "%s is not two texts separated by a space", q);
                goto fail;
            }
            int left_ok = npl_tok_lookup(t, s.ptr, ln) >= 0, right_ok = npl_tok_lookup(t, sp + 1, rn) >= 0;
            int joined_ok = 0; /* a result longer than any token is not one */
            if (ln + rn <= t->max_token_len) {
                char small[256], *jb = ln + rn <= sizeof small ? small : malloc(ln + rn);
                if (!jb) { fail(err, errlen, g, "tokenizer", "out of memory"), npl_status_note(NPL_ERR_MEMORY); goto fail; }
                memcpy(jb, s.ptr, ln);
                memcpy(jb + ln, sp + 1, rn);
                joined_ok = npl_tok_lookup(t, jb, ln + rn) >= 0;
                if (jb != small) free(jb);
            }
            if (!left_ok || !right_ok || !joined_ok) {
                fail_at(err, errlen, g, "tokenizer.ggml.merges", i, "%s: its %s is not a token", q,
                        !left_ok ? "left half" : !right_ok ? "right half" : "result");
                goto fail;
            }
            m->loff = (uint32_t)ap; m->llen = (uint32_t)ln;
            memcpy(t->arena + ap, s.ptr, ln); t->arena[ap + ln] = '\0'; ap += ln + 1;
            m->roff = (uint32_t)ap; m->rlen = (uint32_t)rn;
            memcpy(t->arena + ap, sp + 1, rn); t->arena[ap + rn] = '\0'; ap += rn + 1;
            if (ln + rn > t->max_merge_len) t->max_merge_len = (uint32_t)(ln + rn);
            uint64_t h = pair_hash(t->arena + m->loff, ln, t->arena + m->roff, rn);
            uint32_t tag = (uint32_t)(h >> 32), sl;
            int dup = 0;
            for (sl = (uint32_t)h & t->merge_mask; t->merge_slots[sl].val >= 0; sl = (sl + 1) & t->merge_mask) {
                const npl_tok_merge *o = &t->merges[t->merge_slots[sl].val];
                if (t->merge_slots[sl].tag == tag && o->llen == ln && o->rlen == rn &&
                    memcmp(t->arena + o->loff, t->arena + m->loff, ln) == 0 &&
                    memcmp(t->arena + o->roff, t->arena + m->roff, rn) == 0) { dup = 1; break; }
            }
            if (dup) continue;
            t->merge_slots[sl].tag = tag;
            t->merge_slots[sl].val = (int32_t)i;
        }
        t->n_merges = (int32_t)n_merges;
    }
    t->arena_len = ap;

    /* ---- special ids and flags ---- */
    t->bos = def_bos < t->n_vocab ? def_bos : -1;
    t->eos = def_eos < t->n_vocab ? def_eos : -1;
    t->unk = def_unk < t->n_vocab ? def_unk : -1;
    t->sep = def_sep < t->n_vocab ? def_sep : -1;
    t->pad = def_pad < t->n_vocab ? def_pad : -1;
    int32_t fim_pre = -1, fim_suf = -1, fim_mid = -1, fim_pad = -1, fim_rep = -1, fim_sep = -1, mask = -1, cls = -1;
    struct { const char *key; int32_t *id; } ids[] = {
        { "tokenizer.ggml.bos_token_id", &t->bos },
        { "tokenizer.ggml.eos_token_id", &t->eos },
        { "tokenizer.ggml.eot_token_id", &t->eot },
        { "tokenizer.ggml.eom_token_id", &t->eom },
        { "tokenizer.ggml.unknown_token_id", &t->unk },
        { "tokenizer.ggml.seperator_token_id", &t->sep },
        { "tokenizer.ggml.padding_token_id", &t->pad },
        { "tokenizer.ggml.cls_token_id", &cls },
        { "tokenizer.ggml.mask_token_id", &mask },
        { "tokenizer.ggml.fim_pre_token_id", &fim_pre },
        { "tokenizer.ggml.fim_suf_token_id", &fim_suf },
        { "tokenizer.ggml.fim_mid_token_id", &fim_mid },
        { "tokenizer.ggml.fim_pad_token_id", &fim_pad },
        { "tokenizer.ggml.fim_rep_token_id", &fim_rep },
        { "tokenizer.ggml.fim_sep_token_id", &fim_sep },
        { "tokenizer.ggml.prefix_token_id", &fim_pre },
        { "tokenizer.ggml.suffix_token_id", &fim_suf },
        { "tokenizer.ggml.middle_token_id", &fim_mid },
    };
    for (size_t k = 0; k < sizeof(ids) / sizeof(ids[0]); k++)
        if (read_id(g, ids[k].key, t->n_vocab, ids[k].id, err, errlen)) goto fail;
    if (read_bool(g, "tokenizer.ggml.add_bos_token", &t->add_bos, err, errlen)) goto fail;
    if (read_bool(g, "tokenizer.ggml.add_eos_token", &t->add_eos, err, errlen)) goto fail;
    if (read_bool(g, "tokenizer.ggml.add_space_prefix", &t->add_space_prefix, err, errlen)) goto fail;
    if (t->gemma4_nl) t->add_bos = 1; /* llama.cpp overrides add_bos_token false for the GEMMA4 pre type */
    t->wpm_lowercase = !npl_pre_flag(pre_flags, NPL_PRE_NO_LOWERCASE);   /* llama.cpp: strip_accents defaults to lowercase */
    if (read_bool(g, "tokenizer.ggml.normalizer.lowercase", &t->wpm_lowercase, err, errlen)) goto fail;
    t->wpm_strip_accents = t->wpm_lowercase;
    if (read_bool(g, "tokenizer.ggml.normalizer.strip_accents", &t->wpm_strip_accents, err, errlen)) goto fail;
    if (t->add_bos && t->bos < 0) { fail(err, errlen, g, "tokenizer.ggml.add_bos_token", "set, but there is no BOS token"); goto fail; }
    if (t->add_eos && t->eos < 0) { fail(err, errlen, g, "tokenizer.ggml.add_eos_token", "set, but there is no EOS token"); goto fail; }

    detect_special(t, fim_pad, fim_rep, fim_sep, fim_pre, fim_suf, fim_mid);

    /* ---- derived tables ---- */
    for (int b = 0; b < 256; b++) {
        char hex[7];
        snprintf(hex, sizeof(hex), "<0x%02X>", b);
        int32_t id = npl_tok_lookup(t, hex, 6);
        if (id < 0) { char c = (char)b; id = npl_tok_lookup(t, &c, 1); }
        t->byte_to_id[b] = id;
    }
    build_byte_tables(t);
    if (t->raw_bytes) /* raw UTF-8: every byte stands for itself */
        for (int b = 0; b < 256; b++) {
            t->byte_enc[b][0] = (char)b;
            t->byte_enc_len[b] = 1;
        }
    if (build_special_groups(t)) { fail(err, errlen, g, "tokenizer", "out of memory"), npl_status_note(NPL_ERR_MEMORY); goto fail; }
    if (t->type == NPL_VOCAB_BPE) {
        char msg[160];
        if (npl_pre_init(t, msg, sizeof(msg))) { fail(err, errlen, g, "tokenizer.ggml.pre", "%s", msg); goto fail; }
    }
    return t;

fail:
    npl_tokenizer_free(t);
    return NULL;
}

/* ------------------------------------------------------------------ */
/* accessors                                                           */

npl_vocab_type npl_tokenizer_type(const npl_tokenizer *t) { return t->type; }
int32_t npl_tokenizer_n_vocab(const npl_tokenizer *t) { return t ? t->n_vocab : 0; }
int32_t npl_tokenizer_bos(const npl_tokenizer *t) { return t->bos; }
int32_t npl_tokenizer_eos(const npl_tokenizer *t) { return t->eos; }
int32_t npl_tokenizer_eot(const npl_tokenizer *t) { return t->eot; }
int32_t npl_tokenizer_unk(const npl_tokenizer *t) { return t->unk; }
int32_t npl_tokenizer_pad(const npl_tokenizer *t) { return t->pad; }
int npl_tokenizer_add_bos(const npl_tokenizer *t) { return t->add_bos; }
int npl_tokenizer_add_eos(const npl_tokenizer *t) { return t->add_eos; }

int npl_tokenizer_is_eog(const npl_tokenizer *t, int32_t id) {
    return t && id >= 0 && id < t->n_vocab && t->tok[id].eog;
}

int npl_tokenizer_token_attr(const npl_tokenizer *t, int32_t id) {
    if (!t || id < 0 || id >= t->n_vocab) return -1;
    return t->tok[id].attr;
}

const char *npl_tokenizer_token_text(const npl_tokenizer *t, int32_t id, size_t *len) {
    if (!t || id < 0 || id >= t->n_vocab) { if (len) *len = 0; return NULL; }
    if (len) *len = t->tok[id].len;
    return npl_tok_text(t, id);
}

int32_t npl_tokenizer_find(const npl_tokenizer *t, const char *text, size_t len) {
    if (!t || (!text && len)) return -1;
    return npl_tok_lookup(t, text, len);
}

