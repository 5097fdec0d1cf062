/* A measurement build's profile of decode steps (cc -DNPL_OP_PROFILE, or
 * -DNPL_OP_PROFILE=2 for the calling thread's CPU time, which leaves out
 * preemption when there is one thread; with -DNPL_OP_PROFILE_PREFILL too,
 * the prefill runs instead): wall time per op class (a matmul
 * by weight type and shape, a matmul group by its size), per graph run with
 * every input one row, printed to stderr at exit. Not in normal builds: a
 * clock read per node is noise the engine does not need. Only
 * core/session.c includes this. */
#ifndef NPL_OP_PROFILE_H
#define NPL_OP_PROFILE_H
#ifdef NPL_OP_PROFILE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/backend.h"

enum { PROF_N = 64 };
static struct { char key[64]; double s; long n; } prof[PROF_N];
static double prof_total;
static long prof_runs;

static double prof_now(void) {
    struct timespec t;
#if NPL_OP_PROFILE == 2
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
#else
    clock_gettime(CLOCK_MONOTONIC, &t);
#endif
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}
static void prof_dump(void) {
    fprintf(stderr, "op profile: %ld runs, %.3f ms per run\n", prof_runs, prof_runs ? 1e3 * prof_total / prof_runs : 0);
    for (int i = 0; i < PROF_N && prof[i].key[0]; i++)
        fprintf(stderr, "  %-40s %8.1f us/run %6.1f %%  %7.2f us/call\n", prof[i].key, 1e6 * prof[i].s / prof_runs,
                100 * prof[i].s / prof_total, 1e6 * prof[i].s / prof[i].n);
}
static double prof_start(void) {
    static int registered;
    if (!registered) registered = 1, atexit(prof_dump);
    return prof_now();
}
static void prof_node(const npl_node *nd, const npl_exec_ctx *c, int n, double t0) {
    const double dt = prof_now() - t0;
    char key[64];
    if (nd->op == NPL_OP_MATMUL && n > 1) snprintf(key, sizeof key, "matmul group of %d", n);
    else if (nd->op == NPL_OP_MATMUL)
        snprintf(key, sizeof key, "matmul %s %lldx%lld", npl_type_name(c->src[0].type), (long long)c->src[0].shape.ne[0],
                 (long long)c->src[0].shape.ne[1]);
    else snprintf(key, sizeof key, "%s", npl_op_name(nd->op));
    int i = 0;
    for (; i < PROF_N - 1 && prof[i].key[0] && strcmp(prof[i].key, key); i++) {}
    if (!prof[i].key[0]) snprintf(prof[i].key, sizeof prof[i].key, "%s", key);
    prof[i].s += dt;
    prof[i].n++;
}
static void prof_run(double t0) {
    prof_total += prof_now() - t0;
    prof_runs++;
}
#endif
#endif
