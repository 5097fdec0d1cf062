/* libnpullm.so exports the public API and nothing else (issue 14 item 7).
 *
 * `nm -D --defined-only` on the shared library must list only npl_ names
 * that a header in include/ declares as a function, and every function a
 * public header marks NPL_API must be among them (a public call the build
 * forgot to export fails too). The library is NPL_EXPORTS_LIB (CMake passes
 * the built libnpullm.so; set it to another build's library to check that
 * one), the headers NPL_INCLUDE_DIR. */
#include <ctype.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

#define MAX_NAMES 4096

typedef struct {
    char *v[MAX_NAMES];
    int n;
} names;

static void add(names *s, const char *p, size_t len) {
    for (int i = 0; i < s->n; i++)
        if (strlen(s->v[i]) == len && !memcmp(s->v[i], p, len)) return;
    if (s->n < MAX_NAMES) s->v[s->n++] = strndup(p, len);
}

static int has(const names *s, const char *name) {
    for (int i = 0; i < s->n; i++)
        if (!strcmp(s->v[i], name)) return 1;
    return 0;
}

static int ident(int c) { return isalnum(c) || c == '_'; }

/* Every npl_ identifier followed by '(' (declared), and the name in each
 * line that starts with NPL_API (exported by contract). */
static void scan_header(const char *path, names *declared, names *api) {
    FILE *fp = fopen(path, "r");
    CHECK(fp != NULL);
    if (!fp) return;
    char line[4096];
    while (fgets(line, sizeof line, fp)) {
        for (char *p = line; (p = strstr(p, "npl_")); p++) {
            if (p > line && ident((unsigned char)p[-1])) continue;
            size_t n = 0;
            while (ident((unsigned char)p[n])) n++;
            const char *q = p + n;
            while (*q == ' ') q++;
            if (*q == '(') add(declared, p, n);
        }
        if (!strncmp(line, "NPL_API ", 8)) {
            char *paren = strchr(line, '(');
            if (!paren) continue;
            char *e = paren;
            while (e > line && !ident((unsigned char)e[-1])) e--;
            char *b = e;
            while (b > line && ident((unsigned char)b[-1])) b--;
            add(api, b, (size_t)(e - b));
        }
    }
    fclose(fp);
}

int main(void) {
    const char *lib = getenv("NPL_EXPORTS_LIB"), *inc = getenv("NPL_INCLUDE_DIR");
#ifdef NPL_SHARED_LIB
    if (!lib) lib = NPL_SHARED_LIB;
#endif
#ifdef NPL_PUBLIC_INCLUDE
    if (!inc) inc = NPL_PUBLIC_INCLUDE;
#endif
    if (!lib || !inc) {
        fprintf(stderr, "test_public_exports: NPL_EXPORTS_LIB and NPL_INCLUDE_DIR are required\n");
        return 1;
    }
    static names declared, api, exported;
    DIR *d = opendir(inc);
    CHECK(d != NULL);
    int n_headers = 0;
    for (struct dirent *de; d && (de = readdir(d));) {
        size_t n = strlen(de->d_name);
        if (n < 3 || strcmp(de->d_name + n - 2, ".h")) continue;
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", inc, de->d_name);
        scan_header(path, &declared, &api);
        n_headers++;
    }
    if (d) closedir(d);
    CHECK(n_headers >= 2);      /* npullm.h and npullm_accel.h at least */
    CHECK(has(&api, "npl_version") && has(&api, "npl_engine_open"));

    char cmd[4200];
    snprintf(cmd, sizeof cmd, "nm -D --defined-only '%s'", lib);
    FILE *nm = popen(cmd, "r");
    CHECK(nm != NULL);
    char line[1024];
    int bad = 0;
    while (nm && fgets(line, sizeof line, nm)) {
        /* "ADDRESS TYPE NAME" (NAME may carry @VERSION) */
        char addr[64], type[8], name[512];
        if (sscanf(line, "%63s %7s %511s", addr, type, name) != 3) continue;
        char *at = strchr(name, '@');
        if (at) *at = 0;
        add(&exported, name, strlen(name));
        if (strncmp(name, "npl_", 4) || !has(&declared, name)) {
            if (bad++ < 40) fprintf(stderr, "exported but not public: %s (%s)\n", name, type);
        }
    }
    int st = nm ? pclose(nm) : -1;
    CHECK_EQ_INT(st, 0);
    if (bad) fprintf(stderr, "%d symbols of %s are not public npl_ functions of %s/*.h\n", bad, lib, inc);
    CHECK_EQ_INT(bad, 0);
    CHECK(exported.n >= api.n);
    for (int i = 0; i < api.n; i++) {
        if (has(&exported, api.v[i])) continue;
        fprintf(stderr, "public (NPL_API) but not exported: %s\n", api.v[i]);
        CHECK(0);
    }
    printf("%d symbols exported, %d NPL_API functions in %d headers\n", exported.n, api.n, n_headers);
    TEST_MAIN_END();
}
