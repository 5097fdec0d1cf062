/* vnpu's row-local op groups (vnpu_rows.c): a chain of row-local ops in one
 * graph runs as fused row blocks on every thread. Checks, on the generic and
 * the best kernel family and with 1 and 2 threads:
 *  - the chain Cast -> Reshape -> RmsNorm -> Rope -> Reshape -> Add -> Mul
 *    (f16 broadcast) -> Scale -> GeGLU -> Softmax, with f16 / bf16 / f32
 *    intermediates and padding rows, against a double-precision reference
 *    that rounds every intermediate to its type;
 *  - bit equality with the same ops run one graph per op (fusion changes no
 *    value, whatever blocks the threads take and whatever memory the arena
 *    planner shares between the chain's tensors);
 *  - a MatMulGated (gate/up fused) output in f16 against its reference
 *    (the gating runs in the row-parallel epilogue). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "accel/vnpu/vnpu_api.h"
#include "accel_test_util.h"
#include "check.h"
#include "kernels/dtype.h"
#include "npullm_accel.h"

enum { S = 37, H = 4, D = 128, W = H * D };

static const npl_accel_api *api;
static npl_accel_backend *be;

static size_t esize(uint32_t dt) { return dt == NPL_ACCEL_DT_F32 || dt == NPL_ACCEL_DT_INT32 ? 4 : 2; }
static size_t nbytes(const npl_accel_tensor_desc *d) {
    size_t n = esize(d->dtype);
    for (uint32_t i = 0; i < d->rank; i++) n *= d->dims[i];
    return n;
}

static npl_accel_param PI(const char *n, int64_t v) {
    npl_accel_param p;
    memset(&p, 0, sizeof p);
    p.name = n, p.type = NPL_ACCEL_PARAM_INT, p.i = v;
    return p;
}
static npl_accel_param PF(const char *n, double v) {
    npl_accel_param p = PI(n, 0);
    p.type = NPL_ACCEL_PARAM_FLOAT, p.f = v;
    return p;
}

/* ---- the chain, as data ---- */

static float x[S * W], gamma_[D];
static uint16_t bias_h[W];
static int32_t pos[S];

/* tensors: 0 x (in), 1 pos (in), 2 gamma, 3 bias, then the chain's outputs */
typedef struct {
    const char *name;
    uint32_t dt, rank, d0, d1, d2;
} tdef;
static const tdef tensors[] = {
    {"x", NPL_ACCEL_DT_F32, 2, S, W, 0},      {"pos", NPL_ACCEL_DT_INT32, 1, S, 0, 0},
    {"gamma", NPL_ACCEL_DT_F32, 1, D, 0, 0},  {"bias", NPL_ACCEL_DT_F16, 1, W, 0, 0},
    {"xh", NPL_ACCEL_DT_F16, 2, S, W, 0},     {"xr", NPL_ACCEL_DT_F16, 3, S, H, D},
    {"n1", NPL_ACCEL_DT_F16, 3, S, H, D},     {"n2", NPL_ACCEL_DT_BF16, 3, S, H, D},
    {"n3", NPL_ACCEL_DT_BF16, 2, S, W, 0},    {"n4", NPL_ACCEL_DT_F32, 2, S, W, 0},
    {"n5", NPL_ACCEL_DT_F16, 2, S, W, 0},     {"n6", NPL_ACCEL_DT_F16, 2, S, W, 0},
    {"n7", NPL_ACCEL_DT_F32, 2, S, W, 0},     {"y", NPL_ACCEL_DT_F32, 2, S, W, 0},
};
enum { N_T = sizeof tensors / sizeof tensors[0] };

typedef struct {
    const char *op;
    int in[3], n_in, out;
    npl_accel_param p[4];
    int np;
} sdef;
static sdef steps[10];
static int n_steps;

static void chain_init(void) {
    int i = 0;
    steps[i++] = (sdef){"Cast", {0}, 1, 4, {{0}}, 0};
    steps[i++] = (sdef){"Reshape", {4}, 1, 5, {{0}}, 0};
    steps[i++] = (sdef){"RmsNorm", {5, 2}, 2, 6, {PF("epsilon", 1e-5)}, 1};
    steps[i++] = (sdef){"Rope", {6, 1}, 2, 7, {PI("neox", 1), PF("base", 1e4), PI("n_rot", 96)}, 3};
    steps[i++] = (sdef){"Reshape", {7}, 1, 8, {{0}}, 0};
    steps[i++] = (sdef){"Add", {8, 0}, 2, 9, {{0}}, 0};
    steps[i++] = (sdef){"Mul", {3, 9}, 2, 10, {{0}}, 0};
    steps[i++] = (sdef){"Scale", {10}, 1, 11, {PF("scale", 0.75)}, 1};
    steps[i++] = (sdef){"GeGLU", {11, 9}, 2, 12, {{0}}, 0};
    steps[i++] = (sdef){"Softmax", {12}, 1, 13, {PF("beta", 0.5)}, 1};
    n_steps = i;
}

static npl_accel_tensor_desc desc(int t, uint32_t kind) {
    const tdef *d = &tensors[t];
    npl_accel_tensor_desc r = accel_desc(d->name, kind, d->dt, d->rank, d->d0, d->d1, d->d2);
    if (t == 2) r.data = gamma_, r.data_size = sizeof gamma_;
    if (t == 3) r.data = bias_h, r.data_size = sizeof bias_h;
    return r;
}

static void *host[N_T]; /* tensor contents for the one-op-per-graph run */

/* Runs steps [s0, s1) as one graph: inputs not made inside are APP_WRITE
 * (x, pos, earlier outputs from host[]) or STATIC (gamma, bias); every
 * output of the range is read back into host[]. */
static int run_steps(int s0, int s1) {
    npl_accel_context *ctx;
    npl_accel_graph *g;
    CHECK_EQ_INT(api->context_create(be, NULL, NULL, 0, &ctx), NPL_ACCEL_OK);
    CHECK_EQ_INT(api->graph_create(ctx, "chain", &g), NPL_ACCEL_OK);
    npl_accel_tensor_id id[N_T];
    int made[N_T] = {0}, used[N_T] = {0};
    for (int s = s0; s < s1; s++) {
        made[steps[s].out] = 1;
        for (int k = 0; k < steps[s].n_in; k++) used[steps[s].in[k]] = 1;
    }
    npl_accel_buffer in[N_T], out[N_T];
    uint32_t n_in = 0, n_out = 0;
    int st = 0;
    for (int t = 0; t < N_T && !st; t++) {
        if (!made[t] && !used[t]) continue;
        uint32_t kind = made[t] ? NPL_ACCEL_APP_READ : t == 2 || t == 3 ? NPL_ACCEL_STATIC : NPL_ACCEL_APP_WRITE;
        npl_accel_tensor_desc d = desc(t, kind);
        st = api->tensor_create(g, &d, &id[t]);
        if (kind == NPL_ACCEL_APP_WRITE) in[n_in++] = (npl_accel_buffer){d.name, host[t], nbytes(&d)};
        if (kind == NPL_ACCEL_APP_READ) out[n_out++] = (npl_accel_buffer){d.name, host[t], nbytes(&d)};
    }
    for (int s = s0; s < s1 && !st; s++) {
        npl_accel_tensor_id ins[3];
        for (int k = 0; k < steps[s].n_in; k++) ins[k] = id[steps[s].in[k]];
        npl_accel_node_desc nd = {steps[s].op, steps[s].op, steps[s].p, (uint32_t)steps[s].np, ins,
                                  (uint32_t)steps[s].n_in, &id[steps[s].out], 1};
        st = api->graph_add_node(g, &nd);
    }
    if (!st) st = api->graph_finalize(g);
    if (!st) st = api->graph_execute(g, in, n_in, out, n_out);
    if (st) fprintf(stderr, "chain [%d, %d): %s\n", s0, s1, api->last_error(be));
    CHECK_EQ_INT(api->context_free(ctx), NPL_ACCEL_OK);
    return st;
}

/* ---- the double-precision reference, rounding each tensor to its type ---- */

static double rnd(double v, uint32_t dt) {
    if (dt == NPL_ACCEL_DT_F16) return npl_f16_to_f32(npl_f32_to_f16((float)v));
    if (dt == NPL_ACCEL_DT_BF16) return npl_bf16_to_f32(npl_f32_to_bf16((float)v));
    return (float)v;
}

static void reference(double *y) {
    static double a[S * W], b[S * W], r[S * W];
    for (int i = 0; i < S * W; i++) a[i] = rnd(x[i], NPL_ACCEL_DT_F16); /* xh, xr */
    for (int t = 0; t < S; t++) /* n1 = RmsNorm per head */
        for (int h = 0; h < H; h++) {
            double ss = 0;
            for (int i = 0; i < D; i++) ss += a[(t * H + h) * D + i] * a[(t * H + h) * D + i];
            const double sc = 1 / sqrt(ss / D + 1e-5);
            for (int i = 0; i < D; i++) b[(t * H + h) * D + i] = rnd(a[(t * H + h) * D + i] * sc * gamma_[i], NPL_ACCEL_DT_F16);
        }
    for (int t = 0; t < S; t++) /* n2 = Rope (neox, 96 of 128 dims), n3 = its reshape */
        for (int h = 0; h < H; h++) {
            double *xi = b + (t * H + h) * D, o[D];
            for (int i = 0; i < D; i++) o[i] = xi[i];
            for (int i = 0; pos[t] >= 0 && i < 48; i++) {
                const double th = pos[t] * pow(1e4, -2.0 * i / 96);
                o[i] = xi[i] * cos(th) - xi[i + 48] * sin(th);
                o[i + 48] = xi[i] * sin(th) + xi[i + 48] * cos(th);
            }
            for (int i = 0; i < D; i++) xi[i] = rnd(o[i], NPL_ACCEL_DT_BF16);
        }
    for (int i = 0; i < S * W; i++) r[i] = rnd(b[i] + x[i], NPL_ACCEL_DT_F32); /* n4 */
    for (int i = 0; i < S * W; i++) { /* n5, n6, n7 */
        const double n5 = rnd(npl_f16_to_f32(bias_h[i % W]) * r[i], NPL_ACCEL_DT_F16);
        const double n6 = rnd(n5 * 0.75, NPL_ACCEL_DT_F16);
        a[i] = rnd(0.5 * n6 * (1 + tanh(sqrt(2 / M_PI) * (n6 + 0.044715 * n6 * n6 * n6))) * r[i], NPL_ACCEL_DT_F32);
    }
    for (int t = 0; t < S; t++) { /* y = Softmax(0.5 n7) per row */
        double mx = -1e300, sum = 0;
        for (int i = 0; i < W; i++) mx = fmax(mx, 0.5 * a[t * W + i]);
        for (int i = 0; i < W; i++) sum += exp(0.5 * a[t * W + i] - mx);
        for (int i = 0; i < W; i++) y[t * W + i] = exp(0.5 * a[t * W + i] - mx) / sum;
    }
}

static void test_chain(void) {
    static float fused[S * W];
    static double ref[S * W];
    /* fused: the whole chain in one graph */
    for (int t = 0; t < N_T; t++) memset(host[t], 0, S * W * 4);
    memcpy(host[0], x, sizeof x);
    memcpy(host[1], pos, sizeof pos);
    CHECK_EQ_INT(run_steps(0, n_steps), NPL_ACCEL_OK);
    memcpy(fused, host[13], sizeof fused);
    /* relative error against the reference (each row of y sums to 1) */
    reference(ref);
    double e = 0;
    for (int i = 0; i < S * W; i++) e = fmax(e, fabs(fused[i] - ref[i]) / (fabs(ref[i]) + 1e-6));
    printf("  chain of %d row-local ops, %d rows: max relative error %.2e\n", n_steps, S, e);
    CHECK_NEAR(e, 0, 2e-2);
    /* one graph per op gives the same bits */
    for (int s = 0; s < n_steps; s++) CHECK_EQ_INT(run_steps(s, s + 1), NPL_ACCEL_OK);
    CHECK(!memcmp(fused, host[13], sizeof fused));
}

/* MatMulGated: gate and up f32 weights [F, K] (transposed), x f16, y f16 */
static void test_gated(void) {
    enum { M = 45, K = 64, F = 96 };
    static float xf[M * K], wg[F * K], wu[F * K];
    static uint16_t xh[M * K], yh[M * F];
    unsigned s = 21;
    for (int i = 0; i < M * K; i++) xh[i] = npl_f32_to_f16(accel_frand(&s)), xf[i] = npl_f16_to_f32(xh[i]);
    for (int i = 0; i < F * K; i++) wg[i] = accel_frand(&s) * 0.3f, wu[i] = accel_frand(&s) * 0.3f;
    for (int geglu = 0; geglu < 2; geglu++) {
        npl_accel_context *ctx;
        npl_accel_graph *g;
        CHECK_EQ_INT(api->context_create(be, NULL, NULL, 0, &ctx), NPL_ACCEL_OK);
        CHECK_EQ_INT(api->graph_create(ctx, "ffn", &g), NPL_ACCEL_OK);
        npl_accel_tensor_desc d[6] = {accel_desc("x", NPL_ACCEL_APP_WRITE, NPL_ACCEL_DT_F16, 2, M, K, 0),
                                      accel_desc("wg", NPL_ACCEL_STATIC, NPL_ACCEL_DT_F32, 2, F, K, 0),
                                      accel_desc("wu", NPL_ACCEL_STATIC, NPL_ACCEL_DT_F32, 2, F, K, 0),
                                      accel_desc("g", NPL_ACCEL_NATIVE, NPL_ACCEL_DT_F32, 2, M, F, 0),
                                      accel_desc("u", NPL_ACCEL_NATIVE, NPL_ACCEL_DT_F32, 2, M, F, 0),
                                      accel_desc("y", NPL_ACCEL_APP_READ, NPL_ACCEL_DT_F16, 2, M, F, 0)};
        d[1].data = wg, d[1].data_size = sizeof wg;
        d[2].data = wu, d[2].data_size = sizeof wu;
        npl_accel_tensor_id id[6];
        for (int i = 0; i < 6; i++) CHECK_EQ_INT(api->tensor_create(g, &d[i], &id[i]), NPL_ACCEL_OK);
        npl_accel_param tr = PI("transpose_in1", 1);
        npl_accel_tensor_id in_g[2] = {id[0], id[1]}, in_u[2] = {id[0], id[2]}, in_a[2] = {id[3], id[4]};
        npl_accel_node_desc n[3] = {{"mg", "MatMul", &tr, 1, in_g, 2, &id[3], 1},
                                    {"mu", "MatMul", &tr, 1, in_u, 2, &id[4], 1},
                                    {"act", geglu ? "GeGLU" : "SwiGLU", NULL, 0, in_a, 2, &id[5], 1}};
        for (int i = 0; i < 3; i++) CHECK_EQ_INT(api->graph_add_node(g, &n[i]), NPL_ACCEL_OK);
        CHECK_EQ_INT(api->graph_finalize(g), NPL_ACCEL_OK);
        npl_accel_buffer bi = {"x", xh, sizeof xh}, bo = {"y", yh, sizeof yh};
        CHECK_EQ_INT(api->graph_execute(g, &bi, 1, &bo, 1), NPL_ACCEL_OK);
        double e = 0;
        for (int r = 0; r < M; r++)
            for (int c = 0; c < F; c++) {
                double gv = 0, uv = 0;
                for (int k = 0; k < K; k++) gv += (double)xf[r * K + k] * wg[c * K + k], uv += (double)xf[r * K + k] * wu[c * K + k];
                const double act = geglu ? 0.5 * gv * (1 + tanh(sqrt(2 / M_PI) * (gv + 0.044715 * gv * gv * gv)))
                                         : gv / (1 + exp(-gv));
                e = fmax(e, fabs(npl_f16_to_f32(yh[r * F + c]) - act * uv) / (fabs(act * uv) + 0.05));
            }
        printf("  MatMulGated (%s) -> f16: max relative error %.2e\n", geglu ? "GeGLU" : "SwiGLU", e);
        CHECK_NEAR(e, 0, 5e-3);
        CHECK_EQ_INT(api->context_free(ctx), NPL_ACCEL_OK);
    }
}

int main(void) {
    api = npl_vnpu_get_api(NPL_ACCEL_ABI_VERSION);
    unsigned s = 9;
    for (int i = 0; i < S * W; i++) x[i] = 2 * accel_frand(&s);
    for (int i = 0; i < D; i++) gamma_[i] = 1 + 0.2f * accel_frand(&s);
    for (int i = 0; i < W; i++) bias_h[i] = npl_f32_to_f16(1 + 0.5f * accel_frand(&s));
    for (int t = 0; t < S; t++) pos[t] = t % 9 == 4 ? -1 : 3 * t + 1000;
    for (int t = 0; t < N_T; t++) host[t] = calloc(S * W, 4);
    chain_init();
    const char *fams[2] = {"generic", "auto"}, *threads[2] = {"1", "2"};
    for (int f = 0; f < 2; f++)
        for (int th = 0; th < 2; th++) {
            char err[256];
            npl_accel_option o[2] = {{"kernel_family", fams[f]}, {"threads", threads[th]}};
            CHECK_EQ_INT(api->backend_create(o, 2, &be, err, sizeof err), NPL_ACCEL_OK);
            printf("kernel family %s, %s thread(s)\n", fams[f], threads[th]);
            test_chain();
            test_gated();
            api->backend_free(be);
        }
    for (int t = 0; t < N_T; t++) free(host[t]);
    TEST_MAIN_END();
}
