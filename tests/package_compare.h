/* Largest |logit difference| between the CPU path and a package over a
 * prompt of n tokens and n_dec decode steps after it (tokens
 * (i * mul + add) % n_vocab); NaN counts as the worst. */
#ifndef NPL_TEST_PACKAGE_COMPARE_H
#define NPL_TEST_PACKAGE_COMPARE_H
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "llm/runner.h"

/* Runs the prompt and the decode steps on both; adds to *worst the largest
 * |difference| (NaN counts as the worst) and, when se is given, to *se the
 * squared differences and to *ss the CPU logits' squares. */
static inline void package_diff(npl_runner *cpu, npl_runner *pkg, int n, int n_dec, int n_vocab, int mul, int add, double *worst,
                                double *se, double *ss) {
    char err[512];
    int32_t *tok = malloc(sizeof(int32_t) * (size_t)(n + n_dec));
    float *a = malloc(sizeof(float) * (size_t)n_vocab);
    for (int i = 0; i < n + n_dec; i++) tok[i] = (int32_t)((i * mul + add) % n_vocab);
    for (int step = 0; step <= n_dec; step++) {
        int len = step ? 1 : n, pos0 = step ? n + step - 1 : 0;
        const float *la = npl_runner_forward(cpu, tok + pos0, len, pos0, 1, err, sizeof err);
        CHECK(la != NULL);
        if (!la) break;
        memcpy(a, la, sizeof(float) * (size_t)n_vocab);
        const float *lb = npl_runner_forward(pkg, tok + pos0, len, pos0, 1, err, sizeof err);
        CHECK(lb != NULL);
        if (!lb) {
            fprintf(stderr, "package forward: %s\n", err);
            break;
        }
        for (int v = 0; v < n_vocab; v++) {
            double d = fabs((double)a[v] - (double)lb[v]);
            if (!(d <= *worst)) *worst = d;
            if (se) *se += d * d, *ss += (double)a[v] * a[v];
        }
    }
    free(a);
    free(tok);
}

static inline double package_compare(npl_runner *cpu, npl_runner *pkg, int n, int n_dec, int n_vocab, int mul, int add) {
    double worst = 0;
    package_diff(cpu, pkg, n, n_dec, n_vocab, mul, add, &worst, NULL, NULL);
    return worst;
}
#endif
