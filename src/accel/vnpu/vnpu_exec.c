/* vnpu execute: buffer binding by name, the step loop, profiling, and the
 * MatMul step (static packed weights, weights packed per run, fused bias
 * and gating epilogues). */
#include <math.h>
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

const float *vnpu_xc_in_f32(vnpu_xc *x, uint32_t i) {
    const vnpu_tensor *t = vnpu_xc_t(x, x->n->in[i]);
    if (t->dtype == NPL_ACCEL_DT_F32) return vnpu_xc_measuring(x) ? NULL : vnpu_xc_addr(x, x->n->in[i]);
    float *f = vnpu_xc_alloc(x, (size_t)t->nelem * 4);
    if (f) vnpu_to_f32(t, vnpu_xc_addr(x, x->n->in[i]), 0, t->nelem, f);
    return f;
}

float *vnpu_xc_out_f32(vnpu_xc *x) {
    const vnpu_tensor *t = vnpu_xc_t(x, x->n->out[0]);
    if (t->dtype == NPL_ACCEL_DT_F32) return vnpu_xc_measuring(x) ? NULL : vnpu_xc_addr(x, x->n->out[0]);
    return vnpu_xc_alloc(x, (size_t)t->nelem * 4);
}

void vnpu_xc_out_done(vnpu_xc *x, float *y) {
    const vnpu_tensor *t = vnpu_xc_t(x, x->n->out[0]);
    if (t->dtype != NPL_ACCEL_DT_F32) vnpu_from_f32(t, y, 0, t->nelem, vnpu_xc_addr(x, x->n->out[0]));
}

/* ---- MatMul ---- */

static float silu(float v) { return v / (1.0f + expf(-v)); }
static float gelu(float v) {
    return 0.5f * v * (1.0f + tanhf(0.7978845608028654f * (v + 0.044715f * v * v * v)));
}

static npl_accel_status exec_matmul(vnpu_xc *x) {
    const vnpu_node *n = x->n;
    struct npl_accel_context *ctx = x->g->ctx;
    const vnpu_mm_table *tab = &x->be->mm[ctx->family];
    const vnpu_tensor *xt = vnpu_xc_t(x, n->in[0]);
    const int64_t k = xt->dims[xt->rank - 1], m = xt->nelem / k;
    const int gated = n->op == VNPU_OP_MATMUL_GATED;
    const float *xf = vnpu_xc_in_f32(x, 0);
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
    const int64_t nout = gated ? pk->n[0] : pk->n[0];
    const float *bias = NULL;
    if (!gated && n->n_in == 3 && pk->off_bias == VNPU_NOFF) bias = vnpu_xc_in_f32(x, 2);
    float *tmp = gated ? vnpu_xc_alloc(x, (size_t)m * (size_t)pk->npad * 4) : NULL;
    float *y = vnpu_xc_out_f32(x);
    uint8_t *mm = vnpu_xc_alloc(x, vnpu_matmul_scratch(tab, pk, m));
    if (vnpu_xc_measuring(x)) return NPL_ACCEL_OK;
    if (!mm || !y || !xf || (n->pack < 0 && !wbuf) || (gated && !tmp) || (!gated && n->n_in == 3 && pk->off_bias == VNPU_NOFF && !bias))
        return vnpu_fail(x->be, NPL_ACCEL_ERR_INTERNAL, "vnpu: scratch plan too small for a MatMul step");
    if (wbuf) {
        const void *wd[1] = {vnpu_xc_addr(x, n->in[1])};
        vnpu_pack_fill(&local, ctx, wbuf, wd, NULL, x->be->pool);
    }
    if (!gated) {
        vnpu_matmul(tab, x->be->pool, pk, xf, m, y, nout, nout, mm);
        if (bias)
            for (int64_t r = 0; r < m; r++)
                for (int64_t c = 0; c < nout; c++) y[r * nout + c] += bias[c];
    } else {
        vnpu_matmul(tab, x->be->pool, pk, xf, m, tmp, pk->npad, pk->npad, mm);
        const int64_t up = pk->col0[1];
        for (int64_t r = 0; r < m; r++) {
            const float *t = tmp + r * pk->npad;
            float *yr = y + r * nout;
            if (n->ip[2]) for (int64_t c = 0; c < nout; c++) yr[c] = gelu(t[c]) * t[up + c];
            else for (int64_t c = 0; c < nout; c++) yr[c] = silu(t[c]) * t[up + c];
        }
    }
    vnpu_xc_out_done(x, y);
    return NPL_ACCEL_OK;
}

static npl_accel_status exec_step(vnpu_xc *x) {
    if (x->n->op == VNPU_OP_MATMUL || x->n->op == VNPU_OP_MATMUL_GATED) return exec_matmul(x);
    return vnpu_exec_op(x);
}

size_t vnpu_step_scratch(const vnpu_graph *g, const vnpu_node *n) {
    vnpu_xc x = {(vnpu_graph *)g, n, g->ctx->be, NULL, NULL, 0};
    exec_step(&x);
    return x.used;
}

/* ---- binding and the step loop ---- */

static uint64_t now_ns(void) {
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
    const uint64_t t0 = now_ns();
    struct npl_accel_context *ctx = g->ctx;
    uint8_t *bound = vnpu_aligned_alloc(g->n_tmap + 1);
    if (!bound) return vnpu_fail(ctx->be, NPL_ACCEL_ERR_NO_MEMORY, "vnpu: out of memory");
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
    free(bound);
    for (uint32_t s = 0; !st && s < g->n_steps; s++) {
        vnpu_xc x = {g, &g->steps[s], ctx->be, g->arena + g->scratch_off, g->arena + g->arena_size, 0};
        st = exec_step(&x);
    }
    if (st) return st;
    const uint64_t dt = now_ns() - t0;
    vnpu_counters *p = &g->prof;
    p->executions++;
    p->total_ns += dt;
    p->last_ns = dt;
    if (!p->min_ns || dt < p->min_ns) p->min_ns = dt;
    if (dt > p->max_ns) p->max_ns = dt;
    return NPL_ACCEL_OK;
}
