/* Chat templates that follow the models' own Jinja templates (the ones in
 * llama.cpp's models/templates/, rendered by jinja2 in
 * tests/data/chat_template/make_fixtures.py) for plain conversations:
 * system / user / assistant messages with text content.
 *
 *   deepseek3          DeepSeek-V3.1 (thinking off: "<think></think>")
 *   phi3               Phi-3.5-mini
 *   phi4               llama.cpp's phi4 (no real template at hand)
 *   mistral-v3-tekken  Mistral-Nemo-Instruct-2407: the system message goes
 *                      into the last user turn
 *   mistral-v7-tekken  Mistral-Small-3.2: [SYSTEM_PROMPT] blocks (without
 *                      a system message no block: the model's default
 *                      prompt is not built in)
 *   granite            Granite 3.x (3.3): default system prompt with
 *                      today's date when there is no system message
 *   granite-4.0        Granite 4.0: its default system prompt
 *   smollm3            SmolLM3-3B: metadata header, /think and /no_think
 *   gemma4             Gemma 4 (thinking off: empty thought channel)
 *
 * Differences from the Jinja rendering, by design: no leading bos_token
 * (the tokenizer adds BOS), and no eos_token a template writes after the
 * last message when no generation prompt is asked (Phi-3.5): a rendering
 * without the assistant prefix is the history the next turn extends.
 * Python's str.strip() is approximated by ASCII whitespace, \x1c-\x1f and
 * the Unicode spaces U+0085, U+00A0, U+1680, U+2000-200A, U+2028/9, U+202F,
 * U+205F, U+3000. Tool calls are not rendered: a tool message where the
 * template needs a tool call id is refused. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/status.h"
#include "llm/chat_template_impl.h"

#define IS(m, r) (strcmp((m).role, (r)) == 0)

static void refuse(npl_chat_writer *w, const char *fmt, const char *arg) {
    if (w->refused) return;
    w->refused = 1;
    if (w->err && w->errlen) snprintf(w->err, w->errlen, fmt, arg);
}

/* ---------------------------------------------------------- strings */

/* bytes of the whitespace code point at s[0..n) (from the front), or 0 */
static size_t ws_front(const unsigned char *s, size_t n) {
    if (n >= 1 && (s[0] == ' ' || (s[0] >= 0x09 && s[0] <= 0x0d) || (s[0] >= 0x1c && s[0] <= 0x1f))) return 1;
    if (n >= 2 && s[0] == 0xc2 && (s[1] == 0x85 || s[1] == 0xa0)) return 2;
    if (n >= 3 && s[0] == 0xe1 && s[1] == 0x9a && s[2] == 0x80) return 3;                 /* U+1680 */
    if (n >= 3 && s[0] == 0xe2 && s[1] == 0x80 && (s[2] <= 0x8a || s[2] == 0xa8 || s[2] == 0xa9 || s[2] == 0xaf))
        return 3;                                                                         /* U+2000-200A, 2028, 2029, 202F */
    if (n >= 3 && s[0] == 0xe2 && s[1] == 0x81 && s[2] == 0x9f) return 3;                 /* U+205F */
    if (n >= 3 && s[0] == 0xe3 && s[1] == 0x80 && s[2] == 0x80) return 3;                 /* U+3000 */
    return 0;
}

/* bytes of the whitespace code point ending at s[n), or 0 */
static size_t ws_back(const unsigned char *s, size_t n) {
    for (size_t k = 1; k <= 3 && k <= n; k++)
        if (ws_front(s + n - k, k) == k) return k;
    return 0;
}

static npl_chat_sv py_rstrip(npl_chat_sv v) {
    for (size_t k; v.n && (k = ws_back((const unsigned char *)v.s, v.n)) != 0;) v.n -= k;
    return v;
}

static npl_chat_sv py_strip(npl_chat_sv v) {
    for (size_t k; v.n && (k = ws_front((const unsigned char *)v.s, v.n)) != 0;) { v.s += k; v.n -= k; }
    return py_rstrip(v);
}

static const char *find(npl_chat_sv v, const char *needle) {
    size_t k = strlen(needle);
    if (k > v.n) return NULL;
    for (size_t i = 0; i + k <= v.n; i++)
        if (memcmp(v.s + i, needle, k) == 0) return v.s + i;
    return NULL;
}

/* s with every needle removed; malloc'd (NULL: out of memory) */
static char *remove_all(const char *s, const char *needle) {
    size_t n = strlen(s), k = strlen(needle), o = 0;
    char *out = malloc(n + 1);
    if (!out) return NULL;
    for (size_t i = 0; i < n;) {
        if (i + k <= n && memcmp(s + i, needle, k) == 0) { i += k; continue; }
        out[o++] = s[i++];
    }
    out[o] = '\0';
    return out;
}

static void put_date(npl_chat_writer *w, const char *fmt) {
    time_t now = time(NULL);
    struct tm tm;
    char buf[64];
    size_t n = localtime_r(&now, &tm) ? strftime(buf, sizeof buf, fmt, &tm) : 0;
    npl_cw_put(w, buf, n);
}

/* ---------------------------------------------------------- families */

static void deepseek3(npl_chat_writer *w, const npl_chat_msg *m, size_t n, int add_ass) {
    static const char user[] = "<\xef\xbd\x9cUser\xef\xbd\x9c>", ass[] = "<\xef\xbd\x9c" "Assistant\xef\xbd\x9c>";
    static const char eos[] = "<\xef\xbd\x9c" "end\xe2\x96\x81of\xe2\x96\x81sentence\xef\xbd\x9c>";
    int first_sp = 1, last_user = 0, is_tool = 0;
    for (size_t i = 0; i < n; i++) {
        if (!IS(m[i], "system")) continue;
        if (!first_sp) npl_cw_puts(w, "\n\n");
        npl_cw_text_s(w, m[i].content);
        first_sp = 0;
    }
    for (size_t i = 0; i < n; i++) {
        if (IS(m[i], "user")) {
            is_tool = 0;
            last_user = 1;
            npl_cw_puts(w, user);
            npl_cw_text_s(w, m[i].content);
        } else if (IS(m[i], "assistant")) {
            if (last_user) { npl_cw_puts(w, ass); npl_cw_puts(w, "<think></think>"); }
            last_user = 0;
            npl_chat_sv c = npl_chat_sv_of(m[i].content);
            const char *th = is_tool ? NULL : find(c, "</think>");
            if (th) { c.n -= (size_t)(th + 8 - c.s); c.s = th + 8; }
            npl_cw_text_sv(w, c);
            npl_cw_puts(w, eos);
            is_tool = 0;
        } else if (IS(m[i], "tool")) {
            last_user = 0;
            is_tool = 1;
            npl_cw_puts(w, "<\xef\xbd\x9ctool\xe2\x96\x81output\xe2\x96\x81" "begin\xef\xbd\x9c>");
            npl_cw_text_s(w, m[i].content);
            npl_cw_puts(w, "<\xef\xbd\x9ctool\xe2\x96\x81output\xe2\x96\x81" "end\xef\xbd\x9c>");
        }
    }
    if (add_ass && last_user && !is_tool) { npl_cw_puts(w, ass); npl_cw_puts(w, "<think></think>"); }
}

static void phi3(npl_chat_writer *w, const npl_chat_msg *m, size_t n, int add_ass) {
    for (size_t i = 0; i < n; i++) {
        const char *tag = IS(m[i], "system") ? (*m[i].content ? "<|system|>\n" : NULL)
                        : IS(m[i], "user") ? "<|user|>\n" : IS(m[i], "assistant") ? "<|assistant|>\n" : NULL;
        if (!tag) continue;
        npl_cw_puts(w, tag);
        npl_cw_text_s(w, m[i].content);
        npl_cw_puts(w, "<|end|>\n");
    }
    if (add_ass) npl_cw_puts(w, "<|assistant|>\n");
}

static void phi4(npl_chat_writer *w, const npl_chat_msg *m, size_t n, int add_ass) {
    for (size_t i = 0; i < n; i++) {
        npl_cw_puts(w, "<|im_start|>");
        npl_cw_text_s(w, m[i].role);
        npl_cw_puts(w, "<|im_sep|>");
        npl_cw_text_s(w, m[i].content);
        npl_cw_puts(w, "<|im_end|>");
    }
    if (add_ass) npl_cw_puts(w, "<|im_start|>assistant<|im_sep|>");
}

/* Mistral's templates raise unless user and assistant alternate after an
 * optional system message (tool messages aside) */
static int mistral_alternates(npl_chat_writer *w, const npl_chat_msg *m, size_t n) {
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (IS(m[i], "tool") || IS(m[i], "tool_results")) {
            refuse(w, "chat template %s: tool messages need tool call ids, which plain chat does not have",
                   "mistral");
            return 0;
        }
        if (IS(m[i], "user") != (k % 2 == 0)) {
            refuse(w, "chat template %s: after an optional system message, roles must alternate "
                   "user/assistant/user/...", "mistral");
            return 0;
        }
        k++;
    }
    return 1;
}

static void mistral_v3_tekken(npl_chat_writer *w, const npl_chat_msg *m, size_t n) {
    const char *sys = n && IS(m[0], "system") ? m[0].content : NULL;
    const npl_chat_msg *l = sys ? m + 1 : m;
    size_t ln = sys ? n - 1 : n;
    if (!mistral_alternates(w, l, ln)) return;
    for (size_t i = 0; i < ln; i++) {
        if (IS(l[i], "user")) {
            npl_cw_puts(w, "[INST]");
            if (i + 1 == ln && sys) { npl_cw_text_s(w, sys); npl_cw_puts(w, "\n\n"); }
            npl_cw_text_s(w, l[i].content);
            npl_cw_puts(w, "[/INST]");
        } else if (IS(l[i], "assistant")) {
            npl_cw_text_s(w, l[i].content);
            npl_cw_puts(w, "</s>");
        } else {
            refuse(w, "chat template mistral-v3-tekken: role '%s' (only user and assistant after an optional system message)",
                   l[i].role);
            return;
        }
    }
}

static void mistral_v7_tekken(npl_chat_writer *w, const npl_chat_msg *m, size_t n) {
    const int has_sys = n && IS(m[0], "system");
    const npl_chat_msg *l = has_sys ? m + 1 : m;
    size_t ln = has_sys ? n - 1 : n;
    if (!mistral_alternates(w, l, ln)) return;
    if (has_sys) { npl_cw_puts(w, "[SYSTEM_PROMPT]"); npl_cw_text_s(w, m[0].content); npl_cw_puts(w, "[/SYSTEM_PROMPT]"); }
    for (size_t i = 0; i < ln; i++) {
        if (IS(l[i], "system")) {
            npl_cw_puts(w, "[SYSTEM_PROMPT]");
            npl_cw_text_s(w, l[i].content);
            npl_cw_puts(w, "[/SYSTEM_PROMPT]");
        } else if (IS(l[i], "user")) {
            npl_cw_puts(w, "[INST]");
            npl_cw_text_s(w, l[i].content);
            npl_cw_puts(w, "[/INST]");
        } else if (IS(l[i], "assistant")) {
            npl_cw_text_s(w, l[i].content);
            npl_cw_puts(w, "</s>");
        } else {
            refuse(w, "chat template mistral-v7-tekken: role '%s' (only system, user and assistant)", l[i].role);
            return;
        }
    }
}

static void granite3(npl_chat_writer *w, const npl_chat_msg *m, size_t n, int add_ass) {
    const int has_sys = n && IS(m[0], "system");
    npl_cw_puts(w, "<|start_of_role|>system<|end_of_role|>");
    if (has_sys) {
        npl_cw_text_s(w, m[0].content);
    } else {
        npl_cw_puts(w, "Knowledge Cutoff Date: April 2024. Today's Date: ");
        put_date(w, "%B %d, %Y");
        npl_cw_puts(w, ". You are Granite, developed by IBM. You are a helpful AI assistant.");
    }
    npl_cw_puts(w, "<|end_of_text|>\n");
    for (size_t i = has_sys ? 1 : 0; i < n; i++) {
        npl_cw_puts(w, "<|start_of_role|>");
        npl_cw_text_s(w, m[i].role);
        npl_cw_puts(w, "<|end_of_role|>");
        npl_cw_text_s(w, m[i].content);
        npl_cw_puts(w, "<|end_of_text|>\n");
        if (i + 1 == n && add_ass) npl_cw_puts(w, "<|start_of_role|>assistant<|end_of_role|>");
    }
}

static void granite4(npl_chat_writer *w, const npl_chat_msg *m, size_t n, int add_ass) {
    npl_cw_puts(w, "<|start_of_role|>system<|end_of_role|>");
    if (n && IS(m[0], "system") && *m[0].content) npl_cw_text_s(w, m[0].content);
    else npl_cw_puts(w, "You are a helpful assistant. Please ensure responses are professional, accurate, and safe.");
    npl_cw_puts(w, "<|end_of_text|>\n");
    for (size_t i = 0; i < n; i++) {
        if (IS(m[i], "user") || IS(m[i], "assistant") || (IS(m[i], "system") && i > 0)) {
            npl_cw_puts(w, "<|start_of_role|>");
            npl_cw_text_s(w, m[i].role);
            npl_cw_puts(w, "<|end_of_role|>");
            npl_cw_text_s(w, m[i].content);
            npl_cw_puts(w, "<|end_of_text|>\n");
        } else if (IS(m[i], "tool")) {
            if (i == 0 || !IS(m[i - 1], "tool")) npl_cw_puts(w, "<|start_of_role|>user<|end_of_role|>");
            npl_cw_puts(w, "\n<tool_response>\n");
            npl_cw_text_s(w, m[i].content);
            npl_cw_puts(w, "\n</tool_response>");
            if (i + 1 == n || !IS(m[i + 1], "tool")) npl_cw_puts(w, "<|end_of_text|>\n");
        }
    }
    if (add_ass) npl_cw_puts(w, "<|start_of_role|>assistant<|end_of_role|>");
}

static const char k_smollm3_think[] =
    "You are a helpful AI assistant named SmolLM, trained by Hugging Face. Your role as an assistant involves "
    "thoroughly exploring questions through a systematic thinking process before providing the final precise and "
    "accurate solutions. This requires engaging in a comprehensive cycle of analysis, summarizing, exploration, "
    "reassessment, reflection, backtracking, and iteration to develop well-considered thinking process. Please "
    "structure your response into two main sections: Thought and Solution using the specified format: <think> "
    "Thought section </think> Solution section. In the Thought section, detail your reasoning process in steps. "
    "Each step should include detailed considerations such as analysing questions, summarizing relevant findings, "
    "brainstorming new ideas, verifying the accuracy of the current steps, refining any errors, and revisiting "
    "previous steps. In the Solution section, based on various attempts, explorations, and reflections from the "
    "Thought section, systematically present the final solution that you deem correct. The Solution section should "
    "be logical, accurate, and concise and detail necessary steps needed to reach the conclusion.\n\n";

/* enable_thinking is true unless the system message says /no_think */
static void smollm3(npl_chat_writer *w, const npl_chat_msg *m, size_t n, int add_ass) {
    int think = 1;
    char *custom = NULL;
    npl_cw_puts(w, "<|im_start|>system\n");
    if (n && IS(m[0], "system")) {
        npl_chat_sv s = npl_chat_sv_of(m[0].content);
        if (find(s, "/no_think")) think = 0;
        else if (find(s, "/think")) think = 1;
        char *a = remove_all(m[0].content, "/no_think");
        custom = a ? remove_all(a, "/think") : NULL;
        free(a);
        if (!custom) { w->failed = 1; return; }
    }
    npl_cw_puts(w, "## Metadata\n\nKnowledge Cutoff Date: June 2025\nReasoning Mode: ");
    npl_cw_puts(w, think ? "/think" : "/no_think");
    npl_cw_puts(w, "\n\n## Custom Instructions\n\n");
    npl_chat_sv c = custom ? py_rstrip(npl_chat_sv_of(custom)) : npl_chat_sv_of("");
    if (c.n) { npl_cw_text_sv(w, c); npl_cw_puts(w, "\n\n"); }
    else npl_cw_puts(w, think ? k_smollm3_think : "You are a helpful AI assistant named SmolLM, trained by Hugging Face.\n\n");
    free(custom);
    npl_cw_puts(w, "<|im_end|>\n");
    for (size_t i = 0; i < n; i++) {
        if (IS(m[i], "user") || IS(m[i], "tool")) {
            npl_cw_puts(w, "<|im_start|>user\n");
            npl_cw_text_s(w, m[i].content);
            npl_cw_puts(w, "<|im_end|>\n");
        } else if (IS(m[i], "assistant")) {
            npl_cw_puts(w, think ? "<|im_start|>assistant\n" : "<|im_start|>assistant\n<think>\n\n</think>\n");
            const char *s = m[i].content;
            while (*s == '\n') s++;
            npl_cw_text_s(w, s);
            npl_cw_puts(w, "<|im_end|>\n");
        }
    }
    if (add_ass) npl_cw_puts(w, think ? "<|im_start|>assistant\n" : "<|im_start|>assistant\n<think>\n\n</think>\n");
}

/* the template's strip_thinking: drop "<|channel>...<channel|>" parts, trim */
static void gemma4_model_text(npl_chat_writer *w, const char *s) {
    size_t n = strlen(s), o = 0;
    char *out = malloc(n + 1);
    if (!out) { w->failed = 1; return; }
    for (const char *p = s;;) {
        const char *end = strstr(p, "<channel|>");
        size_t len = end ? (size_t)(end - p) : strlen(p);
        npl_chat_sv part = { p, len };
        const char *open = find(part, "<|channel>");
        size_t keep = open ? (size_t)(open - p) : len;
        memcpy(out + o, p, keep);
        o += keep;
        if (!end) break;
        p = end + 10;
    }
    npl_chat_sv v = { out, o };
    npl_cw_text_sv(w, py_strip(v));
    free(out);
}

static void gemma4(npl_chat_writer *w, const npl_chat_msg *m, size_t n, int add_ass) {
    size_t i = 0;
    if (n && (IS(m[0], "system") || IS(m[0], "developer"))) {
        npl_cw_puts(w, "<|turn>system\n");
        npl_cw_text_sv(w, py_strip(npl_chat_sv_of(m[0].content)));
        npl_cw_puts(w, "<turn|>\n");
        i = 1;
    }
    const char *prev = NULL;   /* role of the previous non-tool message */
    for (; i < n; i++) {
        if (IS(m[i], "tool")) continue;
        const int model = IS(m[i], "assistant");
        if (!(model && prev && strcmp(prev, "assistant") == 0)) {
            npl_cw_puts(w, "<|turn>");
            if (model) npl_cw_puts(w, "model");
            else npl_cw_text_s(w, m[i].role);
            npl_cw_puts(w, "\n");
        }
        if (model) gemma4_model_text(w, m[i].content);
        else npl_cw_text_sv(w, py_strip(npl_chat_sv_of(m[i].content)));
        npl_cw_puts(w, "<turn|>\n");
        prev = m[i].role;
    }
    if (add_ass) npl_cw_puts(w, "<|turn>model\n<|channel>thought\n<channel|>");
}

void npl_chat_render_family(npl_chat_writer *w, npl_chat_tmpl t, const npl_chat_msg *m, size_t n, int add_ass) {
    switch (t) {
    case NPL_CHAT_TMPL_DEEPSEEK3: deepseek3(w, m, n, add_ass); break;
    case NPL_CHAT_TMPL_PHI3: phi3(w, m, n, add_ass); break;
    case NPL_CHAT_TMPL_PHI4: phi4(w, m, n, add_ass); break;
    case NPL_CHAT_TMPL_MISTRAL_V3_TEKKEN: mistral_v3_tekken(w, m, n); break;
    case NPL_CHAT_TMPL_MISTRAL_V7_TEKKEN: mistral_v7_tekken(w, m, n); break;
    case NPL_CHAT_TMPL_GRANITE: granite3(w, m, n, add_ass); break;
    case NPL_CHAT_TMPL_GRANITE_4: granite4(w, m, n, add_ass); break;
    case NPL_CHAT_TMPL_SMOLLM3: smollm3(w, m, n, add_ass); break;
    case NPL_CHAT_TMPL_GEMMA4: gemma4(w, m, n, add_ass); break;
    default: refuse(w, "chat template: cannot render template %s", npl_chat_tmpl_name(t)); break;
    }
}
