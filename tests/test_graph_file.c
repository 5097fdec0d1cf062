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
    int y = npl_add(g, npl_reshape(g, a, 3, rs), npl_reshape(g, npl_scale(g, b, 0.5f), 3, rs));
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

static void write_bad(const char *path, const char *op, int src, int with_tensor, uint32_t version) {
    npl_gguf_writer *w = npl_gguf_writer_new();
    npl_gguf_writer_set_u32(w, "npullm.graph.version", version);
    npl_gguf_writer_set_u32(w, "npullm.graph.n_nodes", 2);
    int64_t shape[1] = {4};
    int32_t ip[NPL_MAX_IPARAMS] = {0}, srcs[1] = {src};
    float fp[NPL_MAX_FPARAMS] = {0};
    static const float data[4] = {1, 2, 3, 4};
    npl_gguf_writer_set_str(w, "npullm.node.0.op", "weight");
    npl_gguf_writer_set_u32(w, "npullm.node.0.type", 0);
    npl_gguf_writer_set_arr(w, "npullm.node.0.shape", NPL_GGUF_INT64, shape, 1);
    npl_gguf_writer_set_arr(w, "npullm.node.0.src", NPL_GGUF_INT32, srcs, 0);
    npl_gguf_writer_set_arr(w, "npullm.node.0.ip", NPL_GGUF_INT32, ip, NPL_MAX_IPARAMS);
    npl_gguf_writer_set_arr(w, "npullm.node.0.fp", NPL_GGUF_FLOAT32, fp, NPL_MAX_FPARAMS);
    if (with_tensor) npl_gguf_writer_add_tensor(w, "npullm.w.0", 0, 1, shape, data, sizeof(data));
    npl_gguf_writer_set_str(w, "npullm.node.1.op", op);
    npl_gguf_writer_set_u32(w, "npullm.node.1.type", 0);
    npl_gguf_writer_set_arr(w, "npullm.node.1.shape", NPL_GGUF_INT64, shape, 1);
    npl_gguf_writer_set_arr(w, "npullm.node.1.src", NPL_GGUF_INT32, srcs, 1);
    npl_gguf_writer_set_arr(w, "npullm.node.1.ip", NPL_GGUF_INT32, ip, NPL_MAX_IPARAMS);
    npl_gguf_writer_set_arr(w, "npullm.node.1.fp", NPL_GGUF_FLOAT32, fp, NPL_MAX_FPARAMS);
    char err[256];
    CHECK(npl_gguf_writer_write(w, path, err, sizeof(err)) == 0);
    npl_gguf_writer_free(w);
}

static void expect_load_error(const char *path, const char *needle) {
    char err[512] = "";
    npl_gguf *f = NULL;
    npl_graph *g = npl_graph_load(path, &f, err, sizeof(err));
    CHECK(g == NULL && f == NULL);
    if (!strstr(err, needle)) fprintf(stderr, "expected '%s' in: %s\n", needle, err);
    CHECK(strstr(err, needle) != NULL);
    npl_graph_free(g);
    npl_gguf_close(f);
}

int main(void) {
    static float w_f32[E * N], norm[E], x[E * SEQ];
    static unsigned char w_q8[N * (E / 32) * 34];
    srand(7);
    for (int i = 0; i < E * N; i++) w_f32[i] = (float)rand() / RAND_MAX - 0.5f;
    for (int i = 0; i < E; i++) norm[i] = 1.0f + (float)i / E;
    for (int i = 0; i < E * SEQ; i++) x[i] = (float)rand() / RAND_MAX * 4 - 2;
    for (int r = 0; r < N; r++) npl_type_get(NPL_TYPE_Q8_0)->from_float(w_f32 + r * E, w_q8 + r * (E / 32) * 34, E);

    npl_graph *g = build(w_f32, w_q8, norm);
    char path[] = "/tmp/npl_graph_XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    close(fd);
    char err[512];
    CHECK(npl_graph_save(g, path, NULL, err, sizeof(err)) == 0);

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

    /* malformed graph files */
    write_bad(path, "matmul", 0, 1, 1);
    expect_load_error(path, "node 1"); /* matmul needs 2 inputs */
    write_bad(path, "frobnicate", 0, 1, 1);
    expect_load_error(path, "npullm.node.1.op");
    write_bad(path, "scale", 5, 1, 1);
    expect_load_error(path, "missing node"); /* source after the node */
    write_bad(path, "scale", 0, 0, 1);
    expect_load_error(path, "npullm.w.0");
    write_bad(path, "scale", 0, 1, 9);
    expect_load_error(path, "npullm.graph.version");
    write_bad(path, "scale", 0, 1, 1); /* and the good one loads */
    npl_gguf *f = NULL;
    npl_graph *ok = npl_graph_load(path, &f, err, sizeof(err));
    CHECK(ok != NULL);
    npl_graph_free(ok);
    npl_gguf_close(f);
    unlink(path);
    TEST_MAIN_END();
}
