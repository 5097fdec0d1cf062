/* Accelerator profiling is an option, not the environment: `npullm run` and
 * `npullm bench` with --profile print vnpu's time per graph and op type for
 * a package (the backend option "profile"); without the flag nothing is
 * printed, even with the old NPL_VNPU_PROF=1 set; a bad option value is one
 * clear error from backend_create. */
#include <fcntl.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "accel/vnpu/vnpu_api.h"
#include "check.h"
#include "compiler/compiler.h"

extern char **environ;

static const char *cli;
static char dir[256], err[1 << 16];

/* Runs the CLI with the NULL-terminated arguments, stderr into err; the exit status. */
static int run(const char *arg0, ...) {
    const char *argv[32];
    int n = 0;
    argv[n++] = cli;
    va_list ap;
    va_start(ap, arg0);
    for (const char *a = arg0; a && n < 31; a = va_arg(ap, const char *)) argv[n++] = a;
    va_end(ap);
    argv[n] = NULL;
    char pe[300];
    snprintf(pe, sizeof pe, "%s.err", dir);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 2, pe, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    pid_t pid;
    int st = -1;
    if (posix_spawn(&pid, cli, &fa, NULL, (char *const *)argv, environ) == 0) waitpid(pid, &st, 0);
    posix_spawn_file_actions_destroy(&fa);
    FILE *fp = fopen(pe, "rb");
    size_t k = fp ? fread(err, 1, sizeof err - 1, fp) : 0;
    if (fp) fclose(fp);
    err[k] = 0;
    remove(pe);
    return st != -1 && WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* The profile names the prefill and decode graphs and the ops inside. */
static int has_profile(void) {
    return strstr(err, "vnpu profile: graph s0_ar8_o1") && strstr(err, "vnpu profile: graph s0_ar1_o1") &&
           strstr(err, "MatMul") && strstr(err, "mm: prepare + kernel");
}

int main(void) {
    cli = getenv("NPL_CLI");
    const char *data = getenv("NPL_TEST_DATA");
    char model[1024], e[1024];
    if (!cli) {
        fprintf(stderr, "NPL_CLI is not set\n");
        return 1;
    }
    snprintf(model, sizeof model, "%s/models/rand-llama-f32.gguf", data ? data : "data");
    snprintf(dir, sizeof dir, "/tmp/npl_test_profile_%d", (int)getpid());
    npl_compile_params p = npl_compile_default_params();
    p.n_ctx = 64;
    p.chunk = 8;
    p.n_threads = 2;
    CHECK_EQ_INT(npl_compile(model, dir, &p, e, sizeof e), 0);

    unsetenv("NPL_VNPU_PROF");
    CHECK_EQ_INT(run("bench", "-m", dir, "-p", "8", "-n", "3", "-r", "1", "-t", "2", "--profile", NULL), 0);
    CHECK(has_profile());
    printf("bench --profile: %s\n", has_profile() ? "profile printed" : err);
    CHECK_EQ_INT(run("run", "-m", dir, "-p", "hi", "--raw", "-n", "2", "-t", "2", "--no-stats", "--profile", NULL), 0);
    CHECK(has_profile());
    printf("run --profile: %s\n", has_profile() ? "profile printed" : err);

    setenv("NPL_VNPU_PROF", "1", 1); /* the old switch: no longer read */
    CHECK_EQ_INT(run("bench", "-m", dir, "-p", "8", "-n", "3", "-r", "1", "-t", "2", NULL), 0);
    CHECK(strstr(err, "vnpu profile") == NULL);
    CHECK_EQ_INT(run("run", "-m", dir, "-p", "hi", "--raw", "-n", "2", "-t", "2", "--no-stats", NULL), 0);
    CHECK(strstr(err, "vnpu profile") == NULL);
    printf("NPL_VNPU_PROF=1 without --profile: %s\n", strstr(err, "vnpu profile") ? "profile printed" : "nothing printed");
    unsetenv("NPL_VNPU_PROF");

    /* the backend option itself */
    const npl_accel_api *api = npl_vnpu_get_api(NPL_ACCEL_ABI_VERSION);
    CHECK(api != NULL);
    if (api) {
        npl_accel_backend *be = NULL;
        npl_accel_option bad = {"profile", "4"};
        CHECK(api->backend_create(&bad, 1, &be, e, sizeof e) == NPL_ACCEL_ERR_INVALID_ARG && be == NULL);
        CHECK(strstr(e, "profile") && strstr(e, "'4'"));
        printf("profile 4: %s\n", e);
        npl_accel_option on = {"profile", "1"};
        CHECK(api->backend_create(&on, 1, &be, e, sizeof e) == NPL_ACCEL_OK && be != NULL);
        if (be) api->backend_free(be); /* nothing ran: an empty profile */
    }

    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    CHECK_EQ_INT(system(cmd), 0);
    TEST_MAIN_END();
}
