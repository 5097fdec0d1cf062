/* Chat templates against literal strings.
 *
 * Every expected string below was written by hand from llama.cpp's
 * src/llama-chat.cpp, function llm_chat_apply_template (the branches for
 * LLM_CHAT_TEMPLATE_CHATML, _GEMMA, _LLAMA_3 and _LLAMA_2/_SYS/_SYS_BOS/
 * _SYS_STRIP), never by running our renderer. The six-message conversation
 * and its expected outputs for chatml, gemma, llama3, llama2, llama2-sys-bos
 * and llama2-sys-strip also match the `expected_output` literals of
 * llama.cpp's tests/test-chat-template.cpp (main_automated_tests).
 * Detection follows llm_chat_detect_template in the same file. */
#include "check.h"
#include "llm/chat_template.h"

#include <stdint.h>
#include <string.h>

static char err[512];

#define N(a) (sizeof(a) / sizeof((a)[0]))

static void check_render(npl_chat_tmpl t, const npl_chat_msg *m, size_t n, int add_ass, const char *want,
                         int line) {
    npl_chat_buf b = { 0 };
    err[0] = '\0';
    int rc = npl_chat_render(t, m, n, add_ass, &b, err, sizeof err);
    npl_test_checks++;
    if (rc != 0 || !b.data || strcmp(b.data, want) != 0 || b.len != strlen(want)) {
        npl_test_failures++;
        fprintf(stderr, "%s:%d: render %s (n=%zu add_ass=%d) rc=%d err='%s'\n  got:  \"%s\"\n  want: \"%s\"\n",
                __FILE__, line, npl_chat_tmpl_name(t), n, add_ass, rc, err, b.data ? b.data : "(null)", want);
    }
    npl_chat_buf_free(&b);
}
#define RENDER(t, m, n, add, want) check_render((t), (m), (n), (add), (want), __LINE__)

/* llama.cpp's test conversation (tests/test-chat-template.cpp). */
static const npl_chat_msg conv[] = {
    { "system", "You are a helpful assistant" },
    { "user", "Hello" },
    { "assistant", "Hi there" },
    { "user", "Who are you" },
    { "assistant", "   I am an assistant   " },
    { "user", "Another question" },
};

static const npl_chat_msg sys_user[] = {
    { "system", "You are a helpful assistant" },
    { "user", "Hello" },
};

static const npl_chat_msg user_only[] = {
    { "user", "Hello" },
};

static void test_chatml(void) {
    const npl_chat_tmpl t = NPL_CHAT_TMPL_CHATML;
    RENDER(t, sys_user, 2, 1,
           "<|im_start|>system\nYou are a helpful assistant<|im_end|>\n"
           "<|im_start|>user\nHello<|im_end|>\n<|im_start|>assistant\n");
    RENDER(t, user_only, 1, 1, "<|im_start|>user\nHello<|im_end|>\n<|im_start|>assistant\n");
    RENDER(t, user_only, 1, 0, "<|im_start|>user\nHello<|im_end|>\n");
    /* contents are not trimmed */
    RENDER(t, conv, N(conv), 1,
           "<|im_start|>system\nYou are a helpful assistant<|im_end|>\n<|im_start|>user\nHello<|im_end|>\n"
           "<|im_start|>assistant\nHi there<|im_end|>\n<|im_start|>user\nWho are you<|im_end|>\n"
           "<|im_start|>assistant\n   I am an assistant   <|im_end|>\n<|im_start|>user\nAnother question<|im_end|>\n"
           "<|im_start|>assistant\n");
    RENDER(t, NULL, 0, 1, "<|im_start|>assistant\n");
    RENDER(t, NULL, 0, 0, "");
}

static void test_gemma(void) {
    const npl_chat_tmpl t = NPL_CHAT_TMPL_GEMMA;
    /* system merged into the first user turn, "\n\n" after it */
    RENDER(t, sys_user, 2, 1,
           "<start_of_turn>user\nYou are a helpful assistant\n\nHello<end_of_turn>\n<start_of_turn>model\n");
    RENDER(t, user_only, 1, 1, "<start_of_turn>user\nHello<end_of_turn>\n<start_of_turn>model\n");
    RENDER(t, user_only, 1, 0, "<start_of_turn>user\nHello<end_of_turn>\n");
    /* assistant -> model, contents trimmed */
    RENDER(t, conv, N(conv), 1,
           "<start_of_turn>user\nYou are a helpful assistant\n\nHello<end_of_turn>\n"
           "<start_of_turn>model\nHi there<end_of_turn>\n<start_of_turn>user\nWho are you<end_of_turn>\n"
           "<start_of_turn>model\nI am an assistant<end_of_turn>\n<start_of_turn>user\nAnother question<end_of_turn>\n"
           "<start_of_turn>model\n");
    /* system text is trimmed; several system messages concatenate; a model
     * turn does not take it, the next user turn does */
    const npl_chat_msg m1[] = {
        { "system", "  A \n" }, { "system", "B" }, { "assistant", " x " }, { "user", "u" },
    };
    RENDER(t, m1, N(m1), 0,
           "<start_of_turn>model\nx<end_of_turn>\n<start_of_turn>user\nAB\n\nu<end_of_turn>\n");
    /* a system message after a model turn goes into the following user turn */
    const npl_chat_msg m2[] = {
        { "user", "a" }, { "assistant", "b" }, { "system", "  S  " }, { "user", "c" },
    };
    RENDER(t, m2, N(m2), 1,
           "<start_of_turn>user\na<end_of_turn>\n<start_of_turn>model\nb<end_of_turn>\n"
           "<start_of_turn>user\nS\n\nc<end_of_turn>\n<start_of_turn>model\n");
    /* empty system prompt merges nothing; a pending one with no user turn
     * is dropped; other roles pass through */
    const npl_chat_msg m3[] = { { "system", " \t\n" }, { "user", "q" } };
    RENDER(t, m3, N(m3), 0, "<start_of_turn>user\nq<end_of_turn>\n");
    const npl_chat_msg m4[] = { { "system", "S" } };
    RENDER(t, m4, N(m4), 1, "<start_of_turn>model\n");
    const npl_chat_msg m5[] = { { "system", "S" }, { "tool", " r " } };
    RENDER(t, m5, N(m5), 0, "<start_of_turn>tool\nS\n\nr<end_of_turn>\n");
    RENDER(t, NULL, 0, 1, "<start_of_turn>model\n");
}

static void test_llama3(void) {
    const npl_chat_tmpl t = NPL_CHAT_TMPL_LLAMA3;
    RENDER(t, sys_user, 2, 1,
           "<|start_header_id|>system<|end_header_id|>\n\nYou are a helpful assistant<|eot_id|>"
           "<|start_header_id|>user<|end_header_id|>\n\nHello<|eot_id|>"
           "<|start_header_id|>assistant<|end_header_id|>\n\n");
    RENDER(t, user_only, 1, 1,
           "<|start_header_id|>user<|end_header_id|>\n\nHello<|eot_id|>"
           "<|start_header_id|>assistant<|end_header_id|>\n\n");
    RENDER(t, user_only, 1, 0, "<|start_header_id|>user<|end_header_id|>\n\nHello<|eot_id|>");
    RENDER(t, conv, N(conv), 1,
           "<|start_header_id|>system<|end_header_id|>\n\nYou are a helpful assistant<|eot_id|>"
           "<|start_header_id|>user<|end_header_id|>\n\nHello<|eot_id|>"
           "<|start_header_id|>assistant<|end_header_id|>\n\nHi there<|eot_id|>"
           "<|start_header_id|>user<|end_header_id|>\n\nWho are you<|eot_id|>"
           "<|start_header_id|>assistant<|end_header_id|>\n\nI am an assistant<|eot_id|>"
           "<|start_header_id|>user<|end_header_id|>\n\nAnother question<|eot_id|>"
           "<|start_header_id|>assistant<|end_header_id|>\n\n");
}

static void test_llama2(void) {
    /* plain llama2: system text + "\n" inside the first [INST]; add_ass is
     * ignored by the whole family */
    RENDER(NPL_CHAT_TMPL_LLAMA2, sys_user, 2, 1, "[INST] You are a helpful assistant\nHello [/INST]");
    RENDER(NPL_CHAT_TMPL_LLAMA2, sys_user, 2, 0, "[INST] You are a helpful assistant\nHello [/INST]");
    RENDER(NPL_CHAT_TMPL_LLAMA2, user_only, 1, 1, "[INST] Hello [/INST]");
    RENDER(NPL_CHAT_TMPL_LLAMA2, conv, N(conv), 1,
           "[INST] You are a helpful assistant\nHello [/INST]Hi there</s>[INST] Who are you [/INST]"
           "   I am an assistant   </s>[INST] Another question [/INST]");
    RENDER(NPL_CHAT_TMPL_LLAMA2, NULL, 0, 1, "[INST] ");

    /* llama2-sys: <<SYS>> block */
    RENDER(NPL_CHAT_TMPL_LLAMA2_SYS, sys_user, 2, 1,
           "[INST] <<SYS>>\nYou are a helpful assistant\n<</SYS>>\n\nHello [/INST]");
    RENDER(NPL_CHAT_TMPL_LLAMA2_SYS, user_only, 1, 1, "[INST] Hello [/INST]");
    RENDER(NPL_CHAT_TMPL_LLAMA2_SYS, conv, N(conv), 1,
           "[INST] <<SYS>>\nYou are a helpful assistant\n<</SYS>>\n\nHello [/INST]Hi there</s>"
           "[INST] Who are you [/INST]   I am an assistant   </s>[INST] Another question [/INST]");
    /* a system message in a later turn opens that turn */
    const npl_chat_msg late[] = { { "user", "u" }, { "assistant", "a" }, { "system", "s" }, { "user", "v" } };
    RENDER(NPL_CHAT_TMPL_LLAMA2_SYS, late, N(late), 1,
           "[INST] u [/INST]a</s>[INST] <<SYS>>\ns\n<</SYS>>\n\nv [/INST]");

    /* llama2-sys-bos: "<s>" before every later [INST] */
    RENDER(NPL_CHAT_TMPL_LLAMA2_SYS_BOS, conv, N(conv), 1,
           "[INST] <<SYS>>\nYou are a helpful assistant\n<</SYS>>\n\nHello [/INST]Hi there</s>"
           "<s>[INST] Who are you [/INST]   I am an assistant   </s><s>[INST] Another question [/INST]");
    RENDER(NPL_CHAT_TMPL_LLAMA2_SYS_BOS, sys_user, 2, 1,
           "[INST] <<SYS>>\nYou are a helpful assistant\n<</SYS>>\n\nHello [/INST]");

    /* llama2-sys-strip: every content trimmed */
    RENDER(NPL_CHAT_TMPL_LLAMA2_SYS_STRIP, conv, N(conv), 1,
           "[INST] <<SYS>>\nYou are a helpful assistant\n<</SYS>>\n\nHello [/INST]Hi there</s>"
           "[INST] Who are you [/INST]I am an assistant</s>[INST] Another question [/INST]");
    const npl_chat_msg ws[] = { { "system", " S " }, { "user", "\tq\n" } };
    RENDER(NPL_CHAT_TMPL_LLAMA2_SYS_STRIP, ws, N(ws), 1, "[INST] <<SYS>>\nS\n<</SYS>>\n\nq [/INST]");
    RENDER(NPL_CHAT_TMPL_LLAMA2_SYS, ws, N(ws), 1, "[INST] <<SYS>>\n S \n<</SYS>>\n\n\tq\n [/INST]");
}

/* ------------------------------------------------------------- suffix */
static void test_suffix(void) {
    const npl_chat_tmpl all[] = {
        NPL_CHAT_TMPL_CHATML, NPL_CHAT_TMPL_GEMMA, NPL_CHAT_TMPL_LLAMA3, NPL_CHAT_TMPL_LLAMA2,
        NPL_CHAT_TMPL_LLAMA2_SYS, NPL_CHAT_TMPL_LLAMA2_SYS_BOS, NPL_CHAT_TMPL_LLAMA2_SYS_STRIP,
    };
    /* the property: render(first n_prev, no prompt) + suffix == render(all) */
    npl_chat_buf past = { 0 }, suf = { 0 }, whole = { 0 };
    for (size_t k = 0; k < N(all); k++) {
        for (size_t n_prev = 0; n_prev <= N(conv); n_prev++) {
            for (int add = 0; add <= 1; add++) {
                int ok = npl_chat_render(all[k], conv, n_prev, 0, &past, err, sizeof err) == 0 &&
                         npl_chat_render_suffix(all[k], conv, N(conv), n_prev, add, &suf, err, sizeof err) == 0 &&
                         npl_chat_render(all[k], conv, N(conv), add, &whole, err, sizeof err) == 0 &&
                         past.len + suf.len == whole.len && memcmp(whole.data, past.data, past.len) == 0 &&
                         memcmp(whole.data + past.len, suf.data, suf.len) == 0 && suf.data[suf.len] == '\0';
                if (!ok) fprintf(stderr, "  suffix property: %s n_prev=%zu add=%d\n", npl_chat_tmpl_name(all[k]), n_prev, add);
                CHECK(ok);
            }
        }
    }
    npl_chat_buf_free(&past);
    npl_chat_buf_free(&whole);

    /* literal suffixes for a second user turn after [sys, user, assistant] */
    const npl_chat_msg next[] = {
        { "system", "You are a helpful assistant" }, { "user", "Hello" }, { "assistant", "Hi there" },
        { "user", "Who are you" },
    };
    const struct { npl_chat_tmpl t; const char *want; } lit[] = {
        { NPL_CHAT_TMPL_CHATML, "<|im_start|>user\nWho are you<|im_end|>\n<|im_start|>assistant\n" },
        { NPL_CHAT_TMPL_GEMMA, "<start_of_turn>user\nWho are you<end_of_turn>\n<start_of_turn>model\n" },
        { NPL_CHAT_TMPL_LLAMA3, "<|start_header_id|>user<|end_header_id|>\n\nWho are you<|eot_id|>"
                                "<|start_header_id|>assistant<|end_header_id|>\n\n" },
        { NPL_CHAT_TMPL_LLAMA2, "[INST] Who are you [/INST]" },
        { NPL_CHAT_TMPL_LLAMA2_SYS_BOS, "<s>[INST] Who are you [/INST]" },
    };
    for (size_t i = 0; i < N(lit); i++) {
        CHECK_EQ_INT(npl_chat_render_suffix(lit[i].t, next, 4, 3, 1, &suf, err, sizeof err), 0);
        CHECK(suf.data && strcmp(suf.data, lit[i].want) == 0);
    }
    /* gemma: a system-only history renders nothing, so the suffix carries it */
    CHECK_EQ_INT(npl_chat_render_suffix(NPL_CHAT_TMPL_GEMMA, sys_user, 2, 1, 1, &suf, err, sizeof err), 0);
    CHECK(strcmp(suf.data, "<start_of_turn>user\nYou are a helpful assistant\n\nHello<end_of_turn>\n"
                           "<start_of_turn>model\n") == 0);
    CHECK_EQ_INT(npl_chat_render_suffix(NPL_CHAT_TMPL_GEMMA, sys_user, 2, 3, 1, &suf, err, sizeof err), -1);
    CHECK(strstr(err, "n_prev") != NULL);
    npl_chat_buf_free(&suf);
}

/* -------------------------------------------------------------- spans */
/* The message text of a rendering as "[span][span]...", after checking that
 * the spans are in order, disjoint, not adjacent and inside the text. */
static void span_text(const npl_chat_buf *b, char *out, size_t cap) {
    size_t o = 0, prev_end = 0;
    out[0] = '\0';
    for (size_t i = 0; i < b->n_text; i++) {
        const npl_chat_span *sp = &b->text[i];
        CHECK(sp->len > 0 && sp->off + sp->len <= b->len);
        CHECK(i == 0 || sp->off > prev_end);
        prev_end = sp->off + sp->len;
        o += (size_t)snprintf(out + o, o < cap ? cap - o : 0, "[%.*s]", (int)sp->len, b->data + sp->off);
    }
}

static void check_spans(npl_chat_tmpl t, const npl_chat_msg *m, size_t n, const char *want, int line) {
    npl_chat_buf b = { 0 };
    char got[2048];
    int rc = npl_chat_render(t, m, n, 1, &b, err, sizeof err);
    span_text(&b, got, sizeof got);
    npl_test_checks++;
    if (rc != 0 || strcmp(got, want) != 0) {
        npl_test_failures++;
        fprintf(stderr, "%s:%d: spans of %s (n=%zu)\n  got:  %s\n  want: %s\n", __FILE__, line,
                npl_chat_tmpl_name(t), n, got, want);
    }
    npl_chat_buf_free(&b);
}
#define SPANS(t, m, n, want) check_spans((t), (m), (n), (want), __LINE__)

/* Role names and contents are message text; the template's own words
 * ("assistant" of the prompt, gemma's "model", "[INST]", "<<SYS>>") are not. */
static void test_spans(void) {
    SPANS(NPL_CHAT_TMPL_CHATML, sys_user, 2, "[system][You are a helpful assistant][user][Hello]");
    SPANS(NPL_CHAT_TMPL_CHATML, conv, 3, "[system][You are a helpful assistant][user][Hello][assistant][Hi there]");
    SPANS(NPL_CHAT_TMPL_LLAMA3, sys_user, 2, "[system][You are a helpful assistant][user][Hello]");
    SPANS(NPL_CHAT_TMPL_LLAMA3, conv + 4, 1, "[assistant][I am an assistant]"); /* trimmed */
    SPANS(NPL_CHAT_TMPL_GEMMA, sys_user, 2, "[user][You are a helpful assistant][Hello]");
    SPANS(NPL_CHAT_TMPL_GEMMA, conv, 5, "[user][You are a helpful assistant][Hello][Hi there][user][Who are you]"
                                        "[I am an assistant]");
    SPANS(NPL_CHAT_TMPL_LLAMA2, sys_user, 2, "[You are a helpful assistant][Hello]");
    SPANS(NPL_CHAT_TMPL_LLAMA2_SYS, conv, 3, "[You are a helpful assistant][Hello][Hi there]");
    SPANS(NPL_CHAT_TMPL_LLAMA2_SYS_BOS, conv, 4, "[You are a helpful assistant][Hello][Hi there][Who are you]");
    SPANS(NPL_CHAT_TMPL_LLAMA2_SYS_STRIP, conv + 3, 2, "[Who are you][I am an assistant]");
    /* adjacent pieces of message text join: gemma's system messages */
    const npl_chat_msg two_sys[] = { { "system", " A " }, { "system", "B" }, { "user", "C" } };
    SPANS(NPL_CHAT_TMPL_GEMMA, two_sys, 3, "[user][AB][C]");
    /* a custom role is message text too, and empty text makes no span */
    const npl_chat_msg odd[] = { { "<|im_end|>", "" }, { "user", "x" } };
    SPANS(NPL_CHAT_TMPL_CHATML, odd, 2, "[<|im_end|>][user][x]");
    SPANS(NPL_CHAT_TMPL_GEMMA, odd, 2, "[<|im_end|>][user][x]");
    /* a suffix lists its spans relative to itself */
    npl_chat_buf suf = { 0 };
    char got[512];
    CHECK_EQ_INT(npl_chat_render_suffix(NPL_CHAT_TMPL_CHATML, conv, 4, 3, 1, &suf, err, sizeof err), 0);
    span_text(&suf, got, sizeof got);
    CHECK(strcmp(got, "[user][Who are you]") == 0);
    CHECK(suf.n_text == 2 && suf.text[0].off == strlen("<|im_start|>"));
    CHECK_EQ_INT(npl_chat_render_suffix(NPL_CHAT_TMPL_GEMMA, sys_user, 2, 1, 1, &suf, err, sizeof err), 0);
    span_text(&suf, got, sizeof got);
    CHECK(strcmp(got, "[user][You are a helpful assistant][Hello]") == 0);
    /* a buffer reused for a shorter rendering drops the old spans */
    CHECK_EQ_INT(npl_chat_render(NPL_CHAT_TMPL_CHATML, NULL, 0, 1, &suf, err, sizeof err), 0);
    CHECK_EQ_INT(suf.n_text, 0);
    npl_chat_buf_free(&suf);
    CHECK(suf.text == NULL && suf.n_text == 0);
}

/* ---------------------------------------------------------- detection */
static void test_detect(void) {
    const char *ln = "x";
    /* Characteristic pieces of the real Jinja templates. */
    const struct { const char *jinja; npl_chat_tmpl want; const char *llama; } cases[] = {
        /* Gemma 3 (and 2): turns marked with <start_of_turn> */
        { "{{ bos_token }}{%- if messages[0]['role'] == 'system' -%}{%- set first_user_prefix = "
          "messages[0]['content'] + '\n\n' -%}{%- endif -%}{%- for message in loop_messages -%}"
          "{{ '<start_of_turn>' + role + '\n' + (first_user_prefix if loop.first else \"\") }}"
          "{{ message['content'] | trim }}{{ '<end_of_turn>\n' }}{%- endfor -%}"
          "{%- if add_generation_prompt -%}{{'<start_of_turn>model\n'}}{%- endif -%}",
          NPL_CHAT_TMPL_GEMMA, "gemma" },
        /* Qwen2.5 / ChatML */
        { "{%- for message in messages %}{{- '<|im_start|>' + message.role + '\\n' + message.content + "
          "'<|im_end|>' + '\\n' }}{%- endfor %}{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}"
          "{%- endif %}", NPL_CHAT_TMPL_CHATML, "chatml" },
        /* Llama 3.x */
        { "{{- '<|start_header_id|>' + message['role'] + '<|end_header_id|>\\n\\n'+ message['content'] | trim "
          "+ '<|eot_id|>' }}", NPL_CHAT_TMPL_LLAMA3, "llama3" },
        /* Llama 2 chat: [INST], <<SYS>>, content.strip() and bos_token + '[INST]' -> strip wins */
        { "{% set content = '<<SYS>>\\n' + system_message + '\\n<</SYS>>\\n\\n' + message['content'] %}"
          "{{ bos_token + '[INST] ' + content.strip() + ' [/INST]' }}", NPL_CHAT_TMPL_LLAMA2_SYS_STRIP,
          "llama2-sys-strip" },
        /* FusionNet-style: BOS inside the history */
        { "{{- '[INST] <<SYS>>\\n' + messages[idx]['content'] -}}{{- bos_token + '[INST] ' + "
          "messages[idx]['content'] + ' [/INST]' -}}", NPL_CHAT_TMPL_LLAMA2_SYS_BOS, "llama2-sys-bos" },
        { "{{ '[INST] <<SYS>>\\n' + system + '\\n<</SYS>>\\n\\n' }}", NPL_CHAT_TMPL_LLAMA2_SYS, "llama2-sys" },
        /* Mistral 7B Instruct v0.2: [INST] and nothing else -> plain llama2 */
        { "{{ bos_token }}{% for message in messages %}{% if message['role'] == 'user' %}"
          "{{ '[INST] ' + message['content'] + ' [/INST]' }}{% endif %}{% endfor %}", NPL_CHAT_TMPL_LLAMA2, "llama2" },
        /* a name given as the template text */
        { "gemma", NPL_CHAT_TMPL_GEMMA, "gemma" },
        { "llama2-sys", NPL_CHAT_TMPL_LLAMA2_SYS, "llama2-sys" },
        /* order matters: <|im_start|> is checked before <start_of_turn> */
        { "<|im_start|> <start_of_turn>", NPL_CHAT_TMPL_CHATML, "chatml" },
        /* the families of chat_template_families.c (real templates: test_chat_template_real) */
        { "<|im_start|>{{ role }}<|im_sep|>", NPL_CHAT_TMPL_PHI4, "phi4" },
        { "<|user|>\n{{ c }}<|end|>\n<|assistant|>", NPL_CHAT_TMPL_PHI3, "phi3" },
        { "phi3", NPL_CHAT_TMPL_PHI3, "phi3" },
        { "[SYSTEM_PROMPT]{{ s }}[/SYSTEM_PROMPT][INST]{{ c }}[/INST]", NPL_CHAT_TMPL_MISTRAL_V7_TEKKEN, "mistral-v7" },
        { "<|turn>user\n{{ c }}<turn|>", NPL_CHAT_TMPL_GEMMA4, NULL },
        /* templates llama.cpp knows and we do not render */
        { "[SYSTEM_PROMPT] [INST]", NPL_CHAT_TMPL_UNKNOWN, "mistral-v7" },
        { "bos_token + message['role'] <start_of_turn>", NPL_CHAT_TMPL_UNKNOWN, "monarch" },
        { "<|header_start|>x<|header_end|>", NPL_CHAT_TMPL_UNKNOWN, "llama4" },
        /* nothing recognisable */
        { "{{ messages[0]['content'] }}", NPL_CHAT_TMPL_UNKNOWN, NULL },
        { "", NPL_CHAT_TMPL_UNKNOWN, NULL },
    };
    for (size_t i = 0; i < N(cases); i++) {
        npl_chat_tmpl got = npl_chat_tmpl_detect(cases[i].jinja, &ln);
        int ok = got == cases[i].want &&
                 ((cases[i].llama == NULL && ln == NULL) || (ln && cases[i].llama && strcmp(ln, cases[i].llama) == 0));
        if (!ok) fprintf(stderr, "  detect case %zu: got %s/%s\n", i, npl_chat_tmpl_name(got), ln ? ln : "NULL");
        CHECK(ok);
    }
    CHECK(npl_chat_tmpl_detect(NULL, &ln) == NPL_CHAT_TMPL_UNKNOWN && ln == NULL);
    CHECK(npl_chat_tmpl_detect("<start_of_turn>", NULL) == NPL_CHAT_TMPL_GEMMA);
}

/* --------------------------------------------------------------- names */
static void test_names(void) {
    const struct { const char *name; npl_chat_tmpl t; } ok[] = {
        { "gemma", NPL_CHAT_TMPL_GEMMA }, { "chatml", NPL_CHAT_TMPL_CHATML },
        { "llama3", NPL_CHAT_TMPL_LLAMA3 }, { "llama2", NPL_CHAT_TMPL_LLAMA2 },
        { "llama2-sys", NPL_CHAT_TMPL_LLAMA2_SYS }, { "llama2-sys-bos", NPL_CHAT_TMPL_LLAMA2_SYS_BOS },
        { "llama2-sys-strip", NPL_CHAT_TMPL_LLAMA2_SYS_STRIP },
    };
    for (size_t i = 0; i < N(ok); i++) {
        npl_chat_tmpl t = NPL_CHAT_TMPL_UNKNOWN;
        CHECK_EQ_INT(npl_chat_tmpl_from_name(ok[i].name, &t, err, sizeof err), 0);
        CHECK_EQ_INT(t, ok[i].t);
        CHECK(strcmp(npl_chat_tmpl_name(t), ok[i].name) == 0);
    }
    npl_chat_tmpl t = NPL_CHAT_TMPL_CHATML;
    CHECK_EQ_INT(npl_chat_tmpl_from_name("gemma3", &t, err, sizeof err), -1);
    CHECK_EQ_INT(t, NPL_CHAT_TMPL_CHATML);
    CHECK(strstr(err, "'gemma3'") != NULL);
    CHECK(strstr(err, "gemma") && strstr(err, "chatml") && strstr(err, "llama3") && strstr(err, "llama2"));
    CHECK_EQ_INT(npl_chat_tmpl_from_name(NULL, &t, err, sizeof err), -1);
    CHECK(strcmp(npl_chat_tmpl_name(NPL_CHAT_TMPL_UNKNOWN), "unknown") == 0);
}

/* ------------------------------------------------------ errors, buffer */
static void test_errors(void) {
    npl_chat_buf b = { 0 };
    const npl_chat_msg bad[] = { { "user", NULL } };
    CHECK_EQ_INT(npl_chat_render(NPL_CHAT_TMPL_CHATML, bad, 1, 1, &b, err, sizeof err), -1);
    CHECK(strstr(err, "message 0: content") != NULL);
    const npl_chat_msg bad2[] = { { NULL, "x" } };
    CHECK_EQ_INT(npl_chat_render(NPL_CHAT_TMPL_GEMMA, bad2, 1, 1, &b, err, sizeof err), -1);
    CHECK(strstr(err, "role") != NULL);
    CHECK_EQ_INT(npl_chat_render(NPL_CHAT_TMPL_UNKNOWN, user_only, 1, 1, &b, err, sizeof err), -1);
    CHECK_EQ_INT(npl_chat_render((npl_chat_tmpl)99, user_only, 1, 1, &b, err, sizeof err), -1);

    /* reuse keeps the capacity and replaces the content */
    CHECK_EQ_INT(npl_chat_render(NPL_CHAT_TMPL_CHATML, conv, N(conv), 1, &b, err, sizeof err), 0);
    size_t cap = b.cap;
    CHECK_EQ_INT(npl_chat_render(NPL_CHAT_TMPL_CHATML, user_only, 1, 0, &b, err, sizeof err), 0);
    CHECK(strcmp(b.data, "<|im_start|>user\nHello<|im_end|>\n") == 0);
    CHECK_EQ_INT(b.cap, cap);
    /* checked sizes */
    CHECK_EQ_INT(npl_chat_buf_append(&b, "x", SIZE_MAX), -1);
    CHECK_EQ_INT(npl_chat_buf_append(&b, "x", SIZE_MAX - b.len), -1);
    CHECK(strcmp(b.data, "<|im_start|>user\nHello<|im_end|>\n") == 0);
    npl_chat_buf_free(&b);
    CHECK(b.data == NULL && b.len == 0 && b.cap == 0);
    npl_chat_buf_free(&b);
    npl_chat_buf_free(NULL);

    /* long content grows the buffer through several doublings */
    static char big[100000];
    memset(big, 'a', sizeof big - 1);
    const npl_chat_msg m[] = { { "user", big } };
    CHECK_EQ_INT(npl_chat_render(NPL_CHAT_TMPL_LLAMA3, m, 1, 1, &b, err, sizeof err), 0);
    CHECK_EQ_INT(b.len, strlen("<|start_header_id|>user<|end_header_id|>\n\n") + sizeof big - 1 +
                            strlen("<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n"));
    npl_chat_buf_free(&b);
}

int main(void) {
    test_chatml();
    test_gemma();
    test_llama3();
    test_llama2();
    test_suffix();
    test_spans();
    test_detect();
    test_names();
    test_errors();
    TEST_MAIN_END();
}
