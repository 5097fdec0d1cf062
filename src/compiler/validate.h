/* Asking the target which nodes it takes (private to the compiler; see
 * validate.c). */
#ifndef NPL_COMPILER_VALIDATE_H
#define NPL_COMPILER_VALIDATE_H
#include "compiler/compiler.h"
#include "compiler/lower.h"

typedef struct {
    const npl_accel_api *target;
    npl_accel_backend *be;
    const char *target_name;
    const npl_graph *g;
    const npl_partition *part;    /* the kept subgraphs are asked about */
    const int *seq, *n_out;       /* the compiled shapes */
    int n_cases;
    const npl_lower_args *lower;  /* act, weights, wc, out_weight / out_type as the real lowering */
} npl_validate_args;

/* Sets refused[id] ("target T refuses Op: why") for every graph node one of
 * whose accelerator nodes the target refuses at some shape, unless already
 * set. Returns how many were newly refused, or -1 with err. */
int npl_validate_segments(const npl_validate_args *a, char (*refused)[NPL_WHY_LEN], char *err, size_t errlen);

#endif
