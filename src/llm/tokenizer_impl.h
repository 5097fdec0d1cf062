/* Internals shared by tokenizer_vocab.c (load, pieces), tokenizer.c
 * (special-token partition, encode), tokenizer_spm.c, tokenizer_bpe.c and
 * tokenizer_wpm.c.
 * Everything here is immutable after npl_tokenizer_load. */
#ifndef NPL_TOKENIZER_IMPL_H
#define NPL_TOKENIZER_IMPL_H
#include <stddef.h>
#include <stdint.h>

#include "core/status.h"
#include "llm/tokenizer.h"

/* ---- hashing ---- */
static inline uint64_t npl_tok_hash(const void *p, size_t n) {
    /* FNV-1a, finished with a multiply-xorshift so low bits are usable. */
    const unsigned char *s = (const unsigned char *)p;
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n; i++) { h ^= s[i]; h *= 0x100000001b3ull; }
    h ^= h >> 29; h *= 0xbf58476d1ce4e5b9ull; h ^= h >> 32;
    return h;
}

typedef struct {
    uint32_t off, len;     /* text in t->arena */
    float score;
    uint16_t attr;         /* NPL_TOKEN_ATTR_* */
    uint8_t eog;
} npl_tok_entry;

typedef struct { uint32_t tag; int32_t val; } npl_tok_slot; /* val -1 = empty */

typedef struct {
    uint32_t loff, llen, roff, rlen;   /* halves in t->arena */
} npl_tok_merge;

/* Special tokens of one byte length, looked up by a rolling hash. */
typedef struct {
    uint32_t len;
    uint32_t mask;          /* slots - 1 */
    uint64_t *keys;         /* rolling hash per slot */
    int32_t *ids;           /* -1 = empty */
    uint64_t pow;           /* NPL_TOK_ROLL^len (for rolling out) */
    uint8_t first[32];      /* bitmap of first bytes */
} npl_tok_special_group;

#define NPL_TOK_ROLL 0x100000001b3ull

/* One regex of a BPE pre-tokenizer (tokenizer_pre.c): how it runs. */
enum { NPL_PRE_STEP_UCP = 1, NPL_PRE_STEP_COLLAPSED, NPL_PRE_STEP_WIDE, NPL_PRE_STEP_DIGITS, NPL_PRE_STEP_KIMI };
#define NPL_PRE_MAX_STEPS 8
typedef struct { void *code; int kind; } npl_pre_step;   /* code: pcre2_code_8 * */

struct npl_tokenizer {
    npl_vocab_type type;
    const char *const *pre_exprs;  /* BPE: llama.cpp's regex list (tokenizer_pre.c) */
    int32_t n_vocab;
    npl_tok_entry *tok;
    char *arena;            /* all token texts and merge halves, NUL-terminated */
    size_t arena_len;
    uint32_t max_token_len;

    npl_tok_slot *tok_slots; uint32_t tok_mask;          /* text -> id */

    npl_tok_merge *merges; int32_t n_merges;              /* BPE */
    npl_tok_slot *merge_slots; uint32_t merge_mask;      /* (left,right) -> rank */
    uint32_t max_merge_len;

    int32_t bos, eos, eot, eom, unk, pad, sep;
    int add_bos, add_eos, add_space_prefix, clean_spaces, ignore_merges;
    /* llama.cpp's escape_whitespaces (' ' as "▁" before BPE, undone when decoding), byte_encode off
     * (raw UTF-8, <0xXX> byte tokens) and the GEMMA4 pre type (a newline run that is a token) */
    int escape_ws, raw_bytes, gemma4_nl;
    int ws_model;           /* tokenizer model "whitespace": whitespace dropped, runs lowered (wpm_lowercase) */
    int wpm_lowercase, wpm_strip_accents;                /* WPM: BERT normalizer options */

    int32_t byte_to_id[256];                             /* SPM byte fallback */
    char byte_enc[256][3]; uint8_t byte_enc_len[256];    /* GPT-2 byte -> UTF-8 */
    int16_t byte_dec[0x144];                             /* code point -> byte, -1 */

    npl_tok_special_group *groups; int n_groups;         /* longest first */
    uint8_t special_first[32];                           /* union of first bytes */

    npl_pre_step pre_steps[NPL_PRE_MAX_STEPS]; int n_pre_steps;   /* BPE */
    int pre_need_ucp, pre_need_wide, pre_need_cat;        /* which views of the text the steps read */
    void *pre_classes;                                   /* pcre2_code_8 *: code point categories */
    void *re_ctx;                                        /* pcre2_match_context_8 * */
};

/* ---- vocab (tokenizer_vocab.c) ---- */
int32_t npl_tok_lookup(const npl_tokenizer *t, const char *s, size_t n);
int32_t npl_tok_merge_rank(const npl_tokenizer *t, const char *l, size_t ln, const char *r, size_t rn);
static inline const char *npl_tok_text(const npl_tokenizer *t, int32_t id) { return t->arena + t->tok[id].off; }

/* ---- growable id buffer used while encoding ---- */
typedef struct { int32_t *v; size_t n, cap; int oom; } npl_tok_out;
int npl_tok_out_push(npl_tok_out *o, int32_t id);

/* ---- sessions: each appends to out; 0 ok, -1 out of memory ---- */
int npl_spm_encode(const npl_tokenizer *t, const char *text, size_t len, int add_prefix, npl_tok_out *out);
int npl_bpe_encode(const npl_tokenizer *t, const char *text, size_t len, npl_tok_out *out);
int npl_wpm_encode(const npl_tokenizer *t, const char *text, size_t len, npl_tok_out *out);
/* simple lowercase (utf8proc's Unicode data; tokenizer_wpm.c) */
uint32_t npl_tok_lower(uint32_t c);

/* ---- BPE pre-tokenizers (tokenizer_pre.c) ---- */
/* llama.cpp's regex list for a tokenizer.ggml.pre name, or NULL; *flags
 * for npl_pre_flag. */
const char *const *npl_pre_find(const char *s, size_t n, int *flags);
const char *const *npl_pre_default(void);   /* a missing tokenizer.ggml.pre */
enum { NPL_PRE_NO_CLEAN = 1, NPL_PRE_IGNORE_MERGES, NPL_PRE_ADD_BOS, NPL_PRE_NO_BOS, NPL_PRE_ESCAPE_WS,
       NPL_PRE_RAW_BYTES, NPL_PRE_GEMMA4, NPL_PRE_NO_MERGES_OK, NPL_PRE_NO_LOWERCASE };
int npl_pre_flag(int flags, int which);
void npl_pre_known_names(char *buf, size_t n);   /* "a, b, c and N aliases of these" */
/* Compiles t->pre_exprs; 0 ok, -1 with msg. */
int npl_pre_init(npl_tokenizer *t, char *msg, size_t msglen);
void npl_pre_free(npl_tokenizer *t);
/* Cuts cpt[0..n) into words; *words (malloc'd) holds their lengths in
 * code points. 0 ok, -1 out of memory or a regex failure (status noted). */
int npl_pre_split(const npl_tokenizer *t, const uint32_t *cpt, size_t n, uint32_t **words, size_t *n_words);

/* ---- strict checks of vocabulary text (tokenizer_check.c) ---- */
/* Offset of the first byte that does not start a well-formed UTF-8
 * sequence (no overlong forms, surrogates or code points past U+10FFFF),
 * or n when s[0..n) is valid. */
size_t npl_tok_utf8_invalid_at(const unsigned char *s, size_t n);
/* Is s[0..n) "<0xHH>" (upper-case hex)? */
int npl_tok_is_byte_text(const char *s, size_t n);
/* s[0..n) quoted for a one-line message: control and non-ASCII bytes as
 * \xHH, cut after 48 bytes. */
void npl_tok_quote(const char *s, size_t n, char *out, size_t cap);

/* ---- lenient UTF-8 (llama.cpp unicode_cpt_from_utf8 rules) ---- */
/* Decodes one code point at s[*off] and advances *off; invalid -> 0xFFFD
 * and advances by one byte. Overlong forms and surrogates are accepted. */
uint32_t npl_utf8_decode_lenient(const unsigned char *s, size_t n, size_t *off);
/* Encodes cpt (<= 0x10FFFF) and returns the byte count (1..4); larger
 * values encode U+FFFD. */
int npl_utf8_encode(uint32_t cpt, char out[4]);
static inline size_t npl_utf8_len_lead(unsigned char c) {
    static const uint8_t lookup[16] = { 1,1,1,1,1,1,1,1,1,1,1,1,2,2,3,4 };
    return lookup[c >> 4];
}

/* ---- the best merge among adjacent symbol pairs ----
 * A min segment tree over symbol positions: leaf i holds the priority of
 * merging symbol i with its right neighbour (UINT64_MAX: no merge), and
 * prio = key << 32 | i, so the root names the pair to merge next: smallest
 * key, then leftmost, the order of llama.cpp's priority queues. Unlike a
 * heap with lazy deletion it holds no stale entries, and the updates after
 * a merge touch neighbouring leaves, so a 1 MB word stays cache friendly. */
typedef struct { uint64_t *v; size_t leaves, cap; } npl_tok_tree;
int npl_tok_tree_reset(npl_tok_tree *tr, size_t n);        /* all leaves empty */
void npl_tok_tree_build(npl_tok_tree *tr);                  /* after raw leaf writes */
void npl_tok_tree_set(npl_tok_tree *tr, size_t i, uint64_t prio);
static inline uint64_t npl_tok_tree_top(const npl_tok_tree *tr) { return tr->v[1]; }
#define NPL_TOK_NONE UINT64_MAX
static inline uint64_t npl_tok_prio(uint32_t key, int32_t left) { return (uint64_t)key << 32 | (uint32_t)left; }
/* SPM: higher score first; -0.0 ties with 0.0 as in a float compare */
static inline uint32_t npl_tok_score_key(float score) {
    union { float f; uint32_t u; } v;
    v.f = score == 0.0f ? 0.0f : score;
    uint32_t ord = (v.u & 0x80000000u) ? ~v.u : (v.u | 0x80000000u);
    return ~ord;
}
#endif
