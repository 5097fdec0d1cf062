/* Every BPE pre-tokenizer name llama.cpp knows (npullm accepts them all),
 * against llama.cpp (tests/data/tokenizer/pre.json, made by
 * make_pre_fixtures.py through llama-cpp-python, which also checks that its
 * list is llama.cpp's): the gpt-2 vocabulary of llama.cpp's vocab fixtures
 * with only tokenizer.ggml.pre changed, the SPM-style / raw UTF-8 names also
 * on the gemma-4 vocabulary as tokenizer.ggml.model gpt2 ("NAME@gemma-4"),
 * kimi-k2 without merges, and the gpt-2 vocabulary as tokenizer.ggml.model
 * "whitespace" ("NAME@ws-model"); every corpus.json text (English, CJK, emoji,
 * code, whitespace runs, digits, contractions, random code points) encoded
 * with add_special 0 and 1 and the first ids decoded (clean_spaces is per
 * name). Also: an unknown name gives one line listing the known ones, and
 * the multi-regex families and the K2 splitter stay linear on a long text. */
#include <cjson/cJSON.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "format/gguf.h"
#include "llm/tokenizer.h"
#include "tokenizer_fixtures.h"

static double cpu_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int32_t *encode(const npl_tokenizer *t, const void *s, size_t n, int add, int64_t *n_out) {
    int64_t cap = (int64_t)n + 16;
    int32_t *ids = malloc(sizeof(int32_t) * (size_t)cap);
    for (;;) {
        int64_t r = npl_tokenize(t, s, n, add, 0, ids, cap);
        if (r < 0) { free(ids); *n_out = -1; return NULL; }
        if (r <= cap) { *n_out = r; return ids; }
        cap = r;
        ids = realloc(ids, sizeof(int32_t) * (size_t)cap);
    }
}

static int same_ids(const int32_t *got, int64_t n, const cJSON *want) {
    if (!got || n != cJSON_GetArraySize(want)) return 0;
    for (int64_t i = 0; i < n; i++)
        if (got[i] != cJSON_GetArrayItem(want, (int)i)->valueint) return 0;
    return 1;
}

static npl_tokenizer *load(const char *path, npl_gguf **g, char *err, size_t errlen) {
    *g = npl_gguf_open(path, NULL, err, errlen);
    if (!*g) return NULL;
    return npl_tokenizer_load(*g, err, errlen);
}

static void print_list(const char *what, const int32_t *v, int64_t n, const cJSON *want) {
    fprintf(stderr, "    %s:", what);
    if (want) for (int i = 0; i < cJSON_GetArraySize(want) && i < 40; i++) fprintf(stderr, " %d", cJSON_GetArrayItem(want, i)->valueint);
    else for (int64_t i = 0; i < n && i < 40; i++) fprintf(stderr, " %d", v[i]);
    fprintf(stderr, "\n");
}

static void one_name(const char *name, const char *gguf, const cJSON *e, const cJSON *corpus_ix,
                     unsigned char **texts, size_t *lens, const cJSON *lists, const cJSON *strs, int *all_ok) {
    char err[4096];
    npl_gguf *g = NULL;
    npl_tokenizer *t = load(gguf, &g, err, sizeof(err));
    CHECK(t != NULL);
    if (!t) { fprintf(stderr, "%s: %s\n", name, err); *all_ok = 0; npl_gguf_close(g); return; }
    int n = cJSON_GetArraySize(corpus_ix), ok0 = 0, ok1 = 0, okd = 0, shown = 0;
    const cJSON *ids0 = cJSON_GetObjectItem(e, "ids0"), *ids1 = cJSON_GetObjectItem(e, "ids1"),
                *detok = cJSON_GetObjectItem(e, "detok");
    /* texts llama.cpp aborts on (GGML_ASSERT; the generator saw each one die) */
    const int n_skip = cJSON_GetArraySize(cJSON_GetObjectItem(e, "skip"));
    for (int k = 0; k < n; k++) {
        int ti = cJSON_GetArrayItem(corpus_ix, k)->valueint;
        if (cJSON_GetArrayItem(ids0, k)->valueint < 0) {
            int64_t m;   /* ours must still tokenize it (spaces may have no token at all) */
            int32_t *a = encode(t, texts[ti], lens[ti], 0, &m);
            CHECK(a != NULL && m >= 0);
            free(a);
            continue;
        }
        const cJSON *w0 = cJSON_GetArrayItem(lists, cJSON_GetArrayItem(ids0, k)->valueint);
        const cJSON *w1 = cJSON_GetArrayItem(lists, cJSON_GetArrayItem(ids1, k)->valueint);
        int64_t m0, m1;
        int32_t *a = encode(t, texts[ti], lens[ti], 0, &m0), *b = encode(t, texts[ti], lens[ti], 1, &m1);
        int o0 = same_ids(a, m0, w0), o1 = same_ids(b, m1, w1);
        ok0 += o0;
        ok1 += o1;
        if ((!o0 || !o1) && shown++ < 4) {
            fprintf(stderr, "%s: corpus text %d differs (add_special %d)\n", name, ti, o0 ? 1 : 0);
            print_list("ours     ", o0 ? b : a, o0 ? m1 : m0, NULL);
            print_list("llama.cpp", NULL, 0, o0 ? w1 : w0);
        }
        /* decode llama.cpp's ids, not ours */
        int mw = cJSON_GetArraySize(w0);
        int32_t *wv = malloc(sizeof(int32_t) * (size_t)(mw + 1));
        for (int i = 0; i < mw; i++) wv[i] = cJSON_GetArrayItem(w0, i)->valueint;
        size_t wl;
        unsigned char *want = unhex(cJSON_GetArrayItem(strs, cJSON_GetArrayItem(detok, k)->valueint)->valuestring, &wl);
        int64_t need = npl_detokenize(t, wv, mw, NULL, 0, 0, 0);
        char *got = need >= 0 ? malloc((size_t)need + 1) : NULL;
        int od = got && npl_detokenize(t, wv, mw, got, need, 0, 0) == (int64_t)wl && memcmp(got, want, wl) == 0;
        okd += od;
        if (!od && shown++ < 4) fprintf(stderr, "%s: detokenize differs on corpus text %d\n", name, ti);
        free(got);
        free(want);
        free(wv);
        free(a);
        free(b);
    }
    CHECK(n_skip < n / 2);
    n -= n_skip;
    CHECK_EQ_INT(ok0, n);
    CHECK_EQ_INT(ok1, n);
    CHECK_EQ_INT(okd, n);
    if (ok0 != n || ok1 != n || okd != n) *all_ok = 0;
    printf("%-24s ids %d/%d, with BOS/EOS %d/%d, detokenize %d/%d", name, ok0, n, ok1, n, okd, n);
    if (n_skip) printf(" (%d texts left out: llama.cpp aborts on them)", n_skip);
    printf("\n");
    npl_tokenizer_free(t);
    npl_gguf_close(g);
}

/* one line, naming the field, the name and the known names */
static void refused(const char *dir, const char *name) {
    char path[1200], err[4096], want[128];
    snprintf(path, sizeof(path), "%s/%s.gguf", dir, name);
    npl_gguf *g = NULL;
    npl_tokenizer *t = load(path, &g, err, sizeof(err));
    CHECK(t == NULL);
    snprintf(want, sizeof(want), "tokenizer.ggml.pre: unsupported pre-tokenizer \"%s\" (known: default, ", name);
    /* one name per family, so that the line fits a 512-byte error buffer */
    int ok = !t && strstr(err, want) && strstr(err, "deepseek-v3") && strstr(err, "tekken") &&
             strstr(err, "aliases of these)") && !strstr(err, "mellum2") && strlen(err) < 512 && !strchr(err, '\n');
    CHECK(ok);
    printf("%s: %s\n", name, ok ? "refused, known names listed" : err);
    if (ok && strcmp(name, "no-such-pre") == 0) printf("  %s\n", strstr(err, "tokenizer.ggml.pre"));
    npl_tokenizer_free(t);
    npl_gguf_close(g);
    unlink(path);
}

/* A long mixed text through the families with the most regexes: linear. */
static void guard(const char *dir, const char *name) {
    char path[1200], err[512];
    snprintf(path, sizeof(path), "%s/%s.gguf", dir, name);
    npl_gguf *g = NULL;
    npl_tokenizer *t = load(path, &g, err, sizeof(err));
    CHECK(t != NULL);
    if (!t) { npl_gguf_close(g); return; }
    static const char unit[] = "Hello, world! 12345 \xe4\xbd\xa0\xe5\xa5\xbd  \xf0\x9f\x98\x80 it's x=y;\n\t";
    size_t n = 400000, u = sizeof(unit) - 1;
    char *s = malloc(n);
    for (size_t i = 0; i < n; i++) s[i] = unit[i % u];
    double c0 = cpu_now();
    int64_t m;
    int32_t *ids = encode(t, s, n, 0, &m);
    double dc = cpu_now() - c0;
    printf("%s: %zu bytes -> %lld tokens in %.2f s CPU\n", name, n, (long long)m, dc);
    CHECK(ids != NULL && m > 0);
    CHECK(dc < 20.0);
    free(ids);
    free(s);
    npl_tokenizer_free(t);
    npl_gguf_close(g);
}

int main(void) {
    char path[1024], dir[900], cmd[3000];
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, sizeof(dir), "%s/npl_tok_pre_XXXXXX", tmp && *tmp ? tmp : "/tmp");
    CHECK(mkdtemp(dir) != NULL);
    snprintf(cmd, sizeof(cmd), "'%s/../../scripts/python' '%s/tokenizer/make_pre_fixtures.py' --link '%s'",
             data_dir(), data_dir(), dir);
    int rc = system(cmd);
    CHECK(rc == 0);
    snprintf(cmd, sizeof(cmd), "'%s/../../scripts/python' '%s/tokenizer/make_pre_fixtures.py' --link '%s' no-such-pre",
             data_dir(), data_dir(), dir);
    CHECK(system(cmd) == 0);

    snprintf(path, sizeof(path), "%s/tokenizer/pre.json", data_dir());
    char *js = read_all(path, NULL);
    snprintf(path, sizeof(path), "%s/tokenizer/corpus.json", data_dir());
    char *cs = read_all(path, NULL);
    CHECK(js && cs);
    cJSON *doc = js ? cJSON_Parse(js) : NULL, *corpus = cs ? cJSON_Parse(cs) : NULL;
    CHECK(doc && corpus);
    if (doc && corpus) {
        int nt = cJSON_GetArraySize(corpus);
        unsigned char **texts = calloc((size_t)nt, sizeof(*texts));
        size_t *lens = calloc((size_t)nt, sizeof(*lens));
        for (int i = 0; i < nt; i++) texts[i] = unhex(cJSON_GetArrayItem(corpus, i)->valuestring, &lens[i]);
        const cJSON *ix = cJSON_GetObjectItem(doc, "corpus"), *lists = cJSON_GetObjectItem(doc, "lists"),
                    *strs = cJSON_GetObjectItem(doc, "texts"), *e;
        int names = 0, all_ok = 1;
        cJSON_ArrayForEach(e, cJSON_GetObjectItem(doc, "pre")) {
            snprintf(path, sizeof(path), "%s/%s.gguf", dir, e->string);
            one_name(e->string, path, e, ix, texts, lens, lists, strs, &all_ok);
            names++;
        }
        CHECK(names >= 98);   /* llama.cpp's 91 names and 7 variants */
        printf("%d pre-tokenizer cases x %d texts: %s\n", names, cJSON_GetArraySize(ix),
               all_ok ? "all equal llama.cpp's" : "DIFFER");
        guard(dir, "deepseek-llm");
        guard(dir, "chameleon");
        guard(dir, "gpt-4o");
        guard(dir, "kimi-k2");
        guard(dir, "sarvam-moe@gemma-4");
        cJSON_ArrayForEach(e, cJSON_GetObjectItem(doc, "pre")) {
            snprintf(path, sizeof(path), "%s/%s.gguf", dir, e->string);
            unlink(path);
        }
        for (int i = 0; i < nt; i++) free(texts[i]);
        free(texts);
        free(lens);
    }
    refused(dir, "no-such-pre");
    rmdir(dir);
    cJSON_Delete(doc);
    cJSON_Delete(corpus);
    free(js);
    free(cs);
    TEST_MAIN_END();
}
