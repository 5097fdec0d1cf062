/* vnpu's non-MatMul ops, one graph per op, against references written here
 * (double precision where it matters): Transpose, Concat, Softmax, Gelu,
 * GeGLU, SwiGLU, Scale, Mul with broadcasting, Cast to f16 / bf16 / int8,
 * quantized int8 inputs, Gather from f32 / q8_0 tables, RmsNorm without a
 * weight, Rope (normal and neox), Attention with causal + sliding-window
 * masks, padding rows and GQA, on the generic and the best kernel family. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "accel/vnpu/vnpu_api.h"
#include "accel_test_util.h"
#include "check.h"
#include "kernels/dtype.h"
#include "kernels/quant_blocks.h"
#include "npullm_accel.h"

static const npl_accel_api *api;
static npl_accel_backend *be;

typedef struct {
    npl_accel_tensor_desc d;
    const void *data; /* APP_WRITE / APP_READWRITE contents (STATIC: d.data) */
} tin;

static size_t nbytes(const npl_accel_tensor_desc *d) {
    size_t n = 1, es = d->dtype == NPL_ACCEL_DT_F32 || d->dtype == NPL_ACCEL_DT_INT32 ? 4
                     : d->dtype == NPL_ACCEL_DT_INT8 || d->dtype == NPL_ACCEL_DT_UINT8 ? 1 : 2;
    for (uint32_t i = 0; i < d->rank; i++) n *= d->dims[i];
    return n * es;
}

/* one op: inputs -> out (APP_READ, desc od); returns status, output in `out` */
static int run_op(const char *op, const tin *in, int n_in, npl_accel_tensor_desc od, const npl_accel_param *p, int np,
                  void *out) {
    npl_accel_context *ctx;
    npl_accel_graph *g;
    CHECK_EQ_INT(api->context_create(be, NULL, NULL, 0, &ctx), NPL_ACCEL_OK);
    CHECK_EQ_INT(api->graph_create(ctx, op, &g), NPL_ACCEL_OK);
    npl_accel_tensor_id ids[8], oid;
    npl_accel_buffer bufs[8];
    int nb = 0, st = 0;
    for (int i = 0; i < n_in && !st; i++) {
        st = api->tensor_create(g, &in[i].d, &ids[i]);
        if (in[i].d.kind == NPL_ACCEL_APP_WRITE) bufs[nb++] = (npl_accel_buffer){in[i].d.name, (void *)in[i].data, nbytes(&in[i].d)};
        if (!st && in[i].d.kind == NPL_ACCEL_APP_READWRITE) {
            void *mem;
            uint64_t sz;
            CHECK_EQ_INT(api->context_tensor_data(ctx, in[i].d.name, &mem, &sz), NPL_ACCEL_OK);
            memcpy(mem, in[i].data, sz);
        }
    }
    od.kind = NPL_ACCEL_APP_READ;
    if (!st) st = api->tensor_create(g, &od, &oid);
    npl_accel_node_desc nd = {op, op, p, (uint32_t)np, ids, (uint32_t)n_in, &oid, 1};
    if (!st) st = api->graph_add_node(g, &nd);
    if (!st) st = api->graph_finalize(g);
    npl_accel_buffer ob = {od.name, out, nbytes(&od)};
    if (!st) st = api->graph_execute(g, bufs, (uint32_t)nb, &ob, 1);
    if (st) fprintf(stderr, "%s: %s\n", op, api->last_error(be));
    CHECK_EQ_INT(api->context_free(ctx), NPL_ACCEL_OK);
    return st;
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

static void test_layout_ops(void) {
    float x[24], y[24], z[40];
    for (int i = 0; i < 24; i++) x[i] = (float)i;
    /* Transpose [2,3,4] perm (2,0,1) -> [4,2,3] */
    int64_t perm[3] = {2, 0, 1};
    npl_accel_param pp = {.name = "perm", .type = NPL_ACCEL_PARAM_INTS, .count = 3, .ints = perm};
    tin a = {accel_desc("x", NPL_ACCEL_APP_WRITE, NPL_ACCEL_DT_F32, 3, 2, 3, 4), x};
    CHECK_EQ_INT(run_op("Transpose", &a, 1, accel_desc("y", 0, NPL_ACCEL_DT_F32, 3, 4, 2, 3), &pp, 1, y), NPL_ACCEL_OK);
    int bad = 0;
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 2; j++)
            for (int k = 0; k < 3; k++) bad += y[(i * 2 + j) * 3 + k] != x[(j * 3 + k) * 4 + i];
    CHECK_EQ_INT(bad, 0);
    /* Concat [2,3,4] and [2,2,4] along axis 1 (given as -2) */
    float x2[16];
    for (int i = 0; i < 16; i++) x2[i] = 100.0f + (float)i;
    npl_accel_param ax = PI("axis", -2);
    tin c[2] = {a, {accel_desc("x2", NPL_ACCEL_APP_WRITE, NPL_ACCEL_DT_F32, 3, 2, 2, 4), x2}};
    CHECK_EQ_INT(run_op("Concat", c, 2, accel_desc("y", 0, NPL_ACCEL_DT_F32, 3, 2, 5, 4), &ax, 1, z), NPL_ACCEL_OK);
    CHECK(z[0] == 0 && z[11] == 11 && z[12] == 100 && z[19] == 107 && z[20] == 12 && z[39] == 115);
    /* Reshape keeps the bytes */
    CHECK_EQ_INT(run_op("Reshape", &a, 1, accel_desc("y", 0, NPL_ACCEL_DT_F32, 2, 6, 4, 0), NULL, 0, y), NPL_ACCEL_OK);
    CHECK(!memcmp(x, y, sizeof x));
}

static void test_elementwise(void) {
    unsigned s = 7;
    float a[4 * 16], b[16], g[4 * 16], y[4 * 16];
    for (int i = 0; i < 64; i++) a[i] = 3 * accel_frand(&s), g[i] = 3 * accel_frand(&s);
    for (int i = 0; i < 16; i++) b[i] = accel_frand(&s);
    tin ta = {accel_desc("a", NPL_ACCEL_APP_WRITE, NPL_ACCEL_DT_F32, 2, 4, 16, 0), a};
    tin tb = {accel_desc("b", NPL_ACCEL_APP_WRITE, NPL_ACCEL_DT_F32, 1, 16, 0, 0), b};
    tin tg = {accel_desc("g", NPL_ACCEL_APP_WRITE, NPL_ACCEL_DT_F32, 2, 4, 16, 0), g};
    npl_accel_tensor_desc od = accel_desc("y", 0, NPL_ACCEL_DT_F32, 2, 4, 16, 0);
    tin mb[2] = {tb, ta}; /* the small one first: broadcast either way */
    CHECK_EQ_INT(run_op("Mul", mb, 2, od, NULL, 0, y), NPL_ACCEL_OK);
    double e = 0;
    for (int i = 0; i < 64; i++) e = fmax(e, fabs(y[i] - a[i] * b[i % 16]));
    CHECK_NEAR(e, 0, 1e-6);
    npl_accel_param sc = PF("scale", -0.5);
    CHECK_EQ_INT(run_op("Scale", &ta, 1, od, &sc, 1, y), NPL_ACCEL_OK);
    CHECK(y[5] == a[5] * -0.5f);
    CHECK_EQ_INT(run_op("Gelu", &ta, 1, od, NULL, 0, y), NPL_ACCEL_OK);
    e = 0;
    for (int i = 0; i < 64; i++) {
        double v = a[i];
        e = fmax(e, fabs(y[i] - 0.5 * v * (1 + tanh(sqrt(2 / M_PI) * (v + 0.044715 * v * v * v)))));
    }
    CHECK_NEAR(e, 0, 1e-5);
    tin gu[2] = {tg, ta};
    CHECK_EQ_INT(run_op("SwiGLU", gu, 2, od, NULL, 0, y), NPL_ACCEL_OK);
    e = 0;
    for (int i = 0; i < 64; i++) e = fmax(e, fabs(y[i] - g[i] / (1 + exp(-(double)g[i])) * a[i]));
    CHECK_NEAR(e, 0, 1e-5);
    CHECK_EQ_INT(run_op("GeGLU", gu, 2, od, NULL, 0, y), NPL_ACCEL_OK);
    e = 0;
    for (int i = 0; i < 64; i++) {
        double v = g[i];
        e = fmax(e, fabs(y[i] - 0.5 * v * (1 + tanh(sqrt(2 / M_PI) * (v + 0.044715 * v * v * v))) * a[i]));
    }
    CHECK_NEAR(e, 0, 1e-4);
    npl_accel_param beta = PF("beta", 0.5);
    CHECK_EQ_INT(run_op("Softmax", &ta, 1, od, &beta, 1, y), NPL_ACCEL_OK);
    e = 0;
    for (int r = 0; r < 4; r++) {
        double mx = -1e9, sum = 0;
        for (int i = 0; i < 16; i++) mx = fmax(mx, 0.5 * a[r * 16 + i]);
        for (int i = 0; i < 16; i++) sum += exp(0.5 * a[r * 16 + i] - mx);
        for (int i = 0; i < 16; i++) e = fmax(e, fabs(y[r * 16 + i] - exp(0.5 * a[r * 16 + i] - mx) / sum));
    }
    CHECK_NEAR(e, 0, 1e-6);
    CHECK_EQ_INT(run_op("RmsNorm", &ta, 1, od, NULL, 0, y), NPL_ACCEL_OK);
    e = 0;
    for (int r = 0; r < 4; r++) {
        double ss = 0;
        for (int i = 0; i < 16; i++) ss += (double)a[r * 16 + i] * a[r * 16 + i];
        for (int i = 0; i < 16; i++) e = fmax(e, fabs(y[r * 16 + i] - a[r * 16 + i] / sqrt(ss / 16 + 1e-6)));
    }
    CHECK_NEAR(e, 0, 1e-5);
    /* conversions: Cast to f16, bf16 and int8 (per-tensor scale 0.05, offset 3) */
    uint16_t h[64];
    CHECK_EQ_INT(run_op("Cast", &ta, 1, accel_desc("y", 0, NPL_ACCEL_DT_F16, 2, 4, 16, 0), NULL, 0, h), NPL_ACCEL_OK);
    CHECK(h[9] == npl_f32_to_f16(a[9]) && h[63] == npl_f32_to_f16(a[63]));
    CHECK_EQ_INT(run_op("Cast", &ta, 1, accel_desc("y", 0, NPL_ACCEL_DT_BF16, 2, 4, 16, 0), NULL, 0, h), NPL_ACCEL_OK);
    CHECK(h[9] == npl_f32_to_bf16(a[9]));
    float qs = 0.05f;
    int32_t qo = 3;
    npl_accel_tensor_desc qd = accel_desc("y", 0, NPL_ACCEL_DT_INT8, 2, 4, 16, 0);
    qd.quant = (npl_accel_quant){NPL_ACCEL_QUANT_PER_TENSOR, 0, 0, 1, &qs, &qo};
    int8_t q[64];
    CHECK_EQ_INT(run_op("Cast", &ta, 1, qd, NULL, 0, q), NPL_ACCEL_OK);
    int qbad = 0;
    for (int i = 0; i < 64; i++) qbad += q[i] != (int8_t)fminf(127, fmaxf(-128, nearbyintf(a[i] / qs - (float)qo)));
    CHECK_EQ_INT(qbad, 0);
    /* a quantized int8 input is read as (q + offset) * scale */
    tin tq = {qd, q};
    tq.d.name = "q", tq.d.kind = NPL_ACCEL_APP_WRITE;
    CHECK_EQ_INT(run_op("Scale", &tq, 1, od, &sc, 1, y), NPL_ACCEL_OK);
    CHECK(y[7] == ((float)q[7] + 3.0f) * 0.05f * -0.5f);
}

static void test_gather(void) {
    unsigned s = 3;
    float tab[8 * 64], y[3 * 64];
    for (int i = 0; i < 8 * 64; i++) tab[i] = accel_frand(&s);
    block_q8_0 q[8 * 2];
    npl_type_get(NPL_TYPE_Q8_0)->from_float(tab, q, 8 * 64);
    int32_t idx[3] = {7, 0, 3};
    for (int kind = 0; kind < 2; kind++) {
        tin in[2] = {{accel_desc("tab", NPL_ACCEL_STATIC, kind ? NPL_ACCEL_DT_Q8_0 : NPL_ACCEL_DT_F32, 2, 8, 64, 0), NULL},
                     {accel_desc("idx", NPL_ACCEL_APP_WRITE, NPL_ACCEL_DT_INT32, 1, 3, 0, 0), idx}};
        in[0].d.data = kind ? (const void *)q : (const void *)tab;
        in[0].d.data_size = kind ? sizeof q : sizeof tab;
        CHECK_EQ_INT(run_op("Gather", in, 2, accel_desc("y", 0, NPL_ACCEL_DT_F32, 2, 3, 64, 0), NULL, 0, y), NPL_ACCEL_OK);
        double e = 0;
        for (int r = 0; r < 3; r++)
            for (int i = 0; i < 64; i++) e = fmax(e, fabs(y[r * 64 + i] - tab[idx[r] * 64 + i]));
        CHECK_NEAR(e, 0, kind ? 0.01 : 0);
    }
}

static void test_rope(void) {
    enum { S = 3, H = 2, D = 8 };
    unsigned s = 11;
    float x[S * H * D], y[S * H * D];
    for (int i = 0; i < S * H * D; i++) x[i] = accel_frand(&s);
    int32_t pos[S] = {5, -1, 17};
    for (int neox = 0; neox < 2; neox++) {
        npl_accel_param p[4] = {PI("neox", neox), PF("base", 500.0), PF("freq_scale", 0.5), PI("n_rot", 6)};
        tin in[2] = {{accel_desc("x", NPL_ACCEL_APP_WRITE, NPL_ACCEL_DT_F32, 3, S, H, D), x},
                     {accel_desc("pos", NPL_ACCEL_APP_WRITE, NPL_ACCEL_DT_INT32, 1, S, 0, 0), pos}};
        CHECK_EQ_INT(run_op("Rope", in, 2, accel_desc("y", 0, NPL_ACCEL_DT_F32, 3, S, H, D), p, 4, y), NPL_ACCEL_OK);
        double e = 0;
        for (int t = 0; t < S; t++)
            for (int h = 0; h < H; h++) {
                const float *xi = x + (t * H + h) * D;
                const float *yi = y + (t * H + h) * D;
                double ref[D];
                for (int i = 0; i < D; i++) ref[i] = xi[i];
                for (int i = 0; pos[t] >= 0 && i < 3; i++) {
                    double th = pos[t] * 0.5 * pow(500.0, -2.0 * i / 6);
                    int a = neox ? i : 2 * i, b = neox ? i + 3 : 2 * i + 1;
                    ref[a] = xi[a] * cos(th) - xi[b] * sin(th);
                    ref[b] = xi[a] * sin(th) + xi[b] * cos(th);
                }
                for (int i = 0; i < D; i++) e = fmax(e, fabs(yi[i] - ref[i]));
            }
        CHECK_NEAR(e, 0, 1e-5);
    }
}

/* S queries at positions pos (-1 padding) over a cache of C rows that
 * already holds rows [0, 10); GQA 4 query heads on 2 kv heads */
static void test_attention(int window) {
    enum { S = 4, HQ = 4, HKV = 2, D = 16, C = 24 };
    unsigned s = 5 + (unsigned)window;
    static float q[S * HQ * D], k[S * HKV * D], v[S * HKV * D], y[S * HQ * D];
    static uint16_t kc[C * HKV * D], vc[C * HKV * D];
    int32_t pos[S] = {10, 11, -1, 12};
    for (int i = 0; i < S * HQ * D; i++) q[i] = accel_frand(&s);
    for (int i = 0; i < S * HKV * D; i++) k[i] = accel_frand(&s), v[i] = accel_frand(&s);
    memset(kc, 0, sizeof kc), memset(vc, 0, sizeof vc);
    for (int i = 0; i < 10 * HKV * D; i++) kc[i] = npl_f32_to_f16(accel_frand(&s)), vc[i] = npl_f32_to_f16(accel_frand(&s));
    npl_accel_param p[2] = {PI("window", window), PF("scale", 0.3)};
    tin in[6] = {{accel_desc("q", NPL_ACCEL_APP_WRITE, NPL_ACCEL_DT_F32, 3, S, HQ, D), q},
                 {accel_desc("k", NPL_ACCEL_APP_WRITE, NPL_ACCEL_DT_F32, 3, S, HKV, D), k},
                 {accel_desc("v", NPL_ACCEL_APP_WRITE, NPL_ACCEL_DT_F32, 3, S, HKV, D), v},
                 {accel_desc("kc", NPL_ACCEL_APP_READWRITE, NPL_ACCEL_DT_F16, 3, C, HKV, D), kc},
                 {accel_desc("vc", NPL_ACCEL_APP_READWRITE, NPL_ACCEL_DT_F16, 3, C, HKV, D), vc},
                 {accel_desc("pos", NPL_ACCEL_APP_WRITE, NPL_ACCEL_DT_INT32, 1, S, 0, 0), pos}};
    CHECK_EQ_INT(run_op("Attention", in, 6, accel_desc("y", 0, NPL_ACCEL_DT_F32, 3, S, HQ, D), p, 2, y), NPL_ACCEL_OK);
    /* reference: the cache after this chunk's rows are written (in f16) */
    for (int t = 0; t < S; t++)
        for (int i = 0; pos[t] >= 0 && i < HKV * D; i++) {
            kc[pos[t] * HKV * D + i] = npl_f32_to_f16(k[t * HKV * D + i]);
            vc[pos[t] * HKV * D + i] = npl_f32_to_f16(v[t * HKV * D + i]);
        }
    double e = 0;
    for (int t = 0; t < S; t++)
        for (int h = 0; h < HQ; h++) {
            const int kh = h / (HQ / HKV);
            double sc[C], mx = -1e30, sum = 0, o[D] = {0};
            int lo = window > 0 ? pos[t] - window + 1 : 0;
            if (lo < 0) lo = 0;
            for (int j = lo; pos[t] >= 0 && j <= pos[t]; j++) {
                double d = 0;
                for (int i = 0; i < D; i++) d += q[(t * HQ + h) * D + i] * npl_f16_to_f32(kc[(j * HKV + kh) * D + i]);
                sc[j] = 0.3 * d;
                mx = fmax(mx, sc[j]);
            }
            for (int j = lo; pos[t] >= 0 && j <= pos[t]; j++) {
                double w = exp(sc[j] - mx);
                sum += w;
                for (int i = 0; i < D; i++) o[i] += w * npl_f16_to_f32(vc[(j * HKV + kh) * D + i]);
            }
            for (int i = 0; i < D; i++) e = fmax(e, fabs(y[(t * HQ + h) * D + i] - (pos[t] >= 0 ? o[i] / sum : 0.0)));
        }
    printf("  attention window %d: max error %.2e\n", window, e);
    CHECK_NEAR(e, 0, 2e-5);
}

int main(void) {
    api = npl_vnpu_get_api(NPL_ACCEL_ABI_VERSION);
    const char *fams[2] = {"generic", "auto"};
    for (int f = 0; f < 2; f++) {
        char err[256];
        npl_accel_option o = {"kernel_family", fams[f]};
        CHECK_EQ_INT(api->backend_create(&o, 1, &be, err, sizeof err), NPL_ACCEL_OK);
        printf("kernel family %s\n", fams[f]);
        test_layout_ops();
        test_elementwise();
        test_gather();
        test_rope();
        test_attention(0);
        test_attention(2);
        api->backend_free(be);
    }
    TEST_MAIN_END();
}
