/* Sampler parameters: llama.cpp's defaults (common/common.h
 * common_params_sampling), the default chain (common/sampling.cpp
 * common_sampler_init), and MNN's llm_config.json keys mapped onto them.
 *
 * MNN (transformers/llm/engine/src/sampler.cpp, llmconfig.hpp) builds its
 * sampler from "sampler_type"; each type reads a few keys with defaults.
 * We reproduce which stages run and with which values; the stage
 * implementations are llama.cpp's. */
#include "llm/sampler.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/status.h"

static void set_err(char *err, size_t errlen, const char *fmt, ...) {
    if (!err || errlen == 0) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

/* A string from the user's config, made fit for a one-line error message:
 * printable ASCII as is, any other byte (control characters, newlines,
 * non-ASCII) and the backslash as \xNN, as the GGUF reader quotes names;
 * only the first SHOWN_MAX bytes, then "...". */
enum { SHOWN_MAX = 32, SHOWN_CAP = SHOWN_MAX * 4 + 4 };
static const char *shown(const char *s, char buf[SHOWN_CAP]) {
    static const char hex[] = "0123456789abcdef";
    size_t o = 0, i = 0;
    for (; s[i] && i < SHOWN_MAX; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c >= 0x20 && c < 0x7f && c != '\\') {
            buf[o++] = (char)c;
        } else {
            buf[o++] = '\\';
            buf[o++] = 'x';
            buf[o++] = hex[c >> 4];
            buf[o++] = hex[c & 15];
        }
    }
    if (s[i]) {
        memcpy(buf + o, "...", 3);
        o += 3;
    }
    buf[o] = 0;
    return buf;
}

/* ======================= params ======================= */

npl_sampler_params npl_sampler_default_params(void) {
    npl_sampler_params p;
    memset(&p, 0, sizeof p);
    p.seed = NPL_SAMPLER_DEFAULT_SEED;
    p.temp = 0.80f;
    p.top_k = 40;
    p.top_p = 0.95f;
    p.min_p = 0.05f;
    p.min_keep = 0;
    p.repeat_penalty = 1.00f;
    p.repeat_last_n = 64;
    p.freq_penalty = 0.00f;
    p.presence_penalty = 0.00f;
    p.n_stages = 5;
    p.stages[0] = NPL_SAMPLER_STAGE_PENALTIES;
    p.stages[1] = NPL_SAMPLER_STAGE_TOP_K;
    p.stages[2] = NPL_SAMPLER_STAGE_TOP_P;
    p.stages[3] = NPL_SAMPLER_STAGE_MIN_P;
    p.stages[4] = NPL_SAMPLER_STAGE_TEMP;
    return p;
}

static int check_params(const npl_sampler_params *p, int32_t n_vocab, char *err, size_t errlen) {
    const struct { const char *name; float v; } fl[] = {
        { "temp", p->temp }, { "top_p", p->top_p }, { "min_p", p->min_p },
        { "repeat_penalty", p->repeat_penalty }, { "freq_penalty", p->freq_penalty },
        { "presence_penalty", p->presence_penalty },
    };
    for (size_t i = 0; i < sizeof fl / sizeof fl[0]; i++) {
        if (!isfinite(fl[i].v)) {
            set_err(err, errlen, "sampler params: %s: not a finite number", fl[i].name);
            return -1;
        }
    }
    if (n_vocab <= 0) {
        set_err(err, errlen, "sampler params: n_vocab: %d is not positive", (int)n_vocab);
        return -1;
    }
    if (p->min_keep < 0) {
        set_err(err, errlen, "sampler params: min_keep: %d is negative", (int)p->min_keep);
        return -1;
    }
    if (p->repeat_last_n < -1) {
        set_err(err, errlen, "sampler params: repeat_last_n: %d (expected -1, 0 or a count)",
                (int)p->repeat_last_n);
        return -1;
    }
    if (p->n_stages < 0 || p->n_stages > NPL_SAMPLER_MAX_STAGES) {
        set_err(err, errlen, "sampler params: n_stages: %d not in [0, %d]", (int)p->n_stages,
                NPL_SAMPLER_MAX_STAGES);
        return -1;
    }
    for (int i = 0; i < p->n_stages; i++) {
        if ((int)p->stages[i] < 0 || p->stages[i] >= NPL_SAMPLER_STAGE_COUNT) {
            set_err(err, errlen, "sampler params: stages[%d]: unknown stage %d", i, (int)p->stages[i]);
            return -1;
        }
    }
    return 0;
}

npl_sampler *npl_sampler_chain_from_params(const npl_sampler_params *p, int32_t n_vocab,
                                           char *err, size_t errlen) {
    if (!p) {
        set_err(err, errlen, "sampler params: NULL");
        return NULL;
    }
    if (check_params(p, n_vocab, err, errlen)) return NULL;
    npl_sampler *chain = npl_sampler_chain_init(n_vocab);
    if (!chain) goto oom;
    const int greedy = !(p->temp > 0.0f);
    for (int i = 0; i < p->n_stages; i++) {
        npl_sampler *s = NULL;
        switch (p->stages[i]) {
        case NPL_SAMPLER_STAGE_PENALTIES:
            s = npl_sampler_init_penalties(n_vocab, p->repeat_last_n, p->repeat_penalty,
                                           p->freq_penalty, p->presence_penalty);
            break;
        case NPL_SAMPLER_STAGE_TOP_K:
            if (greedy) continue;
            s = npl_sampler_init_top_k(p->top_k);
            break;
        case NPL_SAMPLER_STAGE_TOP_P:
            if (greedy) continue;
            s = npl_sampler_init_top_p(p->top_p, (size_t)p->min_keep);
            break;
        case NPL_SAMPLER_STAGE_MIN_P:
            if (greedy) continue;
            s = npl_sampler_init_min_p(p->min_p, (size_t)p->min_keep);
            break;
        case NPL_SAMPLER_STAGE_TEMP:
            if (greedy) continue;
            s = npl_sampler_init_temp(p->temp);
            break;
        default:
            continue;
        }
        if (!s || npl_sampler_chain_add(chain, s)) goto oom;
    }
    npl_sampler *sel = greedy ? npl_sampler_init_greedy() : npl_sampler_init_dist(p->seed);
    if (!sel || npl_sampler_chain_add(chain, sel)) goto oom;
    return chain;
oom:
    npl_sampler_free(chain);
    npl_errf(err, errlen, NPL_ERR_MEMORY, "sampler params: out of memory building the chain for n_vocab %d",
             (int)n_vocab);
    return NULL;
}

/* ======================= MNN llm_config ======================= */

/* MNN's defaults (llmconfig.hpp). */
#define MNN_TEMPERATURE 1.0
#define MNN_TOP_K 40
#define MNN_TOP_P 0.9
#define MNN_MIN_P 0.1

static const char *json_type_name(const cJSON *it) {
    if (cJSON_IsString(it)) return "a string";
    if (cJSON_IsNumber(it)) return "a number";
    if (cJSON_IsBool(it)) return "a boolean";
    if (cJSON_IsNull(it)) return "null";
    if (cJSON_IsArray(it)) return "an array";
    if (cJSON_IsObject(it)) return "an object";
    return "an invalid value";
}

/* Reads an optional number. Returns 1 if present, 0 if absent, -1 on a
 * wrong type (message in err). */
static int get_num(const cJSON *cfg, const char *key, double *out, char *err, size_t errlen) {
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(cfg, key);
    if (!it) return 0;
    if (!cJSON_IsNumber(it)) {
        set_err(err, errlen, "%s: expected a number, got %s", key, json_type_name(it));
        return -1;
    }
    if (!isfinite(it->valuedouble)) {
        set_err(err, errlen, "%s: out of range (not a finite number)", key);
        return -1;
    }
    *out = it->valuedouble;
    return 1;
}

static int get_int(const cJSON *cfg, const char *key, int32_t *out, char *err, size_t errlen) {
    double v;
    int r = get_num(cfg, key, &v, err, errlen);
    if (r <= 0) return r;
    if (v != floor(v) || v < (double)INT32_MIN || v > (double)INT32_MAX) {
        set_err(err, errlen, "%s: expected an integer, got %g", key, v);
        return -1;
    }
    *out = (int32_t)v;
    return 1;
}

static int get_str(const cJSON *cfg, const char *key, const char **out, char *err, size_t errlen) {
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(cfg, key);
    if (!it) return 0;
    if (!cJSON_IsString(it) || !it->valuestring) {
        set_err(err, errlen, "%s: expected a string, got %s", key, json_type_name(it));
        return -1;
    }
    *out = it->valuestring;
    return 1;
}

/* MNN reads the snake_case key first when it is >= 0, else the camelCase
 * one (newer llmconfig.hpp); either may be absent. */
static int get_num_alias(const cJSON *cfg, const char *snake, const char *camel, double *out,
                         const char **used, char *err, size_t errlen) {
    double v;
    int r = get_num(cfg, snake, &v, err, errlen);
    if (r < 0) return -1;
    if (r > 0 && v >= 0.0) {
        *out = v;
        if (used) *used = snake;
        return 1;
    }
    if (used) *used = camel;
    return get_num(cfg, camel, out, err, errlen);
}

/* A probability as the config wrote it: the key as spelled there. */
static int unit_range(int present, const char *key, double v, char *err, size_t errlen) {
    if (!present || (v >= 0.0 && v <= 1.0)) return 0;
    set_err(err, errlen, "%s: %g out of range [0, 1]", key, v);
    return -1;
}

static int get_int_alias(const cJSON *cfg, const char *snake, const char *camel, int32_t *out,
                         char *err, size_t errlen) {
    int32_t v;
    int r = get_int(cfg, snake, &v, err, errlen);
    if (r < 0) return -1;
    if (r > 0 && v >= 0) {
        *out = v;
        return 1;
    }
    return get_int(cfg, camel, out, err, errlen);
}

typedef struct {
    int has_temp, has_top_k, has_top_p, has_min_p, has_penalty;
    double temp, top_p, min_p, penalty, tfs_z, typical;
    int32_t top_k;
} mnn_values;

static int read_values(const cJSON *cfg, mnn_values *v, char *err, size_t errlen) {
    int r;
    memset(v, 0, sizeof *v);
    v->temp = MNN_TEMPERATURE;
    v->top_k = MNN_TOP_K;
    v->top_p = MNN_TOP_P;
    v->min_p = MNN_MIN_P;
    v->tfs_z = 1.0;
    v->typical = 1.0;
    if ((r = get_num(cfg, "temperature", &v->temp, err, errlen)) < 0) return -1;
    v->has_temp = r;
    if ((r = get_int_alias(cfg, "top_k", "topK", &v->top_k, err, errlen)) < 0) return -1;
    v->has_top_k = r;
    const char *key = NULL;
    if ((r = get_num_alias(cfg, "top_p", "topP", &v->top_p, &key, err, errlen)) < 0) return -1;
    v->has_top_p = r;
    if (unit_range(r, key, v->top_p, err, errlen)) return -1;
    if ((r = get_num_alias(cfg, "min_p", "minP", &v->min_p, &key, err, errlen)) < 0) return -1;
    v->has_min_p = r;
    if (unit_range(r, key, v->min_p, err, errlen)) return -1;
    if ((r = get_num(cfg, "penalty", &v->penalty, err, errlen)) < 0) return -1;
    v->has_penalty = r;
    if (get_num_alias(cfg, "tfs_z", "tfsZ", &v->tfs_z, NULL, err, errlen) < 0) return -1;
    if (get_num(cfg, "typical", &v->typical, err, errlen) < 0) return -1;

    int32_t n_gram;
    if ((r = get_int(cfg, "n_gram", &n_gram, err, errlen)) < 0) return -1;
    if (r > 0 && n_gram < 1) {
        set_err(err, errlen, "n_gram: %d is not a positive n-gram length", (int)n_gram);
        return -1;
    }
    double ngram_factor = 1.0;
    if (get_num(cfg, "ngram_factor", &ngram_factor, err, errlen) < 0) return -1;
    if (ngram_factor > 1.0) {
        set_err(err, errlen, "ngram_factor: %g > 1 asks for MNN's n-gram penalty, "
                "which is not supported (use 1.0)", ngram_factor);
        return -1;
    }
    return 0;
}

/* MNN: penalty <= 1 means no penalty; it covers every token of the session. */
static void apply_penalty(npl_sampler_params *q, double penalty) {
    q->repeat_penalty = penalty > 1.0 ? (float)penalty : 1.0f;
    q->repeat_last_n = -1;
    q->freq_penalty = 0.0f;
    q->presence_penalty = 0.0f;
}

static int push_stage(npl_sampler_params *q, npl_sampler_stage st, char *err, size_t errlen) {
    if (q->n_stages >= NPL_SAMPLER_MAX_STAGES) {
        set_err(err, errlen, "mixed_samplers: more than %d samplers", NPL_SAMPLER_MAX_STAGES);
        return -1;
    }
    q->stages[q->n_stages++] = st;
    return 0;
}

static int has_stage(const npl_sampler_params *q, npl_sampler_stage st) {
    for (int i = 0; i < q->n_stages; i++)
        if (q->stages[i] == st) return 1;
    return 0;
}

static int unsupported_filter(const char *where, const char *name, double v, char *err, size_t errlen) {
    if (v < 1.0) {
        set_err(err, errlen, "%s: sampler '%s' with %s = %g is not supported "
                "(only the no-op value 1.0)", where, name,
                strcmp(name, "tfs") == 0 ? "tfsZ" : "typical", v);
        return -1;
    }
    return 0;
}

/* One MNN sampler name of a "mixed" list (or the sampler_type itself). */
static int add_named(npl_sampler_params *q, const mnn_values *v, const char *where, const char *name,
                     char *err, size_t errlen) {
    if (strcmp(name, "topK") == 0) {
        q->top_k = v->top_k;
        return push_stage(q, NPL_SAMPLER_STAGE_TOP_K, err, errlen);
    }
    if (strcmp(name, "topP") == 0) {
        q->top_p = (float)v->top_p;
        return push_stage(q, NPL_SAMPLER_STAGE_TOP_P, err, errlen);
    }
    /* MNN's default list says "min_p" but only dispatches "minP"; both
     * clearly mean min-p. */
    if (strcmp(name, "minP") == 0 || strcmp(name, "min_p") == 0) {
        q->min_p = (float)v->min_p;
        return push_stage(q, NPL_SAMPLER_STAGE_MIN_P, err, errlen);
    }
    if (strcmp(name, "penalty") == 0) {
        apply_penalty(q, v->penalty);
        return push_stage(q, NPL_SAMPLER_STAGE_PENALTIES, err, errlen);
    }
    if (strcmp(name, "temperature") == 0) {
        q->temp = (float)v->temp;
        return push_stage(q, NPL_SAMPLER_STAGE_TEMP, err, errlen);
    }
    if (strcmp(name, "greedy") == 0) return 0;   /* only matters as the last one */
    if (strcmp(name, "tfs") == 0) return unsupported_filter(where, name, v->tfs_z, err, errlen);
    if (strcmp(name, "typical") == 0) return unsupported_filter(where, name, v->typical, err, errlen);
    char sh[SHOWN_CAP];
    set_err(err, errlen, "%s: unknown sampler '%s' (expected greedy, temperature, "
            "topK, topP, minP, penalty, tfs, typical)", where, shown(name, sh));
    return -1;
}

static int build_mixed(const cJSON *cfg, npl_sampler_params *q, const mnn_values *v,
                       char *err, size_t errlen) {
    static const char *const mnn_default[] = { "topK", "tfs", "typical", "topP", "min_p", "temperature" };
    const char *names[64];
    size_t n = 0;
    const cJSON *arr = cJSON_GetObjectItemCaseSensitive(cfg, "mixed_samplers");
    if (!arr) {
        for (size_t i = 0; i < sizeof mnn_default / sizeof mnn_default[0]; i++) names[n++] = mnn_default[i];
    } else {
        if (!cJSON_IsArray(arr)) {
            set_err(err, errlen, "mixed_samplers: expected an array of strings, got %s",
                    json_type_name(arr));
            return -1;
        }
        const cJSON *el;
        cJSON_ArrayForEach(el, arr) {
            if (!cJSON_IsString(el) || !el->valuestring) {
                set_err(err, errlen, "mixed_samplers[%zu]: expected a string, got %s",
                        n, json_type_name(el));
                return -1;
            }
            if (n == sizeof names / sizeof names[0]) {
                set_err(err, errlen, "mixed_samplers: too many entries");
                return -1;
            }
            names[n++] = el->valuestring;
        }
        if (n == 0) {
            set_err(err, errlen, "mixed_samplers: empty list");
            return -1;
        }
    }
    for (size_t i = 0; i < n; i++) {
        char where[48];
        snprintf(where, sizeof where, "mixed_samplers[%zu]", i);
        if (add_named(q, v, where, names[i], err, errlen)) return -1;
    }
    /* The last name picks the selector: greedy, else softmax at temperature. */
    if (strcmp(names[n - 1], "greedy") == 0) {
        q->temp = 0.0f;
    } else {
        q->temp = (float)v->temp;
        if (!has_stage(q, NPL_SAMPLER_STAGE_TEMP) && push_stage(q, NPL_SAMPLER_STAGE_TEMP, err, errlen))
            return -1;
    }
    return 0;
}

int npl_sampler_params_from_mnn(npl_sampler_params *p, const struct cJSON *cfg,
                                char *err, size_t errlen) {
    if (!p || !cfg || !cJSON_IsObject(cfg)) {
        set_err(err, errlen, "config: expected a JSON object");
        return -1;
    }
    mnn_values v;
    if (read_values(cfg, &v, err, errlen)) return -1;
    npl_sampler_params q = *p;

    const char *type = NULL;
    int r = get_str(cfg, "sampler_type", &type, err, errlen);
    if (r < 0) return -1;
    if (r == 0) {   /* no sampler_type: present keys override, shape stays */
        if (v.has_temp) q.temp = (float)v.temp;
        if (v.has_top_k) q.top_k = v.top_k;
        if (v.has_top_p) q.top_p = (float)v.top_p;
        if (v.has_min_p) q.min_p = (float)v.min_p;
        if (v.has_penalty) apply_penalty(&q, v.penalty);
        *p = q;
        return 0;
    }

    /* sampler_type given: exactly MNN's stages; the others are neutral. */
    q.n_stages = 0;
    q.top_k = 0;
    q.top_p = 1.0f;
    q.min_p = 0.0f;
    q.repeat_penalty = 1.0f;
    q.freq_penalty = 0.0f;
    q.presence_penalty = 0.0f;
    q.temp = 0.0f;
    if (strcmp(type, "greedy") == 0) {
        /* argmax */
    } else if (strcmp(type, "temperature") == 0 || strcmp(type, "topK") == 0 ||
               strcmp(type, "topP") == 0 || strcmp(type, "minP") == 0) {
        if (strcmp(type, "temperature") != 0 && add_named(&q, &v, "sampler_type", type, err, errlen))
            return -1;
        q.temp = (float)v.temp;
        if (push_stage(&q, NPL_SAMPLER_STAGE_TEMP, err, errlen)) return -1;
    } else if (strcmp(type, "penalty") == 0) {
        if (add_named(&q, &v, "sampler_type", "penalty", err, errlen)) return -1;
        const char *sel = "greedy";
        if (get_str(cfg, "penalty_sampler", &sel, err, errlen) < 0) return -1;
        if (strcmp(sel, "temperature") == 0) {
            q.temp = (float)v.temp;
            if (push_stage(&q, NPL_SAMPLER_STAGE_TEMP, err, errlen)) return -1;
        } else if (strcmp(sel, "greedy") != 0) {
            char sh[SHOWN_CAP];
            set_err(err, errlen, "penalty_sampler: unknown '%s' (expected greedy, temperature)",
                    shown(sel, sh));
            return -1;
        }
    } else if (strcmp(type, "mixed") == 0) {
        if (build_mixed(cfg, &q, &v, err, errlen)) return -1;
    } else if (strcmp(type, "tfs") == 0 || strcmp(type, "typical") == 0) {
        if (unsupported_filter("sampler_type", type, strcmp(type, "tfs") == 0 ? v.tfs_z : v.typical,
                               err, errlen))
            return -1;
        q.temp = (float)v.temp;
        if (push_stage(&q, NPL_SAMPLER_STAGE_TEMP, err, errlen)) return -1;
    } else {
        char sh[SHOWN_CAP];
        set_err(err, errlen, "sampler_type: unknown '%s' (expected greedy, temperature, "
                "topK, topP, minP, penalty, mixed)", shown(type, sh));
        return -1;
    }
    *p = q;
    return 0;
}
