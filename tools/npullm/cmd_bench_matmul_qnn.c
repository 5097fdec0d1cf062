/* npullm bench-matmul --accel qnn-htp: the reference's two MatMul
 * benchmarks (../shared/reference/000_*: weight_static_benchmark and
 * weight_switch_benchmark) on Qualcomm QNN HTP through libnpl_accel_qnn-htp.so.
 *   (a) per precision fp16 (f16 x f16), int8 (uint8 activations x int8
 *       per-channel weights), int16 (16-bit activations x int8 per-channel
 *       weights) and weight mode static / app_write: ctx, build, final, first,
 *       exec mean±std, free (ms), ctx_bin / static / runtime (MB), max_err and
 *       mean_err against the double product, and precision_error_summary.
 *   (b) switching weight sets: app_write (one graph, weights bound per round,
 *       read from disk), static_load (a context binary per weight set, read
 *       from disk and loaded per round), update_static (skipped: see below).
 * On x86 the HTP backend is a software emulator: the times are emulation. */
#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench_matmul_flags.h"
#include "bench_matmul_qnn.h"
#include "cli_util.h"
#include "npullm_accel.h"
#include "npullm_plugin.h"

static const char *USAGE =
    "usage: npullm bench-matmul --accel qnn-htp [--soc NAME] [--qnn-lib DIR] [--plugin PATH]\n"
    "                           [--m M] [--k K] [--n N] [--warmup W] [--iters I] [--rounds R]\n"
    "                           [--precisions fp16,int8,int16]\n"
    "  defaults: soc SM8650, m 512, k 2048, n 2048, warmup 1, iters 3, rounds 2 (weight switch),\n"
    "  plugin libnpl_accel_qnn-htp.so next to the npullm executable, QNN libraries from the build's default\n";

typedef struct {
    const char *name;
    npl_accel_dtype act; /* A and C */
    npl_accel_dtype wdt;
    double tol;          /* max_err a run must stay under to be valid */
} prec;
static const prec precs[] = {
    {"fp16", NPL_ACCEL_DT_F16, NPL_ACCEL_DT_F16, 0.01},
    {"int8", NPL_ACCEL_DT_UINT8, NPL_ACCEL_DT_INT8, 0.05},
    {"int16", NPL_ACCEL_DT_INT16, NPL_ACCEL_DT_INT8, 0.02},
};

typedef struct {
    const npl_accel_api *api;
    npl_accel_backend *be;
    npl_accel_device *dev;
    int m, k, n, warmup, iters;
    const float *a, *b;           /* A [m, k], B [k, n] float */
    double *ref;                  /* C [m, n] of the dequantized inputs */
    double ref_amax;
} bench;

typedef struct {
    const prec *p;
    void *a, *w, *c;              /* A, B [k, n], C in the precision's types */
    size_t a_bytes, w_bytes, c_bytes;
    float a_scale, c_scale, *w_scale;
    int32_t a_off, c_off;
} data;

typedef struct {
    int ok;
    char err[700];
    double ctx, build, fin, first, mean, sd, freet, max_err, mean_err;
    uint64_t bin;
} row;

static double elem(npl_accel_dtype dt, const void *p, size_t i, float s, int32_t o) {
    switch (dt) {
    case NPL_ACCEL_DT_F16: return npl_accel_f16_to_f32(((const uint16_t *)p)[i]);
    case NPL_ACCEL_DT_UINT8: return (((const uint8_t *)p)[i] + o) * (double)s;
    case NPL_ACCEL_DT_INT16: return (((const int16_t *)p)[i] + o) * (double)s;
    default: return ((const int8_t *)p)[i] * (double)s;
    }
}

static void put(npl_accel_dtype dt, void *p, size_t i, double v, float s, int32_t o) {
    if (dt == NPL_ACCEL_DT_F16) { ((uint16_t *)p)[i] = npl_accel_f32_to_f16((float)v); return; }
    double q = nearbyint(v / s) - o;
    double lo = dt == NPL_ACCEL_DT_UINT8 ? 0 : dt == NPL_ACCEL_DT_INT16 ? -32768 : -127;
    double hi = dt == NPL_ACCEL_DT_UINT8 ? 255 : dt == NPL_ACCEL_DT_INT16 ? 32767 : 127;
    q = q < lo ? lo : q > hi ? hi : q;
    if (dt == NPL_ACCEL_DT_UINT8) ((uint8_t *)p)[i] = (uint8_t)q;
    else if (dt == NPL_ACCEL_DT_INT16) ((int16_t *)p)[i] = (int16_t)q;
    else ((int8_t *)p)[i] = (int8_t)q;
}

static size_t esz(npl_accel_dtype dt) { return dt == NPL_ACCEL_DT_F16 || dt == NPL_ACCEL_DT_INT16 ? 2 : 1; }

/* A and B in the precision's types (int: A per tensor over its range, B
 * symmetric per output channel, C per tensor over the reference's range:
 * the static scales a calibrated model has). */
static int make_data(const bench *bn, const prec *p, const float *b, data *d) {
    memset(d, 0, sizeof *d);
    d->p = p;
    const size_t mk = (size_t)bn->m * bn->k, kn = (size_t)bn->k * bn->n, mn = (size_t)bn->m * bn->n;
    d->a_bytes = mk * esz(p->act), d->w_bytes = kn * esz(p->wdt), d->c_bytes = mn * esz(p->act);
    d->a = malloc(d->a_bytes), d->w = malloc(d->w_bytes), d->c = malloc(d->c_bytes);
    d->w_scale = malloc(sizeof(float) * (size_t)bn->n);
    if (!d->a || !d->w || !d->c || !d->w_scale) return -1;
    if (p->act == NPL_ACCEL_DT_UINT8) d->a_scale = 2.0f / 255, d->a_off = -128;
    if (p->act == NPL_ACCEL_DT_INT16) d->a_scale = 1.0f / 32767;
    const double crange = bn->ref_amax * 1.02;
    if (p->act == NPL_ACCEL_DT_UINT8) d->c_scale = (float)(2 * crange / 255), d->c_off = -128;
    if (p->act == NPL_ACCEL_DT_INT16) d->c_scale = (float)(crange / 32767);
    for (size_t i = 0; i < mk; i++) put(p->act, d->a, i, bn->a[i], d->a_scale, d->a_off);
    for (int q = 0; q < bn->n; q++) {
        float amax = 0;
        for (int l = 0; l < bn->k; l++) amax = fmaxf(amax, fabsf(b[(size_t)l * bn->n + q]));
        d->w_scale[q] = amax > 0 ? amax / 127 : 1;
    }
    for (size_t i = 0; i < kn; i++) put(p->wdt, d->w, i, b[i], p->wdt == NPL_ACCEL_DT_F16 ? 1 : d->w_scale[i % bn->n], 0);
    return 0;
}

static void free_data(data *d) { free(d->a), free(d->w), free(d->c), free(d->w_scale); }

static npl_accel_quant pt(const float *s, const int32_t *o) { return (npl_accel_quant){NPL_ACCEL_QUANT_PER_TENSOR, 0, 0, 1, s, o}; }

static int build(const bench *bn, npl_accel_context *ctx, const data *d, int app_write, npl_accel_graph **g) {
    const npl_accel_api *a = bn->api;
    const prec *p = d->p;
    npl_accel_tensor_desc da, dw, dc;
    memset(&da, 0, sizeof da);
    da.name = "A", da.kind = NPL_ACCEL_APP_WRITE, da.dtype = p->act, da.rank = 2;
    da.dims[0] = (uint32_t)bn->m, da.dims[1] = (uint32_t)bn->k;
    dc = da;
    dc.name = "C", dc.kind = NPL_ACCEL_APP_READ, dc.dims[1] = (uint32_t)bn->n;
    if (p->act != NPL_ACCEL_DT_F16) da.quant = pt(&d->a_scale, &d->a_off), dc.quant = pt(&d->c_scale, &d->c_off);
    memset(&dw, 0, sizeof dw);
    dw.name = "B", dw.kind = app_write ? NPL_ACCEL_APP_WRITE : NPL_ACCEL_STATIC, dw.dtype = p->wdt, dw.rank = 2;
    dw.dims[0] = (uint32_t)bn->k, dw.dims[1] = (uint32_t)bn->n;
    if (p->wdt != NPL_ACCEL_DT_F16) dw.quant = (npl_accel_quant){NPL_ACCEL_QUANT_PER_AXIS, 1, 0, (uint32_t)bn->n, d->w_scale, NULL};
    if (!app_write) dw.data = d->w, dw.data_size = d->w_bytes;
    npl_accel_tensor_id id[3];
    int st = a->graph_create(ctx, "matmul", g);
    if (!st) st = a->tensor_create(*g, &da, &id[0]);
    if (!st) st = a->tensor_create(*g, &dw, &id[1]);
    if (!st) st = a->tensor_create(*g, &dc, &id[2]);
    npl_accel_node_desc nd = {"matmul_0", "MatMul", NULL, 0, id, 2, &id[2], 1};
    if (!st) st = a->graph_add_node(*g, &nd);
    return st;
}

static int exec(const bench *bn, npl_accel_graph *g, const data *d, const void *w, int app_write, double *ms) {
    npl_accel_buffer in[2] = {{"A", d->a, d->a_bytes}, {"B", (void *)w, d->w_bytes}}, out = {"C", d->c, d->c_bytes};
    const double t0 = cli_now();
    int st = bn->api->graph_execute(g, in, app_write ? 2 : 1, &out, 1);
    *ms = (cli_now() - t0) * 1e3;
    return st;
}

static void errs(const bench *bn, const data *d, double *mx, double *mean) {
    double m = 0, s = 0;
    const size_t mn = (size_t)bn->m * bn->n;
    for (size_t i = 0; i < mn; i++) {
        double e = fabs(elem(d->p->act, d->c, i, d->c_scale, d->c_off) - bn->ref[i]);
        if (!(e <= m)) m = isnan(e) ? INFINITY : e;
        s += e;
    }
    *mx = m, *mean = s / (double)mn;
}

static int fail(const bench *bn, row *r, const char *what) {
    snprintf(r->err, sizeof r->err, "%s: %s", what, bn->api->last_error(bn->be));
    return -1;
}

static int run_a(const bench *bn, const data *d, int app_write, row *r) {
    const npl_accel_api *a = bn->api;
    npl_accel_context *ctx = NULL;
    npl_accel_graph *g;
    double *t = malloc(sizeof(double) * (size_t)bn->iters), ms;
    memset(r, 0, sizeof *r);
    int rc = -1;
    double t0 = cli_now();
    if (!t || a->context_create(bn->be, bn->dev, NULL, 0, &ctx)) { fail(bn, r, "context"); goto out; }
    double t1 = cli_now();
    r->ctx = (t1 - t0) * 1e3;
    if (build(bn, ctx, d, app_write, &g)) { fail(bn, r, "build"); goto out; }
    double t2 = cli_now();
    r->build = (t2 - t1) * 1e3;
    if (a->graph_finalize(g)) { fail(bn, r, "finalize"); goto out; }
    r->fin = (cli_now() - t2) * 1e3;
    if (exec(bn, g, d, d->w, app_write, &r->first)) { fail(bn, r, "execute"); goto out; }
    errs(bn, d, &r->max_err, &r->mean_err);
    for (int i = 0; i < bn->warmup; i++)
        if (exec(bn, g, d, d->w, app_write, &ms)) { fail(bn, r, "execute"); goto out; }
    double s = 0, q = 0;
    for (int i = 0; i < bn->iters; i++) {
        if (exec(bn, g, d, d->w, app_write, &t[i])) { fail(bn, r, "execute"); goto out; }
        s += t[i];
    }
    r->mean = s / bn->iters;
    for (int i = 0; i < bn->iters; i++) q += (t[i] - r->mean) * (t[i] - r->mean);
    r->sd = bn->iters > 1 ? sqrt(q / (bn->iters - 1)) : 0;
    a->context_get_binary_size(ctx, &r->bin);
    r->ok = 1, rc = 0;
out:
    t0 = cli_now();
    if (ctx) a->context_free(ctx);
    r->freet = (cli_now() - t0) * 1e3;
    free(t);
    return rc;
}

/* ---- (b) weight switch ---- */

typedef struct {
    int ok;
    char err[700];
    double prep, ssd_d, ssd_g, htp_w, fin, first, mean, sd, max_err;
    uint64_t binary, stat, runtime;
} srow;

static int write_file(const char *path, const void *p, size_t n) {
    FILE *f = fopen(path, "wb");
    int ok = f && fwrite(p, 1, n, f) == n;
    if (f && fclose(f)) ok = 0;
    return ok ? 0 : -1;
}

static void *read_file(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long sz = ftell(f);
    fseek(f, 0, SEEK_SET);
    void *p = sz > 0 ? malloc((size_t)sz) : NULL;
    if (p && fread(p, 1, (size_t)sz, f) != (size_t)sz) free(p), p = NULL;
    fclose(f);
    *n = (size_t)sz;
    return p;
}

/* One round per weight set; the sets hold B's bytes (what is measured is the switch). */
static int run_b(const bench *bn, data *d, int mode, int rounds, const char *dir, srow *r) {
    const npl_accel_api *a = bn->api;
    memset(r, 0, sizeof *r);
    char path[600];
    size_t n;
    double *t = calloc((size_t)rounds, sizeof *t);
    void *wfile = NULL;
    npl_accel_context *ctx = NULL;
    npl_accel_graph *g;
    int rc = -1;
    if (!t) return -1;
    double t0 = cli_now(), fin = 0;
    for (int s = 0; s < rounds; s++) { /* prep: weight files; static_load: a binary per weight set */
        snprintf(path, sizeof path, "%s/w%d.bin", dir, s);
        if (write_file(path, d->w, d->w_bytes)) { snprintf(r->err, sizeof r->err, "cannot write %s", path); goto out; }
        if (mode == 1) {
            npl_accel_context *c;
            uint64_t size, wr;
            if (a->context_create(bn->be, bn->dev, NULL, 0, &c)) { snprintf(r->err, sizeof r->err, "context: %s", a->last_error(bn->be)); goto out; }
            double f0 = cli_now();
            int st = build(bn, c, d, 0, &g);
            if (!st) f0 = cli_now(), st = a->graph_finalize(g), fin += (cli_now() - f0) * 1e3;
            void *bin = NULL;
            if (!st) st = a->context_get_binary_size(c, &size);
            if (!st && !(bin = malloc(size))) st = NPL_ACCEL_ERR_NO_MEMORY;
            if (!st) st = a->context_get_binary(c, bin, size, &wr);
            snprintf(path, sizeof path, "%s/g%d.bin", dir, s);
            if (!st && write_file(path, bin, wr)) st = NPL_ACCEL_ERR_IO;
            r->binary += st ? 0 : wr;
            free(bin);
            a->context_free(c);
            if (st) { snprintf(r->err, sizeof r->err, "static_load prep: %s", a->last_error(bn->be)); goto out; }
        }
    }
    if (mode == 0) {
        if (a->context_create(bn->be, bn->dev, NULL, 0, &ctx) || build(bn, ctx, d, 1, &g)) { snprintf(r->err, sizeof r->err, "%s", a->last_error(bn->be)); goto out; }
        double f0 = cli_now();
        if (a->graph_finalize(g)) { snprintf(r->err, sizeof r->err, "%s", a->last_error(bn->be)); goto out; }
        fin = (cli_now() - f0) * 1e3;
    }
    r->fin = fin;
    r->prep = (cli_now() - t0) * 1e3 - fin;
    for (int s = 0; s < rounds; s++) {
        double r0 = cli_now(), ms;
        snprintf(path, sizeof path, "%s/w%d.bin", dir, s);
        if (mode == 0) {
            if (!(wfile = read_file(path, &n))) { snprintf(r->err, sizeof r->err, "cannot read %s", path); goto out; }
            r->ssd_d += (cli_now() - r0) * 1e3;
            if (exec(bn, g, d, wfile, 1, &ms)) { snprintf(r->err, sizeof r->err, "%s", a->last_error(bn->be)); goto out; }
            free(wfile), wfile = NULL;
        } else {
            snprintf(path, sizeof path, "%s/g%d.bin", dir, s);
            void *bin = read_file(path, &n);
            double g0 = cli_now();
            r->ssd_g += (g0 - r0) * 1e3;
            int st = bin ? a->context_create_from_binary(bn->be, bn->dev, NULL, 0, bin, n, &ctx) : NPL_ACCEL_ERR_IO;
            if (!st) st = a->graph_retrieve(ctx, "matmul", &g);
            r->htp_w += (cli_now() - g0) * 1e3;
            if (!st) st = exec(bn, g, d, NULL, 0, &ms);
            if (st) { snprintf(r->err, sizeof r->err, "static_load: %s", a->last_error(bn->be)); free(bin); goto out; }
            a->context_free(ctx), ctx = NULL;
            free(bin);
        }
        t[s] = ms;
        if (s == 0) r->first = (cli_now() - r0) * 1e3;
    }
    double sum = 0, q = 0;
    for (int s = 0; s < rounds; s++) sum += t[s];
    r->mean = sum / rounds;
    for (int s = 0; s < rounds; s++) q += (t[s] - r->mean) * (t[s] - r->mean);
    r->sd = rounds > 1 ? sqrt(q / (rounds - 1)) : 0;
    r->ssd_d /= rounds, r->ssd_g /= rounds, r->htp_w /= rounds;
    double mean;
    errs(bn, d, &r->max_err, &mean);
    r->stat = mode == 1 ? d->w_bytes : 0;
    r->runtime = d->a_bytes + (mode == 0 ? d->w_bytes : 0);
    r->ok = 1, rc = 0;
out:
    if (ctx) a->context_free(ctx);
    free(wfile);
    free(t);
    for (int s = 0; s < rounds; s++) {
        snprintf(path, sizeof path, "%s/w%d.bin", dir, s), unlink(path);
        snprintf(path, sizeof path, "%s/g%d.bin", dir, s), unlink(path);
    }
    return rc;
}

static const npl_accel_api *load_plugin(const char *path) {
    char self[1024];
    if (!path) {
        ssize_t n = readlink("/proc/self/exe", self, sizeof self - 32);
        if (n <= 0) return NULL;
        self[n] = 0;
        char *slash = strrchr(self, '/');
        strcpy(slash ? slash + 1 : self, "libnpl_accel_qnn-htp.so");
        path = self;
    }
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) { fprintf(stderr, "npullm bench-matmul: cannot load the QNN plugin: %s\n", dlerror()); return NULL; }
    npl_accel_get_api_fn get = (npl_accel_get_api_fn)dlsym(h, NPL_ACCEL_ENTRY_POINT);
    const npl_accel_api *api = get ? get(NPL_ACCEL_ABI_VERSION) : NULL;
    const char *why = get ? npl_accel_api_check(api, NPL_ACCEL_ABI_VERSION) : "no " NPL_ACCEL_ENTRY_POINT;
    if (why) { fprintf(stderr, "npullm bench-matmul: %s: %s\n", path, why); return NULL; }
    return api;
}

static uint64_t rng = 0x853c49e6748fea9bull;
static float urand(void) {
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return (float)((rng >> 11) * 0x1p-53) * 2.0f - 1.0f;
}

int npl_cmd_bench_matmul_qnn(int argc, char **argv) {
    bm_flags f = {512, 2048, 2048, 1, 3};
    long long rounds = 2;
    const char *soc = "SM8650", *lib = NULL, *plugin = NULL, *plist = "fp16,int8,int16", *v;
    static const cli_opt OPTS[] = {
        BM_FLAG_OPTS, {"--rounds", NULL, 1}, {"--soc", NULL, 1}, {"--qnn-lib", NULL, 1}, {"--plugin", NULL, 1},
        {"--precisions", NULL, 1}, {NULL, NULL, 0}};
    for (int i = 1; i < argc; i++) {
        const char *a;
        int kind = cli_next("bench-matmul", OPTS, argc, argv, &i, &a, &v);
        if (kind == CLI_HELP) { fputs(USAGE, stdout); return 0; }
        if (kind != CLI_FLAG) return 2;
        const int common = bm_flag(a, v, &f);
        if (common) { if (common < 0) return 2; }
        else if (!strcmp(a, "--rounds")) { if (cli_int("bench-matmul", a, v, 1, 100, &rounds)) return 2; }
        else if (!strcmp(a, "--soc")) soc = v;
        else if (!strcmp(a, "--qnn-lib")) lib = v;
        else if (!strcmp(a, "--plugin")) plugin = v;
        else if (!strcmp(a, "--precisions")) plist = v;
        else if (!strcmp(a, "--accel") && strcmp(v, "qnn-htp")) { fprintf(stderr, "npullm bench-matmul: --accel %s here\n", v); return 2; }
    }
    if (bm_check_size(&f)) return 2;
    const long long m = f.m, k = f.k, n = f.n, warmup = f.warmup, iters = f.iters;
    const prec *sel[3];
    int np = 0;
    char list[128];
    snprintf(list, sizeof list, "%s", plist);
    for (char *save = NULL, *tok = strtok_r(list, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        int f = -1;
        for (int i = 0; i < 3; i++) if (!strcmp(tok, precs[i].name)) f = i;
        if (f < 0 || np == 3) { fprintf(stderr, "npullm bench-matmul: --precisions: '%s' is not fp16, int8 or int16 (qnn-htp)\n", tok); return 2; }
        sel[np++] = &precs[f];
    }
    bench bn = {0};
    bn.m = (int)m, bn.k = (int)k, bn.n = (int)n, bn.warmup = (int)warmup, bn.iters = (int)iters;
    if (!(bn.api = load_plugin(plugin))) return 1;
    char err[600];
    npl_accel_option lo = {"qnn_lib", lib}, so = {"soc", soc};
    if (bn.api->backend_create(lib ? &lo : NULL, lib ? 1 : 0, &bn.be, err, sizeof err)) { fprintf(stderr, "npullm bench-matmul: %s\n", err); return 1; }
    if (bn.api->device_create(bn.be, &so, 1, &bn.dev)) {
        fprintf(stderr, "npullm bench-matmul: --soc: %s\n", bn.api->last_error(bn.be));
        bn.api->backend_free(bn.be);
        return 2;
    }
    float *a = malloc(sizeof(float) * (size_t)(m * k)), *b = malloc(sizeof(float) * (size_t)(k * n));
    bn.ref = malloc(sizeof(double) * (size_t)(m * n));
    if (!a || !b || !bn.ref) { fprintf(stderr, "npullm bench-matmul: out of memory\n"); return 1; }
    const float bs = 1.0f / sqrtf((float)k);
    for (long long i = 0; i < m * k; i++) a[i] = urand();
    for (long long i = 0; i < k * n; i++) b[i] = urand() * bs;
    bn.a = a, bn.b = b;
    for (int i = 0; i < bn.m; i++) /* reference of the float inputs */
        for (int q = 0; q < bn.n; q++) {
            double s = 0;
            for (int l = 0; l < bn.k; l++) s += (double)a[(size_t)i * k + l] * b[(size_t)l * n + q];
            bn.ref[(size_t)i * n + q] = s;
            bn.ref_amax = fmax(bn.ref_amax, fabs(s));
        }
    npl_accel_backend_info bi;
    bn.api->backend_get_info(bn.be, &bi);
    printf("QNN HTP MatMul benchmark (%s, %s): A[%lld, %lld] x B[%lld, %lld] -> C[%lld, %lld], target %s\n",
           bi.kernel_family, bi.available_families, m, k, k, n, m, n, soc);
    printf("TIMES ARE SOFTWARE EMULATION of the HTP on this x86 CPU, not a phone's NPU.\n");
    printf("A ~ U[-1, 1], B ~ U[-1, 1] / sqrt(K); int8 = uint8 A x int8 B per channel, int16 = 16-bit A x int8 B per\n"
           "channel, A and C with static per-tensor scales; errors against the double product of float A, B.\n"
           "warmup %lld, iterations %lld\n\n", warmup, iters);
    printf("(a) static vs app_write weights\n");
    printf("%-9s %-10s %-6s %-5s %9s %10s %10s %10s %20s %9s %12s %11s %12s %10s %10s\n", "precision", "weight", "status", "valid",
           "ctx(ms)", "build(ms)", "final(ms)", "first(ms)", "exec(ms)", "free(ms)", "ctx_bin(MB)", "static(MB)",
           "runtime(MB)", "max_err", "mean_err");
    int rc = 0;
    double sum_max[3] = {0}, sum_mean[3] = {0};
    int cases[3] = {0};
    data d[3];
    int have[3] = {0};
    for (int i = 0; i < np; i++) {
        if (make_data(&bn, sel[i], b, &d[i])) { fprintf(stderr, "npullm bench-matmul: out of memory\n"); return 1; }
        have[i] = 1;
        for (int aw = 0; aw < 2; aw++) {
            row r;
            run_a(&bn, &d[i], aw, &r);
            const char *wm = aw ? "app_write" : "static";
            if (!r.ok) { printf("%-9s %-10s FAIL   %s\n", sel[i]->name, wm, r.err); rc = 1; continue; }
            char ex[40];
            snprintf(ex, sizeof ex, "%.2f±%.2f", r.mean, r.sd);
            int valid = r.max_err <= sel[i]->tol;
            rc |= !valid;
            printf("%-9s %-10s %-6s %-5s %9.3f %10.3f %10.3f %10.3f %20s %9.3f %12.4f %11.4f %12.4f %10.4f %10.4f\n", sel[i]->name,
                   wm, "OK", valid ? "PASS" : "FAIL", r.ctx, r.build, r.fin, r.first, ex, r.freet, (double)r.bin / (1 << 20),
                   aw ? 0.0 : (double)d[i].w_bytes / (1 << 20), (double)(d[i].a_bytes + (aw ? d[i].w_bytes : 0)) / (1 << 20),
                   r.max_err, r.mean_err);
            sum_max[i] = fmax(sum_max[i], r.max_err), sum_mean[i] += r.mean_err, cases[i]++;
        }
    }
    printf("\nprecision_error_summary\n%-9s %6s %10s %13s %10s\n", "precision", "cases", "max_err", "avg_mean_err", "tolerance");
    for (int i = 0; i < np; i++)
        printf("%-9s %6d %10.4f %13.4f %10.4f\n", sel[i]->name, cases[i], sum_max[i], cases[i] ? sum_mean[i] / cases[i] : 0, sel[i]->tol);

    printf("\n(b) switching weights, %lld rounds\n", rounds);
    printf("%-9s %-13s %-6s %10s %10s %10s %10s %10s %10s %20s %11s %11s %11s %10s\n", "precision", "mode", "status", "prep(ms)",
           "ssd_d(ms)", "ssd_g(ms)", "htp_w(ms)", "final(ms)", "first(ms)", "exec(ms)", "binary(B)", "static(B)", "runtime(B)",
           "max_err");
    char dir[] = "/tmp/npullm-bench-qnn-XXXXXX";
    if (!mkdtemp(dir)) { fprintf(stderr, "npullm bench-matmul: cannot make a temporary directory\n"); return 1; }
    for (int i = 0; i < np; i++) {
        for (int mode = 0; mode < 2; mode++) {
            srow r;
            const char *mn = mode ? "static_load" : "app_write";
            if (run_b(&bn, &d[i], mode, (int)rounds, dir, &r)) { printf("%-9s %-13s FAIL   %s\n", sel[i]->name, mn, r.err); rc = 1; continue; }
            char ex[40];
            snprintf(ex, sizeof ex, "%.2f±%.2f", r.mean, r.sd);
            printf("%-9s %-13s %-6s %10.2f %10.3f %10.3f %10.3f %10.2f %10.2f %20s %11llu %11llu %11llu %10.4f\n", sel[i]->name, mn,
                   "OK", r.prep, r.ssd_d, r.ssd_g, r.htp_w, r.fin, r.first, ex, (unsigned long long)r.binary,
                   (unsigned long long)r.stat, (unsigned long long)r.runtime, r.max_err);
        }
        printf("%-9s %-13s SKIP   the adapter declares no UPDATEABLE_STATIC tensors (QNN HTP refused that path on the "
               "reference's SM8750)\n", sel[i]->name, "update_static");
    }
    rmdir(dir);
    for (int i = 0; i < np; i++) if (have[i]) free_data(&d[i]);
    bn.api->device_free(bn.dev);
    bn.api->backend_free(bn.be);
    free(a), free(b), free(bn.ref);
    return rc;
}
