/* npullm bench-matmul --accel qnn-htp on a small shape: both tables, every
 * precision x weight mode valid within its tolerance, update_static skipped
 * with its reason, the emulation label; and its bad input (unknown SoC,
 * missing QNN folder, unknown precision) as one line and a usage/runtime exit. */
#include <sys/wait.h>

#include "test_qnn_common.h"

static int run(const char *args, char *out, size_t cap) {
    char cmd[2048];
    /* The CLI is its own process: under ASan it needs the QNN suppressions the
     * test binary has built in (test_qnn_common.h) from a file. */
    snprintf(cmd, sizeof cmd,
             "LSAN_OPTIONS=\"${LSAN_OPTIONS:+$LSAN_OPTIONS:}suppressions=%s/lsan_qnn.supp\" %s bench-matmul --accel qnn-htp %s 2>&1",
             getenv("NPL_TEST_DATA") ? getenv("NPL_TEST_DATA") : "data", getenv("NPL_CLI"), args);
    FILE *p = popen(cmd, "r");
    size_t n = 0;
    if (!p) return -1;
    while (n + 1 < cap && fgets(out + n, (int)(cap - n), p)) n += strlen(out + n);
    out[n] = 0;
    int st = pclose(p);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static int count(const char *s, const char *needle) {
    int c = 0;
    for (const char *p = s; (p = strstr(p, needle)); p += strlen(needle)) c++;
    return c;
}

int main(void) {
    qnn_test_api(); /* skips without the QNN libraries */
    if (!getenv("NPL_CLI")) {
        fprintf(stderr, "NPL_CLI is not set\n");
        return 1;
    }
    static char out[1 << 16];
    int rc = run("--soc SM8650 --m 32 --k 128 --n 64 --warmup 0 --iters 2 --rounds 2", out, sizeof out);
    printf("%s", out);
    CHECK_EQ_INT(rc, 0);
    CHECK(strstr(out, "EMULATION") != NULL);
    CHECK_EQ_INT(count(out, " OK     PASS "), 6); /* fp16, int8, int16 x static, app_write */
    CHECK(strstr(out, "precision_error_summary") != NULL);
    CHECK_EQ_INT(count(out, "static_load   OK"), 3);
    CHECK_EQ_INT(count(out, "app_write     OK"), 3);
    CHECK_EQ_INT(count(out, "update_static SKIP"), 3);
    CHECK(strstr(out, "FAIL") == NULL);

    rc = run("--soc SM1234 --m 8 --k 32 --n 32", out, sizeof out);
    CHECK_EQ_INT(rc, 2);
    CHECK(strstr(out, "unknown SoC 'SM1234'") != NULL);
    rc = run("--qnn-lib /nonexistent --m 8 --k 32 --n 32", out, sizeof out);
    CHECK_EQ_INT(rc, 1);
    CHECK(strstr(out, "/nonexistent/libQnnHtp.so") != NULL);
    rc = run("--precisions fp16,bf16 --m 8 --k 32 --n 32", out, sizeof out);
    CHECK_EQ_INT(rc, 2);
    CHECK(strstr(out, "'bf16'") != NULL);
    TEST_MAIN_END();
}
