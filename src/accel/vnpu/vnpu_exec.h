/* vnpu execution internals shared by vnpu_exec.c (driver, MatMul) and
 * vnpu_ops_exec.c (the other ops). Each step carves what it needs from the
 * graph's scratch region. Every op first takes all its buffers, then
 * returns early when the context is in measuring mode (cur == NULL): the
 * planner runs each step that way to learn its scratch size, so the plan and
 * the run cannot disagree. */
#ifndef NPL_VNPU_EXEC_H
#define NPL_VNPU_EXEC_H
#include "accel/vnpu/vnpu.h"

typedef struct {
    vnpu_graph *g;
    const vnpu_node *n;
    struct npl_accel_backend *be;
    uint8_t *cur, *end;        /* bump allocator over the scratch region */
    size_t used;               /* measuring mode (cur == NULL): bytes asked for */
} vnpu_xc;

/* 64-aligned scratch; NULL when out of room (an internal error). In
 * measuring mode returns NULL and only counts. */
void *vnpu_xc_alloc(vnpu_xc *x, size_t bytes);
void *vnpu_xc_addr(const vnpu_xc *x, uint32_t tid);
const vnpu_tensor *vnpu_xc_t(const vnpu_xc *x, uint32_t tid);
/* Input i as f32 (its own memory if F32, else converted into scratch). */
const float *vnpu_xc_in_f32(vnpu_xc *x, uint32_t i);
/* Where to compute output 0 in f32, and the conversion back afterwards. */
float *vnpu_xc_out_f32(vnpu_xc *x);
void vnpu_xc_out_done(vnpu_xc *x, float *y);

static inline int vnpu_xc_measuring(const vnpu_xc *x) { return x->cur == NULL; }

/* Non-MatMul ops (vnpu_ops_exec.c). */
npl_accel_status vnpu_exec_op(vnpu_xc *x);

#endif
