/* record -> replay: the decoder-block context of accel_net.h (two graphs,
 * shared weights and KV cache) built through the record implementation,
 * written as GGUF, replayed into vnpu, gives the same bits as building it
 * on vnpu directly. Plus the record's own rules and the replay's errors. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "accel/record/record.h"
#include "accel/vnpu/vnpu_api.h"
#include "accel_net.h"
#include "check.h"
#include "format/gguf.h"

#define S 128

static int32_t tok[S], pos[S];

static void run(const npl_accel_api *api, npl_accel_context *ctx, float *prefill, float *decode) {
    npl_accel_graph *gp = NULL, *gd = NULL;
    CHECK_EQ_INT(api->graph_retrieve(ctx, "prefill", &gp), NPL_ACCEL_OK);
    CHECK_EQ_INT(api->graph_retrieve(ctx, "decode", &gd), NPL_ACCEL_OK);
    const int32_t td = 5, pd = 90;
    CHECK_EQ_INT(net_run(api, gp, "prefill", S, tok, pos, prefill), NPL_ACCEL_OK);
    CHECK_EQ_INT(net_run(api, gd, "decode", 1, &td, &pd, decode), NPL_ACCEL_OK);
}

static void build_net(const npl_accel_api *api, npl_accel_context *ctx, const net_weights *w) {
    CHECK_EQ_INT(net_build(api, ctx, "prefill", S, w), NPL_ACCEL_OK);
    CHECK_EQ_INT(net_build(api, ctx, "decode", 1, w), NPL_ACCEL_OK);
    npl_accel_graph *g;
    CHECK_EQ_INT(api->graph_retrieve(ctx, "decode", &g), NPL_ACCEL_OK);
    CHECK_EQ_INT(api->graph_finalize(g), NPL_ACCEL_OK); /* finalize order: decode first */
    CHECK_EQ_INT(api->graph_retrieve(ctx, "prefill", &g), NPL_ACCEL_OK);
    CHECK_EQ_INT(api->graph_finalize(g), NPL_ACCEL_OK);
}

/* context 0: a one-node graph; context 1: the decoder block */
static void record_file(const char *path, const net_weights *w) {
    const npl_accel_api *rec = npl_record_get_api(NPL_ACCEL_ABI_VERSION);
    npl_accel_backend *be;
    npl_accel_device *dev;
    char err[256];
    npl_accel_option o = {"path", path};
    CHECK_EQ_INT(rec->backend_create(NULL, 0, &be, err, sizeof err), NPL_ACCEL_ERR_INVALID_ARG);
    CHECK(strstr(err, "path") != NULL);
    CHECK_EQ_INT(rec->backend_create(&o, 1, &be, err, sizeof err), NPL_ACCEL_OK);
    CHECK_EQ_INT(rec->device_create(be, NULL, 0, &dev), NPL_ACCEL_OK);
    npl_accel_context *c0, *c1;
    CHECK_EQ_INT(rec->context_create(be, dev, NULL, 0, &c0), NPL_ACCEL_OK);
    npl_accel_graph *g;
    CHECK_EQ_INT(rec->graph_create(c0, "tiny", &g), NPL_ACCEL_OK);
    npl_accel_tensor_desc d;
    memset(&d, 0, sizeof d);
    d.name = "a", d.kind = NPL_ACCEL_APP_WRITE, d.dtype = NPL_ACCEL_DT_F32, d.rank = 1, d.dims[0] = 4;
    npl_accel_tensor_id a, b, id;
    CHECK_EQ_INT(rec->tensor_create(g, &d, &a), NPL_ACCEL_OK);
    CHECK_EQ_INT(rec->tensor_create(g, &d, &id), NPL_ACCEL_ERR_DUPLICATE_NAME);
    d.name = "b", d.kind = NPL_ACCEL_APP_READ;
    CHECK_EQ_INT(rec->tensor_create(g, &d, &b), NPL_ACCEL_OK);
    npl_accel_param sc = {.name = "scale", .type = NPL_ACCEL_PARAM_FLOAT, .f = 2.5};
    npl_accel_node_desc nd = {"s", "Scale", &sc, 1, &a, 1, &b, 1};
    CHECK_EQ_INT(rec->graph_add_node(g, &nd), NPL_ACCEL_OK);
    npl_accel_buffer none[1];
    CHECK_EQ_INT(rec->graph_execute(g, none, 0, none, 0), NPL_ACCEL_ERR_STATE);
    CHECK_EQ_INT(rec->graph_finalize(g), NPL_ACCEL_OK);
    CHECK_EQ_INT(rec->graph_execute(g, none, 0, none, 0), NPL_ACCEL_OK); /* records do not compute */
    uint64_t size;
    CHECK_EQ_INT(rec->context_get_binary_size(c0, &size), NPL_ACCEL_ERR_UNSUPPORTED);
    CHECK_EQ_INT(rec->context_free(c0), NPL_ACCEL_OK);
    CHECK_EQ_INT(rec->context_create(be, dev, NULL, 0, &c1), NPL_ACCEL_OK);
    build_net(rec, c1, w);
    npl_accel_profile p;
    CHECK_EQ_INT(rec->graph_retrieve(c1, "prefill", &g), NPL_ACCEL_OK);
    CHECK_EQ_INT(rec->graph_get_profile(g, &p), NPL_ACCEL_OK);
    CHECK_EQ_INT(p.n_nodes, 24);
    CHECK_EQ_INT(rec->context_free(c1), NPL_ACCEL_OK);
    rec->device_free(dev);
    rec->backend_free(be);
}

int main(void) {
    for (int i = 0; i < S; i++) {
        tok[i] = (i * 13 + 1) % NET_V;
        pos[i] = i < 90 ? i : -1;
    }
    char path[128];
    snprintf(path, sizeof path, "/tmp/npl_test_accel_record_%d.gguf", (int)getpid());
    net_weights *w = malloc(sizeof *w);
    net_weights_init(w);
    record_file(path, w);

    char err[256];
    CHECK_EQ_INT(npl_accel_record_n_contexts(path, err, sizeof err), 2);
    npl_gguf *gg = npl_gguf_open(path, NULL, err, sizeof err); /* a plain GGUF file */
    CHECK(gg != NULL);
    if (gg) {
        CHECK(npl_gguf_find_tensor(gg, "accel.data.0") == NULL); /* tensor 0 ("a") has no data */
        CHECK(npl_gguf_n_tensors(gg) == 12);                     /* the net's STATIC tensors */
        npl_gguf_close(gg);
    }

    const npl_accel_api *api = npl_vnpu_get_api(NPL_ACCEL_ABI_VERSION);
    npl_accel_backend *be;
    npl_accel_device *dev;
    CHECK_EQ_INT(api->backend_create(NULL, 0, &be, err, sizeof err), NPL_ACCEL_OK);
    CHECK_EQ_INT(api->device_create(be, NULL, 0, &dev), NPL_ACCEL_OK);
    npl_accel_context *direct = NULL, *replayed = NULL, *tiny = NULL;
    CHECK_EQ_INT(api->context_create(be, dev, NULL, 0, &direct), NPL_ACCEL_OK);
    build_net(api, direct, w);
    int st = npl_accel_replay(path, api, be, dev, 1, &replayed, err, sizeof err);
    if (st) fprintf(stderr, "%s\n", err);
    CHECK_EQ_INT(st, NPL_ACCEL_OK);
    static float p1[S * NET_V], p2[S * NET_V], d1[NET_V], d2[NET_V];
    run(api, direct, p1, d1);
    if (replayed) {
        run(api, replayed, p2, d2);
        CHECK(!memcmp(p1, p2, sizeof p1));
        CHECK(!memcmp(d1, d2, sizeof d1));
        uint64_t s1 = 0, s2 = 0;
        CHECK_EQ_INT(api->context_get_binary_size(direct, &s1), NPL_ACCEL_OK);
        CHECK_EQ_INT(api->context_get_binary_size(replayed, &s2), NPL_ACCEL_OK);
        CHECK_EQ_INT(s1, s2);
        npl_accel_graph *g;
        npl_accel_profile pr;
        CHECK_EQ_INT(api->graph_retrieve(replayed, "prefill", &g), NPL_ACCEL_OK);
        CHECK_EQ_INT(api->graph_get_profile(g, &pr), NPL_ACCEL_OK);
        CHECK(strstr(pr.detail, "gate-up 1") != NULL); /* the replayed graph was compiled the same way */
        CHECK_EQ_INT(api->context_free(replayed), NPL_ACCEL_OK);
    }
    /* context 0: Scale by 2.5 */
    CHECK_EQ_INT(npl_accel_replay(path, api, be, dev, 0, &tiny, err, sizeof err), NPL_ACCEL_OK);
    if (tiny) {
        npl_accel_graph *g;
        CHECK_EQ_INT(api->graph_retrieve(tiny, "tiny", &g), NPL_ACCEL_OK);
        float x[4] = {1, 2, 3, 4}, y[4] = {0};
        npl_accel_buffer bi = {"a", x, sizeof x}, bo = {"b", y, sizeof y};
        CHECK_EQ_INT(api->graph_execute(g, &bi, 1, &bo, 1), NPL_ACCEL_OK);
        CHECK(y[0] == 2.5f && y[3] == 10.0f);
        CHECK_EQ_INT(api->context_free(tiny), NPL_ACCEL_OK);
    }
    /* replay errors */
    npl_accel_context *none = NULL;
    CHECK_EQ_INT(npl_accel_replay(path, api, be, dev, 2, &none, err, sizeof err), NPL_ACCEL_ERR_NOT_FOUND);
    CHECK(strstr(err, "context 2") != NULL && none == NULL);
    CHECK_EQ_INT(npl_accel_replay("/nonexistent/record.gguf", api, be, dev, 0, &none, err, sizeof err), NPL_ACCEL_ERR_IO);
    CHECK_EQ_INT(npl_accel_replay(path, api, NULL, dev, 0, &none, err, sizeof err), NPL_ACCEL_ERR_INVALID_ARG);
    /* a GGUF that is not a record */
    char other[160];
    snprintf(other, sizeof other, "%s.other.gguf", path);
    npl_gguf_writer *gw = npl_gguf_writer_new();
    npl_gguf_writer_set_u32(gw, "general.whatever", 1);
    CHECK_EQ_INT(npl_gguf_writer_write(gw, other, err, sizeof err), 0);
    npl_gguf_writer_free(gw);
    CHECK_EQ_INT(npl_accel_replay(other, api, be, dev, 0, &none, err, sizeof err), NPL_ACCEL_ERR_BINARY_CORRUPT);
    CHECK(strstr(err, "record") != NULL);
    remove(other);

    CHECK_EQ_INT(api->context_free(direct), NPL_ACCEL_OK);
    api->device_free(dev);
    api->backend_free(be);
    remove(path);
    free(w);
    TEST_MAIN_END();
}
