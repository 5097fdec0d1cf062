/* RoPE frequency factors and scaling types, as llama.cpp applies them (its
 * agreement on the random models is in test_model_reference):
 *   - rand-llama-ropefreqs-f32 is rand-llama-f32 plus rope_freqs.weight
 *     (Llama 3.1's factors): position 0 (no rotation) gives the same logits
 *     bit for bit, later positions others;
 *   - rope.scaling.type decides: "none" ignores the factor, "linear" (also
 *     the default without a type, and the old rope.scale_linear key) scales
 *     positions, "yarn" is neither; rope.scaling.attn_factor scales q and k;
 *   - what is not implemented is refused, naming the file, the key and the
 *     value: unknown and "longrope" types, a negative factor, yarn_* tuning
 *     llama.cpp ignores here, rope_freqs.weight with a bad entry or length,
 *     or on an architecture llama.cpp does not read it for;
 *   - a compiled package (vnpu) applies factors and yarn like the CPU path;
 *   - the kernels against ggml's formula in double precision. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "compiler/compiler.h"
#include "kernels/nn_kernels.h"
#include "format/gguf.h"
#include "format/graph_file.h"
#include "llm/runner.h"
#include "package_compare.h"

#define N_TOK 40

enum { K_STR = 1, K_F32, K_U32 };
typedef struct {
    const char *key;
    int kind;
    const char *str;
    float f32;
} kv;

#define S(k, v) {.key = k, .kind = K_STR, .str = v}
#define F(k, v) {.key = k, .kind = K_F32, .f32 = v}
#define U(k, v) {.key = k, .kind = K_U32, .f32 = v}

typedef struct {
    const char *name;
    kv set[3];          /* rope.scaling.* of the source are dropped, these added */
    int freqs_n;        /* > 0: add rope_freqs.weight of freqs_n entries ... */
    float freqs_zero_at; /* ... all 2.0 except a 0 at this index (-1: none) */
    const char *expect, *expect2; /* refusals: what the message must name */
} variant;

/* src with its rope.scaling.* keys replaced by v's and maybe rope_freqs.weight added */
static int write_variant(const char *src_path, const variant *v, const char *path) {
    char err[512] = "";
    npl_gguf *src = npl_gguf_open(src_path, NULL, err, sizeof err);
    CHECK(src != NULL);
    if (!src) return -1;
    npl_gguf_str arch;
    CHECK_EQ_INT(npl_gguf_get_str(src, "general.architecture", &arch), 0);
    char skip0[64];
    snprintf(skip0, sizeof skip0, "%.*s.rope.scaling.", (int)arch.len, arch.ptr);
    const char *skip[] = {skip0, NULL};
    npl_gguf_writer *w = npl_gguf_writer_new();
    int rc = w ? npl_gguf_copy_kv(w, src, skip, err, sizeof err) : -1;
    for (int i = 0; !rc && i < 3 && v->set[i].key; i++) {
        const kv *s = &v->set[i];
        rc = s->kind == K_STR   ? npl_gguf_writer_set_str(w, s->key, s->str)
             : s->kind == K_F32 ? npl_gguf_writer_set_f32(w, s->key, s->f32)
                                : npl_gguf_writer_set_u32(w, s->key, (uint32_t)s->f32);
    }
    float ff[64];
    if (!rc && v->freqs_n > 0) {
        for (int i = 0; i < v->freqs_n && i < 64; i++) ff[i] = i == (int)v->freqs_zero_at ? 0.0f : 2.0f;
        int64_t ne[1] = {v->freqs_n};
        rc = npl_gguf_writer_add_tensor(w, "rope_freqs.weight", NPL_TYPE_F32, 1, ne, ff, sizeof(float) * (size_t)v->freqs_n);
    }
    for (int64_t i = 0; !rc && i < npl_gguf_n_tensors(src); i++) {
        const npl_gguf_tensor *t = npl_gguf_tensor_at(src, i);
        rc = npl_gguf_writer_add_tensor(w, t->name, t->type, t->n_dims, t->ne, t->data, t->size);
    }
    if (!rc) rc = npl_gguf_writer_write(w, path, err, sizeof err);
    if (rc) fprintf(stderr, "%s: cannot write: %s\n", path, err);
    npl_gguf_writer_free(w);
    npl_gguf_close(src);
    return rc;
}

static npl_runner_params params(void) {
    npl_runner_params p = npl_runner_default_params();
    p.n_ctx = 256;
    p.n_threads = 2;
    return p;
}

/* Logits of every position of a fixed prompt: [N_TOK][n_vocab], malloc'd. */
static float *run(const char *path, int *n_vocab) {
    npl_runner_params p = params();
    char err[512] = "";
    npl_runner *r = npl_runner_open(path, &p, err, sizeof err);
    if (!r) fprintf(stderr, "%s: %s\n", path, err);
    CHECK(r != NULL);
    if (!r) return NULL;
    *n_vocab = npl_runner_hparams(r)->n_vocab;
    int32_t tok[N_TOK];
    for (int i = 0; i < N_TOK; i++) tok[i] = (int32_t)((i * 37 + 5) % *n_vocab);
    const float *lg = npl_runner_forward(r, tok, N_TOK, 0, N_TOK, err, sizeof err);
    CHECK(lg != NULL);
    float *out = lg ? malloc(sizeof(float) * (size_t)N_TOK * (size_t)*n_vocab) : NULL;
    if (out) memcpy(out, lg, sizeof(float) * (size_t)N_TOK * (size_t)*n_vocab);
    npl_runner_close(r);
    return out;
}

/* Largest |a - b| over rows [r0, r1). */
static double max_diff(const float *a, const float *b, int n_vocab, int r0, int r1) {
    double m = 0;
    for (size_t i = (size_t)r0 * n_vocab; i < (size_t)r1 * n_vocab; i++) {
        double d = fabs((double)a[i] - (double)b[i]);
        if (!(d <= m)) m = d;
    }
    return m;
}

static float *run_variant(const char *src, const variant *v, const char *dir, int *n_vocab) {
    char path[600];
    snprintf(path, sizeof path, "%s/%s.gguf", dir, v->name);
    CHECK_EQ_INT(write_variant(src, v, path), 0);
    float *lg = run(path, n_vocab);
    unlink(path);
    return lg;
}

static void check_refused(const char *src, const variant *v, const char *dir) {
    char path[600], err[512] = "";
    snprintf(path, sizeof path, "%s/%s.gguf", dir, v->name);
    CHECK_EQ_INT(write_variant(src, v, path), 0);
    npl_runner_params p = params();
    npl_runner *r = npl_runner_open(path, &p, err, sizeof err);
    printf("%-28s %s\n", v->name, err);
    CHECK(r == NULL);
    npl_runner_close(r);
    CHECK(strchr(err, '\n') == NULL);
    CHECK(strstr(err, path) != NULL);
    CHECK(strstr(err, v->expect) != NULL);
    if (v->expect2) CHECK(strstr(err, v->expect2) != NULL);
    unlink(path);
}

/* The package of model (f32 activations) against its CPU path; returns the
 * largest logit difference over prompts around the chunk size plus decode. */
static double package_vs_cpu(const char *model, const char *dir) {
    npl_compile_params cp = npl_compile_default_params();
    cp.n_ctx = 256;
    cp.chunk = 16;
    cp.act = NPL_ACT_F32;
    char err[1024] = "";
    int rc = npl_compile(model, dir, &cp, err, sizeof err);
    if (rc) fprintf(stderr, "compile %s: %s\n", model, err);
    CHECK_EQ_INT(rc, 0);
    npl_runner_params p = params();
    double worst = 0;
    const int lens[] = {1, 17, 40};
    for (int i = 0; i < 3; i++) {
        npl_runner *cpu = npl_runner_open(model, &p, err, sizeof err);
        npl_runner *pkg = npl_runner_open(dir, &p, err, sizeof err);
        CHECK(cpu != NULL && pkg != NULL);
        if (cpu && pkg) {
            double e = package_compare(cpu, pkg, lens[i], 4, npl_runner_hparams(cpu)->n_vocab, 31, 7);
            worst = e > worst || isnan(e) ? e : worst;
        }
        npl_runner_close(cpu);
        npl_runner_close(pkg);
    }
    char cmd[700];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    CHECK_EQ_INT(system(cmd), 0);
    return worst;
}

/* ggml_rope_ext's rotation of one head in double: pair i of n_rot turned by
 * rope_yarn(pos * base^(-2i/n_rot) / ff[i]) and scaled by its mscale. */
static void rope_ref(double *x, int n_rot, int neox, int pos, const npl_rope_args *a) {
    for (int i = 0; i < n_rot / 2; i++) {
        double te = pos * pow(a->base, -2.0 * i / n_rot) / (a->freq_factors ? a->freq_factors[i] : 1.0);
        double th = a->freq_scale * te, ms = a->attn_factor;
        if (a->ext_factor != 0) {
            double y = (i - a->corr_lo) / fmax(0.001, a->corr_hi - a->corr_lo);
            double mix = (1 - fmin(1, fmax(0, y))) * a->ext_factor;
            th = th * (1 - mix) + te * mix;
            ms *= 1 + 0.1 * log(1 / a->freq_scale);
        }
        int i0 = neox ? i : 2 * i, i1 = neox ? i + n_rot / 2 : 2 * i + 1;
        double x0 = x[i0], x1 = x[i1];
        x[i0] = (x0 * cos(th) - x1 * sin(th)) * ms;
        x[i1] = (x0 * sin(th) + x1 * cos(th)) * ms;
    }
}

static void check_kernels(void) {
    enum { HD = 40, NR = 32 }; /* 8 dims left unrotated */
    float ff[NR / 2];
    for (int i = 0; i < NR / 2; i++) ff[i] = 1.0f + 7.0f * (float)i / (NR / 2 - 1);
    const npl_rope_args cases[] = {
        {.n_rot = NR, .base = 10000, .freq_scale = 1, .freq_factors = ff, .attn_factor = 1},
        {.n_rot = NR, .neox = 1, .base = 1e6f, .freq_scale = 0.25f, .ext_factor = 1, .attn_factor = 1, .corr_lo = 2, .corr_hi = 9},
        {.n_rot = NR, .base = 10000, .freq_scale = 0.5f, .freq_factors = ff, .ext_factor = 0.5f, .attn_factor = 0.9f,
         .corr_lo = 0, .corr_hi = 5},
        {.n_rot = NR, .neox = 1, .base = 10000, .freq_scale = 0.5f, .attn_factor = 1.5f},
    };
    double worst = 0, worst_l = 0;
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++)
        for (int pos = 0; pos < 4000; pos += 333) {
            float x[HD], y[HD];
            double r[HD];
            for (int i = 0; i < HD; i++) x[i] = y[i] = (float)(r[i] = sin(1.7 * i + 0.3 * (double)c) + 0.1);
            npl_rope_ext(x, 1, HD, pos, &cases[c]);
            npl_rope_llamacpp_ext(y, 1, HD, pos, &cases[c]);
            rope_ref(r, NR, cases[c].neox, pos, &cases[c]);
            for (int i = 0; i < HD; i++) {
                worst = fmax(worst, fabs(x[i] - r[i]));
                worst_l = fmax(worst_l, fabs(y[i] - r[i]));
                if (i >= NR) CHECK(x[i] == (float)(sin(1.7 * i + 0.3 * (double)c) + 0.1)); /* unrotated */
            }
        }
    printf("kernels vs ggml's formula in double: npl_rope_ext max |err| %.2g, llama.cpp's float recurrence %.2g\n",
           worst, worst_l);
    CHECK(worst < 1e-5);
    CHECK(worst_l < 1e-3); /* its float angles drift from the exact ones (measured 7e-5) */
    /* the defaults are the plain RoPE bit for bit */
    float a[HD], b[HD];
    for (int i = 0; i < HD; i++) a[i] = b[i] = (float)cos(0.37 * i);
    const npl_rope_args plain = {.n_rot = NR, .neox = 1, .base = 10000, .freq_scale = 0.5f, .attn_factor = 1};
    npl_rope_ext(a, 1, HD, 777, &plain);
    npl_rope(b, 1, HD, NR, 777, 10000, 0.5f, 1);
    CHECK(!memcmp(a, b, sizeof a));
}

/* A graph file keeps a rope's factors input and yarn params. */
static void check_graph_file(const char *dir) {
    npl_graph *g = npl_graph_new();
    int64_t xs[3] = {8, 2, NPL_DIM_SEQ}, ps = NPL_DIM_SEQ, fs = 4;
    static const float ff[4] = {1, 2, 4, 8};
    int x = npl_input(g, "x", NPL_TYPE_F32, 3, xs), pos = npl_input(g, "pos", NPL_TYPE_I32, 1, &ps);
    int w = npl_weight(g, "rope_freqs.weight", NPL_TYPE_F32, 1, &fs, ff);
    const npl_rope_yarn yarn = {.ext_factor = 1, .attn_factor = 0.75f, .corr_lo = 1, .corr_hi = 6};
    int y = npl_apply_rope_ext(g, x, pos, w, 8, 1, 5e5f, 0.25f, &yarn);
    npl_graph_set_name(g, y, "y");
    char path[600], err[512] = "";
    snprintf(path, sizeof path, "%s/graph.gguf", dir);
    npl_gguf_writer *wr = npl_gguf_writer_new();
    CHECK(npl_graph_file_add(wr, g, err, sizeof err) == 0);
    CHECK(npl_gguf_writer_write(wr, path, err, sizeof err) == 0);
    npl_gguf_writer_free(wr);
    npl_gguf *f = npl_gguf_open(path, NULL, err, sizeof err);
    npl_graph *h = f ? npl_graph_file_load(f, err, sizeof err) : NULL;
    if (!h) fprintf(stderr, "graph file: %s\n", err);
    CHECK(h != NULL);
    if (h) {
        const npl_node *a = npl_graph_node(g, y), *b = npl_graph_node(h, npl_graph_find(h, "y"));
        CHECK_EQ_INT(b->n_src, 3);
        CHECK(!memcmp(a->ip, b->ip, sizeof a->ip) && !memcmp(a->fp, b->fp, sizeof a->fp));
        CHECK_EQ_INT(b->ip[2], 1);
        CHECK(b->fp[3] == 0.75f);
        CHECK(!strcmp(npl_graph_node(h, b->src[2])->name, "rope_freqs.weight"));
    }
    npl_graph_free(h);
    npl_gguf_close(f);
    npl_graph_free(g);
    unlink(path);
}

int main(void) {
    setvbuf(stdout, NULL, _IOLBF, 0);
    const char *data = getenv("NPL_TEST_DATA");
    CHECK(data != NULL);
    if (!data) TEST_MAIN_END();
    check_kernels();
    char plain[512], freqs[512], yarn[512], qwen3[512], dir[128];
    snprintf(plain, sizeof plain, "%s/models/rand-llama-f32.gguf", data);
    snprintf(freqs, sizeof freqs, "%s/models/rand-llama-ropefreqs-f32.gguf", data);
    snprintf(yarn, sizeof yarn, "%s/models/rand-qwen3-yarn-f32.gguf", data);
    snprintf(qwen3, sizeof qwen3, "%s/models/rand-qwen3-f32.gguf", data);
    snprintf(dir, sizeof dir, "/tmp/npl_test_rope_%d", (int)getpid());
    char cmd[256];
    snprintf(cmd, sizeof cmd, "mkdir -p '%s'", dir);
    CHECK_EQ_INT(system(cmd), 0);
    check_graph_file(dir);

    /* rope_freqs.weight: the same weights, other angles */
    int nv = 0, nv2 = 0;
    float *base = run(plain, &nv), *ff = run(freqs, &nv2);
    CHECK(base && ff && nv == nv2);
    if (base && ff) {
        double d0 = max_diff(base, ff, nv, 0, 1), d = max_diff(base, ff, nv, 1, N_TOK);
        printf("rope_freqs.weight: position 0 max |diff| %g (no rotation), positions 1..%d %g\n", d0, N_TOK - 1, d);
        CHECK(d0 == 0);
        CHECK(d > 0.5);
    }

    /* rope.scaling.type decides what rope.scaling.factor means */
    const variant none4 = {.name = "none-4", .set = {S("llama.rope.scaling.type", "none"), F("llama.rope.scaling.factor", 4)}};
    const variant linear4 = {.name = "linear-4", .set = {S("llama.rope.scaling.type", "linear"), F("llama.rope.scaling.factor", 4)}};
    const variant untyped4 = {.name = "untyped-4", .set = {F("llama.rope.scaling.factor", 4)}};
    const variant old4 = {.name = "scale-linear-4", .set = {F("llama.rope.scale_linear", 4)}};
    const variant yarn4 = {.name = "yarn-4", .set = {S("llama.rope.scaling.type", "yarn"), F("llama.rope.scaling.factor", 4),
                                      U("llama.rope.scaling.original_context_length", 256)}};
    const variant attn2 = {.name = "attn-factor-2", .set = {S("llama.rope.scaling.type", "none"), F("llama.rope.scaling.attn_factor", 2)}};
    float *l_none = run_variant(plain, &none4, dir, &nv2), *l_lin = run_variant(plain, &linear4, dir, &nv2);
    float *l_unt = run_variant(plain, &untyped4, dir, &nv2), *l_old = run_variant(plain, &old4, dir, &nv2);
    float *l_yarn = run_variant(plain, &yarn4, dir, &nv2), *l_attn = run_variant(plain, &attn2, dir, &nv2);
    CHECK(base && l_none && l_lin && l_unt && l_old && l_yarn && l_attn);
    if (base && l_none && l_lin && l_unt && l_old && l_yarn && l_attn) {
        double d_none = max_diff(base, l_none, nv, 0, N_TOK), d_lin = max_diff(base, l_lin, nv, 1, N_TOK);
        double d_unt = max_diff(l_lin, l_unt, nv, 0, N_TOK), d_old = max_diff(l_lin, l_old, nv, 0, N_TOK);
        double d_yarn = max_diff(l_lin, l_yarn, nv, 0, N_TOK), d_attn = max_diff(base, l_attn, nv, 1, N_TOK);
        printf("type none, factor 4 vs no scaling: %g; linear 4 vs none: %g; untyped 4 vs linear 4: %g; "
               "rope.scale_linear 4 vs linear 4: %g; yarn 4 vs linear 4: %g; attn_factor 2 vs none: %g\n",
               d_none, d_lin, d_unt, d_old, d_yarn, d_attn);
        CHECK(d_none == 0);  /* llama.cpp: "never scale if scaling type is none" */
        CHECK(d_lin > 0.5);
        CHECK(d_unt == 0);   /* the default type is linear */
        CHECK(d_old == 0);
        CHECK(d_yarn > 0.5);
        CHECK(d_attn > 0.5); /* q and k scaled: sharper attention (position 0 attends to itself only) */
    }
    free(l_none), free(l_lin), free(l_unt), free(l_old), free(l_yarn), free(l_attn);

    /* refused, with the key and the value */
    const variant bad[] = {
        {.name = "type-foo", .set = {S("llama.rope.scaling.type", "foo")}, .expect = "llama.rope.scaling.type", .expect2 = "'foo'"},
        {.name = "type-longrope", .set = {S("llama.rope.scaling.type", "longrope")}, .expect = "llama.rope.scaling.type",
         .expect2 = "'longrope' is not supported"},
        {.name = "type-u32", .set = {U("llama.rope.scaling.type", 1)}, .expect = "llama.rope.scaling.type", .expect2 = "not a string"},
        {.name = "factor-negative", .set = {F("llama.rope.scaling.factor", -2)}, .expect = "llama.rope.scaling.factor"},
        {.name = "yarn-beta-fast", .set = {S("llama.rope.scaling.type", "yarn"), F("llama.rope.scaling.yarn_beta_fast", 16)},
         .expect = "llama.rope.scaling.yarn_beta_fast", .expect2 = "16"},
        {.name = "freqs-zero", .freqs_n = 16, .freqs_zero_at = 3, .expect = "rope_freqs.weight", .expect2 = "entry 3"},
        {.name = "freqs-short", .freqs_n = 8, .freqs_zero_at = -1, .expect = "rope_freqs.weight", .expect2 = "[8, 1]"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) check_refused(plain, &bad[i], dir);
    const variant qwen_freqs = {.name = "qwen3-freqs", .freqs_n = 16, .freqs_zero_at = -1, .expect = "rope_freqs.weight", .expect2 = "qwen3"};
    check_refused(qwen3, &qwen_freqs, dir);

    /* packages: the accelerator applies factors and yarn like the CPU path */
    char pdir[256];
    snprintf(pdir, sizeof pdir, "%s/pkg-freqs", dir);
    double e = package_vs_cpu(freqs, pdir);
    printf("package vs CPU, rope_freqs: max |logit diff| %g (tolerance 1e-2)\n", e);
    CHECK(e < 1e-2);
    snprintf(pdir, sizeof pdir, "%s/pkg-yarn", dir);
    e = package_vs_cpu(yarn, pdir);
    printf("package vs CPU, yarn: max |logit diff| %g (tolerance 1e-2)\n", e);
    CHECK(e < 1e-2);

    free(base);
    free(ff);
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    CHECK_EQ_INT(system(cmd), 0);
    TEST_MAIN_END();
}
