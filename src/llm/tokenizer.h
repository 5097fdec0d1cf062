/* Tokenizer: GGUF vocabularies, encoded and decoded the way llama.cpp does.
 *
 * Supported vocabularies:
 *   tokenizer.ggml.model = "llama"  SentencePiece (SPM) with byte fallback
 *                                   (Llama 2, Gemma, ...);
 *   tokenizer.ggml.model = "gpt2"   byte-level BPE with merge ranks and the
 *                                   pre-tokenizer named by tokenizer.ggml.pre
 *                                   (llama.cpp's names and regex lists,
 *                                   tokenizer_pre.c);
 *   tokenizer.ggml.model = "bert"   WordPiece (BERT-style embedding models:
 *                                   [CLS] text [SEP], tokenizer_wpm.c).
 *
 * Output equals llama.cpp's llama_tokenize / llama_token_to_piece /
 * llama_detokenize ids and bytes (golden files in tests/data/tokenizer are
 * produced by llama.cpp itself). The tables are immutable after load and
 * every call allocates its own scratch, so one npl_tokenizer may be used by
 * any number of threads at once.
 *
 * The tokenizer copies what it needs: the npl_gguf may be closed after
 * npl_tokenizer_load returns. */
#ifndef NPL_TOKENIZER_H
#define NPL_TOKENIZER_H
#include <stddef.h>
#include <stdint.h>

typedef struct npl_gguf npl_gguf;
typedef struct npl_tokenizer npl_tokenizer;

typedef enum {
    NPL_VOCAB_SPM = 1,   /* "llama" */
    NPL_VOCAB_BPE = 2,   /* "gpt2"  */
    NPL_VOCAB_WPM = 3,   /* "bert"  */
} npl_vocab_type;

/* Token attributes (bit set), as llama.cpp derives them from
 * tokenizer.ggml.token_type and the token text. */
enum {
    NPL_TOKEN_ATTR_UNKNOWN      = 1 << 0,
    NPL_TOKEN_ATTR_UNUSED       = 1 << 1,
    NPL_TOKEN_ATTR_NORMAL       = 1 << 2,
    NPL_TOKEN_ATTR_CONTROL      = 1 << 3,
    NPL_TOKEN_ATTR_USER_DEFINED = 1 << 4,
    NPL_TOKEN_ATTR_BYTE         = 1 << 5,
};

/* Build a tokenizer from the tokenizer.* metadata of g. Every field is
 * validated (types, array lengths, ids in range, duplicate token texts);
 * on failure returns NULL and writes one line "FILE: FIELD: what was wrong"
 * to err. */
npl_tokenizer *npl_tokenizer_load(const npl_gguf *g, char *err, size_t errlen);
void npl_tokenizer_free(npl_tokenizer *t);

npl_vocab_type npl_tokenizer_type(const npl_tokenizer *t);
int32_t npl_tokenizer_n_vocab(const npl_tokenizer *t);

/* Special ids; -1 when the vocabulary has none. */
int32_t npl_tokenizer_bos(const npl_tokenizer *t);
int32_t npl_tokenizer_eos(const npl_tokenizer *t);
int32_t npl_tokenizer_eot(const npl_tokenizer *t);
int32_t npl_tokenizer_unk(const npl_tokenizer *t);
int32_t npl_tokenizer_pad(const npl_tokenizer *t);
/* End of generation: EOS, EOT, EOM and the tokens llama.cpp lists by text
 * ("<end_of_turn>", "<|im_end|>", "<|endoftext|>", ...). 0 for bad ids. */
int npl_tokenizer_is_eog(const npl_tokenizer *t, int32_t id);
/* Whether encoding with add_special=1 prepends BOS / appends EOS. */
int npl_tokenizer_add_bos(const npl_tokenizer *t);
int npl_tokenizer_add_eos(const npl_tokenizer *t);

/* NPL_TOKEN_ATTR_* bits of id, or -1 if id is out of range. */
int npl_tokenizer_token_attr(const npl_tokenizer *t, int32_t id);
/* Raw vocabulary text of id (not NUL-terminated in general; *len set), or
 * NULL if out of range. */
const char *npl_tokenizer_token_text(const npl_tokenizer *t, int32_t id, size_t *len);
/* Id whose vocabulary text is exactly text[0..len), or -1. */
int32_t npl_tokenizer_find(const npl_tokenizer *t, const char *text, size_t len);

/* Encode text[0..len) (any bytes; invalid UTF-8 is handled like llama.cpp).
 * add_special: prepend BOS / append EOS where the vocabulary asks for it.
 * parse_special: 1 recognizes control-token text such as "<end_of_turn>" in
 * the input; 0 treats it as plain text (user-defined tokens are matched
 * either way, as in llama.cpp).
 * Returns the number of tokens n and writes min(n, cap) ids; when n > cap
 * the caller grows the buffer and calls again. -1 on bad arguments or out
 * of memory. */
int64_t npl_tokenize(const npl_tokenizer *t, const char *text, size_t len,
                     int add_special, int parse_special, int32_t *ids, int64_t cap);

/* A byte range of an input text. */
typedef struct { size_t off, len; } npl_tok_span;

/* Encode a rendered chat prompt: like npl_tokenize with parse_special = 1,
 * except that a control or unknown token is not recognized where its text
 * would overlap one of plain[0..n_plain) (sorted, disjoint ranges of text;
 * the messages' text), so that text stays text wherever it stands. Fragments
 * between special tokens are encoded whole, across the edges of the ranges:
 * when no control-token text overlaps a range, the ids are exactly those of
 * npl_tokenize(text, len, add_special, 1) (what llama.cpp does with a
 * rendered template). Ranges past len are clipped. Returns as npl_tokenize;
 * -1 also for unsorted or overlapping ranges. */
int64_t npl_tokenize_spans(const npl_tokenizer *t, const char *text, size_t len, int add_special,
                           const npl_tok_span *plain, size_t n_plain, int32_t *ids, int64_t cap);

/* Text of one token: byte tokens <0xAB> give that byte, SPM "▁" gives a
 * space, byte-level BPE characters give their bytes, control and unknown
 * tokens give nothing unless `special`. Returns the piece length n and
 * writes it only if n <= cap (nothing otherwise); -1 if id is out of range
 * or cap < 0. */
int npl_token_to_piece(const npl_tokenizer *t, int32_t id, char *buf, int cap, int special);

/* Text of a token sequence, exactly as llama_detokenize: remove_special
 * drops a leading BOS / trailing EOS that the vocabulary adds, and the
 * SPM space prefix is stripped; unparse_special renders control tokens;
 * some vocabularies clean spaces before punctuation. Returns the length n
 * and writes it only if n <= cap; -1 if an id is out of range or on bad
 * arguments. */
int64_t npl_detokenize(const npl_tokenizer *t, const int32_t *ids, int64_t n_ids,
                       char *buf, int64_t cap, int remove_special, int unparse_special);

#endif
