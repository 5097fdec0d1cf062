/* npullm serve: one slot runs one request at a time on the model.
 *
 * A slot is an npl_session of the server's one npl_model: the weights are
 * mapped once and the sessions take turns on the model's thread pool. Each
 * request brings its own npl_gen_params (sampling, seed, max_tokens, stop
 * strings) and its whole conversation (npl_session_set_messages: system,
 * user and assistant turns through the model's chat template); the session
 * prefills only the tokens after what its KV cache already holds, so the
 * next turn of a conversation (or another request with the same system
 * prompt) reuses the earlier rows. Cancellation is polled between tokens of
 * the step API (npl_session_next) and npl_session_cancel stops a prefill. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "serve.h"

struct srv_slot {
    npl_session *s;
    int n_ctx;
};

srv_slot *srv_slot_new(const srv_slot_config *cfg, char *err, size_t errlen) {
    srv_slot *s = calloc(1, sizeof *s);
    if (!s) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    if (!(s->s = npl_session_new(cfg->model, &cfg->sp, NULL, err, errlen))) {
        free(s);
        return NULL;
    }
    s->n_ctx = npl_session_n_ctx(s->s);
    return s;
}

void srv_slot_free(srv_slot *s) {
    if (!s) return;
    npl_session_free(s->s);
    free(s);
}

int srv_slot_n_ctx(const srv_slot *s) { return s->n_ctx; }

/* The session is never replaced, so no lock: npl_session_cancel is safe from any thread. */
void srv_slot_cancel(srv_slot *s) { npl_session_cancel(s->s); }

static const char *role_name(srv_role r) {
    return r == SRV_ROLE_SYSTEM ? "system" : r == SRV_ROLE_ASSISTANT ? "assistant" : "user";
}

static npl_gen_params gen_params(const srv_request *r) {
    npl_gen_params gp = npl_gen_default_params();
    gp.max_tokens = r->max_tokens < 0 ? -1 : r->max_tokens;
    gp.temperature = r->smp.temperature;
    gp.top_k = r->smp.top_k;
    gp.top_p = r->smp.top_p;
    gp.min_p = r->smp.min_p;
    gp.presence_penalty = r->smp.presence_penalty;
    gp.frequency_penalty = r->smp.frequency_penalty;
    gp.seed = r->smp.has_seed ? r->smp.seed : 0xFFFFFFFFu;
    gp.n_stop = r->n_stop < NPL_MAX_STOP ? r->n_stop : NPL_MAX_STOP;
    for (int i = 0; i < gp.n_stop; i++) gp.stop[i] = r->stop[i];
    return gp;
}

static int gen_fail(srv_error *err, const srv_request *r, npl_session *s, npl_status st) {
    const char *msg = npl_session_last_error(s);
    const char *param = r->kind == SRV_CHAT ? "messages" : "prompt";
    if (st == NPL_CONTEXT_FULL)
        srv_error_set(err, 400, "invalid_request_error", param, "context_length_exceeded", "%s", msg);
    else if (st == NPL_ERR_ARGUMENT)
        srv_error_set(err, 400, "invalid_request_error", param, NULL, "%s", msg);
    else
        srv_error_set(err, 500, "server_error", NULL, NULL, "%s: %s", npl_status_name(st), msg);
    return -1;
}

/* Sets the request's prompt on the session (its params with it); m holds r->n_msgs messages. */
static npl_status set_prompt(npl_session *s, const srv_request *r, npl_chat_message *m, const npl_gen_params *gp) {
    if (r->kind != SRV_CHAT) return npl_session_set_text(s, r->prompt, gp);
    for (int i = 0; i < r->n_msgs; i++) m[i] = (npl_chat_message){role_name(r->msgs[i].role), r->msgs[i].content};
    return npl_session_set_messages(s, m, (size_t)r->n_msgs, gp);
}

int srv_slot_run(srv_slot *slot, const srv_request *r, srv_sink_fn sink, srv_cancel_fn cancelled, void *user,
                 srv_usage *u, srv_error *err) {
    memset(u, 0, sizeof *u);
    npl_session *s = slot->s;
    const npl_gen_params gp = gen_params(r);
    npl_chat_message *m = r->kind == SRV_CHAT ? malloc((size_t)(r->n_msgs > 0 ? r->n_msgs : 1) * sizeof *m) : NULL;
    if (r->kind == SRV_CHAT && !m) {
        srv_error_set(err, 500, "server_error", NULL, NULL, "out of memory");
        return -1;
    }
    npl_status st = set_prompt(s, r, m, &gp);
    free(m);
    npl_stats stats;
    npl_session_stats(s, &stats);
    /* OpenAI counts the whole prompt: what was prefilled and what the cache already held */
    u->prompt_tokens = stats.prompt_tokens + stats.reused_tokens;
    if (st == NPL_CANCELLED || cancelled(user)) return 1;
    if (st != NPL_OK) return gen_fail(err, r, s, st);
    if (sink(user, NULL, 0)) return 1; /* the prompt is in: a stream may start */
    for (;;) {
        if (cancelled(user)) return 1;
        const char *t;
        size_t n;
        st = npl_session_next(s, &t, &n);
        if (n && sink(user, t, n)) return 1; /* the client is gone */
        if (st != NPL_OK) break;
    }
    npl_session_stats(s, &stats);
    u->completion_tokens = stats.decode_tokens;
    switch (stats.finish) {
    case NPL_FINISH_CANCELLED: return 1;
    case NPL_FINISH_LENGTH:
    case NPL_FINISH_CONTEXT: u->finish_reason = "length"; return 0;
    case NPL_FINISH_EOG:
    case NPL_FINISH_STOP: u->finish_reason = "stop"; return 0;
    default: return gen_fail(err, r, s, st == NPL_DONE || st == NPL_OK ? NPL_ERR_RUNTIME : st);
    }
}
