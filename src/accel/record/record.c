/* record: the accelerator table that logs what it is given and writes the
 * log as GGUF (see record.h). All state hangs off the backend handle. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "accel/record/record.h"
#include "accel/record/record_impl.h"
#include "format/gguf.h"

#define MAGIC_BE 0x52454301u
#define MAGIC_DEV 0x52454402u
#define MAGIC_CTX 0x52454303u
#define MAGIC_GRAPH 0x52454704u

struct npl_accel_backend {
    uint32_t magic;
    char *path;
    char err[512];
    rec_log log;
};
struct npl_accel_device {
    uint32_t magic;
    struct npl_accel_backend *be;
};
struct npl_accel_context {
    uint32_t magic;
    struct npl_accel_backend *be;
    uint32_t index;
    uint32_t *ids; /* context-local tensor id -> record tensor index */
    uint32_t n_ids, cap_ids;
    struct npl_accel_graph **graphs;
    uint32_t n_graphs, cap_graphs;
};
struct npl_accel_graph {
    uint32_t magic;
    struct npl_accel_context *ctx;
    uint32_t rec; /* record graph index */
};

static npl_accel_status fail(struct npl_accel_backend *be, npl_accel_status st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static npl_accel_status fail(struct npl_accel_backend *be, npl_accel_status st, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(be->err, sizeof be->err, fmt, ap);
    va_end(ap);
    return st;
}

int rec_grow(void **p, uint32_t *cap, uint32_t n, size_t elem) {
    if (n < *cap) return 0;
    uint32_t nc = *cap ? *cap * 2 : 16;
    void *q = realloc(*p, (size_t)nc * elem);
    if (!q) return -1;
    *p = q;
    *cap = nc;
    return 0;
}

static char *dup_or_empty(const char *s) { return strdup(s ? s : ""); }

static int be_ok(const npl_accel_backend *be) { return be && be->magic == MAGIC_BE; }
static int ctx_ok(const npl_accel_context *c) { return c && c->magic == MAGIC_CTX && be_ok(c->be); }
static int graph_ok(const npl_accel_graph *g) { return g && g->magic == MAGIC_GRAPH && ctx_ok(g->ctx); }

/* ---- backend / device ---- */

static npl_accel_status backend_create(const npl_accel_option *o, uint32_t n, npl_accel_backend **out, char *err,
                                       uint32_t errlen) {
    const char *path = NULL;
    if (!out) return NPL_ACCEL_ERR_INVALID_ARG;
    *out = NULL;
    for (uint32_t i = 0; i < n; i++) {
        if (o && o[i].key && o[i].value && !strcmp(o[i].key, "path")) path = o[i].value;
        else {
            if (err && errlen) snprintf(err, errlen, "record: unknown option '%s'", o && o[i].key ? o[i].key : "(null)");
            return NPL_ACCEL_ERR_INVALID_ARG;
        }
    }
    if (!path || !*path) {
        if (err && errlen) snprintf(err, errlen, "record: the option 'path' (the record file) is required");
        return NPL_ACCEL_ERR_INVALID_ARG;
    }
    npl_accel_backend *be = calloc(1, sizeof *be);
    if (!be || !(be->path = strdup(path))) {
        free(be);
        if (err && errlen) snprintf(err, errlen, "record: out of memory");
        return NPL_ACCEL_ERR_NO_MEMORY;
    }
    be->magic = MAGIC_BE;
    *out = be;
    return NPL_ACCEL_OK;
}

static npl_accel_status write_file(npl_accel_backend *be) {
    char err[400];
    if (rec_write(&be->log, be->path, err, sizeof err)) return fail(be, NPL_ACCEL_ERR_IO, "record: %s", err);
    return NPL_ACCEL_OK;
}

static void backend_free(npl_accel_backend *be) {
    if (!be_ok(be)) return;
    write_file(be);
    rec_log_free(&be->log);
    free(be->path);
    be->magic = 0;
    free(be);
}

static const char *last_error(const npl_accel_backend *be) { return be_ok(be) ? be->err : "record: invalid backend"; }

static npl_accel_status backend_get_info(npl_accel_backend *be, npl_accel_backend_info *out) {
    if (!be_ok(be)) return NPL_ACCEL_ERR_INVALID_HANDLE;
    if (!out) return fail(be, NPL_ACCEL_ERR_INVALID_ARG, "record: out is NULL");
    memset(out, 0, sizeof *out);
    out->name = "record";
    snprintf(out->kernel_family, sizeof out->kernel_family, "record");
    snprintf(out->available_families, sizeof out->available_families, "record");
    return NPL_ACCEL_OK;
}

static npl_accel_status device_create(npl_accel_backend *be, const npl_accel_option *o, uint32_t n,
                                      npl_accel_device **out) {
    if (!be_ok(be)) return NPL_ACCEL_ERR_INVALID_HANDLE;
    if (!out || n) return fail(be, NPL_ACCEL_ERR_INVALID_ARG, "record: device_create: bad argument or option");
    (void)o;
    npl_accel_device *d = calloc(1, sizeof *d);
    if (!d) return fail(be, NPL_ACCEL_ERR_NO_MEMORY, "record: out of memory");
    d->magic = MAGIC_DEV;
    d->be = be;
    *out = d;
    return NPL_ACCEL_OK;
}

static void device_free(npl_accel_device *d) {
    if (!d || d->magic != MAGIC_DEV) return;
    d->magic = 0;
    free(d);
}

/* ---- context / graph ---- */

static npl_accel_status context_create(npl_accel_backend *be, npl_accel_device *dev, const npl_accel_option *o,
                                       uint32_t n, npl_accel_context **out) {
    if (!be_ok(be)) return NPL_ACCEL_ERR_INVALID_HANDLE;
    if (!out || n || (dev && (dev->magic != MAGIC_DEV || dev->be != be)))
        return fail(be, NPL_ACCEL_ERR_INVALID_ARG, "record: context_create: bad argument, device or option");
    (void)o;
    npl_accel_context *c = calloc(1, sizeof *c);
    if (!c) return fail(be, NPL_ACCEL_ERR_NO_MEMORY, "record: out of memory");
    c->magic = MAGIC_CTX;
    c->be = be;
    c->index = be->log.n_contexts++;
    *out = c;
    return NPL_ACCEL_OK;
}

static npl_accel_status context_free(npl_accel_context *c) {
    if (!ctx_ok(c)) return NPL_ACCEL_ERR_INVALID_HANDLE;
    npl_accel_status st = write_file(c->be);
    for (uint32_t i = 0; i < c->n_graphs; i++) {
        c->graphs[i]->magic = 0;
        free(c->graphs[i]);
    }
    free(c->graphs);
    free(c->ids);
    c->magic = 0;
    free(c);
    return st;
}

static npl_accel_status graph_create(npl_accel_context *c, const char *name, npl_accel_graph **out) {
    if (!ctx_ok(c)) return NPL_ACCEL_ERR_INVALID_HANDLE;
    struct npl_accel_backend *be = c->be;
    rec_log *L = &be->log;
    if (!out || !name || !*name) return fail(be, NPL_ACCEL_ERR_INVALID_ARG, "record: graph_create: name and out needed");
    *out = NULL;
    for (uint32_t i = 0; i < c->n_graphs; i++)
        if (!strcmp(L->g[c->graphs[i]->rec].name, name))
            return fail(be, NPL_ACCEL_ERR_DUPLICATE_NAME, "record: graph '%s' already exists in the context", name);
    npl_accel_graph *g = calloc(1, sizeof *g);
    char *nm = strdup(name);
    if (!g || !nm || rec_grow((void **)&L->g, &L->cap_g, L->n_g, sizeof *L->g) ||
        rec_grow((void **)&c->graphs, &c->cap_graphs, c->n_graphs, sizeof *c->graphs)) {
        free(g), free(nm);
        return fail(be, NPL_ACCEL_ERR_NO_MEMORY, "record: out of memory");
    }
    L->g[L->n_g] = (rec_graph){nm, c->index, -1};
    g->magic = MAGIC_GRAPH;
    g->ctx = c;
    g->rec = L->n_g++;
    c->graphs[c->n_graphs++] = g;
    *out = g;
    return NPL_ACCEL_OK;
}

static npl_accel_status graph_retrieve(npl_accel_context *c, const char *name, npl_accel_graph **out) {
    if (!ctx_ok(c)) return NPL_ACCEL_ERR_INVALID_HANDLE;
    if (!out || !name) return fail(c->be, NPL_ACCEL_ERR_INVALID_ARG, "record: graph_retrieve: NULL argument");
    for (uint32_t i = 0; i < c->n_graphs; i++)
        if (!strcmp(c->be->log.g[c->graphs[i]->rec].name, name)) {
            *out = c->graphs[i];
            return NPL_ACCEL_OK;
        }
    *out = NULL;
    return fail(c->be, NPL_ACCEL_ERR_NOT_FOUND, "record: no graph '%s'", name);
}

/* ---- tensors ---- */

/* What record needs of a tensor description to write it (and, with_data,
 * of its STATIC bytes). */
static npl_accel_status desc_check(npl_accel_backend *be, const npl_accel_tensor_desc *d, const char *nm,
                                   int with_data) {
    if (d->kind >= NPL_ACCEL_KIND_COUNT || d->dtype >= NPL_ACCEL_DT_COUNT || d->rank < 1 || d->rank > NPL_ACCEL_MAX_RANK)
        return fail(be, NPL_ACCEL_ERR_INVALID_ARG, "record: tensor '%s': bad kind, type or rank", nm);
    for (uint32_t i = 0; i < d->rank; i++)
        if (!d->dims[i]) return fail(be, NPL_ACCEL_ERR_SHAPE_MISMATCH, "record: tensor '%s': zero dimension", nm);
    if ((with_data && (d->kind == NPL_ACCEL_STATIC) != (d->data != NULL && d->data_size > 0)) ||
        (d->quant.n_scales && !d->quant.scales))
        return fail(be, NPL_ACCEL_ERR_INVALID_ARG, "record: tensor '%s': data only (and always) for STATIC, scales "
                    "for quant params", nm);
    return NPL_ACCEL_OK;
}

static npl_accel_status tensor_add(npl_accel_context *c, npl_accel_graph *g, const npl_accel_tensor_desc *d,
                                   npl_accel_tensor_id *out) {
    struct npl_accel_backend *be = c->be;
    rec_log *L = &be->log;
    if (!d || !out || !d->name || !*d->name) return fail(be, NPL_ACCEL_ERR_INVALID_ARG, "record: tensor needs a name");
    if (g && L->g[g->rec].fin >= 0)
        return fail(be, NPL_ACCEL_ERR_STATE, "record: tensor '%s': the graph is finalized", d->name);
    const int shared = d->kind == NPL_ACCEL_STATIC || d->kind == NPL_ACCEL_APP_READWRITE;
    npl_accel_status st = desc_check(be, d, d->name, 1);
    if (st) return st;
    if (!g && !shared) return fail(be, NPL_ACCEL_ERR_INVALID_ARG, "record: tensor '%s': bad kind, type or rank", d->name);
    rec_tensor t;
    memset(&t, 0, sizeof t);
    t.kind = d->kind, t.dtype = d->dtype, t.rank = d->rank;
    memcpy(t.dims, d->dims, d->rank * sizeof(uint32_t));
    t.graph = shared ? -1 : (int32_t)g->rec;
    t.ctx = c->index;
    t.qenc = d->quant.encoding, t.qaxis = d->quant.axis, t.qblock = d->quant.block_size, t.qn = d->quant.n_scales;
    t.size = d->kind == NPL_ACCEL_STATIC ? d->data_size : 0;
    for (uint32_t i = 0; i < c->n_ids; i++) {
        const rec_tensor *p = &L->t[c->ids[i]];
        if (strcmp(p->name, d->name)) continue;
        int same = shared && p->kind == t.kind && p->dtype == t.dtype && p->rank == t.rank &&
                   !memcmp(p->dims, t.dims, sizeof t.dims) && p->qenc == t.qenc && p->qaxis == t.qaxis &&
                   p->qblock == t.qblock && p->qn == t.qn && p->size == t.size &&
                   (!t.qn || !memcmp(p->scales, d->quant.scales, t.qn * 4)) &&
                   (!p->offsets == !d->quant.offsets) && (!p->offsets || !memcmp(p->offsets, d->quant.offsets, t.qn * 4)) &&
                   (!t.size || !memcmp(p->data, d->data, (size_t)t.size));
        if (!same)
            return fail(be, NPL_ACCEL_ERR_DUPLICATE_NAME, "record: tensor '%s' already exists in the context", d->name);
        *out = i;
        return NPL_ACCEL_OK;
    }
    int oom = !(t.name = strdup(d->name));
    if (!oom && t.qn) oom = !(t.scales = malloc(t.qn * 4)) || (d->quant.offsets && !(t.offsets = malloc(t.qn * 4)));
    if (!oom && t.size) oom = !(t.data = malloc((size_t)t.size));
    if (!oom) oom = rec_grow((void **)&L->t, &L->cap_t, L->n_t, sizeof *L->t) ||
                    rec_grow((void **)&c->ids, &c->cap_ids, c->n_ids, sizeof *c->ids);
    if (oom) {
        rec_tensor_free(&t);
        return fail(be, NPL_ACCEL_ERR_NO_MEMORY, "record: out of memory");
    }
    if (t.qn) memcpy(t.scales, d->quant.scales, t.qn * 4);
    if (t.offsets) memcpy(t.offsets, d->quant.offsets, t.qn * 4);
    if (t.size) memcpy(t.data, d->data, (size_t)t.size);
    L->t[L->n_t] = t;
    c->ids[c->n_ids] = L->n_t++;
    *out = c->n_ids++;
    return NPL_ACCEL_OK;
}

static npl_accel_status tensor_create(npl_accel_graph *g, const npl_accel_tensor_desc *d, npl_accel_tensor_id *out) {
    if (!graph_ok(g)) return NPL_ACCEL_ERR_INVALID_HANDLE;
    return tensor_add(g->ctx, g, d, out);
}

static npl_accel_status context_tensor_create(npl_accel_context *c, const npl_accel_tensor_desc *d,
                                              npl_accel_tensor_id *out) {
    if (!ctx_ok(c)) return NPL_ACCEL_ERR_INVALID_HANDLE;
    return tensor_add(c, NULL, d, out);
}

/* ---- nodes ---- */

static npl_accel_status graph_add_node(npl_accel_graph *g, const npl_accel_node_desc *d) {
    if (!graph_ok(g)) return NPL_ACCEL_ERR_INVALID_HANDLE;
    npl_accel_context *c = g->ctx;
    struct npl_accel_backend *be = c->be;
    rec_log *L = &be->log;
    if (!d || !d->op || !*d->op || (d->n_inputs && !d->inputs) || (d->n_outputs && !d->outputs) ||
        (d->n_params && !d->params))
        return fail(be, NPL_ACCEL_ERR_INVALID_ARG, "record: add_node: bad node description");
    if (L->g[g->rec].fin >= 0) return fail(be, NPL_ACCEL_ERR_STATE, "record: add_node: the graph is finalized");
    for (uint32_t i = 0; i < d->n_inputs + d->n_outputs; i++) {
        uint32_t id = i < d->n_inputs ? d->inputs[i] : d->outputs[i - d->n_inputs];
        if (id >= c->n_ids || (L->t[c->ids[id]].graph >= 0 && L->t[c->ids[id]].graph != (int32_t)g->rec))
            return fail(be, NPL_ACCEL_ERR_INVALID_ARG, "record: add_node '%s': tensor id %u is not in this graph", d->op, id);
    }
    rec_node n;
    memset(&n, 0, sizeof n);
    n.graph = g->rec;
    n.n_in = d->n_inputs, n.n_out = d->n_outputs, n.np = d->n_params;
    int oom = !(n.name = dup_or_empty(d->name)) || !(n.op = strdup(d->op)) ||
              !(n.in = malloc((n.n_in + 1) * 4)) || !(n.out = malloc((n.n_out + 1) * 4)) ||
              !(n.p = calloc(n.np + 1, sizeof *n.p));
    for (uint32_t i = 0; !oom && i < n.n_in; i++) n.in[i] = c->ids[d->inputs[i]];
    for (uint32_t i = 0; !oom && i < n.n_out; i++) n.out[i] = c->ids[d->outputs[i]];
    for (uint32_t i = 0; !oom && i < n.np; i++) {
        const npl_accel_param *s = &d->params[i];
        rec_param *p = &n.p[i];
        uint32_t cnt = (s->type == NPL_ACCEL_PARAM_INTS || s->type == NPL_ACCEL_PARAM_FLOATS) ? s->count : 0;
        if (cnt && !(s->type == NPL_ACCEL_PARAM_INTS ? (const void *)s->ints : (const void *)s->floats)) {
            rec_node_free(&n);
            return fail(be, NPL_ACCEL_ERR_BAD_PARAM, "record: add_node '%s': param %u has no values", d->op, i);
        }
        p->type = s->type, p->count = cnt, p->i = s->i, p->f = s->f;
        oom = !(p->name = dup_or_empty(s->name)) ||
              !(p->str = dup_or_empty(s->type == NPL_ACCEL_PARAM_STRING ? s->str : "")) ||
              !(p->ints = calloc(cnt + 1, 8)) || !(p->floats = calloc(cnt + 1, 4));
        if (!oom && s->type == NPL_ACCEL_PARAM_INTS) memcpy(p->ints, s->ints, cnt * 8u);
        if (!oom && s->type == NPL_ACCEL_PARAM_FLOATS) memcpy(p->floats, s->floats, cnt * 4u);
    }
    if (oom || rec_grow((void **)&L->n, &L->cap_n, L->n_n, sizeof *L->n)) {
        rec_node_free(&n);
        return fail(be, NPL_ACCEL_ERR_NO_MEMORY, "record: out of memory");
    }
    L->n[L->n_n++] = n;
    return NPL_ACCEL_OK;
}

/* ---- finalize, execute and the parts a recorder does not have ---- */

static npl_accel_status graph_finalize(npl_accel_graph *g) {
    if (!graph_ok(g)) return NPL_ACCEL_ERR_INVALID_HANDLE;
    rec_log *L = &g->ctx->be->log;
    if (L->g[g->rec].fin >= 0) return fail(g->ctx->be, NPL_ACCEL_ERR_STATE, "record: the graph is already finalized");
    L->g[g->rec].fin = L->n_fin++;
    return write_file(g->ctx->be);
}

static npl_accel_status graph_execute(npl_accel_graph *g, const npl_accel_buffer *in, uint32_t n_in,
                                      const npl_accel_buffer *out, uint32_t n_out) {
    if (!graph_ok(g)) return NPL_ACCEL_ERR_INVALID_HANDLE;
    (void)in, (void)n_in, (void)out, (void)n_out;
    if (g->ctx->be->log.g[g->rec].fin < 0)
        return fail(g->ctx->be, NPL_ACCEL_ERR_STATE, "record: execute before finalize");
    return NPL_ACCEL_OK; /* records do not compute */
}

static npl_accel_status graph_get_profile(npl_accel_graph *g, npl_accel_profile *p) {
    if (!graph_ok(g)) return NPL_ACCEL_ERR_INVALID_HANDLE;
    if (!p) return fail(g->ctx->be, NPL_ACCEL_ERR_INVALID_ARG, "record: out is NULL");
    memset(p, 0, sizeof *p);
    for (uint32_t i = 0; i < g->ctx->be->log.n_n; i++) p->n_nodes += g->ctx->be->log.n[i].graph == g->rec;
    p->n_compiled = p->n_nodes;
    snprintf(p->kernel_family, sizeof p->kernel_family, "record");
    snprintf(p->detail, sizeof p->detail, "recorded to %s", g->ctx->be->path);
    return NPL_ACCEL_OK;
}

static npl_accel_status no_binary_ctx(npl_accel_context *c) {
    if (!ctx_ok(c)) return NPL_ACCEL_ERR_INVALID_HANDLE;
    return fail(c->be, NPL_ACCEL_ERR_UNSUPPORTED, "record: no context binary; replay the record into an implementation");
}
static npl_accel_status get_binary_size(npl_accel_context *c, uint64_t *s) { (void)s; return no_binary_ctx(c); }
static npl_accel_status get_binary(npl_accel_context *c, void *b, uint64_t n, uint64_t *w) {
    (void)b, (void)n, (void)w;
    return no_binary_ctx(c);
}
static npl_accel_status create_from_binary(npl_accel_backend *be, npl_accel_device *d, const npl_accel_option *o,
                                           uint32_t n, const void *b, uint64_t s, npl_accel_context **out) {
    (void)d, (void)o, (void)n, (void)b, (void)s;
    if (out) *out = NULL;
    if (!be_ok(be)) return NPL_ACCEL_ERR_INVALID_HANDLE;
    return fail(be, NPL_ACCEL_ERR_UNSUPPORTED, "record: cannot load context binaries");
}
static npl_accel_status binary_info_get(npl_accel_backend *be, const void *b, uint64_t s, npl_accel_binary_info **out) {
    (void)b, (void)s;
    if (out) *out = NULL;
    if (!be_ok(be)) return NPL_ACCEL_ERR_INVALID_HANDLE;
    return fail(be, NPL_ACCEL_ERR_UNSUPPORTED, "record: cannot read context binaries");
}
static void binary_info_free(npl_accel_backend *be, npl_accel_binary_info *i) { (void)be, (void)i; }
static npl_accel_status context_tensor_data(npl_accel_context *c, const char *name, void **d, uint64_t *s) {
    (void)name, (void)d, (void)s;
    if (!ctx_ok(c)) return NPL_ACCEL_ERR_INVALID_HANDLE;
    return fail(c->be, NPL_ACCEL_ERR_UNSUPPORTED, "record: context tensors have no memory here");
}

/* ---- version 2 ----
 * record computes nothing and has no op set of its own: it takes any op
 * name, so validate_node accepts every node whose description it can write
 * (whether a target takes the node is for the target the record is
 * replayed into), list_ops is ERR_UNSUPPORTED, and a host thread pool is
 * accepted and never used. */

static npl_accel_status validate_node(npl_accel_backend *be, const npl_accel_node_desc *d,
                                      const npl_accel_tensor_desc *in, const npl_accel_tensor_desc *out, char *reason,
                                      uint32_t reason_len) {
    npl_accel_status st = NPL_ACCEL_OK;
    if (!be_ok(be)) {
        if (reason && reason_len) snprintf(reason, reason_len, "record: invalid backend");
        return NPL_ACCEL_ERR_INVALID_HANDLE;
    }
    if (!d || !d->op || !*d->op || (d->n_inputs && !in) || (d->n_outputs && !out) || (d->n_params && !d->params))
        st = fail(be, NPL_ACCEL_ERR_INVALID_ARG, "record: validate_node: bad node description");
    for (uint32_t i = 0; !st && i < d->n_inputs + d->n_outputs; i++) {
        const npl_accel_tensor_desc *t = i < d->n_inputs ? &in[i] : &out[i - d->n_inputs];
        st = desc_check(be, t, t->name ? t->name : "?", 0);
    }
    if (reason && reason_len) snprintf(reason, reason_len, "%s", st ? be->err : "");
    return st;
}

static npl_accel_status list_ops(npl_accel_backend *be, const npl_accel_op_info **ops, uint32_t *n_ops) {
    if (!be_ok(be)) return NPL_ACCEL_ERR_INVALID_HANDLE;
    if (ops) *ops = NULL;
    if (n_ops) *n_ops = 0;
    return fail(be, NPL_ACCEL_ERR_UNSUPPORTED, "record: no op set of its own (it records any op; the replay target "
                "has the op set)");
}

static npl_accel_status backend_create_on_pool(const npl_accel_option *o, uint32_t n, const npl_accel_host_pool *pool,
                                               npl_accel_backend **out, char *err, uint32_t errlen) {
    (void)pool; /* nothing to compute */
    return backend_create(o, n, out, err, errlen);
}

static const npl_accel_api record_api = {
    .abi_version = NPL_ACCEL_ABI_VERSION,
    .struct_size = sizeof(npl_accel_api),
    .name = "record",
    .backend_create = backend_create,
    .backend_free = backend_free,
    .last_error = last_error,
    .backend_get_info = backend_get_info,
    .device_create = device_create,
    .device_free = device_free,
    .context_create = context_create,
    .context_free = context_free,
    .graph_create = graph_create,
    .tensor_create = tensor_create,
    .context_tensor_create = context_tensor_create,
    .graph_add_node = graph_add_node,
    .graph_finalize = graph_finalize,
    .graph_execute = graph_execute,
    .graph_retrieve = graph_retrieve,
    .graph_get_profile = graph_get_profile,
    .context_get_binary_size = get_binary_size,
    .context_get_binary = get_binary,
    .context_create_from_binary = create_from_binary,
    .binary_info_get = binary_info_get,
    .binary_info_free = binary_info_free,
    .context_tensor_data = context_tensor_data,
    .validate_node = validate_node,
    .list_ops = list_ops,
    .backend_create_on_pool = backend_create_on_pool,
};

const npl_accel_api *npl_record_get_api(uint32_t requested_version) {
    return requested_version >= 1 && requested_version <= NPL_ACCEL_ABI_VERSION ? &record_api : NULL;
}
