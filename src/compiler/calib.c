/* --calib FILE and the int16 activation ranges it calibrates (see requant.h). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compiler/requant.h"
#include "core/session.h"
#include "cpu/cpu_backend.h"
#include "kernels/dtype.h"

/* --calib FILE: UTF-8 text of 1 byte .. 16 MiB, read whole (NULL with a
 * one-line err naming the file and what is wrong). */
char *npl_calib_read(const char *path, size_t *len, char *err, size_t errlen) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, errlen, "--calib %s: %s", path, strerror(errno));
        return NULL;
    }
    char *t = malloc((16u << 20) + 1);
    size_t n = t ? fread(t, 1, (16u << 20) + 1, f) : 0;
    int rd_err = ferror(f);
    fclose(f);
    const char *bad = !t ? "out of memory" : rd_err ? "cannot be read" : !n ? "is empty: a calibration text is needed"
                      : n > (16u << 20) ? "is larger than 16 MiB" : NULL;
    /* text: no NUL byte and valid UTF-8 (a model file or an image given by mistake fails here) */
    for (size_t i = 0; !bad && i < n;) {
        const unsigned char c = (unsigned char)t[i];
        size_t k = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
        int ok = c != 0 && k && i + k <= n;
        for (size_t j = 1; ok && j < k; j++) ok = ((unsigned char)t[i + j] >> 6) == 2;
        if (!ok) {
            snprintf(err, errlen, "--calib %s: not text (byte %zu is 0x%02x: %s)", path, i, c,
                     c ? "not valid UTF-8" : "a NUL byte");
            free(t);
            return NULL;
        }
        i += k;
    }
    if (bad) {
        snprintf(err, errlen, "--calib %s: %s", path, bad);
        free(t);
        return NULL;
    }
    *len = n;
    return t;
}


/* The built-in calibration text (no --calib): ordinary English prose, code
 * and digits, so the ranges cover the kinds of tokens a chat sees. */
const char *npl_calib_default_text(void) {
    return "The quick brown fox jumps over the lazy dog. A compiler is a program that translates source code "
           "written in one language into another. In 1969, the first humans walked on the Moon; the mission "
           "lasted eight days, three hours and eighteen minutes. Question: what is 17 times 23? Answer: 391.\n"
           "def add(a, b):\n    return a + b\n\nprint(add(2, 3))\n"
           "Once upon a time, in a small village by the sea, there lived an old fisherman and his wife. Every "
           "morning he rowed out before dawn, and every evening she waited for him on the shore. The weather "
           "today is cloudy with a chance of rain, 12 degrees Celsius, wind from the north-west at 20 km/h.";
}

void **npl_calib_bind_kv(npl_graph_session *s, const npl_hparams *hp, int n_ctx, const char *who, char *err,
                         size_t errlen) {
    const size_t row = (size_t)hp->head_dim * hp->n_head_kv * 2 * (size_t)n_ctx;
    void **kv = calloc(2 * (size_t)hp->n_layer, sizeof(void *));
    if (!kv) {
        snprintf(err, errlen, "%s: out of memory", who);
        return NULL;
    }
    for (int l = 0; l < 2 * hp->n_layer; l++) {
        char name[32];
        snprintf(name, sizeof name, "%ccache.%d", l & 1 ? 'v' : 'k', l / 2);
        if (!(kv[l] = calloc(1, row)) || npl_graph_session_set_state(s, name, kv[l])) {
            snprintf(err, errlen, "%s: cannot bind %s", who, name);
            npl_calib_free_kv(kv, hp->n_layer);
            return NULL;
        }
    }
    return kv;
}

void npl_calib_free_kv(void **kv, int n_layer) {
    if (!kv) return;
    for (int l = 0; l < 2 * n_layer; l++) free(kv[l]);
    free(kv);
}

/* Per node, the min / max of its CPU output over the calibration tokens,
 * run as chunks of `chunk` positions (the KV cache carried over, so later
 * chunks attend to earlier ones). Only f32 / f16 op outputs are recorded
 * (lo > hi for the others). */
int npl_calib_ranges(const npl_model_graph *mg, const npl_hparams *hp, const int32_t *ids, int64_t n_ids, int chunk,
                     int n_tokens, npl_pool *pool, float *lo, float *hi, char *err, size_t errlen) {
    const int n = npl_graph_n_nodes(mg->g);
    int *outs = malloc(sizeof(int) * (size_t)n), n_outs = 0, rc = -1;
    int32_t *tok = malloc(sizeof(int32_t) * (size_t)chunk), *pos = malloc(sizeof(int32_t) * (size_t)chunk),
            *rows = malloc(sizeof(int32_t) * (size_t)chunk);
    void **kv = NULL;
    npl_graph_session *s = NULL;
    npl_cpu_ctx cc;
    npl_backend be;
    for (int i = 0; i < n; i++) lo[i] = INFINITY, hi[i] = -INFINITY;
    if (!outs || !tok || !pos || !rows) {
        snprintf(err, errlen, "calibration: out of memory");
        goto done;
    }
    for (int i = 0; i < n; i++) {
        const npl_node *nd = npl_graph_node(mg->g, i);
        if (nd->op != NPL_OP_INPUT && nd->op != NPL_OP_WEIGHT && nd->op != NPL_OP_STATE &&
            (nd->type == NPL_TYPE_F32 || nd->type == NPL_TYPE_F16))
            outs[n_outs++] = i;
    }
    npl_cpu_backend_init(&be, &cc, npl_cpu_best_isa());
    if (!(s = npl_graph_session_new(mg->g, &be, pool, outs, n_outs, err, errlen))) goto done;
    if (!(kv = npl_calib_bind_kv(s, hp, mg->n_ctx, "calibration", err, errlen))) goto done;
    /* chunk <= n_ctx: one run always fits; past the context the positions
     * start again at 0 (a new sequence: attention reads only rows it rewrote) */
    const int n_runs = n_tokens / chunk > 0 ? n_tokens / chunk : 1, wrap = mg->n_ctx / chunk * chunk;
    for (int r = 0, base = 0; r < n_runs; r++, base += chunk) {
        /* logits of every row: a graph that outputs every row's (perplexity) needs their range */
        for (int t = 0; t < chunk; t++) tok[t] = ids[(base + t) % n_ids], pos[t] = base % wrap + t, rows[t] = t;
        npl_shape ss = {1, {chunk, 1, 1, 1}};
        if (npl_graph_session_set_input_id(s, mg->tokens, tok, &ss) || npl_graph_session_set_input_id(s, mg->pos, pos, &ss) ||
            npl_graph_session_set_input_id(s, mg->out_rows, rows, &ss) || npl_graph_session_run(s)) {
            snprintf(err, errlen, "calibration: %s", npl_graph_session_error(s));
            goto done;
        }
        for (int k = 0; k < n_outs; k++) {
            const npl_tensor *t = npl_graph_session_output(s, k);
            const int64_t ne = npl_shape_nelements(&t->shape);
            float a = lo[outs[k]], b = hi[outs[k]];
            for (int64_t e = 0; e < ne; e++) {
                const float v = t->type == NPL_TYPE_F16 ? npl_f16_to_f32(((const uint16_t *)t->data)[e]) : ((const float *)t->data)[e];
                if (v < a) a = v;
                if (v > b) b = v;
            }
            lo[outs[k]] = a, hi[outs[k]] = b;
        }
    }
    rc = n_runs * chunk;
done:
    npl_graph_session_free(s);
    npl_calib_free_kv(kv, hp->n_layer);
    free(outs);
    free(tok);
    free(pos);
    free(rows);
    return rc;
}

/* Whether the target needs static int16 ranges: it refuses the ABI's
 * dynamic int16 (QNN HTP has per-tensor scale/offset only). */
int npl_calib_static_int16(const npl_accel_api *api, npl_accel_backend *be, npl_accel_device *dev) {
    npl_accel_context *c = NULL;
    npl_accel_graph *g = NULL;
    if (api->context_create(be, dev, NULL, 0, &c) != NPL_ACCEL_OK) return 0; /* the lowering will say why */
    npl_accel_tensor_desc d = {.name = "int16_probe", .kind = NPL_ACCEL_NATIVE, .dtype = NPL_ACCEL_DT_INT16, .rank = 1,
                               .dims = {32}, .quant = {.encoding = NPL_ACCEL_QUANT_DYNAMIC, .block_size = 32}};
    npl_accel_tensor_id t;
    const int st = api->graph_create(c, "int16_probe", &g) == NPL_ACCEL_OK && api->tensor_create(g, &d, &t) != NPL_ACCEL_OK;
    api->context_free(c);
    return st;
}
