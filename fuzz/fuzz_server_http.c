/* libFuzzer: npullm serve's HTTP handling (tools/npullm/serve_http.c,
 * serve_jobs.c, serve_request.c, serve_json.c) behind libmicrohttpd, with a
 * stub slot in place of the model (it answers with the prompt's characters,
 * one per token, or fails as a too-long prompt when the prompt starts
 * with "LONG"), so each input costs microseconds, not a forward pass.
 *
 * One server for the whole run (2 slots, a queue of 2, --api-key k, a body
 * limit of 4 KiB, a 1 s timeout). Each input is sent as is on a new loopback
 * connection, the write side is shut, and the answer read to the end.
 * Contract: the answer (if any) starts with an HTTP/1.x status line; our own
 * error answers carry OpenAI's JSON error object; and the server still answers
 * GET /health after every input. */
#include "../tools/npullm/serve_http.c"
#include "../tools/npullm/serve_jobs.c"
#include "../tools/npullm/serve_json.c"
#include "../tools/npullm/serve_request.c"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdint.h>
#include <unistd.h>

#define REQUIRE(c)                                                                   \
    do {                                                                             \
        if (!(c)) {                                                                  \
            fprintf(stderr, "fuzz_server_http: %s:%d: %s\n", __FILE__, __LINE__, #c); \
            abort();                                                                 \
        }                                                                            \
    } while (0)

/* ---- the stub slot ---- */
struct srv_slot {
    atomic_int cancel;
};

srv_slot *srv_slot_new(const srv_slot_config *cfg, char *err, size_t errlen) {
    srv_slot *s = calloc(1, sizeof *s);
    if (!s) snprintf(err, errlen, "out of memory");
    return s;
}
void srv_slot_free(srv_slot *s) { free(s); }
int srv_slot_n_ctx(const srv_slot *s) { return 64; }
void srv_slot_cancel(srv_slot *s) { atomic_store(&s->cancel, 1); }

int srv_slot_run(srv_slot *s, const srv_request *r, srv_sink_fn sink, srv_cancel_fn cancelled, void *user,
                 srv_usage *u, srv_error *err) {
    memset(u, 0, sizeof *u);
    atomic_store(&s->cancel, 0);
    const char *p = r->kind == SRV_CHAT ? r->msgs[r->n_msgs - 1].content : r->prompt;
    if (!strncmp(p, "LONG", 4)) {
        srv_error_set(err, 400, "invalid_request_error", "messages", "context_length_exceeded", "prompt too long");
        return -1;
    }
    u->prompt_tokens = (int)strlen(p);
    if (sink(user, NULL, 0)) return 1;
    u->finish_reason = "stop";
    for (size_t i = 0; p[i];) {
        if (cancelled(user) || atomic_load(&s->cancel)) return 1;
        if (r->max_tokens >= 0 && u->completion_tokens >= r->max_tokens) {
            u->finish_reason = "length";
            break;
        }
        size_t n = 1;
        while (((unsigned char)p[i + n] & 0xC0) == 0x80) n++; /* whole characters, as the engine streams */
        if (sink(user, p + i, n)) return 1;
        u->completion_tokens++;
        i += n;
    }
    return 0;
}

/* ---- the harness ---- */
static srv_server *g_srv;
static int g_port;

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    signal(SIGPIPE, SIG_IGN);
    srv_config c = {.host = "127.0.0.1", .port = 0, .n_parallel = 2, .max_queue = 2, .api_key = "k",
                    .model_id = "m", .max_body = 4096, .timeout_s = 1, .max_connections = 64};
    c.defaults = (srv_defaults){.smp = {.temperature = 0.8f, .top_p = 0.95f, .min_p = 0.05f, .top_k = 40},
                                .max_tokens = -1, .n_ctx = 64};
    char err[256];
    g_srv = srv_start(&c, err, sizeof err);
    if (!g_srv) {
        fprintf(stderr, "fuzz_server_http: %s\n", err);
        abort();
    }
    g_port = srv_port(g_srv);
    return 0;
}

/* Sends msg on a new connection, shuts the write side, reads the answer. */
static size_t exchange(const void *msg, size_t n, char *out, size_t cap) {
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)g_port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    /* connect() can fail for the client's own reasons after some 10^5 loopback connections
     * (the 320,831-execution stop in fuzz/RESULTS.md; errno was not known then): retried for
     * up to 2 s, each failure logged with its errno; a server that stopped listening still
     * fails (ECONNREFUSED every time) */
    int fd = -1;
    for (int attempt = 0; attempt < 200; attempt++) {
        fd = socket(AF_INET, SOCK_STREAM, 0);
        REQUIRE(fd >= 0);
        struct timeval tv = {.tv_sec = 5};
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
        /* close with RST, not FIN: no TIME_WAIT on the client side, so ~2M connections a run do not
         * exhaust the ephemeral ports (the 946,678-execution stop in fuzz/RESULTS.md) */
        struct linger lg = {.l_onoff = 1, .l_linger = 0};
        setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
        if (connect(fd, (struct sockaddr *)&a, sizeof a) == 0) break;
        fprintf(stderr, "fuzz_server_http: connect (attempt %d): %s\n", attempt + 1, strerror(errno));
        close(fd);
        fd = -1;
        usleep(10000);
    }
    REQUIRE(fd >= 0);
    size_t sent = 0;
    while (sent < n) {
        ssize_t k = send(fd, (const char *)msg + sent, n - sent, MSG_NOSIGNAL);
        if (k <= 0) break; /* the server may refuse early (413, 431) and close */
        sent += (size_t)k;
    }
    shutdown(fd, SHUT_WR);
    size_t got = 0;
    for (;;) {
        char tmp[4096];
        ssize_t k = recv(fd, tmp, sizeof tmp, 0);
        if (k <= 0) break;
        size_t keep = got + (size_t)k < cap ? (size_t)k : cap - got;
        memcpy(out + got, tmp, keep);
        got += keep;
    }
    close(fd);
    out[got < cap ? got : cap - 1] = 0;
    return got;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static char out[1 << 16];
    size_t got = exchange(data, size, out, sizeof out);
    if (got) {
        REQUIRE(got >= 12 && !strncmp(out, "HTTP/1.", 7));
        int status = atoi(out + 9);
        REQUIRE(status >= 100 && status <= 599);
        const char *body = strstr(out, "\r\n\r\n");
        /* our JSON errors: OpenAI's error object (libmicrohttpd's own answers are HTML) */
        if (status >= 400 && body && strstr(out, "Content-Type: application/json") &&
            strstr(out, "Content-Length:") && got < sizeof out - 1) {
            cJSON *j = cJSON_Parse(body + 4);
            REQUIRE(j != NULL);
            const cJSON *e = cJSON_GetObjectItemCaseSensitive(j, "error");
            REQUIRE(cJSON_IsString(cJSON_GetObjectItemCaseSensitive(e, "message")));
            cJSON_Delete(j);
        }
    }
    static const char health[] = "GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
    /* the connections of the input may still be closing (the connection limit counts them):
     * the server must answer within a second */
    for (int i = 0; i < 100; i++) {
        got = exchange(health, sizeof health - 1, out, sizeof out);
        if (got > 12 && !strncmp(out, "HTTP/1.1 200", 12)) break;
        if (i == 0) fprintf(stderr, "fuzz_server_http: /health after the input: %zu bytes %.40s\n", got, out);
        usleep(10000);
    }
    REQUIRE(got > 12 && !strncmp(out, "HTTP/1.1 200", 12));
    return 0;
}
