/* Packages of GGML-block models (q4_0, q8_0 random llamas) with f32
 * activations: vnpu's prefill matmuls take the fused GGML path (activations
 * quantized once per input and shared by q / k / v, gate and up in one
 * pack, the gating and output conversion per unit of columns) and the
 * chunks before the last skip the logits (out_rows -1). The logits of every
 * prompt length around the chunk size, and of the decode steps after it,
 * match the plain CPU path; the context binary holds the weights once. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "package_compare.h"
#include "compiler/compiler.h"
#include "llm/runner.h"

#define CHUNK 32

static void one_model(const char *data, const char *file) {
    char model[1024], dir[300], path[1400], err[1024];
    snprintf(model, sizeof model, "%s/models/%s", data, file);
    snprintf(dir, sizeof dir, "/tmp/npl_test_compile_ggml_%d", (int)getpid());
    npl_compile_params p = npl_compile_default_params();
    p.chunk = CHUNK;
    p.act = NPL_ACT_F32;
    p.force = 1;
    CHECK_EQ_INT(npl_compile(model, dir, &p, err, sizeof err), 0);
    if (npl_test_failures) {
        fprintf(stderr, "compile %s: %s\n", file, err);
        return;
    }
    npl_runner_params rp = npl_runner_default_params();
    rp.n_ctx = 256;
    rp.n_threads = 2;
    const int lens[] = {1, 17, CHUNK - 1, CHUNK, CHUNK + 1, 3 * CHUNK + 5};
    for (size_t i = 0; i < sizeof lens / sizeof lens[0]; i++) {
        npl_runner *cpu = npl_runner_open(model, &rp, err, sizeof err);
        CHECK(cpu != NULL);
        npl_runner *pkg = npl_runner_open(dir, &rp, err, sizeof err);
        CHECK(pkg != NULL);
        if (!cpu || !pkg) {
            fprintf(stderr, "open: %s\n", err);
            npl_runner_close(cpu);
            npl_runner_close(pkg);
            break;
        }
        double e = package_compare(cpu, pkg, lens[i], 3, npl_runner_hparams(cpu)->n_vocab, 37, 11);
        printf("%s: prompt %3d + 3 decode steps: max |logit diff| %.3g (f32 activations)\n", file, lens[i], e);
        CHECK(e < 1e-3);
        npl_runner_close(pkg);
        npl_runner_close(cpu);
    }
    struct stat sb, sm;
    snprintf(path, sizeof path, "%s/accel_0.bin", dir);
    CHECK_EQ_INT(stat(path, &sb), 0);
    CHECK_EQ_INT(stat(model, &sm), 0);
    printf("%s: context binary %lld bytes, model %lld bytes\n", file, (long long)sb.st_size, (long long)sm.st_size);
    CHECK(sb.st_size < sm.st_size * 1.1 + 65536);
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    CHECK_EQ_INT(system(cmd), 0);
}

int main(void) {
    const char *data = getenv("NPL_TEST_DATA");
    one_model(data ? data : "data", "rand-llama-q4_0.gguf");
    one_model(data ? data : "data", "rand-llama-q8_0.gguf");
    TEST_MAIN_END();
}
