/* libnpl_accel_stub.so: a test target. It is vnpu (linked in from its
 * archive) under another name, except that its validate_node refuses every
 * RmsNorm, so `npullm compile --target stub` must leave the norms on the CPU
 * and the package must still compute what the CPU path does. (The brief's
 * example is Softmax; the graphs here have none — attention is one op — and
 * RmsNorm sits between every pair of subgraphs, so refusing it splits the
 * model into many.) */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "accel/vnpu/vnpu_api.h"
#include "npullm_accel.h"

#define REFUSED_OP "RmsNorm"

static npl_accel_api table;
static pthread_once_t once = PTHREAD_ONCE_INIT;

#if NPL_ACCEL_ABI_VERSION >= 2
static const npl_accel_api *vnpu;

static npl_accel_status stub_validate(npl_accel_backend *be, const npl_accel_node_desc *node,
                                      const npl_accel_tensor_desc *in, const npl_accel_tensor_desc *out, char *why,
                                      uint32_t len) {
    if (!strcmp(node->op, REFUSED_OP)) {
        if (why) snprintf(why, len, "the stub target takes no %s", REFUSED_OP);
        return NPL_ACCEL_ERR_UNSUPPORTED;
    }
    return NPL_ACCEL_API_HAS(vnpu, validate_node) ? vnpu->validate_node(be, node, in, out, why, len) : NPL_ACCEL_OK;
}
#endif

static void init(void) {
    table = *npl_vnpu_get_api(NPL_ACCEL_ABI_VERSION);
    table.name = "stub";
#if NPL_ACCEL_ABI_VERSION >= 2
    vnpu = npl_vnpu_get_api(NPL_ACCEL_ABI_VERSION);
    table.validate_node = stub_validate;
    table.struct_size = sizeof table;
#endif
}

__attribute__((visibility("default"))) const npl_accel_api *npl_accel_get_api(uint32_t requested_version);
const npl_accel_api *npl_accel_get_api(uint32_t requested_version) {
    if (requested_version != NPL_ACCEL_ABI_VERSION) return NULL;
    pthread_once(&once, init);
    return &table;
}
