/* npullm serve: HTTP on libmicrohttpd (a thread per connection).
 *
 * A request is routed and authorized when its headers are in (before any
 * body is read); the body is collected up to max_body bytes and within
 * timeout_s seconds of the first byte, then parsed and queued for a slot.
 * While it waits and runs, the connection's thread polls its socket: a
 * client that goes away cancels its generation. A streamed answer starts
 * (status 200) only once the prompt is prefilled, so a prompt too long for
 * the context is still a 400. */
#include <microhttpd.h>
#include <netdb.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "serve_jobs.h"

enum { R_NONE = 0, R_HEALTH, R_MODELS, R_CHAT, R_COMPLETIONS };
enum { PH_FIRST = 0, PH_TEXT, PH_END };

struct srv_server {
    srv_config cfg;
    srv_pool *pool;
    struct MHD_Daemon *d;
    atomic_llong next_id;
    long long created;
    int port;
};

typedef struct {
    srv_server *s;
    int route, fd, status;
    char *body;
    size_t len, cap;
    int too_big;
    double t0, last_out;
    srv_job *job;
    srv_kind kind;
    int include_usage;
    char id[48];
    srv_resp_meta meta;
    char *out; /* bytes of the stream not sent yet */
    size_t out_len, out_pos;
    int phase;
} conn_ctx;

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static enum MHD_Result reply_json(conn_ctx *cc, struct MHD_Connection *c, int status, char *json) {
    static const char oom[] = "{\"error\":{\"message\":\"out of memory\",\"type\":\"server_error\",\"param\":null,\"code\":null}}";
    struct MHD_Response *r =
        json ? MHD_create_response_from_buffer(strlen(json), json, MHD_RESPMEM_MUST_FREE)
             : MHD_create_response_from_buffer(sizeof oom - 1, (void *)oom, MHD_RESPMEM_PERSISTENT);
    if (!r) {
        free(json);
        return MHD_NO;
    }
    if (!json) status = 500;
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json");
    if (status == 503) MHD_add_response_header(r, MHD_HTTP_HEADER_RETRY_AFTER, "1");
    if (status == 405) MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, cc->route == R_HEALTH || cc->route == R_MODELS ? "GET" : "POST");
    if (status == 401) MHD_add_response_header(r, MHD_HTTP_HEADER_WWW_AUTHENTICATE, "Bearer");
    cc->status = status;
    enum MHD_Result ok = MHD_queue_response(c, (unsigned)status, r);
    MHD_destroy_response(r);
    return ok;
}

static enum MHD_Result reply_error(conn_ctx *cc, struct MHD_Connection *c, const srv_error *e) {
    return reply_json(cc, c, e->http, srv_json_error(e));
}

static enum MHD_Result reply_errf(conn_ctx *cc, struct MHD_Connection *c, int http, const char *type, const char *code,
                                  const char *msg) {
    srv_error e;
    srv_error_set(&e, http, type, NULL, code, "%s", msg);
    return reply_error(cc, c, &e);
}

static int route_of(const char *url) {
    if (!strncmp(url, "/v1/", 4)) url += 3;
    if (!strcmp(url, "/health")) return R_HEALTH;
    if (!strcmp(url, "/models")) return R_MODELS;
    if (!strcmp(url, "/chat/completions")) return R_CHAT;
    if (!strcmp(url, "/completions")) return R_COMPLETIONS;
    return R_NONE;
}

/* 1 once the peer closed its end (or the socket failed). */
static int client_gone(int fd) {
    if (fd < 0) return 0;
    struct pollfd pfd = {.fd = fd, .events = POLLRDHUP};
    if (poll(&pfd, 1, 0) <= 0) return 0;
    return (pfd.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL)) != 0;
}

static void deadline_in(struct timespec *ts, long ms) {
    clock_gettime(CLOCK_REALTIME, ts);
    ts->tv_nsec += ms * 1000000L;
    ts->tv_sec += ts->tv_nsec / 1000000000L;
    ts->tv_nsec %= 1000000000L;
}

/* Waits until the job is done (or, with want_started, prefilled); -1 when
 * the client went away first. */
static int wait_job(conn_ctx *cc, int want_started) {
    srv_job *j = cc->job;
    pthread_mutex_lock(&j->mu);
    while (j->state != JOB_DONE && !(want_started && j->started)) {
        struct timespec ts;
        deadline_in(&ts, 100);
        pthread_cond_timedwait(&j->cv, &j->mu, &ts);
        if (j->state == JOB_DONE || (want_started && j->started)) break;
        pthread_mutex_unlock(&j->mu);
        if (client_gone(cc->fd)) return -1;
        pthread_mutex_lock(&j->mu);
    }
    pthread_mutex_unlock(&j->mu);
    return 0;
}

static void set_out(conn_ctx *cc, char *s) {
    free(cc->out);
    cc->out = s;
    cc->out_len = s ? strlen(s) : 0;
    cc->out_pos = 0;
}

static char *concat3(char *a, char *b, const char *c) {
    size_t na = a ? strlen(a) : 0, nb = b ? strlen(b) : 0, nc = strlen(c);
    char *s = malloc(na + nb + nc + 1);
    if (s) {
        if (na) memcpy(s, a, na);
        if (nb) memcpy(s + na, b, nb);
        memcpy(s + na + nb, c, nc + 1);
    }
    free(a);
    free(b);
    return s;
}

/* The events of a finished job: the last chunk (finish_reason), usage if
 * asked for, [DONE]; or an error event. */
static char *final_events(conn_ctx *cc, srv_job *j) {
    if (j->rc == 0) {
        char *fin = srv_sse_chunk(cc->kind, &cc->meta, 0, NULL, 0, j->usage.finish_reason, NULL);
        char *use = cc->include_usage ? srv_sse_chunk(cc->kind, &cc->meta, 0, NULL, 0, NULL, &j->usage) : NULL;
        if (!fin || (cc->include_usage && !use)) {
            free(fin);
            free(use);
            return NULL;
        }
        return concat3(fin, use, "data: [DONE]\n\n");
    }
    srv_error e = j->err;
    if (j->rc > 0) srv_error_set(&e, 503, "server_error", NULL, NULL, "the server is shutting down");
    char *json = srv_json_error(&e);
    return json ? concat3(concat3(NULL, NULL, "data: "), json, "\n\ndata: [DONE]\n\n") : NULL;
}

/* The next bytes of the stream into cc->out; -1 to end it with an error
 * (the client is gone, or out of memory). */
static int next_events(conn_ctx *cc) {
    srv_job *j = cc->job;
    if (cc->phase == PH_FIRST) {
        cc->phase = PH_TEXT;
        if (cc->kind == SRV_CHAT) {
            set_out(cc, srv_sse_chunk(cc->kind, &cc->meta, 1, "", 0, NULL, NULL));
            return cc->out ? 0 : -1;
        }
    }
    pthread_mutex_lock(&j->mu);
    while (j->len == 0 && j->state != JOB_DONE) {
        struct timespec ts;
        deadline_in(&ts, 100);
        pthread_cond_timedwait(&j->cv, &j->mu, &ts);
        if (j->len || j->state == JOB_DONE) break;
        pthread_mutex_unlock(&j->mu);
        if (client_gone(cc->fd)) return -1;
        if (now_s() - cc->last_out > 10) { /* a comment keeps proxies from timing the stream out */
            cc->last_out = now_s();
            set_out(cc, strdup(": keep-alive\n\n"));
            return cc->out ? 0 : -1;
        }
        pthread_mutex_lock(&j->mu);
    }
    if (j->len) {
        set_out(cc, srv_sse_chunk(cc->kind, &cc->meta, 0, j->text, j->len, NULL, NULL));
        j->len = 0;
    } else {
        set_out(cc, final_events(cc, j));
        cc->phase = PH_END;
        if (j->rc) cc->status = j->rc < 0 ? j->err.http : 503;
    }
    pthread_mutex_unlock(&j->mu);
    cc->last_out = now_s();
    return cc->out ? 0 : -1;
}

static ssize_t stream_reader(void *cls, uint64_t pos, char *buf, size_t max) {
    conn_ctx *cc = cls;
    for (;;) {
        if (cc->out_pos < cc->out_len) {
            size_t n = cc->out_len - cc->out_pos < max ? cc->out_len - cc->out_pos : max;
            memcpy(buf, cc->out + cc->out_pos, n);
            cc->out_pos += n;
            return (ssize_t)n;
        }
        if (cc->phase == PH_END) return MHD_CONTENT_READER_END_OF_STREAM;
        if (next_events(cc)) {
            atomic_store(&cc->job->cancel, 1);
            cc->status = 499; /* nginx's "client closed request", for the log */
            return MHD_CONTENT_READER_END_WITH_ERROR;
        }
    }
}

static enum MHD_Result generate(conn_ctx *cc, struct MHD_Connection *c) {
    srv_server *s = cc->s;
    srv_defaults def = s->cfg.defaults;
    def.n_ctx = srv_pool_n_ctx(s->pool);
    srv_request r;
    srv_error e;
    cc->kind = cc->route == R_CHAT ? SRV_CHAT : SRV_COMPLETION;
    if (srv_request_parse(cc->body, cc->len, cc->kind, &def, &r, &e)) return reply_error(cc, c, &e);
    const int stream = r.stream;
    cc->include_usage = r.include_usage;
    snprintf(cc->id, sizeof cc->id, "%s-%llx", cc->kind == SRV_CHAT ? "chatcmpl" : "cmpl",
             (long long)atomic_fetch_add(&s->next_id, 1));
    cc->meta = (srv_resp_meta){.id = cc->id, .model = s->cfg.model_id, .created = (long long)time(NULL)};
    int full;
    cc->job = srv_job_submit(s->pool, &r, &full);
    srv_request_free(&r);
    if (!cc->job)
        return full ? reply_errf(cc, c, 503, "server_error", "server_busy", "all slots are busy and the queue is full: retry later")
                    : reply_errf(cc, c, 500, "server_error", NULL, "out of memory");
    /* the answer is bounded by max_tokens; the idle timeout is for receiving */
    MHD_set_connection_option(c, MHD_CONNECTION_OPTION_TIMEOUT, 0u);
    if (wait_job(cc, stream)) {
        srv_job_abandon(cc->job);
        cc->job = NULL;
        cc->status = 499;
        return MHD_NO;
    }
    srv_job *j = cc->job;
    if (j->state == JOB_DONE && j->rc != 0 && !(stream && j->started)) {
        srv_error je = j->err;
        if (j->rc > 0) srv_error_set(&je, 503, "server_error", NULL, NULL, "the server is shutting down");
        return reply_error(cc, c, &je);
    }
    if (!stream) {
        char *json = srv_json_response(cc->kind, &cc->meta, j->text ? j->text : "", j->len, &j->usage);
        return reply_json(cc, c, 200, json);
    }
    cc->last_out = now_s();
    struct MHD_Response *resp = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 4096, stream_reader, cc, NULL);
    if (!resp) return MHD_NO;
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "text/event-stream");
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-cache");
    cc->status = 200;
    enum MHD_Result ok = MHD_queue_response(c, MHD_HTTP_OK, resp);
    MHD_destroy_response(resp);
    return ok;
}

/* Headers are in: route, method, auth and the declared body size. */
static enum MHD_Result first_call(conn_ctx *cc, struct MHD_Connection *c, const char *url, const char *method) {
    srv_server *s = cc->s;
    cc->route = route_of(url);
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
    cc->fd = ci ? ci->connect_fd : -1;
    if (cc->route == R_NONE) return reply_errf(cc, c, 404, "invalid_request_error", "not_found", "no such endpoint");
    const int want_get = cc->route == R_HEALTH || cc->route == R_MODELS;
    if (strcmp(method, want_get ? "GET" : "POST"))
        return reply_errf(cc, c, 405, "invalid_request_error", "method_not_allowed",
                          want_get ? "this endpoint takes GET" : "this endpoint takes POST");
    srv_error e;
    if (cc->route != R_HEALTH &&
        srv_check_auth(s->cfg.api_key, MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION), &e))
        return reply_error(cc, c, &e);
    if (srv_check_length(MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH),
                         s->cfg.max_body, &e))
        return reply_error(cc, c, &e);
    return MHD_YES;
}

/* A body still arriving after timeout_s (a client trickling it, say a byte a
 * second, which the idle timeout never cuts): 408 and the connection closed.
 * libmicrohttpd 0.9.75 takes no response while a body is being received
 * (MHD_queue_response fails until the whole request is in, and that may be
 * days away), so the answer is written to the socket here, from the
 * connection's own thread while libmicrohttpd is between reads and has sent
 * nothing for this request; MHD_NO then closes the connection. */
static enum MHD_Result body_timeout(conn_ctx *cc) {
    srv_error e;
    srv_error_set(&e, 408, "invalid_request_error", NULL, "request_timeout",
                  "the request body took longer than %u s to arrive (--timeout): connection closed",
                  cc->s->cfg.timeout_s);
    char *json = srv_json_error(&e);
    char head[192];
    int n = snprintf(head, sizeof head,
                     "HTTP/1.1 408 Request Timeout\r\nContent-Type: application/json\r\nContent-Length: %zu\r\n"
                     "Connection: close\r\n\r\n",
                     json ? strlen(json) : 0);
    if (cc->fd >= 0 && n > 0 && n < (int)sizeof head) {
        /* a few hundred bytes: the socket's buffer takes them at once; a client that reads
         * nothing does not block this thread (MSG_DONTWAIT) */
        if (send(cc->fd, head, (size_t)n, MSG_NOSIGNAL | MSG_DONTWAIT) == n && json)
            (void)!send(cc->fd, json, strlen(json), MSG_NOSIGNAL | MSG_DONTWAIT);
    }
    free(json);
    cc->status = 408;
    return MHD_NO;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url, const char *method,
                                  const char *version, const char *upload, size_t *upload_size, void **con_cls) {
    srv_server *s = cls;
    conn_ctx *cc = *con_cls;
    if (!cc) {
        if (!(cc = calloc(1, sizeof *cc))) return MHD_NO;
        cc->s = s;
        cc->t0 = now_s();
        cc->fd = -1;
        *con_cls = cc;
        return first_call(cc, c, url, method);
    }
    if (*upload_size) {
        size_t n = *upload_size;
        *upload_size = 0;
        if (now_s() - cc->t0 > s->cfg.timeout_s) return body_timeout(cc);
        if (cc->too_big) return MHD_YES;
        if (cc->len + n > s->cfg.max_body) {
            cc->too_big = 1;
            free(cc->body);
            cc->body = NULL;
            cc->len = cc->cap = 0;
            return MHD_YES;
        }
        if (cc->len + n > cc->cap) {
            size_t cap = (cc->len + n) * 2 < s->cfg.max_body ? (cc->len + n) * 2 : s->cfg.max_body;
            char *b = realloc(cc->body, cap);
            if (!b) return MHD_NO;
            cc->body = b, cc->cap = cap;
        }
        memcpy(cc->body + cc->len, upload, n);
        cc->len += n;
        return MHD_YES;
    }
    if (cc->too_big) {
        char msg[128];
        snprintf(msg, sizeof msg, "the request body is over the limit of %zu bytes", s->cfg.max_body);
        return reply_errf(cc, c, 413, "invalid_request_error", "request_too_large", msg);
    }
    switch (cc->route) {
    case R_HEALTH: {
        int n, busy, queued;
        srv_pool_counts(s->pool, &n, &busy, &queued);
        return reply_json(cc, c, 200, srv_json_health(n, busy, queued));
    }
    case R_MODELS: return reply_json(cc, c, 200, srv_json_models(s->cfg.model_id, s->created));
    default: return generate(cc, c);
    }
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls, enum MHD_RequestTerminationCode toe) {
    srv_server *s = cls;
    conn_ctx *cc = *con_cls;
    if (!cc) return;
    if (cc->job) {
        int done;
        pthread_mutex_lock(&cc->job->mu);
        done = cc->job->state == JOB_DONE;
        pthread_mutex_unlock(&cc->job->mu);
        if (done) srv_job_release(cc->job);
        else srv_job_abandon(cc->job); /* the client left mid-stream */
    }
    if (s->cfg.verbose) {
        int st = toe == MHD_REQUEST_TERMINATED_COMPLETED_OK || cc->status == 0 || cc->status == 499 ||
                         cc->status == 408
                     ? cc->status
                     : 499;
        if (toe == MHD_REQUEST_TERMINATED_TIMEOUT_REACHED && !cc->job) st = 408; /* idle for --timeout: closed */
        fprintf(stderr, "npullm serve: %s %d %.3f s\n",
                cc->route == R_CHAT ? "chat" : cc->route == R_COMPLETIONS ? "completion" : cc->route == R_MODELS ? "models" : cc->route == R_HEALTH ? "health" : "other",
                st, now_s() - cc->t0);
    }
    free(cc->body);
    free(cc->out);
    free(cc);
    *con_cls = NULL;
}

static void mhd_log(void *cls, const char *fmt, va_list ap) {
    const srv_server *s = cls;
    if (!s->cfg.verbose) return;
    fprintf(stderr, "npullm serve: libmicrohttpd: ");
    vfprintf(stderr, fmt, ap);
}

srv_server *srv_start(const srv_config *cfg, char *err, size_t errlen) {
    srv_server *s = calloc(1, sizeof *s);
    if (!s) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    s->cfg = *cfg;
    s->created = (long long)time(NULL);
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *ai = NULL;
    int gai = getaddrinfo(cfg->host, NULL, &hints, &ai);
    if (gai) {
        snprintf(err, errlen, "--host %s: %s", cfg->host, gai_strerror(gai));
        free(s);
        return NULL;
    }
    struct sockaddr_storage addr;
    memcpy(&addr, ai->ai_addr, ai->ai_addrlen);
    const int v6 = ai->ai_family == AF_INET6;
    freeaddrinfo(ai);
    if (v6) ((struct sockaddr_in6 *)&addr)->sin6_port = htons((uint16_t)cfg->port);
    else ((struct sockaddr_in *)&addr)->sin_port = htons((uint16_t)cfg->port);
    if (!(s->pool = srv_pool_new(&cfg->slot, cfg->n_parallel, cfg->max_queue, err, errlen))) {
        free(s);
        return NULL;
    }
    unsigned flags = MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL |
                     MHD_USE_ERROR_LOG | (v6 ? MHD_USE_IPv6 : 0);
    s->d = MHD_start_daemon(flags, (uint16_t)cfg->port, NULL, NULL, on_request, s, MHD_OPTION_EXTERNAL_LOGGER, mhd_log, s,
                            MHD_OPTION_SOCK_ADDR, &addr,
                            MHD_OPTION_CONNECTION_TIMEOUT, cfg->timeout_s, MHD_OPTION_CONNECTION_LIMIT,
                            (unsigned)cfg->max_connections, MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)65536,
                            MHD_OPTION_NOTIFY_COMPLETED, on_completed, s,
                            MHD_OPTION_THREAD_STACK_SIZE, (size_t)(1 << 20), MHD_OPTION_END);
    if (!s->d) {
        snprintf(err, errlen, "cannot listen on %s port %d (in use, or not an address of this machine)", cfg->host,
                 cfg->port);
        srv_pool_free(s->pool);
        free(s);
        return NULL;
    }
    const union MHD_DaemonInfo *di = MHD_get_daemon_info(s->d, MHD_DAEMON_INFO_BIND_PORT);
    s->port = di ? di->port : cfg->port;
    return s;
}

int srv_port(const srv_server *s) { return s->port; }

void srv_stop(srv_server *s) {
    if (!s) return;
    /* no new requests; stop what runs so the connections' threads can end */
    MHD_quiesce_daemon(s->d);
    srv_pool_free(s->pool);
    MHD_stop_daemon(s->d);
    free(s);
}
