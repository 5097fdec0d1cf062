/* The public model/session, tokenizer, GGUF, config, accelerator-lookup and
 * bench calls (include/npullm*.h) against the internals they wrap, on the
 * random GGUFs of tests/data/models:
 *   - npl_session_forward's logits equal npl_runner_forward's bit for bit,
 *     for a prefill and the decode step after it, and two sessions on one
 *     model agree with each other;
 *   - npl_model_tokenize / token_to_piece equal the internal tokenizer's;
 *   - the GGUF getters read what the internal reader reads;
 *   - bad input (token id out of range, positions past the context, a
 *     vocab_only model asked for a session, a missing file, NULL handles)
 *     gives the documented status and a message, never a crash;
 *   - npl_bench_matmul gives a[m,k] . b[k,n] (against a double product). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "format/gguf.h"
#include "llm/runner.h"
#include "llm/tokenizer.h"
#include "npullm.h"
#include "npullm_bench.h"
#include "npullm_gguf.h"
#include "npullm_plugin.h"
#include "npullm_tokenizer.h"

static char model_path[4096];

static void test_forward_matches_runner(void) {
    char err[512] = "";
    npl_status st = NPL_ERR_RUNTIME;
    npl_model_params mp = npl_model_default_params();
    mp.n_threads = 2;
    npl_session_params sp = npl_session_default_params();
    sp.n_ctx = 64;
    npl_model *m = npl_model_open(model_path, &mp, &st, err, sizeof err);
    CHECK(m != NULL);
    CHECK_EQ_INT(st, NPL_OK);
    if (!m) {
        fprintf(stderr, "%s\n", err);
        return;
    }
    npl_session *s = npl_session_new(m, &sp, &st, err, sizeof err), *s2 = npl_session_new(m, &sp, NULL, NULL, 0);
    CHECK(s != NULL && s2 != NULL);
    CHECK_EQ_INT(st, NPL_OK);
    npl_runner_params rp = npl_runner_default_params();
    rp.n_ctx = 64;
    rp.n_threads = 2;
    npl_runner *r = npl_runner_open(model_path, &rp, err, sizeof err);
    CHECK(r != NULL);
    if (!s || !s2 || !r) goto done;
    const int n_vocab = npl_model_n_vocab(m);
    CHECK_EQ_INT(n_vocab, npl_runner_hparams(r)->n_vocab);
    CHECK(!strcmp(npl_model_arch(m), npl_runner_hparams(r)->arch_name));
    CHECK_EQ_INT(npl_model_n_ctx_train(m), npl_runner_hparams(r)->n_ctx_train);
    CHECK_EQ_INT(npl_session_n_ctx(s), 64);
    CHECK_EQ_INT(npl_session_n_threads(s), 2);
    CHECK(!strcmp(npl_session_kernel_family(s), npl_runner_isa(r)));
    const int32_t toks[6] = {1, 17, 42, 99, 3, 250 % n_vocab};
    const size_t row = sizeof(float) * (size_t)n_vocab;
    float *mine = malloc(3 * row), *theirs = malloc(3 * row);
    CHECK(mine && theirs);
    /* prefill of 5 with 3 output rows, then one decode step */
    const float *a = npl_session_forward(s, toks, 5, 0, 3, &st);
    CHECK_EQ_INT(st, NPL_OK);
    if (a && mine) memcpy(mine, a, 3 * row);
    const float *b = npl_runner_forward(r, toks, 5, 0, 3, err, sizeof err);
    CHECK(a && b);
    if (a && b && mine) CHECK(memcmp(mine, b, 3 * row) == 0);
    const float *a2 = npl_session_forward(s2, toks, 5, 0, 3, NULL);
    CHECK(a2 && mine && memcmp(mine, a2, 3 * row) == 0);
    a = npl_session_forward(s, toks + 5, 1, 5, 1, &st);
    if (a && mine) memcpy(mine, a, row);
    b = npl_runner_forward(r, toks + 5, 1, 5, 1, err, sizeof err);
    CHECK(a && b);
    if (a && b && mine) CHECK(memcmp(mine, b, row) == 0);
    /* the logits are real numbers, not all equal */
    int varied = 0;
    for (int i = 1; a && i < n_vocab; i++) varied |= mine[i] != mine[0];
    CHECK(varied);
    free(mine);
    free(theirs);
    /* bad input: status and message, the session still usable */
    const int32_t bad[1] = {n_vocab};
    CHECK(npl_session_forward(s, bad, 1, 0, 1, &st) == NULL);
    CHECK_EQ_INT(st, NPL_ERR_ARGUMENT);
    CHECK(strstr(npl_session_last_error(s), "out of") != NULL);
    CHECK(npl_session_forward(s, toks, 2, 63, 1, &st) == NULL);
    CHECK_EQ_INT(st, NPL_ERR_ARGUMENT);
    CHECK(npl_session_forward(s, toks, 2, 0, 3, &st) == NULL); /* n_out > n */
    CHECK_EQ_INT(st, NPL_ERR_ARGUMENT);
    CHECK(npl_session_forward(s, toks, 1, 0, 1, &st) != NULL);
    CHECK_EQ_INT(st, NPL_OK);
done:
    npl_runner_close(r);
    npl_session_free(s2);
    npl_session_free(s);
    npl_model_close(m);
}

static void test_tokenizer_matches(void) {
    char err[512];
    npl_model_params mp = npl_model_default_params();
    mp.vocab_only = 1;
    npl_model *m = npl_model_open(model_path, &mp, NULL, err, sizeof err);
    npl_gguf *g = npl_gguf_open(model_path, NULL, err, sizeof err);
    npl_tokenizer *t = g ? npl_tokenizer_load(g, err, sizeof err) : NULL;
    CHECK(m && t);
    if (!m || !t) goto done;
    const char *text = "Hello world, <s> it's 2026!";
    int32_t mine[64], theirs[64];
    for (int special = 0; special < 2; special++) {
        int64_t n = npl_model_tokenize(m, text, strlen(text), 1, special, mine, 64);
        int64_t n2 = npl_tokenize(t, text, strlen(text), 1, special, theirs, 64);
        CHECK(n > 3);
        CHECK_EQ_INT(n, n2);
        CHECK(n == n2 && n <= 64 && memcmp(mine, theirs, sizeof(int32_t) * (size_t)n) == 0);
        CHECK_EQ_INT(npl_model_tokenize(m, text, strlen(text), 1, special, NULL, 0), n);
    }
    CHECK_EQ_INT(npl_model_token_bos(m), npl_tokenizer_bos(t));
    CHECK_EQ_INT(npl_model_token_eos(m), npl_tokenizer_eos(t));
    CHECK_EQ_INT(npl_model_add_bos(m), npl_tokenizer_add_bos(t));
    CHECK_EQ_INT(npl_model_token_is_eog(m, npl_tokenizer_eos(t)), 1);
    char p1[64], p2[64];
    for (int32_t id = 0; id < 300; id++) {
        int a = npl_model_token_to_piece(m, id, p1, sizeof p1, 1), b = npl_token_to_piece(t, id, p2, sizeof p2, 1);
        CHECK_EQ_INT(a, b);
        if (a == b && a > 0 && a <= 64 && memcmp(p1, p2, (size_t)a)) CHECK(0);
    }
    CHECK_EQ_INT(npl_model_token_to_piece(m, npl_model_n_vocab(m), p1, sizeof p1, 1), -1);
    CHECK_EQ_INT(npl_model_has_vocab(m), 1);
    /* vocab_only: no sessions */
    npl_status st = NPL_OK;
    CHECK(npl_session_new(m, NULL, &st, err, sizeof err) == NULL);
    CHECK_EQ_INT(st, NPL_ERR_ARGUMENT);
    CHECK(strstr(err, "vocab_only") != NULL);
done:
    npl_tokenizer_free(t);
    npl_gguf_close(g);
    npl_model_close(m);
}

static void test_gguf(void) {
    char err[512];
    npl_gguf_file *f = npl_gguf_file_open(model_path, NULL, err, sizeof err);
    npl_gguf *g = npl_gguf_open(model_path, NULL, err, sizeof err);
    CHECK(f && g);
    if (!f || !g) goto done;
    CHECK_EQ_INT(npl_gguf_file_version(f), npl_gguf_version(g));
    CHECK_EQ_INT(npl_gguf_file_n_kv(f), npl_gguf_n_kv(g));
    CHECK_EQ_INT(npl_gguf_file_n_tensors(f), npl_gguf_n_tensors(g));
    char arch[32], key[64];
    CHECK(npl_gguf_file_get_str(f, "general.architecture", arch, sizeof arch) > 0);
    snprintf(key, sizeof key, "%s.context_length", arch);
    int64_t v = -1, want = -1;
    CHECK_EQ_INT(npl_gguf_file_get_int(f, key, &v), NPL_OK);
    CHECK_EQ_INT(npl_gguf_get_i64(g, key, &want), 0);
    CHECK_EQ_INT(v, want);
    CHECK(npl_gguf_file_has_key(f, key) && !npl_gguf_file_has_key(f, "no.such.key"));
    CHECK_EQ_INT(npl_gguf_file_get_int(f, "no.such.key", &v), NPL_ERR_ARGUMENT);
    CHECK_EQ_INT(npl_gguf_file_get_int(f, "general.architecture", &v), NPL_ERR_ARGUMENT); /* a string */
    CHECK_EQ_INT(npl_gguf_file_get_str(f, key, arch, sizeof arch), -1);                    /* an integer */
    /* token types: an i32 array as long as the vocabulary */
    int64_t types[4];
    int64_t n = npl_gguf_file_get_int_array(f, "tokenizer.ggml.token_type", types, 4);
    int64_t ki = npl_gguf_find_key(g, "tokenizer.ggml.token_type");
    CHECK(ki >= 0 && n == (int64_t)npl_gguf_arr_n(g, ki));
    int32_t t0 = -1;
    if (ki >= 0) memcpy(&t0, npl_gguf_arr_data(g, ki), 4);
    CHECK_EQ_INT(types[0], t0);
    CHECK_EQ_INT(npl_gguf_file_get_int_array(f, "tokenizer.ggml.tokens", types, 4), -1); /* strings */
done:
    npl_gguf_close(g);
    npl_gguf_file_close(f);
}

static void test_bad_input(void) {
    char err[512] = "";
    npl_status st = NPL_OK;
    CHECK(npl_model_open("/no/such/model.gguf", NULL, &st, err, sizeof err) == NULL);
    CHECK_EQ_INT(st, NPL_ERR_FILE);
    CHECK(strstr(err, "/no/such/model.gguf") != NULL);
    CHECK(npl_model_open(NULL, NULL, &st, err, sizeof err) == NULL);
    CHECK_EQ_INT(st, NPL_ERR_ARGUMENT);
    npl_model_params mp = npl_model_default_params();
    mp.kernel_family = 9;
    CHECK(npl_model_open(model_path, &mp, &st, err, sizeof err) == NULL);
    CHECK_EQ_INT(st, NPL_ERR_ARGUMENT);
    CHECK(npl_gguf_file_open("/no/such.gguf", &st, err, sizeof err) == NULL);
    CHECK_EQ_INT(st, NPL_ERR_FILE);
    CHECK(npl_accel_lib_open("nonexistent_accel", "/no/such/dir", &st, err, sizeof err) == NULL);
    CHECK(strstr(err, "nonexistent_accel") != NULL);
    npl_engine_params ep = npl_engine_default_params();
    CHECK(npl_config_load("/no/such/config.json", &ep, &st, err, sizeof err) == NULL);
    CHECK_EQ_INT(st, NPL_ERR_FILE);
    /* NULL handles */
    npl_model_close(NULL);
    npl_session_free(NULL);
    npl_gguf_file_close(NULL);
    npl_accel_lib_close(NULL);
    npl_config_free(NULL);
    npl_bench_matmul_free(NULL);
    CHECK_EQ_INT(npl_model_n_vocab(NULL), 0);
    CHECK_EQ_INT(npl_model_tokenize(NULL, "x", 1, 1, 1, NULL, 0), -1);
    CHECK(npl_session_forward(NULL, NULL, 0, 0, 0, &st) == NULL);
    CHECK_EQ_INT(st, NPL_ERR_ARGUMENT);
    CHECK(npl_session_new(NULL, NULL, &st, NULL, 0) == NULL);
    CHECK_EQ_INT(npl_bench_matmul_run(NULL, NULL), NPL_ERR_ARGUMENT);
    CHECK(npl_bench_matmul_new(0, 1, 1, NULL, NULL, 0, &st, err, sizeof err) == NULL);
    CHECK_EQ_INT(st, NPL_ERR_ARGUMENT);
}

static void test_accel_and_bench(void) {
    char err[256];
    npl_accel_lib *l = npl_accel_lib_open("vnpu", NULL, NULL, err, sizeof err);
    CHECK(l != NULL && npl_accel_lib_api(l) != NULL);
    if (l) CHECK(npl_accel_api_check(npl_accel_lib_api(l), NPL_ACCEL_ABI_VERSION) == NULL);
    npl_accel_lib_close(l);
    CHECK_EQ_INT(npl_accel_f32_to_f16(1.0f), 0x3C00);
    CHECK_EQ_INT(npl_accel_f32_to_bf16(1.0f), 0x3F80);
    CHECK_NEAR(npl_accel_f16_to_f32(0xC000), -2.0, 0);
    enum { M = 3, K = 40, N = 5 };
    float a[M * K], b[K * N], c[M * N];
    for (int i = 0; i < M * K; i++) a[i] = (float)((i * 37) % 11 - 5) / 4.0f;
    for (int i = 0; i < K * N; i++) b[i] = (float)((i * 13) % 7 - 3) / 8.0f;
    npl_bench_matmul *bm = npl_bench_matmul_new(M, K, N, a, b, 1, NULL, err, sizeof err);
    CHECK(bm != NULL);
    if (!bm) return;
    CHECK(!strncmp(npl_bench_matmul_kernel(bm), "f32/", 4));
    CHECK_EQ_INT(npl_bench_matmul_run(bm, c), NPL_OK);
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            double ref = 0;
            for (int l = 0; l < K; l++) ref += (double)a[i * K + l] * b[l * N + j];
            CHECK_NEAR(c[i * N + j], ref, 1e-4);
        }
    npl_bench_matmul_free(bm);
}

int main(void) {
    const char *data = getenv("NPL_TEST_DATA");
    CHECK(data != NULL);
    if (!data) TEST_MAIN_END();
    snprintf(model_path, sizeof model_path, "%s/models/rand-llama-q8_0.gguf", data);
    test_forward_matches_runner();
    test_tokenizer_matches();
    test_gguf();
    test_bad_input();
    test_accel_and_bench();
    TEST_MAIN_END();
}
