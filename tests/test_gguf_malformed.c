/* Malformed GGUF files built byte by byte in memory: each must fail to open
 * with one line that names the offending field. Then every prefix of a small
 * valid file (only the full file may open) and every single-byte corruption
 * of it (must not crash; run under ASan/UBSan in CI). */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "kernels/dtype.h"
#include "format/gguf.h"

/* ---- a byte builder ---- */

typedef struct {
    uint8_t *p;
    size_t n, cap;
} buf;

static void put(buf *b, const void *src, size_t n) {
    if (b->n + n > b->cap) {
        b->cap = (b->n + n) * 2 + 64;
        b->p = realloc(b->p, b->cap);
    }
    memcpy(b->p + b->n, src, n);
    b->n += n;
}
static void u8(buf *b, uint8_t v) { put(b, &v, 1); }
static void u32(buf *b, uint32_t v) { put(b, &v, 4); }
static void u64(buf *b, uint64_t v) { put(b, &v, 8); }
static void str(buf *b, const char *s) {
    u64(b, strlen(s));
    put(b, s, strlen(s));
}
static void pad_to(buf *b, size_t align) {
    while (b->n % align) u8(b, 0);
}
static void zeros(buf *b, size_t n) {
    for (size_t i = 0; i < n; i++) u8(b, 0);
}
static void header(buf *b, uint32_t version, uint64_t n_tensors, uint64_t n_kv) {
    b->n = 0;
    put(b, "GGUF", 4);
    u32(b, version);
    u64(b, n_tensors);
    u64(b, n_kv);
}
static void kv_u32(buf *b, const char *key, uint32_t v) {
    str(b, key);
    u32(b, NPL_GGUF_UINT32);
    u32(b, v);
}
/* A tensor info of up to 4 dims (nd may be out of range: extra dims read from ne). */
static void tinfo(buf *b, const char *name, uint32_t nd, const int64_t *ne, uint32_t type, uint64_t offset) {
    str(b, name);
    u32(b, nd);
    for (uint32_t d = 0; d < nd; d++) u64(b, (uint64_t)ne[d]);
    u32(b, type);
    u64(b, offset);
}

/* ---- expectations ---- */

static int n_cases = 0;

static void expect_fail_lim(const buf *b, const npl_gguf_limits *lim, const char *field, const char *why) {
    char err[512] = "";
    n_cases++;
    npl_gguf *g = npl_gguf_open_memory(b->p, b->n, "t.gguf", lim, err, sizeof err);
    CHECK(g == NULL);
    npl_gguf_close(g);
    int ok = strstr(err, field) != NULL && strncmp(err, "t.gguf: ", 8) == 0 && !strchr(err, '\n');
    CHECK(ok);
    if (g || !ok) fprintf(stderr, "  case '%s': expected '%s' in: %s\n", why, field, err);
}

static void expect_fail(const buf *b, const char *field, const char *why) { expect_fail_lim(b, NULL, field, why); }

static void expect_ok(const buf *b, const char *why) {
    char err[512] = "";
    npl_gguf *g = npl_gguf_open_memory(b->p, b->n, "t.gguf", NULL, err, sizeof err);
    CHECK(g != NULL);
    if (!g) fprintf(stderr, "  case '%s' should open: %s\n", why, err);
    npl_gguf_close(g);
}

/* Header + kv section + tensor infos for one f32 [8] tensor at offset 0, padded, with data. */
static void finish_one_tensor(buf *b) {
    int64_t ne[1] = {8};
    tinfo(b, "w", 1, ne, NPL_TYPE_F32, 0);
    pad_to(b, 32);
    zeros(b, 32);
}

/* ---- the cases ---- */

static void header_cases(buf *b) {
    header(b, 3, 0, 0);
    b->p[0] = 'X';
    expect_fail(b, "magic", "bad magic");
    b->n = 2;
    expect_fail(b, "magic", "file shorter than the magic");
    b->n = 0;
    expect_fail(b, "magic", "empty file");
    header(b, 1, 0, 0);
    expect_fail(b, "version: GGUF v1 is not supported", "version 1");
    header(b, 99, 0, 0);
    expect_fail(b, "version: unsupported version 99", "version 99");
    header(b, 0x03000000u, 0, 0);
    expect_fail(b, "big-endian", "big-endian file");
    header(b, 3, 0, 0);
    b->n = 12;
    expect_fail(b, "n_tensors", "truncated n_tensors");
    header(b, 3, UINT64_MAX, 0);
    expect_fail(b, "n_tensors", "n_tensors huge");
    header(b, 3, 0, UINT64_MAX);
    expect_fail(b, "n_kv", "n_kv huge");
    header(b, 3, 0, 1000);
    expect_fail(b, "n_kv: 1000 key/value pairs cannot fit", "n_kv past the bytes remaining");
    header(b, 3, 1000, 0);
    expect_fail(b, "n_tensors: 1000 tensor infos cannot fit", "n_tensors past the bytes remaining");
    npl_gguf_limits lim = {0, 0, 2, 2};
    header(b, 3, 0, 3);
    zeros(b, 100);
    expect_fail_lim(b, &lim, "n_kv: 3 exceeds limit 2", "n_kv over the limit");
    header(b, 3, 3, 0);
    zeros(b, 200);
    expect_fail_lim(b, &lim, "n_tensors: 3 exceeds limit 2", "n_tensors over the limit");
}

static void key_cases(buf *b) {
    header(b, 3, 0, 1);
    u64(b, UINT64_MAX);
    zeros(b, 16);
    expect_fail(b, "kv[0]: key length 18446744073709551615 exceeds bytes remaining", "key length huge");
    header(b, 3, 0, 1);
    u64(b, 1000);
    zeros(b, 16);
    expect_fail(b, "kv[0]: key length 1000 exceeds bytes remaining", "key length past end");
    header(b, 3, 0, 1);
    u64(b, 70000);
    zeros(b, 70100);
    expect_fail(b, "kv[0]: key length 70000 exceeds 65535", "key longer than the spec allows");
    header(b, 3, 0, 1);
    str(b, "");
    u32(b, NPL_GGUF_UINT32);
    u32(b, 1);
    zeros(b, 8);
    expect_fail(b, "kv[0]: empty key", "empty key");
    header(b, 3, 0, 1);
    u64(b, 3);
    put(b, "a\0b", 3);
    u32(b, NPL_GGUF_UINT32);
    u32(b, 1);
    expect_fail(b, "kv[0]: key contains a NUL", "key with NUL");
    header(b, 3, 0, 2);
    kv_u32(b, "a.b", 1);
    kv_u32(b, "a.b", 2);
    expect_fail(b, "kv[1] 'a.b': duplicate key (first at kv[0])", "duplicate key");
    /* a hostile key is escaped and shortened so the message stays one line */
    char nasty[201];
    memset(nasty, 'k', 200);
    nasty[0] = '\n';
    nasty[1] = '\x1b';
    nasty[200] = 0;
    header(b, 3, 0, 2);
    kv_u32(b, nasty, 1);
    kv_u32(b, nasty, 2);
    expect_fail(b, "kv[1] '\\x0a\\x1bkkkk", "duplicate long key with control characters");
    expect_fail(b, "kkk...': duplicate key", "long key shortened");
    npl_gguf_limits lim = {4, 0, 0, 0};
    header(b, 3, 0, 1);
    kv_u32(b, "long.key", 1);
    expect_fail_lim(b, &lim, "kv[0]: key length 8 exceeds limit 4", "key over the string limit");
}

static void value_cases(buf *b) {
    header(b, 3, 0, 1);
    str(b, "k");
    u32(b, 13);
    zeros(b, 8);
    expect_fail(b, "kv[0] 'k': value type 13 is unknown", "unknown value type 13");
    header(b, 3, 0, 1);
    str(b, "k");
    u32(b, 0xFFFFFFFFu);
    zeros(b, 8);
    expect_fail(b, "kv[0] 'k': value type 4294967295 is unknown", "unknown value type huge");
    header(b, 3, 0, 1);
    str(b, "k");
    u32(b, NPL_GGUF_UINT64);
    zeros(b, 3);
    expect_fail(b, "kv[0] 'k': value truncated", "scalar truncated");
    header(b, 3, 0, 1);
    str(b, "k");
    u32(b, NPL_GGUF_STRING);
    u64(b, 100);
    put(b, "short", 5);
    expect_fail(b, "kv[0] 'k': string value length 100 exceeds bytes remaining", "string past end");
    npl_gguf_limits lim = {16, 0, 0, 0};
    header(b, 3, 0, 1);
    str(b, "k");
    u32(b, NPL_GGUF_STRING);
    str(b, "a string that is longer than sixteen bytes");
    expect_fail_lim(b, &lim, "kv[0] 'k': string value length 42 exceeds limit 16", "string over limit");
}

static void arr_header(buf *b, const char *key, uint32_t et, uint64_t n) {
    str(b, key);
    u32(b, NPL_GGUF_ARRAY);
    u32(b, et);
    u64(b, n);
}

static void array_cases(buf *b) {
    header(b, 3, 0, 1);
    arr_header(b, "a", NPL_GGUF_UINT32, 1000000);
    zeros(b, 64);
    expect_fail(b, "kv[0] 'a': array length 1000000 of u32 exceeds bytes remaining", "array of huge count");
    header(b, 3, 0, 1);
    arr_header(b, "a", NPL_GGUF_UINT8, 1ull << 40);
    zeros(b, 64);
    expect_fail(b, "kv[0] 'a': array length 1099511627776 of u8 exceeds bytes remaining", "array count huge");
    npl_gguf_limits small = {0, 4, 0, 0};
    header(b, 3, 0, 1);
    arr_header(b, "a", NPL_GGUF_UINT8, 8);
    zeros(b, 8);
    expect_fail_lim(b, &small, "kv[0] 'a': array length 8 exceeds limit 4", "array count over the limit");
    /* with the cap lifted, count * element size overflows size_t: still caught */
    npl_gguf_limits lim = {0, UINT64_MAX, 0, 0};
    header(b, 3, 0, 1);
    arr_header(b, "a", NPL_GGUF_UINT64, 1ull << 62);
    zeros(b, 64);
    expect_fail_lim(b, &lim, "kv[0] 'a': array length 4611686018427387904 of u64 exceeds bytes remaining",
                    "array byte size overflow");
    header(b, 3, 0, 1);
    arr_header(b, "tokens", NPL_GGUF_STRING, 999999999);
    zeros(b, 64);
    expect_fail(b, "kv[0] 'tokens': array length 999999999 of string exceeds bytes remaining", "string array count");
    header(b, 3, 0, 1);
    arr_header(b, "tokens", NPL_GGUF_STRING, 3);
    str(b, "ok");
    u64(b, 50);
    zeros(b, 10);
    expect_fail(b, "kv[0] 'tokens': string [1] length 50 exceeds bytes remaining", "string element past end");
    header(b, 3, 0, 1);
    arr_header(b, "a", 77, 1);
    zeros(b, 8);
    expect_fail(b, "kv[0] 'a': array element type 77 is unknown", "array of unknown element type");
    header(b, 3, 0, 1);
    str(b, "a");
    u32(b, NPL_GGUF_ARRAY);
    u32(b, NPL_GGUF_UINT32);
    expect_fail(b, "kv[0] 'a': array length truncated", "array header truncated");

    /* nested arrays: well-formed ones are accepted, broken ones fail cleanly */
    header(b, 3, 0, 1);
    arr_header(b, "nested", NPL_GGUF_ARRAY, 2);
    u32(b, NPL_GGUF_INT32);
    u64(b, 2);
    u32(b, 1);
    u32(b, 2);
    u32(b, NPL_GGUF_STRING);
    u64(b, 1);
    str(b, "x");
    expect_ok(b, "nested arrays");
    header(b, 3, 0, 1);
    arr_header(b, "nested", NPL_GGUF_ARRAY, 2);
    u32(b, NPL_GGUF_INT32);
    u64(b, 2);
    u32(b, 1);
    u32(b, 2);
    u32(b, NPL_GGUF_INT32);
    u64(b, 1000);
    expect_fail(b, "kv[0] 'nested': array length 1000 of i32 exceeds bytes remaining", "nested array past end");
    header(b, 3, 0, 1);
    arr_header(b, "deep", NPL_GGUF_ARRAY, 1);
    for (int i = 0; i < 20; i++) {
        u32(b, NPL_GGUF_ARRAY);
        u64(b, 1);
    }
    zeros(b, 16);
    expect_fail(b, "kv[0] 'deep': arrays nested more than", "arrays nested too deep");
    header(b, 3, 0, 1);
    arr_header(b, "nested", NPL_GGUF_ARRAY, 1ull << 40);
    zeros(b, 64);
    expect_fail(b, "kv[0] 'nested': array length", "nested array of huge count");
}

static void alignment_cases(buf *b) {
    header(b, 3, 1, 1);
    kv_u32(b, "general.alignment", 0);
    finish_one_tensor(b);
    expect_fail(b, "'general.alignment': alignment 0 is not a nonzero power of two", "alignment 0");
    header(b, 3, 1, 1);
    kv_u32(b, "general.alignment", 48);
    finish_one_tensor(b);
    expect_fail(b, "'general.alignment': alignment 48 is not a nonzero power of two", "alignment 48");
    header(b, 3, 1, 1);
    str(b, "general.alignment");
    u32(b, NPL_GGUF_UINT64);
    u64(b, 32);
    finish_one_tensor(b);
    expect_fail(b, "'general.alignment': type u64, expected u32", "alignment of the wrong type");
    header(b, 3, 1, 1);
    kv_u32(b, "general.alignment", 1u << 31);
    finish_one_tensor(b);
    expect_fail(b, "data section: starts at 2147483648", "alignment past end of file");
}

/* One tensor-info case: the tensor section holds exactly the given infos. */
static void one_tensor(buf *b, const char *name, uint32_t nd, const int64_t *ne, uint32_t type, uint64_t off,
                       size_t data, const char *field, const char *why) {
    header(b, 3, 1, 0);
    tinfo(b, name, nd, ne, type, off);
    pad_to(b, 32);
    zeros(b, data);
    expect_fail(b, field, why);
}

static void tensor_cases(buf *b) {
    int64_t ne[5] = {8, 1, 1, 1, 1};
    one_tensor(b, "", 1, ne, NPL_TYPE_F32, 0, 32, "tensor #0: empty name", "empty tensor name");
    one_tensor(b, "w", 0, ne, NPL_TYPE_F32, 0, 32, "tensor 'w' (#0): n_dims 0 is outside 1..4", "n_dims 0");
    one_tensor(b, "w", 5, ne, NPL_TYPE_F32, 0, 64, "tensor 'w' (#0): n_dims 5 is outside 1..4", "n_dims 5");
    int64_t z[2] = {8, 0};
    one_tensor(b, "w", 2, z, NPL_TYPE_F32, 0, 32, "tensor 'w' (#0): ne[1] = 0 must be positive", "zero dim");
    int64_t neg[2] = {8, -4};
    one_tensor(b, "w", 2, neg, NPL_TYPE_F32, 0, 32, "tensor 'w' (#0): ne[1] = -4 must be positive", "negative dim");
    int64_t big[3] = {1ll << 32, 1ll << 32, 1ll << 32};
    one_tensor(b, "w", 3, big, NPL_TYPE_F32, 0, 32, "element count of shape [4294967296, 4294967296, 4294967296] overflows",
               "element count overflow");
    int64_t bytes[2] = {1ll << 32, 1ll << 30};
    one_tensor(b, "w", 2, bytes, NPL_TYPE_F32, 0, 32, "tensor 'w' (#0): byte size of f32 [4294967296, 1073741824] overflows",
               "byte size overflow");
    one_tensor(b, "blk.0.attn_q.weight", 1, ne, 4, 0, 32, "tensor 'blk.0.attn_q.weight' (#0): unknown type 4", "dtype 4");
    one_tensor(b, "w", 1, ne, 5, 0, 32, "tensor 'w' (#0): unknown type 5", "dtype 5");
    one_tensor(b, "w", 1, ne, 99, 0, 32, "tensor 'w' (#0): unknown type 99", "dtype 99");
    one_tensor(b, "w", 1, ne, 0xFFFFFFFFu, 0, 32, "tensor 'w' (#0): unknown type 4294967295", "dtype 2^32-1");
    int64_t odd[2] = {33, 2};
    one_tensor(b, "q", 2, odd, NPL_TYPE_Q8_0, 0, 256, "tensor 'q' (#0): ne[0] = 33 is not a multiple of the block size 32 of q8_0",
               "row not a multiple of the block");
    int64_t k[1] = {300};
    one_tensor(b, "k", 1, k, NPL_TYPE_Q4_K, 0, 1024, "block size 256 of q4_K", "row not a multiple of the K block");
    one_tensor(b, "w", 1, ne, NPL_TYPE_F32, 16, 64, "tensor 'w' (#0): offset 16 is not a multiple of the alignment 32",
               "offset not aligned");
    one_tensor(b, "model.w", 1, ne, NPL_TYPE_F32, 1ull << 40, 32, "tensor 'model.w' (#0): offset 1099511627776 + 32 bytes runs past end",
               "offset out of range");
    one_tensor(b, "w", 1, ne, NPL_TYPE_F32, 0, 31, "tensor 'w' (#0): offset 0 + 32 bytes runs past end", "data truncated");
    one_tensor(b, "w", 1, ne, NPL_TYPE_F32, UINT64_MAX - 31, 32, "tensor 'w' (#0): offset 18446744073709551584",
               "offset + size wraps around");

    header(b, 3, 1, 0);
    tinfo(b, "w", 1, ne, NPL_TYPE_F32, 0);
    expect_fail(b, "data section: starts at", "tensor infos end at end of file");
    header(b, 3, 1, 0);
    str(b, "weight.x");
    u32(b, 1);
    u64(b, 8);
    u32(b, NPL_TYPE_F32);
    u32(b, 0); /* half of the 8-byte offset */
    expect_fail(b, "tensor 'weight.x' (#0): offset truncated", "tensor info truncated");
    header(b, 3, 1, 0);
    u64(b, 10000);
    zeros(b, 40);
    expect_fail(b, "tensor #0: name length 10000 exceeds bytes remaining", "tensor name past end");
    header(b, 3, 1, 0);
    u64(b, 3);
    put(b, "w\0x", 3);
    u32(b, 1);
    u64(b, 8);
    u32(b, 0);
    u64(b, 0);
    pad_to(b, 32);
    zeros(b, 32);
    expect_fail(b, "tensor #0: name contains a NUL", "tensor name with NUL");

    /* two tensors */
    header(b, 3, 2, 0);
    tinfo(b, "same", 1, ne, NPL_TYPE_F32, 0);
    tinfo(b, "same", 1, ne, NPL_TYPE_F32, 32);
    pad_to(b, 32);
    zeros(b, 64);
    expect_fail(b, "tensor 'same' (#1): duplicate tensor name (first at #0)", "duplicate tensor name");
    int64_t ne16[1] = {16};
    header(b, 3, 2, 0);
    tinfo(b, "a", 1, ne16, NPL_TYPE_F32, 0); /* bytes [0, 64) */
    tinfo(b, "b", 1, ne, NPL_TYPE_F32, 32);  /* bytes [32, 64) */
    pad_to(b, 32);
    zeros(b, 64);
    expect_fail(b, "tensor 'b' (#1): data at offset 32 overlaps tensor 'a' (#0)", "overlapping tensors");
    header(b, 3, 2, 0);
    tinfo(b, "a", 1, ne, NPL_TYPE_F32, 64);
    tinfo(b, "b", 1, ne, NPL_TYPE_F32, 64);
    pad_to(b, 32);
    zeros(b, 96);
    expect_fail(b, "overlaps tensor", "two tensors at the same offset");
}

/* ---- prefixes and corruptions of a valid file ---- */

static void make_valid(buf *b) {
    static const char *const toks[] = {"<s>", "", "hello"};
    int64_t q[2] = {32, 1}, f[1] = {8};
    header(b, 3, 2, 5);
    str(b, "general.architecture");
    u32(b, NPL_GGUF_STRING);
    str(b, "llama");
    kv_u32(b, "general.alignment", 32);
    arr_header(b, "tokenizer.ggml.tokens", NPL_GGUF_STRING, 3);
    for (int i = 0; i < 3; i++) str(b, toks[i]);
    arr_header(b, "a.f32", NPL_GGUF_FLOAT32, 2);
    zeros(b, 8);
    str(b, "flag");
    u32(b, NPL_GGUF_BOOL);
    u8(b, 1);
    tinfo(b, "blk.0.q", 2, q, NPL_TYPE_Q8_0, 0); /* 34 bytes at 0 */
    tinfo(b, "norm", 1, f, NPL_TYPE_F32, 64);    /* 32 bytes at 64: the file ends with it, unpadded */
    pad_to(b, 32);
    for (int i = 0; i < 96; i++) u8(b, (uint8_t)i);
}

static void prefix_and_corruption(buf *b) {
    char err[512];
    make_valid(b);
    size_t full = b->n;
    expect_ok(b, "the valid file");
    int bad = 0;
    for (size_t n = 0; n < full; n++) {
        err[0] = 0;
        npl_gguf *g = npl_gguf_open_memory(b->p, n, "t.gguf", NULL, err, sizeof err);
        /* each prefix fails, with one line that names the file */
        if (g || strncmp(err, "t.gguf: ", 8) || strchr(err, '\n') || strlen(err) < 12) {
            bad++;
            fprintf(stderr, "  prefix %zu of %zu: %s\n", n, full, g ? "opened" : err);
        }
        npl_gguf_close(g);
    }
    CHECK_EQ_INT(bad, 0);
    n_cases++;

    /* every byte replaced by a few values: any outcome but a crash or a leak */
    static const uint8_t vals[] = {0x00, 0x01, 0x7f, 0x80, 0xff};
    uint8_t *copy = malloc(full);
    int opened = 0;
    for (size_t i = 0; i < full; i++) {
        for (size_t v = 0; v < sizeof vals; v++) {
            memcpy(copy, b->p, full);
            copy[i] = vals[v];
            npl_gguf *g = npl_gguf_open_memory(copy, full, "t.gguf", NULL, err, sizeof err);
            if (g) {
                opened++;
                for (int64_t t = 0; t < npl_gguf_n_tensors(g); t++) {
                    const npl_gguf_tensor *tt = npl_gguf_tensor_at(g, t);
                    volatile uint8_t last = ((const uint8_t *)tt->data)[tt->size - 1];
                    (void)last;
                }
            } else if (!strstr(err, "t.gguf: ") || strchr(err, '\n')) {
                bad++;
            }
            npl_gguf_close(g);
        }
    }
    CHECK_EQ_INT(bad, 0);
    CHECK(opened > 0); /* corrupting tensor data bytes keeps the file valid */
    free(copy);
    n_cases++;
}

/* open() on paths: missing file, directory, empty file, truncated file on disk. */
static void path_cases(buf *b) {
    char err[512], dir[] = "/tmp/npl_gguf_mal_XXXXXX", path[64];
    npl_gguf *g = npl_gguf_open("/nonexistent/x.gguf", NULL, err, sizeof err);
    CHECK(!g && strstr(err, "/nonexistent/x.gguf: open: ") == err);
    CHECK(mkdtemp(dir) != NULL);
    g = npl_gguf_open(dir, NULL, err, sizeof err);
    CHECK(!g && strstr(err, "is a directory"));
    snprintf(path, sizeof path, "%s/empty.gguf", dir);
    FILE *f = fopen(path, "wb");
    CHECK(f != NULL);
    if (f) fclose(f);
    g = npl_gguf_open(path, NULL, err, sizeof err);
    CHECK(!g && strstr(err, "magic") && strstr(err, path) == err);
    make_valid(b);
    f = fopen(path, "wb");
    if (f) {
        fwrite(b->p, 1, b->n - 1, f);
        fclose(f);
    }
    g = npl_gguf_open(path, NULL, err, sizeof err);
    CHECK(!g && strstr(err, "tensor 'norm' (#1): offset 64 + 32 bytes runs past end"));
    f = fopen(path, "wb");
    if (f) {
        fwrite(b->p, 1, b->n, f);
        fclose(f);
    }
    g = npl_gguf_open(path, NULL, err, sizeof err);
    CHECK(g != NULL);
    if (g) {
        int64_t k = npl_gguf_find_key(g, "tokenizer.ggml.tokens");
        npl_gguf_str s = npl_gguf_arr_str(g, k, 2);
        CHECK(s.len == 5 && !memcmp(s.ptr, "hello", 5));
        CHECK(npl_gguf_find_tensor(g, "norm") && npl_gguf_find_tensor(g, "norm")->offset == 64);
    }
    npl_gguf_close(g);
    unlink(path);
    rmdir(dir);
    /* a NULL or tiny error buffer is fine */
    CHECK(npl_gguf_open_memory(b->p, 3, NULL, NULL, NULL, 0) == NULL);
    CHECK(npl_gguf_open_memory(b->p, 3, NULL, NULL, err, 1) == NULL && err[0] == 0);
    CHECK(npl_gguf_open_memory(NULL, 0, "x", NULL, err, sizeof err) == NULL);
}

int main(void) {
    buf b = {0};
    header_cases(&b);
    key_cases(&b);
    value_cases(&b);
    array_cases(&b);
    alignment_cases(&b);
    tensor_cases(&b);
    prefix_and_corruption(&b);
    path_cases(&b);
    free(b.p);
    printf("%d malformed cases\n", n_cases);
    CHECK(n_cases >= 40);
    TEST_MAIN_END();
}
