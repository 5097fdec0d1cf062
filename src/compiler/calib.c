/* --calib FILE (see requant.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compiler/requant.h"

/* --calib FILE: UTF-8 text of 1 byte .. 16 MiB, read whole (NULL with a
 * one-line err naming the file and what is wrong). */
char *npl_calib_read(const char *path, size_t *len, char *err, size_t errlen) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, errlen, "--calib %s: %s", path, strerror(errno));
        return NULL;
    }
    char *t = malloc((16u << 20) + 1);
    size_t n = t ? fread(t, 1, (16u << 20) + 1, f) : 0;
    int rd_err = ferror(f);
    fclose(f);
    const char *bad = !t ? "out of memory" : rd_err ? "cannot be read" : !n ? "is empty: a calibration text is needed"
                      : n > (16u << 20) ? "is larger than 16 MiB" : NULL;
    /* text: no NUL byte and valid UTF-8 (a model file or an image given by mistake fails here) */
    for (size_t i = 0; !bad && i < n;) {
        const unsigned char c = (unsigned char)t[i];
        size_t k = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
        int ok = c != 0 && k && i + k <= n;
        for (size_t j = 1; ok && j < k; j++) ok = ((unsigned char)t[i + j] >> 6) == 2;
        if (!ok) {
            snprintf(err, errlen, "--calib %s: not text (byte %zu is 0x%02x: %s)", path, i, c,
                     c ? "not valid UTF-8" : "a NUL byte");
            free(t);
            return NULL;
        }
        i += k;
    }
    if (bad) {
        snprintf(err, errlen, "--calib %s: %s", path, bad);
        free(t);
        return NULL;
    }
    *len = n;
    return t;
}

