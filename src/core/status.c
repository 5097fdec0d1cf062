#include "core/status.h"

#include <stdarg.h>
#include <stdio.h>

static _Thread_local npl_status last_status = NPL_OK;

npl_status npl_errf(char *err, size_t errlen, npl_status code, const char *fmt, ...) {
    if (err && errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return npl_status_note(code);
}

npl_status npl_err_memory(char *err, size_t errlen) { return npl_errf(err, errlen, NPL_ERR_MEMORY, "out of memory"); }

npl_status npl_status_note(npl_status code) {
    last_status = code;
    return code;
}

void npl_status_clear(void) { last_status = NPL_OK; }

npl_status npl_status_take(npl_status fallback) {
    npl_status st = last_status;
    last_status = NPL_OK;
    return st != NPL_OK && st != NPL_DONE ? st : fallback;
}

npl_status npl_status_peek(void) { return last_status; }

void npl_api_enter(npl_api_scratch *s, npl_status **status, char **err, size_t *errlen) {
    if (status && !*status) *status = &s->status;
    if (!*err || !*errlen) *err = s->err, *errlen = sizeof s->err;
    npl_status_clear();
}
