/* The entry point of an accelerator plugin library: the one exported symbol
 * (include/npullm_accel.h), forwarding to the implementation's provider,
 * which the build names with -DNPL_ACCEL_PROVIDER=function
 * (cmake/accel_plugins.cmake). */
#include "npullm_accel.h"

#ifndef NPL_ACCEL_PROVIDER
#error "build with -DNPL_ACCEL_PROVIDER=<the implementation's get_api function>"
#endif

const npl_accel_api *NPL_ACCEL_PROVIDER(uint32_t requested_version);

__attribute__((visibility("default"))) const npl_accel_api *npl_accel_get_api(uint32_t requested_version);
const npl_accel_api *npl_accel_get_api(uint32_t requested_version) { return NPL_ACCEL_PROVIDER(requested_version); }
