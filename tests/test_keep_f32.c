/* The compile option keep_f32 (`npullm compile --keep-f32 CLASSES`): naming
 * every tensor class makes an f16-activation package compute what the f32
 * package computes; the summary names the classes; an unknown class is one
 * clear error; and the old NPL_LOWER_F32 environment variable no longer
 * changes the package. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "compiler/compiler.h"
#include "llm/runner.h"
#include "package_compare.h"

#define CHUNK 8
#define ALL "norm_in,qkv,qknorm,rope,attn,o,post,gu,glu,down,other"

/* Largest |logit diff| between two packages over a prompt and 3 decode steps. */
static double compare_dirs(const char *a, const char *b) {
    char err[512];
    npl_runner_params rp = npl_runner_default_params();
    rp.n_ctx = 64;
    rp.n_threads = 2;
    npl_runner *ra = npl_runner_open(a, &rp, err, sizeof err), *rb = ra ? npl_runner_open(b, &rp, err, sizeof err) : NULL;
    double e = 1e30;
    if (ra && rb) e = package_compare(ra, rb, CHUNK + 3, 3, npl_runner_hparams(ra)->n_vocab, 17, 5);
    else fprintf(stderr, "open package: %s\n", err);
    npl_runner_close(ra);
    npl_runner_close(rb);
    return e;
}

static int compile(const char *model, const char *dir, npl_act_prec act, const char *keep, FILE *log, char *err,
                   size_t errlen) {
    npl_compile_params p = npl_compile_default_params();
    p.n_ctx = 64;
    p.chunk = CHUNK;
    p.n_threads = 2;
    p.act = act;
    p.keep_f32 = keep;
    p.log = log;
    const int rc = npl_compile(model, dir, &p, err, errlen);
    if (rc) fprintf(stderr, "compile %s: %s\n", dir, err);
    return rc;
}

int main(void) {
    const char *data = getenv("NPL_TEST_DATA");
    char model[1024], base[128], d32[192], d16[192], dkeep[192], denv[192], err[1024], cmd[1024];
    snprintf(model, sizeof model, "%s/models/rand-llama-f32.gguf", data ? data : "data");
    snprintf(base, sizeof base, "/tmp/npl_test_keep_f32_%d", (int)getpid());
    snprintf(d32, sizeof d32, "%s.f32", base);
    snprintf(d16, sizeof d16, "%s.f16", base);
    snprintf(dkeep, sizeof dkeep, "%s.keep", base);
    snprintf(denv, sizeof denv, "%s.env", base);

    /* an unknown class: one line naming it and the known ones, nothing written */
    CHECK(compile(model, dkeep, NPL_ACT_F16, "qkv,bogus", NULL, err, sizeof err) != 0);
    printf("unknown class: %s\n", err);
    CHECK(strstr(err, "--keep-f32: 'bogus' is not a tensor class") != NULL && strstr(err, "norm_in") != NULL);
    CHECK(access(dkeep, F_OK) != 0);

    CHECK_EQ_INT(compile(model, d32, NPL_ACT_F32, NULL, NULL, err, sizeof err), 0);
    CHECK_EQ_INT(compile(model, d16, NPL_ACT_F16, NULL, NULL, err, sizeof err), 0);
    FILE *log = tmpfile();
    CHECK(log != NULL);
    CHECK_EQ_INT(compile(model, dkeep, NPL_ACT_F16, ALL, log, err, sizeof err), 0);
    char sum[16384] = "";
    if (log) {
        rewind(log);
        sum[fread(sum, 1, sizeof sum - 1, log)] = 0;
        fclose(log);
    }
    CHECK(strstr(sum, "keep-f32   " ALL ": these tensor classes stay f32") != NULL);

    /* the environment no longer reaches the compiler */
    setenv("NPL_LOWER_F32", ALL, 1);
    CHECK_EQ_INT(compile(model, denv, NPL_ACT_F16, NULL, NULL, err, sizeof err), 0);
    unsetenv("NPL_LOWER_F32");

    const double f16_vs_f32 = compare_dirs(d16, d32), keep_vs_f32 = compare_dirs(dkeep, d32);
    const double env_vs_f16 = compare_dirs(denv, d16), env_vs_f32 = compare_dirs(denv, d32);
    printf("max |logit diff|: f16 vs f32 package %.3g; f16 with every class kept f32 vs f32 %.3g\n", f16_vs_f32,
           keep_vs_f32);
    printf("f16 compiled with NPL_LOWER_F32 set: vs f16 %.3g, vs f32 %.3g\n", env_vs_f16, env_vs_f32);
    CHECK(f16_vs_f32 > 1e-4);   /* the comparison can tell the precisions apart */
    CHECK(keep_vs_f32 == 0.0);  /* every class f32: the f32 package's arithmetic */
    CHECK(env_vs_f16 == 0.0);   /* the variable changed nothing */
    CHECK(env_vs_f32 > 1e-4);

    snprintf(cmd, sizeof cmd, "rm -rf %s.f32 %s.f16 %s.keep %s.env", base, base, base, base);
    CHECK_EQ_INT(system(cmd), 0);
    TEST_MAIN_END();
}
