/* Session: plan per input-shape key, one arena, execution in node order. */
#include "core/session.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/checked.h"
#include "core/op_profile.h"
#include "core/status.h"

enum { MAX_PLANS = 32, ARENA_ALIGN = 64, GROUP_MAX = 4 };
#define NO_OFFSET SIZE_MAX

typedef struct {
    npl_shape *in_shapes;   /* key: shapes of the bound inputs, in input order */
    npl_shape *shapes;      /* per node (only needed nodes are meaningful) */
    size_t *offsets;        /* arena offset per node, NO_OFFSET for bound/views */
    size_t arena_size, scratch_size;
    unsigned long long last_used;
} plan;

struct npl_graph_session {
    const npl_graph *g;
    const npl_backend *be;
    npl_pool *pool;
    int n_nodes;
    int *outputs, n_outputs;
    unsigned char *needed;
    int *order, n_order;          /* needed non-leaf nodes, topological */
    int *group;                   /* per order index: nodes run together from here (exec_group), 0 inside one */
    int *inputs, n_inputs;        /* needed INPUT nodes */
    void **bound;                 /* data per node for INPUT/STATE/WEIGHT */
    npl_shape *bound_shape;       /* current shape per INPUT */
    void **op_state;              /* per node, from create() */
    plan plans[MAX_PLANS];
    int n_plans, cur;
    unsigned long long clock;
    unsigned char *arena;
    size_t arena_cap;
    void *scratch;
    size_t scratch_cap;
    npl_tensor *out_tensors;
    char err[512];
};

/* A failure with its code (core/status.h): fail() for a failed run,
 * fail_code() for another kind. Both return -1. */
static int fail_va(npl_graph_session *s, npl_status code, const char *fmt, va_list ap) {
    vsnprintf(s->err, sizeof(s->err), fmt, ap);
    npl_status_note(code);
    return -1;
}
static int fail_code(npl_graph_session *s, npl_status code, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fail_va(s, code, fmt, ap);
    va_end(ap);
    return -1;
}
static int fail(npl_graph_session *s, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fail_va(s, NPL_ERR_RUNTIME, fmt, ap);
    va_end(ap);
    return -1;
}

const char *npl_graph_session_error(const npl_graph_session *s) { return s->err; }

static void plan_free(plan *p) {
    free(p->in_shapes);
    free(p->shapes);
    free(p->offsets);
    memset(p, 0, sizeof(*p));
}

void npl_graph_session_free(npl_graph_session *s) {
    if (!s) return;
    for (int i = 0; i < s->n_plans; i++) plan_free(&s->plans[i]);
    if (s->op_state)
        for (int i = 0; i < s->n_nodes; i++)
            if (s->op_state[i] && s->be->ops[npl_graph_node(s->g, i)->op].destroy)
                s->be->ops[npl_graph_node(s->g, i)->op].destroy(s->op_state[i]);
    free(s->op_state);
    free(s->outputs);
    free(s->needed);
    free(s->order);
    free(s->group);
    free(s->inputs);
    free(s->bound);
    free(s->bound_shape);
    free(s->arena);
    free(s->scratch);
    free(s->out_tensors);
    free(s);
}

static void fill_ctx(npl_graph_session *s, const plan *p, int id, npl_exec_ctx *c) {
    const npl_node *nd = npl_graph_node(s->g, id);
    memset(c, 0, sizeof(*c));
    c->graph = s->g;
    c->id = id;
    c->node = nd;
    c->n_src = nd->n_src;
    c->pool = s->pool;
    c->backend_ctx = s->be->ctx;
    c->op_state = s->op_state[id];
    c->err = s->err;
    c->errlen = sizeof(s->err);
    c->scratch = s->scratch;
    for (int i = 0; i < nd->n_src; i++) {
        int sid = nd->src[i];
        c->src[i].type = npl_graph_node(s->g, sid)->type;
        if (p) c->src[i].shape = p->shapes[sid];
    }
    c->dst.type = nd->type;
    if (p) c->dst.shape = p->shapes[id];
}

/* Runs of nodes the backend executes together (npl_op_exec.exec_group):
 * consecutive in the order, the same op, the same src[1] (no member an
 * input of another). Consecutive, so no other node's output is allocated
 * while a member's is written early, and src[1] stays live to the last. */
static int root_of(const npl_graph *g, int id);

static void find_groups(npl_graph_session *s) {
    for (int k = 0; k < s->n_order; k++) s->group[k] = 1;
    for (int k = 0; k < s->n_order;) {
        const npl_node *nd = npl_graph_node(s->g, s->order[k]);
        int n = 1;
        if (s->be->ops[nd->op].exec_group && s->be->ops[nd->op].scratch && nd->n_src >= 2)
            while (k + n < s->n_order && n < GROUP_MAX) {
                const npl_node *nx = npl_graph_node(s->g, s->order[k + n]);
                /* src[0] a WEIGHT: bound memory, which a member's output cannot take over */
                int ok = nx->op == nd->op && nx->n_src == nd->n_src && nx->src[1] == nd->src[1] &&
                         npl_graph_node(s->g, root_of(s->g, nx->src[0]))->op == NPL_OP_WEIGHT &&
                         npl_graph_node(s->g, root_of(s->g, nd->src[0]))->op == NPL_OP_WEIGHT;
                for (int j = 0; ok && j < nx->n_src; j++)
                    for (int i = 0; i < n; i++) ok &= nx->src[j] != s->order[k + i];
                if (!ok) break;
                n++;
            }
        s->group[k] = n;
        for (int i = 1; i < n; i++) s->group[k + i] = 0;
        k += n;
    }
}

npl_graph_session *npl_graph_session_new(const npl_graph *g, const npl_backend *be, npl_pool *pool,
                             const int *outputs, int n_outputs, char *err, size_t errlen) {
    npl_graph_session *s = calloc(1, sizeof(*s));
    int n = npl_graph_n_nodes(g);
    if (!s) goto oom;
    s->g = g;
    s->be = be;
    s->pool = pool;
    s->n_nodes = n;
    s->cur = -1;
    if (npl_graph_error(g)) {
        snprintf(err, errlen, "graph has an error: %s", npl_graph_error(g));
        npl_graph_session_free(s);
        return NULL;
    }
    s->needed = calloc((size_t)n + 1, 1);
    s->order = calloc((size_t)n + 1, sizeof(int));
    s->inputs = calloc((size_t)n + 1, sizeof(int));
    s->bound = calloc((size_t)n + 1, sizeof(void *));
    s->bound_shape = calloc((size_t)n + 1, sizeof(npl_shape));
    s->op_state = calloc((size_t)n + 1, sizeof(void *));
    s->outputs = calloc((size_t)n_outputs + 1, sizeof(int));
    s->out_tensors = calloc((size_t)n_outputs + 1, sizeof(npl_tensor));
    if (!s->needed || !s->order || !s->inputs || !s->bound || !s->bound_shape || !s->op_state ||
        !s->outputs || !s->out_tensors)
        goto oom;
    for (int i = 0; i < n_outputs; i++) {
        if (outputs[i] < 0 || outputs[i] >= n) {
            snprintf(err, errlen, "output %d refers to missing node %d", i, outputs[i]);
            npl_graph_session_free(s);
            return NULL;
        }
        s->outputs[i] = outputs[i];
        s->needed[outputs[i]] = 1;
    }
    s->n_outputs = n_outputs;
    /* walk back from the outputs: nodes only refer to earlier ones */
    for (int i = n - 1; i >= 0; i--) {
        if (!s->needed[i]) continue;
        const npl_node *nd = npl_graph_node(g, i);
        for (int j = 0; j < nd->n_src; j++) s->needed[nd->src[j]] = 1;
    }
    for (int i = 0; i < n; i++) {
        if (!s->needed[i]) continue;
        const npl_node *nd = npl_graph_node(g, i);
        if (nd->op == NPL_OP_INPUT) s->inputs[s->n_inputs++] = i;
        else if (nd->op == NPL_OP_WEIGHT) s->bound[i] = (void *)nd->data;
        else if (nd->op != NPL_OP_STATE) {
            if (!be->ops[nd->op].exec) {
                snprintf(err, errlen, "backend %s cannot run op %s (node %d)", be->name, npl_op_name(nd->op), i);
                npl_graph_session_free(s);
                return NULL;
            }
            s->order[s->n_order++] = i;
        }
    }
    if (!(s->group = malloc(((size_t)s->n_order + 1) * sizeof(int)))) goto oom;
    find_groups(s);
    for (int k = 0; k < s->n_order; k++) {
        int id = s->order[k];
        const npl_op_exec *ox = &be->ops[npl_graph_node(g, id)->op];
        if (!ox->create) continue;
        npl_exec_ctx c;
        fill_ctx(s, NULL, id, &c);
        if (ox->create(&c, &s->op_state[id]) != 0) {
            snprintf(err, errlen, "%s", s->err);
            npl_graph_session_free(s);
            return NULL;
        }
    }
    return s;
oom:
    npl_errf(err, errlen, NPL_ERR_MEMORY, "out of memory creating a session");
    npl_graph_session_free(s);
    return NULL;
}

int npl_graph_session_set_input_id(npl_graph_session *s, int id, void *data, const npl_shape *shape) {
    const npl_node *nd = npl_graph_node(s->g, id);
    if (!nd || (nd->op != NPL_OP_INPUT && nd->op != NPL_OP_STATE))
        return fail_code(s, NPL_ERR_ARGUMENT, "node %d is not an input or state", id);
    s->bound[id] = data;
    if (nd->op == NPL_OP_INPUT) {
        if (!shape) return fail_code(s, NPL_ERR_ARGUMENT, "input '%s' bound without a shape", nd->name);
        for (int i = 0; i < NPL_MAX_DIMS; i++) {
            int64_t decl = i < nd->shape.n_dims ? nd->shape.ne[i] : 1;
            if (shape->ne[i] <= 0 || (decl != NPL_DIM_SEQ && decl != shape->ne[i]))
                return fail_code(s, NPL_ERR_ARGUMENT, "input '%s': dim %d is %lld, declared %lld", nd->name, i,
                            (long long)shape->ne[i], (long long)decl);
        }
        s->bound_shape[id] = *shape;
    }
    return 0;
}

int npl_graph_session_set_input(npl_graph_session *s, const char *name, void *data, const npl_shape *shape) {
    int id = npl_graph_find(s->g, name);
    if (id < 0) return fail_code(s, NPL_ERR_ARGUMENT, "no input named '%s'", name);
    return npl_graph_session_set_input_id(s, id, data, shape);
}

int npl_graph_session_set_state(npl_graph_session *s, const char *name, void *data) {
    return npl_graph_session_set_input(s, name, data, NULL);
}

static int same_key(const npl_graph_session *s, const plan *p) {
    for (int i = 0; i < s->n_inputs; i++)
        if (memcmp(p->in_shapes[i].ne, s->bound_shape[s->inputs[i]].ne, sizeof(p->in_shapes[i].ne))) return 0;
    return 1;
}

/* Storage root of a node: a RESHAPE is a view of its source. */
static int root_of(const npl_graph *g, int id) {
    while (npl_graph_node(g, id)->op == NPL_OP_RESHAPE) id = npl_graph_node(g, id)->src[0];
    return id;
}

typedef struct { size_t off, size; } block;

/* First-fit allocation from a free list kept sorted by offset. */
static size_t alloc_block(block *fl, int *nfl, size_t size, size_t *top) {
    for (int i = 0; i < *nfl; i++)
        if (fl[i].size >= size) {
            size_t off = fl[i].off;
            fl[i].off += size;
            fl[i].size -= size;
            if (!fl[i].size) {
                memmove(&fl[i], &fl[i + 1], (size_t)(*nfl - i - 1) * sizeof(block));
                (*nfl)--;
            }
            return off;
        }
    size_t off = *top;
    *top += size;
    return off;
}
static void free_block(block *fl, int *nfl, size_t off, size_t size) {
    int i = 0;
    while (i < *nfl && fl[i].off < off) i++;
    memmove(&fl[i + 1], &fl[i], (size_t)(*nfl - i) * sizeof(block));
    fl[i].off = off;
    fl[i].size = size;
    (*nfl)++;
    if (i + 1 < *nfl && fl[i].off + fl[i].size == fl[i + 1].off) { /* merge right */
        fl[i].size += fl[i + 1].size;
        memmove(&fl[i + 1], &fl[i + 2], (size_t)(*nfl - i - 2) * sizeof(block));
        (*nfl)--;
    }
    if (i > 0 && fl[i - 1].off + fl[i - 1].size == fl[i].off) { /* merge left */
        fl[i - 1].size += fl[i].size;
        memmove(&fl[i], &fl[i + 1], (size_t)(*nfl - i - 1) * sizeof(block));
        (*nfl)--;
    }
}

static int make_plan(npl_graph_session *s, plan *p) {
    const npl_graph *g = s->g;
    int n = s->n_nodes, rc = -1;
    int *last_use = NULL;
    block *fl = NULL;
    int nfl = 0;
    p->in_shapes = calloc((size_t)s->n_inputs + 1, sizeof(npl_shape));
    p->shapes = calloc((size_t)n, sizeof(npl_shape));
    p->offsets = malloc((size_t)n * sizeof(size_t));
    last_use = malloc((size_t)n * sizeof(int));
    fl = calloc((size_t)n + 2, sizeof(block));
    if (!p->in_shapes || !p->shapes || !p->offsets || !last_use || !fl) {
        fail_code(s, NPL_ERR_MEMORY, "out of memory planning a session");
        goto done;
    }
    for (int i = 0; i < s->n_inputs; i++) p->in_shapes[i] = s->bound_shape[s->inputs[i]];
    for (int i = 0; i < n; i++) {
        p->offsets[i] = NO_OFFSET;
        last_use[i] = -1;
    }
    /* shapes */
    for (int i = 0; i < n; i++) {
        if (!s->needed[i]) continue;
        const npl_node *nd = npl_graph_node(g, i);
        if (nd->op == NPL_OP_INPUT) {
            p->shapes[i] = s->bound_shape[i];
            p->shapes[i].n_dims = nd->shape.n_dims;
            continue;
        }
        npl_shape src[NPL_MAX_SRC];
        for (int j = 0; j < nd->n_src; j++) src[j] = p->shapes[nd->src[j]];
        char msg[300];
        if (npl_infer_shape_ex(g, i, src, &p->shapes[i], &s->be->plugin_shape, msg, sizeof(msg)) != 0) {
            fail(s, "%s", msg);
            goto done;
        }
    }
    /* lifetimes: a view keeps its root alive; outputs live to the end */
    for (int k = 0; k < s->n_order; k++) {
        const npl_node *nd = npl_graph_node(g, s->order[k]);
        for (int j = 0; j < nd->n_src; j++) last_use[root_of(g, nd->src[j])] = k;
    }
    for (int i = 0; i < s->n_outputs; i++) last_use[root_of(g, s->outputs[i])] = s->n_order;
    /* memory plan + scratch */
    size_t top = 0;
    p->scratch_size = 0;
    for (int k = 0; k < s->n_order; k++) {
        int id = s->order[k];
        const npl_node *nd = npl_graph_node(g, id);
        npl_exec_ctx c;
        fill_ctx(s, p, id, &c);
        const npl_op_exec *ox = &s->be->ops[nd->op];
        if (ox->scratch) {
            size_t sc = ox->scratch(&c);
            if (sc > p->scratch_size) p->scratch_size = sc;
            if (s->group[k] > 1) { /* a group: each member's scratch after the one before */
                size_t sum = 0;
                for (int i = 0; i < s->group[k]; i++) {
                    npl_exec_ctx ci;
                    fill_ctx(s, p, s->order[k + i], &ci);
                    sum += (ox->scratch(&ci) + ARENA_ALIGN - 1) / ARENA_ALIGN * ARENA_ALIGN;
                }
                if (sum > p->scratch_size) p->scratch_size = sum;
            }
        }
        if (nd->op != NPL_OP_RESHAPE) {
            const npl_type_traits *tt = npl_type_get(nd->type);
            size_t rowb, bytes;
            int64_t ne = npl_shape_nelements(&p->shapes[id]);
            if (!tt || ne <= 0 || npl_row_size(nd->type, p->shapes[id].ne[0], &rowb) ||
                npl_mul_size(rowb, (size_t)(ne / p->shapes[id].ne[0]), &bytes) ||
                npl_align_size(bytes, ARENA_ALIGN, &bytes)) {
                fail(s, "node %d (%s): output size overflows", id, npl_op_name(nd->op));
                goto done;
            }
            p->offsets[id] = alloc_block(fl, &nfl, bytes, &top);
        }
        /* free what dies here */
        for (int j = 0; j < nd->n_src; j++) {
            int r = root_of(g, nd->src[j]);
            if (last_use[r] == k && p->offsets[r] != NO_OFFSET) {
                const npl_node *rn = npl_graph_node(g, r);
                size_t rowb, bytes;
                npl_row_size(rn->type, p->shapes[r].ne[0], &rowb);
                bytes = rowb * (size_t)(npl_shape_nelements(&p->shapes[r]) / p->shapes[r].ne[0]);
                npl_align_size(bytes, ARENA_ALIGN, &bytes);
                free_block(fl, &nfl, p->offsets[r], bytes);
                last_use[r] = -2; /* freed once even if used twice by this node */
            }
        }
        if (ox->resize && ox->resize(&c) != 0) goto done;
    }
    p->arena_size = top;
    rc = 0;
done:
    free(last_use);
    free(fl);
    return rc;
}

static int ensure(npl_graph_session *s, void **buf, size_t *cap, size_t need) {
    if (need <= *cap) return 0;
    void *nb = NULL;
    if (posix_memalign(&nb, ARENA_ALIGN, need ? need : ARENA_ALIGN)) return fail_code(s, NPL_ERR_MEMORY, "out of memory: %zu bytes", need);
    free(*buf);
    *buf = nb;
    *cap = need;
    return 0;
}

static plan *select_plan(npl_graph_session *s) {
    for (int i = 0; i < s->n_inputs; i++)
        if (!s->bound[s->inputs[i]]) {
            fail_code(s, NPL_ERR_ARGUMENT, "input '%s' is not bound", npl_graph_node(s->g, s->inputs[i])->name);
            return NULL;
        }
    if (s->cur >= 0 && same_key(s, &s->plans[s->cur])) return &s->plans[s->cur];
    for (int i = 0; i < s->n_plans; i++)
        if (same_key(s, &s->plans[i])) {
            s->cur = i;
            /* executions were resized for another shape: tell them again */
            for (int k = 0; k < s->n_order; k++) {
                int id = s->order[k];
                const npl_op_exec *ox = &s->be->ops[npl_graph_node(s->g, id)->op];
                if (ox->resize) {
                    npl_exec_ctx c;
                    fill_ctx(s, &s->plans[i], id, &c);
                    if (ox->resize(&c) != 0) return NULL;
                }
            }
            return &s->plans[i];
        }
    int slot = s->n_plans;
    if (slot == MAX_PLANS) { /* evict the least recently used */
        slot = 0;
        for (int i = 1; i < MAX_PLANS; i++)
            if (s->plans[i].last_used < s->plans[slot].last_used) slot = i;
        plan_free(&s->plans[slot]);
    }
    plan *p = &s->plans[slot];
    if (make_plan(s, p) != 0) {
        plan_free(p);
        return NULL;
    }
    if (slot == s->n_plans) s->n_plans++;
    s->cur = slot;
    return p;
}

/* c for node id with its inputs' and output's memory; -1 on an unbound input */
static int bind_ctx(npl_graph_session *s, const plan *p, int id, npl_exec_ctx *c) {
    const npl_graph *g = s->g;
    const npl_node *nd = npl_graph_node(g, id);
    fill_ctx(s, p, id, c);
    for (int j = 0; j < nd->n_src; j++) {
        int r = root_of(g, nd->src[j]);
        c->src[j].data = p->offsets[r] != NO_OFFSET ? s->arena + p->offsets[r] : s->bound[r];
        if (!c->src[j].data) return fail(s, "node %d (%s): input %d has no data (unbound state?)", id, npl_op_name(nd->op), j);
    }
    if (nd->op != NPL_OP_RESHAPE) c->dst.data = s->arena + p->offsets[id];
    return 0;
}

/* Before an op that has no prefetch (reads no weights), the backend is
 * asked to start bringing in what the next op that has one will read (a
 * matmul, or a group of them), so the memory works while these ops run.
 * Returns the order index after that op, so it is asked once. */
static int prefetch_next(npl_graph_session *s, const plan *p, int k) {
    for (int j = k; j < s->n_order; j += s->group[j]) {
        const npl_node *nd = npl_graph_node(s->g, s->order[j]);
        if (!s->be->ops[nd->op].prefetch) continue;
        npl_exec_ctx c[GROUP_MAX];
        int n = 0;
        while (n < s->group[j] && n < GROUP_MAX && bind_ctx(s, p, s->order[j + n], &c[n]) == 0) n++;
        if (n == s->group[j]) s->be->ops[nd->op].prefetch(c, n);
        return j + s->group[j];
    }
    return s->n_order;
}

int npl_graph_session_run(npl_graph_session *s) {
    s->err[0] = 0;
    plan *p = select_plan(s);
    if (!p) return -1;
    p->last_used = ++s->clock;
    if (ensure(s, (void **)&s->arena, &s->arena_cap, p->arena_size) ||
        ensure(s, &s->scratch, &s->scratch_cap, p->scratch_size))
        return -1;
    const npl_graph *g = s->g;
#ifdef NPL_OP_PROFILE
    int prof_on = 1; /* decode steps only (every input one row), or with NPL_OP_PROFILE_PREFILL only the others */
    for (int i = 0; i < s->n_inputs; i++) prof_on &= s->bound_shape[s->inputs[i]].ne[0] == 1;
#ifdef NPL_OP_PROFILE_PREFILL
    prof_on = !prof_on;
#endif
    const double t_run = prof_start();
#endif
    int prefetched = 0; /* order index up to which prefetch_next has asked */
    for (int k = 0; k < s->n_order; k += s->group[k]) {
        const int n = s->group[k], id = s->order[k];
        const npl_node *nd = npl_graph_node(g, id);
        npl_exec_ctx c[GROUP_MAX];
        size_t off = 0;
        for (int i = 0; i < n; i++) {
            if (bind_ctx(s, p, s->order[k + i], &c[i])) return -1;
            if (n > 1) { /* each member its own scratch (make_plan) */
                c[i].scratch = (char *)s->scratch + off;
                off += (s->be->ops[nd->op].scratch(&c[i]) + ARENA_ALIGN - 1) / ARENA_ALIGN * ARENA_ALIGN;
            }
        }
        if (nd->op == NPL_OP_RESHAPE) continue;
        if (!s->be->ops[nd->op].prefetch && k >= prefetched) prefetched = prefetch_next(s, p, k);
#ifdef NPL_OP_PROFILE
        const double t0 = prof_now();
#endif
        int rc = n > 1 ? s->be->ops[nd->op].exec_group(c, n) : 1;
        for (int i = 0; rc == 1 && i < n; i++) { /* not as a group: one by one, the shared scratch each */
            c[i].scratch = s->scratch;
            if (s->be->ops[nd->op].exec(&c[i]) != 0) rc = -1;
        }
        if (rc == 1) rc = 0;
        if (rc != 0) {
            if (!s->err[0]) fail(s, "node %d (%s) failed", id, npl_op_name(nd->op));
            return -1;
        }
#ifdef NPL_OP_PROFILE
        if (prof_on) prof_node(nd, c, n, t0);
#endif
    }
#ifdef NPL_OP_PROFILE
    if (prof_on) prof_run(t_run);
#endif
    for (int i = 0; i < s->n_outputs; i++) {
        int id = s->outputs[i], r = root_of(g, id);
        s->out_tensors[i].type = npl_graph_node(g, id)->type;
        s->out_tensors[i].shape = p->shapes[id];
        s->out_tensors[i].data = p->offsets[r] != NO_OFFSET ? s->arena + p->offsets[r] : s->bound[r];
    }
    return 0;
}

const npl_tensor *npl_graph_session_output(const npl_graph_session *s, int i) {
    return (i >= 0 && i < s->n_outputs) ? &s->out_tensors[i] : NULL;
}
int npl_graph_session_n_plans(const npl_graph_session *s) { return s->n_plans; }
size_t npl_graph_session_arena_size(const npl_graph_session *s) { return s->cur >= 0 ? s->plans[s->cur].arena_size : 0; }
