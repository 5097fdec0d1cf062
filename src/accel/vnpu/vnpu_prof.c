/* Per-op execution profile of vnpu graphs, for finding where time goes.
 * The backend option "profile" (1) times every step (and the phases of a
 * MatMul) and prints, when the backend is freed, the time per graph and op
 * type to stderr; 2 also lists each graph's steps once, 3 also the slowest
 * steps. Off by default: one branch per step. The counters belong to the
 * backend (atomic: every pool thread adds to them). */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "accel/vnpu/vnpu_exec.h"

#define PROF_GRAPHS 16
#define PROF_STEPS 1024

static const char *const phase_names[VNPU_PROF_SLOTS - VNPU_OP_COUNT] = {
    "  mm: input to f32", "  mm: prepare + kernel", "  mm: epilogue + output",
    "  attn: q in, K/V to cache", "  attn: kernel", "  attn: output"};

typedef struct {
    char name[64];
    atomic_uint_fast64_t ns[VNPU_PROF_SLOTS], calls[VNPU_PROF_SLOTS];
    atomic_int dumped;
    atomic_uint_fast64_t step_ns[PROF_STEPS]; /* level 3: per step index */
    const vnpu_node *steps;
    uint32_t n_steps;
} prof_graph;

struct vnpu_prof {
    int level;
    pthread_mutex_t lock;
    atomic_int n_graphs;
    prof_graph graphs[PROF_GRAPHS];
};

static void report(vnpu_prof *pr) {
    const int n = atomic_load(&pr->n_graphs);
    for (int i = 0; i < n; i++) {
        prof_graph *p = &pr->graphs[i];
        uint64_t total = 0;
        for (int s = 0; s < VNPU_OP_COUNT; s++) total += p->ns[s];
        if (!total) continue;
        fprintf(stderr, "vnpu profile: graph %s, %.1f ms in steps\n", p->name, total / 1e6);
        for (int s = 0; s < VNPU_PROF_SLOTS; s++) {
            if (!p->calls[s]) continue;
            const char *nm = s < VNPU_OP_COUNT ? vnpu_op_get((uint32_t)s)->name : phase_names[s - VNPU_OP_COUNT];
            fprintf(stderr, "  %-24s %8llu calls %10.1f ms %5.1f%%\n", nm, (unsigned long long)p->calls[s],
                    p->ns[s] / 1e6, 100.0 * (double)p->ns[s] / (double)total);
        }
        for (int top = 0; pr->level >= 3 && top < 20; top++) { /* the slowest steps (destructive: done last) */
            uint32_t best = 0;
            for (uint32_t k = 1; k < p->n_steps && k < PROF_STEPS; k++)
                if (p->step_ns[k] > p->step_ns[best]) best = k;
            if (!p->step_ns[best]) break;
            fprintf(stderr, "    step %4u %-18s %10.1f ms\n", best, vnpu_op_get(p->steps[best].op)->name,
                    p->step_ns[best] / 1e6);
            p->step_ns[best] = 0;
        }
    }
}

vnpu_prof *vnpu_prof_new(int level) {
    vnpu_prof *pr = calloc(1, sizeof *pr);
    if (!pr) return NULL;
    if (pthread_mutex_init(&pr->lock, NULL)) {
        free(pr);
        return NULL;
    }
    pr->level = level;
    return pr;
}

void vnpu_prof_free(vnpu_prof *pr) {
    if (!pr) return;
    report(pr);
    pthread_mutex_destroy(&pr->lock);
    free(pr);
}

int vnpu_prof_on(const vnpu_graph *g) { return g->ctx->be->prof ? g->ctx->be->prof->level : 0; }

static prof_graph *find(vnpu_prof *pr, const char *name) {
    const int n = atomic_load(&pr->n_graphs);
    for (int i = 0; i < n; i++)
        if (!strcmp(pr->graphs[i].name, name)) return &pr->graphs[i];
    pthread_mutex_lock(&pr->lock);
    prof_graph *p = NULL;
    int m = atomic_load(&pr->n_graphs);
    for (int i = 0; i < m && !p; i++)
        if (!strcmp(pr->graphs[i].name, name)) p = &pr->graphs[i];
    if (!p && m < PROF_GRAPHS) {
        p = &pr->graphs[m];
        snprintf(p->name, sizeof p->name, "%s", name);
        atomic_store(&pr->n_graphs, m + 1);
    }
    pthread_mutex_unlock(&pr->lock);
    return p;
}

static void dump_tensor(const vnpu_graph *g, uint32_t tid) {
    const vnpu_tensor *t = &g->ctx->t[tid];
    fprintf(stderr, " %s:%s[", t->name ? t->name : "?", vnpu_dtype_name(t->dtype));
    for (uint32_t d = 0; d < t->rank; d++) fprintf(stderr, "%s%lld", d ? "," : "", (long long)t->dims[d]);
    fprintf(stderr, "]");
}

void vnpu_prof_dump(const vnpu_graph *g) {
    vnpu_prof *pr = g->ctx->be->prof;
    prof_graph *p = pr && pr->level >= 2 ? find(pr, g->name ? g->name : "?") : NULL;
    if (!p || p->dumped++) return;
    fprintf(stderr, "vnpu graph %s: %u steps\n", g->name, g->n_steps);
    for (uint32_t s = 0; s < g->n_steps; s++) {
        const vnpu_node *n = &g->steps[s];
        fprintf(stderr, "  %3u %-16s", s, vnpu_op_get(n->op)->name);
        for (uint32_t i = 0; i < n->n_in && i < 3; i++) dump_tensor(g, n->in[i]);
        fprintf(stderr, " ->");
        dump_tensor(g, n->out[0]);
        fprintf(stderr, "\n");
    }
}

void vnpu_prof_step(const vnpu_graph *g, uint32_t step, uint64_t ns) {
    vnpu_prof *pr = g->ctx->be->prof;
    prof_graph *p = pr && pr->level >= 3 ? find(pr, g->name ? g->name : "?") : NULL;
    if (!p || step >= PROF_STEPS) return;
    p->steps = g->steps;
    p->n_steps = g->n_steps;
    atomic_fetch_add(&p->step_ns[step], ns);
}

void vnpu_prof_add(const vnpu_graph *g, int slot, uint64_t ns) {
    prof_graph *p = g->ctx->be->prof ? find(g->ctx->be->prof, g->name ? g->name : "?") : NULL;
    if (!p || slot < 0 || slot >= VNPU_PROF_SLOTS) return;
    atomic_fetch_add(&p->ns[slot], ns);
    atomic_fetch_add(&p->calls[slot], 1);
}
