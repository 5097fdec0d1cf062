/* No process-wide mutable state and no environment in src/: every object
 * compiled from src/ (the library's and the plugins', listed by CMake in
 * NPL_SRC_OBJECTS) is read with `objdump -t`; a symbol in a writable data
 * section (.data, .bss, their .data.x / .bss.x variants, thread-local
 * .tdata / .tbss, common) or a reference to getenv fails the test, unless
 * the allow-list below names it with the reason. Constant tables (.rodata,
 * and pointer tables in .data.rel.ro, written once by the loader) are fine. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

/* What may stay, and why. Anything added here needs the same kind of reason. */
static const struct {
    const char *object, *symbol, *why;
} ALLOWED[] = {
    /* the CPU's features and the per-ISA kernel tables: built once by
     * pthread_once from cpuid, read-only afterwards (the same for every
     * engine, like a constant table that cannot be computed at compile time) */
    {"cpu_features.c.o", "g_once", "pthread_once guard of the tables below"},
    {"cpu_features.c.o", "g_caps", "cpuid result, written once"},
    {"cpu_features.c.o", "g_tables", "per-ISA kernel tables, written once"},
    {"cpu_features.c.o", "g_dot4", "per-ISA 4-row dot kernels, written once"},
    {"nn_generic.c.o", "nn_once", "pthread_once guard of nn_resolved"},
    {"nn_generic.c.o", "nn_resolved", "per-ISA nn kernel tables, written once"},
    {"nn_generic.c.o", "gelu_f16_once", "pthread_once guard of gelu_f16_table"},
    {"nn_generic.c.o", "gelu_f16_table", "llama.cpp's f16 GELU table, written once"},
    /* the status code of the failing layer travels up next to the message,
     * per thread (errno's model); the public API clears it on entry and moves
     * it into the engine handle, so no caller reads it (core/status.h) */
    {"status.c.o", "last_status", "thread-local, moved into the handle"},
    /* QNN's log callback carries no user pointer: its error lines go to a
     * buffer of the calling thread (QNN logs synchronously from the call) */
    {"qnn_lib.c.o", "log_buf", "thread-local QNN log lines"},
    {"qnn_lib.c.o", "log_len", "thread-local QNN log lines"},
};
enum { N_ALLOWED = sizeof ALLOWED / sizeof ALLOWED[0] };

static int writable(const char *sec) {
    if (!strncmp(sec, ".data.rel.ro", 12)) return 0;
    return !strcmp(sec, ".data") || !strncmp(sec, ".data.", 6) || !strcmp(sec, ".bss") || !strncmp(sec, ".bss.", 5) ||
           !strcmp(sec, ".tdata") || !strncmp(sec, ".tdata.", 7) || !strcmp(sec, ".tbss") ||
           !strncmp(sec, ".tbss.", 6) || !strcmp(sec, "*COM*");
}

/* Instrumentation a sanitizer build adds next to the program's own data. */
static int instrumentation(const char *name) {
    return !strncmp(name, "__asan", 6) || !strncmp(name, "___asan", 7) || !strncmp(name, ".L", 2) ||
           !strncmp(name, "__ubsan", 7) || !strncmp(name, "__sancov", 8) || !strncmp(name, "__unnamed_", 10);
}

/* name is one of the '|'-separated names in alts */
static int one_of(const char *name, const char *alts) {
    const size_t n = strlen(name);
    for (const char *p = alts; *p;) {
        const size_t len = strcspn(p, "|");
        if (len == n && !strncmp(p, name, n)) return 1;
        p += len + (p[len] == '|');
    }
    return 0;
}

static const char *base(const char *path) {
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

/* Checks one object; returns the number of objects read (0 or 1). */
static int check_object(const char *path, int *seen) {
    char cmd[4300], line[2048];
    snprintf(cmd, sizeof cmd, "objdump -t '%s' 2>&1", path);
    FILE *p = popen(cmd, "r");
    if (!p) return 0;
    int table = 0;
    while (fgets(line, sizeof line, p)) {
        if (!strncmp(line, "SYMBOL TABLE:", 13)) {
            table = 1;
            continue;
        }
        /* "VALUE FLAGS(7) SECTION\tSIZE NAME" */
        if (!table || strlen(line) < 26 || line[16] != ' ') continue;
        char sec[256], name[1024] = "";
        unsigned long long size = 0;
        if (sscanf(line + 25, "%255s %llx %1023s", sec, &size, name) < 2) continue;
        const int flag_d = line[17 + 5] == 'd', flag_f = line[17 + 6] == 'f';
        if (!strcmp(sec, "*UND*")) {
            /* no environment: behaviour comes from parameters and options */
            CHECK(strcmp(name, "getenv") && strcmp(name, "secure_getenv"));
            if (!strcmp(name, "getenv") || !strcmp(name, "secure_getenv"))
                fprintf(stderr, "%s: calls %s\n", base(path), name);
            continue;
        }
        if (!writable(sec) || flag_d || flag_f || !*name || instrumentation(name)) continue;
        int ok = 0;
        for (int i = 0; i < N_ALLOWED; i++)
            if (!strcmp(base(path), ALLOWED[i].object) && one_of(name, ALLOWED[i].symbol)) {
                ok = 1;
                seen[i] = 1;
            }
        CHECK(ok);
        if (!ok)
            fprintf(stderr, "%s: %s (%llu bytes) in %s: writable file-scope state\n", base(path), name, size, sec);
    }
    const int rc = pclose(p);
    CHECK_EQ_INT(rc, 0);
    if (rc) fprintf(stderr, "objdump -t %s failed\n", path);
    return table;
}

int main(void) {
    FILE *list = fopen(NPL_SRC_OBJECTS, "r");
    CHECK(list != NULL);
    if (!list) {
        fprintf(stderr, "%s: cannot read the object list\n", NPL_SRC_OBJECTS);
        TEST_MAIN_END();
    }
    char path[4096];
    int n = 0, seen[N_ALLOWED] = {0};
    while (fgets(path, sizeof path, list)) {
        path[strcspn(path, "\r\n")] = 0;
        if (*path) n += check_object(path, seen);
    }
    fclose(list);
    printf("%d objects from src/ read\n", n);
    CHECK(n >= 50); /* the list is the library's: a handful would mean it is not */
    /* an allow-list entry nothing needs any more is removed, so the list
     * stays exactly what is left */
    for (int i = 0; i < N_ALLOWED; i++) {
        CHECK(seen[i]);
        if (!seen[i]) fprintf(stderr, "allow-list: %s %s is gone: remove the entry\n", ALLOWED[i].object, ALLOWED[i].symbol);
    }
    TEST_MAIN_END();
}
