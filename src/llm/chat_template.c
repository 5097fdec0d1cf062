/* Chat templates: detection and rendering with the semantics of llama.cpp's
 * src/llama-chat.cpp (llm_chat_detect_template, llm_chat_apply_template). */
#include "llm/chat_template.h"
#include "llm/chat_template_impl.h"

#include "core/checked.h"
#include "core/status.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void set_err(char *err, size_t errlen, const char *fmt, ...) {
    if (!err || errlen == 0) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

/* ======================= buffer ======================= */

void npl_chat_buf_free(npl_chat_buf *b) {
    if (!b) return;
    free(b->data);
    free(b->text);
    b->data = NULL;
    b->text = NULL;
    b->len = b->cap = 0;
    b->n_text = b->cap_text = 0;
}

int npl_chat_buf_append(npl_chat_buf *b, const char *s, size_t n) {
    size_t need;
    if (npl_add_size(b->len, n, &need) || npl_add_size(need, 1, &need)) return -1;
    if (need > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < need) {
            if (npl_mul_size(cap, 2, &cap)) {
                cap = need;
                break;
            }
        }
        char *d = realloc(b->data, cap);
        if (!d) return -1;
        b->data = d;
        b->cap = cap;
    }
    if (n) memcpy(b->data + b->len, s, n);
    b->len += n;
    b->data[b->len] = '\0';
    return 0;
}

int npl_chat_buf_append_text(npl_chat_buf *b, const char *s, size_t n) {
    size_t at = b->len;
    if (npl_chat_buf_append(b, s, n)) return -1;
    if (n == 0) return 0;
    if (b->n_text && b->text[b->n_text - 1].off + b->text[b->n_text - 1].len == at) {
        b->text[b->n_text - 1].len += n;
        return 0;
    }
    if (b->n_text == b->cap_text) {
        size_t cap = b->cap_text ? b->cap_text : 16;
        if (b->cap_text && npl_mul_size(cap, 2, &cap)) return -1;
        size_t bytes;
        if (npl_mul_size(cap, sizeof(*b->text), &bytes)) return -1;
        npl_chat_span *t = realloc(b->text, bytes);
        if (!t) return -1;
        b->text = t;
        b->cap_text = cap;
    }
    b->text[b->n_text].off = at;
    b->text[b->n_text].len = n;
    b->n_text++;
    return 0;
}

/* ======================= names ======================= */

static const struct {
    const char *name;
    npl_chat_tmpl tmpl;
} k_names[] = {
    { "chatml", NPL_CHAT_TMPL_CHATML },
    { "llama2", NPL_CHAT_TMPL_LLAMA2 },
    { "llama2-sys", NPL_CHAT_TMPL_LLAMA2_SYS },
    { "llama2-sys-bos", NPL_CHAT_TMPL_LLAMA2_SYS_BOS },
    { "llama2-sys-strip", NPL_CHAT_TMPL_LLAMA2_SYS_STRIP },
    { "llama3", NPL_CHAT_TMPL_LLAMA3 },
    { "gemma", NPL_CHAT_TMPL_GEMMA },
    { "deepseek3", NPL_CHAT_TMPL_DEEPSEEK3 },
    { "phi3", NPL_CHAT_TMPL_PHI3 },
    { "phi4", NPL_CHAT_TMPL_PHI4 },
    { "mistral-v3-tekken", NPL_CHAT_TMPL_MISTRAL_V3_TEKKEN },
    { "mistral-v7-tekken", NPL_CHAT_TMPL_MISTRAL_V7_TEKKEN },
    { "granite", NPL_CHAT_TMPL_GRANITE },
    { "granite-4.0", NPL_CHAT_TMPL_GRANITE_4 },
    { "smollm3", NPL_CHAT_TMPL_SMOLLM3 },
    { "gemma4", NPL_CHAT_TMPL_GEMMA4 },
};
#define N_NAMES (sizeof k_names / sizeof k_names[0])

const char *npl_chat_tmpl_name(npl_chat_tmpl t) {
    for (size_t i = 0; i < N_NAMES; i++)
        if (k_names[i].tmpl == t) return k_names[i].name;
    return "unknown";
}

int npl_chat_tmpl_from_name(const char *name, npl_chat_tmpl *out, char *err, size_t errlen) {
    if (name) {
        for (size_t i = 0; i < N_NAMES; i++) {
            if (strcmp(k_names[i].name, name) == 0) {
                *out = k_names[i].tmpl;
                return 0;
            }
        }
    }
    char list[400] = "";
    size_t off = 0;
    for (size_t i = 0; i < N_NAMES && off < sizeof list; i++)
        off += (size_t)snprintf(list + off, sizeof list - off, "%s%s", i ? ", " : "", k_names[i].name);
    set_err(err, errlen, "chat template: unknown name '%s' (supported: %s)", name ? name : "(null)", list);
    return -1;
}

/* ======================= detection ======================= */

/* llama.cpp's template names (LLM_CHAT_TEMPLATES), for the ones it knows
 * and we do not render. */
static const char *const k_llama_names[] = {
    "mistral-v1", "mistral-v3", "mistral-v7", "falcon3", "zephyr", "monarch", "orion", "openchat", "vicuna",
    "vicuna-orca", "deepseek", "deepseek2", "deepseek-ocr", "command-r", "chatglm3", "chatglm4", "glmedge",
    "minicpm", "exaone3", "exaone4", "exaone-moe", "rwkv-world", "granite-4.1", "gigachat", "megrez", "yandex",
    "bailing", "bailing-think", "bailing2", "llama4", "smolvlm", "hunyuan-moe", "gpt-oss", "hunyuan-dense",
    "hunyuan-vl", "kimi-k2", "seed_oss", "grok-2", "pangu-embedded", "solar-open", "dots1",
};

/* Follows llm_chat_detect_template (llama.cpp of the llama-cpp-python
 * 0.3.36 sdist) branch by branch, returning llama.cpp's template name (or
 * NULL), so that a template llama.cpp assigns elsewhere never falls through
 * to one of ours. */
static const char *detect_llama_name(const char *t) {
#define HAS(s) (strstr(t, (s)) != NULL)
    if (HAS("<|im_start|>")) {
        return HAS("<|im_sep|>") ? "phi4" : HAS("<end_of_utterance>") ? "smolvlm" : "chatml";
    } else if (strncmp(t, "mistral", 7) == 0 || HAS("[INST]")) {
        if (HAS("[SYSTEM_PROMPT]")) return "mistral-v7";
        if (HAS("' [INST] ' + system_message") || HAS("[AVAILABLE_TOOLS]")) {
            if (HAS(" [INST]")) return "mistral-v1";
            if (HAS("\"[INST]\"")) return "mistral-v3-tekken";
            return "mistral-v3";
        }
        if (HAS("content.strip()")) return "llama2-sys-strip";
        if (HAS("bos_token + '[INST]")) return "llama2-sys-bos";
        if (HAS("<<SYS>>")) return "llama2-sys";
        return "llama2";
    } else if (HAS("<|assistant|>") && HAS("<|end|>")) {
        return "phi3";
    } else if (HAS("[gMASK]<sop>")) {
        return "chatglm4";
    } else if (HAS("<|assistant|>") && HAS("<|user|>")) {
        if (HAS("<|tool_declare|>")) return "exaone-moe";
        return HAS("</s>") ? "falcon3" : "glmedge";
    } else if (HAS("<|{{ item['role'] }}|>") && HAS("<|begin_of_image|>")) {
        return "glmedge";
    } else if (HAS("<|user|>") && HAS("<|endoftext|>")) {
        return "zephyr";
    } else if (HAS("bos_token + message['role']")) {
        return "monarch";
    } else if (HAS("<start_of_turn>")) {
        return "gemma";
    } else if (HAS("'\\n\\nAssistant: ' + eos_token")) {
        return "orion";
    } else if (HAS("GPT4 Correct ")) {
        return "openchat";
    } else if (HAS("USER: ") && HAS("ASSISTANT: ")) {
        return HAS("SYSTEM: ") ? "vicuna-orca" : "vicuna";
    } else if (HAS("### Instruction:") && HAS("<|EOT|>")) {
        return "deepseek";
    } else if (HAS("<|START_OF_TURN_TOKEN|>") && HAS("<|USER_TOKEN|>")) {
        return "command-r";
    } else if (HAS("<|start_header_id|>") && HAS("<|end_header_id|>")) {
        return "llama3";
    } else if (HAS("[gMASK]sop")) {
        return "chatglm3";
    } else if (HAS(u8"<用户>")) {
        return "minicpm";
    } else if (HAS("'Assistant: ' + message['content'] + eos_token")) {
        return "deepseek2";
    } else if (HAS(u8"<｜Assistant｜>") && HAS(u8"<｜User｜>") && HAS(u8"<｜end▁of▁sentence｜>")) {
        return "deepseek3";
    } else if (HAS("[|system|]") && HAS("[|assistant|]") && HAS("[|endofturn|]")) {
        return HAS("[|tool|]") ? "exaone4" : "exaone3";
    } else if (HAS("rwkv-world") || HAS("{{- 'User: ' + message['content']|trim + '\\n\\n' -}}")) {
        return "rwkv-world";
    } else if (HAS("<|start_of_role|>")) {
        if (HAS("<tool_call>") || HAS("<tools>")) return HAS("g4_default_system_message") ? "granite-4.0" : "granite-4.1";
        return "granite";
    } else if (HAS("message['role'] + additional_special_tokens[0] + message['content'] + additional_special_tokens[1]")) {
        return "gigachat";
    } else if (HAS("<|role_start|>")) {
        return "megrez";
    } else if (HAS(u8" Ассистент:")) {
        return "yandex";
    } else if (HAS("<role>ASSISTANT</role>") && HAS("'HUMAN'")) {
        return "bailing";
    } else if (HAS("<role>ASSISTANT</role>") && HAS("\"HUMAN\"") && HAS("<think>")) {
        return "bailing-think";
    } else if (HAS("<role>ASSISTANT</role>") && HAS("<role>HUMAN</role>") && HAS("<|role_end|>")) {
        return "bailing2";
    } else if (HAS("<|header_start|>") && HAS("<|header_end|>")) {
        return "llama4";
    } else if (HAS("<|endofuserprompt|>")) {
        return "dots1";
    } else if (HAS("<|extra_0|>") && HAS("<|extra_4|>")) {
        return "hunyuan-moe";
    } else if (HAS("<|start|>") && HAS("<|channel|>")) {
        return "gpt-oss";
    } else if (HAS(u8"<｜hy_Assistant｜>") && HAS(u8"<｜hy_begin▁of▁sentence｜>")) {
        return "hunyuan-vl";
    } else if (HAS(u8"<｜hy_Assistant｜>") && HAS(u8"<｜hy_place▁holder▁no▁3｜>")) {
        return "hunyuan-dense";
    } else if (HAS("<|im_assistant|>assistant<|im_middle|>")) {
        return "kimi-k2";
    } else if (HAS("<seed:bos>")) {
        return "seed_oss";
    } else if (HAS("'Assistant: '  + message['content'] + '<|separator|>")) {
        return "grok-2";
    } else if (HAS(u8"[unused9]系统：[unused10]")) {
        return "pangu-embedded";
    } else if (HAS("<|begin|>") && HAS("<|end|>") && HAS("<|content|>")) {
        return "solar-open";
    }
    return NULL;
#undef HAS
}

npl_chat_tmpl npl_chat_tmpl_detect(const char *jinja, const char **llama_name) {
    if (llama_name) *llama_name = NULL;
    if (!jinja) return NPL_CHAT_TMPL_UNKNOWN;
    /* An exact name wins, as llm_chat_template_from_str is tried first. */
    const char *name = NULL;
    for (size_t i = 0; i < N_NAMES && !name; i++)
        if (strcmp(jinja, k_names[i].name) == 0) name = k_names[i].name;
    for (size_t i = 0; i < sizeof k_llama_names / sizeof k_llama_names[0] && !name; i++)
        if (strcmp(jinja, k_llama_names[i]) == 0) name = k_llama_names[i];
    const int exact = name != NULL;
    if (!name) name = detect_llama_name(jinja);
    if (llama_name) *llama_name = exact && (strcmp(name, "smollm3") == 0 || strcmp(name, "gemma4") == 0) ? NULL : name;
    if (!exact) {
        /* templates llama.cpp's legacy list does not tell apart, by their own text */
        if (strstr(jinja, "<|turn>") && strstr(jinja, "<turn|>")) return NPL_CHAT_TMPL_GEMMA4;
        if (name && strcmp(name, "chatml") == 0 && strstr(jinja, "Reasoning Mode") && strstr(jinja, "/no_think"))
            return NPL_CHAT_TMPL_SMOLLM3;
        if (name && strcmp(name, "mistral-v7") == 0 && !strstr(jinja, "[INST] ") && !strstr(jinja, "[SYSTEM_PROMPT] "))
            return NPL_CHAT_TMPL_MISTRAL_V7_TEKKEN;
    }
    if (!name) return NPL_CHAT_TMPL_UNKNOWN;
    for (size_t i = 0; i < N_NAMES; i++)
        if (strcmp(name, k_names[i].name) == 0) return k_names[i].tmpl;
    return NPL_CHAT_TMPL_UNKNOWN;
}

npl_chat_tmpl npl_chat_tmpl_choose(const char *jinja, npl_chat_tmpl fallback, char *note, size_t notelen) {
    const char *ln = NULL;
    npl_chat_tmpl t = npl_chat_tmpl_detect(jinja, &ln);
    if (note && notelen) note[0] = '\0';
    if (t != NPL_CHAT_TMPL_UNKNOWN) return t;
    if (ln) set_err(note, notelen, "tokenizer.chat_template: llama.cpp's \"%s\", which npullm does not render; using %s",
                    ln, npl_chat_tmpl_name(fallback));
    else set_err(note, notelen, "tokenizer.chat_template: not a template npullm (or llama.cpp) recognises; using %s",
                 npl_chat_tmpl_name(fallback));
    return fallback;
}

/* ======================= rendering ======================= */

/* llama.cpp's trim(): isspace in the C locale, both ends. */
static int is_space(char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r';
}

typedef struct {
    const char *s;
    size_t n;
} str_view;

static str_view sv(const char *s) {
    str_view v = { s, strlen(s) };
    return v;
}

static str_view trim(const char *s) {
    str_view v = sv(s);
    while (v.n && is_space(v.s[0])) {
        v.s++;
        v.n--;
    }
    while (v.n && is_space(v.s[v.n - 1])) v.n--;
    return v;
}

typedef npl_chat_writer writer;

static void puts_(writer *w, const char *s) { npl_cw_puts(w, s); }
static void text(writer *w, const char *s, size_t n) { npl_cw_text(w, s, n); }
static void text_s(writer *w, const char *s) { npl_cw_text_s(w, s); }
static void text_sv(writer *w, str_view v) {
    text(w, v.s, v.n);
}

static void render_chatml(writer *w, const npl_chat_msg *m, size_t n, int add_ass) {
    for (size_t i = 0; i < n; i++) {
        puts_(w, "<|im_start|>");
        text_s(w, m[i].role);
        puts_(w, "\n");
        text_s(w, m[i].content);
        puts_(w, "<|im_end|>\n");
    }
    if (add_ass) puts_(w, "<|im_start|>assistant\n");
}

static void render_llama2(writer *w, npl_chat_tmpl t, const npl_chat_msg *m, size_t n) {
    const int support_system = t != NPL_CHAT_TMPL_LLAMA2;
    const int bos_inside = t == NPL_CHAT_TMPL_LLAMA2_SYS_BOS;
    const int strip = t == NPL_CHAT_TMPL_LLAMA2_SYS_STRIP;
    int inside_turn = 1;   /* the first [INST] is written up front, BOS is the tokenizer's */
    puts_(w, "[INST] ");
    for (size_t i = 0; i < n; i++) {
        str_view content = strip ? trim(m[i].content) : sv(m[i].content);
        if (!inside_turn) {
            inside_turn = 1;
            puts_(w, bos_inside ? "<s>[INST] " : "[INST] ");
        }
        if (strcmp(m[i].role, "system") == 0) {
            if (support_system) {
                puts_(w, "<<SYS>>\n");
                text_sv(w, content);
                puts_(w, "\n<</SYS>>\n\n");
            } else {   /* no system support: plain text in the first turn */
                text_sv(w, content);
                puts_(w, "\n");
            }
        } else if (strcmp(m[i].role, "user") == 0) {
            text_sv(w, content);
            puts_(w, " [/INST]");
        } else {
            text_sv(w, content);
            puts_(w, "</s>");
            inside_turn = 0;
        }
    }
}

static void render_llama3(writer *w, const npl_chat_msg *m, size_t n, int add_ass) {
    for (size_t i = 0; i < n; i++) {
        puts_(w, "<|start_header_id|>");
        text_s(w, m[i].role);
        puts_(w, "<|end_header_id|>\n\n");
        text_sv(w, trim(m[i].content));
        puts_(w, "<|eot_id|>");
    }
    if (add_ass) puts_(w, "<|start_header_id|>assistant<|end_header_id|>\n\n");
}

/* System messages have no turn: their trimmed text is concatenated and
 * merged into the next non-model turn, followed by "\n\n". */
static void render_gemma(writer *w, const npl_chat_msg *m, size_t n, int add_ass) {
    size_t sys_first = 0, sys_count = 0;   /* pending system messages m[sys_first..] */
    for (size_t i = 0; i < n; i++) {
        if (strcmp(m[i].role, "system") == 0) {
            if (sys_count == 0) sys_first = i;
            sys_count++;
            continue;
        }
        const int model = strcmp(m[i].role, "assistant") == 0 || strcmp(m[i].role, "model") == 0;
        puts_(w, "<start_of_turn>");
        if (strcmp(m[i].role, "assistant") == 0) puts_(w, "model");
        else text_s(w, m[i].role);
        puts_(w, "\n");
        if (sys_count && !model) {
            size_t sys_len = 0;
            for (size_t j = sys_first; j < i; j++)
                if (strcmp(m[j].role, "system") == 0) sys_len += trim(m[j].content).n;
            if (sys_len) {   /* llama.cpp tests system_prompt.empty() */
                for (size_t j = sys_first; j < i; j++)
                    if (strcmp(m[j].role, "system") == 0) text_sv(w, trim(m[j].content));
                puts_(w, "\n\n");
                sys_count = 0;
            }
        }
        text_sv(w, trim(m[i].content));
        puts_(w, "<end_of_turn>\n");
    }
    if (add_ass) puts_(w, "<start_of_turn>model\n");
}

static int render_into(npl_chat_tmpl t, const npl_chat_msg *msgs, size_t n, int add_ass,
                       npl_chat_buf *out, char *err, size_t errlen) {
    if (!out || (n && !msgs)) {
        set_err(err, errlen, "chat template: NULL argument");
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        if (!msgs[i].role || !msgs[i].content) {
            set_err(err, errlen, "chat template: message %zu: %s is NULL", i,
                    msgs[i].role ? "content" : "role");
            return -1;
        }
    }
    writer w = { out, 0, err, errlen, 0 };
    out->len = 0;
    out->n_text = 0;
    if (out->data) out->data[0] = '\0';
    switch (t) {
    case NPL_CHAT_TMPL_CHATML:
        render_chatml(&w, msgs, n, add_ass);
        break;
    case NPL_CHAT_TMPL_LLAMA2:
    case NPL_CHAT_TMPL_LLAMA2_SYS:
    case NPL_CHAT_TMPL_LLAMA2_SYS_BOS:
    case NPL_CHAT_TMPL_LLAMA2_SYS_STRIP:
        render_llama2(&w, t, msgs, n);
        break;
    case NPL_CHAT_TMPL_LLAMA3:
        render_llama3(&w, msgs, n, add_ass);
        break;
    case NPL_CHAT_TMPL_GEMMA:
        render_gemma(&w, msgs, n, add_ass);
        break;
    default:
        if (t <= NPL_CHAT_TMPL_UNKNOWN || t >= NPL_CHAT_TMPL_COUNT) {
            set_err(err, errlen, "chat template: cannot render template id %d", (int)t);
            return -1;
        }
        npl_chat_render_family(&w, t, msgs, n, add_ass);
        if (w.refused) return -1;
        break;
    }
    if (!w.failed && !out->data) w.failed = npl_chat_buf_append(out, "", 0) != 0;
    if (w.failed) {
        npl_errf(err, errlen, NPL_ERR_MEMORY, "chat template: out of memory rendering %zu messages", n);
        return -1;
    }
    return 0;
}

int npl_chat_render(npl_chat_tmpl t, const npl_chat_msg *msgs, size_t n, int add_ass,
                    npl_chat_buf *out, char *err, size_t errlen) {
    return render_into(t, msgs, n, add_ass, out, err, errlen);
}

int npl_chat_render_suffix(npl_chat_tmpl t, const npl_chat_msg *msgs, size_t n, size_t n_prev,
                           int add_ass, npl_chat_buf *out, char *err, size_t errlen) {
    if (n_prev > n) {
        set_err(err, errlen, "chat template: n_prev %zu > n %zu", n_prev, n);
        return -1;
    }
    npl_chat_buf past = { 0 };
    int rc = -1;
    if (render_into(t, msgs, n_prev, 0, &past, err, errlen)) goto done;
    if (render_into(t, msgs, n, add_ass, out, err, errlen)) goto done;
    if (out->len < past.len || memcmp(out->data, past.data, past.len) != 0) {
        set_err(err, errlen, "chat template %s: rendering %zu messages does not extend the rendering "
                "of the first %zu; re-prefill the whole conversation", npl_chat_tmpl_name(t), n, n_prev);
        goto done;
    }
    memmove(out->data, out->data + past.len, out->len - past.len + 1);
    out->len -= past.len;
    size_t k = 0; /* spans of the suffix, made relative to it */
    for (size_t i = 0; i < out->n_text; i++) {
        npl_chat_span sp = out->text[i];
        size_t end = sp.off + sp.len;
        if (end <= past.len) continue;
        sp.off = sp.off > past.len ? sp.off - past.len : 0;
        sp.len = end - past.len - sp.off;
        out->text[k++] = sp;
    }
    out->n_text = k;
    rc = 0;
done:
    npl_chat_buf_free(&past);
    return rc;
}
