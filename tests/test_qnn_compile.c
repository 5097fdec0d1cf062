/* npullm compile --target qnn-htp on a tiny random model (issue 16's first
 * slice): the compiler loads libnpl_accel_qnn-htp.so by the target name,
 * asks it about every node (validate_node), lowers what it accepts and
 * finalizes it in QNN's HTP emulator; the package's logits agree with the
 * CPU path. Today the last layer's FFN and the output matrix are lowered
 * (attention's KV cache is a context tensor, which QNN HTP lacks; subgraphs
 * with several outputs stay on the CPU), through the f32 / f16 conversions
 * the adapter inserts and its F16 form of an F32 Gather. */
#include <libgen.h>
#include <unistd.h>

#include "compiler/compiler.h"
#include "llm/runner.h"
#include "package_compare.h"
#include "test_qnn_common.h"

int main(void) {
    (void)qnn_test_api(); /* skips when QNN is not installed */
    const char *data = getenv("NPL_TEST_DATA");
    char model[1024], dir[256], log_path[300], pdir[1024], err[1024], buf[1 << 16] = "", cmd[600];
    snprintf(model, sizeof model, "%s/models/rand-llama-f32.gguf", data ? data : "data");
    snprintf(dir, sizeof dir, "/tmp/npl_test_qnn_compile_%d", (int)getpid());
    snprintf(log_path, sizeof log_path, "%s.log", dir);
    snprintf(pdir, sizeof pdir, "%s", NPL_QNN_PLUGIN);
    dirname(pdir);

    npl_compile_params p = npl_compile_default_params();
    p.n_ctx = 64;
    p.chunk = 8;
    p.n_threads = 2;
    p.target = "qnn-htp";
    p.plugin_dir = pdir;
    /* an unknown SoC: one line naming the known ones, nothing written */
    p.soc = "SM1234";
    CHECK(npl_compile(model, dir, &p, err, sizeof err) != 0);
    CHECK(strstr(err, "unknown SoC 'SM1234'") != NULL && strstr(err, "SM8650") != NULL && !strchr(err, '\n'));
    CHECK(access(dir, F_OK) != 0);
    p.soc = "SM8650"; /* 8 Gen 3 / v75; the package then runs on x86's default device */
    p.log = fopen(log_path, "w");
    CHECK(p.log != NULL);
    int rc = npl_compile(model, dir, &p, err, sizeof err);
    if (p.log) fclose(p.log);
    CHECK_EQ_INT(rc, 0);
    if (rc) fprintf(stderr, "compile: %s\n", err);
    FILE *f = fopen(log_path, "r");
    if (f) buf[fread(buf, 1, sizeof buf - 1, f)] = 0, fclose(f);
    remove(log_path);
    CHECK(strstr(buf, "  target     qnn-htp\n") != NULL);
    CHECK(strstr(buf, "  soc        SM8650\n") != NULL);
    const char *acc = strstr(buf, ": accelerator\n");
    CHECK(acc != NULL);
    CHECK(strstr(buf, "qnn-htp refuses Attention") != NULL); /* named, with the reason */
    CHECK(strstr(buf, "refuses MatMul") == NULL && strstr(buf, "refuses Add") == NULL && strstr(buf, "refuses RmsNorm") == NULL);
    const char *bin = strstr(buf, ".bin: ");
    if (bin) {
        const char *e = strchr(bin, '\n');
        printf("%.*s\n", e ? (int)(e - bin) : 120, bin);
    }

    npl_runner_params rp = npl_runner_default_params();
    rp.n_threads = 2;
    rp.plugin_dir = pdir;
    npl_runner *cpu = npl_runner_open(model, &rp, err, sizeof err);
    npl_runner *pkg = cpu ? npl_runner_open(dir, &rp, err, sizeof err) : NULL;
    if (!pkg) fprintf(stderr, "open: %s\n", err);
    CHECK(cpu != NULL && pkg != NULL);
    if (cpu && pkg) {
        /* a prompt of 11 tokens (one chunk of 8 and a padded one) and 3 decode steps */
        double worst = package_compare(cpu, pkg, 11, 3, npl_runner_hparams(cpu)->n_vocab, 31, 7);
        printf("qnn-htp package vs the CPU path: max |logit diff| %.5f\n", worst);
        CHECK(worst < 0.05);
    }
    npl_runner_close(pkg);
    npl_runner_close(cpu);
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    CHECK(system(cmd) == 0);
    TEST_MAIN_END();
}
