/* vnpu finalize: the compile step. Validate (one producer per tensor, no
 * cycle, every node's types and shapes), order, fuse (MatMul + bias Add,
 * Silu/Gelu + Mul -> gating, gate/up MatMuls + gating -> one packed MatMul),
 * pre-pack STATIC weights once per context, plan one activation arena. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "accel/vnpu/vnpu.h"

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static const char *node_name(const vnpu_node *n) { return n->name ? n->name : vnpu_op_get(n->op)->name; }

/* ---- validation and order ---- */

typedef struct {
    vnpu_graph *g;
    uint32_t nt;
    int32_t *producer; /* per tensor: node index or -1 */
    int32_t *uses;     /* per tensor: consumer count among live nodes */
    uint8_t *dead;     /* per node */
    uint32_t *order;   /* topological order of node indices */
} cstate;

static npl_accel_status check_and_order(cstate *s) {
    vnpu_graph *g = s->g;
    struct npl_accel_backend *be = g->ctx->be;
    const vnpu_tensor *t = g->ctx->t;
    char where[160];
    for (uint32_t i = 0; i < s->nt; i++) s->producer[i] = -1;
    for (uint32_t i = 0; i < g->n_nodes; i++) {
        const vnpu_node *n = &g->nodes[i];
        snprintf(where, sizeof where, "graph '%s': node '%s'", g->name, node_name(n));
        npl_accel_status st = vnpu_check_node(be, g->ctx, n, where);
        if (st) return st;
        for (uint32_t o = 0; o < n->n_out; o++) {
            if (s->producer[n->out[o]] >= 0)
                return vnpu_fail(be, NPL_ACCEL_ERR_INVALID_ARG, "vnpu: %s: tensor '%s' is already produced by node '%s'",
                                 where, t[n->out[o]].name, node_name(&g->nodes[s->producer[n->out[o]]]));
            s->producer[n->out[o]] = (int32_t)i;
        }
        for (uint32_t k = 0; k < n->n_in; k++) s->uses[n->in[k]]++;
    }
    for (uint32_t i = 0; i < g->n_nodes; i++) {
        const vnpu_node *n = &g->nodes[i];
        for (uint32_t k = 0; k < n->n_in; k++) {
            const vnpu_tensor *x = &t[n->in[k]];
            if ((x->kind == NPL_ACCEL_NATIVE || x->kind == NPL_ACCEL_APP_READ) && s->producer[n->in[k]] < 0)
                return vnpu_fail(be, NPL_ACCEL_ERR_INVALID_ARG, "vnpu: graph '%s': node '%s' reads %s tensor '%s' that "
                                 "no node produces", g->name, node_name(n), vnpu_kind_name(x->kind), x->name);
        }
    }
    for (uint32_t i = 0; i < s->nt; i++)
        if (t[i].graph == g->index && t[i].kind == NPL_ACCEL_APP_READ && s->producer[i] < 0)
            return vnpu_fail(be, NPL_ACCEL_ERR_INVALID_ARG, "vnpu: graph '%s': output '%s' is never produced", g->name,
                             t[i].name);
    /* Kahn's algorithm, taking the lowest-numbered ready node first */
    uint32_t *indeg = calloc(g->n_nodes + 1, sizeof *indeg);
    if (!indeg) return vnpu_fail(be, NPL_ACCEL_ERR_NO_MEMORY, "vnpu: out of memory");
    for (uint32_t i = 0; i < g->n_nodes; i++)
        for (uint32_t k = 0; k < g->nodes[i].n_in; k++) indeg[i] += s->producer[g->nodes[i].in[k]] >= 0;
    uint32_t n_done = 0;
    uint8_t *done = s->dead; /* borrowed as a visited set, cleared below */
    while (n_done < g->n_nodes) {
        uint32_t pick = VNPU_NONE;
        for (uint32_t i = 0; i < g->n_nodes && pick == VNPU_NONE; i++)
            if (!done[i] && indeg[i] == 0) pick = i;
        if (pick == VNPU_NONE) break;
        done[pick] = 1;
        s->order[n_done++] = pick;
        const vnpu_node *p = &g->nodes[pick];
        for (uint32_t i = 0; i < g->n_nodes; i++)
            for (uint32_t k = 0; k < g->nodes[i].n_in; k++)
                for (uint32_t o = 0; o < p->n_out; o++) indeg[i] -= g->nodes[i].in[k] == p->out[o];
    }
    npl_accel_status st = NPL_ACCEL_OK;
    if (n_done < g->n_nodes) {
        uint32_t bad = 0;
        while (done[bad]) bad++;
        st = vnpu_fail(be, NPL_ACCEL_ERR_GRAPH_CYCLE, "vnpu: graph '%s': the nodes form a cycle (node '%s' depends on "
                       "its own output)", g->name, node_name(&g->nodes[bad]));
    }
    memset(done, 0, g->n_nodes);
    free(indeg);
    return st;
}

/* ---- fusion ---- */

static int single_use_native(const cstate *s, uint32_t tid) {
    return s->g->ctx->t[tid].kind == NPL_ACCEL_NATIVE && s->uses[tid] == 1;
}

static vnpu_node *producer_of(cstate *s, uint32_t tid, uint32_t op) {
    int32_t p = s->producer[tid];
    if (p < 0 || s->dead[p] || s->g->nodes[p].op != op) return NULL;
    return &s->g->nodes[p];
}

/* Silu(g) -> a; Mul(a, u) -> y   ==>   SwiGLU(g, u) -> y  (same for Gelu) */
static int fuse_gating(cstate *s) {
    int n = 0;
    const vnpu_tensor *t = s->g->ctx->t;
    for (uint32_t i = 0; i < s->g->n_nodes; i++) {
        vnpu_node *m = &s->g->nodes[i];
        if (s->dead[i] || m->op != VNPU_OP_MUL || t[m->in[0]].nelem != t[m->in[1]].nelem) continue;
        for (int side = 0; side < 2; side++) {
            uint32_t a = m->in[side], u = m->in[1 - side];
            vnpu_node *act = producer_of(s, a, VNPU_OP_SILU);
            if (!act) act = producer_of(s, a, VNPU_OP_GELU);
            if (!act || !single_use_native(s, a) || t[act->in[0]].nelem != t[u].nelem) continue;
            m->op = act->op == VNPU_OP_SILU ? VNPU_OP_SWIGLU : VNPU_OP_GEGLU;
            m->in[0] = act->in[0];
            m->in[1] = u;
            s->dead[act - s->g->nodes] = 1;
            s->producer[a] = -1;
            n++;
            break;
        }
    }
    return n;
}

/* MatMul(x, W) -> t; Add(t, b) -> y  with W, b STATIC  ==>  MatMul(x, W, b) -> y */
static int fuse_bias(cstate *s) {
    int n = 0;
    const vnpu_tensor *t = s->g->ctx->t;
    for (uint32_t i = 0; i < s->g->n_nodes; i++) {
        vnpu_node *a = &s->g->nodes[i];
        if (s->dead[i] || a->op != VNPU_OP_ADD) continue;
        for (int side = 0; side < 2; side++) {
            uint32_t mt = a->in[side], b = a->in[1 - side];
            vnpu_node *m = producer_of(s, mt, VNPU_OP_MATMUL);
            if (!m || m->n_in != 2 || !single_use_native(s, mt) || t[m->in[1]].kind != NPL_ACCEL_STATIC ||
                t[b].kind != NPL_ACCEL_STATIC)
                continue;
            int64_t nout = t[mt].dims[t[mt].rank - 1];
            if (t[b].nelem != nout || t[b].dims[t[b].rank - 1] != nout || t[a->out[0]].nelem != t[mt].nelem) continue;
            m->in[2] = b;
            m->n_in = 3;
            m->out[0] = a->out[0];
            s->producer[a->out[0]] = (int32_t)(m - s->g->nodes);
            s->producer[mt] = -1;
            s->dead[i] = 1;
            n++;
            break;
        }
    }
    return n;
}

/* MatMul(x, Wg) -> g; MatMul(x, Wu) -> u; SwiGLU(g, u) -> y  ==>  MatMulGated(x, Wg, Wu) -> y */
static int fuse_gated_matmul(cstate *s) {
    int n = 0;
    struct npl_accel_context *ctx = s->g->ctx;
    const vnpu_tensor *t = ctx->t;
    for (uint32_t i = 0; i < s->g->n_nodes; i++) {
        vnpu_node *sw = &s->g->nodes[i];
        if (s->dead[i] || (sw->op != VNPU_OP_SWIGLU && sw->op != VNPU_OP_GEGLU)) continue;
        vnpu_node *mg = producer_of(s, sw->in[0], VNPU_OP_MATMUL), *mu = producer_of(s, sw->in[1], VNPU_OP_MATMUL);
        if (!mg || !mu || mg == mu || !single_use_native(s, sw->in[0]) || !single_use_native(s, sw->in[1])) continue;
        if (mg->in[0] != mu->in[0] || mg->ip[1] != mu->ip[1] || t[mg->in[1]].kind != NPL_ACCEL_STATIC ||
            t[mu->in[1]].kind != NPL_ACCEL_STATIC)
            continue;
        if (t[sw->in[0]].dtype != NPL_ACCEL_DT_F32 && t[sw->in[0]].dtype != t[sw->out[0]].dtype) continue;
        uint32_t w[2] = {mg->in[1], mu->in[1]};
        uint32_t b[2] = {mg->n_in == 3 ? mg->in[2] : VNPU_NONE, mu->n_in == 3 ? mu->in[2] : VNPU_NONE};
        for (int k = 0; k < 2; k++)
            if (b[k] != VNPU_NONE && t[b[k]].kind != NPL_ACCEL_STATIC) b[k] = VNPU_NONE;
        if ((mg->n_in == 3 && b[0] == VNPU_NONE) || (mu->n_in == 3 && b[1] == VNPU_NONE)) continue;
        vnpu_pack p;
        char err[128];
        if (vnpu_pack_plan(&p, ctx, 2, w, b, (uint32_t)mg->ip[1], err, sizeof err)) continue;
        vnpu_node f = *sw;
        f.op = VNPU_OP_MATMUL_GATED;
        f.n_in = 3;
        f.in[0] = mg->in[0];
        f.in[1] = w[0];
        f.in[2] = w[1];
        memset(f.ip, 0, sizeof f.ip);
        f.ip[1] = mg->ip[1];
        f.ip[2] = sw->op == VNPU_OP_GEGLU;
        /* biases travel in the pack: remember them in the free input slots */
        f.in[3] = b[0];
        f.in[4] = b[1];
        *sw = f;
        s->dead[mg - s->g->nodes] = s->dead[mu - s->g->nodes] = 1;
        n++;
    }
    return n;
}

/* ---- packing ---- */

static int find_pack(const struct npl_accel_context *ctx, const vnpu_pack *want) {
    for (uint32_t i = 0; i < ctx->n_packs; i++) {
        const vnpu_pack *p = &ctx->packs[i];
        if (p->n_parts == want->n_parts && p->trans == want->trans && p->w[0] == want->w[0] && p->b[0] == want->b[0] &&
            (p->n_parts == 1 || (p->w[1] == want->w[1] && p->b[1] == want->b[1])))
            return (int)i;
    }
    return -1;
}

static npl_accel_status pack_step(vnpu_graph *g, vnpu_node *n) {
    struct npl_accel_context *ctx = g->ctx;
    const vnpu_tensor *t = ctx->t;
    uint32_t w[2] = {n->in[1], VNPU_NONE}, b[2] = {VNPU_NONE, VNPU_NONE}, parts = 1;
    if (n->op == VNPU_OP_MATMUL_GATED) {
        w[1] = n->in[2];
        b[0] = n->in[3];
        b[1] = n->in[4];
        parts = 2;
    } else {
        if (t[w[0]].kind != NPL_ACCEL_STATIC) return NPL_ACCEL_OK; /* packed at every execute */
        if (n->n_in == 3 && t[n->in[2]].kind == NPL_ACCEL_STATIC) b[0] = n->in[2];
    }
    vnpu_pack p;
    char err[160];
    if (vnpu_pack_plan(&p, ctx, parts, w, b, (uint32_t)n->ip[1], err, sizeof err))
        return vnpu_fail(ctx->be, NPL_ACCEL_ERR_UNSUPPORTED, "vnpu: graph '%s': %s", g->name, err);
    int idx = find_pack(ctx, &p);
    if (idx < 0 && p.fmt == VNPU_PK_GGML) { /* the weights are used where they are */
        p.data = p.wraw;
        if ((idx = vnpu_pack_add(ctx, &p)) < 0) return vnpu_fail(ctx->be, NPL_ACCEL_ERR_NO_MEMORY, "vnpu: out of memory");
    } else if (idx < 0) {
        if (!(p.owned = vnpu_aligned_alloc(p.size)))
            return vnpu_fail(ctx->be, NPL_ACCEL_ERR_NO_MEMORY, "vnpu: out of memory packing '%s'", t[w[0]].name);
        p.data = p.owned;
        const void *wd[2] = {t[w[0]].raw, parts == 2 ? t[w[1]].raw : NULL};
        const void *bd[2] = {b[0] != VNPU_NONE ? t[b[0]].raw : NULL, b[1] != VNPU_NONE ? t[b[1]].raw : NULL};
        vnpu_pack_fill(&p, ctx, p.owned, wd, bd, ctx->be->pool);
        if ((idx = vnpu_pack_add(ctx, &p)) < 0) {
            free(p.owned);
            return vnpu_fail(ctx->be, NPL_ACCEL_ERR_NO_MEMORY, "vnpu: out of memory");
        }
    }
    n->pack = idx;
    return NPL_ACCEL_OK;
}

/* ---- arena ---- */

typedef struct {
    size_t off, size;
    uint32_t last;
} live_block;

/* g->sel_in and the steps' sel_dep (see vnpu.h). dep: per tensor scratch. */
static void mark_selection(vnpu_graph *g, uint8_t *dep) {
    const struct npl_accel_context *ctx = g->ctx;
    const vnpu_tensor *t = ctx->t;
    uint32_t sel = VNPU_NONE;
    g->sel_in = VNPU_NONE;
    for (uint32_t s = 0; s < g->n_steps; s++) g->steps[s].sel_dep = 0;
    for (uint32_t s = 0; s < g->n_steps; s++) {
        const vnpu_node *n = &g->steps[s];
        if (n->op != VNPU_OP_GATHER || t[n->in[0]].kind == NPL_ACCEL_STATIC) continue;
        const vnpu_tensor *ix = &t[n->in[1]];
        if (ix->kind != NPL_ACCEL_APP_WRITE || ix->dtype != NPL_ACCEL_DT_INT32 || (sel != VNPU_NONE && sel != n->in[1])) return;
        sel = n->in[1];
    }
    if (sel == VNPU_NONE) return;
    memset(dep, 0, ctx->n_t);
    for (uint32_t s = 0; s < g->n_steps; s++) {
        vnpu_node *n = &g->steps[s];
        const int gather = n->op == VNPU_OP_GATHER && n->in[1] == sel && t[n->in[0]].kind != NPL_ACCEL_STATIC;
        int other_use = 0; /* the indices read by anything but such a Gather: it would see the -1s */
        for (uint32_t k = 0; k < n->n_in; k++) other_use |= !gather && n->in[k] == sel;
        n->sel_dep = (uint8_t)gather;
        for (uint32_t k = 0; k < n->n_in && !n->sel_dep; k++) n->sel_dep = n->in[k] < ctx->n_t && dep[n->in[k]];
        for (uint32_t k = 0; k < n->n_in + n->n_out && (n->sel_dep || other_use); k++) {
            const uint32_t id = k < n->n_in ? n->in[k] : n->out[k - n->n_in];
            if (other_use || n->op == VNPU_OP_ATTENTION || (id < ctx->n_t && t[id].kind == NPL_ACCEL_APP_READWRITE)) {
                for (uint32_t i = 0; i < g->n_steps; i++) g->steps[i].sel_dep = 0;
                return;
            }
        }
        if (!n->sel_dep) continue;
        for (uint32_t o = 0; o < n->n_out; o++) dep[n->out[o]] = 1;
    }
    g->sel_in = sel;
}

npl_accel_status vnpu_plan(vnpu_graph *g, int alloc) {
    struct npl_accel_context *ctx = g->ctx;
    const uint32_t nt = ctx->n_t;
    int32_t *last = malloc((nt + 1) * sizeof *last);
    live_block *live = calloc(nt + 1, sizeof *live);
    free(g->toff);
    free(g->addr);
    free(g->bound);
    vnpu_big_free(g->arena);
    g->arena = NULL;
    g->toff = malloc((nt + 1) * sizeof *g->toff);
    g->addr = calloc(nt + 1, sizeof *g->addr);
    g->bound = calloc(nt + 1, 1);
    if (!last || !live || !g->toff || !g->addr || !g->bound) {
        free(last);
        free(live);
        return vnpu_fail(ctx->be, NPL_ACCEL_ERR_NO_MEMORY, "vnpu: out of memory planning graph '%s'", g->name);
    }
    g->n_tmap = nt;
    mark_selection(g, (uint8_t *)live); /* live: nt + 1 zeroed blocks, unused until below */
    memset(live, 0, (nt + 1) * sizeof *live);
    for (uint32_t i = 0; i < nt; i++) {
        last[i] = -1;
        g->toff[i] = SIZE_MAX;
    }
    for (uint32_t s = 0; s < g->n_steps; s++)
        for (uint32_t k = 0; k < g->steps[s].n_in; k++)
            if (g->steps[s].in[k] < nt) last[g->steps[s].in[k]] = (int32_t)s;
    size_t top = 0, scratch = 0;
    uint32_t n_live = 0;
    for (uint32_t s = 0; s < g->n_steps; s++) {
        const vnpu_node *n = &g->steps[s];
        /* free blocks whose tensor was last read before this step */
        for (uint32_t i = 0; i < n_live;)
            if ((int32_t)live[i].last < (int32_t)s) live[i] = live[--n_live];
            else i++;
        for (uint32_t o = 0; o < n->n_out; o++) {
            const vnpu_tensor *t = &ctx->t[n->out[o]];
            if (t->kind != NPL_ACCEL_NATIVE) continue;
            size_t size = (t->nbytes + VNPU_ALIGN - 1) & ~(size_t)(VNPU_ALIGN - 1), off = 0;
            /* first fit among the live blocks sorted by offset */
            for (int moved = 1; moved;) {
                moved = 0;
                for (uint32_t i = 0; i < n_live; i++)
                    if (off < live[i].off + live[i].size && live[i].off < off + size) {
                        off = live[i].off + live[i].size;
                        moved = 1;
                    }
            }
            g->toff[n->out[o]] = off;
            live[n_live].off = off;
            live[n_live].size = size;
            live[n_live].last = (uint32_t)(last[n->out[o]] < (int32_t)s ? (int32_t)s : last[n->out[o]]);
            n_live++;
            if (off + size > top) top = off + size;
        }
        size_t sc = vnpu_step_scratch(g, n);
        if (sc > scratch) scratch = sc;
    }
    free(last);
    free(live);
    g->scratch_off = top;
    g->arena_size = top + ((scratch + VNPU_ALIGN - 1) & ~(size_t)(VNPU_ALIGN - 1));
    if (alloc && !(g->arena = vnpu_big_alloc(g->arena_size)))
        return vnpu_fail(ctx->be, NPL_ACCEL_ERR_NO_MEMORY, "vnpu: out of memory for the %zu-byte arena of graph '%s'",
                         g->arena_size, g->name);
    return NPL_ACCEL_OK;
}

/* ---- finalize ---- */

static void describe(vnpu_graph *g, int n_bias, int n_gate, int n_act) {
    const vnpu_mm_table *tab = &g->ctx->be->mm[g->ctx->family];
    static const char *const fmt_names[VNPU_PK_COUNT] = {"raw", "f32", "f16", "bf16", "int8", "int16", "int16", "ggml"};
    int count[VNPU_PK_COUNT] = {0};
    for (uint32_t i = 0; i < g->n_steps; i++) {
        const vnpu_node *n = &g->steps[i];
        if (n->op != VNPU_OP_MATMUL && n->op != VNPU_OP_MATMUL_GATED) continue;
        count[vnpu_pack_fmt(g->ctx->family, g->ctx->t[n->in[1]].dtype)]++;
    }
    size_t o = (size_t)snprintf(g->detail, sizeof g->detail, "family %s; matmul:", vnpu_family_name(g->ctx->family));
    for (int f = 1; f < VNPU_PK_COUNT && o < sizeof g->detail; f++)
        if (count[f])
            o += (size_t)snprintf(g->detail + o, sizeof g->detail - o, " %s/%s x%d", fmt_names[f], tab->kname[f], count[f]);
    if (o < sizeof g->detail)
        snprintf(g->detail + o, sizeof g->detail - o, "; fused: bias %d, act-mul %d, gate-up %d", n_bias, n_act, n_gate);
}

npl_accel_status vnpu_finalize(vnpu_graph *g) {
    const uint64_t t0 = now_ns();
    struct npl_accel_context *ctx = g->ctx;
    cstate s = {g, ctx->n_t, NULL, NULL, NULL, NULL};
    s.producer = malloc((s.nt + 1) * sizeof *s.producer);
    s.uses = calloc(s.nt + 1, sizeof *s.uses);
    s.dead = calloc(g->n_nodes + 1, 1);
    s.order = malloc((g->n_nodes + 1) * sizeof *s.order);
    npl_accel_status st = NPL_ACCEL_OK;
    if (!s.producer || !s.uses || !s.dead || !s.order)
        st = vnpu_fail(ctx->be, NPL_ACCEL_ERR_NO_MEMORY, "vnpu: out of memory finalizing graph '%s'", g->name);
    if (!st) st = check_and_order(&s);
    int n_act = 0, n_bias = 0, n_gate = 0;
    if (!st) {
        n_act = fuse_gating(&s);
        n_bias = fuse_bias(&s);
        n_gate = fuse_gated_matmul(&s);
        g->steps = calloc(g->n_nodes + 1, sizeof *g->steps);
        if (!g->steps) st = vnpu_fail(ctx->be, NPL_ACCEL_ERR_NO_MEMORY, "vnpu: out of memory");
    }
    for (uint32_t i = 0; !st && i < g->n_nodes; i++) {
        uint32_t k = s.order[i];
        if (s.dead[k]) continue;
        vnpu_node *n = &g->steps[g->n_steps++];
        *n = g->nodes[k];
        n->name = NULL;
        if (g->nodes[k].name && !(n->name = strdup(g->nodes[k].name)))
            st = vnpu_fail(ctx->be, NPL_ACCEL_ERR_NO_MEMORY, "vnpu: out of memory");
        if (!st && (n->op == VNPU_OP_MATMUL || n->op == VNPU_OP_MATMUL_GATED)) st = pack_step(g, n);
    }
    if (!st) st = vnpu_plan(g, 1);
    free(s.producer);
    free(s.uses);
    free(s.dead);
    free(s.order);
    if (st) {
        for (uint32_t i = 0; i < g->n_steps; i++) free(g->steps[i].name);
        free(g->steps);
        g->steps = NULL;
        g->n_steps = 0;
        return st;
    }
    g->n_added = g->n_nodes;
    g->n_fused = (uint32_t)(n_act + n_bias + n_gate);
    describe(g, n_bias, n_gate, n_act);
    g->finalized = 1;
    g->prof.finalize_ns = now_ns() - t0;
    return NPL_ACCEL_OK;
}
