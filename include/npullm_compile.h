/* npullm compile: a GGUF model into a package for an accelerator (the
 * prefill (AR-N) and decode (AR-1) graphs, lowered through the accelerator
 * ABI of npullm_accel.h, checked against CPU samples, with one context
 * binary per accelerator subgraph; see docs/ARCHITECTURE.md).
 *
 *   npl_compile_options o = npl_compile_default_options();
 *   o.chunk = 64;
 *   if (npl_compile_model("model.gguf", "pkg", &o, err, sizeof err) != NPL_OK) ...
 *
 * The output directory must not exist, or (force) be an npullm package; the
 * package is written beside it and moved into place in one rename, so a
 * failed or interrupted compile leaves nothing behind. */
#ifndef NPULLM_COMPILE_H
#define NPULLM_COMPILE_H

#include <stdio.h>

#include "npullm.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A compile's files on disk until they are in place, shared with a thread
 * that may stop it: after npl_compile_guard_abort returns, nothing of the
 * compile is on disk, it creates nothing more, and npl_compile_model fails
 * at its next step. Safe from any thread, not from a signal handler (wait
 * for signals in a thread with sigwait and call it there). */
typedef struct npl_compile_guard npl_compile_guard;
NPL_API npl_compile_guard *npl_compile_guard_new(void);
NPL_API void npl_compile_guard_free(npl_compile_guard *g);
/* 1 when the package was already in place (the compile had finished). */
NPL_API int npl_compile_guard_abort(npl_compile_guard *g);

/* Activation precision inside the accelerator graphs. */
typedef enum {
    NPL_COMPILE_ACT_F16 = 0, NPL_COMPILE_ACT_BF16 = 1, NPL_COMPILE_ACT_INT16 = 2, NPL_COMPILE_ACT_F32 = 3
} npl_compile_act;
/* Matmul weights: KEEP = f32/f16/bf16/q4_0/q8_0 as they are, others to q8_0
 * (on a target that takes no GGML blocks, qnn-htp, a quantized model gets W8);
 * Q4 / Q8 = GGML q4_0 / q8_0 blocks; W8 / W4 = int8 / 4-bit with a scale per
 * output channel (QNN HTP's integer weights). */
typedef enum {
    NPL_COMPILE_WEIGHTS_KEEP = 0, NPL_COMPILE_WEIGHTS_Q4 = 1, NPL_COMPILE_WEIGHTS_Q8 = 2, NPL_COMPILE_WEIGHTS_W8 = 3,
    NPL_COMPILE_WEIGHTS_W4 = 4
} npl_compile_weights;
/* The output (logits) matrix: AS_WEIGHTS = as `weights` says. */
typedef enum {
    NPL_COMPILE_OUTPUT_AS_WEIGHTS = 0, NPL_COMPILE_OUTPUT_Q4_0 = 1, NPL_COMPILE_OUTPUT_Q5_0 = 2,
    NPL_COMPILE_OUTPUT_Q8_0 = 3
} npl_compile_output;

typedef struct {
    int chunk;                 /* prefill graph size (AR-N), default 128; decode uses AR-1 */
    int n_ctx;                 /* KV cache positions; 0 = the model's, capped at 4096 */
    npl_compile_act act;       /* default F16 */
    npl_compile_weights weights; /* default KEEP */
    npl_compile_output output_weights; /* default AS_WEIGHTS; decode reads this matrix once per token */
    int n_threads;             /* 0 = one per core */
    int check;                 /* verify lowered graphs on CPU samples (default 1) */
    double tolerance;          /* relative RMS error above which a subgraph stays on the CPU; 0 = 0.25 */
    int keep_intermediate;     /* leave stage outputs in PKG/intermediate */
    int force;                 /* replace an existing package (and nothing else) at the output */
    FILE *log;                 /* progress and summary; NULL = silent */
    npl_compile_guard *guard;  /* NULL = one of its own */
    const char *stall_at;      /* test hook "S:D[:MS]": hold stage S at step D for MS ms or until aborted */
    const char *target;        /* accelerator plugin (libnpl_accel_TARGET.so); default the build's ("vnpu") */
    const char *plugin_dir;    /* look for the plugin only here; NULL = next to libnpullm.so / the executable */
    const char *keep_f32;      /* comma list of tensor classes whose activations stay f32 whatever `act`
                                  says (norm_in, qkv, qknorm, rope, attn, o, post, gu, glu, down, other) */
    const char *soc;           /* the target's device option "soc" (qnn-htp: SM8650, ...); NULL = its default */
    const char *calib;         /* UTF-8 text whose tokens drive the check's CPU samples; NULL = built-in ids */
    int weight_sharing;        /* the target's weight sharing between a binary's graphs (qnn-htp: each weight
                                  once; such a binary loads on a device, not in QNN's x86 emulator) */
    const char *buckets;       /* decode KV-length buckets below n_ctx, comma list ("512,1024"), "none";
                                  NULL = 512, 1024, 2048, ... below n_ctx (an AR-1 graph at n_ctx always) */
    int split_layers;          /* one subgraph per decoder layer (and one for the output head), so the
                                  check's error per subgraph is a per-layer error report; a diagnostic:
                                  the package then runs one accelerator op per layer */
    int tied_lookup_cpu;       /* qnn-htp: a tied embedding / output matrix's row lookup; default 0: on the
                                  NPU with the output matmul from its int8 table, the package holding the
                                  matrix once (--weights w8, fp16); 1: on the CPU from the GGUF's exact rows
                                  (the matrix twice: int8 in the binary, the GGUF's in model.gguf; Gemma 3
                                  270M: perplexity +1.26 % of the CPU path's with 0, -0.56 % with 1) */
} npl_compile_options;

NPL_API npl_compile_options npl_compile_default_options(void);
/* Compiles model_path into the package directory out_dir: NPL_OK, or a code
 * with one line in err (NPL_ERR_ARGUMENT for bad options, NPL_ERR_FILE for a
 * bad model or an output that cannot be written or replaced, ...). */
NPL_API npl_status npl_compile_model(const char *model_path, const char *out_dir, const npl_compile_options *o,
                                     char *err, size_t errlen);

#ifdef __cplusplus
}
#endif
#endif
