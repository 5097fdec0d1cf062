/* libFuzzer: npullm serve's request bodies and the responses built from them
 * (tools/npullm/serve_request.c, serve_json.c; no library needed).
 *
 * Input: byte 0 = flags (bit 0: /v1/completions instead of chat; bit 1: a
 * context of 512 so max_tokens is bounded), then the body. Contract checked:
 * a refusal is a 400 (or a 500 for memory) with a message, and its JSON error
 * object parses back with the same message; an accepted request holds only
 * valid UTF-8 strings, at most 4 non-empty stop strings, values in OpenAI's
 * ranges; the response and stream chunks made from its text parse back as
 * JSON carrying that text, and a chunk is one "data: ...\n\n" event. */
#include "../tools/npullm/serve_json.c"
#include "../tools/npullm/serve_request.c"

#include <stdint.h>

#define REQUIRE(c)                                                                   \
    do {                                                                             \
        if (!(c)) {                                                                  \
            fprintf(stderr, "fuzz_server_json: %s:%d: %s\n", __FILE__, __LINE__, #c); \
            abort();                                                                 \
        }                                                                            \
    } while (0)

static void check_str(const char *s) {
    REQUIRE(s != NULL);
    REQUIRE(srv_utf8_valid(s, strlen(s)));
}

/* The JSON text j parses, and the string at path (object keys, "0" = first
 * array item) equals want. */
static void check_json_text(const char *j, const char *const *path, int n, const char *want) {
    REQUIRE(j != NULL);
    cJSON *root = cJSON_Parse(j);
    REQUIRE(root != NULL);
    const cJSON *v = root;
    for (int i = 0; i < n; i++)
        v = !strcmp(path[i], "0") ? cJSON_GetArrayItem(v, 0) : cJSON_GetObjectItemCaseSensitive(v, path[i]);
    REQUIRE(cJSON_IsString(v));
    REQUIRE(!strcmp(v->valuestring, want));
    cJSON_Delete(root);
}

static void check_sse(char *ev, srv_kind kind, const char *text) {
    REQUIRE(ev != NULL);
    size_t n = strlen(ev);
    REQUIRE(n > 8 && !strncmp(ev, "data: ", 6) && !strcmp(ev + n - 2, "\n\n"));
    REQUIRE(memchr(ev, '\n', n - 2) == NULL); /* one event: JSON escapes every newline */
    ev[n - 2] = 0;
    static const char *const chat[] = {"choices", "0", "delta", "content"}, *const cmpl[] = {"choices", "0", "text"};
    if (kind == SRV_CHAT) check_json_text(ev + 6, chat, 4, text);
    else check_json_text(ev + 6, cmpl, 3, text);
    free(ev);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    const srv_kind kind = data[0] & 1 ? SRV_COMPLETION : SRV_CHAT;
    srv_defaults def = {.smp = {.temperature = 0.8f, .top_p = 0.95f, .min_p = 0.05f, .top_k = 40},
                        .max_tokens = -1, .n_ctx = data[0] & 2 ? 512 : 0};
    srv_request r;
    srv_error e;
    memset(&e, 0, sizeof e);
    if (srv_request_parse((const char *)data + 1, size - 1, kind, &def, &r, &e)) {
        REQUIRE(e.http == 400 || e.http == 500);
        REQUIRE(e.message[0] != 0 && e.type != NULL);
        char *j = srv_json_error(&e);
        static const char *const path[] = {"error", "message"};
        check_json_text(j, path, 2, e.message);
        free(j);
        return 0;
    }
    REQUIRE(r.kind == kind);
    const char *text;
    if (kind == SRV_CHAT) {
        REQUIRE(r.n_msgs >= 1 && r.msgs && !r.prompt);
        for (int i = 0; i < r.n_msgs; i++) {
            REQUIRE(r.msgs[i].role <= SRV_ROLE_ASSISTANT);
            check_str(r.msgs[i].content);
        }
        text = r.msgs[r.n_msgs - 1].content;
    } else {
        REQUIRE(r.n_msgs == 0 && !r.msgs);
        check_str(r.prompt);
        text = r.prompt;
    }
    if (r.model) check_str(r.model);
    REQUIRE(r.n_stop >= 0 && r.n_stop <= SRV_MAX_STOP);
    for (int i = 0; i < r.n_stop; i++) {
        check_str(r.stop[i]);
        REQUIRE(r.stop[i][0] != 0);
    }
    REQUIRE(r.max_tokens == -1 || r.max_tokens >= 1);
    if (def.n_ctx) REQUIRE(r.max_tokens <= def.n_ctx);
    const srv_sampling *s = &r.smp;
    REQUIRE(s->temperature >= 0 && s->temperature <= 2 && s->top_p >= 0 && s->top_p <= 1 && s->min_p >= 0 &&
            s->min_p <= 1 && s->top_k >= 0 && s->presence_penalty >= -2 && s->presence_penalty <= 2 &&
            s->frequency_penalty >= -2 && s->frequency_penalty <= 2);
    REQUIRE(r.stream == 0 || r.stream == 1);

    const srv_resp_meta m = {.id = "chatcmpl-1", .model = r.model ? r.model : "m", .created = 1};
    const srv_usage u = {.prompt_tokens = 3, .completion_tokens = 4, .finish_reason = "stop"};
    char *resp = srv_json_response(kind, &m, text, strlen(text), &u);
    static const char *const chat[] = {"choices", "0", "message", "content"}, *const cmpl[] = {"choices", "0", "text"};
    if (kind == SRV_CHAT) check_json_text(resp, chat, 4, text);
    else check_json_text(resp, cmpl, 3, text);
    static const char *const model[] = {"model"};
    check_json_text(resp, model, 1, m.model);
    free(resp);
    check_sse(srv_sse_chunk(kind, &m, 0, text, strlen(text), NULL, NULL), kind, text);
    if (r.n_stop) check_sse(srv_sse_chunk(kind, &m, 1, r.stop[0], strlen(r.stop[0]), NULL, NULL), kind, r.stop[0]);
    srv_request_free(&r);
    return 0;
}
