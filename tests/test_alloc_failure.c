/* Status codes at the public API, and allocation-failure injection.
 *
 * Codes: a missing or malformed file gives NPL_ERR_FILE, a bad argument
 * NPL_ERR_ARGUMENT and a failed allocation NPL_ERR_MEMORY, from
 * npl_engine_open2 and from a generation (npl_engine_last_status too).
 *
 * Injection: this test is linked with -Wl,--wrap for the C allocators
 * (malloc, calloc, realloc, strdup, strndup, aligned_alloc, posix_memalign)
 * and for the PCRE2 calls that allocate inside libpcre2 (a shared library
 * that --wrap cannot reach into: the wrapper fails the call the way PCRE2
 * reports its own allocation failure). Every such call made by the library
 * is counted; for every n the n-th one fails, along opening a model and one
 * chat turn, from a GGUF file (SPM and BPE vocabularies, one and two
 * threads) and from a compiled package (graph file, plugin op, vnpu context
 * binary). Each run must end in a clean state: either the call fails with
 * NPL_ERR_MEMORY or the failure had no effect (same text as without it),
 * nothing the library allocated is left after npl_engine_close (live
 * allocations are tracked here, ASan's leak check runs too), and after a
 * failed turn the same engine answers the same turn again. */
#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "compiler/compiler.h"
#include "npullm.h"

/* ---- injection ---- */

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static int armed;            /* count (and maybe fail) calls */
static long n_calls, fail_at; /* fail_at: 1-based call to fail, 0 = none */
static int injected;         /* the failure happened */
/* distinct call sites seen while armed (return addresses) */
#define MAX_SITES 4096
static void *sites[MAX_SITES];
static int n_sites;
/* live pointers from the wrapped allocators: open addressing */
#define LIVE_CAP (1u << 20)
static void **live;
static long n_live;

static size_t slot_of(void *p) {
    uintptr_t h = (uintptr_t)p;
    h ^= h >> 17;
    h *= 0x9E3779B97F4A7C15ull;
    return (size_t)(h >> 40) & (LIVE_CAP - 1);
}
static void live_add(void *p) {
    if (!p || !live) return;
    size_t i = slot_of(p);
    while (live[i] && live[i] != (void *)1) i = (i + 1) & (LIVE_CAP - 1);
    live[i] = p;
    n_live++;
}
static void live_del(void *p) {
    if (!p || !live) return;
    for (size_t i = slot_of(p); live[i]; i = (i + 1) & (LIVE_CAP - 1))
        if (live[i] == p) {
            live[i] = (void *)1; /* tombstone */
            n_live--;
            return;
        }
}

/* One counted call: 1 if it is the one to fail. */
extern char __executable_start; /* the linker's: start of the executable's mapping */
static int tick(void *site) {
    if (!armed) return 0;
    n_calls++;
    int k = 0;
    while (k < n_sites && sites[k] != site) k++;
    if (k == n_sites && n_sites < MAX_SITES) sites[n_sites++] = site;
    if (n_calls == fail_at) {
        if (getenv("NPL_ALLOC_DEBUG")) /* the site: addr2line -f -e test_alloc_failure OFFSET */
            fprintf(stderr, "inject %ld at %p\n", n_calls, (void *)((char *)site - &__executable_start));
        injected = 1;
        errno = ENOMEM; /* as the C library's allocators do */
        return 1;
    }
    return 0;
}
#define TICK() tick(__builtin_return_address(0))

void *__real_malloc(size_t n);
void *__real_calloc(size_t a, size_t b);
void *__real_realloc(void *p, size_t n);
void __real_free(void *p);
char *__real_strdup(const char *s);
char *__real_strndup(const char *s, size_t n);
void *__real_aligned_alloc(size_t al, size_t n);
int __real_posix_memalign(void **out, size_t al, size_t n);

void *__wrap_malloc(size_t n) {
    pthread_mutex_lock(&mu);
    void *p = TICK() ? NULL : __real_malloc(n);
    live_add(p);
    pthread_mutex_unlock(&mu);
    return p;
}
void *__wrap_calloc(size_t a, size_t b) {
    pthread_mutex_lock(&mu);
    void *p = TICK() ? NULL : __real_calloc(a, b);
    live_add(p);
    pthread_mutex_unlock(&mu);
    return p;
}
void *__wrap_realloc(void *p, size_t n) {
    pthread_mutex_lock(&mu);
    void *q = NULL;
    if (!TICK()) {
        q = __real_realloc(p, n);
        if (q || n == 0) live_del(p);
        live_add(q);
    }
    pthread_mutex_unlock(&mu);
    return q;
}
void __wrap_free(void *p) {
    pthread_mutex_lock(&mu);
    live_del(p);
    __real_free(p);
    pthread_mutex_unlock(&mu);
}
char *__wrap_strdup(const char *s) {
    pthread_mutex_lock(&mu);
    char *p = TICK() ? NULL : __real_strdup(s);
    live_add(p);
    pthread_mutex_unlock(&mu);
    return p;
}
char *__wrap_strndup(const char *s, size_t n) {
    pthread_mutex_lock(&mu);
    char *p = TICK() ? NULL : __real_strndup(s, n);
    live_add(p);
    pthread_mutex_unlock(&mu);
    return p;
}
void *__wrap_aligned_alloc(size_t al, size_t n) {
    pthread_mutex_lock(&mu);
    void *p = TICK() ? NULL : __real_aligned_alloc(al, n);
    live_add(p);
    pthread_mutex_unlock(&mu);
    return p;
}
int __wrap_posix_memalign(void **out, size_t al, size_t n) {
    pthread_mutex_lock(&mu);
    int rc = 12; /* ENOMEM */
    if (!TICK()) {
        rc = __real_posix_memalign(out, al, n);
        if (rc == 0) live_add(*out);
    }
    pthread_mutex_unlock(&mu);
    return rc;
}

/* PCRE2 allocates inside the shared library: its allocating entry points
 * fail as PCRE2 documents for an allocation failure. */
pcre2_code *__real_pcre2_compile_8(PCRE2_SPTR, PCRE2_SIZE, uint32_t, int *, PCRE2_SIZE *, pcre2_compile_context *);
pcre2_match_context *__real_pcre2_match_context_create_8(pcre2_general_context *);
pcre2_match_data *__real_pcre2_match_data_create_8(uint32_t, pcre2_general_context *);
int __real_pcre2_match_8(const pcre2_code *, PCRE2_SPTR, PCRE2_SIZE, PCRE2_SIZE, uint32_t, pcre2_match_data *,
                         pcre2_match_context *);
int __real_pcre2_jit_compile_8(pcre2_code *, uint32_t);

static int pcre_tick(void *site) {
    pthread_mutex_lock(&mu);
    int f = tick(site);
    pthread_mutex_unlock(&mu);
    return f;
}
pcre2_code *__wrap_pcre2_compile_8(PCRE2_SPTR p, PCRE2_SIZE n, uint32_t o, int *ec, PCRE2_SIZE *eo,
                                   pcre2_compile_context *c) {
    if (pcre_tick(__builtin_return_address(0))) {
        *ec = PCRE2_ERROR_HEAP_FAILED;
        *eo = 0;
        return NULL;
    }
    return __real_pcre2_compile_8(p, n, o, ec, eo, c);
}
pcre2_match_context *__wrap_pcre2_match_context_create_8(pcre2_general_context *g) {
    return pcre_tick(__builtin_return_address(0)) ? NULL : __real_pcre2_match_context_create_8(g);
}
pcre2_match_data *__wrap_pcre2_match_data_create_8(uint32_t n, pcre2_general_context *g) {
    return pcre_tick(__builtin_return_address(0)) ? NULL : __real_pcre2_match_data_create_8(n, g);
}
int __wrap_pcre2_match_8(const pcre2_code *c, PCRE2_SPTR s, PCRE2_SIZE n, PCRE2_SIZE at, uint32_t o,
                         pcre2_match_data *md, pcre2_match_context *mc) {
    return pcre_tick(__builtin_return_address(0)) ? PCRE2_ERROR_NOMEMORY : __real_pcre2_match_8(c, s, n, at, o, md, mc);
}
int __wrap_pcre2_jit_compile_8(pcre2_code *c, uint32_t o) {
    return pcre_tick(__builtin_return_address(0)) ? PCRE2_ERROR_NOMEMORY : __real_pcre2_jit_compile_8(c, o);
}

static void arm(long n) {
    pthread_mutex_lock(&mu);
    armed = 1;
    n_calls = 0;
    fail_at = n;
    injected = 0;
    pthread_mutex_unlock(&mu);
}
static void disarm(void) {
    pthread_mutex_lock(&mu);
    armed = 0;
    fail_at = 0;
    pthread_mutex_unlock(&mu);
}

/* ---- the engine under test ---- */

typedef struct {
    char text[4096];
    size_t len;
} sink;

static int on_text(const char *t, size_t n, void *user) {
    sink *s = user;
    if (s->len + n < sizeof(s->text)) {
        memcpy(s->text + s->len, t, n);
        s->len += n;
        s->text[s->len] = 0;
    }
    return 0;
}

static int n_threads = 1, kernel_family = 0;

static npl_engine_params test_params(void) {
    npl_engine_params p = npl_engine_default_params();
    p.n_ctx = 128;
    p.n_threads = n_threads;
    p.temperature = 0; /* greedy: the text is a function of the model */
    p.max_new_tokens = 3;
    p.kernel_family = kernel_family;
    return p;
}

static const char *PROMPT = "Hello there, how are you?";
static const char *prompt; /* of the sweep */

/* One run: open, one chat turn, close. Returns the chat status (or the open
 * status if open failed); the answer goes to out. */
static npl_status run_once(const char *path, npl_status *open_st, sink *out, char *err, size_t errlen) {
    npl_engine_params p = test_params();
    out->len = 0;
    out->text[0] = 0;
    npl_engine *e = npl_engine_open2(path, &p, open_st, err, errlen);
    if (!e) return *open_st;
    npl_status st = npl_engine_chat(e, prompt, on_text, out);
    if (st != NPL_DONE) {
        CHECK_EQ_INT(npl_engine_last_status(e), st);
        snprintf(err, errlen, "%s", npl_engine_last_error(e));
        /* the engine is still usable: the same turn again (the one failure
         * has happened: nothing fails any more) */
        sink again = {0};
        npl_engine_reset(e);
        npl_status st2 = npl_engine_chat(e, prompt, on_text, &again);
        if (st2 != NPL_DONE) fprintf(stderr, "%s: chat after a failed turn: %d %s\n", path, st2, npl_engine_last_error(e));
        CHECK_EQ_INT(st2, NPL_DONE);
    }
    npl_engine_close(e);
    return st;
}

static void sweep(const char *path, int threads, int family, const char *text) {
    prompt = text;
    n_threads = threads;
    kernel_family = family;
    char err[512];
    sink ref = {0}, got = {0};
    npl_status ost;
    /* reference run, counting */
    long live0 = n_live;
    arm(0);
    npl_status st = run_once(path, &ost, &ref, err, sizeof err);
    long total = n_calls;
    int sites_total = n_sites;
    disarm();
    if (st != NPL_DONE) fprintf(stderr, "%s: reference run: %d %s\n", path, st, err);
    CHECK_EQ_INT(st, NPL_DONE);
    CHECK(ref.len > 0);
    CHECK_EQ_INT(n_live, live0);
    int bad = 0, n_mem = 0, n_same = 0;
    for (long n = 1; n <= total && bad < 10; n++) {
        live0 = n_live;
        arm(n);
        err[0] = 0;
        st = run_once(path, &ost, &got, err, sizeof err);
        int inj = injected;
        disarm();
        int ok;
        if (st == NPL_DONE) { /* recovered: the failure must not show */
            ok = got.len == ref.len && !memcmp(got.text, ref.text, ref.len);
            if (getenv("NPL_ALLOC_DEBUG")) fprintf(stderr, "  recovered\n");
            n_same++;
        } else {
            ok = inj && st == NPL_ERR_MEMORY && err[0];
            n_mem++;
        }
        if (!inj) ok = 0; /* every n up to the reference count is reached */
        if (n_live != live0) {
            fprintf(stderr, "%s: allocation %ld failed: %ld allocations left after close\n", path, n, n_live - live0);
            ok = 0;
        }
        if (!ok) {
            fprintf(stderr, "%s: allocation %ld of %ld failed: status %d (open %d), \"%s\", text \"%s\"\n", path, n,
                    total, st, ost, err, got.text);
            bad++;
        }
        CHECK(ok);
    }
    printf("%s (%d threads, kernels %d): %ld allocations at %d call sites along open + one chat turn; each failed "
           "once: %d NPL_ERR_MEMORY, %d without effect\n",
           path, threads, family, total, sites_total, n_mem, n_same);
    n_sites = 0;
}

/* ---- the public codes ---- */

static void test_codes(const char *data, const char *model) {
    char err[512], path[4096];
    npl_status st = NPL_OK;
    npl_engine_params p = test_params();
    /* a missing file */
    snprintf(path, sizeof path, "%s/no-such-model.gguf", data);
    CHECK(npl_engine_open2(path, &p, &st, err, sizeof err) == NULL);
    CHECK_EQ_INT(st, NPL_ERR_FILE);
    CHECK(strstr(err, "no-such-model.gguf") != NULL);
    /* a malformed file */
    snprintf(path, sizeof path, "/tmp/npl_alloc_failure_%d.gguf", (int)getpid());
    FILE *fp = fopen(path, "wb");
    CHECK(fp != NULL);
    if (fp) {
        fputs("GGUF this is not a model", fp);
        fclose(fp);
    }
    st = NPL_OK;
    CHECK(npl_engine_open2(path, &p, &st, err, sizeof err) == NULL);
    CHECK_EQ_INT(st, NPL_ERR_FILE);
    remove(path);
    /* bad arguments */
    st = NPL_OK;
    CHECK(npl_engine_open2(NULL, &p, &st, err, sizeof err) == NULL);
    CHECK_EQ_INT(st, NPL_ERR_ARGUMENT);
    npl_engine_params bad = p;
    bad.n_threads = -3;
    st = NPL_OK;
    CHECK(npl_engine_open2(model, &bad, &st, err, sizeof err) == NULL);
    CHECK_EQ_INT(st, NPL_ERR_ARGUMENT);
    CHECK(strstr(err, "n_threads") != NULL);
    bad = p;
    bad.chat_template = "no-such-template";
    st = NPL_OK;
    CHECK(npl_engine_open2(model, &bad, &st, err, sizeof err) == NULL);
    CHECK_EQ_INT(st, NPL_ERR_ARGUMENT);
    /* over the KV budget is a memory failure */
    bad = p;
    bad.kv_budget_bytes = 1024;
    st = NPL_OK;
    CHECK(npl_engine_open2(model, &bad, &st, err, sizeof err) == NULL);
    CHECK_EQ_INT(st, NPL_ERR_MEMORY);
    /* the first allocation fails */
    arm(1);
    st = NPL_OK;
    CHECK(npl_engine_open2(model, &p, &st, err, sizeof err) == NULL);
    disarm();
    CHECK_EQ_INT(st, NPL_ERR_MEMORY);
    /* npl_engine_open is npl_engine_open2 without the code */
    CHECK(npl_engine_open(NULL, &p, err, sizeof err) == NULL);
    CHECK(strlen(err) > 0);

    st = NPL_ERR_RUNTIME;
    npl_engine *e = npl_engine_open2(model, &p, &st, err, sizeof err);
    CHECK(e != NULL);
    CHECK_EQ_INT(st, NPL_OK);
    if (!e) return;
    CHECK_EQ_INT(npl_engine_last_status(e), NPL_OK);
    /* bad arguments to a generation and to the tokenizer */
    CHECK_EQ_INT(npl_engine_chat(e, NULL, NULL, NULL), NPL_ERR_ARGUMENT);
    CHECK_EQ_INT(npl_engine_last_status(e), NPL_ERR_ARGUMENT);
    int32_t ids[64];
    CHECK_EQ_INT(npl_engine_tokenize(e, NULL, 5, 1, 0, ids, 64), -1);
    CHECK_EQ_INT(npl_engine_last_status(e), NPL_ERR_ARGUMENT);
    CHECK(strlen(npl_engine_last_error(e)) > 0);
    CHECK_EQ_INT(npl_engine_tokenize(e, "hello", 5, 1, 0, ids, -1), -1);
    CHECK_EQ_INT(npl_engine_last_status(e), NPL_ERR_ARGUMENT);
    /* the tokenizer out of memory: the first allocation of the call fails */
    arm(1);
    int64_t nt = npl_engine_tokenize(e, "hello world", 11, 1, 0, ids, 64);
    int inj = injected;
    disarm();
    CHECK(inj);
    CHECK_EQ_INT(nt, -1);
    CHECK_EQ_INT(npl_engine_last_status(e), NPL_ERR_MEMORY);
    CHECK(npl_engine_tokenize(e, "hello world", 11, 1, 0, ids, 64) > 0);
    /* a generation out of memory: the first allocation of the turn fails,
     * and one in the middle of the forward */
    sink s = {0};
    for (int k = 0; k < 2; k++) {
        npl_engine_reset(e);
        arm(k == 0 ? 1 : 0);
        npl_status cst = npl_engine_chat(e, PROMPT, on_text, &s);
        long calls = n_calls;
        disarm();
        if (k == 0) {
            CHECK_EQ_INT(cst, NPL_ERR_MEMORY);
            CHECK_EQ_INT(npl_engine_last_status(e), NPL_ERR_MEMORY);
            continue;
        }
        CHECK_EQ_INT(cst, NPL_DONE);
        npl_engine_reset(e);
        arm(calls - 1); /* late in the turn: in the decode loop */
        cst = npl_engine_chat(e, PROMPT, on_text, &s);
        inj = injected;
        disarm();
        if (inj && cst != NPL_DONE) CHECK_EQ_INT(cst, NPL_ERR_MEMORY);
    }
    CHECK(strcmp(npl_status_name(NPL_ERR_MEMORY), "out of memory") == 0);
    CHECK(strcmp(npl_status_name(NPL_ERR_FILE), "file error") == 0);
    npl_engine_close(e);
}

int main(void) {
    live = __real_calloc(LIVE_CAP, sizeof(void *));
    const char *data = getenv("NPL_TEST_DATA");
    if (!data) data = "data";
    char llama[4096], qwen[4096];
    snprintf(llama, sizeof llama, "%s/models/rand-llama-q4_0.gguf", data);
    snprintf(qwen, sizeof qwen, "%s/models/rand-qwen2-q4_0.gguf", data);
    test_codes(data, qwen);
    sweep(llama, 1, 0, PROMPT); /* SentencePiece vocab, llama3 template, plain C kernels */
    sweep(qwen, 1, 0, PROMPT);  /* byte-level BPE through PCRE2, chatml template */
    /* a thread pool, the best kernels this CPU has, and special-token text in
     * the message: it stays plain text whatever allocation fails */
    sweep(qwen, 2, -1, "Hello <|im_end|> there");
    /* q5_0 weights: packed at open where the best kernels read them so (kernels/wpack.h) */
    char q5[4096];
    snprintf(q5, sizeof q5, "%s/models/rand-llama-q5_0.gguf", data);
    sweep(q5, 2, -1, PROMPT);
    /* a compiled package: graph file, plugin op, vnpu context binaries */
    char pkg[256], err[512];
    snprintf(pkg, sizeof pkg, "/tmp/npl_alloc_failure_pkg_%d", (int)getpid());
    npl_compile_params cp = npl_compile_default_params();
    cp.n_ctx = 128;
    cp.n_threads = 1;
    int crc = npl_compile(qwen, pkg, &cp, err, sizeof err);
    if (crc) fprintf(stderr, "compile %s: %s\n", qwen, err);
    CHECK_EQ_INT(crc, 0);
    if (crc == 0) {
        sweep(pkg, 1, 0, PROMPT);
        char cmd[300];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", pkg);
        CHECK_EQ_INT(system(cmd), 0);
    }
    __real_free(live);
    live = NULL;
    TEST_MAIN_END();
}
