/* GGUF writer (version 3). Metadata values are serialized to their on-disk
 * bytes as they are set, tensors are only described until write time; then
 * the whole file goes to PATH.tmp and is renamed over PATH, so readers never
 * see a half-written file and a failure leaves nothing behind. The first
 * error in a setter is sticky and reported again by npl_gguf_writer_write,
 * so a caller that ignores a return code cannot write an incomplete file. */
#define _POSIX_C_SOURCE 200809L
#include "format/gguf.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/checked.h"
#include "kernels/dtype.h"

typedef struct {
    char *key;
    npl_gguf_vtype type;
    uint8_t *val; /* exact on-disk value bytes (array: element type + count + elements) */
    size_t val_size;
} wkv;

typedef struct {
    char *name;
    int type, n_dims;
    int64_t ne[NPL_GGUF_MAX_DIMS];
    const void *data;
    size_t size;
    uint64_t offset; /* assigned at write time */
} wtensor;

struct npl_gguf_writer {
    wkv *kv;
    size_t n_kv, cap_kv;
    wtensor *t;
    size_t n_t, cap_t;
    uint32_t alignment;
    char err[256]; /* first setter error, "FIELD: what" */
};

static const uint8_t scalar_size[NPL_GGUF_VTYPE_COUNT] = {1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8};

static int is_scalar(npl_gguf_vtype t) {
    return (unsigned)t < NPL_GGUF_VTYPE_COUNT && t != NPL_GGUF_STRING && t != NPL_GGUF_ARRAY;
}

static int werr(npl_gguf_writer *w, const char *fmt, ...) {
    if (w && !w->err[0]) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(w->err, sizeof w->err, fmt, ap);
        va_end(ap);
    }
    return -1;
}

static char *dup_str(const char *s) {
    size_t n = strlen(s) + 1;
    char *p = malloc(n);
    if (p) memcpy(p, s, n);
    return p;
}

npl_gguf_writer *npl_gguf_writer_new(void) {
    npl_gguf_writer *w = calloc(1, sizeof *w);
    if (w) w->alignment = NPL_GGUF_DEFAULT_ALIGNMENT;
    return w;
}

void npl_gguf_writer_free(npl_gguf_writer *w) {
    if (!w) return;
    for (size_t i = 0; i < w->n_kv; i++) {
        free(w->kv[i].key);
        free(w->kv[i].val);
    }
    for (size_t i = 0; i < w->n_t; i++) free(w->t[i].name);
    free(w->kv);
    free(w->t);
    free(w);
}

static int grow(void **arr, size_t *cap, size_t n, size_t elem) {
    if (n < *cap) return 0;
    size_t nc = *cap ? *cap * 2 : 16, bytes;
    if (npl_mul_size(nc, elem, &bytes)) return -1;
    void *p = realloc(*arr, bytes);
    if (!p) return -1;
    *arr = p;
    *cap = nc;
    return 0;
}

/* Stores a serialized value under key, replacing an earlier value of the
 * same key in place (so key order stays that of first insertion). Takes
 * ownership of val. */
static int put_kv(npl_gguf_writer *w, const char *key, npl_gguf_vtype type, uint8_t *val, size_t size) {
    if (!w) {
        free(val);
        return -1;
    }
    if (!key || !key[0]) {
        free(val);
        return werr(w, "kv: empty key");
    }
    if (!val) return werr(w, "kv '%s': out of memory", key);
    for (size_t i = 0; i < w->n_kv; i++) {
        if (strcmp(w->kv[i].key, key)) continue;
        free(w->kv[i].val);
        w->kv[i].type = type;
        w->kv[i].val = val;
        w->kv[i].val_size = size;
        return 0;
    }
    char *k = dup_str(key);
    if (!k || grow((void **)&w->kv, &w->cap_kv, w->n_kv, sizeof *w->kv)) {
        free(k);
        free(val);
        return werr(w, "kv '%s': out of memory", key);
    }
    w->kv[w->n_kv++] = (wkv){k, type, val, size};
    return 0;
}

static uint8_t *copy_bytes(const void *p, size_t n) {
    uint8_t *b = malloc(n ? n : 1);
    if (b && n) memcpy(b, p, n);
    return b;
}

int npl_gguf_writer_set_scalar(npl_gguf_writer *w, const char *key, npl_gguf_vtype t, const void *value) {
    if (!is_scalar(t) || !value) return werr(w, "kv '%s': invalid scalar type %d", key ? key : "", (int)t);
    /* Keep general.alignment and the layout in step, whichever setter is used. */
    if (w && key && !strcmp(key, "general.alignment")) {
        uint32_t a = 0;
        if (t != NPL_GGUF_UINT32) return werr(w, "kv 'general.alignment': must be u32");
        memcpy(&a, value, 4);
        w->alignment = a;
    }
    return put_kv(w, key, t, copy_bytes(value, scalar_size[t]), scalar_size[t]);
}

int npl_gguf_writer_set_u32(npl_gguf_writer *w, const char *key, uint32_t v) {
    return npl_gguf_writer_set_scalar(w, key, NPL_GGUF_UINT32, &v);
}
int npl_gguf_writer_set_i32(npl_gguf_writer *w, const char *key, int32_t v) {
    return npl_gguf_writer_set_scalar(w, key, NPL_GGUF_INT32, &v);
}
int npl_gguf_writer_set_u64(npl_gguf_writer *w, const char *key, uint64_t v) {
    return npl_gguf_writer_set_scalar(w, key, NPL_GGUF_UINT64, &v);
}
int npl_gguf_writer_set_f32(npl_gguf_writer *w, const char *key, float v) {
    return npl_gguf_writer_set_scalar(w, key, NPL_GGUF_FLOAT32, &v);
}
int npl_gguf_writer_set_bool(npl_gguf_writer *w, const char *key, int v) {
    uint8_t b = v != 0;
    return npl_gguf_writer_set_scalar(w, key, NPL_GGUF_BOOL, &b);
}

void npl_gguf_writer_set_alignment(npl_gguf_writer *w, uint32_t alignment) {
    npl_gguf_writer_set_u32(w, "general.alignment", alignment); /* validated at write time */
}

int npl_gguf_writer_set_str(npl_gguf_writer *w, const char *key, const char *v) {
    if (!v) return werr(w, "kv '%s': NULL string", key ? key : "");
    uint64_t n = strlen(v);
    uint8_t *b = malloc(8 + (size_t)n);
    if (b) {
        memcpy(b, &n, 8);
        memcpy(b + 8, v, (size_t)n);
    }
    return put_kv(w, key, NPL_GGUF_STRING, b, 8 + (size_t)n);
}

int npl_gguf_writer_set_arr(npl_gguf_writer *w, const char *key, npl_gguf_vtype t, const void *data, uint64_t n) {
    size_t bytes, total;
    uint32_t et = (uint32_t)t;
    if (!is_scalar(t)) return werr(w, "kv '%s': array element type %d is not numeric", key ? key : "", (int)t);
    if (n && !data) return werr(w, "kv '%s': NULL array data", key ? key : "");
    if (n > SIZE_MAX || npl_mul_size((size_t)n, scalar_size[t], &bytes) || npl_add_size(bytes, 12, &total))
        return werr(w, "kv '%s': array of %" PRIu64 " elements is too large", key ? key : "", n);
    uint8_t *b = malloc(total);
    if (b) {
        memcpy(b, &et, 4);
        memcpy(b + 4, &n, 8);
        if (bytes) memcpy(b + 12, data, bytes);
    }
    return put_kv(w, key, NPL_GGUF_ARRAY, b, total);
}

int npl_gguf_writer_set_arr_str(npl_gguf_writer *w, const char *key, const char *const *strs, uint64_t n) {
    size_t total = 12;
    uint32_t et = NPL_GGUF_STRING;
    if (n && !strs) return werr(w, "kv '%s': NULL string array", key ? key : "");
    for (uint64_t j = 0; j < n; j++) {
        if (!strs[j]) return werr(w, "kv '%s': string [%" PRIu64 "] is NULL", key ? key : "", j);
        if (npl_add_size(total, 8, &total) || npl_add_size(total, strlen(strs[j]), &total))
            return werr(w, "kv '%s': string array too large", key ? key : "");
    }
    uint8_t *b = malloc(total), *p = b;
    if (b) {
        memcpy(p, &et, 4);
        memcpy(p + 4, &n, 8);
        p += 12;
        for (uint64_t j = 0; j < n; j++) {
            uint64_t len = strlen(strs[j]);
            memcpy(p, &len, 8);
            memcpy(p + 8, strs[j], (size_t)len);
            p += 8 + len;
        }
    }
    return put_kv(w, key, NPL_GGUF_ARRAY, b, total);
}

int npl_gguf_writer_add_tensor(npl_gguf_writer *w, const char *name, int type, int n_dims, const int64_t *ne,
                               const void *data, size_t size) {
    if (!w) return -1;
    if (!name || !name[0]) return werr(w, "tensor #%zu: empty name", w->n_t);
    const npl_type_traits *tr = npl_type_get(type);
    if (!tr) return werr(w, "tensor '%s': unknown type %d", name, type);
    if (n_dims < 1 || n_dims > NPL_GGUF_MAX_DIMS || !ne)
        return werr(w, "tensor '%s': n_dims %d is outside 1..%d", name, n_dims, NPL_GGUF_MAX_DIMS);
    int64_t nelem = 1;
    for (int d = 0; d < n_dims; d++) {
        if (ne[d] <= 0) return werr(w, "tensor '%s': ne[%d] = %" PRId64 " must be positive", name, d, ne[d]);
        if (npl_mul_i64(nelem, ne[d], &nelem)) return werr(w, "tensor '%s': element count overflows", name);
    }
    size_t row, want;
    if (ne[0] % tr->block_size)
        return werr(w, "tensor '%s': ne[0] = %" PRId64 " is not a multiple of the block size %d of %s", name,
                    ne[0], tr->block_size, tr->name);
    if (npl_row_size((npl_type)type, ne[0], &row) || npl_mul_size(row, (size_t)(nelem / ne[0]), &want))
        return werr(w, "tensor '%s': byte size overflows", name);
    if (size != want) return werr(w, "tensor '%s': size %zu, expected %zu for its shape and type", name, size, want);
    if (!data) return werr(w, "tensor '%s': NULL data", name);
    for (size_t i = 0; i < w->n_t; i++)
        if (!strcmp(w->t[i].name, name)) return werr(w, "tensor '%s': duplicate tensor name", name);
    char *nm = dup_str(name);
    if (!nm || grow((void **)&w->t, &w->cap_t, w->n_t, sizeof *w->t)) {
        free(nm);
        return werr(w, "tensor '%s': out of memory", name);
    }
    wtensor *t = &w->t[w->n_t++];
    *t = (wtensor){.name = nm, .type = type, .n_dims = n_dims, .data = data, .size = size};
    for (int d = 0; d < NPL_GGUF_MAX_DIMS; d++) t->ne[d] = d < n_dims ? ne[d] : 1;
    return 0;
}

/* ---- write ---- */

typedef struct {
    FILE *f;
    uint64_t pos;
    int failed;
} out;

static void emit(out *o, const void *p, size_t n) {
    if (o->failed || !n) return;
    if (fwrite(p, 1, n, o->f) != n) o->failed = errno ? errno : EIO;
    o->pos += n;
}
static void emit_u32(out *o, uint32_t v) { emit(o, &v, 4); }
static void emit_u64(out *o, uint64_t v) { emit(o, &v, 8); }
static void emit_str(out *o, const char *s) {
    uint64_t n = strlen(s);
    emit_u64(o, n);
    emit(o, s, (size_t)n);
}
static void emit_pad(out *o, uint64_t align) {
    static const uint8_t zeros[256];
    uint64_t pad = (align - o->pos % align) % align;
    while (pad && !o->failed) {
        size_t n = pad < sizeof zeros ? (size_t)pad : sizeof zeros;
        emit(o, zeros, n);
        pad -= n;
    }
}

/* Tensors are laid out in insertion order, each at an aligned offset. */
static int layout(npl_gguf_writer *w) {
    size_t off = 0;
    for (size_t i = 0; i < w->n_t; i++) {
        w->t[i].offset = off;
        if (npl_add_size(off, w->t[i].size, &off) || npl_align_size(off, w->alignment, &off)) return -1;
    }
    return 0;
}

static void emit_file(npl_gguf_writer *w, out *o) {
    emit(o, "GGUF", 4);
    emit_u32(o, 3);
    emit_u64(o, w->n_t);
    emit_u64(o, w->n_kv);
    for (size_t i = 0; i < w->n_kv; i++) {
        emit_str(o, w->kv[i].key);
        emit_u32(o, (uint32_t)w->kv[i].type);
        emit(o, w->kv[i].val, w->kv[i].val_size);
    }
    for (size_t i = 0; i < w->n_t; i++) {
        const wtensor *t = &w->t[i];
        emit_str(o, t->name);
        emit_u32(o, (uint32_t)t->n_dims);
        for (int d = 0; d < t->n_dims; d++) emit_u64(o, (uint64_t)t->ne[d]);
        emit_u32(o, (uint32_t)t->type);
        emit_u64(o, t->offset);
    }
    emit_pad(o, w->alignment);
    for (size_t i = 0; i < w->n_t; i++) {
        emit(o, w->t[i].data, w->t[i].size);
        emit_pad(o, w->alignment); /* like gguf-py: every tensor, the last included, padded */
    }
}

int npl_gguf_writer_write(npl_gguf_writer *w, const char *path, char *err, size_t errlen) {
    char dummy[8];
    if (!err || !errlen) {
        err = dummy;
        errlen = sizeof dummy;
    }
    if (!path) path = "(null)";
    if (!w) {
        snprintf(err, errlen, "%s: writer: NULL", path);
        return -1;
    }
    if (w->err[0]) {
        snprintf(err, errlen, "%s: %s", path, w->err);
        return -1;
    }
    uint32_t a = w->alignment;
    if (a == 0 || (a & (a - 1))) {
        snprintf(err, errlen, "%s: general.alignment: %" PRIu32 " is not a nonzero power of two", path, a);
        return -1;
    }
    if (layout(w)) {
        snprintf(err, errlen, "%s: tensor data: total size overflows", path);
        return -1;
    }
    size_t plen = strlen(path);
    char *tmp = malloc(plen + 5);
    if (!tmp) {
        snprintf(err, errlen, "%s: out of memory", path);
        return -1;
    }
    memcpy(tmp, path, plen);
    memcpy(tmp + plen, ".tmp", 5);
    out o = {fopen(tmp, "wb"), 0, 0};
    if (!o.f) {
        snprintf(err, errlen, "%s: create %s: %s", path, tmp, strerror(errno));
        free(tmp);
        return -1;
    }
    errno = 0;
    emit_file(w, &o);
    const char *stage = "write";
    if (!o.failed && fflush(o.f)) o.failed = errno ? errno : EIO;
    if (!o.failed && fsync(fileno(o.f))) o.failed = errno; /* data on disk before the rename makes it visible */
    if (fclose(o.f) && !o.failed) o.failed = errno ? errno : EIO;
    if (!o.failed && rename(tmp, path)) {
        o.failed = errno;
        stage = "rename";
    }
    if (o.failed) {
        snprintf(err, errlen, "%s: %s %s: %s", path, stage, stage[0] == 'w' ? tmp : "into place", strerror(o.failed));
        remove(tmp);
        free(tmp);
        return -1;
    }
    free(tmp);
    err[0] = 0;
    return 0;
}
