/* Graph files (see graph_file.h). */
#include "format/graph_file.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/quote.h"
#include "core/status.h"

#define K_N "npullm.graph.n_nodes"

/* ---- writing ---- */

static int ext_index(const npl_graph_ext *ext, int n_ext, const char *name) {
    for (int k = 0; name && k < n_ext; k++)
        if (!strcmp(ext[k].name, name)) return k;
    return -1;
}

int npl_graph_file_add(npl_gguf_writer *w, const npl_graph *g, char *err, size_t errlen) {
    return npl_graph_file_add_ext(w, g, NULL, 0, err, errlen);
}

int npl_graph_file_add_ext(npl_gguf_writer *w, const npl_graph *g, const npl_graph_ext *ext, int n_ext, char *err,
                           size_t errlen) {
    int n = npl_graph_n_nodes(g), rc = -1;
    int64_t n_attr = 0, n_astr = 0, n_aint = 0, n_aflt = 0;
    for (int i = 0; i < n; i++)
        for (const npl_attr *a = npl_graph_node(g, i)->attrs; a; a = a->next) {
            n_attr++;
            if (a->kind == NPL_ATTR_STR || a->kind == NPL_ATTR_STRS) n_astr += a->n;
            else if (a->kind == NPL_ATTR_INTS) n_aint += a->n;
            else n_aflt += a->n;
        }
    int32_t *op = calloc((size_t)n + 1, sizeof *op), *type = calloc((size_t)n + 1, sizeof *type);
    int32_t *ndims = calloc((size_t)n + 1, sizeof *ndims), *nsrc = calloc((size_t)n + 1, sizeof *nsrc);
    int64_t *ne = calloc((size_t)n * 4 + 1, sizeof *ne);
    int32_t *src = calloc((size_t)n * NPL_MAX_SRC + 1, sizeof *src), *ip = calloc((size_t)n * NPL_MAX_IPARAMS + 1, sizeof *ip);
    float *fp = calloc((size_t)n * NPL_MAX_FPARAMS + 1, sizeof *fp);
    const char **name = calloc((size_t)n + 1, sizeof *name);
    int32_t *anode = calloc((size_t)n_attr + 1, sizeof *anode), *akind = calloc((size_t)n_attr + 1, sizeof *akind);
    int64_t *an = calloc((size_t)n_attr + 1, sizeof *an), *aints = calloc((size_t)n_aint + 1, sizeof *aints);
    const char **akey = calloc((size_t)n_attr + 1, sizeof *akey), **astrs = calloc((size_t)n_astr + 1, sizeof *astrs);
    float *aflts = calloc((size_t)n_aflt + 1, sizeof *aflts);
    if (!op || !type || !ndims || !nsrc || !ne || !src || !ip || !fp || !name || !anode || !akind || !an || !aints ||
        !akey || !astrs || !aflts) {
        npl_errf(err, errlen, NPL_ERR_MEMORY, "graph file: out of memory");
        goto done;
    }
    int64_t ia = 0, is = 0, ii = 0, iflt = 0;
    for (int i = 0; i < n; i++) {
        const npl_node *nd = npl_graph_node(g, i);
        op[i] = nd->op;
        type[i] = nd->type;
        ndims[i] = nd->shape.n_dims;
        for (int d = 0; d < 4; d++) ne[i * 4 + d] = nd->shape.ne[d];
        nsrc[i] = nd->n_src;
        for (int s = 0; s < nd->n_src; s++) src[i * NPL_MAX_SRC + s] = nd->src[s];
        memcpy(&ip[i * NPL_MAX_IPARAMS], nd->ip, sizeof nd->ip);
        memcpy(&fp[i * NPL_MAX_FPARAMS], nd->fp, sizeof nd->fp);
        name[i] = nd->name ? nd->name : "";
        if (nd->op == NPL_OP_WEIGHT) {
            size_t row;
            if (!nd->name || npl_row_size(nd->type, nd->shape.ne[0], &row)) {
                snprintf(err, errlen, "graph file: weight node %d has no name or a bad row size", i);
                goto done;
            }
            size_t sz = row * (size_t)(nd->shape.ne[1] * nd->shape.ne[2] * nd->shape.ne[3]);
            if (ext_index(ext, n_ext, nd->name) < 0 && npl_gguf_writer_add_tensor(w, nd->name, nd->type, nd->shape.n_dims, nd->shape.ne, nd->data, sz)) {
                snprintf(err, errlen, "graph file: weight %s: cannot add", nd->name);
                goto done;
            }
        }
        for (const npl_attr *a = nd->attrs; a; a = a->next, ia++) {
            anode[ia] = i;
            akey[ia] = a->key;
            akind[ia] = a->kind;
            an[ia] = a->n;
            for (int64_t k = 0; k < a->n; k++) {
                if (a->kind == NPL_ATTR_STR || a->kind == NPL_ATTR_STRS) astrs[is++] = a->strs[k];
                else if (a->kind == NPL_ATTR_INTS) aints[ii++] = a->ints[k];
                else aflts[iflt++] = a->floats[k];
            }
        }
    }
    if (npl_gguf_writer_set_u32(w, K_N, (uint32_t)n) ||
        npl_gguf_writer_set_arr(w, "npullm.graph.op", NPL_GGUF_INT32, op, (uint64_t)n) ||
        npl_gguf_writer_set_arr(w, "npullm.graph.type", NPL_GGUF_INT32, type, (uint64_t)n) ||
        npl_gguf_writer_set_arr(w, "npullm.graph.n_dims", NPL_GGUF_INT32, ndims, (uint64_t)n) ||
        npl_gguf_writer_set_arr(w, "npullm.graph.ne", NPL_GGUF_INT64, ne, (uint64_t)n * 4) ||
        npl_gguf_writer_set_arr(w, "npullm.graph.n_src", NPL_GGUF_INT32, nsrc, (uint64_t)n) ||
        npl_gguf_writer_set_arr(w, "npullm.graph.src", NPL_GGUF_INT32, src, (uint64_t)n * NPL_MAX_SRC) ||
        npl_gguf_writer_set_arr(w, "npullm.graph.ip", NPL_GGUF_INT32, ip, (uint64_t)n * NPL_MAX_IPARAMS) ||
        npl_gguf_writer_set_arr(w, "npullm.graph.fp", NPL_GGUF_FLOAT32, fp, (uint64_t)n * NPL_MAX_FPARAMS) ||
        npl_gguf_writer_set_arr_str(w, "npullm.graph.name", name, (uint64_t)n) ||
        npl_gguf_writer_set_arr(w, "npullm.attr.node", NPL_GGUF_INT32, anode, (uint64_t)n_attr) ||
        npl_gguf_writer_set_arr(w, "npullm.attr.kind", NPL_GGUF_INT32, akind, (uint64_t)n_attr) ||
        npl_gguf_writer_set_arr(w, "npullm.attr.n", NPL_GGUF_INT64, an, (uint64_t)n_attr) ||
        npl_gguf_writer_set_arr_str(w, "npullm.attr.key", akey, (uint64_t)n_attr) ||
        npl_gguf_writer_set_arr_str(w, "npullm.attr.strs", astrs, (uint64_t)n_astr) ||
        npl_gguf_writer_set_arr(w, "npullm.attr.ints", NPL_GGUF_INT64, aints, (uint64_t)n_aint) ||
        npl_gguf_writer_set_arr(w, "npullm.attr.floats", NPL_GGUF_FLOAT32, aflts, (uint64_t)n_aflt)) {
        snprintf(err, errlen, "graph file: cannot add metadata");
        goto done;
    }
    if (n_ext > 0) {
        const char **en = calloc((size_t)n_ext, sizeof *en), **ef = calloc((size_t)n_ext, sizeof *ef);
        int64_t *eo = calloc((size_t)n_ext, sizeof *eo);
        int bad = !en || !ef || !eo;
        for (int k = 0; !bad && k < n_ext; k++) en[k] = ext[k].name, ef[k] = ext[k].file, eo[k] = (int64_t)ext[k].offset;
        bad = bad || npl_gguf_writer_set_arr_str(w, "npullm.graph.ext.name", en, (uint64_t)n_ext) ||
              npl_gguf_writer_set_arr_str(w, "npullm.graph.ext.file", ef, (uint64_t)n_ext) ||
              npl_gguf_writer_set_arr(w, "npullm.graph.ext.offset", NPL_GGUF_INT64, eo, (uint64_t)n_ext);
        free(en), free(ef), free(eo);
        if (bad) {
            snprintf(err, errlen, "graph file: cannot add the external weights");
            goto done;
        }
    }
    rc = 0;
done:
    free(op); free(type); free(ndims); free(nsrc); free(ne); free(src); free(ip); free(fp); free(name);
    free(anode); free(akind); free(an); free(aints); free(akey); free(astrs); free(aflts);
    return rc;
}

int npl_gguf_copy_kv(npl_gguf_writer *w, const npl_gguf *src, const char *const *skip, char *err, size_t errlen) {
    for (int64_t i = 0; i < npl_gguf_n_kv(src); i++) {
        npl_gguf_str k = npl_gguf_key(src, i);
        char key[256];
        if (k.len >= sizeof key) continue;
        memcpy(key, k.ptr, k.len);
        key[k.len] = 0;
        int skipped = !strcmp(key, "general.alignment");
        for (int s = 0; skip && skip[s] && !skipped; s++) skipped = !strncmp(key, skip[s], strlen(skip[s]));
        if (skipped) continue;
        npl_gguf_vtype t = npl_gguf_kv_type(src, i);
        int rc = 0;
        if (t == NPL_GGUF_STRING) {
            npl_gguf_str v = npl_gguf_kv_str(src, i);
            char *s = strndup(v.ptr, v.len);
            rc = !s || npl_gguf_writer_set_str(w, key, s);
            free(s);
        } else if (t == NPL_GGUF_ARRAY) {
            npl_gguf_vtype et = npl_gguf_arr_type(src, i);
            uint64_t n = npl_gguf_arr_n(src, i);
            if (et == NPL_GGUF_STRING) {
                char **v = calloc(n + 1, sizeof *v);
                rc = !v;
                for (uint64_t j = 0; !rc && j < n; j++) {
                    npl_gguf_str e = npl_gguf_arr_str(src, i, j);
                    rc = !(v[j] = strndup(e.ptr ? e.ptr : "", e.len));
                }
                if (!rc) rc = npl_gguf_writer_set_arr_str(w, key, (const char *const *)v, n);
                for (uint64_t j = 0; v && j < n; j++) free(v[j]);
                free(v);
            } else if (et != NPL_GGUF_ARRAY) {
                rc = npl_gguf_writer_set_arr(w, key, et, npl_gguf_arr_data(src, i), n);
            } /* arrays of arrays are not copied */
        } else {
            rc = npl_gguf_writer_set_scalar(w, key, t, npl_gguf_kv_data(src, i));
        }
        if (rc) {
            snprintf(err, errlen, "%s: copying key %s failed", npl_gguf_path(src), key);
            return -1;
        }
    }
    return 0;
}


/* ---- rebuilding a node from its stored fields: the op table's file column ----
 * Each load_<x> appends a node like `like` (sources s, weight bytes wdata);
 * npl_graph_append_like then copies the stored params over. */

/* leaves are found by name: a file's empty name would leave them unreachable */
static int named(npl_graph *g, const npl_node *like, const char *name) {
    if (name && *name) return 1;
    npl_graph_set_error(g, "npullm.graph.name: %s node without a name", npl_op_name(like->op));
    return 0;
}

static int load_input(npl_graph *g, const npl_node *like, const int *s, const char *name, const void *wdata) {
    (void)s; (void)wdata;
    if (!named(g, like, name)) return -1;
    return npl_input(g, name, like->type, like->shape.n_dims, like->shape.ne);
}
static int load_state(npl_graph *g, const npl_node *like, const int *s, const char *name, const void *wdata) {
    (void)s; (void)wdata;
    if (!named(g, like, name)) return -1;
    return npl_state(g, name, like->type, like->shape.n_dims, like->shape.ne);
}
static int load_weight(npl_graph *g, const npl_node *like, const int *s, const char *name, const void *wdata) {
    (void)s;
    if (!named(g, like, name)) return -1;
    return npl_weight(g, name, like->type, like->shape.n_dims, like->shape.ne, wdata);
}
/* every op whose node is its sources plus ip/fp params */
static int load_plain(npl_graph *g, const npl_node *like, const int *s, const char *name, const void *wdata) {
    (void)name; (void)wdata;
    return npl_graph_push(g, like->op, like->type, like->n_src, s);
}
static int load_reshape(npl_graph *g, const npl_node *like, const int *s, const char *name, const void *wdata) {
    (void)name; (void)wdata;
    int64_t rne[4] = {1, 1, 1, 1};
    int nr = like->ip[0];
    if (nr < 1 || nr > 4) {
        npl_graph_set_error(g, "npullm.graph.ip: reshape to %d dims (1..4)", nr);
        return -1;
    }
    for (int d = 0; d < nr; d++) rne[d] = like->ip[1 + d];
    return npl_reshape(g, s[0], nr, rne); /* checks the dims */
}
static int load_plugin(npl_graph *g, const npl_node *like, const int *s, const char *name, const void *wdata) {
    (void)name; (void)wdata;
    return npl_plugin(g, "?", like->n_src, s, like->type); /* the attributes (type included) follow */
}

typedef int (*load_fn)(npl_graph *g, const npl_node *like, const int *s, const char *name, const void *wdata);
static const load_fn load_table[NPL_OP_COUNT] = {
#define LOAD_FN(e, name, lo, hi, shape, cpu, file, lower) [NPL_OP_##e] = load_##file,
    NPL_OP_LIST(LOAD_FN)
#undef LOAD_FN
};
/* graph files store op enum values: a row inserted before the last would
 * change the meaning of every file written before */
_Static_assert(NPL_OP_PLUGIN == 15, "ops.h rows are append-only");

int npl_graph_append_like(npl_graph *g, const npl_node *like, const int *s, const char *name, const void *wdata) {
    if ((unsigned)like->op >= NPL_OP_COUNT) return -1;
    const int id = load_table[like->op](g, like, s, name, wdata);
    if (id < 0) return -1;
    npl_node *m = npl_graph_node_mut(g, id);
    memcpy(m->ip, like->ip, sizeof m->ip);
    memcpy(m->fp, like->fp, sizeof m->fp);
    m->type = like->type;
    if (name && npl_graph_set_name(g, id, name) < 0) return -1;
    return id;
}

/* ---- reading ---- */

typedef struct {
    const npl_gguf *f;
    char *err;
    size_t errlen;
} rd;

static const void *arr(const rd *r, const char *key, npl_gguf_vtype t, uint64_t n) {
    int64_t i = npl_gguf_find_key(r->f, key);
    if (i < 0 || npl_gguf_kv_type(r->f, i) != NPL_GGUF_ARRAY || npl_gguf_arr_type(r->f, i) != t ||
        npl_gguf_arr_n(r->f, i) != n) {
        snprintf(r->err, r->errlen, "%s: %s: missing, not an array of %s or not %llu elements", npl_gguf_path(r->f),
                 key, npl_gguf_vtype_name(t), (unsigned long long)n);
        return NULL;
    }
    if (t == NPL_GGUF_STRING || n == 0) return r; /* non-NULL marker (strings: read with npl_gguf_arr_str) */
    return npl_gguf_arr_data(r->f, i);
}

static int32_t get_i32(const void *p, uint64_t j) { int32_t v; memcpy(&v, (const char *)p + j * 4, 4); return v; }
static int64_t get_i64(const void *p, uint64_t j) { int64_t v; memcpy(&v, (const char *)p + j * 8, 8); return v; }
static float get_f32(const void *p, uint64_t j) { float v; memcpy(&v, (const char *)p + j * 4, 4); return v; }

static char *arr_str(const rd *r, const char *key, uint64_t j) {
    npl_gguf_str s = npl_gguf_arr_str(r->f, npl_gguf_find_key(r->f, key), j);
    return strndup(s.ptr ? s.ptr : "", s.len);
}

int npl_graph_file_present(const npl_gguf *f) { return npl_gguf_find_key(f, K_N) >= 0; }

/* The external weight record of weight `name`, or -1. */
static int64_t ext_find(const rd *r, const char *name, uint64_t n_ext) {
    for (uint64_t k = 0; k < n_ext; k++) {
        npl_gguf_str s = npl_gguf_arr_str(r->f, npl_gguf_find_key(r->f, "npullm.graph.ext.name"), k);
        if (s.ptr && s.len == strlen(name) && !memcmp(s.ptr, name, s.len)) return (int64_t)k;
    }
    return -1;
}

npl_graph *npl_graph_file_load(const npl_gguf *f, char *err, size_t errlen) {
    return npl_graph_file_load_ext(f, NULL, NULL, err, errlen);
}

npl_graph *npl_graph_file_load_ext(const npl_gguf *f, npl_graph_ext_resolve resolve, void *user, char *err,
                                   size_t errlen) {
    rd r = {f, err, errlen};
    uint32_t n32;
    if (npl_gguf_get_u32(f, K_N, &n32) || n32 == 0 || n32 > (1u << 20)) {
        snprintf(err, errlen, "%s: %s: missing or out of range", npl_gguf_path(f), K_N);
        return NULL;
    }
    uint64_t n = n32;
    const void *op = arr(&r, "npullm.graph.op", NPL_GGUF_INT32, n), *type = op ? arr(&r, "npullm.graph.type", NPL_GGUF_INT32, n) : NULL;
    const void *ndims = type ? arr(&r, "npullm.graph.n_dims", NPL_GGUF_INT32, n) : NULL;
    const void *ne = ndims ? arr(&r, "npullm.graph.ne", NPL_GGUF_INT64, n * 4) : NULL;
    const void *nsrc = ne ? arr(&r, "npullm.graph.n_src", NPL_GGUF_INT32, n) : NULL;
    const void *src = nsrc ? arr(&r, "npullm.graph.src", NPL_GGUF_INT32, n * NPL_MAX_SRC) : NULL;
    const void *ip = src ? arr(&r, "npullm.graph.ip", NPL_GGUF_INT32, n * NPL_MAX_IPARAMS) : NULL;
    const void *fp = ip ? arr(&r, "npullm.graph.fp", NPL_GGUF_FLOAT32, n * NPL_MAX_FPARAMS) : NULL;
    const void *names = fp ? arr(&r, "npullm.graph.name", NPL_GGUF_STRING, n) : NULL;
    if (!names) return NULL;
    int64_t kx = npl_gguf_find_key(f, "npullm.graph.ext.name");
    uint64_t n_ext = kx >= 0 ? npl_gguf_arr_n(f, kx) : 0;
    const void *ext_off = NULL;
    if (kx >= 0 && (!arr(&r, "npullm.graph.ext.name", NPL_GGUF_STRING, n_ext) ||
                    !arr(&r, "npullm.graph.ext.file", NPL_GGUF_STRING, n_ext) ||
                    !(ext_off = arr(&r, "npullm.graph.ext.offset", NPL_GGUF_INT64, n_ext))))
        return NULL;
    npl_graph *g = npl_graph_new();
    if (!g) return npl_err_memory(err, errlen), NULL;
    for (uint64_t i = 0; i < n; i++) {
        int o = get_i32(op, i), t = get_i32(type, i), nd = get_i32(ndims, i), ns = get_i32(nsrc, i);
        char *name = arr_str(&r, "npullm.graph.name", i);
        if (!name) {
            npl_errf(err, errlen, NPL_ERR_MEMORY, "%s: npullm.graph.name: node %llu: out of memory", npl_gguf_path(f),
                     (unsigned long long)i);
            goto fail;
        }
        int s[NPL_MAX_SRC] = {0};
        int64_t e[4];
        for (int d = 0; d < 4; d++) e[d] = get_i64(ne, i * 4 + d);
        const char *bad = (o < 0 || o >= NPL_OP_COUNT) ? "npullm.graph.op"
                          : !npl_type_get(t) ? "npullm.graph.type"
                          : (nd < 1 || nd > 4) ? "npullm.graph.n_dims"
                          : (ns < npl_op_min_src((npl_op)o) || ns > npl_op_max_src((npl_op)o)) ? "npullm.graph.n_src"
                          : NULL;
        for (int k = 0; !bad && k < ns; k++) {
            s[k] = get_i32(src, i * NPL_MAX_SRC + (uint64_t)k);
            if (s[k] < 0 || (uint64_t)s[k] >= i) bad = "npullm.graph.src (must name an earlier node)";
        }
        if (bad) {
            npl_errf(err, errlen, NPL_ERR_FILE, "%s: %s: node %llu: invalid value", npl_gguf_path(f), bad, (unsigned long long)i);
            free(name);
            goto fail;
        }
        const void *wdata = NULL;
        int64_t xi = o == NPL_OP_WEIGHT ? ext_find(&r, name, n_ext) : -1;
        if (xi >= 0) { /* its bytes are in another file of the package */
            char *file = arr_str(&r, "npullm.graph.ext.file", (uint64_t)xi), q[300];
            int64_t off = get_i64(ext_off, (uint64_t)xi);
            size_t row = 0;
            int ok = file && nd >= 1 && nd <= 4 && e[0] > 0 && e[1] > 0 && e[2] > 0 && e[3] > 0 && npl_type_get(t) &&
                     !npl_row_size((npl_type)t, e[0], &row);
            uint64_t bytes = ok ? (uint64_t)row * (uint64_t)(e[1] * e[2] * e[3]) : 0;
            npl_quote(q, sizeof q, name, strlen(name));
            if (!file) {
                npl_errf(err, errlen, NPL_ERR_MEMORY, "%s: npullm.graph.ext.file: out of memory", npl_gguf_path(f));
            } else if (!ok || off < 0 || !*file || strchr(file, '/') || !strcmp(file, "..")) {
                snprintf(err, errlen, "%s: npullm.graph.ext: weight '%s': bad file or offset", npl_gguf_path(f), q);
            } else if (!resolve) {
                snprintf(err, errlen, "%s: weight '%s' is stored in %s of its package: open the package directory",
                         npl_gguf_path(f), q, file);
            } else {
                char why[512];
                wdata = resolve(user, file, (uint64_t)off, bytes, why, sizeof why);
                if (!wdata) snprintf(err, errlen, "%s (weight '%s')", why, q);
            }
            free(file);
            if (!wdata) {
                free(name);
                goto fail;
            }
        } else if (o == NPL_OP_WEIGHT) {
            const npl_gguf_tensor *tt = npl_gguf_find_tensor(f, name);
            int ok = tt && tt->type == t;
            for (int d = 0; ok && d < 4; d++) ok = tt->ne[d] == e[d];
            if (!ok) {
                char q[300];
                npl_quote(q, sizeof q, name, strlen(name));
                snprintf(err, errlen, "%s: tensor '%s': missing or not of the node's type and shape", npl_gguf_path(f), q);
                free(name);
                goto fail;
            }
            wdata = tt->data;
        }
        npl_node like = {.op = (npl_op)o, .type = (npl_type)t, .shape = {nd, {e[0], e[1], e[2], e[3]}}, .n_src = ns};
        for (int k = 0; k < NPL_MAX_IPARAMS; k++) like.ip[k] = get_i32(ip, i * NPL_MAX_IPARAMS + (uint64_t)k);
        for (int k = 0; k < NPL_MAX_FPARAMS; k++) like.fp[k] = get_f32(fp, i * NPL_MAX_FPARAMS + (uint64_t)k);
        int id = npl_graph_append_like(g, &like, s, *name ? name : NULL, wdata);
        if (id != (int)i) {
            snprintf(err, errlen, "%s: npullm.graph: node %llu (%s): %s", npl_gguf_path(f), (unsigned long long)i,
                     npl_op_name((npl_op)o), npl_graph_error(g) ? npl_graph_error(g) : "cannot rebuild");
            free(name);
            goto fail;
        }
        free(name);
    }
    /* attributes */
    int64_t ki = npl_gguf_find_key(f, "npullm.attr.node");
    uint64_t na = ki >= 0 ? npl_gguf_arr_n(f, ki) : 0;
    const void *anode = arr(&r, "npullm.attr.node", NPL_GGUF_INT32, na);
    const void *akind = anode ? arr(&r, "npullm.attr.kind", NPL_GGUF_INT32, na) : NULL;
    const void *an = akind ? arr(&r, "npullm.attr.n", NPL_GGUF_INT64, na) : NULL;
    const void *akey = an ? arr(&r, "npullm.attr.key", NPL_GGUF_STRING, na) : NULL;
    if (!akey) goto fail;
    int64_t ks = npl_gguf_find_key(f, "npullm.attr.strs"), kint = npl_gguf_find_key(f, "npullm.attr.ints"),
            kf = npl_gguf_find_key(f, "npullm.attr.floats");
    uint64_t nstr = ks >= 0 ? npl_gguf_arr_n(f, ks) : 0, nint = kint >= 0 ? npl_gguf_arr_n(f, kint) : 0,
             nflt = kf >= 0 ? npl_gguf_arr_n(f, kf) : 0;
    const void *aints = arr(&r, "npullm.attr.ints", NPL_GGUF_INT64, nint);
    const void *aflts = aints ? arr(&r, "npullm.attr.floats", NPL_GGUF_FLOAT32, nflt) : NULL;
    if (!aflts || !arr(&r, "npullm.attr.strs", NPL_GGUF_STRING, nstr)) goto fail;
    uint64_t is = 0, ii = 0, iflt = 0;
    for (uint64_t a = 0; a < na; a++) {
        int node = get_i32(anode, a), kind = get_i32(akind, a);
        int64_t cnt = get_i64(an, a);
        uint64_t avail = kind == NPL_ATTR_INTS ? nint - ii : kind == NPL_ATTR_FLOATS ? nflt - iflt : nstr - is;
        if (node < 0 || (uint64_t)node >= n || kind < 0 || kind > NPL_ATTR_FLOATS || cnt < 0 || (uint64_t)cnt > avail ||
            (kind == NPL_ATTR_STR && cnt != 1)) {
            snprintf(err, errlen, "%s: npullm.attr: attribute %llu: bad node, kind or count", npl_gguf_path(f),
                     (unsigned long long)a);
            goto fail;
        }
        char *key = arr_str(&r, "npullm.attr.key", a);
        int rc = !key;
        if (!rc && kind == NPL_ATTR_INTS) {
            int64_t *v = malloc((size_t)(cnt ? cnt : 1) * sizeof *v);
            rc = !v;
            for (int64_t k = 0; !rc && k < cnt; k++) v[k] = get_i64(aints, ii + (uint64_t)k);
            if (!rc) rc = npl_attr_set_ints(g, node, key, v, cnt);
            free(v);
            ii += (uint64_t)cnt;
        } else if (!rc && kind == NPL_ATTR_FLOATS) {
            float *v = malloc((size_t)(cnt ? cnt : 1) * sizeof *v);
            rc = !v;
            for (int64_t k = 0; !rc && k < cnt; k++) v[k] = get_f32(aflts, iflt + (uint64_t)k);
            if (!rc) rc = npl_attr_set_floats(g, node, key, v, cnt);
            free(v);
            iflt += (uint64_t)cnt;
        } else if (!rc) {
            char **v = calloc((size_t)cnt + 1, sizeof *v);
            rc = !v;
            for (int64_t k = 0; !rc && k < cnt; k++) rc = !(v[k] = arr_str(&r, "npullm.attr.strs", is + (uint64_t)k));
            if (!rc) rc = kind == NPL_ATTR_STR ? npl_attr_set_str(g, node, key, v[0])
                                               : npl_attr_set_strs(g, node, key, (const char *const *)v, cnt);
            for (int64_t k = 0; v && k < cnt; k++) free(v[k]);
            free(v);
            is += (uint64_t)cnt;
        }
        free(key);
        if (rc) { /* the counts were checked above: only an allocation fails here */
            npl_errf(err, errlen, NPL_ERR_MEMORY, "%s: npullm.attr: attribute %llu: out of memory", npl_gguf_path(f),
                     (unsigned long long)a);
            goto fail;
        }
    }
    return g;
fail:
    npl_graph_free(g);
    return NULL;
}
