/* npullm serve: request bodies of /v1/chat/completions and /v1/completions.
 *
 * Follows the OpenAI API's field names, types and ranges. Unknown fields are
 * ignored (OpenAI itself refuses them; llama.cpp's server ignores them, and
 * the openai client's extra_body relies on that), and so are OpenAI fields
 * that do not change the answer (user, store, metadata, service_tier,
 * parallel_tool_calls, an empty tools / logit_bias...). Fields that would
 * change it and this server cannot honour (n or best_of > 1, logprobs,
 * top_logprobs, tools / functions, a non-empty logit_bias, audio, echo,
 * suffix, a JSON response_format, token-id prompts) are refused with 400
 * rather than silently dropped. */
#include <cjson/cJSON.h>
#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "serve.h"

void srv_error_set(srv_error *e, int http, const char *type, const char *param, const char *code, const char *fmt,
                   ...) {
    e->http = http;
    e->type = type;
    e->code = code;
    snprintf(e->param, sizeof e->param, "%s", param ? param : "");
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->message, sizeof e->message, fmt, ap);
    va_end(ap);
}

#define BAD(param, ...) (srv_error_set(err, 400, "invalid_request_error", (param), NULL, __VA_ARGS__), -1)

int srv_utf8_valid(const char *str, size_t n) {
    const unsigned char *s = (const unsigned char *)str;
    for (size_t i = 0; i < n;) {
        unsigned c = s[i];
        if (c < 0x80) { i++; continue; }
        int k;
        unsigned cp, min;
        if ((c & 0xE0) == 0xC0) k = 1, cp = c & 0x1F, min = 0x80;
        else if ((c & 0xF0) == 0xE0) k = 2, cp = c & 0x0F, min = 0x800;
        else if ((c & 0xF8) == 0xF0) k = 3, cp = c & 0x07, min = 0x10000;
        else return 0;
        if (n - i <= (size_t)k) return 0;
        for (int j = 1; j <= k; j++) {
            if ((s[i + j] & 0xC0) != 0x80) return 0;
            cp = cp << 6 | (s[i + j] & 0x3F);
        }
        if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
        i += (size_t)k + 1;
    }
    return 1;
}

int srv_check_auth(const char *key, const char *h, srv_error *err) {
    if (!key) return 0;
    unsigned diff = 1;
    if (h && !strncasecmp(h, "Bearer ", 7)) {
        h += 7;
        while (*h == ' ') h++;
        size_t n = strlen(h), k = strlen(key);
        diff = n != k;
        for (size_t i = 0; i < k; i++) diff |= (unsigned char)key[i] ^ (unsigned char)(i < n ? h[i] : 0);
    }
    if (!diff) return 0;
    srv_error_set(err, 401, "invalid_request_error", NULL, "invalid_api_key",
                  "a missing or wrong API key: send 'Authorization: Bearer KEY'");
    return -1;
}

int srv_check_length(const char *cl, size_t max_body, srv_error *err) {
    if (!cl) return 0;
    size_t v = 0;
    int digits = 0, over = 0;
    for (; isdigit((unsigned char)*cl); cl++, digits++) {
        const size_t d = (size_t)(*cl - '0');
        if (over || v > max_body / 10 || d > max_body - v * 10) over = 1; /* v * 10 + d > max_body */
        else v = v * 10 + d;
    }
    while (*cl == ' ' || *cl == '\t') cl++;
    if (!digits || *cl) {
        srv_error_set(err, 400, "invalid_request_error", NULL, NULL, "Content-Length is not a number");
        return -1;
    }
    if (!over) return 0;
    srv_error_set(err, 413, "invalid_request_error", NULL, "request_too_large",
                  "the request body is over the limit of %zu bytes", max_body);
    return -1;
}

/* A number field: absent or null leaves *out; else it must be a number in [lo, hi]. */
static int get_num(const cJSON *o, const char *name, double lo, double hi, float *out, srv_error *err) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);
    if (!v || cJSON_IsNull(v)) return 0;
    if (!cJSON_IsNumber(v)) return BAD(name, "'%s' must be a number", name);
    double d = v->valuedouble;
    if (!isfinite(d) || d < lo || d > hi) return BAD(name, "'%s' is %g: must be in [%g, %g]", name, d, lo, hi);
    *out = (float)d;
    return 0;
}

/* An integer field in [lo, hi]; *present tells whether it was given. */
static int get_int(const cJSON *o, const char *name, double lo, double hi, long long *out, int *present,
                   srv_error *err) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);
    if (present) *present = 0;
    if (!v || cJSON_IsNull(v)) return 0;
    if (!cJSON_IsNumber(v)) return BAD(name, "'%s' must be an integer", name);
    double d = v->valuedouble;
    if (!isfinite(d) || d != floor(d)) return BAD(name, "'%s' must be an integer", name);
    if (d < lo || d > hi) return BAD(name, "'%s' is %.0f: must be in [%.0f, %.0f]", name, d, lo, hi);
    *out = (long long)d;
    if (present) *present = 1;
    return 0;
}

static int get_bool(const cJSON *o, const char *name, int *out, srv_error *err) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);
    if (!v || cJSON_IsNull(v)) return 0;
    if (!cJSON_IsBool(v)) return BAD(name, "'%s' must be a boolean", name);
    *out = cJSON_IsTrue(v);
    return 0;
}

static char *dup_str(const char *s, size_t n) {
    char *d = malloc(n + 1);
    if (d) memcpy(d, s, n), d[n] = 0;
    return d;
}

#define OOM() (srv_error_set(err, 500, "server_error", NULL, NULL, "out of memory"), -1)

/* A message's content: a string, or an array of {"type":"text","text":...}
 * parts (concatenated); null only for an assistant turn. */
static int get_content(const cJSON *m, int i, srv_role role, char **out, srv_error *err) {
    char param[64];
    snprintf(param, sizeof param, "messages[%d].content", i);
    const cJSON *c = cJSON_GetObjectItemCaseSensitive(m, "content");
    if (!c || cJSON_IsNull(c)) {
        if (role != SRV_ROLE_ASSISTANT) return BAD(param, "'%s' is required", param);
        return (*out = dup_str("", 0)) ? 0 : OOM();
    }
    if (cJSON_IsString(c)) return (*out = dup_str(c->valuestring, strlen(c->valuestring))) ? 0 : OOM();
    if (!cJSON_IsArray(c)) return BAD(param, "'%s' must be a string or an array of text parts", param);
    size_t len = 0;
    const cJSON *part;
    cJSON_ArrayForEach(part, c) {
        const cJSON *type = cJSON_GetObjectItemCaseSensitive(part, "type");
        const cJSON *text = cJSON_GetObjectItemCaseSensitive(part, "text");
        if (!cJSON_IsObject(part) || !cJSON_IsString(type) || strcmp(type->valuestring, "text"))
            return BAD(param, "'%s': only parts of type \"text\" are supported", param);
        if (!cJSON_IsString(text)) return BAD(param, "'%s': a text part needs a string 'text'", param);
        len += strlen(text->valuestring);
    }
    char *s = malloc(len + 1);
    if (!s) return OOM();
    len = 0;
    cJSON_ArrayForEach(part, c) {
        const char *t = cJSON_GetObjectItemCaseSensitive(part, "text")->valuestring;
        size_t n = strlen(t);
        memcpy(s + len, t, n);
        len += n;
    }
    s[len] = 0;
    *out = s;
    return 0;
}

static int get_messages(const cJSON *root, srv_request *r, srv_error *err) {
    const cJSON *ms = cJSON_GetObjectItemCaseSensitive(root, "messages");
    if (!ms) return BAD("messages", "'messages' is required");
    if (!cJSON_IsArray(ms)) return BAD("messages", "'messages' must be an array");
    int n = cJSON_GetArraySize(ms);
    if (n < 1) return BAD("messages", "'messages' must not be empty");
    if (!(r->msgs = calloc((size_t)n, sizeof *r->msgs))) return OOM();
    const cJSON *m;
    cJSON_ArrayForEach(m, ms) {
        int i = r->n_msgs;
        char param[64];
        snprintf(param, sizeof param, "messages[%d].role", i);
        if (!cJSON_IsObject(m)) return BAD(param, "'messages[%d]' must be an object", i);
        const cJSON *role = cJSON_GetObjectItemCaseSensitive(m, "role");
        if (!cJSON_IsString(role)) return BAD(param, "'%s' must be a string", param);
        const char *rs = role->valuestring;
        srv_role rl;
        if (!strcmp(rs, "system") || !strcmp(rs, "developer")) rl = SRV_ROLE_SYSTEM;
        else if (!strcmp(rs, "user")) rl = SRV_ROLE_USER;
        else if (!strcmp(rs, "assistant")) rl = SRV_ROLE_ASSISTANT;
        else return BAD(param, "'%s' is \"%.40s\": must be system, developer, user or assistant", param, rs);
        if (get_content(m, i, rl, &r->msgs[i].content, err)) return -1;
        r->msgs[i].role = rl;
        r->n_msgs++;
    }
    return 0;
}

static int get_prompt(const cJSON *root, srv_request *r, srv_error *err) {
    const cJSON *p = cJSON_GetObjectItemCaseSensitive(root, "prompt");
    if (!p) return BAD("prompt", "'prompt' is required");
    if (cJSON_IsArray(p) && cJSON_GetArraySize(p) == 1) p = cJSON_GetArrayItem(p, 0);
    if (!cJSON_IsString(p)) return BAD("prompt", "'prompt' must be a string (or an array of one string)");
    return (r->prompt = dup_str(p->valuestring, strlen(p->valuestring))) ? 0 : OOM();
}

static int get_stop(const cJSON *root, srv_request *r, srv_error *err) {
    const cJSON *s = cJSON_GetObjectItemCaseSensitive(root, "stop");
    if (!s || cJSON_IsNull(s)) return 0;
    if (cJSON_IsString(s)) {
        if (!*s->valuestring) return 0;
        return (r->stop[r->n_stop++] = dup_str(s->valuestring, strlen(s->valuestring))) ? 0 : OOM();
    }
    if (!cJSON_IsArray(s)) return BAD("stop", "'stop' must be a string or an array of strings");
    if (cJSON_GetArraySize(s) > SRV_MAX_STOP) return BAD("stop", "'stop' holds at most %d strings", SRV_MAX_STOP);
    const cJSON *e;
    cJSON_ArrayForEach(e, s) {
        if (!cJSON_IsString(e)) return BAD("stop", "'stop' must be a string or an array of strings");
        if (!*e->valuestring) continue;
        if (!(r->stop[r->n_stop++] = dup_str(e->valuestring, strlen(e->valuestring)))) return OOM();
    }
    return 0;
}

/* Fields of the OpenAI API this server does not implement: refused, not ignored. */
static int refuse_unsupported(const cJSON *root, srv_error *err) {
    long long n = 1;
    int given;
    if (get_int(root, "n", 1, 1e9, &n, &given, err)) return -1;
    if (n != 1) return BAD("n", "'n' is %lld: only 1 choice per request is supported", n);
    int lp = 0;
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, "logprobs");
    if (cJSON_IsNumber(v) || cJSON_IsTrue(v)) lp = 1; /* completions: an integer; chat: a boolean */
    if (lp) return BAD("logprobs", "'logprobs' is not supported");
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(root, "tools");
    if (cJSON_IsArray(t) && cJSON_GetArraySize(t) > 0) return BAD("tools", "'tools' are not supported");
    const cJSON *f = cJSON_GetObjectItemCaseSensitive(root, "functions"); /* the older name of tools */
    if (cJSON_IsArray(f) && cJSON_GetArraySize(f) > 0) return BAD("functions", "'functions' are not supported");
    const cJSON *lb = cJSON_GetObjectItemCaseSensitive(root, "logit_bias");
    if (cJSON_IsObject(lb) && lb->child) return BAD("logit_bias", "'logit_bias' is not supported");
    if (get_int(root, "top_logprobs", 0, 20, &n, &given, err)) return -1;
    if (given && n > 0) return BAD("top_logprobs", "'top_logprobs' is not supported");
    const cJSON *au = cJSON_GetObjectItemCaseSensitive(root, "audio");
    if (au && !cJSON_IsNull(au)) return BAD("audio", "'audio' output is not supported");
    /* the legacy completions endpoint's: echo the prompt, text after the insertion, best of n */
    if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(root, "echo"))) return BAD("echo", "'echo' is not supported");
    const cJSON *sfx = cJSON_GetObjectItemCaseSensitive(root, "suffix");
    if (cJSON_IsString(sfx) && *sfx->valuestring) return BAD("suffix", "'suffix' is not supported");
    if (get_int(root, "best_of", 1, 1e9, &n, &given, err)) return -1;
    if (given && n != 1) return BAD("best_of", "'best_of' is %lld: only 1 is supported", n);
    const cJSON *rf = cJSON_GetObjectItemCaseSensitive(root, "response_format");
    if (rf && !cJSON_IsNull(rf)) {
        const cJSON *type = cJSON_GetObjectItemCaseSensitive(rf, "type");
        if (!cJSON_IsString(type) || strcmp(type->valuestring, "text"))
            return BAD("response_format", "'response_format': only {\"type\": \"text\"} is supported");
    }
    return 0;
}

static int parse_fields(const cJSON *root, srv_kind kind, const srv_defaults *def, srv_request *r, srv_error *err) {
    if (!cJSON_IsObject(root)) return BAD(NULL, "the request body must be a JSON object");
    const cJSON *model = cJSON_GetObjectItemCaseSensitive(root, "model");
    if (model && !cJSON_IsNull(model)) {
        if (!cJSON_IsString(model)) return BAD("model", "'model' must be a string");
        if (!(r->model = dup_str(model->valuestring, strlen(model->valuestring)))) return OOM();
    }
    if (kind == SRV_CHAT ? get_messages(root, r, err) : get_prompt(root, r, err)) return -1;
    if (get_bool(root, "stream", &r->stream, err)) return -1;
    const cJSON *so = cJSON_GetObjectItemCaseSensitive(root, "stream_options");
    if (so && !cJSON_IsNull(so)) {
        if (!cJSON_IsObject(so)) return BAD("stream_options", "'stream_options' must be an object");
        if (get_bool(so, "include_usage", &r->include_usage, err)) return -1;
    }
    srv_sampling *s = &r->smp;
    if (get_num(root, "temperature", 0, 2, &s->temperature, err) || get_num(root, "top_p", 0, 1, &s->top_p, err) ||
        get_num(root, "min_p", 0, 1, &s->min_p, err) ||
        get_num(root, "presence_penalty", -2, 2, &s->presence_penalty, err) ||
        get_num(root, "frequency_penalty", -2, 2, &s->frequency_penalty, err))
        return -1;
    long long v;
    int given;
    if (get_int(root, "top_k", 0, 1e9, &v, &given, err)) return -1;
    if (given) s->top_k = (int)v;
    if (get_int(root, "seed", -1, 4294967294.0, &v, &given, err)) return -1;
    if (given && v >= 0) s->has_seed = 1, s->seed = (uint32_t)v;
    /* max_completion_tokens is the newer name; either caps the answer */
    const double cap = def->n_ctx > 0 ? def->n_ctx : 1e9;
    const char *names[2] = {"max_completion_tokens", "max_tokens"};
    for (int i = 0; i < 2; i++) {
        if (get_int(root, names[i], -1e18, 1e18, &v, &given, err)) return -1;
        if (!given) continue;
        if (v < 1) return BAD(names[i], "'%s' is %lld: must be at least 1", names[i], v);
        if (v > cap)
            return BAD(names[i], "'%s' is %lld: more than the context of %d tokens", names[i], v, (int)cap);
        r->max_tokens = (int)v;
        break;
    }
    if (get_stop(root, r, err) || refuse_unsupported(root, err)) return -1;
    return 0;
}

int srv_request_parse(const char *body, size_t len, srv_kind kind, const srv_defaults *def, srv_request *out,
                      srv_error *err) {
    memset(out, 0, sizeof *out);
    out->kind = kind;
    out->smp = def->smp;
    /* the legacy completions endpoint caps at 16 tokens by default, as OpenAI's does */
    out->max_tokens = kind == SRV_COMPLETION ? 16 : def->max_tokens;
    if (len == 0) return BAD(NULL, "the request body is empty: a JSON object is expected");
    if (!srv_utf8_valid(body, len)) return BAD(NULL, "the request body is not valid UTF-8");
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts(body, len, &end, 0);
    if (!root) {
        const char *at = cJSON_GetErrorPtr();
        long off = at && at >= body && at <= body + len ? (long)(at - body) : -1;
        return BAD(NULL, "malformed JSON (at byte %ld)", off);
    }
    while (end && end < body + len && (*end == ' ' || *end == '\t' || *end == '\n' || *end == '\r')) end++;
    int rc;
    if (end && end < body + len) rc = BAD(NULL, "malformed JSON: trailing bytes after the object (at byte %ld)", (long)(end - body));
    else rc = parse_fields(root, kind, def, out, err);
    cJSON_Delete(root);
    if (rc) srv_request_free(out);
    return rc;
}

void srv_request_free(srv_request *r) {
    if (!r) return;
    for (int i = 0; i < r->n_msgs; i++) free(r->msgs[i].content);
    free(r->msgs);
    free(r->prompt);
    free(r->model);
    for (int i = 0; i < r->n_stop; i++) free(r->stop[i]);
    memset(r, 0, sizeof *r);
}
