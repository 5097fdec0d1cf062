/* The output directory of npl_compile (see package_dir.h). */
#include "compiler/package_dir.h"

#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/quote.h"
#include "format/gguf.h"

static const char *FORCE_NOTE = "--force replaces only a package directory npullm compile wrote";

npl_compile_guard *npl_compile_guard_new(void) {
    npl_compile_guard *g = calloc(1, sizeof *g);
    if (g && pthread_mutex_init(&g->mu, NULL)) {
        free(g);
        return NULL;
    }
    return g;
}

void npl_compile_guard_free(npl_compile_guard *g) {
    if (!g) return;
    pthread_mutex_destroy(&g->mu);
    free(g);
}

/* ---- what a package holds ---- */

static int is_accel_bin(const char *n) {
    if (strncmp(n, "accel_", 6)) return 0;
    const char *p = n + 6, *q = p;
    while (*q >= '0' && *q <= '9') q++;
    return q > p && !strcmp(q, ".bin");
}

/* An entry a compile writes: 1 a file, 2 the intermediate directory, 0 other. */
static int package_entry(int dfd, const char *name) {
    struct stat st;
    if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW)) return 0;
    if (S_ISREG(st.st_mode)) return !strcmp(name, "config.json") || !strcmp(name, "model.gguf") || is_accel_bin(name);
    if (!S_ISDIR(st.st_mode) || strcmp(name, "intermediate")) return 0;
    int fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d) {
        if (fd >= 0) close(fd);
        return 0;
    }
    int ok = 2;
    for (struct dirent *e; ok && (e = readdir(d));) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        ok = !strcmp(e->d_name, "npu_postreat.json") && fstatat(fd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
                     S_ISREG(st.st_mode)
                 ? 2
                 : 0;
    }
    closedir(d);
    return ok;
}

/* The marker, or the legacy one (no marker: config.json names model.gguf
 * and model.gguf carries npullm.package.version). */
static int has_marker(const char *dir, char *why, size_t whylen) {
    char path[NPL_PKG_PATH_MAX + 32];
    snprintf(path, sizeof path, "%s/config.json", dir);
    struct stat st;
    if (lstat(path, &st) || !S_ISREG(st.st_mode) || st.st_size > (1 << 20)) {
        snprintf(why, whylen, "not an npullm package (no config.json)");
        return 0;
    }
    FILE *fp = fopen(path, "rb");
    char *text = malloc((size_t)st.st_size + 1);
    size_t n = fp && text ? fread(text, 1, (size_t)st.st_size, fp) : 0;
    if (fp) fclose(fp);
    cJSON *root = text ? cJSON_ParseWithLength(text, n) : NULL;
    free(text);
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, "npullm_package_version");
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(root, "llm_model");
    int ok = cJSON_IsNumber(v) && v->valuedouble >= 1 && v->valuedouble == (double)(int)v->valuedouble;
    int legacy = !v && cJSON_IsString(m) && !strcmp(m->valuestring, "model.gguf");
    cJSON_Delete(root);
    if (!ok && legacy) {
        char gerr[256];
        snprintf(path, sizeof path, "%s/model.gguf", dir);
        npl_gguf *f = npl_gguf_open(path, NULL, gerr, sizeof gerr);
        ok = f && npl_gguf_find_key(f, "npullm.package.version") >= 0;
        npl_gguf_close(f);
    }
    if (!ok) snprintf(why, whylen, "not an npullm package (config.json has no npullm_package_version)");
    return ok;
}

int npl_pkg_is_package(const char *dir, char *why, size_t whylen) {
    struct stat st;
    if (lstat(dir, &st)) {
        snprintf(why, whylen, "%s", strerror(errno));
        return 0;
    }
    if (S_ISLNK(st.st_mode)) {
        snprintf(why, whylen, "is a symbolic link, not an npullm package");
        return 0;
    }
    if (!S_ISDIR(st.st_mode)) {
        snprintf(why, whylen, "is a file, not an npullm package");
        return 0;
    }
    if (!has_marker(dir, why, whylen)) return 0;
    DIR *d = opendir(dir);
    if (!d) {
        snprintf(why, whylen, "%s", strerror(errno));
        return 0;
    }
    int ok = 1;
    for (struct dirent *e; ok && (e = readdir(d));) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        if (!package_entry(dirfd(d), e->d_name)) {
            char q[96];
            npl_quote(q, sizeof q, e->d_name, strlen(e->d_name));
            snprintf(why, whylen, "holds '%s', which npullm compile does not write", q);
            ok = 0;
        }
    }
    closedir(d);
    return ok;
}

/* Removes the entries of a package directory a compile writes, then the
 * directory; anything else stays (and so does the directory). 0 if gone. */
static int remove_package(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return -1;
    for (struct dirent *e; (e = readdir(d));) {
        int k = package_entry(dirfd(d), e->d_name);
        if (k == 1) unlinkat(dirfd(d), e->d_name, 0);
        if (k == 2) {
            char sub[NPL_PKG_PATH_MAX + 256];
            snprintf(sub, sizeof sub, "%s/intermediate/npu_postreat.json", dir);
            unlink(sub);
            unlinkat(dirfd(d), e->d_name, AT_REMOVEDIR);
        }
    }
    closedir(d);
    return rmdir(dir);
}

/* ---- before the stages ---- */

int npl_pkg_out_prepare(npl_compile_guard *g, const char *out_dir, int force, char *norm, size_t normlen, char *err,
                        size_t errlen) {
    size_t n = strlen(out_dir);
    while (n > 1 && out_dir[n - 1] == '/') n--;
    if (!n) {
        snprintf(err, errlen, "-o: empty path");
        return -1;
    }
    if (n >= NPL_PKG_PATH_MAX || n >= normlen) {
        snprintf(err, errlen, "%.80s...: path too long", out_dir);
        return -1;
    }
    memcpy(norm, out_dir, n);
    norm[n] = 0;
    struct stat st;
    if (lstat(norm, &st) == 0) {
        char why[256];
        if (!force) {
            snprintf(err, errlen, "%s: already exists (use --force to replace an npullm package)", out_dir);
            return -1;
        }
        if (!npl_pkg_is_package(norm, why, sizeof why)) {
            snprintf(err, errlen, "%s: %s; %s", out_dir, why, FORCE_NOTE);
            return -1;
        }
    } else if (errno != ENOENT && errno != ENOTDIR) {
        snprintf(err, errlen, "%s: %s", out_dir, strerror(errno));
        return -1;
    }
    /* the parent: a directory we can create the temp dir in (probed, since
     * access() says yes to root on read-only or virtual filesystems) */
    char parent[NPL_PKG_PATH_MAX], probe[NPL_PKG_PATH_MAX + 32];
    const char *slash = strrchr(norm, '/');
    if (!slash) snprintf(parent, sizeof parent, ".");
    else if (slash == norm) snprintf(parent, sizeof parent, "/");
    else snprintf(parent, sizeof parent, "%.*s", (int)(slash - norm), norm);
    if (stat(parent, &st)) {
        snprintf(err, errlen, "%s: parent directory %s: %s", out_dir, parent,
                 errno == ENOENT ? "does not exist" : strerror(errno));
        return -1;
    }
    if (!S_ISDIR(st.st_mode)) {
        snprintf(err, errlen, "%s: parent %s is not a directory", out_dir, parent);
        return -1;
    }
    snprintf(probe, sizeof probe, "%s.tmp.%d", norm, (int)getpid());
    int rc = -1;
    pthread_mutex_lock(&g->mu); /* an abort must not come between mkdir and rmdir */
    if (g->aborted) snprintf(err, errlen, "interrupted");
    else if (mkdir(probe, 0700) == 0) {
        rc = rmdir(probe);
        if (rc) snprintf(err, errlen, "%s: %s: %s", out_dir, probe, strerror(errno));
    } else if (errno == EEXIST)
        snprintf(err, errlen, "%s: %s already exists (left by an earlier compile? remove it)", out_dir, probe);
    else snprintf(err, errlen, "%s: cannot create a directory in %s: %s", out_dir, parent, strerror(errno));
    pthread_mutex_unlock(&g->mu);
    return rc;
}

/* ---- the temp dir ---- */

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
    remove(path);
    return 0;
}

/* Our own temp dir: every entry in it is ours. The compile may create a file
 * in it while we walk; once rmdir succeeds nothing can be created there. */
static void rm_tree(const char *path) {
    struct stat st;
    for (int i = 0; i < 100 && lstat(path, &st) == 0; i++) nftw(path, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

int npl_pkg_tmp_create(npl_compile_guard *g, const char *out, char *err, size_t errlen) {
    int rc = -1;
    pthread_mutex_lock(&g->mu);
    char tmp[sizeof g->tmp];
    snprintf(tmp, sizeof tmp, "%s.tmp.%d", out, (int)getpid());
    if (g->aborted) snprintf(err, errlen, "interrupted");
    else if (mkdir(tmp, 0755)) snprintf(err, errlen, "%s: cannot create %s: %s", out, tmp, strerror(errno));
    else {
        memcpy(g->tmp, tmp, sizeof tmp);
        rc = 0;
    }
    pthread_mutex_unlock(&g->mu);
    return rc;
}

void npl_pkg_tmp_remove(npl_compile_guard *g) {
    pthread_mutex_lock(&g->mu);
    if (g->tmp[0]) rm_tree(g->tmp);
    g->tmp[0] = 0;
    pthread_mutex_unlock(&g->mu);
}

int npl_compile_guard_abort(npl_compile_guard *g) {
    pthread_mutex_lock(&g->mu);
    g->aborted = 1;
    if (g->tmp[0]) rm_tree(g->tmp);
    g->tmp[0] = 0;
    int done = g->committed;
    pthread_mutex_unlock(&g->mu);
    return done;
}

/* ---- into place ---- */

static int swap_in(npl_compile_guard *g, const char *out, char *warn, size_t warnlen, char *err, size_t errlen) {
    char old[sizeof g->tmp + 16];
    if (renameat2(AT_FDCWD, g->tmp, AT_FDCWD, out, RENAME_EXCHANGE) == 0) {
        snprintf(old, sizeof old, "%s", g->tmp); /* the old package is now at the temp name */
    } else if (errno == EINVAL || errno == ENOSYS || errno == ENOTSUP) {
        /* no atomic exchange on this filesystem: two renames, undone on failure */
        snprintf(old, sizeof old, "%s.old.%d", out, (int)getpid());
        if (rename(out, old)) {
            snprintf(err, errlen, "%s: %s", out, strerror(errno));
            return -1;
        }
        if (rename(g->tmp, out)) {
            snprintf(err, errlen, "%s: %s", out, strerror(errno));
            rename(old, out);
            return -1;
        }
    } else {
        snprintf(err, errlen, "%s: %s", out, strerror(errno));
        return -1;
    }
    g->tmp[0] = 0;
    g->committed = 1;
    if (remove_package(old))
        snprintf(warn, warnlen, "the old package's directory %s was kept: it holds files npullm compile did not write",
                 old);
    return 0;
}

int npl_pkg_commit(npl_compile_guard *g, const char *out, int force, char *warn, size_t warnlen, char *err,
                   size_t errlen) {
    int rc = -1;
    struct stat st;
    char why[256];
    warn[0] = 0;
    pthread_mutex_lock(&g->mu);
    if (g->aborted) {
        snprintf(err, errlen, "interrupted");
    } else if (lstat(out, &st) == 0) { /* checked again: 20 s have passed since the stages began */
        if (!force) snprintf(err, errlen, "%s: appeared during the compile (use --force to replace a package)", out);
        else if (!npl_pkg_is_package(out, why, sizeof why))
            snprintf(err, errlen, "%s: %s (it changed during the compile); %s", out, why, FORCE_NOTE);
        else rc = swap_in(g, out, warn, warnlen, err, errlen);
    } else if (renameat2(AT_FDCWD, g->tmp, AT_FDCWD, out, RENAME_NOREPLACE) == 0 ||
               ((errno == EINVAL || errno == ENOSYS || errno == ENOTSUP) && rename(g->tmp, out) == 0)) {
        g->tmp[0] = 0;
        g->committed = 1;
        rc = 0;
    } else {
        snprintf(err, errlen, "%s: %s", out, strerror(errno));
    }
    pthread_mutex_unlock(&g->mu);
    return rc;
}
