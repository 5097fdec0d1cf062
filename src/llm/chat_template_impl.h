/* Internals shared by chat_template.c (buffer, names, detection, the
 * llama.cpp-legacy renderers) and chat_template_families.c (renderers
 * that follow the models' own Jinja templates). */
#ifndef NPL_LLM_CHAT_TEMPLATE_IMPL_H
#define NPL_LLM_CHAT_TEMPLATE_IMPL_H
#include <string.h>

#include "llm/chat_template.h"

typedef struct {
    const char *s;
    size_t n;
} npl_chat_sv;

/* Appends with a sticky failure flag. */
typedef struct {
    npl_chat_buf *b;
    int failed;
    char *err;          /* a renderer that refuses a conversation says why here */
    size_t errlen;
    int refused;
} npl_chat_writer;

/* template text */
static inline void npl_cw_put(npl_chat_writer *w, const char *s, size_t n) {
    if (!w->failed && npl_chat_buf_append(w->b, s, n)) w->failed = 1;
}
static inline void npl_cw_puts(npl_chat_writer *w, const char *s) { npl_cw_put(w, s, strlen(s)); }
/* message text: role names and contents */
static inline void npl_cw_text(npl_chat_writer *w, const char *s, size_t n) {
    if (!w->failed && npl_chat_buf_append_text(w->b, s, n)) w->failed = 1;
}
static inline void npl_cw_text_s(npl_chat_writer *w, const char *s) { npl_cw_text(w, s, strlen(s)); }
static inline void npl_cw_text_sv(npl_chat_writer *w, npl_chat_sv v) { npl_cw_text(w, v.s, v.n); }

static inline npl_chat_sv npl_chat_sv_of(const char *s) {
    npl_chat_sv v = { s, strlen(s) };
    return v;
}

/* chat_template_families.c: 0, or -1 with w->refused set and err written */
void npl_chat_render_family(npl_chat_writer *w, npl_chat_tmpl t, const npl_chat_msg *m, size_t n, int add_ass);
#endif
