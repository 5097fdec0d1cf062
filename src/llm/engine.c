/* npl_engine: opening a model (GGUF or MNN-style config.json) and one
 * session on it, the conversation state and tokenization of new turns.
 * Generation is the session's (session_generate.c), driven from
 * engine_generate.c. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "llm/engine_config.h"
#include "llm/engine_impl.h"

_Static_assert(NPL_ARITH_OURS == 0 && NPL_ARITH_LLAMACPP_FA == 1 && NPL_ARITH_LLAMACPP_NOFA == 2,
               "npl_engine_params.arithmetic passes NPL_ARITH_* through");

npl_engine_params npl_engine_default_params(void) {
    npl_engine_params p;
    memset(&p, 0, sizeof(p));
    p.max_new_tokens = 512;
    p.use_template = 1;
    p.temperature = 0.8f;
    p.top_k = 40;
    p.top_p = 0.95f;
    p.min_p = 0.05f;
    p.repeat_penalty = 1.0f;
    p.repeat_last_n = 64;
    p.seed = 0xFFFFFFFFu;
    p.kernel_family = -1;
    return p;
}

npl_status npl_engine_fail(npl_engine *e, npl_status st, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->err, sizeof(e->err), fmt, ap);
    va_end(ap);
    e->status = st;
    npl_status_clear(); /* moved into the handle */
    return st;
}

npl_status npl_engine_fail_from(npl_engine *e, npl_status fallback, const char *msg) {
    npl_status st = npl_status_take(fallback);
    if (msg != e->err) snprintf(e->err, sizeof(e->err), "%s", msg);
    e->status = st;
    return st;
}

npl_status npl_engine_from_session(npl_engine *e, npl_status st) {
    if (st == NPL_OK || st == NPL_DONE) return st;
    snprintf(e->err, sizeof(e->err), "%s", e->s->err);
    e->status = e->s->status != NPL_OK ? e->s->status : st;
    return st;
}

const char *npl_engine_last_error(const npl_engine *e) { return e ? e->err : "no engine"; }
npl_status npl_engine_last_status(const npl_engine *e) { return e ? e->status : NPL_ERR_ARGUMENT; }
const char *npl_engine_notice(const npl_engine *e) { return e ? npl_model_notice(e->m) : ""; }

const char *npl_status_name(npl_status st) {
    switch (st) {
    case NPL_OK: return "ok";
    case NPL_DONE: return "done";
    case NPL_ERR_ARGUMENT: return "bad argument";
    case NPL_ERR_FILE: return "file error";
    case NPL_ERR_MEMORY: return "out of memory";
    case NPL_ERR_RUNTIME: return "runtime error";
    case NPL_CONTEXT_FULL: return "context full";
    case NPL_CANCELLED: return "cancelled";
    }
    return "unknown status";
}

static void free_msgs(npl_engine *e) {
    for (size_t i = 0; i < e->n_msgs; i++) {
        free((char *)e->msgs[i].role);
        free((char *)e->msgs[i].content);
    }
    e->n_msgs = 0;
}

void npl_engine_close(npl_engine *e) {
    if (!e) return;
    free_msgs(e);
    free(e->msgs);
    free(e->fed);
    npl_session_free(e->s);
    npl_model_close(e->m);
    for (int i = 0; i < 4; i++) free(e->owned_strings[i]);
    free(e);
}

static const char *own(npl_engine *e, int slot, const char *s, int *oom) {
    if (!s) return NULL;
    char *c = strdup(s);
    if (!c) *oom = 1;
    free(e->owned_strings[slot]);
    e->owned_strings[slot] = c;
    return c;
}

static npl_status validate(const npl_engine_params *p, char *err, size_t errlen) {
#define BAD(...) return npl_errf(err, errlen, NPL_ERR_ARGUMENT, __VA_ARGS__)
    if (p->n_ctx < 0) BAD("n_ctx %d must not be negative", p->n_ctx);
    if (p->n_threads < 0 || p->n_threads > 256) BAD("n_threads %d out of range [0, 256]", p->n_threads);
    if (p->kernel_family < -1 || p->kernel_family > 3) BAD("kernel_family %d out of range [-1, 3]", p->kernel_family);
    if (p->repack_mib < -1) BAD("repack_mib %d: -1 (none), 0 (the default) or a size in MiB", p->repack_mib);
    if (p->arithmetic < 0 || p->arithmetic > 2) BAD("arithmetic %d out of range [0, 2]", p->arithmetic);
    if (p->profile < 0 || p->profile > 3) BAD("profile %d out of range [0, 3]", p->profile);
    if (p->max_new_tokens < 0) BAD("max_new_tokens %d must not be negative", p->max_new_tokens);
    if (p->top_p < 0 || p->top_p > 1) BAD("top_p %g out of range [0, 1]", p->top_p);
    if (p->min_p < 0 || p->min_p > 1) BAD("min_p %g out of range [0, 1]", p->min_p);
    if (p->repeat_penalty <= 0) BAD("repeat_penalty %g must be positive", p->repeat_penalty);
    if (p->n_chunk_limits < 0 || p->n_chunk_limits > NPL_MAX_CHUNK_LIMITS) BAD("%d chunk limits (max %d)", p->n_chunk_limits, NPL_MAX_CHUNK_LIMITS);
    for (int i = 0; i < p->n_chunk_limits; i++)
        if (p->chunk_limits[i] <= 0) BAD("chunk_limits[%d] = %d must be positive", i, p->chunk_limits[i]);
    return NPL_OK;
#undef BAD
}

npl_engine *npl_engine_open(const char *path, const npl_engine_params *params, char *err, size_t errlen) {
    return npl_engine_open2(path, params, NULL, err, errlen);
}

/* Each step that fails records its code where the failure happens; `fb` is
 * the code of a step whose lower layer recorded none. */
npl_engine *npl_engine_open2(const char *path, const npl_engine_params *params, npl_status *status, char *err,
                             size_t errlen) {
    npl_status fb = NPL_ERR_FILE;
    npl_api_scratch scratch;
    npl_api_enter(&scratch, &status, &err, &errlen);
    npl_engine_params p = params ? *params : npl_engine_default_params();
    if (!path) {
        *status = npl_errf(err, errlen, NPL_ERR_ARGUMENT, "no model path");
        return NULL;
    }
    npl_engine *e = calloc(1, sizeof(*e));
    if (!e) {
        *status = npl_err_memory(err, errlen);
        return NULL;
    }
    /* an MNN-style config.json names the model and overrides parameters */
    char model_path[4096], cfg_path[4200];
    snprintf(model_path, sizeof(model_path), "%s", path);
    struct stat sb; /* a compiled package directory: its config.json */
    if (stat(path, &sb) == 0 && S_ISDIR(sb.st_mode)) {
        snprintf(cfg_path, sizeof(cfg_path), "%s/config.json", path);
        path = cfg_path;
    }
    if (npl_engine_config_is_json(path)) {
        if (npl_engine_config_load(path, &p, model_path, sizeof(model_path), e->owned_strings, err, errlen)) goto fail;
    }
    /* keep our own copies of caller strings */
    int oom = 0;
    p.chat_template = own(e, 1, p.chat_template, &oom);
    p.system_prompt = own(e, 2, p.system_prompt, &oom);
    p.stop = own(e, 3, p.stop, &oom);
    if (oom) goto fail_oom;
    if (validate(&p, err, errlen) != NPL_OK) goto fail;
    /* sort chunk limits ascending: the block size is the largest */
    for (int i = 1; i < p.n_chunk_limits; i++)
        for (int j = i; j > 0 && p.chunk_limits[j - 1] > p.chunk_limits[j]; j--) {
            int t = p.chunk_limits[j];
            p.chunk_limits[j] = p.chunk_limits[j - 1];
            p.chunk_limits[j - 1] = t;
        }
    e->p = p;
    npl_model_params mp = npl_model_default_params();
    mp.n_threads = p.n_threads;
    mp.kernel_family = p.kernel_family;
    mp.repack_mib = p.repack_mib;
    mp.arithmetic = p.arithmetic;
    mp.chat_template = p.chat_template;
    npl_status st;
    if (!(e->m = npl_model_open(model_path, &mp, &st, err, errlen))) {
        *status = st;
        goto fail_code;
    }
    npl_session_params sp = npl_session_default_params();
    sp.n_ctx = p.n_ctx;
    sp.kv_budget_bytes = p.kv_budget_bytes;
    sp.profile = p.profile;
    sp.n_chunk_limits = p.n_chunk_limits;
    memcpy(sp.chunk_limits, p.chunk_limits, sizeof sp.chunk_limits);
    if (!e->m->tok) { /* the engine speaks text: the file must have a vocabulary */
        npl_tokenizer *t = npl_tokenizer_load(e->m->g, err, errlen);
        npl_tokenizer_free(t);
        if (!t) goto fail;
        npl_errf(err, errlen, NPL_ERR_FILE, "%s: no vocabulary", model_path);
        goto fail;
    }
    if (!(e->s = npl_session_new(e->m, &sp, &st, err, errlen))) {
        *status = st;
        goto fail_code;
    }
    /* a base model (no tokenizer.chat_template): raw completion, where a
     * system prompt has nowhere to go */
    if (!p.chat_template && npl_gguf_find_key(e->m->g, "tokenizer.chat_template") < 0 && p.use_template &&
        p.system_prompt && *p.system_prompt) {
        fb = NPL_ERR_ARGUMENT;
        npl_errf(err, errlen, NPL_ERR_ARGUMENT,
                 "%s: no tokenizer.chat_template (a base model, run as raw completion): "
                 "a system prompt needs a chat template named (--chat-template)", model_path);
        goto fail;
    }
    npl_gen_params gp = npl_gen_default_params();
    gp.max_tokens = p.max_new_tokens;
    gp.temperature = p.temperature;
    gp.top_k = p.top_k;
    gp.top_p = p.top_p;
    gp.min_p = p.min_p;
    gp.repeat_penalty = p.repeat_penalty;
    gp.repeat_last_n = p.repeat_last_n;
    gp.frequency_penalty = p.frequency_penalty;
    gp.presence_penalty = p.presence_penalty;
    gp.seed = p.seed;
    gp.n_stop = p.stop && *p.stop ? 1 : 0;
    gp.stop[0] = p.stop;
    if (npl_sess_set_gen(e->s, &gp) != NPL_OK) {
        snprintf(err, errlen, "%s", e->s->err);
        *status = e->s->status;
        goto fail_code;
    }
    e->fed_valid = 1;
    *status = NPL_OK;
    return e;
fail_oom:
    npl_err_memory(err, errlen);
fail:
    *status = npl_status_take(fb);
fail_code:
    npl_engine_close(e);
    return NULL;
}

npl_status npl_engine_reset(npl_engine *e) {
    if (!e) return NPL_ERR_ARGUMENT;
    free_msgs(e);
    e->fed_len = 0;
    e->fed_valid = 1;
    npl_sess_reset(e->s);
    return NPL_OK;
}

npl_status npl_engine_rollback(npl_engine *e, int n) {
    if (!e) return NPL_ERR_ARGUMENT;
    npl_session *s = e->s;
    if (n < 0 || n > s->n_past) return npl_engine_fail(e, NPL_ERR_ARGUMENT, "rollback of %d tokens: history holds %d", n, s->n_past);
    s->n_past -= n;
    s->gen_active = 0;
    s->unfed = -1;
    /* the text of what remains, so a later turn can still reuse the cache */
    e->fed_len = 0;
    int64_t need = npl_detokenize(e->m->tok, s->hist, s->n_past, NULL, 0, 1, 1);
    if (need >= 0 && npl_sess_append(&e->fed, &e->fed_len, &e->fed_cap, "", 0) == 0) {
        char *buf = malloc((size_t)need + 1);
        if (buf && npl_detokenize(e->m->tok, s->hist, s->n_past, buf, need, 1, 1) == need)
            npl_sess_append(&e->fed, &e->fed_len, &e->fed_cap, buf, (size_t)need);
        free(buf);
    }
    e->fed_valid = s->n_past == 0 || e->fed_len > 0;
    return NPL_OK;
}

void npl_engine_cancel(npl_engine *e) {
    if (e) npl_session_cancel(e->s);
}

npl_status npl_engine_stats(const npl_engine *e, npl_stats *out) {
    if (!e || !out) return NPL_ERR_ARGUMENT;
    return npl_session_stats(e->s, out);
}

int npl_engine_n_vocab(const npl_engine *e) { return e ? e->m->hp.n_vocab : 0; }

/* The tokenizer records a code, without a message, when it fails. */
static npl_status tokenizer_failed(npl_engine *e, const char *what) {
    npl_status st = npl_status_take(NPL_ERR_ARGUMENT);
    return npl_engine_fail(e, st, "%s: %s", what, st == NPL_ERR_MEMORY ? "out of memory" : "the text is too long or could not be tokenized");
}

int64_t npl_engine_tokenize(npl_engine *e, const char *text, size_t len, int add_special, int parse_special,
                            int32_t *ids, int64_t cap) {
    if (!e) return -1;
    if ((!text && len) || cap < 0 || (!ids && cap > 0)) {
        npl_engine_fail(e, NPL_ERR_ARGUMENT, "tokenize: %s", !text && len ? "no text" : cap < 0 ? "negative capacity" : "no output array");
        return -1;
    }
    npl_status_clear();
    int64_t n = npl_tokenize(e->m->tok, text ? text : "", len, add_special, parse_special, ids, cap);
    if (n < 0) tokenizer_failed(e, "tokenize");
    return n;
}

int npl_engine_token_to_piece(npl_engine *e, int32_t id, char *buf, int cap) {
    if (!e) return -1;
    return npl_token_to_piece(e->m->tok, id, buf, cap, 1);
}

static npl_status push_msg(npl_engine *e, const char *role, const char *content) {
    if (e->n_msgs == e->cap_msgs) {
        size_t nc = e->cap_msgs ? e->cap_msgs * 2 : 8;
        npl_chat_msg *nm = realloc(e->msgs, nc * sizeof(*nm));
        if (!nm) return npl_engine_fail(e, NPL_ERR_MEMORY, "out of memory");
        e->msgs = nm;
        e->cap_msgs = nc;
    }
    char *r = strdup(role), *c = strdup(content);
    if (!r || !c) {
        free(r);
        free(c);
        return npl_engine_fail(e, NPL_ERR_MEMORY, "out of memory");
    }
    e->msgs[e->n_msgs].role = r;
    e->msgs[e->n_msgs].content = c;
    e->n_msgs++;
    return NPL_OK;
}

npl_status npl_engine_push_assistant(npl_engine *e, const char *text) { return push_msg(e, "assistant", text); }

/* Builds e->feed for a new user turn: renders the conversation, and if the
 * cache holds a prefix of it, tokenizes only the rest. */
npl_status npl_engine_build_turn(npl_engine *e, const char *user_text, int templated) {
    npl_session *s = e->s;
    npl_sess_feed_clear(s);
    if (!templated) {
        /* raw text is the caller's own prompt: special-token text in it is
         * meant as tokens, as llama.cpp's raw prompts are */
        npl_status st = npl_sess_feed_text(s, user_text, strlen(user_text), s->n_past == 0, 1, NULL, 0);
        e->fed_valid = 0; /* raw text: no template prefix to match later */
        return npl_engine_from_session(e, st);
    }
    if (e->n_msgs == 0 && e->p.system_prompt && *e->p.system_prompt) {
        npl_status st = push_msg(e, "system", e->p.system_prompt);
        if (st != NPL_OK) return st;
    }
    npl_status st = push_msg(e, "user", user_text);
    if (st != NPL_OK) return st;
    npl_chat_buf full = {0};
    if (npl_chat_render(e->m->tmpl, e->msgs, e->n_msgs, 1, &full, e->err, sizeof(e->err))) {
        npl_chat_buf_free(&full);
        e->n_msgs--;
        free((char *)e->msgs[e->n_msgs].role);
        free((char *)e->msgs[e->n_msgs].content);
        return npl_engine_fail_from(e, NPL_ERR_ARGUMENT, e->err);
    }
    size_t start = 0;
    if (e->fed_valid && s->n_past > 0 && e->fed_len <= full.len && !memcmp(full.data, e->fed, e->fed_len)) {
        start = e->fed_len; /* the cache already holds this prefix */
    } else if (s->n_past > 0) {
        npl_sess_reset(s); /* history diverged: start over */
        e->fed_len = 0;
    }
    st = npl_engine_from_session(e, npl_sess_feed_rendered(s, &full, start));
    if (st == NPL_OK) {
        e->fed_len = start;
        if (npl_sess_append(&e->fed, &e->fed_len, &e->fed_cap, full.data + start, full.len - start))
            st = npl_engine_fail(e, NPL_ERR_MEMORY, "out of memory");
        e->fed_valid = 1;
    } else {
        e->n_msgs--;
        free((char *)e->msgs[e->n_msgs].role);
        free((char *)e->msgs[e->n_msgs].content);
    }
    npl_chat_buf_free(&full);
    return st;
}
