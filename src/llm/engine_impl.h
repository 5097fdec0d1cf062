/* Internals of npl_engine shared by engine.c (open, config, conversation,
 * tokens) and engine_generate.c (turns, streaming): a model, one session on
 * it (session_impl.h: history, prefill, decode) and the conversation of
 * messages whose rendering the session's cache holds. */
#ifndef NPL_ENGINE_IMPL_H
#define NPL_ENGINE_IMPL_H
#include "llm/session_impl.h"

struct npl_engine {
    npl_engine_params p;
    char *owned_strings[4];     /* copies of the string params */
    npl_model *m;
    npl_session *s;
    /* conversation */
    npl_chat_msg *msgs;         /* role/content strings owned */
    size_t n_msgs, cap_msgs;
    char *fed;                  /* text the session's history was made from (template path) */
    size_t fed_len, fed_cap;
    int fed_valid;
    char err[512];
    npl_status status;          /* code of the last failed call, with err */
};

npl_status npl_engine_fail(npl_engine *e, npl_status st, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* A lower layer failed with message msg: its recorded code, else fallback. */
npl_status npl_engine_fail_from(npl_engine *e, npl_status fallback, const char *msg);
/* A session call failed with st: its message and code become the engine's. */
npl_status npl_engine_from_session(npl_engine *e, npl_status st);
/* The session's feed gets the tokens of a new user turn (only what the
 * cache lacks; the history is reset when the conversation diverged). */
npl_status npl_engine_build_turn(npl_engine *e, const char *user_text, int templated);
npl_status npl_engine_push_assistant(npl_engine *e, const char *text);

#endif
