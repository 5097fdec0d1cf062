/* The output directory of npl_compile: what --force may replace, the temp
 * directory beside it, and the move into place.
 *
 * A package is recognised by its own marker: config.json's
 * "npullm_package_version" (written since format version 1), or, for
 * packages written before the marker existed, config.json naming
 * "model.gguf" whose metadata holds npullm.package.version (every package
 * npullm compile ever wrote has it). The directory must also hold nothing but
 * the files a compile writes; anything else is refused, never deleted. */
#ifndef NPL_PACKAGE_DIR_H
#define NPL_PACKAGE_DIR_H
#include <pthread.h>
#include <stddef.h>

#include "compiler/compiler.h"

#define NPL_PACKAGE_VERSION 1
#define NPL_PKG_PATH_MAX 4096

struct npl_compile_guard {
    pthread_mutex_t mu;
    int aborted;                  /* set by npl_compile_guard_abort */
    int committed;                /* the package is in place */
    char tmp[NPL_PKG_PATH_MAX + 32]; /* the temp dir while it exists, else "" */
};

/* Before any stage: out_dir as given, stripped of trailing slashes into
 * norm; refused when it exists (without force), is not an npullm package
 * (with force), or its parent directory cannot take a new directory. Errors
 * name out_dir as the user gave it. */
int npl_pkg_out_prepare(npl_compile_guard *g, const char *out_dir, int force, char *norm, size_t normlen, char *err,
                        size_t errlen);

/* 1 when dir is a package --force may replace, else 0 with why set. */
int npl_pkg_is_package(const char *dir, char *why, size_t whylen);

/* mkdir OUT.tmp.PID under the guard; fails when the guard was aborted. */
int npl_pkg_tmp_create(npl_compile_guard *g, const char *out, char *err, size_t errlen);
/* Removes the temp dir (if any) and everything in it. */
void npl_pkg_tmp_remove(npl_compile_guard *g);
/* Moves the finished temp dir to out: with force, an existing package is
 * swapped out in one rename (renameat2 RENAME_EXCHANGE where the filesystem
 * has it) and then removed, so out always holds a whole package, old or new.
 * A warning (the old package could not be removed completely) goes to warn. */
int npl_pkg_commit(npl_compile_guard *g, const char *out, int force, char *warn, size_t warnlen, char *err,
                   size_t errlen);

#endif
