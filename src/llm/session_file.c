/* Session files (npl_session_save / npl_session_load): the history's tokens
 * and their K/V rows in a GGUF file.
 *
 *   npullm.session.version       u32   1
 *   npullm.session.model_digest  u64   FNV-1a of the model file's header (metadata
 *                                      and tensor table: bytes before the data section)
 *   npullm.session.arch          str   general.architecture (for the messages)
 *   npullm.session.n_ctx         u32   the session's context size
 *   npullm.session.tokens        i32[] the history, n_past ids
 *   npullm.session.checksum      u64   FNV-1a over the tokens, then every tensor's bytes in order
 *   kcache.L / vcache.L          f16   [row, n_past]: the cache rows of layer L
 *
 * load checks everything (the reader checks the file's structure, then the
 * keys, shapes and checksum here) before it touches the session. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/dtype.h"
#include "llm/session_impl.h"

#define SESSION_VERSION 1u

static uint64_t fnv1a(uint64_t h, const void *p, size_t n) {
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++) {
        h ^= b[i];
        h *= 0x100000001b3ull;
    }
    return h;
}
#define FNV_INIT 0xcbf29ce484222325ull

static uint64_t model_digest(const npl_model *m) {
    return fnv1a(FNV_INIT, npl_gguf_base(m->g), npl_gguf_data_offset(m->g));
}

npl_status npl_session_save(npl_session *s, const char *path) {
    if (!s) return NPL_ERR_ARGUMENT;
    npl_status_clear();
    s->err[0] = 0;
    s->status = NPL_OK;
    if (!path) return npl_sess_fail(s, NPL_ERR_ARGUMENT, "save: no path");
    if (!npl_runner_kv(s->r, 0, 0, NULL))
        return npl_sess_fail(s, NPL_ERR_ARGUMENT, "save: %s: a package's cache is the accelerator's: not saved", s->m->path);
    if (s->n_past < 1) return npl_sess_fail(s, NPL_ERR_ARGUMENT, "save: the session holds no tokens");
    const int n_layer = s->m->hp.n_layer, n = s->n_past;
    npl_gguf_writer *w = npl_gguf_writer_new();
    if (!w) return npl_sess_fail(s, NPL_ERR_MEMORY, "out of memory");
    uint64_t sum = fnv1a(FNV_INIT, s->hist, sizeof(int32_t) * (size_t)n);
    int rc = npl_gguf_writer_set_u32(w, "npullm.session.version", SESSION_VERSION) ||
             npl_gguf_writer_set_u64(w, "npullm.session.model_digest", model_digest(s->m)) ||
             npl_gguf_writer_set_str(w, "npullm.session.arch", s->m->hp.arch_name) ||
             npl_gguf_writer_set_u32(w, "npullm.session.n_ctx", (uint32_t)s->n_ctx) ||
             npl_gguf_writer_set_arr(w, "npullm.session.tokens", NPL_GGUF_INT32, s->hist, (uint64_t)n);
    for (int l = 0; l < n_layer && !rc; l++)
        for (int v = 0; v < 2 && !rc; v++) {
            size_t row;
            const uint16_t *kv = npl_runner_kv(s->r, l, v, &row);
            char name[32];
            snprintf(name, sizeof name, "%ccache.%d", v ? 'v' : 'k', l);
            int64_t ne[2] = {(int64_t)(row / sizeof(uint16_t)), n};
            sum = fnv1a(sum, kv, row * (size_t)n);
            rc = npl_gguf_writer_add_tensor(w, name, NPL_TYPE_F16, 2, ne, kv, row * (size_t)n);
        }
    if (!rc) rc = npl_gguf_writer_set_u64(w, "npullm.session.checksum", sum);
    if (rc) {
        npl_gguf_writer_free(w);
        return npl_sess_fail(s, NPL_ERR_MEMORY, "save: out of memory");
    }
    char err[512];
    if (npl_gguf_writer_write(w, path, err, sizeof err)) {
        npl_gguf_writer_free(w);
        return npl_sess_fail_from(s, NPL_ERR_FILE, err);
    }
    npl_gguf_writer_free(w);
    return NPL_OK;
}

npl_status npl_session_load(npl_session *s, const char *path) {
    if (!s) return NPL_ERR_ARGUMENT;
    npl_status_clear();
    s->err[0] = 0;
    s->status = NPL_OK;
    if (!path) return npl_sess_fail(s, NPL_ERR_ARGUMENT, "load: no path");
    if (!npl_runner_kv(s->r, 0, 0, NULL))
        return npl_sess_fail(s, NPL_ERR_ARGUMENT, "load: %s: a package's cache is the accelerator's: not loaded", s->m->path);
    char err[512];
    npl_gguf *g = npl_gguf_open(path, NULL, err, sizeof err);
    if (!g) return npl_sess_fail_from(s, NPL_ERR_FILE, err);
    npl_status st = NPL_ERR_FILE;
#define BAD(...)                                                                                                     \
    do {                                                                                                             \
        npl_sess_fail(s, st, __VA_ARGS__);                                                                           \
        goto done;                                                                                                   \
    } while (0)
    uint32_t version = 0, n_ctx = 0;
    int64_t digest = 0, sum = 0;
    if (npl_gguf_get_u32(g, "npullm.session.version", &version))
        BAD("%s: npullm.session.version: missing: not a session file", path);
    if (version != SESSION_VERSION) BAD("%s: npullm.session.version %u: this build reads %u", path, version, SESSION_VERSION);
    int64_t kd = npl_gguf_find_key(g, "npullm.session.model_digest"), kc = npl_gguf_find_key(g, "npullm.session.checksum");
    if (kd < 0 || npl_gguf_kv_type(g, kd) != NPL_GGUF_UINT64 || kc < 0 || npl_gguf_kv_type(g, kc) != NPL_GGUF_UINT64)
        BAD("%s: npullm.session.model_digest / checksum: missing or not u64", path);
    memcpy(&digest, npl_gguf_kv_data(g, kd), 8);
    memcpy(&sum, npl_gguf_kv_data(g, kc), 8);
    npl_gguf_str arch = {"?", 1};
    npl_gguf_get_str(g, "npullm.session.arch", &arch);
    if ((uint64_t)digest != model_digest(s->m)) {
        st = NPL_ERR_ARGUMENT;
        BAD("%s: made for another model (%.*s, digest %016llx), not %s (%s, digest %016llx)", path, (int)arch.len,
            arch.ptr, (unsigned long long)digest, s->m->path, s->m->hp.arch_name,
            (unsigned long long)model_digest(s->m));
    }
    if (npl_gguf_get_u32(g, "npullm.session.n_ctx", &n_ctx)) BAD("%s: npullm.session.n_ctx: missing", path);
    if ((int)n_ctx != s->n_ctx) {
        st = NPL_ERR_ARGUMENT;
        BAD("%s: made for a context of %u, this session has %d", path, n_ctx, s->n_ctx);
    }
    int64_t kt = npl_gguf_find_key(g, "npullm.session.tokens");
    if (kt < 0 || npl_gguf_kv_type(g, kt) != NPL_GGUF_ARRAY || npl_gguf_arr_type(g, kt) != NPL_GGUF_INT32)
        BAD("%s: npullm.session.tokens: missing or not an i32 array", path);
    uint64_t n = npl_gguf_arr_n(g, kt);
    if (n < 1 || n > n_ctx) BAD("%s: npullm.session.tokens: %llu tokens for a context of %u", path, (unsigned long long)n, n_ctx);
    const int32_t *ids = npl_gguf_arr_data(g, kt);
    for (uint64_t i = 0; i < n; i++) {
        int32_t id;
        memcpy(&id, ids + i, 4);
        if (id < 0 || id >= s->n_vocab) BAD("%s: npullm.session.tokens[%llu] = %d out of [0, %d)", path, (unsigned long long)i, id, s->n_vocab);
    }
    uint64_t mine = fnv1a(FNV_INIT, ids, 4 * (size_t)n);
    const int n_layer = s->m->hp.n_layer;
    if (npl_gguf_n_tensors(g) != 2 * n_layer)
        BAD("%s: %lld tensors, the model has %d layers (2 each)", path, (long long)npl_gguf_n_tensors(g), n_layer);
    for (int l = 0; l < n_layer; l++)
        for (int v = 0; v < 2; v++) {
            size_t row;
            npl_runner_kv(s->r, l, v, &row);
            char name[32];
            snprintf(name, sizeof name, "%ccache.%d", v ? 'v' : 'k', l);
            const npl_gguf_tensor *t = npl_gguf_find_tensor(g, name);
            if (!t || t->type != NPL_TYPE_F16 || t->ne[0] != (int64_t)(row / 2) || t->ne[1] != (int64_t)n ||
                t->size != row * (size_t)n)
                BAD("%s: %s: missing, or not f16 [%zu, %llu]", path, name, row / 2, (unsigned long long)n);
            mine = fnv1a(mine, t->data, t->size);
        }
    if (mine != (uint64_t)sum) BAD("%s: checksum mismatch: the file is corrupted", path);
    /* every check passed: the session takes the file's history */
    for (int l = 0; l < n_layer; l++)
        for (int v = 0; v < 2; v++) {
            size_t row;
            uint16_t *kv = npl_runner_kv(s->r, l, v, &row);
            char name[32];
            snprintf(name, sizeof name, "%ccache.%d", v ? 'v' : 'k', l);
            memcpy(kv, npl_gguf_find_tensor(g, name)->data, row * (size_t)n);
        }
    npl_sess_reset(s);
    memcpy(s->hist, ids, 4 * (size_t)n);
    s->n_past = (int)n;
    memset(&s->stats, 0, sizeof s->stats);
    st = NPL_OK;
#undef BAD
done:
    npl_gguf_close(g);
    return st;
}
