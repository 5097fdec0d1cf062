/* Tokenizer entry points: special-token partition, encode, decode.
 *
 * Encoding follows llama.cpp's llama_vocab::impl::tokenize: the input is
 * first cut at the text of special tokens (longest first), then every raw
 * fragment goes through the SPM or BPE session, and BOS/EOS are added as
 * the vocabulary says. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "llm/tokenizer_impl.h"

/* ------------------------------------------------------------------ */
/* small containers                                                    */

int npl_tok_out_push(npl_tok_out *o, int32_t id) {
    if (o->n == o->cap) {
        size_t nc = o->cap ? o->cap * 2 : 64;
        int32_t *nv = realloc(o->v, nc * sizeof(int32_t));
        if (!nv) { o->oom = 1; return -1; }
        o->v = nv;
        o->cap = nc;
    }
    o->v[o->n++] = id;
    return 0;
}

int npl_tok_tree_reset(npl_tok_tree *tr, size_t n) {
    size_t leaves = 1;
    while (leaves < n) leaves <<= 1;
    if (2 * leaves > tr->cap) {
        uint64_t *nv = realloc(tr->v, 2 * leaves * sizeof(uint64_t));
        if (!nv) return -1;
        tr->v = nv;
        tr->cap = 2 * leaves;
    }
    tr->leaves = leaves;
    memset(tr->v, 0xff, 2 * leaves * sizeof(uint64_t));
    return 0;
}

void npl_tok_tree_build(npl_tok_tree *tr) {
    for (size_t j = tr->leaves - 1; j >= 1; j--) {
        uint64_t a = tr->v[2 * j], b = tr->v[2 * j + 1];
        tr->v[j] = a < b ? a : b;
    }
}

void npl_tok_tree_set(npl_tok_tree *tr, size_t i, uint64_t prio) {
    size_t j = tr->leaves + i;
    tr->v[j] = prio;
    for (j >>= 1; j >= 1; j >>= 1) {
        uint64_t a = tr->v[2 * j], b = tr->v[2 * j + 1], m = a < b ? a : b;
        if (tr->v[j] == m) break;
        tr->v[j] = m;
    }
}

/* ------------------------------------------------------------------ */
/* special-token partition                                             */
/*
 * llama.cpp (tokenizer_st_partition) takes the special tokens longest
 * first and, for each, splits every remaining raw fragment at each
 * leftmost non-overlapping occurrence. Equivalently: an occurrence is
 * accepted when it overlaps nothing accepted before it in (token order,
 * position) order. Here tokens of one length form a group; a group is
 * scanned once with a rolling hash, its candidates are taken in (id,
 * position) order. Since every accepted span is at least as long as the
 * candidate, overlap is decided by the candidate's two end bytes alone,
 * so the whole pass costs O(n) per distinct special-token length.
 * (Same-length tokens that overlap each other are ordered by id; llama.cpp
 * leaves that order to an unstable sort.) */

typedef struct { size_t pos; int32_t id; } npl_tok_hit;

static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}
static int cmp_hit(const void *a, const void *b) {
    const npl_tok_hit *x = a, *y = b;
    return (x->pos > y->pos) - (x->pos < y->pos);
}

static inline int bit(const uint8_t *set, unsigned char c) { return set[c >> 3] >> (c & 7) & 1; }

/* Where control tokens may be recognized: nowhere (parse_special = 0),
 * everywhere, or outside the plain ranges. */
typedef struct {
    int parse_special;
    const npl_tok_span *plain;
    size_t n_plain;
} npl_tok_scope;

/* Does [p, p + L) overlap a plain range? (binary search: the first range
 * that ends after p) */
static int overlaps_plain(const npl_tok_scope *sc, size_t p, size_t L) {
    size_t lo = 0, hi = sc->n_plain;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (sc->plain[mid].off + sc->plain[mid].len <= p) lo = mid + 1;
        else hi = mid;
    }
    return lo < sc->n_plain && sc->plain[lo].off < p + L;
}

static int token_active(const npl_tokenizer *t, int32_t id, const npl_tok_scope *sc, size_t p, size_t L) {
    if (!(t->tok[id].attr & (NPL_TOKEN_ATTR_CONTROL | NPL_TOKEN_ATTR_UNKNOWN))) return 1;
    return sc->parse_special && !overlaps_plain(sc, p, L);
}

/* Fills *hits (sorted by position); 0 ok, -1 out of memory. */
static int partition(const npl_tokenizer *t, const unsigned char *s, size_t n, const npl_tok_scope *sc,
                     npl_tok_hit **hits_out, size_t *n_hits_out) {
    *hits_out = NULL;
    *n_hits_out = 0;
    if (t->n_groups == 0 || n == 0) return 0;
    uint8_t present[32] = { 0 };
    for (size_t i = 0; i < n; i++) present[s[i] >> 3] |= (uint8_t)(1u << (s[i] & 7));
    int any = 0;
    for (int k = 0; k < 32; k++) any |= present[k] & t->special_first[k];
    if (!any) return 0;

    uint8_t *covered = calloc(n, 1);
    uint64_t *cand = NULL;
    npl_tok_hit *hits = NULL;
    size_t n_hits = 0, cap_hits = 0;
    if (!covered) return -1;

    for (int gi = 0; gi < t->n_groups; gi++) {
        const npl_tok_special_group *g = &t->groups[gi];
        const size_t L = g->len;
        if (L > n) continue;
        int hit_first = 0;
        for (int k = 0; k < 32; k++) hit_first |= present[k] & g->first[k];
        if (!hit_first) continue;
        if (!cand && !(cand = malloc(sizeof(uint64_t) * n))) goto oom;

        size_t n_cand = 0;
        int32_t first_id = -1;
        int sorted = 1;
        uint64_t h = 0;
        for (size_t c = 0; c < L; c++) h = h * NPL_TOK_ROLL + s[c];
        for (size_t p = 0;; p++) {
            if (bit(g->first, s[p]) && !covered[p] && !covered[p + L - 1]) {
                for (uint32_t slot = (uint32_t)(h ^ (h >> 29)) & g->mask; g->ids[slot] >= 0; slot = (slot + 1) & g->mask) {
                    int32_t id = g->ids[slot];
                    if (g->keys[slot] != h || memcmp(npl_tok_text(t, id), s + p, L) != 0) continue;
                    if (token_active(t, id, sc, p, L)) {
                        if (first_id < 0) first_id = id;
                        else if (id != first_id) sorted = 0;
                        cand[n_cand++] = (uint64_t)id << 32 | (uint64_t)p;
                    }
                    break;
                }
            }
            if (p + L >= n) break;
            h = h * NPL_TOK_ROLL + s[p + L] - s[p] * g->pow;
        }
        if (!sorted) qsort(cand, n_cand, sizeof(uint64_t), cmp_u64);
        for (size_t k = 0; k < n_cand; k++) {
            size_t p = (size_t)(cand[k] & 0xffffffffu);
            if (covered[p] || covered[p + L - 1]) continue;
            memset(covered + p, 1, L);
            if (n_hits == cap_hits) {
                size_t nc = cap_hits ? cap_hits * 2 : 16;
                npl_tok_hit *nh = realloc(hits, nc * sizeof(*nh));
                if (!nh) goto oom;
                hits = nh;
                cap_hits = nc;
            }
            hits[n_hits].pos = p;
            hits[n_hits].id = (int32_t)(cand[k] >> 32);
            n_hits++;
        }
    }
    free(covered);
    free(cand);
    if (n_hits > 1) qsort(hits, n_hits, sizeof(*hits), cmp_hit);
    *hits_out = hits;
    *n_hits_out = n_hits;
    return 0;
oom:
    free(covered);
    free(cand);
    free(hits);
    return -1;
}

/* ------------------------------------------------------------------ */
/* encode                                                              */

/* Sessions keep positions and symbol indices in 32 bits; SPM text grows
 * up to 3x when spaces become "▁". */
#define NPL_TOK_MAX_INPUT ((size_t)1 << 29)

static int64_t encode(const npl_tokenizer *t, const char *text, size_t len, int add_special,
                      const npl_tok_scope *sc, int32_t *ids, int64_t cap) {
    if (!t || (!text && len) || cap < 0 || (!ids && cap > 0) || len > NPL_TOK_MAX_INPUT) return -1;
    const unsigned char *s = (const unsigned char *)text;
    npl_tok_hit *hits = NULL;
    size_t n_hits = 0;
    if (partition(t, s, len, sc, &hits, &n_hits)) return npl_status_note(NPL_ERR_MEMORY), -1;

    npl_tok_out out = { NULL, 0, 0, 0 };
    int rc = 0;
    /* WPM: [CLS] whatever add_bos says, as llama.cpp */
    if (add_special && (t->add_bos || t->type == NPL_VOCAB_WPM) && t->bos >= 0) npl_tok_out_push(&out, t->bos);
    int prev_special = 1;   /* SPM: a space prefix goes before the first fragment */
    size_t pos = 0;
    for (size_t k = 0; k <= n_hits && rc == 0; k++) {
        size_t end = k < n_hits ? hits[k].pos : len;
        if (end > pos) {
            if (t->type == NPL_VOCAB_SPM)
                rc = npl_spm_encode(t, text + pos, end - pos, t->add_space_prefix && prev_special, &out);
            else if (t->type == NPL_VOCAB_WPM)
                rc = npl_wpm_encode(t, text + pos, end - pos, &out);
            else
                rc = npl_bpe_encode(t, text + pos, end - pos, &out);
            prev_special = 0;
        }
        if (k < n_hits) {
            npl_tok_out_push(&out, hits[k].id);
            prev_special = 1;
            pos = end + t->tok[hits[k].id].len;
        }
    }
    if (add_special && t->add_eos) npl_tok_out_push(&out, t->eos);
    if (add_special && t->type == NPL_VOCAB_WPM && t->sep >= 0) npl_tok_out_push(&out, t->sep);   /* [SEP] */
    free(hits);
    if (rc || out.oom) { /* the encoders fail only out of memory, or say why */
        if (out.oom) npl_status_note(NPL_ERR_MEMORY);
        free(out.v);
        return -1;
    }
    size_t m = out.n < (size_t)cap ? out.n : (size_t)cap;
    if (m) memcpy(ids, out.v, m * sizeof(int32_t));
    free(out.v);
    return (int64_t)out.n;
}

int64_t npl_tokenize(const npl_tokenizer *t, const char *text, size_t len,
                     int add_special, int parse_special, int32_t *ids, int64_t cap) {
    npl_tok_scope sc = { parse_special, NULL, 0 };
    return encode(t, text, len, add_special, &sc, ids, cap);
}

int64_t npl_tokenize_spans(const npl_tokenizer *t, const char *text, size_t len, int add_special,
                           const npl_tok_span *plain, size_t n_plain, int32_t *ids, int64_t cap) {
    if (!plain && n_plain) return -1;
    for (size_t i = 0; i < n_plain; i++) {
        if (plain[i].len > SIZE_MAX - plain[i].off) return -1;
        if (i && plain[i].off < plain[i - 1].off + plain[i - 1].len) return -1;
    }
    npl_tok_scope sc = { 1, plain, n_plain };
    return encode(t, text, len, add_special, &sc, ids, cap);
}

/* ------------------------------------------------------------------ */
/* token -> text                                                       */

/* Output of pieces: a fixed buffer that counts what does not fit, or a
 * growable one (grow = 1). */
typedef struct { char *buf; size_t cap, n; int grow, oom; } sink;
static void put(sink *s, const void *p, size_t n) {
    if (s->grow && s->n + n > s->cap && !s->oom) {
        size_t nc = s->cap ? s->cap * 2 : 256;
        while (nc < s->n + n) nc *= 2;
        char *nb = realloc(s->buf, nc);
        if (!nb) s->oom = 1;
        else { s->buf = nb; s->cap = nc; }
    }
    if (n && s->n + n <= s->cap) memcpy(s->buf + s->n, p, n);
    s->n += n;
}

static int hexval(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* llama.cpp token_to_byte: strtol of text[3..5) in base 16 */
static unsigned char token_byte(const char *s, size_t n) {
    int v = 0;
    for (size_t i = 3; i < 5 && i < n; i++) {
        int h = hexval(s[i]);
        if (h < 0) break;
        v = v * 16 + h;
    }
    return (unsigned char)v;
}

static void piece(const npl_tokenizer *t, int32_t id, int special, sink *s) {
    const npl_tok_entry *e = &t->tok[id];
    const char *txt = npl_tok_text(t, id);
    uint16_t a = e->attr;
    if (!special && (a & (NPL_TOKEN_ATTR_UNKNOWN | NPL_TOKEN_ATTR_CONTROL))) return;
    if (a & (NPL_TOKEN_ATTR_UNKNOWN | NPL_TOKEN_ATTR_CONTROL | NPL_TOKEN_ATTR_USER_DEFINED)) { put(s, txt, e->len); return; }
    if (a & NPL_TOKEN_ATTR_NORMAL) {
        if (t->type == NPL_VOCAB_SPM || t->type == NPL_VOCAB_WPM || t->escape_ws) {
            /* "▁" (E2 96 81) -> ' ' */
            size_t i = 0, run = 0;
            while (i < e->len) {
                if (i + 2 < e->len && (unsigned char)txt[i] == 0xe2 && (unsigned char)txt[i + 1] == 0x96 &&
                    (unsigned char)txt[i + 2] == 0x81) {
                    put(s, txt + run, i - run);
                    put(s, " ", 1);
                    i += 3;
                    run = i;
                } else {
                    i++;
                }
            }
            put(s, txt + run, e->len - run);
        } else {
            /* byte-level BPE: every code point names one byte */
            const unsigned char *u = (const unsigned char *)txt;
            size_t off = 0;
            while (off < e->len) {
                uint32_t c = npl_utf8_decode_lenient(u, e->len, &off);
                if (c < 0x144 && t->byte_dec[c] >= 0) {
                    char b = (char)t->byte_dec[c];
                    put(s, &b, 1);
                } else {
                    char enc[4], hx[3];
                    int k = npl_utf8_encode(c, enc);
                    put(s, "[UNK_BYTE_0x", 12);
                    for (int j = 0; j < k; j++) { snprintf(hx, sizeof(hx), "%02x", (unsigned char)enc[j]); put(s, hx, 2); }
                    put(s, txt, e->len);
                    put(s, "]", 1);
                }
            }
        }
        return;
    }
    if (a & NPL_TOKEN_ATTR_BYTE) {
        unsigned char b = token_byte(txt, e->len);
        put(s, &b, 1);
    }
}

int npl_token_to_piece(const npl_tokenizer *t, int32_t id, char *buf, int cap, int special) {
    if (!t || id < 0 || id >= t->n_vocab || cap < 0 || (!buf && cap > 0)) return -1;
    sink count = { NULL, 0, 0, 0, 0 };   /* length first: nothing is written unless it all fits */
    piece(t, id, special, &count);
    if (count.n > INT32_MAX) return -1;
    if (count.n <= (size_t)cap) {
        sink s = { buf, (size_t)cap, 0, 0, 0 };
        piece(t, id, special, &s);
    }
    return (int)count.n;
}

int64_t npl_detokenize(const npl_tokenizer *t, const int32_t *ids, int64_t n_ids,
                       char *buf, int64_t cap, int remove_special, int unparse_special) {
    if (!t || n_ids < 0 || (!ids && n_ids) || cap < 0 || (!buf && cap > 0)) return -1;
    for (int64_t i = 0; i < n_ids; i++) if (ids[i] < 0 || ids[i] >= t->n_vocab) return -1;
    int remove_space = t->add_space_prefix;
    if (remove_special && t->add_bos && n_ids > 0 && ids[0] == t->bos) { remove_space = 0; ids++; n_ids--; }
    if (remove_special && t->add_eos && n_ids > 0 && ids[n_ids - 1] == t->eos) n_ids--;

    /* the space cleanup below needs the whole text: render it first */
    sink s = { NULL, 0, 0, 1, 0 };
    for (int64_t i = 0; i < n_ids; i++) {
        size_t start = s.n;
        piece(t, ids[i], unparse_special, &s);
        if (s.oom) { free(s.buf); return -1; }
        if (remove_space && s.n > start && s.buf[start] == ' ') {   /* lstrip = 1 */
            memmove(s.buf + start, s.buf + start + 1, s.n - start - 1);
            s.n--;
        }
        remove_space = 0;
    }
    char *text = s.buf;
    size_t total = s.n;
    if (t->clean_spaces && total > 0) {
        /* llama.cpp's three passes, verbatim in effect */
        size_t t1 = total, o = 1;
        for (size_t i = 1; i < t1; i++) {
            char x = text[i];
            if (text[i - 1] == ' ' && (x == '?' || x == '!' || x == '.' || x == ',')) o--;
            text[o++] = x;
        }
        size_t t2 = o; o = 1;
        for (size_t i = 1; i < t2; i++) {
            char x = text[i];
            if (x == '\'' && i + 1 < t2 && text[i - 1] == ' ' && text[i + 1] == ' ') {
                o--;
                text[++i] = '\0';
            }
            text[o++] = x;
        }
        size_t t3 = o; o = 1;
        for (size_t i = 1; i < t3; i++) {
            char x = text[i];
            if (text[i - 1] == ' ' && x == '\'' && i + 1 < t3) {
                char x1 = text[i + 1];
                if (x1 == 's' || x1 == 'm') o--;
                else if (i + 2 < t3) {
                    char x2 = text[i + 2];
                    if ((x1 == 'r' && x2 == 'e') || (x1 == 'v' && x2 == 'e')) o--;
                }
            }
            text[o++] = x;
        }
        total = o;
    }
    if (total && (int64_t)total <= cap) memcpy(buf, text, total);
    free(text);
    return (int64_t)total;
}
