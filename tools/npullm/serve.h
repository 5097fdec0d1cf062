/* npullm serve: an OpenAI-compatible HTTP server on the public API.
 *
 *   serve_request.c  request bodies (JSON) -> srv_request, with OpenAI's error fields
 *   serve_json.c     response bodies: completions, chunks, models, errors
 *   serve_gen.c      one slot: an npl_session on the shared npl_model runs one request at a time
 *   serve_http.c     libmicrohttpd: routing, auth, body limits, SSE, the job queue, workers
 *   cmd_serve.c      flags, start, stop on SIGINT/SIGTERM
 *
 * Only serve_http.c knows HTTP; serve_request.c and serve_json.c are pure
 * functions of their input (fuzz/fuzz_server.c drives them). */
#ifndef NPL_SERVE_H
#define NPL_SERVE_H
#include <stddef.h>
#include <stdint.h>

#include "npullm.h"

#define SRV_MAX_STOP 4 /* OpenAI: up to 4 stop sequences */

typedef enum { SRV_CHAT = 0, SRV_COMPLETION = 1 } srv_kind;
typedef enum { SRV_ROLE_SYSTEM = 0, SRV_ROLE_USER, SRV_ROLE_ASSISTANT } srv_role;

typedef struct {
    srv_role role;
    char *content; /* UTF-8, NUL-terminated; "" for an assistant turn without content */
} srv_msg;

/* Sampling settings a request may give; unset ones keep the server's defaults. */
typedef struct {
    float temperature, top_p, min_p, presence_penalty, frequency_penalty;
    int top_k;
    int has_seed;
    uint32_t seed;
} srv_sampling;

typedef struct {
    srv_kind kind;
    int stream;
    int include_usage;   /* stream_options.include_usage */
    srv_msg *msgs;       /* chat */
    int n_msgs;
    char *prompt;        /* completion */
    char *model;         /* as given (echoed back), or NULL */
    int max_tokens;      /* -1: until EOS or the context is full */
    srv_sampling smp;
    char *stop[SRV_MAX_STOP];
    int n_stop;
} srv_request;

/* An error for the client: HTTP status and OpenAI's error object. */
typedef struct {
    int http;              /* 400, 401, 404, ... */
    char message[512];
    const char *type;      /* "invalid_request_error", "server_error", ... */
    char param[64];        /* the offending field, or "" */
    const char *code;      /* e.g. "context_length_exceeded", or NULL */
} srv_error;

/* Server-wide defaults a request starts from (the CLI's sampling flags). */
typedef struct {
    srv_sampling smp;
    int max_tokens;        /* default max_tokens; -1 = until EOS / context full */
    int n_ctx;             /* a request's max_tokens may not exceed it */
} srv_defaults;

/* Parses a request body. Unknown fields are ignored (as llama.cpp's server
 * and the openai client's extra_body expect); a known field of the wrong
 * type or out of range, malformed JSON, invalid UTF-8 or a missing required
 * field is 400 with the field in err->param. 0 on success (free with
 * srv_request_free), -1 with *err filled. */
int srv_request_parse(const char *body, size_t len, srv_kind kind, const srv_defaults *def, srv_request *out,
                      srv_error *err);
void srv_request_free(srv_request *r);
void srv_error_set(srv_error *e, int http, const char *type, const char *param, const char *code, const char *fmt,
                   ...) __attribute__((format(printf, 6, 7)));
/* The request's Authorization header (NULL if absent) against the server's
 * key: with key NULL every request passes; else it must be "Bearer KEY" (the
 * scheme in any case, spaces after it), compared in time independent of
 * where it differs. 0 = allowed, -1 with a 401 (code invalid_api_key) in *err. */
int srv_check_auth(const char *key, const char *authorization, srv_error *err);
/* A declared Content-Length (NULL if absent) against max_body: 0, or -1 with
 * 413 (code request_too_large) in *err when it is larger, 400 when it is not
 * a decimal number. */
int srv_check_length(const char *content_length, size_t max_body, srv_error *err);
/* 1 if s[0..n) is valid UTF-8 (no overlongs, surrogates or code points past U+10FFFF). */
int srv_utf8_valid(const char *s, size_t n);

/* ---- responses (serve_json.c); each returns a malloc'd NUL-terminated string or NULL ---- */
typedef struct {
    const char *id;        /* "chatcmpl-7" */
    const char *model;
    long long created;     /* unix seconds */
} srv_resp_meta;

typedef struct {
    int prompt_tokens, completion_tokens;
    const char *finish_reason; /* "stop", "length" */
} srv_usage;

char *srv_json_error(const srv_error *e);
char *srv_json_models(const char *model_id, long long created);
char *srv_json_health(int n_slots, int n_busy, int n_queued);
/* A whole (non-streamed) response. */
char *srv_json_response(srv_kind kind, const srv_resp_meta *m, const char *text, size_t len, const srv_usage *u);
/* One streamed chunk (the "data: ...\n\n" line with its JSON): the first chat
 * chunk carries role (role != 0), content pieces text, the last one
 * finish_reason; a usage chunk has no choices (u != NULL, finish NULL). */
char *srv_sse_chunk(srv_kind kind, const srv_resp_meta *m, int role, const char *text, size_t len,
                    const char *finish_reason, const srv_usage *u);

/* ---- a slot: one request at a time on the model (serve_gen.c) ----
 * Every slot is an npl_session of one npl_model (the weights mapped once, one
 * thread pool the sessions take turns on); a session keeps its KV cache
 * between requests, so a request that repeats an earlier conversation (or its
 * system prompt) prefills only what is new. */
typedef struct srv_slot srv_slot;

typedef struct {
    npl_model *model;       /* opened by the caller, closed after srv_stop */
    npl_session_params sp;  /* n_ctx (resolved, > 0), chunk limits... of every slot */
} srv_slot_config;

/* Receives generated text in order, and once text NULL when the prompt is
 * prefilled (so a stream can start with status 200); nonzero stops (client gone). */
typedef int (*srv_sink_fn)(void *user, const char *text, size_t len);
/* Polled between tokens; nonzero cancels. */
typedef int (*srv_cancel_fn)(void *user);

srv_slot *srv_slot_new(const srv_slot_config *cfg, char *err, size_t errlen);
void srv_slot_free(srv_slot *s);
int srv_slot_n_ctx(const srv_slot *s);
/* Asks a running generation to stop (any thread). */
void srv_slot_cancel(srv_slot *s);
/* Runs r; text goes to sink (stop strings already cut, never split inside a
 * UTF-8 character). 0 with *u filled (finish "stop" or "length";
 * prompt_tokens counts the whole prompt, reused KV rows included), 1 when
 * cancelled, -1 with *err (400 for a prompt the context cannot hold or
 * messages the model's template refuses, 500 otherwise). */
int srv_slot_run(srv_slot *s, const srv_request *r, srv_sink_fn sink, srv_cancel_fn cancelled, void *user,
                 srv_usage *u, srv_error *err);

/* ---- the server (serve_http.c) ---- */
typedef struct {
    const char *host;       /* "127.0.0.1" */
    int port;               /* 0 = any free port */
    int n_parallel;         /* slots */
    int max_queue;          /* requests waiting for a slot beyond them; more get 503 */
    const char *api_key;    /* NULL = no auth */
    const char *model_id;   /* the name /v1/models lists */
    size_t max_body;        /* bytes; more is 413 */
    unsigned timeout_s;     /* idle connection timeout (MHD), and the limit on receiving one request */
    int max_connections;
    int verbose;            /* one log line per request on stderr */
    srv_defaults defaults;
    srv_slot_config slot;
} srv_config;

typedef struct srv_server srv_server;
/* Opens the slots and starts listening. NULL with one line in err. */
srv_server *srv_start(const srv_config *cfg, char *err, size_t errlen);
int srv_port(const srv_server *s); /* the bound port */
void srv_stop(srv_server *s);       /* cancels running requests, closes connections, frees */

#endif
