/* libFuzzer harness for chat templates (chat_template.c).
 *
 * Input: byte 0 picks the template id (as a signed byte modulo
 * NPL_CHAT_TMPL_COUNT + 3, so ids past the end and negative ones occur),
 * byte 1 the flags (bit 0 add_ass, bits 1-7 n_prev for the suffix call);
 * the rest is NUL-separated fields: the first is a Jinja text for
 * npl_chat_tmpl_detect (and a name for npl_chat_tmpl_from_name), then
 * role, content pairs. A role of one byte 0x01..0x04 stands for "system",
 * "user", "assistant", "model" (so the fuzzer reaches them without a
 * dictionary).
 *
 * Checks: detection returns a valid id, and a llama.cpp name that maps back
 * to the same id; from_name round-trips; rendering a known template always
 * succeeds, its output is NUL-terminated with len == strlen, and the buffer
 * is reusable; an unknown id fails with a message; when render_suffix
 * succeeds, past + suffix equals the full rendering.
 * Build and run with: fuzz/run chat_template SECONDS */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "llm/chat_template.h"

enum { CT_MAX_MSGS = 64 };

static void ct_check_buf(const npl_chat_buf *b) {
    if (!b->data || b->data[b->len] != 0 || strlen(b->data) != b->len || b->len >= b->cap) abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 2) return 0;
    const int n_ids = NPL_CHAT_TMPL_COUNT + 3;
    int id = ((int)(int8_t)data[0] % n_ids + n_ids) % n_ids - 1; /* -1 .. COUNT + 1 */
    int add_ass = data[1] & 1;
    size_t n_prev_req = data[1] >> 1;

    /* NUL-separated fields, copied so that the last one is terminated too */
    char *text = malloc(size - 1);
    if (!text) return 0;
    memcpy(text, data + 2, size - 2);
    text[size - 2] = 0;
    const char *fields[2 * CT_MAX_MSGS + 1];
    size_t n_fields = 0;
    for (char *p = text; n_fields < sizeof fields / sizeof fields[0];) {
        fields[n_fields++] = p;
        char *z = memchr(p, 0, (size_t)(text + size - 2 - p));
        if (!z || z == text + size - 2) break;
        p = z + 1;
    }

    /* detection and names */
    const char *llama_name = (const char *)1;
    npl_chat_tmpl det = npl_chat_tmpl_detect(fields[0], &llama_name);
    if ((unsigned)det >= NPL_CHAT_TMPL_COUNT) abort();
    if (det != NPL_CHAT_TMPL_UNKNOWN) {
        npl_chat_tmpl back;
        char err[256];
        if (!llama_name || npl_chat_tmpl_from_name(llama_name, &back, err, sizeof err) || back != det) abort();
    }
    if (llama_name && strlen(llama_name) > 64) abort();
    if (npl_chat_tmpl_detect(NULL, &llama_name) != NPL_CHAT_TMPL_UNKNOWN || llama_name) abort();
    {
        npl_chat_tmpl t = NPL_CHAT_TMPL_COUNT;
        char err[256] = "";
        if (npl_chat_tmpl_from_name(fields[0], &t, err, sizeof err)) {
            if (!err[0]) abort();
        } else if (strcmp(npl_chat_tmpl_name(t), fields[0])) {
            abort();
        }
    }

    /* messages */
    static const char *const roles[] = {"system", "user", "assistant", "model"};
    npl_chat_msg msgs[CT_MAX_MSGS];
    size_t n = 0;
    for (size_t f = 1; f + 1 < n_fields && n < CT_MAX_MSGS; f += 2) {
        const char *r = fields[f];
        if (r[0] >= 1 && r[0] <= 4 && r[1] == 0) r = roles[r[0] - 1];
        msgs[n].role = r;
        msgs[n].content = fields[f + 1];
        n++;
    }

    npl_chat_buf out = {0}, past = {0}, suf = {0};
    char err[256] = "";
    int known = id > NPL_CHAT_TMPL_UNKNOWN && id < NPL_CHAT_TMPL_COUNT;
    int rc = npl_chat_render((npl_chat_tmpl)id, msgs, n, add_ass, &out, err, sizeof err);
    if (known != (rc == 0)) abort();
    if (rc) {
        if (!err[0]) abort();
    } else {
        ct_check_buf(&out);
        /* a second rendering into the same buffer gives the same text */
        char *first = strdup(out.data);
        if (!first) abort();
        if (npl_chat_render((npl_chat_tmpl)id, msgs, n, add_ass, &out, err, sizeof err)) abort();
        ct_check_buf(&out);
        if (strcmp(first, out.data)) abort();
        free(first);

        size_t n_prev = n ? n_prev_req % (n + 1) : 0;
        if (npl_chat_render((npl_chat_tmpl)id, msgs, n_prev, 0, &past, err, sizeof err)) abort();
        ct_check_buf(&past);
        if (npl_chat_render_suffix((npl_chat_tmpl)id, msgs, n, n_prev, add_ass, &suf, err, sizeof err) == 0) {
            ct_check_buf(&suf);
            if (past.len + suf.len != out.len || memcmp(out.data, past.data, past.len) ||
                memcmp(out.data + past.len, suf.data, suf.len))
                abort();
        } else if (!err[0]) {
            abort();
        }
    }
    /* a NULL role or content is an error, not a crash */
    if (n) {
        msgs[n - 1].content = NULL;
        err[0] = 0;
        if (!npl_chat_render((npl_chat_tmpl)id, msgs, n, add_ass, &out, err, sizeof err) || !err[0]) abort();
    }
    npl_chat_buf_free(&out);
    npl_chat_buf_free(&past);
    npl_chat_buf_free(&suf);
    free(text);
    return 0;
}
