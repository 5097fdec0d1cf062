/* npullm compile: GGUF model -> package (graph file + context binary +
 * config.json) for the accelerator.
 *
 * SIGINT, SIGTERM and SIGHUP are blocked in every thread and taken by one
 * thread in sigwait, which is an ordinary thread, not a handler: it removes
 * the compile's temp directory through the guard and exits 128 + signal at
 * once, whatever stage the compile is in. */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli_util.h"
#include "commands.h"
#include "npullm_compile.h"

static const char *USAGE =
    "usage: npullm compile -m MODEL.gguf -o PKG [--chunk N] [--ctx N] [--act f16|fp16|bf16|int16|f32]\n"
    "                      [--weights keep|q4|q8|w8|w4] [--output-weights T] [--calib FILE] [-t N] [--keep-intermediate]\n"
    "                      [--force] [--no-check] [--weight-sharing] [--tolerance X] [--target NAME] [--soc NAME] [--plugin-dir DIR]\n"
    "                      [--keep-f32 CLASSES] [--buckets LIST] [--split-layers] [--tied-lookup npu|cpu]\n"
    "  --chunk N     prefill graph size (AR-N), default 128; decode uses AR-1\n"
    "  --ctx N       KV cache positions, default the model's capped at 4096\n"
    "  --buckets LIST  AR-1 (and AR-N) graphs that read only the first L cache rows, for each L\n"
    "                of the comma list (below --ctx; \"none\": only the graphs over all of them);\n"
    "                default 512,1024,2048,... below --ctx. Each step runs the smallest that\n"
    "                holds its positions\n"
    "  --act P       activation precision inside the accelerator graphs (default f16; fp16 = f16)\n"
    "  --weights W   keep: f32/f16/bf16/q4_0/q8_0 as they are, others to q8_0 (default; for\n"
    "                qnn-htp, which takes no GGML blocks, a quantized model gets w8);\n"
    "                q4 / q8: every matmul weight to q4_0 / q8_0 (GGML blocks, vnpu);\n"
    "                w8 / w4: int8 / 4-bit with a scale per output channel (QNN HTP's integer\n"
    "                weights); the summary gives the requantization error per tensor class\n"
    "  --calib FILE  UTF-8 text whose tokens drive the check's CPU samples (default: fixed ids);\n"
    "                an empty file or one that is not text is refused, nothing written\n"
    "  --output-weights T  the output (logits) matrix as q4_0, q5_0 or q8_0 (default keep:\n"
    "                as --weights says); decode reads it once per token, so a 4-bit one\n"
    "                makes a package's decode faster at some cost in logit accuracy\n"
    "  --tolerance X relative RMS error of a lowered graph against the CPU samples above\n"
    "                which its subgraph stays on the CPU (default 0.25)\n"
    "  --keep-f32 CLASSES  comma list of tensor classes whose activations stay f32 whatever\n"
    "                --act says, to find which roundings cost agreement with the CPU path:\n"
    "                norm_in, qkv, qknorm, rope, attn, o, post, gu, glu, down, other\n"
    "  --force       replace PKG if it is an npullm package; anything else there is refused\n"
    "  --weight-sharing  the target stores each weight once for all graphs of a binary (qnn-htp:\n"
    "                a package for a device; QNN's x86 emulator cannot load it, so the check runs\n"
    "                the graphs before serialization and running it here is refused)\n"
    "  --target NAME the accelerator to compile for: the plugin libnpl_accel_NAME.so next to\n"
    "                the npullm executable (or in --plugin-dir); default %s. Ops it refuses\n"
    "                stay on the CPU; the package names it, and running it loads that plugin\n"
    "  --soc NAME    the target's device (qnn-htp: a Snapdragon SoC such as SM8650); an unknown\n"
    "                name is refused with the known ones listed\n"
    "  --plugin-dir DIR  look for the target's plugin only in DIR\n"
    "  --split-layers  one subgraph per decoder layer and one for the output head: the\n"
    "                summary's check errors are then a per-layer error report against the\n"
    "                CPU path (intermediate/npu_postreat.json with --keep-intermediate); a\n"
    "                diagnostic package, one accelerator op per layer\n"
    "  --tied-lookup npu|cpu  qnn-htp, a tied embedding / output matrix: npu (default; --weights\n"
    "                w8, fp16 activations) looks its rows up on the NPU in the output matmul's int8\n"
    "                table, so the package holds the matrix once; cpu looks them up on the CPU in\n"
    "                the GGUF's exact rows, the matrix twice, more accurate (Gemma 3 270M:\n"
    "                perplexity +1.26 %% of the CPU path's against -0.56 %%); w4, int16,\n"
    "                --split-layers and --output-weights always look up on the CPU\n";

typedef struct {
    sigset_t set;
    npl_compile_guard *g;
    atomic_int caught; /* set before the abort: the compile's "interrupted" is ours to report */
} sig_waiter;

static void *wait_signals(void *arg) {
    sig_waiter *w = arg;
    int sig;
    if (sigwait(&w->set, &sig)) return NULL;
    atomic_store(&w->caught, 1);
    /* nothing of the compile stays on disk, and it writes nothing more */
    int finished = npl_compile_guard_abort(w->g);
    const char *name = sig == SIGINT ? "SIGINT" : sig == SIGTERM ? "SIGTERM" : "SIGHUP";
    fprintf(stderr, "%snpullm compile: interrupted by %s%s\n", isatty(2) ? "\n" : "", name,
            finished ? " after the package was in place" : "; nothing was written");
    _exit(128 + sig);
}

/* Starts the signal thread; 0, or -1 (the compile then runs with the
 * default dispositions). */
static int catch_signals(sig_waiter *w) {
    pthread_t t;
    static const int sigs[] = {SIGINT, SIGTERM, SIGHUP};
    sigemptyset(&w->set);
    for (int i = 0; i < 3; i++) {
        struct sigaction old;
        /* one the parent ignores (nohup, a background job's SIGINT) stays ignored */
        if (sigaction(sigs[i], NULL, &old) == 0 && old.sa_handler != SIG_IGN) sigaddset(&w->set, sigs[i]);
    }
    if (!(w->g = npl_compile_guard_new())) return -1;
    if (pthread_sigmask(SIG_BLOCK, &w->set, NULL)) return -1;
    if (pthread_create(&t, NULL, wait_signals, w)) {
        pthread_sigmask(SIG_UNBLOCK, &w->set, NULL);
        return -1;
    }
    pthread_detach(t);
    return 0;
}

int npl_cmd_compile(int argc, char **argv) {
    const char *model = NULL, *out = NULL, *v;
    npl_compile_options p = npl_compile_default_options();
    long long x;
    static const cli_opt OPTS[] = {
        {"-m", "--model", 1}, {"-o", "--output", 1}, {"--chunk", NULL, 1}, {"--ctx", "-c|--ctx-size", 1},
        {"-t", "--threads", 1}, {"--act", NULL, 1}, {"--tolerance", NULL, 1}, {"--weights", NULL, 1},
        {"--output-weights", NULL, 1}, {"--keep-f32", NULL, 1}, {"--keep-intermediate", NULL, 0}, {"--force", NULL, 0},
        {"--no-check", NULL, 0}, {"--weight-sharing", NULL, 0}, {"--calib", NULL, 1}, {"--target", NULL, 1}, {"--soc", NULL, 1}, {"--plugin-dir", NULL, 1},
        {"--buckets", NULL, 1}, {"--split-layers", NULL, 0}, {"--tied-lookup", NULL, 1}, {NULL, NULL, 0}};
    for (int i = 1; i < argc; i++) {
        const char *a;
        int k = cli_next("compile", OPTS, argc, argv, &i, &a, &v);
        if (k == CLI_HELP) { printf(USAGE, p.target); return 0; }
        if (k != CLI_FLAG) return 2;
        if (!strcmp(a, "--keep-intermediate")) p.keep_intermediate = 1;
        else if (!strcmp(a, "--force")) p.force = 1;
        else if (!strcmp(a, "--no-check")) p.check = 0;
        else if (!strcmp(a, "--weight-sharing")) p.weight_sharing = 1;
        else if (!strcmp(a, "--split-layers")) p.split_layers = 1;
        else if (!strcmp(a, "-m")) model = v;
        else if (!strcmp(a, "-o")) out = v;
        else if (!strcmp(a, "--target")) p.target = v;
        else if (!strcmp(a, "--soc")) p.soc = v;
        else if (!strcmp(a, "--calib")) p.calib = v;
        else if (!strcmp(a, "--buckets")) p.buckets = v;
        else if (!strcmp(a, "--tied-lookup")) {
            if (strcmp(v, "npu") && strcmp(v, "cpu")) {
                fprintf(stderr, "npullm compile: --tied-lookup '%s': npu or cpu\n", v);
                return 2;
            }
            p.tied_lookup_cpu = !strcmp(v, "cpu");
        }
        else if (!strcmp(a, "--plugin-dir")) p.plugin_dir = v;
        else if (!strcmp(a, "--keep-f32")) p.keep_f32 = v;
        else if (!strcmp(a, "--chunk")) { if (cli_int("compile", a, v, 1, 1 << 16, &x)) return 2; p.chunk = (int)x; }
        else if (!strcmp(a, "--ctx")) { if (cli_int("compile", a, v, 1, 1 << 20, &x)) return 2; p.n_ctx = (int)x; }
        else if (!strcmp(a, "-t")) { if (cli_int("compile", a, v, 1, 256, &x)) return 2; p.n_threads = (int)x; }
        else if (!strcmp(a, "--act")) {
            if (!strcmp(v, "f16") || !strcmp(v, "fp16")) p.act = NPL_COMPILE_ACT_F16;
            else if (!strcmp(v, "bf16")) p.act = NPL_COMPILE_ACT_BF16;
            else if (!strcmp(v, "f32")) p.act = NPL_COMPILE_ACT_F32;
            else if (!strcmp(v, "int16")) p.act = NPL_COMPILE_ACT_INT16;
            else { fprintf(stderr, "npullm compile: --act: '%s' is not f16, bf16, int16 or f32\n", v); return 2; }
        } else if (!strcmp(a, "--tolerance")) {
            char *end;
            double t = strtod(v, &end);
            if (*end || !(t > 0 && t <= 1e6)) {
                fprintf(stderr, "npullm compile: --tolerance: '%s' is not a number in (0, 1e6]\n", v);
                return 2;
            }
            p.tolerance = t;
        } else if (!strcmp(a, "--weights")) {
            if (!strcmp(v, "keep")) p.weights = NPL_COMPILE_WEIGHTS_KEEP;
            else if (!strcmp(v, "q4")) p.weights = NPL_COMPILE_WEIGHTS_Q4;
            else if (!strcmp(v, "q8")) p.weights = NPL_COMPILE_WEIGHTS_Q8;
            else if (!strcmp(v, "w8")) p.weights = NPL_COMPILE_WEIGHTS_W8;
            else if (!strcmp(v, "w4")) p.weights = NPL_COMPILE_WEIGHTS_W4;
            else { fprintf(stderr, "npullm compile: --weights: '%s' is not keep, q4, q8, w8 or w4\n", v); return 2; }
        } else if (!strcmp(a, "--output-weights")) {
            if (!strcmp(v, "q4_0")) p.output_weights = NPL_COMPILE_OUTPUT_Q4_0;
            else if (!strcmp(v, "q5_0")) p.output_weights = NPL_COMPILE_OUTPUT_Q5_0;
            else if (!strcmp(v, "q8_0")) p.output_weights = NPL_COMPILE_OUTPUT_Q8_0;
            else if (!strcmp(v, "keep")) p.output_weights = NPL_COMPILE_OUTPUT_AS_WEIGHTS;
            else { fprintf(stderr, "npullm compile: --output-weights: '%s' is not q4_0, q5_0, q8_0 or keep\n", v); return 2; }
        }
    }
    if (!model) return cli_missing("compile", "-m MODEL.gguf");
    if (!out) return cli_missing("compile", "-o PKG");
    p.log = stderr;
    p.stall_at = getenv("NPL_TEST_COMPILE_STALL"); /* tests: hold a stage until a signal comes */
    /* static: the signal thread may still use it while the process exits */
    static sig_waiter waiter;
    if (!catch_signals(&waiter)) p.guard = waiter.g;
    char err[1024];
    int rc = npl_compile_model(model, out, &p, err, sizeof err);
    /* a signal came during the compile (even one that finished): the signal
     * thread reports it and exits 128 + signal, so main must not exit first */
    while (atomic_load(&waiter.caught)) pause();
    if (rc != NPL_OK) {
        fprintf(stderr, "npullm compile: %s\n", err);
        return 1;
    }
    return 0;
}
