/* UTF-8-safe streaming with stop strings (see text_stream.h). */
#include "llm/text_stream.h"

#include <stdlib.h>
#include <string.h>

static const char REPLACEMENT[] = "\xEF\xBF\xBD";

void npl_text_stream_init(npl_text_stream *s, const char *stop) {
    memset(s, 0, sizeof(*s));
    npl_text_stream_set_stops(s, &stop, 1);
}

void npl_text_stream_set_stops(npl_text_stream *s, const char *const *stops, int n) {
    s->n_stop = 0;
    for (int i = 0; i < n && s->n_stop < NPL_TEXT_STREAM_MAX_STOP; i++)
        if (stops[i] && *stops[i]) {
            s->stop[s->n_stop] = stops[i];
            s->stop_len[s->n_stop++] = strlen(stops[i]);
        }
}
void npl_text_stream_free(npl_text_stream *s) {
    free(s->buf);
    free(s->out);
    memset(s, 0, sizeof(*s));
}
void npl_text_stream_reset(npl_text_stream *s) {
    s->len = s->out_len = 0;
    s->stopped = 0;
}

static int reserve(char **p, size_t *cap, size_t need) {
    if (need <= *cap) return 0;
    size_t nc = *cap ? *cap : 64;
    while (nc < need) nc *= 2;
    char *np = realloc(*p, nc);
    if (!np) return -1;
    *p = np;
    *cap = nc;
    return 0;
}
static int emit(npl_text_stream *s, const char *p, size_t n) {
    if (reserve(&s->out, &s->out_cap, s->out_len + n + 1)) return -1;
    memcpy(s->out + s->out_len, p, n);
    s->out_len += n;
    s->out[s->out_len] = 0;
    return 0;
}

/* Length of the valid UTF-8 character at p (n bytes available): >0 valid,
 * 0 incomplete (may become valid), -1 invalid lead or sequence. */
static int char_len(const unsigned char *p, size_t n) {
    unsigned c = p[0];
    int len;
    unsigned min;
    if (c < 0x80) return 1;
    if (c >= 0xC2 && c <= 0xDF) len = 2, min = 0x80;
    else if (c >= 0xE0 && c <= 0xEF) len = 3, min = 0x800;
    else if (c >= 0xF0 && c <= 0xF4) len = 4, min = 0x10000;
    else return -1;
    unsigned cp = c & (0x3F >> (len - 1));
    for (int i = 1; i < len; i++) {
        if ((size_t)i >= n) return 0;
        if ((p[i] & 0xC0) != 0x80) return -1;
        cp = (cp << 6) | (p[i] & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return -1;
    return len;
}

/* Sanitized, complete-characters-only prefix moves from buf to out, except a
 * tail that may begin the stop string. */
static int drain(npl_text_stream *s, int final) {
    size_t i = 0, keep_from = s->len;
    /* the earliest complete stop string ends the text; else hold back
     * from the earliest place one could start */
    size_t first_partial = s->len;
    for (size_t k = 0; k < s->len && !s->stopped; k++)
        for (int j = 0; j < s->n_stop; j++) {
            size_t m = s->len - k < s->stop_len[j] ? s->len - k : s->stop_len[j];
            if (memcmp(s->buf + k, s->stop[j], m)) continue;
            if (m == s->stop_len[j]) {
                s->stopped = 1;
                s->len = k; /* drop the stop string and what follows */
                keep_from = k;
                break;
            }
            if (k < first_partial) first_partial = k;
        }
    if (!s->stopped && !final && first_partial < keep_from) keep_from = first_partial;
    while (i < keep_from) {
        int cl = char_len((const unsigned char *)s->buf + i, keep_from - i);
        /* wait for the rest, unless the stop string ends the text here */
        if (cl == 0 && !final && !s->stopped && keep_from == s->len) break;
        if (cl <= 0) {
            if (emit(s, REPLACEMENT, 3)) return -1;
            i++;
            continue;
        }
        if (emit(s, s->buf + i, (size_t)cl)) return -1;
        i += (size_t)cl;
    }
    if (i) { /* buf is NULL before the first push */
        memmove(s->buf, s->buf + i, s->len - i);
        s->len -= i;
    }
    return 0;
}

int npl_text_stream_push(npl_text_stream *s, const char *piece, size_t n) {
    s->out_len = 0;
    if (s->stopped) return 0;
    if (reserve(&s->buf, &s->cap, s->len + n + 1)) return -1;
    memcpy(s->buf + s->len, piece, n);
    s->len += n;
    return drain(s, 0);
}

int npl_text_stream_flush(npl_text_stream *s) {
    s->out_len = 0;
    if (s->stopped) return 0;
    return drain(s, 1);
}
