/* vnpu execute: buffer binding by name, the step loop, profiling, and the
 * MatMul step (static packed weights, weights packed per run, fused bias
 * and gating epilogues). */
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "accel/vnpu/vnpu_convert.h"
#include "accel/vnpu/vnpu_exec.h"

/* ---- scratch and tensor access ---- */

void *vnpu_xc_alloc(vnpu_xc *x, size_t bytes) {
    size_t sz = (bytes + VNPU_ALIGN - 1) & ~(size_t)(VNPU_ALIGN - 1);
    x->used += sz;
    if (vnpu_xc_measuring(x)) return NULL;
    if ((size_t)(x->end - x->cur) < sz) return NULL;
    void *p = x->cur;
    x->cur += sz;
    return p;
}

const vnpu_tensor *vnpu_xc_t(const vnpu_xc *x, uint32_t tid) { return &x->g->ctx->t[tid]; }
void *vnpu_xc_addr(const vnpu_xc *x, uint32_t tid) { return x->g->addr[tid]; }

/* ---- conversions and parallel loops ---- */

void vnpu_cvt_to_f32(int family, const vnpu_tensor *t, const void *data, int64_t e0, int64_t n, float *out) {
    if (t->dtype == NPL_ACCEL_DT_F16 && family >= VNPU_FAM_AVX2) npl_f16_to_f32_row_fast((const uint16_t *)data + e0, out, n);
    else vnpu_to_f32(t, data, e0, n, out);
}

void vnpu_cvt_from_f32(int family, const vnpu_tensor *t, const float *in, int64_t e0, int64_t n, void *data) {
    if (t->dtype == NPL_ACCEL_DT_F16 && family >= VNPU_FAM_AVX2) npl_f32_to_f16_row_fast(in, (uint16_t *)data + e0, n);
    else vnpu_from_f32(t, in, e0, n, data);
}

typedef struct {
    vnpu_unit_fn fn;
    void *arg;
    int64_t n;
    atomic_int_fast64_t next;
} par_job;

static void par_task(void *arg, int ith, int nth) {
    par_job *j = arg;
    (void)nth;
    for (int64_t u; (u = atomic_fetch_add(&j->next, 1)) < j->n;) j->fn(j->arg, ith, u);
}

void vnpu_par_for(struct npl_accel_backend *be, int64_t n_units, vnpu_unit_fn fn, void *arg) {
    if (n_units <= 1 || be->n_threads <= 1) {
        for (int64_t u = 0; u < n_units; u++) fn(arg, 0, u);
        return;
    }
    par_job j = {fn, arg, n_units, 0};
    atomic_init(&j.next, 0);
    npl_pool_run(be->pool, par_task, &j);
}

#define CVT_CHUNK 16384 /* elements per unit of a whole-tensor conversion (a multiple of 32: block types) */
/* Work below this many elements runs on the calling thread: a vector pass
 * over it takes ~10-30 us, about what waking the pool costs, and on a busy
 * machine a wake-up can wait for a descheduled thread far longer. */
#define INLINE_ELEMS 131072

typedef struct {
    int family, to;
    const vnpu_tensor *t;
    const void *src;
    void *dst;
} cvt_job;

static void cvt_unit(void *arg, int ith, int64_t u) {
    const cvt_job *c = arg;
    const int64_t e0 = u * CVT_CHUNK, n = e0 + CVT_CHUNK <= c->t->nelem ? CVT_CHUNK : c->t->nelem - e0;
    (void)ith;
    if (c->to) vnpu_cvt_to_f32(c->family, c->t, c->src, e0, n, (float *)c->dst + e0);
    else vnpu_cvt_from_f32(c->family, c->t, (const float *)c->src + e0, e0, n, c->dst);
}

static void cvt_tensor(vnpu_xc *x, const vnpu_tensor *t, int to, const void *src, void *dst) {
    cvt_job c = {x->g->ctx->family, to, t, src, dst};
    if (t->nelem <= INLINE_ELEMS) {
        if (to) vnpu_cvt_to_f32(c.family, t, src, 0, t->nelem, dst);
        else vnpu_cvt_from_f32(c.family, t, src, 0, t->nelem, dst);
        return;
    }
    vnpu_par_for(x->be, (t->nelem + CVT_CHUNK - 1) / CVT_CHUNK, cvt_unit, &c);
}

const float *vnpu_xc_in_f32(vnpu_xc *x, uint32_t i) {
    const vnpu_tensor *t = vnpu_xc_t(x, x->n->in[i]);
    if (t->dtype == NPL_ACCEL_DT_F32) return vnpu_xc_measuring(x) ? NULL : vnpu_xc_addr(x, x->n->in[i]);
    float *f = vnpu_xc_alloc(x, (size_t)t->nelem * 4);
    if (f) cvt_tensor(x, t, 1, vnpu_xc_addr(x, x->n->in[i]), f);
    return f;
}

float *vnpu_xc_out_f32(vnpu_xc *x) {
    const vnpu_tensor *t = vnpu_xc_t(x, x->n->out[0]);
    if (t->dtype == NPL_ACCEL_DT_F32) return vnpu_xc_measuring(x) ? NULL : vnpu_xc_addr(x, x->n->out[0]);
    return vnpu_xc_alloc(x, (size_t)t->nelem * 4);
}

void vnpu_xc_out_done(vnpu_xc *x, float *y) {
    const vnpu_tensor *t = vnpu_xc_t(x, x->n->out[0]);
    if (t->dtype != NPL_ACCEL_DT_F32) cvt_tensor(x, t, 0, y, vnpu_xc_addr(x, x->n->out[0]));
}

/* ---- MatMul ---- */

/* The epilogue after the kernel, spread over the pool by rows: a bias the
 * pack does not hold, the gating of a fused gate/up MatMul and the
 * conversion of the output to its type. */
typedef struct {
    vnpu_xc *x;
    const float *src;      /* kernel output, row stride src_stride */
    int64_t src_stride, up; /* gated: the up part starts at column up */
    const float *bias;
    int gated, geglu;
    int64_t nout, rows_per_unit, m;
    float *y;              /* f32 output (NULL: convert through the thread buffers) */
    float *tbuf;           /* per thread: rows_per_unit * nout floats */
} epi_job;

static void epi_unit(void *arg, int ith, int64_t u) {
    const epi_job *e = arg;
    const int64_t r0 = u * e->rows_per_unit, nr = r0 + e->rows_per_unit <= e->m ? e->rows_per_unit : e->m - r0;
    const vnpu_tensor *ot = vnpu_xc_t(e->x, e->x->n->out[0]);
    float *y = e->y ? e->y + r0 * e->nout : e->tbuf + (size_t)ith * (size_t)(e->rows_per_unit * e->nout);
    for (int64_t r = 0; r < nr; r++) {
        const float *t = e->src + (r0 + r) * e->src_stride;
        float *yr = y + r * e->nout;
        if (e->gated) {
            if (e->geglu) e->x->be->nn->geglu(t, t + e->up, yr, (int)e->nout);
            else e->x->be->nn->swiglu(t, t + e->up, yr, (int)e->nout);
        } else if (e->bias) {
            for (int64_t c = 0; c < e->nout; c++) yr[c] = t[c] + e->bias[c];
        } else if (yr != t) {
            memcpy(yr, t, (size_t)e->nout * 4);
        }
    }
    if (ot->dtype != NPL_ACCEL_DT_F32)
        vnpu_cvt_from_f32(e->x->g->ctx->family, ot, y, r0 * e->nout, nr * e->nout, vnpu_xc_addr(e->x, e->x->n->out[0]));
}

#define EPI_FLOATS 8192 /* floats of output per epilogue unit */

/* A MatMul over GGML blocks with a GEMM for its rows: one pool job from the
 * input's type to the output's (vnpu_mm_ggml.c). */
static npl_accel_status exec_matmul_fused(vnpu_xc *x, const vnpu_pack *pk, int64_t m) {
    const vnpu_node *n = x->n;
    struct npl_accel_context *ctx = x->g->ctx;
    const int gated = n->op == VNPU_OP_MATMUL_GATED, has_bias = !gated && n->n_in == 3;
    const uint64_t t0 = !vnpu_xc_measuring(x) && vnpu_prof_on(x->g) ? vnpu_now_ns() : 0;
    /* first in scratch: every fused step packs its activations at the same place */
    uint8_t *mm = vnpu_xc_alloc(x, vnpu_ggml_fused_scratch(pk, m, npl_pool_size(x->be->pool)));
    const float *bias = has_bias ? vnpu_xc_in_f32(x, 2) : NULL;
    if (vnpu_xc_measuring(x)) return NPL_ACCEL_OK;
    if (!mm || (has_bias && !bias))
        return vnpu_fail(x->be, NPL_ACCEL_ERR_INTERNAL, "vnpu: scratch plan too small for a MatMul step");
    const int isa = x->be->mm[ctx->family].isa;
    const vnpu_node *prev = x->run->mm_prev;
    const int ready = prev && prev + 1 == n && prev->in[0] == n->in[0] && x->run->mm_x == mm &&
                      vnpu_ggml_same_x(isa, &ctx->packs[prev->pack], pk, m);
    const vnpu_ggml_io io = {ctx->family, vnpu_xc_t(x, n->in[0]), vnpu_xc_addr(x, n->in[0]), vnpu_xc_t(x, n->out[0]),
                             vnpu_xc_addr(x, n->out[0]), bias, (int)n->ip[2], x->be->nn, ready};
    vnpu_ggml_fused(isa, x->be->pool, pk, &io, m, mm);
    x->run->mm_prev = n;
    x->run->mm_x = mm;
    if (t0) vnpu_prof_add(x->g, VNPU_PROF_MM_KERNEL, vnpu_now_ns() - t0);
    return NPL_ACCEL_OK;
}

static npl_accel_status exec_matmul(vnpu_xc *x) {
    const vnpu_node *n = x->n;
    struct npl_accel_context *ctx = x->g->ctx;
    const vnpu_mm_table *tab = &x->be->mm[ctx->family];
    const vnpu_tensor *xt = vnpu_xc_t(x, n->in[0]), *ot = vnpu_xc_t(x, n->out[0]);
    const int64_t k = xt->dims[xt->rank - 1], m = xt->nelem / k;
    /* the fused path writes strips of columns (32 or 64 wide from 256 columns on, vnpu_mm_ggml.c's unit_of):
     * dynamic int16, written in whole blocks, takes it only when its blocks of 32 fall inside the strips */
    if (n->pack >= 0 && ctx->packs[n->pack].fmt == VNPU_PK_GGML && vnpu_ggml_fused_ok(tab->isa, &ctx->packs[n->pack], m) &&
        (!vnpu_is_dynamic(ot) || (ot->q.block == 32 && ctx->packs[n->pack].n[0] >= 256)))
        return exec_matmul_fused(x, &ctx->packs[n->pack], m);
    const int gated = n->op == VNPU_OP_MATMUL_GATED, out_f32 = ot->dtype == NPL_ACCEL_DT_F32;
    const int prof = !vnpu_xc_measuring(x) && vnpu_prof_on(x->g);
    uint64_t tp = prof ? vnpu_now_ns() : 0;
#define PHASE(slot)                                                                                                    \
    if (prof) {                                                                                                        \
        const uint64_t t1 = vnpu_now_ns();                                                                             \
        vnpu_prof_add(x->g, slot, t1 - tp);                                                                            \
        tp = t1;                                                                                                       \
    }
    const float *xf = vnpu_xc_in_f32(x, 0);
    PHASE(VNPU_PROF_MM_IN)
    vnpu_pack local;
    const vnpu_pack *pk = n->pack >= 0 ? &ctx->packs[n->pack] : &local;
    uint8_t *wbuf = NULL;
    if (n->pack < 0) { /* weights arrive with the run: pack them now */
        char err[160];
        if (vnpu_pack_plan(&local, ctx, 1, &n->in[1], NULL, (uint32_t)n->ip[1], err, sizeof err))
            return vnpu_fail(x->be, NPL_ACCEL_ERR_UNSUPPORTED, "vnpu: %s", err);
        wbuf = vnpu_xc_alloc(x, local.size);
        local.data = wbuf;
    }
    const int64_t nout = pk->n[0];
    const int has_bias = !gated && n->n_in == 3 && pk->off_bias == VNPU_NOFF;
    const float *bias = has_bias ? vnpu_xc_in_f32(x, 2) : NULL;
    /* the kernel writes f32: straight into an f32 output unless gating follows */
    float *tmp = gated || !out_f32 ? vnpu_xc_alloc(x, (size_t)m * (size_t)(gated ? pk->npad : nout) * 4) : NULL;
    const int64_t rpu = nout >= EPI_FLOATS ? 1 : EPI_FLOATS / nout;
    float *tbuf = out_f32 ? NULL : vnpu_xc_alloc(x, (size_t)x->be->n_threads * (size_t)(rpu * nout) * 4);
    float *y = out_f32 ? vnpu_xc_measuring(x) ? NULL : vnpu_xc_addr(x, n->out[0]) : NULL;
    uint8_t *mm = vnpu_xc_alloc(x, vnpu_matmul_scratch(tab, pk, m));
    if (vnpu_xc_measuring(x)) return NPL_ACCEL_OK;
    if (!mm || !xf || (n->pack < 0 && !wbuf) || ((gated || !out_f32) && !tmp) || (!out_f32 && !tbuf) ||
        (has_bias && !bias))
        return vnpu_fail(x->be, NPL_ACCEL_ERR_INTERNAL, "vnpu: scratch plan too small for a MatMul step");
    if (wbuf) {
        const void *wd[1] = {vnpu_xc_addr(x, n->in[1])};
        vnpu_pack_fill(&local, ctx, wbuf, wd, NULL, x->be->pool);
    }
    const int64_t stride = gated ? pk->npad : nout;
    float *kout = tmp ? tmp : y;
    vnpu_matmul(tab, x->be->pool, pk, xf, m, kout, stride, gated ? pk->npad : nout, mm);
    PHASE(VNPU_PROF_MM_KERNEL)
    if (gated || bias || !out_f32) {
        epi_job e = {x, kout, stride, gated ? pk->col0[1] : 0, bias, gated, (int)n->ip[2], nout, rpu, m, y, tbuf};
        const int64_t units = (m + rpu - 1) / rpu;
        if (!gated && m * nout <= INLINE_ELEMS) /* a small copy or conversion: no pool wake-up */
            for (int64_t u = 0; u < units; u++) epi_unit(&e, 0, u);
        else
            vnpu_par_for(x->be, units, epi_unit, &e);
    }
    PHASE(VNPU_PROF_MM_EPI)
#undef PHASE
    return NPL_ACCEL_OK;
}

static npl_accel_status exec_step(vnpu_xc *x) {
    if (x->n->op == VNPU_OP_MATMUL || x->n->op == VNPU_OP_MATMUL_GATED) return exec_matmul(x);
    if (vnpu_xc_measuring(x)) { /* room to run it in a row group or alone */
        const size_t rows = vnpu_rows_scratch(x->g, x->n);
        const npl_accel_status st = vnpu_exec_op(x);
        if (rows > x->used) x->used = rows;
        return st;
    }
    return vnpu_exec_op(x);
}

size_t vnpu_step_scratch(const vnpu_graph *g, const vnpu_node *n) {
    vnpu_xc x = {(vnpu_graph *)g, n, g->ctx->be, NULL, NULL, 0, NULL};
    exec_step(&x);
    return x.used;
}

/* ---- binding and the step loop ---- */

uint64_t vnpu_now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static npl_accel_status bind(vnpu_graph *g, const npl_accel_buffer *b, uint32_t nb, int outputs, uint8_t *bound) {
    struct npl_accel_context *ctx = g->ctx;
    for (uint32_t i = 0; i < nb; i++) {
        const char *what = outputs ? "output" : "input";
        if (!b[i].name)
            return vnpu_fail(ctx->be, NPL_ACCEL_ERR_BINDING, "vnpu: graph '%s': %s buffer %u has no name", g->name, what, i);
        uint32_t id = vnpu_find_tensor(ctx, b[i].name);
        const vnpu_tensor *t = id < g->n_tmap ? &ctx->t[id] : NULL;
        int ok = t && ((t->graph == g->index && t->kind == (outputs ? NPL_ACCEL_APP_READ : NPL_ACCEL_APP_WRITE)) ||
                       t->kind == NPL_ACCEL_APP_READWRITE);
        if (!ok)
            return vnpu_fail(ctx->be, NPL_ACCEL_ERR_BINDING, "vnpu: graph '%s': no %s tensor '%s' to bind", g->name,
                             outputs ? "APP_READ (or APP_READWRITE)" : "APP_WRITE (or APP_READWRITE)", b[i].name);
        if (bound[id])
            return vnpu_fail(ctx->be, NPL_ACCEL_ERR_BINDING, "vnpu: graph '%s': tensor '%s' is bound twice", g->name, t->name);
        if (!b[i].data || b[i].size != t->nbytes)
            return vnpu_fail(ctx->be, NPL_ACCEL_ERR_BINDING, "vnpu: graph '%s': buffer for '%s' has %llu bytes%s; the "
                             "tensor has %zu", g->name, t->name, (unsigned long long)b[i].size,
                             b[i].data ? "" : " (NULL)", t->nbytes);
        bound[id] = 1;
        g->addr[id] = b[i].data;
    }
    return NPL_ACCEL_OK;
}

npl_accel_status vnpu_execute(vnpu_graph *g, const npl_accel_buffer *in, uint32_t n_in, const npl_accel_buffer *out,
                              uint32_t n_out) {
    const uint64_t t0 = vnpu_now_ns();
    struct npl_accel_context *ctx = g->ctx;
    uint8_t *bound = g->bound;
    memset(bound, 0, g->n_tmap + 1);
    memset(g->addr, 0, g->n_tmap * sizeof *g->addr);
    npl_accel_status st = bind(g, in, n_in, 0, bound);
    if (!st) st = bind(g, out, n_out, 1, bound);
    for (uint32_t i = 0; !st && i < g->n_tmap; i++) {
        vnpu_tensor *t = &ctx->t[i];
        if (bound[i]) continue;
        if (t->graph == g->index && (t->kind == NPL_ACCEL_APP_WRITE || t->kind == NPL_ACCEL_APP_READ))
            st = vnpu_fail(ctx->be, NPL_ACCEL_ERR_BINDING, "vnpu: graph '%s': %s tensor '%s' is not bound", g->name,
                           vnpu_kind_name(t->kind), t->name);
        else if (t->kind == NPL_ACCEL_NATIVE && g->toff[i] != SIZE_MAX) g->addr[i] = g->arena + g->toff[i];
        else if (t->kind == NPL_ACCEL_STATIC) g->addr[i] = (void *)t->raw;
        else if (t->kind == NPL_ACCEL_APP_READWRITE) g->addr[i] = t->rw;
    }
    const int prof = vnpu_prof_on(g);
    if (prof) vnpu_prof_dump(g);
    int no_rows = !st && g->sel_in != VNPU_NONE; /* every selected row index negative: skip what depends on them */
    for (int64_t i = 0; no_rows && i < ctx->t[g->sel_in].nelem; i++) no_rows = ((const int32_t *)g->addr[g->sel_in])[i] < 0;
    vnpu_run run = {0};
    for (uint32_t s = 0; !st && s < g->n_steps;) {
        vnpu_xc x = {g, &g->steps[s], ctx->be, g->arena + g->scratch_off, g->arena + g->arena_size, 0, &run};
        const uint32_t grp = vnpu_rows_group(g, s);
        if (no_rows && g->steps[s].sel_dep) {
            uint32_t n = grp ? grp : 1, all = 1;
            for (uint32_t i = s; i < s + n; i++) all &= g->steps[i].sel_dep;
            if (all) {
                for (uint32_t i = s; i < s + n; i++)
                    for (uint32_t o = 0; o < g->steps[i].n_out; o++) {
                        const vnpu_tensor *t = &ctx->t[g->steps[i].out[o]];
                        if (t->kind == NPL_ACCEL_APP_READ) memset(g->addr[g->steps[i].out[o]], 0, t->nbytes);
                    }
                s += n;
                continue;
            }
        }
        if (grp) { /* row-local steps: one fused pass (profiled inside) */
            const uint64_t ts = prof ? vnpu_now_ns() : 0;
            st = vnpu_rows_exec(&x, s, grp);
            if (prof) vnpu_prof_step(g, s, vnpu_now_ns() - ts);
            s += grp;
            continue;
        }
        const uint64_t ts = prof ? vnpu_now_ns() : 0;
        st = exec_step(&x);
        if (prof) {
            vnpu_prof_add(g, g->steps[s].op, vnpu_now_ns() - ts);
            vnpu_prof_step(g, s, vnpu_now_ns() - ts);
        }
        s++;
    }
    if (st) return st;
    const uint64_t dt = vnpu_now_ns() - t0;
    vnpu_counters *p = &g->prof;
    p->executions++;
    p->total_ns += dt;
    p->last_ns = dt;
    if (!p->min_ns || dt < p->min_ns) p->min_ns = dt;
    if (dt > p->max_ns) p->max_ns = dt;
    return NPL_ACCEL_OK;
}
