/* Plugin runtime: registries keyed by type, shape index selection, unknown
 * shapes, the CPU PLUGIN execution, graph files, and the accelerator loader:
 * ABI checks of fake tables, and the plugin libraries (plugin_libs.h): vnpu
 * and record loaded by dlopen exporting only their entry point, broken
 * plugins and missing ones refused in one line naming the library. */
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "core/session.h"
#include "format/graph_file.h"
#include "plugin/plugin.h"
#include "plugin_libs.h"

/* ---- a toy plugin type "twice": y = 2 * x, shape from attributes ---- */
static int twice_calls[3];

static int twice_init(npl_plugin_rt *rt, const npl_graph *g, int id, void **state, char *err, size_t errlen) {
    (void)rt; (void)g; (void)id; (void)err; (void)errlen;
    twice_calls[0]++;
    *state = &twice_calls;
    return 0;
}
static int twice_resize(void *state, const npl_exec_ctx *c, char *err, size_t errlen) {
    (void)state;
    twice_calls[1]++;
    npl_shape s[1] = {c->src[0].shape};
    return npl_plugin_shape_index(c->graph, c->id, s, 1, err, errlen) < 0 ? -1 : 0;
}
static int twice_compute(void *state, const npl_exec_ctx *c, char *err, size_t errlen) {
    (void)state; (void)err; (void)errlen;
    twice_calls[2]++;
    const float *x = c->src[0].data;
    float *y = c->dst.data;
    for (int64_t i = 0; i < npl_shape_nelements(&c->dst.shape); i++) y[i] = 2 * x[i];
    return 0;
}
static int twice_shape(void *user, const npl_graph *g, int id, const npl_shape *src, npl_shape *out, char *err,
                       size_t errlen) {
    (void)user;
    int s = npl_plugin_shape_index(g, id, src, 1, err, errlen);
    if (s < 0) return -1;
    *out = src[0];
    return 0;
}

/* ---- fake accelerator tables for the loader's checks ---- */
static npl_accel_api fake;
static const npl_accel_api *get_null(uint32_t v) { (void)v; return NULL; }
static const npl_accel_api *get_old(uint32_t v) {
    (void)v;
    fake.abi_version = 0;
    fake.struct_size = sizeof fake;
    return &fake;
}
static const npl_accel_api *get_small(uint32_t v) {
    (void)v;
    fake.abi_version = NPL_ACCEL_ABI_VERSION;
    fake.struct_size = 16;
    return &fake;
}

int main(void) {
    char err[512];
    npl_plugin_rt *rt = npl_plugin_rt_new(NULL, err, sizeof err);
    CHECK(rt != NULL);

    /* registry: built-in accel, our type, unknown type */
    CHECK(npl_plugin_find_compute(rt, "accel") != NULL);
    CHECK(npl_plugin_find_compute(rt, "nope") == NULL);
    npl_plugin_compute_kernel k = {twice_init, twice_resize, twice_compute, NULL};
    CHECK_EQ_INT(npl_plugin_register_compute(rt, "twice", &k), 0);
    CHECK_EQ_INT(npl_plugin_register_shape(rt, "twice", twice_shape, NULL), 0);
    CHECK(npl_plugin_find_compute(rt, "twice") != NULL);

    /* graph: x f32 [4, seq] -> twice; compiled shapes seq 3 and seq 1 */
    npl_graph *g = npl_graph_new();
    int64_t ne[2] = {4, NPL_DIM_SEQ};
    int x = npl_input(g, "x", NPL_TYPE_F32, 2, ne);
    int y = npl_plugin(g, "twice", 1, &x, NPL_TYPE_F32);
    int64_t shapes[8] = {4, 3, 1, 1, 4, 1, 1, 1};
    npl_attr_set_ints(g, y, "allInputShape", shapes, 8);
    npl_graph_set_name(g, y, "y");
    CHECK(npl_graph_error(g) == NULL);

    npl_shape s3 = {2, {4, 3, 1, 1}}, s1 = {2, {4, 1, 1, 1}}, s2 = {2, {4, 2, 1, 1}}, o;
    CHECK_EQ_INT(npl_plugin_shape_index(g, y, &s3, 1, err, sizeof err), 0);
    CHECK_EQ_INT(npl_plugin_shape_index(g, y, &s1, 1, err, sizeof err), 1);
    CHECK_EQ_INT(npl_plugin_shape_index(g, y, &s2, 1, err, sizeof err), -1);
    CHECK(strstr(err, "not in allInputShape") != NULL);
    printf("unknown shape: %s\n", err);
    CHECK_EQ_INT(npl_plugin_infer_shape(rt, g, y, &s3, &o, err, sizeof err), 0);
    CHECK_EQ_INT(o.ne[1], 3);

    /* the CPU PLUGIN execution: init once, resize per new shape, compute per run */
    npl_cpu_ctx cc;
    npl_backend be;
    npl_plugin_backend pb;
    npl_cpu_backend_init(&be, &cc, npl_cpu_best_isa());
    npl_plugin_backend_init(&pb, rt, &be);
    npl_pool *pool = npl_pool_new(1);
    npl_graph_session *s = npl_graph_session_new(g, &be, pool, &y, 1, err, sizeof err);
    CHECK(s != NULL);
    float xd[12] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
    if (s) {
        CHECK_EQ_INT(twice_calls[0], 1);
        CHECK_EQ_INT(npl_graph_session_set_input(s, "x", xd, &s3), 0);
        CHECK_EQ_INT(npl_graph_session_run(s), 0);
        const float *yd = npl_graph_session_output(s, 0)->data;
        CHECK_NEAR(yd[11], 24, 0);
        CHECK_EQ_INT(npl_graph_session_run(s), 0);
        CHECK_EQ_INT(npl_graph_session_set_input(s, "x", xd, &s1), 0);
        CHECK_EQ_INT(npl_graph_session_run(s), 0);
        CHECK_EQ_INT(twice_calls[1], 2);
        CHECK_EQ_INT(twice_calls[2], 3);
        CHECK_EQ_INT(npl_graph_session_set_input(s, "x", xd, &s2), 0);
        CHECK(npl_graph_session_run(s) != 0); /* a shape that was not compiled */
        printf("run at an unknown shape: %s\n", npl_graph_session_error(s));
        CHECK(strstr(npl_graph_session_error(s), "allInputShape") != NULL);
        npl_graph_session_free(s);
    }

    /* a node whose type has no kernel fails at session creation, naming the type */
    npl_graph *g2 = npl_graph_new();
    int x2 = npl_input(g2, "x", NPL_TYPE_F32, 2, ne);
    int y2 = npl_plugin(g2, "mystery", 1, &x2, NPL_TYPE_F32);
    npl_attr_set_ints(g2, y2, "allInputShape", shapes, 8);
    s = npl_graph_session_new(g2, &be, pool, &y2, 1, err, sizeof err);
    CHECK(s == NULL);
    CHECK(strstr(err, "mystery") != NULL);
    printf("unknown type: %s\n", err);
    npl_graph_free(g2);

    /* graph file round trip keeps ops and attributes */
    npl_gguf_writer *w = npl_gguf_writer_new();
    CHECK_EQ_INT(npl_graph_file_add(w, g, err, sizeof err), 0);
    CHECK_EQ_INT(npl_gguf_writer_write(w, "/tmp/npl_test_plugin_graph.gguf", err, sizeof err), 0);
    npl_gguf_writer_free(w);
    npl_gguf *f = npl_gguf_open("/tmp/npl_test_plugin_graph.gguf", NULL, err, sizeof err);
    CHECK(f != NULL);
    if (f) {
        CHECK(npl_graph_file_present(f));
        npl_graph *g3 = npl_graph_file_load(f, err, sizeof err);
        CHECK(g3 != NULL);
        if (g3) {
            CHECK_EQ_INT(npl_graph_n_nodes(g3), 2);
            const npl_attr *a = npl_attr_get(g3, 1, "allInputShape");
            CHECK(a && a->n == 8 && a->ints[4] == 4 && a->ints[5] == 1);
            a = npl_attr_get(g3, 1, "type");
            CHECK(a && a->kind == NPL_ATTR_STR && !strcmp(a->strs[0], "twice"));
            CHECK_EQ_INT(npl_graph_find(g3, "y"), 1);
            npl_graph_free(g3);
        }
        npl_gguf_close(f);
    }
    remove("/tmp/npl_test_plugin_graph.gguf");

    /* accelerator loader: providers' fake tables refused */
    npl_plugin_rt_add_accel(rt, "null", get_null);
    npl_plugin_rt_add_accel(rt, "old", get_old);
    npl_plugin_rt_add_accel(rt, "small", get_small);
    CHECK(npl_plugin_accel_api(rt, "null", err, sizeof err) == NULL);
    printf("null table: %s\n", err);
    CHECK(npl_plugin_accel_api(rt, "old", err, sizeof err) == NULL);
    CHECK(strstr(err, "older") != NULL);
    printf("old table: %s\n", err);
    CHECK(npl_plugin_accel_api(rt, "small", err, sizeof err) == NULL);
    CHECK(strstr(err, "smaller") != NULL);
    printf("small table: %s\n", err);
    CHECK(npl_plugin_accel_api(rt, "/nonexistent/libx.so", err, sizeof err) == NULL);

    /* plugin libraries (test_plugin_libs.h) */
    plugin_library_checks(rt);

    npl_graph_free(g);
    npl_pool_free(pool);
    npl_plugin_rt_free(rt);
    TEST_MAIN_END();
}
