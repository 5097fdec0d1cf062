/* npl_session generation: the public set_* calls (messages, text, ids), the
 * decode step (sampling, stop conditions, UTF-8 streaming), generate/chat/
 * complete, and the low-level forward. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "llm/session_impl.h"

static npl_status enter(npl_session *s) {
    npl_status_clear(); /* codes recorded from here on are this call's */
    s->err[0] = 0;
    s->status = NPL_OK;
    return NPL_OK;
}

/* The prompt of a message list: rendered, or (no template) the contents
 * completed raw one after another. */
static npl_status feed_messages(npl_session *s, const npl_chat_message *msgs, size_t n) {
    if (!msgs || n == 0) return npl_sess_fail(s, NPL_ERR_ARGUMENT, "no messages");
    for (size_t i = 0; i < n; i++)
        if (!msgs[i].role || !msgs[i].content)
            return npl_sess_fail(s, NPL_ERR_ARGUMENT, "message %zu: no %s", i, msgs[i].role ? "content" : "role");
    if (!s->m->tok) return npl_sess_fail(s, NPL_ERR_ARGUMENT, "%s: the model has no vocabulary: give token ids", s->m->path);
    npl_sess_feed_clear(s);
    if (s->m->tmpl == NPL_CHAT_TMPL_UNKNOWN) {
        for (size_t i = 0; i < n; i++) {
            if (!strcmp(msgs[i].role, "system"))
                return npl_sess_fail(s, NPL_ERR_ARGUMENT,
                                     "%s: no tokenizer.chat_template (a base model, run as raw completion): "
                                     "a system message needs a chat template named (npl_model_params.chat_template)",
                                     s->m->path);
            npl_status st = npl_sess_feed_text(s, msgs[i].content, strlen(msgs[i].content), i == 0, 1, NULL, 0);
            if (st != NPL_OK) return st;
        }
        return NPL_OK;
    }
    npl_chat_msg *cm = malloc(sizeof(*cm) * n);
    if (!cm) return npl_sess_fail(s, NPL_ERR_MEMORY, "out of memory");
    for (size_t i = 0; i < n; i++) {
        cm[i].role = msgs[i].role;
        cm[i].content = msgs[i].content;
    }
    npl_chat_buf full = {0};
    npl_status st;
    npl_status_clear();
    if (npl_chat_render(s->m->tmpl, cm, n, 1, &full, s->err, sizeof s->err))
        st = npl_sess_fail_from(s, NPL_ERR_ARGUMENT, s->err);
    else
        st = npl_sess_feed_rendered(s, &full, 0);
    npl_chat_buf_free(&full);
    free(cm);
    return st;
}

npl_status npl_session_set_messages(npl_session *s, const npl_chat_message *msgs, size_t n_msgs,
                                    const npl_gen_params *gp) {
    if (!s) return NPL_ERR_ARGUMENT;
    double t0 = npl_sess_now();
    enter(s);
    npl_status st = feed_messages(s, msgs, n_msgs);
    return st != NPL_OK ? st : npl_sess_start(s, NPL_SESS_MATCH, gp, t0);
}

npl_status npl_session_set_text(npl_session *s, const char *text, const npl_gen_params *gp) {
    if (!s) return NPL_ERR_ARGUMENT;
    double t0 = npl_sess_now();
    enter(s);
    if (!text || !*text) return npl_sess_fail(s, NPL_ERR_ARGUMENT, text ? "empty prompt" : "no prompt");
    npl_sess_feed_clear(s);
    /* raw text is the caller's own prompt: special-token text in it is
     * meant as tokens, as llama.cpp's raw prompts are */
    npl_status st = npl_sess_feed_text(s, text, strlen(text), 1, 1, NULL, 0);
    return st != NPL_OK ? st : npl_sess_start(s, NPL_SESS_MATCH, gp, t0);
}

npl_status npl_session_set_tokens(npl_session *s, const int32_t *ids, int n, const npl_gen_params *gp) {
    if (!s) return NPL_ERR_ARGUMENT;
    double t0 = npl_sess_now();
    enter(s);
    if (!ids || n <= 0) return npl_sess_fail(s, NPL_ERR_ARGUMENT, "no prompt tokens");
    for (int i = 0; i < n; i++)
        if (ids[i] < 0 || ids[i] >= s->n_vocab)
            return npl_sess_fail(s, NPL_ERR_ARGUMENT, "token id %d at %d out of range [0, %d)", ids[i], i, s->n_vocab);
    npl_sess_feed_clear(s);
    npl_status st = npl_sess_feed_ids(s, ids, n);
    return st != NPL_OK ? st : npl_sess_start(s, NPL_SESS_MATCH, gp, t0);
}

/* End of a response. */
static npl_status finish(npl_session *s, npl_status st, int why) {
    s->gen_active = 0;
    /* decode speed counts the forwards of generated tokens, as llm_demo does */
    s->stats.decode_tps = s->stats.decode_seconds > 0 ? s->n_decoded / s->stats.decode_seconds : 0;
    s->stats.decode_tokens = s->n_gen;
    s->stats.finish = why;
    return st;
}

/* The earliest stop string in the answer cuts it there. */
static void cut_at_stop(npl_session *s) {
    size_t at = s->answer_len;
    for (int i = 0; i < s->gp.n_stop; i++) {
        const char *st = s->gp.stop[i];
        if (!st || !*st) continue;
        const char *hit = strstr(s->answer, st);
        if (hit && (size_t)(hit - s->answer) < at) at = (size_t)(hit - s->answer);
    }
    s->answer_len = at;
    s->answer[at] = 0;
}

npl_status npl_session_next(npl_session *s, const char **text, size_t *len) {
    static const char empty[] = "";
    if (text) *text = empty;
    if (len) *len = 0;
    if (!s) return NPL_ERR_ARGUMENT;
    if (!s->gen_active) return s->gen_status != NPL_OK ? s->gen_status : NPL_DONE;
    if (atomic_load(&s->cancel)) {
        s->gen_status = npl_sess_fail(s, NPL_CANCELLED, "cancelled");
        return finish(s, s->gen_status, NPL_FINISH_CANCELLED);
    }
    const int limit = s->gp.max_tokens < 0 ? INT_MAX : s->gp.max_tokens;
    if (s->n_gen >= limit || s->ts.stopped) {
        if (npl_text_stream_flush(&s->ts)) {
            s->gen_status = npl_sess_fail(s, NPL_ERR_MEMORY, "out of memory");
            return finish(s, s->gen_status, NPL_FINISH_ERROR);
        }
        if (text) *text = s->ts.out ? s->ts.out : empty;
        if (len) *len = s->ts.out_len;
        s->gen_status = NPL_DONE;
        finish(s, NPL_OK, s->ts.stopped ? NPL_FINISH_STOP : NPL_FINISH_LENGTH);
        return s->ts.out_len ? NPL_OK : NPL_DONE;
    }
    if (!s->logits) {
        s->gen_status = npl_sess_fail(s, NPL_ERR_ARGUMENT, "no logits to sample from (set a prompt first)");
        return finish(s, s->gen_status, NPL_FINISH_ERROR);
    }
    int32_t tok;
    npl_status_clear();
    if (npl_sampler_sample(s->smp, s->logits, s->n_vocab, &tok)) {
        s->gen_status = npl_sess_fail(s, npl_status_take(NPL_ERR_RUNTIME), "sampling failed: %s",
                                      npl_sampler_last_error(s->smp));
        return finish(s, s->gen_status, NPL_FINISH_ERROR);
    }
    if (s->n_gen == 0) s->stats.ttft_seconds = npl_sess_now() - s->t_start;
    const npl_tokenizer *tk = s->m->tok;
    if (tk && npl_tokenizer_is_eog(tk, tok)) {
        if (npl_text_stream_flush(&s->ts)) {
            s->gen_status = npl_sess_fail(s, NPL_ERR_MEMORY, "out of memory");
            return finish(s, s->gen_status, NPL_FINISH_ERROR);
        }
        if (text) *text = s->ts.out ? s->ts.out : empty;
        if (len) *len = s->ts.out_len;
        s->gen_status = NPL_DONE;
        finish(s, NPL_OK, NPL_FINISH_EOG);
        return s->ts.out_len ? NPL_OK : NPL_DONE;
    }
    s->n_gen++;
    char small[256], *piece = small;
    int n = tk ? npl_token_to_piece(tk, tok, small, sizeof(small), 0) : 0;
    if (n > (int)sizeof(small)) { /* a vocabulary may hold token texts of any length */
        piece = malloc((size_t)n);
        if (!piece || npl_token_to_piece(tk, tok, piece, n, 0) != n) n = -2;
    }
    const size_t len_n = n > 0 ? (size_t)n : 0;
    const int oom = n == -2 || npl_sess_append(&s->answer, &s->answer_len, &s->answer_cap, piece, len_n) ||
                    npl_text_stream_push(&s->ts, piece, len_n);
    if (piece != small) free(piece);
    if (oom) {
        s->gen_status = npl_sess_fail(s, NPL_ERR_MEMORY, "out of memory");
        return finish(s, s->gen_status, NPL_FINISH_ERROR);
    }
    if (s->ts.stopped) cut_at_stop(s); /* the stop string is not part of the answer, but its tokens are */
    if (text) *text = s->ts.out ? s->ts.out : empty;
    if (len) *len = s->ts.out_len;
    /* feed the token back unless generation ends here anyway */
    if (s->n_gen < limit && !s->ts.stopped) {
        if (s->n_past >= s->n_ctx) {
            s->hist[s->n_past] = tok;
            s->unfed = tok;
            s->gen_status = npl_sess_fail(s, NPL_CONTEXT_FULL, "context full after %d generated tokens (context %d)", s->n_gen, s->n_ctx);
            finish(s, s->gen_status, NPL_FINISH_CONTEXT);
            return NPL_OK; /* deliver this piece; the next call reports CONTEXT_FULL */
        }
        double t0 = npl_sess_now();
        npl_status_clear();
        char err[512];
        int32_t pos = s->n_past, row = 0;
        const float *lg = npl_runner_forward_ex(s->r, &tok, &pos, 1, &row, 1, err, sizeof err);
        s->stats.decode_seconds += npl_sess_now() - t0;
        s->n_decoded++;
        if (!lg) {
            s->logits = NULL;
            s->gen_status = npl_sess_fail_from(s, NPL_ERR_RUNTIME, err);
            finish(s, s->gen_status, NPL_FINISH_ERROR);
        } else {
            s->hist[s->n_past++] = tok;
            s->logits = lg; /* the sampler accepted tok when it chose it */
        }
    } else {
        s->hist[s->n_past] = tok;
        s->unfed = tok; /* the next prompt feeds it first if it continues this history */
    }
    return NPL_OK;
}

npl_status npl_session_generate(npl_session *s, npl_text_cb cb, void *user) {
    if (!s) return NPL_ERR_ARGUMENT;
    for (;;) {
        const char *t;
        size_t n;
        npl_status st = npl_session_next(s, &t, &n);
        if (n && cb && cb(t, n, user)) npl_session_cancel(s);
        if (st != NPL_OK) return st;
    }
}

npl_status npl_session_chat(npl_session *s, const npl_chat_message *msgs, size_t n_msgs, const npl_gen_params *gp,
                            npl_text_cb cb, void *user) {
    npl_status st = npl_session_set_messages(s, msgs, n_msgs, gp);
    return st != NPL_OK ? st : npl_session_generate(s, cb, user);
}

npl_status npl_session_complete(npl_session *s, const char *text, const npl_gen_params *gp, npl_text_cb cb,
                                void *user) {
    npl_status st = npl_session_set_text(s, text, gp);
    return st != NPL_OK ? st : npl_session_generate(s, cb, user);
}

const char *npl_session_answer(const npl_session *s, size_t *len) {
    if (len) *len = s && s->answer ? s->answer_len : 0;
    return s && s->answer ? s->answer : "";
}

const float *npl_session_forward(npl_session *s, const int32_t *tokens, int n, int pos0, int n_out,
                                 npl_status *status) {
    npl_status st_unused;
    if (!status) status = &st_unused;
    if (!s) {
        *status = NPL_ERR_ARGUMENT;
        return NULL;
    }
    enter(s);
    if (!tokens || n < 1 || n_out < 1 || n_out > n || pos0 < 0 || pos0 > s->n_ctx - n) {
        *status = npl_sess_fail(s, NPL_ERR_ARGUMENT, "forward: %d tokens at %d (%d outputs) do not fit a context of %d",
                                n, pos0, n_out, s->n_ctx);
        return NULL;
    }
    for (int i = 0; i < n; i++)
        if (tokens[i] < 0 || tokens[i] >= s->n_vocab) {
            *status = npl_sess_fail(s, NPL_ERR_ARGUMENT, "forward: token %d: id %d out of [0, %d)", i, tokens[i],
                                    s->n_vocab);
            return NULL;
        }
    npl_sess_reset(s); /* the cache no longer holds a known history */
    const float *lg = npl_runner_forward(s->r, tokens, n, pos0, n_out, s->err, sizeof s->err);
    if (lg) {
        *status = NPL_OK;
    } else {
        *status = npl_sess_fail_from(s, NPL_ERR_RUNTIME, s->err);
    }
    return lg;
}
