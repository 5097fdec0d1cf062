/* vnpu's dynamic int16 activations (NPL_ACCEL_QUANT_DYNAMIC: symmetric, a
 * scale per block of consecutive elements computed when the tensor is
 * written). Against double-precision references, on the generic and the
 * best kernel family with 1 and 2 threads:
 *  - round trip f32 -> int16 -> f32 through Casts (row groups) and through
 *    a Gather big enough for the chunked parallel conversion: every element
 *    within half a step (max |block| / 65534) of its value, each block's
 *    largest element exact to float rounding, zero blocks, outlier
 *    channels, tiny values;
 *  - a Reshape [S, 1024] -> [S, 4, 256] carries the values and the scales
 *    (RmsNorm per head after it against the double reference);
 *  - MatMul (f32 weights, and q8_0 blocks at prefill size, 96 and 320
 *    columns: the fused GGML path's column strips) with int16 input and
 *    output: within the int16 steps of the double reference;
 *  - a context binary with int16 tensors loads and gives the same bits; a
 *    damaged block size in its tensor record (checksum resealed) is
 *    rejected as corrupt;
 *  - bad descriptions fail with one clear message (dtype, block size,
 *    kind, scales given, Transpose / Concat / a Reshape changing blocks). */
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

static npl_accel_tensor_desc dyn(const char *name, uint32_t rank, uint32_t d0, uint32_t d1, uint32_t d2, uint32_t blk) {
    npl_accel_tensor_desc d = accel_desc(name, NPL_ACCEL_NATIVE, NPL_ACCEL_DT_INT16, rank, d0, d1, d2);
    d.quant.encoding = NPL_ACCEL_QUANT_DYNAMIC;
    d.quant.block_size = blk;
    return d;
}

static npl_accel_tensor_id mk(npl_accel_graph *g, npl_accel_tensor_desc d) {
    npl_accel_tensor_id id = 0;
    npl_accel_status st = api->tensor_create(g, &d, &id);
    CHECK_EQ_INT(st, NPL_ACCEL_OK);
    if (st) fprintf(stderr, "tensor %s: %s\n", d.name, api->last_error(be));
    return id;
}

static npl_accel_status node(npl_accel_graph *g, const char *op, const npl_accel_param *p, uint32_t np,
                             const npl_accel_tensor_id *in, uint32_t n_in, npl_accel_tensor_id out) {
    npl_accel_node_desc d = {op, op, p, np, in, n_in, &out, 1};
    return api->graph_add_node(g, &d);
}

static npl_accel_param PI(const char *n, int64_t v) {
    npl_accel_param p;
    memset(&p, 0, sizeof p);
    p.name = n, p.type = NPL_ACCEL_PARAM_INT, p.i = v;
    return p;
}

/* Max over the elements of |y - x| / (half step of x's block), the step
 * computed in double from x (the bound also allows the float rounding of
 * q * scale); exact_max: every block's largest |x| came back within 2 ulp. */
static double step_error(const float *x, const float *y, int64_t n, int blk, int *exact_max) {
    double worst = 0;
    *exact_max = 1;
    for (int64_t b = 0; b < n; b += blk) {
        double amax = 0;
        int64_t at = b;
        for (int i = 0; i < blk; i++)
            if (fabs(x[b + i]) > amax) amax = fabs(x[b + i]), at = b + i;
        const double half = amax / 65534.0;
        for (int i = 0; i < blk; i++) {
            const double d = fabs((double)y[b + i] - x[b + i]);
            const double e = half > 0 ? d / (half + fabs(x[b + i]) * 2.4e-7) : (d > 0 ? 1e9 : 0);
            if (e > worst) worst = e;
        }
        if (fabs((double)y[at] - x[at]) > amax * 2.4e-7) *exact_max = 0;
    }
    return worst;
}

/* x: ordinary values, two outlier channels, a zero block, a tiny block */
static void fill(float *x, int rows, int w, unsigned seed) {
    for (int r = 0; r < rows; r++)
        for (int c = 0; c < w; c++) {
            float v = accel_frand(&seed);
            if (c == 7 || c == w - 3) v *= 900.0f;
            if (r == 2 && c < 64) v = 0.0f;
            if (r == 3 && c >= 64 && c < 128) v *= 1e-30f;
            x[r * w + c] = v;
        }
}

/* ---- round trips ---- */

static void test_roundtrip(void) {
    enum { S = 37, W = 640, V = 300 };
    static float x[S * W], y[S * W], tab[V * W], yg[V * W];
    static int32_t ids[V];
    fill(x, S, W, 5);
    fill(tab, V, W, 7);
    const int blocks[3] = {32, 128, 64};
    for (int bi = 0; bi < 3; bi++) {
        const int blk = blocks[bi];
        npl_accel_context *ctx;
        npl_accel_graph *g;
        CHECK_EQ_INT(api->context_create(be, NULL, NULL, 0, &ctx), NPL_ACCEL_OK);
        CHECK_EQ_INT(api->graph_create(ctx, "rt", &g), NPL_ACCEL_OK);
        npl_accel_tensor_desc dt = accel_desc("tab", NPL_ACCEL_STATIC, NPL_ACCEL_DT_F32, 2, V, W, 0);
        dt.data = tab, dt.data_size = sizeof tab;
        npl_accel_tensor_id tx = mk(g, accel_desc("x", NPL_ACCEL_APP_WRITE, NPL_ACCEL_DT_F32, 2, S, W, 0));
        npl_accel_tensor_id tq = mk(g, dyn("q", 2, S, W, 0, (uint32_t)blk));
        npl_accel_tensor_id ty = mk(g, accel_desc("y", NPL_ACCEL_APP_READ, NPL_ACCEL_DT_F32, 2, S, W, 0));
        npl_accel_tensor_id tt = mk(g, dt);
        npl_accel_tensor_id ti = mk(g, accel_desc("ids", NPL_ACCEL_APP_WRITE, NPL_ACCEL_DT_INT32, 1, V, 0, 0));
        npl_accel_tensor_id tg = mk(g, dyn("gq", 2, V, W, 0, (uint32_t)blk));
        npl_accel_tensor_id tgy = mk(g, accel_desc("gy", NPL_ACCEL_APP_READ, NPL_ACCEL_DT_F32, 2, V, W, 0));
        CHECK_EQ_INT(node(g, "Cast", NULL, 0, &tx, 1, tq), NPL_ACCEL_OK);
        CHECK_EQ_INT(node(g, "Cast", NULL, 0, &tq, 1, ty), NPL_ACCEL_OK);
        npl_accel_tensor_id gin[2] = {tt, ti};
        CHECK_EQ_INT(node(g, "Gather", NULL, 0, gin, 2, tg), NPL_ACCEL_OK);
        CHECK_EQ_INT(node(g, "Cast", NULL, 0, &tg, 1, tgy), NPL_ACCEL_OK);
        CHECK_EQ_INT(api->graph_finalize(g), NPL_ACCEL_OK);
        for (int i = 0; i < V; i++) ids[i] = (i * 37 + 11) % V;
        npl_accel_buffer in[2] = {{"x", x, sizeof x}, {"ids", ids, sizeof ids}};
        npl_accel_buffer out[2] = {{"y", y, sizeof y}, {"gy", yg, sizeof yg}};
        CHECK_EQ_INT(api->graph_execute(g, in, 2, out, 2), NPL_ACCEL_OK);
        int exact = 0, exact_g = 0;
        const double e = step_error(x, y, S * W, blk, &exact);
        static float gref[V * W];
        for (int i = 0; i < V; i++) memcpy(gref + i * W, tab + ids[i] * W, W * sizeof(float));
        const double eg = step_error(gref, yg, V * W, blk, &exact_g);
        printf("  block %4d: Cast round trip max error %.3f half-steps, Gather (%d elements) %.3f; block maxima %s\n",
               blk, e, V * W, eg, exact && exact_g ? "exact" : "NOT exact");
        CHECK(e <= 1.0 && eg <= 1.0);
        CHECK(exact && exact_g);
        CHECK(y[2 * W + 5] == 0.0f); /* a zero block stays zero */
        if (blk <= 64) /* a block of tiny values keeps its relative precision */
            CHECK(fabsf(y[3 * W + 70] - x[3 * W + 70]) <= fabsf(x[3 * W + 70]) * 1e-3f);
        CHECK_EQ_INT(api->context_free(ctx), NPL_ACCEL_OK);
    }
}

/* ---- Reshape + RmsNorm per head ---- */

static void test_reshape(void) {
    enum { S = 20, H = 4, D = 256, W = H * D };
    static float x[S * W], y[S * W], gam[D];
    unsigned s = 3;
    fill(x, S, W, 11);
    for (int i = 0; i < D; i++) gam[i] = 1.0f + 0.3f * accel_frand(&s);
    npl_accel_context *ctx;
    npl_accel_graph *g;
    CHECK_EQ_INT(api->context_create(be, NULL, NULL, 0, &ctx), NPL_ACCEL_OK);
    CHECK_EQ_INT(api->graph_create(ctx, "rs", &g), NPL_ACCEL_OK);
    npl_accel_tensor_desc dgm = accel_desc("gamma", NPL_ACCEL_STATIC, NPL_ACCEL_DT_F32, 1, D, 0, 0);
    dgm.data = gam, dgm.data_size = sizeof gam;
    npl_accel_tensor_id tx = mk(g, accel_desc("x", NPL_ACCEL_APP_WRITE, NPL_ACCEL_DT_F32, 2, S, W, 0));
    npl_accel_tensor_id tq = mk(g, dyn("q", 2, S, W, 0, 256));
    npl_accel_tensor_id tr = mk(g, dyn("r", 3, S, H, D, 256));
    npl_accel_tensor_id tgm = mk(g, dgm);
    npl_accel_tensor_id ty = mk(g, accel_desc("y", NPL_ACCEL_APP_READ, NPL_ACCEL_DT_F32, 3, S, H, D));
    CHECK_EQ_INT(node(g, "Cast", NULL, 0, &tx, 1, tq), NPL_ACCEL_OK);
    CHECK_EQ_INT(node(g, "Reshape", NULL, 0, &tq, 1, tr), NPL_ACCEL_OK);
    npl_accel_tensor_id nin[2] = {tr, tgm};
    CHECK_EQ_INT(node(g, "RmsNorm", NULL, 0, nin, 2, ty), NPL_ACCEL_OK);
    CHECK_EQ_INT(api->graph_finalize(g), NPL_ACCEL_OK);
    npl_accel_buffer bi = {"x", x, sizeof x}, bo = {"y", y, sizeof y};
    CHECK_EQ_INT(api->graph_execute(g, &bi, 1, &bo, 1), NPL_ACCEL_OK);
    double worst = 0;
    for (int r = 0; r < S * H; r++) {
        const float *xr = x + r * D;
        double ss = 0, amax = 0;
        for (int i = 0; i < D; i++) ss += (double)xr[i] * xr[i], amax = fmax(amax, fabs(xr[i]));
        const double sc = 1 / sqrt(ss / D + 1e-6);
        for (int i = 0; i < D; i++) { /* one half-step of x, scaled by the norm and gamma, plus f32 rounding */
            const double ref = xr[i] * sc * gam[i];
            const double tol = (amax / 65534.0) * sc * fabs(gam[i]) * 1.01 + fabs(ref) * 1e-5 + 1e-30;
            worst = fmax(worst, fabs(y[r * D + i] - ref) / tol);
        }
    }
    printf("  Reshape [S, 1024] -> [S, 4, 256] + RmsNorm: max error %.3f of the bound\n", worst);
    CHECK(worst <= 1.0);
    CHECK_EQ_INT(api->context_free(ctx), NPL_ACCEL_OK);
}

/* ---- MatMul with int16 in and out ---- */

static void test_matmul(int q8, int m, int N) {
    enum { K = 256 };
    float *x = malloc(sizeof(float) * (size_t)m * K), *y = malloc(sizeof(float) * (size_t)m * N);
    float *w = malloc(sizeof(float) * N * K), *wd = malloc(sizeof(float) * N * K);
    double *ref = malloc(sizeof(double) * (size_t)m * N);
    block_q8_0 *wq = malloc(sizeof(block_q8_0) * N * K / 32);
    unsigned s = 17;
    fill(x, m, K, 23);
    for (int i = 0; i < N * K; i++) w[i] = 0.05f * accel_frand(&s);
    npl_type_get(NPL_TYPE_Q8_0)->from_float(w, wq, N * K);
    npl_type_get(NPL_TYPE_Q8_0)->to_float(wq, wd, N * K);
    npl_accel_context *ctx;
    npl_accel_graph *g;
    CHECK_EQ_INT(api->context_create(be, NULL, NULL, 0, &ctx), NPL_ACCEL_OK);
    CHECK_EQ_INT(api->graph_create(ctx, "mm", &g), NPL_ACCEL_OK);
    npl_accel_tensor_desc dw = accel_desc("w", NPL_ACCEL_STATIC, q8 ? NPL_ACCEL_DT_Q8_0 : NPL_ACCEL_DT_F32, 2, N, K, 0);
    dw.data = q8 ? (void *)wq : (void *)w;
    dw.data_size = q8 ? sizeof(block_q8_0) * N * K / 32 : sizeof(float) * N * K;
    npl_accel_tensor_id tx = mk(g, accel_desc("x", NPL_ACCEL_APP_WRITE, NPL_ACCEL_DT_F32, 2, (uint32_t)m, K, 0));
    npl_accel_tensor_id tq = mk(g, dyn("xq", 2, (uint32_t)m, K, 0, 128));
    npl_accel_tensor_id tw = mk(g, dw);
    npl_accel_tensor_id tyq = mk(g, dyn("yq", 2, (uint32_t)m, N, 0, 32));
    npl_accel_tensor_id ty = mk(g, accel_desc("y", NPL_ACCEL_APP_READ, NPL_ACCEL_DT_F32, 2, (uint32_t)m, N, 0));
    npl_accel_param tr = PI("transpose_in1", 1);
    npl_accel_tensor_id min_[2] = {tq, tw};
    CHECK_EQ_INT(node(g, "Cast", NULL, 0, &tx, 1, tq), NPL_ACCEL_OK);
    CHECK_EQ_INT(node(g, "MatMul", &tr, 1, min_, 2, tyq), NPL_ACCEL_OK);
    CHECK_EQ_INT(node(g, "Cast", NULL, 0, &tyq, 1, ty), NPL_ACCEL_OK);
    CHECK_EQ_INT(api->graph_finalize(g), NPL_ACCEL_OK);
    npl_accel_buffer bi = {"x", x, sizeof(float) * (size_t)m * K}, bo = {"y", y, sizeof(float) * (size_t)m * N};
    CHECK_EQ_INT(api->graph_execute(g, &bi, 1, &bo, 1), NPL_ACCEL_OK);
    /* bound: the input's half-step (max |x block| / 65534) and, with q8_0,
     * the activations' int8 rounding (half a step of max |32 x| / 127) times
     * |w|, plus the output's half-step */
    double worst = 0;
    for (int r = 0; r < m; r++) {
        double in_err = 0;
        for (int b = 0; b < K; b += (q8 ? 32 : 128)) {
            double a16 = 0, a8 = 0;
            for (int i = 0; i < 128; i++) a16 = fmax(a16, fabs(x[r * K + (b / 128) * 128 + i]));
            for (int i = 0; q8 && i < 32; i++) a8 = fmax(a8, fabs(x[r * K + b + i]));
            in_err = fmax(in_err, a16 / 65534.0 + (q8 ? a8 / 254.0 * 1.01 : 0));
        }
        for (int c = 0; c < N; c++) {
            double v = 0;
            for (int k = 0; k < K; k++) v += (double)x[r * K + k] * (q8 ? wd : w)[c * K + k];
            ref[r * N + c] = v;
        }
        for (int b = 0; b < N; b += 32) {
            double amax = 0;
            for (int c = 0; c < 32; c++) amax = fmax(amax, fabs(ref[r * N + b + c]));
            for (int c = 0; c < 32; c++) {
                double wsum = 0;
                for (int k = 0; k < K; k++) wsum += fabs((q8 ? wd : w)[(b + c) * K + k]);
                const double tol = in_err * wsum + amax / 65534.0 * 1.01 + 1e-4 * fabs(ref[r * N + b + c]) + 1e-6;
                worst = fmax(worst, fabs(y[r * N + b + c] - ref[r * N + b + c]) / tol);
            }
        }
    }
    printf("  MatMul int16 -> %s -> int16, %d rows, %d columns: max error %.3f of the bound\n", q8 ? "q8_0" : "f32", m,
           N, worst);
    CHECK(worst <= 1.0);
    CHECK_EQ_INT(api->context_free(ctx), NPL_ACCEL_OK);
    free(x), free(y), free(w), free(wd), free(ref), free(wq);
}

/* ---- context binaries ---- */

static void test_binary(void) {
    enum { S = 9, W = 512 };
    static float x[S * W], y0[S * W], y1[S * W];
    fill(x, S, W, 31);
    npl_accel_context *ctx, *lc = NULL;
    npl_accel_graph *g, *lg;
    CHECK_EQ_INT(api->context_create(be, NULL, NULL, 0, &ctx), NPL_ACCEL_OK);
    CHECK_EQ_INT(api->graph_create(ctx, "bin", &g), NPL_ACCEL_OK);
    npl_accel_tensor_id tx = mk(g, accel_desc("x", NPL_ACCEL_APP_WRITE, NPL_ACCEL_DT_F32, 2, S, W, 0));
    npl_accel_tensor_id tq = mk(g, dyn("the_int16_tensor", 2, S, W, 0, 512));
    npl_accel_tensor_id ty = mk(g, accel_desc("y", NPL_ACCEL_APP_READ, NPL_ACCEL_DT_F32, 2, S, W, 0));
    CHECK_EQ_INT(node(g, "Scale", NULL, 0, &tx, 1, tq), NPL_ACCEL_OK);
    CHECK_EQ_INT(node(g, "Silu", NULL, 0, &tq, 1, ty), NPL_ACCEL_OK);
    CHECK_EQ_INT(api->graph_finalize(g), NPL_ACCEL_OK);
    npl_accel_buffer bi = {"x", x, sizeof x}, bo0 = {"y", y0, sizeof y0}, bo1 = {"y", y1, sizeof y1};
    CHECK_EQ_INT(api->graph_execute(g, &bi, 1, &bo0, 1), NPL_ACCEL_OK);
    uint64_t size = 0;
    CHECK_EQ_INT(api->context_get_binary_size(ctx, &size), NPL_ACCEL_OK);
    uint8_t *b = malloc(size);
    CHECK_EQ_INT(api->context_get_binary(ctx, b, size, &size), NPL_ACCEL_OK);
    CHECK_EQ_INT(api->context_create_from_binary(be, NULL, NULL, 0, b, size, &lc), NPL_ACCEL_OK);
    if (lc) {
        CHECK_EQ_INT(api->graph_retrieve(lc, "bin", &lg), NPL_ACCEL_OK);
        CHECK_EQ_INT(api->graph_execute(lg, &bi, 1, &bo1, 1), NPL_ACCEL_OK);
        CHECK(!memcmp(y0, y1, sizeof y0));
        api->context_free(lc);
    }
    int ok = 1; /* against the reference: silu of x through the int16 step */
    for (int i = 0; i < S * W; i++) {
        const double v = x[i], r = v / (1 + exp(-v));
        ok &= fabs(y0[i] - r) <= 910.0 / 65534.0 * 1.1 + 1e-5 * fabs(r);
    }
    CHECK(ok);
    /* the record's block size, damaged: 512 -> 48 (checksum resealed) */
    const char *nm = "the_int16_tensor";
    uint8_t *p = NULL;
    for (uint64_t i = 0; i + strlen(nm) < size && !p; i++)
        if (!memcmp(b + i, nm, strlen(nm))) p = b + i + strlen(nm);
    CHECK(p != NULL);
    if (p) { /* name, then kind, dtype, rank, 6 dims, graph, encoding, axis, block */
        uint32_t v;
        memcpy(&v, p + 40, 4);
        CHECK_EQ_INT(v, NPL_ACCEL_QUANT_DYNAMIC);
        memcpy(&v, p + 48, 4);
        CHECK_EQ_INT(v, 512);
        v = 48;
        memcpy(p + 48, &v, 4);
        accel_reseal(b, size);
        lc = NULL;
        CHECK_EQ_INT(api->context_create_from_binary(be, NULL, NULL, 0, b, size, &lc), NPL_ACCEL_ERR_BINARY_CORRUPT);
        printf("  damaged int16 block size: %s\n", api->last_error(be));
        CHECK(lc == NULL);
    }
    free(b);
    CHECK_EQ_INT(api->context_free(ctx), NPL_ACCEL_OK);
}

/* ---- bad descriptions ---- */

static void test_errors(void) {
    npl_accel_context *ctx;
    npl_accel_graph *g;
    npl_accel_tensor_id id;
    CHECK_EQ_INT(api->context_create(be, NULL, NULL, 0, &ctx), NPL_ACCEL_OK);
    CHECK_EQ_INT(api->graph_create(ctx, "bad", &g), NPL_ACCEL_OK);
    struct {
        npl_accel_tensor_desc d;
        npl_accel_status want;
        const char *msg;
    } cases[6];
    float one = 1.0f;
    cases[0].d = dyn("f16dyn", 2, 4, 64, 0, 32), cases[0].d.dtype = NPL_ACCEL_DT_F16;
    cases[0].want = NPL_ACCEL_ERR_TYPE_MISMATCH, cases[0].msg = "int16";
    cases[1].d = dyn("blk48", 2, 4, 96, 0, 48), cases[1].want = NPL_ACCEL_ERR_INVALID_ARG, cases[1].msg = "block_size 48";
    cases[2].d = dyn("blk2048", 2, 4, 2048, 0, 2048), cases[2].want = NPL_ACCEL_ERR_INVALID_ARG, cases[2].msg = "power";
    cases[3].d = dyn("notdiv", 2, 4, 96, 0, 64), cases[3].want = NPL_ACCEL_ERR_INVALID_ARG, cases[3].msg = "dividing";
    cases[4].d = dyn("input", 2, 4, 64, 0, 32), cases[4].d.kind = NPL_ACCEL_APP_WRITE;
    cases[4].want = NPL_ACCEL_ERR_INVALID_ARG, cases[4].msg = "NATIVE";
    cases[5].d = dyn("scaled", 2, 4, 64, 0, 32), cases[5].d.quant.n_scales = 1, cases[5].d.quant.scales = &one;
    cases[5].want = NPL_ACCEL_ERR_INVALID_ARG, cases[5].msg = "no scales";
    for (int i = 0; i < 6; i++) {
        CHECK_EQ_INT(api->tensor_create(g, &cases[i].d, &id), cases[i].want);
        const char *e = api->last_error(be);
        CHECK(strstr(e, cases[i].d.name) != NULL && strstr(e, cases[i].msg) != NULL && !strchr(e, '\n'));
        printf("  %s\n", e);
    }
    /* ops that move elements without their scales, and a Reshape to another block */
    npl_accel_tensor_id a = mk(g, dyn("a", 2, 4, 64, 0, 64)), c = mk(g, dyn("c", 2, 8, 64, 0, 64));
    npl_accel_tensor_id a2 = mk(g, dyn("a2", 2, 32, 64, 0, 32)), a2t = mk(g, dyn("a2t", 2, 64, 32, 0, 32));
    npl_accel_tensor_id r = mk(g, dyn("r", 2, 8, 32, 0, 32));
    npl_accel_tensor_id cin[2] = {a, a};
    CHECK_EQ_INT(node(g, "Concat", NULL, 0, cin, 2, c), NPL_ACCEL_ERR_TYPE_MISMATCH);
    printf("  %s\n", api->last_error(be));
    CHECK(strstr(api->last_error(be), "dynamic") != NULL);
    npl_accel_param perm;
    memset(&perm, 0, sizeof perm);
    int64_t pv[2] = {1, 0};
    perm.name = "perm", perm.type = NPL_ACCEL_PARAM_INTS, perm.ints = pv, perm.count = 2;
    CHECK_EQ_INT(node(g, "Transpose", &perm, 1, &a2, 1, a2t), NPL_ACCEL_ERR_TYPE_MISMATCH);
    printf("  %s\n", api->last_error(be));
    CHECK(strstr(api->last_error(be), "dynamic") != NULL);
    CHECK_EQ_INT(node(g, "Reshape", NULL, 0, &a, 1, r), NPL_ACCEL_ERR_TYPE_MISMATCH); /* block 64 -> 32 */
    printf("  %s\n", api->last_error(be));
    CHECK(strstr(api->last_error(be), "quant block") != NULL);
    CHECK_EQ_INT(api->context_free(ctx), NPL_ACCEL_OK);
}

int main(void) {
    api = npl_vnpu_get_api(NPL_ACCEL_ABI_VERSION);
    const char *fams[2] = {"generic", "auto"}, *threads[2] = {"1", "2"};
    for (int f = 0; f < 2; f++)
        for (int th = 0; th < 2; th++) {
            char err[256];
            npl_accel_option o[2] = {{"kernel_family", fams[f]}, {"threads", threads[th]}};
            CHECK_EQ_INT(api->backend_create(o, 2, &be, err, sizeof err), NPL_ACCEL_OK);
            printf("kernel family %s, %s thread(s)\n", fams[f], threads[th]);
            test_roundtrip();
            test_reshape();
            test_matmul(0, 45, 96);
            test_matmul(1, 128, 96);
            test_matmul(1, 128, 320); /* the fused GGML path: output strips of 32 columns */
            test_binary();
            if (f == 0 && th == 0) test_errors();
            api->backend_free(be);
        }
    TEST_MAIN_END();
}
