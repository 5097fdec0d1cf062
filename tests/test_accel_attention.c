/* vnpu Attention at prefill sizes (the AMX tile kernel on machines with AMX,
 * the shared kernels elsewhere and on the generic family) against a double
 * precision reference: 45 queries (a partial last tile) at positions after
 * 100 cached rows, padding rows, GQA groups of 1, 4 and 8, head sizes from
 * 33 to 1024 (NPL_ATTN_MAX_HD; larger ones are refused), causal and
 * sliding-window masks, soft-capping, f32 and f16 inputs (f16 K/V go to the
 * cache bit for bit). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "accel/vnpu/vnpu_api.h"
#include "accel_test_util.h"
#include "check.h"
#include "kernels/dtype.h"
#include "kernels/nn_kernels.h"
#include "npullm_accel.h"

enum { S = 45, C = 224, PRE = 100 };

static const npl_accel_api *api;
static npl_accel_backend *be;

typedef struct {
    int hq, hkv, hd, window, f16;
    float softcap;
} cfg;

static void run(const cfg *c) {
    const int hq = c->hq, hkv = c->hkv, hd = c->hd, nq = S * hq * hd, nk = S * hkv * hd, nc = C * hkv * hd;
    const uint32_t dt = c->f16 ? NPL_ACCEL_DT_F16 : NPL_ACCEL_DT_F32;
    float *q = malloc((size_t)nq * 4), *k = malloc((size_t)nk * 4), *v = malloc((size_t)nk * 4), *y = malloc((size_t)nq * 4);
    uint16_t *qh = malloc((size_t)nq * 2), *kh = malloc((size_t)nk * 2), *vh = malloc((size_t)nk * 2);
    uint16_t *kc = calloc((size_t)nc, 2), *vc = calloc((size_t)nc, 2);
    int32_t pos[S];
    unsigned s = (unsigned)(hq * 131 + hd + c->window * 7 + c->f16);
    for (int i = 0; i < S; i++) pos[i] = i % 11 == 7 ? -1 : PRE + i;
    /* scores of a few units: q and k rows of norm ~ sqrt(hd) / 2, scale 1/sqrt(hd) */
    for (int i = 0; i < nq; i++) q[i] = accel_frand(&s), qh[i] = npl_f32_to_f16(q[i]);
    for (int i = 0; i < nk; i++) k[i] = accel_frand(&s), v[i] = accel_frand(&s), kh[i] = npl_f32_to_f16(k[i]), vh[i] = npl_f32_to_f16(v[i]);
    if (c->f16) /* the values the kernel sees */
        for (int i = 0; i < nq; i++) q[i] = npl_f16_to_f32(qh[i]);
    for (int i = 0; i < PRE * hkv * hd; i++) kc[i] = npl_f32_to_f16(accel_frand(&s)), vc[i] = npl_f32_to_f16(accel_frand(&s));

    npl_accel_context *ctx;
    npl_accel_graph *g;
    CHECK_EQ_INT(api->context_create(be, NULL, NULL, 0, &ctx), NPL_ACCEL_OK);
    CHECK_EQ_INT(api->graph_create(ctx, "attn", &g), NPL_ACCEL_OK);
    npl_accel_tensor_desc d[7] = {accel_desc("q", NPL_ACCEL_APP_WRITE, dt, 3, S, hq, hd), accel_desc("k", NPL_ACCEL_APP_WRITE, dt, 3, S, hkv, hd),
                                  accel_desc("v", NPL_ACCEL_APP_WRITE, dt, 3, S, hkv, hd),
                                  accel_desc("kc", NPL_ACCEL_APP_READWRITE, NPL_ACCEL_DT_F16, 3, C, hkv, hd),
                                  accel_desc("vc", NPL_ACCEL_APP_READWRITE, NPL_ACCEL_DT_F16, 3, C, hkv, hd),
                                  accel_desc("pos", NPL_ACCEL_APP_WRITE, NPL_ACCEL_DT_INT32, 1, S, 0, 0),
                                  accel_desc("y", NPL_ACCEL_APP_READ, NPL_ACCEL_DT_F32, 3, S, hq, hd)};
    npl_accel_tensor_id id[7];
    for (int i = 0; i < 7; i++) CHECK_EQ_INT(api->tensor_create(g, &d[i], &id[i]), NPL_ACCEL_OK);
    npl_accel_param p[3] = {{.name = "window", .type = NPL_ACCEL_PARAM_INT, .i = c->window},
                            {.name = "scale", .type = NPL_ACCEL_PARAM_FLOAT, .f = 1.0 / sqrt(hd)},
                            {.name = "softcap", .type = NPL_ACCEL_PARAM_FLOAT, .f = c->softcap}};
    npl_accel_node_desc nd = {"attn", "Attention", p, 3, id, 6, &id[6], 1};
    CHECK_EQ_INT(api->graph_add_node(g, &nd), NPL_ACCEL_OK);
    CHECK_EQ_INT(api->graph_finalize(g), NPL_ACCEL_OK);
    void *mem;
    uint64_t sz;
    CHECK_EQ_INT(api->context_tensor_data(ctx, "kc", &mem, &sz), NPL_ACCEL_OK);
    memcpy(mem, kc, sz);
    CHECK_EQ_INT(api->context_tensor_data(ctx, "vc", &mem, &sz), NPL_ACCEL_OK);
    memcpy(mem, vc, sz);
    const size_t es = c->f16 ? 2 : 4;
    npl_accel_buffer in[4] = {{"q", c->f16 ? (void *)qh : (void *)q, (size_t)nq * es},
                              {"k", c->f16 ? (void *)kh : (void *)k, (size_t)nk * es},
                              {"v", c->f16 ? (void *)vh : (void *)v, (size_t)nk * es},
                              {"pos", pos, sizeof pos}};
    npl_accel_buffer out = {"y", y, (size_t)nq * 4};
    CHECK_EQ_INT(api->graph_execute(g, in, 4, &out, 1), NPL_ACCEL_OK);
    /* the cache holds this chunk's rows in f16 */
    CHECK_EQ_INT(api->context_tensor_data(ctx, "kc", &mem, &sz), NPL_ACCEL_OK);
    int bad = 0;
    for (int i = 0; i < S; i++)
        for (int e = 0; pos[i] >= 0 && e < hkv * hd; e++) bad += ((uint16_t *)mem)[pos[i] * hkv * hd + e] != kh[i * hkv * hd + e];
    CHECK_EQ_INT(bad, 0);
    for (int i = 0; i < S; i++)
        for (int e = 0; pos[i] >= 0 && e < hkv * hd; e++) {
            kc[pos[i] * hkv * hd + e] = kh[i * hkv * hd + e];
            vc[pos[i] * hkv * hd + e] = vh[i * hkv * hd + e];
        }
    double err = 0;
    double *sc = malloc(C * sizeof(double)), *o = malloc((size_t)hd * sizeof(double));
    for (int i = 0; i < S; i++)
        for (int h = 0; h < hq; h++) {
            const int kvh = h / (hq / hkv);
            const float *yi = y + (i * hq + h) * hd;
            if (pos[i] < 0) {
                for (int e = 0; e < hd; e++) err = fmax(err, fabs(yi[e]));
                continue;
            }
            int lo = c->window > 0 ? pos[i] - c->window + 1 : 0;
            if (lo < 0) lo = 0;
            double mx = -1e300, sum = 0;
            for (int j = lo; j <= pos[i]; j++) {
                double dot = 0;
                for (int e = 0; e < hd; e++) dot += (double)q[(i * hq + h) * hd + e] * npl_f16_to_f32(kc[(j * hkv + kvh) * hd + e]);
                dot /= sqrt(hd);
                if (c->softcap > 0) dot = c->softcap * tanh(dot / c->softcap);
                sc[j] = dot;
                mx = fmax(mx, dot);
            }
            for (int e = 0; e < hd; e++) o[e] = 0;
            for (int j = lo; j <= pos[i]; j++) {
                const double w = exp(sc[j] - mx);
                sum += w;
                for (int e = 0; e < hd; e++) o[e] += w * npl_f16_to_f32(vc[(j * hkv + kvh) * hd + e]);
            }
            for (int e = 0; e < hd; e++) err = fmax(err, fabs(yi[e] - o[e] / sum));
        }
    printf("  heads %d/%d, hd %d, window %d, softcap %g, %s inputs: max error %.2e\n", hq, hkv, hd, c->window,
           c->softcap, c->f16 ? "f16" : "f32", err);
    CHECK_NEAR(err, 0, 5e-5);
    CHECK_EQ_INT(api->context_free(ctx), NPL_ACCEL_OK);
    free(q), free(k), free(v), free(y), free(qh), free(kh), free(vh), free(kc), free(vc), free(sc), free(o);
}

/* A head larger than the attention kernels take (NPL_ATTN_MAX_HD) is
 * refused when the node is checked, with a message naming the size and the
 * limit, and nothing runs. */
static void refuse_big_head(void) {
    const int hd = NPL_ATTN_MAX_HD + 16;
    npl_accel_context *ctx;
    npl_accel_graph *g;
    CHECK_EQ_INT(api->context_create(be, NULL, NULL, 0, &ctx), NPL_ACCEL_OK);
    CHECK_EQ_INT(api->graph_create(ctx, "attn", &g), NPL_ACCEL_OK);
    npl_accel_tensor_desc d[7] = {accel_desc("q", NPL_ACCEL_APP_WRITE, NPL_ACCEL_DT_F32, 3, 4, 2, hd),
                                  accel_desc("k", NPL_ACCEL_APP_WRITE, NPL_ACCEL_DT_F32, 3, 4, 1, hd),
                                  accel_desc("v", NPL_ACCEL_APP_WRITE, NPL_ACCEL_DT_F32, 3, 4, 1, hd),
                                  accel_desc("kc", NPL_ACCEL_APP_READWRITE, NPL_ACCEL_DT_F16, 3, 8, 1, hd),
                                  accel_desc("vc", NPL_ACCEL_APP_READWRITE, NPL_ACCEL_DT_F16, 3, 8, 1, hd),
                                  accel_desc("pos", NPL_ACCEL_APP_WRITE, NPL_ACCEL_DT_INT32, 1, 4, 0, 0),
                                  accel_desc("y", NPL_ACCEL_APP_READ, NPL_ACCEL_DT_F32, 3, 4, 2, hd)};
    npl_accel_tensor_id id[7];
    for (int i = 0; i < 7; i++) CHECK_EQ_INT(api->tensor_create(g, &d[i], &id[i]), NPL_ACCEL_OK);
    npl_accel_node_desc nd = {"attn", "Attention", NULL, 0, id, 6, &id[6], 1};
    npl_accel_status st = api->graph_add_node(g, &nd);
    if (st == NPL_ACCEL_OK) st = api->graph_finalize(g);
    const char *msg = api->last_error(be);
    char want[32];
    snprintf(want, sizeof want, "D = %d", hd);
    printf("  head size %d: %s\n", hd, msg);
    CHECK(st != NPL_ACCEL_OK);
    CHECK(strstr(msg, want) != NULL && strstr(msg, "1024") != NULL);
    CHECK_EQ_INT(api->context_free(ctx), NPL_ACCEL_OK);
}

int main(void) {
    api = npl_vnpu_get_api(NPL_ACCEL_ABI_VERSION);
    static const cfg cfgs[] = {
        {4, 1, 256, 0, 1, 0},  {4, 1, 256, 32, 1, 0}, {8, 2, 64, 0, 0, 0},   {8, 8, 64, 17, 0, 0},
        {8, 1, 64, 0, 0, 30},  {16, 2, 32, 5, 1, 0},  {6, 6, 48, 0, 0, 0}, /* hd 48: the shared kernel */
        /* heads past 512 up to the kernels' limit, and odd sizes: every size a model may have */
        {2, 1, 768, 0, 0, 0},  {2, 2, NPL_ATTN_MAX_HD, 9, 1, 0}, {4, 2, 100, 0, 0, 20}, {3, 1, 33, 0, 1, 0},
    };
    const char *fams[2] = {"generic", "auto"};
    for (int f = 0; f < 2; f++) {
        char err[256];
        npl_accel_option o = {"kernel_family", fams[f]};
        CHECK_EQ_INT(api->backend_create(&o, 1, &be, err, sizeof err), NPL_ACCEL_OK);
        printf("kernel family %s\n", fams[f]);
        for (size_t i = 0; i < sizeof cfgs / sizeof cfgs[0]; i++) run(&cfgs[i]);
        refuse_big_head();
        api->backend_free(be);
    }
    TEST_MAIN_END();
}
