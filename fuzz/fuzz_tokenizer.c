/* libFuzzer harness for the tokenizer.
 *
 * Input byte 0 picks the mode, the rest is the payload:
 *   bits 0-1  vocabulary: tiny SPM, tiny BPE (tests/data/tokenizer), or the
 *             one in NPL_FUZZ_VOCAB / NPL_TEST_MODEL (e.g. real Gemma 3);
 *             3 = metadata fuzzing: a payload starting with "GGUF" is a
 *             whole file; any other payload is a list of 4-byte patches
 *             (24-bit offset, byte) applied to a copy of the tiny SPM
 *             (bit 5 clear) or tiny BPE vocabulary file. The tokenizer is
 *             loaded from it (malformed metadata must fail with a message,
 *             never crash) and, if it loads, used on a fixed text;
 *   bit 2     add_special, bit 3 parse_special, bit 4 unparse on decode.
 * The payload is encoded (any bytes), every id is turned back into a piece
 * and the ids are detokenized; sizes reported by the size-query calls must
 * match what the writing calls produce.
 * Build and run with: fuzz/run tokenizer SECONDS */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "format/gguf.h"
#include "llm/tokenizer.h"

/* The vocabularies are loaded once per process (a harness may keep state;
 * the library itself has none). */
typedef struct { npl_gguf *g; npl_tokenizer *t; int tried; } vocab_slot;
static vocab_slot slots[3];

static npl_tokenizer *vocab(int which) {
    vocab_slot *s = &slots[which];
    if (s->tried) return s->t;
    s->tried = 1;
    char path[4096];
    if (which == 2) {
        const char *p = getenv("NPL_FUZZ_VOCAB");
        if (!p || !*p) p = getenv("NPL_TEST_MODEL");
        if (!p || !*p) return NULL;
        snprintf(path, sizeof(path), "%s", p);
    } else {
        /* __FILE__ is fuzz/fuzz_tokenizer.c in the source tree */
        const char *f = __FILE__, *slash = strrchr(f, '/');
        int dir = slash ? (int)(slash - f) : 1;
        snprintf(path, sizeof(path), "%.*s/../tests/data/tokenizer/%s", dir, slash ? f : ".",
                 which == 0 ? "tiny_spm.gguf" : "tiny_bpe.gguf");
    }
    char err[512];
    s->g = npl_gguf_open(path, NULL, err, sizeof(err));
    if (s->g) s->t = npl_tokenizer_load(s->g, err, sizeof(err));
    if (!s->t) fprintf(stderr, "fuzz_tokenizer: vocabulary %s: %s\n", path, err);
    return s->t;
}

/* The bytes of a tiny vocabulary file, read once. */
static const uint8_t *file_bytes(int which, size_t *len) {
    static uint8_t *bytes[2];
    static size_t lens[2];
    static int tried[2];
    if (!tried[which]) {
        tried[which] = 1;
        const char *f = __FILE__, *slash = strrchr(f, '/');
        char path[4096];
        snprintf(path, sizeof(path), "%.*s/../tests/data/tokenizer/%s", slash ? (int)(slash - f) : 1, slash ? f : ".",
                 which == 0 ? "tiny_spm.gguf" : "tiny_bpe.gguf");
        FILE *fp = fopen(path, "rb");
        if (fp) {
            fseek(fp, 0, SEEK_END);
            long n = ftell(fp);
            fseek(fp, 0, SEEK_SET);
            if (n > 0 && (bytes[which] = malloc((size_t)n)) && fread(bytes[which], 1, (size_t)n, fp) == (size_t)n)
                lens[which] = (size_t)n;
            fclose(fp);
        }
    }
    *len = lens[which];
    return lens[which] ? bytes[which] : NULL;
}

static volatile uint8_t sink;

static void exercise(const npl_tokenizer *t, const uint8_t *text, size_t len, int add, int parse, int unparse) {
    int64_t n = npl_tokenize(t, (const char *)text, len, add, parse, NULL, 0);
    if (n < 0) abort();
    int32_t *ids = malloc(sizeof(int32_t) * (size_t)(n + 1));
    if (!ids) return;
    if (npl_tokenize(t, (const char *)text, len, add, parse, ids, n) != n) abort();
    int32_t nv = npl_tokenizer_n_vocab(t);
    char piece[256];
    for (int64_t i = 0; i < n; i++) {
        if (ids[i] < 0 || ids[i] >= nv) abort();
        int k = npl_token_to_piece(t, ids[i], NULL, 0, unparse);
        if (k < 0) abort();
        if (k <= (int)sizeof(piece)) {
            if (npl_token_to_piece(t, ids[i], piece, sizeof(piece), unparse) != k) abort();
            if (k) sink ^= (uint8_t)piece[k - 1];
        }
        (void)npl_tokenizer_is_eog(t, ids[i]);
    }
    for (int remove = 0; remove < 2; remove++) {
        int64_t m = npl_detokenize(t, ids, n, NULL, 0, remove, unparse);
        if (m < 0) abort();
        char *out = malloc((size_t)m + 1);
        if (out) {
            if (npl_detokenize(t, ids, n, out, m, remove, unparse) != m) abort();
            if (m) sink ^= (uint8_t)out[m - 1];
            free(out);
        }
    }
    free(ids);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    uint8_t mode = data[0];
    const uint8_t *p = data + 1;
    size_t n = size - 1;
    int add = mode >> 2 & 1, parse = mode >> 3 & 1, unparse = mode >> 4 & 1;
    if ((mode & 3) == 3) {
        char err[512];
        uint8_t *buf = NULL;
        size_t blen = n;
        if (n >= 4 && memcmp(p, "GGUF", 4) == 0) {
            buf = malloc(n ? n : 1);
            if (!buf) return 0;
            memcpy(buf, p, n);
        } else {
            const uint8_t *base = file_bytes(mode >> 5 & 1, &blen);
            if (!base || !(buf = malloc(blen))) return 0;
            memcpy(buf, base, blen);
            for (size_t i = 0; i + 4 <= n; i += 4) {
                size_t off = ((size_t)p[i] | (size_t)p[i + 1] << 8 | (size_t)p[i + 2] << 16) % blen;
                buf[off] = p[i + 3];
            }
        }
        npl_gguf *g = npl_gguf_open_memory(buf, blen, "fuzz.gguf", NULL, err, sizeof(err));
        if (g) {
            npl_tokenizer *t = npl_tokenizer_load(g, err, sizeof(err));
            if (!t && !err[0]) abort();   /* a failure always says why */
            if (t) {
                static const char text[] = "Hello <|im_end|> world\n\n  <end_of_turn> \xff\xe2\x80 \xe4\xb8\xad 123 <s>hello</s>";
                exercise(t, (const uint8_t *)text, sizeof(text) - 1, add, parse, unparse);
                npl_tokenizer_free(t);
            }
            npl_gguf_close(g);
        }
        free(buf);
        return 0;
    }
    const npl_tokenizer *t = vocab(mode & 3);
    if (!t) return 0;
    exercise(t, p, n, add, parse, unparse);
    return 0;
}
