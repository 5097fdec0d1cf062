/* vnpu execution internals shared by vnpu_exec.c (driver, MatMul),
 * vnpu_rows.c (row-local ops and their fused groups) and vnpu_ops_exec.c
 * (the other ops). Each step carves what it needs from the graph's scratch
 * region. Every op first takes all its buffers, then returns early when the
 * context is in measuring mode (cur == NULL): the planner runs each step
 * that way to learn its scratch size, so the plan and the run cannot
 * disagree. */
#ifndef NPL_VNPU_EXEC_H
#define NPL_VNPU_EXEC_H
#include "accel/vnpu/vnpu.h"

/* Per-execute state shared by the steps of one run: RoPE cos/sin tables
 * (the q and k Ropes of every layer share the positions and one of a few
 * bases, so each table is made once per run). */
#define VNPU_ROPE_TABLES 4 /* = the length of vnpu_graph's rope_buf */
typedef struct {
    const int32_t *pos;
    int64_t rows;
    npl_rope_args a; /* the step's RoPE (vnpu_rope_args) */
    float *cs; /* [rows][n_rot]: cos of pair i at i, sin at n_rot/2 + i */
    int slot;  /* which of the graph's rope_buf holds cs */
} vnpu_rope_table;

typedef struct {
    vnpu_rope_table rope[VNPU_ROPE_TABLES];
    int n_rope;
    /* the last fused GGML MatMul step and where it left its packed
     * activations: the next step on the same input (q, k, v) reuses them */
    const vnpu_node *mm_prev;
    const uint8_t *mm_x;
} vnpu_run;

typedef struct {
    vnpu_graph *g;
    const vnpu_node *n;
    struct npl_accel_backend *be;
    uint8_t *cur, *end;        /* bump allocator over the scratch region */
    size_t used;               /* measuring mode (cur == NULL): bytes asked for */
    vnpu_run *run;             /* NULL in measuring mode */
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

/* Elements [e0, e0 + n) of tensor t (bytes at data) to / from f32: F16
 * with F16C / AVX-512 code when the kernel family has it, anything else
 * through vnpu_convert.c (the same values either way). Thread-safe. */
void vnpu_cvt_to_f32(int family, const vnpu_tensor *t, const void *data, int64_t e0, int64_t n, float *out);
void vnpu_cvt_from_f32(int family, const vnpu_tensor *t, const float *in, int64_t e0, int64_t n, void *data);

/* fn(arg, unit) for every unit in [0, n_units), spread over the pool through
 * an atomic counter (a thread the OS delays does not hold the others up);
 * n_units <= 1 runs on the caller without waking the pool. */
typedef void (*vnpu_unit_fn)(void *arg, int ith, int64_t unit);
void vnpu_par_for(struct npl_accel_backend *be, int64_t n_units, vnpu_unit_fn fn, void *arg);

/* Profiling (vnpu_prof.c, backend option "profile"): slots are op types,
 * then the phases of a MatMul step. The profile is the backend's
 * (be->prof, NULL when off); vnpu_prof_free prints it to stderr. */
enum {
    VNPU_PROF_MM_IN = VNPU_OP_COUNT, VNPU_PROF_MM_KERNEL, VNPU_PROF_MM_EPI,
    VNPU_PROF_ATTN_IN, VNPU_PROF_ATTN_KERNEL, VNPU_PROF_ATTN_OUT, VNPU_PROF_SLOTS
};
vnpu_prof *vnpu_prof_new(int level); /* NULL: out of memory */
void vnpu_prof_free(vnpu_prof *pr);
int vnpu_prof_on(const vnpu_graph *g); /* the backend's level, 0: off */
void vnpu_prof_add(const vnpu_graph *g, int slot, uint64_t ns);
void vnpu_prof_step(const vnpu_graph *g, uint32_t step, uint64_t ns); /* level 3: slowest steps */
void vnpu_prof_dump(const vnpu_graph *g); /* level 2: the steps, once per graph */
uint64_t vnpu_now_ns(void);

/* Row-local ops (vnpu_rows.c): steps whose output row r (leading dimension)
 * depends only on row r of their full-size inputs. Consecutive ones run as
 * one group, block of rows by block of rows on every thread, so their
 * intermediate tensors stay in cache and the pool is woken once.
 * vnpu_rows_group: how many steps from `first` form a group (0 if the step
 * is not row-local). vnpu_rows_exec runs steps [first, first + count). */
uint32_t vnpu_rows_group(const vnpu_graph *g, uint32_t first);
npl_accel_status vnpu_rows_exec(vnpu_xc *x, uint32_t first, uint32_t count);
/* Scratch of one row-local step run alone (measuring mode helper). */
size_t vnpu_rows_scratch(const vnpu_graph *g, const vnpu_node *n);
/* The cos/sin table of a Rope step for this run (made on first use). */
const float *vnpu_rope_table_get(vnpu_xc *x, const vnpu_node *n);
/* A Rope step's params as the CPU kernels take them (ff: its freq_factors
 * input or NULL). */
npl_rope_args vnpu_rope_args(const vnpu_node *n, int n_rot, const float *ff);

/* Non-MatMul ops that are not row-local (vnpu_ops_exec.c). */
npl_accel_status vnpu_exec_op(vnpu_xc *x);
/* Attention (vnpu_attention.c). */
npl_accel_status vnpu_op_attention(vnpu_xc *x);

#endif
