/* Public accelerator lookup (npullm_plugin.h) over the plugin runtime, so a
 * program finds an accelerator exactly as a package's plugin nodes do. */
#include <stdlib.h>

#include "core/status.h"
#include "kernels/dtype.h"
#include "npullm_plugin.h"
#include "plugin/plugin.h"

struct npl_accel_lib {
    npl_plugin_rt *rt;
    const npl_accel_api *api;
};

npl_accel_lib *npl_accel_lib_open(const char *name, const char *plugin_dir, npl_status *status, char *err,
                                  size_t errlen) {
    npl_api_scratch scratch;
    npl_api_enter(&scratch, &status, &err, &errlen);
    if (!name || !*name) {
        *status = npl_errf(err, errlen, NPL_ERR_ARGUMENT, "no accelerator name");
        return NULL;
    }
    npl_accel_lib *l = calloc(1, sizeof *l);
    if (!l) {
        *status = npl_err_memory(err, errlen);
        return NULL;
    }
    npl_plugin_rt_params p = {.base_dir = ".", .plugin_dir = plugin_dir}; /* NULL: next to the library */
    if (!(l->rt = npl_plugin_rt_new(&p, err, errlen)) || !(l->api = npl_plugin_accel_api(l->rt, name, err, errlen))) {
        *status = npl_status_take(NPL_ERR_FILE);
        npl_accel_lib_close(l);
        return NULL;
    }
    *status = NPL_OK;
    return l;
}

const npl_accel_api *npl_accel_lib_api(const npl_accel_lib *l) { return l ? l->api : NULL; }

void npl_accel_lib_close(npl_accel_lib *l) {
    if (!l) return;
    npl_plugin_rt_free(l->rt);
    free(l);
}

uint16_t npl_accel_f32_to_f16(float f) { return npl_f32_to_f16(f); }
float npl_accel_f16_to_f32(uint16_t h) { return npl_f16_to_f32(h); }
uint16_t npl_accel_f32_to_bf16(float f) { return npl_f32_to_bf16(f); }
