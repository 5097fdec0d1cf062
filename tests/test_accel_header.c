/* include/npullm_accel.h compiles on its own as plain C (it is included
 * first, before any other header), and its layout prefix is what loaders
 * rely on: abi_version and struct_size lead the table, methods only get
 * appended (the v1 and v2 sizes are fixed), and the loader check accepts a
 * version-1 table and refuses what it must (short tables, a version-2 claim
 * on a version-1 size) with a message. */
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
_Static_assert(offsetof(npl_accel_api, validate_node) == NPL_ACCEL_API_V1_SIZE, "version 2 appended after v1");
_Static_assert(NPL_ACCEL_API_V2_SIZE == NPL_ACCEL_API_V1_SIZE + 3 * sizeof(void *), "version 2: three methods");
_Static_assert(sizeof(npl_accel_api) == NPL_ACCEL_API_V2_SIZE, "the table ends with version 2");
_Static_assert(sizeof(npl_accel_status) == 4 && sizeof(npl_accel_dtype) == 4 && sizeof(npl_accel_kind) == 4,
               "ABI enums are fixed 32-bit");
_Static_assert(NPL_ACCEL_DT_Q4_0 == 7 && NPL_ACCEL_DT_Q8_0 == 8 && NPL_ACCEL_APP_READWRITE == 4, "stable values");

/* providers of the loader's retry: a library that serves only version 1, one that serves nothing */
static npl_accel_api v1_table;
static const npl_accel_api *v1_only(uint32_t v) { return v == 1 ? &v1_table : NULL; }
static const npl_accel_api *none(uint32_t v) { (void)v; return NULL; }

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
    /* a version-2 table offers the version-2 methods */
    CHECK(api->struct_size >= NPL_ACCEL_API_V2_SIZE);
    CHECK(NPL_ACCEL_API_HAS(api, validate_node) && NPL_ACCEL_API_HAS(api, list_ops) &&
          NPL_ACCEL_API_HAS(api, backend_create_on_pool));
    /* a version-1 table (what an older plugin returns): accepted as version 1,
     * refused as version 2, and it has none of the version-2 methods even if
     * the bytes after it are not zero */
    npl_accel_api v1 = *api;
    v1.abi_version = 1;
    v1.struct_size = (uint32_t)NPL_ACCEL_API_V1_SIZE;
    CHECK(npl_accel_api_check(&v1, 1) == NULL);
    CHECK(npl_accel_api_check(&v1, 2) != NULL && strstr(npl_accel_api_check(&v1, 2), "older"));
    CHECK(!NPL_ACCEL_API_HAS(&v1, validate_node) && !NPL_ACCEL_API_HAS(&v1, list_ops) &&
          !NPL_ACCEL_API_HAS(&v1, backend_create_on_pool));
    CHECK(NPL_ACCEL_API_HAS(&v1, context_tensor_data));
    /* a table claiming version 2 with a version-1 size, or a v2 one cut short */
    npl_accel_api badt = *api;
    badt.struct_size = (uint32_t)NPL_ACCEL_API_V1_SIZE;
    CHECK(npl_accel_api_check(&badt, 1) != NULL && strstr(npl_accel_api_check(&badt, 1), "version-2"));
    badt.struct_size = (uint32_t)NPL_ACCEL_API_V2_SIZE - 8;
    CHECK(npl_accel_api_check(&badt, 2) != NULL);
    /* a version-2 method left NULL is not offered */
    badt = *api;
    badt.validate_node = NULL;
    CHECK(npl_accel_api_check(&badt, 2) == NULL && !NPL_ACCEL_API_HAS(&badt, validate_node));
    /* the loader asks for the newest version, then older ones */
    uint32_t got = 99;
    CHECK(npl_accel_get_newest_api(npl_vnpu_get_api, &got) == api && got == NPL_ACCEL_ABI_VERSION);
    CHECK(npl_accel_get_newest_api(v1_only, &got) == &v1_table && got == 1);
    CHECK(npl_accel_get_newest_api(none, &got) == NULL && got == 0);
    /* a backend creation error comes back as a code and a message */
    char err[256] = "";
    npl_accel_backend *be = (npl_accel_backend *)&small;
    npl_accel_option bad = {"no_such_option", "1"};
    CHECK_EQ_INT(api->backend_create(&bad, 1, &be, err, sizeof err), NPL_ACCEL_ERR_INVALID_ARG);
    CHECK(be == NULL);
    CHECK(strstr(err, "no_such_option") != NULL);
    TEST_MAIN_END();
}
