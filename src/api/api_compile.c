/* Public compile call (npullm_compile.h) over the offline compiler. */
#include "compiler/compiler.h"
#include "core/status.h"
#include "kernels/dtype.h"
#include "npullm_compile.h"

npl_compile_options npl_compile_default_options(void) {
    npl_compile_options o = {.chunk = 128, .act = NPL_COMPILE_ACT_F16, .weights = NPL_COMPILE_WEIGHTS_KEEP,
                             .output_weights = NPL_COMPILE_OUTPUT_AS_WEIGHTS, .check = 1, .tied_lookup_cpu = 0};
    o.target = npl_compile_default_params().target;
    return o;
}

npl_status npl_compile_model(const char *model_path, const char *out_dir, const npl_compile_options *o, char *err,
                             size_t errlen) {
    npl_api_scratch scratch;
    npl_api_enter(&scratch, NULL, &err, &errlen);
    npl_compile_options d = npl_compile_default_options();
    if (!o) o = &d;
    if (!model_path || !out_dir) return npl_errf(err, errlen, NPL_ERR_ARGUMENT, "compile: no model or no output");
    static const npl_act_prec acts[] = {NPL_ACT_F16, NPL_ACT_BF16, NPL_ACT_INT16, NPL_ACT_F32};
    static const npl_weight_prec weights[] = {NPL_WEIGHTS_KEEP, NPL_WEIGHTS_Q4, NPL_WEIGHTS_Q8, NPL_WEIGHTS_W8,
                                              NPL_WEIGHTS_W4};
    static const int outputs[] = {-1, NPL_TYPE_Q4_0, NPL_TYPE_Q5_0, NPL_TYPE_Q8_0};
    if ((unsigned)o->act > 3 || (unsigned)o->weights > 4 || (unsigned)o->output_weights > 3)
        return npl_errf(err, errlen, NPL_ERR_ARGUMENT, "compile: act %d / weights %d / output_weights %d out of range",
                        (int)o->act, (int)o->weights, (int)o->output_weights);
    npl_compile_params p = npl_compile_default_params();
    p.chunk = o->chunk;
    p.n_ctx = o->n_ctx;
    p.act = acts[o->act];
    p.weights = weights[o->weights];
    p.output_weights = outputs[o->output_weights];
    p.n_threads = o->n_threads;
    p.check = o->check;
    p.tolerance = o->tolerance;
    p.keep_intermediate = o->keep_intermediate;
    p.force = o->force;
    p.log = o->log;
    p.guard = o->guard;
    p.stall_at = o->stall_at;
    if (o->target) p.target = o->target;
    p.plugin_dir = o->plugin_dir;
    p.keep_f32 = o->keep_f32;
    p.soc = o->soc;
    p.calib = o->calib;
    p.weight_sharing = o->weight_sharing;
    p.buckets = o->buckets;
    p.split_layers = o->split_layers;
    p.tied_lookup_cpu = o->tied_lookup_cpu;
    if (npl_compile(model_path, out_dir, &p, err, errlen)) return npl_status_take(NPL_ERR_FILE);
    return NPL_OK;
}
