/* libFuzzer harness for model loading: GGUF bytes -> npl_gguf_open_memory
 * -> npl_hparams_load -> npl_model_build, and, for a model small enough to
 * run in a few milliseconds, one forward pass of two tokens through a
 * session (shape inference, planning, every CPU kernel the weight types
 * pick), the way npl_runner does it.
 *
 * The bytes are copied into a 64-byte aligned buffer first, as a mapping
 * would be page aligned. The last input byte's low bit picks the kernels
 * for the forward pass: generic C or the best this CPU has.
 *
 * Checks: every failure fills err (NUL-terminated, non-empty, one line);
 * accepted hyperparameters are within the bounds hparams.c documents; a
 * built graph has its inputs and logits; the forward pass either fails with
 * a message or returns logits of shape [n_vocab, 1].
 * Seeds: fuzz/make_model_seeds.py (tiny llama, qwen2, qwen3, gemma3 models
 * with the real models' metadata keys).
 * Build and run with: fuzz/run model SECONDS */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/session.h"
#include "cpu/cpu_backend.h"
#include "format/gguf.h"
#include "models/model.h"

enum { MD_CTX = 8 };
#define MD_MAX_WEIGHT_BYTES ((size_t)4 << 20)
#define MD_MAX_KV_BYTES ((size_t)8 << 20)

static void md_check_err(const char *err, size_t cap) {
    if (!memchr(err, 0, cap) || !err[0] || strchr(err, '\n')) abort();
}

static void md_check_hparams(const npl_hparams *hp) {
    if ((unsigned)hp->arch >= NPL_ARCH_COUNT || !memchr(hp->arch_name, 0, sizeof hp->arch_name)) abort();
    if (hp->n_vocab < 1 || hp->n_embd < 1 || hp->n_layer < 1 || hp->n_layer > 4096) abort();
    if (hp->n_head < 1 || hp->n_head_kv < 1 || hp->n_head % hp->n_head_kv) abort();
    if (hp->head_dim < 2 || hp->head_dim > 1024 || hp->n_rot < 2 || hp->n_rot > hp->head_dim || (hp->n_rot & 1)) abort();
    if (!(hp->norm_eps > 0) || !(hp->rope_base > 0) || hp->n_ctx_train < 1 || hp->n_ff < 1) abort();
}

/* One forward pass of two tokens, as npl_runner_forward does it. */
static void md_forward(const npl_gguf *f, const npl_hparams *hp, npl_model_graph *mg, int generic) {
    static npl_pool *pool;
    if (!pool && !(pool = npl_pool_new(1))) abort();
    size_t weights = 0;
    for (int64_t i = 0; i < npl_gguf_n_tensors(f); i++) weights += npl_gguf_tensor_at(f, i)->size;
    size_t row = (size_t)hp->head_dim * (size_t)hp->n_head_kv * sizeof(uint16_t) * MD_CTX;
    if (hp->n_layer > 8 || weights > MD_MAX_WEIGHT_BYTES || row * 2 * (size_t)hp->n_layer > MD_MAX_KV_BYTES) return;

    npl_cpu_ctx cc;
    npl_backend be;
    npl_cpu_backend_init(&be, &cc, generic ? NPL_ISA_GENERIC : npl_cpu_best_isa());
    char err[512] = "";
    npl_graph_session *s = npl_graph_session_new(mg->g, &be, pool, &mg->logits, 1, err, sizeof err);
    if (!s) {
        md_check_err(err, sizeof err);
        return;
    }
    uint16_t **kv = calloc(2 * (size_t)hp->n_layer, sizeof *kv);
    if (!kv) abort();
    for (int l = 0; l < hp->n_layer; l++)
        for (int k = 0; k < 2; k++) {
            char name[32];
            if (!(kv[2 * l + k] = calloc(1, row))) abort();
            snprintf(name, sizeof name, "%ccache.%d", k ? 'v' : 'k', l);
            if (npl_graph_session_set_state(s, name, kv[2 * l + k])) abort(); /* the builder made every cache */
        }
    int32_t tokens[2] = {0, hp->n_vocab - 1}, pos[2] = {0, 1}, rows[1] = {1};
    npl_shape sh = {1, {2, 1, 1, 1}}, so = {1, {1, 1, 1, 1}};
    if (npl_graph_session_set_input_id(s, mg->tokens, tokens, &sh) || npl_graph_session_set_input_id(s, mg->pos, pos, &sh) ||
        npl_graph_session_set_input_id(s, mg->out_rows, rows, &so))
        abort();
    if (npl_graph_session_run(s)) {
        const char *e = npl_graph_session_error(s);
        if (!e || !e[0]) abort();
    } else {
        const npl_tensor *out = npl_graph_session_output(s, 0);
        if (!out || out->type != NPL_TYPE_F32 || out->shape.ne[0] != hp->n_vocab || out->shape.ne[1] != 1) abort();
        volatile float md_sink = ((const float *)out->data)[hp->n_vocab - 1];
        (void)md_sink;
    }
    npl_graph_session_free(s);
    for (int i = 0; i < 2 * hp->n_layer; i++) free(kv[i]);
    free(kv);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    uint8_t *buf = aligned_alloc(64, (size + 63) & ~(size_t)63);
    if (!buf) return 0;
    if (size) memcpy(buf, data, size);
    char err[512] = "";
    npl_gguf *f = npl_gguf_open_memory(buf, size, "fuzz.gguf", NULL, err, sizeof err);
    if (!f) {
        md_check_err(err, sizeof err);
        free(buf);
        return 0;
    }
    npl_hparams hp;
    if (npl_hparams_load(f, &hp, err, sizeof err)) {
        md_check_err(err, sizeof err);
    } else {
        md_check_hparams(&hp);
        for (int il = 0; il < hp.n_layer; il++) (void)npl_hparams_layer_is_swa(&hp, il);
        npl_model_graph mg;
        err[0] = 0;
        if (npl_model_build(f, &hp, MD_CTX, &mg, err, sizeof err)) {
            md_check_err(err, sizeof err);
            if (mg.g) abort(); /* cleared on failure */
        } else {
            if (!mg.g || mg.tokens < 0 || mg.pos < 0 || mg.out_rows < 0 || mg.logits < 0 || mg.n_ctx != MD_CTX)
                abort();
            md_forward(f, &hp, &mg, size && (data[size - 1] & 1));
            npl_graph_free(mg.g);
        }
    }
    npl_gguf_close(f);
    free(buf);
    return 0;
}
