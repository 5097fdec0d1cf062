/* Broken accelerator plugins, one per -D switch, each wrong in one way the
 * loader must report in one line naming the library:
 *   BROKEN_VERSION  a table of ABI version 0
 *   BROKEN_SHORT    a table of the current version, cut after backend_get_info
 *   BROKEN_NOENTRY  no npl_accel_get_api (a misspelt entry point)
 *   BROKEN_NULL     npl_accel_get_api returns no table
 *   BROKEN_CREATE   a good table whose backend_create fails */
#include <stddef.h>
#include <stdio.h>

#include "npullm_accel.h"

static npl_accel_status create_fails(const npl_accel_option *opts, uint32_t n_opts, npl_accel_backend **out,
                                     char *err, uint32_t errlen) {
    *out = NULL;
    if (err) snprintf(err, errlen, "broken test plugin: no device present");
    return NPL_ACCEL_ERR_HW_UNSUPPORTED;
}

static const npl_accel_api table = {
#if defined(BROKEN_VERSION)
    .abi_version = 0,
#else
    .abi_version = NPL_ACCEL_ABI_VERSION,
#endif
#if defined(BROKEN_SHORT)
    .struct_size = (uint32_t)offsetof(npl_accel_api, device_create),
#else
    .struct_size = sizeof(npl_accel_api),
#endif
    .name = "broken",
    .backend_create = create_fails,
};

#if defined(BROKEN_NOENTRY)
__attribute__((visibility("default"))) const npl_accel_api *npl_accel_get_api_v1(uint32_t requested_version);
const npl_accel_api *npl_accel_get_api_v1(uint32_t requested_version) { return &table; }
#else
__attribute__((visibility("default"))) const npl_accel_api *npl_accel_get_api(uint32_t requested_version);
const npl_accel_api *npl_accel_get_api(uint32_t requested_version) {
#if defined(BROKEN_NULL)
    return requested_version ? NULL : &table;
#else
    return &table;
#endif
}
#endif
