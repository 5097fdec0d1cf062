/* record internals: the in-memory log the record backend keeps and writes
 * (record_io.c), and that replay reads back (replay.c). */
#ifndef NPL_ACCEL_RECORD_IMPL_H
#define NPL_ACCEL_RECORD_IMPL_H
#include <stddef.h>
#include <stdint.h>

#include "npullm_accel.h"

typedef struct {
    char *name;
    uint32_t type, count;   /* count: INTS / FLOATS elements */
    int64_t i;
    double f;
    int64_t *ints;
    float *floats;
    char *str;
} rec_param;

typedef struct {
    char *name;
    uint32_t kind, dtype, rank, dims[NPL_ACCEL_MAX_RANK];
    int32_t graph;          /* record graph index; -1 for STATIC / APP_READWRITE */
    uint32_t ctx;
    uint32_t qenc;
    int32_t qaxis;
    uint32_t qblock, qn;
    float *scales;
    int32_t *offsets;       /* NULL = zeros */
    uint8_t *data;          /* STATIC bytes */
    uint64_t size;
} rec_tensor;

typedef struct {
    uint32_t graph;
    char *name, *op;
    uint32_t n_in, n_out, np;
    uint32_t *in, *out;     /* record tensor indices */
    rec_param *p;
} rec_node;

typedef struct {
    char *name;
    uint32_t ctx;
    int32_t fin;            /* finalize order, -1 = not finalized */
} rec_graph;

typedef struct {
    rec_tensor *t;
    uint32_t n_t, cap_t;
    rec_node *n;
    uint32_t n_n, cap_n;
    rec_graph *g;
    uint32_t n_g, cap_g;
    uint32_t n_contexts;
    int32_t n_fin;
} rec_log;

/* The GGUF metadata arrays of a record (keys and element types in
 * record_io.c). */
enum { V_GNAME, V_GCTX, V_GFIN, V_TNAME, V_TKIND, V_TDT, V_TRANK, V_TDIMS, V_TGRAPH, V_TCTX, V_QENC, V_QAXIS,
       V_QBLOCK, V_QN, V_QHASOFF, V_TSIZE, V_SCALES, V_OFFS, V_NGRAPH, V_NNAME, V_NOP, V_NIN, V_NOUT, V_NNP,
       V_INS, V_OUTS, V_PNAME, V_PTYPE, V_PCOUNT, V_PI, V_PF, V_PSTR, V_PINTS, V_PFLOATS, V_COUNT };
const char *rec_col_key(int col);
int rec_col_type(int col); /* npl_gguf_vtype of the elements */

/* grow *p (elements of elem bytes) so that index n fits; -1 on OOM */
int rec_grow(void **p, uint32_t *cap, uint32_t n, size_t elem);
void rec_tensor_free(rec_tensor *t);
void rec_node_free(rec_node *n);
void rec_log_free(rec_log *L);
/* Writes the log as GGUF (atomically: PATH.tmp then rename). */
int rec_write(const rec_log *L, const char *path, char *err, size_t errlen);

#endif
