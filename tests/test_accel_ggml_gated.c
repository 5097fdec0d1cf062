/* vnpu's gate+up pack over GGML blocks (MatMul, MatMul, SwiGLU fused into
 * one MatMulGated step whose two parts land in columns of one strided
 * output): for 1, 3 (the kernel library's matmul per part, into the strided
 * output) and 17, 40 rows (the fused GEMM path where the ISA has a GEMM for
 * the type), on the generic and the best kernel family with 2 threads, the
 * output equals bit for bit the kernel library's matmul of each weight alone
 * into a dense [m, F] buffer followed by the same SwiGLU kernel; and it is
 * within 1% of the largest output of a double-precision product with the
 * dequantized blocks. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "accel/vnpu/vnpu_api.h"
#include "accel_test_util.h"
#include "check.h"
#include "kernels/dtype.h"
#include "kernels/matmul.h"
#include "kernels/nn_kernels.h"
#include "npullm_accel.h"

enum { K = 512, F = 40, MMAX = 40 };

static const npl_accel_api *api;

/* the reference: each weight alone through the kernel library, then SwiGLU */
static void reference(npl_isa isa, npl_type t, const void *wg, const void *wu, const float *x, int m, float *y) {
    static float g[MMAX * F], u[MMAX * F];
    npl_pool *pool = npl_pool_new(2);
    void *scratch = malloc(npl_matmul_kernel_scratch(t, K, m) + 64);
    char err[128];
    npl_matmul_kernel_args a = {.wtype = t, .w = wg, .x = x, .y = g, .k = K, .n = F, .m = m, .ldx = K, .ldy = F};
    CHECK_EQ_INT(npl_matmul_kernel(isa, pool, &a, scratch, err, sizeof err), 0);
    a.w = wu, a.y = u;
    CHECK_EQ_INT(npl_matmul_kernel(isa, pool, &a, scratch, err, sizeof err), 0);
    const npl_nn_kernels *nn = npl_nn_kernels_get(isa);
    for (int r = 0; r < m; r++) nn->swiglu(g + r * F, u + r * F, y + r * F, F);
    free(scratch);
    npl_pool_free(pool);
}

static void run(npl_accel_backend *be, npl_isa isa, uint32_t dt, npl_type t, int m, unsigned seed) {
    static float x[MMAX * K], wf[F * K], y[MMAX * F], want[MMAX * F];
    const npl_type_traits *tr = npl_type_get(t);
    const size_t wbytes = (size_t)F * (K / tr->block_size) * tr->type_size;
    void *wg = malloc(wbytes), *wu = malloc(wbytes);
    unsigned s = seed;
    for (int i = 0; i < m * K; i++) x[i] = accel_frand(&s);
    for (int i = 0; i < F * K; i++) wf[i] = 0.3f * accel_frand(&s);
    tr->from_float(wf, wg, (int64_t)F * K);
    for (int i = 0; i < F * K; i++) wf[i] = 0.3f * accel_frand(&s);
    tr->from_float(wf, wu, (int64_t)F * K);

    npl_accel_context *ctx;
    npl_accel_graph *g;
    CHECK_EQ_INT(api->context_create(be, NULL, NULL, 0, &ctx), NPL_ACCEL_OK);
    CHECK_EQ_INT(api->graph_create(ctx, "ffn", &g), NPL_ACCEL_OK);
    npl_accel_tensor_desc d[6] = {accel_desc("x", NPL_ACCEL_APP_WRITE, NPL_ACCEL_DT_F32, 2, (uint32_t)m, K, 0),
                                  accel_desc("wg", NPL_ACCEL_STATIC, dt, 2, F, K, 0),
                                  accel_desc("wu", NPL_ACCEL_STATIC, dt, 2, F, K, 0),
                                  accel_desc("g", NPL_ACCEL_NATIVE, NPL_ACCEL_DT_F32, 2, (uint32_t)m, F, 0),
                                  accel_desc("u", NPL_ACCEL_NATIVE, NPL_ACCEL_DT_F32, 2, (uint32_t)m, F, 0),
                                  accel_desc("y", NPL_ACCEL_APP_READ, NPL_ACCEL_DT_F32, 2, (uint32_t)m, F, 0)};
    d[1].data = wg, d[1].data_size = wbytes;
    d[2].data = wu, d[2].data_size = wbytes;
    npl_accel_tensor_id id[6];
    for (int i = 0; i < 6; i++) CHECK_EQ_INT(api->tensor_create(g, &d[i], &id[i]), NPL_ACCEL_OK);
    npl_accel_param tp;
    memset(&tp, 0, sizeof tp);
    tp.name = "transpose_in1", tp.type = NPL_ACCEL_PARAM_INT, tp.i = 1;
    npl_accel_tensor_id in_g[2] = {id[0], id[1]}, in_u[2] = {id[0], id[2]}, in_a[2] = {id[3], id[4]};
    npl_accel_node_desc n[3] = {{"mg", "MatMul", &tp, 1, in_g, 2, &id[3], 1},
                                {"mu", "MatMul", &tp, 1, in_u, 2, &id[4], 1},
                                {"act", "SwiGLU", NULL, 0, in_a, 2, &id[5], 1}};
    for (int i = 0; i < 3; i++) CHECK_EQ_INT(api->graph_add_node(g, &n[i]), NPL_ACCEL_OK);
    CHECK_EQ_INT(api->graph_finalize(g), NPL_ACCEL_OK);
    memset(y, 0xff, sizeof y);
    npl_accel_buffer bi = {"x", x, sizeof(float) * (size_t)m * K}, bo = {"y", y, sizeof(float) * (size_t)m * F};
    CHECK_EQ_INT(api->graph_execute(g, &bi, 1, &bo, 1), NPL_ACCEL_OK);
    CHECK_EQ_INT(api->context_free(ctx), NPL_ACCEL_OK);

    reference(isa, t, wg, wu, x, m, want);
    int diff = 0;
    for (int i = 0; i < m * F; i++) diff += memcmp(&y[i], &want[i], 4) != 0;
    /* and the values themselves: double products with the dequantized blocks */
    /* error against the largest output: activations rounded to Q8_0 / Q8_K leave under 1% */
    double e = 0, vmax = 0;
    static float gd[F * K], ud[F * K];
    for (int c = 0; c < F; c++) {
        tr->to_float((const char *)wg + (size_t)c * (wbytes / F), gd + c * K, K);
        tr->to_float((const char *)wu + (size_t)c * (wbytes / F), ud + c * K, K);
    }
    for (int r = 0; r < m; r++)
        for (int c = 0; c < F; c++) {
            double gv = 0, uv = 0;
            for (int k = 0; k < K; k++) gv += (double)x[r * K + k] * gd[c * K + k], uv += (double)x[r * K + k] * ud[c * K + k];
            const double v = gv / (1 + exp(-gv)) * uv;
            e = fmax(e, fabs(y[r * F + c] - v)), vmax = fmax(vmax, fabs(v));
        }
    e /= vmax;
    printf("  %s m=%2d: %d of %d outputs differ from the kernel library's; max error vs double %.2e of the largest\n", tr->name, m,
           diff, m * F, e);
    CHECK_EQ_INT(diff, 0);
    CHECK(e < 1e-2);
    free(wg), free(wu);
}

int main(void) {
    api = npl_vnpu_get_api(NPL_ACCEL_ABI_VERSION);
    CHECK(api != NULL);
    if (!api) TEST_MAIN_END();
    const char *fams[2] = {"generic", "auto"};
    const npl_isa isas[2] = {NPL_ISA_GENERIC, npl_cpu_best_isa()};
    static const struct { uint32_t dt; npl_type t; } types[] = {{NPL_ACCEL_DT_Q4_0, NPL_TYPE_Q4_0},
                                                                {NPL_ACCEL_DT_Q4_K, NPL_TYPE_Q4_K}};
    const int ms[] = {1, 3, 17, MMAX};
    for (int f = 0; f < 2; f++) {
        npl_accel_backend *be;
        char err[256];
        npl_accel_option o[2] = {{"kernel_family", fams[f]}, {"threads", "2"}};
        CHECK_EQ_INT(api->backend_create(o, 2, &be, err, sizeof err), NPL_ACCEL_OK);
        printf("kernel family %s (%s)\n", fams[f], npl_isa_name(isas[f]));
        for (size_t ti = 0; ti < sizeof types / sizeof types[0]; ti++)
            for (size_t mi = 0; mi < sizeof ms / sizeof ms[0]; mi++)
                run(be, isas[f], types[ti].dt, types[ti].t, ms[mi], 7u + (unsigned)(ti * 10 + mi));
        api->backend_free(be);
    }
    TEST_MAIN_END();
}
