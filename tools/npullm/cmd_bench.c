/* npullm bench: llama-bench-style prefill (pp) and decode (tg) throughput,
 * mean ± std over repetitions, with memory figures read from /proc. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli_util.h"
#include "commands.h"
#include "npullm.h"

static const char *USAGE =
    "usage: npullm bench -m MODEL [-p N[,N...]] [-n N] [-d N] [--pg P,N] [-r REPS] [-t THREADS] [-c CTX] [-ub N] [-o md|csv|json] [--profile] [--isa 0-3] [--no-repack | --repack-mib N]\n"
    "  -p  prompt lengths for prefill tests (default 512; 0 to skip)\n"
    "  -n  tokens generated for the decode test (default 128; 0 to skip)\n"
    "  -d  depth: tokens already in the KV cache before each test (default 0)\n"
    "  --pg P,N  combined test: prefill P tokens then generate N, timed together\n"
    "  -r  repetitions (default 3); -t threads (default: one per core)\n"
    "  -ub N  rows per forward pass in prefill (default 512, as llama-bench's\n"
    "         n_ubatch and the engine's prefill chunk; bounds activation memory)\n"
    "  --isa  caps the kernel family: 0 generic C, 1 AVX2, 2 AVX-512, 3 AMX (aarch64: 1 NEON,\n"
    "         2 dotprod, 3 i8mm); the best this CPU has by default. The table's isa column is what ran\n"
    "  --profile  a package: print the accelerator's time per graph and op type to stderr at the end\n"
    "  --repack-mib N  at most N MiB of matmul weights repacked at open where the kernel family reads\n"
    "         them faster (AVX2: q5_0, q4_1, q4_K, q6_K; AVX-512: q5_0, q4_1, q4_K; AMX: q4_1; 8 rows side by side in anonymous\n"
    "         memory; the same results; default 48); --no-repack (= --repack-mib 0): every weight as the file has it\n";

typedef struct { long rss_anon_kb, rss_file_kb, hwm_kb; } mem_info;

static mem_info read_mem(void) {
    mem_info m = {0, 0, 0};
    FILE *fp = fopen("/proc/self/status", "r");
    if (!fp) return m;
    char line[256];
    while (fgets(line, sizeof(line), fp)) {
        sscanf(line, "RssAnon: %ld", &m.rss_anon_kb);
        sscanf(line, "RssFile: %ld", &m.rss_file_kb);
        sscanf(line, "VmHWM: %ld", &m.hwm_kb);
    }
    fclose(fp);
    return m;
}

static double cpu_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Prefill of n tokens at p0 in forward passes of at most ub rows. */
static int prefill(npl_session *s, const int32_t *tok, int n, int p0, int ub) {
    for (int i = 0; i < n; i += ub)
        if (!npl_session_forward(s, tok + i, n - i < ub ? n - i : ub, p0 + i, 1, NULL)) return -1;
    return 0;
}

static void stats(const double *v, int n, double *mean, double *sd) {
    double s = 0, q = 0;
    for (int i = 0; i < n; i++) s += v[i];
    *mean = s / n;
    for (int i = 0; i < n; i++) q += (v[i] - *mean) * (v[i] - *mean);
    *sd = n > 1 ? sqrt(q / (n - 1)) : 0;
}

int npl_cmd_bench(int argc, char **argv) {
    const char *model = NULL, *fmt = "md", *v;
    int pp[16] = {512}, n_pp = 1;
    long long n_gen = 128, reps = 3, threads = 0, ctx = 0, depth = 0, ubatch = 512, isa_cap = -1;
    int profile = 0;
    long long repack = -1; /* MiB of repacked weights; -1: the default */
    int pg[2] = {0, 0};
    static const cli_opt OPTS[] = {
        {"-m", "--model", 1}, {"-p", "--n-prompt", 1}, {"-n", "--n-gen", 1}, {"-d", "--n-depth", 1},
        {"--pg", "-pg", 1}, {"-r", "--repetitions", 1}, {"-t", "--threads", 1}, {"-c", "--ctx-size", 1},
        {"-ub", "--ubatch-size", 1}, {"-o", "--output", 1}, {"--profile", NULL, 0}, {"--isa", NULL, 1}, {"--no-repack", NULL, 0}, {"--repack-mib", NULL, 1}, {NULL, NULL, 0}};
    for (int i = 1; i < argc; i++) {
        const char *a;
        int k = cli_next("bench", OPTS, argc, argv, &i, &a, &v);
        if (k == CLI_HELP) { fputs(USAGE, stdout); return 0; }
        if (k != CLI_FLAG) return 2;
        if (!strcmp(a, "-m")) model = v;
        else if (!strcmp(a, "--profile")) profile = 1;
        else if (!strcmp(a, "-p")) {
            if (!strcmp(v, "0")) n_pp = 0;
            else if ((n_pp = cli_int_list("bench", a, v, pp, 16)) < 0) return 2;
        } else if (!strcmp(a, "-n")) { if (cli_int("bench", a, v, 0, 1 << 16, &n_gen)) return 2; }
        else if (!strcmp(a, "-d")) { if (cli_int("bench", a, v, 0, 1 << 20, &depth)) return 2; }
        else if (!strcmp(a, "--pg")) {
            if (cli_int_list("bench", a, v, pg, 2) != 2) { fprintf(stderr, "npullm bench: --pg needs P,N\n"); return 2; }
        }
        else if (!strcmp(a, "-r")) { if (cli_int("bench", a, v, 1, 1000, &reps)) return 2; }
        else if (!strcmp(a, "-t")) { if (cli_int("bench", a, v, 1, 256, &threads)) return 2; }
        else if (!strcmp(a, "-c")) { if (cli_int("bench", a, v, 1, 1 << 20, &ctx)) return 2; }
        else if (!strcmp(a, "-ub")) { if (cli_int("bench", a, v, 1, 1 << 20, &ubatch)) return 2; }
        else if (!strcmp(a, "--isa")) { if (cli_int("bench", a, v, 0, 3, &isa_cap)) return 2; }
        else if (!strcmp(a, "--no-repack")) repack = 0;
        else if (!strcmp(a, "--repack-mib")) { if (cli_int("bench", a, v, 0, 1 << 20, &repack)) return 2; }
        else if (!strcmp(a, "-o")) {
            if (strcmp(v, "md") && strcmp(v, "csv") && strcmp(v, "json")) {
                fprintf(stderr, "npullm bench: -o: '%s' is not md, csv or json\n", v);
                return 2;
            }
            fmt = v;
        }
    }
    if (!model) return cli_missing("bench", "-m MODEL");
    int need = (int)n_gen + 1;
    for (int i = 0; i < n_pp; i++) if (pp[i] > need) need = pp[i];
    if (pg[0] + pg[1] > need) need = pg[0] + pg[1];
    need += (int)depth;
    npl_model_params mp = npl_model_default_params();
    mp.n_threads = (int)threads;
    mp.kernel_family = (int)isa_cap;
    mp.repack_mib = repack < 0 ? 0 : repack == 0 ? -1 : (int)repack;
    npl_session_params sp = npl_session_default_params();
    sp.n_ctx = ctx ? (int)ctx : need;
    sp.profile = profile;
    char err[512];
    mem_info m0 = read_mem();
    npl_model *mdl = npl_model_open(model, &mp, NULL, err, sizeof(err));
    npl_session *r = mdl ? npl_session_new(mdl, &sp, NULL, err, sizeof(err)) : NULL;
    if (!r) {
        fprintf(stderr, "npullm bench: %s\n", err);
        npl_model_close(mdl);
        return 1;
    }
    mem_info m_open = read_mem();
    const int n_vocab = npl_model_n_vocab(mdl);
    const char *arch = npl_model_arch(mdl);
    if (need > npl_session_n_ctx(r)) {
        fprintf(stderr, "npullm bench: tests need %d positions, context is %d\n", need, npl_session_n_ctx(r));
        npl_session_free(r);
        npl_model_close(mdl);
        return 1;
    }
    int32_t *tok = malloc(sizeof(int32_t) * (size_t)need);
    for (int i = 0; i < need; i++) tok[i] = (int32_t)((i * 7919 + 13) % n_vocab); /* fixed pseudo-random ids */
    double *tps = malloc(sizeof(double) * (size_t)reps), *cpu = malloc(sizeof(double) * (size_t)reps);
    int first = 1, rc = 0;
    /* what ran, not what was asked: -t absent means one thread per core */
    const int n_threads = npl_session_n_threads(r);
    const char *isa = npl_session_kernel_family(r), *cpu_model = cli_cpu_model();
    if (ctx) cli_warn_ctx("bench", "-c", (int)ctx, npl_model_n_ctx_train(mdl));
    if (!strcmp(fmt, "md")) {
        printf("CPU: %s\n\n", cpu_model);
        printf("| model | arch | isa | threads | test | t/s | cpu s/run |\n|---|---|---|---|---|---|---|\n");
    } else if (!strcmp(fmt, "csv")) printf("model,arch,isa,threads,cpu,test,n,tps_mean,tps_std,cpu_s\n");
    else printf("[\n");
    mem_info m_first = m_open;
    int n_tests = n_pp + (n_gen > 0) + (pg[0] > 0);
    for (int t = 0; t < n_tests; t++) {
        int kind = t < n_pp ? 0 : (t == n_pp && n_gen > 0) ? 1 : 2; /* pp, tg, pg */
        int n = kind == 0 ? pp[t] : kind == 1 ? (int)n_gen : pg[0] + pg[1];
        for (int rep = 0; rep < reps; rep++) {
            /* the context already holds `depth` tokens (not timed) */
            if (depth && prefill(r, tok, (int)depth, 0, (int)ubatch)) { rc = 1; break; }
            int p0 = (int)depth;
            double c0 = cpu_seconds(), t0 = cli_now();
            if (kind == 0) {
                if (prefill(r, tok, n, p0, (int)ubatch)) { rc = 1; break; }
            } else {
                int n_pre = kind == 2 ? pg[0] : 0, n_dec = kind == 2 ? pg[1] : n;
                if (n_pre && prefill(r, tok, n_pre, p0, (int)ubatch)) { rc = 1; break; }
                for (int i = 0; i < n_dec; i++)
                    if (!npl_session_forward(r, tok + n_pre + i, 1, p0 + n_pre + i, 1, NULL)) { rc = 1; break; }
            }
            tps[rep] = n / (cli_now() - t0);
            cpu[rep] = cpu_seconds() - c0;
            if (first) { m_first = read_mem(); first = 0; }
        }
        if (rc) { fprintf(stderr, "npullm bench: %s\n", npl_session_last_error(r)); break; }
        double mean, sd, cm, csd;
        stats(tps, (int)reps, &mean, &sd);
        stats(cpu, (int)reps, &cm, &csd);
        char test[48];
        if (kind == 2) snprintf(test, sizeof(test), "pp%d+tg%d", pg[0], pg[1]);
        else snprintf(test, sizeof(test), "%s%d", kind == 0 ? "pp" : "tg", n);
        if (depth) snprintf(test + strlen(test), sizeof(test) - strlen(test), " @ d%lld", depth);
        const char *name = strrchr(model, '/') ? strrchr(model, '/') + 1 : model;
        if (!strcmp(fmt, "md"))
            printf("| %s | %s | %s | %d | %s | %.2f ± %.2f | %.3f |\n", name, arch, isa, n_threads, test, mean,
                   sd, cm);
        else if (!strcmp(fmt, "csv"))
            printf("%s,%s,%s,%d,\"%s\",%s,%d,%.3f,%.3f,%.4f\n", name, arch, isa, n_threads, cpu_model, test, n,
                   mean, sd, cm);
        else {
            char jn[512], jc[300];
            double ms = 0; /* wall ms per token, mean over reps: precise where tps rounds to 0.01 (emulation) */
            for (int k = 0; k < (int)reps; k++) ms += 1000.0 / tps[k] / (double)reps;
            printf("%s  {\"model\": \"%s\", \"arch\": \"%s\", \"isa\": \"%s\", \"threads\": %d, \"cpu\": \"%s\", "
                   "\"test\": \"%s\", \"n\": %d, \"tps_mean\": %.3f, \"tps_std\": %.3f, \"cpu_s\": %.4f, \"ms_per_token\": %.3f}",
                   t ? ",\n" : "", cli_json_esc(name, jn, sizeof jn), arch, isa, n_threads,
                   cli_json_esc(cpu_model, jc, sizeof jc), test, n, mean, sd, cm, ms);
        }
    }
    npl_session_free(r);
    npl_model_close(mdl);
    mem_info m_close = read_mem();
    if (!strcmp(fmt, "json")) printf("\n]\n");
    fprintf(!strcmp(fmt, "md") ? stdout : stderr,
            "\nmemory (MiB)     RssAnon  RssFile  VmHWM\n"
            "  before open  %9.1f %8.1f %6.1f\n  after open   %9.1f %8.1f %6.1f\n"
            "  after first  %9.1f %8.1f %6.1f\n  after close  %9.1f %8.1f %6.1f\n",
            m0.rss_anon_kb / 1024.0, m0.rss_file_kb / 1024.0, m0.hwm_kb / 1024.0, m_open.rss_anon_kb / 1024.0,
            m_open.rss_file_kb / 1024.0, m_open.hwm_kb / 1024.0, m_first.rss_anon_kb / 1024.0,
            m_first.rss_file_kb / 1024.0, m_first.hwm_kb / 1024.0, m_close.rss_anon_kb / 1024.0,
            m_close.rss_file_kb / 1024.0, m_close.hwm_kb / 1024.0);
    free(tok);
    free(tps);
    free(cpu);
    return rc;
}
