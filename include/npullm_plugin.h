/* npullm accelerator libraries: the table (npullm_accel.h) of an
 * accelerator by name, found the way a package's plugin nodes find it:
 * NAME is the library DIR/libnpl_accel_NAME.so ("vnpu", the reference
 * accelerator, is libnpl_accel_vnpu.so), a name with '/' a library path. The
 * table passes the ABI version and size check before it is returned.
 *
 *   npl_accel_lib *l = npl_accel_lib_open("vnpu", NULL, NULL, err, sizeof err);
 *   const npl_accel_api *api = npl_accel_lib_api(l);
 *   api->backend_create(...); ...
 *   npl_accel_lib_close(l);   // after every backend of api is freed */
#ifndef NPULLM_PLUGIN_H
#define NPULLM_PLUGIN_H

#include "npullm.h"
#include "npullm_accel.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct npl_accel_lib npl_accel_lib;

/* plugin_dir: where libraries are looked for (NULL = next to libnpullm.so,
 * or to the executable it is linked into).
 * NULL on failure with one line naming the library and what was wrong
 * (missing, no entry point, another ABI version, a short table). */
NPL_API npl_accel_lib *npl_accel_lib_open(const char *name, const char *plugin_dir, npl_status *status, char *err,
                                          size_t errlen);
NPL_API const npl_accel_api *npl_accel_lib_api(const npl_accel_lib *l);
NPL_API void npl_accel_lib_close(npl_accel_lib *l);

/* The library's conversions for NPL_ACCEL_DT_F16 / BF16 buffers (round to
 * nearest even; NaN stays NaN), so an app's data match what the library
 * itself gives an accelerator. */
NPL_API uint16_t npl_accel_f32_to_f16(float f);
NPL_API float npl_accel_f16_to_f32(uint16_t h);
NPL_API uint16_t npl_accel_f32_to_bf16(float f);

#ifdef __cplusplus
}
#endif
#endif
