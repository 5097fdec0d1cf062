/* The op table's lower column: which ops the partition leaves on the CPU and
 * why, and what each lowerable op becomes in an accelerator graph. The
 * accelerator here is a stub that only records the tensors and nodes it is
 * given, so the test sees exactly what the lowering emits, for any target. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "compiler/lower.h"

/* ---- the recording stub ---- */
enum { MAX_T = 64, MAX_N = 32 };
typedef struct {
    npl_accel_tensor_desc t[MAX_T];
    char tname[MAX_T][96];
    int n_t;
    struct {
        char op[32];
        npl_accel_param p[8];
        char pname[8][32];
        uint32_t np, nin, in[8], out;
    } n[MAX_N];
    int n_n, finalized;
} stub;
static stub st;

static const char *stub_error(const npl_accel_backend *be) { (void)be; return "stub"; }
static npl_accel_status stub_graph_create(npl_accel_context *ctx, const char *name, npl_accel_graph **out) {
    (void)ctx; (void)name;
    *out = (npl_accel_graph *)&st;
    return NPL_ACCEL_OK;
}
static npl_accel_status stub_tensor(npl_accel_graph *g, const npl_accel_tensor_desc *d, npl_accel_tensor_id *out) {
    (void)g;
    if (st.n_t == MAX_T) return NPL_ACCEL_ERR_INVALID_ARG;
    st.t[st.n_t] = *d;
    snprintf(st.tname[st.n_t], sizeof st.tname[0], "%s", d->name);
    st.t[st.n_t].name = st.tname[st.n_t];
    *out = (npl_accel_tensor_id)st.n_t++;
    return NPL_ACCEL_OK;
}
static npl_accel_status stub_node(npl_accel_graph *g, const npl_accel_node_desc *d) {
    (void)g;
    if (st.n_n == MAX_N || d->n_params > 8 || d->n_inputs > 8 || d->n_outputs != 1) return NPL_ACCEL_ERR_INVALID_ARG;
    snprintf(st.n[st.n_n].op, sizeof st.n[0].op, "%s", d->op);
    for (uint32_t i = 0; i < d->n_params; i++) {
        st.n[st.n_n].p[i] = d->params[i];
        snprintf(st.n[st.n_n].pname[i], 32, "%s", d->params[i].name);
        st.n[st.n_n].p[i].name = st.n[st.n_n].pname[i];
    }
    st.n[st.n_n].np = d->n_params;
    st.n[st.n_n].nin = d->n_inputs;
    memcpy(st.n[st.n_n].in, d->inputs, d->n_inputs * sizeof(uint32_t));
    st.n[st.n_n].out = d->outputs[0];
    st.n_n++;
    return NPL_ACCEL_OK;
}
static npl_accel_status stub_finalize(npl_accel_graph *g) { (void)g; st.finalized = 1; return NPL_ACCEL_OK; }
static const npl_accel_api stub_api = {.abi_version = NPL_ACCEL_ABI_VERSION, .struct_size = sizeof(npl_accel_api),
                                       .name = "stub", .last_error = stub_error, .graph_create = stub_graph_create,
                                       .tensor_create = stub_tensor, .graph_add_node = stub_node,
                                       .graph_finalize = stub_finalize};

/* The node of the stub graph with accelerator op `op`, or NULL. */
static const void *find_node(const char *op, int *index) {
    for (int i = 0; i < st.n_n; i++)
        if (!strcmp(st.n[i].op, op)) {
            if (index) *index = i;
            return &st.n[i];
        }
    return NULL;
}
static double param_f(int node, const char *name) {
    for (uint32_t i = 0; i < st.n[node].np; i++)
        if (!strcmp(st.n[node].p[i].name, name)) return st.n[node].p[i].f;
    return -12345;
}

/* Lowers every op node of g (all of them lowerable), with g's INPUT nodes as
 * the boundary and `out` as the output, at seq `seq` into the stub. (The
 * segment is made here, not by the partition, whose interface the target
 * work changes; which ops it cuts is test_refusals'.) 0 or -1. */
static int lower_graph(npl_graph *g, int out, int seq) {
    char err[256];
    memset(&st, 0, sizeof st);
    int n = npl_graph_n_nodes(g);
    npl_segment sg = {.nodes = calloc((size_t)n, sizeof(int)), .n_outputs = 1, .outputs = {out}, .keep = 1};
    for (int i = 0; i < n; i++) {
        const npl_op op = npl_graph_node(g, i)->op;
        if (op == NPL_OP_INPUT) sg.inputs[sg.n_inputs++] = i;
        else if (op != NPL_OP_WEIGHT && op != NPL_OP_STATE) sg.nodes[sg.n_nodes++] = i;
    }
    npl_shape *shapes = calloc((size_t)n, sizeof *shapes);
    npl_lower_weight *wc = calloc((size_t)n, sizeof *wc);
    npl_lower_args la = {.g = g, .seg = &sg, .shapes = shapes, .act = NPL_ACCEL_DT_F32, .wprec = NPL_WEIGHTS_KEEP,
                         .wc = wc, .out_weight = -1, .tied = -1, .out_type = NPL_TYPE_F32, .gname = "t"};
    int rc = npl_infer_all(g, seq, 1, shapes, err, sizeof err);
    if (!rc) rc = npl_lower_segment(&stub_api, NULL, NULL, &la, err, sizeof err);
    if (rc) fprintf(stderr, "lowering: %s\n", err);
    CHECK(rc == 0);
    CHECK(st.finalized);
    npl_lower_weights_free(wc, n);
    free(shapes);
    free(sg.nodes);
    return rc;
}

/* Break ops and their reasons come from the table's lower column. */
static void test_refusals(void) {
    enum { E = 32 };
    static float w[E * E], tab[E * 4];
    npl_graph *g = npl_graph_new();
    int64_t xs[2] = {E, NPL_DIM_SEQ}, ws[2] = {E, E}, ts[2] = {E, 4}, seq = NPL_DIM_SEQ;
    int x = npl_input(g, "x", NPL_TYPE_F32, 2, xs), ids = npl_input(g, "ids", NPL_TYPE_I32, 1, &seq);
    int wi = npl_weight(g, "w", NPL_TYPE_F32, 2, ws, w), ti = npl_weight(g, "tab", NPL_TYPE_F32, 2, ts, tab);
    int emb = npl_get_rows(g, ti, ids), act_rows = npl_get_rows(g, x, ids);
    int m = npl_matmul(g, wi, x), cap = npl_softcap(g, m, 30.0f);
    int p = npl_plugin(g, "accel", 1, &m, NPL_TYPE_F32);
    CHECK(npl_lower_refusal(g, m) == NULL);
    CHECK(npl_lower_refusal(g, act_rows) == NULL); /* a gather of activations is lowered */
    const char *why = npl_lower_refusal(g, emb);
    CHECK(why && strstr(why, "embedding"));
    why = npl_lower_refusal(g, cap);
    CHECK(why && strstr(why, "no accelerator op"));
    why = npl_lower_refusal(g, p);
    CHECK(why && strstr(why, "plugin"));
    why = npl_lower_refusal(g, x);
    CHECK(why && strstr(why, "leaf"));
    CHECK(npl_lower_refusal(g, 999) != NULL);
    /* the partition asks the same table */
    why = npl_partition_break_reason(g, cap);
    CHECK(why && strstr(why, "no accelerator op"));
    CHECK(npl_partition_break_reason(g, m) == NULL);
    npl_graph_free(g);
}

/* A decoder-like chain: every op becomes the accelerator op of its row. */
static void test_chain(void) {
    enum { E = 64 };
    static float w[E * E], nw[E];
    for (int i = 0; i < E * E; i++) w[i] = (float)(i % 7) - 3;
    for (int i = 0; i < E; i++) nw[i] = 1;
    npl_graph *g = npl_graph_new();
    int64_t xs[2] = {E, NPL_DIM_SEQ}, ws[2] = {E, E}, ns[1] = {E};
    int x = npl_input(g, "x", NPL_TYPE_F32, 2, xs);
    int wi = npl_weight(g, "w", NPL_TYPE_F32, 2, ws, w), ni = npl_weight(g, "n", NPL_TYPE_F32, 1, ns, nw);
    int h = npl_rms_norm(g, x, ni, 1e-5f);
    int a = npl_matmul(g, wi, h), b = npl_matmul(g, wi, x);
    int y = npl_add(g, npl_scale(g, npl_swiglu(g, a, b), 0.25f), npl_mul(g, npl_geglu(g, a, b), x));
    CHECK_EQ_INT(lower_graph(g, y, 3), 0);
    CHECK_EQ_INT(st.n_n, 8); /* one accelerator node per op */
    int k = 0;
    CHECK(find_node("RmsNorm", &k) && param_f(k, "epsilon") == (double)1e-5f);
    CHECK(find_node("MatMul", NULL) && find_node("SwiGLU", NULL) && find_node("GeGLU", NULL) && find_node("Mul", NULL));
    CHECK(find_node("Scale", &k) && param_f(k, "scale") == 0.25);
    CHECK(find_node("Add", &k));
    /* the segment output is the stub's f32 [seq, E] APP_READ tensor */
    const npl_accel_tensor_desc *o = &st.t[st.n[k].out];
    CHECK(o->kind == NPL_ACCEL_APP_READ && o->dtype == NPL_ACCEL_DT_F32 && o->rank == 2 && o->dims[0] == 3 &&
          o->dims[1] == E);
    npl_graph_free(g);
}

/* Softmax lowers to the accelerator's Softmax with beta = the node's scale,
 * reading the MatMul's output */
static void test_softmax(void) {
    enum { E = 32 };
    static float w[E * E];
    npl_graph *g = npl_graph_new();
    int64_t xs[2] = {E, NPL_DIM_SEQ}, ws[2] = {E, E};
    int x = npl_input(g, "x", NPL_TYPE_F32, 2, xs), wi = npl_weight(g, "w", NPL_TYPE_F32, 2, ws, w);
    int y = npl_softmax(g, npl_matmul(g, wi, x), 0.125f);
    CHECK(npl_lower_refusal(g, y) == NULL);
    CHECK_EQ_INT(lower_graph(g, y, 2), 0);
    CHECK_EQ_INT(st.n_n, 2);
    int mm = -1, sm = -1;
    CHECK(find_node("MatMul", &mm) && find_node("Softmax", &sm));
    if (mm >= 0 && sm >= 0) {
        CHECK_EQ_INT(st.n[sm].np, 1);
        CHECK(param_f(sm, "beta") == 0.125);
        CHECK_EQ_INT(st.n[sm].nin, 1);
        CHECK_EQ_INT(st.n[sm].in[0], st.n[mm].out);
        const npl_accel_tensor_desc *o = &st.t[st.n[sm].out];
        CHECK(o->kind == NPL_ACCEL_APP_READ && o->dtype == NPL_ACCEL_DT_F32 && o->rank == 2 && o->dims[0] == 2 &&
              o->dims[1] == E);
    }
    npl_graph_free(g);
}

int main(void) {
    test_refusals();
    test_chain();
    test_softmax();
    TEST_MAIN_END();
}
