/* gguf-dump-like listing of a GGUF file: header, every key with its type and
 * value (long arrays and strings shortened), then the tensor table. Uses only
 * the public accessors, so it shows exactly what the reader validated. */
#include "format/gguf.h"

#include <inttypes.h>
#include <string.h>

#include "kernels/dtype.h"

#define MAX_STR_SHOWN 80  /* characters of a string value before "..." */
#define MAX_ARR_SHOWN 8   /* array elements before "..." */

/* Text from the file is escaped so one value stays on one line; returns the
 * number of columns printed. UTF-8 bytes pass through. */
static int print_esc(FILE *out, const char *p, uint64_t len, uint64_t max) {
    int w = 0;
    for (uint64_t i = 0; i < len; i++) {
        unsigned char ch = (unsigned char)p[i];
        if (i >= max) {
            fputs("...", out);
            return w + 3;
        }
        if (ch == '"' || ch == '\\') w += fprintf(out, "\\%c", ch);
        else if (ch == '\n') w += fprintf(out, "\\n");
        else if (ch == '\t') w += fprintf(out, "\\t");
        else if (ch < 0x20 || ch == 0x7f) w += fprintf(out, "\\x%02x", ch);
        else w += fputc(ch, out) != EOF;
    }
    return w;
}

static void print_str(FILE *out, npl_gguf_str s) {
    fputc('"', out);
    print_esc(out, s.ptr, s.len, MAX_STR_SHOWN);
    fputc('"', out);
}

static void pad(FILE *out, int n) {
    for (; n > 0; n--) fputc(' ', out);
}

/* One packed element of a numeric type t at p (possibly unaligned). */
static void print_elem(FILE *out, npl_gguf_vtype t, const unsigned char *p) {
    union { uint8_t u8; int8_t i8; uint16_t u16; int16_t i16; uint32_t u32; int32_t i32;
            uint64_t u64; int64_t i64; float f32; double f64; } v;
    switch (t) {
    case NPL_GGUF_UINT8: memcpy(&v.u8, p, 1); fprintf(out, "%" PRIu8, v.u8); break;
    case NPL_GGUF_INT8: memcpy(&v.i8, p, 1); fprintf(out, "%" PRId8, v.i8); break;
    case NPL_GGUF_UINT16: memcpy(&v.u16, p, 2); fprintf(out, "%" PRIu16, v.u16); break;
    case NPL_GGUF_INT16: memcpy(&v.i16, p, 2); fprintf(out, "%" PRId16, v.i16); break;
    case NPL_GGUF_UINT32: memcpy(&v.u32, p, 4); fprintf(out, "%" PRIu32, v.u32); break;
    case NPL_GGUF_INT32: memcpy(&v.i32, p, 4); fprintf(out, "%" PRId32, v.i32); break;
    case NPL_GGUF_UINT64: memcpy(&v.u64, p, 8); fprintf(out, "%" PRIu64, v.u64); break;
    case NPL_GGUF_INT64: memcpy(&v.i64, p, 8); fprintf(out, "%" PRId64, v.i64); break;
    case NPL_GGUF_FLOAT32: memcpy(&v.f32, p, 4); fprintf(out, "%.9g", (double)v.f32); break;
    case NPL_GGUF_FLOAT64: memcpy(&v.f64, p, 8); fprintf(out, "%.17g", v.f64); break;
    case NPL_GGUF_BOOL: fputs(*p ? "true" : "false", out); break;
    default: fputs("?", out); break;
    }
}

static size_t elem_size(npl_gguf_vtype t) {
    static const unsigned char sz[NPL_GGUF_VTYPE_COUNT] = {1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8};
    return (unsigned)t < NPL_GGUF_VTYPE_COUNT ? sz[t] : 0;
}

static void print_array(FILE *out, const npl_gguf *g, int64_t i) {
    npl_gguf_vtype et = npl_gguf_arr_type(g, i);
    uint64_t n = npl_gguf_arr_n(g, i);
    if (et == NPL_GGUF_ARRAY) {
        fprintf(out, "[%" PRIu64 " nested arrays]", n); /* validated, but not exposed element-wise */
        return;
    }
    const unsigned char *data = npl_gguf_arr_data(g, i);
    fputc('[', out);
    for (uint64_t j = 0; j < n && j < MAX_ARR_SHOWN; j++) {
        if (j) fputs(", ", out);
        if (et == NPL_GGUF_STRING) print_str(out, npl_gguf_arr_str(g, i, j));
        else print_elem(out, et, data + j * elem_size(et));
    }
    fputs(n > MAX_ARR_SHOWN ? ", ...]" : "]", out);
}

static void print_kv(FILE *out, const npl_gguf *g, int64_t i, int key_w) {
    npl_gguf_vtype t = npl_gguf_kv_type(g, i);
    npl_gguf_str key = npl_gguf_key(g, i);
    char type[48];
    if (t == NPL_GGUF_ARRAY)
        snprintf(type, sizeof type, "[%s] x%" PRIu64, npl_gguf_vtype_name(npl_gguf_arr_type(g, i)), npl_gguf_arr_n(g, i));
    else
        snprintf(type, sizeof type, "%s", npl_gguf_vtype_name(t));
    fprintf(out, "%6" PRId64 "  %-18s ", i, type);
    pad(out, key_w - print_esc(out, key.ptr, key.len, 120));
    fputs(" = ", out);
    if (t == NPL_GGUF_ARRAY) print_array(out, g, i);
    else if (t == NPL_GGUF_STRING) print_str(out, npl_gguf_kv_str(g, i));
    else print_elem(out, t, npl_gguf_kv_data(g, i));
    fputc('\n', out);
}

int npl_gguf_inspect(const npl_gguf *g, FILE *out) {
    if (!g || !out) return -1;
    int64_t n_kv = npl_gguf_n_kv(g), n_t = npl_gguf_n_tensors(g);
    fprintf(out, "%s: GGUF v%" PRIu32 ", alignment %zu, %" PRId64 " key/value pairs, %" PRId64
                 " tensors, data at offset %zu, file size %zu\n",
            npl_gguf_path(g), npl_gguf_version(g), npl_gguf_alignment(g), n_kv, n_t, npl_gguf_data_offset(g),
            npl_gguf_file_size(g));

    int key_w = 0;
    for (int64_t i = 0; i < n_kv; i++) {
        npl_gguf_str k = npl_gguf_key(g, i);
        if ((int64_t)k.len > key_w) key_w = k.len > 48 ? 48 : (int)k.len;
    }
    fprintf(out, "\nkey/value pairs:\n%6s  %-18s %-*s   %s\n", "#", "type", key_w, "key", "value");
    for (int64_t i = 0; i < n_kv; i++) print_kv(out, g, i, key_w);

    int name_w = 4;
    uint64_t total = 0;
    for (int64_t i = 0; i < n_t; i++) {
        size_t len = strlen(npl_gguf_tensor_at(g, i)->name);
        if ((int)len > name_w) name_w = len > 48 ? 48 : (int)len;
    }
    fprintf(out, "\ntensors:\n%6s  %-*s  %-6s  %-26s %12s %12s\n", "#", name_w, "name", "type", "shape",
            "offset", "bytes");
    for (int64_t i = 0; i < n_t; i++) {
        const npl_gguf_tensor *t = npl_gguf_tensor_at(g, i);
        char shape[128];
        size_t o = 0;
        for (int d = 0; d < t->n_dims && o < sizeof shape; d++)
            o += (size_t)snprintf(shape + o, sizeof shape - o, "%s%" PRId64, d ? ", " : "[", t->ne[d]);
        if (o < sizeof shape) snprintf(shape + o, sizeof shape - o, "]");
        fprintf(out, "%6" PRId64 "  ", i);
        pad(out, name_w - print_esc(out, t->name, strlen(t->name), 120));
        fprintf(out, "  %-6s  %-26s %12" PRIu64 " %12zu\n", npl_type_name(t->type), shape, t->offset, t->size);
        total += t->size;
    }
    fprintf(out, "total tensor bytes: %" PRIu64 "\n", total);
    return ferror(out) ? -1 : 0;
}
