/* npullm compile --target qnn-htp on a tiny random model (issue 16): the
 * compiler loads libnpl_accel_qnn-htp.so by the target name, asks it about
 * every node (validate_node), lowers what it accepts and finalizes it in
 * QNN's HTP emulator. The whole decoder is one accelerator subgraph,
 * attention included (composed in the adapter, the KV caches host buffers
 * shared by the AR-N and AR-1 graphs); only the embedding row lookup stays on
 * the CPU. The package's logits agree with the CPU path for prompts shorter
 * than, equal to and longer than the chunk (8), then 3 decode steps each:
 * max |diff| within 1 % of the largest |logit| (the HTP computes in fp16
 * throughout; the CPU path in f32). Llama, and gemma2 for soft-capped
 * scores and sliding-window layers. Then both again from q8_0 GGUFs with
 * --weights w8: still no matmul on the CPU (rand-gemma2's tied output matrix
 * included: int8 weights give f32 logits through an f16 FullyConnected and a
 * Cast), within 7 % of the largest |logit| (the requantization's error). */
#include <libgen.h>
#include <unistd.h>

#include "compiler/compiler.h"
#include "llm/runner.h"
#include "package_compare.h"
#include "test_qnn_common.h"

static char pdir[1024];

/* compile `name` for qnn-htp (SM8650), check the summary (one accelerator
 * subgraph, the CPU ops named in cpu_ops), then the package against the CPU
 * path for prompts shorter than, equal to and longer than the chunk (8) */
static void compile_and_compare(const char *data, const char *name, npl_weight_prec weights, double tol, int n_cpu_want,
                                const char *const *cpu_ops) {
    char model[1024], dir[256], log_path[300], err[1024], buf[1 << 16] = "", cmd[600];
    snprintf(model, sizeof model, "%s/models/%s", data ? data : "data", name);
    snprintf(dir, sizeof dir, "/tmp/npl_test_qnn_compile_%d", (int)getpid());
    snprintf(log_path, sizeof log_path, "%s.log", dir);
    npl_compile_params p = npl_compile_default_params();
    p.n_ctx = 64;
    p.chunk = 8;
    p.n_threads = 2;
    p.target = "qnn-htp";
    p.plugin_dir = pdir;
    p.soc = "SM8650"; /* 8 Gen 3 / v75; the package then runs on x86's default device */
    p.weights = weights;
    p.log = fopen(log_path, "w");
    CHECK(p.log != NULL);
    int rc = npl_compile(model, dir, &p, err, sizeof err);
    if (p.log) fclose(p.log);
    CHECK_EQ_INT(rc, 0);
    if (rc) fprintf(stderr, "compile: %s\n", err);
    FILE *f = fopen(log_path, "r");
    if (f) buf[fread(buf, 1, sizeof buf - 1, f)] = 0, fclose(f);
    remove(log_path);
    printf("%s, weights %s:\n", name, npl_weight_prec_name(weights));
    CHECK(strstr(buf, "  target     qnn-htp\n") != NULL);
    CHECK(strstr(buf, "  soc        SM8650\n") != NULL);
    CHECK(strstr(buf, ": accelerator\n") != NULL);
    /* one subgraph, attention included; the CPU keeps only what cpu_ops name */
    CHECK(strstr(buf, "  subgraphs  1 found, 1 lowered\n") != NULL);
    CHECK(strstr(buf, "refuses") == NULL);
    const char *ops = strstr(buf, "  ops        ");
    int n_low = 0, n_cpu = -1;
    CHECK(ops && sscanf(ops, "  ops        %d lowered, %d on the CPU", &n_low, &n_cpu) == 2);
    CHECK(n_low > 30);
    CHECK_EQ_INT(n_cpu, n_cpu_want);
    for (int i = 0; i < n_cpu_want; i++) CHECK(strstr(buf, cpu_ops[i]) != NULL);
    /* no matmul on the CPU: the output matrix too (with int8 weights its f32
     * logits come from an f16 FullyConnected and a Cast) */
    CHECK(strstr(buf, " matmul: ") == NULL);
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
        const int n_vocab = npl_runner_hparams(cpu)->n_vocab;
        /* the logits' scale: the CPU path's largest |logit| over a first prompt */
        const float *l0 = npl_runner_forward(cpu, (const int32_t[]){1, 2, 3}, 3, 0, 1, err, sizeof err);
        double big = 0;
        for (int v = 0; l0 && v < n_vocab; v++) big = fmax(big, fabs(l0[v]));
        /* prompts shorter than, equal to and longer than the chunk (one and two
         * full chunks and a padded one), 3 decode steps after each */
        const int lens[4] = {5, 8, 11, 20};
        for (int i = 0; i < 4; i++) {
            double worst = package_compare(cpu, pkg, lens[i], 3, n_vocab, 31, 7 + i);
            printf("  qnn-htp package vs the CPU path, %2d-token prompt + 3 decode steps: max |logit diff| %.5f "
                   "(largest |logit| %.3f)\n", lens[i], worst, big);
            CHECK(big > 0.5 && worst <= tol * big);
        }
    }
    npl_runner_close(pkg);
    npl_runner_close(cpu);
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    CHECK(system(cmd) == 0);
}

int main(void) {
    (void)qnn_test_api(); /* skips when QNN is not installed */
    const char *data = getenv("NPL_TEST_DATA");
    char model[1024], dir[256], err[1024];
    snprintf(model, sizeof model, "%s/models/rand-llama-f32.gguf", data ? data : "data");
    snprintf(dir, sizeof dir, "/tmp/npl_test_qnn_compile_%d", (int)getpid());
    snprintf(pdir, sizeof pdir, "%s", NPL_QNN_PLUGIN);
    dirname(pdir);
    /* an unknown SoC: one line naming the known ones, nothing written */
    npl_compile_params p = npl_compile_default_params();
    p.n_ctx = 64, p.chunk = 8, p.n_threads = 2, p.target = "qnn-htp", p.plugin_dir = pdir, p.soc = "SM1234";
    CHECK(npl_compile(model, dir, &p, err, sizeof err) != 0);
    CHECK(strstr(err, "unknown SoC 'SM1234'") != NULL && strstr(err, "SM8650") != NULL && !strchr(err, '\n'));
    CHECK(access(dir, F_OK) != 0);
    /* fp16 activations for an SoC whose NPU has none (SM7635, the reference's
     * Snapdragon 7s Gen 3): one line naming --act and the SoC, nothing written */
    p.soc = "SM7635";
    for (int a = 0; a < 3; a++) {
        p.act = a == 0 ? NPL_ACT_F16 : a == 1 ? NPL_ACT_BF16 : NPL_ACT_F32;
        err[0] = 0;
        CHECK(npl_compile(model, dir, &p, err, sizeof err) != 0);
        printf("SM7635 --act %s: %s\n", npl_act_prec_name(p.act), err);
        CHECK(!strncmp(err, "--act ", 6) && strstr(err, npl_act_prec_name(p.act)) && strstr(err, "SM7635") &&
              strstr(err, "no fp16") && !strchr(err, '\n'));
        CHECK(access(dir, F_OK) != 0);
    }
    p.act = NPL_ACT_F16;
    static const char *const emb[] = {"get_rows: row lookup in a weight table (embedding)", "softcap: no accelerator op"};
    compile_and_compare(data, "rand-llama-f32.gguf", NPL_WEIGHTS_KEEP, 0.01, 1, emb);
    /* gemma2: soft-capped attention scores, a sliding window of 16 (the
     * 20-token prompt and its decode steps go past it); its final logit
     * soft-cap has no ABI op and stays on the CPU */
    compile_and_compare(data, "rand-gemma2-f32.gguf", NPL_WEIGHTS_KEEP, 0.01, 2, emb);
    /* w8 (int8 per output channel) from q8_0 GGUFs, the tied output matrix of
     * rand-gemma2 included: every matmul on the NPU */
    /* the bound: the requantized decoder's own error against the q8_0 CPU
     * path; with the output matmul still on the CPU (q8_0) these packages
     * were already 0.48 / 19.41 and 0.89 / 14.18 (6.3 %) off */
    compile_and_compare(data, "rand-llama-q8_0.gguf", NPL_WEIGHTS_W8, 0.07, 1, emb);
    compile_and_compare(data, "rand-gemma2-q8_0.gguf", NPL_WEIGHTS_W8, 0.07, 2, emb);
    TEST_MAIN_END();
}
