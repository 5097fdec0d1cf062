/* compile --buckets on vnpu (issue 16 item 4): rand-llama-f32 at ctx 4096,
 * chunk 32, decode buckets 128 / 512 / 2048 (+ 4096, the AR-1 graph over
 * every row). The package records them (config.json "buckets", graphs
 * s0_ar1_kvL, the plugin node's kv_len); decode runs the smallest bucket
 * that holds the history (pos + 1 rows): after 100 tokens kv128, after 2000
 * kv2048, at 2048 the full graph; histories crossing 128 and 2048 switch
 * graphs mid-decode with logits within 1e-2 of the CPU path (f32
 * activations, as test_compile). Bad lists refused with one line. */
#include "check.h"
#include "buckets_common.h"
#include "compiler/compiler.h"
#include "llm/runner.h"

static void parse_cases(void) {
    int b[NPL_MAX_BUCKETS];
    char err[256];
    CHECK_EQ_INT(npl_compile_buckets(NULL, 4096, b, err, sizeof err), 3); /* 512, 1024, 2048 below 4096 */
    CHECK(b[0] == 512 && b[1] == 1024 && b[2] == 2048);
    CHECK_EQ_INT(npl_compile_buckets(NULL, 3000, b, err, sizeof err), 3);
    CHECK(b[2] == 2048);
    CHECK_EQ_INT(npl_compile_buckets(NULL, 512, b, err, sizeof err), 0);
    CHECK_EQ_INT(npl_compile_buckets("none", 4096, b, err, sizeof err), 0);
    CHECK_EQ_INT(npl_compile_buckets("2048,128,512,128,4096", 4096, b, err, sizeof err), 3);
    CHECK(b[0] == 128 && b[1] == 512 && b[2] == 2048);
    const char *bad[] = {"0", "5000", "abc", "128,", "128;512", "-5", "1,2,3,4,5,6,7,8,9"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        err[0] = 0;
        CHECK_EQ_INT(npl_compile_buckets(bad[i], 4096, b, err, sizeof err), -1);
        printf("--buckets %s: %s\n", bad[i], err);
        CHECK(strstr(err, "--buckets") != NULL && !strchr(err, '\n'));
    }
}

int main(void) {
    parse_cases();
    const char *data = getenv("NPL_TEST_DATA");
    char model[1024], dir[256], path[400], err[1024], log[8192], buf[4096] = "";
    snprintf(model, sizeof model, "%s/models/rand-llama-f32.gguf", data ? data : "data");
    snprintf(dir, sizeof dir, "/tmp/npl_test_compile_buckets_%d", (int)getpid());
    npl_compile_params p = npl_compile_default_params();
    p.n_ctx = 4096, p.chunk = 32, p.n_threads = 2, p.act = NPL_ACT_F32, p.target = "vnpu";
    p.buckets = "128,512,2048,9000";
    CHECK(npl_compile(model, dir, &p, err, sizeof err) != 0 && strstr(err, "9000"));
    printf("refused: %s\n", err);
    CHECK(access(dir, F_OK) != 0);
    p.buckets = "128,512,2048";
    const int rc = npl_compile(model, dir, &p, err, sizeof err);
    CHECK_EQ_INT(rc, 0);
    if (rc) fprintf(stderr, "compile: %s\n", err);
    snprintf(path, sizeof path, "%s/config.json", dir);
    FILE *f = fopen(path, "r");
    if (f) buf[fread(buf, 1, sizeof buf - 1, f)] = 0, fclose(f);
    CHECK(strstr(buf, "\"buckets\": [128, 512, 2048, 4096]") != NULL);
    CHECK(strstr(buf, "\"s0_ar1_kv128\", \"s0_ar32_kv128\", \"s0_ar1_kv512\", \"s0_ar32_kv512\", \"s0_ar1_kv2048\", "
                      "\"s0_ar32_kv2048\"") != NULL);
    /* npullm inspect PKG: the package keys and the binary's graphs as the target reads them */
    const char *cli = getenv("NPL_CLI");
    char cmd[1400];
    snprintf(cmd, sizeof cmd, "%s inspect %s", cli ? cli : "npullm", dir);
    FILE *pf = popen(cmd, "r");
    size_t n = pf ? fread(log, 1, sizeof log - 1, pf) : 0;
    log[n] = 0;
    CHECK(cli && pf && pclose(pf) == 0);
    CHECK(strstr(log, "target vnpu, n_ctx 4096, chunk_limits [32, 1]") != NULL);
    CHECK(strstr(log, "decode buckets (cache rows the AR-1 graphs read): 128 512 2048 4096") != NULL);
    static const char *const graphs[] = {"s0_ar32_o1",    "s0_ar1_o1",    "s0_ar32_o32",   "s0_ar1_kv128",  "s0_ar32_kv128",
                                         "s0_ar1_kv512", "s0_ar32_kv512", "s0_ar1_kv2048", "s0_ar32_kv2048"};
    CHECK(strstr(log, ", 9 graphs\n") != NULL);
    for (int g = 0; g < 9; g++) {
        char key[64];
        snprintf(key, sizeof key, "  graph %s: 3 inputs, 1 outputs\n", graphs[g]);
        CHECK(strstr(log, key) != NULL);
    }

    /* history -> the graphs that must run: the smallest kv >= the last position + 1
     * (decode: pos; prefill chunk i of 32: min(32 i + 31, hist - 1)) */
    static const struct {
        int hist, n_dec;
        long kv128, kv512, kv2048, full, p128, p512, p2048, pfull;
    } cases[] = {
        {100, 1, 1, 0, 0, 0, 4, 0, 0, 0},    /* pos 100; chunks 0-3 */
        {2000, 1, 0, 0, 1, 0, 4, 12, 47, 0}, /* pos 2000; chunks 0-3 | 4-15 | 16-62 */
        {126, 4, 2, 2, 0, 0, 4, 0, 0, 0},    /* pos 126, 127 | 128, 129 */
        {2046, 3, 0, 0, 2, 1, 4, 12, 48, 0}, /* pos 2046, 2047 | 2048: every row; chunks 0-3 | 4-15 | 16-63 */
        {2100, 1, 0, 0, 0, 1, 4, 12, 48, 2}, /* chunks 64-65 (2048-2099): the AR-32 graph over every row */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        double big = 0;
        const double e = bucket_session(model, dir, NULL, 4096, cases[i].hist, cases[i].n_dec, log, sizeof log, &big);
        printf("history %d + %d decode steps: max |logit diff| %.3g vs the CPU path (f32 activations, tolerance 1e-2)\n%s",
               cases[i].hist, cases[i].n_dec, e, log);
        CHECK(e >= 0 && e < 1e-2);
        CHECK_EQ_INT(bucket_runs(log, "s0_ar1_kv128"), cases[i].kv128);
        CHECK_EQ_INT(bucket_runs(log, "s0_ar1_kv512"), cases[i].kv512);
        CHECK_EQ_INT(bucket_runs(log, "s0_ar1_kv2048"), cases[i].kv2048);
        CHECK_EQ_INT(bucket_runs(log, "s0_ar1_o1"), cases[i].full);
        CHECK_EQ_INT(bucket_runs(log, "s0_ar32_kv128"), cases[i].p128);
        CHECK_EQ_INT(bucket_runs(log, "s0_ar32_kv512"), cases[i].p512);
        CHECK_EQ_INT(bucket_runs(log, "s0_ar32_kv2048"), cases[i].p2048);
        CHECK_EQ_INT(bucket_runs(log, "s0_ar32_o1"), cases[i].pfull);
    }
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    CHECK(system(cmd) == 0);
    TEST_MAIN_END();
}
