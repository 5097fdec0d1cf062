/* The public headers as a C program sees them, and a few API contracts.
 * (examples/header_check.c compiles the same headers as strict C99 with
 * -pedantic -Werror; this test includes them first, on their own, and
 * checks at run time:)
 *   - npl_engine_default_params() are llama.cpp's sampling defaults
 *     (common/common.h: temp 0.80, top_k 40, top_p 0.95, min_p 0.05,
 *     penalty_repeat 1.00, penalty_last_n 64, penalty_freq/present 0.00) and
 *     the other defaults npullm.h documents;
 *   - a NULL or bad path, or bad parameters, fail with a message;
 *   - every function taking a handle accepts NULL without crashing. */
#include "npullm.h"
#include "npullm_accel.h"

#include <string.h>

#include "check.h"

static void check_defaults(void) {
    npl_engine_params p = npl_engine_default_params();
    CHECK_NEAR(p.temperature, 0.8, 1e-6);
    CHECK_EQ_INT(p.top_k, 40);
    CHECK_NEAR(p.top_p, 0.95, 1e-6);
    CHECK_NEAR(p.min_p, 0.05, 1e-6);
    CHECK_NEAR(p.repeat_penalty, 1.0, 0);
    CHECK_EQ_INT(p.repeat_last_n, 64);
    CHECK_NEAR(p.frequency_penalty, 0.0, 0);
    CHECK_NEAR(p.presence_penalty, 0.0, 0);
    /* as documented in npullm.h */
    CHECK_EQ_INT(p.n_ctx, 0);
    CHECK_EQ_INT(p.n_threads, 0);
    CHECK_EQ_INT(p.max_new_tokens, 512);
    CHECK_EQ_INT(p.use_template, 1);
    CHECK(p.chat_template == NULL && p.system_prompt == NULL && p.stop == NULL);
    CHECK_EQ_INT(p.seed, 0xFFFFFFFFu);
    CHECK_EQ_INT(p.n_chunk_limits, 0);
    CHECK_EQ_INT(p.kv_budget_bytes, 0);
    /* status values are part of the ABI */
    CHECK_EQ_INT(NPL_OK, 0);
    CHECK_EQ_INT(NPL_DONE, 1);
    CHECK(NPL_ERR_ARGUMENT < 0 && NPL_ERR_FILE < 0 && NPL_ERR_MEMORY < 0 && NPL_ERR_RUNTIME < 0 &&
          NPL_CONTEXT_FULL < 0 && NPL_CANCELLED < 0);
}

static void check_open_failures(const char *model) {
    char err[512];
    strcpy(err, "");
    CHECK(npl_engine_open(NULL, NULL, err, sizeof(err)) == NULL);
    printf("open(NULL): %s\n", err);
    CHECK(err[0] != 0);
    strcpy(err, "");
    CHECK(npl_engine_open("/nonexistent/model.gguf", NULL, err, sizeof(err)) == NULL);
    printf("open(missing): %s\n", err);
    CHECK(strstr(err, "/nonexistent/model.gguf") != NULL);
    /* a 1-byte buffer still gets a terminated (empty) message */
    char tiny[1] = {'x'};
    CHECK(npl_engine_open(NULL, NULL, tiny, sizeof(tiny)) == NULL);
    CHECK(tiny[0] == 0);
    if (!model) return;
    /* bad parameters are refused before anything is loaded, naming the field */
    static const struct {
        const char *field;
        int which;
    } bad[] = {{"top_p", 0}, {"min_p", 1}, {"n_threads", 2}, {"n_ctx", 3}, {"repeat_penalty", 4}, {"chunk_limits", 5}};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        npl_engine_params p = npl_engine_default_params();
        switch (bad[i].which) {
        case 0: p.top_p = 1.5f; break;
        case 1: p.min_p = -0.1f; break;
        case 2: p.n_threads = -1; break;
        case 3: p.n_ctx = -5; break;
        case 4: p.repeat_penalty = 0; break;
        case 5: p.n_chunk_limits = 1; p.chunk_limits[0] = 0; break;
        }
        strcpy(err, "");
        npl_engine *e = npl_engine_open(model, &p, err, sizeof(err));
        printf("bad %s: %s\n", bad[i].field, err);
        CHECK(e == NULL);
        npl_engine_close(e);
        CHECK(strstr(err, bad[i].field) != NULL);
    }
}

static int count_cb(const char *text, size_t len, void *user) {
    (void)text;
    *(size_t *)user += len;
    return 0;
}

static void check_null_handle(void) {
    npl_engine_close(NULL);
    npl_engine_cancel(NULL);
    CHECK(npl_engine_last_error(NULL) != NULL);
    size_t n = 0;
    CHECK(npl_engine_chat(NULL, "hi", count_cb, &n) < 0);
    CHECK(npl_engine_complete(NULL, "hi", count_cb, &n) < 0);
    CHECK(npl_engine_set_prompt(NULL, "hi") < 0);
    const char *t = NULL;
    size_t len = 0;
    CHECK(npl_engine_next(NULL, &t, &len) < 0);
    CHECK(npl_engine_rollback(NULL, 1) < 0);
    CHECK(npl_engine_reset(NULL) < 0);
    npl_stats s;
    CHECK(npl_engine_stats(NULL, &s) < 0);
    int32_t ids[4];
    CHECK(npl_engine_tokenize(NULL, "hi", 2, 1, 0, ids, 4) == -1);
    char piece[16];
    CHECK(npl_engine_token_to_piece(NULL, 0, piece, sizeof(piece)) == -1);
    CHECK(npl_engine_n_vocab(NULL) <= 0);
    npl_status st = NPL_OK;
    CHECK(npl_engine_eval(NULL, ids, 1, &st) == NULL);
    CHECK(st < 0);
    CHECK_EQ_INT(n, 0);
}

/* A small engine: stats before any turn, ranges of the tokenizer calls. */
static void check_small_engine(const char *model) {
    npl_engine_params p = npl_engine_default_params();
    p.n_ctx = 64;
    p.n_threads = 1;
    char err[512];
    npl_engine *e = npl_engine_open(model, &p, err, sizeof(err));
    if (!e) fprintf(stderr, "open %s: %s\n", model, err);
    CHECK(e != NULL);
    if (!e) return;
    CHECK(npl_engine_last_error(e) != NULL);
    npl_stats s;
    CHECK_EQ_INT(npl_engine_stats(e, &s), NPL_OK);
    CHECK_EQ_INT(s.n_past, 0);
    CHECK_EQ_INT(npl_engine_stats(e, NULL), NPL_ERR_ARGUMENT);
    int nv = npl_engine_n_vocab(e);
    CHECK(nv > 0);
    char piece[64];
    CHECK_EQ_INT(npl_engine_token_to_piece(e, -1, piece, sizeof(piece)), -1);
    CHECK_EQ_INT(npl_engine_token_to_piece(e, nv, piece, sizeof(piece)), -1);
    /* cap 0: the count is still returned, nothing written */
    int64_t need = npl_engine_tokenize(e, "hello world", 11, 1, 0, NULL, 0);
    CHECK(need > 0);
    int32_t ids[64];
    CHECK_EQ_INT(npl_engine_tokenize(e, "hello world", 11, 1, 0, ids, 64), need);
    npl_status st = NPL_OK;
    int32_t bad_id = nv;
    CHECK(npl_engine_eval(e, &bad_id, 1, &st) == NULL);
    CHECK_EQ_INT(st, NPL_ERR_ARGUMENT);
    CHECK(strlen(npl_engine_last_error(e)) > 0);
    CHECK(npl_engine_chat(e, NULL, NULL, NULL) < 0);
    npl_engine_close(e);
}

int main(void) {
    check_defaults();
    const char *data = getenv("NPL_TEST_DATA");
    char model[1024];
    if (data) snprintf(model, sizeof(model), "%s/models/rand-llama-f32.gguf", data);
    CHECK(data != NULL);
    check_open_failures(data ? model : NULL);
    check_null_handle();
    if (data) check_small_engine(model);
    TEST_MAIN_END();
}
