/* The accelerator plugin libraries as the loader sees them (test_plugin):
 *   - vnpu and record are shared libraries of their own next to the test
 *     executable (the loader's default place), dlopen'ed by name, and
 *     export exactly one symbol, npl_accel_get_api (nm -D);
 *   - the broken test plugins (tests/plugins/plugin_broken.c), a file that
 *     is no library, and a plugin that is not installed each fail in one
 *     line naming the library and what was wrong, at load or at
 *     backend_create, through the library, a compile and the CLI. */
#ifndef NPL_TEST_PLUGIN_LIBS_H
#define NPL_TEST_PLUGIN_LIBS_H
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "compiler/compiler.h"
#include "plugin/plugin.h"

/* one line, with every piece in it */
static void expect_line(const char *what, const char *msg, const char *a, const char *b) {
    printf("%s: %s\n", what, msg);
    CHECK(strchr(msg, '\n') == NULL);
    const char *want[2] = {a, b};
    for (int i = 0; i < 2; i++) {
        const int ok = !want[i] || strstr(msg, want[i]) != NULL;
        CHECK(ok);
        if (!ok) fprintf(stderr, "  %s: missing '%s'\n", what, want[i]);
    }
}

/* nm -D --defined-only lib: exactly "npl_accel_get_api" */
static void check_exports(const char *lib) {
    char cmd[4500], line[512];
    snprintf(cmd, sizeof cmd, "nm -D --defined-only '%s'", lib);
    FILE *p = popen(cmd, "r");
    CHECK(p != NULL);
    if (!p) return;
    int n = 0, entry = 0;
    while (fgets(line, sizeof line, p)) {
        n++;
        entry += strstr(line, " T npl_accel_get_api\n") != NULL;
        if (!strstr(line, "npl_accel_get_api")) printf("  %s exports %s", lib, line);
    }
    CHECK_EQ_INT(pclose(p), 0);
    printf("%s: %d defined dynamic symbol(s)\n", lib, n);
    CHECK_EQ_INT(n, 1);
    CHECK_EQ_INT(entry, 1);
}

static void plugin_library_checks(npl_plugin_rt *rt) {
    char err[1024], dir[4096], lib[4400];
    CHECK_EQ_INT(npl_plugin_default_dir(dir, sizeof dir), 0);
    { /* the default place: the executable's directory (linked statically) */
        char exe[4096];
        ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
        CHECK(n > 0);
        exe[n > 0 ? n : 0] = 0;
        char *slash = strrchr(exe, '/');
        if (slash) *slash = 0;
        CHECK(!strcmp(dir, exe));
        printf("default plugin directory: %s\n", dir);
    }

    /* vnpu and record: found by name, loaded by dlopen, one exported symbol */
    const char *names[2] = {"vnpu", "record"};
    for (int i = 0; i < 2; i++) {
        snprintf(lib, sizeof lib, "%s/libnpl_accel_%s.so", dir, names[i]);
        void *pre = dlopen(lib, RTLD_NOW | RTLD_NOLOAD);
        CHECK(pre == NULL); /* not linked into the test: loaded only when asked for */
        if (pre) dlclose(pre);
        const npl_accel_api *api = npl_plugin_accel_api(rt, names[i], err, sizeof err);
        CHECK(api != NULL);
        if (!api) fprintf(stderr, "%s: %s\n", names[i], err);
        CHECK(api && !strcmp(api->name, names[i]));
        void *h = dlopen(lib, RTLD_NOW | RTLD_NOLOAD);
        CHECK(h != NULL); /* the runtime's dlopen of that file */
        if (h) dlclose(h);
        check_exports(lib);
    }
    npl_accel_backend *be = npl_plugin_accel_backend(rt, npl_plugin_accel_api(rt, "vnpu", err, sizeof err), err,
                                                     sizeof err);
    CHECK(be != NULL);

    /* broken plugins: one line naming the library and what was wrong */
    static const struct {
        const char *name, *what;
    } broken[] = {{"broken_version", "older ABI version"},
                  {"broken_short", "smaller than"},
                  {"broken_noentry", "does not export npl_accel_get_api"},
                  {"broken_null", "no table"}};
    for (size_t i = 0; i < sizeof broken / sizeof broken[0]; i++) {
        char file[64];
        snprintf(file, sizeof file, "libnpl_accel_%s.so", broken[i].name);
        CHECK(npl_plugin_accel_api(rt, broken[i].name, err, sizeof err) == NULL);
        expect_line(broken[i].name, err, file, broken[i].what);
    }
    const npl_accel_api *bc = npl_plugin_accel_api(rt, "broken_create", err, sizeof err);
    CHECK(bc != NULL);
    if (bc) {
        CHECK(npl_plugin_accel_backend(rt, bc, err, sizeof err) == NULL);
        expect_line("broken_create", err, "libnpl_accel_broken_create.so): backend_create failed",
                    "no device present");
    }
    CHECK(npl_plugin_accel_api(rt, "nosuch-npu", err, sizeof err) == NULL); /* (qnn-htp is built now) */
    expect_line("not installed", err, "plugin libnpl_accel_nosuch-npu.so is not installed", dir);

    /* a plugin_dir is the only place looked in; a file that is no library */
    char tmp[128];
    snprintf(tmp, sizeof tmp, "/tmp/npl_test_plugin_dir_%d", (int)getpid());
    mkdir(tmp, 0755);
    npl_plugin_rt_params rp = {.base_dir = ".", .plugin_dir = tmp};
    npl_plugin_rt *rt2 = npl_plugin_rt_new(&rp, err, sizeof err);
    CHECK(rt2 != NULL);
    if (rt2) {
        CHECK(npl_plugin_accel_api(rt2, "vnpu", err, sizeof err) == NULL);
        expect_line("plugin_dir without vnpu", err, "libnpl_accel_vnpu.so is not installed", tmp);
        snprintf(lib, sizeof lib, "%s/libnpl_accel_garbage.so", tmp);
        FILE *f = fopen(lib, "w");
        CHECK(f != NULL);
        if (f) fputs("not an ELF file\n", f), fclose(f);
        CHECK(npl_plugin_accel_api(rt2, "garbage", err, sizeof err) == NULL);
        expect_line("not a library", err, "cannot load", lib);
        remove(lib);
        npl_plugin_rt_free(rt2);
    }
    rmdir(tmp);

    /* a compile whose target is broken stops before any stage, leaving nothing */
    const char *data = getenv("NPL_TEST_DATA");
    char model[1024], out[256];
    snprintf(model, sizeof model, "%s/models/rand-llama-f32.gguf", data ? data : "data");
    snprintf(out, sizeof out, "/tmp/npl_test_plugin_pkg_%d", (int)getpid());
    const char *targets[3][2] = {{"broken_short", "smaller than"}, {"broken_create", "backend_create failed"},
                                 {"nosuch", "libnpl_accel_nosuch.so is not installed"}};
    for (int i = 0; i < 3; i++) {
        npl_compile_params cp = npl_compile_default_params();
        cp.chunk = 16;
        cp.n_ctx = 64;
        cp.target = targets[i][0];
        CHECK(npl_compile(model, out, &cp, err, sizeof err) != 0);
        expect_line("compile --target", err, targets[i][0], targets[i][1]);
        struct stat sb;
        CHECK(stat(out, &sb) != 0);
    }
    /* the CLI: one line, exit 1; --plugin-dir names where the plugin is */
    const char *cli = getenv("NPL_CLI");
    if (cli) {
        char cmd[6000], line[2048] = "";
        snprintf(cmd, sizeof cmd, "'%s' compile -m '%s' -o %s --chunk 16 --ctx 64 --target broken_version "
                 "--plugin-dir '%s' 2>&1; echo rc=$?", cli, model, out, dir);
        FILE *p = popen(cmd, "r");
        CHECK(p != NULL);
        int lines = 0, rc_ok = 0;
        char first[2048] = "";
        while (p && fgets(line, sizeof line, p)) {
            if (!strncmp(line, "rc=", 3)) rc_ok = atoi(line + 3) == 1;
            else if (!lines++) snprintf(first, sizeof first, "%s", line);
        }
        if (p) pclose(p);
        first[strcspn(first, "\n")] = 0;
        CHECK_EQ_INT(lines, 1);
        CHECK(rc_ok);
        expect_line("CLI --target broken_version", first, "npullm compile: accelerator broken_version",
                    "older ABI version");
    }
}

#endif
