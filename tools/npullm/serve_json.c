/* npullm serve: response bodies in the OpenAI API's shapes (cJSON). */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "serve.h"

/* cJSON's calls return NULL on allocation failure and accept NULL children,
 * so a tree is built straight through and checked once when printed. */
static char *finish(cJSON *root) {
    char *s = root ? cJSON_PrintUnformatted(root) : NULL;
    cJSON_Delete(root);
    return s;
}

static cJSON *str_n(const char *s, size_t n) {
    char small[256], *buf = n < sizeof small ? small : malloc(n + 1);
    if (!buf) return NULL;
    memcpy(buf, s, n);
    buf[n] = 0;
    cJSON *v = cJSON_CreateString(buf);
    if (buf != small) free(buf);
    return v;
}

char *srv_json_error(const srv_error *e) {
    cJSON *root = cJSON_CreateObject(), *o = cJSON_AddObjectToObject(root, "error");
    cJSON_AddStringToObject(o, "message", e->message);
    cJSON_AddStringToObject(o, "type", e->type ? e->type : "invalid_request_error");
    if (e->param[0]) cJSON_AddStringToObject(o, "param", e->param);
    else cJSON_AddNullToObject(o, "param");
    if (e->code) cJSON_AddStringToObject(o, "code", e->code);
    else cJSON_AddNullToObject(o, "code");
    if (!o) {
        cJSON_Delete(root);
        return NULL;
    }
    return finish(root);
}

char *srv_json_models(const char *model_id, long long created) {
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "object", "list");
    cJSON *data = cJSON_AddArrayToObject(root, "data"), *m = cJSON_CreateObject();
    cJSON_AddStringToObject(m, "id", model_id);
    cJSON_AddStringToObject(m, "object", "model");
    cJSON_AddNumberToObject(m, "created", (double)created);
    cJSON_AddStringToObject(m, "owned_by", "npullm");
    if (!data || !m || !cJSON_AddItemToArray(data, m)) {
        cJSON_Delete(m);
        cJSON_Delete(root);
        return NULL;
    }
    return finish(root);
}

char *srv_json_health(int n_slots, int n_busy, int n_queued) {
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "status", "ok");
    cJSON_AddNumberToObject(root, "slots_idle", n_slots - n_busy);
    cJSON_AddNumberToObject(root, "slots_processing", n_busy);
    cJSON_AddNumberToObject(root, "requests_queued", n_queued);
    return finish(root);
}

static void add_meta(cJSON *root, const srv_resp_meta *m, const char *object) {
    cJSON_AddStringToObject(root, "id", m->id);
    cJSON_AddStringToObject(root, "object", object);
    cJSON_AddNumberToObject(root, "created", (double)m->created);
    cJSON_AddStringToObject(root, "model", m->model);
}

static cJSON *usage_obj(const srv_usage *u) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "prompt_tokens", u->prompt_tokens);
    cJSON_AddNumberToObject(o, "completion_tokens", u->completion_tokens);
    cJSON_AddNumberToObject(o, "total_tokens", u->prompt_tokens + u->completion_tokens);
    return o;
}

/* Adds the one choice (index 0) to root's "choices"; returns it. */
static cJSON *add_choice(cJSON *root) {
    cJSON *arr = cJSON_AddArrayToObject(root, "choices"), *c = cJSON_CreateObject();
    if (!arr || !c || !cJSON_AddItemToArray(arr, c)) {
        cJSON_Delete(c);
        return NULL;
    }
    cJSON_AddNumberToObject(c, "index", 0);
    return c;
}

static void add_finish(cJSON *c, const char *finish_reason) {
    if (finish_reason) cJSON_AddStringToObject(c, "finish_reason", finish_reason);
    else cJSON_AddNullToObject(c, "finish_reason");
}

char *srv_json_response(srv_kind kind, const srv_resp_meta *m, const char *text, size_t len, const srv_usage *u) {
    cJSON *root = cJSON_CreateObject();
    add_meta(root, m, kind == SRV_CHAT ? "chat.completion" : "text_completion");
    cJSON *c = add_choice(root), *t = str_n(text, len);
    if (!c || !t) {
        cJSON_Delete(t);
        cJSON_Delete(root);
        return NULL;
    }
    if (kind == SRV_CHAT) {
        cJSON *msg = cJSON_AddObjectToObject(c, "message");
        cJSON_AddStringToObject(msg, "role", "assistant");
        if (!cJSON_AddItemToObject(msg, "content", t)) cJSON_Delete(t);
    } else if (!cJSON_AddItemToObject(c, "text", t)) {
        cJSON_Delete(t);
    }
    cJSON_AddNullToObject(c, "logprobs");
    add_finish(c, u->finish_reason);
    cJSON *uo = usage_obj(u);
    if (!cJSON_AddItemToObject(root, "usage", uo)) cJSON_Delete(uo);
    return finish(root);
}

char *srv_sse_chunk(srv_kind kind, const srv_resp_meta *m, int role, const char *text, size_t len,
                    const char *finish_reason, const srv_usage *u) {
    cJSON *root = cJSON_CreateObject();
    add_meta(root, m, kind == SRV_CHAT ? "chat.completion.chunk" : "text_completion");
    if (u && !finish_reason) { /* stream_options.include_usage: the last chunk, no choices */
        cJSON_AddArrayToObject(root, "choices");
        cJSON *uo = usage_obj(u);
        if (!cJSON_AddItemToObject(root, "usage", uo)) cJSON_Delete(uo);
    } else {
        cJSON *c = add_choice(root);
        cJSON *t = text ? str_n(text, len) : NULL;
        if (kind == SRV_CHAT) {
            cJSON *d = cJSON_AddObjectToObject(c, "delta");
            if (role) cJSON_AddStringToObject(d, "role", "assistant");
            if (t && !cJSON_AddItemToObject(d, "content", t)) cJSON_Delete(t);
        } else {
            if (!t) t = cJSON_CreateString("");
            if (!cJSON_AddItemToObject(c, "text", t)) cJSON_Delete(t);
        }
        cJSON_AddNullToObject(c, "logprobs");
        add_finish(c, finish_reason);
    }
    char *json = finish(root);
    if (!json) return NULL;
    size_t n = strlen(json);
    char *line = malloc(n + 9);
    if (line) memcpy(line, "data: ", 6), memcpy(line + 6, json, n), memcpy(line + 6 + n, "\n\n", 3);
    free(json);
    return line;
}
