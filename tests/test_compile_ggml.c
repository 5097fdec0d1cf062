/* Packages of GGML-block models (q4_0, q8_0 random llamas) with f32
 * activations: vnpu's prefill matmuls take the fused GGML path (activations
 * quantized once per input and shared by q / k / v, gate and up in one
 * pack, the gating and output conversion per unit of columns) and the
 * chunks before the last skip the logits (out_rows -1). The logits of every
 * prompt length around the chunk size, and of the decode steps after it,
 * match the plain CPU path; the context binary holds the weights once.
 * With --output-weights q4_0 the package equals, bit for bit, the CPU path
 * of the same model with its output matrix requantized to q4_0 by the
 * reference quantizer (a GGUF this test writes), and its binary is smaller
 * by exactly the bytes that saves. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "package_compare.h"
#include "compiler/compiler.h"
#include "kernels/dtype.h"
#include "format/gguf.h"
#include "format/graph_file.h"
#include "llm/runner.h"

#define CHUNK 32

/* src with tensor `name` requantized to q4_0 through floats, written to dst;
 * returns the bytes saved, or -1 */
static long long requantize_to(const char *src, const char *dst, const char *name) {
    char err[512];
    npl_gguf *g = npl_gguf_open(src, NULL, err, sizeof err);
    npl_gguf_writer *w = npl_gguf_writer_new();
    void *conv = NULL;
    long long saved = -1;
    if (!g || !w || npl_gguf_copy_kv(w, g, NULL, err, sizeof err)) goto out;
    for (int64_t i = 0; i < npl_gguf_n_tensors(g); i++) {
        const npl_gguf_tensor *t = npl_gguf_tensor_at(g, i);
        const void *data = t->data;
        size_t size = t->size;
        int type = t->type;
        if (!strcmp(t->name, name) && t->type == NPL_TYPE_Q4_0) saved = 0; /* kept as it is, as the compiler does */
        if (!strcmp(t->name, name) && t->type != NPL_TYPE_Q4_0) {
            const int64_t k = t->ne[0], rows = t->ne[1] * t->ne[2] * t->ne[3];
            size_t row_src = 0, row_dst = 0;
            CHECK_EQ_INT(npl_row_size((npl_type)t->type, k, &row_src) | npl_row_size(NPL_TYPE_Q4_0, k, &row_dst), 0);
            float *f = malloc(sizeof(float) * (size_t)k);
            conv = malloc(row_dst * (size_t)rows);
            for (int64_t r = 0; r < rows; r++) {
                npl_type_get((npl_type)t->type)->to_float((const char *)t->data + (size_t)r * row_src, f, k);
                npl_type_get(NPL_TYPE_Q4_0)->from_float(f, (char *)conv + (size_t)r * row_dst, k);
            }
            free(f);
            data = conv, size = row_dst * (size_t)rows, type = NPL_TYPE_Q4_0;
            saved = (long long)(t->size - size);
        }
        if (npl_gguf_writer_add_tensor(w, t->name, type, t->n_dims, t->ne, data, size)) goto out;
    }
    if (npl_gguf_writer_write(w, dst, err, sizeof err)) saved = -1;
out:
    if (saved < 0) fprintf(stderr, "requantize %s: %s\n", src, err);
    npl_gguf_writer_free(w);
    npl_gguf_close(g);
    free(conv);
    return saved;
}

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

    /* a 4-bit output matrix: the package against the CPU path of the GGUF
     * requantized the same way */
    char model4[400], dir4[320], path4[1400];
    snprintf(model4, sizeof model4, "%s_out4.gguf", dir);
    snprintf(dir4, sizeof dir4, "%s_out4", dir);
    const long long saved = requantize_to(model, model4, "output.weight");
    CHECK(saved >= 0);
    p.output_weights = NPL_TYPE_Q4_0;
    CHECK_EQ_INT(npl_compile(model, dir4, &p, err, sizeof err), 0);
    npl_runner *cpu = npl_runner_open(model4, &rp, err, sizeof err);
    npl_runner *pkg = npl_runner_open(dir4, &rp, err, sizeof err);
    CHECK(cpu != NULL && pkg != NULL);
    if (cpu && pkg) {
        double e = package_compare(cpu, pkg, CHUNK + 1, 3, npl_runner_hparams(cpu)->n_vocab, 37, 11);
        printf("%s: --output-weights q4_0: max |logit diff| %.3g vs the CPU path with that matrix\n", file, e);
        CHECK(e < 1e-3);
    }
    npl_runner_close(pkg);
    npl_runner_close(cpu);
    struct stat s4;
    snprintf(path4, sizeof path4, "%s/accel_0.bin", dir4);
    CHECK_EQ_INT(stat(path4, &s4), 0);
    printf("%s: --output-weights q4_0: context binary %lld bytes (%lld fewer; the matrix in q4_0 saves %lld)\n", file,
           (long long)s4.st_size, (long long)(sb.st_size - s4.st_size), saved);
    CHECK_EQ_INT(sb.st_size - s4.st_size, saved);

    char cmd[1400];
    snprintf(cmd, sizeof cmd, "rm -rf %s %s %s", dir, dir4, model4);
    CHECK_EQ_INT(system(cmd), 0);
}

int main(void) {
    const char *data = getenv("NPL_TEST_DATA");
    one_model(data ? data : "data", "rand-llama-q4_0.gguf");
    one_model(data ? data : "data", "rand-llama-q8_0.gguf");
    TEST_MAIN_END();
}
