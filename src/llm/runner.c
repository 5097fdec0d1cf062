/* Runner (see runner.h). */
#include "llm/runner.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/checked.h"

struct npl_runner {
    npl_gguf *f;
    npl_hparams hp;
    npl_model_graph mg;
    npl_cpu_ctx cc;
    npl_backend be;
    npl_pool *pool;
    npl_session *sess;
    uint16_t **kv;        /* 2 * n_layer buffers */
    int32_t *pos_buf, *rows_buf;
    int buf_cap;
};

npl_runner_params npl_runner_default_params(void) {
    npl_runner_params p = {0, 0, -1, 0};
    return p;
}

void npl_runner_close(npl_runner *r) {
    if (!r) return;
    npl_session_free(r->sess);
    if (r->kv)
        for (int i = 0; i < 2 * r->hp.n_layer; i++) free(r->kv[i]);
    free(r->kv);
    free(r->pos_buf);
    free(r->rows_buf);
    npl_graph_free(r->mg.g);
    npl_pool_free(r->pool);
    npl_gguf_close(r->f);
    free(r);
}

npl_runner *npl_runner_open(const char *path, const npl_runner_params *p, char *err, size_t errlen) {
    npl_runner_params dp = npl_runner_default_params();
    if (!p) p = &dp;
    npl_runner *r = calloc(1, sizeof(*r));
    if (!r) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    if (!(r->f = npl_gguf_open(path, NULL, err, errlen))) goto fail;
    if (npl_hparams_load(r->f, &r->hp, err, errlen)) goto fail;
    int n_ctx = p->n_ctx > 0 ? p->n_ctx : (r->hp.n_ctx_train < 4096 ? r->hp.n_ctx_train : 4096);
    if (p->n_ctx < 0) {
        snprintf(err, errlen, "context length %d must be positive", p->n_ctx);
        goto fail;
    }
    /* refuse a KV cache over budget before allocating anything */
    size_t row = (size_t)r->hp.head_dim * (size_t)r->hp.n_head_kv * sizeof(uint16_t), per_layer, total;
    size_t budget = p->kv_budget ? p->kv_budget : ((size_t)4 << 30);
    if (npl_mul_size(row, (size_t)n_ctx, &per_layer) || npl_mul_size(per_layer, 2 * (size_t)r->hp.n_layer, &total) ||
        total > budget) {
        snprintf(err, errlen, "%s: context %d: KV cache would need %.1f MiB, over the budget of %.1f MiB", path, n_ctx,
                 (double)row * n_ctx * 2.0 * r->hp.n_layer / 1048576.0, (double)budget / 1048576.0);
        goto fail;
    }
    if (npl_model_build(r->f, &r->hp, n_ctx, &r->mg, err, errlen)) goto fail;
    npl_cpu_backend_init(&r->be, &r->cc, p->isa < 0 ? npl_cpu_best_isa() : (npl_isa)p->isa);
    if (!(r->pool = npl_pool_new(p->n_threads))) {
        snprintf(err, errlen, "cannot start threads");
        goto fail;
    }
    if (!(r->sess = npl_session_new(r->mg.g, &r->be, r->pool, &r->mg.logits, 1, err, errlen))) goto fail;
    if (!(r->kv = calloc(2 * (size_t)r->hp.n_layer, sizeof(uint16_t *)))) goto oom;
    for (int l = 0; l < r->hp.n_layer; l++) {
        char name[32];
        for (int kv = 0; kv < 2; kv++) {
            /* calloc: pages are only touched as positions are written */
            if (!(r->kv[2 * l + kv] = calloc(1, per_layer))) goto oom;
            snprintf(name, sizeof(name), "%ccache.%d", kv ? 'v' : 'k', l);
            if (npl_session_set_state(r->sess, name, r->kv[2 * l + kv])) {
                snprintf(err, errlen, "%s", npl_session_error(r->sess));
                goto fail;
            }
        }
    }
    return r;
oom:
    snprintf(err, errlen, "out of memory");
fail:
    npl_runner_close(r);
    return NULL;
}

const npl_hparams *npl_runner_hparams(const npl_runner *r) { return &r->hp; }
const npl_gguf *npl_runner_gguf(const npl_runner *r) { return r->f; }
int npl_runner_n_ctx(const npl_runner *r) { return r->mg.n_ctx; }
const char *npl_runner_isa(const npl_runner *r) { return npl_isa_name(r->cc.isa); }

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

const float *npl_runner_forward_ex(npl_runner *r, const int32_t *tokens, const int32_t *pos, int n,
                                   const int32_t *out_rows, int n_out, char *err, size_t errlen) {
    if (n <= 0 || n_out <= 0 || n_out > n) {
        snprintf(err, errlen, "forward: %d tokens, %d outputs", n, n_out);
        return NULL;
    }
    for (int i = 0; i < n; i++) {
        if (tokens[i] < 0 || tokens[i] >= r->hp.n_vocab) {
            snprintf(err, errlen, "forward: token id %d out of range [0, %d)", tokens[i], r->hp.n_vocab);
            return NULL;
        }
        if (pos[i] >= r->mg.n_ctx) {
            snprintf(err, errlen, "forward: position %d past the context of %d", pos[i], r->mg.n_ctx);
            return NULL;
        }
    }
    for (int i = 0; i < n_out; i++)
        if (out_rows[i] < 0 || out_rows[i] >= n) {
            snprintf(err, errlen, "forward: output row %d out of range", out_rows[i]);
            return NULL;
        }
    npl_shape s = {1, {n, 1, 1, 1}}, so = {1, {n_out, 1, 1, 1}};
    if (npl_session_set_input_id(r->sess, r->mg.tokens, (void *)tokens, &s) ||
        npl_session_set_input_id(r->sess, r->mg.pos, (void *)pos, &s) ||
        npl_session_set_input_id(r->sess, r->mg.out_rows, (void *)out_rows, &so) || npl_session_run(r->sess)) {
        snprintf(err, errlen, "%s", npl_session_error(r->sess));
        return NULL;
    }
    return npl_session_output(r->sess, 0)->data;
}

const float *npl_runner_forward(npl_runner *r, const int32_t *tokens, int n, int pos0, int n_out, char *err,
                                size_t errlen) {
    if (n <= 0 || n_out <= 0 || n_out > n || pos0 < 0) {
        snprintf(err, errlen, "forward: %d tokens at %d, %d outputs", n, pos0, n_out);
        return NULL;
    }
    if (grow(r, n)) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    for (int i = 0; i < n; i++) r->pos_buf[i] = pos0 + i;
    for (int i = 0; i < n_out; i++) r->rows_buf[i] = n - n_out + i;
    return npl_runner_forward_ex(r, tokens, r->pos_buf, n, r->rows_buf, n_out, err, errlen);
}
