/* npl_session: a runner on the model's shared base, the token history, the
 * prompt being prepared, prefix reuse and chunked prefill. Generation (the
 * decode loop, the public set_* calls) is in session_generate.c, save/load
 * in session_file.c. */
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "llm/session_impl.h"

double npl_sess_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

npl_status npl_sess_fail(npl_session *s, npl_status st, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(s->err, sizeof(s->err), fmt, ap);
    va_end(ap);
    s->status = st;
    npl_status_clear(); /* moved into the handle */
    return st;
}

npl_status npl_sess_fail_from(npl_session *s, npl_status fallback, const char *msg) {
    npl_status st = npl_status_take(fallback);
    if (msg != s->err) snprintf(s->err, sizeof(s->err), "%s", msg);
    s->status = st;
    return st;
}

int npl_sess_append(char **buf, size_t *len, size_t *cap, const char *s, size_t n) {
    if (*len + n + 1 > *cap) {
        size_t nc = *cap ? *cap : 256;
        while (nc < *len + n + 1) nc *= 2;
        char *nb = realloc(*buf, nc);
        if (!nb) return -1;
        *buf = nb;
        *cap = nc;
    }
    memcpy(*buf + *len, s, n);
    *len += n;
    (*buf)[*len] = 0;
    return 0;
}

npl_session_params npl_session_default_params(void) {
    npl_session_params p;
    memset(&p, 0, sizeof p);
    return p;
}

npl_gen_params npl_gen_default_params(void) {
    npl_gen_params p;
    memset(&p, 0, sizeof p);
    p.max_tokens = 512;
    p.temperature = 0.8f;
    p.top_k = 40;
    p.top_p = 0.95f;
    p.min_p = 0.05f;
    p.repeat_penalty = 1.0f;
    p.repeat_last_n = 64;
    p.seed = 0xFFFFFFFFu;
    return p;
}

npl_status npl_sess_set_gen(npl_session *s, const npl_gen_params *gp) {
#define BAD(...) return npl_sess_fail(s, NPL_ERR_ARGUMENT, __VA_ARGS__)
    if (gp->max_tokens < -1) BAD("max_tokens %d: must be -1 (no limit) or more", gp->max_tokens);
    if (isnan(gp->temperature)) BAD("temperature is not a number");
    if (!(gp->top_p >= 0 && gp->top_p <= 1)) BAD("top_p %g out of range [0, 1]", gp->top_p);
    if (!(gp->min_p >= 0 && gp->min_p <= 1)) BAD("min_p %g out of range [0, 1]", gp->min_p);
    if (!(gp->repeat_penalty > 0)) BAD("repeat_penalty %g must be positive", gp->repeat_penalty);
    if (isnan(gp->frequency_penalty) || isnan(gp->presence_penalty)) BAD("a penalty is not a number");
    if (gp->repeat_last_n < -1) BAD("repeat_last_n %d: must be -1 (all) or more", gp->repeat_last_n);
    if (gp->n_stop < 0 || gp->n_stop > NPL_MAX_STOP) BAD("%d stop strings (0 to %d)", gp->n_stop, NPL_MAX_STOP);
#undef BAD
    npl_sampler_params sp = npl_sampler_default_params();
    sp.seed = gp->seed;
    sp.temp = gp->temperature;
    sp.top_k = gp->top_k;
    sp.top_p = gp->top_p;
    sp.min_p = gp->min_p;
    sp.repeat_penalty = gp->repeat_penalty;
    sp.repeat_last_n = gp->repeat_last_n;
    sp.freq_penalty = gp->frequency_penalty;
    sp.presence_penalty = gp->presence_penalty;
    char *own[NPL_MAX_STOP] = {0};
    for (int i = 0; i < gp->n_stop; i++)
        if (gp->stop[i] && !(own[i] = strdup(gp->stop[i]))) {
            for (int k = 0; k < i; k++) free(own[k]);
            return npl_sess_fail(s, NPL_ERR_MEMORY, "out of memory");
        }
    npl_status_clear();
    npl_sampler *smp = npl_sampler_chain_from_params(&sp, s->n_vocab, s->err, sizeof s->err);
    if (!smp) {
        for (int k = 0; k < gp->n_stop; k++) free(own[k]);
        return npl_sess_fail_from(s, NPL_ERR_ARGUMENT, s->err);
    }
    npl_sampler_free(s->smp);
    s->smp = smp;
    for (int k = 0; k < NPL_MAX_STOP; k++) {
        free(s->stop_own[k]);
        s->stop_own[k] = own[k];
    }
    s->gp = *gp;
    for (int k = 0; k < NPL_MAX_STOP; k++) s->gp.stop[k] = own[k];
    npl_text_stream_set_stops(&s->ts, (const char *const *)s->gp.stop, s->gp.n_stop);
    return NPL_OK;
}

npl_session *npl_session_new(npl_model *m, const npl_session_params *params, npl_status *status, char *err,
                             size_t errlen) {
    npl_api_scratch scratch;
    npl_api_enter(&scratch, &status, &err, &errlen);
    if (!m) {
        *status = npl_errf(err, errlen, NPL_ERR_ARGUMENT, "no model");
        return NULL;
    }
    if (m->p.vocab_only) {
        *status = npl_errf(err, errlen, NPL_ERR_ARGUMENT, "%s: opened vocab_only: no sessions", m->path);
        return NULL;
    }
    npl_session_params sp = params ? *params : npl_session_default_params();
    if (sp.profile < 0 || sp.profile > 3) {
        *status = npl_errf(err, errlen, NPL_ERR_ARGUMENT, "profile %d out of range [0, 3]", sp.profile);
        return NULL;
    }
    if (sp.n_ctx < 0) {
        *status = npl_errf(err, errlen, NPL_ERR_ARGUMENT, "n_ctx %d must not be negative", sp.n_ctx);
        return NULL;
    }
    if (sp.n_chunk_limits < 0 || sp.n_chunk_limits > NPL_MAX_CHUNK_LIMITS) {
        *status = npl_errf(err, errlen, NPL_ERR_ARGUMENT, "%d chunk limits (max %d)", sp.n_chunk_limits,
                           NPL_MAX_CHUNK_LIMITS);
        return NULL;
    }
    for (int i = 0; i < sp.n_chunk_limits; i++)
        if (sp.chunk_limits[i] <= 0) {
            *status = npl_errf(err, errlen, NPL_ERR_ARGUMENT, "chunk_limits[%d] = %d must be positive", i,
                               sp.chunk_limits[i]);
            return NULL;
        }
    /* sorted ascending: the block size is the largest */
    for (int i = 1; i < sp.n_chunk_limits; i++)
        for (int j = i; j > 0 && sp.chunk_limits[j - 1] > sp.chunk_limits[j]; j--) {
            int t = sp.chunk_limits[j];
            sp.chunk_limits[j] = sp.chunk_limits[j - 1];
            sp.chunk_limits[j - 1] = t;
        }
    npl_session *s = calloc(1, sizeof *s);
    if (!s) {
        *status = npl_err_memory(err, errlen);
        return NULL;
    }
    s->m = m;
    s->p = sp;
    s->unfed = -1;
    npl_runner_params rp = npl_runner_default_params();
    rp.n_ctx = sp.n_ctx;
    rp.kv_budget = sp.kv_budget_bytes;
    rp.profile = sp.profile;
    if (!(s->r = npl_runner_new(m->base, &rp, err, errlen))) goto fail;
    s->n_ctx = npl_runner_n_ctx(s->r);
    s->n_vocab = m->hp.n_vocab;
    int max_chunk = sp.n_chunk_limits ? sp.chunk_limits[sp.n_chunk_limits - 1] : 512;
    s->chunk_cap = max_chunk;
    s->hist = malloc(sizeof(int32_t) * ((size_t)s->n_ctx + 1));
    s->chunk_tok = malloc(sizeof(int32_t) * (size_t)max_chunk);
    s->chunk_pos = malloc(sizeof(int32_t) * (size_t)max_chunk);
    if (!s->hist || !s->chunk_tok || !s->chunk_pos) goto oom;
    npl_text_stream_init(&s->ts, NULL);
    npl_gen_params gp = npl_gen_default_params();
    if (npl_sess_set_gen(s, &gp) != NPL_OK) {
        snprintf(err, errlen, "%s", s->err);
        npl_errf(err, errlen, s->status, "%s", s->err);
        goto fail;
    }
    *status = NPL_OK;
    return s;
oom:
    npl_err_memory(err, errlen);
fail:
    *status = npl_status_take(NPL_ERR_FILE);
    npl_session_free(s);
    return NULL;
}

void npl_session_free(npl_session *s) {
    if (!s) return;
    free(s->hist);
    free(s->feed);
    free(s->answer);
    free(s->chunk_tok);
    free(s->chunk_pos);
    for (int k = 0; k < NPL_MAX_STOP; k++) free(s->stop_own[k]);
    npl_text_stream_free(&s->ts);
    npl_sampler_free(s->smp);
    npl_runner_close(s->r);
    free(s);
}

int npl_session_n_ctx(const npl_session *s) { return s ? s->n_ctx : 0; }
int npl_session_n_threads(const npl_session *s) { return s ? npl_runner_n_threads(s->r) : 0; }
const char *npl_session_kernel_family(const npl_session *s) { return s ? npl_runner_isa(s->r) : ""; }
const char *npl_session_last_error(const npl_session *s) { return s ? s->err : "no session"; }
npl_status npl_session_last_status(const npl_session *s) { return s ? s->status : NPL_ERR_ARGUMENT; }
const float *npl_session_logits(const npl_session *s) { return s ? s->logits : NULL; }

void npl_sess_reset(npl_session *s) {
    s->n_past = 0;
    s->unfed = -1;
    s->gen_active = 0;
    s->n_feed = 0;
    s->logits = NULL;
    npl_sampler_reset(s->smp);
}

npl_status npl_session_reset(npl_session *s) {
    if (!s) return NPL_ERR_ARGUMENT;
    npl_sess_reset(s);
    return NPL_OK;
}

void npl_session_cancel(npl_session *s) {
    if (s) atomic_store(&s->cancel, 1);
}

npl_status npl_session_stats(const npl_session *s, npl_stats *out) {
    if (!s || !out) return NPL_ERR_ARGUMENT;
    *out = s->stats;
    out->n_past = s->n_past;
    return NPL_OK;
}

int npl_session_tokens(const npl_session *s, int32_t *ids, int cap) {
    if (!s || cap < 0 || (cap && !ids)) return -1;
    int n = s->n_past < cap ? s->n_past : cap;
    if (n) memcpy(ids, s->hist, sizeof(int32_t) * (size_t)n);
    return s->n_past;
}

/* ---- the prompt ---- */

void npl_sess_feed_clear(npl_session *s) { s->n_feed = 0; }

static npl_status feed_reserve(npl_session *s, int64_t n) {
    if (s->n_feed + n <= s->feed_cap) return NPL_OK;
    if (s->n_feed + n > INT_MAX - 64) return npl_sess_fail(s, NPL_CONTEXT_FULL, "prompt too long");
    int nc = s->n_feed + (int)n + 64;
    int32_t *nf = realloc(s->feed, sizeof(int32_t) * (size_t)nc);
    if (!nf) return npl_sess_fail(s, NPL_ERR_MEMORY, "out of memory");
    s->feed = nf;
    s->feed_cap = nc;
    return NPL_OK;
}

npl_status npl_sess_feed_ids(npl_session *s, const int32_t *ids, int64_t n) {
    npl_status st = feed_reserve(s, n);
    if (st != NPL_OK) return st;
    if (n) memcpy(s->feed + s->n_feed, ids, sizeof(int32_t) * (size_t)n);
    s->n_feed += (int)n;
    return NPL_OK;
}

/* The tokenizer records a code, without a message, when it fails. */
static npl_status tokenizer_failed(npl_session *s, const char *what) {
    npl_status st = npl_status_take(NPL_ERR_ARGUMENT);
    return npl_sess_fail(s, st, "%s: %s", what, st == NPL_ERR_MEMORY ? "out of memory" : "the text is too long or could not be tokenized");
}

static int64_t tokenize(npl_session *s, const char *text, size_t len, int add_special, int parse_special,
                        const npl_tok_span *plain, size_t n_plain, int32_t *ids, int64_t cap) {
    const npl_tokenizer *t = s->m->tok;
    return plain ? npl_tokenize_spans(t, text, len, add_special, plain, n_plain, ids, cap)
                 : npl_tokenize(t, text, len, add_special, parse_special, ids, cap);
}

npl_status npl_sess_feed_text(npl_session *s, const char *text, size_t len, int add_special, int parse_special,
                              const npl_tok_span *plain, size_t n_plain) {
    if (!s->m->tok) return npl_sess_fail(s, NPL_ERR_ARGUMENT, "%s: the model has no vocabulary: give token ids", s->m->path);
    npl_status_clear();
    int64_t n = tokenize(s, text, len, add_special, parse_special, plain, n_plain, NULL, 0);
    if (n < 0) return tokenizer_failed(s, "tokenizing the prompt");
    if (n == 0) return NPL_OK; /* s->feed may still be NULL */
    if (n > (int64_t)s->n_ctx) return npl_sess_fail(s, NPL_CONTEXT_FULL, "prompt of %lld tokens does not fit the context of %d", (long long)n, s->n_ctx);
    npl_status st = feed_reserve(s, n);
    if (st != NPL_OK) return st;
    if (tokenize(s, text, len, add_special, parse_special, plain, n_plain, s->feed + s->n_feed, n) != n)
        return tokenizer_failed(s, "tokenizing the prompt");
    s->n_feed += (int)n;
    return NPL_OK;
}

npl_status npl_sess_feed_rendered(npl_session *s, const npl_chat_buf *full, size_t start) {
    npl_tok_span one = {0, 0}, *plain = full->n_text ? malloc(sizeof(*plain) * full->n_text) : &one;
    if (!plain) return npl_sess_fail(s, NPL_ERR_MEMORY, "out of memory");
    size_t n_plain = 0;
    for (size_t i = 0; i < full->n_text; i++) {
        size_t off = full->text[i].off, end = off + full->text[i].len;
        if (end <= start) continue;
        if (off < start) off = start;
        plain[n_plain].off = off - start;
        plain[n_plain].len = end - off;
        n_plain++;
    }
    npl_status st = npl_sess_feed_text(s, full->data + start, full->len - start, start == 0, 1, plain, n_plain);
    if (plain != &one) free(plain);
    return st;
}

/* ---- prefill ---- */

/* Runs n tokens at the end of the history; with chunk_limits the run is
 * padded up to an allowed size (padding rows have position -1: never written
 * to the cache, hidden by the mask) and the logits are read at the last
 * valid row. */
static npl_status run_chunk(npl_session *s, const int32_t *tok, int n, int padded) {
    char err[512];
    for (int i = 0; i < padded; i++) {
        s->chunk_tok[i] = i < n ? tok[i] : 0;
        s->chunk_pos[i] = i < n ? s->n_past + i : -1;
    }
    int32_t last = n - 1;
    npl_status_clear();
    const float *lg = npl_runner_forward_ex(s->r, s->chunk_tok, s->chunk_pos, padded, &last, 1, err, sizeof(err));
    if (!lg) {
        s->logits = NULL;
        return npl_sess_fail_from(s, NPL_ERR_RUNTIME, err);
    }
    memmove(s->hist + s->n_past, tok, sizeof(int32_t) * (size_t)n);
    s->n_past += n;
    s->logits = lg;
    return NPL_OK;
}

static npl_status prefill(npl_session *s) {
    const npl_session_params *p = &s->p;
    if (s->n_feed == 0) return npl_sess_fail(s, NPL_ERR_ARGUMENT, "empty prompt");
    if (s->n_past + s->n_feed > s->n_ctx)
        return npl_sess_fail(s, NPL_CONTEXT_FULL, "context full: %d tokens in history + %d new > context of %d",
                             s->n_past, s->n_feed, s->n_ctx);
    int block = p->n_chunk_limits ? p->chunk_limits[p->n_chunk_limits - 1] : s->chunk_cap;
    for (int i = 0; i < s->n_feed;) {
        if (atomic_load(&s->cancel)) return npl_sess_fail(s, NPL_CANCELLED, "cancelled");
        int n = s->n_feed - i < block ? s->n_feed - i : block, padded = n;
        if (p->n_chunk_limits) /* smallest allowed size that holds the rest */
            for (int k = 0; k < p->n_chunk_limits; k++)
                if (p->chunk_limits[k] >= n) {
                    padded = p->chunk_limits[k];
                    break;
                }
        npl_status st = run_chunk(s, s->feed + i, n, padded);
        if (st != NPL_OK) return st;
        i += n;
    }
    for (int i = 0; i < s->n_feed; i++) npl_sampler_accept(s->smp, s->feed[i]);
    s->n_feed = 0;
    return NPL_OK;
}

npl_status npl_sess_start(npl_session *s, int mode, const npl_gen_params *gp, double t0) {
    atomic_store(&s->cancel, 0);
    memset(&s->stats, 0, sizeof(s->stats));
    s->t_start = t0 > 0 ? t0 : npl_sess_now();
    s->gen_active = 0;
    s->gen_status = NPL_OK;
    if (gp) {
        npl_status st = npl_sess_set_gen(s, gp);
        if (st != NPL_OK) return st;
    }
    int hist_len = s->n_past + (s->unfed >= 0);
    if (mode == NPL_SESS_APPEND) {
        if (s->unfed >= 0) { /* generated last time, never forwarded: first */
            npl_status st = feed_reserve(s, 1);
            if (st != NPL_OK) return st;
            memmove(s->feed + 1, s->feed, sizeof(int32_t) * (size_t)s->n_feed);
            s->feed[0] = s->unfed;
            s->n_feed++;
        }
    } else {
        /* prefix reuse: the rows of the common prefix stay; at least the
         * last prompt token is run again for its logits */
        int k = 0;
        while (k < hist_len && k < s->n_feed && s->hist[k] == s->feed[k]) k++;
        int reuse = k < s->n_past ? k : s->n_past;
        if (reuse > s->n_feed - 1) reuse = s->n_feed - 1;
        if (reuse < 0) reuse = 0;
        s->n_past = reuse;
        s->n_feed -= reuse;
        memmove(s->feed, s->feed + reuse, sizeof(int32_t) * (size_t)s->n_feed);
        if (gp) /* a new sampler has seen the whole prompt */
            for (int i = 0; i < reuse; i++) npl_sampler_accept(s->smp, s->hist[i]);
    }
    s->unfed = -1;
    s->stats.reused_tokens = s->n_past;
    s->stats.prompt_tokens = s->n_feed;
    npl_status st = prefill(s);
    double t = npl_sess_now();
    s->stats.prefill_seconds = t - s->t_start;
    s->stats.prefill_tps = s->stats.prefill_seconds > 0 ? s->stats.prompt_tokens / s->stats.prefill_seconds : 0;
    if (st != NPL_OK) {
        s->stats.finish = st == NPL_CANCELLED ? NPL_FINISH_CANCELLED : st == NPL_CONTEXT_FULL ? NPL_FINISH_CONTEXT : NPL_FINISH_ERROR;
        return st;
    }
    s->answer_len = 0;
    if (npl_sess_append(&s->answer, &s->answer_len, &s->answer_cap, "", 0))
        return npl_sess_fail(s, NPL_ERR_MEMORY, "out of memory");
    npl_text_stream_reset(&s->ts);
    s->n_gen = 0;
    s->n_decoded = 0;
    s->gen_active = 1;
    s->gen_status = NPL_OK;
    return NPL_OK;
}
