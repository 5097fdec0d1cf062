/* Decode KV-length buckets on QNN HTP (issue 16 item 4), in the emulator:
 * rand-llama-f32 compiled for SM8650 at ctx 4096, chunk 32, buckets 128 /
 * 512 / 2048. libQnnSystem's binary info (npullm inspect PKG) lists the
 * AR-N graphs and each AR-1 bucket graph with its cache inputs of that many
 * rows, and the SoC / arch; decode runs the smallest bucket that holds the
 * history (kv128 after 100 tokens) and a history crossing 128 switches graphs
 * with logits within 1 % of the largest |logit| of the CPU path (the HTP
 * computes in fp16, as test_qnn_compile). 2000 tokens of history are
 * test_compile_buckets' (vnpu): here their 63 prefill chunks would take
 * minutes of emulation (an AR-32 step over 2048 rows is ~5 s). */
#include <libgen.h>

#include "buckets_common.h"
#include "compiler/compiler.h"
#include "llm/runner.h"
#include "test_qnn_common.h"

int main(void) {
    (void)qnn_test_api(); /* skips when QNN is not installed */
    const char *data = getenv("NPL_TEST_DATA"), *cli = getenv("NPL_CLI");
    char model[1024], dir[256], pdir[1024], err[1024], log[1 << 15], cmd[1400];
    snprintf(model, sizeof model, "%s/models/rand-llama-f32.gguf", data ? data : "data");
    snprintf(dir, sizeof dir, "/tmp/npl_test_qnn_buckets_%d", (int)getpid());
    snprintf(pdir, sizeof pdir, "%s", NPL_QNN_PLUGIN);
    dirname(pdir);
    npl_compile_params p = npl_compile_default_params();
    p.n_ctx = 4096, p.chunk = 32, p.n_threads = 2, p.target = "qnn-htp", p.plugin_dir = pdir, p.soc = "SM8650";
    p.buckets = "128,512,2048";
    p.check = 0; /* the sessions below compare with the CPU path; the check would double the emulator time */
    const int rc = npl_compile(model, dir, &p, err, sizeof err);
    CHECK_EQ_INT(rc, 0);
    if (rc) fprintf(stderr, "compile: %s\n", err);

    /* the binary as libQnnSystem reads it */
    CHECK(cli != NULL);
    snprintf(cmd, sizeof cmd, "%s inspect %s", cli ? cli : "npullm", dir);
    FILE *pf = popen(cmd, "r");
    size_t n = pf ? fread(log, 1, sizeof log - 1, pf) : 0;
    log[n] = 0;
    CHECK(pf && pclose(pf) == 0);
    printf("%s", log);
    CHECK(strstr(log, "target qnn-htp, soc SM8650") != NULL);
    CHECK(strstr(log, "decode buckets (cache rows the AR-1 graphs read): 128 512 2048 4096") != NULL);
    CHECK(strstr(log, "accel_0.bin: ") && strstr(log, "qnn-htp SM8650 v75, 9 graphs"));
    static const char *const graphs[] = {"s0_ar32_o1",    "s0_ar1_o1",    "s0_ar32_o32",   "s0_ar1_kv128",  "s0_ar32_kv128",
                                         "s0_ar1_kv512", "s0_ar32_kv512", "s0_ar1_kv2048", "s0_ar32_kv2048"};
    static const int rows[] = {4096, 4096, 4096, 128, 128, 512, 512, 2048, 2048};
    for (int g = 0; g < 9; g++) {
        char key[96];
        snprintf(key, sizeof key, "  graph %s: ", graphs[g]);
        const char *at = strstr(log, key), *next = at ? strstr(at + 1, "  graph ") : NULL;
        CHECK(at != NULL);
        /* its K cache input: the first `rows` rows of the host buffer */
        snprintf(key, sizeof key, ".kc [%d, ", rows[g]);
        const char *kc = at ? strstr(at, key) : NULL;
        CHECK(kc != NULL && (!next || kc < next));
    }

    /* the smallest kv >= the last position + 1 (prefill chunk i of 32: 32 i + 31) */
    static const struct {
        int hist, n_dec;
        long kv128, kv512, kv2048, full, p128;
    } cases[] = {
        {100, 1, 1, 0, 0, 0, 4}, /* pos 100; chunks 0-3 */
        {126, 4, 2, 2, 0, 0, 4}, /* pos 126, 127 | 128, 129 */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        double big = 0;
        const double e = bucket_session(model, dir, pdir, 4096, cases[i].hist, cases[i].n_dec, log, sizeof log, &big);
        printf("history %d + %d decode steps: max |logit diff| %.4g vs the CPU path (largest |logit| %.3f, tolerance 1 %%)\n",
               cases[i].hist, cases[i].n_dec, e, big);
        for (const char *l = log; (l = strstr(l, "accel profile: ")) != NULL; l++) {
            const char *end = strchr(l, '\n');
            printf("  %.*s\n", end ? (int)(end - l) : 200, l);
        }
        CHECK(e >= 0 && big > 0.5 && e <= 0.01 * big);
        CHECK_EQ_INT(bucket_runs(log, "s0_ar1_kv128"), cases[i].kv128);
        CHECK_EQ_INT(bucket_runs(log, "s0_ar1_kv512"), cases[i].kv512);
        CHECK_EQ_INT(bucket_runs(log, "s0_ar1_kv2048"), cases[i].kv2048);
        CHECK_EQ_INT(bucket_runs(log, "s0_ar1_o1"), cases[i].full);
        CHECK_EQ_INT(bucket_runs(log, "s0_ar32_kv128"), cases[i].p128);
        CHECK_EQ_INT(bucket_runs(log, "s0_ar32_o1"), 0);
    }
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    CHECK(system(cmd) == 0);
    TEST_MAIN_END();
}
