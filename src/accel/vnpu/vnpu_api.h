/* vnpu's entry point inside the npullm library. A plugin library would
 * export the same function under the name npl_accel_get_api. */
#ifndef NPL_VNPU_API_H
#define NPL_VNPU_API_H
#include "npullm_accel.h"

/* The vnpu table for `requested_version` (NULL if not served).
 * Backend options:
 *   kernel_family    auto (default) | amx | avx512 | avx2 | generic
 *                    (forcing one this CPU lacks is ERR_HW_UNSUPPORTED)
 *   threads          worker threads; 0 (default) = one per core (not with
 *                    backend_create_on_pool: the host's pool has the threads)
 *   cpu_max_family   pretend the CPU has at most this family (tests of
 *                    binaries compiled for a machine with more)
 *   profile          0 (default) | 1: time every step, printed per graph and
 *                    op type to stderr when the backend is freed | 2: also
 *                    list each graph's steps once | 3: also the slowest steps
 * Device and context options: none. */
const npl_accel_api *npl_vnpu_get_api(uint32_t requested_version);

#endif
