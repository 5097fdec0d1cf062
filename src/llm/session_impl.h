/* Internals of the public npl_model and npl_session (npullm.h): the model
 * (src/api/api_model.c opens it) holds the shared runner base, tokenizer and
 * chat template; a session (src/llm/session*.c) holds one runner (graph, KV
 * cache), its token history, sampler, the response being generated and its
 * stats. npl_engine (engine*.c) is a model, one session and a conversation
 * of messages on top. */
#ifndef NPL_SESSION_IMPL_H
#define NPL_SESSION_IMPL_H
#include <stdatomic.h>

#include "core/status.h"
#include "format/gguf.h"
#include "llm/chat_template.h"
#include "llm/runner.h"
#include "llm/sampler.h"
#include "llm/text_stream.h"
#include "llm/tokenizer.h"
#include "models/model.h"
#include "npullm.h"

struct npl_model {
    char *path;             /* as given */
    npl_model_params p;     /* p.chat_template owned (tmpl_name) */
    char *tmpl_name;
    npl_runner_base *base;  /* the mapping, hparams and pool its sessions share */
    const npl_gguf *g;      /* base's GGUF (a package's graph file) */
    npl_hparams hp;
    npl_tokenizer *tok;     /* NULL: a model without vocabulary (runs on ids) */
    npl_chat_tmpl tmpl;     /* UNKNOWN: none, prompts completed raw */
    char notice[256];       /* "" or one line for the app to show once (npl_model_notice) */
    uint64_t digest;        /* of the metadata and tensor table (session files) */
};

struct npl_session {
    npl_model *m;
    npl_runner *r;
    npl_session_params p;   /* chunk_limits sorted ascending */
    int n_ctx, n_vocab;
    /* history: hist[0..n_past) have K/V rows in the cache; hist[n_past] is
     * `unfed` when that is >= 0 (generated, not forwarded yet) */
    int32_t *hist;
    int n_past;
    int32_t unfed;
    /* the prompt being prepared (npl_sess_feed_*) */
    int32_t *feed;
    int n_feed, feed_cap;
    const float *logits;    /* next-token logits after the last forward, or NULL */
    /* generation parameters (stop strings owned) and the sampler made from them */
    npl_gen_params gp;
    char *stop_own[NPL_MAX_STOP];
    npl_sampler *smp;
    /* the response being generated */
    int gen_active, n_gen, n_decoded;
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
    npl_status status;      /* code of the last failed call, with err */
};

/* Records a failure on s (message and code; the thread's recorded code is
 * cleared). */
npl_status npl_sess_fail(npl_session *s, npl_status st, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* A lower layer failed with message msg: its recorded code, else fallback. */
npl_status npl_sess_fail_from(npl_session *s, npl_status fallback, const char *msg);
double npl_sess_now(void);
int npl_sess_append(char **buf, size_t *len, size_t *cap, const char *s, size_t n);

/* Validates gp, copies its stop strings and makes the sampler (s keeps its
 * parameters on failure). */
npl_status npl_sess_set_gen(npl_session *s, const npl_gen_params *gp);

/* The prompt in s->feed: cleared, then appended to. */
void npl_sess_feed_clear(npl_session *s);
npl_status npl_sess_feed_ids(npl_session *s, const int32_t *ids, int64_t n);
/* Tokens of text: special-token text parsed or not, or (plain != NULL)
 * parsed except inside the plain ranges. */
npl_status npl_sess_feed_text(npl_session *s, const char *text, size_t len, int add_special, int parse_special,
                              const npl_tok_span *plain, size_t n_plain);
/* Tokens of full->data[start..): the template's text parsed for special
 * tokens, the messages' text never. */
npl_status npl_sess_feed_rendered(npl_session *s, const npl_chat_buf *full, size_t start);

#define NPL_SESS_APPEND 0  /* the prompt is the history (and unfed) followed by the feed */
#define NPL_SESS_MATCH 1   /* the prompt is the feed; the cached prefix it shares is reused */
/* Prefills the prompt (s->feed, after the history per mode) and makes the
 * session ready to generate. gp NULL keeps the sampler; t0 = the request's
 * start (0: now). */
npl_status npl_sess_start(npl_session *s, int mode, const npl_gen_params *gp, double t0);
/* Forgets the history; the sampler is reset. */
void npl_sess_reset(npl_session *s);

#endif
