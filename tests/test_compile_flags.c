/* npullm compile's issue-16 flags on vnpu (rand-llama-f32, chunk 8, ctx 64):
 *   - --weights w8 / w4 (int8 / 4-bit with a scale per output channel): the
 *     summary's requantization error per tensor class equals a
 *     double-precision recomputation from the GGUF's f32 weights, and the
 *     package runs, its logits near the CPU path's (w8 tighter than w4);
 *   - --calib FILE: the samples line names the text; an empty file, one that
 *     is not text (a GGUF) and a missing one are refused with one line, and
 *     nothing is written;
 *   - --chunk larger than --ctx: one line, nothing written. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "compiler/compiler.h"
#include "format/gguf.h"
#include "llm/runner.h"
#include "package_compare.h"

static void read_text(const char *path, char *buf, size_t len) {
    buf[0] = 0;
    FILE *f = fopen(path, "r");
    if (f) buf[fread(buf, 1, len - 1, f)] = 0, fclose(f);
}

/* rel RMS of symmetric per-row quantization to [-qmax-1, qmax] of the f32
 * matrices whose name contains one of parts (NULL-terminated; "^x": starts
 * with x) */
static double ref_error(const npl_gguf *f, const char *const *parts, int qmax) {
    double se = 0, ss = 0;
    for (int64_t i = 0; i < npl_gguf_n_tensors(f); i++) {
        const npl_gguf_tensor *t = npl_gguf_tensor_at(f, i);
        int hit = 0;
        for (int k = 0; parts[k]; k++) /* "^x": a name that starts with x */
            hit |= parts[k][0] == '^' ? !strncmp(t->name, parts[k] + 1, strlen(parts[k] + 1)) : strstr(t->name, parts[k]) != NULL;
        if (!hit || t->n_dims != 2) continue;
        const float *w = t->data;
        for (int64_t r = 0; r < t->ne[1]; r++) {
            double amax = 0;
            for (int64_t c = 0; c < t->ne[0]; c++) amax = fmax(amax, fabs(w[r * t->ne[0] + c]));
            const double d = (float)(amax / qmax);
            for (int64_t c = 0; c < t->ne[0]; c++) {
                const double x = w[r * t->ne[0] + c];
                double q = round(x / d);
                q = q < -qmax - 1 ? -qmax - 1 : q > qmax ? qmax : q;
                se += (q * d - x) * (q * d - x);
                ss += x * x;
            }
        }
    }
    return sqrt(se / ss);
}

/* the summary's figure for class cls ("qkv 0.0040 (6)") */
static double summary_error(const char *log, const char *cls) {
    const char *l = strstr(log, "  requant    ");
    l = l ? strchr(l, ':') : NULL;
    char key[32];
    snprintf(key, sizeof key, " %s ", cls);
    const char *p = l ? strstr(l, key) : NULL;
    return p ? atof(p + strlen(key)) : -1;
}

static int compile(const char *model, const char *dir, npl_compile_params *p, char *log, size_t len, char *err,
                   size_t errlen) {
    char path[400];
    snprintf(path, sizeof path, "%s.log", dir);
    p->log = fopen(path, "w");
    int rc = npl_compile(model, dir, p, err, errlen);
    if (p->log) fclose(p->log);
    p->log = NULL;
    read_text(path, log, len);
    remove(path);
    return rc;
}

int main(void) {
    const char *data = getenv("NPL_TEST_DATA");
    char model[1024], dir[256], err[1024], log[1 << 15], cmd[600], empty[300];
    snprintf(model, sizeof model, "%s/models/rand-llama-f32.gguf", data ? data : "data");
    snprintf(dir, sizeof dir, "/tmp/npl_test_compile_flags_%d", (int)getpid());
    snprintf(empty, sizeof empty, "%s.empty.txt", dir);
    struct stat sb;

    npl_compile_params p = npl_compile_default_params();
    p.n_ctx = 64;
    p.chunk = 8;
    p.n_threads = 2;
    p.act = NPL_ACT_F32; /* the weights' error alone */

    /* refused: one line naming the file / the flag, nothing written */
    FILE *e = fopen(empty, "w");
    if (e) fclose(e);
    const char *bad[][2] = {{empty, "is empty"}, {model, "not text"}, {"/nonexistent/calib.txt", "No such file"}};
    for (int i = 0; i < 3; i++) {
        p.calib = bad[i][0];
        CHECK(npl_compile(model, dir, &p, err, sizeof err) != 0);
        printf("--calib %s: %s\n", bad[i][0], err);
        CHECK(strstr(err, "--calib") && strstr(err, bad[i][0]) && strstr(err, bad[i][1]) && !strchr(err, '\n'));
        CHECK(stat(dir, &sb) != 0);
    }
    remove(empty);
    p.calib = NULL;
    p.chunk = 128;
    CHECK(npl_compile(model, dir, &p, err, sizeof err) != 0 && strstr(err, "larger than the context of 64"));
    CHECK(stat(dir, &sb) != 0 && !strchr(err, '\n'));
    p.chunk = 8;

    npl_gguf *f = npl_gguf_open(model, NULL, err, sizeof err);
    CHECK(f != NULL);
    if (!f) TEST_MAIN_END();
    static const char *const qkv[] = {"attn_q.", "attn_k.", "attn_v.", NULL}, *down[] = {"ffn_down", NULL},
                             *out[] = {"^output.weight", NULL};
    npl_runner_params rp = npl_runner_default_params();
    rp.n_threads = 2;
    double worst[2] = {0, 0};
    for (int v = 0; v < 2; v++) {
        p.weights = v ? NPL_WEIGHTS_W4 : NPL_WEIGHTS_W8;
        p.calib = "/usr/share/common-licenses/GPL-3";
        p.tolerance = 1.0; /* a random model's 4-bit graphs are 27 % off its logits: keep them lowered */
        int rc = compile(model, dir, &p, log, sizeof log, err, sizeof err);
        CHECK_EQ_INT(rc, 0);
        if (rc) fprintf(stderr, "compile: %s\n", err);
        CHECK(strstr(log, "  samples    ") && strstr(log, "tokens of /usr/share/common-licenses/GPL-3"));
        const int qmax = v ? 7 : 127;
        const double rq = ref_error(f, qkv, qmax), rd = ref_error(f, down, qmax), ro = ref_error(f, out, qmax);
        const double sq = summary_error(log, "qkv"), sd = summary_error(log, "down"), so = summary_error(log, "output");
        printf("%s: requant rel RMS qkv %.4f (reference %.5f), down %.4f (%.5f), output %.4f (%.5f)\n",
               v ? "w4" : "w8", sq, rq, sd, rd, so, ro);
        CHECK(fabs(sq - rq) <= 5e-5 + 1e-3 * rq && fabs(sd - rd) <= 5e-5 + 1e-3 * rd && fabs(so - ro) <= 5e-5 + 1e-3 * ro);
        npl_runner *cpu = npl_runner_open(model, &rp, err, sizeof err);
        npl_runner *pkg = cpu ? npl_runner_open(dir, &rp, err, sizeof err) : NULL;
        if (!pkg) fprintf(stderr, "open: %s\n", err);
        CHECK(cpu != NULL && pkg != NULL);
        if (cpu && pkg) worst[v] = package_compare(cpu, pkg, 11, 3, npl_runner_hparams(cpu)->n_vocab, 31, 7);
        printf("%s package vs the CPU path (f32 activations): max |logit diff| %.4f\n", v ? "w4" : "w8", worst[v]);
        npl_runner_close(pkg);
        npl_runner_close(cpu);
        snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
        CHECK(system(cmd) == 0);
    }
    CHECK(worst[0] > 0 && worst[0] < worst[1]); /* 4 bits cost more than 8 */
    npl_gguf_close(f);
    TEST_MAIN_END();
}
