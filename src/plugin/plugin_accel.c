/* The built-in "accel" plugin kernel: runs the graphs of one context binary
 * through the accelerator ABI (attributes in plugin.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/fnv.h"
#include "core/quote.h"
#include "core/status.h"
#include "plugin/plugin.h"

#define MAX_SHAPES 32 /* 3 + 2 per KV-length bucket (compile's NPL_MAX_BUCKETS 8) */

typedef struct {
    const npl_accel_api *api;
    npl_accel_backend *be;
    npl_accel_device *dev; /* the package's device (attribute "soc"), or NULL: the default */
    npl_accel_context *ctx;
    void *map;
    size_t map_size;
    int n_shapes, n_src;
    npl_accel_graph *graphs[MAX_SHAPES];
    const npl_attr *ins, *outs, *names; /* accelerator tensor and graph names (graph attributes) */
    int shape_index;
    /* decode buckets (attributes kv_len, kv_pos_input): graphs of one input
     * shape (same group) that read the first kv[s] cache rows (0: all) */
    int kv_pos, group[MAX_SHAPES];
    int64_t kv[MAX_SHAPES];
    uint64_t runs[MAX_SHAPES]; /* executions per graph, printed at release with profile on */
    int profile;
    char path[4096];
} accel_state;

static const npl_attr *want(const npl_graph *g, int id, const char *key, npl_attr_kind kind, char *err, size_t errlen) {
    const npl_attr *a = npl_attr_get(g, id, key);
    if (!a || a->kind != kind) {
        snprintf(err, errlen, "plugin node %d: attribute '%s' missing or of the wrong kind", id, key);
        return NULL;
    }
    return a;
}

/* ---- shape kernel ---- */

static int accel_shape(void *user, const npl_graph *g, int id, const npl_shape *src, npl_shape *out, char *err,
                       size_t errlen) {
    (void)user;
    const npl_node *nd = npl_graph_node(g, id);
    int s = npl_plugin_shape_index(g, id, src, nd->n_src, err, errlen);
    if (s < 0) return -1;
    char key[32];
    snprintf(key, sizeof key, "o_%d_0", s);
    const npl_attr *a = want(g, id, key, NPL_ATTR_INTS, err, errlen);
    if (!a) return -1;
    if (a->n < 1 || a->n > NPL_MAX_DIMS) {
        snprintf(err, errlen, "plugin node %d: attribute '%s' has %lld dims", id, key, (long long)a->n);
        return -1;
    }
    npl_shape o = {(int)a->n, {1, 1, 1, 1}};
    for (int i = 0; i < a->n; i++) {
        if (a->ints[i] <= 0) {
            snprintf(err, errlen, "plugin node %d: attribute '%s': dim %d is %lld", id, key, i, (long long)a->ints[i]);
            return -1;
        }
        o.ne[i] = a->ints[i];
    }
    *out = o;
    return 0;
}

/* ---- compute kernel ---- */

static void accel_release(void *state) {
    accel_state *st = state;
    if (!st) return;
    for (int s = 0; st->profile && s < st->n_shapes; s++) /* which graphs ran: the bucket choice made visible */
        if (st->runs[s])
            fprintf(stderr, "accel profile: %s: graph %s: %llu executions\n", st->path, st->names->strs[s],
                    (unsigned long long)st->runs[s]);
    if (st->ctx) st->api->context_free(st->ctx);
    if (st->dev) st->api->device_free(st->dev);
    if (st->map) munmap(st->map, st->map_size);
    free(st);
}

static int accel_init(npl_plugin_rt *rt, const npl_graph *g, int id, void **state, char *err, size_t errlen) {
    const npl_node *nd = npl_graph_node(g, id);
    const npl_attr *path = want(g, id, "path", NPL_ATTR_STR, err, errlen);
    const npl_attr *ins = path ? want(g, id, "inputs", NPL_ATTR_STRS, err, errlen) : NULL;
    const npl_attr *outs = ins ? want(g, id, "outputs", NPL_ATTR_STRS, err, errlen) : NULL;
    const npl_attr *names = outs ? want(g, id, "allGraphName", NPL_ATTR_STRS, err, errlen) : NULL;
    if (!names) return -1;
    if (names->n < 1 || names->n > MAX_SHAPES) {
        snprintf(err, errlen, "plugin node %d: allGraphName has %lld graphs (1..%d)", id, (long long)names->n,
                 MAX_SHAPES);
        return -1;
    }
    /* names: one list for every graph, or one per shape index */
    if ((ins->n != nd->n_src && ins->n != names->n * nd->n_src) || (outs->n != 1 && outs->n != names->n)) {
        snprintf(err, errlen, "plugin node %d: %lld input names for %d inputs x %lld graphs, %lld output names", id,
                 (long long)ins->n, nd->n_src, (long long)names->n, (long long)outs->n);
        return -1;
    }
    const npl_attr *shapes = npl_attr_get(g, id, "allInputShape");
    if (!shapes || shapes->kind != NPL_ATTR_INTS || shapes->n != names->n * nd->n_src * 4) {
        snprintf(err, errlen, "plugin node %d: allInputShape must hold %lld shapes x %d inputs x 4 dims", id,
                 (long long)names->n, nd->n_src);
        return -1;
    }
    /* the package names its accelerator: no default, a package is for one target */
    const npl_attr *acc = want(g, id, "accel", NPL_ATTR_STR, err, errlen);
    if (!acc) return -1;
    const char *accel = acc->strs[0];

    accel_state *st = calloc(1, sizeof(*st));
    if (!st) return npl_err_memory(err, errlen), -1;
    st->n_shapes = (int)names->n;
    st->n_src = nd->n_src;
    st->shape_index = -1;
    st->ins = ins;
    st->outs = outs;
    st->names = names;
    st->kv_pos = -1;
    st->profile = npl_plugin_rt_profile(rt);
    for (int s = 0; s < st->n_shapes; s++) { /* group: the first graph of the same input shapes */
        st->group[s] = s;
        for (int o = 0; o < s && st->group[s] == s; o++)
            if (!memcmp(&shapes->ints[(int64_t)o * nd->n_src * 4], &shapes->ints[(int64_t)s * nd->n_src * 4],
                        sizeof(int64_t) * 4 * (size_t)nd->n_src))
                st->group[s] = o;
    }
    const npl_attr *kv = npl_attr_get(g, id, "kv_len"), *kp = npl_attr_get(g, id, "kv_pos_input");
    if (kv || kp) {
        if (!kv || !kp || kv->kind != NPL_ATTR_INTS || kp->kind != NPL_ATTR_INTS || kv->n != names->n || kp->n != 1 ||
            kp->ints[0] < 0 || kp->ints[0] >= nd->n_src) {
            snprintf(err, errlen, "plugin node %d: attributes kv_len (one length per graph) and kv_pos_input (an input "
                     "index) must come together and be valid", id);
            free(st);
            return -1;
        }
        st->kv_pos = (int)kp->ints[0];
        for (int s = 0; s < st->n_shapes; s++) st->kv[s] = kv->ints[s];
    }
    if (path->strs[0][0] == '/') snprintf(st->path, sizeof st->path, "%s", path->strs[0]);
    else snprintf(st->path, sizeof st->path, "%s/%s", npl_plugin_rt_base_dir(rt), path->strs[0]);

    if (!(st->api = npl_plugin_accel_api(rt, accel, err, errlen))) goto fail;
    if (!(st->be = npl_plugin_accel_backend(rt, st->api, err, errlen))) goto fail;

    /* map the context binary: the accelerator points into it (weights are not copied) */
    int fd = open(st->path, O_RDONLY | O_CLOEXEC);
    struct stat sb;
    if (fd < 0 || fstat(fd, &sb) || sb.st_size <= 0) {
        npl_errf(err, errlen, fd < 0 && errno == ENOMEM ? NPL_ERR_MEMORY : NPL_ERR_FILE, "%s: %s", st->path,
                 fd < 0 ? strerror(errno) : "empty or unreadable");
        if (fd >= 0) close(fd);
        goto fail;
    }
    st->map_size = (size_t)sb.st_size;
    st->map = mmap(NULL, st->map_size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (st->map == MAP_FAILED) {
        st->map = NULL;
        npl_errf(err, errlen, errno == ENOMEM ? NPL_ERR_MEMORY : NPL_ERR_FILE, "%s: mmap: %s", st->path, strerror(errno));
        goto fail;
    }
    const npl_attr *chk = npl_attr_get(g, id, "binary_check");
    if (chk && (chk->kind != NPL_ATTR_INTS || chk->n != 2)) {
        snprintf(err, errlen, "plugin node %d: attribute 'binary_check' must be 2 ints (size, checksum)", id);
        goto fail;
    }
    /* the device the binary was finalized for (npullm compile --soc) */
    const npl_attr *soc = npl_attr_get(g, id, "soc");
    if (soc && soc->kind != NPL_ATTR_STR) {
        snprintf(err, errlen, "plugin node %d: attribute 'soc' must be a string", id);
        goto fail;
    }
    npl_accel_option so = {"soc", soc ? soc->strs[0] : NULL};
    npl_accel_status as = soc ? st->api->device_create(st->be, &so, 1, &st->dev) : NPL_ACCEL_OK;
    if (as != NPL_ACCEL_OK) {
        npl_plugin_accel_status(as);
        st->dev = NULL;
        snprintf(err, errlen, "%s: the package's soc %s: %s", st->path, soc->strs[0], st->api->last_error(st->be));
        goto fail;
    }
    as = st->api->context_create_from_binary(st->be, st->dev, NULL, 0, st->map, st->map_size, &st->ctx);
    if (as != NPL_ACCEL_OK) {
        npl_plugin_accel_status(as);
        st->ctx = NULL;
        snprintf(err, errlen, "%s: %s", st->path, st->api->last_error(st->be));
        goto fail;
    }
    /* then what the compile recorded, size and checksum: corruption the
     * target's own loader does not see (QNN's binary has no checksum of its
     * weights) is refused here; the target's own diagnostics come first */
    if (chk && (uint64_t)chk->ints[0] != st->map_size) {
        npl_errf(err, errlen, NPL_ERR_FILE, "%s: context binary: truncated or replaced (%llu bytes, the package "
                 "recorded %llu)", st->path, (unsigned long long)st->map_size, (unsigned long long)chk->ints[0]);
        goto fail;
    }
    if (chk && npl_fnv1a64(st->map, st->map_size) != (uint64_t)chk->ints[1]) {
        npl_errf(err, errlen, NPL_ERR_FILE, "%s: context binary: checksum differs from the one the package recorded "
                 "(corrupted)", st->path);
        goto fail;
    }
    for (int s = 0; s < st->n_shapes; s++) {
        if ((as = st->api->graph_retrieve(st->ctx, names->strs[s], &st->graphs[s])) != NPL_ACCEL_OK) {
            npl_plugin_accel_status(as == NPL_ACCEL_ERR_NOT_FOUND ? NPL_ACCEL_ERR_BINARY_CORRUPT : as);
            char q[300];
            npl_quote(q, sizeof q, names->strs[s], strlen(names->strs[s]));
            snprintf(err, errlen, "%s: allGraphName[%d] '%s': %s", st->path, s, q, st->api->last_error(st->be));
            goto fail;
        }
    }
    *state = st;
    return 0;
fail:
    accel_release(st);
    return -1;
}

static int accel_resize(void *state, const npl_exec_ctx *c, char *err, size_t errlen) {
    accel_state *st = state;
    npl_shape src[NPL_MAX_SRC];
    for (int i = 0; i < c->n_src; i++) src[i] = c->src[i].shape;
    int s = npl_plugin_shape_index(c->graph, c->id, src, c->n_src, err, errlen);
    if (s < 0) return -1;
    st->shape_index = s;
    return 0;
}

static uint64_t tensor_bytes(const npl_tensor *t) {
    size_t row = 0;
    if (npl_row_size(t->type, t->shape.ne[0], &row)) return 0;
    return (uint64_t)row * (uint64_t)(t->shape.ne[1] * t->shape.ne[2] * t->shape.ne[3]);
}

/* The graph for this step: among the graphs of shape index si's input
 * shapes, the bucket with the fewest cache rows that holds every position
 * (si itself, which reads them all, when none does). */
static int pick_bucket(const accel_state *st, int si, const npl_tensor *pos) {
    if (st->kv_pos < 0 || pos->type != NPL_TYPE_I32) return si;
    const int32_t *p = pos->data;
    int64_t need = 0, n = npl_shape_nelements(&pos->shape);
    for (int64_t i = 0; i < n; i++)
        if ((int64_t)p[i] + 1 > need) need = (int64_t)p[i] + 1;
    int best = si;
    for (int s = 0; s < st->n_shapes; s++)
        if (st->group[s] == st->group[si] && st->kv[s] >= need && st->kv[s] > 0 && (best == si || st->kv[s] < st->kv[best]))
            best = s;
    return best;
}

static int accel_compute(void *state, const npl_exec_ctx *c, char *err, size_t errlen) {
    accel_state *st = state;
    if (st->shape_index < 0 || st->shape_index >= st->n_shapes) {
        snprintf(err, errlen, "plugin node %d: compute before a valid resize", c->id);
        return -1;
    }
    npl_accel_buffer in[NPL_MAX_SRC], out;
    int si = st->kv_pos >= 0 ? pick_bucket(st, st->shape_index, &c->src[st->kv_pos]) : st->shape_index;
    int ib = st->ins->n == st->n_src ? 0 : si * st->n_src;
    for (int i = 0; i < c->n_src; i++)
        in[i] = (npl_accel_buffer){st->ins->strs[ib + i], c->src[i].data, tensor_bytes(&c->src[i])};
    out = (npl_accel_buffer){st->outs->strs[st->outs->n == 1 ? 0 : si], c->dst.data, tensor_bytes(&c->dst)};
    npl_accel_status as = st->api->graph_execute(st->graphs[si], in, (uint32_t)c->n_src, &out, 1);
    if (as != NPL_ACCEL_OK) {
        npl_plugin_accel_status(as);
        snprintf(err, errlen, "plugin node %d (%s, graph %s): %s", c->id, st->path, st->names->strs[si],
                 st->api->last_error(st->be));
        return -1;
    }
    st->runs[si]++;
    return 0;
}

int npl_plugin_register_builtin(npl_plugin_rt *rt) {
    static const npl_plugin_compute_kernel k = {accel_init, accel_resize, accel_compute, accel_release};
    if (npl_plugin_register_shape(rt, "accel", accel_shape, NULL)) return -1;
    return npl_plugin_register_compute(rt, "accel", &k);
}
