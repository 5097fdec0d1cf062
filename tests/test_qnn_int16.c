/* npullm compile --target qnn-htp --act int16 (issue 16): uint16 activations
 * with a static scale / offset per tensor, their ranges calibrated by the
 * CPU path over the built-in calibration text, on tiny random llama and
 * gemma2 models (w8 weights, SM8650 in QNN's x86 emulator).
 *
 * Tolerance, from the arithmetic rather than from a run. The int16 package
 * and the fp16/w8 package compiled from the same model have the same weights
 * (w8) and the same fp16 islands (norms, RoPE, attention, GLU; residual f32);
 * they differ only in the matmuls' inputs and outputs, rounded to a uint16
 * grid over their calibrated range R = hi - lo, widened 2x (lower.c's
 * INT16_HEADROOM), instead of to fp16. Uniform rounding to the uint16 step
 * 2R / 65535 has rms 2R / (65535 sqrt 12) = R / 113,500; fp16 rounding
 * (relative error up to 2^-11) has rms about x_rms * 2^-11 / sqrt 3 =
 * x_rms / 3547. The uint16 noise is the smaller while R < 32 x_rms, and a
 * random model's activations span R ~ 10 x_rms (4-5 sigma each side). So the int16 package's error against the CPU path is at most
 * the fp16/w8 package's plus a part no larger than the fp16 rounding of the
 * same tensors, itself part of that package's error: max |diff| <= 2 x the
 * fp16/w8 package's max |diff|, measured here on the same prompts. A wrong
 * scale, offset or sign convention, a clipped range or a tensor left
 * unconverted gives errors of the logits' own size and fails it.
 * Top-1: where the CPU path's best logit leads the runner-up by more than
 * 2 x that tolerance, no error within it can change the argmax, so the
 * int16 package must agree there.
 *
 * Bad input: --act f16 for SM7635 (no fp16), an empty and a non-text
 * --calib: one line, nothing written. */
#include <libgen.h>
#include <math.h>
#include <unistd.h>

#include "compiler/compiler.h"
#include "llm/runner.h"
#include "test_qnn_common.h"

static char pdir[1024];
static int chunk = 8;

static int compile(const char *model, const char *dir, npl_act_prec act, const char *soc, const char *calib, int check,
                   char *log, size_t loglen, char *err, size_t errlen) {
    char log_path[300];
    snprintf(log_path, sizeof log_path, "%s.log", dir);
    npl_compile_params p = npl_compile_default_params();
    p.n_ctx = 64, p.chunk = chunk, p.n_threads = 2, p.target = "qnn-htp", p.plugin_dir = pdir, p.soc = soc;
    p.act = act, p.weights = NPL_WEIGHTS_W8, p.calib = calib, p.check = check;
    p.log = fopen(log_path, "w");
    CHECK(p.log != NULL);
    int rc = npl_compile(model, dir, &p, err, errlen);
    if (p.log) fclose(p.log);
    FILE *f = fopen(log_path, "r");
    log[0] = 0;
    if (f) log[fread(log, 1, loglen - 1, f)] = 0, fclose(f);
    remove(log_path);
    if (rc) fprintf(stderr, "compile %s: %s\n", model, err);
    return rc;
}

typedef struct {
    double worst, big;             /* max |logit diff|, the CPU path's largest |logit| */
    int n, n_clear, top1, top1_clear; /* positions; with a clear CPU top-1 (margin > clear); agreeing */
} cmp;

/* The package against the CPU path: prompts of 5, 8, 11 and 20 tokens (shorter
 * than, equal to, longer than the chunk), 3 decode steps after each. */
static cmp compare(npl_runner *cpu, npl_runner *pkg, int n_vocab, double clear) {
    static const int lens[4] = {5, 8, 11, 20};
    char err[512];
    cmp r = {0};
    float *a = malloc(sizeof(float) * (size_t)n_vocab);
    int32_t tok[32];
    for (int c = 0; c < 4; c++) {
        const int n = lens[c];
        for (int i = 0; i < n + 3; i++) tok[i] = (int32_t)((i * 31 + 7 + c) % n_vocab);
        for (int step = 0; step <= 3; step++) {
            const int len = step ? 1 : n, pos0 = step ? n + step - 1 : 0;
            const float *la = npl_runner_forward(cpu, tok + pos0, len, pos0, 1, err, sizeof err);
            CHECK(la != NULL);
            if (!la) break;
            memcpy(a, la, sizeof(float) * (size_t)n_vocab);
            const float *lb = npl_runner_forward(pkg, tok + pos0, len, pos0, 1, err, sizeof err);
            CHECK(lb != NULL);
            if (!lb) {
                fprintf(stderr, "package forward: %s\n", err);
                break;
            }
            int ia = 0, ib = 0;
            for (int v = 0; v < n_vocab; v++) {
                const double d = fabs((double)a[v] - lb[v]);
                if (!(d <= r.worst)) r.worst = d;
                r.big = fmax(r.big, fabs(a[v]));
                if (a[v] > a[ia]) ia = v;
                if (lb[v] > lb[ib]) ib = v;
            }
            double second = -INFINITY;
            for (int v = 0; v < n_vocab; v++)
                if (v != ia) second = fmax(second, a[v]);
            r.n++, r.top1 += ia == ib;
            if (a[ia] - second > clear) r.n_clear++, r.top1_clear += ia == ib;
        }
    }
    free(a);
    return r;
}

static void one_model(const char *data, const char *name) {
    char model[1024], d16[256], dq[256], err[1024], log[1 << 16], cmd[600];
    snprintf(model, sizeof model, "%s/models/%s", data ? data : "data", name);
    snprintf(d16, sizeof d16, "/tmp/npl_test_qnn_int16_f16_%d", (int)getpid());
    snprintf(dq, sizeof dq, "/tmp/npl_test_qnn_int16_%d", (int)getpid());
    printf("%s:\n", name);
    CHECK_EQ_INT(compile(model, d16, NPL_ACT_F16, "SM8650", NULL, 1, log, sizeof log, err, sizeof err), 0);
    CHECK_EQ_INT(compile(model, dq, NPL_ACT_INT16, "SM8650", NULL, 1, log, sizeof log, err, sizeof err), 0);
    /* the whole decoder lowered and checked; the summary says how int16 was made */
    CHECK(strstr(log, "activations int16, weights w8") != NULL);
    CHECK(strstr(log, "  subgraphs  1 found, 1 lowered\n") != NULL);
    CHECK(strstr(log, "refuses") == NULL && strstr(log, "falls back") == NULL);
    const char *i16 = strstr(log, "  int16      static uint16 scale/offset per tensor");
    CHECK(i16 && strstr(i16, "built-in calibration text"));
    const char *ck = strstr(log, "check:");
    if (ck) printf("  int16 compile %.*s\n", (int)(strchr(ck, '\n') - ck), ck);

    npl_runner_params rp = npl_runner_default_params();
    rp.n_threads = 2, rp.plugin_dir = pdir;
    npl_runner *cpu = npl_runner_open(model, &rp, err, sizeof err);
    npl_runner *p16 = cpu ? npl_runner_open(d16, &rp, err, sizeof err) : NULL;
    npl_runner *pq = p16 ? npl_runner_open(dq, &rp, err, sizeof err) : NULL;
    if (!pq) fprintf(stderr, "open: %s\n", err);
    CHECK(cpu && p16 && pq);
    if (cpu && p16 && pq) {
        const int n_vocab = npl_runner_hparams(cpu)->n_vocab;
        const cmp f = compare(cpu, p16, n_vocab, INFINITY);
        const double tol = 2 * f.worst;
        const cmp q = compare(cpu, pq, n_vocab, 2 * tol);
        printf("  fp16/w8 package vs CPU: max |logit diff| %.4f (largest |logit| %.2f), top-1 %d/%d\n", f.worst, f.big,
               f.top1, f.n);
        printf("  int16/w8 package vs CPU: max |logit diff| %.4f (tolerance %.4f = 2 x fp16/w8's), top-1 %d/%d, "
               "%d/%d where the CPU's top-1 leads by > 2 x tolerance\n", q.worst, tol, q.top1, q.n, q.top1_clear, q.n_clear);
        CHECK(f.big > 0.5 && f.worst > 0); /* w8 weights: the packages cannot equal the f32 CPU path */
        CHECK(q.worst <= tol);
        CHECK_EQ_INT(q.top1_clear, q.n_clear);
        CHECK_EQ_INT(q.n, 16);
    }
    npl_runner_close(pq);
    npl_runner_close(p16);
    npl_runner_close(cpu);
    snprintf(cmd, sizeof cmd, "rm -rf %s %s", d16, dq);
    CHECK(system(cmd) == 0);
}

int main(void) {
    (void)qnn_test_api(); /* skips when QNN is not installed */
    const char *data = getenv("NPL_TEST_DATA");
    char model[1024], dir[256], err[1024], log[1 << 16], bad[300];
    snprintf(pdir, sizeof pdir, "%s", NPL_QNN_PLUGIN);
    dirname(pdir);
    snprintf(model, sizeof model, "%s/models/rand-llama-f32.gguf", data ? data : "data");
    snprintf(dir, sizeof dir, "/tmp/npl_test_qnn_int16_bad_%d", (int)getpid());
    snprintf(bad, sizeof bad, "%s.calib", dir);

    /* bad input: one line, nothing written */
    CHECK(compile(model, dir, NPL_ACT_F16, "SM7635", NULL, 0, log, sizeof log, err, sizeof err) != 0);
    printf("--act f16 --soc SM7635: %s\n", err);
    CHECK(strstr(err, "--act f16") && strstr(err, "SM7635") && strstr(err, "no fp16") && !strchr(err, '\n'));
    CHECK(access(dir, F_OK) != 0);
    FILE *f = fopen(bad, "wb");
    CHECK(f != NULL);
    if (f) fclose(f);
    CHECK(compile(model, dir, NPL_ACT_INT16, "SM8650", bad, 0, log, sizeof log, err, sizeof err) != 0);
    printf("empty --calib: %s\n", err);
    CHECK(strstr(err, "--calib") && strstr(err, "is empty") && !strchr(err, '\n'));
    CHECK(access(dir, F_OK) != 0);
    f = fopen(bad, "wb");
    if (f) fwrite("text\0more", 1, 9, f), fclose(f);
    CHECK(compile(model, dir, NPL_ACT_INT16, "SM8650", bad, 0, log, sizeof log, err, sizeof err) != 0);
    printf("non-text --calib: %s\n", err);
    CHECK(strstr(err, "--calib") && strstr(err, "not text") && !strchr(err, '\n'));
    CHECK(access(dir, F_OK) != 0);
    /* a --calib text: the summary names it */
    f = fopen(bad, "wb");
    if (f) fputs("A short calibration text. It has two sentences.\n", f), fclose(f);
    /* int16 for SM7635: QNN's own validation for that SoC refuses the fp16
     * islands (RmsNorm, ElementWiseAdd, ...), which stay on the CPU; every
     * matmul (int16 x w8) is on the NPU */
    CHECK_EQ_INT(compile(model, dir, NPL_ACT_INT16, "SM7635", bad, 0, log, sizeof log, err, sizeof err), 0);
    CHECK(strstr(log, "  soc        SM7635\n") && strstr(log, ": accelerator\n"));
    CHECK(strstr(log, "rms_norm: target qnn-htp refuses RmsNorm") && !strstr(log, "matmul: target qnn-htp refuses"));
    const char *i16 = strstr(log, "  int16      ");
    CHECK(i16 && strstr(i16, bad));
    snprintf(log, sizeof log, "rm -rf %s %s", dir, bad);
    CHECK(system(log) == 0);

    /* a 16-row chunk: QNN's HTP gets a 16-row int16 FullyConnected wrong
     * (rows 2-15 zero; qnn_ops.c lowers it as a MatMul), so the check failed
     * and the decoder fell back to the CPU */
    snprintf(model, sizeof model, "%s/models/rand-gemma2-q8_0.gguf", data ? data : "data");
    chunk = 16;
    CHECK_EQ_INT(compile(model, dir, NPL_ACT_INT16, "SM8650", NULL, 1, log, sizeof log, err, sizeof err), 0);
    CHECK(strstr(log, "  subgraphs  1 found, 1 lowered\n") != NULL && strstr(log, "falls back") == NULL);
    const char *ck = strstr(log, "check:");
    printf("int16 chunk 16 %.*s\n", ck ? (int)(strchr(ck, '\n') - ck) : 0, ck ? ck : "");
    snprintf(log, sizeof log, "rm -rf %s", dir);
    CHECK(system(log) == 0);
    chunk = 8;

    one_model(data, "rand-llama-f32.gguf");
    one_model(data, "rand-gemma2-f32.gguf");
    TEST_MAIN_END();
}
