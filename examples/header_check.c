/* Compiled (never run) as strict C99 with -pedantic -Werror by
 * examples/CMakeLists.txt: a public header that stops being plain C breaks
 * the build. Each header comes first so it must include what it needs. */
#include "npullm.h"
#include "npullm_accel.h"
#include "npullm_bench.h"
#include "npullm_compile.h"
#include "npullm_gguf.h"
#include "npullm_plugin.h"
#include "npullm_tokenizer.h"

/* touch a few declarations so they are type-checked, not just parsed */
typedef char npl_header_check_status_is_int_sized[sizeof(npl_status) == sizeof(int) ? 1 : -1];

int npl_header_check(void);
int npl_header_check(void) {
    npl_engine_params p = npl_engine_default_params();
    npl_text_cb cb = 0;
    npl_stats s;
    s.n_past = p.n_ctx;
    (void)cb;
    return s.n_past + NPL_ACCEL_ABI_VERSION;
}
