/* Generation: chunked prefill, decode loop, stop conditions and streaming. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "llm/engine_impl.h"

/* Runs n tokens at the end of the history; with chunk_limits the run is
 * padded up to an allowed size (padding rows have position -1: never written
 * to the cache, hidden by the mask) and the logits are read at the last
 * valid row. */
static npl_status run_chunk(npl_engine *e, const int32_t *tok, int n, int padded) {
    char err[512];
    for (int i = 0; i < padded; i++) {
        e->chunk_tok[i] = i < n ? tok[i] : 0;
        e->chunk_pos[i] = i < n ? e->n_past + i : -1;
    }
    int32_t last = n - 1;
    npl_status_clear();
    const float *lg = npl_runner_forward_ex(e->r, e->chunk_tok, e->chunk_pos, padded, &last, 1, err, sizeof(err));
    if (!lg) return npl_engine_fail_from(e, NPL_ERR_RUNTIME, err);
    memcpy(e->hist + e->n_past, tok, sizeof(int32_t) * (size_t)n);
    e->n_past += n;
    e->logits = lg;
    return NPL_OK;
}

npl_status npl_engine_prefill(npl_engine *e) {
    const npl_engine_params *p = &e->p;
    if (e->n_feed == 0) return npl_engine_fail(e, NPL_ERR_ARGUMENT, "empty prompt");
    if (e->n_past + e->n_feed > e->n_ctx)
        return npl_engine_fail(e, NPL_CONTEXT_FULL, "context full: %d tokens in history + %d new > context of %d",
                               e->n_past, e->n_feed, e->n_ctx);
    int block = p->n_chunk_limits ? p->chunk_limits[p->n_chunk_limits - 1] : e->chunk_cap;
    for (int i = 0; i < e->n_feed;) {
        if (atomic_load(&e->cancel)) return npl_engine_fail(e, NPL_CANCELLED, "cancelled");
        int n = e->n_feed - i < block ? e->n_feed - i : block, padded = n;
        if (p->n_chunk_limits) /* smallest allowed size that holds the rest */
            for (int k = 0; k < p->n_chunk_limits; k++)
                if (p->chunk_limits[k] >= n) {
                    padded = p->chunk_limits[k];
                    break;
                }
        npl_status st = run_chunk(e, e->feed + i, n, padded);
        if (st != NPL_OK) return st;
        i += n;
    }
    for (int i = 0; i < e->n_feed; i++) npl_sampler_accept(e->smp, e->feed[i]);
    e->n_feed = 0;
    return NPL_OK;
}

static npl_status begin(npl_engine *e, const char *text, int templated) {
    if (!e || !text) return e ? npl_engine_fail(e, NPL_ERR_ARGUMENT, "no prompt") : NPL_ERR_ARGUMENT;
    if (!*text) return npl_engine_fail(e, NPL_ERR_ARGUMENT, "empty prompt");
    atomic_store(&e->cancel, 0);
    npl_status_clear(); /* codes recorded from here on are this call's */
    memset(&e->stats, 0, sizeof(e->stats));
    e->t_start = npl_engine_now();
    npl_status st = npl_engine_build_turn(e, text, templated && e->p.use_template && e->tmpl != NPL_CHAT_TMPL_UNKNOWN);
    if (st != NPL_OK) return st;
    e->stats.prompt_tokens = e->n_feed;
    st = npl_engine_prefill(e);
    double t = npl_engine_now();
    e->stats.prefill_seconds = t - e->t_start;
    e->stats.prefill_tps = e->stats.prefill_seconds > 0 ? e->stats.prompt_tokens / e->stats.prefill_seconds : 0;
    if (st != NPL_OK) return st;
    e->answer_len = 0;
    if (npl_engine_append(&e->answer, &e->answer_len, &e->answer_cap, "", 0))
        return npl_engine_fail(e, NPL_ERR_MEMORY, "out of memory");
    npl_text_stream_reset(&e->ts);
    e->n_gen = 0;
    e->n_decoded = 0;
    e->gen_active = 1;
    e->gen_status = NPL_OK;
    return NPL_OK;
}

/* End of a response: the answer joins the history as the assistant's turn. */
static npl_status finish(npl_engine *e, npl_status st) {
    e->gen_active = 0;
    /* decode speed counts the forwards of generated tokens, as llm_demo does */
    e->stats.decode_tps = e->stats.decode_seconds > 0 ? e->n_decoded / e->stats.decode_seconds : 0;
    e->stats.decode_tokens = e->n_gen;
    if (e->fed_valid && e->n_msgs > 0) {
        if (npl_engine_append(&e->fed, &e->fed_len, &e->fed_cap, e->answer, e->answer_len) ||
            npl_engine_push_assistant(e, e->answer) != NPL_OK)
            e->fed_valid = 0;
    }
    return st;
}

npl_status npl_engine_set_prompt(npl_engine *e, const char *user_text) { return begin(e, user_text, 1); }

npl_status npl_engine_next(npl_engine *e, const char **text, size_t *len) {
    static const char empty[] = "";
    if (text) *text = empty;
    if (len) *len = 0;
    if (!e) return NPL_ERR_ARGUMENT;
    if (!e->gen_active) return e->gen_status != NPL_OK ? e->gen_status : NPL_DONE;
    if (atomic_load(&e->cancel)) return e->gen_status = finish(e, npl_engine_fail(e, NPL_CANCELLED, "cancelled"));
    if (e->n_gen >= e->p.max_new_tokens || e->ts.stopped) {
        if (npl_text_stream_flush(&e->ts))
            return e->gen_status = finish(e, npl_engine_fail(e, NPL_ERR_MEMORY, "out of memory"));
        if (text) *text = e->ts.out ? e->ts.out : empty;
        if (len) *len = e->ts.out_len;
        e->gen_status = NPL_DONE;
        return finish(e, NPL_OK) == NPL_OK && e->ts.out_len ? NPL_OK : NPL_DONE;
    }
    int32_t tok;
    npl_status_clear();
    if (npl_sampler_sample(e->smp, e->logits, e->n_vocab, &tok))
        return e->gen_status = finish(e, npl_engine_fail(e, npl_status_take(NPL_ERR_RUNTIME), "sampling failed: %s",
                                                         npl_sampler_last_error(e->smp)));
    if (e->n_gen == 0) e->stats.ttft_seconds = npl_engine_now() - e->t_start;
    if (npl_tokenizer_is_eog(e->tok, tok)) {
        if (npl_text_stream_flush(&e->ts))
            return e->gen_status = finish(e, npl_engine_fail(e, NPL_ERR_MEMORY, "out of memory"));
        if (text) *text = e->ts.out ? e->ts.out : empty;
        if (len) *len = e->ts.out_len;
        e->gen_status = NPL_DONE;
        finish(e, NPL_OK);
        return e->ts.out_len ? NPL_OK : NPL_DONE;
    }
    e->n_gen++;
    char small[256], *piece = small;
    int n = npl_token_to_piece(e->tok, tok, small, sizeof(small), 0);
    if (n > (int)sizeof(small)) { /* a vocabulary may hold token texts of any length */
        piece = malloc((size_t)n);
        if (!piece || npl_token_to_piece(e->tok, tok, piece, n, 0) != n) n = -2;
    }
    const size_t len_n = n > 0 ? (size_t)n : 0;
    const int oom = n == -2 || npl_engine_append(&e->answer, &e->answer_len, &e->answer_cap, piece, len_n) ||
                    npl_text_stream_push(&e->ts, piece, len_n);
    if (piece != small) free(piece);
    if (oom) return e->gen_status = finish(e, npl_engine_fail(e, NPL_ERR_MEMORY, "out of memory"));
    if (e->ts.stopped) { /* the stop string is not part of the answer, but its tokens are */
        e->fed_valid = 0;
        size_t sl = strlen(e->p.stop);
        char *hit = e->answer_len >= sl ? strstr(e->answer, e->p.stop) : NULL;
        if (hit) e->answer_len = (size_t)(hit - e->answer), e->answer[e->answer_len] = 0;
    }
    if (text) *text = e->ts.out ? e->ts.out : empty;
    if (len) *len = e->ts.out_len;
    /* feed the token back unless generation ends here anyway */
    if (e->n_gen < e->p.max_new_tokens && !e->ts.stopped) {
        if (e->n_past >= e->n_ctx) {
            e->gen_status = npl_engine_fail(e, NPL_CONTEXT_FULL, "context full after %d generated tokens (context %d)", e->n_gen, e->n_ctx);
            finish(e, e->gen_status);
            return NPL_OK; /* deliver this piece; the next call reports CONTEXT_FULL */
        }
        double t0 = npl_engine_now();
        npl_status st = run_chunk(e, &tok, 1, 1);
        e->stats.decode_seconds += npl_engine_now() - t0;
        e->n_decoded++;
        if (st != NPL_OK) {
            e->gen_status = st;
            finish(e, st);
        }
    } else {
        e->unfed = tok; /* the next turn feeds it before its own tokens */
    }
    return NPL_OK;
}

static npl_status drive(npl_engine *e, npl_text_cb cb, void *user) {
    for (;;) {
        const char *t;
        size_t n;
        npl_status st = npl_engine_next(e, &t, &n);
        if (n && cb && cb(t, n, user)) {
            npl_engine_cancel(e);
        }
        if (st != NPL_OK) return st == NPL_DONE ? NPL_DONE : st;
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
        for (int i = 0; i < n && st == NPL_OK; i++)
            if (ids[i] < 0 || ids[i] >= e->n_vocab)
                st = npl_engine_fail(e, NPL_ERR_ARGUMENT, "token id %d at %d out of range [0, %d)", ids[i], i, e->n_vocab);
        if (st == NPL_OK && n > e->feed_cap) {
            int32_t *nf = realloc(e->feed, sizeof(int32_t) * (size_t)n);
            if (!nf) st = npl_engine_fail(e, NPL_ERR_MEMORY, "out of memory");
            else e->feed = nf, e->feed_cap = n;
        }
        if (st == NPL_OK) {
            memcpy(e->feed, ids, sizeof(int32_t) * (size_t)n);
            e->n_feed = n;
            e->fed_valid = 0;
            st = npl_engine_prefill(e);
        }
    }
    if (status) *status = st;
    return st == NPL_OK ? e->logits : NULL;
}
