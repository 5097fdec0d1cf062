/* MNN-style config.json (see engine_config.h), parsed with cJSON. */
#include "llm/engine_config.h"
#include "core/quote.h"
#include "core/status.h"
#include "format/gguf.h"
#include "llm/sampler.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { MAX_CONFIG_BYTES = 1 << 20 };

int npl_engine_config_is_json(const char *path) {
    size_t n = strlen(path);
    return n >= 5 && !strcmp(path + n - 5, ".json");
}

static int bad(char *err, size_t errlen, const char *path, const char *key, const char *what) {
    snprintf(err, errlen, "%s: %s: %s", path, key, what);
    return -1;
}

/* Integer field in [lo, hi]; absent leaves *out alone. */
static int get_int(const cJSON *root, const char *key, long lo, long hi, int *out, const char *path, char *err,
                   size_t errlen) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, key);
    if (!v) return 0;
    if (!cJSON_IsNumber(v)) return bad(err, errlen, path, key, "must be an integer");
    char what[96];
    /* range first: converting a double outside long's range is undefined */
    if (!(v->valuedouble >= lo && v->valuedouble <= hi)) {
        snprintf(what, sizeof what, "%.17g out of range [%ld, %ld]", v->valuedouble, lo, hi);
        return bad(err, errlen, path, key, what);
    }
    if (v->valuedouble != (double)(long)v->valuedouble) {
        snprintf(what, sizeof what, "%.17g is not an integer", v->valuedouble);
        return bad(err, errlen, path, key, what);
    }
    *out = (int)v->valuedouble;
    return 0;
}

/* The number literal after "key": in the file's text, for a message about a
 * value cJSON could only hold as infinity (1e999). */
static void literal_of(const char *text, const char *key, char *buf, size_t len) {
    size_t kl = strlen(key);
    snprintf(buf, len, "a number");
    for (const char *q = text; (q = strchr(q, '"')) != NULL; q++) {
        if (strncmp(q + 1, key, kl) || q[1 + kl] != '"') continue;
        const char *v = q + 2 + kl;
        while (*v == ' ' || *v == '\t' || *v == '\n' || *v == '\r') v++;
        if (*v++ != ':') continue;
        while (*v == ' ' || *v == '\t' || *v == '\n' || *v == '\r') v++;
        size_t n = strspn(v, "+-0123456789.eE");
        if (n) {
            snprintf(buf, len, "%.*s", (int)(n < 40 ? n : 40), v);
            return;
        }
    }
}

/* Every top-level number must be finite: cJSON turns 1e999 into infinity,
 * which no key may hold. */
static int check_finite(const cJSON *root, const char *text, const char *path, char *err, size_t errlen) {
    const cJSON *it;
    cJSON_ArrayForEach(it, root) {
        if (!cJSON_IsNumber(it) || isfinite(it->valuedouble)) continue;
        char lit[48], what[80], key[300];
        literal_of(text, it->string, lit, sizeof lit);
        snprintf(what, sizeof what, "%s: out of range", lit);
        npl_quote(key, sizeof key, it->string, strlen(it->string));
        return bad(err, errlen, path, key, what);
    }
    return 0;
}

/* backend_type and precision: only values that take effect. The CPU path
 * computes activations in f32 ("normal", "high", "f32"); a package runs the
 * precision it was compiled with (its GGUF's npullm.package.precision). */
static int check_backend(const cJSON *root, const char *path, const char *model_path, char *err, size_t errlen) {
    const cJSON *bt = cJSON_GetObjectItemCaseSensitive(root, "backend_type");
    if (bt && !cJSON_IsString(bt)) return bad(err, errlen, path, "backend_type", "must be a string");
    char q[300];
    if (bt && strcmp(bt->valuestring, "cpu")) {
        char what[400];
        npl_quote(q, sizeof q, bt->valuestring, strlen(bt->valuestring));
        snprintf(what, sizeof what, "'%s' is not supported (supported: \"cpu\"; for an accelerator, "
                 "compile a package with npullm compile)", q);
        return bad(err, errlen, path, "backend_type", what);
    }
    const cJSON *pr = cJSON_GetObjectItemCaseSensitive(root, "precision");
    if (!pr) return 0;
    if (!cJSON_IsString(pr)) return bad(err, errlen, path, "precision", "must be a string");
    char gerr[256], what[520], compiled[32] = "";
    npl_gguf *g = npl_gguf_open(model_path, NULL, gerr, sizeof gerr);
    npl_gguf_str ps;
    if (g && npl_gguf_get_str(g, "npullm.package.precision", &ps) == 0)
        snprintf(compiled, sizeof compiled, "%.*s", (int)(ps.len < 31 ? ps.len : 31), ps.ptr);
    npl_gguf_close(g);
    if (!g) return 0; /* the model's own error comes when it is opened */
    const char *v = pr->valuestring;
    npl_quote(q, sizeof q, v, strlen(v));
    if (*compiled) {
        if (!strcmp(v, compiled)) return 0;
        snprintf(what, sizeof what, "'%s' is not supported: the package was compiled for \"%s\" and runs only "
                 "that (supported: \"%s\"; compile again with --act for another)", q, compiled, compiled);
        return bad(err, errlen, path, "precision", what);
    }
    if (!strcmp(v, "normal") || !strcmp(v, "high") || !strcmp(v, "f32")) return 0;
    snprintf(what, sizeof what, "'%s' is not supported on the CPU path, which computes in f32 (supported: "
             "\"normal\", \"high\", \"f32\"; a package compiled with --act runs f16, bf16 or int16)", q);
    return bad(err, errlen, path, "precision", what);
}

int npl_engine_config_load(const char *path, npl_engine_params *p, char *model_path, size_t model_len,
                           char **owned, char *err, size_t errlen) {
    FILE *fp = fopen(path, "rb");
    if (!fp) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return -1;
    }
    char *text = malloc(MAX_CONFIG_BYTES + 1);
    size_t n = text ? fread(text, 1, MAX_CONFIG_BYTES + 1, fp) : 0;
    fclose(fp);
    if (!text) return npl_errf(err, errlen, NPL_ERR_MEMORY, "%s: file: out of memory", path), -1;
    if (n > MAX_CONFIG_BYTES) {
        free(text);
        return bad(err, errlen, path, "file", "larger than 1 MiB");
    }
    text[n] = 0;
    cJSON *root = cJSON_ParseWithLength(text, n);
    if (!root || !cJSON_IsObject(root)) {
        cJSON_Delete(root);
        free(text);
        return bad(err, errlen, path, "file", "not a JSON object (malformed or nested too deeply)");
    }
    int rc = check_finite(root, text, path, err, errlen);
    free(text);
    if (rc) goto done;
    rc = -1;
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(root, "llm_model");
    if (!m) { bad(err, errlen, path, "llm_model", "missing"); goto done; }
    if (!cJSON_IsString(m) || !*m->valuestring) { bad(err, errlen, path, "llm_model", "must be a non-empty string"); goto done; }
    /* resolve relative to the config's directory */
    const char *slash = strrchr(path, '/');
    if (m->valuestring[0] == '/' || !slash) snprintf(model_path, model_len, "%s", m->valuestring);
    else snprintf(model_path, model_len, "%.*s/%s", (int)(slash - path), path, m->valuestring);
    if (get_int(root, "thread_num", 0, 256, &p->n_threads, path, err, errlen) ||
        get_int(root, "max_new_tokens", 0, 1 << 24, &p->max_new_tokens, path, err, errlen) ||
        get_int(root, "max_context_length", 1, 1 << 24, &p->n_ctx, path, err, errlen))
        goto done;
    const cJSON *ut = cJSON_GetObjectItemCaseSensitive(root, "use_template");
    if (ut) {
        if (!cJSON_IsBool(ut)) { bad(err, errlen, path, "use_template", "must be true or false"); goto done; }
        p->use_template = cJSON_IsTrue(ut);
    }
    const cJSON *sys = cJSON_GetObjectItemCaseSensitive(root, "system_prompt");
    if (sys) {
        if (!cJSON_IsString(sys)) { bad(err, errlen, path, "system_prompt", "must be a string"); goto done; }
        free(owned[0]);
        owned[0] = strdup(sys->valuestring);
        if (!owned[0]) { npl_errf(err, errlen, NPL_ERR_MEMORY, "%s: system_prompt: out of memory", path); goto done; }
        p->system_prompt = owned[0];
    }
    if (sys && ut && cJSON_IsFalse(ut)) {
        bad(err, errlen, path, "system_prompt", "has no effect with use_template: false");
        goto done;
    }
    if (check_backend(root, path, model_path, err, errlen)) goto done;
    const cJSON *cl = cJSON_GetObjectItemCaseSensitive(root, "chunk_limits");
    if (cl) {
        if (!cJSON_IsArray(cl) || cJSON_GetArraySize(cl) < 1 || cJSON_GetArraySize(cl) > NPL_MAX_CHUNK_LIMITS) {
            bad(err, errlen, path, "chunk_limits", "must be an array of 1 to 8 positive integers");
            goto done;
        }
        int i = 0;
        const cJSON *it;
        cJSON_ArrayForEach(it, cl) {
            if (!cJSON_IsNumber(it) || it->valuedouble < 1 || it->valuedouble > 65536 ||
                it->valuedouble != (double)(int)it->valuedouble) {
                bad(err, errlen, path, "chunk_limits", "must be an array of 1 to 8 positive integers");
                goto done;
            }
            p->chunk_limits[i++] = (int)it->valuedouble;
        }
        p->n_chunk_limits = i;
    }
    /* sampler keys (sampler_type, temperature, topK, topP, minP, penalty, ...):
     * the sampler's own MNN mapping validates them */
    npl_sampler_params sp = npl_sampler_default_params();
    sp.temp = p->temperature;
    sp.top_k = p->top_k;
    sp.top_p = p->top_p;
    sp.min_p = p->min_p;
    sp.repeat_penalty = p->repeat_penalty;
    sp.repeat_last_n = p->repeat_last_n;
    char serr[256];
    if (npl_sampler_params_from_mnn(&sp, root, serr, sizeof(serr))) {
        snprintf(err, errlen, "%s: %s", path, serr);
        goto done;
    }
    p->temperature = sp.temp;
    p->top_k = sp.top_k;
    p->top_p = sp.top_p;
    p->min_p = sp.min_p;
    p->repeat_penalty = sp.repeat_penalty;
    p->repeat_last_n = sp.repeat_last_n;
    rc = 0;
done:
    cJSON_Delete(root);
    return rc;
}
