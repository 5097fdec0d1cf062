/* Runner (see runner.h). */
#include "llm/runner.h"

#include <cjson/cJSON.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include "core/checked.h"
#include "core/status.h"
#include "format/graph_file.h"
#include "llm/runner_wpack.h"
#include "plugin/plugin.h"

#define MAX_LIMITS 8
#define MAX_EXT_FILES 8

/* What a model's sessions share: the mapping, the hyperparameters, the
 * kernel choice and one pool, with a FIFO lock so one forward at a time runs
 * on it (tickets: sessions take turns in the order they asked). */
struct npl_runner_base {
    char *gpath;          /* the GGUF (a package's graph file) */
    npl_gguf *f;
    npl_hparams hp;
    int is_pkg;
    npl_pool *pool;       /* NULL: opened without one (vocabulary only) */
    npl_isa isa;
    int arith;
    npl_wpack_table wpack; /* matmul weights packed for isa's kernels (empty: none) */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    unsigned long next_ticket, serving;
    int lock_init;
};

struct npl_runner {
    npl_runner_base *b;
    int own_base;         /* npl_runner_open: the runner closes it */
    npl_model_graph mg;
    npl_cpu_ctx cc;
    npl_backend be;
    npl_graph_session *sess;
    uint16_t **kv;        /* 2 * n_layer buffers */
    size_t kv_row;        /* bytes of one position's K (or V) row in one layer */
    int32_t *pos_buf, *rows_buf;
    int buf_cap;
    /* package mode: the graph file's graph, plugin runtime, chunk sizes */
    int is_pkg;
    npl_plugin_rt *rt;
    npl_plugin_backend pb;
    void **states;
    int n_states;
    int limits[MAX_LIMITS], n_limits; /* ascending */
    int rows_skip;                    /* out_rows = -1 skips the logits (only the accelerator reads out_rows) */
    int32_t *ptok, *ppos, *prows;     /* one padded chunk */
    float *plogits;                   /* [n_out][n_vocab] gathered */
    int plogits_cap;
    /* files of the package that hold CPU-side weights (graph_file.h external
     * weights: a tied embedding kept once, in a context binary), mapped */
    struct { void *p; size_t n; char name[256]; } ext[MAX_EXT_FILES];
    int n_ext;
    const char *pkg_dir;
};

static void base_lock(npl_runner_base *b) {
    pthread_mutex_lock(&b->mu);
    unsigned long t = b->next_ticket++;
    while (b->serving != t) pthread_cond_wait(&b->cv, &b->mu);
    pthread_mutex_unlock(&b->mu);
}

static void base_unlock(npl_runner_base *b) {
    pthread_mutex_lock(&b->mu);
    b->serving++;
    pthread_cond_broadcast(&b->cv);
    pthread_mutex_unlock(&b->mu);
}

npl_runner_params npl_runner_default_params(void) {
    npl_runner_params p = {0, 0, -1, 0, NULL, NULL, 0, NPL_ARITH_OURS, 0, 0, 0};
    return p;
}

void npl_runner_base_close(npl_runner_base *b) {
    if (!b) return;
    npl_pool_free(b->pool);
    npl_wpack_free(&b->wpack);
    npl_gguf_close(b->f);
    if (b->lock_init) {
        pthread_cond_destroy(&b->cv);
        pthread_mutex_destroy(&b->mu);
    }
    free(b->gpath);
    free(b);
}

void npl_runner_close(npl_runner *r) {
    if (!r) return;
    npl_graph_session_free(r->sess);
    if (r->kv)
        for (int i = 0; i < 2 * r->b->hp.n_layer; i++) free(r->kv[i]);
    free(r->kv);
    free(r->pos_buf);
    free(r->rows_buf);
    for (int i = 0; i < r->n_states; i++) free(r->states[i]);
    free(r->states);
    free(r->ptok);
    free(r->ppos);
    free(r->prows);
    free(r->plogits);
    npl_graph_free(r->mg.g);
    for (int i = 0; i < r->n_ext; i++) munmap(r->ext[i].p, r->ext[i].n);
    npl_plugin_rt_free(r->rt);
    if (r->own_base) npl_runner_base_close(r->b);
    free(r);
}

/* ---- packages (npullm compile): DIR, DIR/config.json or DIR/model.gguf ---- */

static int is_dir(const char *p) {
    struct stat sb;
    return stat(p, &sb) == 0 && S_ISDIR(sb.st_mode);
}

/* chunk_limits of a package config.json (absent file: 0 limits) */
static int config_limits(const char *cfg, int *lim, int *n, char *model, size_t model_len, char *err, size_t errlen) {
    *n = 0;
    FILE *fp = fopen(cfg, "rb");
    if (!fp) return 0;
    char buf[65536];
    size_t len = fread(buf, 1, sizeof buf - 1, fp);
    fclose(fp);
    buf[len] = 0;
    cJSON *root = cJSON_ParseWithLength(buf, len);
    int rc = -1;
    if (!root || !cJSON_IsObject(root)) {
        snprintf(err, errlen, "%s: not a JSON object", cfg);
        goto done;
    }
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(root, "llm_model");
    if (model && cJSON_IsString(m)) {
        const char *slash = strrchr(cfg, '/');
        if (m->valuestring[0] == '/' || !slash) snprintf(model, model_len, "%s", m->valuestring);
        else snprintf(model, model_len, "%.*s/%s", (int)(slash - cfg), cfg, m->valuestring);
    }
    const cJSON *cl = cJSON_GetObjectItemCaseSensitive(root, "chunk_limits"), *it;
    if (cl) {
        if (!cJSON_IsArray(cl)) {
            snprintf(err, errlen, "%s: chunk_limits: must be an array of positive integers", cfg);
            goto done;
        }
        cJSON_ArrayForEach(it, cl) {
            if (!cJSON_IsNumber(it) || it->valuedouble < 1 || it->valuedouble > 1e6 || *n == MAX_LIMITS) {
                snprintf(err, errlen, "%s: chunk_limits: must be an array of 1 to %d positive integers", cfg, MAX_LIMITS);
                goto done;
            }
            lim[(*n)++] = (int)it->valuedouble;
        }
    }
    rc = 0;
done:
    cJSON_Delete(root);
    return rc;
}

static void sort_limits(int *l, int n) {
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && l[j - 1] > l[j]; j--) {
            int t = l[j];
            l[j] = l[j - 1];
            l[j - 1] = t;
        }
}

/* npl_graph_ext_resolve: the file mapped once (read-only, shared with the
 * page cache: the accelerator's own mapping of it costs no second copy). */
static const void *ext_resolve(void *user, const char *file, uint64_t off, uint64_t size, char *err, size_t errlen) {
    npl_runner *r = user;
    int i = 0;
    while (i < r->n_ext && strcmp(r->ext[i].name, file)) i++;
    if (i == r->n_ext) {
        char path[4400];
        struct stat sb;
        snprintf(path, sizeof path, "%s/%s", r->pkg_dir, file);
        int fd = i < MAX_EXT_FILES ? open(path, O_RDONLY | O_CLOEXEC) : -1;
        if (fd < 0 || fstat(fd, &sb) || sb.st_size <= 0) {
            npl_errf(err, errlen, NPL_ERR_FILE, "%s: %s", path, fd < 0 ? strerror(errno) : "empty or unreadable");
            if (fd >= 0) close(fd);
            return NULL;
        }
        void *p = mmap(NULL, (size_t)sb.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
        close(fd);
        if (p == MAP_FAILED) {
            npl_errf(err, errlen, NPL_ERR_FILE, "%s: mmap: %s", path, strerror(errno));
            return NULL;
        }
        r->ext[i].p = p, r->ext[i].n = (size_t)sb.st_size;
        snprintf(r->ext[i].name, sizeof r->ext[i].name, "%s", file);
        r->n_ext++;
    }
    if (off > r->ext[i].n || size > r->ext[i].n - off) {
        npl_errf(err, errlen, NPL_ERR_FILE, "%s/%s: %llu bytes at offset %llu are beyond its %llu bytes (truncated?)",
                 r->pkg_dir, file, (unsigned long long)size, (unsigned long long)off, (unsigned long long)r->ext[i].n);
        return NULL;
    }
    return (const char *)r->ext[i].p + off;
}

static int open_package(npl_runner *r, const char *graph_path, const npl_runner_params *p, char *err, size_t errlen) {
    r->is_pkg = 1;
    char dir[4096];
    const char *slash = strrchr(graph_path, '/');
    if (slash) snprintf(dir, sizeof dir, "%.*s", (int)(slash - graph_path), graph_path);
    else snprintf(dir, sizeof dir, ".");
    uint32_t n_ctx = 0;
    if (npl_gguf_get_u32(r->b->f, "npullm.package.n_ctx", &n_ctx) || n_ctx == 0) {
        snprintf(err, errlen, "%s: npullm.package.n_ctx: missing or zero", graph_path);
        return -1;
    }
    if (p->n_ctx > (int)n_ctx) {
        npl_errf(err, errlen, NPL_ERR_ARGUMENT, "%s: context %d requested, the package was compiled for %u", graph_path, p->n_ctx, n_ctx);
        return -1;
    }
    /* compiled chunk sizes, and the config's chunk_limits must be among them */
    int64_t ki = npl_gguf_find_key(r->b->f, "npullm.package.chunk_limits");
    if (ki < 0 || npl_gguf_arr_type(r->b->f, ki) != NPL_GGUF_INT64 || npl_gguf_arr_n(r->b->f, ki) < 1 ||
        npl_gguf_arr_n(r->b->f, ki) > MAX_LIMITS) {
        snprintf(err, errlen, "%s: npullm.package.chunk_limits: missing or not 1..%d int64", graph_path, MAX_LIMITS);
        return -1;
    }
    r->n_limits = (int)npl_gguf_arr_n(r->b->f, ki);
    for (int i = 0; i < r->n_limits; i++) {
        int64_t v;
        memcpy(&v, (const char *)npl_gguf_arr_data(r->b->f, ki) + 8 * i, 8);
        if (v < 1 || v > (int64_t)n_ctx) {
            snprintf(err, errlen, "%s: npullm.package.chunk_limits[%d] = %lld out of range", graph_path, i, (long long)v);
            return -1;
        }
        r->limits[i] = (int)v;
    }
    sort_limits(r->limits, r->n_limits);
    char cfg[4200];
    int cl[MAX_LIMITS], ncl;
    snprintf(cfg, sizeof cfg, "%s/config.json", dir);
    if (config_limits(cfg, cl, &ncl, NULL, 0, err, errlen)) return -1;
    sort_limits(cl, ncl);
    int match = ncl == 0 || ncl == r->n_limits;
    for (int i = 0; match && i < ncl; i++) match = cl[i] == r->limits[i];
    if (!match) {
        snprintf(err, errlen, "%s: chunk_limits: do not match the shapes compiled into %s (%d values; compiled [",
                 cfg, graph_path, ncl);
        size_t o = strlen(err);
        for (int i = 0; i < r->n_limits && o < errlen; i++)
            o += (size_t)snprintf(err + o, errlen - o, "%s%d", i ? ", " : "", r->limits[i]);
        if (o < errlen) snprintf(err + o, errlen - o, "])");
        return -1;
    }
    r->pkg_dir = dir;
    r->mg.g = npl_graph_file_load_ext(r->b->f, ext_resolve, r, err, errlen);
    r->pkg_dir = NULL;
    if (!r->mg.g) return -1;
    r->mg.n_ctx = p->n_ctx > 0 ? p->n_ctx : (int)n_ctx;
    r->mg.tokens = npl_graph_find(r->mg.g, "tokens");
    r->mg.pos = npl_graph_find(r->mg.g, "pos");
    r->mg.out_rows = npl_graph_find(r->mg.g, "out_rows");
    r->mg.logits = npl_graph_find(r->mg.g, "logits");
    if (r->mg.tokens < 0 || r->mg.pos < 0 || r->mg.out_rows < 0 || r->mg.logits < 0) {
        snprintf(err, errlen, "%s: graph: needs nodes tokens, pos, out_rows and logits", graph_path);
        return -1;
    }
    /* A chunk whose logits nobody wants asks for row -1 when only plugin ops
     * (an accelerator's Gather: every index negative skips the steps after
     * it) read out_rows; a CPU op there would reject it. */
    r->rows_skip = 1;
    for (int i = 0; i < npl_graph_n_nodes(r->mg.g); i++) {
        const npl_node *nd = npl_graph_node(r->mg.g, i);
        for (int k = 0; k < nd->n_src; k++)
            if (nd->src[k] == r->mg.out_rows && nd->op != NPL_OP_PLUGIN) r->rows_skip = 0;
    }
    /* the accelerator runs on the model's pool: one pool of n_threads in the process */
    npl_plugin_rt_params pp = {.base_dir = dir, .plugin_dir = p->plugin_dir, .n_threads = p->n_threads,
                               .providers = p->providers, .n_providers = p->n_providers, .host_pool = r->b->pool,
                               .profile = p->profile};
    if (!(r->rt = npl_plugin_rt_new(&pp, err, errlen))) return -1;
    npl_cpu_backend_init(&r->be, &r->cc, r->b->isa);
    r->cc.arith = r->b->arith;
    npl_plugin_backend_init(&r->pb, r->rt, &r->be);
    /* plugin kernels init here: the context binary is mapped and checked now */
    if (!(r->sess = npl_graph_session_new(r->mg.g, &r->be, r->b->pool, &r->mg.logits, 1, err, errlen))) {
        /* name the package's graph file: the session's message names only the node */
        char why[512];
        snprintf(why, sizeof why, "%s", err);
        snprintf(err, errlen, "%s: %s", graph_path, why);
        return -1;
    }
    /* states left on the CPU (a subgraph that fell back) */
    int n = npl_graph_n_nodes(r->mg.g);
    if (!(r->states = calloc((size_t)n, sizeof(void *)))) goto oom;
    for (int i = 0; i < n; i++) {
        const npl_node *nd = npl_graph_node(r->mg.g, i);
        if (nd->op != NPL_OP_STATE) continue;
        size_t row;
        if (npl_row_size(nd->type, nd->shape.ne[0], &row)) goto oom;
        if (!(r->states[r->n_states] = calloc(1, row * (size_t)(nd->shape.ne[1] * nd->shape.ne[2] * nd->shape.ne[3]))))
            goto oom;
        if (npl_graph_session_set_state(r->sess, nd->name, r->states[r->n_states++])) {
            snprintf(err, errlen, "%s", npl_graph_session_error(r->sess));
            return -1;
        }
    }
    int maxc = r->limits[r->n_limits - 1];
    if (!(r->ptok = calloc((size_t)maxc, 4)) || !(r->ppos = calloc((size_t)maxc, 4)) ||
        !(r->prows = calloc((size_t)maxc, 4)))
        goto oom;
    return 0;
oom:
    npl_err_memory(err, errlen);
    return -1;
}

npl_runner_base *npl_runner_base_open(const char *path, const npl_runner_params *p, int with_pool, char *err,
                                      size_t errlen) {
    npl_runner_params dp = npl_runner_default_params();
    if (!p) p = &dp;
    if (p->arith < NPL_ARITH_OURS || p->arith > NPL_ARITH_LLAMACPP_NOFA || p->profile < 0 || p->profile > 3) {
        npl_errf(err, errlen, NPL_ERR_ARGUMENT, "%s %d is not in 0..%d", p->profile < 0 || p->profile > 3 ? "profile" : "arithmetic",
                 p->profile < 0 || p->profile > 3 ? p->profile : p->arith, p->profile < 0 || p->profile > 3 ? 3 : 2);
        return NULL;
    }
    npl_runner_base *b = calloc(1, sizeof(*b));
    if (!b) {
        npl_err_memory(err, errlen);
        return NULL;
    }
    /* a package: its directory, its config.json, or its graph file */
    char gpath[4300];
    snprintf(gpath, sizeof gpath, "%s", path);
    size_t plen = strlen(path);
    if (is_dir(path)) {
        snprintf(gpath, sizeof gpath, "%s/model.gguf", path);
        char cfg[4200], model[4200] = "";
        int lim[MAX_LIMITS], nl;
        snprintf(cfg, sizeof cfg, "%s/config.json", path);
        if (config_limits(cfg, lim, &nl, model, sizeof model, err, errlen)) goto fail;
        if (*model) snprintf(gpath, sizeof gpath, "%s", model);
    } else if (plen >= 5 && !strcmp(path + plen - 5, ".json")) {
        int lim[MAX_LIMITS], nl;
        gpath[0] = 0;
        if (config_limits(path, lim, &nl, gpath, sizeof gpath, err, errlen)) goto fail;
        if (!gpath[0]) {
            snprintf(err, errlen, "%s: llm_model: missing", path);
            goto fail;
        }
    }
    if (pthread_mutex_init(&b->mu, NULL)) goto oom;
    if (pthread_cond_init(&b->cv, NULL)) {
        pthread_mutex_destroy(&b->mu);
        goto oom;
    }
    b->lock_init = 1;
    if (!(b->gpath = strdup(gpath))) goto oom;
    if (!(b->f = npl_gguf_open(gpath, NULL, err, errlen))) goto fail;
    /* a vocabulary-only open (npullm tokenize) needs no hyperparameters: the
     * llama.cpp vocab fixtures name architectures we do not run (gpt2, mpt)
     * and carry no tensors */
    if (npl_hparams_load(b->f, &b->hp, err, errlen)) {
        if (with_pool) goto fail;
        memset(&b->hp, 0, sizeof b->hp);
        if (errlen) err[0] = 0;
    }
    b->is_pkg = npl_graph_file_present(b->f);
    b->isa = p->isa < 0 ? npl_cpu_best_isa() : (npl_isa)p->isa;
    b->arith = p->arith;
    if (with_pool && !(b->pool = npl_pool_new(p->n_threads))) goto oom; /* the pool fails only to allocate */
    const size_t mib = (size_t)(p->repack_mib > 0 ? p->repack_mib : NPL_WPACK_DEFAULT_MIB);
    if (with_pool && !b->is_pkg && !p->no_repack &&
        npl_runner_wpack_build(&b->wpack, b->f, &b->hp, b->isa, mib << 20, err, errlen))
        goto fail;
    return b;
oom:
    npl_err_memory(err, errlen);
fail:
    npl_runner_base_close(b);
    return NULL;
}

npl_runner *npl_runner_new(npl_runner_base *b, const npl_runner_params *p, char *err, size_t errlen) {
    npl_runner_params dp = npl_runner_default_params();
    if (!p) p = &dp;
    if (!b->pool) {
        npl_errf(err, errlen, NPL_ERR_ARGUMENT, "%s: opened without a thread pool (vocabulary only)", b->gpath);
        return NULL;
    }
    if (p->profile < 0 || p->profile > 3) {
        npl_errf(err, errlen, NPL_ERR_ARGUMENT, "profile %d is not in 0..3", p->profile);
        return NULL;
    }
    npl_runner *r = calloc(1, sizeof(*r));
    if (!r) {
        npl_err_memory(err, errlen);
        return NULL;
    }
    r->b = b;
    const char *path = b->gpath;
    if (b->is_pkg) {
        if (open_package(r, b->gpath, p, err, errlen)) goto fail;
        return r;
    }
    int n_ctx = p->n_ctx > 0 ? p->n_ctx : (b->hp.n_ctx_train < 4096 ? b->hp.n_ctx_train : 4096);
    if (p->n_ctx < 0) {
        npl_errf(err, errlen, NPL_ERR_ARGUMENT, "context length %d must be positive", p->n_ctx);
        goto fail;
    }
    /* refuse a KV cache over budget before allocating anything */
    size_t row = (size_t)b->hp.head_dim * (size_t)b->hp.n_head_kv * sizeof(uint16_t), per_layer, total;
    size_t budget = p->kv_budget ? p->kv_budget : ((size_t)4 << 30);
    if (npl_mul_size(row, (size_t)n_ctx, &per_layer) || npl_mul_size(per_layer, 2 * (size_t)b->hp.n_layer, &total) ||
        total > budget) {
        npl_errf(err, errlen, NPL_ERR_MEMORY, "%s: context %d: KV cache would need %.1f MiB, over the budget of %.1f MiB", path, n_ctx,
                 (double)row * n_ctx * 2.0 * b->hp.n_layer / 1048576.0, (double)budget / 1048576.0);
        goto fail;
    }
    r->kv_row = row;
    if (npl_model_build(b->f, &b->hp, n_ctx, &r->mg, err, errlen)) goto fail;
    npl_cpu_backend_init(&r->be, &r->cc, b->isa);
    r->cc.arith = b->arith;
    r->cc.wpack = &b->wpack;
    if (!(r->sess = npl_graph_session_new(r->mg.g, &r->be, b->pool, &r->mg.logits, 1, err, errlen))) goto fail;
    if (!(r->kv = calloc(2 * (size_t)b->hp.n_layer, sizeof(uint16_t *)))) goto oom;
    for (int l = 0; l < b->hp.n_layer; l++) {
        char name[32];
        for (int kv = 0; kv < 2; kv++) {
            /* calloc: pages are only touched as positions are written */
            if (!(r->kv[2 * l + kv] = calloc(1, per_layer))) goto oom;
            snprintf(name, sizeof(name), "%ccache.%d", kv ? 'v' : 'k', l);
            if (npl_graph_session_set_state(r->sess, name, r->kv[2 * l + kv])) {
                snprintf(err, errlen, "%s", npl_graph_session_error(r->sess));
                goto fail;
            }
        }
    }
    return r;
oom:
    npl_err_memory(err, errlen);
fail:
    npl_runner_close(r);
    return NULL;
}

npl_runner *npl_runner_open(const char *path, const npl_runner_params *p, char *err, size_t errlen) {
    npl_runner_base *b = npl_runner_base_open(path, p, 1, err, errlen);
    if (!b) return NULL;
    npl_runner *r = npl_runner_new(b, p, err, errlen);
    if (!r) {
        npl_runner_base_close(b);
        return NULL;
    }
    r->own_base = 1;
    return r;
}

const npl_hparams *npl_runner_base_hparams(const npl_runner_base *b) { return &b->hp; }
const npl_gguf *npl_runner_base_gguf(const npl_runner_base *b) { return b->f; }
int npl_runner_base_n_threads(const npl_runner_base *b) { return b->pool ? npl_pool_size(b->pool) : 0; }
const char *npl_runner_base_path(const npl_runner_base *b) { return b->gpath; }
size_t npl_runner_base_packed_bytes(const npl_runner_base *b) { return b->wpack.bytes; }
const npl_runner_base *npl_runner_base_of(const npl_runner *r) { return r->b; }

uint16_t *npl_runner_kv(npl_runner *r, int layer, int v, size_t *row_bytes) {
    if (r->is_pkg || !r->kv || layer < 0 || layer >= r->b->hp.n_layer) return NULL;
    if (row_bytes) *row_bytes = r->kv_row;
    return r->kv[2 * layer + (v ? 1 : 0)];
}

const npl_hparams *npl_runner_hparams(const npl_runner *r) { return &r->b->hp; }
const npl_gguf *npl_runner_gguf(const npl_runner *r) { return r->b->f; }
int npl_runner_n_ctx(const npl_runner *r) { return r->mg.n_ctx; }
const char *npl_runner_isa(const npl_runner *r) { return npl_isa_name(r->cc.isa); }
int npl_runner_n_threads(const npl_runner *r) { return npl_pool_size(r->b->pool); }

static int grow(npl_runner *r, int n) {
    if (n <= r->buf_cap) return 0;
    int32_t *p = realloc(r->pos_buf, (size_t)n * sizeof(int32_t));
    if (!p) return -1;
    r->pos_buf = p;
    int32_t *q = realloc(r->rows_buf, (size_t)n * sizeof(int32_t));
    if (!q) return -1;
    r->rows_buf = q;
    r->buf_cap = n;
    return 0;
}

/* Package forward: the compiled graphs have fixed sizes, so the tokens are
 * cut into blocks of the largest chunk limit and the last block is padded to
 * the smallest limit that holds it (pos -1: never written, masked). A block
 * whose logits are wanted on more than one row runs with every row out. */
static const float *forward_pkg(npl_runner *r, const int32_t *tokens, const int32_t *pos, int n,
                                const int32_t *out_rows, int n_out, char *err, size_t errlen) {
    int V = r->b->hp.n_vocab, block = r->limits[r->n_limits - 1];
    if (n_out > r->plogits_cap) {
        float *q = realloc(r->plogits, (size_t)n_out * (size_t)V * sizeof(float));
        if (!q) {
            npl_err_memory(err, errlen);
            return NULL;
        }
        r->plogits = q;
        r->plogits_cap = n_out;
    }
    for (int i = 0; i < n; i += block) {
        int m = n - i < block ? n - i : block, P = block, want = 0, only = -1;
        for (int k = 0; k < r->n_limits; k++)
            if (r->limits[k] >= m) {
                P = r->limits[k];
                break;
            }
        for (int k = 0; k < n_out; k++)
            if (out_rows[k] >= i && out_rows[k] < i + m) want++, only = out_rows[k] - i;
        for (int t = 0; t < P; t++) {
            r->ptok[t] = t < m ? tokens[i + t] : 0;
            r->ppos[t] = t < m ? pos[i + t] : -1;
        }
        int no = want > 1 ? P : 1;
        if (want > 1)
            for (int t = 0; t < P; t++) r->prows[t] = t;
        else
            r->prows[0] = want ? only : r->rows_skip ? -1 : m - 1;
        npl_shape s = {1, {P, 1, 1, 1}}, so = {1, {no, 1, 1, 1}};
        if (npl_graph_session_set_input_id(r->sess, r->mg.tokens, r->ptok, &s) ||
            npl_graph_session_set_input_id(r->sess, r->mg.pos, r->ppos, &s) ||
            npl_graph_session_set_input_id(r->sess, r->mg.out_rows, r->prows, &so) || npl_graph_session_run(r->sess)) {
            snprintf(err, errlen, "%s", npl_graph_session_error(r->sess));
            return NULL;
        }
        const float *lg = npl_graph_session_output(r->sess, 0)->data;
        for (int k = 0; k < n_out; k++) {
            if (out_rows[k] < i || out_rows[k] >= i + m) continue;
            int row = want > 1 ? out_rows[k] - i : 0;
            memcpy(r->plogits + (size_t)k * V, lg + (size_t)row * V, (size_t)V * sizeof(float));
        }
    }
    return r->plogits;
}

const float *npl_runner_forward_ex(npl_runner *r, const int32_t *tokens, const int32_t *pos, int n,
                                   const int32_t *out_rows, int n_out, char *err, size_t errlen) {
    if (n <= 0 || n_out <= 0 || n_out > n) {
        npl_errf(err, errlen, NPL_ERR_ARGUMENT, "forward: %d tokens, %d outputs", n, n_out);
        return NULL;
    }
    for (int i = 0; i < n; i++) {
        if (tokens[i] < 0 || tokens[i] >= r->b->hp.n_vocab) {
            npl_errf(err, errlen, NPL_ERR_ARGUMENT, "forward: token id %d out of range [0, %d)", tokens[i], r->b->hp.n_vocab);
            return NULL;
        }
        if (pos[i] >= r->mg.n_ctx) {
            npl_errf(err, errlen, NPL_ERR_ARGUMENT, "forward: position %d past the context of %d", pos[i], r->mg.n_ctx);
            return NULL;
        }
    }
    for (int i = 0; i < n_out; i++)
        if (out_rows[i] < 0 || out_rows[i] >= n) {
            npl_errf(err, errlen, NPL_ERR_ARGUMENT, "forward: output row %d out of range", out_rows[i]);
            return NULL;
        }
    base_lock(r->b); /* one forward at a time on the model's pool */
    if (r->is_pkg) {
        const float *lg = forward_pkg(r, tokens, pos, n, out_rows, n_out, err, errlen);
        base_unlock(r->b);
        return lg;
    }
    npl_shape s = {1, {n, 1, 1, 1}}, so = {1, {n_out, 1, 1, 1}};
    int rc = npl_graph_session_set_input_id(r->sess, r->mg.tokens, (void *)tokens, &s) ||
             npl_graph_session_set_input_id(r->sess, r->mg.pos, (void *)pos, &s) ||
             npl_graph_session_set_input_id(r->sess, r->mg.out_rows, (void *)out_rows, &so) ||
             npl_graph_session_run(r->sess);
    base_unlock(r->b);
    if (rc) {
        snprintf(err, errlen, "%s", npl_graph_session_error(r->sess));
        return NULL;
    }
    return npl_graph_session_output(r->sess, 0)->data;
}

const float *npl_runner_forward(npl_runner *r, const int32_t *tokens, int n, int pos0, int n_out, char *err,
                                size_t errlen) {
    if (n <= 0 || n_out <= 0 || n_out > n || pos0 < 0) {
        npl_errf(err, errlen, NPL_ERR_ARGUMENT, "forward: %d tokens at %d, %d outputs", n, pos0, n_out);
        return NULL;
    }
    if (grow(r, n)) {
        npl_err_memory(err, errlen);
        return NULL;
    }
    for (int i = 0; i < n; i++) r->pos_buf[i] = pos0 + i;
    for (int i = 0; i < n_out; i++) r->rows_buf[i] = n - n_out + i;
    return npl_runner_forward_ex(r, tokens, r->pos_buf, n, r->rows_buf, n_out, err, errlen);
}
