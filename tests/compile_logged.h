/* Compile through npl_compile with its progress and summary captured: the
 * tests read the summary lines they assert on from log. */
#ifndef NPL_TEST_COMPILE_LOGGED_H
#define NPL_TEST_COMPILE_LOGGED_H
#include <stdio.h>

#include "compiler/compiler.h"

/* the whole of path (at most len - 1 bytes) into buf, "" if unreadable */
static inline void read_text(const char *path, char *buf, size_t len) {
    buf[0] = 0;
    FILE *f = fopen(path, "r");
    if (f) buf[fread(buf, 1, len - 1, f)] = 0, fclose(f);
}

/* npl_compile(model -> dir) with p->log sent to DIR.log, read into log and removed */
static inline int compile_logged(const char *model, const char *dir, npl_compile_params *p, char *log, size_t len) {
    char path[400], err[1024];
    snprintf(path, sizeof path, "%s.log", dir);
    p->log = fopen(path, "w");
    int rc = npl_compile(model, dir, p, err, sizeof err);
    if (p->log) fclose(p->log);
    p->log = NULL;
    read_text(path, log, len);
    remove(path);
    if (rc) fprintf(stderr, "compile %s: %s\n", dir, err);
    return rc;
}
#endif
