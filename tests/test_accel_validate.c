/* ABI version 2's validate_node and list_ops on vnpu (and record):
 * - validate_node accepts the nodes vnpu runs (each is then added, finalized
 *   and executed) and refuses bad ones with the status graph_add_node gives
 *   and a reason naming what is wrong (unknown op, input count, data type,
 *   param, shape, output kind, tensor description);
 * - list_ops is what graph_add_node accepts: every listed op at every listed
 *   input count gets past the count check and nothing outside it does;
 *   every listed param is known with its type and nothing else is; an op
 *   outside the list is UNKNOWN_OP. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "accel/record/record.h"
#include "accel/vnpu/vnpu_api.h"
#include "accel_test_util.h"
#include "check.h"
#include "npullm_accel.h"

static const npl_accel_api *api;
static npl_accel_backend *be;

#define F32 NPL_ACCEL_DT_F32
#define WR NPL_ACCEL_APP_WRITE
#define RD NPL_ACCEL_APP_READ
#define ST NPL_ACCEL_STATIC
#define RW NPL_ACCEL_APP_READWRITE

typedef struct {
    const char *op;
    npl_accel_param params[4];
    uint32_t n_params;
    npl_accel_tensor_desc in[6];
    uint32_t n_in;
    npl_accel_tensor_desc out;
} node_case;

static npl_accel_tensor_desc D(const char *name, uint32_t kind, uint32_t dt, uint32_t rank, uint32_t d0, uint32_t d1,
                               uint32_t d2) {
    return accel_desc(name, kind, dt, rank, d0, d1, d2);
}

static npl_accel_param PI(const char *name, int64_t v) {
    npl_accel_param p = {0};
    p.name = name, p.type = NPL_ACCEL_PARAM_INT, p.i = v;
    return p;
}
static npl_accel_param PF(const char *name, double v) {
    npl_accel_param p = {0};
    p.name = name, p.type = NPL_ACCEL_PARAM_FLOAT, p.f = v;
    return p;
}
static npl_accel_param PS(const char *name, const char *v) {
    npl_accel_param p = {0};
    p.name = name, p.type = NPL_ACCEL_PARAM_STRING, p.str = v;
    return p;
}

static uint64_t nbytes(const npl_accel_tensor_desc *d) {
    uint64_t n = 1;
    for (uint32_t i = 0; i < d->rank; i++) n *= d->dims[i];
    switch (d->dtype) {
    case NPL_ACCEL_DT_F16: return n * 2;
    case NPL_ACCEL_DT_Q4_0: return n / 32 * 18;
    default: return n * 4;
    }
}

static npl_accel_status validate(const node_case *c, char *reason, size_t len) {
    npl_accel_node_desc n = {"n", c->op, c->params, c->n_params, NULL, c->n_in, NULL, 1};
    return api->validate_node(be, &n, c->in, &c->out, reason, (uint32_t)len);
}

/* The case as a real graph: tensors (STATIC ones zero-filled), the node,
 * and, if add_node accepts it and run, finalize and execute with zeroed
 * buffers. Returns add_node's status (finalize / execute must succeed). */
static npl_accel_status add_and_run(const node_case *c, int run) {
    npl_accel_context *ctx = NULL;
    npl_accel_graph *g = NULL;
    CHECK_EQ_INT(api->context_create(be, NULL, NULL, 0, &ctx), NPL_ACCEL_OK);
    CHECK_EQ_INT(api->graph_create(ctx, "g", &g), NPL_ACCEL_OK);
    npl_accel_tensor_id ids[7];
    void *mem[7] = {0};
    npl_accel_buffer ins[7], outs[1];
    uint32_t n_bin = 0;
    for (uint32_t i = 0; i <= c->n_in; i++) {
        npl_accel_tensor_desc d = i < c->n_in ? c->in[i] : c->out;
        char nm[16];
        if (!d.name) snprintf(nm, sizeof nm, "t%u", i), d.name = nm;
        uint64_t sz = nbytes(&d);
        mem[i] = calloc(1, (size_t)sz);
        if (d.kind == ST) d.data = mem[i], d.data_size = sz;
        CHECK_EQ_INT(api->tensor_create(g, &d, &ids[i]), NPL_ACCEL_OK);
        if (d.kind == WR) ins[n_bin++] = (npl_accel_buffer){c->in[i].name, mem[i], sz};
        if (i == c->n_in) outs[0] = (npl_accel_buffer){c->out.name, mem[i], sz};
    }
    npl_accel_node_desc n = {"n", c->op, c->params, c->n_params, ids, c->n_in, &ids[c->n_in], 1};
    npl_accel_status st = api->graph_add_node(g, &n);
    if (st == NPL_ACCEL_OK && run) {
        CHECK_EQ_INT(api->graph_finalize(g), NPL_ACCEL_OK);
        CHECK_EQ_INT(api->graph_execute(g, ins, n_bin, outs, 1), NPL_ACCEL_OK);
    }
    CHECK_EQ_INT(api->context_free(ctx), NPL_ACCEL_OK);
    for (int i = 0; i < 7; i++) free(mem[i]);
    return st;
}

/* ---- nodes vnpu runs ---- */

static void test_accepts(void) {
    node_case cs[] = {
        {"MatMul", {{0}}, 0, {D("x", WR, F32, 2, 2, 32, 0), D("w", ST, F32, 2, 32, 16, 0)}, 2, D("y", RD, F32, 2, 2, 16, 0)},
        {"MatMul", {PI("transpose_in1", 1)}, 1,
         {D("x", WR, F32, 2, 3, 64, 0), D("w", ST, NPL_ACCEL_DT_Q4_0, 2, 8, 64, 0), D("b", ST, F32, 1, 8, 0, 0)}, 3,
         D("y", RD, F32, 2, 3, 8, 0)},
        {"FullyConnected", {{0}}, 0, {D("x", WR, F32, 2, 2, 32, 0), D("w", ST, F32, 2, 16, 32, 0)}, 2,
         D("y", RD, F32, 2, 2, 16, 0)},
        {"RmsNorm", {PF("epsilon", 1e-5)}, 1, {D("x", WR, F32, 2, 2, 16, 0), D("g", ST, F32, 1, 16, 0, 0)}, 2,
         D("y", RD, F32, 2, 2, 16, 0)},
        {"Rope", {PI("n_rot", 8), PI("neox", 1), PF("base", 1e6)}, 3,
         {D("x", WR, F32, 3, 3, 2, 8), D("pos", WR, NPL_ACCEL_DT_INT32, 1, 3, 0, 0)}, 2, D("y", RD, F32, 3, 3, 2, 8)},
        {"Attention", {PF("scale", 0.25), PI("window", 4)}, 2,
         {D("q", WR, F32, 3, 2, 4, 8), D("k", WR, F32, 3, 2, 2, 8), D("v", WR, F32, 3, 2, 2, 8),
          D("kc", RW, NPL_ACCEL_DT_F16, 3, 16, 2, 8), D("vc", RW, NPL_ACCEL_DT_F16, 3, 16, 2, 8),
          D("pos", WR, NPL_ACCEL_DT_INT32, 1, 2, 0, 0)},
         6, D("y", RD, F32, 3, 2, 4, 8)},
        {"Add", {{0}}, 0, {D("a", WR, F32, 2, 4, 8, 0), D("b", WR, F32, 1, 8, 0, 0)}, 2, D("y", RD, F32, 2, 4, 8, 0)},
        {"SwiGLU", {{0}}, 0, {D("a", WR, F32, 2, 4, 8, 0), D("b", WR, F32, 2, 4, 8, 0)}, 2, D("y", RD, F32, 2, 4, 8, 0)},
        {"Softmax", {PF("beta", 2)}, 1, {D("x", WR, F32, 2, 4, 8, 0)}, 1, D("y", RD, F32, 2, 4, 8, 0)},
        {"Scale", {PI("scale", 3)}, 1, {D("x", WR, F32, 2, 4, 8, 0)}, 1, D("y", RD, F32, 2, 4, 8, 0)},
        {"Transpose", {{0}}, 0, {D("x", WR, F32, 2, 4, 8, 0)}, 1, D("y", RD, F32, 2, 8, 4, 0)},
        {"Concat", {PI("axis", -1)}, 1, {D("a", WR, F32, 2, 4, 8, 0), D("b", WR, F32, 2, 4, 2, 0)}, 2,
         D("y", RD, F32, 2, 4, 10, 0)},
        {"Gather", {{0}}, 0, {D("tab", ST, F32, 2, 10, 8, 0), D("i", WR, NPL_ACCEL_DT_INT32, 1, 3, 0, 0)}, 2,
         D("y", RD, F32, 2, 3, 8, 0)},
        {"Cast", {{0}}, 0, {D("x", WR, F32, 2, 4, 8, 0)}, 1, D("y", RD, NPL_ACCEL_DT_F16, 2, 4, 8, 0)},
    };
    /* Transpose needs its perm (INTS) */
    static const int64_t perm[] = {1, 0};
    cs[10].params[0] = (npl_accel_param){.name = "perm", .type = NPL_ACCEL_PARAM_INTS, .count = 2, .ints = perm};
    cs[10].n_params = 1;
    for (size_t i = 0; i < sizeof cs / sizeof cs[0]; i++) {
        char why[512] = "x";
        npl_accel_status st = validate(&cs[i], why, sizeof why);
        if (st) fprintf(stderr, "case %zu (%s): %s\n", i, cs[i].op, why);
        CHECK_EQ_INT(st, NPL_ACCEL_OK);
        CHECK(why[0] == 0);
        CHECK_EQ_INT(add_and_run(&cs[i], 1), NPL_ACCEL_OK);
    }
    /* names are optional, STATIC data is not read */
    node_case c = cs[0];
    c.in[0].name = c.in[1].name = c.out.name = NULL;
    CHECK_EQ_INT(validate(&c, NULL, 0), NPL_ACCEL_OK);
}

/* ---- nodes vnpu refuses: validate_node's status is graph_add_node's ---- */

static void refuse(const node_case *c, npl_accel_status want, const char *word, int also_add) {
    char why[512] = "";
    npl_accel_status st = validate(c, why, sizeof why);
    if (st != want || !strstr(why, word))
        fprintf(stderr, "%s: status %d (want %d), reason '%s' (want '%s')\n", c->op, st, want, why, word);
    CHECK_EQ_INT(st, want);
    CHECK(strstr(why, word) != NULL);
    CHECK(!strcmp(why, api->last_error(be))); /* the same message in last_error */
    CHECK(strstr(why, "node 'n' (") != NULL);
    if (also_add) CHECK_EQ_INT(add_and_run(c, 0), want);
}

static void test_refuses(void) {
    const npl_accel_tensor_desc x = D("x", WR, F32, 2, 2, 32, 0), w = D("w", ST, F32, 2, 32, 16, 0),
                                y = D("y", RD, F32, 2, 2, 16, 0);
    node_case c = {"MatMul", {{0}}, 0, {x, w}, 2, y};
    CHECK_EQ_INT(validate(&c, NULL, 0), NPL_ACCEL_OK);

    node_case u = c;
    u.op = "Conv2D";
    refuse(&u, NPL_ACCEL_ERR_UNKNOWN_OP, "unknown op", 1);
    u.op = "vnpu.MatMulGated"; /* internal: fusion result */
    refuse(&u, NPL_ACCEL_ERR_UNKNOWN_OP, "unknown op", 1);

    node_case n1 = c;
    n1.n_in = 1;
    refuse(&n1, NPL_ACCEL_ERR_SHAPE_MISMATCH, "takes 2..3 inputs", 1);

    node_case dt = {"RmsNorm", {{0}}, 0, {D("x", WR, NPL_ACCEL_DT_INT32, 2, 2, 16, 0)}, 1, D("y", RD, F32, 2, 2, 16, 0)};
    refuse(&dt, NPL_ACCEL_ERR_TYPE_MISMATCH, "'x' is int32", 1);

    node_case q4 = c;
    q4.in[1] = D("w", ST, NPL_ACCEL_DT_Q4_0, 2, 16, 32, 0);
    q4.out = D("y", RD, F32, 2, 2, 32, 0);
    refuse(&q4, NPL_ACCEL_ERR_TYPE_MISMATCH, "transpose_in1=1", 1);

    node_case sm = {"Softmax", {PS("beta", "2")}, 1, {D("x", WR, F32, 2, 4, 8, 0)}, 1, D("y", RD, F32, 2, 4, 8, 0)};
    refuse(&sm, NPL_ACCEL_ERR_BAD_PARAM, "param 'beta' has the wrong type", 1);
    sm.params[0] = PI("axis", 0);
    refuse(&sm, NPL_ACCEL_ERR_BAD_PARAM, "unknown param 'axis'", 1);

    node_case rope = {"Rope", {PI("n_rot", 7)}, 1,
                      {D("x", WR, F32, 3, 3, 2, 8), D("pos", WR, NPL_ACCEL_DT_INT32, 1, 3, 0, 0)}, 2,
                      D("y", RD, F32, 3, 3, 2, 8)};
    refuse(&rope, NPL_ACCEL_ERR_BAD_PARAM, "n_rot must be even", 1);

    node_case k = c;
    k.in[0] = D("x", WR, F32, 2, 2, 31, 0);
    refuse(&k, NPL_ACCEL_ERR_SHAPE_MISMATCH, "'x' has shape [2, 31]", 1);

    node_case o = c;
    o.out.kind = ST; /* outputs are NATIVE or APP_READ */
    refuse(&o, NPL_ACCEL_ERR_INVALID_ARG, "outputs must be NATIVE or APP_READ", 0);

    node_case cache = {"Attention", {{0}}, 0,
                       {D("q", WR, F32, 3, 2, 4, 8), D("k", WR, F32, 3, 2, 2, 8), D("v", WR, F32, 3, 2, 2, 8),
                        D("kc", WR, NPL_ACCEL_DT_F16, 3, 16, 2, 8), D("vc", RW, NPL_ACCEL_DT_F16, 3, 16, 2, 8),
                        D("pos", WR, NPL_ACCEL_DT_INT32, 1, 2, 0, 0)},
                       6, D("y", RD, F32, 3, 2, 4, 8)};
    refuse(&cache, NPL_ACCEL_ERR_INVALID_ARG, "cache 'kc' must be APP_READWRITE", 1);

    /* a tensor description tensor_create would refuse */
    node_case bad = c;
    bad.in[0].dtype = 99;
    refuse(&bad, NPL_ACCEL_ERR_INVALID_ARG, "tensor 'x': unknown data type 99", 0);
    bad = c;
    bad.in[0].rank = 0;
    refuse(&bad, NPL_ACCEL_ERR_SHAPE_MISMATCH, "tensor 'x': rank 0", 0);

    /* NULL arguments: a status, no crash */
    char why[256];
    CHECK_EQ_INT(api->validate_node(be, NULL, NULL, NULL, why, sizeof why), NPL_ACCEL_ERR_INVALID_ARG);
    npl_accel_node_desc nd = {"n", "MatMul", NULL, 0, NULL, 2, NULL, 1};
    CHECK_EQ_INT(api->validate_node(be, &nd, NULL, NULL, why, sizeof why), NPL_ACCEL_ERR_INVALID_ARG);
    CHECK(strstr(why, "NULL description") != NULL);
    CHECK_EQ_INT(api->validate_node((npl_accel_backend *)&nd, &nd, c.in, &c.out, why, sizeof why),
                 NPL_ACCEL_ERR_INVALID_HANDLE);
}

/* ---- list_ops is what graph_add_node takes ---- */

/* graph_add_node of `op` with n_in f32 [4, 8] inputs and params; the message */
static npl_accel_status add_generic(const char *op, uint32_t n_in, uint32_t n_out, const npl_accel_param *p,
                                    uint32_t np, char *msg, size_t len) {
    npl_accel_context *ctx = NULL;
    npl_accel_graph *g = NULL;
    CHECK_EQ_INT(api->context_create(be, NULL, NULL, 0, &ctx), NPL_ACCEL_OK);
    CHECK_EQ_INT(api->graph_create(ctx, "g", &g), NPL_ACCEL_OK);
    npl_accel_tensor_id ids[24];
    for (uint32_t i = 0; i < n_in + n_out && i < 24; i++) {
        char nm[16];
        snprintf(nm, sizeof nm, "t%u", i);
        npl_accel_tensor_desc d = D(nm, i < n_in ? WR : RD, F32, 2, 4, 8, 0);
        CHECK_EQ_INT(api->tensor_create(g, &d, &ids[i]), NPL_ACCEL_OK);
    }
    npl_accel_node_desc n = {"n", op, p, np, ids, n_in, ids + n_in, n_out};
    npl_accel_status st = api->graph_add_node(g, &n);
    snprintf(msg, len, "%s", st ? api->last_error(be) : "");
    CHECK_EQ_INT(api->context_free(ctx), NPL_ACCEL_OK);
    return st;
}

static void test_list_ops(void) {
    const npl_accel_op_info *ops = NULL;
    uint32_t n = 0;
    CHECK_EQ_INT(api->list_ops(be, &ops, &n), NPL_ACCEL_OK);
    CHECK(ops != NULL);
    CHECK_EQ_INT(n, 18); /* the vocabulary of include/npullm_accel.h, all of it */
    static const char *const vocab[] = {"MatMul", "FullyConnected", "RmsNorm", "Rope", "Attention", "Add",
                                        "Mul", "Scale", "Silu", "Gelu", "SwiGLU", "GeGLU", "Softmax", "Reshape",
                                        "Transpose", "Concat", "Gather", "Cast"};
    for (size_t v = 0; v < sizeof vocab / sizeof vocab[0]; v++) {
        int found = 0;
        for (uint32_t i = 0; i < n; i++) found += !strcmp(ops[i].name, vocab[v]);
        CHECK_EQ_INT(found, 1);
    }
    char msg[512];
    for (uint32_t i = 0; i < n; i++) {
        const npl_accel_op_info *o = &ops[i];
        CHECK(strncmp(o->name, "vnpu.", 5) != 0);
        CHECK(o->min_inputs >= 1 && o->min_inputs <= o->max_inputs && o->max_inputs <= 16 && o->n_outputs == 1);
        /* input counts: inside the range past the count check, outside not */
        for (uint32_t k = o->min_inputs - 1; k <= o->max_inputs + 1; k++) {
            npl_accel_status st = add_generic(o->name, k, o->n_outputs, NULL, 0, msg, sizeof msg);
            const int counted = st == NPL_ACCEL_ERR_SHAPE_MISMATCH && strstr(msg, "inputs and") != NULL;
            if (counted != (k < o->min_inputs || k > o->max_inputs))
                fprintf(stderr, "%s with %u inputs: %d '%s'\n", o->name, k, st, msg);
            CHECK_EQ_INT(counted, k < o->min_inputs || k > o->max_inputs);
        }
        /* one output more is refused */
        CHECK_EQ_INT(add_generic(o->name, o->min_inputs, o->n_outputs + 1, NULL, 0, msg, sizeof msg),
                     NPL_ACCEL_ERR_SHAPE_MISMATCH);
        /* every listed param is known with its type; a STRING is the wrong type */
        for (uint32_t j = 0; j < o->n_params; j++) {
            const npl_accel_param_info *pi = &o->params[j];
            static const int64_t ints[2] = {1, 0};
            npl_accel_param p = {pi->name, pi->type, 2, 0, 1.0, ints, NULL, NULL};
            CHECK(pi->type == NPL_ACCEL_PARAM_INT || pi->type == NPL_ACCEL_PARAM_FLOAT || pi->type == NPL_ACCEL_PARAM_INTS);
            add_generic(o->name, o->min_inputs, o->n_outputs, &p, 1, msg, sizeof msg);
            CHECK(strstr(msg, "unknown param") == NULL && strstr(msg, "wrong type") == NULL);
            p.type = NPL_ACCEL_PARAM_STRING;
            p.str = "1";
            CHECK_EQ_INT(add_generic(o->name, o->min_inputs, o->n_outputs, &p, 1, msg, sizeof msg), NPL_ACCEL_ERR_BAD_PARAM);
            CHECK(strstr(msg, "wrong type") != NULL);
        }
        /* and nothing else */
        npl_accel_param bogus = PI("no_such_param", 1);
        CHECK_EQ_INT(add_generic(o->name, o->min_inputs, o->n_outputs, &bogus, 1, msg, sizeof msg), NPL_ACCEL_ERR_BAD_PARAM);
        CHECK(strstr(msg, "unknown param 'no_such_param'") != NULL);
    }
    /* an op outside the list */
    CHECK_EQ_INT(add_generic("LayerNorm", 1, 1, NULL, 0, msg, sizeof msg), NPL_ACCEL_ERR_UNKNOWN_OP);
    CHECK_EQ_INT(api->list_ops(be, NULL, &n), NPL_ACCEL_ERR_INVALID_ARG);
}

/* ---- record: validates descriptions only, has no op set ---- */

static void test_record(void) {
    const npl_accel_api *rec = npl_record_get_api(NPL_ACCEL_ABI_VERSION);
    CHECK(rec && npl_accel_api_check(rec, 2) == NULL && NPL_ACCEL_API_HAS(rec, validate_node));
    char path[] = "/tmp/npl_validate_recXXXXXX", err[256] = "";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    npl_accel_option o = {"path", path};
    npl_accel_backend *rb = NULL;
    CHECK_EQ_INT(rec->backend_create(&o, 1, &rb, err, sizeof err), NPL_ACCEL_OK);
    node_case c = {"AnyVendorOp", {{0}}, 0, {D("x", WR, F32, 2, 2, 32, 0)}, 1, D("y", RD, F32, 2, 2, 16, 0)};
    npl_accel_node_desc n = {"n", c.op, NULL, 0, NULL, 1, NULL, 1};
    char why[256] = "x";
    CHECK_EQ_INT(rec->validate_node(rb, &n, c.in, &c.out, why, sizeof why), NPL_ACCEL_OK);
    CHECK(why[0] == 0);
    c.in[0].dims[1] = 0;
    CHECK_EQ_INT(rec->validate_node(rb, &n, c.in, &c.out, why, sizeof why), NPL_ACCEL_ERR_SHAPE_MISMATCH);
    CHECK(strstr(why, "'x': zero dimension") != NULL);
    const npl_accel_op_info *ops = (const npl_accel_op_info *)1;
    uint32_t nops = 5;
    CHECK_EQ_INT(rec->list_ops(rb, &ops, &nops), NPL_ACCEL_ERR_UNSUPPORTED);
    CHECK(ops == NULL && nops == 0 && strstr(rec->last_error(rb), "no op set") != NULL);
    rec->backend_free(rb);
    close(fd);
    unlink(path);
}

int main(void) {
    api = npl_vnpu_get_api(NPL_ACCEL_ABI_VERSION);
    CHECK(api && NPL_ACCEL_API_HAS(api, validate_node) && NPL_ACCEL_API_HAS(api, list_ops));
    char err[256] = "";
    npl_accel_option th = {"threads", "2"};
    CHECK_EQ_INT(api->backend_create(&th, 1, &be, err, sizeof err), NPL_ACCEL_OK);
    test_accepts();
    test_refuses();
    test_list_ops();
    test_record();
    api->backend_free(be);
    TEST_MAIN_END();
}
