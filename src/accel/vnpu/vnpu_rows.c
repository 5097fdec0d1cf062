/* vnpu row-local ops (RmsNorm, Rope, Add, Mul, Scale, activations, gating,
 * Softmax, Cast, Reshape) and their fusion at run time.
 *
 * A row is one index of the output's leading dimension (a token of a
 * prefill chunk). Consecutive row-local steps with the same row count run as
 * one group: every thread takes a block of rows and runs each step of the
 * group on it, converting f16 activations to f32 and back in cache. Every
 * intermediate tensor is still written whole in its own type, so a group
 * computes exactly what its steps compute one after another; it only saves
 * passes over memory and pool wake-ups. A step joins a group only if the
 * memory it writes overlaps nothing else the group touches (the arena
 * planner reuses memory of tensors whose last reader has run, and a block
 * of one thread must not overwrite rows another thread has yet to read). */
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "accel/vnpu/vnpu_convert.h"
#include "accel/vnpu/vnpu_exec.h"

#define ROW_FLOATS 8192 /* floats per row-block buffer: the buffers of a block stay in L2 */
#define MAX_MEMBERS 16
#define ROW_INLINE_ELEMS 65536 /* below this, waking the pool costs more than it saves */

typedef struct {
    const vnpu_node *n;
    const vnpu_tensor *in[3], *out;
    const void *ind[3];
    void *outd;
    int64_t rs_in[3];        /* row size of a full input, 0 for a broadcast one */
    int64_t rs_out;
    const float *bcast[3];   /* broadcast inputs as f32 */
    const float *rope;       /* Rope: this run's cos/sin table */
} member;

static int is_rowlocal_op(uint32_t op) {
    switch (op) {
    case VNPU_OP_RMS_NORM: case VNPU_OP_ROPE: case VNPU_OP_ADD: case VNPU_OP_MUL: case VNPU_OP_SCALE:
    case VNPU_OP_SILU: case VNPU_OP_GELU: case VNPU_OP_SWIGLU: case VNPU_OP_GEGLU: case VNPU_OP_SOFTMAX:
    case VNPU_OP_CAST: case VNPU_OP_RESHAPE:
        return 1;
    default: return 0;
    }
}

static int n_data_inputs(const vnpu_node *n) { return n->op == VNPU_OP_ROPE ? 1 : (int)n->n_in; }

/* Row geometry of step n: output rows S and per-input row sizes (0 =
 * broadcast). Returns 0 if the step is not row-local. */
static int geometry(const vnpu_graph *g, const vnpu_node *n, int64_t *rows, int64_t rs_in[3], int64_t *rs_out) {
    const vnpu_tensor *t = g->ctx->t, *o = &t[n->out[0]];
    if (!is_rowlocal_op(n->op) || n->n_out != 1 || n->n_in > 3 || o->rank < 2 || o->dims[0] < 1) return 0;
    if (!vnpu_dtype_size(o->dtype)) return 0; /* block types: rows are not whole elements */
    const int64_t s = o->dims[0], ors = o->nelem / s;
    for (int i = 0; i < n_data_inputs(n); i++) {
        const vnpu_tensor *a = &t[n->in[i]];
        if (!vnpu_dtype_size(a->dtype)) return 0;
        if (a->nelem == o->nelem) rs_in[i] = ors;
        else if (i > 0 && (n->op == VNPU_OP_RMS_NORM || n->op == VNPU_OP_ADD || n->op == VNPU_OP_MUL) &&
                 ors % a->nelem == 0)
            rs_in[i] = 0;
        else if (i == 0 && (n->op == VNPU_OP_ADD || n->op == VNPU_OP_MUL) && ors % a->nelem == 0)
            rs_in[i] = 0;
        else return 0;
    }
    if (n->op == VNPU_OP_SOFTMAX && ors % o->dims[o->rank - 1]) return 0;
    *rows = s;
    *rs_out = ors;
    return 1;
}

static int64_t block_rows(const vnpu_graph *g, const vnpu_node *n) {
    int64_t s, rs_in[3] = {0}, rs_out, m;
    if (!geometry(g, n, &s, rs_in, &rs_out)) return 1;
    m = rs_out;
    for (int i = 0; i < 3; i++) m = rs_in[i] > m ? rs_in[i] : m;
    return m >= ROW_FLOATS ? 1 : ROW_FLOATS / m;
}

static size_t a64(size_t v) { return (v + VNPU_ALIGN - 1) & ~(size_t)(VNPU_ALIGN - 1); }

/* Per-thread scratch of step n for blocks of rb rows. */
static size_t thread_bytes(const vnpu_graph *g, const vnpu_node *n, int64_t rb) {
    int64_t s, rs_in[3] = {0}, rs_out;
    if (!geometry(g, n, &s, rs_in, &rs_out) || n->op == VNPU_OP_RESHAPE) return 0;
    const vnpu_tensor *t = g->ctx->t;
    size_t f = 0;
    for (int i = 0; i < n_data_inputs(n); i++)
        if (rs_in[i] && t[n->in[i]].dtype != NPL_ACCEL_DT_F32) f += (size_t)(rs_in[i] * rb);
    if (t[n->out[0]].dtype != NPL_ACCEL_DT_F32) f += (size_t)(rs_out * rb);
    return a64(f * 4);
}

/* Shared scratch: broadcast inputs converted to f32 once. */
static size_t shared_bytes(const vnpu_graph *g, const vnpu_node *n) {
    int64_t s, rs_in[3] = {0}, rs_out;
    if (!geometry(g, n, &s, rs_in, &rs_out)) return 0;
    size_t b = 0;
    for (int i = 0; i < n_data_inputs(n); i++) {
        const vnpu_tensor *a = &g->ctx->t[n->in[i]];
        if (!rs_in[i] && a->dtype != NPL_ACCEL_DT_F32) b += a64((size_t)a->nelem * 4);
    }
    return b;
}

size_t vnpu_rows_scratch(const vnpu_graph *g, const vnpu_node *n) {
    return shared_bytes(g, n) + (size_t)g->ctx->be->n_threads * thread_bytes(g, n, block_rows(g, n));
}

/* ---- the group ---- */

/* Memory one tensor of a group occupies: rows of row_bytes from lo, or read
 * whole by every block (row_bytes 0: broadcast inputs, positions). */
typedef struct {
    uint32_t id;
    const uint8_t *lo, *hi;
    size_t row_bytes;
    int written;
} span;

/* Block b of span w (rows [b rb, (b+1) rb)) may overlap t only inside t's
 * own block b: the same thread then reads t's rows before it overwrites
 * them. (Any overlap at all means t is dead once w is written, or the step
 * order would be wrong: the arena planner reuses only dead memory.) */
static int hazard(const span *w, const span *t, int64_t rows, int64_t rb) {
    if (!(w->lo < t->hi && t->lo < w->hi)) return 0;
    if (!t->row_bytes || !w->row_bytes) return 1;
    for (int64_t r0 = 0; r0 < rows; r0 += rb) {
        const int64_t r1 = r0 + rb < rows ? r0 + rb : rows;
        const uint8_t *wl = w->lo + r0 * w->row_bytes, *wh = w->lo + r1 * w->row_bytes;
        const uint8_t *il = wl > t->lo ? wl : t->lo, *ih = wh < t->hi ? wh : t->hi;
        if (il < ih && (il < t->lo + r0 * t->row_bytes || ih > t->lo + r1 * t->row_bytes)) return 1;
    }
    return 0;
}

static int add_span(const vnpu_graph *g, span *sp, uint32_t *n, uint32_t id, int64_t rows, int whole, int written) {
    const vnpu_tensor *t = &g->ctx->t[id];
    const uint8_t *p = g->addr[id];
    if (!p) return -1;
    for (uint32_t k = 0; k < *n; k++)
        if (sp[k].id == id) {
            if (whole) sp[k].row_bytes = 0;
            sp[k].written |= written;
            return 0;
        }
    /* dynamic int16 keeps its scales after the values: not one stride per row */
    whole = whole || t->nbytes % (size_t)rows || vnpu_is_dynamic(t);
    sp[(*n)++] = (span){id, p, p + t->nbytes, whole ? 0 : t->nbytes / (size_t)rows, written};
    return 0;
}

/* Can steps [first, last] run as one group? */
static int group_ok(const vnpu_graph *g, uint32_t first, uint32_t last, int64_t rows) {
    span sp[MAX_MEMBERS * 4];
    uint32_t n_sp = 0;
    int64_t rb = ROW_FLOATS;
    size_t shared = 0, per_thread = 0;
    for (uint32_t s = first; s <= last; s++) {
        const int64_t b = block_rows(g, &g->steps[s]);
        rb = b < rb ? b : rb;
    }
    for (uint32_t s = first; s <= last; s++) {
        const vnpu_node *n = &g->steps[s];
        int64_t r, rs_in[3] = {0}, rs_out;
        geometry(g, n, &r, rs_in, &rs_out);
        for (uint32_t i = 0; i < n->n_in; i++) {
            const int full = i < (uint32_t)n_data_inputs(n) && rs_in[i];
            /* an input made inside the group must be read row by row */
            for (uint32_t k = 0; k < n_sp; k++)
                if (sp[k].id == n->in[i] && sp[k].written && !full) return 0;
            if (add_span(g, sp, &n_sp, n->in[i], rows, !full, 0)) return 0;
        }
        if (add_span(g, sp, &n_sp, n->out[0], rows, 0, 1)) return 0;
        const size_t tb = thread_bytes(g, n, rb);
        shared += shared_bytes(g, n);
        per_thread = tb > per_thread ? tb : per_thread;
    }
    for (uint32_t a = 0; a < n_sp; a++)
        for (uint32_t b = 0; b < n_sp; b++)
            if (a != b && sp[a].written && hazard(&sp[a], &sp[b], rows, rb)) return 0;
    /* and the group's scratch must fit the plan (each step alone does) */
    return shared + per_thread * (size_t)g->ctx->be->n_threads <= g->arena_size - g->scratch_off;
}

uint32_t vnpu_rows_group(const vnpu_graph *g, uint32_t first) {
    int64_t rows0 = -1;
    uint32_t count = 0;
    for (uint32_t s = first; s < g->n_steps && count < MAX_MEMBERS; s++, count++) {
        int64_t rows, rs_in[3] = {0}, rs_out;
        if (!geometry(g, &g->steps[s], &rows, rs_in, &rs_out) || (rows0 >= 0 && rows != rows0)) break;
        if (!group_ok(g, first, s, rows)) break;
        rows0 = rows;
    }
    return count;
}

typedef struct {
    const struct npl_accel_backend *be;
    int family;
    member *m;
    uint32_t nm;
    int64_t rows, rb;
    uint8_t *tbuf;
    size_t per_thread;
    atomic_uint_fast64_t *prof; /* per member ns, NULL unless profiling */
} group_job;

static float silu(float v) { return v / (1.0f + expf(-v)); }
static float gelu(float v) {
    return 0.5f * v * (1.0f + tanhf(0.7978845608028654f * (v + 0.044715f * v * v * v)));
}

static void rope_rows(const member *m, const float *a, float *y, int64_t r0, int64_t nr) {
    const vnpu_tensor *t = m->in[0];
    const int64_t h = t->dims[1], d = t->dims[2];
    const int n_rot = m->n->ip[0] < 0 ? (int)d : (int)m->n->ip[0], half = n_rot / 2, neox = (int)m->n->ip[1];
    const int32_t *pos = m->ind[1];
    if (y != a) memcpy(y, a, (size_t)(nr * h * d) * 4);
    for (int64_t r = 0; r < nr; r++) {
        if (pos[r0 + r] < 0) continue;
        const float *cs = m->rope + (r0 + r) * n_rot;
        for (int64_t hh = 0; hh < h; hh++) {
            float *xh = y + (r * h + hh) * d;
            for (int i = 0; i < half; i++) { /* npl_rope's arithmetic, with its cos/sin from the table */
                const int i0 = neox ? i : 2 * i, i1 = neox ? i + half : 2 * i + 1;
                const float c = cs[i], s = cs[half + i], x0 = xh[i0], x1 = xh[i1];
                xh[i0] = x0 * c - x1 * s;
                xh[i1] = x0 * s + x1 * c;
            }
        }
    }
}

static void member_rows(const group_job *j, const member *m, int64_t r0, int64_t nr, float *buf) {
    const vnpu_node *n = m->n;
    const npl_nn_kernels *nn = j->be->nn;
    const int fam = j->family;
    if (n->op == VNPU_OP_RESHAPE) {
        const size_t es = vnpu_dtype_size(m->out->dtype), off = (size_t)(r0 * m->rs_out) * es;
        memcpy((uint8_t *)m->outd + off, (const uint8_t *)m->ind[0] + off, (size_t)(nr * m->rs_out) * es);
        if (vnpu_is_dynamic(m->out)) { /* and the rows' scales (same block: checked) */
            const size_t so = vnpu_dyn_scale_off(m->out->nelem), b0 = (size_t)(r0 * m->rs_out / m->out->q.block);
            memcpy((uint8_t *)m->outd + so + b0 * 4, (const uint8_t *)m->ind[0] + so + b0 * 4,
                   (size_t)(nr * m->rs_out / m->out->q.block) * 4);
        }
        return;
    }
    const float *a[3] = {NULL, NULL, NULL};
    for (int i = 0; i < n_data_inputs(n); i++) {
        if (!m->rs_in[i]) { a[i] = m->bcast[i]; continue; }
        const int64_t e0 = r0 * m->rs_in[i], ne = nr * m->rs_in[i];
        if (m->in[i]->dtype == NPL_ACCEL_DT_F32) { a[i] = (const float *)m->ind[i] + e0; continue; }
        vnpu_cvt_to_f32(fam, m->in[i], m->ind[i], e0, ne, buf);
        a[i] = buf;
        buf += ne;
    }
    const int64_t e0 = r0 * m->rs_out, ne = nr * m->rs_out;
    float *y = m->out->dtype == NPL_ACCEL_DT_F32 ? (float *)m->outd + e0 : buf;
    const int64_t d = m->out->dims[m->out->rank - 1];
    switch (n->op) {
    case VNPU_OP_RMS_NORM: {
        const int64_t dn = m->in[0]->dims[m->in[0]->rank - 1];
        for (int64_t e = 0; e < ne; e += dn) nn->rms_norm(a[0] + e, n->n_in == 2 ? a[1] : NULL, y + e, (int)dn, n->fp[0]);
        break;
    }
    case VNPU_OP_ROPE: rope_rows(m, a[0], y, r0, nr); break;
    case VNPU_OP_ADD: case VNPU_OP_MUL: {
        const int mul = n->op == VNPU_OP_MUL;
        const int64_t na = m->rs_in[0] ? ne : m->in[0]->nelem, nb = m->rs_in[1] ? ne : m->in[1]->nelem;
        const int64_t w = na < nb ? na : nb; /* the broadcast period */
        for (int64_t e = 0; e < ne; e += w) {
            const float *pa = a[0] + (na == ne ? e : 0), *pb = a[1] + (nb == ne ? e : 0);
            if (mul) for (int64_t i = 0; i < w; i++) y[e + i] = pa[i] * pb[i];
            else for (int64_t i = 0; i < w; i++) y[e + i] = pa[i] + pb[i];
        }
        break;
    }
    case VNPU_OP_SCALE: for (int64_t i = 0; i < ne; i++) y[i] = a[0][i] * n->fp[0]; break;
    case VNPU_OP_SILU: for (int64_t i = 0; i < ne; i++) y[i] = silu(a[0][i]); break;
    case VNPU_OP_GELU: for (int64_t i = 0; i < ne; i++) y[i] = gelu(a[0][i]); break;
    case VNPU_OP_SWIGLU: nn->swiglu(a[0], a[1], y, (int)ne); break;
    case VNPU_OP_GEGLU: nn->geglu(a[0], a[1], y, (int)ne); break;
    case VNPU_OP_SOFTMAX:
        for (int64_t e = 0; e < ne; e += d) {
            for (int64_t i = 0; i < d; i++) y[e + i] = a[0][e + i] * n->fp[0];
            nn->softmax(y + e, (int)d);
        }
        break;
    default: if (y != a[0]) memcpy(y, a[0], (size_t)ne * 4); break; /* CAST: the conversion is below */
    }
    if (m->out->dtype != NPL_ACCEL_DT_F32) vnpu_cvt_from_f32(fam, m->out, y, e0, ne, m->outd);
}

static void group_unit(void *arg, int ith, int64_t blk) {
    const group_job *j = arg;
    const int64_t r0 = blk * j->rb, nr = r0 + j->rb <= j->rows ? j->rb : j->rows - r0;
    float *buf = (float *)(j->tbuf + (size_t)ith * j->per_thread);
    for (uint32_t k = 0; k < j->nm; k++) {
        const uint64_t t0 = j->prof ? vnpu_now_ns() : 0;
        member_rows(j, &j->m[k], r0, nr, buf);
        if (j->prof) atomic_fetch_add(&j->prof[k], vnpu_now_ns() - t0);
    }
}

npl_accel_status vnpu_rows_exec(vnpu_xc *x, uint32_t first, uint32_t count) {
    vnpu_graph *g = x->g;
    const uint64_t t_start = vnpu_prof_on(g) ? vnpu_now_ns() : 0;
    member m[MAX_MEMBERS];
    int64_t rb = 0, rows = 0;
    size_t per_thread = 0;
    for (uint32_t k = 0; k < count; k++) {
        const vnpu_node *n = &g->steps[first + k];
        member *mk = &m[k];
        memset(mk, 0, sizeof *mk);
        mk->n = n;
        geometry(g, n, &rows, mk->rs_in, &mk->rs_out);
        mk->out = &g->ctx->t[n->out[0]];
        mk->outd = g->addr[n->out[0]];
        for (uint32_t i = 0; i < n->n_in; i++) {
            mk->in[i] = &g->ctx->t[n->in[i]];
            mk->ind[i] = g->addr[n->in[i]];
        }
        const int64_t b = block_rows(g, n);
        rb = k == 0 || b < rb ? b : rb;
    }
    for (uint32_t k = 0; k < count; k++) {
        member *mk = &m[k];
        const size_t tb = thread_bytes(g, mk->n, rb);
        per_thread = tb > per_thread ? tb : per_thread;
        for (int i = 0; i < n_data_inputs(mk->n); i++) {
            if (mk->rs_in[i]) continue;
            if (mk->in[i]->dtype == NPL_ACCEL_DT_F32) { mk->bcast[i] = mk->ind[i]; continue; }
            float *f = vnpu_xc_alloc(x, (size_t)mk->in[i]->nelem * 4);
            if (!f) return vnpu_fail(x->be, NPL_ACCEL_ERR_INTERNAL, "vnpu: scratch plan too small for a row group");
            vnpu_cvt_to_f32(g->ctx->family, mk->in[i], mk->ind[i], 0, mk->in[i]->nelem, f);
            mk->bcast[i] = f;
        }
        if (mk->n->op == VNPU_OP_ROPE && !(mk->rope = vnpu_rope_table_get(x, mk->n)))
            return vnpu_fail(x->be, NPL_ACCEL_ERR_NO_MEMORY, "vnpu: out of memory for a RoPE table");
    }
    uint8_t *tbuf = vnpu_xc_alloc(x, per_thread * (size_t)x->be->n_threads);
    if (per_thread && !tbuf) return vnpu_fail(x->be, NPL_ACCEL_ERR_INTERNAL, "vnpu: scratch plan too small for a row group");
    atomic_uint_fast64_t prof[MAX_MEMBERS];
    for (uint32_t k = 0; k < count; k++) atomic_init(&prof[k], 0);
    group_job j = {x->be, g->ctx->family, m, count, rows, rb, tbuf, per_thread, t_start ? prof : NULL};
    int64_t work = 0; /* elements written: small groups (reshapes, one norm of k) stay on this thread */
    for (uint32_t k = 0; k < count; k++) work += rows * m[k].rs_out;
    if (work <= ROW_INLINE_ELEMS)
        for (int64_t b = 0; b < (rows + rb - 1) / rb; b++) group_unit(&j, 0, b);
    else
        vnpu_par_for(x->be, (rows + rb - 1) / rb, group_unit, &j);
    if (t_start) { /* the group's wall time, shared out by each step's share of the work */
        const uint64_t wall = vnpu_now_ns() - t_start;
        uint64_t sum = 0;
        for (uint32_t k = 0; k < count; k++) sum += prof[k];
        for (uint32_t k = 0; k < count; k++)
            vnpu_prof_add(g, (int)m[k].n->op, sum ? (uint64_t)((double)wall * (double)prof[k] / (double)sum) : wall / count);
    }
    return NPL_ACCEL_OK;
}

/* ---- RoPE tables ---- */

typedef struct {
    vnpu_rope_table *t;
} rope_fill;

static void rope_fill_row(void *arg, int ith, int64_t r) {
    const vnpu_rope_table *t = ((rope_fill *)arg)->t;
    (void)ith;
    if (t->pos[r] < 0) return;
    npl_rope_cos_sin(&t->a, t->pos[r], t->cs + r * t->a.n_rot); /* npl_rope_ext's angles */
}

npl_rope_args vnpu_rope_args(const vnpu_node *n, int n_rot, const float *ff) {
    return (npl_rope_args){.n_rot = n_rot, .neox = (int)n->ip[1], .base = n->fp[0], .freq_scale = n->fp[1],
                           .freq_factors = ff, .ext_factor = n->fp[2], .attn_factor = n->fp[3],
                           .corr_lo = (float)n->ip[2], .corr_hi = (float)n->ip[3]};
}

static int same_rope(const npl_rope_args *a, const npl_rope_args *b) {
    return a->n_rot == b->n_rot && a->base == b->base && a->freq_scale == b->freq_scale &&
           a->freq_factors == b->freq_factors && a->ext_factor == b->ext_factor && a->attn_factor == b->attn_factor &&
           a->corr_lo == b->corr_lo && a->corr_hi == b->corr_hi; /* neox only places the pairs */
}

_Static_assert(sizeof(((vnpu_graph *)0)->rope_buf) / sizeof(float *) == VNPU_ROPE_TABLES, "one buffer per table");

const float *vnpu_rope_table_get(vnpu_xc *x, const vnpu_node *n) {
    vnpu_run *run = x->run;
    const vnpu_tensor *t = vnpu_xc_t(x, n->in[0]);
    const int32_t *pos = x->g->addr[n->in[1]];
    const int n_rot = n->ip[0] < 0 ? (int)t->dims[2] : (int)n->ip[0];
    const int64_t rows = t->dims[0];
    const npl_rope_args a = vnpu_rope_args(n, n_rot, n->n_in == 3 ? x->g->addr[n->in[2]] : NULL);
    for (int i = 0; i < run->n_rope; i++) {
        const vnpu_rope_table *r = &run->rope[i];
        if (r->pos == pos && r->rows == rows && same_rope(&r->a, &a)) return r->cs;
    }
    /* until the first eviction the tables fill slots 0, 1, ... in order */
    int slot = run->n_rope;
    if (run->n_rope == VNPU_ROPE_TABLES) { /* full: the oldest goes, its storage reused */
        slot = run->rope[0].slot;
        memmove(&run->rope[0], &run->rope[1], (VNPU_ROPE_TABLES - 1) * sizeof run->rope[0]);
        run->n_rope--;
    }
    vnpu_graph *g = x->g;
    const size_t need = (size_t)(rows * n_rot);
    if (g->rope_cap[slot] < need) { /* first executes of a graph only: its shapes are fixed */
        float *b = realloc(g->rope_buf[slot], need * sizeof(float));
        if (!b) return NULL;
        g->rope_buf[slot] = b, g->rope_cap[slot] = need;
    }
    vnpu_rope_table *r = &run->rope[run->n_rope];
    *r = (vnpu_rope_table){pos, rows, a, g->rope_buf[slot], slot};
    run->n_rope++;
    vnpu_par_for(x->be, rows, rope_fill_row, &(rope_fill){r});
    return r->cs;
}
