/* GGUF reader: map the file (or take a caller buffer) and make one validating
 * pass over header, metadata and tensor infos. Nothing in the file is
 * trusted: every count and length is compared with the caps and with the
 * bytes remaining before it is used or allocated, so a malformed file fails
 * with one line naming the field instead of crashing. Values stay in the
 * mapping; we only keep offsets to them. */
#define _POSIX_C_SOURCE 200809L
#include "core/quote.h"
#include "format/gguf.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/checked.h"
#include "kernels/dtype.h"
#include "core/status.h"

/* Values are read with memcpy straight from the file, which is little-endian. */
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the GGUF reader assumes a little-endian host"
#endif

#define GGUF_MAX_NESTING 8      /* arrays of arrays deeper than this are rejected */
#define GGUF_MAX_KEY_LEN 65535  /* the GGUF spec caps keys at 2^16-1 bytes */
#define GGUF_MIN_KV_BYTES 14    /* key len 8 + 1 byte + type 4 + 1-byte value */
#define GGUF_MIN_TI_BYTES 33    /* name len 8 + 1 byte + n_dims 4 + ne 8 + type 4 + offset 8 */

typedef struct {
    npl_gguf_vtype type;
    npl_gguf_vtype arr_type; /* arrays only */
    uint64_t arr_n;          /* arrays only */
    size_t pos;              /* file offset of the value (arrays: of the first element) */
    size_t *str_pos;         /* string arrays: file offset of each string's length field */
} gguf_kv;

/* Open-addressing table of indices into `names` (-1 = empty slot). */
typedef struct {
    int64_t *slot;
    size_t mask;
    const npl_gguf_str *names;
} name_index;

struct npl_gguf {
    char *path;
    const uint8_t *base;
    size_t size;
    void *map; /* our mapping; NULL for open_memory */
    uint32_t version;
    size_t alignment, data_offset;
    int64_t n_kv, n_tensors;
    npl_gguf_str *keys; /* [n_kv] pointing into the file */
    gguf_kv *kv;        /* [n_kv] */
    npl_gguf_str *tname; /* [n_tensors] names as stored, for hashing */
    npl_gguf_tensor *tensors;
    char *names; /* NUL-terminated copies of all tensor names, one block */
    name_index kv_index, t_index;
};

static const uint8_t scalar_size[NPL_GGUF_VTYPE_COUNT] = {1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8};

static const char *const vtype_names[NPL_GGUF_VTYPE_COUNT] = {
    "u8", "i8", "u16", "i16", "u32", "i32", "f32", "bool", "string", "array", "u64", "i64", "f64"};

const char *npl_gguf_vtype_name(npl_gguf_vtype t) {
    return (unsigned)t < NPL_GGUF_VTYPE_COUNT ? vtype_names[t] : "?";
}

npl_gguf_limits npl_gguf_default_limits(void) {
    npl_gguf_limits l = {1u << 20, 16u << 20, 1u << 20, 1u << 20};
    return l;
}

static npl_gguf_limits merge_limits(const npl_gguf_limits *user) {
    npl_gguf_limits l = npl_gguf_default_limits();
    if (user) {
        if (user->max_string_len) l.max_string_len = user->max_string_len;
        if (user->max_array_len) l.max_array_len = user->max_array_len;
        if (user->max_kv) l.max_kv = user->max_kv;
        if (user->max_tensors) l.max_tensors = user->max_tensors;
    }
    return l;
}

/* ---- name index ---- */

static uint64_t hash_bytes(const char *p, uint64_t n) {
    uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a */
    for (uint64_t i = 0; i < n; i++) h = (h ^ (uint8_t)p[i]) * 0x100000001b3ull;
    return h;
}

static int index_init(name_index *ix, int64_t n, const npl_gguf_str *names) {
    size_t cap = 16;
    while (cap / 2 < (uint64_t)n) cap *= 2; /* n is capped far below SIZE_MAX / 4 */
    ix->slot = malloc(cap * sizeof *ix->slot);
    if (!ix->slot) return -1;
    for (size_t i = 0; i < cap; i++) ix->slot[i] = -1;
    ix->mask = cap - 1;
    ix->names = names;
    return 0;
}

static int64_t index_find(const name_index *ix, const char *p, uint64_t n) {
    if (!ix->slot) return -1;
    for (size_t h = (size_t)hash_bytes(p, n) & ix->mask;; h = (h + 1) & ix->mask) {
        int64_t k = ix->slot[h];
        if (k < 0) return -1;
        if (ix->names[k].len == n && !memcmp(ix->names[k].ptr, p, (size_t)n)) return k;
    }
}

static void index_add(name_index *ix, int64_t k) {
    size_t h = (size_t)hash_bytes(ix->names[k].ptr, ix->names[k].len) & ix->mask;
    while (ix->slot[h] >= 0) h = (h + 1) & ix->mask;
    ix->slot[h] = k;
}

/* ---- cursor and error reporting ---- */

typedef struct {
    const uint8_t *base;
    size_t size, pos;
    npl_gguf_limits lim;
    const char *file;
    char *err;
    size_t errlen;
    char field[160]; /* what we are parsing, e.g. "kv[5] 'general.name'" */
} cursor;

static size_t remaining(const cursor *c) { return c->size - c->pos; }

static int fail_va(cursor *c, npl_status code, const char *fmt, va_list ap) {
    npl_status_note(code);
    if (!c->err || !c->errlen) return -1;
    int n = snprintf(c->err, c->errlen, "%s: %s: ", c->file, c->field);
    if (n >= 0 && (size_t)n < c->errlen) vsnprintf(c->err + n, c->errlen - (size_t)n, fmt, ap);
    return -1;
}
/* A malformed file (NPL_ERR_FILE). */
static int fail(cursor *c, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fail_va(c, NPL_ERR_FILE, fmt, ap);
    va_end(ap);
    return -1;
}
/* An allocation failed (NPL_ERR_MEMORY). */
static int fail_oom(cursor *c, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fail_va(c, NPL_ERR_MEMORY, fmt, ap);
    va_end(ap);
    return -1;
}

static void set_field(cursor *c, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->field, sizeof c->field, fmt, ap);
    va_end(ap);
}

static void set_named_field(cursor *c, const char *kind, const npl_gguf_str *name, int64_t i) {
    char q[96];
    npl_quote(q, sizeof q, name->ptr, name->len);
    if (!strcmp(kind, "kv")) set_field(c, "kv[%" PRId64 "] '%s'", i, q);
    else set_field(c, "tensor '%s' (#%" PRId64 ")", q, i);
}

static int need(cursor *c, size_t n, const char *what) {
    if (n <= remaining(c)) return 0;
    return fail(c, "%s%struncated at offset %zu (needs %zu bytes, %zu remaining)", what, *what ? " " : "", c->pos,
                n, remaining(c));
}

static int rd_u32(cursor *c, uint32_t *v, const char *what) {
    if (need(c, 4, what)) return -1;
    memcpy(v, c->base + c->pos, 4);
    c->pos += 4;
    return 0;
}

static int rd_u64(cursor *c, uint64_t *v, const char *what) {
    if (need(c, 8, what)) return -1;
    memcpy(v, c->base + c->pos, 8);
    c->pos += 8;
    return 0;
}

/* Length-prefixed string; idx >= 0 names an array element in messages. */
static int rd_str(cursor *c, npl_gguf_str *s, const char *what, int64_t idx) {
    char w[64];
    uint64_t len;
    if (idx >= 0) snprintf(w, sizeof w, "%s [%" PRId64 "]", what, idx);
    else snprintf(w, sizeof w, "%s", what);
    if (rd_u64(c, &len, w)) return -1;
    if (len > remaining(c))
        return fail(c, "%s length %" PRIu64 " exceeds bytes remaining (%zu)", w, len, remaining(c));
    if (len > c->lim.max_string_len)
        return fail(c, "%s length %" PRIu64 " exceeds limit %" PRIu64, w, len, c->lim.max_string_len);
    s->ptr = (const char *)c->base + c->pos;
    s->len = len;
    c->pos += (size_t)len;
    return 0;
}

/* ---- metadata ---- */

/* Validates an array (its header is at the cursor) and steps over it. At the
 * top level (kv != NULL) it records the element type, count and, for
 * strings, the offset of every element so that arr_str is O(1). */
static int parse_array(cursor *c, int depth, gguf_kv *kv) {
    uint32_t et;
    uint64_t n;
    size_t total;
    if (rd_u32(c, &et, "array element type")) return -1;
    if (et >= NPL_GGUF_VTYPE_COUNT) return fail(c, "array element type %" PRIu32 " is unknown", et);
    if (et == NPL_GGUF_ARRAY && depth >= GGUF_MAX_NESTING)
        return fail(c, "arrays nested more than %d levels deep", GGUF_MAX_NESTING);
    if (rd_u64(c, &n, "array length")) return -1;
    /* Smallest encoding of one element: a string carries an 8-byte length,
     * a nested array a 12-byte header. This bounds work and allocation. */
    size_t min = et == NPL_GGUF_STRING ? 8 : et == NPL_GGUF_ARRAY ? 12 : scalar_size[et];
    if (n > SIZE_MAX || npl_mul_size((size_t)n, min, &total) || total > remaining(c))
        return fail(c, "array length %" PRIu64 " of %s exceeds bytes remaining (%zu)", n,
                    vtype_names[et], remaining(c));
    if (n > c->lim.max_array_len)
        return fail(c, "array length %" PRIu64 " exceeds limit %" PRIu64, n, c->lim.max_array_len);
    if (kv) {
        kv->arr_type = (npl_gguf_vtype)et;
        kv->arr_n = n;
        kv->pos = c->pos;
    }
    if (et == NPL_GGUF_STRING) {
        size_t *pos = NULL;
        if (kv && n) {
            pos = malloc((size_t)n * sizeof *pos); /* n * 8 <= bytes remaining, checked above */
            if (!pos) return fail_oom(c, "out of memory for %" PRIu64 " string offsets", n);
            kv->str_pos = pos;
        }
        for (uint64_t j = 0; j < n; j++) {
            npl_gguf_str s;
            size_t at = c->pos;
            if (rd_str(c, &s, "string", (int64_t)j)) return -1;
            if (pos) pos[j] = at;
        }
    } else if (et == NPL_GGUF_ARRAY) {
        for (uint64_t j = 0; j < n; j++)
            if (parse_array(c, depth + 1, NULL)) return -1;
    } else {
        c->pos += total;
    }
    return 0;
}

static int parse_kv(cursor *c, npl_gguf *g, int64_t i) {
    npl_gguf_str *key = &g->keys[i];
    gguf_kv *kv = &g->kv[i];
    uint32_t type;
    set_field(c, "kv[%" PRId64 "]", i);
    if (rd_str(c, key, "key", -1)) return -1;
    if (key->len == 0) return fail(c, "empty key");
    if (key->len > GGUF_MAX_KEY_LEN)
        return fail(c, "key length %" PRIu64 " exceeds %d", key->len, GGUF_MAX_KEY_LEN);
    if (memchr(key->ptr, 0, (size_t)key->len)) return fail(c, "key contains a NUL byte");
    set_named_field(c, "kv", key, i);
    int64_t first = index_find(&g->kv_index, key->ptr, key->len);
    if (first >= 0) return fail(c, "duplicate key (first at kv[%" PRId64 "])", first);
    if (rd_u32(c, &type, "value type")) return -1;
    if (type >= NPL_GGUF_VTYPE_COUNT) return fail(c, "value type %" PRIu32 " is unknown", type);
    kv->type = (npl_gguf_vtype)type;
    kv->arr_type = NPL_GGUF_VTYPE_COUNT;
    kv->pos = c->pos;
    if (type == NPL_GGUF_STRING) {
        npl_gguf_str s;
        if (rd_str(c, &s, "string value", -1)) return -1;
    } else if (type == NPL_GGUF_ARRAY) {
        if (parse_array(c, 1, kv)) return -1;
    } else {
        if (need(c, scalar_size[type], "value")) return -1;
        c->pos += scalar_size[type];
    }
    index_add(&g->kv_index, i);
    return 0;
}

static int parse_alignment(cursor *c, npl_gguf *g) {
    g->alignment = NPL_GGUF_DEFAULT_ALIGNMENT;
    int64_t k = index_find(&g->kv_index, "general.alignment", 17);
    if (k < 0) return 0;
    uint32_t a;
    set_field(c, "kv[%" PRId64 "] 'general.alignment'", k);
    if (g->kv[k].type != NPL_GGUF_UINT32)
        return fail(c, "type %s, expected u32", npl_gguf_vtype_name(g->kv[k].type));
    memcpy(&a, g->base + g->kv[k].pos, 4);
    if (a == 0 || (a & (a - 1))) return fail(c, "alignment %" PRIu32 " is not a nonzero power of two", a);
    g->alignment = a;
    return 0;
}

/* ---- tensor infos ---- */

static void fmt_dims(char *dst, size_t cap, const int64_t *ne, int nd) {
    size_t o = 0;
    for (int d = 0; d < nd && o < cap; d++)
        o += (size_t)snprintf(dst + o, cap - o, "%s%" PRId64, d ? ", " : "[", ne[d]);
    if (o < cap) snprintf(dst + o, cap - o, "]");
}

static int parse_tensor_info(cursor *c, npl_gguf *g, int64_t i) {
    npl_gguf_tensor *t = &g->tensors[i];
    npl_gguf_str *name = &g->tname[i];
    uint32_t nd, type;
    char dims[128];
    set_field(c, "tensor #%" PRId64, i);
    if (rd_str(c, name, "name", -1)) return -1;
    if (name->len == 0) return fail(c, "empty name");
    if (memchr(name->ptr, 0, (size_t)name->len)) return fail(c, "name contains a NUL byte");
    set_named_field(c, "tensor", name, i);
    int64_t first = index_find(&g->t_index, name->ptr, name->len);
    if (first >= 0) return fail(c, "duplicate tensor name (first at #%" PRId64 ")", first);
    index_add(&g->t_index, i);

    if (rd_u32(c, &nd, "n_dims")) return -1;
    if (nd < 1 || nd > NPL_GGUF_MAX_DIMS)
        return fail(c, "n_dims %" PRIu32 " is outside 1..%d", nd, NPL_GGUF_MAX_DIMS);
    t->n_dims = (int)nd;
    int64_t nelem = 1;
    for (int d = 0; d < NPL_GGUF_MAX_DIMS; d++) t->ne[d] = 1;
    for (int d = 0; d < (int)nd; d++) {
        char what[16];
        uint64_t v;
        snprintf(what, sizeof what, "ne[%d]", d);
        if (rd_u64(c, &v, what)) return -1;
        if (v == 0 || v > (uint64_t)INT64_MAX)
            return fail(c, "ne[%d] = %" PRId64 " must be positive", d, (int64_t)v);
        t->ne[d] = (int64_t)v;
    }
    fmt_dims(dims, sizeof dims, t->ne, t->n_dims);
    for (int d = 0; d < (int)nd; d++)
        if (npl_mul_i64(nelem, t->ne[d], &nelem))
            return fail(c, "element count of shape %s overflows int64", dims);

    if (rd_u32(c, &type, "type")) return -1;
    const npl_type_traits *tr = type <= (uint32_t)INT32_MAX ? npl_type_get((int)type) : NULL;
    if (!tr) return fail(c, "unknown type %" PRIu32, type);
    t->type = (int)type;
    if (t->ne[0] % tr->block_size)
        return fail(c, "ne[0] = %" PRId64 " is not a multiple of the block size %d of %s", t->ne[0],
                    tr->block_size, tr->name);
    size_t row, size;
    int64_t rows = nelem / t->ne[0];
    if (npl_row_size((npl_type)type, t->ne[0], &row) || (uint64_t)rows > SIZE_MAX ||
        npl_mul_size(row, (size_t)rows, &size))
        return fail(c, "byte size of %s %s overflows", tr->name, dims);
    t->size = size;
    if (rd_u64(c, &t->offset, "offset")) return -1;
    return 0;
}

typedef struct {
    uint64_t offset;
    int64_t idx;
} span;

static int span_cmp(const void *a, const void *b) {
    const span *x = a, *y = b;
    return x->offset < y->offset ? -1 : x->offset > y->offset;
}

/* Offsets must be aligned and inside the data section, and no two tensors
 * may share a byte (sorted by offset, each must end before the next). */
static int place_tensors(cursor *c, npl_gguf *g) {
    size_t start;
    set_field(c, "data section");
    if (npl_align_size(c->pos, g->alignment, &start))
        return fail(c, "start offset %zu aligned to %zu overflows", c->pos, g->alignment);
    g->data_offset = start;
    if (g->n_tensors == 0) return 0; /* nothing to place; the padding may be absent */
    if (start > c->size)
        return fail(c, "starts at %zu (tensor infos end at %zu, alignment %zu), past end of file (size %zu)",
                    start, c->pos, g->alignment, c->size);
    size_t data_size = c->size - start;
    for (int64_t i = 0; i < g->n_tensors; i++) {
        npl_gguf_tensor *t = &g->tensors[i];
        set_named_field(c, "tensor", &g->tname[i], i);
        if (t->offset % g->alignment)
            return fail(c, "offset %" PRIu64 " is not a multiple of the alignment %zu", t->offset, g->alignment);
        if (t->offset > data_size || t->size > data_size - t->offset)
            return fail(c, "offset %" PRIu64 " + %zu bytes runs past end of file (data section holds %zu bytes, file size %zu)",
                        t->offset, t->size, data_size, c->size);
        t->data = g->base + start + t->offset;
    }
    span *s = malloc((size_t)g->n_tensors * sizeof *s);
    if (!s) return fail_oom(c, "out of memory sorting %" PRId64 " tensors", g->n_tensors);
    for (int64_t i = 0; i < g->n_tensors; i++) s[i] = (span){g->tensors[i].offset, i};
    qsort(s, (size_t)g->n_tensors, sizeof *s, span_cmp);
    for (int64_t k = 1; k < g->n_tensors; k++) {
        const npl_gguf_tensor *p = &g->tensors[s[k - 1].idx], *t = &g->tensors[s[k].idx];
        if (t->offset - p->offset < p->size) {
            char q[96];
            int64_t pi = s[k - 1].idx, ti = s[k].idx;
            npl_quote(q, sizeof q, g->tname[pi].ptr, g->tname[pi].len);
            set_named_field(c, "tensor", &g->tname[ti], ti);
            free(s);
            return fail(c, "data at offset %" PRIu64 " overlaps tensor '%s' (#%" PRId64 ") at offset %" PRIu64 " (%zu bytes)",
                        t->offset, q, pi, p->offset, p->size);
        }
    }
    free(s);
    return 0;
}

/* Tensor names get NUL-terminated copies in one block so callers can use them as C strings. */
static int copy_names(cursor *c, npl_gguf *g) {
    size_t total = 0;
    for (int64_t i = 0; i < g->n_tensors; i++)
        if (npl_add_size(total, (size_t)g->tname[i].len + 1, &total)) return fail(c, "names too long");
    if (!total) return 0;
    g->names = malloc(total);
    set_field(c, "tensor names");
    if (!g->names) return fail_oom(c, "out of memory for %zu bytes", total);
    char *p = g->names;
    for (int64_t i = 0; i < g->n_tensors; i++) {
        memcpy(p, g->tname[i].ptr, (size_t)g->tname[i].len);
        p[g->tname[i].len] = 0;
        g->tensors[i].name = p;
        p += g->tname[i].len + 1;
    }
    return 0;
}

/* ---- header and the whole parse ---- */

static int parse_header(cursor *c, npl_gguf *g, uint64_t *n_tensors, uint64_t *n_kv) {
    set_field(c, "magic");
    if (need(c, 4, "")) return -1;
    if (memcmp(c->base, "GGUF", 4)) {
        const uint8_t *m = c->base;
        return fail(c, "expected \"GGUF\", got %02x %02x %02x %02x (not a GGUF file)", m[0], m[1], m[2], m[3]);
    }
    c->pos = 4;
    set_field(c, "version");
    if (rd_u32(c, &g->version, "")) return -1;
    if (g->version == 1)
        return fail(c, "GGUF v1 is not supported (it uses 32-bit counts); re-convert the model with a current llama.cpp");
    if (g->version == 0x02000000u || g->version == 0x03000000u)
        return fail(c, "0x%08" PRIx32 " looks byte-swapped: big-endian GGUF files are not supported", g->version);
    if (g->version != 2 && g->version != 3)
        return fail(c, "unsupported version %" PRIu32 " (expected 2 or 3)", g->version);
    set_field(c, "n_tensors");
    if (rd_u64(c, n_tensors, "")) return -1;
    set_field(c, "n_kv");
    if (rd_u64(c, n_kv, "")) return -1;
    if (*n_kv > remaining(c) / GGUF_MIN_KV_BYTES)
        return fail(c, "%" PRIu64 " key/value pairs cannot fit in the %zu bytes remaining", *n_kv, remaining(c));
    if (*n_kv > c->lim.max_kv) return fail(c, "%" PRIu64 " exceeds limit %" PRIu64, *n_kv, c->lim.max_kv);
    set_field(c, "n_tensors"); /* checked exactly once the metadata is parsed; this is the cap */
    if (*n_tensors > remaining(c) / GGUF_MIN_TI_BYTES)
        return fail(c, "%" PRIu64 " tensor infos cannot fit in the %zu bytes remaining", *n_tensors, remaining(c));
    if (*n_tensors > c->lim.max_tensors)
        return fail(c, "%" PRIu64 " exceeds limit %" PRIu64, *n_tensors, c->lim.max_tensors);
    return 0;
}

static int parse_all(cursor *c, npl_gguf *g) {
    uint64_t nt = 0, nkv = 0;
    if (parse_header(c, g, &nt, &nkv)) return -1;
    g->n_kv = (int64_t)nkv;
    set_field(c, "n_kv");
    if (nkv) {
        g->keys = calloc((size_t)nkv, sizeof *g->keys);
        g->kv = calloc((size_t)nkv, sizeof *g->kv);
        if (!g->keys || !g->kv || index_init(&g->kv_index, g->n_kv, g->keys))
            return fail_oom(c, "out of memory for %" PRIu64 " key/value pairs", nkv);
    }
    for (int64_t i = 0; i < g->n_kv; i++)
        if (parse_kv(c, g, i)) return -1;
    if (parse_alignment(c, g)) return -1;

    set_field(c, "n_tensors");
    if (nt > remaining(c) / GGUF_MIN_TI_BYTES)
        return fail(c, "%" PRIu64 " tensor infos cannot fit in the %zu bytes remaining", nt, remaining(c));
    g->n_tensors = (int64_t)nt;
    if (nt) {
        g->tname = calloc((size_t)nt, sizeof *g->tname);
        g->tensors = calloc((size_t)nt, sizeof *g->tensors);
        if (!g->tname || !g->tensors || index_init(&g->t_index, g->n_tensors, g->tname))
            return fail_oom(c, "out of memory for %" PRIu64 " tensors", nt);
    }
    for (int64_t i = 0; i < g->n_tensors; i++)
        if (parse_tensor_info(c, g, i)) return -1;
    if (place_tensors(c, g)) return -1;
    return copy_names(c, g);
}

static npl_gguf *parse(const uint8_t *base, size_t size, const char *file, const npl_gguf_limits *limits,
                       char *err, size_t errlen) {
    cursor c = {.base = base, .size = size, .lim = merge_limits(limits), .file = file, .err = err, .errlen = errlen};
    npl_gguf *g = calloc(1, sizeof *g);
    if (!g || !(g->path = malloc(strlen(file) + 1))) {
        free(g);
        set_field(&c, "open");
        fail_oom(&c, "out of memory");
        return NULL;
    }
    strcpy(g->path, file);
    g->base = base;
    g->size = size;
    if (parse_all(&c, g)) {
        npl_gguf_close(g);
        return NULL;
    }
    if (err && errlen) err[0] = 0;
    return g;
}

npl_gguf *npl_gguf_open_memory(const void *buf, size_t size, const char *name, const npl_gguf_limits *limits,
                               char *err, size_t errlen) {
    static const uint8_t empty[1];
    return parse(buf ? buf : empty, buf ? size : 0, name ? name : "<memory>", limits, err, errlen);
}

npl_gguf *npl_gguf_open(const char *path, const npl_gguf_limits *limits, char *err, size_t errlen) {
    static const uint8_t empty[1];
    struct stat st;
    void *map = NULL;
    if (!path) path = "(null)";
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK); /* a FIFO must not block us; no effect on files */
    if (fd < 0) {
        npl_errf(err, errlen, errno == ENOMEM ? NPL_ERR_MEMORY : NPL_ERR_FILE, "%s: open: %s", path, strerror(errno));
        return NULL;
    }
    const char *why = fstat(fd, &st) ? strerror(errno)
                      : S_ISDIR(st.st_mode) ? "is a directory"
                      : !S_ISREG(st.st_mode) ? "not a regular file"
                      : (uint64_t)st.st_size > SIZE_MAX ? "too large to map" : NULL;
    if (why) {
        npl_errf(err, errlen, NPL_ERR_FILE, "%s: open: %s", path, why);
        close(fd);
        return NULL;
    }
    size_t size = (size_t)st.st_size;
    if (size) {
        map = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (map == MAP_FAILED) {
            npl_errf(err, errlen, errno == ENOMEM ? NPL_ERR_MEMORY : NPL_ERR_FILE, "%s: mmap: %s", path, strerror(errno));
            close(fd);
            return NULL;
        }
    }
    close(fd); /* the mapping keeps the file alive */
    npl_gguf *g = parse(map ? map : empty, size, path, limits, err, errlen);
    if (!g) {
        if (map) munmap(map, size);
        return NULL;
    }
    g->map = map;
    return g;
}

void npl_gguf_close(npl_gguf *g) {
    if (!g) return;
    for (int64_t i = 0; g->kv && i < g->n_kv; i++) free(g->kv[i].str_pos);
    free(g->kv);
    free(g->keys);
    free(g->tname);
    free(g->tensors);
    free(g->names);
    free(g->kv_index.slot);
    free(g->t_index.slot);
    if (g->map) munmap(g->map, g->size);
    free(g->path);
    free(g);
}

/* ---- accessors ---- */

const char *npl_gguf_path(const npl_gguf *g) { return g ? g->path : NULL; }
uint32_t npl_gguf_version(const npl_gguf *g) { return g ? g->version : 0; }
size_t npl_gguf_alignment(const npl_gguf *g) { return g ? g->alignment : 0; }
size_t npl_gguf_file_size(const npl_gguf *g) { return g ? g->size : 0; }
const void *npl_gguf_base(const npl_gguf *g) { return g ? g->base : NULL; }
size_t npl_gguf_data_offset(const npl_gguf *g) { return g ? g->data_offset : 0; }
int64_t npl_gguf_n_kv(const npl_gguf *g) { return g ? g->n_kv : 0; }
int64_t npl_gguf_n_tensors(const npl_gguf *g) { return g ? g->n_tensors : 0; }

static const gguf_kv *kv_at(const npl_gguf *g, int64_t i) {
    return g && i >= 0 && i < g->n_kv ? &g->kv[i] : NULL;
}

int64_t npl_gguf_find_key(const npl_gguf *g, const char *key) {
    return g && key ? index_find(&g->kv_index, key, strlen(key)) : -1;
}

npl_gguf_str npl_gguf_key(const npl_gguf *g, int64_t i) {
    npl_gguf_str none = {NULL, 0};
    return kv_at(g, i) ? g->keys[i] : none;
}

npl_gguf_vtype npl_gguf_kv_type(const npl_gguf *g, int64_t i) {
    const gguf_kv *kv = kv_at(g, i);
    return kv ? kv->type : NPL_GGUF_VTYPE_COUNT;
}

npl_gguf_vtype npl_gguf_arr_type(const npl_gguf *g, int64_t i) {
    const gguf_kv *kv = kv_at(g, i);
    return kv && kv->type == NPL_GGUF_ARRAY ? kv->arr_type : NPL_GGUF_VTYPE_COUNT;
}

uint64_t npl_gguf_arr_n(const npl_gguf *g, int64_t i) {
    const gguf_kv *kv = kv_at(g, i);
    return kv && kv->type == NPL_GGUF_ARRAY ? kv->arr_n : 0;
}

const void *npl_gguf_kv_data(const npl_gguf *g, int64_t i) {
    const gguf_kv *kv = kv_at(g, i);
    return kv && kv->type != NPL_GGUF_STRING && kv->type != NPL_GGUF_ARRAY ? g->base + kv->pos : NULL;
}

npl_gguf_str npl_gguf_kv_str(const npl_gguf *g, int64_t i) {
    npl_gguf_str s = {NULL, 0};
    const gguf_kv *kv = kv_at(g, i);
    if (!kv || kv->type != NPL_GGUF_STRING) return s;
    memcpy(&s.len, g->base + kv->pos, 8);
    s.ptr = (const char *)g->base + kv->pos + 8;
    return s;
}

const void *npl_gguf_arr_data(const npl_gguf *g, int64_t i) {
    const gguf_kv *kv = kv_at(g, i);
    if (!kv || kv->type != NPL_GGUF_ARRAY || kv->arr_type == NPL_GGUF_STRING || kv->arr_type == NPL_GGUF_ARRAY)
        return NULL;
    return g->base + kv->pos;
}

npl_gguf_str npl_gguf_arr_str(const npl_gguf *g, int64_t i, uint64_t j) {
    npl_gguf_str s = {NULL, 0};
    const gguf_kv *kv = kv_at(g, i);
    if (!kv || kv->type != NPL_GGUF_ARRAY || kv->arr_type != NPL_GGUF_STRING || j >= kv->arr_n) return s;
    const uint8_t *p = g->base + kv->str_pos[j];
    memcpy(&s.len, p, 8);
    s.ptr = (const char *)p + 8;
    return s;
}

/* Integer scalar at i as (signed value) or (unsigned value); -2 if not an integer. */
static int int_at(const npl_gguf *g, int64_t i, int *is_signed, int64_t *sv, uint64_t *uv) {
    const uint8_t *p = g->base + g->kv[i].pos;
    union { uint8_t u8; int8_t i8; uint16_t u16; int16_t i16; uint32_t u32; int32_t i32; uint64_t u64; int64_t i64; } v;
    *is_signed = 1;
    switch (g->kv[i].type) {
    case NPL_GGUF_UINT8: memcpy(&v.u8, p, 1); *uv = v.u8; *is_signed = 0; return 0;
    case NPL_GGUF_UINT16: memcpy(&v.u16, p, 2); *uv = v.u16; *is_signed = 0; return 0;
    case NPL_GGUF_UINT32: memcpy(&v.u32, p, 4); *uv = v.u32; *is_signed = 0; return 0;
    case NPL_GGUF_UINT64: memcpy(&v.u64, p, 8); *uv = v.u64; *is_signed = 0; return 0;
    case NPL_GGUF_INT8: memcpy(&v.i8, p, 1); *sv = v.i8; return 0;
    case NPL_GGUF_INT16: memcpy(&v.i16, p, 2); *sv = v.i16; return 0;
    case NPL_GGUF_INT32: memcpy(&v.i32, p, 4); *sv = v.i32; return 0;
    case NPL_GGUF_INT64: memcpy(&v.i64, p, 8); *sv = v.i64; return 0;
    default: return -2;
    }
}

int npl_gguf_get_u32(const npl_gguf *g, const char *key, uint32_t *out) {
    int64_t i = npl_gguf_find_key(g, key), sv = 0;
    uint64_t uv = 0;
    int is_signed;
    if (i < 0) return -1;
    if (int_at(g, i, &is_signed, &sv, &uv)) return -2;
    if (is_signed) {
        if (sv < 0) return -2;
        uv = (uint64_t)sv;
    }
    if (uv > UINT32_MAX) return -2;
    if (out) *out = (uint32_t)uv;
    return 0;
}

int npl_gguf_get_i64(const npl_gguf *g, const char *key, int64_t *out) {
    int64_t i = npl_gguf_find_key(g, key), sv = 0;
    uint64_t uv = 0;
    int is_signed;
    if (i < 0) return -1;
    if (int_at(g, i, &is_signed, &sv, &uv)) return -2;
    if (!is_signed) {
        if (uv > (uint64_t)INT64_MAX) return -2;
        sv = (int64_t)uv;
    }
    if (out) *out = sv;
    return 0;
}

int npl_gguf_get_f32(const npl_gguf *g, const char *key, float *out) {
    int64_t i = npl_gguf_find_key(g, key);
    if (i < 0) return -1;
    const uint8_t *p = g->base + g->kv[i].pos;
    if (g->kv[i].type == NPL_GGUF_FLOAT32) {
        float f;
        memcpy(&f, p, 4);
        if (out) *out = f;
    } else if (g->kv[i].type == NPL_GGUF_FLOAT64) {
        double d;
        memcpy(&d, p, 8);
        if (out) *out = (float)d;
    } else {
        return -2;
    }
    return 0;
}

int npl_gguf_get_bool(const npl_gguf *g, const char *key, int *out) {
    int64_t i = npl_gguf_find_key(g, key);
    if (i < 0) return -1;
    if (g->kv[i].type != NPL_GGUF_BOOL) return -2;
    if (out) *out = g->base[g->kv[i].pos] != 0;
    return 0;
}

int npl_gguf_get_str(const npl_gguf *g, const char *key, npl_gguf_str *out) {
    int64_t i = npl_gguf_find_key(g, key);
    if (i < 0) return -1;
    if (g->kv[i].type != NPL_GGUF_STRING) return -2;
    if (out) *out = npl_gguf_kv_str(g, i);
    return 0;
}

int npl_gguf_get_number_at(const npl_gguf *g, int64_t i, double *out) {
    const gguf_kv *kv = kv_at(g, i);
    int64_t sv = 0;
    uint64_t uv = 0;
    int is_signed;
    double d;
    if (!kv) return -1;
    const uint8_t *p = g->base + kv->pos;
    if (kv->type == NPL_GGUF_FLOAT32) {
        float f;
        memcpy(&f, p, 4);
        d = f;
    } else if (kv->type == NPL_GGUF_FLOAT64) {
        memcpy(&d, p, 8);
    } else if (kv->type == NPL_GGUF_BOOL) {
        d = *p != 0;
    } else if (!int_at(g, i, &is_signed, &sv, &uv)) {
        d = is_signed ? (double)sv : (double)uv;
    } else {
        return -2;
    }
    if (out) *out = d;
    return 0;
}

const npl_gguf_tensor *npl_gguf_tensor_at(const npl_gguf *g, int64_t i) {
    return g && i >= 0 && i < g->n_tensors ? &g->tensors[i] : NULL;
}

const npl_gguf_tensor *npl_gguf_find_tensor(const npl_gguf *g, const char *name) {
    int64_t i = g && name ? index_find(&g->t_index, name, strlen(name)) : -1;
    return i >= 0 ? &g->tensors[i] : NULL;
}
