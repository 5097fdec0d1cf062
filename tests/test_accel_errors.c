/* Bad input to vnpu: every case returns its status code and leaves a
 * message in last_error, never crashes. Graph errors (cycle, unknown op,
 * types, shapes, duplicate names, call order, bindings, run-time indices)
 * and binary errors (truncation, every single-byte flip, other ABI version,
 * a kernel family this CPU lacks). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "accel/vnpu/vnpu_api.h"
#include "accel_test_util.h"
#include "check.h"
#include "npullm_accel.h"

static const npl_accel_api *api;
static npl_accel_backend *be;
static npl_accel_device *dev;

/* status st expected, and a message mentioning `word` */
#define EXPECT(call, st, word)                                                                               \
    do {                                                                                                     \
        int _s = (call);                                                                                     \
        CHECK_EQ_INT(_s, st);                                                                                \
        if (_s != NPL_ACCEL_OK && !strstr(api->last_error(be), word)) {                                      \
            fprintf(stderr, "%s:%d: message '%s' lacks '%s'\n", __FILE__, __LINE__, api->last_error(be), word); \
            CHECK(0);                                                                                        \
        }                                                                                                    \
    } while (0)

static npl_accel_tensor_desc td(const char *name, uint32_t kind, uint32_t dt, uint32_t d0, uint32_t d1) {
    npl_accel_tensor_desc d;
    memset(&d, 0, sizeof d);
    d.name = name;
    d.kind = kind;
    d.dtype = dt;
    d.rank = d1 ? 2 : 1;
    d.dims[0] = d0;
    d.dims[1] = d1;
    return d;
}

static npl_accel_tensor_id mk(npl_accel_graph *g, npl_accel_tensor_desc d) {
    npl_accel_tensor_id id = 0;
    CHECK_EQ_INT(api->tensor_create(g, &d, &id), NPL_ACCEL_OK);
    return id;
}

static int node(npl_accel_graph *g, const char *op, const npl_accel_tensor_id *in, uint32_t nin, npl_accel_tensor_id out) {
    npl_accel_node_desc n = {op, op, NULL, 0, in, nin, &out, 1};
    return api->graph_add_node(g, &n);
}

static npl_accel_context *new_ctx(void) {
    npl_accel_context *c = NULL;
    CHECK_EQ_INT(api->context_create(be, dev, NULL, 0, &c), NPL_ACCEL_OK);
    return c;
}

static float wdata[32 * 16], gdata[16];

/* x [2, 32] . w [32, 16] -> RmsNorm(gamma) -> y [2, 16] */
static npl_accel_context *small_ctx(npl_accel_graph **out) {
    npl_accel_context *c = new_ctx();
    npl_accel_graph *g;
    CHECK_EQ_INT(api->graph_create(c, "small", &g), NPL_ACCEL_OK);
    npl_accel_tensor_desc dw = td("w", NPL_ACCEL_STATIC, NPL_ACCEL_DT_F32, 32, 16), dg = td("gamma", NPL_ACCEL_STATIC, NPL_ACCEL_DT_F32, 16, 0);
    dw.data = wdata, dw.data_size = sizeof wdata;
    dg.data = gdata, dg.data_size = sizeof gdata;
    npl_accel_tensor_id x = mk(g, td("x", NPL_ACCEL_APP_WRITE, NPL_ACCEL_DT_F32, 2, 32)), w = mk(g, dw), gm = mk(g, dg);
    npl_accel_tensor_id t = mk(g, td("t", NPL_ACCEL_NATIVE, NPL_ACCEL_DT_F32, 2, 16));
    npl_accel_tensor_id y = mk(g, td("y", NPL_ACCEL_APP_READ, NPL_ACCEL_DT_F32, 2, 16));
    CHECK_EQ_INT(node(g, "MatMul", (npl_accel_tensor_id[]){x, w}, 2, t), NPL_ACCEL_OK);
    CHECK_EQ_INT(node(g, "RmsNorm", (npl_accel_tensor_id[]){t, gm}, 2, y), NPL_ACCEL_OK);
    CHECK_EQ_INT(api->graph_finalize(g), NPL_ACCEL_OK);
    *out = g;
    return c;
}

static void test_graph_errors(void) {
    npl_accel_context *c = new_ctx();
    npl_accel_graph *g, *g2;
    CHECK_EQ_INT(api->graph_create(c, "g", &g), NPL_ACCEL_OK);
    EXPECT(api->graph_create(c, "g", &g2), NPL_ACCEL_ERR_DUPLICATE_NAME, "already exists");
    npl_accel_tensor_id x = mk(g, td("x", NPL_ACCEL_APP_WRITE, NPL_ACCEL_DT_F32, 4, 32));
    npl_accel_tensor_id id = 0;
    npl_accel_tensor_desc dup = td("x", NPL_ACCEL_APP_WRITE, NPL_ACCEL_DT_F32, 4, 32);
    EXPECT(api->tensor_create(g, &dup, &id), NPL_ACCEL_ERR_DUPLICATE_NAME, "already exists");
    /* STATIC: identical description and bytes share, different bytes collide */
    npl_accel_tensor_desc ws = td("w", NPL_ACCEL_STATIC, NPL_ACCEL_DT_F32, 32, 16);
    ws.data = wdata, ws.data_size = sizeof wdata;
    npl_accel_tensor_id w = mk(g, ws), w2 = 0;
    CHECK_EQ_INT(api->tensor_create(g, &ws, &w2), NPL_ACCEL_OK);
    CHECK_EQ_INT(w2, w);
    float other[32 * 16] = {1};
    ws.data = other;
    EXPECT(api->tensor_create(g, &ws, &id), NPL_ACCEL_ERR_DUPLICATE_NAME, "identical");
    ws.data_size = 4;
    ws.name = "w_short";
    EXPECT(api->tensor_create(g, &ws, &id), NPL_ACCEL_ERR_INVALID_ARG, "expected");
    npl_accel_tensor_desc bad_rank = td("r", NPL_ACCEL_NATIVE, NPL_ACCEL_DT_F32, 4, 0);
    bad_rank.rank = 7;
    EXPECT(api->tensor_create(g, &bad_rank, &id), NPL_ACCEL_ERR_SHAPE_MISMATCH, "rank");
    npl_accel_tensor_desc q4 = td("q4", NPL_ACCEL_APP_WRITE, NPL_ACCEL_DT_Q4_0, 4, 32);
    EXPECT(api->tensor_create(g, &q4, &id), NPL_ACCEL_ERR_TYPE_MISMATCH, "STATIC");
    npl_accel_tensor_desc qf = td("qf", NPL_ACCEL_APP_WRITE, NPL_ACCEL_DT_F32, 4, 0);
    float s1 = 1;
    qf.quant = (npl_accel_quant){NPL_ACCEL_QUANT_PER_TENSOR, 0, 0, 1, &s1, NULL};
    EXPECT(api->tensor_create(g, &qf, &id), NPL_ACCEL_ERR_TYPE_MISMATCH, "quant");
    npl_accel_tensor_desc qn = td("qn", NPL_ACCEL_APP_WRITE, NPL_ACCEL_DT_INT8, 4, 8);
    qn.quant = (npl_accel_quant){NPL_ACCEL_QUANT_PER_AXIS, 1, 0, 3, (float[]){1, 1, 1}, NULL};
    EXPECT(api->tensor_create(g, &qn, &id), NPL_ACCEL_ERR_INVALID_ARG, "scales");

    npl_accel_tensor_id i32 = mk(g, td("ix", NPL_ACCEL_APP_WRITE, NPL_ACCEL_DT_INT32, 4, 32));
    npl_accel_tensor_id t = mk(g, td("t", NPL_ACCEL_NATIVE, NPL_ACCEL_DT_F32, 4, 16));
    npl_accel_tensor_id t2 = mk(g, td("t2", NPL_ACCEL_NATIVE, NPL_ACCEL_DT_F32, 4, 16));
    npl_accel_tensor_id bad = mk(g, td("bad", NPL_ACCEL_NATIVE, NPL_ACCEL_DT_F32, 4, 17));
    npl_accel_tensor_id xs = mk(g, td("xs", NPL_ACCEL_APP_WRITE, NPL_ACCEL_DT_F32, 4, 31));
    npl_accel_tensor_id y = mk(g, td("y", NPL_ACCEL_APP_READ, NPL_ACCEL_DT_F32, 4, 16));
    EXPECT(node(g, "Frobnicate", &x, 1, t), NPL_ACCEL_ERR_UNKNOWN_OP, "unknown op");
    EXPECT(node(g, "vnpu.MatMulGated", (npl_accel_tensor_id[]){x, w, w}, 3, t), NPL_ACCEL_ERR_UNKNOWN_OP, "unknown op");
    EXPECT(node(g, "MatMul", (npl_accel_tensor_id[]){i32, w}, 2, t), NPL_ACCEL_ERR_TYPE_MISMATCH, "int32");
    EXPECT(node(g, "MatMul", (npl_accel_tensor_id[]){xs, w}, 2, t), NPL_ACCEL_ERR_SHAPE_MISMATCH, "K");
    EXPECT(node(g, "MatMul", (npl_accel_tensor_id[]){x, w}, 2, bad), NPL_ACCEL_ERR_SHAPE_MISMATCH, "[4, 16]");
    EXPECT(node(g, "MatMul", &x, 1, t), NPL_ACCEL_ERR_SHAPE_MISMATCH, "inputs");
    EXPECT(node(g, "Add", (npl_accel_tensor_id[]){t, bad}, 2, t2), NPL_ACCEL_ERR_SHAPE_MISMATCH, "trailing");
    EXPECT(node(g, "MatMul", (npl_accel_tensor_id[]){x, w}, 2, x), NPL_ACCEL_ERR_INVALID_ARG, "outputs must be");
    EXPECT(node(g, "MatMul", (npl_accel_tensor_id[]){x, 999}, 2, t), NPL_ACCEL_ERR_INVALID_ARG, "does not exist");
    npl_accel_param bp = {.name = "no_such", .type = NPL_ACCEL_PARAM_INT};
    npl_accel_node_desc nd = {"mm", "MatMul", &bp, 1, (npl_accel_tensor_id[]){x, w}, 2, &t, 1};
    EXPECT(api->graph_add_node(g, &nd), NPL_ACCEL_ERR_BAD_PARAM, "no_such");
    bp = (npl_accel_param){.name = "transpose_in1", .type = NPL_ACCEL_PARAM_STRING, .str = "yes"};
    EXPECT(api->graph_add_node(g, &nd), NPL_ACCEL_ERR_BAD_PARAM, "wrong type");
    /* rope positions must be int32 */
    npl_accel_tensor_desc d3 = td("x3", NPL_ACCEL_APP_WRITE, NPL_ACCEL_DT_F32, 4, 2);
    d3.rank = 3, d3.dims[2] = 8;
    npl_accel_tensor_id x3 = mk(g, d3), pf = mk(g, td("pf", NPL_ACCEL_APP_WRITE, NPL_ACCEL_DT_F32, 4, 0));
    d3.name = "r3", d3.kind = NPL_ACCEL_NATIVE;
    npl_accel_tensor_id r3 = mk(g, d3);
    EXPECT(node(g, "Rope", (npl_accel_tensor_id[]){x3, pf}, 2, r3), NPL_ACCEL_ERR_TYPE_MISMATCH, "int32");
    /* a cycle: t = t2 + x-ish, t2 = t + ... */
    CHECK_EQ_INT(node(g, "MatMul", (npl_accel_tensor_id[]){x, w}, 2, y), NPL_ACCEL_OK);
    CHECK_EQ_INT(node(g, "Add", (npl_accel_tensor_id[]){t2, y}, 2, t), NPL_ACCEL_OK);
    CHECK_EQ_INT(node(g, "Mul", (npl_accel_tensor_id[]){t, y}, 2, t2), NPL_ACCEL_OK);
    npl_accel_buffer none[1];
    EXPECT(api->graph_execute(g, none, 0, none, 0), NPL_ACCEL_ERR_STATE, "before finalize");
    EXPECT(api->graph_finalize(g), NPL_ACCEL_ERR_GRAPH_CYCLE, "cycle");
    CHECK_EQ_INT(api->context_free(c), NPL_ACCEL_OK);

    /* a NATIVE read that nothing produces; an output never produced */
    c = new_ctx();
    CHECK_EQ_INT(api->graph_create(c, "g", &g), NPL_ACCEL_OK);
    x = mk(g, td("x", NPL_ACCEL_APP_WRITE, NPL_ACCEL_DT_F32, 4, 16));
    t = mk(g, td("t", NPL_ACCEL_NATIVE, NPL_ACCEL_DT_F32, 4, 16));
    y = mk(g, td("y", NPL_ACCEL_APP_READ, NPL_ACCEL_DT_F32, 4, 16));
    npl_accel_tensor_id y2 = mk(g, td("y2", NPL_ACCEL_APP_READ, NPL_ACCEL_DT_F32, 4, 16));
    CHECK_EQ_INT(node(g, "Add", (npl_accel_tensor_id[]){x, t}, 2, y), NPL_ACCEL_OK);
    EXPECT(api->graph_finalize(g), NPL_ACCEL_ERR_INVALID_ARG, "no node produces");
    (void)y2;
    CHECK_EQ_INT(api->context_free(c), NPL_ACCEL_OK);
}

static void test_call_order_and_bindings(void) {
    npl_accel_graph *g;
    npl_accel_context *c = small_ctx(&g);
    float x[64] = {0}, y[32], big[64];
    for (int i = 0; i < 64; i++) x[i] = (float)i / 64;
    npl_accel_buffer in = {"x", x, sizeof x}, out = {"y", y, sizeof y};
    CHECK_EQ_INT(api->graph_execute(g, &in, 1, &out, 1), NPL_ACCEL_OK);
    EXPECT(api->graph_finalize(g), NPL_ACCEL_ERR_STATE, "already finalized");
    npl_accel_tensor_id id = 0;
    npl_accel_tensor_desc late = td("late", NPL_ACCEL_NATIVE, NPL_ACCEL_DT_F32, 4, 0);
    EXPECT(api->tensor_create(g, &late, &id), NPL_ACCEL_ERR_STATE, "finalized");
    EXPECT(node(g, "Scale", &id, 1, id), NPL_ACCEL_ERR_STATE, "finalized");
    npl_accel_buffer wrong = {"x", big, sizeof x - 4};
    EXPECT(api->graph_execute(g, &wrong, 1, &out, 1), NPL_ACCEL_ERR_BINDING, "bytes");
    npl_accel_buffer unknown = {"nope", x, sizeof x};
    EXPECT(api->graph_execute(g, &unknown, 1, &out, 1), NPL_ACCEL_ERR_BINDING, "nope");
    EXPECT(api->graph_execute(g, &in, 1, NULL, 0), NPL_ACCEL_ERR_BINDING, "not bound");
    npl_accel_buffer twice[2] = {in, in};
    EXPECT(api->graph_execute(g, twice, 2, &out, 1), NPL_ACCEL_ERR_BINDING, "twice");
    npl_accel_buffer null_data = {"x", NULL, sizeof x};
    EXPECT(api->graph_execute(g, &null_data, 1, &out, 1), NPL_ACCEL_ERR_BINDING, "NULL");
    EXPECT(api->graph_execute(g, &out, 1, &in, 1), NPL_ACCEL_ERR_BINDING, "to bind");
    npl_accel_graph *none;
    EXPECT(api->graph_retrieve(c, "missing", &none), NPL_ACCEL_ERR_NOT_FOUND, "missing");
    void *p;
    uint64_t n;
    EXPECT(api->context_tensor_data(c, "x", &p, &n), NPL_ACCEL_ERR_NOT_FOUND, "APP_READWRITE");
    CHECK_EQ_INT(api->graph_execute(NULL, &in, 1, &out, 1), NPL_ACCEL_ERR_INVALID_HANDLE);
    CHECK_EQ_INT(api->context_free(c), NPL_ACCEL_OK);

    /* run-time index errors: Gather out of range */
    c = new_ctx();
    CHECK_EQ_INT(api->graph_create(c, "gather", &g), NPL_ACCEL_OK);
    npl_accel_tensor_desc dt = td("table", NPL_ACCEL_STATIC, NPL_ACCEL_DT_F32, 32, 16);
    dt.data = wdata, dt.data_size = sizeof wdata;
    npl_accel_tensor_id tab = mk(g, dt), ix = mk(g, td("ix", NPL_ACCEL_APP_WRITE, NPL_ACCEL_DT_INT32, 2, 0));
    npl_accel_tensor_id r = mk(g, td("rows", NPL_ACCEL_APP_READ, NPL_ACCEL_DT_F32, 2, 16));
    CHECK_EQ_INT(node(g, "Gather", (npl_accel_tensor_id[]){tab, ix}, 2, r), NPL_ACCEL_OK);
    CHECK_EQ_INT(api->graph_finalize(g), NPL_ACCEL_OK);
    int32_t idx[2] = {3, 32};
    npl_accel_buffer bi = {"ix", idx, sizeof idx}, bo = {"rows", y, sizeof y};
    EXPECT(api->graph_execute(g, &bi, 1, &bo, 1), NPL_ACCEL_ERR_INVALID_ARG, "out of range");
    idx[1] = 31;
    CHECK_EQ_INT(api->graph_execute(g, &bi, 1, &bo, 1), NPL_ACCEL_OK);
    CHECK(y[16] == wdata[31 * 16]);
    CHECK_EQ_INT(api->context_free(c), NPL_ACCEL_OK);
}

static uint8_t *small_binary(uint64_t *size) {
    npl_accel_graph *g;
    npl_accel_context *c = small_ctx(&g);
    CHECK_EQ_INT(api->context_get_binary_size(c, size), NPL_ACCEL_OK);
    uint8_t *b = malloc(*size);
    uint64_t w = 0;
    CHECK_EQ_INT(api->context_get_binary(c, b, *size, &w), NPL_ACCEL_OK);
    CHECK_EQ_INT(api->context_free(c), NPL_ACCEL_OK);
    return b;
}

static void test_binary_errors(void) {
    uint64_t size;
    uint8_t *b = small_binary(&size);
    npl_accel_context *c = NULL;
    CHECK_EQ_INT(api->context_create_from_binary(be, dev, NULL, 0, b, size, &c), NPL_ACCEL_OK);
    CHECK_EQ_INT(api->context_free(c), NPL_ACCEL_OK);
    printf("small binary: %llu bytes\n", (unsigned long long)size);
    /* truncated, and one byte too many */
    const uint64_t cuts[] = {0, 7, 64, 127, 128, 129, size / 2, size - 64, size - 1};
    for (size_t i = 0; i < sizeof cuts / sizeof cuts[0]; i++) {
        uint8_t *t = malloc(cuts[i] + 1);
        memcpy(t, b, cuts[i]);
        c = (npl_accel_context *)t;
        EXPECT(api->context_create_from_binary(be, dev, NULL, 0, t, cuts[i], &c), NPL_ACCEL_ERR_BINARY_CORRUPT,
               "context binary");
        CHECK(c == NULL);
        free(t);
    }
    uint8_t *longer = calloc(size + 1, 1);
    memcpy(longer, b, size);
    EXPECT(api->context_create_from_binary(be, dev, NULL, 0, longer, size + 1, &c), NPL_ACCEL_ERR_BINARY_CORRUPT, "padded");
    free(longer);
    /* every single-byte flip is caught (mostly by the checksum) */
    int caught = 0, by_checksum = 0;
    for (uint64_t i = 0; i < size; i++)
        for (int bit = 0; bit < 8; bit += 7) {
            b[i] ^= (uint8_t)(1u << bit);
            c = NULL;
            int st = api->context_create_from_binary(be, dev, NULL, 0, b, size, &c);
            caught += st != NPL_ACCEL_OK && c == NULL && api->last_error(be)[0];
            by_checksum += strstr(api->last_error(be), "checksum") != NULL;
            if (st == NPL_ACCEL_OK) {
                fprintf(stderr, "flip of byte %llu bit %d not detected\n", (unsigned long long)i, bit);
                api->context_free(c);
            }
            b[i] ^= (uint8_t)(1u << bit);
        }
    printf("byte flips: %d of %llu caught, %d by the checksum\n", caught, (unsigned long long)(2 * size), by_checksum);
    CHECK_EQ_INT(caught, 2 * size);
    CHECK(by_checksum > (int)size);
    /* binary info validates the same way */
    npl_accel_binary_info *info = NULL;
    b[size / 2] ^= 1;
    EXPECT(api->binary_info_get(be, b, size, &info), NPL_ACCEL_ERR_BINARY_CORRUPT, "checksum");
    CHECK(info == NULL);
    b[size / 2] ^= 1;
    /* another ABI version (header field at offset 8) */
    uint32_t v = NPL_ACCEL_ABI_VERSION + 1;
    memcpy(b + 8, &v, 4);
    EXPECT(api->context_create_from_binary(be, dev, NULL, 0, b, size, &c), NPL_ACCEL_ERR_BINARY_VERSION, "ABI version");
    v = NPL_ACCEL_ABI_VERSION;
    memcpy(b + 8, &v, 4);
    CHECK(npl_vnpu_get_api(NPL_ACCEL_ABI_VERSION + 1) == NULL);
    free(b);

    /* a binary compiled for a family this (pretended) CPU lacks */
    npl_accel_backend_info bi;
    CHECK_EQ_INT(api->backend_get_info(be, &bi), NPL_ACCEL_OK);
    if (strcmp(bi.kernel_family, "generic")) {
        npl_accel_backend *weak;
        npl_accel_option o = {"cpu_max_family", "generic"};
        char err[256];
        CHECK_EQ_INT(api->backend_create(&o, 1, &weak, err, sizeof err), NPL_ACCEL_OK);
        b = small_binary(&size); /* compiled by `be` for its best family */
        c = NULL;
        CHECK_EQ_INT(api->context_create_from_binary(weak, NULL, NULL, 0, b, size, &c), NPL_ACCEL_ERR_HW_UNSUPPORTED);
        CHECK(strstr(api->last_error(weak), bi.kernel_family) != NULL);
        printf("weak cpu: %s\n", api->last_error(weak));
        /* its info is still readable */
        npl_accel_binary_info *info2 = NULL;
        CHECK_EQ_INT(api->binary_info_get(weak, b, size, &info2), NPL_ACCEL_OK);
        CHECK(info2 && !strcmp(info2->kernel_family, bi.kernel_family));
        api->binary_info_free(weak, info2);
        api->backend_free(weak);
        free(b);
        npl_accel_option two[2] = {{"cpu_max_family", "generic"}, {"kernel_family", bi.kernel_family}};
        CHECK_EQ_INT(api->backend_create(two, 2, &weak, err, sizeof err), NPL_ACCEL_ERR_HW_UNSUPPORTED);
        CHECK(strstr(err, "supports up to 'generic'") != NULL);
    } else {
        printf("this CPU has only the generic family: the missing-family case is not exercised\n");
    }
}

/* A context tensor (APP_READWRITE) whose record claims a huge size, with a
 * valid checksum: rejected as corrupt, and before any of it is allocated
 * (a fuzz finding: the loader used to allocate and zero each one while
 * reading the records, without tensor_create's 1 << 40 cap). */
static void test_binary_context_tensor_size(void) {
    npl_accel_context *c = new_ctx();
    npl_accel_graph *g;
    CHECK_EQ_INT(api->graph_create(c, "kvg", &g), NPL_ACCEL_OK);
    npl_accel_tensor_id x = mk(g, td("x", NPL_ACCEL_APP_WRITE, NPL_ACCEL_DT_F32, 4, 16));
    npl_accel_tensor_id kv = mk(g, td("kvbuf", NPL_ACCEL_APP_READWRITE, NPL_ACCEL_DT_F32, 4, 16));
    npl_accel_tensor_id y = mk(g, td("y", NPL_ACCEL_APP_READ, NPL_ACCEL_DT_F32, 4, 16));
    CHECK_EQ_INT(node(g, "Add", (npl_accel_tensor_id[]){x, kv}, 2, y), NPL_ACCEL_OK);
    CHECK_EQ_INT(api->graph_finalize(g), NPL_ACCEL_OK);
    uint64_t size = 0, w = 0;
    CHECK_EQ_INT(api->context_get_binary_size(c, &size), NPL_ACCEL_OK);
    uint8_t *b = malloc(size);
    CHECK_EQ_INT(api->context_get_binary(c, b, size, &w), NPL_ACCEL_OK);
    CHECK_EQ_INT(api->context_free(c), NPL_ACCEL_OK);
    /* the record: u32 name length, name, kind, dtype, rank, dims[6] */
    uint64_t at = 0;
    for (uint64_t i = 128; i + 9 + 20 <= size && !at; i++)
        if (!memcmp(b + i, "\x05\0\0\0kvbuf", 9)) at = i + 9;
    CHECK(at != 0);
    uint32_t rec[5];
    memcpy(rec, b + at, sizeof rec);
    CHECK(rec[0] == NPL_ACCEL_APP_READWRITE && rec[2] == 2 && rec[3] == 4 && rec[4] == 16);
    /* 2^42 bytes: over the cap; 16 GiB: under it, but the Add step no longer fits */
    const uint32_t dims[2][2] = {{1u << 20, 1u << 20}, {1u << 16, 1u << 16}};
    for (int k = 0; k < 2; k++) {
        memcpy(b + at + 12, dims[k], 8);
        accel_reseal(b, size);
        npl_accel_context *lc = NULL;
        EXPECT(api->context_create_from_binary(be, dev, NULL, 0, b, size, &lc), NPL_ACCEL_ERR_BINARY_CORRUPT,
               "context binary");
        CHECK(lc == NULL);
        printf("context tensor of %u x %u floats: %s\n", dims[k][0], dims[k][1], api->last_error(be));
    }
    memcpy(b + at + 12, &rec[3], 8); /* restored: loads */
    accel_reseal(b, size);
    npl_accel_context *lc = NULL;
    CHECK_EQ_INT(api->context_create_from_binary(be, dev, NULL, 0, b, size, &lc), NPL_ACCEL_OK);
    CHECK_EQ_INT(api->context_free(lc), NPL_ACCEL_OK);
    free(b);
}

int main(void) {
    for (int i = 0; i < 32 * 16; i++) wdata[i] = (float)((i * 37) % 101) / 101.0f - 0.5f;
    for (int i = 0; i < 16; i++) gdata[i] = 1.0f + (float)i / 16;
    api = npl_vnpu_get_api(NPL_ACCEL_ABI_VERSION);
    char err[256];
    CHECK_EQ_INT(api->backend_create(NULL, 0, &be, err, sizeof err), NPL_ACCEL_OK);
    CHECK_EQ_INT(api->device_create(be, NULL, 0, &dev), NPL_ACCEL_OK);
    test_graph_errors();
    test_call_order_and_bindings();
    test_binary_errors();
    test_binary_context_tensor_size();
    api->device_free(dev);
    api->backend_free(be);
    TEST_MAIN_END();
}
