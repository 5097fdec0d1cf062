/* npl_engine turns: a user turn (or raw text) becomes the session's prompt
 * after its history; the session generates (session_generate.c) and the
 * answer joins the conversation as the assistant's turn. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "llm/engine_impl.h"

static npl_status begin(npl_engine *e, const char *text, int templated) {
    if (!e || !text) return e ? npl_engine_fail(e, NPL_ERR_ARGUMENT, "no prompt") : NPL_ERR_ARGUMENT;
    if (!*text) return npl_engine_fail(e, NPL_ERR_ARGUMENT, "empty prompt");
    npl_status_clear(); /* codes recorded from here on are this call's */
    double t0 = npl_sess_now();
    memset(&e->s->stats, 0, sizeof(e->s->stats));
    npl_status st = npl_engine_build_turn(e, text, templated && e->p.use_template && e->m->tmpl != NPL_CHAT_TMPL_UNKNOWN);
    if (st != NPL_OK) return st;
    return npl_engine_from_session(e, npl_sess_start(e->s, NPL_SESS_APPEND, NULL, t0));
}

/* End of a response: the answer joins the history as the assistant's turn
 * (a stop string cut it: its tokens are in the cache, not in the text). */
static void finish(npl_engine *e) {
    if (e->s->ts.stopped) e->fed_valid = 0;
    if (e->fed_valid && e->n_msgs > 0) {
        if (npl_sess_append(&e->fed, &e->fed_len, &e->fed_cap, e->s->answer, e->s->answer_len) ||
            npl_engine_push_assistant(e, e->s->answer) != NPL_OK)
            e->fed_valid = 0;
    }
}

npl_status npl_engine_set_prompt(npl_engine *e, const char *user_text) { return begin(e, user_text, 1); }

npl_status npl_engine_next(npl_engine *e, const char **text, size_t *len) {
    static const char empty[] = "";
    if (!e) {
        if (text) *text = empty;
        if (len) *len = 0;
        return NPL_ERR_ARGUMENT;
    }
    int was = e->s->gen_active;
    npl_status st = npl_session_next(e->s, text, len);
    if (was && !e->s->gen_active) finish(e);
    return npl_engine_from_session(e, st);
}

static npl_status drive(npl_engine *e, npl_text_cb cb, void *user) {
    for (;;) {
        const char *t;
        size_t n;
        npl_status st = npl_engine_next(e, &t, &n);
        if (n && cb && cb(t, n, user)) npl_engine_cancel(e);
        if (st != NPL_OK) return st;
    }
}

npl_status npl_engine_chat(npl_engine *e, const char *user_text, npl_text_cb cb, void *user) {
    npl_status st = begin(e, user_text, 1);
    return st != NPL_OK ? st : drive(e, cb, user);
}

npl_status npl_engine_complete(npl_engine *e, const char *text, npl_text_cb cb, void *user) {
    npl_status st = begin(e, text, 0);
    return st != NPL_OK ? st : drive(e, cb, user);
}

const float *npl_engine_eval(npl_engine *e, const int32_t *ids, int n, npl_status *status) {
    npl_status st = NPL_ERR_ARGUMENT;
    if (e && ids && n > 0) {
        st = NPL_OK;
        int n_vocab = e->m->hp.n_vocab;
        for (int i = 0; i < n && st == NPL_OK; i++)
            if (ids[i] < 0 || ids[i] >= n_vocab)
                st = npl_engine_fail(e, NPL_ERR_ARGUMENT, "token id %d at %d out of range [0, %d)", ids[i], i, n_vocab);
        if (st == NPL_OK) {
            npl_sess_feed_clear(e->s);
            st = npl_engine_from_session(e, npl_sess_feed_ids(e->s, ids, n));
        }
        if (st == NPL_OK) {
            e->fed_valid = 0;
            st = npl_engine_from_session(e, npl_sess_start(e->s, NPL_SESS_APPEND, NULL, 0));
            e->s->gen_active = 0; /* teacher forcing: nothing is generated */
        }
    }
    if (status) *status = st;
    return st == NPL_OK ? e->s->logits : NULL;
}
