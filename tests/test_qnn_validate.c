/* validate_node and list_ops of the QNN HTP adapter (ABI version 2): the
 * node is lowered as graph_add_node would and each QNN op goes to QNN's
 * backendValidateOpConfig, so a refusal carries QNN's reason (its error
 * message and log lines) or the adapter's; list_ops is the adapter's op
 * table with typed params. */
#include "test_qnn_common.h"

static npl_accel_tensor_desc td(const char *name, npl_accel_kind kind, npl_accel_dtype dt, uint32_t rank, uint32_t d0,
                                uint32_t d1, uint32_t d2) {
    npl_accel_tensor_desc d;
    memset(&d, 0, sizeof d);
    d.name = name, d.kind = kind, d.dtype = dt, d.rank = rank;
    d.dims[0] = d0, d.dims[1] = d1, d.dims[2] = d2;
    return d;
}

static npl_accel_status val(qnn_rig *r, const char *label, const char *op, const npl_accel_param *p, uint32_t np,
                            const npl_accel_tensor_desc *in, uint32_t n_in, const npl_accel_tensor_desc *out, char *why,
                            uint32_t len) {
    npl_accel_node_desc n = {label, op, p, np, NULL, n_in, NULL, 1};
    npl_accel_status st = r->api->validate_node(r->be, &n, in, out, why, len);
    printf("%-34s %-8s -> %2d %s\n", label, op, st, st ? why : "accepted");
    return st;
}

int main(void) {
    qnn_rig r = qnn_rig_open("SM8650");
    const npl_accel_api *a = r.api;
    CHECK(NPL_ACCEL_API_HAS(a, validate_node));
    CHECK(NPL_ACCEL_API_HAS(a, list_ops));
    if (!NPL_ACCEL_API_HAS(a, validate_node) || !NPL_ACCEL_API_HAS(a, list_ops)) TEST_MAIN_END();
    char why[2048];
    const uint32_t M = 8, K = 64, N = 32;
    const npl_accel_dtype F16 = NPL_ACCEL_DT_F16;

    /* accepted */
    npl_accel_tensor_desc mm[2] = {td("x", NPL_ACCEL_APP_WRITE, F16, 2, M, K, 0), td("w", NPL_ACCEL_STATIC, F16, 2, K, N, 0)};
    npl_accel_tensor_desc mo = td("y", NPL_ACCEL_APP_READ, F16, 2, M, N, 0);
    CHECK_EQ_INT(val(&r, "matmul f16 x static w", "MatMul", NULL, 0, mm, 2, &mo, why, sizeof why), NPL_ACCEL_OK);
    CHECK(why[0] == 0);
    npl_accel_tensor_desc nx[2] = {td("x", NPL_ACCEL_APP_WRITE, F16, 2, M, K, 0), td("g", NPL_ACCEL_STATIC, F16, 1, K, 0, 0)};
    npl_accel_tensor_desc no = td("y", NPL_ACCEL_NATIVE, F16, 2, M, K, 0);
    npl_accel_param eps = {.name = "epsilon", .type = NPL_ACCEL_PARAM_FLOAT, .f = 1e-6};
    CHECK_EQ_INT(val(&r, "rmsnorm f16", "RmsNorm", &eps, 1, nx, 2, &no, why, sizeof why), NPL_ACCEL_OK);
    npl_accel_tensor_desc rx[2] = {td("q", NPL_ACCEL_NATIVE, F16, 3, 4, 2, 16), td("pos", NPL_ACCEL_APP_WRITE, NPL_ACCEL_DT_INT32, 1, 4, 0, 0)};
    npl_accel_tensor_desc ro = td("qr", NPL_ACCEL_NATIVE, F16, 3, 4, 2, 16);
    npl_accel_param neox = {.name = "neox", .type = NPL_ACCEL_PARAM_INT, .i = 1};
    CHECK_EQ_INT(val(&r, "rope neox f16", "Rope", &neox, 1, rx, 2, &ro, why, sizeof why), NPL_ACCEL_OK);
    /* the same tensor twice, names NULL: scratch names of their own */
    npl_accel_tensor_desc sq[2] = {td(NULL, NPL_ACCEL_APP_WRITE, F16, 2, M, K, 0), td(NULL, NPL_ACCEL_APP_WRITE, F16, 2, M, K, 0)};
    npl_accel_tensor_desc so = td(NULL, NPL_ACCEL_APP_READ, F16, 2, M, K, 0);
    CHECK_EQ_INT(val(&r, "mul x x, no names", "Mul", NULL, 0, sq, 2, &so, why, sizeof why), NPL_ACCEL_OK);

    /* refused by QNN's validation: its message in the reason */
    npl_accel_tensor_desc bad[2] = {td("x", NPL_ACCEL_APP_WRITE, F16, 2, M, K, 0), td("w", NPL_ACCEL_APP_WRITE, F16, 2, K + 16, N, 0)};
    npl_accel_status st = val(&r, "matmul K 64 x w [80, 32]", "MatMul", NULL, 0, bad, 2, &mo, why, sizeof why);
    CHECK_EQ_INT(st, NPL_ACCEL_ERR_UNSUPPORTED);
    CHECK(strstr(why, "refused by QNN's validation") != NULL);
    CHECK(strstr(why, "'matmul K 64 x w [80, 32]'") != NULL);
    CHECK(strstr(why, "QNN error") != NULL);
    CHECK(strstr(why, "Inner dimension does not match") != NULL); /* QNN's log line, through the log callback */
    CHECK(!strcmp(why, a->last_error(r.be)));
    npl_accel_tensor_desc sm = td("x", NPL_ACCEL_APP_WRITE, F16, 2, M, K, 0), smo = td("y", NPL_ACCEL_APP_READ, F16, 2, M, N, 0);
    st = val(&r, "softmax [8,64] -> [8,32]", "Softmax", NULL, 0, &sm, 1, &smo, why, sizeof why);
    CHECK_EQ_INT(st, NPL_ACCEL_ERR_UNSUPPORTED);
    CHECK(strstr(why, "refused by QNN's validation") != NULL);

    /* refused by the adapter before QNN is asked */
    CHECK_EQ_INT(val(&r, "conv", "Conv2d", NULL, 0, mm, 2, &mo, why, sizeof why), NPL_ACCEL_ERR_UNKNOWN_OP);
    CHECK(strstr(why, "'Conv2d' is not in the QNN op set") != NULL);
    /* Attention (composed, caches as host buffers): taken; with quantized q refused */
    npl_accel_tensor_desc at[6] = {td("q", NPL_ACCEL_NATIVE, F16, 3, 4, 4, 32), td("k", NPL_ACCEL_NATIVE, F16, 3, 4, 1, 32),
                                   td("v", NPL_ACCEL_NATIVE, F16, 3, 4, 1, 32), td("kc", NPL_ACCEL_APP_READWRITE, F16, 3, 64, 1, 32),
                                   td("vc", NPL_ACCEL_APP_READWRITE, F16, 3, 64, 1, 32),
                                   td("pos", NPL_ACCEL_APP_WRITE, NPL_ACCEL_DT_INT32, 1, 4, 0, 0)};
    npl_accel_tensor_desc ao = td("y", NPL_ACCEL_NATIVE, F16, 3, 4, 4, 32);
    npl_accel_param win = {.name = "window", .type = NPL_ACCEL_PARAM_INT, .i = 16};
    st = val(&r, "attention", "Attention", &win, 1, at, 6, &ao, why, sizeof why);
    if (st) printf("  attention: %s\n", why);
    CHECK_EQ_INT(st, NPL_ACCEL_OK);
    const float s8 = 0.05f;
    at[0].dtype = NPL_ACCEL_DT_UINT8, at[0].quant = qnn_pt(&s8, NULL);
    CHECK_EQ_INT(val(&r, "attention uint8 q", "Attention", NULL, 0, at, 6, &ao, why, sizeof why), NPL_ACCEL_ERR_UNSUPPORTED);
    CHECK(strstr(why, "quantized") != NULL);
    npl_accel_param tin0 = {.name = "transpose_in0", .type = NPL_ACCEL_PARAM_INT, .i = 1};
    CHECK_EQ_INT(val(&r, "matmul transpose_in0", "MatMul", &tin0, 1, mm, 2, &mo, why, sizeof why), NPL_ACCEL_ERR_BAD_PARAM);
    npl_accel_param bogus = {.name = "bogus", .type = NPL_ACCEL_PARAM_INT};
    CHECK_EQ_INT(val(&r, "softmax bogus param", "Softmax", &bogus, 1, &sm, 1, &sm, why, sizeof why), NPL_ACCEL_ERR_BAD_PARAM);
    CHECK(strstr(why, "no param 'bogus'") != NULL);
    npl_accel_tensor_desc kv = td("cache", NPL_ACCEL_APP_READWRITE, F16, 2, M, K, 0);
    CHECK_EQ_INT(val(&r, "scale of a context tensor", "Scale", NULL, 0, &kv, 1, &no, why, sizeof why), NPL_ACCEL_ERR_UNSUPPORTED);
    CHECK(strstr(why, "no context tensors") != NULL);
    npl_accel_tensor_desc bf[2] = {td("g", NPL_ACCEL_NATIVE, NPL_ACCEL_DT_BF16, 2, M, K, 0), td("u", NPL_ACCEL_NATIVE, F16, 2, M, K, 0)};
    CHECK_EQ_INT(val(&r, "swiglu bf16", "SwiGLU", NULL, 0, bf, 2, &no, why, sizeof why), NPL_ACCEL_ERR_UNSUPPORTED);
    float s1 = 0.1f;
    npl_accel_tensor_desc qg[2] = {td("g", NPL_ACCEL_NATIVE, NPL_ACCEL_DT_UINT8, 2, M, K, 0), td("u", NPL_ACCEL_NATIVE, NPL_ACCEL_DT_UINT8, 2, M, K, 0)};
    qg[0].quant = qg[1].quant = qnn_pt(&s1, NULL);
    npl_accel_tensor_desc qo = qg[0];
    qo.name = "o";
    CHECK_EQ_INT(val(&r, "swiglu uint8", "SwiGLU", NULL, 0, qg, 2, &qo, why, sizeof why), NPL_ACCEL_ERR_UNSUPPORTED);
    CHECK(strstr(why, "quantized") != NULL);
    CHECK_EQ_INT(val(&r, "matmul one input", "MatMul", NULL, 0, mm, 1, &mo, why, sizeof why), NPL_ACCEL_ERR_SHAPE_MISMATCH);

    /* mixed float types, as the compiler's subgraphs have them (f32 graph
     * inputs and weights, f16 intermediates): QNN's ops take one float type,
     * so the adapter converts to the output's type (a Cast, or a converted
     * copy of a STATIC tensor) — accepted, and computing the right numbers */
    {
        npl_accel_tensor_desc ab[2] = {td("a", NPL_ACCEL_APP_WRITE, F16, 2, M, K, 0), td("b", NPL_ACCEL_APP_WRITE, NPL_ACCEL_DT_F32, 2, M, K, 0)};
        npl_accel_tensor_desc o32 = td("o", NPL_ACCEL_APP_READ, NPL_ACCEL_DT_F32, 2, M, K, 0), o16 = td("o", NPL_ACCEL_APP_READ, F16, 2, M, K, 0);
        CHECK_EQ_INT(val(&r, "add f16 + f32 -> f32", "Add", NULL, 0, ab, 2, &o32, why, sizeof why), NPL_ACCEL_OK);
        CHECK_EQ_INT(val(&r, "add f16 + f32 -> f16", "Add", NULL, 0, ab, 2, &o16, why, sizeof why), NPL_ACCEL_OK);
        npl_accel_tensor_desc xw[2] = {td("x", NPL_ACCEL_APP_WRITE, NPL_ACCEL_DT_F32, 2, M, K, 0), td("w", NPL_ACCEL_STATIC, NPL_ACCEL_DT_F32, 2, K, N, 0)};
        CHECK_EQ_INT(val(&r, "matmul f32 x, f32 w -> f16", "MatMul", NULL, 0, xw, 2, &mo, why, sizeof why), NPL_ACCEL_OK);
        unsigned seed = 7;
        tspec in[2] = {{xw[0], NULL}, {xw[1], NULL}}, out = {mo, NULL};
        float *x = malloc(sizeof(float) * M * K), *w = malloc(sizeof(float) * K * N);
        uint16_t *y = malloc(2 * M * N);
        for (uint32_t i = 0; i < M * K; i++) x[i] = accel_frand(&seed);
        for (uint32_t i = 0; i < K * N; i++) w[i] = accel_frand(&seed) * 0.2f;
        in[0].data = x, in[1].data = w, out.data = y;
        CHECK_EQ_INT(run1(&r, "MatMul", NULL, 0, in, 2, &out), NPL_ACCEL_OK);
        double e = 0;
        for (uint32_t i = 0; i < M; i++)
            for (uint32_t j = 0; j < N; j++) {
                double ref = 0;
                for (uint32_t k = 0; k < K; k++) ref += (double)x[i * K + k] * w[k * N + j];
                e = fmax(e, fabs(npl_f16_to_f32(y[i * N + j]) - ref));
            }
        printf("matmul f32 x [%u,%u] . f32 static w [%u,%u] -> f16 on QNN: max_err %.5f\n", M, K, K, N, e);
        CHECK(e < 0.01);
        /* Add f16 + f32 -> f32 */
        tspec ia[2] = {{ab[0], NULL}, {ab[1], NULL}}, oa = {o32, NULL};
        uint16_t *a16 = malloc(2 * M * K);
        float *b32 = malloc(4 * M * K), *o = malloc(4 * M * K);
        for (uint32_t i = 0; i < M * K; i++) a16[i] = npl_f32_to_f16(accel_frand(&seed)), b32[i] = accel_frand(&seed);
        ia[0].data = a16, ia[1].data = b32, oa.data = o;
        CHECK_EQ_INT(run1(&r, "Add", NULL, 0, ia, 2, &oa), NPL_ACCEL_OK);
        e = 0;
        for (uint32_t i = 0; i < M * K; i++) e = fmax(e, fabs(o[i] - (npl_f16_to_f32(a16[i]) + (double)b32[i])));
        printf("add f16 + f32 -> f32 on QNN: max_err %.5f\n", e);
        CHECK(e < 0.005);
        free(x), free(w), free(y), free(a16), free(b32), free(o);
    }

    /* nothing of a validation stays: a real graph of the accepted node runs */
    {
        tspec in[2] = {{mm[0], NULL}, {mm[1], NULL}}, out = {mo, NULL};
        in[0].data = calloc(M * K, 2), in[1].data = calloc(K * N, 2), out.data = calloc(M * N, 2);
        CHECK_EQ_INT(run1(&r, "MatMul", NULL, 0, in, 2, &out), NPL_ACCEL_OK);
        free(in[0].data), free(in[1].data), free(out.data);
    }

    /* list_ops: the op table, typed params, every name known to validate_node */
    const npl_accel_op_info *ops = NULL;
    uint32_t n_ops = 0;
    CHECK_EQ_INT(a->list_ops(r.be, &ops, &n_ops), NPL_ACCEL_OK);
    CHECK(n_ops >= 20);
    int seen = 0;
    for (uint32_t i = 0; i < n_ops; i++) {
        const npl_accel_op_info *o = &ops[i];
        CHECK(o->min_inputs >= 1 && o->min_inputs <= o->max_inputs && o->n_outputs == 1);
        for (uint32_t k = 0; k < o->n_params; k++) {
            const npl_accel_param_info *p = &o->params[k];
            if (!strcmp(o->name, "RmsNorm") && !strcmp(p->name, "epsilon")) { seen |= 1; CHECK_EQ_INT(p->type, NPL_ACCEL_PARAM_FLOAT); }
            if (!strcmp(o->name, "Rope") && !strcmp(p->name, "n_rot")) { seen |= 2; CHECK_EQ_INT(p->type, NPL_ACCEL_PARAM_INT); }
            if (!strcmp(o->name, "Transpose") && !strcmp(p->name, "perm")) { seen |= 4; CHECK_EQ_INT(p->type, NPL_ACCEL_PARAM_INTS); }
            if (!strcmp(o->name, "Scale") && !strcmp(p->name, "scale")) { seen |= 8; CHECK_EQ_INT(p->type, NPL_ACCEL_PARAM_FLOAT); }
        }
        if (!strcmp(o->name, "Concat")) CHECK(o->max_inputs >= 8);
        /* a known op is never UNKNOWN_OP */
        npl_accel_node_desc n = {"probe", o->name, NULL, 0, NULL, o->min_inputs, NULL, 1};
        npl_accel_tensor_desc ins[8]; /* Attention takes 6 */
        CHECK(o->min_inputs <= 8);
        for (uint32_t k = 0; k < 8; k++) ins[k] = td(NULL, NPL_ACCEL_APP_WRITE, F16, 2, M, K, 0);
        npl_accel_tensor_desc o1 = td(NULL, NPL_ACCEL_APP_READ, F16, 2, M, K, 0);
        CHECK(a->validate_node(r.be, &n, ins, &o1, why, sizeof why) != NPL_ACCEL_ERR_UNKNOWN_OP);
    }
    CHECK_EQ_INT(seen, 15);
    const npl_accel_op_info *again = NULL;
    CHECK(a->list_ops(r.be, &again, &n_ops) == NPL_ACCEL_OK && again == ops);
    qnn_rig_close(&r);
    TEST_MAIN_END();
}
