/* Two engines in one process with different arithmetic settings
 * (npl_engine_params.arithmetic: ours, llama.cpp's with and without flash
 * attention) each give their own logits: open together, run interleaved in
 * one thread and then side by side in two threads, every engine's logits
 * equal, bit for bit, what it gives when it runs alone; and the settings'
 * logits differ from each other, so the comparison can tell them apart.
 * Gemma 3 270M: RoPE, GEGLU and attention all take the arithmetic. */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "npullm.h"

#define N_PROMPT 24
#define N_DEC 3
#define N_STEPS (1 + N_DEC) /* the prompt, then one token at a time */

static const char *model;
static int n_vocab;
static int32_t ids[N_PROMPT + N_DEC];

static npl_engine *open_engine(int arith) {
    npl_engine_params p = npl_engine_default_params();
    p.n_ctx = 64;
    p.n_threads = 2;
    p.arithmetic = arith;
    char err[512];
    npl_engine *e = npl_engine_open(model, &p, err, sizeof err);
    if (!e) fprintf(stderr, "open %s (arithmetic %d): %s\n", model, arith, err);
    return e;
}

/* Step s of the sequence on e: its logits into out[n_vocab]; 0 or -1. */
static int step(npl_engine *e, int s, float *out) {
    npl_status st;
    const float *l = s == 0 ? npl_engine_eval(e, ids, N_PROMPT, &st) : npl_engine_eval(e, ids + N_PROMPT + s - 1, 1, &st);
    if (!l) {
        fprintf(stderr, "eval step %d: %s\n", s, npl_engine_last_error(e));
        return -1;
    }
    memcpy(out, l, sizeof(float) * (size_t)n_vocab);
    return 0;
}

static float *alloc_steps(void) { return calloc((size_t)N_STEPS * (size_t)n_vocab, sizeof(float)); }

/* The whole sequence on an engine of its own, opened and closed here. */
static int run_alone(int arith, float *out) {
    npl_engine *e = open_engine(arith);
    int rc = e ? 0 : -1;
    for (int s = 0; !rc && s < N_STEPS; s++) rc = step(e, s, out + (size_t)s * (size_t)n_vocab);
    npl_engine_close(e);
    return rc;
}

static double max_diff(const float *a, const float *b) {
    double m = 0;
    for (size_t i = 0; i < (size_t)N_STEPS * (size_t)n_vocab; i++) {
        const double d = fabs((double)a[i] - (double)b[i]);
        if (!(d <= m)) m = d; /* NaN counts as the worst */
    }
    return m;
}

typedef struct {
    npl_engine *e;
    float *out;
    int rc;
} thread_job;

static void *thread_run(void *arg) {
    thread_job *j = arg;
    for (int s = 0; !j->rc && s < N_STEPS; s++) j->rc = step(j->e, s, j->out + (size_t)s * (size_t)n_vocab);
    return NULL;
}

int main(void) {
    model = getenv("NPL_TEST_MODEL");
    if (!model || !*model) {
        fprintf(stderr, "NPL_TEST_MODEL is not set\n");
        return 1;
    }
    enum { N_ARITH = 3 };
    static const char *names[N_ARITH] = {"ours", "llama.cpp flash attention", "llama.cpp attention"};
    {   /* bad setting: refused with one line */
        npl_engine_params p = npl_engine_default_params();
        p.arithmetic = 3;
        char err[512];
        npl_status st;
        CHECK(npl_engine_open2(model, &p, &st, err, sizeof err) == NULL && st == NPL_ERR_ARGUMENT);
        printf("arithmetic 3: %s\n", err);
    }
    npl_engine *probe = open_engine(0);
    CHECK(probe != NULL);
    if (!probe) return 1;
    n_vocab = npl_engine_n_vocab(probe);
    static const char text[] = "The quick brown fox jumps over the lazy dog, and then it runs far away into the woods, "
                               "where the old oak trees stand tall and the river flows quietly past the mill.";
    const int64_t n = npl_engine_tokenize(probe, text, strlen(text), 1, 0, ids, N_PROMPT + N_DEC);
    printf("%lld tokens, the first %d used\n", (long long)n, N_PROMPT + N_DEC);
    npl_engine_close(probe);
    CHECK(n >= N_PROMPT + N_DEC);
    if (n < N_PROMPT + N_DEC) return 1;

    float *alone[N_ARITH], *inter[N_ARITH], *par[N_ARITH];
    for (int a = 0; a < N_ARITH; a++) {
        alone[a] = alloc_steps();
        inter[a] = alloc_steps();
        par[a] = alloc_steps();
        CHECK(alone[a] && inter[a] && par[a]);
        if (!alone[a] || !inter[a] || !par[a]) return 1;
        CHECK_EQ_INT(run_alone(a, alone[a]), 0);
    }
    for (int a = 1; a < N_ARITH; a++) {
        const double d = max_diff(alone[0], alone[a]);
        printf("alone: %s vs %s: max |logit diff| %.3g\n", names[0], names[a], d);
        CHECK(d > 1e-3); /* the settings give different logits */
    }
    {
        const double d = max_diff(alone[1], alone[2]);
        printf("alone: %s vs %s: max |logit diff| %.3g\n", names[1], names[2], d);
        CHECK(d > 0);
    }

    /* all three open at once, steps interleaved in this thread */
    npl_engine *e[N_ARITH];
    for (int a = 0; a < N_ARITH; a++) CHECK((e[a] = open_engine(a)) != NULL);
    for (int s = 0; s < N_STEPS; s++)
        for (int a = N_ARITH - 1; a >= 0; a--)
            if (e[a]) CHECK_EQ_INT(step(e[a], s, inter[a] + (size_t)s * (size_t)n_vocab), 0);
    for (int a = 0; a < N_ARITH; a++) {
        const double d = max_diff(inter[a], alone[a]);
        printf("interleaved with the others: %s vs alone: max |logit diff| %.3g\n", names[a], d);
        CHECK(d == 0.0);
        npl_engine_close(e[a]);
    }

    /* ours and llama.cpp's side by side, one thread each */
    thread_job j[2] = {{open_engine(0), par[0], 0}, {open_engine(1), par[1], 0}};
    pthread_t t[2];
    int started[2] = {0, 0};
    for (int k = 0; k < 2; k++) {
        CHECK(j[k].e != NULL);
        if (j[k].e) started[k] = pthread_create(&t[k], NULL, thread_run, &j[k]) == 0;
        CHECK(started[k]);
    }
    for (int k = 0; k < 2; k++) {
        if (started[k]) pthread_join(t[k], NULL);
        CHECK_EQ_INT(j[k].rc, 0);
        const double d = max_diff(par[k], alone[k]);
        printf("in two threads at once: %s vs alone: max |logit diff| %.3g\n", names[k], d);
        CHECK(d == 0.0);
        npl_engine_close(j[k].e);
    }
    for (int a = 0; a < N_ARITH; a++) {
        free(alone[a]);
        free(inter[a]);
        free(par[a]);
    }
    TEST_MAIN_END();
}
