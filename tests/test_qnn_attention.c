/* QNN HTP Attention (src/accel/qnn/qnn_attn.c) in the emulator against a
 * double-precision reference: one context holds a prefill graph (9 queries
 * at positions after 12 cached rows, one padding row) and a decode graph
 * sharing the two APP_READWRITE caches (host buffers); the prefill writes
 * its rows into the caches at their positions (checked bit for bit), the
 * decode step attends to them. GQA groups of 1, 2 and 4, a sliding window,
 * soft-capping, f16 and f32 inputs. The context binary reloaded: its decode
 * graph takes the same cache and gives the same bits. The graph computes in
 * fp16 (scores, softmax, products): the tolerance is 4e-3 on outputs of
 * magnitude <= 1 (scores of a few units). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_qnn_common.h"

enum { S = 9, C = 32, PRE = 12 };

typedef struct {
    int hq, hkv, hd, window, f16;
    float softcap;
} cfg;

static qnn_rig R;

/* the reference output of query row (values q, position p) over the cache kc / vc (f16) */
static double ref_err(const cfg *c, const float *q, int p, const uint16_t *kc, const uint16_t *vc, const float *y) {
    const int hq = c->hq, hkv = c->hkv, hd = c->hd;
    double err = 0, sc[C], o[256];
    for (int h = 0; h < hq; h++) {
        const int kvh = h / (hq / hkv);
        int lo = c->window > 0 ? p - c->window + 1 : 0;
        if (lo < 0) lo = 0;
        double mx = -1e300, sum = 0;
        for (int j = lo; j <= p; j++) {
            double dot = 0;
            for (int e = 0; e < hd; e++) dot += (double)q[h * hd + e] * npl_f16_to_f32(kc[(j * hkv + kvh) * hd + e]);
            dot /= sqrt(hd);
            if (c->softcap > 0) dot = c->softcap * tanh(dot / c->softcap);
            sc[j] = dot, mx = fmax(mx, dot);
        }
        for (int e = 0; e < hd; e++) o[e] = 0;
        for (int j = lo; j <= p; j++) {
            const double w = exp(sc[j] - mx);
            sum += w;
            for (int e = 0; e < hd; e++) o[e] += w * npl_f16_to_f32(vc[(j * hkv + kvh) * hd + e]);
        }
        for (int e = 0; e < hd; e++) err = fmax(err, fabs(y[h * hd + e] - o[e] / sum));
    }
    return err;
}

/* graph `name` of ctx: Attention over S_ queries; its tensor names are prefixed by the graph's */
static void build(npl_accel_context *ctx, const cfg *c, const char *name, int s) {
    const npl_accel_api *a = R.api;
    const uint32_t dt = c->f16 ? NPL_ACCEL_DT_F16 : NPL_ACCEL_DT_F32;
    npl_accel_graph *g;
    CHECK_EQ_INT(a->graph_create(ctx, name, &g), NPL_ACCEL_OK);
    char n[6][32];
    const char *sfx[6] = {"q", "k", "v", "pos", "y", ""};
    for (int i = 0; i < 5; i++) snprintf(n[i], sizeof n[i], "%s.%s", name, sfx[i]);
    npl_accel_tensor_desc d[7] = {accel_desc(n[0], NPL_ACCEL_APP_WRITE, dt, 3, s, c->hq, c->hd),
                                  accel_desc(n[1], NPL_ACCEL_APP_WRITE, dt, 3, s, c->hkv, c->hd),
                                  accel_desc(n[2], NPL_ACCEL_APP_WRITE, dt, 3, s, c->hkv, c->hd),
                                  accel_desc("kc", NPL_ACCEL_APP_READWRITE, NPL_ACCEL_DT_F16, 3, C, c->hkv, c->hd),
                                  accel_desc("vc", NPL_ACCEL_APP_READWRITE, NPL_ACCEL_DT_F16, 3, C, c->hkv, c->hd),
                                  accel_desc(n[3], NPL_ACCEL_APP_WRITE, NPL_ACCEL_DT_INT32, 1, s, 0, 0),
                                  accel_desc(n[4], NPL_ACCEL_APP_READ, NPL_ACCEL_DT_F32, 3, s, c->hq, c->hd)};
    npl_accel_tensor_id id[7];
    for (int i = 0; i < 7; i++) CHECK_EQ_INT(a->tensor_create(g, &d[i], &id[i]), NPL_ACCEL_OK);
    npl_accel_param p[3] = {{.name = "window", .type = NPL_ACCEL_PARAM_INT, .i = c->window},
                            {.name = "scale", .type = NPL_ACCEL_PARAM_FLOAT, .f = 1.0 / sqrt(c->hd)},
                            {.name = "softcap", .type = NPL_ACCEL_PARAM_FLOAT, .f = c->softcap}};
    npl_accel_node_desc nd = {"attn", "Attention", p, 3, id, 6, &id[6], 1};
    npl_accel_status st = a->graph_add_node(g, &nd);
    if (!st) st = a->graph_finalize(g);
    if (st) fprintf(stderr, "  %s: %s\n", name, a->last_error(R.be));
    CHECK_EQ_INT(st, NPL_ACCEL_OK);
}

typedef struct {
    float *q, *k, *v, *y;
    uint16_t *qh, *kh, *vh;
    int32_t pos[S];
} io;

static void io_make(io *b, const cfg *c, int s, int p0, unsigned seed) {
    const int nq = s * c->hq * c->hd, nk = s * c->hkv * c->hd;
    b->q = malloc((size_t)nq * 4), b->y = calloc((size_t)nq, 4), b->k = malloc((size_t)nk * 4), b->v = malloc((size_t)nk * 4);
    b->qh = malloc((size_t)nq * 2), b->kh = malloc((size_t)nk * 2), b->vh = malloc((size_t)nk * 2);
    for (int i = 0; i < s; i++) b->pos[i] = s > 1 && i == 5 ? -1 : p0 + i;
    /* the values the graph sees: f16 (inputs, or the graph's own conversion) */
    for (int i = 0; i < nq; i++) b->qh[i] = npl_f32_to_f16(accel_frand(&seed)), b->q[i] = npl_f16_to_f32(b->qh[i]);
    for (int i = 0; i < nk; i++) {
        b->kh[i] = npl_f32_to_f16(accel_frand(&seed)), b->k[i] = npl_f16_to_f32(b->kh[i]);
        b->vh[i] = npl_f32_to_f16(accel_frand(&seed)), b->v[i] = npl_f16_to_f32(b->vh[i]);
    }
}

static void io_free(io *b) { free(b->q), free(b->k), free(b->v), free(b->y), free(b->qh), free(b->kh), free(b->vh); }

static npl_accel_status exec(npl_accel_context *ctx, const cfg *c, const char *name, int s, io *b) {
    const npl_accel_api *a = R.api;
    npl_accel_graph *g;
    char n[5][32];
    const char *sfx[5] = {"q", "k", "v", "pos", "y"};
    for (int i = 0; i < 5; i++) snprintf(n[i], sizeof n[i], "%s.%s", name, sfx[i]);
    const size_t es = c->f16 ? 2 : 4, nq = (size_t)s * c->hq * c->hd, nk = (size_t)s * c->hkv * c->hd;
    npl_accel_buffer in[4] = {{n[0], c->f16 ? (void *)b->qh : (void *)b->q, nq * es},
                              {n[1], c->f16 ? (void *)b->kh : (void *)b->k, nk * es},
                              {n[2], c->f16 ? (void *)b->vh : (void *)b->v, nk * es},
                              {n[3], b->pos, (size_t)s * 4}};
    npl_accel_buffer out = {n[4], b->y, nq * 4};
    npl_accel_status st = a->graph_retrieve(ctx, name, &g);
    if (!st) st = a->graph_execute(g, in, 4, &out, 1);
    if (st) fprintf(stderr, "  %s: %s\n", name, a->last_error(R.be));
    return st;
}

static void run(const cfg *c) {
    const npl_accel_api *a = R.api;
    const int row = c->hkv * c->hd;
    uint16_t *kc = calloc((size_t)C * row, 2), *vc = calloc((size_t)C * row, 2);
    unsigned seed = (unsigned)(c->hq * 131 + c->hd + c->window * 7 + c->f16);
    for (int i = 0; i < PRE * row; i++) kc[i] = npl_f32_to_f16(accel_frand(&seed)), vc[i] = npl_f32_to_f16(accel_frand(&seed));
    npl_accel_context *ctx, *re = NULL;
    CHECK_EQ_INT(a->context_create(R.be, R.dev, NULL, 0, &ctx), NPL_ACCEL_OK);
    build(ctx, c, "pre", S);
    build(ctx, c, "dec", 1);
    void *mem;
    uint64_t sz;
    CHECK_EQ_INT(a->context_tensor_data(ctx, "kc", &mem, &sz), NPL_ACCEL_OK);
    CHECK_EQ_INT((int)sz, C * row * 2);
    memcpy(mem, kc, sz);
    CHECK_EQ_INT(a->context_tensor_data(ctx, "vc", &mem, &sz), NPL_ACCEL_OK);
    memcpy(mem, vc, sz);
    io pre, dec, dec2;
    io_make(&pre, c, S, PRE, seed + 1);
    io_make(&dec, c, 1, PRE + S, seed + 2);
    io_make(&dec2, c, 1, PRE + S, seed + 2);
    CHECK_EQ_INT(exec(ctx, c, "pre", S, &pre), NPL_ACCEL_OK);
    /* the chunk's rows are in the caches at their positions (bit for bit), padding not written */
    int bad = 0;
    CHECK_EQ_INT(a->context_tensor_data(ctx, "kc", &mem, &sz), NPL_ACCEL_OK);
    const uint16_t *mk = mem;
    CHECK_EQ_INT(a->context_tensor_data(ctx, "vc", &mem, &sz), NPL_ACCEL_OK);
    const uint16_t *mv = mem;
    for (int i = 0; i < S; i++)
        for (int e = 0; e < row; e++) {
            const int p = pre.pos[i] >= 0 ? pre.pos[i] : PRE + i;
            const uint16_t wk = pre.pos[i] >= 0 ? pre.kh[i * row + e] : 0, wv = pre.pos[i] >= 0 ? pre.vh[i * row + e] : 0;
            bad += mk[p * row + e] != wk || mv[p * row + e] != wv;
            if (pre.pos[i] >= 0) kc[p * row + e] = wk, vc[p * row + e] = wv;
        }
    CHECK_EQ_INT(bad, 0);
    double err = 0;
    for (int i = 0; i < S; i++)
        if (pre.pos[i] >= 0)
            err = fmax(err, ref_err(c, pre.q + (size_t)i * c->hq * c->hd, pre.pos[i], kc, vc, pre.y + (size_t)i * c->hq * c->hd));
    /* decode: one row after the chunk, over the rows the prefill wrote */
    CHECK_EQ_INT(exec(ctx, c, "dec", 1, &dec), NPL_ACCEL_OK);
    for (int e = 0; e < row; e++) kc[(PRE + S) * row + e] = dec.kh[e], vc[(PRE + S) * row + e] = dec.vh[e];
    const double derr = ref_err(c, dec.q, PRE + S, kc, vc, dec.y);
    /* the binary reloaded: zeroed caches of its own; given the same rows, the same bits */
    uint64_t bs = 0, wrote = 0;
    uint8_t *bin = NULL;
    CHECK_EQ_INT(a->context_get_binary_size(ctx, &bs), NPL_ACCEL_OK);
    CHECK((bin = malloc(bs)) != NULL);
    CHECK_EQ_INT(a->context_get_binary(ctx, bin, bs, &wrote), NPL_ACCEL_OK);
    CHECK_EQ_INT(a->context_create_from_binary(R.be, R.dev, NULL, 0, bin, wrote, &re), NPL_ACCEL_OK);
    if (re) {
        CHECK_EQ_INT(a->context_tensor_data(re, "kc", &mem, &sz), NPL_ACCEL_OK);
        int zero = 1;
        for (uint64_t i = 0; i < sz / 2; i++) zero &= ((uint16_t *)mem)[i] == 0;
        CHECK(zero);
        memcpy(mem, kc, sz);
        for (int e = 0; e < row; e++) ((uint16_t *)mem)[(PRE + S) * row + e] = 0; /* the decode step writes it */
        CHECK_EQ_INT(a->context_tensor_data(re, "vc", &mem, &sz), NPL_ACCEL_OK);
        memcpy(mem, vc, sz);
        CHECK_EQ_INT(exec(re, c, "dec", 1, &dec2), NPL_ACCEL_OK);
        CHECK(!memcmp(dec.y, dec2.y, (size_t)c->hq * c->hd * 4));
        CHECK_EQ_INT(a->context_free(re), NPL_ACCEL_OK);
    }
    printf("  heads %d/%d, hd %d, window %d, softcap %g, %s inputs: max error prefill %.2e, decode %.2e (binary %llu bytes)\n",
           c->hq, c->hkv, c->hd, c->window, c->softcap, c->f16 ? "f16" : "f32", err, derr, (unsigned long long)wrote);
    CHECK(err < 4e-3 && derr < 4e-3);
    CHECK_EQ_INT(a->context_free(ctx), NPL_ACCEL_OK);
    io_free(&pre), io_free(&dec), io_free(&dec2);
    free(bin), free(kc), free(vc);
}

int main(void) {
    R = qnn_rig_open("SM8650");
    static const cfg cfgs[] = {
        {4, 1, 64, 0, 1, 0},  /* gemma3 270m's grouping */
        {4, 2, 32, 5, 0, 0},  /* a sliding window shorter than the chunk */
        {2, 2, 32, 0, 0, 20}, /* soft-capped scores (gemma2) */
        {6, 2, 48, 0, 1, 0},  /* a scale that is not a power of two */
    };
    for (size_t i = 0; i < sizeof cfgs / sizeof cfgs[0]; i++) run(&cfgs[i]);
    qnn_rig_close(&R);
    TEST_MAIN_END();
}
