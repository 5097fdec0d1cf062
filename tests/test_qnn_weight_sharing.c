/* npullm compile --target qnn-htp --weight-sharing (issue 16: "the binary
 * holds the weights once"). The same tiny random model (rand-llama-f32, w8,
 * chunk 8: graphs AR-8, AR-1, AR-8 with every row) compiled twice:
 *   - without sharing each of the 3 graphs holds its own copy of the
 *     weights: the binary is over 3x the weights at the encoding;
 *   - with sharing the binary is at least 1.8 weight-sizes smaller (2 of
 *     the 3 copies gone), the summary says so, config.json records
 *     "weight_sharing": true, and the check still ran every graph against
 *     the CPU samples (in the context that wrote the binary: QNN's x86
 *     emulator cannot load a weight-shared binary);
 *   - opening that package here is refused with one line naming the binary
 *     and why (QNN v2.51 would crash on it in a fresh process), not a crash;
 *   - an unknown context option is refused by the plugin. */
#include <libgen.h>
#include <unistd.h>

#include "compiler/compiler.h"
#include "llm/runner.h"
#include "test_qnn_common.h"

static char pdir[1024];

/* compiles into dir (summary into log[]); returns the binary's size, weights
 * at the encoding in *w (MiB as printed) */
static long compile_one(const char *model, const char *dir, int share, char *log, size_t loglen, double *w) {
    char log_path[300], err[1024];
    snprintf(log_path, sizeof log_path, "%s.log", dir);
    npl_compile_params p = npl_compile_default_params();
    p.n_ctx = 64, p.chunk = 8, p.n_threads = 2, p.target = "qnn-htp", p.plugin_dir = pdir, p.soc = "SM8650";
    p.weights = NPL_WEIGHTS_W8;
    p.force = 1;
    p.weight_sharing = share;
    p.log = fopen(log_path, "w");
    CHECK(p.log != NULL);
    int rc = npl_compile(model, dir, &p, err, sizeof err);
    if (p.log) fclose(p.log);
    if (rc) fprintf(stderr, "compile: %s\n", err);
    CHECK_EQ_INT(rc, 0);
    log[0] = 0;
    FILE *f = fopen(log_path, "r");
    if (f) log[fread(log, 1, loglen - 1, f)] = 0, fclose(f);
    remove(log_path);
    const char *wl = strstr(log, "  weights    ");
    *w = 0;
    CHECK(wl && sscanf(wl, "  weights    %lf MiB", w) == 1);
    char bin[400];
    snprintf(bin, sizeof bin, "%s/accel_0.bin", dir);
    struct stat st;
    CHECK(stat(bin, &st) == 0);
    return (long)st.st_size;
}

int main(void) {
    (void)qnn_test_api(); /* skips when QNN is not installed */
    const char *data = getenv("NPL_TEST_DATA");
    char model[1024], d0[256], d1[256], cmd[600], err[1024];
    static char log0[1 << 16], log1[1 << 16];
    snprintf(model, sizeof model, "%s/models/rand-llama-f32.gguf", data ? data : "data");
    snprintf(d0, sizeof d0, "/tmp/npl_test_qnn_ws_%d_0", (int)getpid());
    snprintf(d1, sizeof d1, "/tmp/npl_test_qnn_ws_%d_1", (int)getpid());
    snprintf(pdir, sizeof pdir, "%s", NPL_QNN_PLUGIN);
    dirname(pdir);

    double w0 = 0, w1 = 0;
    const long b0 = compile_one(model, d0, 0, log0, sizeof log0, &w0);
    const long b1 = compile_one(model, d1, 1, log1, sizeof log1, &w1);
    const double wb = w1 * 1048576.0;
    printf("weights %.0f bytes at w8; binary without sharing %ld (%.2fx), with sharing %ld (%.2fx)\n", wb, b0,
           b0 / wb, b1, b1 / wb);
    CHECK(w0 > 0.1 && w0 == w1);
    CHECK(b0 > 3 * wb);       /* 3 graphs, 3 copies */
    CHECK(b0 - b1 >= 1.8 * wb); /* 2 of them gone */
    CHECK(b1 >= wb);          /* the one left */
    CHECK(strstr(log0, "no weight sharing: each graph holds its own copy") != NULL);
    CHECK(strstr(log1, "weight sharing: each weight once") != NULL);
    /* the check ran every graph, and within its tolerance (rel rms values printed, no fallback) */
    CHECK(strstr(log1, "  subgraphs  1 found, 1 lowered\n") != NULL && strstr(log1, "falls back") == NULL);
    const char *ck = strstr(log1, "check: s0_ar8_o1 (max abs err ");
    CHECK(ck != NULL && strstr(log1, "not checked") == NULL);
    const char *rr = ck ? strstr(ck, "rel rms ") : NULL;
    double rel = 1;
    CHECK(rr && sscanf(rr, "rel rms %lf", &rel) == 1 && rel < 0.05);
    char cfg[1 << 14] = "", path[400];
    snprintf(path, sizeof path, "%s/config.json", d1);
    FILE *f = fopen(path, "r");
    if (f) cfg[fread(cfg, 1, sizeof cfg - 1, f)] = 0, fclose(f);
    CHECK(strstr(cfg, "\"weight_sharing\": true") != NULL);
    snprintf(path, sizeof path, "%s/config.json", d0);
    f = fopen(path, "r");
    if (f) cfg[fread(cfg, 1, sizeof cfg - 1, f)] = 0, fclose(f);
    CHECK(strstr(cfg, "\"weight_sharing\": false") != NULL);

    /* here (x86) the shared package is refused at open, one line naming the binary */
    npl_runner_params rp = npl_runner_default_params();
    rp.n_threads = 2;
    rp.plugin_dir = pdir;
    npl_runner *r = npl_runner_open(d1, &rp, err, sizeof err);
    CHECK(r == NULL);
    printf("open: %s\n", err);
    CHECK(strstr(err, "accel_0.bin") && strstr(err, "shares weights between its graphs") &&
          strstr(err, "without --weight-sharing") && !strchr(err, '\n'));
    npl_runner_close(r);
    /* the unshared one opens and runs */
    r = npl_runner_open(d0, &rp, err, sizeof err);
    CHECK(r != NULL);
    CHECK(r && npl_runner_forward(r, (const int32_t[]){1, 2, 3}, 3, 0, 1, err, sizeof err) != NULL);
    npl_runner_close(r);

    /* the plugin's context options */
    qnn_rig rig = qnn_rig_open("SM8650");
    npl_accel_context *c = NULL;
    const npl_accel_option bad[] = {{"weight_sharing", "yes"}, {"share", "1"}};
    for (int i = 0; i < 2; i++) {
        CHECK(rig.api->context_create(rig.be, rig.dev, &bad[i], 1, &c) == NPL_ACCEL_ERR_INVALID_ARG && c == NULL);
        CHECK(strstr(rig.api->last_error(rig.be), "weight_sharing=0|1") != NULL);
    }
    CHECK(rig.api->context_create(rig.be, rig.dev, (const npl_accel_option[]){{"weight_sharing", "0"}}, 1, &c) ==
          NPL_ACCEL_OK);
    rig.api->context_free(c);
    qnn_rig_close(&rig);

    snprintf(cmd, sizeof cmd, "rm -rf %s %s", d0, d1);
    CHECK(system(cmd) == 0);
    TEST_MAIN_END();
}
