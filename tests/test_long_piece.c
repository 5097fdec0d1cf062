/* A vocabulary may hold token texts of any length: a generated token whose
 * text is longer than the engine's 256-byte piece buffer must reach the
 * answer whole (it used to be dropped without a word), and the CLI's
 * tokenize must print it. tests/data/models/rand-llama-f32.gguf is copied
 * through npl_gguf_writer with the text of the token it generates first
 * (greedy) replaced by 300 bytes, and of a control token by 600. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "format/gguf.h"
#include "npullm.h"

static const char *PROMPT = "The quick brown fox";

static npl_engine_params params(void) {
    npl_engine_params p = npl_engine_default_params();
    p.n_ctx = 128;
    p.n_threads = 2;
    p.temperature = 0.0f;
    p.max_new_tokens = 1;
    p.use_template = 0;
    return p;
}

typedef struct {
    char *text;
    size_t len;
} sink;
static int collect(const char *t, size_t n, void *user) {
    sink *s = user;
    char *g = realloc(s->text, s->len + n + 1);
    if (!g) return 1;
    memcpy(g + s->len, t, n);
    s->text = g;
    s->len += n;
    s->text[s->len] = 0;
    return 0;
}

/* The answer to PROMPT (one greedy token) and the prompt's tokens. */
static char *answer(const char *model, int32_t *ids, int64_t *n_ids) {
    char err[512];
    npl_engine_params p = params();
    npl_engine *e = npl_engine_open(model, &p, err, sizeof err);
    CHECK(e != NULL);
    if (!e) {
        fprintf(stderr, "open %s: %s\n", model, err);
        return NULL;
    }
    *n_ids = npl_engine_tokenize(e, PROMPT, strlen(PROMPT), 1, 0, ids, 64);
    sink s = {NULL, 0};
    const npl_status st = npl_engine_complete(e, PROMPT, collect, &s);
    CHECK(st == NPL_DONE || st == NPL_OK);
    npl_engine_close(e);
    return s.text ? s.text : calloc(1, 1);
}

/* The greedy next token after the prompt's tokens. */
static int32_t argmax_next(const char *model) {
    char err[512];
    npl_engine_params p = params();
    npl_engine *e = npl_engine_open(model, &p, err, sizeof err);
    if (!e) return -1;
    int32_t ids[64];
    const int64_t n = npl_engine_tokenize(e, PROMPT, strlen(PROMPT), 1, 0, ids, 64);
    npl_status st;
    const float *l = n > 0 && n <= 64 ? npl_engine_eval(e, ids, (int)n, &st) : NULL;
    int32_t best = -1;
    for (int v = 0; l && v < npl_engine_n_vocab(e); v++)
        if (best < 0 || l[v] > l[best]) best = v;
    npl_engine_close(e);
    return best;
}

/* src with tokens[id1] = text1 and tokens[id2] = text2, id2 a control token */
static int write_variant(const npl_gguf *src, const char *path, int32_t id1, const char *text1, int32_t id2,
                         const char *text2) {
    npl_gguf_writer *w = npl_gguf_writer_new();
    int rc = w ? 0 : -1;
    for (int64_t i = 0; !rc && i < npl_gguf_n_kv(src); i++) {
        const npl_gguf_str k = npl_gguf_key(src, i);
        char key[256];
        snprintf(key, sizeof key, "%.*s", (int)k.len, k.ptr);
        const npl_gguf_vtype t = npl_gguf_kv_type(src, i);
        if (t == NPL_GGUF_STRING) {
            const npl_gguf_str s = npl_gguf_kv_str(src, i);
            char *v = strndup(s.ptr, s.len);
            rc = v ? npl_gguf_writer_set_str(w, key, v) : -1;
            free(v);
        } else if (t != NPL_GGUF_ARRAY) {
            rc = npl_gguf_writer_set_scalar(w, key, t, npl_gguf_kv_data(src, i));
        } else if (npl_gguf_arr_type(src, i) != NPL_GGUF_STRING) {
            const uint64_t n = npl_gguf_arr_n(src, i);
            if (!strcmp(key, "tokenizer.ggml.token_type") && npl_gguf_arr_type(src, i) == NPL_GGUF_INT32) {
                int32_t *ty = malloc(sizeof(int32_t) * n);
                memcpy(ty, npl_gguf_arr_data(src, i), sizeof(int32_t) * n);
                ty[id2] = 3; /* control */
                rc = npl_gguf_writer_set_arr(w, key, NPL_GGUF_INT32, ty, n);
                free(ty);
            } else {
                rc = npl_gguf_writer_set_arr(w, key, npl_gguf_arr_type(src, i), npl_gguf_arr_data(src, i), n);
            }
        } else {
            const uint64_t n = npl_gguf_arr_n(src, i);
            char **strs = calloc(n, sizeof(char *));
            for (uint64_t j = 0; strs && j < n; j++) {
                const npl_gguf_str s = npl_gguf_arr_str(src, i, j);
                const int is_tokens = !strcmp(key, "tokenizer.ggml.tokens");
                strs[j] = is_tokens && (int64_t)j == id1   ? strdup(text1)
                          : is_tokens && (int64_t)j == id2 ? strdup(text2)
                                                           : strndup(s.ptr ? s.ptr : "", s.len);
            }
            rc = strs ? npl_gguf_writer_set_arr_str(w, key, (const char *const *)strs, n) : -1;
            for (uint64_t j = 0; strs && j < n; j++) free(strs[j]);
            free(strs);
        }
    }
    for (int64_t i = 0; !rc && i < npl_gguf_n_tensors(src); i++) {
        const npl_gguf_tensor *t = npl_gguf_tensor_at(src, i);
        rc = npl_gguf_writer_add_tensor(w, t->name, t->type, t->n_dims, t->ne, t->data, t->size);
    }
    char err[512] = "";
    if (!rc) rc = npl_gguf_writer_write(w, path, err, sizeof err);
    if (rc) fprintf(stderr, "%s: cannot write: %s\n", path, err);
    npl_gguf_writer_free(w);
    return rc;
}

int main(void) {
    const char *data = getenv("NPL_TEST_DATA");
    char model[1024], path[256], err[512];
    snprintf(model, sizeof model, "%s/models/rand-llama-f32.gguf", data ? data : "data");
    snprintf(path, sizeof path, "/tmp/npl_test_long_piece_%d.gguf", (int)getpid());
    npl_gguf *src = npl_gguf_open(model, NULL, err, sizeof err);
    CHECK(src != NULL);
    if (!src) {
        fprintf(stderr, "%s\n", err);
        TEST_MAIN_END();
    }
    const int32_t next = argmax_next(model);
    CHECK(next >= 0);
    int32_t ids0[64], ids1[64];
    int64_t n0 = 0, n1 = 0;
    char *a0 = answer(model, ids0, &n0);
    printf("original: prompt of %lld tokens, greedy answer token %d '%s'\n", (long long)n0, next, a0 ? a0 : "");

    char long_text[301], ctl_text[601];
    memset(long_text, 'L', 300), long_text[300] = 0;
    ctl_text[0] = '<', memset(ctl_text + 1, 'C', 598), ctl_text[599] = '>', ctl_text[600] = 0;
    /* the control token: the last normal piece that is neither the answer nor in the prompt */
    int32_t ctl_id = (int32_t)npl_gguf_arr_n(src, npl_gguf_find_key(src, "tokenizer.ggml.tokens")) - 1;
    for (int again = 1; again;) {
        again = ctl_id == next;
        for (int64_t i = 0; i < n0; i++) again |= ids0[i] == ctl_id;
        if (again) ctl_id--;
    }
    CHECK_EQ_INT(write_variant(src, path, next, long_text, ctl_id, ctl_text), 0);
    char *a1 = answer(path, ids1, &n1);
    /* the prompt tokenizes as before: the change only touches the answer */
    CHECK(n0 > 0 && n1 == n0 && !memcmp(ids0, ids1, sizeof(int32_t) * (size_t)n0));
    printf("300-byte token: answer of %zu bytes\n", a1 ? strlen(a1) : 0);
    CHECK(a1 && !strcmp(a1, long_text));

    /* the CLI prints the 600-byte control token whole */
    const char *cli = getenv("NPL_CLI");
    CHECK(cli != NULL);
    if (cli) {
        char cmd[2000], out[256];
        snprintf(out, sizeof out, "/tmp/npl_test_long_piece_%d.txt", (int)getpid());
        snprintf(cmd, sizeof cmd, "'%s' tokenize -m '%s' --no-bos -p '%s' > '%s'", cli, path, ctl_text, out);
        CHECK_EQ_INT(system(cmd), 0);
        FILE *f = fopen(out, "r");
        char *buf = calloc(1, 4096);
        if (f && buf) buf[fread(buf, 1, 4095, f)] = 0;
        if (f) fclose(f);
        char want[700];
        snprintf(want, sizeof want, "%6d -> '%s'", ctl_id, ctl_text);
        printf("tokenize of the 600-byte control token: %.40s...\n", buf ? buf : "");
        CHECK(buf && strstr(buf, want) != NULL);
        free(buf);
        unlink(out);
    }
    free(a0);
    free(a1);
    npl_gguf_close(src);
    unlink(path);
    TEST_MAIN_END();
}
