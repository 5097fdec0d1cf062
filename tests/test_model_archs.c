/* The further architectures (gemma2, phi3, granite, smollm3, mistral3, gemma4) read what their
 * random-weight GGUFs hold (tests/tools/make_random_gguf.py --arch-extras and
 * make_random_gemma4.py: the values below are the ones they write), and refuse with one line naming
 * the file and the key or tensor what they do not implement or what
 * contradicts itself: copies of those files through npl_gguf_writer with one
 * change each. Agreement with llama.cpp is test_model_reference's. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "format/gguf.h"
#include "format/graph_file.h"
#include "llm/runner.h"
#include "models/model.h"

typedef struct {
    const char *name, *model; /* model: rand-MODEL-f32.gguf */
    const char *drop_key;
    const char *set_f32_key;   /* key set (replaced) to f32 */
    float f32;
    const char *add_tensor;    /* an f32 tensor of add_n (<= 16) values added */
    int add_n;
    float add_v;               /* their value */
    const char *drop_tensor;
    const char *reshape_tensor; /* 2-D tensor given ne[1] = new_ne1 (a prefix of its data) */
    int64_t new_ne1;
    const char *expect, *expect2; /* what the error must name */
} edit;

static int write_variant(const npl_gguf *src, const edit *e, const char *path) {
    npl_gguf_writer *w = npl_gguf_writer_new();
    const char *skip[3] = {NULL, NULL, NULL}; /* the keys this edit drops or replaces */
    int n_skip = 0;
    if (e->drop_key) skip[n_skip++] = e->drop_key;
    if (e->set_f32_key) skip[n_skip++] = e->set_f32_key;
    char err[512] = "";
    int rc = w ? npl_gguf_copy_kv(w, src, skip, err, sizeof err) : -1;
    if (!rc && e->set_f32_key) rc = npl_gguf_writer_set_f32(w, e->set_f32_key, e->f32);
    float vals[16];
    for (int i = 0; i < 16; i++) vals[i] = e->add_v;
    int64_t ne_add[4] = {e->add_n, 1, 1, 1};
    if (!rc && e->add_tensor)
        rc = npl_gguf_writer_add_tensor(w, e->add_tensor, NPL_TYPE_F32, 1, ne_add, vals, sizeof(float) * (size_t)e->add_n);
    for (int64_t i = 0; !rc && i < npl_gguf_n_tensors(src); i++) {
        const npl_gguf_tensor *t = npl_gguf_tensor_at(src, i);
        if (e->drop_tensor && !strcmp(t->name, e->drop_tensor)) continue;
        int64_t ne[NPL_GGUF_MAX_DIMS];
        memcpy(ne, t->ne, sizeof(ne));
        size_t size = t->size;
        if (e->reshape_tensor && !strcmp(t->name, e->reshape_tensor)) {
            size = t->size / (size_t)t->ne[1] * (size_t)e->new_ne1;
            ne[1] = e->new_ne1;
        }
        rc = npl_gguf_writer_add_tensor(w, t->name, t->type, t->n_dims, ne, t->data, size);
    }
    if (!rc) rc = npl_gguf_writer_write(w, path, err, sizeof(err));
    if (rc) fprintf(stderr, "%s: cannot write: %s\n", path, err);
    npl_gguf_writer_free(w);
    return rc;
}

static npl_runner *open_model(const char *path, char *err, size_t errlen) {
    npl_runner_params p = npl_runner_default_params();
    p.n_ctx = 64;
    p.n_threads = 1;
    return npl_runner_open(path, &p, err, errlen);
}

/* What the loader read from the unchanged files. */
static void check_values(const char *data) {
    char path[1024], err[512];
    static const char *models[] = {"gemma2", "phi3", "granite", "smollm3", "mistral3", "gemma4"};
    for (int m = 0; m < 6; m++) {
        snprintf(path, sizeof(path), "%s/models/rand-%s-f32.gguf", data, models[m]);
        npl_runner *r = open_model(path, err, sizeof(err));
        if (!r) fprintf(stderr, "%s\n", err);
        CHECK(r != NULL);
        if (!r) continue;
        const npl_hparams *hp = npl_runner_hparams(r);
        CHECK(strcmp(hp->arch_name, models[m]) == 0);
        int32_t tok[3] = {1, 100, 200};
        CHECK(npl_runner_forward(r, tok, 3, 0, 1, err, sizeof(err)) != NULL);
        switch (hp->arch) {
        case NPL_ARCH_GEMMA2:
            CHECK_EQ_INT(hp->n_swa, 16);
            CHECK(npl_hparams_layer_is_swa(hp, 0) && !npl_hparams_layer_is_swa(hp, 1));
            CHECK(hp->attn_softcap == 5.0f && hp->final_softcap == 15.0f);
            CHECK(hp->embd_scale == sqrtf(128.0f) && hp->attn_scale == 1.0f / sqrtf(32.0f));
            CHECK(hp->rope_neox == 1);
            break;
        case NPL_ARCH_PHI3:
            CHECK_EQ_INT(hp->n_rot, 24); /* of 32: partial rotary */
            CHECK_EQ_INT(hp->head_dim, 32);
            CHECK(hp->rope_neox == 1 && hp->n_swa == 0);
            break;
        case NPL_ARCH_GRANITE:
            CHECK(hp->embd_scale == 4.0f && hp->residual_scale == 0.5f && hp->attn_scale == 0.25f);
            CHECK(hp->logit_scale == 2.0f && hp->rope_neox == 0);
            break;
        case NPL_ARCH_SMOLLM3:
            CHECK_EQ_INT(hp->nope_step, 4);
            CHECK_EQ_INT(hp->n_layer, 4);
            CHECK(hp->rope_neox == 0);
            break;
        case NPL_ARCH_MISTRAL3:
            CHECK(hp->rope_scaling == NPL_ROPE_SCALING_YARN && hp->rope_freq_scale == 0.25f);
            CHECK(hp->rope_beta_fast == 16.0f && hp->rope_beta_slow == 2.0f && hp->rope_n_ctx_orig == 512);
            /* log multiplier 1: get_mscale(4, 1) / get_mscale(4, 1), times 1 / (1 + 0.1 ln 4) */
            CHECK(hp->rope_attn_factor == 1.0f / (1.0f + 0.1f * logf(4.0f)));
            CHECK(hp->attn_temp_scale == 0.1f && hp->attn_temp_floor == 512 && hp->rope_neox == 0);
            break;
        case NPL_ARCH_GEMMA4:
            for (int il = 0; il < 4; il++) CHECK_EQ_INT(npl_hparams_layer_is_swa(hp, il), il % 2 == 0);
            CHECK_EQ_INT(hp->n_swa, 16);
            CHECK_EQ_INT(hp->head_dim, 64);
            CHECK_EQ_INT(hp->head_dim_swa, 32);
            CHECK_EQ_INT(hp->n_rot, 64);
            CHECK_EQ_INT(hp->n_rot_swa, 32);
            CHECK_EQ_INT(hp->n_embd_per_layer, 32);
            CHECK_EQ_INT(hp->n_layer_kv, 2); /* shared_kv_layers 2 of 4 */
            CHECK_EQ_INT(npl_hparams_kv_layer(hp, 1), 1);
            CHECK_EQ_INT(npl_hparams_kv_layer(hp, 2), 0);
            CHECK_EQ_INT(npl_hparams_kv_layer(hp, 3), 1);
            CHECK(hp->rope_base == 1e6f && hp->rope_base_swa == 1e4f && hp->rope_neox == 1);
            CHECK(hp->final_softcap == 30.0f && hp->attn_scale == 1.0f && hp->embd_scale == sqrtf(128.0f));
            break;
        default: CHECK(0);
        }
        npl_runner_close(r);
    }
}

/* gemma4's graph: layers 2 and 3 attend over the caches of layers 0 and 1
 * (two attention nodes on each of those states, none on their own), the
 * full layers' RoPE takes rope_freqs.weight and the sliding ones' none, and
 * every layer gets its slice of the per-layer embedding rows. */
static void check_gemma4_graph(const char *data) {
    char path[1024], err[512] = "";
    snprintf(path, sizeof(path), "%s/models/rand-gemma4-q8_0.gguf", data);
    npl_gguf *f = npl_gguf_open(path, NULL, err, sizeof(err));
    CHECK(f != NULL);
    if (!f) return;
    npl_hparams hp;
    npl_model_graph mg;
    CHECK(npl_hparams_load(f, &hp, err, sizeof(err)) == 0);
    CHECK(npl_model_build(f, &hp, 64, &mg, err, sizeof(err)) == 0);
    if (mg.g) {
        int users[4] = {0}, slices = 0, rope_freq = 0, rope_plain = 0;
        const int freqs = npl_graph_find(mg.g, "rope_freqs.weight");
        CHECK(freqs >= 0);
        for (int i = 0; i < npl_graph_n_nodes(mg.g); i++) {
            const npl_node *nd = npl_graph_node(mg.g, i);
            if (nd->op == NPL_OP_SLICE) slices += nd->ip[0] == 32 * slices && nd->ip[1] == 32;
            if (nd->op == NPL_OP_ROPE) {
                rope_freq += nd->n_src == 3 && nd->src[2] == freqs && nd->ip[0] == 64;
                rope_plain += nd->n_src == 2 && nd->ip[0] == 32;
            }
            if (nd->op != NPL_OP_ATTENTION) continue;
            for (int l = 0; l < 4; l++) {
                char name[32];
                snprintf(name, sizeof(name), "kcache.%d", l);
                users[l] += nd->src[3] == npl_graph_find(mg.g, name);
            }
        }
        printf("gemma4 graph: kcache users %d %d %d %d, %d slices, RoPE %d with factors / %d without\n", users[0],
               users[1], users[2], users[3], slices, rope_freq, rope_plain);
        CHECK(users[0] == 2 && users[1] == 2 && users[2] == 0 && users[3] == 0);
        CHECK_EQ_INT(slices, 4);
        CHECK(rope_freq == 3 && rope_plain == 3); /* q of layers 1, 3 and k of 1; q of 0, 2 and k of 0 */
        npl_graph_free(mg.g);
    }
    npl_gguf_close(f);
}

static const edit EDITS[] = {
    {.name = "phi3 LongRoPE factors of 8 for 12 pairs", .model = "phi3", .add_tensor = "rope_factors_short.weight",
     .add_n = 8, .add_v = 1.0f, .expect = "rope_factors_short.weight", .expect2 = "contradicts"},
    {.name = "phi3 LongRoPE factor 0", .model = "phi3", .add_tensor = "rope_factors_short.weight", .add_n = 12,
     .add_v = 0.0f, .expect = "rope_factors_short.weight", .expect2 = "positive"},
    {.name = "phi3 qkv short of v rows", .model = "phi3", .reshape_tensor = "blk.0.attn_qkv.weight", .new_ne1 = 192,
     .expect = "blk.0.attn_qkv.weight"},
    {.name = "phi3 ffn_up without the gate half", .model = "phi3", .reshape_tensor = "blk.1.ffn_up.weight",
     .new_ne1 = 256, .expect = "blk.1.ffn_up.weight"},
    {.name = "granite without logit_scale", .model = "granite", .drop_key = "granite.logit_scale",
     .expect = "granite.logit_scale", .expect2 = "missing"},
    {.name = "granite logit_scale 0", .model = "granite", .set_f32_key = "granite.logit_scale", .f32 = 0.0f,
     .expect = "granite.logit_scale"},
    {.name = "granite residual_scale NaN", .model = "granite", .set_f32_key = "granite.residual_scale", .f32 = NAN,
     .expect = "granite.residual_scale"},
    {.name = "gemma2 attention softcap 0", .model = "gemma2", .set_f32_key = "gemma2.attn_logit_softcapping",
     .f32 = 0.0f, .expect = "gemma2.attn_logit_softcapping"},
    {.name = "gemma2 final softcap -1", .model = "gemma2", .set_f32_key = "gemma2.final_logit_softcapping",
     .f32 = -1.0f, .expect = "gemma2.final_logit_softcapping"},
    {.name = "gemma2 without post_ffw_norm", .model = "gemma2", .drop_tensor = "blk.1.post_ffw_norm.weight",
     .expect = "blk.1.post_ffw_norm.weight", .expect2 = "missing"},
    {.name = "mistral3 yarn log multiplier NaN", .model = "mistral3",
     .set_f32_key = "mistral3.rope.scaling.yarn_log_multiplier", .f32 = NAN,
     .expect = "mistral3.rope.scaling.yarn_log_multiplier", .expect2 = "not finite"},
    {.name = "gemma4 without rope_freqs", .model = "gemma4", .drop_tensor = "rope_freqs.weight",
     .expect = "rope_freqs.weight", .expect2 = "missing"},
    {.name = "gemma4 without its swa pattern", .model = "gemma4", .drop_key = "gemma4.attention.sliding_window_pattern",
     .expect = "gemma4.attention.sliding_window_pattern", .expect2 = "missing"},
    {.name = "gemma4 without KV sharing", .model = "gemma4", .drop_key = "gemma4.attention.shared_kv_layers",
     .expect = "blk.2.attn_k.weight", .expect2 = "missing"},
    {.name = "gemma4 final softcap -1", .model = "gemma4", .set_f32_key = "gemma4.final_logit_softcapping",
     .f32 = -1.0f, .expect = "gemma4.final_logit_softcapping"},
    {.name = "gemma4 MoE router", .model = "gemma4", .add_tensor = "blk.1.ffn_gate_inp.weight", .add_n = 4,
     .add_v = 1.0f, .expect = "blk.1.ffn_gate_inp.weight", .expect2 = "MoE"},
    {.name = "gemma4 per-layer embedding rows short", .model = "gemma4", .reshape_tensor = "per_layer_token_embd.weight",
     .new_ne1 = 512, .expect = "per_layer_token_embd.weight", .expect2 = "contradicts"},
    {.name = "smollm3 without a layer's ffn_gate", .model = "smollm3", .drop_tensor = "blk.3.ffn_gate.weight",
     .expect = "blk.3.ffn_gate.weight", .expect2 = "missing"},
};

/* mistral3's attention temperature is 1 below its floor (512) only: a
 * longer context is refused at open, naming the key. */
static void check_temperature_context(const char *data) {
    char path[1024], err[512] = "";
    snprintf(path, sizeof(path), "%s/models/rand-mistral3-f32.gguf", data);
    npl_runner_params p = npl_runner_default_params();
    p.n_threads = 1;
    p.n_ctx = 512;
    npl_runner *r = npl_runner_open(path, &p, err, sizeof(err));
    CHECK(r != NULL);
    npl_runner_close(r);
    p.n_ctx = 513;
    r = npl_runner_open(path, &p, err, sizeof(err));
    printf("mistral3 at n_ctx 513: %s\n", r ? "(opened)" : err);
    CHECK(r == NULL);
    npl_runner_close(r);
    CHECK(strstr(err, "mistral3.attention.temperature_scale") != NULL && strstr(err, path) != NULL);
    CHECK(strchr(err, '\n') == NULL);
}

/* LongRoPE: the short factors for a context up to the original one (128),
 * the long ones beyond, as llama.cpp's get_rope_factors. */
static void check_longrope_choice(const char *data) {
    char path[1024], err[512] = "";
    snprintf(path, sizeof(path), "%s/models/rand-phi3-longrope-f32.gguf", data);
    npl_gguf *f = npl_gguf_open(path, NULL, err, sizeof(err));
    CHECK(f != NULL);
    if (!f) return;
    npl_hparams hp;
    CHECK(npl_hparams_load(f, &hp, err, sizeof(err)) == 0);
    CHECK_EQ_INT(hp.rope_n_ctx_orig, 128);
    CHECK_NEAR(hp.rope_attn_factor, sqrt(1 + log(32.0) / log(128.0)), 1e-6);
    static const struct { int n_ctx; const char *used, *unused; } cases[] = {
        {128, "rope_factors_short.weight", "rope_factors_long.weight"},
        {129, "rope_factors_long.weight", "rope_factors_short.weight"}};
    for (int i = 0; i < 2; i++) {
        npl_model_graph mg;
        CHECK(npl_model_build(f, &hp, cases[i].n_ctx, &mg, err, sizeof(err)) == 0);
        if (!mg.g) continue;
        CHECK(npl_graph_find(mg.g, cases[i].used) >= 0);
        CHECK(npl_graph_find(mg.g, cases[i].unused) < 0);
        npl_graph_free(mg.g);
    }
    npl_gguf_close(f);
}

int main(void) {
    setvbuf(stdout, NULL, _IOLBF, 0);
    const char *data = getenv("NPL_TEST_DATA");
    CHECK(data != NULL);
    if (!data) TEST_MAIN_END();
    check_values(data);
    check_temperature_context(data);
    check_longrope_choice(data);
    check_gemma4_graph(data);
    char dir[] = "/tmp/npl_archs_XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    for (size_t i = 0; i < sizeof(EDITS) / sizeof(EDITS[0]); i++) {
        const edit *e = &EDITS[i];
        char src_path[1024], path[1024], err[512] = "";
        snprintf(src_path, sizeof(src_path), "%s/models/rand-%s-f32.gguf", data, e->model);
        snprintf(path, sizeof(path), "%s/edit-%zu.gguf", dir, i);
        npl_gguf *src = npl_gguf_open(src_path, NULL, err, sizeof(err));
        CHECK(src != NULL);
        if (!src) continue;
        CHECK(write_variant(src, e, path) == 0);
        npl_gguf_close(src);
        npl_runner *r = open_model(path, err, sizeof(err));
        printf("%-36s %s\n", e->name, r ? "(opened)" : err);
        CHECK(r == NULL);
        npl_runner_close(r);
        CHECK(strchr(err, '\n') == NULL);
        CHECK(strstr(err, path) != NULL);
        CHECK(strstr(err, e->expect) != NULL);
        if (e->expect2) CHECK(strstr(err, e->expect2) != NULL);
        unlink(path);
    }
    rmdir(dir);
    TEST_MAIN_END();
}
