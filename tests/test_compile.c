/* npullm compile on a small random llama: the package runs through the
 * runner at prompt lengths around the chunk size (chunked, padded prefill)
 * plus decode steps and matches the plain CPU path; the context binary
 * holds the weights once; bad input and damaged packages fail clearly. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "package_compare.h"
#include "compiler/compiler.h"
#include "llm/runner.h"

#define CHUNK 16

static int file_size(const char *p, long *out) {
    struct stat sb;
    if (stat(p, &sb)) return -1;
    *out = (long)sb.st_size;
    return 0;
}

int main(void) {
    const char *data = getenv("NPL_TEST_DATA");
    char model[1024], dir[256], path[1400], err[1024];
    snprintf(model, sizeof model, "%s/models/rand-llama-f32.gguf", data ? data : "data");
    snprintf(dir, sizeof dir, "/tmp/npl_test_compile_%d", (int)getpid());

    /* bad input */
    npl_compile_params p = npl_compile_default_params();
    p.n_ctx = 256;
    p.chunk = 0;
    CHECK(npl_compile(model, dir, &p, err, sizeof err) != 0);
    printf("chunk 0: %s\n", err);
    p.chunk = 512;
    CHECK(npl_compile(model, dir, &p, err, sizeof err) != 0 && strstr(err, "larger than the context"));
    printf("chunk > ctx: %s\n", err);
    struct stat sb;
    CHECK(stat(dir, &sb) != 0); /* failed compiles leave nothing */

    /* compile (f32 activations: the comparison is tight) */
    p.chunk = CHUNK;
    p.act = NPL_ACT_F32;
    CHECK_EQ_INT(npl_compile(model, dir, &p, err, sizeof err), 0);
    if (npl_test_failures) fprintf(stderr, "compile: %s\n", err);
    CHECK(npl_compile(model, dir, &p, err, sizeof err) != 0 && strstr(err, "already exists"));
    printf("existing dir: %s\n", err);

    npl_runner_params rp = npl_runner_default_params();
    rp.n_ctx = 256;
    rp.n_threads = 2;
    npl_runner *cpu = npl_runner_open(model, &rp, err, sizeof err);
    CHECK(cpu != NULL);
    int lens[] = {1, 5, CHUNK - 1, CHUNK, CHUNK + 1, 2 * CHUNK + 3};
    for (size_t i = 0; cpu && i < sizeof lens / sizeof lens[0]; i++) {
        npl_runner *pkg = npl_runner_open(dir, &rp, err, sizeof err);
        CHECK(pkg != NULL);
        if (!pkg) {
            fprintf(stderr, "open package: %s\n", err);
            break;
        }
        npl_runner_close(cpu);
        cpu = npl_runner_open(model, &rp, err, sizeof err); /* fresh cache */
        int n_vocab = npl_runner_hparams(cpu)->n_vocab;
        double e = package_compare(cpu, pkg, lens[i], 4, n_vocab, 31, 7);
        printf("prompt %3d + 4 decode steps: max |logit diff| %.3g (f32 activations, tolerance 1e-2)\n", lens[i], e);
        CHECK(e < 1e-2);
        npl_runner_close(pkg);
    }
    npl_runner_close(cpu);
    char cmd0[400];

    /* f16 and int16 activations: within the precision's tolerance of the
     * CPU path (measured: f16 0.018, int16 with blocks of 32 0.008; f32
     * above: 0.001) */
    {
        const npl_act_prec acts[2] = {NPL_ACT_F16, NPL_ACT_INT16};
        const double tol[2] = {5e-2, 2e-2};
        for (int a = 0; a < 2; a++) {
            char ad[300], cfg[400], buf[512] = "";
            snprintf(ad, sizeof ad, "%s.%s", dir, npl_act_prec_name(acts[a]));
            npl_compile_params pa = p;
            pa.act = acts[a];
            CHECK_EQ_INT(npl_compile(model, ad, &pa, err, sizeof err), 0);
            if (npl_test_failures) fprintf(stderr, "compile %s: %s\n", npl_act_prec_name(acts[a]), err);
            snprintf(cfg, sizeof cfg, "%s/config.json", ad);
            FILE *cf = fopen(cfg, "r");
            if (cf) {
                buf[fread(buf, 1, sizeof buf - 1, cf)] = 0;
                fclose(cf);
            }
            char want[64];
            snprintf(want, sizeof want, "\"precision\": \"%s\"", npl_act_prec_name(acts[a]));
            CHECK(strstr(buf, want) != NULL);
            for (int li = 0; li < 3; li++) {
                const int len = li == 0 ? 1 : li == 1 ? CHUNK : 2 * CHUNK + 3;
                npl_runner *pkg = npl_runner_open(ad, &rp, err, sizeof err);
                cpu = npl_runner_open(model, &rp, err, sizeof err);
                CHECK(pkg != NULL && cpu != NULL);
                if (pkg && cpu) {
                    double e = package_compare(cpu, pkg, len, 4, npl_runner_hparams(cpu)->n_vocab, 31, 7);
                    printf("%s activations, prompt %3d + 4 decode steps: max |logit diff| %.3g (tolerance %g)\n",
                           npl_act_prec_name(acts[a]), len, e, tol[a]);
                    CHECK(e < tol[a]);
                }
                npl_runner_close(pkg);
                npl_runner_close(cpu);
            }
            snprintf(cmd0, sizeof cmd0, "rm -rf %s", ad);
            CHECK_EQ_INT(system(cmd0), 0);
        }
    }

    /* a check that fails leaves its subgraph on the CPU, and the package
     * still computes what the CPU path does */
    {
        char fb[300];
        snprintf(fb, sizeof fb, "%s.fallback", dir);
        npl_compile_params pf = p;
        pf.tolerance = 1e-12;
        CHECK_EQ_INT(npl_compile(model, fb, &pf, err, sizeof err), 0);
        npl_runner *pkg = npl_runner_open(fb, &rp, err, sizeof err);
        cpu = npl_runner_open(model, &rp, err, sizeof err);
        CHECK(pkg != NULL && cpu != NULL);
        if (pkg && cpu) {
            double e = package_compare(cpu, pkg, CHUNK + 1, 4, npl_runner_hparams(cpu)->n_vocab, 31, 7);
            printf("all on the CPU after a failed check: max |logit diff| %.3g\n", e);
            CHECK(e < 1e-4);
        }
        npl_runner_close(pkg);
        npl_runner_close(cpu);
        snprintf(cmd0, sizeof cmd0, "rm -rf %s", fb);
        CHECK_EQ_INT(system(cmd0), 0);
    }

    /* the binary holds the weights once: f32 weights of the layers + output */
    long bin = 0, gguf = 0;
    snprintf(path, sizeof path, "%s/accel_0.bin", dir);
    CHECK_EQ_INT(file_size(path, &bin), 0);
    CHECK_EQ_INT(file_size(model, &gguf), 0);
    printf("context binary %ld bytes, source model %ld bytes (3 graphs)\n", bin, gguf);
    CHECK(bin < gguf * 1.1 + 65536);

    /* damaged packages */
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "cp -r %s %s.bad", dir, dir);
    CHECK_EQ_INT(system(cmd), 0);
    snprintf(path, sizeof path, "%s.bad/accel_0.bin", dir);
    FILE *f = fopen(path, "r+b");
    CHECK(f != NULL);
    if (f) {
        fseek(f, bin / 2, SEEK_SET);
        int c = fgetc(f);
        fseek(f, bin / 2, SEEK_SET);
        fputc(c ^ 0x5a, f);
        fclose(f);
    }
    snprintf(path, sizeof path, "%s.bad", dir);
    npl_runner *r = npl_runner_open(path, &rp, err, sizeof err);
    CHECK(r == NULL);
    printf("flipped byte: %s\n", err);
    npl_runner_close(r);
    snprintf(path, sizeof path, "%s.bad/accel_0.bin", dir);
    CHECK_EQ_INT(truncate(path, bin / 3), 0);
    snprintf(path, sizeof path, "%s.bad", dir);
    r = npl_runner_open(path, &rp, err, sizeof err);
    CHECK(r == NULL);
    printf("truncated: %s\n", err);
    npl_runner_close(r);
    /* a config whose chunk_limits do not match the compiled shapes */
    snprintf(cmd, sizeof cmd, "rm -rf %s.bad && cp -r %s %s.bad && sed -i 's/\"chunk_limits\": \\[%d, 1\\]/\"chunk_limits\": [64, 1]/' %s.bad/config.json",
             dir, dir, dir, CHUNK, dir);
    CHECK_EQ_INT(system(cmd), 0);
    r = npl_runner_open(path, &rp, err, sizeof err);
    CHECK(r == NULL && strstr(err, "chunk_limits"));
    printf("wrong chunk_limits: %s\n", err);
    npl_runner_close(r);

    snprintf(cmd, sizeof cmd, "rm -rf %s %s.bad", dir, dir);
    CHECK_EQ_INT(system(cmd), 0);
    TEST_MAIN_END();
}
