/* QNN HTP adapter: a context with two graphs (M = 8 and M = 1 over the same
 * weights), its context binary round trip (same output bytes), libQnnSystem's
 * binary info, and the failures: truncated / garbled binary, a binary for
 * another SoC, missing or wrong QNN libraries, an unknown SoC, and every SoC
 * of the table accepted by the emulator. */
#include "test_qnn_common.h"

#include <unistd.h>

enum { K = 64, N = 32 };
static uint16_t W[N * K];
static uint16_t X[8 * K];

static void build(qnn_rig *r, npl_accel_context *ctx, const char *gname, const char *xn, const char *yn, uint32_t m) {
    const npl_accel_api *a = r->api;
    npl_accel_graph *g;
    npl_accel_tensor_id x, w, y;
    CHECK_EQ_INT(a->graph_create(ctx, gname, &g), NPL_ACCEL_OK);
    npl_accel_tensor_desc d = accel_desc(xn, NPL_ACCEL_APP_WRITE, NPL_ACCEL_DT_F16, 2, m, K, 0);
    CHECK_EQ_INT(a->tensor_create(g, &d, &x), NPL_ACCEL_OK);
    d = accel_desc("w", NPL_ACCEL_STATIC, NPL_ACCEL_DT_F16, 2, N, K, 0);
    d.data = W, d.data_size = sizeof W;
    CHECK_EQ_INT(a->tensor_create(g, &d, &w), NPL_ACCEL_OK);
    d = accel_desc(yn, NPL_ACCEL_APP_READ, NPL_ACCEL_DT_F16, 2, m, N, 0);
    CHECK_EQ_INT(a->tensor_create(g, &d, &y), NPL_ACCEL_OK);
    npl_accel_tensor_id in[2] = {x, w};
    npl_accel_node_desc nd = {"fc", "FullyConnected", NULL, 0, in, 2, &y, 1};
    CHECK_EQ_INT(a->graph_add_node(g, &nd), NPL_ACCEL_OK);
    CHECK_EQ_INT(a->graph_finalize(g), NPL_ACCEL_OK);
}

static int run(qnn_rig *r, npl_accel_context *ctx, const char *gname, const char *xn, const char *yn, uint32_t m, uint16_t *y) {
    npl_accel_graph *g;
    int st = r->api->graph_retrieve(ctx, gname, &g);
    npl_accel_buffer bi = {xn, X, (uint64_t)m * K * 2}, bo = {yn, y, (uint64_t)m * N * 2};
    if (!st) st = r->api->graph_execute(g, &bi, 1, &bo, 1);
    if (st) fprintf(stderr, "run %s: %s\n", gname, r->api->last_error(r->be));
    return st;
}

int main(void) {
    qnn_rig r = qnn_rig_open("SM8650");
    const npl_accel_api *a = r.api;
    unsigned s = 7;
    for (int i = 0; i < N * K; i++) W[i] = npl_f32_to_f16(0.2f * accel_frand(&s));
    for (int i = 0; i < 8 * K; i++) X[i] = npl_f32_to_f16(accel_frand(&s));

    /* two graphs in one context, sharing the weight tensor by name */
    npl_accel_context *ctx;
    CHECK_EQ_INT(a->context_create(r.be, r.dev, NULL, 0, &ctx), NPL_ACCEL_OK);
    build(&r, ctx, "prefill", "x8", "y8", 8);
    build(&r, ctx, "decode", "x1", "y1", 1);
    static uint16_t y8[8 * N], y1[N], z8[8 * N], z1[N];
    CHECK_EQ_INT(run(&r, ctx, "prefill", "x8", "y8", 8, y8), NPL_ACCEL_OK);
    CHECK_EQ_INT(run(&r, ctx, "decode", "x1", "y1", 1, y1), NPL_ACCEL_OK);
    double e = 0;
    for (int n = 0; n < N; n++) {
        double ref = 0;
        for (int k = 0; k < K; k++) ref += (double)npl_f16_to_f32(X[k]) * npl_f16_to_f32(W[n * K + k]);
        e = fmax(e, fabs(npl_f16_to_f32(y1[n]) - ref));
        CHECK_NEAR(npl_f16_to_f32(y8[n]), npl_f16_to_f32(y1[n]), 2e-3); /* row 0 of prefill == decode */
    }
    printf("decode graph vs double reference: max_err %.5f\n", e);
    CHECK(e < 0.01);

    uint64_t size = 0, written = 0;
    CHECK_EQ_INT(a->context_get_binary_size(ctx, &size), NPL_ACCEL_OK);
    uint8_t *bin = malloc(size);
    CHECK_EQ_INT(a->context_get_binary(ctx, bin, size, &written), NPL_ACCEL_OK);
    CHECK(written > sizeof W && written <= size);
    printf("context binary: %llu bytes (weights %zu bytes, 2 graphs)\n", (unsigned long long)written, sizeof W);
    CHECK_EQ_INT(a->context_get_binary(ctx, bin, 16, &written), NPL_ACCEL_ERR_INVALID_ARG); /* too small a buffer */
    CHECK_EQ_INT(a->context_get_binary(ctx, bin, size, &written), NPL_ACCEL_OK);
    a->context_free(ctx);

    /* binary info lists both graphs with their tensors */
    npl_accel_binary_info *bi = NULL;
    CHECK_EQ_INT(a->binary_info_get(r.be, bin, written, &bi), NPL_ACCEL_OK);
    if (bi) {
        CHECK_EQ_INT(bi->n_graphs, 2);
        int seen = 0;
        for (uint32_t i = 0; i < bi->n_graphs; i++) {
            const npl_accel_graph_info *g = &bi->graphs[i];
            printf("  graph %s: %u in, %u out\n", g->name, g->n_inputs, g->n_outputs);
            if (!strcmp(g->name, "decode") && g->n_inputs == 1 && g->n_outputs == 1) {
                seen++;
                CHECK(!strcmp(g->inputs[0].name, "x1"));
                CHECK_EQ_INT(g->inputs[0].dtype, NPL_ACCEL_DT_F16);
                CHECK_EQ_INT(g->inputs[0].rank, 2);
                CHECK_EQ_INT(g->inputs[0].dims[0], 1);
                CHECK_EQ_INT(g->inputs[0].dims[1], K);
                CHECK_EQ_INT(g->outputs[0].dims[1], N);
            }
            if (!strcmp(g->name, "prefill")) seen++;
        }
        CHECK_EQ_INT(seen, 2);
        a->binary_info_free(r.be, bi);
    }

    /* round trip: the same output bytes from the reloaded graphs */
    npl_accel_context *c2 = NULL;
    CHECK_EQ_INT(a->context_create_from_binary(r.be, r.dev, NULL, 0, bin, written, &c2), NPL_ACCEL_OK);
    if (c2) {
        CHECK_EQ_INT(run(&r, c2, "prefill", "x8", "y8", 8, z8), NPL_ACCEL_OK);
        CHECK_EQ_INT(run(&r, c2, "decode", "x1", "y1", 1, z1), NPL_ACCEL_OK);
        CHECK(!memcmp(y8, z8, sizeof y8));
        CHECK(!memcmp(y1, z1, sizeof y1));
        npl_accel_graph *g;
        CHECK_EQ_INT(a->graph_create(c2, "more", &g), NPL_ACCEL_ERR_STATE);
        CHECK_EQ_INT(a->graph_retrieve(c2, "nope", &g), NPL_ACCEL_ERR_NOT_FOUND);
        a->context_free(c2);
    }

    /* truncated and garbled binaries: a status and a message, no crash */
    npl_accel_context *c3 = NULL;
    int st = a->context_create_from_binary(r.be, r.dev, NULL, 0, bin, written / 2, &c3);
    printf("truncated: status %d: %s\n", st, a->last_error(r.be));
    CHECK(st == NPL_ACCEL_ERR_BINARY_CORRUPT || st == NPL_ACCEL_ERR_BINARY_VERSION);
    CHECK(c3 == NULL);
    uint8_t *bad = malloc(written);
    memcpy(bad, bin, written);
    for (int i = 0; i < 64; i++) bad[i] ^= 0x5a;
    st = a->context_create_from_binary(r.be, r.dev, NULL, 0, bad, written, &c3);
    printf("garbled header: status %d: %s\n", st, a->last_error(r.be));
    CHECK(st == NPL_ACCEL_ERR_BINARY_CORRUPT || st == NPL_ACCEL_ERR_BINARY_VERSION);
    CHECK(strstr(a->last_error(r.be), "binary") != NULL);
    CHECK_EQ_INT(a->binary_info_get(r.be, bad, written, &bi), NPL_ACCEL_ERR_BINARY_CORRUPT);
    free(bad);

    /* a binary for SM8650 on an SM8750 device */
    npl_accel_device *d2 = NULL;
    npl_accel_option o = {"soc", "SM8750"};
    CHECK_EQ_INT(a->device_create(r.be, &o, 1, &d2), NPL_ACCEL_OK);
    st = a->context_create_from_binary(r.be, d2, NULL, 0, bin, written, &c3);
    printf("other SoC: status %d: %s\n", st, a->last_error(r.be));
    CHECK_EQ_INT(st, NPL_ACCEL_ERR_HW_UNSUPPORTED);
    CHECK(strstr(a->last_error(r.be), "SM8650") && strstr(a->last_error(r.be), "SM8750"));
    a->device_free(d2);
    free(bin);

    /* every SoC of the table: a device and a finalized graph */
    /* (SM7635 has no fp16 on the device, but the emulator finalizes and runs
     * this fp16 graph for it: only the compiler's --act check refuses it) */
    static const char *socs[] = {"SM8350", "SM8450", "SM8550", "SM7635", "SM8650", "SM8750", "SM8850"};
    for (size_t i = 0; i < sizeof socs / sizeof socs[0]; i++) {
        npl_accel_option so = {"soc", socs[i]};
        npl_accel_device *d = NULL;
        CHECK_EQ_INT(a->device_create(r.be, &so, 1, &d), NPL_ACCEL_OK);
        if (!d) continue;
        npl_accel_context *c = NULL;
        CHECK_EQ_INT(a->context_create(r.be, d, NULL, 0, &c), NPL_ACCEL_OK);
        qnn_rig rr = {a, r.be, d};
        build(&rr, c, "soc", "x", "y", 1);
        static uint16_t y[N];
        CHECK_EQ_INT(run(&rr, c, "soc", "x", "y", 1, y), NPL_ACCEL_OK);
        CHECK_NEAR(npl_f16_to_f32(y[3]), npl_f16_to_f32(y1[3]), 5e-3);
        a->context_free(c);
        a->device_free(d);
    }
    /* the device option act: a float type for an SoC without fp16 is refused */
    npl_accel_option sa[2] = {{"soc", "SM7635"}, {"act", "f16"}};
    CHECK_EQ_INT(a->device_create(r.be, sa, 2, &d2), NPL_ACCEL_ERR_HW_UNSUPPORTED);
    CHECK(d2 == NULL && strstr(a->last_error(r.be), "SM7635") && strstr(a->last_error(r.be), "no fp16"));
    sa[1].value = "int16";
    CHECK_EQ_INT(a->device_create(r.be, sa, 2, &d2), NPL_ACCEL_OK);
    a->device_free(d2);
    sa[0].value = "SM8650", sa[1].value = "f16";
    CHECK_EQ_INT(a->device_create(r.be, sa, 2, &d2), NPL_ACCEL_OK);
    a->device_free(d2);
    sa[1].value = "int4";
    CHECK_EQ_INT(a->device_create(r.be, sa, 2, &d2), NPL_ACCEL_ERR_INVALID_ARG);
    npl_accel_option unk = {"soc", "SM1234"};
    CHECK_EQ_INT(a->device_create(r.be, &unk, 1, &d2), NPL_ACCEL_ERR_INVALID_ARG);
    CHECK(strstr(a->last_error(r.be), "SM1234") && strstr(a->last_error(r.be), "SM8650"));
    qnn_rig_close(&r);

    /* missing and wrong QNN library folders */
    npl_accel_backend *be = NULL;
    char err[512] = "";
    npl_accel_option lib = {"qnn_lib", "/nonexistent/qnn"};
    CHECK_EQ_INT(a->backend_create(&lib, 1, &be, err, sizeof err), NPL_ACCEL_ERR_HW_UNSUPPORTED);
    printf("missing: %s\n", err);
    CHECK(be == NULL && strstr(err, "/nonexistent/qnn/libQnnHtp.so"));
    char dir[] = "/tmp/npl_qnn_wrong_XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char link[128];
    snprintf(link, sizeof link, "%s/libQnnHtp.so", dir);
    CHECK(symlink("/lib/x86_64-linux-gnu/libm.so.6", link) == 0);
    lib.value = dir;
    err[0] = 0;
    CHECK_EQ_INT(a->backend_create(&lib, 1, &be, err, sizeof err), NPL_ACCEL_ERR_HW_UNSUPPORTED);
    printf("wrong: %s\n", err);
    CHECK(strstr(err, "QnnInterface_getProviders") != NULL);
    unlink(link);
    rmdir(dir);
    npl_accel_option typo = {"qnn_libs", "x"};
    CHECK_EQ_INT(a->backend_create(&typo, 1, &be, err, sizeof err), NPL_ACCEL_ERR_INVALID_ARG);
    CHECK(strstr(err, "qnn_libs") != NULL);
    TEST_MAIN_END();
}
