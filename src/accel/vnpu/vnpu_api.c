/* vnpu: the ABI table, handles, creation calls and the error model. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "accel/vnpu/vnpu.h"
#include "accel/vnpu/vnpu_convert.h"
#include "accel/vnpu/vnpu_exec.h"
#include "core/checked.h"
#include "kernels/vec_dot.h"

/* ---- small shared helpers ---- */

npl_accel_status vnpu_fail(struct npl_accel_backend *be, npl_accel_status st, const char *fmt, ...) {
    if (be) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(be->err, sizeof be->err, fmt, ap);
        va_end(ap);
    }
    return st;
}

static const char *const dtype_names[NPL_ACCEL_DT_COUNT] = {
    "f32", "f16", "bf16", "int8", "uint8", "int16", "int32", "q4_0", "q8_0",
    "q4_1", "q5_0", "q5_1", "q2_K", "q3_K", "q4_K", "q5_K", "q6_K"};
static const char *const kind_names[NPL_ACCEL_KIND_COUNT] = {"APP_WRITE", "APP_READ", "NATIVE", "STATIC",
                                                             "APP_READWRITE"};
static const char *const family_names[VNPU_FAM_COUNT] = {"generic", "avx2", "avx512", "amx"};

const char *vnpu_dtype_name(uint32_t dt) { return dt < NPL_ACCEL_DT_COUNT ? dtype_names[dt] : "?"; }
const char *vnpu_kind_name(uint32_t k) { return k < NPL_ACCEL_KIND_COUNT ? kind_names[k] : "?"; }
const char *vnpu_family_name(int fam) { return fam >= 0 && fam < VNPU_FAM_COUNT ? family_names[fam] : "?"; }

int vnpu_family_from_name(const char *s) {
    for (int i = 0; i < VNPU_FAM_COUNT; i++)
        if (!strcmp(s, family_names[i])) return i;
    return -1;
}

int vnpu_dtype_ggml(uint32_t dt) {
    switch (dt) {
    case NPL_ACCEL_DT_Q4_0: return NPL_TYPE_Q4_0;
    case NPL_ACCEL_DT_Q8_0: return NPL_TYPE_Q8_0;
    case NPL_ACCEL_DT_Q4_1: return NPL_TYPE_Q4_1;
    case NPL_ACCEL_DT_Q5_0: return NPL_TYPE_Q5_0;
    case NPL_ACCEL_DT_Q5_1: return NPL_TYPE_Q5_1;
    case NPL_ACCEL_DT_Q2_K: return NPL_TYPE_Q2_K;
    case NPL_ACCEL_DT_Q3_K: return NPL_TYPE_Q3_K;
    case NPL_ACCEL_DT_Q4_K: return NPL_TYPE_Q4_K;
    case NPL_ACCEL_DT_Q5_K: return NPL_TYPE_Q5_K;
    case NPL_ACCEL_DT_Q6_K: return NPL_TYPE_Q6_K;
    default: return -1;
    }
}

size_t vnpu_dtype_size(uint32_t dt) {
    switch (dt) {
    case NPL_ACCEL_DT_F32: case NPL_ACCEL_DT_INT32: return 4;
    case NPL_ACCEL_DT_F16: case NPL_ACCEL_DT_BF16: case NPL_ACCEL_DT_INT16: return 2;
    case NPL_ACCEL_DT_INT8: case NPL_ACCEL_DT_UINT8: return 1;
    default: return 0;
    }
}

int vnpu_tensor_nbytes(uint32_t dt, uint32_t rank, const int64_t *dims, size_t *out) {
    size_t n = 1;
    if (rank < 1 || rank > NPL_ACCEL_MAX_RANK) return 1;
    for (uint32_t i = 0; i < rank; i++)
        if (dims[i] <= 0 || npl_mul_size(n, (size_t)dims[i], &n)) return 1;
    const int gt = vnpu_dtype_ggml(dt);
    if (gt >= 0) { /* whole blocks along the contiguous dimension */
        const npl_type_traits *tr = npl_type_get(gt);
        if (dims[rank - 1] % tr->block_size) return 1;
        return npl_mul_size(n / (size_t)tr->block_size, tr->type_size, out);
    }
    if (dt >= NPL_ACCEL_DT_COUNT) return 1;
    return npl_mul_size(n, vnpu_dtype_size(dt), out);
}

void *vnpu_aligned_alloc(size_t size) {
    size_t sz;
    if (npl_align_size(size ? size : 1, VNPU_ALIGN, &sz)) return NULL;
    void *p = aligned_alloc(VNPU_ALIGN, sz);
    if (p) memset(p, 0, sz);
    return p;
}

/* Large zeroed buffers (KV caches, arenas) come straight from mmap: the
 * kernel's zero pages cost no resident memory until first written, so
 * opening a package stays small. A 64-byte header keeps the mapping size. */
#define BIG_HDR 64
#define BIG_MIN ((size_t)1 << 20)

void *vnpu_big_alloc(size_t size) {
    size_t sz;
    if (npl_align_size(size ? size : 1, VNPU_ALIGN, &sz)) return NULL;
    if (sz < BIG_MIN) {
        uint8_t *p = vnpu_aligned_alloc(sz + BIG_HDR);
        if (p) memset(p, 0, 8); /* mapping size 0: from malloc */
        return p ? p + BIG_HDR : NULL;
    }
    if (sz > SIZE_MAX - BIG_HDR) return NULL;
    uint8_t *p = mmap(NULL, sz + BIG_HDR, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return NULL;
    const size_t total = sz + BIG_HDR;
    memcpy(p, &total, sizeof total);
    return p + BIG_HDR;
}

void vnpu_big_free(void *ptr) {
    if (!ptr) return;
    uint8_t *p = (uint8_t *)ptr - BIG_HDR;
    size_t total;
    memcpy(&total, p, sizeof total);
    if (total) munmap(p, total);
    else free(p);
}

uint32_t vnpu_find_tensor(const struct npl_accel_context *ctx, const char *name) {
    for (uint32_t i = 0; i < ctx->n_t; i++)
        if (!strcmp(ctx->t[i].name, name)) return i;
    return VNPU_NONE;
}

int vnpu_pack_add(struct npl_accel_context *ctx, const vnpu_pack *p) {
    if (ctx->n_packs == ctx->cap_packs) {
        uint32_t cap = ctx->cap_packs ? ctx->cap_packs * 2 : 8;
        vnpu_pack *np = realloc(ctx->packs, cap * sizeof *np);
        if (!np) return -1;
        ctx->packs = np;
        ctx->cap_packs = cap;
    }
    ctx->packs[ctx->n_packs] = *p;
    return (int)ctx->n_packs++;
}

/* ---- option parsing ---- */

static npl_accel_status parse_backend_opts(const npl_accel_option *o, uint32_t n, int *family, int *threads,
                                           int *cpu_max, int *profile, char *err, size_t errlen) {
    for (uint32_t i = 0; i < n; i++) {
        const char *k = o[i].key, *v = o[i].value;
        if (!k || !v) {
            snprintf(err, errlen, "vnpu: option %u: key and value must not be NULL", i);
            return NPL_ACCEL_ERR_INVALID_ARG;
        }
        if (!strcmp(k, "kernel_family") || !strcmp(k, "cpu_max_family")) {
            int f = !strcmp(v, "auto") ? -1 : vnpu_family_from_name(v);
            if (f < 0 && strcmp(v, "auto")) {
                snprintf(err, errlen, "vnpu: option %s: '%s' is not auto, amx, avx512, avx2 or generic", k, v);
                return NPL_ACCEL_ERR_INVALID_ARG;
            }
            *(!strcmp(k, "kernel_family") ? family : cpu_max) = f;
        } else if (!strcmp(k, "threads")) {
            char *end;
            long t = strtol(v, &end, 10);
            if (*v == 0 || *end || t < 0 || t > 1024) {
                snprintf(err, errlen, "vnpu: option threads: '%s' is not an integer in [0, 1024]", v);
                return NPL_ACCEL_ERR_INVALID_ARG;
            }
            *threads = (int)t;
        } else if (!strcmp(k, "profile")) {
            if (strlen(v) != 1 || v[0] < '0' || v[0] > '3') {
                snprintf(err, errlen, "vnpu: option profile: '%s' is not 0, 1, 2 or 3", v);
                return NPL_ACCEL_ERR_INVALID_ARG;
            }
            *profile = v[0] - '0';
        } else {
            snprintf(err, errlen, "vnpu: unknown option '%s'", k);
            return NPL_ACCEL_ERR_INVALID_ARG;
        }
    }
    return NPL_ACCEL_OK;
}

static npl_accel_status no_options(struct npl_accel_backend *be, const npl_accel_option *o, uint32_t n,
                                   const char *what) {
    if (n && !o) return vnpu_fail(be, NPL_ACCEL_ERR_INVALID_ARG, "vnpu: %s: options is NULL", what);
    if (n) return vnpu_fail(be, NPL_ACCEL_ERR_INVALID_ARG, "vnpu: %s: unknown option '%s'", what,
                            o[0].key ? o[0].key : "(null)");
    return NPL_ACCEL_OK;
}

/* ---- backend / device ---- */

/* host NULL: the backend's own pool of `threads` threads; else the host's pool */
static npl_accel_status backend_new(const npl_accel_option *opts, uint32_t n_opts, const npl_accel_host_pool *host,
                                    npl_accel_backend **out, char *err, uint32_t errlen) {
    char e[256] = "";
    int family = -1, threads = -1, cpu_max = -1, profile = 0;
    if (!out) return NPL_ACCEL_ERR_INVALID_ARG;
    *out = NULL;
    npl_accel_status st = n_opts && !opts ? NPL_ACCEL_ERR_INVALID_ARG : NPL_ACCEL_OK;
    if (st) snprintf(e, sizeof e, "vnpu: options is NULL");
    if (!st) st = parse_backend_opts(opts, n_opts, &family, &threads, &cpu_max, &profile, e, sizeof e);
    if (!st && host && (!host->run || host->n_threads < 1 || host->n_threads > 1024)) {
        snprintf(e, sizeof e, "vnpu: host thread pool: run is NULL or n_threads %u is not in [1, 1024]", host->n_threads);
        st = NPL_ACCEL_ERR_INVALID_ARG;
    }
    if (!st && host && threads >= 0) {
        snprintf(e, sizeof e, "vnpu: option threads: not with a host thread pool (the host's pool sets the threads)");
        st = NPL_ACCEL_ERR_INVALID_ARG;
    }
#if defined(__x86_64__) || defined(__i386__)
    int cpu = (int)npl_cpu_best_isa();
#else
    int cpu = VNPU_FAM_GENERIC; /* vnpu's families are x86's */
#endif
    if (!st && cpu_max >= 0 && cpu_max < cpu) cpu = cpu_max;
    if (!st && family > cpu) {
        snprintf(e, sizeof e, "vnpu: kernel family '%s' requested but this CPU supports up to '%s'",
                 vnpu_family_name(family), vnpu_family_name(cpu));
        st = NPL_ACCEL_ERR_HW_UNSUPPORTED;
    }
    struct npl_accel_backend *be = NULL;
    if (!st && !(be = calloc(1, sizeof *be))) st = NPL_ACCEL_ERR_NO_MEMORY;
    if (!st && !(be->pool = host ? npl_pool_new_hosted((int)host->n_threads, host->run, host->pool)
                                 : npl_pool_new(threads < 0 ? 0 : threads)))
        st = NPL_ACCEL_ERR_NO_MEMORY;
    if (!st && profile && !(be->prof = vnpu_prof_new(profile))) st = NPL_ACCEL_ERR_NO_MEMORY;
    if (st) {
        if (be) npl_pool_free(be->pool);
        if (be) free(be);
        if (!e[0]) snprintf(e, sizeof e, "vnpu: out of memory creating the backend");
        if (err && errlen) snprintf(err, errlen, "%s", e);
        return st;
    }
    be->magic = VNPU_MAGIC_BACKEND;
    be->cpu_family = cpu;
    be->family = family < 0 ? cpu : family;
    be->n_threads = npl_pool_size(be->pool);
    be->nn = npl_nn_kernels_get((npl_isa)(be->family > VNPU_FAM_AVX512 ? VNPU_FAM_AVX512 : be->family));
    vnpu_mm_fill_generic(&be->mm[0]);
    for (int f = 1; f <= cpu; f++) {
        be->mm[f] = be->mm[f - 1];
        be->mm[f].isa = f; /* vnpu families are numbered like the CPU's ISAs */
#if defined(__x86_64__) || defined(__i386__)
        if (f == VNPU_FAM_AVX2) vnpu_mm_fill_avx2(&be->mm[f]);
        if (f == VNPU_FAM_AVX512) vnpu_mm_fill_avx512(&be->mm[f]);
        if (f == VNPU_FAM_AMX) vnpu_mm_fill_amx(&be->mm[f]);
#endif
    }
    *out = be;
    return NPL_ACCEL_OK;
}

static npl_accel_status backend_create(const npl_accel_option *opts, uint32_t n_opts, npl_accel_backend **out,
                                       char *err, uint32_t errlen) {
    return backend_new(opts, n_opts, NULL, out, err, errlen);
}

static npl_accel_status backend_create_on_pool(const npl_accel_option *opts, uint32_t n_opts,
                                               const npl_accel_host_pool *pool, npl_accel_backend **out, char *err,
                                               uint32_t errlen) {
    return backend_new(opts, n_opts, pool, out, err, errlen);
}

int vnpu_backend_ok(const npl_accel_backend *be) { return be && be->magic == VNPU_MAGIC_BACKEND; }
static int backend_ok(const npl_accel_backend *be) { return vnpu_backend_ok(be); }

static void backend_free(npl_accel_backend *be) {
    if (!backend_ok(be)) return;
    vnpu_prof_free(be->prof); /* prints the profile */
    npl_pool_free(be->pool);
    be->magic = 0;
    free(be);
}

static const char *last_error(const npl_accel_backend *be) { return backend_ok(be) ? be->err : "vnpu: invalid backend handle"; }

static npl_accel_status backend_get_info(npl_accel_backend *be, npl_accel_backend_info *out) {
    if (!backend_ok(be)) return NPL_ACCEL_ERR_INVALID_HANDLE;
    if (!out) return vnpu_fail(be, NPL_ACCEL_ERR_INVALID_ARG, "vnpu: backend_get_info: out is NULL");
    memset(out, 0, sizeof *out);
    out->name = "vnpu";
    snprintf(out->kernel_family, sizeof out->kernel_family, "%s", vnpu_family_name(be->family));
    size_t len = 0;
    for (int f = be->cpu_family; f >= 0; f--)
        len += (size_t)snprintf(out->available_families + len, sizeof out->available_families - len, "%s%s",
                                vnpu_family_name(f), f ? "," : "");
    out->n_threads = (uint32_t)be->n_threads;
    return NPL_ACCEL_OK;
}

static npl_accel_status device_create(npl_accel_backend *be, const npl_accel_option *opts, uint32_t n,
                                      npl_accel_device **out) {
    if (!backend_ok(be)) return NPL_ACCEL_ERR_INVALID_HANDLE;
    if (!out) return vnpu_fail(be, NPL_ACCEL_ERR_INVALID_ARG, "vnpu: device_create: out is NULL");
    *out = NULL;
    npl_accel_status st = no_options(be, opts, n, "device_create");
    if (st) return st;
    npl_accel_device *d = calloc(1, sizeof *d);
    if (!d) return vnpu_fail(be, NPL_ACCEL_ERR_NO_MEMORY, "vnpu: out of memory");
    d->magic = VNPU_MAGIC_DEVICE;
    d->be = be;
    *out = d;
    return NPL_ACCEL_OK;
}

static void device_free(npl_accel_device *d) {
    if (!d || d->magic != VNPU_MAGIC_DEVICE) return;
    d->magic = 0;
    free(d);
}

static npl_accel_status check_device(npl_accel_backend *be, npl_accel_device *dev) {
    if (dev && (dev->magic != VNPU_MAGIC_DEVICE || dev->be != be))
        return vnpu_fail(be, NPL_ACCEL_ERR_INVALID_HANDLE, "vnpu: device handle is not of this backend");
    return NPL_ACCEL_OK;
}

/* ---- context ---- */

npl_accel_status vnpu_context_new(struct npl_accel_backend *be, int family, struct npl_accel_context **out) {
    struct npl_accel_context *c = calloc(1, sizeof *c);
    if (!c) return vnpu_fail(be, NPL_ACCEL_ERR_NO_MEMORY, "vnpu: out of memory");
    c->magic = VNPU_MAGIC_CONTEXT;
    c->be = be;
    c->family = family;
    *out = c;
    return NPL_ACCEL_OK;
}

void vnpu_graph_release(vnpu_graph *g) {
    if (!g) return;
    for (uint32_t i = 0; i < g->n_nodes; i++) free(g->nodes[i].name);
    for (uint32_t i = 0; i < g->n_steps; i++) free(g->steps[i].name);
    free(g->nodes);
    free(g->steps);
    vnpu_big_free(g->arena);
    free(g->toff);
    free(g->addr);
    free(g->bound);
    for (int i = 0; i < 4; i++) free(g->rope_buf[i]);
    free(g->name);
    g->magic = 0;
    free(g);
}

void vnpu_context_release(struct npl_accel_context *c) {
    if (!c) return;
    for (uint32_t i = 0; i < c->n_g; i++) vnpu_graph_release(c->g[i]);
    for (uint32_t i = 0; i < c->n_t; i++) {
        vnpu_tensor *t = &c->t[i];
        free(t->name);
        free(t->q.scales);
        free(t->q.offsets);
        free(t->raw_owned);
        vnpu_big_free(t->rw);
    }
    for (uint32_t i = 0; i < c->n_packs; i++) free(c->packs[i].owned);
    free(c->packs);
    free(c->t);
    free(c->g);
    c->magic = 0;
    free(c);
}

static npl_accel_status context_create(npl_accel_backend *be, npl_accel_device *dev, const npl_accel_option *opts,
                                       uint32_t n, npl_accel_context **out) {
    if (!backend_ok(be)) return NPL_ACCEL_ERR_INVALID_HANDLE;
    if (!out) return vnpu_fail(be, NPL_ACCEL_ERR_INVALID_ARG, "vnpu: context_create: out is NULL");
    *out = NULL;
    npl_accel_status st = check_device(be, dev);
    if (!st) st = no_options(be, opts, n, "context_create");
    if (!st) st = vnpu_context_new(be, be->family, out);
    return st;
}

static int ctx_ok(const npl_accel_context *c) { return c && c->magic == VNPU_MAGIC_CONTEXT && backend_ok(c->be); }

static npl_accel_status context_free(npl_accel_context *c) {
    if (!ctx_ok(c)) return NPL_ACCEL_ERR_INVALID_HANDLE;
    vnpu_context_release(c);
    return NPL_ACCEL_OK;
}

/* ---- graphs ---- */

npl_accel_status vnpu_graph_new(struct npl_accel_context *ctx, const char *name, vnpu_graph **out) {
    struct npl_accel_backend *be = ctx->be;
    for (uint32_t i = 0; i < ctx->n_g; i++)
        if (!strcmp(ctx->g[i]->name, name))
            return vnpu_fail(be, NPL_ACCEL_ERR_DUPLICATE_NAME, "vnpu: graph '%s' already exists in the context", name);
    if (ctx->n_g == ctx->cap_g) {
        uint32_t cap = ctx->cap_g ? ctx->cap_g * 2 : 4;
        vnpu_graph **ng = realloc(ctx->g, cap * sizeof *ng);
        if (!ng) return vnpu_fail(be, NPL_ACCEL_ERR_NO_MEMORY, "vnpu: out of memory");
        ctx->g = ng;
        ctx->cap_g = cap;
    }
    vnpu_graph *g = calloc(1, sizeof *g);
    if (!g || !(g->name = strdup(name))) {
        free(g);
        return vnpu_fail(be, NPL_ACCEL_ERR_NO_MEMORY, "vnpu: out of memory");
    }
    g->magic = VNPU_MAGIC_GRAPH;
    g->ctx = ctx;
    g->sel_in = VNPU_NONE;
    g->index = (int32_t)ctx->n_g;
    ctx->g[ctx->n_g++] = g;
    *out = g;
    return NPL_ACCEL_OK;
}

static npl_accel_status graph_create(npl_accel_context *ctx, const char *name, npl_accel_graph **out) {
    if (!ctx_ok(ctx)) return NPL_ACCEL_ERR_INVALID_HANDLE;
    if (!out || !name || !*name)
        return vnpu_fail(ctx->be, NPL_ACCEL_ERR_INVALID_ARG, "vnpu: graph_create: name and out must be given");
    *out = NULL;
    if (ctx->from_binary)
        return vnpu_fail(ctx->be, NPL_ACCEL_ERR_STATE, "vnpu: graph_create: a context from a binary is immutable");
    return vnpu_graph_new(ctx, name, out);
}

static int graph_ok(const npl_accel_graph *g) { return g && g->magic == VNPU_MAGIC_GRAPH && ctx_ok(g->ctx); }

static npl_accel_status graph_retrieve(npl_accel_context *ctx, const char *name, npl_accel_graph **out) {
    if (!ctx_ok(ctx)) return NPL_ACCEL_ERR_INVALID_HANDLE;
    if (!out || !name) return vnpu_fail(ctx->be, NPL_ACCEL_ERR_INVALID_ARG, "vnpu: graph_retrieve: NULL argument");
    *out = NULL;
    for (uint32_t i = 0; i < ctx->n_g; i++)
        if (!strcmp(ctx->g[i]->name, name)) {
            *out = ctx->g[i];
            return NPL_ACCEL_OK;
        }
    return vnpu_fail(ctx->be, NPL_ACCEL_ERR_NOT_FOUND, "vnpu: no graph '%s' in the context", name);
}

/* ---- tensors ---- */

npl_accel_status vnpu_quant_copy(struct npl_accel_backend *be, vnpu_quant *dst, const npl_accel_quant *q,
                                 uint32_t dtype, uint32_t rank, const int64_t *dims, const char *tname) {
    memset(dst, 0, sizeof *dst);
    if (q->encoding == NPL_ACCEL_QUANT_NONE) return NPL_ACCEL_OK;
    if (q->encoding == NPL_ACCEL_QUANT_DYNAMIC) return vnpu_dyn_quant(be, dst, q, dtype, rank, dims, tname);
    if (q->encoding > NPL_ACCEL_QUANT_PER_BLOCK)
        return vnpu_fail(be, NPL_ACCEL_ERR_INVALID_ARG, "vnpu: tensor '%s': unknown quant encoding %u", tname, q->encoding);
    if (dtype != NPL_ACCEL_DT_INT8 && dtype != NPL_ACCEL_DT_UINT8 && dtype != NPL_ACCEL_DT_INT16 &&
        dtype != NPL_ACCEL_DT_INT32)
        return vnpu_fail(be, NPL_ACCEL_ERR_TYPE_MISMATCH, "vnpu: tensor '%s': quant params on a %s tensor", tname,
                         vnpu_dtype_name(dtype));
    uint64_t want = 1;
    if (q->encoding != NPL_ACCEL_QUANT_PER_TENSOR) {
        if (q->axis < 0 || (uint32_t)q->axis >= rank)
            return vnpu_fail(be, NPL_ACCEL_ERR_INVALID_ARG, "vnpu: tensor '%s': quant axis %d out of range", tname, q->axis);
        want = (uint64_t)dims[q->axis];
    }
    if (q->encoding == NPL_ACCEL_QUANT_PER_BLOCK) {
        int64_t other = rank == 2 ? dims[1 - q->axis] : 0;
        if (rank != 2 || q->block_size == 0 || other % q->block_size)
            return vnpu_fail(be, NPL_ACCEL_ERR_INVALID_ARG,
                             "vnpu: tensor '%s': per-block quant needs rank 2 and a block size dividing the "
                             "non-channel dimension", tname);
        want *= (uint64_t)(other / q->block_size);
    }
    if (q->n_scales != want || !q->scales)
        return vnpu_fail(be, NPL_ACCEL_ERR_INVALID_ARG, "vnpu: tensor '%s': %u quant scales given, %llu expected",
                         tname, q->n_scales, (unsigned long long)want);
    for (uint32_t i = 0; i < q->n_scales; i++)
        if (!isfinite(q->scales[i]))
            return vnpu_fail(be, NPL_ACCEL_ERR_INVALID_ARG, "vnpu: tensor '%s': quant scale %u is not finite", tname, i);
    dst->enc = q->encoding;
    dst->axis = q->encoding == NPL_ACCEL_QUANT_PER_TENSOR ? 0 : q->axis;
    dst->block = q->encoding == NPL_ACCEL_QUANT_PER_BLOCK ? q->block_size : 0;
    dst->n = q->n_scales;
    dst->scales = malloc(want * sizeof(float));
    if (q->offsets) dst->offsets = malloc(want * sizeof(int32_t));
    if (!dst->scales || (q->offsets && !dst->offsets)) {
        free(dst->scales);
        free(dst->offsets);
        memset(dst, 0, sizeof *dst);
        return vnpu_fail(be, NPL_ACCEL_ERR_NO_MEMORY, "vnpu: out of memory");
    }
    memcpy(dst->scales, q->scales, want * sizeof(float));
    if (q->offsets) memcpy(dst->offsets, q->offsets, want * sizeof(int32_t));
    return NPL_ACCEL_OK;
}

static int quant_equal(const vnpu_quant *a, const vnpu_quant *b) {
    if (a->enc != b->enc || a->axis != b->axis || a->block != b->block || a->n != b->n) return 0;
    if (a->n && memcmp(a->scales, b->scales, a->n * sizeof(float))) return 0;
    if (!a->offsets != !b->offsets) return 0;
    return !a->offsets || !memcmp(a->offsets, b->offsets, a->n * sizeof(int32_t));
}

/* The checks of one tensor description (kind, type, shape, quant params
 * and, with_data, STATIC bytes): dims, byte size and a copy of the quant
 * params (the caller frees scales / offsets) on success. */
npl_accel_status vnpu_desc_check(struct npl_accel_backend *be, const npl_accel_tensor_desc *d, const char *nm,
                                 int with_data, int64_t *dims, size_t *nbytes, vnpu_quant *q) {
    if (d->kind >= NPL_ACCEL_KIND_COUNT)
        return vnpu_fail(be, NPL_ACCEL_ERR_INVALID_ARG, "vnpu: tensor '%s': unknown kind %u", nm, d->kind);
    if (d->dtype >= NPL_ACCEL_DT_COUNT)
        return vnpu_fail(be, NPL_ACCEL_ERR_INVALID_ARG, "vnpu: tensor '%s': unknown data type %u", nm, d->dtype);
    memset(dims, 0, NPL_ACCEL_MAX_RANK * sizeof dims[0]);
    memset(q, 0, sizeof *q);
    for (uint32_t i = 0; i < d->rank && i < NPL_ACCEL_MAX_RANK; i++) dims[i] = d->dims[i];
    if (vnpu_tensor_nbytes(d->dtype, d->rank, dims, nbytes) || *nbytes > ((size_t)1 << 40))
        return vnpu_fail(be, NPL_ACCEL_ERR_SHAPE_MISMATCH, "vnpu: tensor '%s': rank %u with these dims is invalid for "
                         "%s (rank 1..%d, dims > 0, block types need a last dim multiple of their block)", nm, d->rank,
                         vnpu_dtype_name(d->dtype), NPL_ACCEL_MAX_RANK);
    if (vnpu_dtype_ggml(d->dtype) >= 0 && d->kind != NPL_ACCEL_STATIC)
        return vnpu_fail(be, NPL_ACCEL_ERR_TYPE_MISMATCH, "vnpu: tensor '%s': %s is for STATIC weights only", nm,
                         vnpu_dtype_name(d->dtype));
    if (with_data && d->kind == NPL_ACCEL_STATIC && (!d->data || d->data_size != *nbytes))
        return vnpu_fail(be, NPL_ACCEL_ERR_INVALID_ARG, "vnpu: tensor '%s': STATIC data of %llu bytes given, %zu "
                         "expected", nm, (unsigned long long)d->data_size, *nbytes);
    if (with_data && d->kind != NPL_ACCEL_STATIC && (d->data || d->data_size))
        return vnpu_fail(be, NPL_ACCEL_ERR_INVALID_ARG, "vnpu: tensor '%s': data given for a %s tensor", nm,
                         vnpu_kind_name(d->kind));
    npl_accel_status st = vnpu_quant_copy(be, q, &d->quant, d->dtype, d->rank, dims, nm);
    if (!st && q->enc == NPL_ACCEL_QUANT_DYNAMIC) st = vnpu_dyn_tensor(be, d->kind, q, d->rank, dims, nbytes, nm);
    if (st) {
        free(q->scales);
        free(q->offsets);
        memset(q, 0, sizeof *q);
    }
    return st;
}

static npl_accel_status tensor_add(npl_accel_context *ctx, vnpu_graph *g, const npl_accel_tensor_desc *d,
                                   npl_accel_tensor_id *out) {
    struct npl_accel_backend *be = ctx->be;
    if (!d || !out) return vnpu_fail(be, NPL_ACCEL_ERR_INVALID_ARG, "vnpu: tensor_create: NULL argument");
    const char *nm = d->name;
    if (!nm || !*nm) return vnpu_fail(be, NPL_ACCEL_ERR_INVALID_ARG, "vnpu: tensor_create: a tensor needs a name");
    if (ctx->from_binary)
        return vnpu_fail(be, NPL_ACCEL_ERR_STATE, "vnpu: tensor '%s': a context from a binary is immutable", nm);
    if (g && g->finalized)
        return vnpu_fail(be, NPL_ACCEL_ERR_STATE, "vnpu: tensor '%s': graph '%s' is already finalized", nm, g->name);
    if (d->kind < NPL_ACCEL_KIND_COUNT && !g && d->kind != NPL_ACCEL_STATIC && d->kind != NPL_ACCEL_APP_READWRITE)
        return vnpu_fail(be, NPL_ACCEL_ERR_INVALID_ARG, "vnpu: tensor '%s': a context tensor must be STATIC or "
                         "APP_READWRITE, not %s", nm, vnpu_kind_name(d->kind));
    int64_t dims[NPL_ACCEL_MAX_RANK];
    size_t nbytes;
    vnpu_quant q;
    npl_accel_status st = vnpu_desc_check(be, d, nm, 1, dims, &nbytes, &q);
    if (st) return st;
    uint32_t prev = vnpu_find_tensor(ctx, nm);
    if (prev != VNPU_NONE) {
        const vnpu_tensor *p = &ctx->t[prev];
        int same = (d->kind == NPL_ACCEL_STATIC || d->kind == NPL_ACCEL_APP_READWRITE) && p->kind == d->kind &&
                   p->dtype == d->dtype && p->rank == d->rank && !memcmp(p->dims, dims, sizeof dims) &&
                   quant_equal(&p->q, &q) && (d->kind != NPL_ACCEL_STATIC || !memcmp(p->raw, d->data, nbytes));
        free(q.scales);
        free(q.offsets);
        if (!same)
            return vnpu_fail(be, NPL_ACCEL_ERR_DUPLICATE_NAME, "vnpu: tensor '%s' already exists in the context (%s "
                             "%s); only identical STATIC / APP_READWRITE tensors are shared", nm,
                             vnpu_kind_name(p->kind), vnpu_dtype_name(p->dtype));
        *out = prev;
        return NPL_ACCEL_OK;
    }
    if (ctx->n_t == ctx->cap_t) {
        uint32_t cap = ctx->cap_t ? ctx->cap_t * 2 : 16;
        vnpu_tensor *nt = realloc(ctx->t, cap * sizeof *nt);
        if (!nt) st = NPL_ACCEL_ERR_NO_MEMORY;
        else {
            ctx->t = nt;
            ctx->cap_t = cap;
        }
    }
    vnpu_tensor t;
    memset(&t, 0, sizeof t);
    if (!st && !(t.name = strdup(nm))) st = NPL_ACCEL_ERR_NO_MEMORY;
    if (!st && d->kind == NPL_ACCEL_STATIC) {
        if (!(t.raw_owned = malloc(nbytes))) st = NPL_ACCEL_ERR_NO_MEMORY;
        else memcpy(t.raw_owned, d->data, nbytes);
        t.raw = t.raw_owned;
    }
    if (!st && d->kind == NPL_ACCEL_APP_READWRITE && !(t.rw = vnpu_big_alloc(nbytes))) st = NPL_ACCEL_ERR_NO_MEMORY;
    if (st) {
        free(t.name);
        free(t.raw_owned);
        free(q.scales);
        free(q.offsets);
        return vnpu_fail(be, st, "vnpu: out of memory creating tensor '%s'", nm);
    }
    t.kind = d->kind;
    t.dtype = d->dtype;
    t.rank = d->rank;
    memcpy(t.dims, dims, sizeof dims);
    t.nelem = 1;
    for (uint32_t i = 0; i < d->rank; i++) t.nelem *= dims[i];
    t.nbytes = nbytes;
    t.q = q;
    t.graph = (d->kind == NPL_ACCEL_STATIC || d->kind == NPL_ACCEL_APP_READWRITE || !g) ? -1 : g->index;
    ctx->t[ctx->n_t] = t;
    *out = ctx->n_t++;
    return NPL_ACCEL_OK;
}

static npl_accel_status tensor_create(npl_accel_graph *g, const npl_accel_tensor_desc *d, npl_accel_tensor_id *out) {
    if (!graph_ok(g)) return NPL_ACCEL_ERR_INVALID_HANDLE;
    return tensor_add(g->ctx, g, d, out);
}

static npl_accel_status context_tensor_create(npl_accel_context *ctx, const npl_accel_tensor_desc *d,
                                              npl_accel_tensor_id *out) {
    if (!ctx_ok(ctx)) return NPL_ACCEL_ERR_INVALID_HANDLE;
    return tensor_add(ctx, NULL, d, out);
}

static npl_accel_status context_tensor_data(npl_accel_context *ctx, const char *name, void **data, uint64_t *size) {
    if (!ctx_ok(ctx)) return NPL_ACCEL_ERR_INVALID_HANDLE;
    if (!name || !data || !size)
        return vnpu_fail(ctx->be, NPL_ACCEL_ERR_INVALID_ARG, "vnpu: context_tensor_data: NULL argument");
    uint32_t id = vnpu_find_tensor(ctx, name);
    if (id == VNPU_NONE || ctx->t[id].kind != NPL_ACCEL_APP_READWRITE)
        return vnpu_fail(ctx->be, NPL_ACCEL_ERR_NOT_FOUND, "vnpu: no APP_READWRITE tensor '%s' in the context", name);
    *data = ctx->t[id].rw;
    *size = ctx->t[id].nbytes;
    return NPL_ACCEL_OK;
}

/* ---- nodes ---- */

static npl_accel_status graph_add_node(npl_accel_graph *g, const npl_accel_node_desc *d) {
    if (!graph_ok(g)) return NPL_ACCEL_ERR_INVALID_HANDLE;
    struct npl_accel_context *ctx = g->ctx;
    struct npl_accel_backend *be = ctx->be;
    if (!d || !d->op) return vnpu_fail(be, NPL_ACCEL_ERR_INVALID_ARG, "vnpu: add_node: NULL node or op");
    char where[160];
    snprintf(where, sizeof where, "graph '%s': node '%s' (%s)", g->name, d->name ? d->name : "?", d->op);
    if (g->finalized || ctx->from_binary)
        return vnpu_fail(be, NPL_ACCEL_ERR_STATE, "vnpu: %s: the graph is finalized", where);
    vnpu_node n;
    npl_accel_status st = vnpu_node_begin(be, d, where, &n);
    if (st) return st;
    if ((d->n_inputs && !d->inputs) || (d->n_outputs && !d->outputs))
        return vnpu_fail(be, NPL_ACCEL_ERR_SHAPE_MISMATCH, "vnpu: %s: %u inputs and %u outputs but a NULL id list",
                         where, d->n_inputs, d->n_outputs);
    for (uint32_t i = 0; i < d->n_inputs + d->n_outputs; i++) {
        uint32_t id = i < d->n_inputs ? d->inputs[i] : d->outputs[i - d->n_inputs];
        if (id >= ctx->n_t)
            return vnpu_fail(be, NPL_ACCEL_ERR_INVALID_ARG, "vnpu: %s: tensor id %u does not exist", where, id);
        const vnpu_tensor *t = &ctx->t[id];
        if (t->graph >= 0 && t->graph != g->index)
            return vnpu_fail(be, NPL_ACCEL_ERR_INVALID_ARG, "vnpu: %s: tensor '%s' belongs to graph '%s'", where,
                             t->name, ctx->g[t->graph]->name);
        if (i >= d->n_inputs && (st = vnpu_check_output_kind(be, where, t->name, t->kind))) return st;
        if (i < d->n_inputs) n.in[i] = id;
        else n.out[i - d->n_inputs] = id;
    }
    if ((st = vnpu_node_end(be, ctx, &n, d, where))) return st;
    if (g->n_nodes == g->cap_nodes) {
        uint32_t cap = g->cap_nodes ? g->cap_nodes * 2 : 16;
        vnpu_node *nn = realloc(g->nodes, cap * sizeof *nn);
        if (!nn) return vnpu_fail(be, NPL_ACCEL_ERR_NO_MEMORY, "vnpu: out of memory");
        g->nodes = nn;
        g->cap_nodes = cap;
    }
    if (d->name && !(n.name = strdup(d->name))) return vnpu_fail(be, NPL_ACCEL_ERR_NO_MEMORY, "vnpu: out of memory");
    g->nodes[g->n_nodes++] = n;
    return NPL_ACCEL_OK;
}

/* ---- finalize / execute / profile / binary entry points ---- */

static npl_accel_status graph_finalize(npl_accel_graph *g) {
    if (!graph_ok(g)) return NPL_ACCEL_ERR_INVALID_HANDLE;
    if (g->finalized)
        return vnpu_fail(g->ctx->be, NPL_ACCEL_ERR_STATE, "vnpu: graph '%s' is already finalized", g->name);
    return vnpu_finalize(g);
}

static npl_accel_status graph_execute(npl_accel_graph *g, const npl_accel_buffer *in, uint32_t n_in,
                                      const npl_accel_buffer *out, uint32_t n_out) {
    if (!graph_ok(g)) return NPL_ACCEL_ERR_INVALID_HANDLE;
    if (!g->finalized)
        return vnpu_fail(g->ctx->be, NPL_ACCEL_ERR_STATE, "vnpu: graph '%s': execute before finalize", g->name);
    if ((n_in && !in) || (n_out && !out))
        return vnpu_fail(g->ctx->be, NPL_ACCEL_ERR_INVALID_ARG, "vnpu: graph '%s': NULL buffer list", g->name);
    return vnpu_execute(g, in, n_in, out, n_out);
}

static npl_accel_status graph_get_profile(npl_accel_graph *g, npl_accel_profile *p) {
    if (!graph_ok(g)) return NPL_ACCEL_ERR_INVALID_HANDLE;
    if (!p) return vnpu_fail(g->ctx->be, NPL_ACCEL_ERR_INVALID_ARG, "vnpu: graph_get_profile: out is NULL");
    memset(p, 0, sizeof *p);
    p->executions = g->prof.executions;
    p->total_ns = g->prof.total_ns;
    p->last_ns = g->prof.last_ns;
    p->min_ns = g->prof.min_ns;
    p->max_ns = g->prof.max_ns;
    p->finalize_ns = g->prof.finalize_ns;
    p->arena_bytes = g->arena_size;
    for (uint32_t i = 0; i < g->n_steps; i++) {
        int32_t pk = g->steps[i].pack;
        if (pk < 0) continue;
        const vnpu_pack *pp = &g->ctx->packs[pk];
        p->static_bytes += pp->fmt == VNPU_PK_GGML /* blocks used in place */
                               ? g->ctx->t[pp->w[0]].nbytes + (pp->n_parts == 2 ? g->ctx->t[pp->w[1]].nbytes : 0)
                               : pp->size;
    }
    p->n_nodes = g->n_added;
    p->n_compiled = g->n_steps;
    snprintf(p->kernel_family, sizeof p->kernel_family, "%s", vnpu_family_name(g->ctx->family));
    snprintf(p->detail, sizeof p->detail, "%s", g->detail);
    return NPL_ACCEL_OK;
}

static npl_accel_status context_get_binary_size(npl_accel_context *ctx, uint64_t *size) {
    if (!ctx_ok(ctx)) return NPL_ACCEL_ERR_INVALID_HANDLE;
    if (!size) return vnpu_fail(ctx->be, NPL_ACCEL_ERR_INVALID_ARG, "vnpu: get_binary_size: size is NULL");
    return vnpu_binary_size(ctx, size);
}

static npl_accel_status context_get_binary(npl_accel_context *ctx, void *buf, uint64_t cap, uint64_t *written) {
    if (!ctx_ok(ctx)) return NPL_ACCEL_ERR_INVALID_HANDLE;
    if (!buf || !written) return vnpu_fail(ctx->be, NPL_ACCEL_ERR_INVALID_ARG, "vnpu: get_binary: NULL argument");
    return vnpu_binary_write(ctx, buf, cap, written);
}

static npl_accel_status context_create_from_binary(npl_accel_backend *be, npl_accel_device *dev,
                                                   const npl_accel_option *opts, uint32_t n, const void *bin,
                                                   uint64_t size, npl_accel_context **out) {
    if (!backend_ok(be)) return NPL_ACCEL_ERR_INVALID_HANDLE;
    if (!out) return vnpu_fail(be, NPL_ACCEL_ERR_INVALID_ARG, "vnpu: create_from_binary: out is NULL");
    *out = NULL;
    npl_accel_status st = check_device(be, dev);
    if (!st) st = no_options(be, opts, n, "create_from_binary");
    if (!st && !bin) st = vnpu_fail(be, NPL_ACCEL_ERR_INVALID_ARG, "vnpu: create_from_binary: binary is NULL");
    if (!st) st = vnpu_binary_load(be, bin, size, out);
    return st;
}

static npl_accel_status binary_info_get(npl_accel_backend *be, const void *bin, uint64_t size,
                                        npl_accel_binary_info **out) {
    if (!backend_ok(be)) return NPL_ACCEL_ERR_INVALID_HANDLE;
    if (!bin || !out) return vnpu_fail(be, NPL_ACCEL_ERR_INVALID_ARG, "vnpu: binary_info_get: NULL argument");
    *out = NULL;
    return vnpu_binary_info(be, bin, size, out);
}

static void binary_info_free(npl_accel_backend *be, npl_accel_binary_info *info) {
    (void)be;
    vnpu_binary_info_free(info);
}

static const npl_accel_api vnpu_api = {
    .abi_version = NPL_ACCEL_ABI_VERSION,
    .struct_size = sizeof(npl_accel_api),
    .name = "vnpu",
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
    .context_get_binary_size = context_get_binary_size,
    .context_get_binary = context_get_binary,
    .context_create_from_binary = context_create_from_binary,
    .binary_info_get = binary_info_get,
    .binary_info_free = binary_info_free,
    .context_tensor_data = context_tensor_data,
    .validate_node = vnpu_validate_node,
    .list_ops = vnpu_list_ops,
    .backend_create_on_pool = backend_create_on_pool,
};

const npl_accel_api *npl_vnpu_get_api(uint32_t requested_version) {
    return requested_version >= 1 && requested_version <= NPL_ACCEL_ABI_VERSION ? &vnpu_api : NULL;
}
