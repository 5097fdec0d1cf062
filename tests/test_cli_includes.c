/* The CLI is a client of the public API (issue 14 item 7): every
 * tools/npullm/ source includes only the public headers (include/), its own
 * headers (tools/npullm/) and system headers, never the library's internal
 * ones (src/). A file still on internal headers is listed in PENDING; the
 * test also fails when such a file no longer needs its entry, so the list
 * only shrinks. */
#include <dirent.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "check.h"

/* subcommands not yet ported to the public API */
static const char *PENDING[] = {NULL};

static int pending(const char *file) {
    for (int i = 0; PENDING[i]; i++)
        if (!strcmp(PENDING[i], file)) return 1;
    return 0;
}

static int exists(const char *dir, const char *name) {
    char path[8192];
    struct stat sb;
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return stat(path, &sb) == 0 && S_ISREG(sb.st_mode);
}

static int n_includes;

/* Number of includes of file that are not public, own or system ones. */
static int scan(const char *root, const char *tools, const char *file) {
    char path[8192], inc[4200], src[4200], line[1024];
    snprintf(path, sizeof path, "%s/%s", tools, file);
    snprintf(inc, sizeof inc, "%s/include", root);
    snprintf(src, sizeof src, "%s/src", root);
    FILE *fp = fopen(path, "r");
    CHECK(fp != NULL);
    if (!fp) return 1;
    int bad = 0, n_inc = 0;
    while (fgets(line, sizeof line, fp)) {
        const char *p = line;
        while (*p == ' ' || *p == '\t') p++;
        if (*p++ != '#') continue;
        while (*p == ' ' || *p == '\t') p++;
        if (strncmp(p, "include", 7)) continue;
        p += 7;
        while (*p == ' ' || *p == '\t') p++;
        char open = *p, close = open == '"' ? '"' : '>', name[512];
        const char *e = strchr(p + 1, close);
        if ((open != '"' && open != '<') || !e || e - p - 1 >= (long)sizeof name) {
            fprintf(stderr, "%s: unreadable include: %s", path, line);
            bad++;
            continue;
        }
        memcpy(name, p + 1, (size_t)(e - p - 1));
        name[e - p - 1] = 0;
        n_inc++;
        /* "x.h": must be public or the tool's own; <x.h>: must not name an internal header */
        int ok = open == '"' ? exists(inc, name) || exists(tools, name) : !exists(src, name);
        if (!ok) {
            if (!pending(file)) fprintf(stderr, "%s: includes %c%s%c, not a public (include/) header\n", path, open,
                                        name, close);
            bad++;
        }
    }
    fclose(fp);
    n_includes += n_inc;
    return bad;
}

int main(void) {
    const char *root = getenv("NPL_SOURCE_DIR");
#ifdef NPL_SOURCE_ROOT
    if (!root) root = NPL_SOURCE_ROOT;
#endif
    if (!root) {
        fprintf(stderr, "test_cli_includes: NPL_SOURCE_DIR is required\n");
        return 1;
    }
    char tools[4200];
    snprintf(tools, sizeof tools, "%s/tools/npullm", root);
    DIR *d = opendir(tools);
    CHECK(d != NULL);
    int n_files = 0, n_bad_files = 0;
    for (struct dirent *de; d && (de = readdir(d));) {
        size_t n = strlen(de->d_name);
        if (n < 3 || (strcmp(de->d_name + n - 2, ".c") && strcmp(de->d_name + n - 2, ".h"))) continue;
        n_files++;
        int bad = scan(root, tools, de->d_name);
        if (pending(de->d_name)) {
            if (!bad) fprintf(stderr, "%s uses public headers only: remove it from PENDING\n", de->d_name);
            CHECK(bad > 0);
        } else {
            CHECK_EQ_INT(bad, 0);
            n_bad_files += bad > 0;
        }
    }
    if (d) closedir(d);
    CHECK(n_files >= 10 && n_includes >= 5 * n_files);
    int n_pending = 0;
    while (PENDING[n_pending]) n_pending++;
    printf("%d files in tools/npullm, %d on internal headers, %d pending\n", n_files, n_bad_files, n_pending);
    TEST_MAIN_END();
}
