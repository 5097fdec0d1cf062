/* qnn-htp packages (issue 16 items 2 and the bad-input list), on
 * rand-llama-f32 compiled for SM8650 (chunk 8, ctx 64): config.json in
 * config_qnn.json style names the SoC; the runtime opens the binary on the
 * package's SoC device; refused at open with one line naming the file: a
 * package whose "soc" is not the binary's or is unknown, a binary of
 * another QNN release (checked through the plugin directly: the package's
 * checksum would refuse an edited file first), QNN's libraries absent (the
 * plugin built with a missing QNN folder, tests/qnn-nolib/), a missing
 * binary. */
#include <libgen.h>
#include <unistd.h>

#include "compiler/compiler.h"
#include "format/graph_file.h"
#include "llm/runner.h"
#include "package_compare.h"
#include "test_qnn_common.h"

/* the package's model.gguf with every plugin node's "soc" set to soc */
static int set_soc(const char *dir, const char *soc) {
    char path[400], tmp[420], err[512];
    snprintf(path, sizeof path, "%s/model.gguf", dir);
    snprintf(tmp, sizeof tmp, "%s.new", path);
    npl_gguf *f = npl_gguf_open(path, NULL, err, sizeof err);
    npl_graph *g = f ? npl_graph_file_load(f, err, sizeof err) : NULL;
    npl_gguf_writer *w = g ? npl_gguf_writer_new() : NULL;
    static const char *const skip[] = {"npullm.graph.", "npullm.attr.", NULL};
    int rc = w ? 0 : -1;
    for (int i = 0; !rc && i < npl_graph_n_nodes(g); i++)
        if (npl_graph_node(g, i)->op == NPL_OP_PLUGIN) rc = npl_attr_set_str(g, i, "soc", soc);
    if (!rc) rc = npl_gguf_copy_kv(w, f, skip, err, sizeof err) || npl_graph_file_add(w, g, err, sizeof err) ||
                  npl_gguf_writer_write(w, tmp, err, sizeof err) || rename(tmp, path);
    if (rc) fprintf(stderr, "set_soc: %s\n", err);
    npl_gguf_writer_free(w);
    npl_graph_free(g);
    npl_gguf_close(f);
    return rc;
}

/* opening dir fails with one line holding both parts */
static void open_refused(const char *dir, const char *pdir, const char *a, const char *b) {
    char err[1024];
    npl_runner_params rp = npl_runner_default_params();
    rp.n_threads = 2;
    rp.plugin_dir = pdir;
    npl_runner *r = npl_runner_open(dir, &rp, err, sizeof err);
    CHECK(r == NULL);
    npl_runner_close(r);
    printf("refused: %s\n", err);
    CHECK(strstr(err, a) != NULL && strstr(err, b) != NULL && !strchr(err, '\n'));
}
int main(void) {
    (void)qnn_test_api(); /* skips when QNN is not installed */
    const char *data = getenv("NPL_TEST_DATA");
    char model[1024], dir[256], pdir[1024], err[1024], cmd[600];
    snprintf(model, sizeof model, "%s/models/rand-llama-f32.gguf", data ? data : "data");
    snprintf(dir, sizeof dir, "/tmp/npl_test_qnn_package_%d", (int)getpid());
    snprintf(pdir, sizeof pdir, "%s", NPL_QNN_PLUGIN);
    dirname(pdir);
    npl_compile_params p = npl_compile_default_params();
    p.n_ctx = 64;
    p.chunk = 8;
    p.n_threads = 2;
    p.target = "qnn-htp";
    p.plugin_dir = pdir;
    p.soc = "SM8650";
    int rc = npl_compile(model, dir, &p, err, sizeof err);
    CHECK_EQ_INT(rc, 0);
    if (rc) {
        fprintf(stderr, "compile: %s\n", err);
        TEST_MAIN_END();
    }
    npl_runner_params rp = npl_runner_default_params();
    rp.n_threads = 2;
    rp.plugin_dir = pdir;
    npl_runner *cpu = npl_runner_open(model, &rp, err, sizeof err);
    npl_runner *pkg = cpu ? npl_runner_open(dir, &rp, err, sizeof err) : NULL; /* on the SM8650 device */
    if (!pkg) fprintf(stderr, "open: %s\n", err);
    CHECK(cpu != NULL && pkg != NULL);
    if (cpu && pkg) {
        double worst = package_compare(cpu, pkg, 11, 3, npl_runner_hparams(cpu)->n_vocab, 31, 7);
        printf("SM8650 package opened on its SoC vs the CPU path: max |logit diff| %.5f\n", worst);
        CHECK(worst < 0.2); /* test_qnn_compile: within 1 % of the largest |logit| (19.4) */
    }
    npl_runner_close(pkg);
    npl_runner_close(cpu);
    FILE *f;
    /* config.json in config_qnn.json style, naming the SoC */
    char cfg[8192] = "", bin_path[600] = "";
    snprintf(cmd, sizeof cmd, "%s/config.json", dir);
    f = fopen(cmd, "r");
    if (f) cfg[fread(cfg, 1, sizeof cfg - 1, f)] = 0, fclose(f);
    CHECK(strstr(cfg, "\"backend_type\": \"cpu\"") && strstr(cfg, "\"soc\": \"SM8650\"") && strstr(cfg, "\"accel\": \"qnn-htp\""));
    CHECK(strstr(cfg, "\"chunk_limits\": [8, 1]") && strstr(cfg, "\"max_context_length\": 64") && strstr(cfg, "\"kv_cache\": \"f16\""));
    const char *bn = strstr(cfg, "\"file\": \"");
    if (bn) snprintf(bin_path, sizeof bin_path, "%s/%.*s", dir, (int)strcspn(bn + 9, "\""), bn + 9);
    CHECK(bn != NULL && access(bin_path, R_OK) == 0);

    /* a binary of another QNN release: refused by name, before QNN parses it */
    qnn_rig rig = qnn_rig_open("SM8650");
    f = fopen(bin_path, "rb");
    long n = 0;
    char *b = NULL;
    if (f && !fseek(f, 0, SEEK_END) && (n = ftell(f)) > 0 && (b = malloc((size_t)n)) && !fseek(f, 0, SEEK_SET))
        CHECK(fread(b, 1, (size_t)n, f) == (size_t)n);
    if (f) fclose(f);
    int patched = 0;
    for (char *q = b; q && (q = memmem(q, (size_t)(b + n - q), "v2.51.0.", 8)); q += 8) q[3] = '4', q[4] = '9', patched++;
    CHECK(patched > 0);
    npl_accel_context *lc = NULL;
    npl_accel_status as = b ? rig.api->context_create_from_binary(rig.be, rig.dev, NULL, 0, b, (uint64_t)n, &lc) : 0;
    printf("another QNN release: %s\n", rig.api->last_error(rig.be));
    CHECK(as == NPL_ACCEL_ERR_BINARY_VERSION && lc == NULL && strstr(rig.api->last_error(rig.be), "written by QNN v2.49.0"));
    free(b);
    qnn_rig_close(&rig);

    /* the package's soc is not the binary's: the device it names refuses it */
    CHECK(set_soc(dir, "SM8550") == 0);
    open_refused(dir, pdir, "the binary is for SM8650, the device is SM8550", bin_path);
    CHECK(set_soc(dir, "SM9999") == 0);
    open_refused(dir, pdir, "unknown SoC 'SM9999'", bin_path);
    CHECK(set_soc(dir, "SM8650") == 0);
    /* QNN's libraries absent at run time */
    open_refused(dir, NPL_QNN_NOLIB_DIR, "cannot load /nonexistent-qnn/libQnnHtp.so", "qnn-htp");
    /* the binary missing */
    CHECK(remove(bin_path) == 0);
    open_refused(dir, pdir, bin_path, "No such file");
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    CHECK(system(cmd) == 0);
    TEST_MAIN_END();
}
