/* GGUF writer -> reader round trip: every value type, arrays, string arrays,
 * tensors of several dtypes with custom alignment, writer error paths; then
 * the real Gemma 3 270M file (facts cross-checked with gguf-py) and a copy of
 * its metadata through the writer. */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "kernels/dtype.h"
#include "format/gguf.h"

static char tmpdir[256];

static void tmp_path(char *dst, size_t cap, const char *name) { snprintf(dst, cap, "%s/%s", tmpdir, name); }

static int exists(const char *p) { return access(p, F_OK) == 0; }

static int str_eq(npl_gguf_str s, const char *want) {
    return s.ptr && s.len == strlen(want) && !memcmp(s.ptr, want, s.len);
}

/* ---- every value type, arrays and tensors ---- */

typedef struct {
    const char *name;
    int type, n_dims;
    int64_t ne[4];
    size_t size;
    uint8_t *data;
} tdesc;

static tdesc tensors[] = {
    {"tok.f32", NPL_TYPE_F32, 2, {4, 3, 1, 1}, 48, NULL},
    {"w.f16", NPL_TYPE_F16, 2, {8, 2, 1, 1}, 32, NULL},
    {"blk.0.q8", NPL_TYPE_Q8_0, 2, {64, 2, 1, 1}, 2 * 2 * 34, NULL},
    {"blk.0.q4k", NPL_TYPE_Q4_K, 2, {256, 3, 1, 1}, 3 * 144, NULL},
    {"x.bf16.4d", NPL_TYPE_BF16, 4, {2, 2, 2, 3}, 24 * 2, NULL},
    {"y.q6k.3d", NPL_TYPE_Q6_K, 3, {256, 1, 2, 1}, 2 * 210, NULL},
};
#define N_TENSORS (int)(sizeof tensors / sizeof tensors[0])

static const uint8_t v_u8 = 200;
static const int8_t v_i8 = -100;
static const uint16_t v_u16 = 60000;
static const int16_t v_i16 = -30000;
static const uint32_t v_u32 = 4000000000u;
static const int32_t v_i32 = -2000000000;
static const float v_f32 = 3.25f;
static const uint8_t v_bool = 1;
static const uint64_t v_u64 = (1ull << 63) + 5;
static const int64_t v_i64 = -(1ll << 62) - 3;
static const double v_f64 = -1.0 / 3.0;

static const uint8_t a_u8[] = {0, 1, 255};
static const int8_t a_i8[] = {-128, 0, 127};
static const uint16_t a_u16[] = {1, 65535};
static const int16_t a_i16[] = {-32768, 7, 32767};
static const uint32_t a_u32[] = {1, 2, 3, 4000000000u};
static const int32_t a_i32[] = {-5, 0, 5, 2147483647};
static const float a_f32[] = {1.5f, -2.25f, 1e-7f};
static const uint8_t a_bool[] = {1, 0, 1, 1};
static const uint64_t a_u64[] = {0, UINT64_MAX};
static const int64_t a_i64[] = {INT64_MIN, -1, INT64_MAX};
static const double a_f64[] = {3.141592653589793, -0.0, 1e300};

static char long_str[1001];
static const char *strs[] = {"a", "", "\xc3\xbc" "n" "\xc3\xaf" "c" "\xc3\xb6" "de", "tab\there", long_str};

static void fill_tensors(void) {
    for (int i = 0; i < N_TENSORS; i++) {
        tensors[i].data = malloc(tensors[i].size);
        for (size_t j = 0; j < tensors[i].size; j++) tensors[i].data[j] = (uint8_t)(j * 7 + (size_t)i * 31 + 1);
        /* f16/bf16/f32 payloads are arbitrary bits: the writer must copy them untouched */
    }
    memset(long_str, 'x', 1000);
}

#define SET_ARR(w, key, t, a) npl_gguf_writer_set_arr(w, key, t, a, sizeof(a) / sizeof((a)[0]))

static int write_full(const char *path, uint32_t alignment) {
    npl_gguf_writer *w = npl_gguf_writer_new();
    char err[512];
    int rc = 0;
    if (alignment) npl_gguf_writer_set_alignment(w, alignment);
    rc |= npl_gguf_writer_set_str(w, "general.architecture", "test");
    rc |= npl_gguf_writer_set_u32(w, "dup.key", 1);
    rc |= npl_gguf_writer_set_scalar(w, "s.u8", NPL_GGUF_UINT8, &v_u8);
    rc |= npl_gguf_writer_set_scalar(w, "s.i8", NPL_GGUF_INT8, &v_i8);
    rc |= npl_gguf_writer_set_scalar(w, "s.u16", NPL_GGUF_UINT16, &v_u16);
    rc |= npl_gguf_writer_set_scalar(w, "s.i16", NPL_GGUF_INT16, &v_i16);
    rc |= npl_gguf_writer_set_u32(w, "s.u32", v_u32);
    rc |= npl_gguf_writer_set_i32(w, "s.i32", v_i32);
    rc |= npl_gguf_writer_set_f32(w, "s.f32", v_f32);
    rc |= npl_gguf_writer_set_bool(w, "s.bool", v_bool);
    rc |= npl_gguf_writer_set_u64(w, "s.u64", v_u64);
    rc |= npl_gguf_writer_set_scalar(w, "s.i64", NPL_GGUF_INT64, &v_i64);
    rc |= npl_gguf_writer_set_scalar(w, "s.f64", NPL_GGUF_FLOAT64, &v_f64);
    rc |= npl_gguf_writer_set_str(w, "s.empty", "");
    rc |= npl_gguf_writer_set_str(w, "s.utf8", "h\xc3\xa9llo\nworld");
    rc |= SET_ARR(w, "a.u8", NPL_GGUF_UINT8, a_u8);
    rc |= SET_ARR(w, "a.i8", NPL_GGUF_INT8, a_i8);
    rc |= SET_ARR(w, "a.u16", NPL_GGUF_UINT16, a_u16);
    rc |= SET_ARR(w, "a.i16", NPL_GGUF_INT16, a_i16);
    rc |= SET_ARR(w, "a.u32", NPL_GGUF_UINT32, a_u32);
    rc |= SET_ARR(w, "a.i32", NPL_GGUF_INT32, a_i32);
    rc |= SET_ARR(w, "a.f32", NPL_GGUF_FLOAT32, a_f32);
    rc |= SET_ARR(w, "a.bool", NPL_GGUF_BOOL, a_bool);
    rc |= SET_ARR(w, "a.u64", NPL_GGUF_UINT64, a_u64);
    rc |= SET_ARR(w, "a.i64", NPL_GGUF_INT64, a_i64);
    rc |= SET_ARR(w, "a.f64", NPL_GGUF_FLOAT64, a_f64);
    rc |= npl_gguf_writer_set_arr(w, "a.empty", NPL_GGUF_UINT32, NULL, 0);
    rc |= npl_gguf_writer_set_arr_str(w, "a.str", strs, sizeof strs / sizeof strs[0]);
    rc |= npl_gguf_writer_set_arr_str(w, "a.str_empty", NULL, 0);
    rc |= npl_gguf_writer_set_u32(w, "dup.key", 2); /* replaces the value, keeps the position */
    for (int i = 0; i < N_TENSORS; i++)
        rc |= npl_gguf_writer_add_tensor(w, tensors[i].name, tensors[i].type, tensors[i].n_dims, tensors[i].ne,
                                         tensors[i].data, tensors[i].size);
    CHECK_EQ_INT(rc, 0);
    rc = npl_gguf_writer_write(w, path, err, sizeof err);
    if (rc) fprintf(stderr, "write failed: %s\n", err);
    npl_gguf_writer_free(w);
    return rc;
}

#define CHECK_SCALAR(g, key, t, v) do { int64_t _i = npl_gguf_find_key(g, key); CHECK(_i >= 0); \
    CHECK_EQ_INT(npl_gguf_kv_type(g, _i), t); \
    CHECK(_i >= 0 && !memcmp(npl_gguf_kv_data(g, _i), &(v), sizeof(v))); } while (0)
#define CHECK_ARR(g, key, t, a) do { int64_t _i = npl_gguf_find_key(g, key); CHECK(_i >= 0); \
    CHECK_EQ_INT(npl_gguf_kv_type(g, _i), NPL_GGUF_ARRAY); CHECK_EQ_INT(npl_gguf_arr_type(g, _i), t); \
    CHECK_EQ_INT(npl_gguf_arr_n(g, _i), sizeof(a) / sizeof((a)[0])); \
    CHECK(_i >= 0 && !memcmp(npl_gguf_arr_data(g, _i), a, sizeof(a))); } while (0)

static void check_full(const char *path, size_t alignment) {
    char err[512];
    npl_gguf *g = npl_gguf_open(path, NULL, err, sizeof err);
    CHECK(g != NULL);
    if (!g) {
        fprintf(stderr, "open failed: %s\n", err);
        return;
    }
    CHECK_EQ_INT(npl_gguf_version(g), 3);
    CHECK_EQ_INT(npl_gguf_alignment(g), alignment);
    CHECK_EQ_INT(npl_gguf_n_kv(g), 29 + (alignment != NPL_GGUF_DEFAULT_ALIGNMENT));
    CHECK_EQ_INT(npl_gguf_data_offset(g) % alignment, 0);
    CHECK(strcmp(npl_gguf_path(g), path) == 0);
    int64_t first = alignment != NPL_GGUF_DEFAULT_ALIGNMENT;
    CHECK_EQ_INT(npl_gguf_find_key(g, "general.alignment"), alignment != NPL_GGUF_DEFAULT_ALIGNMENT ? 0 : -1);
    CHECK_EQ_INT(npl_gguf_find_key(g, "dup.key"), first + 1);

    npl_gguf_str s;
    uint32_t u32;
    int64_t i64;
    float f;
    int b;
    double d;
    CHECK(!npl_gguf_get_str(g, "general.architecture", &s) && str_eq(s, "test"));
    CHECK(!npl_gguf_get_u32(g, "dup.key", &u32) && u32 == 2);
    CHECK_SCALAR(g, "s.u8", NPL_GGUF_UINT8, v_u8);
    CHECK_SCALAR(g, "s.i8", NPL_GGUF_INT8, v_i8);
    CHECK_SCALAR(g, "s.u16", NPL_GGUF_UINT16, v_u16);
    CHECK_SCALAR(g, "s.i16", NPL_GGUF_INT16, v_i16);
    CHECK_SCALAR(g, "s.u32", NPL_GGUF_UINT32, v_u32);
    CHECK_SCALAR(g, "s.i32", NPL_GGUF_INT32, v_i32);
    CHECK_SCALAR(g, "s.f32", NPL_GGUF_FLOAT32, v_f32);
    CHECK_SCALAR(g, "s.bool", NPL_GGUF_BOOL, v_bool);
    CHECK_SCALAR(g, "s.u64", NPL_GGUF_UINT64, v_u64);
    CHECK_SCALAR(g, "s.i64", NPL_GGUF_INT64, v_i64);
    CHECK_SCALAR(g, "s.f64", NPL_GGUF_FLOAT64, v_f64);
    CHECK(!npl_gguf_get_str(g, "s.empty", &s) && s.len == 0);
    CHECK(!npl_gguf_get_str(g, "s.utf8", &s) && str_eq(s, "h\xc3\xa9llo\nworld"));

    /* typed getters convert integer widths when the value fits */
    CHECK(!npl_gguf_get_u32(g, "s.u8", &u32) && u32 == 200);
    CHECK(!npl_gguf_get_u32(g, "s.u16", &u32) && u32 == 60000);
    CHECK(!npl_gguf_get_u32(g, "s.u32", &u32) && u32 == v_u32);
    CHECK_EQ_INT(npl_gguf_get_u32(g, "s.i8", &u32), -2);  /* negative */
    CHECK_EQ_INT(npl_gguf_get_u32(g, "s.u64", &u32), -2); /* too big */
    CHECK_EQ_INT(npl_gguf_get_u32(g, "s.f32", &u32), -2);
    CHECK_EQ_INT(npl_gguf_get_u32(g, "s.bool", &u32), -2);
    CHECK_EQ_INT(npl_gguf_get_u32(g, "no.such.key", &u32), -1);
    CHECK(!npl_gguf_get_i64(g, "s.i64", &i64) && i64 == v_i64);
    CHECK(!npl_gguf_get_i64(g, "s.i16", &i64) && i64 == -30000);
    CHECK(!npl_gguf_get_i64(g, "s.u32", &i64) && i64 == 4000000000ll);
    CHECK_EQ_INT(npl_gguf_get_i64(g, "s.u64", &i64), -2);
    CHECK(!npl_gguf_get_f32(g, "s.f32", &f) && f == v_f32);
    CHECK(!npl_gguf_get_f32(g, "s.f64", &f) && f == (float)v_f64);
    CHECK_EQ_INT(npl_gguf_get_f32(g, "s.u32", &f), -2);
    CHECK(!npl_gguf_get_bool(g, "s.bool", &b) && b == 1);
    CHECK_EQ_INT(npl_gguf_get_bool(g, "s.u8", &b), -2);
    CHECK_EQ_INT(npl_gguf_get_str(g, "s.u8", &s), -2);
    CHECK(!npl_gguf_get_number_at(g, npl_gguf_find_key(g, "s.i16"), &d) && d == -30000.0);
    CHECK(!npl_gguf_get_number_at(g, npl_gguf_find_key(g, "s.f64"), &d) && d == v_f64);
    CHECK(!npl_gguf_get_number_at(g, npl_gguf_find_key(g, "s.bool"), &d) && d == 1.0);
    CHECK_EQ_INT(npl_gguf_get_number_at(g, npl_gguf_find_key(g, "s.utf8"), &d), -2);
    CHECK_EQ_INT(npl_gguf_get_number_at(g, 12345, &d), -1);
    CHECK(npl_gguf_kv_data(g, npl_gguf_find_key(g, "a.u8")) == NULL);
    CHECK(npl_gguf_kv_str(g, npl_gguf_find_key(g, "s.u8")).ptr == NULL);
    CHECK(npl_gguf_key(g, -1).ptr == NULL);
    CHECK_EQ_INT(npl_gguf_kv_type(g, 99999), NPL_GGUF_VTYPE_COUNT);

    CHECK_ARR(g, "a.u8", NPL_GGUF_UINT8, a_u8);
    CHECK_ARR(g, "a.i8", NPL_GGUF_INT8, a_i8);
    CHECK_ARR(g, "a.u16", NPL_GGUF_UINT16, a_u16);
    CHECK_ARR(g, "a.i16", NPL_GGUF_INT16, a_i16);
    CHECK_ARR(g, "a.u32", NPL_GGUF_UINT32, a_u32);
    CHECK_ARR(g, "a.i32", NPL_GGUF_INT32, a_i32);
    CHECK_ARR(g, "a.f32", NPL_GGUF_FLOAT32, a_f32);
    CHECK_ARR(g, "a.bool", NPL_GGUF_BOOL, a_bool);
    CHECK_ARR(g, "a.u64", NPL_GGUF_UINT64, a_u64);
    CHECK_ARR(g, "a.i64", NPL_GGUF_INT64, a_i64);
    CHECK_ARR(g, "a.f64", NPL_GGUF_FLOAT64, a_f64);
    int64_t k = npl_gguf_find_key(g, "a.empty");
    CHECK(k >= 0 && npl_gguf_arr_n(g, k) == 0 && npl_gguf_arr_type(g, k) == NPL_GGUF_UINT32);
    k = npl_gguf_find_key(g, "a.str");
    CHECK_EQ_INT(npl_gguf_arr_type(g, k), NPL_GGUF_STRING);
    CHECK_EQ_INT(npl_gguf_arr_n(g, k), 5);
    CHECK(npl_gguf_arr_data(g, k) == NULL);
    for (uint64_t j = 0; j < 5; j++) CHECK(str_eq(npl_gguf_arr_str(g, k, j), strs[j]));
    CHECK(npl_gguf_arr_str(g, k, 5).ptr == NULL);
    CHECK(npl_gguf_arr_str(g, npl_gguf_find_key(g, "a.u8"), 0).ptr == NULL);
    k = npl_gguf_find_key(g, "a.str_empty");
    CHECK(k >= 0 && npl_gguf_arr_n(g, k) == 0 && npl_gguf_arr_type(g, k) == NPL_GGUF_STRING);

    CHECK_EQ_INT(npl_gguf_n_tensors(g), N_TENSORS);
    const uint8_t *base = npl_gguf_base(g);
    for (int i = 0; i < N_TENSORS; i++) {
        const npl_gguf_tensor *t = npl_gguf_tensor_at(g, i);
        CHECK(t && t == npl_gguf_find_tensor(g, tensors[i].name));
        if (!t) continue;
        CHECK(!strcmp(t->name, tensors[i].name));
        CHECK_EQ_INT(t->type, tensors[i].type);
        CHECK_EQ_INT(t->n_dims, tensors[i].n_dims);
        for (int dd = 0; dd < 4; dd++) CHECK_EQ_INT(t->ne[dd], tensors[i].ne[dd]);
        CHECK_EQ_INT(t->size, tensors[i].size);
        CHECK_EQ_INT(t->offset % alignment, 0);
        CHECK_EQ_INT(((const uint8_t *)t->data - base) % alignment, 0);
        CHECK(!memcmp(t->data, tensors[i].data, tensors[i].size));
    }
    CHECK(npl_gguf_find_tensor(g, "missing") == NULL);
    CHECK(npl_gguf_tensor_at(g, N_TENSORS) == NULL);

    /* inspect prints every key and tensor */
    FILE *out = tmpfile();
    CHECK(out && npl_gguf_inspect(g, out) == 0);
    if (out) {
        char buf[16384];
        size_t n = (fseek(out, 0, SEEK_SET), fread(buf, 1, sizeof buf - 1, out));
        buf[n] = 0;
        CHECK(strstr(buf, "GGUF v3") != NULL);
        CHECK(strstr(buf, "a.str") && strstr(buf, "\"tab\\there\""));
        CHECK(strstr(buf, "blk.0.q4k") && strstr(buf, "q4_K") && strstr(buf, "[256, 3]"));
        CHECK(strstr(buf, "18446744073709551615") != NULL); /* u64 max printed exactly */
        fclose(out);
    }
    npl_gguf_close(g);
}

static void test_roundtrip(void) {
    char path[512], tmp[520];
    tmp_path(path, sizeof path, "full.gguf");
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    CHECK_EQ_INT(write_full(path, 64), 0);
    CHECK(!exists(tmp));
    check_full(path, 64);
    CHECK_EQ_INT(write_full(path, 0), 0); /* default alignment, no general.alignment key; overwrites */
    check_full(path, NPL_GGUF_DEFAULT_ALIGNMENT);
    CHECK_EQ_INT(write_full(path, 4096), 0);
    check_full(path, 4096);
    unlink(path);
}

static void test_empty_file(void) {
    char path[512], err[512];
    tmp_path(path, sizeof path, "empty.gguf");
    npl_gguf_writer *w = npl_gguf_writer_new();
    CHECK_EQ_INT(npl_gguf_writer_write(w, path, err, sizeof err), 0);
    npl_gguf_writer_free(w);
    npl_gguf *g = npl_gguf_open(path, NULL, err, sizeof err);
    CHECK(g && npl_gguf_n_kv(g) == 0 && npl_gguf_n_tensors(g) == 0);
    npl_gguf_close(g);
    unlink(path);
}

/* A failing writer must say why, name the field, and leave no file behind. */
static void expect_write_fail(npl_gguf_writer *w, const char *name, const char *field) {
    char path[512], tmp[520], err[512] = "";
    tmp_path(path, sizeof path, name);
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    CHECK_EQ_INT(npl_gguf_writer_write(w, path, err, sizeof err), -1);
    CHECK(strstr(err, field) != NULL);
    CHECK(strstr(err, path) == err);
    CHECK(!exists(path) && !exists(tmp));
    if (!strstr(err, field)) fprintf(stderr, "  message was: %s\n", err);
    npl_gguf_writer_free(w);
}

static void test_writer_errors(void) {
    static const uint8_t bytes[1024];
    int64_t ne[2] = {32, 2};
    npl_gguf_writer *w = npl_gguf_writer_new();
    CHECK_EQ_INT(npl_gguf_writer_add_tensor(w, "t", NPL_TYPE_Q8_0, 2, ne, bytes, 68), 0);
    CHECK_EQ_INT(npl_gguf_writer_add_tensor(w, "t", NPL_TYPE_Q8_0, 2, ne, bytes, 68), -1);
    expect_write_fail(w, "dup.gguf", "tensor 't': duplicate");

    w = npl_gguf_writer_new();
    CHECK_EQ_INT(npl_gguf_writer_add_tensor(w, "sz", NPL_TYPE_Q8_0, 2, ne, bytes, 64), -1);
    expect_write_fail(w, "size.gguf", "tensor 'sz': size 64, expected 68");

    w = npl_gguf_writer_new();
    CHECK_EQ_INT(npl_gguf_writer_add_tensor(w, "bad", 4, 2, ne, bytes, 64), -1);
    expect_write_fail(w, "type.gguf", "tensor 'bad': unknown type 4");

    w = npl_gguf_writer_new();
    ne[0] = 33;
    CHECK_EQ_INT(npl_gguf_writer_add_tensor(w, "blk", NPL_TYPE_Q8_0, 2, ne, bytes, 68), -1);
    expect_write_fail(w, "block.gguf", "block size");

    w = npl_gguf_writer_new();
    ne[0] = 0;
    CHECK_EQ_INT(npl_gguf_writer_add_tensor(w, "zero", NPL_TYPE_F32, 2, ne, bytes, 0), -1);
    expect_write_fail(w, "zero.gguf", "ne[0] = 0");

    w = npl_gguf_writer_new();
    npl_gguf_writer_set_alignment(w, 48);
    expect_write_fail(w, "align.gguf", "general.alignment");

    w = npl_gguf_writer_new();
    CHECK_EQ_INT(npl_gguf_writer_set_str(w, "", "x"), -1);
    expect_write_fail(w, "key.gguf", "empty key");

    w = npl_gguf_writer_new();
    CHECK_EQ_INT(npl_gguf_writer_set_arr(w, "k", NPL_GGUF_STRING, bytes, 1), -1);
    expect_write_fail(w, "arr.gguf", "kv 'k'");

    /* unwritable destination: the error names the path, nothing is created */
    char err[512];
    w = npl_gguf_writer_new();
    npl_gguf_writer_set_u32(w, "a", 1);
    CHECK_EQ_INT(npl_gguf_writer_write(w, "/nonexistent-dir/x.gguf", err, sizeof err), -1);
    CHECK(strstr(err, "/nonexistent-dir/x.gguf") == err);
    npl_gguf_writer_free(w);
}

/* ---- the real model ---- */

static size_t vsize(npl_gguf_vtype t) {
    static const size_t sz[NPL_GGUF_VTYPE_COUNT] = {1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8};
    return sz[t];
}

static int kv_equal(const npl_gguf *a, int64_t i, const npl_gguf *b, int64_t j) {
    npl_gguf_vtype t = npl_gguf_kv_type(a, i);
    if (t != npl_gguf_kv_type(b, j)) return 0;
    if (t == NPL_GGUF_STRING) {
        npl_gguf_str x = npl_gguf_kv_str(a, i), y = npl_gguf_kv_str(b, j);
        return x.len == y.len && !memcmp(x.ptr, y.ptr, x.len);
    }
    if (t != NPL_GGUF_ARRAY) return !memcmp(npl_gguf_kv_data(a, i), npl_gguf_kv_data(b, j), vsize(t));
    npl_gguf_vtype et = npl_gguf_arr_type(a, i);
    uint64_t n = npl_gguf_arr_n(a, i);
    if (et != npl_gguf_arr_type(b, j) || n != npl_gguf_arr_n(b, j)) return 0;
    if (et == NPL_GGUF_STRING) {
        for (uint64_t k = 0; k < n; k++) {
            npl_gguf_str x = npl_gguf_arr_str(a, i, k), y = npl_gguf_arr_str(b, j, k);
            if (x.len != y.len || memcmp(x.ptr, y.ptr, x.len)) return 0;
        }
        return 1;
    }
    return !memcmp(npl_gguf_arr_data(a, i), npl_gguf_arr_data(b, j), n * vsize(et));
}

/* Copies every key (generically, by type) and the first few tensors. */
static void test_copy_model(const npl_gguf *g) {
    char path[512], err[512];
    tmp_path(path, sizeof path, "copy.gguf");
    npl_gguf_writer *w = npl_gguf_writer_new();
    int rc = 0;
    for (int64_t i = 0; i < npl_gguf_n_kv(g); i++) {
        npl_gguf_str ks = npl_gguf_key(g, i);
        char key[256];
        snprintf(key, sizeof key, "%.*s", (int)ks.len, ks.ptr);
        npl_gguf_vtype t = npl_gguf_kv_type(g, i);
        if (t == NPL_GGUF_STRING) {
            npl_gguf_str s = npl_gguf_kv_str(g, i);
            char *c = malloc(s.len + 1);
            memcpy(c, s.ptr, s.len);
            c[s.len] = 0;
            rc |= npl_gguf_writer_set_str(w, key, c);
            free(c);
        } else if (t == NPL_GGUF_ARRAY && npl_gguf_arr_type(g, i) == NPL_GGUF_STRING) {
            uint64_t n = npl_gguf_arr_n(g, i);
            char **v = malloc(n * sizeof *v);
            for (uint64_t j = 0; j < n; j++) {
                npl_gguf_str s = npl_gguf_arr_str(g, i, j);
                v[j] = malloc(s.len + 1);
                memcpy(v[j], s.ptr, s.len);
                v[j][s.len] = 0;
            }
            rc |= npl_gguf_writer_set_arr_str(w, key, (const char *const *)v, n);
            for (uint64_t j = 0; j < n; j++) free(v[j]);
            free(v);
        } else if (t == NPL_GGUF_ARRAY) {
            rc |= npl_gguf_writer_set_arr(w, key, npl_gguf_arr_type(g, i), npl_gguf_arr_data(g, i), npl_gguf_arr_n(g, i));
        } else {
            rc |= npl_gguf_writer_set_scalar(w, key, t, npl_gguf_kv_data(g, i));
        }
    }
    /* three small tensors of different types (token_embd alone is 178 MB) */
    const char *copied[3] = {"output_norm.weight", "blk.0.attn_k.weight", "blk.0.ffn_down.weight"};
    for (int i = 0; i < 3; i++) {
        const npl_gguf_tensor *t = npl_gguf_find_tensor(g, copied[i]);
        CHECK(t != NULL);
        if (t) rc |= npl_gguf_writer_add_tensor(w, t->name, t->type, t->n_dims, t->ne, t->data, t->size);
    }
    CHECK_EQ_INT(rc, 0);
    CHECK_EQ_INT(npl_gguf_writer_write(w, path, err, sizeof err), 0);
    npl_gguf_writer_free(w);
    npl_gguf *c = npl_gguf_open(path, NULL, err, sizeof err);
    CHECK(c != NULL);
    if (c) {
        CHECK_EQ_INT(npl_gguf_n_kv(c), npl_gguf_n_kv(g));
        int bad = 0;
        for (int64_t i = 0; i < npl_gguf_n_kv(g) && i < npl_gguf_n_kv(c); i++) bad += !kv_equal(g, i, c, i);
        CHECK_EQ_INT(bad, 0);
        CHECK_EQ_INT(npl_gguf_n_tensors(c), 3);
        for (int i = 0; i < 3; i++) {
            const npl_gguf_tensor *a = npl_gguf_find_tensor(g, copied[i]), *b = npl_gguf_find_tensor(c, copied[i]);
            CHECK(a && b && b->type == a->type && b->size == a->size && !memcmp(a->data, b->data, a->size));
        }
        npl_gguf_close(c);
    }
    unlink(path);
}

/* Facts taken from gguf-py's GGUFReader on the same file. */
static void test_real_model(void) {
    const char *path = getenv("NPL_TEST_MODEL");
    CHECK(path && *path && exists(path));
    if (!path || !*path || !exists(path)) {
        fprintf(stderr, "NPL_TEST_MODEL unset or missing: the real-model checks cannot run\n");
        return;
    }
    char err[512];
    npl_gguf *g = npl_gguf_open(path, NULL, err, sizeof err);
    CHECK(g != NULL);
    if (!g) {
        fprintf(stderr, "open failed: %s\n", err);
        return;
    }
    npl_gguf_str s;
    uint32_t u;
    float f;
    int b;
    CHECK_EQ_INT(npl_gguf_version(g), 3);
    CHECK_EQ_INT(npl_gguf_n_kv(g), 33);
    CHECK_EQ_INT(npl_gguf_n_tensors(g), 236);
    CHECK_EQ_INT(npl_gguf_alignment(g), 32);
    CHECK_EQ_INT(npl_gguf_data_offset(g), 6525120);
    CHECK_EQ_INT(npl_gguf_file_size(g), 253113024);
    CHECK(!npl_gguf_get_str(g, "general.architecture", &s) && str_eq(s, "gemma3"));
    CHECK(!npl_gguf_get_u32(g, "gemma3.block_count", &u) && u == 18);
    CHECK(!npl_gguf_get_u32(g, "gemma3.context_length", &u) && u == 32768);
    CHECK(!npl_gguf_get_u32(g, "gemma3.embedding_length", &u) && u == 640);
    CHECK(!npl_gguf_get_u32(g, "tokenizer.ggml.bos_token_id", &u) && u == 2);
    CHECK(!npl_gguf_get_f32(g, "gemma3.rope.freq_base", &f) && f == 1000000.0f);
    CHECK(!npl_gguf_get_bool(g, "tokenizer.ggml.add_bos_token", &b) && b == 1);
    int64_t k = npl_gguf_find_key(g, "tokenizer.ggml.tokens");
    CHECK_EQ_INT(npl_gguf_arr_type(g, k), NPL_GGUF_STRING);
    CHECK_EQ_INT(npl_gguf_arr_n(g, k), 262144);
    CHECK(str_eq(npl_gguf_arr_str(g, k, 0), "<pad>"));
    CHECK(str_eq(npl_gguf_arr_str(g, k, 2), "<bos>"));
    CHECK(str_eq(npl_gguf_arr_str(g, k, 5), "[multimodal]"));
    CHECK(str_eq(npl_gguf_arr_str(g, k, 262143), "<unused6241>"));
    k = npl_gguf_find_key(g, "tokenizer.ggml.scores");
    CHECK_EQ_INT(npl_gguf_arr_type(g, k), NPL_GGUF_FLOAT32);
    if (npl_gguf_arr_data(g, k)) {
        memcpy(&f, npl_gguf_arr_data(g, k), 4);
        CHECK(f == -1000.0f);
    }

    const npl_gguf_tensor *t = npl_gguf_find_tensor(g, "token_embd.weight");
    CHECK(t != NULL);
    if (t) {
        CHECK_EQ_INT(t->type, NPL_TYPE_Q8_0);
        CHECK_EQ_INT(t->n_dims, 2);
        CHECK_EQ_INT(t->ne[0], 640);
        CHECK_EQ_INT(t->ne[1], 262144);
        CHECK_EQ_INT(t->size, 178257920);
        CHECK_EQ_INT(t->offset, 6527680 - 6525120);
    }
    t = npl_gguf_tensor_at(g, 0);
    CHECK(t && !strcmp(t->name, "output_norm.weight") && t->offset == 0 && t->type == NPL_TYPE_F32);
    int counts[NPL_TYPE_COUNT] = {0};
    for (int64_t i = 0; i < npl_gguf_n_tensors(g); i++) counts[npl_gguf_tensor_at(g, i)->type]++;
    CHECK_EQ_INT(counts[NPL_TYPE_F32], 109);
    CHECK_EQ_INT(counts[NPL_TYPE_Q5_0], 81);
    CHECK_EQ_INT(counts[NPL_TYPE_Q4_K], 27);
    CHECK_EQ_INT(counts[NPL_TYPE_Q8_0], 10);
    CHECK_EQ_INT(counts[NPL_TYPE_Q6_K], 9);
    test_copy_model(g);
    npl_gguf_close(g);
}

int main(void) {
    const char *td = getenv("TMPDIR");
    snprintf(tmpdir, sizeof tmpdir, "%s/npl_gguf_rt_XXXXXX", td && *td ? td : "/tmp");
    if (!mkdtemp(tmpdir)) {
        perror("mkdtemp");
        return 1;
    }
    fill_tensors();
    test_roundtrip();
    test_empty_file();
    test_writer_errors();
    test_real_model();
    for (int i = 0; i < N_TENSORS; i++) free(tensors[i].data);
    rmdir(tmpdir);
    TEST_MAIN_END();
}
