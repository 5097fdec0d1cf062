/* Decode KV-length buckets (issue 16 item 4): a package with decode graphs
 * at several KV lengths runs, for every decode step, the graph with the
 * fewest cache rows that holds the history. The graphs that ran come from
 * the accel kernel's profile lines on stderr ("accel profile: FILE: graph
 * NAME: N executions", printed when the package closes with profile on). */
#ifndef NPL_TEST_BUCKETS_COMMON_H
#define NPL_TEST_BUCKETS_COMMON_H
#include <fcntl.h>
#include <unistd.h>

#include "package_compare.h"

/* executions of graph `name` in the captured profile lines (0: it did not run) */
static long bucket_runs(const char *log, const char *name) {
    char key[160];
    snprintf(key, sizeof key, ": graph %s: ", name);
    const char *p = strstr(log, key);
    return p ? strtol(p + strlen(key), NULL, 10) : 0;
}

/* A prompt of n_hist tokens, then n_dec decode steps, through the CPU path
 * (model) and the package (pkg, profile on), fresh caches: the largest
 * |logit difference| over every step; log gets the package's profile lines. */
static double bucket_session(const char *model, const char *pkg, const char *pdir, int n_ctx, int n_hist, int n_dec,
                             char *log, size_t loglen, double *big) {
    char err[1024], tmp[64];
    snprintf(tmp, sizeof tmp, "/tmp/npl_test_buckets_%d.err", (int)getpid());
    npl_runner_params rp = npl_runner_default_params();
    rp.n_threads = 2;
    rp.n_ctx = n_ctx;
    rp.plugin_dir = pdir;
    npl_runner *cpu = npl_runner_open(model, &rp, err, sizeof err);
    rp.profile = 1;
    fflush(stderr);
    const int saved = dup(2), fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    CHECK(saved >= 0 && fd >= 0);
    if (fd >= 0) dup2(fd, 2);
    npl_runner *p = cpu ? npl_runner_open(pkg, &rp, err, sizeof err) : NULL;
    double worst = -1;
    if (cpu && p) {
        const int n_vocab = npl_runner_hparams(cpu)->n_vocab;
        worst = package_compare(cpu, p, n_hist, n_dec, n_vocab, 31, 7);
        /* the logits' scale: the CPU path's largest |logit| at the first position */
        const float *l0 = npl_runner_forward(cpu, (const int32_t[]){7}, 1, 0, 1, err, sizeof err);
        *big = 0;
        for (int v = 0; l0 && v < n_vocab; v++) *big = fmax(*big, fabs(l0[v]));
    }
    npl_runner_close(p); /* prints the profile */
    fflush(stderr);
    if (saved >= 0) dup2(saved, 2), close(saved);
    if (fd >= 0) close(fd);
    if (!cpu || !p) fprintf(stderr, "open: %s\n", err);
    CHECK(cpu != NULL && p != NULL);
    npl_runner_close(cpu);
    FILE *f = fopen(tmp, "r");
    log[0] = 0;
    if (f) log[fread(log, 1, loglen - 1, f)] = 0, fclose(f);
    remove(tmp);
    return worst;
}
#endif
