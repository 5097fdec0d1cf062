/* Models with the head sizes real checkpoints rarely have: 768 and 1024
 * (NPL_ATTN_MAX_HD, the largest the attention kernels take), 520 and odd
 * ones (100, 72, 33 with a partial RoPE). Each is a tiny random-weight f32
 * GGUF (one layer, 2-4 heads) written here; its logits at every position of
 * a 60-token prefill and 3 decode steps, on every kernel family this CPU
 * has and with llama.cpp's attention arithmetic, must match a
 * double-precision forward pass written here, and a package compiled for
 * vnpu must match the CPU path. Larger heads are refused at load with one
 * line naming the GGUF key and the value, whether attention.key_length says
 * so or n_embd / n_head does; the CLI's eval-logits --isa 0 runs a 768 one.
 * (Before the kernels took these sizes, the plain C attention wrote past its
 * 512-float stack buffers.) */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "compiler/compiler.h"
#include "kernels/dtype.h"
#include "cpu/cpu_backend.h"
#include "format/gguf.h"
#include "llm/runner.h"
#include "package_compare.h"

enum { E = 64, F = 96, V = 80, N_PROMPT = 60, N_DEC = 3, N_CTX = 128 };

typedef struct {
    const char *arch; /* llama (GPT-J RoPE) or qwen3 (NEOX RoPE, q/k norms) */
    int hd, n_rot, n_head, n_kv;
} shape;

typedef struct {
    shape s;
    float *emb, *attn_norm, *wq, *wk, *wv, *qn, *kn, *wo, *ffn_norm, *wg, *wu, *wd, *out_norm, *wout;
} model;

static const float EPS = 1e-6f, BASE = 10000.0f;

static uint64_t rng_state = 0x243F6A8885A308D3ull;
static double rnd(void) { /* uniform in [-sqrt 3, sqrt 3): unit variance */
    rng_state ^= rng_state << 13, rng_state ^= rng_state >> 7, rng_state ^= rng_state << 17;
    return ((double)(rng_state >> 11) * 0x1p-53 * 2.0 - 1.0) * 1.7320508075688772;
}
static float *randv(int64_t n, double std, double center) {
    float *a = malloc(sizeof(float) * (size_t)n);
    for (int64_t i = 0; i < n; i++) a[i] = (float)(center + std * rnd());
    return a;
}

static void model_init(model *m, shape s) {
    memset(m, 0, sizeof *m);
    m->s = s;
    const int64_t nq = (int64_t)s.n_head * s.hd, nk = (int64_t)s.n_kv * s.hd;
    m->emb = randv((int64_t)V * E, 1.0, 0);
    m->attn_norm = randv(E, 0.1, 1.0);
    m->wq = randv(nq * E, 2.0 / sqrt(E), 0); /* q scaled up: attention visibly non-uniform */
    m->wk = randv(nk * E, 1.0 / sqrt(E), 0);
    m->wv = randv(nk * E, 1.0 / sqrt(E), 0);
    m->qn = randv(s.hd, 0.15, 1.5);
    m->kn = randv(s.hd, 0.1, 1.0);
    m->wo = randv(E * nq, 1.0 / sqrt((double)nq), 0);
    m->ffn_norm = randv(E, 0.1, 1.0);
    m->wg = randv((int64_t)F * E, 1.0 / sqrt(E), 0);
    m->wu = randv((int64_t)F * E, 1.0 / sqrt(E), 0);
    m->wd = randv((int64_t)E * F, 1.0 / sqrt(F), 0);
    m->out_norm = randv(E, 0.4, 4.0); /* logits of std ~4 */
    m->wout = randv((int64_t)V * E, 1.0 / sqrt(E), 0);
}

static void model_free(model *m) {
    float *p[] = {m->emb, m->attn_norm, m->wq, m->wk, m->wv, m->qn, m->kn, m->wo,
                  m->ffn_norm, m->wg, m->wu, m->wd, m->out_norm, m->wout};
    for (size_t i = 0; i < sizeof p / sizeof *p; i++) free(p[i]);
}

static int is_qwen3(const shape *s) { return !strcmp(s->arch, "qwen3"); }

/* Metadata of a model; key_length < 0 leaves attention.key_length out. */
static void put_hparams(npl_gguf_writer *w, const char *arch, int n_embd, int n_head, int n_kv, int key_length,
                        int n_rot) {
    char k[128];
#define KEY(suffix) (snprintf(k, sizeof k, "%s.%s", arch, suffix), k)
    npl_gguf_writer_set_str(w, "general.architecture", arch);
    npl_gguf_writer_set_u32(w, KEY("context_length"), 4096);
    npl_gguf_writer_set_u32(w, KEY("embedding_length"), (uint32_t)n_embd);
    npl_gguf_writer_set_u32(w, KEY("block_count"), 1);
    npl_gguf_writer_set_u32(w, KEY("feed_forward_length"), F);
    npl_gguf_writer_set_u32(w, KEY("attention.head_count"), (uint32_t)n_head);
    npl_gguf_writer_set_u32(w, KEY("attention.head_count_kv"), (uint32_t)n_kv);
    if (key_length >= 0) {
        npl_gguf_writer_set_u32(w, KEY("attention.key_length"), (uint32_t)key_length);
        npl_gguf_writer_set_u32(w, KEY("attention.value_length"), (uint32_t)key_length);
    }
    if (n_rot > 0) npl_gguf_writer_set_u32(w, KEY("rope.dimension_count"), (uint32_t)n_rot);
    npl_gguf_writer_set_f32(w, KEY("attention.layer_norm_rms_epsilon"), EPS);
    npl_gguf_writer_set_f32(w, KEY("rope.freq_base"), BASE);
#undef KEY
}

static void put(npl_gguf_writer *w, const char *name, const float *data, int64_t ne0, int64_t ne1) {
    const int64_t ne[2] = {ne0, ne1};
    CHECK_EQ_INT(npl_gguf_writer_add_tensor(w, name, NPL_TYPE_F32, ne1 > 1 ? 2 : 1, ne, data,
                                            sizeof(float) * (size_t)(ne0 * ne1)), 0);
}

static int model_write(const model *m, const char *path) {
    const shape *s = &m->s;
    const int64_t nq = (int64_t)s->n_head * s->hd, nk = (int64_t)s->n_kv * s->hd;
    npl_gguf_writer *w = npl_gguf_writer_new();
    put_hparams(w, s->arch, E, s->n_head, s->n_kv, s->hd, s->n_rot);
    put(w, "token_embd.weight", m->emb, E, V);
    put(w, "blk.0.attn_norm.weight", m->attn_norm, E, 1);
    put(w, "blk.0.attn_q.weight", m->wq, E, nq);
    put(w, "blk.0.attn_k.weight", m->wk, E, nk);
    put(w, "blk.0.attn_v.weight", m->wv, E, nk);
    if (is_qwen3(s)) {
        put(w, "blk.0.attn_q_norm.weight", m->qn, s->hd, 1);
        put(w, "blk.0.attn_k_norm.weight", m->kn, s->hd, 1);
    }
    put(w, "blk.0.attn_output.weight", m->wo, nq, E);
    put(w, "blk.0.ffn_norm.weight", m->ffn_norm, E, 1);
    put(w, "blk.0.ffn_gate.weight", m->wg, E, F);
    put(w, "blk.0.ffn_up.weight", m->wu, E, F);
    put(w, "blk.0.ffn_down.weight", m->wd, F, E);
    put(w, "output_norm.weight", m->out_norm, E, 1);
    put(w, "output.weight", m->wout, E, V);
    char err[512];
    const int rc = npl_gguf_writer_write(w, path, err, sizeof err);
    if (rc) fprintf(stderr, "write %s: %s\n", path, err);
    npl_gguf_writer_free(w);
    return rc;
}

/* ---- the double-precision reference ---- */

/* y[r] = sum_c W[r][c] x[c], W [rows][cols] as GGUF stores it */
static void mv(const float *W, const double *x, double *y, int64_t rows, int64_t cols) {
    for (int64_t r = 0; r < rows; r++) {
        double a = 0;
        for (int64_t c = 0; c < cols; c++) a += (double)W[r * cols + c] * x[c];
        y[r] = a;
    }
}
static void rmsnorm(const double *x, const float *w, double *y, int n) {
    double ss = 0;
    for (int i = 0; i < n; i++) ss += x[i] * x[i];
    const double s = 1.0 / sqrt(ss / n + EPS);
    for (int i = 0; i < n; i++) y[i] = x[i] * s * w[i];
}
static void rope(double *x, const shape *s, double pos) {
    const int half = s->n_rot / 2, neox = is_qwen3(s);
    for (int i = 0; i < half; i++) {
        const double th = pos * pow(BASE, -2.0 * i / s->n_rot), c = cos(th), sn = sin(th);
        const int i0 = neox ? i : 2 * i, i1 = neox ? i + half : 2 * i + 1;
        const double x0 = x[i0], x1 = x[i1];
        x[i0] = x0 * c - x1 * sn;
        x[i1] = x0 * sn + x1 * c;
    }
}
static double f16r(double v) { return npl_f16_to_f32(npl_f32_to_f16((float)v)); } /* as the engine's caches hold it */

/* logits [n][V] for tokens at positions 0..n-1; scores over the first
 * score_dims dims of each head only (hd: all), the negative control: what
 * a kernel that silently cut heads short would compute */
static double *reference(const model *m, const int32_t *tok, int n, int score_dims) {
    const shape *s = &m->s;
    const int hd = s->hd, nh = s->n_head, nkv = s->n_kv, group = nh / nkv;
    const int64_t nq = (int64_t)nh * hd, nk = (int64_t)nkv * hd;
    double *K = malloc(sizeof(double) * (size_t)(n * nk)), *Vc = malloc(sizeof(double) * (size_t)(n * nk));
    double *x = malloc(sizeof(double) * E), *h = malloc(sizeof(double) * E), *q = malloc(sizeof(double) * (size_t)nq);
    double *att = malloc(sizeof(double) * (size_t)nq), *o = malloc(sizeof(double) * E), *sc = malloc(sizeof(double) * (size_t)n);
    double *g = malloc(sizeof(double) * F), *u = malloc(sizeof(double) * F);
    double *logits = malloc(sizeof(double) * (size_t)n * V);
    for (int t = 0; t < n; t++) {
        for (int i = 0; i < E; i++) x[i] = m->emb[(int64_t)tok[t] * E + i];
        rmsnorm(x, m->attn_norm, h, E);
        double *kt = K + t * nk, *vt = Vc + t * nk;
        mv(m->wq, h, q, nq, E);
        mv(m->wk, h, kt, nk, E);
        mv(m->wv, h, vt, nk, E);
        for (int hh = 0; hh < nh; hh++) {
            if (is_qwen3(s)) rmsnorm(q + hh * hd, m->qn, q + hh * hd, hd);
            rope(q + hh * hd, s, t);
        }
        for (int hh = 0; hh < nkv; hh++) {
            if (is_qwen3(s)) rmsnorm(kt + hh * hd, m->kn, kt + hh * hd, hd);
            rope(kt + hh * hd, s, t);
        }
        for (int64_t i = 0; i < nq; i++) q[i] = f16r(q[i]);
        for (int64_t i = 0; i < nk; i++) kt[i] = f16r(kt[i]), vt[i] = f16r(vt[i]);
        for (int hh = 0; hh < nh; hh++) {
            const int kvh = hh / group;
            double mx = -INFINITY, sum = 0;
            for (int j = 0; j <= t; j++) {
                double d = 0;
                for (int c = 0; c < score_dims; c++) d += q[hh * hd + c] * K[j * nk + kvh * hd + c];
                sc[j] = d / sqrt((double)hd);
                mx = fmax(mx, sc[j]);
            }
            for (int c = 0; c < hd; c++) att[hh * hd + c] = 0;
            for (int j = 0; j <= t; j++) {
                const double p = exp(sc[j] - mx);
                sum += p;
                for (int c = 0; c < hd; c++) att[hh * hd + c] += p * Vc[j * nk + kvh * hd + c];
            }
            for (int c = 0; c < hd; c++) att[hh * hd + c] /= sum;
        }
        mv(m->wo, att, o, E, nq);
        for (int i = 0; i < E; i++) x[i] += o[i];
        rmsnorm(x, m->ffn_norm, h, E);
        mv(m->wg, h, g, F, E);
        mv(m->wu, h, u, F, E);
        for (int i = 0; i < F; i++) g[i] = g[i] / (1.0 + exp(-g[i])) * u[i];
        mv(m->wd, g, o, E, F);
        for (int i = 0; i < E; i++) x[i] += o[i];
        rmsnorm(x, m->out_norm, h, E);
        mv(m->wout, h, logits + (int64_t)t * V, V, E);
    }
    free(K), free(Vc), free(x), free(h), free(q), free(att), free(o), free(sc), free(g), free(u);
    return logits;
}

/* ---- the engine ---- */

/* Largest |logit - reference| over a prefill of N_PROMPT tokens (every
 * position's logits) and N_DEC decode steps; NaN or a failure count as inf. */
static double run_engine(const char *path, int isa, int arith, const int32_t *tok, const double *ref) {
    char err[512];
    npl_runner_params rp = npl_runner_default_params();
    rp.n_ctx = N_CTX;
    rp.n_threads = 2;
    rp.isa = isa;
    rp.arith = arith;
    npl_runner *r = npl_runner_open(path, &rp, err, sizeof err);
    if (!r) {
        fprintf(stderr, "open %s: %s\n", path, err);
        return INFINITY;
    }
    double worst = 0;
    const float *l = npl_runner_forward(r, tok, N_PROMPT, 0, N_PROMPT, err, sizeof err);
    if (!l) worst = INFINITY;
    for (int64_t i = 0; l && i < (int64_t)N_PROMPT * V; i++) {
        const double d = fabs(l[i] - ref[i]);
        if (!(d <= worst)) worst = d;
    }
    for (int t = N_PROMPT; l && t < N_PROMPT + N_DEC; t++) {
        l = npl_runner_forward(r, tok + t, 1, t, 1, err, sizeof err);
        if (!l) worst = INFINITY;
        for (int v = 0; l && v < V; v++) {
            const double d = fabs(l[v] - ref[(int64_t)t * V + v]);
            if (!(d <= worst)) worst = d;
        }
    }
    if (!l) fprintf(stderr, "forward %s: %s\n", path, err);
    npl_runner_close(r);
    return worst;
}

/* Measured (logits of std ~4): our kernels 3e-6 to 4e-4 from the reference
 * (f32 sums over up to 2048 terms, and a q/k element now and then rounding
 * to the other neighbouring f16 than the double value does); llama.cpp's
 * attention arithmetic (f16 accumulator or f16 probabilities) up to 1.1e-2.
 * Scores that miss even 8 of a head's 520 dims move logits by 2 and more. */
static const double TOL = 2e-3, TOL_LLAMACPP = 3e-2;

static void model_case(shape s, int test_package) {
    char path[256], dir[256], err[512];
    snprintf(path, sizeof path, "/tmp/npl_test_head_dim_%d_%s_%d.gguf", (int)getpid(), s.arch, s.hd);
    model m;
    model_init(&m, s);
    if (model_write(&m, path)) {
        CHECK(0);
        model_free(&m);
        return;
    }
    int32_t tok[N_PROMPT + N_DEC];
    for (int i = 0; i < N_PROMPT + N_DEC; i++) tok[i] = (int32_t)((i * 37 + 11) % V);
    double *ref = reference(&m, tok, N_PROMPT + N_DEC, s.hd);
    const int cut = s.hd > 512 ? 512 : s.hd / 2;
    double *cut_ref = reference(&m, tok, N_PROMPT + N_DEC, cut);
    double ctl = 0;
    for (int64_t i = 0; i < (int64_t)(N_PROMPT + N_DEC) * V; i++) ctl = fmax(ctl, fabs(ref[i] - cut_ref[i]));
    printf("%s hd %d (rope %d, heads %d/%d): scores over %d dims only move logits by %.3g\n", s.arch, s.hd,
           s.n_rot, s.n_head, s.n_kv, cut, ctl);
    CHECK(ctl > 20 * TOL_LLAMACPP); /* the comparison can tell a wrong model */
    static const char *names[] = {"generic", "avx2", "avx512", "amx"};
    for (int isa = NPL_ISA_GENERIC; isa <= (int)npl_cpu_best_isa(); isa++) {
        const double e = run_engine(path, isa, NPL_ARITH_OURS, tok, ref);
        printf("  %-8s max |logit - reference| %.3g\n", names[isa], e);
        CHECK(e <= TOL);
    }
    static const struct { int mode; const char *name; } ariths[] = {
        {NPL_ARITH_LLAMACPP_FA, "llama.cpp flash attention"}, {NPL_ARITH_LLAMACPP_NOFA, "llama.cpp attention"}};
    for (int a = 0; a < 2; a++) {
        const double e = run_engine(path, NPL_ISA_GENERIC, ariths[a].mode, tok, ref);
        printf("  %s arithmetic: max |logit - reference| %.3g\n", ariths[a].name, e);
        CHECK(e <= TOL_LLAMACPP);
    }
    if (test_package) { /* vnpu: chunked prefill through the package, f32 activations */
        snprintf(dir, sizeof dir, "/tmp/npl_test_head_dim_%d_%s_%d.pkg", (int)getpid(), s.arch, s.hd);
        npl_compile_params p = npl_compile_default_params();
        p.n_ctx = N_CTX;
        p.chunk = 16;
        p.act = NPL_ACT_F32;
        p.n_threads = 2;
        const int rc = npl_compile(path, dir, &p, err, sizeof err);
        CHECK_EQ_INT(rc, 0);
        if (rc) fprintf(stderr, "compile: %s\n", err);
        npl_runner_params rp = npl_runner_default_params();
        rp.n_ctx = N_CTX;
        rp.n_threads = 2;
        npl_runner *cpu = npl_runner_open(path, &rp, err, sizeof err);
        npl_runner *pkg = rc ? NULL : npl_runner_open(dir, &rp, err, sizeof err);
        CHECK(cpu != NULL && pkg != NULL);
        if (cpu && pkg) {
            const double e = package_compare(cpu, pkg, 37, N_DEC, V, 37, 11);
            printf("  vnpu package, prompt 37 + %d decode steps: max |logit diff| vs the CPU path %.3g\n", N_DEC, e);
            CHECK(e < 1e-2);
        } else if (!pkg) {
            fprintf(stderr, "open package: %s\n", err);
        }
        npl_runner_close(pkg);
        npl_runner_close(cpu);
        char cmd[600];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
        CHECK_EQ_INT(system(cmd), 0);
    }
    free(ref);
    free(cut_ref);
    model_free(&m);
    unlink(path);
}

/* ---- refused at load ---- */

/* A model whose head size is over the limit: npl_runner_open fails with a
 * message naming the key and the value. Metadata only: the check comes
 * before any tensor is looked at. */
static void refused_case(int n_embd, int n_head, int key_length, int want_hd) {
    char path[256], err[512] = "", want[64];
    snprintf(path, sizeof path, "/tmp/npl_test_head_dim_%d_big.gguf", (int)getpid());
    npl_gguf_writer *w = npl_gguf_writer_new();
    put_hparams(w, "qwen3", n_embd, n_head, 1, key_length, -1);
    const float one = 1.0f;
    put(w, "output_norm.weight", &one, 1, 1);
    CHECK_EQ_INT(npl_gguf_writer_write(w, path, err, sizeof err), 0);
    npl_gguf_writer_free(w);
    npl_runner_params rp = npl_runner_default_params();
    rp.n_ctx = N_CTX;
    npl_runner *r = npl_runner_open(path, &rp, err, sizeof err);
    printf("head size %d (%s): %s\n", want_hd, key_length >= 0 ? "key_length" : "n_embd / n_head", err);
    CHECK(r == NULL);
    snprintf(want, sizeof want, "head size %d", want_hd);
    CHECK(strstr(err, "qwen3.attention.key_length") && strstr(err, want) && strstr(err, "1024") &&
          strstr(err, path) && !strchr(err, '\n'));
    npl_runner_close(r);
    unlink(path);
}

/* The repro of the report: eval-logits --isa 0 on a head size of 768. */
static void cli_case(void) {
    const char *cli = getenv("NPL_CLI");
    if (!cli) {
        fprintf(stderr, "NPL_CLI not set: CLI case not run\n");
        CHECK(0);
        return;
    }
    char path[256], ids[256], out[256], cmd[1200];
    snprintf(path, sizeof path, "/tmp/npl_test_head_dim_%d_cli.gguf", (int)getpid());
    snprintf(ids, sizeof ids, "/tmp/npl_test_head_dim_%d_cli.ids", (int)getpid());
    snprintf(out, sizeof out, "/tmp/npl_test_head_dim_%d_cli.f32", (int)getpid());
    model m;
    model_init(&m, (shape){"qwen3", 768, 768, 2, 1});
    CHECK_EQ_INT(model_write(&m, path), 0);
    FILE *f = fopen(ids, "w");
    int32_t tok[20];
    for (int i = 0; i < 20; i++) tok[i] = (int32_t)((i * 37 + 11) % V), fprintf(f, "%d ", tok[i]);
    fclose(f);
    snprintf(cmd, sizeof cmd, "'%s' eval-logits -m '%s' --ids '%s' --out '%s' --isa 0 -t 2", cli, path, ids, out);
    const int st = system(cmd);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    double *ref = reference(&m, tok, 20, 768), worst = 0;
    float *l = malloc(sizeof(float) * 20 * V);
    f = fopen(out, "rb");
    CHECK(f && fread(l, sizeof(float), 20 * V, f) == 20 * V);
    if (f) fclose(f);
    for (int i = 0; i < 20 * V; i++) worst = fabs(l[i] - ref[i]) <= worst ? worst : fabs(l[i] - ref[i]);
    printf("npullm eval-logits --isa 0, head size 768: max |logit - reference| %.3g\n", worst);
    CHECK(worst <= TOL);
    free(l), free(ref);
    model_free(&m);
    unlink(path), unlink(ids), unlink(out);
}

int main(void) {
    model_case((shape){"qwen3", 768, 768, 2, 1}, 1);
    model_case((shape){"qwen3", NPL_ATTN_MAX_HD, NPL_ATTN_MAX_HD, 2, 2}, 1);
    model_case((shape){"llama", NPL_ATTN_MAX_HD, 256, 4, 1}, 0);
    model_case((shape){"llama", 520, 520, 2, 1}, 0);
    model_case((shape){"qwen3", 100, 64, 4, 2}, 1);
    model_case((shape){"llama", 72, 72, 4, 2}, 0);
    model_case((shape){"llama", 33, 32, 3, 1}, 0);
    refused_case(E, 2, NPL_ATTN_MAX_HD + 16, NPL_ATTN_MAX_HD + 16);
    refused_case(4096, 2, -1, 2048);
    cli_case();
    TEST_MAIN_END();
}
