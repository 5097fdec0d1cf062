/* npullm bench-matmul: one MatMul A[m, k] x B[k, n] -> C[m, n] through the
 * accelerator ABI on vnpu, per precision (the weights quantized or
 * converted on the app side, as with QNN): (a) init / build / finalize /
 * first / exec / release / total times and errors against a double
 * product; (b) STATIC weights against APP_WRITE weights (bound at every
 * execute), with context-binary, static and per-run input sizes; and the CPU
 * backend's f32 matmul on the same shapes for comparison. Public API only:
 * the accelerator through npullm_plugin.h / npullm_accel.h, the CPU backend
 * through npullm_bench.h. */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench_matmul_flags.h"
#include "bench_matmul_qnn.h"
#include "cli_util.h"
#include "commands.h"
#include "npullm_accel.h"
#include "npullm_bench.h"
#include "npullm_plugin.h"

static const char *USAGE =
    "usage: npullm bench-matmul [--m M] [--k K] [--n N] [--warmup W] [--iters I]\n"
    "                           [--precisions fp32,fp16,bf16,int8,int16] [--threads T] [--kernel-family F]\n"
    "       npullm bench-matmul --accel qnn-htp [--soc NAME] ... (--accel qnn-htp --help)\n"
    "  defaults: m 512, k 2048, n 2048, warmup 3, iters 10, precisions fp32,fp16,int8,int16,\n"
    "  threads 0 (one per core), kernel family auto (amx | avx512 | avx2 | generic)\n";

#define MAX_PREC 8

typedef struct {
    const char *name;
    uint32_t dtype;
    void *w;            /* weights as given to the accelerator, [k, n] */
    size_t w_bytes;
    float *scales;      /* per output channel (int types) */
} precision;

typedef struct {
    int ok;
    char err[256], kernel[48];
    double init, build, fin, first, mean, sd, release, total;
    double max_err, mean_err;
    uint64_t bin_bytes;
    double static_mb, runtime_mb;
} result;

typedef struct {
    int m, k, n, warmup, iters, threads;
    const char *family;
    const float *a, *b;  /* A [m, k], B [k, n] */
    const double *ref;   /* C [m, n] */
} setup;

static void stats(const double *v, int n, double *mean, double *sd) {
    double s = 0, q = 0;
    for (int i = 0; i < n; i++) s += v[i];
    *mean = s / n;
    for (int i = 0; i < n; i++) q += (v[i] - *mean) * (v[i] - *mean);
    *sd = n > 1 ? sqrt(q / (n - 1)) : 0;
}

static void errors(const setup *s, const float *c, double *max_err, double *mean_err) {
    double mx = 0, sum = 0;
    const size_t cnt = (size_t)s->m * s->n;
    for (size_t i = 0; i < cnt; i++) {
        double e = fabs((double)c[i] - s->ref[i]);
        if (!(e <= mx)) mx = isnan(e) ? INFINITY : e;
        sum += e;
    }
    *max_err = mx;
    *mean_err = sum / (double)cnt;
}

/* ---- the double-precision reference, split over threads ---- */

typedef struct {
    const setup *s;
    double *ref;
    int ith, nth;
} ref_job;

static void *ref_task(void *arg) {
    const ref_job *j = arg;
    const setup *s = j->s;
    const int ith = j->ith, nth = j->nth;
    for (int i = s->m * ith / nth; i < s->m * (ith + 1) / nth; i++) {
        double *c = j->ref + (size_t)i * s->n;
        for (int q = 0; q < s->n; q++) c[q] = 0;
        for (int l = 0; l < s->k; l++) {
            const double av = s->a[(size_t)i * s->k + l];
            const float *br = s->b + (size_t)l * s->n;
            for (int q = 0; q < s->n; q++) c[q] += av * br[q];
        }
    }
    return NULL;
}

/* The reference on up to `threads` threads (0: one per core); the calling
 * thread takes the first share, and any thread that fails to start too. */
static void reference(const setup *s, double *ref, int threads) {
    enum { MAX_THREADS = 64 };
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    int nth = threads > 0 ? threads : cores > 0 ? (int)cores : 1;
    if (nth > MAX_THREADS) nth = MAX_THREADS;
    ref_job jobs[MAX_THREADS];
    pthread_t tid[MAX_THREADS];
    int started[MAX_THREADS] = {0};
    for (int i = 0; i < nth; i++) jobs[i] = (ref_job){s, ref, i, nth};
    for (int i = 1; i < nth; i++) started[i] = pthread_create(&tid[i], NULL, ref_task, &jobs[i]) == 0;
    ref_task(&jobs[0]);
    for (int i = 1; i < nth; i++) {
        if (started[i]) pthread_join(tid[i], NULL);
        else ref_task(&jobs[i]);
    }
}

/* ---- runners: opened (init, build, finalize, first run), executed in
 * interleaved rounds, closed. Interleaving the variants being compared
 * keeps a loaded machine from favouring whichever ran in a quiet moment. ---- */

typedef struct {
    int is_cpu;
    const setup *s;
    result r;
    float *c;
    double exec_sum;        /* all timed and warmup executions */
    double *times;
    int n_times;
    /* vnpu */
    const npl_accel_api *api;
    npl_accel_backend *be;
    npl_accel_device *dev;
    npl_accel_context *ctx;
    npl_accel_graph *g;
    npl_accel_buffer in[2], out;
    uint32_t n_in;
    /* cpu */
    npl_bench_matmul *bm;
} runner;

static int fail(runner *rn, const char *what, int st) {
    snprintf(rn->r.err, sizeof rn->r.err, "%s: status %d: %s", what, st, rn->be ? rn->api->last_error(rn->be) : "");
    return -1;
}

static int exec_once(runner *rn, double *ms) {
    const double t0 = cli_now();
    int st;
    if (rn->is_cpu) {
        if ((st = npl_bench_matmul_run(rn->bm, rn->c)))
            snprintf(rn->r.err, sizeof rn->r.err, "%s", npl_bench_matmul_last_error(rn->bm));
    } else if ((st = rn->api->graph_execute(rn->g, rn->in, rn->n_in, &rn->out, 1))) fail(rn, "execute", st);
    *ms = (cli_now() - t0) * 1e3;
    rn->exec_sum += *ms;
    return st;
}

static int open_vnpu(runner *rn, const npl_accel_api *api, const setup *s, const precision *p, int app_write) {
    char thr[16], err[200];
    memset(rn, 0, sizeof *rn);
    rn->s = s;
    rn->api = api;
    snprintf(thr, sizeof thr, "%d", s->threads);
    npl_accel_option opts[2] = {{"threads", thr}, {"kernel_family", s->family}};
    if (!(rn->c = malloc(sizeof(float) * (size_t)s->m * s->n)) ||
        !(rn->times = malloc(sizeof(double) * (size_t)(s->iters + 1)))) {
        snprintf(rn->r.err, sizeof rn->r.err, "out of memory");
        return -1;
    }
    const double t0 = cli_now();
    int st = api->backend_create(opts, 2, &rn->be, err, sizeof err);
    if (st) {
        snprintf(rn->r.err, sizeof rn->r.err, "backend_create: %s", err);
        return -1;
    }
    if ((st = api->device_create(rn->be, NULL, 0, &rn->dev)) || (st = api->context_create(rn->be, rn->dev, NULL, 0, &rn->ctx)))
        return fail(rn, "init", st);
    const double t1 = cli_now();
    rn->r.init = (t1 - t0) * 1e3;
    npl_accel_tensor_desc da, dw, dc;
    memset(&da, 0, sizeof da);
    da.name = "A";
    da.kind = NPL_ACCEL_APP_WRITE;
    da.dtype = NPL_ACCEL_DT_F32;
    da.rank = 2;
    da.dims[0] = (uint32_t)s->m;
    da.dims[1] = (uint32_t)s->k;
    dw = da;
    dw.name = "B";
    dw.kind = app_write ? NPL_ACCEL_APP_WRITE : NPL_ACCEL_STATIC;
    dw.dtype = p->dtype;
    dw.dims[0] = (uint32_t)s->k;
    dw.dims[1] = (uint32_t)s->n;
    if (p->scales) dw.quant = (npl_accel_quant){NPL_ACCEL_QUANT_PER_AXIS, 1, 0, (uint32_t)s->n, p->scales, NULL};
    if (!app_write) {
        dw.data = p->w;
        dw.data_size = p->w_bytes;
    }
    dc = da;
    dc.name = "C";
    dc.kind = NPL_ACCEL_APP_READ;
    dc.dims[1] = (uint32_t)s->n;
    npl_accel_tensor_id ids[3];
    if ((st = api->graph_create(rn->ctx, "matmul", &rn->g)) || (st = api->tensor_create(rn->g, &da, &ids[0])) ||
        (st = api->tensor_create(rn->g, &dw, &ids[1])) || (st = api->tensor_create(rn->g, &dc, &ids[2])))
        return fail(rn, "build", st);
    npl_accel_node_desc nd = {"matmul_0", "MatMul", NULL, 0, ids, 2, &ids[2], 1};
    if ((st = api->graph_add_node(rn->g, &nd))) return fail(rn, "add_node", st);
    const double t2 = cli_now();
    rn->r.build = (t2 - t1) * 1e3;
    if ((st = api->graph_finalize(rn->g))) return fail(rn, "finalize", st);
    rn->r.fin = (cli_now() - t2) * 1e3;
    rn->in[0] = (npl_accel_buffer){"A", (void *)s->a, (uint64_t)s->m * s->k * 4};
    rn->in[1] = (npl_accel_buffer){"B", p->w, p->w_bytes};
    rn->out = (npl_accel_buffer){"C", rn->c, (uint64_t)s->m * s->n * 4};
    rn->n_in = app_write ? 2 : 1;
    if (exec_once(rn, &rn->r.first)) return -1;
    errors(s, rn->c, &rn->r.max_err, &rn->r.mean_err);
    npl_accel_profile prof;
    api->graph_get_profile(rn->g, &prof);
    const char *mk = strstr(prof.detail, "matmul: ");
    snprintf(rn->r.kernel, sizeof rn->r.kernel, "%s", mk ? mk + 8 : "?");
    char *x = strstr(rn->r.kernel, " x");
    if (x) *x = 0;
    api->context_get_binary_size(rn->ctx, &rn->r.bin_bytes);
    rn->r.static_mb = app_write ? 0 : (double)p->w_bytes / (1 << 20);
    rn->r.runtime_mb = (double)(rn->in[0].size + (app_write ? p->w_bytes : 0)) / (1 << 20);
    return 0;
}

static int open_cpu(runner *rn, const setup *s) {
    memset(rn, 0, sizeof *rn);
    rn->is_cpu = 1;
    rn->s = s;
    rn->c = malloc(sizeof(float) * (size_t)s->m * s->n);
    rn->times = malloc(sizeof(double) * (size_t)(s->iters + 1));
    if (!rn->c || !rn->times) {
        snprintf(rn->r.err, sizeof rn->r.err, "out of memory");
        return -1;
    }
    if (!(rn->bm = npl_bench_matmul_new(s->m, s->k, s->n, s->a, s->b, s->threads, NULL, rn->r.err, sizeof rn->r.err)))
        return -1;
    snprintf(rn->r.kernel, sizeof rn->r.kernel, "%s", npl_bench_matmul_kernel(rn->bm));
    if (exec_once(rn, &rn->r.first)) return -1;
    errors(s, rn->c, &rn->r.max_err, &rn->r.mean_err);
    rn->r.static_mb = (double)s->k * s->n * 4 / (1 << 20);
    rn->r.runtime_mb = (double)s->m * s->k * 4 / (1 << 20);
    return 0;
}

static void close_runner(runner *rn) {
    const double t0 = cli_now();
    if (rn->ctx) rn->api->context_free(rn->ctx);
    if (rn->dev) rn->api->device_free(rn->dev);
    if (rn->be) rn->api->backend_free(rn->be);
    npl_bench_matmul_free(rn->bm);
    rn->r.release = (cli_now() - t0) * 1e3;
    rn->r.total = rn->r.init + rn->r.build + rn->r.fin + rn->exec_sum + rn->r.release;
    rn->ctx = NULL, rn->dev = NULL, rn->be = NULL, rn->bm = NULL;
    free(rn->c), free(rn->times);
    rn->c = NULL;
    rn->times = NULL;
}

/* warmup each, then iters rounds of one execution of each runner */
static int interleave(runner **rs, int n, const setup *s) {
    double ms;
    for (int w = 0; w < s->warmup; w++)
        for (int i = 0; i < n; i++)
            if (exec_once(rs[i], &ms)) return -1;
    for (int it = 0; it < s->iters; it++)
        for (int i = 0; i < n; i++)
            if (exec_once(rs[i], &rs[i]->times[it])) return -1;
    for (int i = 0; i < n; i++) stats(rs[i]->times, s->iters, &rs[i]->r.mean, &rs[i]->r.sd);
    return 0;
}

/* ---- weights per precision (app-side conversion / quantization) ---- */

static int make_precision(const setup *s, const char *name, precision *p) {
    const size_t kn = (size_t)s->k * s->n;
    memset(p, 0, sizeof *p);
    p->name = name;
    int bits = 0;
    if (!strcmp(name, "fp32")) p->dtype = NPL_ACCEL_DT_F32, p->w_bytes = kn * 4;
    else if (!strcmp(name, "fp16")) p->dtype = NPL_ACCEL_DT_F16, p->w_bytes = kn * 2;
    else if (!strcmp(name, "bf16")) p->dtype = NPL_ACCEL_DT_BF16, p->w_bytes = kn * 2;
    else if (!strcmp(name, "int8")) p->dtype = NPL_ACCEL_DT_INT8, p->w_bytes = kn, bits = 8;
    else if (!strcmp(name, "int16")) p->dtype = NPL_ACCEL_DT_INT16, p->w_bytes = kn * 2, bits = 16;
    else {
        fprintf(stderr, "npullm bench-matmul: --precisions: unknown precision '%s'\n", name);
        return -1;
    }
    if (!(p->w = malloc(p->w_bytes)) || (bits && !(p->scales = malloc(sizeof(float) * (size_t)s->n)))) {
        fprintf(stderr, "npullm bench-matmul: out of memory\n");
        return -1;
    }
    if (p->dtype == NPL_ACCEL_DT_F32) memcpy(p->w, s->b, kn * 4);
    for (size_t i = 0; p->dtype == NPL_ACCEL_DT_F16 && i < kn; i++) ((uint16_t *)p->w)[i] = npl_accel_f32_to_f16(s->b[i]);
    for (size_t i = 0; p->dtype == NPL_ACCEL_DT_BF16 && i < kn; i++) ((uint16_t *)p->w)[i] = npl_accel_f32_to_bf16(s->b[i]);
    if (bits) { /* symmetric per output channel */
        const float lim = bits == 8 ? 127.0f : 32767.0f;
        for (int q = 0; q < s->n; q++) {
            float amax = 0;
            for (int l = 0; l < s->k; l++) amax = fmaxf(amax, fabsf(s->b[(size_t)l * s->n + q]));
            p->scales[q] = amax > 0 ? amax / lim : 1.0f;
        }
        for (int l = 0; l < s->k; l++)
            for (int q = 0; q < s->n; q++) {
                float v = nearbyintf(s->b[(size_t)l * s->n + q] / p->scales[q]);
                if (bits == 8) ((int8_t *)p->w)[(size_t)l * s->n + q] = (int8_t)v;
                else ((int16_t *)p->w)[(size_t)l * s->n + q] = (int16_t)v;
            }
    }
    return 0;
}

static void print_load(void) {
    FILE *fp = fopen("/proc/loadavg", "r");
    char line[128] = "?";
    if (fp) {
        if (!fgets(line, sizeof line, fp)) snprintf(line, sizeof line, "?\n");
        fclose(fp);
    }
    printf("machine load (1/5/15 min, running/total): %s", line);
}

/* How a time compares with a reference time, in words that match the numbers:
 * "1.30x faster" only when it is shorter, "1.30x slower" when longer. */
static const char *speed_phrase(double ms, double ref_ms, char *buf, size_t n) {
    if (ms < ref_ms * 0.995) snprintf(buf, n, "%.2fx faster", ref_ms / ms);
    else if (ms > ref_ms * 1.005) snprintf(buf, n, "%.2fx slower", ms / ref_ms);
    else snprintf(buf, n, "as fast (within 0.5%%)");
    return buf;
}

static uint64_t rng = 0x853c49e6748fea9bull;
static float urand(void) {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (float)((rng >> 11) * 0x1p-53) * 2.0f - 1.0f;
}

int npl_cmd_bench_matmul(int argc, char **argv) {
    bm_flags f = {512, 2048, 2048, 3, 10};
    long long threads = 0;
    const char *prec_list = "fp32,fp16,int8,int16", *family = "auto", *v;
    for (int i = 1; i + 1 < argc; i++) /* --accel qnn-htp: Qualcomm QNN HTP, its own flags */
        if (!strcmp(argv[i], "--accel") && !strcmp(argv[i + 1], "qnn-htp")) return npl_cmd_bench_matmul_qnn(argc, argv);
    static const cli_opt OPTS[] = {
        BM_FLAG_OPTS, {"--threads", "-t", 1}, {"--precisions", NULL, 1}, {"--kernel-family", NULL, 1}, {NULL, NULL, 0}};
    for (int i = 1; i < argc; i++) {
        const char *a;
        int kind = cli_next("bench-matmul", OPTS, argc, argv, &i, &a, &v);
        if (kind == CLI_HELP) { fputs(USAGE, stdout); return 0; }
        if (kind != CLI_FLAG) return 2;
        const int common = bm_flag(a, v, &f);
        if (common) { if (common < 0) return 2; }
        else if (!strcmp(a, "--threads")) { if (cli_int("bench-matmul", a, v, 0, 1024, &threads)) return 2; }
        else if (!strcmp(a, "--precisions")) prec_list = v;
        else if (!strcmp(a, "--kernel-family")) family = v;
        else if (!strcmp(a, "--accel")) { if (strcmp(v, "vnpu")) { fprintf(stderr, "npullm bench-matmul: --accel: '%s' is not vnpu or qnn-htp\n", v); return 2; } }
    }
    if (bm_check_size(&f)) return 2;
    const long long m = f.m, k = f.k, n = f.n, warmup = f.warmup, iters = f.iters;
    setup s = {(int)m, (int)k, (int)n, (int)warmup, (int)iters, (int)threads, family, NULL, NULL, NULL};
    float *a = malloc(sizeof(float) * (size_t)(m * k)), *b = malloc(sizeof(float) * (size_t)(k * n));
    double *ref = malloc(sizeof(double) * (size_t)(m * n));
    precision prec[MAX_PREC];
    int np = 0, rc = 0;
    if (!a || !b || !ref) { fprintf(stderr, "npullm bench-matmul: out of memory\n"); return 1; }
    const float bs = 1.0f / sqrtf((float)k);
    for (long long i = 0; i < m * k; i++) a[i] = urand();
    for (long long i = 0; i < k * n; i++) b[i] = urand() * bs;
    s.a = a, s.b = b, s.ref = ref;
    reference(&s, ref, (int)threads);
    char list[256];
    snprintf(list, sizeof list, "%s", prec_list);
    for (char *save = NULL, *tok = strtok_r(list, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        if (np == MAX_PREC) { fprintf(stderr, "npullm bench-matmul: at most %d precisions\n", MAX_PREC); return 2; }
        if (make_precision(&s, tok, &prec[np])) return 2;
        np++;
    }
    char err[256];
    npl_accel_lib *lib = npl_accel_lib_open("vnpu", NULL, NULL, err, sizeof err);
    if (!lib) { fprintf(stderr, "npullm bench-matmul: %s\n", err); return 1; }
    const npl_accel_api *api = npl_accel_lib_api(lib);
    npl_accel_backend *be;
    npl_accel_backend_info bi;
    npl_accel_option fo = {"kernel_family", family};
    if (api->backend_create(&fo, 1, &be, err, sizeof err)) {
        fprintf(stderr, "npullm bench-matmul: %s\n", err);
        npl_accel_lib_close(lib);
        return 1;
    }
    api->backend_get_info(be, &bi);
    api->backend_free(be);
    printf("vnpu MatMul benchmark: A[%lld, %lld] x B[%lld, %lld] -> C[%lld, %lld], warmup %lld, iterations %lld\n",
           m, k, k, n, m, n, warmup, iters);
    printf("kernel family %s (available: %s), %u threads\n", bi.kernel_family, bi.available_families, bi.n_threads);
    printf("A ~ U[-1, 1], B ~ U[-1, 1] / sqrt(K); B converted / quantized (int: symmetric per output channel) on the\n"
           "app side; int activations quantized per row at run time; errors against the double product of float A, B.\n"
           "STATIC and APP_WRITE runs of a precision are interleaved, and so are the CPU backend and the best one.\n");
    print_load();
    runner *S = calloc((size_t)np, sizeof *S), *A = calloc((size_t)np, sizeof *A), cpu;
    result *rs = calloc((size_t)np, sizeof *rs), *ra = calloc((size_t)np, sizeof *ra), rcpu;
    int best = -1;
    if (!S || !A || !rs || !ra) { fprintf(stderr, "npullm bench-matmul: out of memory\n"); return 1; }
    for (int i = 0; i < np; i++) {
        int ok = !open_vnpu(&S[i], api, &s, &prec[i], 0) && !open_vnpu(&A[i], api, &s, &prec[i], 1);
        runner *pair[2] = {&S[i], &A[i]};
        if (!ok || interleave(pair, 2, &s)) {
            fprintf(stderr, "%s: %s%s\n", prec[i].name, S[i].r.err, A[i].r.err);
            rc = 1;
        } else {
            S[i].r.ok = A[i].r.ok = 1;
            if (best < 0 || S[i].r.mean < S[best].r.mean) best = i;
        }
        close_runner(&A[i]);
        ra[i] = A[i].r;
    }
    int cpu_ok = !open_cpu(&cpu, &s);
    if (cpu_ok && best >= 0) { /* head to head with the best precision */
        runner *pair[2] = {&cpu, &S[best]};
        result keep = S[best].r;
        const double keep_sum = S[best].exec_sum;
        cpu_ok = !interleave(pair, 2, &s);
        S[best].exec_sum = keep_sum;
        S[best].r.mean = keep.mean, S[best].r.sd = keep.sd; /* the tables keep its first measurement */
    } else if (cpu_ok) {
        runner *one[1] = {&cpu};
        cpu_ok = !interleave(one, 1, &s);
    }
    if (!cpu_ok) fprintf(stderr, "cpu backend: %s\n", cpu.r.err), rc = 1;
    cpu.r.ok = cpu_ok;
    close_runner(&cpu);
    rcpu = cpu.r;
    for (int i = 0; i < np; i++) {
        close_runner(&S[i]);
        rs[i] = S[i].r;
    }
    free(S), free(A);
    npl_accel_lib_close(lib); /* every backend of its table is freed */

    printf("\n(a) precisions, STATIC weights\n");
    printf("%-9s %-12s %9s %9s %10s %9s %16s %11s %10s %12s %12s\n", "precision", "kernel", "init(ms)", "build(ms)",
           "final(ms)", "first(ms)", "exec(ms)", "release(ms)", "total(ms)", "max_abs_err", "mean_abs_err");
    for (int i = 0; i < np; i++) {
        const result *r = &rs[i];
        if (!r->ok) { printf("%-9s FAIL %s\n", prec[i].name, r->err); continue; }
        char ex[32];
        snprintf(ex, sizeof ex, "%.3f±%.3f", r->mean, r->sd);
        printf("%-9s %-12s %9.3f %9.3f %10.3f %9.3f %16s %11.3f %10.3f %12.6f %12.6f\n", prec[i].name, r->kernel, r->init,
               r->build, r->fin, r->first, ex, r->release, r->total, r->max_err, r->mean_err);
    }
    printf("\n(b) STATIC vs APP_WRITE weights\n");
    printf("%-9s %-10s %12s %11s %12s %10s %10s %16s %12s %12s\n", "precision", "weight", "ctx_bin(MB)", "static(MB)",
           "runtime(MB)", "final(ms)", "first(ms)", "exec(ms)", "max_abs_err", "mean_abs_err");
    for (int i = 0; i < np; i++)
        for (int aw = 0; aw < 2; aw++) {
            const result *r = aw ? &ra[i] : &rs[i];
            if (!r->ok) { printf("%-9s %-10s FAIL %s\n", prec[i].name, aw ? "app_write" : "static", r->err); continue; }
            char ex[32];
            snprintf(ex, sizeof ex, "%.3f±%.3f", r->mean, r->sd);
            printf("%-9s %-10s %12.4f %11.4f %12.4f %10.3f %10.3f %16s %12.6f %12.6f\n", prec[i].name,
                   aw ? "app_write" : "static", (double)r->bin_bytes / (1 << 20), r->static_mb, r->runtime_mb, r->fin,
                   r->first, ex, r->max_err, r->mean_err);
        }
    if (rcpu.ok) {
        printf("%-9s %-10s %12s %11.4f %12.4f %10s %10.3f %8.3f±%-7.3f %12.6f %12.6f   <- CPU backend f32 matmul (%s)\n",
               "fp32", "cpu", "-", (double)k * n * 4 / (1 << 20), (double)m * k * 4 / (1 << 20), "-", rcpu.first,
               rcpu.mean, rcpu.sd, rcpu.max_err, rcpu.mean_err, rcpu.kernel);
        if (best >= 0 && rs[best].mean > 0 && rcpu.mean > 0) {
            /* the two exec times printed in the tables above, nothing else */
            char ph[48];
            printf("\nbest vnpu precision against the CPU backend: vnpu %s (%s, static) %.3f ms vs CPU backend f32 "
                   "(%s) %.3f ms: vnpu is %s\n", prec[best].name, rs[best].kernel, rs[best].mean, rcpu.kernel,
                   rcpu.mean, speed_phrase(rs[best].mean, rcpu.mean, ph, sizeof ph));
        }
    }
    print_load();
    for (int i = 0; i < np; i++) free(prec[i].w), free(prec[i].scales);
    free(a), free(b), free(ref), free(rs), free(ra);
    return rc;
}
