/* One vnpu context holding two graphs of a small decoder block (prefill at
 * 128 tokens, decode at 1) that share their STATIC weights and the KV cache
 * (APP_READWRITE). Checks: fusion happened; padding rows (-1) change
 * nothing; the decode graph reads the rows the prefill graph wrote (its
 * logits equal those of a prefill that includes the decoded token); the
 * binary stores the weights once (adding the second graph costs only
 * metadata); after get-binary -> create-from-binary (from an aligned and an
 * unaligned copy) both graphs give the same bits; binary info lists the
 * graphs and their inputs; generic and the best family agree. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "accel/vnpu/vnpu_api.h"
#include "accel_net.h"
#include "check.h"

#define S 128
#define N_VALID 100

typedef struct {
    float prefill[S * NET_V];
    float decode[NET_V];
    float ref101[S * NET_V]; /* prefill with the decoded token at position 100 */
} outputs;

static int32_t tok[S], pos_pad[S], pos_101[S], tok_101[S];
static const int32_t tok_d = 11, pos_d = N_VALID;

static void clear_cache(const npl_accel_api *api, npl_accel_context *ctx) {
    void *p;
    uint64_t n;
    CHECK_EQ_INT(api->context_tensor_data(ctx, "kcache", &p, &n), NPL_ACCEL_OK);
    memset(p, 0, n);
    CHECK_EQ_INT(api->context_tensor_data(ctx, "vcache", &p, &n), NPL_ACCEL_OK);
    memset(p, 0, n);
}

/* prefill (100 valid + padding), decode at 100, then a fresh 101-token prefill */
static void run_all(const npl_accel_api *api, npl_accel_context *ctx, outputs *o) {
    npl_accel_graph *gp = NULL, *gd = NULL;
    CHECK_EQ_INT(api->graph_retrieve(ctx, "prefill", &gp), NPL_ACCEL_OK);
    CHECK_EQ_INT(api->graph_retrieve(ctx, "decode", &gd), NPL_ACCEL_OK);
    clear_cache(api, ctx);
    CHECK_EQ_INT(net_run(api, gp, "prefill", S, tok, pos_pad, o->prefill), NPL_ACCEL_OK);
    CHECK_EQ_INT(net_run(api, gd, "decode", 1, &tok_d, &pos_d, o->decode), NPL_ACCEL_OK);
    /* the decode step wrote its row into the shared cache, nothing beyond */
    void *kc;
    uint64_t kn;
    CHECK_EQ_INT(api->context_tensor_data(ctx, "kcache", &kc, &kn), NPL_ACCEL_OK);
    const uint16_t *k16 = kc;
    int row100 = 0, row101 = 0;
    for (int e = 0; e < NET_HKV * NET_HD; e++) {
        row100 |= k16[N_VALID * NET_HKV * NET_HD + e] != 0;
        row101 |= k16[(N_VALID + 1) * NET_HKV * NET_HD + e] != 0;
    }
    CHECK(row100 && !row101);
    clear_cache(api, ctx);
    CHECK_EQ_INT(net_run(api, gp, "prefill", S, tok_101, pos_101, o->ref101), NPL_ACCEL_OK);
}

static double maxdiff(const float *a, const float *b, int n) {
    double m = 0;
    for (int i = 0; i < n; i++) m = fmax(m, fabs((double)a[i] - b[i]));
    return m;
}

static void check_outputs(const outputs *o) {
    /* padding changes nothing: valid rows agree with the 101-token run */
    CHECK_NEAR(maxdiff(o->prefill, o->ref101, N_VALID * NET_V), 0, 1e-5);
    /* decode at 100 after the prefill == row 100 of the 101-token prefill */
    CHECK_NEAR(maxdiff(o->decode, o->ref101 + N_VALID * NET_V, NET_V), 0, 1e-4);
    double mag = 0;
    for (int i = 0; i < NET_V; i++) mag = fmax(mag, fabs(o->decode[i]));
    CHECK(mag > 0.1);
}

static npl_accel_context *build(const npl_accel_api *api, npl_accel_backend *be, npl_accel_device *dev,
                                const net_weights *w, int both) {
    npl_accel_context *ctx = NULL;
    CHECK_EQ_INT(api->context_create(be, dev, NULL, 0, &ctx), NPL_ACCEL_OK);
    CHECK_EQ_INT(net_build(api, ctx, "prefill", S, w), NPL_ACCEL_OK);
    if (both) CHECK_EQ_INT(net_build(api, ctx, "decode", 1, w), NPL_ACCEL_OK);
    const char *names[2] = {"prefill", "decode"};
    for (int i = 0; i < 1 + both; i++) {
        npl_accel_graph *g;
        CHECK_EQ_INT(api->graph_retrieve(ctx, names[i], &g), NPL_ACCEL_OK);
        int st = api->graph_finalize(g);
        if (st) fprintf(stderr, "finalize %s: %s\n", names[i], api->last_error(be));
        CHECK_EQ_INT(st, NPL_ACCEL_OK);
        npl_accel_profile p;
        CHECK_EQ_INT(api->graph_get_profile(g, &p), NPL_ACCEL_OK);
        printf("  %s: %u nodes -> %u compiled, arena %llu B, static %llu B; %s\n", names[i], p.n_nodes, p.n_compiled,
               (unsigned long long)p.arena_bytes, (unsigned long long)p.static_bytes, p.detail);
        CHECK(p.n_compiled + 4 == p.n_nodes); /* bias, act-mul, and gate+up: 4 nodes fewer */
        CHECK(strstr(p.detail, "bias 1, act-mul 1, gate-up 1") != NULL);
    }
    return ctx;
}

static void test_family(const char *family, const net_weights *w, outputs *o) {
    const npl_accel_api *api = npl_vnpu_get_api(NPL_ACCEL_ABI_VERSION);
    npl_accel_backend *be;
    npl_accel_device *dev;
    char err[256];
    npl_accel_option opt = {"kernel_family", family};
    CHECK_EQ_INT(api->backend_create(&opt, 1, &be, err, sizeof err), NPL_ACCEL_OK);
    CHECK_EQ_INT(api->device_create(be, NULL, 0, &dev), NPL_ACCEL_OK);
    printf("family %s\n", family);
    npl_accel_context *ctx = build(api, be, dev, w, 1);
    run_all(api, ctx, o);
    check_outputs(o);

    /* binary: weights once */
    uint64_t size = 0, size1 = 0, written = 0;
    CHECK_EQ_INT(api->context_get_binary_size(ctx, &size), NPL_ACCEL_OK);
    npl_accel_context *one = build(api, be, dev, w, 0);
    CHECK_EQ_INT(api->context_get_binary_size(one, &size1), NPL_ACCEL_OK);
    CHECK_EQ_INT(api->context_free(one), NPL_ACCEL_OK);
    printf("  binary: %llu bytes with both graphs, %llu with prefill only\n", (unsigned long long)size,
           (unsigned long long)size1);
    CHECK(size1 > 64 * 1024);         /* the packed weights */
    CHECK(size - size1 < 16 * 1024);  /* the second graph adds metadata only */
    uint8_t *bin = aligned_alloc(4096, (size + 4095) / 4096 * 4096 + 4096);
    CHECK_EQ_INT(api->context_get_binary(ctx, bin, size, &written), NPL_ACCEL_OK);
    CHECK_EQ_INT(written, size);
    uint64_t too_small = 0;
    CHECK_EQ_INT(api->context_get_binary(ctx, bin, size - 1, &too_small), NPL_ACCEL_ERR_INVALID_ARG);

    npl_accel_binary_info *info = NULL;
    CHECK_EQ_INT(api->binary_info_get(be, bin, size, &info), NPL_ACCEL_OK);
    CHECK_EQ_INT(info->n_graphs, 2);
    CHECK(!strcmp(info->kernel_family, family));
    CHECK(!strcmp(info->graphs[0].name, "prefill") && !strcmp(info->graphs[1].name, "decode"));
    CHECK_EQ_INT(info->graphs[1].n_inputs, 2);
    CHECK(!strcmp(info->graphs[1].inputs[0].name, "tok_decode") && info->graphs[1].inputs[0].dims[0] == 1);
    CHECK_EQ_INT(info->graphs[0].n_outputs, 1);
    CHECK(!strcmp(info->graphs[0].outputs[0].name, "logits_prefill"));
    CHECK(info->graphs[0].outputs[0].dims[0] == S && info->graphs[0].outputs[0].dims[1] == NET_V);
    CHECK_EQ_INT(info->n_context_tensors, 2);
    CHECK(!strcmp(info->context_tensors[0].name, "kcache") && info->context_tensors[0].dtype == NPL_ACCEL_DT_F16);
    api->binary_info_free(be, info);

    /* create-from-binary: same bits, aligned and unaligned */
    for (int shift = 0; shift < 2; shift++) {
        uint8_t *b = bin;
        if (shift) {
            b = (uint8_t *)malloc(size + 8) + 8; /* not 64-aligned */
            memcpy(b, bin, size);
        }
        npl_accel_context *c2 = NULL;
        int st = api->context_create_from_binary(be, dev, NULL, 0, b, size, &c2);
        if (st) fprintf(stderr, "create_from_binary: %s\n", api->last_error(be));
        CHECK_EQ_INT(st, NPL_ACCEL_OK);
        if (!st) {
            outputs *o2 = malloc(sizeof *o2);
            run_all(api, c2, o2);
            CHECK(!memcmp(o2->prefill, o->prefill, sizeof o->prefill));
            CHECK(!memcmp(o2->decode, o->decode, sizeof o->decode));
            CHECK(!memcmp(o2->ref101, o->ref101, sizeof o->ref101));
            npl_accel_graph *g;
            CHECK_EQ_INT(api->graph_create(c2, "more", &g), NPL_ACCEL_ERR_STATE); /* immutable */
            /* a binary of a binary-made context is the same bytes */
            uint64_t sz2 = 0, w2 = 0;
            CHECK_EQ_INT(api->context_get_binary_size(c2, &sz2), NPL_ACCEL_OK);
            CHECK_EQ_INT(sz2, size);
            uint8_t *again = malloc(sz2);
            CHECK_EQ_INT(api->context_get_binary(c2, again, sz2, &w2), NPL_ACCEL_OK);
            CHECK(!memcmp(again, bin, size));
            free(again);
            free(o2);
            CHECK_EQ_INT(api->context_free(c2), NPL_ACCEL_OK);
        }
        if (shift) free(b - 8);
    }
    free(bin);
    CHECK_EQ_INT(api->context_free(ctx), NPL_ACCEL_OK);
    api->device_free(dev);
    api->backend_free(be);
}

int main(void) {
    for (int i = 0; i < S; i++) {
        tok[i] = tok_101[i] = (i * 7 + 3) % NET_V;
        pos_pad[i] = i < N_VALID ? i : -1;
        pos_101[i] = i <= N_VALID ? i : -1;
    }
    tok_101[N_VALID] = tok_d;
    net_weights *w = malloc(sizeof *w);
    net_weights_init(w);
    outputs *gen = malloc(sizeof *gen), *best = malloc(sizeof *best);
    test_family("generic", w, gen);
    const npl_accel_api *api = npl_vnpu_get_api(NPL_ACCEL_ABI_VERSION);
    npl_accel_backend *be;
    npl_accel_backend_info bi;
    CHECK_EQ_INT(api->backend_create(NULL, 0, &be, NULL, 0), NPL_ACCEL_OK);
    CHECK_EQ_INT(api->backend_get_info(be, &bi), NPL_ACCEL_OK);
    api->backend_free(be);
    if (strcmp(bi.kernel_family, "generic")) {
        test_family(bi.kernel_family, w, best);
        double d = maxdiff(gen->prefill, best->prefill, N_VALID * NET_V);
        printf("generic vs %s: max logit difference %.5f\n", bi.kernel_family, d);
        CHECK_NEAR(d, 0, 0.05);
    }
    free(gen), free(best), free(w);
    TEST_MAIN_END();
}
