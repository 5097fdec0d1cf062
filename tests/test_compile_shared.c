/* A tied embedding / output matrix is stored once in a package (issue 16):
 * rand-gemma2-q8_0 (no output.weight: the logits use token_embd) compiled
 * for vnpu, whose context binary keeps GGML blocks as they are, reads its
 * embedding rows from accel_0.bin, and model.gguf holds no copy:
 *   - the package's files add up to the GGUF's weights plus at most 15 %
 *     (graph, metadata, the binary's headers) — with the embedding twice
 *     they would be 30 % over;
 *   - its logits equal what a package with the embedding in model.gguf
 *     gives (--output-weights q4_0 makes the two differ in type: stored
 *     twice, and the summary says so);
 *   - config.json lists the binary's size and checksum and the shared weight;
 *   - a truncated, corrupted or missing accel_0.bin: one line naming it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "compile_logged.h"
#include "compiler/compiler.h"
#include "format/gguf.h"
#include "llm/runner.h"
#include "package_compare.h"

static long fsize(const char *dir, const char *name) {
    char p[600];
    struct stat sb;
    snprintf(p, sizeof p, "%s/%s", dir, name);
    return stat(p, &sb) ? -1 : (long)sb.st_size;
}

/* opening the package fails with one line naming accel_0.bin and `what` */
static void refused(const char *dir, const char *what) {
    char err[1024];
    npl_runner_params rp = npl_runner_default_params();
    rp.n_threads = 2;
    npl_runner *r = npl_runner_open(dir, &rp, err, sizeof err);
    CHECK(r == NULL);
    npl_runner_close(r);
    printf("%s: %s\n", what, err);
    CHECK(strstr(err, "accel_0.bin") != NULL && strstr(err, what) != NULL && !strchr(err, '\n'));
}

int main(void) {
    const char *data = getenv("NPL_TEST_DATA");
    char model[1024], dir[256], dir2[300], err[1024], log[1 << 15], cmd[2000], cfg[8192], path[400];
    snprintf(model, sizeof model, "%s/models/rand-gemma2-q8_0.gguf", data ? data : "data");
    snprintf(dir, sizeof dir, "/tmp/npl_test_compile_shared_%d", (int)getpid());
    snprintf(dir2, sizeof dir2, "%s_twice", dir);

    npl_gguf *f = npl_gguf_open(model, NULL, err, sizeof err);
    CHECK(f != NULL);
    if (!f) TEST_MAIN_END();
    CHECK(npl_gguf_find_tensor(f, "output.weight") == NULL); /* tied */
    const npl_gguf_tensor *emb = npl_gguf_find_tensor(f, "token_embd.weight");
    uint64_t weights = 0;
    for (int64_t i = 0; i < npl_gguf_n_tensors(f); i++) weights += npl_gguf_tensor_at(f, i)->size;
    const double emb_bytes = (double)emb->size;
    npl_gguf_close(f);

    npl_compile_params p = npl_compile_default_params();
    p.n_ctx = 64;
    p.chunk = 8;
    p.n_threads = 2;
    CHECK_EQ_INT(compile_logged(model, dir, &p, log, sizeof log), 0);
    CHECK(strstr(log, "shared     token_embd.weight") != NULL && strstr(log, "from accel_0.bin at offset") != NULL);
    long gg = fsize(dir, "model.gguf"), bin = fsize(dir, "accel_0.bin"), cj = fsize(dir, "config.json");
    double total = (double)(gg + bin + cj);
    printf("weights %llu bytes (embedding %.0f); package: model.gguf %ld + accel_0.bin %ld + config.json %ld = %.0f "
           "(%.3f x the weights)\n", (unsigned long long)weights, emb_bytes, gg, bin, cj, total, total / (double)weights);
    CHECK(gg > 0 && bin > 0 && total <= 1.15 * (double)weights);
    CHECK((double)gg < emb_bytes); /* no copy of the embedding on the CPU side */
    snprintf(path, sizeof path, "%s/config.json", dir);
    read_text(path, cfg, sizeof cfg);
    CHECK(strstr(cfg, "\"backend_type\": \"cpu\"") != NULL && strstr(cfg, "\"chunk_limits\": [8, 1]") != NULL);
    CHECK(strstr(cfg, "\"max_context_length\": 64") != NULL && strstr(cfg, "\"fnv1a64\"") != NULL);
    CHECK(strstr(cfg, "\"name\": \"token_embd.weight\"") != NULL);
    char sz[64];
    snprintf(sz, sizeof sz, "\"size\": %ld", bin);
    CHECK(strstr(cfg, sz) != NULL);

    /* a q4_0 output matrix is not the embedding's bytes: stored twice, said so */
    p.output_weights = NPL_TYPE_Q4_0;
    CHECK_EQ_INT(compile_logged(model, dir2, &p, log, sizeof log), 0);
    CHECK(strstr(log, "twice      token_embd.weight") != NULL && strstr(log, "shared     ") == NULL);
    CHECK((double)fsize(dir2, "model.gguf") > emb_bytes);

    npl_runner_params rp = npl_runner_default_params();
    rp.n_threads = 2;
    npl_runner *cpu = npl_runner_open(model, &rp, err, sizeof err);
    npl_runner *pkg = cpu ? npl_runner_open(dir, &rp, err, sizeof err) : NULL;
    if (!pkg) fprintf(stderr, "open: %s\n", err);
    CHECK(cpu != NULL && pkg != NULL);
    if (cpu && pkg) { /* 11 tokens (a chunk of 8 and a padded one) + 3 decode steps */
        double worst = package_compare(cpu, pkg, 11, 3, npl_runner_hparams(cpu)->n_vocab, 31, 7);
        printf("package with the embedding read from accel_0.bin vs the CPU path: max |logit diff| %.4f\n", worst);
        CHECK(worst < 0.5); /* f16 activations on a random model; the check of the compile saw 0.35 */
    }
    npl_runner_close(pkg);
    npl_runner_close(cpu);

    /* the binary damaged: one line naming it, before anything reads it */
    snprintf(path, sizeof path, "%s/accel_0.bin", dir);
    snprintf(cmd, sizeof cmd, "cp %s %s.orig && printf 'X' | dd of=%s bs=1 seek=%ld conv=notrunc status=none", path,
             path, path, bin / 2);
    CHECK(system(cmd) == 0);
    refused(dir, "corrupted");
    CHECK(truncate(path, bin - 100) == 0);
    refused(dir, "truncated");
    CHECK(remove(path) == 0);
    refused(dir, "No such file");
    snprintf(cmd, sizeof cmd, "rm -rf %s %s %s.orig", dir, dir2, path);
    CHECK(system(cmd) == 0);
    TEST_MAIN_END();
}
