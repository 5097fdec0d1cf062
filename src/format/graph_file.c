/* Graph files (see graph_file.h). Node i is stored as keys
 *   npullm.node.I.op / type / shape / src / ip / fp / name / attr.KEY
 * and a WEIGHT node's bytes as tensor "npullm.w.I". */
#include "format/graph_file.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/checked.h"

#define KEY(buf, i, what) snprintf(buf, sizeof(buf), "npullm.node.%d.%s", i, what)
enum { GRAPH_FILE_VERSION = 1, MAX_NODES = 1 << 22 };

static void copy_extra(npl_gguf_writer *w, const npl_graph_file_extra *x) {
    if (!x || !x->meta) return;
    const npl_gguf *m = x->meta;
    for (int64_t i = 0; i < npl_gguf_n_kv(m); i++) {
        npl_gguf_str k = npl_gguf_key(m, i);
        int match = 0;
        for (int p = 0; p < x->n_prefixes && !match; p++) {
            size_t pl = strlen(x->prefixes[p]);
            match = k.len >= pl && !memcmp(k.ptr, x->prefixes[p], pl);
        }
        if (!match || k.len > 255) continue;
        char key[256];
        memcpy(key, k.ptr, k.len);
        key[k.len] = 0;
        npl_gguf_vtype t = npl_gguf_kv_type(m, i);
        if (t == NPL_GGUF_STRING) {
            npl_gguf_str v = npl_gguf_kv_str(m, i);
            char *s = strndup(v.ptr, v.len);
            if (s) npl_gguf_writer_set_str(w, key, s);
            free(s);
        } else if (t == NPL_GGUF_ARRAY) {
            npl_gguf_vtype et = npl_gguf_arr_type(m, i);
            uint64_t n = npl_gguf_arr_n(m, i);
            if (et == NPL_GGUF_STRING) {
                char **strs = calloc(n ? n : 1, sizeof(char *));
                for (uint64_t j = 0; strs && j < n; j++) {
                    npl_gguf_str v = npl_gguf_arr_str(m, i, j);
                    strs[j] = strndup(v.ptr ? v.ptr : "", v.len);
                }
                if (strs) npl_gguf_writer_set_arr_str(w, key, (const char *const *)strs, n);
                for (uint64_t j = 0; strs && j < n; j++) free(strs[j]);
                free(strs);
            } else if (et != NPL_GGUF_ARRAY) {
                npl_gguf_writer_set_arr(w, key, et, npl_gguf_arr_data(m, i), n);
            }
        } else {
            npl_gguf_writer_set_scalar(w, key, t, npl_gguf_kv_data(m, i));
        }
    }
}

int npl_graph_save(const npl_graph *g, const char *path, const npl_graph_file_extra *extra, char *err,
                   size_t errlen) {
    if (npl_graph_error(g)) {
        snprintf(err, errlen, "%s: graph has an error: %s", path, npl_graph_error(g));
        return -1;
    }
    npl_gguf_writer *w = npl_gguf_writer_new();
    if (!w) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    npl_gguf_writer_set_str(w, "general.architecture", "npullm-graph");
    npl_gguf_writer_set_u32(w, "npullm.graph.version", GRAPH_FILE_VERSION);
    int n = npl_graph_n_nodes(g);
    npl_gguf_writer_set_u32(w, "npullm.graph.n_nodes", (uint32_t)n);
    char key[128], tname[64];
    for (int i = 0; i < n; i++) {
        const npl_node *nd = npl_graph_node(g, i);
        KEY(key, i, "op");
        npl_gguf_writer_set_str(w, key, npl_op_name(nd->op));
        KEY(key, i, "type");
        npl_gguf_writer_set_u32(w, key, (uint32_t)nd->type);
        int64_t shape[NPL_MAX_DIMS];
        for (int d = 0; d < nd->shape.n_dims; d++) shape[d] = nd->shape.ne[d];
        KEY(key, i, "shape");
        npl_gguf_writer_set_arr(w, key, NPL_GGUF_INT64, shape, (uint64_t)nd->shape.n_dims);
        int32_t src[NPL_MAX_SRC];
        for (int s = 0; s < nd->n_src; s++) src[s] = nd->src[s];
        KEY(key, i, "src");
        npl_gguf_writer_set_arr(w, key, NPL_GGUF_INT32, src, (uint64_t)nd->n_src);
        KEY(key, i, "ip");
        npl_gguf_writer_set_arr(w, key, NPL_GGUF_INT32, nd->ip, NPL_MAX_IPARAMS);
        KEY(key, i, "fp");
        npl_gguf_writer_set_arr(w, key, NPL_GGUF_FLOAT32, nd->fp, NPL_MAX_FPARAMS);
        if (nd->name) {
            KEY(key, i, "name");
            npl_gguf_writer_set_str(w, key, nd->name);
        }
        for (const npl_attr *a = nd->attrs; a; a = a->next) {
            snprintf(key, sizeof(key), "npullm.node.%d.attr.%s", i, a->key);
            if (a->kind == NPL_ATTR_STR) npl_gguf_writer_set_str(w, key, a->strs[0]);
            else if (a->kind == NPL_ATTR_STRS) npl_gguf_writer_set_arr_str(w, key, (const char *const *)a->strs, (uint64_t)a->n);
            else if (a->kind == NPL_ATTR_INTS) npl_gguf_writer_set_arr(w, key, NPL_GGUF_INT64, a->ints, (uint64_t)a->n);
            else npl_gguf_writer_set_arr(w, key, NPL_GGUF_FLOAT32, a->floats, (uint64_t)a->n);
        }
        if (nd->op == NPL_OP_WEIGHT) {
            size_t row, bytes;
            int64_t rows = npl_shape_nelements(&nd->shape) / nd->shape.ne[0];
            if (npl_row_size(nd->type, nd->shape.ne[0], &row) || npl_mul_size(row, (size_t)rows, &bytes)) {
                snprintf(err, errlen, "%s: node %d: weight size overflows", path, i);
                npl_gguf_writer_free(w);
                return -1;
            }
            snprintf(tname, sizeof(tname), "npullm.w.%d", i);
            npl_gguf_writer_add_tensor(w, tname, nd->type, nd->shape.n_dims, nd->shape.ne, nd->data, bytes);
        }
    }
    copy_extra(w, extra);
    int rc = npl_gguf_writer_write(w, path, err, errlen);
    npl_gguf_writer_free(w);
    return rc;
}

/* ---- loading ---- */

static int find_op(const char *name, size_t len) {
    for (int op = 0; op < NPL_OP_COUNT; op++)
        if (strlen(npl_op_name((npl_op)op)) == len && !memcmp(npl_op_name((npl_op)op), name, len)) return op;
    return -1;
}

/* Numeric array at key: element type t, count in [lo, hi]; returns index or -1. */
static int64_t arr_at(const npl_gguf *f, const char *key, npl_gguf_vtype t, uint64_t lo, uint64_t hi, char *err,
                      size_t errlen) {
    int64_t i = npl_gguf_find_key(f, key);
    if (i < 0 || npl_gguf_kv_type(f, i) != NPL_GGUF_ARRAY || npl_gguf_arr_type(f, i) != t ||
        npl_gguf_arr_n(f, i) < lo || npl_gguf_arr_n(f, i) > hi) {
        snprintf(err, errlen, "%s: %s: missing, wrong type or wrong length", npl_gguf_path(f), key);
        return -1;
    }
    return i;
}

static int load_attrs(npl_graph *g, const npl_gguf *f, int node, char *err, size_t errlen) {
    char prefix[64];
    int pl = snprintf(prefix, sizeof(prefix), "npullm.node.%d.attr.", node);
    for (int64_t i = 0; i < npl_gguf_n_kv(f); i++) {
        npl_gguf_str k = npl_gguf_key(f, i);
        if (k.len <= (uint64_t)pl || k.len > 200 || memcmp(k.ptr, prefix, (size_t)pl)) continue;
        char name[256];
        memcpy(name, k.ptr + pl, k.len - (uint64_t)pl);
        name[k.len - (uint64_t)pl] = 0;
        npl_gguf_vtype t = npl_gguf_kv_type(f, i);
        int rc = -1;
        if (t == NPL_GGUF_STRING) {
            npl_gguf_str v = npl_gguf_kv_str(f, i);
            char *s = strndup(v.ptr, v.len);
            if (s) rc = npl_attr_set_str(g, node, name, s);
            free(s);
        } else if (t == NPL_GGUF_ARRAY) {
            npl_gguf_vtype et = npl_gguf_arr_type(f, i);
            uint64_t n = npl_gguf_arr_n(f, i);
            if (et == NPL_GGUF_INT64) {
                int64_t *v = malloc((n ? n : 1) * sizeof(int64_t));
                if (v) memcpy(v, npl_gguf_arr_data(f, i), n * sizeof(int64_t)), rc = npl_attr_set_ints(g, node, name, v, (int64_t)n);
                free(v);
            } else if (et == NPL_GGUF_FLOAT32) {
                float *v = malloc((n ? n : 1) * sizeof(float));
                if (v) memcpy(v, npl_gguf_arr_data(f, i), n * sizeof(float)), rc = npl_attr_set_floats(g, node, name, v, (int64_t)n);
                free(v);
            } else if (et == NPL_GGUF_STRING) {
                char **v = calloc(n ? n : 1, sizeof(char *));
                for (uint64_t j = 0; v && j < n; j++) {
                    npl_gguf_str s = npl_gguf_arr_str(f, i, j);
                    v[j] = strndup(s.ptr ? s.ptr : "", s.len);
                }
                if (v) rc = npl_attr_set_strs(g, node, name, (const char *const *)v, (int64_t)n);
                for (uint64_t j = 0; v && j < n; j++) free(v[j]);
                free(v);
            }
        }
        if (rc != 0) {
            snprintf(err, errlen, "%s: %.*s: unsupported attribute value", npl_gguf_path(f), (int)k.len, k.ptr);
            return -1;
        }
    }
    return 0;
}

npl_graph *npl_graph_load(const char *path, npl_gguf **file, char *err, size_t errlen) {
    *file = NULL;
    npl_gguf *f = npl_gguf_open(path, NULL, err, errlen);
    if (!f) return NULL;
    uint32_t version = 0, n = 0;
    if (npl_gguf_get_u32(f, "npullm.graph.version", &version) || version != GRAPH_FILE_VERSION) {
        snprintf(err, errlen, "%s: npullm.graph.version: missing or not %d", path, GRAPH_FILE_VERSION);
        npl_gguf_close(f);
        return NULL;
    }
    if (npl_gguf_get_u32(f, "npullm.graph.n_nodes", &n) || n == 0 || n > MAX_NODES ||
        (int64_t)n > npl_gguf_n_kv(f)) {
        snprintf(err, errlen, "%s: npullm.graph.n_nodes: missing or out of range", path);
        npl_gguf_close(f);
        return NULL;
    }
    npl_graph *g = npl_graph_new();
    char key[128];
    for (int i = 0; g && i < (int)n; i++) {
        npl_gguf_str opname;
        KEY(key, i, "op");
        int op = npl_gguf_get_str(f, key, &opname) ? -1 : find_op(opname.ptr, opname.len);
        if (op < 0) {
            snprintf(err, errlen, "%s: %s: missing or unknown op", path, key);
            goto fail;
        }
        uint32_t type;
        KEY(key, i, "type");
        if (npl_gguf_get_u32(f, key, &type) || !npl_type_get((int)type)) {
            snprintf(err, errlen, "%s: %s: missing or unknown type", path, key);
            goto fail;
        }
        KEY(key, i, "shape");
        int64_t si = arr_at(f, key, NPL_GGUF_INT64, 1, NPL_MAX_DIMS, err, errlen);
        KEY(key, i, "src");
        int64_t ri = si < 0 ? -1 : arr_at(f, key, NPL_GGUF_INT32, 0, NPL_MAX_SRC, err, errlen);
        KEY(key, i, "ip");
        int64_t ii = ri < 0 ? -1 : arr_at(f, key, NPL_GGUF_INT32, NPL_MAX_IPARAMS, NPL_MAX_IPARAMS, err, errlen);
        KEY(key, i, "fp");
        int64_t fi = ii < 0 ? -1 : arr_at(f, key, NPL_GGUF_FLOAT32, NPL_MAX_FPARAMS, NPL_MAX_FPARAMS, err, errlen);
        if (fi < 0) goto fail;
        int64_t ne[NPL_MAX_DIMS];
        int n_dims = (int)npl_gguf_arr_n(f, si), n_src = (int)npl_gguf_arr_n(f, ri);
        memcpy(ne, npl_gguf_arr_data(f, si), (size_t)n_dims * sizeof(int64_t));
        int32_t src[NPL_MAX_SRC];
        memcpy(src, npl_gguf_arr_data(f, ri), (size_t)n_src * sizeof(int32_t));
        npl_gguf_str nm = {NULL, 0};
        KEY(key, i, "name");
        char *name = npl_gguf_get_str(f, key, &nm) == 0 ? strndup(nm.ptr, nm.len) : NULL;
        int id;
        if (op == NPL_OP_INPUT || op == NPL_OP_STATE) {
            id = op == NPL_OP_INPUT ? npl_input(g, name ? name : "", (npl_type)type, n_dims, ne)
                                    : npl_state(g, name ? name : "", (npl_type)type, n_dims, ne);
        } else if (op == NPL_OP_WEIGHT) {
            char tname[64];
            snprintf(tname, sizeof(tname), "npullm.w.%d", i);
            const npl_gguf_tensor *t = npl_gguf_find_tensor(f, tname);
            int ok = t && t->type == (int)type && t->n_dims == n_dims;
            for (int d = 0; ok && d < n_dims; d++) ok = t->ne[d] == ne[d];
            if (!ok) {
                snprintf(err, errlen, "%s: tensor %s: missing or does not match node %d", path, tname, i);
                free(name);
                goto fail;
            }
            id = npl_weight(g, name ? name : tname, (npl_type)type, n_dims, ne, t->data);
        } else {
            /* the builder's arity and source checks apply; attrs follow */
            int srcs[NPL_MAX_SRC];
            for (int s = 0; s < n_src; s++) srcs[s] = src[s] < i ? src[s] : -1;
            id = npl_graph_push(g, (npl_op)op, (npl_type)type, n_src, srcs);
            if (id >= 0 && name) npl_graph_set_name(g, id, name);
        }
        free(name);
        if (id != i) {
            snprintf(err, errlen, "%s: node %d: %s", path, i, npl_graph_error(g) ? npl_graph_error(g) : "invalid");
            goto fail;
        }
        npl_node *nd = npl_graph_node_mut(g, i);
        memcpy(nd->ip, npl_gguf_arr_data(f, ii), sizeof(nd->ip));
        memcpy(nd->fp, npl_gguf_arr_data(f, fi), sizeof(nd->fp));
        if (load_attrs(g, f, i, err, errlen)) goto fail;
    }
    if (!g) {
        snprintf(err, errlen, "out of memory");
        goto fail;
    }
    *file = f;
    return g;
fail:
    npl_graph_free(g);
    npl_gguf_close(f);
    return NULL;
}
