/* Plugin runtime: registries, accelerator libraries, CPU PLUGIN execution
 * (see plugin.h). */
#include "plugin/plugin.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/quote.h"
#include "core/status.h"

#define MAX_KINDS 16
#define MAX_ACCELS 16

typedef struct {
    char *type;
    npl_plugin_shape_kernel fn;
    void *user;
} shape_entry;

typedef struct {
    char *type;
    npl_plugin_compute_kernel k;
} compute_entry;

typedef struct {
    char *name;
    npl_accel_get_api_fn get_api; /* provider (built in / added / dlsym'ed) */
    void *lib;                    /* dlopen handle, NULL if not a library */
    char *path;                   /* the library's file ("built in" for a provider) */
    const npl_accel_api *api;     /* checked table, once asked for */
    npl_accel_backend *be;
} accel_entry;

struct npl_plugin_rt {
    char *base_dir, *plugin_dir; /* plugin_dir NULL: the default places */
    int n_threads;
    npl_accel_host_pool host_pool; /* the host's pool for accelerators; run NULL: none */
    int profile;
    shape_entry shapes[MAX_KINDS];
    int n_shapes;
    compute_entry computes[MAX_KINDS];
    int n_computes;
    accel_entry accels[MAX_ACCELS];
    int n_accels;
};

/* npl_accel_host_pool.run on an npl_pool: n_tasks spread over the pool's
 * shares (one task per share when they match, as accelerators ask). */
typedef struct {
    int n_tasks;
    npl_accel_task_fn fn;
    void *arg;
} spread_job;

static void spread_share(void *arg, int ith, int nth) {
    const spread_job *j = arg;
    for (int t = ith; t < j->n_tasks; t += nth) j->fn(j->arg, t, j->n_tasks);
}

static void host_pool_run(void *pool, int n_tasks, npl_accel_task_fn fn, void *arg) {
    if (n_tasks == npl_pool_size(pool)) {
        npl_pool_run(pool, fn, arg);
        return;
    }
    spread_job j = {n_tasks, fn, arg};
    npl_pool_run(pool, spread_share, &j);
}

npl_plugin_rt *npl_plugin_rt_new(const npl_plugin_rt_params *p, char *err, size_t errlen) {
    npl_plugin_rt *rt = calloc(1, sizeof(*rt));
    if (!rt) goto oom;
    const char *base = p && p->base_dir ? p->base_dir : ".";
    rt->base_dir = strdup(base);
    rt->plugin_dir = p && p->plugin_dir ? strdup(p->plugin_dir) : NULL;
    rt->n_threads = p ? p->n_threads : 0;
    if (p && p->host_pool)
        rt->host_pool = (npl_accel_host_pool){p->host_pool, (uint32_t)npl_pool_size(p->host_pool), host_pool_run};
    rt->profile = p ? p->profile : 0;
    if (!rt->base_dir || (p && p->plugin_dir && !rt->plugin_dir)) goto oom;
    for (int i = 0; p && i < p->n_providers; i++)
        if (npl_plugin_rt_add_accel(rt, p->providers[i].name, p->providers[i].get_api)) goto oom;
    if (npl_plugin_register_builtin(rt)) goto oom;
    return rt;
oom:
    npl_errf(err, errlen, NPL_ERR_MEMORY, "plugin runtime: out of memory");
    npl_plugin_rt_free(rt);
    return NULL;
}

void npl_plugin_rt_free(npl_plugin_rt *rt) {
    if (!rt) return;
    for (int i = 0; i < rt->n_accels; i++) {
        accel_entry *a = &rt->accels[i];
        if (a->be && a->api) a->api->backend_free(a->be);
        if (a->lib) dlclose(a->lib);
        free(a->name);
        free(a->path);
    }
    for (int i = 0; i < rt->n_shapes; i++) free(rt->shapes[i].type);
    for (int i = 0; i < rt->n_computes; i++) free(rt->computes[i].type);
    free(rt->base_dir);
    free(rt->plugin_dir);
    free(rt);
}

const char *npl_plugin_rt_base_dir(const npl_plugin_rt *rt) { return rt->base_dir; }
int npl_plugin_rt_n_threads(const npl_plugin_rt *rt) { return rt->n_threads; }
int npl_plugin_rt_profile(const npl_plugin_rt *rt) { return rt->profile; }

/* ---- registries ---- */

int npl_plugin_register_shape(npl_plugin_rt *rt, const char *type, npl_plugin_shape_kernel fn, void *user) {
    for (int i = 0; i < rt->n_shapes; i++)
        if (!strcmp(rt->shapes[i].type, type)) {
            rt->shapes[i].fn = fn;
            rt->shapes[i].user = user;
            return 0;
        }
    if (rt->n_shapes == MAX_KINDS) return -1;
    char *t = strdup(type);
    if (!t) return -1;
    rt->shapes[rt->n_shapes++] = (shape_entry){t, fn, user};
    return 0;
}

int npl_plugin_register_compute(npl_plugin_rt *rt, const char *type, const npl_plugin_compute_kernel *k) {
    for (int i = 0; i < rt->n_computes; i++)
        if (!strcmp(rt->computes[i].type, type)) {
            rt->computes[i].k = *k;
            return 0;
        }
    if (rt->n_computes == MAX_KINDS) return -1;
    char *t = strdup(type);
    if (!t) return -1;
    rt->computes[rt->n_computes++] = (compute_entry){t, *k};
    return 0;
}

const npl_plugin_compute_kernel *npl_plugin_find_compute(const npl_plugin_rt *rt, const char *type) {
    for (int i = 0; i < rt->n_computes; i++)
        if (!strcmp(rt->computes[i].type, type)) return &rt->computes[i].k;
    return NULL;
}

static const char *node_type(const npl_graph *g, int id) {
    const npl_attr *a = npl_attr_get(g, id, "type");
    return a && a->kind == NPL_ATTR_STR && a->n == 1 ? a->strs[0] : NULL;
}

int npl_plugin_infer_shape(npl_plugin_rt *rt, const npl_graph *g, int id, const npl_shape *src, npl_shape *out,
                           char *err, size_t errlen) {
    const char *type = node_type(g, id);
    if (!type) {
        snprintf(err, errlen, "plugin node %d: no 'type' attribute", id);
        return -1;
    }
    for (int i = 0; i < rt->n_shapes; i++)
        if (!strcmp(rt->shapes[i].type, type)) return rt->shapes[i].fn(rt->shapes[i].user, g, id, src, out, err, errlen);
    snprintf(err, errlen, "plugin node %d: no shape kernel for plugin type '%s'", id, type);
    return -1;
}

/* ---- accelerator libraries ---- */

/* Version-1 tables are accepted: the version-2 methods are used only where
 * NPL_ACCEL_API_HAS says the table has them. */
int npl_plugin_check_api(const npl_accel_api *api, const char *who, char *err, size_t errlen) {
    /* version-1 tables are accepted: version-2 methods are used where NPL_ACCEL_API_HAS says so */
    const char *why = npl_accel_api_check(api, 1);
    if (why && api)
        snprintf(err, errlen, "accelerator %s: ABI check failed (want version 1..%u, at least %zu bytes; got version "
                 "%u, %u bytes): %s", who, NPL_ACCEL_ABI_VERSION, (size_t)NPL_ACCEL_API_V1_SIZE, api->abi_version,
                 api->struct_size, why);
    else if (why)
        snprintf(err, errlen, "accelerator %s: ABI check failed (want version 1..%u): %s", who, NPL_ACCEL_ABI_VERSION,
                 why);
    return why ? -1 : 0;
}

int npl_plugin_rt_add_accel(npl_plugin_rt *rt, const char *name, npl_accel_get_api_fn get_api) {
    if (rt->n_accels == MAX_ACCELS) return -1;
    char *n = strdup(name), *path = strdup("built in");
    if (!n || !path) {
        free(n);
        free(path);
        return -1;
    }
    rt->accels[rt->n_accels++] = (accel_entry){n, get_api, NULL, path, NULL, NULL};
    return 0;
}

/* Where this code was loaded from: libnpullm.so's directory, or the
 * executable's when the library is linked in statically. */
static const char module_anchor = 0;
int npl_plugin_default_dir(char *buf, size_t len) {
    Dl_info di;
    const char *src = NULL;
    char exe[4096];
    if (dladdr(&module_anchor, &di) && di.dli_fname && strstr(di.dli_fname, ".so") && strchr(di.dli_fname, '/'))
        src = di.dli_fname;
    if (!src) {
        ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
        if (n <= 0) return -1;
        exe[n] = 0;
        src = exe;
    }
    const char *slash = strrchr(src, '/');
    if (!slash || (size_t)(slash - src) >= len) return -1;
    memcpy(buf, src, (size_t)(slash - src));
    buf[slash - src] = 0;
    if (!buf[0]) snprintf(buf, len, "/");
    return 0;
}

/* Loads libnpl_accel_<name>.so (or the path `name`) into a new entry. */
static accel_entry *load_library(npl_plugin_rt *rt, const char *name, char *err, size_t errlen) {
    if (rt->n_accels == MAX_ACCELS) {
        snprintf(err, errlen, "accelerator %s: too many accelerator libraries", name);
        return NULL;
    }
    char dirs[2][4096], path[4400], file[300];
    int n_dirs = 0;
    if (strchr(name, '/')) {
        snprintf(path, sizeof path, "%s", name);
    } else {
        snprintf(file, sizeof file, "libnpl_accel_%s.so", name);
        if (rt->plugin_dir) snprintf(dirs[n_dirs++], sizeof dirs[0], "%s", rt->plugin_dir);
        else {
            if (!npl_plugin_default_dir(dirs[n_dirs], sizeof dirs[0])) n_dirs++;
            if (!n_dirs || strcmp(dirs[0], rt->base_dir)) snprintf(dirs[n_dirs++], sizeof dirs[0], "%s", rt->base_dir);
        }
        int found = 0;
        for (int i = 0; i < n_dirs && !found; i++) {
            if (snprintf(path, sizeof path, "%s/%s", dirs[i], file) >= (int)sizeof path) continue; /* too long */
            found = access(path, F_OK) == 0;
        }
        if (!found) {
            snprintf(err, errlen, "accelerator %s: plugin %s is not installed (looked in %s%s%s)", name, file, dirs[0],
                     n_dirs > 1 ? " and " : "", n_dirs > 1 ? dirs[1] : "");
            return NULL;
        }
    }
    void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        snprintf(err, errlen, "accelerator %s: cannot load %s: %s", name, path, dlerror());
        return NULL;
    }
    void *sym = dlsym(lib, NPL_ACCEL_ENTRY_POINT);
    if (!sym) {
        snprintf(err, errlen, "accelerator %s: %s does not export %s", name, path, NPL_ACCEL_ENTRY_POINT);
        dlclose(lib);
        return NULL;
    }
    npl_accel_get_api_fn fn;
    memcpy(&fn, &sym, sizeof fn);
    if (npl_plugin_rt_add_accel(rt, name, fn)) {
        dlclose(lib);
        npl_err_memory(err, errlen);
        return NULL;
    }
    accel_entry *a = &rt->accels[rt->n_accels - 1];
    a->lib = lib;
    char *p = strdup(path);
    if (p) {
        free(a->path);
        a->path = p;
    }
    return a;
}

const npl_accel_api *npl_plugin_accel_api(npl_plugin_rt *rt, const char *name, char *err, size_t errlen) {
    accel_entry *a = NULL;
    for (int i = 0; i < rt->n_accels && !a; i++)
        if (!strcmp(rt->accels[i].name, name)) a = &rt->accels[i];
    /* a library: loaded now, because a model or a compile uses it */
    if (!a && !(a = load_library(rt, name, err, errlen))) return NULL;
    if (!a->api) {
        char who[4400];
        snprintf(who, sizeof who, "%s (%s)", name, a->path);
        uint32_t version;
        const npl_accel_api *api = npl_accel_get_newest_api(a->get_api, &version);
        if (npl_plugin_check_api(api, who, err, errlen)) return NULL;
        a->api = api;
    }
    return a->api;
}

int npl_plugin_accel_status(npl_accel_status st) {
    switch (st) {
    case NPL_ACCEL_OK: return NPL_OK;
    case NPL_ACCEL_ERR_NO_MEMORY: return npl_status_note(NPL_ERR_MEMORY);
    case NPL_ACCEL_ERR_BINARY_CORRUPT:
    case NPL_ACCEL_ERR_BINARY_VERSION:
    case NPL_ACCEL_ERR_IO:
    case NPL_ACCEL_ERR_ABI_VERSION:
    case NPL_ACCEL_ERR_HW_UNSUPPORTED: return npl_status_note(NPL_ERR_FILE);
    default: return npl_status_note(NPL_ERR_RUNTIME);
    }
}

npl_accel_backend *npl_plugin_accel_backend(npl_plugin_rt *rt, const npl_accel_api *api, char *err, size_t errlen) {
    for (int i = 0; i < rt->n_accels; i++) {
        accel_entry *a = &rt->accels[i];
        if (a->api != api) continue;
        if (!a->be) {
            char thr[16], prof[16], why[512] = "";
            snprintf(thr, sizeof thr, "%d", rt->n_threads);
            snprintf(prof, sizeof prof, "%d", rt->profile);
            npl_accel_option opt[2] = {{"threads", thr}, {"profile", prof}};
            const uint32_t n_prof = rt->profile > 0; /* "profile" only when asked: other plugins need not know it */
            npl_accel_status st;
            if (rt->host_pool.run && NPL_ACCEL_API_HAS(api, backend_create_on_pool)) { /* one pool: the session's */
                st = api->backend_create_on_pool(n_prof ? &opt[1] : NULL, n_prof, &rt->host_pool, &a->be, why,
                                                 (uint32_t)sizeof why);
            } else {
                st = api->backend_create(opt, 1 + n_prof, &a->be, why, (uint32_t)sizeof why);
                /* an implementation without a "threads" option runs as it likes */
                if (st == NPL_ACCEL_ERR_INVALID_ARG && n_prof) /* "profile" alone (qnn-htp takes it, not "threads") */
                    st = api->backend_create(&opt[1], 1, &a->be, why, (uint32_t)sizeof why);
                if (st == NPL_ACCEL_ERR_INVALID_ARG) st = api->backend_create(NULL, 0, &a->be, why, (uint32_t)sizeof why);
            }
            if (st != NPL_ACCEL_OK) {
                npl_plugin_accel_status(st);
                a->be = NULL;
                snprintf(err, errlen, "accelerator %s (%s): backend_create failed (status %d): %s", a->name, a->path,
                         (int)st, why[0] ? why : "no message");
                return NULL;
            }
        }
        return a->be;
    }
    snprintf(err, errlen, "accelerator table not loaded by this runtime");
    return NULL;
}

/* ---- the CPU backend's PLUGIN execution ---- */

typedef struct {
    const npl_plugin_compute_kernel *k;
    void *state;
} exec_state;

static npl_plugin_rt *rt_of(const npl_exec_ctx *c) { return ((const npl_plugin_backend *)c->backend_ctx)->rt; }

static int px_create(npl_exec_ctx *c, void **state) {
    npl_plugin_rt *rt = rt_of(c);
    const char *type = node_type(c->graph, c->id);
    const npl_plugin_compute_kernel *k = type ? npl_plugin_find_compute(rt, type) : NULL;
    if (!k) {
        char q[300] = "(none)";
        if (type) npl_quote(q, sizeof q, type, strlen(type));
        snprintf(c->err, c->errlen, "plugin node %d: attribute type: no compute kernel for plugin type '%s'", c->id, q);
        return -1;
    }
    exec_state *es = calloc(1, sizeof(*es));
    if (!es) {
        npl_err_memory(c->err, c->errlen);
        return -1;
    }
    es->k = k;
    if (k->init && k->init(rt, c->graph, c->id, &es->state, c->err, c->errlen)) {
        free(es);
        return -1;
    }
    *state = es;
    return 0;
}

static int px_resize(npl_exec_ctx *c) {
    exec_state *es = c->op_state;
    return es->k->resize ? es->k->resize(es->state, c, c->err, c->errlen) : 0;
}

static int px_exec(npl_exec_ctx *c) {
    exec_state *es = c->op_state;
    return es->k->compute(es->state, c, c->err, c->errlen);
}

static void px_destroy(void *state) {
    exec_state *es = state;
    if (!es) return;
    if (es->k->release) es->k->release(es->state);
    free(es);
}

static int px_shape(void *user, const npl_graph *g, int id, const npl_shape *src, npl_shape *out, char *err,
                    size_t errlen) {
    return npl_plugin_infer_shape(user, g, id, src, out, err, errlen);
}

void npl_plugin_backend_init(npl_plugin_backend *pb, npl_plugin_rt *rt, npl_backend *be) {
    pb->cpu = *(const npl_cpu_ctx *)be->ctx;
    pb->rt = rt;
    be->ctx = pb;
    be->ops[NPL_OP_PLUGIN] = (npl_op_exec){px_create, px_resize, px_exec, NULL, px_destroy, NULL, NULL};
    be->plugin_shape.fn = px_shape;
    be->plugin_shape.user = rt;
}

/* ---- shape index ---- */

static void shape_str(const npl_shape *s, char *buf, size_t len) {
    snprintf(buf, len, "[%lld,%lld,%lld,%lld]", (long long)s->ne[0], (long long)s->ne[1], (long long)s->ne[2],
             (long long)s->ne[3]);
}

int npl_plugin_shape_index(const npl_graph *g, int id, const npl_shape *src, int n_src, char *err, size_t errlen) {
    const npl_attr *a = npl_attr_get(g, id, "allInputShape");
    if (!a || a->kind != NPL_ATTR_INTS || n_src <= 0 || a->n % ((int64_t)n_src * 4)) {
        snprintf(err, errlen, "plugin node %d: attribute allInputShape missing or not [shape][%d inputs][4] ints", id,
                 n_src);
        return -1;
    }
    int64_t n_shapes = a->n / ((int64_t)n_src * 4);
    for (int64_t s = 0; s < n_shapes; s++) {
        int ok = 1;
        for (int i = 0; ok && i < n_src; i++)
            for (int d = 0; ok && d < 4; d++) ok = a->ints[(s * n_src + i) * 4 + d] == src[i].ne[d];
        if (ok) return (int)s;
    }
    char got[256] = "", comp[512] = "";
    size_t o = 0;
    for (int i = 0; i < n_src && o < sizeof got; i++) {
        char b[64];
        shape_str(&src[i], b, sizeof b);
        o += (size_t)snprintf(got + o, sizeof got - o, "%s%s", i ? " " : "", b);
    }
    o = 0;
    for (int64_t s = 0; s < n_shapes && o < sizeof comp; s++) {
        o += (size_t)snprintf(comp + o, sizeof comp - o, "%s#%lld:", s ? "; " : "", (long long)s);
        for (int i = 0; i < n_src && o < sizeof comp; i++) {
            const int64_t *e = &a->ints[(s * n_src + i) * 4];
            o += (size_t)snprintf(comp + o, sizeof comp - o, " [%lld,%lld,%lld,%lld]", (long long)e[0], (long long)e[1],
                                  (long long)e[2], (long long)e[3]);
        }
    }
    snprintf(err, errlen, "plugin node %d: input shapes %s are not in allInputShape (compiled: %s)", id, got, comp);
    return -1;
}
