/* The QNN HTP adapter as a compile target: src/plugin's loader maps the
 * target name "qnn-htp" to libnpl_accel_qnn-htp.so in the plugin folder (as
 * npullm compile --target qnn-htp and a package naming it do), the library
 * exports only npl_accel_get_api, and the loader's backend (which offers a
 * "threads" option the adapter does not take) comes up on the default QNN
 * folder. */
#include <dlfcn.h>
#include <libgen.h>
#include <stdio.h>
#include <string.h>

#include "plugin/plugin.h"
#include "test_qnn_common.h"

int main(void) {
    (void)qnn_test_api(); /* skips when QNN is not installed */
    char dir[1024];
    snprintf(dir, sizeof dir, "%s", NPL_QNN_PLUGIN);
    CHECK(!strcmp(strrchr(NPL_QNN_PLUGIN, '/') + 1, "libnpl_accel_qnn-htp.so"));
    npl_plugin_rt_params p = {.plugin_dir = dirname(dir)};
    char err[1024] = "";
    npl_plugin_rt *rt = npl_plugin_rt_new(&p, err, sizeof err);
    CHECK(rt != NULL);
    if (!rt) TEST_MAIN_END();
    const npl_accel_api *api = npl_plugin_accel_api(rt, "qnn-htp", err, sizeof err);
    if (!api) fprintf(stderr, "loader: %s\n", err);
    CHECK(api != NULL);
    if (api) {
        CHECK(!strcmp(api->name, "qnn-htp"));
        CHECK_EQ_INT(api->abi_version, NPL_ACCEL_ABI_VERSION);
        npl_accel_backend *be = npl_plugin_accel_backend(rt, api, err, sizeof err);
        if (!be) fprintf(stderr, "backend: %s\n", err);
        CHECK(be != NULL);
        npl_accel_backend_info bi;
        CHECK(be && api->backend_get_info(be, &bi) == NPL_ACCEL_OK && !strcmp(bi.name, "qnn-htp"));
        CHECK(be && !strncmp(bi.kernel_family, "qnn-htp", 7));
    }
    /* a name without its library: one message naming the file looked for */
    CHECK(npl_plugin_accel_api(rt, "qnn-nonesuch", err, sizeof err) == NULL);
    CHECK(strstr(err, "libnpl_accel_qnn-nonesuch.so") != NULL);
    npl_plugin_rt_free(rt);

    /* the library's only dynamic symbol of its own is the entry point */
    void *h = dlopen(NPL_QNN_PLUGIN, RTLD_NOW | RTLD_LOCAL);
    CHECK(h && dlsym(h, NPL_ACCEL_ENTRY_POINT) != NULL);
    CHECK(h && dlsym(h, "npl_qnn_get_api") == NULL);
    CHECK(h && dlsym(h, "qnn_op_table") == NULL);
    if (h) dlclose(h);
    TEST_MAIN_END();
}
