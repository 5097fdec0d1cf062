/* include/npullm_accel.h compiles on its own as plain C (it is included
 * first, before any other header), and its layout prefix is what loaders
 * rely on: abi_version and struct_size lead the table, methods only get
 * appended (the v1 size is fixed), and the loader check refuses what it
 * must. */
#include "npullm_accel.h"

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "accel/vnpu/vnpu_api.h"
#include "check.h"

_Static_assert(offsetof(npl_accel_api, abi_version) == 0, "abi_version first");
_Static_assert(offsetof(npl_accel_api, struct_size) == 4, "struct_size second");
_Static_assert(sizeof(((npl_accel_api *)0)->abi_version) == 4, "abi_version is 32-bit");
_Static_assert(sizeof(((npl_accel_api *)0)->struct_size) == 4, "struct_size is 32-bit");
_Static_assert(offsetof(npl_accel_api, name) == 8, "name after the two u32");
_Static_assert(offsetof(npl_accel_api, backend_create) == 8 + sizeof(void *), "first method");
_Static_assert(NPL_ACCEL_API_V1_SIZE == 8 + 23 * sizeof(void *), "version 1: name and 22 methods");
_Static_assert(sizeof(npl_accel_status) == 4 && sizeof(npl_accel_dtype) == 4 && sizeof(npl_accel_kind) == 4,
               "ABI enums are fixed 32-bit");
_Static_assert(NPL_ACCEL_DT_Q4_0 == 7 && NPL_ACCEL_DT_Q8_0 == 8 && NPL_ACCEL_APP_READWRITE == 4, "stable values");

int main(void) {
    const npl_accel_api *api = npl_vnpu_get_api(NPL_ACCEL_ABI_VERSION);
    CHECK(api != NULL);
    CHECK(npl_accel_api_check(api, NPL_ACCEL_ABI_VERSION) == NULL);
    CHECK_EQ_INT(api->abi_version, NPL_ACCEL_ABI_VERSION);
    CHECK(api->struct_size >= NPL_ACCEL_API_V1_SIZE);
    CHECK(!strcmp(api->name, "vnpu"));
    /* every version-1 method is present */
    const void *const *m = (const void *const *)((const char *)api + offsetof(npl_accel_api, backend_create));
    for (size_t i = 0; i < (NPL_ACCEL_API_V1_SIZE - offsetof(npl_accel_api, backend_create)) / sizeof(void *); i++)
        CHECK(m[i] != NULL);
    /* versions it cannot serve */
    CHECK(npl_vnpu_get_api(0) == NULL);
    CHECK(npl_vnpu_get_api(NPL_ACCEL_ABI_VERSION + 1) == NULL);
    /* the loader check */
    CHECK(npl_accel_api_check(NULL, 1) != NULL);
    CHECK(npl_accel_api_check(api, 0) != NULL);
    CHECK(npl_accel_api_check(api, NPL_ACCEL_ABI_VERSION + 1) != NULL);
    npl_accel_api small = *api;
    small.struct_size = (uint32_t)NPL_ACCEL_API_V1_SIZE - 8;
    CHECK(npl_accel_api_check(&small, 1) != NULL);
    small = *api;
    small.abi_version = 0;
    CHECK(npl_accel_api_check(&small, 1) != NULL);
    /* a backend creation error comes back as a code and a message */
    char err[256] = "";
    npl_accel_backend *be = (npl_accel_backend *)&small;
    npl_accel_option bad = {"no_such_option", "1"};
    CHECK_EQ_INT(api->backend_create(&bad, 1, &be, err, sizeof err), NPL_ACCEL_ERR_INVALID_ARG);
    CHECK(be == NULL);
    CHECK(strstr(err, "no_such_option") != NULL);
    TEST_MAIN_END();
}
