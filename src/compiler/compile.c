/* npl_compile: the six stages (see compiler.h). Lowering goes straight into
 * the target through its ABI table (the record-and-replay route is not used
 * yet). */
#include <errno.h>
#include <stdarg.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "compiler/compile_internal.h"
#include "compiler/package_dir.h"
#include "compiler/package_write.h"
#include "compiler/requant.h"
#include "core/fnv.h"
#include "compiler/validate.h"
#include "core/progress.h"
#include "models/model.h"
#include "format/graph_file.h"
#include "llm/tokenizer.h"

#ifndef NPL_DEFAULT_TARGET
#error "the build names the default compile target (CMake NPL_DEFAULT_TARGET)"
#endif

npl_compile_params npl_compile_default_params(void) {
    npl_compile_params p = {.chunk = 128, .act = NPL_ACT_F16, .weights = NPL_WEIGHTS_KEEP, .output_weights = -1,
                            .check = 1, .target = NPL_DEFAULT_TARGET, .tied_lookup_cpu = 0};
    return p;
}

/* A target is a plugin name, not a path: the package must name the same
 * plugin on the machine that runs it. */
static int target_name_ok(const char *t) {
    if (!t || !*t || strlen(t) > 64) return 0;
    for (; *t; t++)
        if (!((*t >= 'a' && *t <= 'z') || (*t >= 'A' && *t <= 'Z') || (*t >= '0' && *t <= '9') || *t == '-' ||
              *t == '_'))
            return 0;
    return 1;
}
const char *npl_act_prec_name(npl_act_prec p) {
    static const char *const n[] = {"f32", "f16", "bf16", "int16"};
    return (unsigned)p < 4 ? n[p] : "?";
}
const char *npl_weight_prec_name(npl_weight_prec p) {
    static const char *const n[] = {"keep", "q4", "q8", "w8", "w4"};
    return (unsigned)p < 5 ? n[p] : "?";
}

double npl_compile_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

int npl_compile_aborted(npl_compile_guard *g) {
    pthread_mutex_lock(&g->mu);
    int a = g->aborted;
    pthread_mutex_unlock(&g->mu);
    return a;
}

int npl_compile_prog(npl_compile_progress *pg, int stage, int done, int total, const char *what) {
    if (stage != pg->stage) {
        double t = npl_compile_now();
        if (pg->stage >= 0) pg->stage_t[pg->stage] = t - pg->t0;
        pg->t0 = t;
        pg->stage = stage;
    }
    char label[48];
    snprintf(label, sizeof label, "[%d/6] %s", stage + 1, what);
    npl_progress_bar(&pg->bar, label, done, total);
    int s, d, ms = 60000;
    if (pg->p->stall_at && sscanf(pg->p->stall_at, "%d:%d:%d", &s, &d, &ms) >= 2 && s == stage + 1 && d == done)
        for (int i = 0; i < ms / 10 && !npl_compile_aborted(pg->g); i++) nanosleep(&(struct timespec){0, 10000000}, NULL);
    return npl_compile_aborted(pg->g);
}

static int write_file(const char *path, const void *data, size_t n, char *err, size_t errlen) {
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(data, 1, n, f) != n || fclose(f)) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        if (f) fclose(f);
        return -1;
    }
    return 0;
}



/* Whether the target takes a STATIC GGML-block (q8_0) weight as it is:
 * asked by creating one (QNN HTP refuses them at creation). */
static int takes_ggml_blocks(const npl_accel_api *api, npl_accel_backend *be, npl_accel_device *dev) {
    npl_accel_context *c = NULL;
    npl_accel_graph *g = NULL;
    if (api->context_create(be, dev, NULL, 0, &c) != NPL_ACCEL_OK) return 1; /* the lowering will say why */
    static const uint8_t block[34]; /* one q8_0 block: f16 scale 0, 32 zeros */
    npl_accel_tensor_desc d = {.name = "q8_0_probe", .kind = NPL_ACCEL_STATIC, .dtype = NPL_ACCEL_DT_Q8_0, .rank = 1,
                               .dims = {32}, .data = block, .data_size = sizeof block};
    npl_accel_tensor_id t;
    const int ok = api->graph_create(c, "q8_0_probe", &g) != NPL_ACCEL_OK || api->tensor_create(g, &d, &t) == NPL_ACCEL_OK;
    api->context_free(c);
    return ok;
}

/* A matmul weight in GGML blocks (quantized), which a target that takes no
 * GGML blocks cannot keep as it is. */
static int has_block_weights(const npl_graph *g) {
    for (int i = 0; i < npl_graph_n_nodes(g); i++) {
        const npl_node *nd = npl_graph_node(g, i);
        if (nd->op != NPL_OP_MATMUL) continue;
        const npl_node *w = npl_graph_node(g, nd->src[0]);
        if (w->op == NPL_OP_WEIGHT && w->type != NPL_TYPE_F32 && w->type != NPL_TYPE_F16 && w->type != NPL_TYPE_BF16)
            return 1;
    }
    return 0;
}

static int shape_index_ok(const shape_case *c, int n, int seq, int n_out, int kv) {
    for (int i = 0; i < n; i++)
        if (c[i].seq == seq && c[i].n_out == n_out && c[i].kv == kv) return 1;
    return 0;
}

int npl_compile(const char *model_path, const char *out_dir, const npl_compile_params *pp, char *err, size_t errlen) {
    npl_compile_params p = pp ? *pp : npl_compile_default_params();
    npl_compile_guard own = {.mu = PTHREAD_MUTEX_INITIALIZER}, *g = p.guard ? p.guard : &own;
    npl_compile_progress pg = {.p = &p, .g = g, .t0 = npl_compile_now(), .stage = -1};
    npl_progress_init(&pg.bar, p.log);
    double t_start = npl_compile_now();
    npl_gguf *f = NULL;
    npl_model_graph mg = {0};
    npl_partition part = {0};
    npl_graph *pkg = NULL;
    npl_gguf_writer *w = NULL;
    npl_lower_weight *wc = NULL;
    seg_result *res = NULL;
    shape_case cases[MAX_SHAPES] = {0};
    int n_cases = 0, n_base = 0, rc = -1, n_nodes = 0, buckets[NPL_MAX_BUCKETS], n_buckets = 0;
    char out[NPL_PKG_PATH_MAX], path[NPL_PKG_PATH_MAX + 64], warn[NPL_PKG_PATH_MAX + 128];
    const char *tmp = g->tmp;
    const npl_accel_api *api = NULL;
    npl_accel_backend *abe = NULL;
    npl_accel_device *dev = NULL; /* the --soc device; NULL = the target's default */
    npl_plugin_rt *rt = NULL;
    npl_pool *pool = NULL; /* one pool for the CPU samples and the target (if it can run on it) */
    char (*refused)[NPL_WHY_LEN] = NULL;
    npl_graph_ext shared[MAX_SHARED];
    char shared_file[MAX_SHARED][32], unshared[MAX_SHARED][128];
    uint64_t shared_bytes[MAX_SHARED];
    int n_shared = 0, n_unshared = 0;
    int32_t *calib_ids = NULL;
    int64_t n_calib = 0;
    float *act_lo = NULL, *act_hi = NULL; /* static int16: per node its calibrated range */
    int n_range_tok = 0;

    if (p.chunk <= 0) {
        snprintf(err, errlen, "--chunk %d: must be positive", p.chunk);
        return -1;
    }
    if (!target_name_ok(p.target)) {
        snprintf(err, errlen, "--target '%.80s': not a plugin name (letters, digits, '-' and '_')",
                 p.target ? p.target : "");
        return -1;
    }
    uint32_t f32_classes;
    if (npl_lower_f32_classes(p.keep_f32, &f32_classes, err, errlen)) return -1;
    /* -o first: refusing it after 20 s of stages wastes the user's time */
    if (npl_pkg_out_prepare(g, out_dir, p.force, out, sizeof out, err, errlen)) return -1;
    size_t calib_len = 0;
    char *calib = p.calib ? npl_calib_read(p.calib, &calib_len, err, errlen) : NULL;
    if (p.calib && !calib) return -1;
    {   /* the target next: a plugin that is missing or broken stops the compile now */
        char dir[4096];
        if (!(pool = npl_pool_new(p.n_threads))) goto oom;
        npl_plugin_rt_params rp = {.base_dir = ".", .plugin_dir = p.plugin_dir, .n_threads = p.n_threads,
                                   .providers = p.providers, .n_providers = p.n_providers, .host_pool = pool};
        if (!rp.plugin_dir && !npl_plugin_default_dir(dir, sizeof dir)) rp.plugin_dir = dir;
        if (!(rt = npl_plugin_rt_new(&rp, err, errlen)) || !(api = npl_plugin_accel_api(rt, p.target, err, errlen)) ||
            !(abe = npl_plugin_accel_backend(rt, api, err, errlen)))
            goto done;
        /* the SoC with the activation type: one without fp16 refuses a float one */
        npl_accel_option so[2] = {{.key = "soc", .value = p.soc}, {.key = "act", .value = npl_act_prec_name(p.act)}};
        npl_accel_status ds = p.soc ? api->device_create(abe, so, 2, &dev) : NPL_ACCEL_OK;
        if (ds == NPL_ACCEL_ERR_HW_UNSUPPORTED && strstr(api->last_error(abe), "no fp16")) {
            snprintf(err, errlen, "--act %s --soc %s: %s", npl_act_prec_name(p.act), p.soc, api->last_error(abe));
            goto done;
        }
        if (ds != NPL_ACCEL_OK) {
            snprintf(err, errlen, "--soc: %s", api->last_error(abe));
            goto done;
        }
    }
    /* 1. graph + IO samples */
    if (npl_compile_prog(&pg, 0, 0, 2, "model graph")) goto done;
    npl_hparams hp;
    if (!(f = npl_gguf_open(model_path, NULL, err, errlen)) || npl_hparams_load(f, &hp, err, errlen)) goto done;
    /* a package whose vocabulary the runtime refuses cannot run: say so now, as
     * run would (a model with no tokenizer at all is a graph for npl_runner) */
    if (npl_gguf_find_key(f, "tokenizer.ggml.model") >= 0) {
        npl_tokenizer *tk = npl_tokenizer_load(f, err, errlen);
        if (!tk) goto done;
        /* the samples' tokens: the calibration text's, cycled (else built-in
         * ids; int16, which calibrates its ranges on them: the built-in text's) */
        const char *ct = calib ? calib : p.act == NPL_ACT_INT16 ? npl_calib_default_text() : NULL;
        const size_t ct_len = calib ? calib_len : ct ? strlen(ct) : 0;
        int64_t nt = ct ? npl_tokenize(tk, ct, ct_len, 1, 0, NULL, 0) : 0;
        if (nt > 0 && (calib_ids = malloc(sizeof(int32_t) * (size_t)nt)))
            n_calib = npl_tokenize(tk, ct, ct_len, 1, 0, calib_ids, nt);
        npl_tokenizer_free(tk);
        if (calib && n_calib <= 0) {
            snprintf(err, errlen, "--calib %s: no tokens", p.calib);
            goto done;
        }
    } else if (calib) {
        snprintf(err, errlen, "--calib %s: %s has no tokenizer to read it with", p.calib, model_path);
        goto done;
    }
    int n_ctx = p.n_ctx > 0 ? p.n_ctx : (hp.n_ctx_train < 4096 ? hp.n_ctx_train : 4096);
    if (p.n_ctx < 0 || p.chunk > n_ctx) {
        snprintf(err, errlen, "--chunk %d is larger than the context of %d", p.chunk, n_ctx);
        goto done;
    }
    if ((n_buckets = npl_compile_buckets(p.buckets, n_ctx, buckets, err, errlen)) < 0 ||
        npl_model_build(f, &hp, n_ctx, &mg, err, errlen))
        goto done;
    n_nodes = npl_graph_n_nodes(mg.g);
    /* int16 on a target without dynamic int16 (QNN): static ranges from the CPU path */
    if (p.act == NPL_ACT_INT16 && npl_calib_static_int16(api, abe, dev)) {
        if (!(act_lo = malloc(sizeof(float) * (size_t)n_nodes)) || !(act_hi = malloc(sizeof(float) * (size_t)n_nodes))) goto oom;
        int32_t fallback[64];
        for (int t = 0; t < 64; t++) fallback[t] = (int32_t)((t * 7919u + 13u) % (unsigned)hp.n_vocab); /* no tokenizer */
        n_range_tok = n_calib ? (int)(n_calib < 1024 ? n_calib : 1024) : 64;
        const int rc_chunk = p.chunk < 64 ? p.chunk : 64;
        if ((n_range_tok = npl_calib_ranges(&mg, &hp, n_calib ? calib_ids : fallback, n_calib ? n_calib : 64, rc_chunk,
                                            n_range_tok, pool, act_lo, act_hi, err, errlen)) < 0)
            goto done;
    }
    {   /* shapes: AR-N (last row), AR-1, AR-N with every row (perplexity, eval),
         * then per bucket AR-1 and (when it holds a chunk) AR-N (last row),
         * sampled with their last row at the bucket's last: the boundary */
        int sizes[MAX_SHAPES][3] = {{p.chunk, 1, 0}, {1, 1, 0}, {p.chunk, p.chunk, 0}}, n_sizes = MAX_BASE;
        for (int b = 0; b < n_buckets; b++) {
            sizes[n_sizes][0] = sizes[n_sizes][1] = 1, sizes[n_sizes++][2] = buckets[b];
            if (buckets[b] >= p.chunk) sizes[n_sizes][0] = p.chunk, sizes[n_sizes][1] = 1, sizes[n_sizes++][2] = buckets[b];
        }
        for (int i = 0; i < n_sizes; i++) {
            if (i == MAX_BASE) n_base = n_cases;
            if (shape_index_ok(cases, n_cases, sizes[i][0], sizes[i][1], sizes[i][2])) continue;
            shape_case *c = &cases[n_cases++];
            c->seq = sizes[i][0];
            c->n_out = sizes[i][1];
            c->kv = sizes[i][2];
            c->tokens = calloc((size_t)c->seq, 4);
            c->pos = calloc((size_t)c->seq, 4);
            c->rows = calloc((size_t)c->n_out, 4);
            if (!c->tokens || !c->pos || !c->rows) goto oom;
            /* prefill at 0..N-1 with the last rows padded; decode right after */
            int base = c->seq == 1 ? p.chunk : 0, valid = c->seq > 4 ? c->seq - 2 : c->seq;
            if (c->seq == 1 && p.chunk >= n_ctx) base = n_ctx - 1;
            if (c->kv) base = c->kv - valid;
            for (int t = 0; t < c->seq; t++) {
                c->tokens[t] = n_calib ? calib_ids[(base + t) % n_calib] : (int32_t)((t * 7919u + 13u) % (unsigned)hp.n_vocab);
                c->pos[t] = t < valid ? base + t : -1;
            }
            for (int r = 0; r < c->n_out; r++) c->rows[r] = c->n_out == 1 ? valid - 1 : r;
        }
    }
    if (!n_buckets) n_base = n_cases;
    if (npl_compile_prog(&pg, 0, 2, 2, "model graph")) goto done;

    /* the output matrix, when it gets a type of its own */
    int out_weight = -1;
    if (p.output_weights >= 0) {
        if (p.output_weights != NPL_TYPE_Q4_0 && p.output_weights != NPL_TYPE_Q5_0 && p.output_weights != NPL_TYPE_Q8_0) {
            snprintf(err, errlen, "output weights: type %s is not q4_0, q5_0 or q8_0", npl_type_name((npl_type)p.output_weights));
            goto done;
        }
        int id = mg.logits;
        const npl_node *nd = npl_graph_node(mg.g, id);
        if (nd->op == NPL_OP_SOFTCAP) nd = npl_graph_node(mg.g, id = nd->src[0]);
        if (nd->op != NPL_OP_MATMUL || npl_graph_node(mg.g, nd->src[0])->op != NPL_OP_WEIGHT) {
            snprintf(err, errlen, "output weights: the logits of %s are not a matmul with a weight matrix", model_path);
            goto done;
        }
        out_weight = nd->src[0];
    }

    npl_accel_dtype act = p.act == NPL_ACT_F32    ? NPL_ACCEL_DT_F32
                          : p.act == NPL_ACT_BF16 ? NPL_ACCEL_DT_BF16
                          : p.act == NPL_ACT_INT16 ? NPL_ACCEL_DT_INT16
                                                  : NPL_ACCEL_DT_F16;
    /* keep on a target that takes no GGML blocks (QNN HTP) would leave every
     * quantized matmul on the CPU, a package with nothing to accelerate: such
     * a model gets the target's int8 weights (w8) instead */
    const int ggml_blocks = takes_ggml_blocks(api, abe, dev);
    int weights_auto = 0;
    if (!ggml_blocks && p.weights == NPL_WEIGHTS_KEEP && has_block_weights(mg.g))
        p.weights = NPL_WEIGHTS_W8, weights_auto = 1;
    /* A tied embedding / output matrix on a target that converts it (takes
     * no GGML blocks: QNN HTP): the row lookup joins the output matmul on the
     * accelerator, so the binary holds the matrix once and model.gguf not at
     * all (lower_tied.c). A target that keeps the GGUF's blocks shares those
     * bytes with the CPU's lookup instead (below: `shared`). */
    int tied = -1, tied_lookup = -1, tied_matmul = -1;
    const char *tied_why = NULL;
    {
        int id = mg.logits;
        const npl_node *nd = npl_graph_node(mg.g, id);
        if (nd->op == NPL_OP_SOFTCAP) nd = npl_graph_node(mg.g, id = nd->src[0]);
        const int w = nd->op == NPL_OP_MATMUL ? nd->src[0] : -1;
        tied_matmul = id;
        for (int i = 0; w >= 0 && i < n_nodes && tied_lookup < 0; i++) {
            const npl_node *x = npl_graph_node(mg.g, i);
            if (x->op == NPL_OP_GET_ROWS && x->src[0] == w) tied_lookup = i;
        }
        if (tied_lookup >= 0 && !ggml_blocks) {
            tied_why = p.tied_lookup_cpu ? "--tied-lookup cpu reads the GGUF's own rows on the CPU (more accurate than the int8 "
                                           "table)"
                       : out_weight >= 0 ? "--output-weights gives the output matrix a type of its own"
                       : p.split_layers ? "--split-layers puts the lookup and the output matmul in different binaries"
                                        : npl_lower_tied_refusal(mg.g, w, p.weights, act);
            if (!tied_why) tied = w;
        }
    }
    /* 2. partition, asking the target about each candidate subgraph's nodes
     * until it takes every node left (each round refuses at least one more) */
    if (npl_compile_prog(&pg, 1, 0, 1, "partition")) goto done;
    wc = calloc((size_t)n_nodes, sizeof(*wc));
    refused = calloc((size_t)n_nodes, sizeof(*refused));
    if (!wc || !refused) goto oom;
    for (;;) {
        if (npl_partition_graph(mg.g, &mg.logits, 1, refused, p.split_layers, tied, &part, err, errlen)) goto done;
        int seq[MAX_SHAPES], nout[MAX_SHAPES];
        for (int c = 0; c < n_base; c++) seq[c] = cases[c].seq, nout[c] = cases[c].n_out; /* buckets: AR-1's ops */
        npl_lower_args la = {.act = act, .wprec = p.weights, .wc = wc, .out_weight = out_weight, .tied = tied,
                             .out_type = (npl_type)p.output_weights, .act_lo = act_lo, .act_hi = act_hi};
        npl_validate_args va = {api, abe, p.target, mg.g, &part, seq, nout, n_base, &la};
        int n_new = npl_validate_segments(&va, refused, err, errlen);
        if (n_new < 0) goto done;
        if (!n_new) break;
        npl_partition_free(&part);
        if (npl_compile_aborted(g)) goto done;
    }
    if (npl_compile_prog(&pg, 1, 1, 1, "partition")) goto done;

    /* 3 + 5. lower per shape, merge into one context per subgraph, check */
    res = calloc((size_t)part.n_segs + 1, sizeof(*res));
    npl_shape *shapes = malloc((size_t)n_nodes * sizeof(npl_shape));
    if (!res || !shapes) {
        free(shapes);
        goto oom;
    }
    /* QNN HTP computes f32 tensors in f16 arithmetic (Qualcomm: "float32
     * graphs ... using float16 math"): the residual stream is lowered at
     * 2^-4 (lower.c), room for Gemma's 1e5 BOS row */
    const float resid_scale = !strcmp(p.target, "qnn-htp") ? 1.0f / 16 : 1.0f;
    int n_kept = 0;
    for (int si = 0; si < part.n_segs; si++) {
        npl_segment *sg = &part.segs[si];
        seg_result *r = &res[si];
        if (!sg->keep) continue;
        npl_accel_context *ctx = NULL, *live = NULL; /* live: kept for the check of a weight-shared binary */
        npl_compile_lower_job job = {api, abe, dev, &p, &pg, si, shapes, cases, n_cases,
                                     {.g = mg.g, .seg = sg, .shapes = shapes, .act = act, .wprec = p.weights, .wc = wc,
                                      .f32_classes = f32_classes, .out_weight = out_weight, .tied = tied,
                                      .out_type = (npl_type)p.output_weights, .act_lo = act_lo, .act_hi = act_hi,
                                      .resid_scale = resid_scale}};
        const int lr = npl_compile_lower_seg(&job, r, &ctx, err, errlen);
        int ok = lr == 0, stop = lr < 0;
        if (ok && !stop) stop = npl_compile_prog(&pg, 2, n_cases, n_cases, "lower + compile per shape");
        r->n_shapes = n_cases;
        if (ok && !stop && (api->context_get_binary_size(ctx, &r->bin_size) != NPL_ACCEL_OK ||
                   !(r->bin = malloc(r->bin_size)) ||
                   api->context_get_binary(ctx, r->bin, r->bin_size, &r->bin_size) != NPL_ACCEL_OK)) {
            snprintf(err, errlen, "%s: context binary: %s", p.target, api->last_error(abe));
            ok = 0;
        }
        for (int c = 0; ok && !stop && c < n_cases; c++) { /* finalize time per graph, as the target measured it */
            npl_accel_graph *ag;
            npl_accel_profile pr;
            if (api->graph_retrieve(ctx, r->names[c], &ag) == NPL_ACCEL_OK && api->graph_get_profile &&
                api->graph_get_profile(ag, &pr) == NPL_ACCEL_OK)
                r->finalize_s[c] = pr.finalize_ns * 1e-9;
        }
        if (ok && !stop) r->checksum = npl_fnv1a64(r->bin, r->bin_size);
        if (ok && !stop && p.check && p.weight_sharing) live = ctx;
        else if (ctx) api->context_free(ctx);
        if (stop) {
            free(shapes);
            goto done;
        }
        if (!ok) {
            /* a subgraph the accelerator refuses stays on the CPU */
            npl_progress_end_line(&pg.bar);
            if (p.log) fprintf(p.log, "warning: subgraph %d stays on the CPU: %s\n", si, err);
            sg->keep = 0;
            snprintf(sg->why, sizeof sg->why, "lowering failed: %.140s", err);
            continue;
        }
        /* check: the binary as the package will hold it, against the CPU samples */
        if (p.check) {
            npl_compile_check_args ca = {api, abe, dev, live, &mg, &hp, sg, cases, n_cases, pool,
                                         p.tolerance > 0 ? p.tolerance : 0.25, /* random ids drive Gemma far off its data */
                                         p.target, &pg};
            int cr = npl_compile_check(&ca, r, err, errlen);
            if (cr < 0) {
                free(shapes);
                goto done;
            }
            if (cr > 0) {
                npl_progress_end_line(&pg.bar);
                if (p.log) fprintf(p.log, "warning: subgraph %d falls back to the CPU: %s\n", si, err);
                sg->keep = 0;
                snprintf(sg->why, sizeof sg->why, "check failed: %.140s", err);
                continue;
            }
        }
        n_kept++;
    }
    free(shapes);

    /* 4. replace: the package graph */
    if (npl_compile_prog(&pg, 4, 0, 1, "replace with plugin ops")) goto done;
    {
        int *seg_of = malloc((size_t)n_nodes * sizeof(int)), *map = malloc((size_t)n_nodes * sizeof(int));
        char *used = calloc((size_t)n_nodes, 1);
        if (!seg_of || !map || !used || !(pkg = npl_graph_new())) {
            free(seg_of); free(map); free(used);
            goto oom;
        }
        for (int i = 0; i < n_nodes; i++) seg_of[i] = -1, map[i] = -1;
        for (int si = 0; si < part.n_segs; si++)
            if (part.segs[si].keep)
                for (int k = 0; k < part.segs[si].n_nodes; k++) seg_of[part.segs[si].nodes[k]] = si;
        used[mg.logits] = 1;
        for (int i = n_nodes - 1; i >= 0; i--) {
            if (!used[i]) continue;
            if (seg_of[i] >= 0) {
                const npl_segment *sg = &part.segs[seg_of[i]];
                for (int k = 0; k < sg->n_inputs; k++) used[sg->inputs[k]] = 1;
                continue;
            }
            const npl_node *nd = npl_graph_node(mg.g, i);
            for (int s = 0; s < nd->n_src; s++) used[nd->src[s]] = 1;
        }
        int bad = 0;
        for (int i = 0; i < n_nodes && !bad; i++) {
            if (!used[i]) continue;
            const npl_node *nd = npl_graph_node(mg.g, i);
            int s[NPL_MAX_SRC];
            if (seg_of[i] >= 0) {
                const npl_segment *sg = &part.segs[seg_of[i]];
                if (sg->outputs[0] != i) continue;
                seg_result *r = &res[seg_of[i]];
                for (int k = 0; k < sg->n_inputs; k++) s[k] = map[sg->inputs[k]];
                int id = npl_plugin(pkg, "accel", sg->n_inputs, s, NPL_TYPE_F32);
                char bin[32];
                snprintf(bin, sizeof bin, "accel_%d.bin", seg_of[i]);
                const char *ins[MAX_SHAPES * NPL_SEG_MAX_IO], *outs[MAX_SHAPES], *names[MAX_SHAPES];
                int64_t ashape[MAX_SHAPES * NPL_SEG_MAX_IO * 4];
                npl_shape *sh = malloc((size_t)n_nodes * sizeof(npl_shape));
                if (!sh) { bad = 1; break; }
                for (int c = 0; c < r->n_shapes && !bad; c++) {
                    names[c] = r->names[c];
                    outs[c] = r->out_names[c];
                    if (npl_infer_all(mg.g, cases[c].seq, cases[c].n_out, sh, err, errlen)) bad = 1;
                    for (int k = 0; k < sg->n_inputs; k++) {
                        ins[c * sg->n_inputs + k] = r->in_names[c][k];
                        for (int d = 0; d < 4; d++) ashape[(c * sg->n_inputs + k) * 4 + d] = sh[sg->inputs[k]].ne[d];
                    }
                    char key[32];
                    snprintf(key, sizeof key, "o_%d_0", c);
                    int64_t one[4];
                    for (int d = 0; d < sh[i].n_dims; d++) one[d] = sh[i].ne[d];
                    npl_attr_set_ints(pkg, id, key, one, sh[i].n_dims);
                }
                free(sh);
                npl_attr_set_str(pkg, id, "path", bin);
                npl_attr_set_str(pkg, id, "accel", p.target);
                /* the runtime opens the binary on the device it was finalized for,
                 * and refuses one of another size or checksum (plugin_accel.c) */
                if (p.soc) npl_attr_set_str(pkg, id, "soc", p.soc);
                const int64_t chk[2] = {(int64_t)r->bin_size, (int64_t)r->checksum};
                npl_attr_set_ints(pkg, id, "binary_check", chk, 2);
                npl_attr_set_strs(pkg, id, "inputs", ins, (int64_t)r->n_shapes * sg->n_inputs);
                npl_attr_set_strs(pkg, id, "outputs", outs, r->n_shapes);
                npl_attr_set_strs(pkg, id, "allGraphName", names, r->n_shapes);
                npl_attr_set_ints(pkg, id, "allInputShape", ashape, (int64_t)r->n_shapes * sg->n_inputs * 4);
                /* buckets: graphs of one input shape told apart by the cache rows
                 * they read; the runtime picks by the positions (input kv_pos_input) */
                int pos_in = -1;
                for (int k = 0; k < sg->n_inputs; k++)
                    if (sg->inputs[k] == mg.pos) pos_in = k;
                if (n_buckets && pos_in >= 0) {
                    int64_t kv[MAX_SHAPES];
                    for (int c = 0; c < r->n_shapes; c++) kv[c] = cases[c].kv;
                    npl_attr_set_ints(pkg, id, "kv_len", kv, r->n_shapes);
                    npl_attr_set_ints(pkg, id, "kv_pos_input", (const int64_t[]){pos_in}, 1);
                }
                if (nd->name) npl_graph_set_name(pkg, id, nd->name);
                map[i] = id;
            } else {
                for (int k = 0; k < nd->n_src; k++) s[k] = map[nd->src[k]];
                map[i] = npl_graph_append_like(pkg, nd, s, nd->name, nd->data);
            }
            if (map[i] < 0) bad = 1;
        }
        free(seg_of); free(map); free(used);
        if (bad || npl_graph_error(pkg)) {
            snprintf(err, errlen, "building the package graph: %s", npl_graph_error(pkg) ? npl_graph_error(pkg) : err);
            goto done;
        }
    }
    if (npl_compile_prog(&pg, 4, 1, 1, "replace with plugin ops")) goto done;

    /* A weight both the CPU side (the embedding lookup) and a lowered graph
     * (the tied output matrix) read: when the context binary holds its bytes
     * unchanged, the CPU side reads them from there and model.gguf does not
     * store them a second time. */
    {
        char *in_seg = calloc((size_t)n_nodes, 1);
        if (!in_seg) goto oom;
        for (int si = 0; si < part.n_segs; si++)
            for (int k = 0; part.segs[si].keep && k < part.segs[si].n_nodes; k++) {
                const npl_node *nd = npl_graph_node(mg.g, part.segs[si].nodes[k]);
                for (int s = 0; s < nd->n_src; s++) in_seg[nd->src[s]] = 1;
            }
        for (int i = 0; i < npl_graph_n_nodes(pkg) && n_shared < MAX_SHARED; i++) {
            const npl_node *nd = npl_graph_node(pkg, i);
            int mi = nd->op == NPL_OP_WEIGHT && nd->name ? npl_graph_find(mg.g, nd->name) : -1;
            size_t row;
            if (mi < 0 || !in_seg[mi] || npl_row_size(nd->type, nd->shape.ne[0], &row)) continue;
            uint64_t bytes = (uint64_t)row * (uint64_t)(nd->shape.ne[1] * nd->shape.ne[2] * nd->shape.ne[3]);
            for (int si = 0; si < part.n_segs; si++) {
                int64_t off = part.segs[si].keep && bytes >= 4096 ? npl_pkg_find_bytes(res[si].bin, res[si].bin_size, nd->data, bytes) : -1;
                if (off < 0) continue;
                snprintf(shared_file[n_shared], sizeof shared_file[0], "accel_%d.bin", si);
                shared[n_shared] = (npl_graph_ext){nd->name, shared_file[n_shared], (uint64_t)off};
                shared_bytes[n_shared++] = bytes;
                break;
            }
            if (!n_shared || strcmp(shared[n_shared - 1].name, nd->name))
                snprintf(unshared[n_unshared++ % MAX_SHARED], sizeof unshared[0], "%.100s (%.2f MiB)", nd->name,
                         bytes / 1048576.0);
        }
        free(in_seg);
    }

    /* 6. write: tmp dir, then rename */
    if (npl_compile_prog(&pg, 5, 0, 3, "write package") || npl_pkg_tmp_create(g, out, err, errlen)) goto done;
    uint64_t total_bin = 0;
    for (int si = 0; si < part.n_segs; si++) {
        if (!part.segs[si].keep) continue;
        snprintf(path, sizeof path, "%s/accel_%d.bin", tmp, si);
        if (write_file(path, res[si].bin, res[si].bin_size, err, errlen)) goto done;
        total_bin += res[si].bin_size;
    }
    if (npl_compile_prog(&pg, 5, 1, 3, "write package")) goto done;
    if (!(w = npl_gguf_writer_new())) goto oom;
    {
        static const char *const skip[] = {"npullm.", NULL};
        int64_t cl[2] = {p.chunk, 1};
        if (npl_gguf_copy_kv(w, f, skip, err, errlen) || npl_graph_file_add_ext(w, pkg, shared, n_shared, err, errlen))
            goto done;
        npl_gguf_writer_set_u32(w, "npullm.package.version", NPL_PACKAGE_VERSION);
        npl_gguf_writer_set_u32(w, "npullm.package.n_ctx", (uint32_t)n_ctx);
        /* the vocabulary size, when model.gguf lacks the embedding (stored once in a binary) */
        if (npl_graph_find(pkg, "token_embd.weight") < 0 || n_shared)
            npl_gguf_writer_set_u32(w, "npullm.package.n_vocab", (uint32_t)hp.n_vocab);
        if (n_buckets) {
            int64_t bk[NPL_MAX_BUCKETS];
            for (int b = 0; b < n_buckets; b++) bk[b] = buckets[b];
            npl_gguf_writer_set_arr(w, "npullm.package.buckets", NPL_GGUF_INT64, bk, (uint64_t)n_buckets);
        }
        npl_gguf_writer_set_arr(w, "npullm.package.chunk_limits", NPL_GGUF_INT64, cl, 2);
        npl_gguf_writer_set_str(w, "npullm.package.precision", npl_act_prec_name(p.act));
        npl_gguf_writer_set_str(w, "npullm.package.weights", npl_weight_prec_name(p.weights));
        npl_gguf_writer_set_str(w, "npullm.package.target", p.target);
        if (p.soc) npl_gguf_writer_set_str(w, "npullm.package.soc", p.soc);
        if (out_weight >= 0)
            npl_gguf_writer_set_str(w, "npullm.package.output_weights", npl_type_name((npl_type)p.output_weights));
        snprintf(path, sizeof path, "%s/model.gguf", tmp);
        if (npl_gguf_writer_write(w, path, err, errlen)) goto done;
    }
    if (npl_compile_prog(&pg, 5, 2, 3, "write package")) goto done;
    {
        npl_pkg_bin bins[64];
        npl_accel_backend_info bi;
        int nb = 0;
        for (int si = 0; si < part.n_segs && nb < 64; si++) {
            if (!part.segs[si].keep) continue;
            npl_pkg_bin *b = &bins[nb++];
            snprintf(b->file, sizeof b->file, "accel_%d.bin", si);
            b->size = res[si].bin_size, b->checksum = res[si].checksum;
            b->n_graphs = res[si].n_shapes, b->graphs = (const char(*)[64])res[si].names;
        }
        const int have_info = api->backend_get_info && api->backend_get_info(abe, &bi) == NPL_ACCEL_OK;
        npl_pkg_config pc = {p.chunk, n_ctx, npl_act_prec_name(p.act), npl_weight_prec_name(p.weights),
                             out_weight >= 0 ? npl_type_name((npl_type)p.output_weights) : NULL, p.target, p.soc,
                             have_info ? bi.available_families : NULL, bins, nb, shared, n_shared, p.weight_sharing,
                             buckets, n_buckets};
        if (npl_pkg_write_config(tmp, &pc, err, errlen)) goto done;
    }
    if (p.keep_intermediate) npl_compile_write_intermediate(tmp, &part, res, mg.g, p.check);
    /* into place: one rename; with --force the old package goes only after */
    if (npl_compile_aborted(g) || npl_pkg_commit(g, out, p.force, warn, sizeof warn, err, errlen)) goto done;
    if (warn[0] && p.log) fprintf(p.log, "warning: %s\n", warn);
    npl_compile_prog(&pg, 5, 3, 3, "write package");
    pg.stage_t[5] = npl_compile_now() - pg.t0;

    if (p.log) {
        npl_compile_report rep = {&p, model_path, out_dir, out, &hp, &mg, wc, n_nodes, n_ctx, n_kept, buckets,
                                  n_buckets, f32_classes, calib, n_calib, act_lo != NULL, n_range_tok, &part, res,
                                  total_bin, shared, shared_bytes, n_shared, (const char(*)[128])unshared, n_unshared,
                                  pg.stage_t, t_start, tied, tied_lookup, tied_matmul, tied_why, resid_scale,
                                  weights_auto};
        npl_compile_summary(p.log, &rep);
    }
    rc = 0;
    goto done;
oom:
    snprintf(err, errlen, "out of memory");
done:
    npl_progress_end_line(&pg.bar);
    npl_pkg_tmp_remove(g);
    if (rc && npl_compile_aborted(g)) snprintf(err, errlen, "interrupted");
    npl_gguf_writer_free(w);
    npl_graph_free(pkg);
    if (res)
        for (int si = 0; si < part.n_segs; si++) free(res[si].bin);
    free(res);
    npl_lower_weights_free(wc, n_nodes);
    free(refused);
    npl_partition_free(&part);
    if (dev) api->device_free(dev);
    npl_plugin_rt_free(rt); /* the target's backend with it */
    npl_pool_free(pool);    /* after the backend that may run on it */
    npl_graph_free(mg.g);
    npl_gguf_close(f);
    free(calib);
    free(calib_ids);
    free(act_lo);
    free(act_hi);
    for (int c = 0; c < MAX_SHAPES; c++) {
        free(cases[c].tokens);
        free(cases[c].pos);
        free(cases[c].rows);
    }
    return rc;
}
