/* Public GGUF inspection (npullm_gguf.h) over the internal reader. */
#include <stdlib.h>
#include <string.h>

#include "core/status.h"
#include "format/gguf.h"
#include "npullm_gguf.h"

struct npl_gguf_file {
    npl_gguf *g;
};

npl_gguf_file *npl_gguf_file_open(const char *path, npl_status *status, char *err, size_t errlen) {
    npl_api_scratch scratch;
    npl_api_enter(&scratch, &status, &err, &errlen);
    if (!path) {
        *status = npl_errf(err, errlen, NPL_ERR_ARGUMENT, "no path");
        return NULL;
    }
    npl_gguf_file *f = calloc(1, sizeof *f);
    if (!f) {
        *status = npl_err_memory(err, errlen);
        return NULL;
    }
    if (!(f->g = npl_gguf_open(path, NULL, err, errlen))) {
        *status = npl_status_take(NPL_ERR_FILE);
        free(f);
        return NULL;
    }
    *status = NPL_OK;
    return f;
}

void npl_gguf_file_close(npl_gguf_file *f) {
    if (!f) return;
    npl_gguf_close(f->g);
    free(f);
}

uint32_t npl_gguf_file_version(const npl_gguf_file *f) { return f ? npl_gguf_version(f->g) : 0; }
int64_t npl_gguf_file_n_kv(const npl_gguf_file *f) { return f ? npl_gguf_n_kv(f->g) : 0; }
int64_t npl_gguf_file_n_tensors(const npl_gguf_file *f) { return f ? npl_gguf_n_tensors(f->g) : 0; }
int npl_gguf_file_has_key(const npl_gguf_file *f, const char *key) {
    return f && key && npl_gguf_find_key(f->g, key) >= 0;
}

npl_status npl_gguf_file_get_int(const npl_gguf_file *f, const char *key, int64_t *out) {
    int b;
    if (!f || !key || !out) return NPL_ERR_ARGUMENT;
    if (npl_gguf_get_i64(f->g, key, out) == 0) return NPL_OK;
    if (npl_gguf_get_bool(f->g, key, &b) == 0) {
        *out = b;
        return NPL_OK;
    }
    return NPL_ERR_ARGUMENT;
}

int64_t npl_gguf_file_get_str(const npl_gguf_file *f, const char *key, char *buf, size_t cap) {
    npl_gguf_str s;
    if (!f || !key || npl_gguf_get_str(f->g, key, &s)) return -1;
    if (buf && cap) {
        size_t n = s.len < cap - 1 ? (size_t)s.len : cap - 1;
        memcpy(buf, s.ptr, n);
        buf[n] = 0;
    }
    return (int64_t)s.len;
}

/* Element i of a packed integer array as int64; 0 if it does not fit. */
static int int_elem(npl_gguf_vtype t, const char *d, uint64_t i, int64_t *out) {
    union { uint8_t u8; int8_t i8; uint16_t u16; int16_t i16; uint32_t u32; int32_t i32; uint64_t u64; int64_t i64; } v;
    switch (t) {
    case NPL_GGUF_UINT8: memcpy(&v.u8, d + i, 1); *out = v.u8; return 1;
    case NPL_GGUF_INT8: memcpy(&v.i8, d + i, 1); *out = v.i8; return 1;
    case NPL_GGUF_UINT16: memcpy(&v.u16, d + 2 * i, 2); *out = v.u16; return 1;
    case NPL_GGUF_INT16: memcpy(&v.i16, d + 2 * i, 2); *out = v.i16; return 1;
    case NPL_GGUF_UINT32: memcpy(&v.u32, d + 4 * i, 4); *out = v.u32; return 1;
    case NPL_GGUF_INT32: memcpy(&v.i32, d + 4 * i, 4); *out = v.i32; return 1;
    case NPL_GGUF_UINT64: memcpy(&v.u64, d + 8 * i, 8); *out = (int64_t)v.u64; return v.u64 <= INT64_MAX;
    case NPL_GGUF_INT64: memcpy(&v.i64, d + 8 * i, 8); *out = v.i64; return 1;
    default: return 0;
    }
}

int64_t npl_gguf_file_get_int_array(const npl_gguf_file *f, const char *key, int64_t *out, int64_t cap) {
    int64_t ki = f && key ? npl_gguf_find_key(f->g, key) : -1;
    if (ki < 0 || npl_gguf_kv_type(f->g, ki) != NPL_GGUF_ARRAY) return -1;
    npl_gguf_vtype t = npl_gguf_arr_type(f->g, ki);
    const char *d = npl_gguf_arr_data(f->g, ki);
    uint64_t n = npl_gguf_arr_n(f->g, ki);
    int64_t x;
    if (!d && n) return -1;
    for (uint64_t i = 0; i < n; i++) {
        if (!int_elem(t, d, i, &x)) return -1;
        if ((int64_t)i < cap && out) out[i] = x;
    }
    return (int64_t)n;
}

npl_status npl_gguf_file_print(const npl_gguf_file *f, FILE *out) {
    if (!f || !out) return NPL_ERR_ARGUMENT;
    return npl_gguf_inspect(f->g, out) ? NPL_ERR_FILE : NPL_OK;
}
