/* libFuzzer harness for the UTF-8 streaming of token pieces (text_stream.c).
 *
 * Input: byte 0 is the stop string's length L (0 = no stop string), bytes
 * 1..L the stop string (cut at its first NUL, as a C string would be); the
 * rest is a list of pieces, each one length byte (0..255, clipped to what
 * is left) followed by that many bytes. A length byte of 255 is a
 * npl_text_stream_reset() instead of a piece.
 *
 * Checks, after every push and the final flush:
 *   - each emitted chunk is valid UTF-8 (strict: no overlongs, surrogates
 *     or code points past U+10FFFF) and NUL-terminated;
 *   - when the stop string is itself valid UTF-8 without U+FFFD, the text
 *     emitted since the last reset is exactly the reference: the input with
 *     every byte that does not start a valid character replaced by U+FFFD,
 *     cut before the first occurrence of the stop string (so the stop
 *     string is never streamed, and nothing else is lost or invented);
 *   - stopped is set exactly when the stop string occurred.
 * Build and run with: fuzz/run text_stream SECONDS */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "llm/text_stream.h"

/* Length of the valid UTF-8 character at p (n bytes available), 0 if the
 * bytes there do not form one. Written apart from text_stream.c's decoder
 * on purpose (table of ranges from the Unicode standard, table 3-7). */
static size_t ts_valid_char(const unsigned char *p, size_t n) {
    unsigned c = p[0];
    if (c < 0x80) return 1;
    unsigned lo = 0x80, hi = 0xBF;
    size_t len;
    if (c >= 0xC2 && c <= 0xDF) len = 2;
    else if (c == 0xE0) len = 3, lo = 0xA0;
    else if (c >= 0xE1 && c <= 0xEC) len = 3;
    else if (c == 0xED) len = 3, hi = 0x9F;
    else if (c >= 0xEE && c <= 0xEF) len = 3;
    else if (c == 0xF0) len = 4, lo = 0x90;
    else if (c >= 0xF1 && c <= 0xF3) len = 4;
    else if (c == 0xF4) len = 4, hi = 0x8F;
    else return 0;
    if (n < len) return 0;
    if (p[1] < lo || p[1] > hi) return 0;
    for (size_t i = 2; i < len; i++)
        if (p[i] < 0x80 || p[i] > 0xBF) return 0;
    return len;
}

static int ts_is_utf8(const char *s, size_t n) {
    const unsigned char *p = (const unsigned char *)s;
    for (size_t i = 0; i < n;) {
        size_t k = ts_valid_char(p + i, n - i);
        if (!k) return 0;
        i += k;
    }
    return 1;
}

typedef struct {
    char *p;
    size_t n, cap;
} ts_buf;

static void ts_add(ts_buf *b, const char *s, size_t n) {
    if (!n) return;
    if (b->n + n + 1 > b->cap) {
        size_t cap = (b->n + n + 1) * 2;
        char *q = realloc(b->p, cap);
        if (!q) abort();
        b->p = q;
        b->cap = cap;
    }
    memcpy(b->p + b->n, s, n);
    b->n += n;
}

/* The reference output for raw input in[0..n). */
static void ts_sanitize(const char *in, size_t n, ts_buf *out) {
    out->n = 0;
    for (size_t i = 0; i < n;) {
        size_t k = ts_valid_char((const unsigned char *)in + i, n - i);
        if (k) ts_add(out, in + i, k), i += k;
        else ts_add(out, "\xEF\xBF\xBD", 3), i++;
    }
}

static const char *ts_find(const char *h, size_t hn, const char *nd, size_t nn) {
    if (!nn) return NULL;
    for (size_t i = 0; i + nn <= hn; i++)
        if (!memcmp(h + i, nd, nn)) return h + i;
    return NULL;
}

/* The stream's output since the last reset against the reference. */
static void ts_check_total(const ts_buf *raw, const ts_buf *got, const char *stop, size_t stop_len, int strict,
                           int stopped, int flushed) {
    const char *hit = ts_find(raw->p, raw->n, stop, stop_len);
    if (!strict) return;
    if (stopped != (hit != NULL)) abort();
    ts_buf want = {0};
    ts_sanitize(raw->p, hit ? (size_t)(hit - raw->p) : raw->n, &want);
    if (flushed || hit) {
        if (got->n != want.n || (want.n && memcmp(got->p, want.p, want.n))) abort();
    } else {
        /* before the flush the output is a prefix of the reference */
        if (got->n > want.n || (got->n && memcmp(got->p, want.p, got->n))) abort();
        /* ... and what is held back is no more than a partial character
         * (3 bytes -> at most 3 replacements) plus a partial stop string */
        if (want.n - got->n > 9 + 3 * stop_len) abort();
    }
    free(want.p);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    size_t L = data[0];
    if (L > size - 1) L = size - 1;
    char *stop = malloc(L + 1);
    if (!stop) return 0;
    memcpy(stop, data + 1, L);
    stop[L] = 0;
    size_t stop_len = strlen(stop);
    /* exact reference only for stop strings the sanitizer cannot produce */
    int strict = ts_is_utf8(stop, stop_len) && !ts_find(stop, stop_len, "\xEF\xBF\xBD", 3);

    npl_text_stream s;
    npl_text_stream_init(&s, L ? stop : NULL);
    ts_buf raw = {0}, got = {0};
    const uint8_t *p = data + 1 + L, *end = data + size;
    while (p < end) {
        size_t n = *p++;
        if (n == 255) {
            npl_text_stream_reset(&s);
            raw.n = got.n = 0;
            continue;
        }
        if (n > (size_t)(end - p)) n = (size_t)(end - p);
        if (npl_text_stream_push(&s, (const char *)p, n)) abort();
        ts_add(&raw, (const char *)p, n); /* the loop ends once the stream has stopped */
        p += n;
        if (s.out_len && (!s.out || s.out[s.out_len] != 0)) abort();
        if (!ts_is_utf8(s.out, s.out_len)) abort();
        if (s.out_len) ts_add(&got, s.out, s.out_len);
        ts_check_total(&raw, &got, stop, stop_len, strict, s.stopped, 0);
        if (s.stopped) break;
    }
    if (npl_text_stream_flush(&s)) abort();
    if (s.out_len && (!s.out || s.out[s.out_len] != 0)) abort();
    if (!ts_is_utf8(s.out, s.out_len)) abort();
    if (s.out_len) ts_add(&got, s.out, s.out_len);
    ts_check_total(&raw, &got, stop, stop_len, strict, s.stopped, 1);
    /* after the stop, pushes emit nothing */
    if (s.stopped) {
        if (npl_text_stream_push(&s, "x", 1) || s.out_len) abort();
    }
    npl_text_stream_free(&s);
    free(raw.p);
    free(got.p);
    free(stop);
    return 0;
}
