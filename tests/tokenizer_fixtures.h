/* Helpers the tokenizer tests share for their JSON fixtures: the data
 * folder, a whole file read into memory, and texts stored as hex (so any
 * byte sequence, invalid UTF-8 included, survives the JSON). */
#ifndef NPL_TEST_TOKENIZER_FIXTURES_H
#define NPL_TEST_TOKENIZER_FIXTURES_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static inline const char *data_dir(void) {
    const char *d = getenv("NPL_TEST_DATA");
    return d && *d ? d : "data";
}

/* path's bytes, NUL-terminated (len, if not NULL, without the NUL); NULL if unreadable */
static inline char *read_all(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = n >= 0 ? malloc((size_t)n + 1) : NULL;
    if (b && fread(b, 1, (size_t)n, f) != (size_t)n) { free(b); b = NULL; }
    fclose(f);
    if (b) { b[n] = '\0'; if (len) *len = (size_t)n; }
    return b;
}

static inline unsigned char *unhex(const char *h, size_t *len) {
    size_t n = strlen(h) / 2;
    unsigned char *b = malloc(n + 1);
    for (size_t i = 0; b && i < n; i++) {
        unsigned v;
        sscanf(h + 2 * i, "%2x", &v);
        b[i] = (unsigned char)v;
    }
    *len = n;
    return b;
}

#endif
