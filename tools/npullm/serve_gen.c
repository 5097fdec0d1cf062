/* npullm serve: one slot runs one request at a time on the model.
 *
 * Today a slot is an npl_engine of its own (the public API's one handle);
 * the engine is opened again when a request asks for other sampling
 * settings, another system prompt or a seed (a fresh generator). Stop
 * strings, max_tokens and cancellation are handled here, between tokens of
 * the step API (npl_engine_set_prompt / npl_engine_next). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "serve.h"

struct srv_slot {
    srv_slot_config cfg;
    pthread_mutex_t mu; /* guards e against srv_slot_cancel while it is reopened */
    npl_engine *e;
    npl_engine_params cur; /* what e was opened with */
    char *cur_system;
    int n_ctx;
};

static int same_f(float a, float b) { return a == b; }

static int same_params(const npl_engine_params *a, const char *sys_a, const npl_engine_params *b,
                       const char *sys_b) {
    return same_f(a->temperature, b->temperature) && a->top_k == b->top_k && same_f(a->top_p, b->top_p) &&
           same_f(a->min_p, b->min_p) && same_f(a->presence_penalty, b->presence_penalty) &&
           same_f(a->frequency_penalty, b->frequency_penalty) && a->use_template == b->use_template &&
           !strcmp(sys_a ? sys_a : "", sys_b ? sys_b : "");
}

static int reopen(srv_slot *s, const npl_engine_params *p, const char *system, srv_error *err) {
    char msg[512];
    npl_status st = NPL_OK;
    npl_engine_params q = *p;
    q.system_prompt = system && *system ? system : NULL;
    npl_engine *e = npl_engine_open2(s->cfg.model_path, &q, &st, msg, sizeof msg);
    if (!e) {
        srv_error_set(err, st == NPL_ERR_ARGUMENT ? 400 : 500, st == NPL_ERR_ARGUMENT ? "invalid_request_error" : "server_error",
                      NULL, NULL, "%s", msg);
        return -1;
    }
    char *sys = strdup(system ? system : "");
    if (!sys) {
        npl_engine_close(e);
        srv_error_set(err, 500, "server_error", NULL, NULL, "out of memory");
        return -1;
    }
    pthread_mutex_lock(&s->mu);
    npl_engine *old = s->e;
    s->e = e;
    pthread_mutex_unlock(&s->mu);
    npl_engine_close(old);
    free(s->cur_system);
    s->cur_system = sys;
    s->cur = q;
    s->cur.system_prompt = NULL;
    return 0;
}

srv_slot *srv_slot_new(const srv_slot_config *cfg, char *err, size_t errlen) {
    srv_slot *s = calloc(1, sizeof *s);
    if (!s) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    s->cfg = *cfg;
    pthread_mutex_init(&s->mu, NULL);
    srv_error e;
    npl_engine_params p = cfg->base;
    p.max_new_tokens = 0x7fffffff; /* max_tokens is counted here */
    if (reopen(s, &p, cfg->base.system_prompt, &e)) {
        snprintf(err, errlen, "%s", e.message);
        srv_slot_free(s);
        return NULL;
    }
    s->n_ctx = cfg->base.n_ctx; /* the CLI resolves 0 (the model's) before */
    return s;
}

void srv_slot_free(srv_slot *s) {
    if (!s) return;
    npl_engine_close(s->e);
    free(s->cur_system);
    pthread_mutex_destroy(&s->mu);
    free(s);
}

int srv_slot_n_ctx(const srv_slot *s) { return s->n_ctx; }

void srv_slot_cancel(srv_slot *s) {
    pthread_mutex_lock(&s->mu);
    npl_engine_cancel(s->e);
    pthread_mutex_unlock(&s->mu);
}

/* Joins the texts of msgs with role `role` (sep between them) into a new string. */
static char *join(const srv_request *r, srv_role role, const char *sep) {
    size_t n = 1, ns = strlen(sep);
    for (int i = 0; i < r->n_msgs; i++)
        if (r->msgs[i].role == role) n += strlen(r->msgs[i].content) + ns;
    char *s = malloc(n), *p = s;
    if (!s) return NULL;
    for (int i = 0; i < r->n_msgs; i++) {
        if (r->msgs[i].role != role) continue;
        if (p != s) memcpy(p, sep, ns), p += ns;
        size_t k = strlen(r->msgs[i].content);
        memcpy(p, r->msgs[i].content, k);
        p += k;
    }
    *p = 0;
    return s;
}

/* The engine renders system + one user turn; a conversation with assistant
 * turns needs the model/session API (issue 18 item 1). */
static int chat_texts(const srv_request *r, char **system, char **user, srv_error *err) {
    int seen_other = 0;
    for (int i = 0; i < r->n_msgs; i++) {
        srv_role ro = r->msgs[i].role;
        if (ro == SRV_ROLE_ASSISTANT) {
            char param[64];
            snprintf(param, sizeof param, "messages[%d].role", i);
            srv_error_set(err, 400, "invalid_request_error", param, NULL,
                          "earlier assistant turns are not supported yet: send system and user messages");
            return -1;
        }
        if (ro == SRV_ROLE_SYSTEM && seen_other) {
            char param[64];
            snprintf(param, sizeof param, "messages[%d].role", i);
            srv_error_set(err, 400, "invalid_request_error", param, NULL,
                          "a system message must come before the user messages");
            return -1;
        }
        if (ro != SRV_ROLE_SYSTEM) seen_other = 1;
    }
    if (!seen_other) {
        srv_error_set(err, 400, "invalid_request_error", "messages", NULL, "'messages' holds no user message");
        return -1;
    }
    *system = join(r, SRV_ROLE_SYSTEM, "\n\n");
    *user = join(r, SRV_ROLE_USER, "\n\n");
    if (!*system || !*user) {
        free(*system);
        free(*user);
        srv_error_set(err, 500, "server_error", NULL, NULL, "out of memory");
        return -1;
    }
    return 0;
}

/* Generated text, cut at the first stop string; text that may still become
 * one is held back. */
typedef struct {
    char *buf;
    size_t len, cap, emitted;
    const srv_request *r;
    srv_sink_fn sink;
    void *user;
    int stopped; /* a stop string was generated */
    int gone;    /* the sink refused more */
} out_text;

static int emit_to(out_text *o, size_t end) {
    if (end > o->emitted && !o->gone && o->sink(o->user, o->buf + o->emitted, end - o->emitted)) o->gone = 1;
    if (end > o->emitted) o->emitted = end;
    return o->gone ? -1 : 0;
}

static int push(out_text *o, const char *t, size_t n) {
    if (o->len + n + 1 > o->cap) {
        size_t cap = (o->len + n + 1) * 2;
        char *b = realloc(o->buf, cap);
        if (!b) return -2;
        o->buf = b, o->cap = cap;
    }
    memcpy(o->buf + o->len, t, n);
    o->len += n;
    o->buf[o->len] = 0;
    size_t maxs = 0;
    for (int i = 0; i < o->r->n_stop; i++) maxs = strlen(o->r->stop[i]) > maxs ? strlen(o->r->stop[i]) : maxs;
    if (!maxs) return emit_to(o, o->len);
    size_t from = o->emitted > maxs ? o->emitted - maxs : 0, hit = o->len;
    for (int i = 0; i < o->r->n_stop; i++) {
        const char *h = memmem(o->buf + from, o->len - from, o->r->stop[i], strlen(o->r->stop[i]));
        if (h && (size_t)(h - o->buf) < hit) hit = (size_t)(h - o->buf);
    }
    if (hit < o->len) {
        o->stopped = 1;
        o->len = hit;
        return emit_to(o, hit);
    }
    size_t hold = 0; /* the longest end of the text that begins a stop string */
    for (int i = 0; i < o->r->n_stop; i++) {
        size_t sl = strlen(o->r->stop[i]);
        for (size_t k = sl - 1; k > hold; k--)
            if (k <= o->len && !memcmp(o->buf + o->len - k, o->r->stop[i], k)) {
                hold = k;
                break;
            }
    }
    return emit_to(o, o->len - hold);
}

static int gen_fail(srv_error *err, npl_engine *e, npl_status st) {
    const char *msg = npl_engine_last_error(e);
    if (st == NPL_CONTEXT_FULL)
        srv_error_set(err, 400, "invalid_request_error", "messages", "context_length_exceeded", "%s", msg);
    else if (st == NPL_ERR_ARGUMENT)
        srv_error_set(err, 400, "invalid_request_error", NULL, NULL, "%s", msg);
    else
        srv_error_set(err, 500, "server_error", NULL, NULL, "%s: %s", npl_status_name(st), msg);
    return -1;
}

int srv_slot_run(srv_slot *s, const srv_request *r, srv_sink_fn sink, srv_cancel_fn cancelled, void *user,
                 srv_usage *u, srv_error *err) {
    memset(u, 0, sizeof *u);
    char *system = NULL, *prompt = NULL;
    if (r->kind == SRV_CHAT) {
        if (chat_texts(r, &system, &prompt, err)) return -1;
    } else if (!(prompt = strdup(r->prompt))) {
        srv_error_set(err, 500, "server_error", NULL, NULL, "out of memory");
        return -1;
    }
    npl_engine_params want = s->cur;
    want.temperature = r->smp.temperature;
    want.top_k = r->smp.top_k;
    want.top_p = r->smp.top_p;
    want.min_p = r->smp.min_p;
    want.presence_penalty = r->smp.presence_penalty;
    want.frequency_penalty = r->smp.frequency_penalty;
    want.seed = r->smp.has_seed ? r->smp.seed : 0xFFFFFFFFu;
    want.use_template = r->kind == SRV_CHAT ? s->cfg.base.use_template : 0;
    const char *sys = r->kind == SRV_CHAT ? system : s->cfg.base.system_prompt;
    /* a seed asks for a generator started from it: a fresh engine */
    int rc = 0;
    if ((r->smp.has_seed || !same_params(&want, sys, &s->cur, s->cur_system)) && reopen(s, &want, sys, err)) rc = -1;
    free(system);
    if (rc) {
        free(prompt);
        return -1;
    }
    npl_engine *e = s->e;
    npl_engine_reset(e);
    npl_status st = npl_engine_set_prompt(e, prompt);
    free(prompt);
    npl_stats stats;
    npl_engine_stats(e, &stats);
    u->prompt_tokens = stats.prompt_tokens;
    if (st == NPL_CANCELLED || cancelled(user)) return 1;
    if (st != NPL_OK) return gen_fail(err, e, st);
    if (sink(user, NULL, 0)) return 1; /* the prompt is in: a stream may start */
    out_text o = {.r = r, .sink = sink, .user = user};
    int n_tok = 0;
    u->finish_reason = "stop";
    for (;;) {
        if (cancelled(user)) {
            free(o.buf);
            return 1;
        }
        if (r->max_tokens >= 0 && n_tok >= r->max_tokens) {
            u->finish_reason = "length";
            break;
        }
        const char *t;
        size_t n;
        st = npl_engine_next(e, &t, &n);
        if (st == NPL_DONE) {
            npl_engine_stats(e, &stats);
            n_tok = stats.decode_tokens;
            break;
        }
        if (st == NPL_CONTEXT_FULL) {
            u->finish_reason = "length";
            break;
        }
        if (st == NPL_CANCELLED) {
            free(o.buf);
            return 1;
        }
        if (st != NPL_OK) {
            free(o.buf);
            return gen_fail(err, e, st);
        }
        n_tok++;
        int pr = push(&o, t, n);
        if (pr == -2) {
            free(o.buf);
            srv_error_set(err, 500, "server_error", NULL, NULL, "out of memory");
            return -1;
        }
        if (pr == -1) {
            free(o.buf);
            return 1;
        }
        if (o.stopped) break;
    }
    int gone = o.stopped ? o.gone : emit_to(&o, o.len) != 0;
    free(o.buf);
    u->completion_tokens = n_tok;
    return gone ? 1 : 0;
}
