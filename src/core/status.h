/* Internal status codes: the layer where a failure happens says what kind it
 * was (SQLite's result codes), and the code reaches the public API unchanged.
 *
 * The layers pass a message buffer (char *err, size_t errlen) down ~40
 * functions; the code travels next to it, recorded per thread when the
 * message is written (errno's model: two engines in two threads never see
 * each other's code). An upper layer that re-words a lower message keeps the
 * lower code (plain snprintf); one that detects its own failure records its
 * own. The public API clears the record on entry and moves it into the
 * engine handle (npl_engine_last_status) when a call fails, so callers only
 * ever read a handle's code. */
#ifndef NPL_STATUS_H
#define NPL_STATUS_H
#include <stddef.h>

#include "npullm.h"

/* Writes "fmt..." into err (if err/errlen allow), records code, returns code. */
npl_status npl_errf(char *err, size_t errlen, npl_status code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* "out of memory" with NPL_ERR_MEMORY. */
npl_status npl_err_memory(char *err, size_t errlen);
/* Records a code without a message (layers whose caller writes the text). */
npl_status npl_status_note(npl_status code);
void npl_status_clear(void);
/* A public API function's entry: a NULL status, or a NULL err / errlen 0,
 * is pointed at s's scratch so the body writes both unconditionally; the
 * thread's recorded code is cleared. status may be NULL (no status out). */
typedef struct {
    npl_status status;
    char err[8];
} npl_api_scratch;
void npl_api_enter(npl_api_scratch *s, npl_status **status, char **err, size_t *errlen);
/* The recorded code (and clears it), or fallback when none was recorded. */
npl_status npl_status_take(npl_status fallback);
/* The recorded code without clearing it; NPL_OK when none. */
npl_status npl_status_peek(void);

#endif
