/* Internals of npl_engine shared by engine.c (open, config, tokens) and
 * engine_generate.c (prefill, decode, streaming). */
#ifndef NPL_ENGINE_IMPL_H
#define NPL_ENGINE_IMPL_H
#include <stdatomic.h>

#include "core/status.h"
#include "llm/chat_template.h"
#include "llm/runner.h"
#include "llm/sampler.h"
#include "llm/text_stream.h"
#include "llm/tokenizer.h"
#include "npullm.h"

struct npl_engine {
    npl_engine_params p;
    char *owned_strings[4];     /* copies of the string params */
    npl_runner *r;
    npl_tokenizer *tok;
    npl_sampler *smp;
    npl_chat_tmpl tmpl;         /* UNKNOWN: a base model, prompts completed raw */
    int n_ctx, n_vocab;
    /* conversation */
    npl_chat_msg *msgs;         /* role/content strings owned */
    size_t n_msgs, cap_msgs;
    int32_t *hist;              /* tokens in the KV cache, [n_ctx] */
    int n_past;
    char *fed;                  /* text those tokens were made from (template path) */
    size_t fed_len, fed_cap;
    int fed_valid;
    /* the response being generated */
    int32_t *feed;              /* tokens waiting to be prefilled */
    int n_feed, feed_cap;
    const float *logits;        /* next-token logits after the last forward */
    int gen_active, n_gen, n_decoded;
    int32_t unfed;              /* last generated token not yet in the cache, or -1 */
    npl_status gen_status;
    char *answer;
    size_t answer_len, answer_cap;
    npl_text_stream ts;
    int32_t *chunk_tok, *chunk_pos; /* [max chunk] scratch for padded prefill */
    int chunk_cap;
    atomic_int cancel;
    npl_stats stats;
    double t_start;
    char err[512];
    npl_status status;          /* code of the last failed call, with err */
};

npl_status npl_engine_fail(npl_engine *e, npl_status st, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* A lower layer failed with message msg: its recorded code, else fallback. */
npl_status npl_engine_fail_from(npl_engine *e, npl_status fallback, const char *msg);
int npl_engine_append(char **buf, size_t *len, size_t *cap, const char *s, size_t n);
/* Prefill e->feed (chunked by chunk_limits) after the history. */
npl_status npl_engine_prefill(npl_engine *e);
/* Tokens of a new user turn into e->feed (only what the cache lacks). */
npl_status npl_engine_build_turn(npl_engine *e, const char *user_text, int templated);
npl_status npl_engine_push_assistant(npl_engine *e, const char *text);
double npl_engine_now(void);

#endif
