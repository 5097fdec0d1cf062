/* Graph files: a graph written to disk and loaded as a module gives the same
 * outputs as the graph it came from; attributes round-trip; malformed graph
 * files fail with a message naming the key. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "core/eval.h"
#include "format/graph_file.h"
#include "module/module.h"

enum { E = 64, N = 32, SEQ = 5 };

static npl_graph *build(float *w_f32, unsigned char *w_q8, float *norm) {
    npl_graph *g = npl_graph_new();
    int64_t xs[2] = {E, NPL_DIM_SEQ}, ws[2] = {E, N}, ns[1] = {E};
    int x = npl_input(g, "x", NPL_TYPE_F32, 2, xs);
    int nw = npl_weight(g, "norm", NPL_TYPE_F32, 1, ns, norm);
    int wq = npl_weight(g, "wq", NPL_TYPE_Q8_0, 2, ws, w_q8);
    int wf = npl_weight(g, "wf", NPL_TYPE_F32, 2, ws, w_f32);
    int h = npl_rms_norm(g, x, nw, 1e-6f);
    int a = npl_matmul(g, wq, h), b = npl_matmul(g, wf, h);
    int64_t rs[3] = {8, 4, -1};
    int y = npl_add(g, npl_reshape(g, a, 3, rs), npl_reshape(g, npl_softmax(g, npl_scale(g, b, 0.5f), 3.0f), 3, rs));
    npl_graph_set_name(g, y, "y");
    int p = npl_plugin(g, "accel", 1, &y, NPL_TYPE_F32);
    int64_t shapes[2] = {128, 1};
    const char *names[2] = {"g_128", "g_1"};
    float fl[2] = {0.5f, -2.0f};
    npl_attr_set_ints(g, p, "allInputShape", shapes, 2);
    npl_attr_set_strs(g, p, "allGraphName", names, 2);
    npl_attr_set_floats(g, p, "scales", fl, 2);
    npl_attr_set_str(g, p, "path", "ctx.bin");
    return g;
}

/* A valid file of a weight-free graph (input -> scale), then copies of it with
 * one array replaced by a bad value. */
static void write_graph(const char *path, npl_graph *g) {
    char err[256];
    npl_gguf_writer *w = npl_gguf_writer_new();
    CHECK(npl_graph_file_add(w, g, err, sizeof(err)) == 0);
    CHECK(npl_gguf_writer_write(w, path, err, sizeof(err)) == 0);
    npl_gguf_writer_free(w);
}
static void write_variant(const char *good, const char *path, const char *key, const int32_t *v, uint64_t n) {
    char err[256];
    npl_gguf *f = npl_gguf_open(good, NULL, err, sizeof(err));
    npl_gguf_writer *w = npl_gguf_writer_new();
    const char *skip[] = {key, NULL};
    CHECK(f && npl_gguf_copy_kv(w, f, skip, err, sizeof(err)) == 0);
    npl_gguf_writer_set_arr(w, key, NPL_GGUF_INT32, v, n);
    CHECK(npl_gguf_writer_write(w, path, err, sizeof(err)) == 0);
    npl_gguf_writer_free(w);
    npl_gguf_close(f);
}
static void write_variant_str(const char *good, const char *path, const char *key, const char *const *v, uint64_t n) {
    char err[256];
    npl_gguf *f = npl_gguf_open(good, NULL, err, sizeof(err));
    npl_gguf_writer *w = npl_gguf_writer_new();
    const char *skip[] = {key, NULL};
    CHECK(f && npl_gguf_copy_kv(w, f, skip, err, sizeof(err)) == 0);
    npl_gguf_writer_set_arr_str(w, key, v, n);
    CHECK(npl_gguf_writer_write(w, path, err, sizeof(err)) == 0);
    npl_gguf_writer_free(w);
    npl_gguf_close(f);
}
static void expect_load_error(const char *path, const char *needle) {
    char err[512] = "";
    npl_gguf *f = npl_gguf_open(path, NULL, err, sizeof(err));
    npl_graph *g = f ? npl_graph_file_load(f, err, sizeof(err)) : NULL;
    CHECK(g == NULL);
    if (!strstr(err, needle)) fprintf(stderr, "expected '%s' in: %s\n", needle, err);
    CHECK(strstr(err, needle) != NULL);
    npl_graph_free(g);
    npl_gguf_close(f);
}

int main(void) {
    static float w_f32[E * N], norm[E], x[E * SEQ];
    static unsigned char w_q8[N * (E / 32) * 34];
    srand(7);
    for (int i = 0; i < E * N; i++) w_f32[i] = (float)rand() / (float)RAND_MAX - 0.5f;
    for (int i = 0; i < E; i++) norm[i] = 1.0f + (float)i / E;
    for (int i = 0; i < E * SEQ; i++) x[i] = (float)rand() / (float)RAND_MAX * 4 - 2;
    for (int r = 0; r < N; r++) npl_type_get(NPL_TYPE_Q8_0)->from_float(w_f32 + r * E, w_q8 + r * (E / 32) * 34, E);

    npl_graph *g = build(w_f32, w_q8, norm);
    char path[] = "/tmp/npl_graph_XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    close(fd);
    char err[512];
    npl_gguf_writer *gw = npl_gguf_writer_new();
    CHECK(npl_graph_file_add(gw, g, err, sizeof(err)) == 0);
    CHECK(npl_gguf_writer_write(gw, path, err, sizeof(err)) == 0);
    npl_gguf_writer_free(gw);

    /* reference: the in-memory graph, evaluated lazily */
    npl_cpu_ctx cc;
    npl_backend be;
    npl_cpu_backend_init(&be, &cc, NPL_ISA_GENERIC);
    npl_shape xs = {2, {E, SEQ, 1, 1}};
    npl_graph_bind(g, npl_graph_find(g, "x"), x, &xs);
    npl_shape ys;
    const float *ref = npl_read(g, npl_graph_find(g, "y"), &be, NULL, &ys, err, sizeof(err));
    CHECK(ref != NULL);

    const char *outs[1] = {"y"};
    npl_module_params mp = npl_module_default_params();
    mp.isa = NPL_ISA_GENERIC;
    mp.n_threads = 1;
    npl_module *m = npl_module_load(path, outs, 1, &mp, err, sizeof(err));
    if (!m) fprintf(stderr, "module: %s\n", err);
    CHECK(m != NULL);
    if (m && ref) {
        CHECK(npl_module_set(m, "x", x, &xs) == 0);
        CHECK(npl_module_forward(m) == 0);
        const npl_tensor *t = npl_module_output(m, 0);
        CHECK_EQ_INT(t->shape.ne[0], 8);
        CHECK_EQ_INT(t->shape.ne[1], 4);
        CHECK_EQ_INT(t->shape.ne[2], SEQ);
        for (int i = 0; i < N * SEQ; i++) CHECK(((const float *)t->data)[i] == ref[i]); /* same kernels: exact */
        /* attributes round-trip */
        const npl_graph *lg = npl_module_graph(m);
        int pid = npl_graph_n_nodes(lg) - 1;
        const npl_attr *a = npl_attr_get(lg, pid, "allInputShape");
        CHECK(a && a->kind == NPL_ATTR_INTS && a->n == 2 && a->ints[0] == 128 && a->ints[1] == 1);
        a = npl_attr_get(lg, pid, "allGraphName");
        CHECK(a && a->kind == NPL_ATTR_STRS && a->n == 2 && !strcmp(a->strs[1], "g_1"));
        a = npl_attr_get(lg, pid, "scales");
        CHECK(a && a->kind == NPL_ATTR_FLOATS && a->floats[1] == -2.0f);
        a = npl_attr_get(lg, pid, "path");
        CHECK(a && a->kind == NPL_ATTR_STR && !strcmp(a->strs[0], "ctx.bin"));
        a = npl_attr_get(lg, pid, "type");
        CHECK(a && !strcmp(a->strs[0], "accel"));
        /* a missing output name is a clear error */
        const char *bad_out[1] = {"nope"};
        CHECK(npl_module_load(path, bad_out, 1, &mp, err, sizeof(err)) == NULL);
        CHECK(strstr(err, "nope") != NULL);
    }
    npl_module_free(m);
    npl_graph_free(g);

    /* malformed graph files: each a copy of a valid one with one field broken */
    npl_graph *small = npl_graph_new();
    int64_t four = 4;
    int in = npl_input(small, "x", NPL_TYPE_F32, 1, &four);
    npl_scale(small, npl_scale(small, in, 2.0f), 3.0f);
    char good[] = "/tmp/npl_graph_good_XXXXXX";
    int gfd = mkstemp(good);
    close(gfd);
    write_graph(good, small);
    int32_t bad_op[3] = {NPL_OP_INPUT, 999, NPL_OP_SCALE};
    write_variant(good, path, "npullm.graph.op", bad_op, 3);
    expect_load_error(path, "npullm.graph.op");
    int32_t short_op[2] = {NPL_OP_INPUT, NPL_OP_SCALE};
    write_variant(good, path, "npullm.graph.op", short_op, 2);
    expect_load_error(path, "npullm.graph.op");
    int32_t fwd_src[3 * NPL_MAX_SRC] = {0};
    fwd_src[NPL_MAX_SRC] = 2; /* node 1 reads node 2: not earlier */
    fwd_src[2 * NPL_MAX_SRC] = 1;
    write_variant(good, path, "npullm.graph.src", fwd_src, 3 * NPL_MAX_SRC);
    expect_load_error(path, "node 1");
    int32_t bad_type[3] = {0, 77, 0};
    write_variant(good, path, "npullm.graph.type", bad_type, 3);
    expect_load_error(path, "type");
    /* an input without a name cannot be bound: refused, not a crash */
    const char *no_name[3] = {"", "", ""};
    write_variant_str(good, path, "npullm.graph.name", no_name, 3);
    expect_load_error(path, "input node without a name");
    /* a reshape to more dims than a shape has */
    npl_graph *rg = npl_graph_new();
    int rin = npl_input(rg, "x", NPL_TYPE_F32, 1, &four);
    int64_t two[2] = {2, 2};
    npl_scale(rg, npl_reshape(rg, rin, 2, two), 1.0f);
    write_graph(good, rg);
    int32_t bad_ip[3 * NPL_MAX_IPARAMS] = {0};
    bad_ip[NPL_MAX_IPARAMS] = 7;
    write_variant(good, path, "npullm.graph.ip", bad_ip, 3 * NPL_MAX_IPARAMS);
    expect_load_error(path, "reshape to 7 dims");
    bad_ip[NPL_MAX_IPARAMS] = 2; /* two dims, the second 0 */
    bad_ip[NPL_MAX_IPARAMS + 1] = 4;
    write_variant(good, path, "npullm.graph.ip", bad_ip, 3 * NPL_MAX_IPARAMS);
    expect_load_error(path, "reshape: dim 1 is 0");
    npl_graph_free(rg);
    /* a graph whose weight tensor is missing */
    npl_gguf *gf = npl_gguf_open(path, NULL, err, sizeof(err)); /* any file works for the check below */
    npl_gguf_close(gf);
    npl_graph *wg = build(w_f32, w_q8, norm);
    npl_gguf_writer *nw = npl_gguf_writer_new();
    CHECK(npl_graph_file_add(nw, wg, err, sizeof(err)) == 0);
    CHECK(npl_gguf_writer_write(nw, good, err, sizeof(err)) == 0);
    npl_gguf_writer_free(nw);
    npl_gguf *full = npl_gguf_open(good, NULL, err, sizeof(err));
    npl_gguf_writer *mw = npl_gguf_writer_new();
    const char *none[] = {NULL};
    CHECK(full && npl_gguf_copy_kv(mw, full, none, err, sizeof(err)) == 0); /* metadata only: no tensors */
    CHECK(npl_gguf_writer_write(mw, path, err, sizeof(err)) == 0);
    npl_gguf_writer_free(mw);
    npl_gguf_close(full);
    expect_load_error(path, "norm");
    npl_graph_free(wg);
    npl_graph_free(small);
    unlink(good);
    unlink(path);
    TEST_MAIN_END();
}
