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
 * Cast), within 7 % of the largest |logit| (the requantization's error).
 * rand-gemma2's tied embedding / output matrix at w8: its row lookup runs on
 * the NPU too (one per-tensor int8 table read by the Gather and the
 * FullyConnected, a scale per row as factors), so model.gguf lacks it and,
 * with weight sharing, the package holds it once: against the same compile
 * with the lookup on the CPU, model.gguf is smaller by at least the matrix's
 * GGUF bytes and the binary larger by far less than its int8 bytes. */
#include <sys/stat.h>
#include <libgen.h>
#include <unistd.h>

#include "compiler/compiler.h"
#include "format/gguf.h"
#include "llm/runner.h"
#include "package_compare.h"
#include "test_qnn_common.h"

static char pdir[1024];

/* compile `name` for qnn-htp (SM8650), check the summary (one accelerator
 * subgraph, the CPU ops named in cpu_ops), then the package against the CPU
 * path for prompts shorter than, equal to and longer than the chunk (8) */
static void compile_and_compare(const char *data, const char *name, npl_weight_prec weights, double tol, int n_cpu_want,
                                const char *const *cpu_ops, int tied) {
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
    p.tied_lookup_cpu = !tied; /* the default looks up on the NPU */
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
    /* the default --weights keep on a quantized GGUF: QNN's int8 weights, said in the summary */
    if (weights == NPL_WEIGHTS_KEEP && strstr(name, "q8_0"))
        CHECK(strstr(buf, ", weights w8 (keep would leave every GGML-quantized matmul on the CPU") != NULL);
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
    if (tied) { /* the tied matrix once, in the binary: model.gguf lacks it */
        char mp[300];
        snprintf(mp, sizeof mp, "%s/model.gguf", dir);
        npl_gguf *pf = npl_gguf_open(mp, NULL, err, sizeof err), *mf = npl_gguf_open(model, NULL, err, sizeof err);
        const npl_gguf_tensor *emb = mf ? npl_gguf_find_tensor(mf, "token_embd.weight") : NULL;
        struct stat st;
        CHECK(pf && emb && stat(mp, &st) == 0);
        CHECK(pf && npl_gguf_find_tensor(pf, "token_embd.weight") == NULL);
        CHECK(emb && st.st_size < (off_t)emb->size);
        CHECK(strstr(buf, "  once       token_embd.weight") != NULL && strstr(buf, "  twice") == NULL);
        if (emb) printf("  model.gguf %lld bytes, the tied matrix's GGUF bytes %zu\n", (long long)st.st_size, emb->size);
        npl_gguf_close(pf);
        npl_gguf_close(mf);
    }
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

/* The package sizes of rand-gemma2-q8_0 at w8 with weight sharing (each
 * weight once in the binary), the tied matrix's lookup on the NPU (lookup_cpu
 * 0) or on the CPU: model.gguf's and accel_0.bin's bytes. */
static void tied_sizes(const char *model, int lookup_cpu, off_t *gguf, off_t *bin) {
    char dir[256], err[1024], path[300], cmd[300];
    snprintf(dir, sizeof dir, "/tmp/npl_test_qnn_tied_%d_%d", (int)getpid(), lookup_cpu);
    npl_compile_params p = npl_compile_default_params();
    p.n_ctx = 64, p.chunk = 8, p.n_threads = 2, p.target = "qnn-htp", p.plugin_dir = pdir, p.soc = "SM8650";
    p.weights = NPL_WEIGHTS_W8, p.weight_sharing = 1, p.tied_lookup_cpu = lookup_cpu;
    int rc = npl_compile(model, dir, &p, err, sizeof err);
    CHECK_EQ_INT(rc, 0);
    if (rc) fprintf(stderr, "compile: %s\n", err);
    struct stat st;
    snprintf(path, sizeof path, "%s/model.gguf", dir);
    *gguf = stat(path, &st) == 0 ? st.st_size : -1;
    snprintf(path, sizeof path, "%s/accel_0.bin", dir);
    *bin = stat(path, &st) == 0 ? st.st_size : -1;
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    CHECK(system(cmd) == 0);
}

static void tied_once(const char *data) {
    char model[1024], err[1024];
    snprintf(model, sizeof model, "%s/models/rand-gemma2-q8_0.gguf", data ? data : "data");
    npl_gguf *mf = npl_gguf_open(model, NULL, err, sizeof err);
    const npl_gguf_tensor *emb = mf ? npl_gguf_find_tensor(mf, "token_embd.weight") : NULL;
    CHECK(emb != NULL);
    if (!emb) return;
    const off_t gguf_bytes = (off_t)emb->size, int8_bytes = (off_t)(emb->ne[0] * emb->ne[1]);
    npl_gguf_close(mf);
    off_t g_npu, b_npu, g_cpu, b_cpu;
    tied_sizes(model, 0, &g_npu, &b_npu);
    tied_sizes(model, 1, &g_cpu, &b_cpu);
    printf("weight sharing, tied matrix %lld int8 bytes (%lld in the GGUF): lookup on the NPU model.gguf %lld + "
           "accel_0.bin %lld, on the CPU %lld + %lld\n", (long long)int8_bytes, (long long)gguf_bytes, (long long)g_npu,
           (long long)b_npu, (long long)g_cpu, (long long)b_cpu);
    CHECK(g_npu > 0 && b_npu > 0 && g_cpu > 0 && b_cpu > 0);
    CHECK(g_cpu - g_npu >= gguf_bytes); /* model.gguf lost its copy */
    CHECK(b_npu - b_cpu < int8_bytes / 4); /* the binary did not gain a second one */
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
    compile_and_compare(data, "rand-llama-f32.gguf", NPL_WEIGHTS_KEEP, 0.01, 1, emb, 0);
    /* gemma2: soft-capped attention scores, a sliding window of 16 (the
     * 20-token prompt and its decode steps go past it); its final logit
     * soft-cap has no ABI op and stays on the CPU */
    compile_and_compare(data, "rand-gemma2-f32.gguf", NPL_WEIGHTS_KEEP, 0.01, 2, emb, 0);
    /* w8 (int8 per output channel) from q8_0 GGUFs, the tied output matrix of
     * rand-gemma2 included: every matmul on the NPU */
    /* the bound: the requantized decoder's own error against the q8_0 CPU
     * path; with the output matmul still on the CPU (q8_0) these packages
     * were already 0.48 / 19.41 and 0.89 / 14.18 (6.3 %) off */
    compile_and_compare(data, "rand-llama-q8_0.gguf", NPL_WEIGHTS_KEEP, 0.07, 1, emb, 0); /* the default: w8 */
    /* rand-gemma2's tied matrix: the lookup on the NPU, only the soft-cap on the CPU */
    compile_and_compare(data, "rand-gemma2-q8_0.gguf", NPL_WEIGHTS_W8, 0.07, 1, emb + 1, 1);
    tied_once(data);
    TEST_MAIN_END();
}
