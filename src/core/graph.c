/* Graph IR storage and the builder API (see graph.h). */
#include "core/graph.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/status.h"

struct npl_graph {
    npl_node *nodes;
    int n, cap;
    char err[256];
    int failed;
};

static const struct {
    const char *name;
    int lo, hi;
} op_info[NPL_OP_COUNT] = {
#define NPL_OP_INFO(e, name, lo, hi, shape, cpu, file, lower) {name, lo, hi},
    NPL_OP_LIST(NPL_OP_INFO)
#undef NPL_OP_INFO
};

const char *npl_op_name(npl_op op) { return (unsigned)op < NPL_OP_COUNT ? op_info[op].name : "?"; }
int npl_op_min_src(npl_op op) { return (unsigned)op < NPL_OP_COUNT ? op_info[op].lo : 0; }
int npl_op_max_src(npl_op op) { return (unsigned)op < NPL_OP_COUNT ? op_info[op].hi : 0; }

npl_graph *npl_graph_new(void) { return calloc(1, sizeof(npl_graph)); }

static void attrs_free(npl_attr *a) {
    while (a) {
        npl_attr *next = a->next;
        if (a->strs)
            for (int64_t i = 0; i < a->n; i++) free(a->strs[i]);
        free(a->strs);
        free(a->ints);
        free(a->floats);
        free(a->key);
        free(a);
        a = next;
    }
}

void npl_graph_free(npl_graph *g) {
    if (!g) return;
    for (int i = 0; i < g->n; i++) {
        free(g->nodes[i].name);
        free(g->nodes[i].value);
        attrs_free(g->nodes[i].attrs);
    }
    free(g->nodes);
    free(g);
}

int npl_graph_n_nodes(const npl_graph *g) { return g->n; }
const npl_node *npl_graph_node(const npl_graph *g, int id) {
    return (id >= 0 && id < g->n) ? &g->nodes[id] : NULL;
}
npl_node *npl_graph_node_mut(npl_graph *g, int id) { return (id >= 0 && id < g->n) ? &g->nodes[id] : NULL; }
const char *npl_graph_error(const npl_graph *g) { return g->failed ? g->err : NULL; }

void npl_graph_set_error(npl_graph *g, const char *fmt, ...) {
    if (g->failed) return; /* keep the first error: it is the cause */
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(g->err, sizeof(g->err), fmt, ap);
    va_end(ap);
    g->failed = 1;
}

void npl_graph_set_oom(npl_graph *g) {
    if (!g->failed) npl_status_note(NPL_ERR_MEMORY); /* the first error is the cause */
    npl_graph_set_error(g, "out of memory");
}

int npl_graph_find(const npl_graph *g, const char *name) {
    for (int i = g->n - 1; i >= 0; i--)
        if (g->nodes[i].name && !strcmp(g->nodes[i].name, name)) return i;
    return -1;
}

int npl_graph_set_name(npl_graph *g, int id, const char *name) {
    if (id < 0 || id >= g->n) return -1;
    char *copy = strdup(name);
    if (!copy) {
        npl_graph_set_oom(g);
        return -1;
    }
    free(g->nodes[id].name);
    g->nodes[id].name = copy;
    return id;
}

int64_t npl_shape_nelements(const npl_shape *s) {
    int64_t n = 1;
    for (int i = 0; i < NPL_MAX_DIMS; i++) {
        if (s->ne[i] < 0) return 0;
        if (__builtin_mul_overflow(n, s->ne[i], &n)) return 0;
    }
    return n;
}

/* Append a node; checks sources exist and come earlier (keeps the graph acyclic). */
static int push(npl_graph *g, npl_op op, npl_type type, int n_src, const int *src) {
    if (g->failed) return -1;
    if (n_src < npl_op_min_src(op) || n_src > npl_op_max_src(op)) {
        npl_graph_set_error(g, "%s: %d inputs (expects %d..%d)", npl_op_name(op), n_src,
                            npl_op_min_src(op), npl_op_max_src(op));
        return -1;
    }
    for (int i = 0; i < n_src; i++)
        if (src[i] < 0 || src[i] >= g->n) {
            npl_graph_set_error(g, "%s: input %d refers to missing node %d", npl_op_name(op), i, src[i]);
            return -1;
        }
    if (g->n == g->cap) {
        int cap = g->cap ? g->cap * 2 : 256;
        npl_node *nn = realloc(g->nodes, (size_t)cap * sizeof(npl_node));
        if (!nn) {
            npl_graph_set_oom(g);
            return -1;
        }
        g->nodes = nn;
        g->cap = cap;
    }
    npl_node *nd = &g->nodes[g->n];
    memset(nd, 0, sizeof(*nd));
    nd->op = op;
    nd->type = type;
    nd->n_src = n_src;
    for (int i = 0; i < n_src; i++) nd->src[i] = src[i];
    nd->shape.n_dims = 1;
    for (int i = 0; i < NPL_MAX_DIMS; i++) nd->shape.ne[i] = 1;
    return g->n++;
}

int npl_graph_push(npl_graph *g, npl_op op, npl_type type, int n_src, const int *src) {
    if (op == NPL_OP_INPUT || op == NPL_OP_WEIGHT || op == NPL_OP_STATE || (unsigned)op >= NPL_OP_COUNT) {
        npl_graph_set_error(g, "op %d cannot be appended as a computed node", (int)op);
        return -1;
    }
    if (!npl_type_get(type)) {
        npl_graph_set_error(g, "%s: unsupported type %d", npl_op_name(op), (int)type);
        return -1;
    }
    return push(g, op, type, n_src, src);
}

static int leaf(npl_graph *g, npl_op op, const char *name, npl_type type, int n_dims, const int64_t *ne) {
    if (g->failed) return -1;
    if (!npl_type_get(type)) {
        npl_graph_set_error(g, "%s '%s': unsupported type %d", npl_op_name(op), name, (int)type);
        return -1;
    }
    if (n_dims < 1 || n_dims > NPL_MAX_DIMS) {
        npl_graph_set_error(g, "%s '%s': %d dims (1..%d)", npl_op_name(op), name, n_dims, NPL_MAX_DIMS);
        return -1;
    }
    for (int i = 0; i < n_dims; i++)
        if (ne[i] <= 0 && !(op == NPL_OP_INPUT && ne[i] == NPL_DIM_SEQ)) {
            npl_graph_set_error(g, "%s '%s': dim %d is %lld", npl_op_name(op), name, i, (long long)ne[i]);
            return -1;
        }
    int id = push(g, op, type, 0, NULL);
    if (id < 0) return -1;
    g->nodes[id].shape.n_dims = n_dims;
    for (int i = 0; i < n_dims; i++) g->nodes[id].shape.ne[i] = ne[i];
    return npl_graph_set_name(g, id, name);
}

int npl_input(npl_graph *g, const char *name, npl_type type, int n_dims, const int64_t *ne) {
    return leaf(g, NPL_OP_INPUT, name, type, n_dims, ne);
}
int npl_weight(npl_graph *g, const char *name, npl_type type, int n_dims, const int64_t *ne, const void *data) {
    int id = leaf(g, NPL_OP_WEIGHT, name, type, n_dims, ne);
    if (id >= 0) g->nodes[id].data = data;
    return id;
}
int npl_state(npl_graph *g, const char *name, npl_type type, int n_dims, const int64_t *ne) {
    return leaf(g, NPL_OP_STATE, name, type, n_dims, ne);
}

static int op1(npl_graph *g, npl_op op, int a) { return push(g, op, NPL_TYPE_F32, 1, &a); }
static int op2(npl_graph *g, npl_op op, int a, int b) {
    int s[2] = {a, b};
    return push(g, op, NPL_TYPE_F32, 2, s);
}

int npl_get_rows(npl_graph *g, int table, int ids) { return op2(g, NPL_OP_GET_ROWS, table, ids); }
int npl_rms_norm(npl_graph *g, int x, int w, float eps) {
    int id = w >= 0 ? op2(g, NPL_OP_RMS_NORM, x, w) : op1(g, NPL_OP_RMS_NORM, x);
    if (id >= 0) g->nodes[id].fp[0] = eps;
    return id;
}
int npl_matmul(npl_graph *g, int w, int x) { return op2(g, NPL_OP_MATMUL, w, x); }
int npl_add(npl_graph *g, int a, int b) { return op2(g, NPL_OP_ADD, a, b); }
int npl_mul(npl_graph *g, int a, int b) { return op2(g, NPL_OP_MUL, a, b); }
int npl_scale(npl_graph *g, int x, float s) {
    int id = op1(g, NPL_OP_SCALE, x);
    if (id >= 0) g->nodes[id].fp[0] = s;
    return id;
}
int npl_apply_rope(npl_graph *g, int x, int pos, int n_rot, int neox, float base, float freq_scale) {
    return npl_apply_rope_ext(g, x, pos, -1, n_rot, neox, base, freq_scale, NULL);
}
int npl_apply_rope_ext(npl_graph *g, int x, int pos, int freq_factors, int n_rot, int neox, float base,
                       float freq_scale, const npl_rope_yarn *yarn) {
    int s[3] = {x, pos, freq_factors};
    int id = push(g, NPL_OP_ROPE, NPL_TYPE_F32, freq_factors >= 0 ? 3 : 2, s);
    if (id >= 0) {
        npl_node *nd = &g->nodes[id];
        nd->ip[0] = n_rot;
        nd->ip[1] = neox;
        nd->fp[0] = base;
        nd->fp[1] = freq_scale;
        if (yarn) {
            nd->ip[2] = 1;
            nd->ip[3] = yarn->corr_lo;
            nd->ip[4] = yarn->corr_hi;
            nd->fp[2] = yarn->ext_factor;
            nd->fp[3] = yarn->attn_factor;
        }
    }
    return id;
}
int npl_attention(npl_graph *g, int q, int k, int v, int kcache, int vcache, int pos, float scale,
                  int window, float softcap) {
    int s[6] = {q, k, v, kcache, vcache, pos};
    int id = push(g, NPL_OP_ATTENTION, NPL_TYPE_F32, 6, s);
    if (id >= 0) {
        g->nodes[id].ip[0] = window;
        g->nodes[id].fp[0] = scale;
        g->nodes[id].fp[1] = softcap;
    }
    return id;
}
int npl_swiglu(npl_graph *g, int gate, int up) { return op2(g, NPL_OP_SWIGLU, gate, up); }
int npl_geglu(npl_graph *g, int gate, int up) { return op2(g, NPL_OP_GEGLU, gate, up); }
int npl_softcap(npl_graph *g, int x, float cap) {
    int id = op1(g, NPL_OP_SOFTCAP, x);
    if (id >= 0) g->nodes[id].fp[0] = cap;
    return id;
}
int npl_softmax(npl_graph *g, int x, float scale) {
    int id = op1(g, NPL_OP_SOFTMAX, x);
    if (id >= 0) g->nodes[id].fp[0] = scale;
    return id;
}
int npl_slice(npl_graph *g, int x, int64_t offset, int64_t len) {
    if (g->failed) return -1;
    if (offset < 0 || len < 1 || offset > INT32_MAX || len > INT32_MAX - offset) {
        npl_graph_set_error(g, "slice: offset %lld, length %lld", (long long)offset, (long long)len);
        return -1;
    }
    int id = op1(g, NPL_OP_SLICE, x);
    if (id >= 0) {
        g->nodes[id].ip[0] = (int32_t)offset;
        g->nodes[id].ip[1] = (int32_t)len;
    }
    return id;
}
int npl_reshape(npl_graph *g, int x, int n_dims, const int64_t *ne) {
    if (g->failed) return -1;
    if (n_dims < 1 || n_dims > NPL_MAX_DIMS) {
        npl_graph_set_error(g, "reshape: %d dims", n_dims);
        return -1;
    }
    int id = op1(g, NPL_OP_RESHAPE, x);
    if (id < 0) return -1;
    npl_node *nd = &g->nodes[id];
    nd->type = g->nodes[x].type;
    nd->ip[0] = n_dims;
    for (int i = 0; i < n_dims; i++) {
        if (ne[i] < -1 || ne[i] == 0 || ne[i] > INT32_MAX) {
            npl_graph_set_error(g, "reshape: dim %d is %lld", i, (long long)ne[i]);
            return -1;
        }
        nd->ip[1 + i] = (int32_t)ne[i];
    }
    return id;
}
int npl_plugin(npl_graph *g, const char *type, int n_src, const int *src, npl_type out_type) {
    int id = push(g, NPL_OP_PLUGIN, out_type, n_src, src);
    if (id >= 0 && npl_attr_set_str(g, id, "type", type) < 0) return -1;
    return id;
}

/* ---- attributes ---- */

static npl_attr *attr_slot(npl_graph *g, int node, const char *key) {
    if (g->failed || node < 0 || node >= g->n) return NULL;
    npl_attr **pp = &g->nodes[node].attrs;
    for (; *pp; pp = &(*pp)->next)
        if (!strcmp((*pp)->key, key)) {
            npl_attr *old = *pp;
            *pp = old->next;
            old->next = NULL;
            attrs_free(old);
            break;
        }
    npl_attr *a = calloc(1, sizeof(*a));
    if (!a || !(a->key = strdup(key))) {
        free(a);
        npl_graph_set_oom(g);
        return NULL;
    }
    a->next = g->nodes[node].attrs;
    g->nodes[node].attrs = a;
    return a;
}

int npl_attr_set_str(npl_graph *g, int node, const char *key, const char *v) {
    int r = npl_attr_set_strs(g, node, key, &v, 1);
    if (r == 0) ((npl_attr *)npl_attr_get(g, node, key))->kind = NPL_ATTR_STR;
    return r;
}
int npl_attr_set_strs(npl_graph *g, int node, const char *key, const char *const *v, int64_t n) {
    npl_attr *a = attr_slot(g, node, key);
    if (!a) return -1;
    a->kind = NPL_ATTR_STRS;
    a->strs = calloc((size_t)(n > 0 ? n : 1), sizeof(char *));
    if (!a->strs) goto oom;
    a->n = n;
    for (int64_t i = 0; i < n; i++)
        if (!(a->strs[i] = strdup(v[i]))) goto oom;
    return 0;
oom:
    npl_graph_set_oom(g);
    return -1;
}
int npl_attr_set_ints(npl_graph *g, int node, const char *key, const int64_t *v, int64_t n) {
    npl_attr *a = attr_slot(g, node, key);
    if (!a) return -1;
    a->kind = NPL_ATTR_INTS;
    a->n = n;
    if (!(a->ints = malloc((size_t)(n > 0 ? n : 1) * sizeof(int64_t)))) {
        npl_graph_set_oom(g);
        return -1;
    }
    if (n) memcpy(a->ints, v, (size_t)n * sizeof(int64_t));
    return 0;
}
int npl_attr_set_floats(npl_graph *g, int node, const char *key, const float *v, int64_t n) {
    npl_attr *a = attr_slot(g, node, key);
    if (!a) return -1;
    a->kind = NPL_ATTR_FLOATS;
    a->n = n;
    if (!(a->floats = malloc((size_t)(n > 0 ? n : 1) * sizeof(float)))) {
        npl_graph_set_oom(g);
        return -1;
    }
    if (n) memcpy(a->floats, v, (size_t)n * sizeof(float));
    return 0;
}
const npl_attr *npl_attr_get(const npl_graph *g, int node, const char *key) {
    if (node < 0 || node >= g->n) return NULL;
    for (const npl_attr *a = g->nodes[node].attrs; a; a = a->next)
        if (!strcmp(a->key, key)) return a;
    return NULL;
}

void npl_graph_drop_values(npl_graph *g) {
    for (int i = 0; i < g->n; i++) {
        free(g->nodes[i].value);
        g->nodes[i].value = NULL;
    }
}

int npl_graph_bind(npl_graph *g, int input, const void *data, const npl_shape *shape) {
    if (input < 0 || input >= g->n || g->nodes[input].op != NPL_OP_INPUT) return -1;
    npl_node *nd = &g->nodes[input];
    for (int i = 0; i < nd->shape.n_dims; i++)
        if (shape->ne[i] <= 0 || (nd->shape.ne[i] != NPL_DIM_SEQ && nd->shape.ne[i] != shape->ne[i])) return -1;
    nd->data = data;
    nd->value_shape = *shape;
    npl_graph_drop_values(g);
    return 0;
}
