/* Streaming text out of token pieces: emits only whole UTF-8 characters (a
 * character split across tokens waits for its last byte), replaces invalid
 * bytes with U+FFFD, and holds back text that may be the start of a stop
 * string so the stop string itself is never streamed. */
#ifndef NPL_TEXT_STREAM_H
#define NPL_TEXT_STREAM_H
#include <stddef.h>

#define NPL_TEXT_STREAM_MAX_STOP 8

typedef struct {
    char *buf;          /* pending bytes not yet emitted */
    size_t len, cap;
    char *out;          /* last emitted chunk (owned) */
    size_t out_len, out_cap;
    const char *stop[NPL_TEXT_STREAM_MAX_STOP]; /* n_stop non-empty strings (not owned) */
    size_t stop_len[NPL_TEXT_STREAM_MAX_STOP];
    int n_stop;
    int stopped;        /* a stop string was seen */
} npl_text_stream;

/* One stop string (NULL or "" = none). */
void npl_text_stream_init(npl_text_stream *s, const char *stop);
/* Replaces the stop strings (empty ones skipped, at most the first
 * NPL_TEXT_STREAM_MAX_STOP); the strings must outlive their use. Generation
 * stops at the earliest complete one. */
void npl_text_stream_set_stops(npl_text_stream *s, const char *const *stops, int n);
void npl_text_stream_free(npl_text_stream *s);
void npl_text_stream_reset(npl_text_stream *s);
/* Feed bytes; afterwards s->out[0..out_len) is what may be shown now.
 * Returns -1 on out of memory. */
int npl_text_stream_push(npl_text_stream *s, const char *piece, size_t n);
/* End of generation: emit whatever is held (incomplete characters as U+FFFD). */
int npl_text_stream_flush(npl_text_stream *s);

#endif
