/* Chat templates rendered in C, byte for byte like llama.cpp's
 * llm_chat_apply_template (src/llama-chat.cpp) for the templates we
 * support, with the same substring detection as llm_chat_detect_template.
 *
 * The template text never contains BOS: the tokenizer adds it.
 *
 * Return convention: 0 on success, -1 on failure with one line in err. */
#ifndef NPL_LLM_CHAT_TEMPLATE_H
#define NPL_LLM_CHAT_TEMPLATE_H
#include <stddef.h>

typedef enum {
    NPL_CHAT_TMPL_UNKNOWN = 0,
    NPL_CHAT_TMPL_CHATML,             /* "chatml" (Qwen, ...) */
    NPL_CHAT_TMPL_LLAMA2,             /* "llama2": system text + "\n" in the first [INST] */
    NPL_CHAT_TMPL_LLAMA2_SYS,         /* "llama2-sys": <<SYS>> block */
    NPL_CHAT_TMPL_LLAMA2_SYS_BOS,     /* "llama2-sys-bos": "<s>" before later [INST] */
    NPL_CHAT_TMPL_LLAMA2_SYS_STRIP,   /* "llama2-sys-strip": contents trimmed */
    NPL_CHAT_TMPL_LLAMA3,             /* "llama3" */
    NPL_CHAT_TMPL_GEMMA,              /* "gemma" (Gemma 1/2/3) */
    /* the models' own templates for plain chat (chat_template_families.c) */
    NPL_CHAT_TMPL_DEEPSEEK3,          /* "deepseek3" (DeepSeek-V3.1) */
    NPL_CHAT_TMPL_PHI3,               /* "phi3" (Phi-3.5-mini) */
    NPL_CHAT_TMPL_PHI4,               /* "phi4" */
    NPL_CHAT_TMPL_MISTRAL_V3_TEKKEN,  /* "mistral-v3-tekken" (Mistral-Nemo) */
    NPL_CHAT_TMPL_MISTRAL_V7_TEKKEN,  /* "mistral-v7-tekken" (Mistral-Small-3.2) */
    NPL_CHAT_TMPL_GRANITE,            /* "granite" (Granite 3.x) */
    NPL_CHAT_TMPL_GRANITE_4,          /* "granite-4.0" */
    NPL_CHAT_TMPL_SMOLLM3,            /* "smollm3" */
    NPL_CHAT_TMPL_GEMMA4,             /* "gemma4" */
    NPL_CHAT_TMPL_COUNT
} npl_chat_tmpl;

typedef struct {
    const char *role;     /* "system", "user", "assistant", or any other role */
    const char *content;
} npl_chat_msg;

/* A byte range of a rendering that holds message text (a role name or a
 * content), as opposed to the template's own text. */
typedef struct {
    size_t off, len;
} npl_chat_span;

/* Growable NUL-terminated text. Start from {0}; reuse keeps the capacity.
 * data is NULL until the first append. A rendering also lists where the
 * message text lies (text[0..n_text): in order, disjoint, not adjacent), so
 * that the caller can tokenize the template's text for special tokens and
 * the messages' text never: text typed as "<|im_end|>" stays text. */
typedef struct {
    char *data;
    size_t len;
    size_t cap;
    npl_chat_span *text;
    size_t n_text, cap_text;
} npl_chat_buf;

void npl_chat_buf_free(npl_chat_buf *b);
/* Appends n bytes (checked sizes); -1 on overflow or no memory. */
int npl_chat_buf_append(npl_chat_buf *b, const char *s, size_t n);
/* Appends n bytes of message text: like npl_chat_buf_append, and the bytes
 * join b->text (merged with a span that ends where they start). */
int npl_chat_buf_append_text(npl_chat_buf *b, const char *s, size_t n);

/* The name of a template ("gemma", ...), "unknown" for anything else. */
const char *npl_chat_tmpl_name(npl_chat_tmpl t);

/* Name lookup for an override flag: "chatml", "gemma", "llama2",
 * "llama2-sys", "llama2-sys-bos", "llama2-sys-strip", "llama3", and the
 * families above. An unknown name is an error listing the supported ones. */
int npl_chat_tmpl_from_name(const char *name, npl_chat_tmpl *out, char *err, size_t errlen);

/* Detection from the tokenizer.chat_template Jinja text, in the order of
 * llm_chat_detect_template: an exact template name first, then substring
 * checks; Gemma 4 ("<|turn>"), SmolLM3 (chatml with "Reasoning Mode") and
 * Mistral v7 without spaces around [INST] (tekken) are told apart first. Returns NPL_CHAT_TMPL_UNKNOWN when the text is NULL, matches
 * nothing, or matches a llama.cpp template we do not render; then, if
 * llama_name is not NULL, *llama_name is llama.cpp's name for it (e.g.
 * "phi4") or NULL when llama.cpp would not recognise it either. */
npl_chat_tmpl npl_chat_tmpl_detect(const char *jinja, const char **llama_name);

/* Detection with a fallback: the detected template, else `fallback`; then
 * note (if not NULL) gets one line saying the template was not recognised
 * (and what llama.cpp calls it) and which one is used instead; note is ""
 * when the template was recognised. */
npl_chat_tmpl npl_chat_tmpl_choose(const char *jinja, npl_chat_tmpl fallback, char *note, size_t notelen);

/* Renders msgs[0..n) into out (replacing its content and spans). add_ass
 * appends the assistant prefix (ignored by the llama2 and mistral families,
 * like llama.cpp and the Mistral templates). A conversation a template
 * refuses (Mistral: roles that do not alternate) is an error. Roles and contents must not be NULL. Every role name and
 * content that is written is message text in out->text (the fixed names
 * the template itself writes, such as gemma's "model", are not). */
int npl_chat_render(npl_chat_tmpl t, const npl_chat_msg *msgs, size_t n, int add_ass,
                    npl_chat_buf *out, char *err, size_t errlen);

/* The text to append after rendering msgs[0..n_prev) without the assistant
 * prefix so that the whole equals rendering msgs[0..n) with add_ass: i.e.
 * render(n, add_ass) minus its prefix render(n_prev, 0). Fails if that
 * prefix property does not hold. (llama.cpp's common_chat_format_single
 * additionally prepends "\n" when the past rendering ends in "\n", because
 * generation stops before that newline; the caller knows what its KV cache
 * holds, so this function returns the exact difference.) */
int npl_chat_render_suffix(npl_chat_tmpl t, const npl_chat_msg *msgs, size_t n, size_t n_prev,
                           int add_ass, npl_chat_buf *out, char *err, size_t errlen);
/* (out->text then lists the message text of the suffix, relative to it.) */
#endif
