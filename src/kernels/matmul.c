/* Matmul with quantized weights, llama.cpp's way: activations are quantized
 * on the fly to the weight type's dot partner (Q8_0, Q8_K, ...) and every
 * output is one vec_dot of a weight row with an activation row. With many
 * activation rows (prefill) and a GEMM for the weight type, the quantized
 * rows are packed once and a register-tiled GEMM (kernels/gemm.h) takes
 * blocks of weight rows instead; with one row (decode) and a GEMV for the
 * type, 16 weight rows are taken at once (kernels/gemv.h). */
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "kernels/matmul.h"

#include "kernels/gemm.h"
#include "kernels/gemv.h"
#include "kernels/wpack.h"

enum {
    ROW_BLOCK = 16,      /* weight rows kept hot while sweeping activations */
    MAX_PARTS = 8,       /* GEMV: a range of weight rows per thread up to this many threads */
    GEMM_MIN_M = 16,     /* fewer activation rows: decoding weights for the GEMM does not pay */
    CHUNK_ROWS = 1024,   /* most weight rows one thread takes at once */
    INLINE_QUANT = 1 << 14, /* m * k up to this: quantize on the calling thread, no dispatch */
};

typedef struct {
    const npl_kernels *kt;
    const npl_matmul_kernel_args *a;
    const void *w;       /* the weights the kernels read: a->wp for packed kernels, else a->w */
    const void *xq;      /* activations in the dot partner type */
    void *xq_out;
    size_t w_row, xq_row;
    int64_t k, n, m;
    npl_vec_dot_fn dot;
    npl_vec_dot4_fn dot4; /* one weight row against 4 activation rows, or NULL */
    const npl_gemm_kernels *gemm; /* or NULL: vec_dot path */
    npl_gemm_x xp;                /* packed activations for the GEMM */
    const npl_gemv_kernels *gemv; /* m < GEMM_MIN_M and a GEMV for the type, or NULL */
    npl_gemv_x gx[GEMM_MIN_M];    /* the prepared activation rows for the GEMV */
    char *gx_mem;                 /* their memory, npl_gemv_x_size(k) per row */
    int64_t chunk_max;    /* rows per take at most */
    int nth;
    atomic_int_fast64_t next; /* first weight row not yet taken */
    int parts;                /* GEMV: 0, or the row ranges taken as part_next says (one per thread) */
    atomic_int_fast64_t part_next[MAX_PARTS];
} mm_job;

/* Threads take chunks of weight rows from a shared counter rather than fixed
 * shares, so a thread the OS delays does not hold the others up. Chunks
 * shrink with the rows left (a quarter of a thread's fair share, in blocks
 * of 16, at most chunk_max): few atomics on a large matrix, and small last
 * chunks to even out the end and bound what a preempted thread holds. */
static int take_rows(mm_job *j, int64_t *r0, int64_t *r1) {
    int_fast64_t cur = atomic_load_explicit(&j->next, memory_order_relaxed);
    for (;;) {
        if (cur >= j->n) return 0;
        int64_t c = (j->n - cur) / (4 * j->nth) & ~(int64_t)(ROW_BLOCK - 1);
        c = c < ROW_BLOCK ? ROW_BLOCK : c > j->chunk_max ? j->chunk_max : c;
        const int64_t end = cur + c < j->n ? cur + c : j->n;
        if (atomic_compare_exchange_weak_explicit(&j->next, &cur, end, memory_order_relaxed, memory_order_relaxed)) {
            *r0 = cur;
            *r1 = end;
            return 1;
        }
    }
}

static void quantize_rows(void *arg, int ith, int nth) {
    mm_job *j = arg;
    npl_type vdt = npl_type_get(j->a->wtype)->vec_dot_type;
    npl_from_float_fn q = j->kt->quantize_row[vdt];
    /* a contiguous range per thread, as the op before wrote its rows: fewer
     * lines move between the cores' caches than with every nth row */
    for (int64_t r = j->m * ith / nth, r1 = j->m * (ith + 1) / nth; r < r1; r++) {
        char *row = (char *)j->xq_out + r * j->xq_row;
        q(j->a->x + r * j->a->ldx, row, j->k);
        if (j->gemm) j->gemm->pack(&j->xp, r, row);
        if (j->gemv) j->gemv->prep(&j->gx[r], j->gx_mem + (size_t)r * npl_gemv_x_size(j->k), row, j->k);
    }
}

static void gemm_rows(void *arg, int ith, int nth) {
    (void)ith; (void)nth;
    mm_job *j = arg;
    int64_t r0, r1;
    while (take_rows(j, &r0, &r1)) j->gemm->rows(j->w, j->w_row, r0, r1, &j->xp, j->a->y, j->a->ldy);
}

/* Range p of the GEMV's parts: rows [lo, hi), block-aligned. */
static int64_t part_start(const mm_job *j, int p) {
    return p >= j->parts ? j->n : (j->n * p / j->parts) & ~(int64_t)(ROW_BLOCK - 1);
}

/* A chunk from range p: from its front, what it has left up to chunk_max
 * rows. One long call per range rather than a quarter of what is left each
 * time: every call of a GEMV kernel starts its streams (and their
 * prefetches) afresh, and Gemma's layer matmuls went 18 % faster so
 * (bench/decode_ab.sh --gemv 10, AMD EPYC Zen 5); the output
 * matrix's ranges still go in chunk_max pieces a delayed thread's helper
 * can take. */
static int take_part(mm_job *j, int p, int64_t *r0, int64_t *r1) {
    const int64_t hi = part_start(j, p + 1);
    int_fast64_t cur = atomic_load_explicit(&j->part_next[p], memory_order_relaxed);
    for (;;) {
        if (cur >= hi) return 0;
        const int64_t c = hi - cur < j->chunk_max ? hi - cur : j->chunk_max;
        const int64_t end = cur + c < hi ? cur + c : hi;
        if (atomic_compare_exchange_weak_explicit(&j->part_next[p], &cur, end, memory_order_relaxed,
                                                  memory_order_relaxed)) {
            *r0 = cur, *r1 = end;
            return 1;
        }
    }
}

/* Decode reads weights at the memory's pace, and a core streams one
 * contiguous range faster than chunks shared out in turn (Zen 5: 71 against
 * 57 GB/s for two threads, bench/bandwidth.c): thread i takes range i front
 * to back, then helps with the others' (a delayed thread holds no one up). */
static void gemv_rows(void *arg, int ith, int nth) {
    (void)nth;
    mm_job *j = arg;
    int64_t r0, r1;
    if (!j->parts) {
        while (take_rows(j, &r0, &r1)) j->gemv->rows(j->w, j->w_row, r0, r1, j->gx, (int)j->m, j->a->y, j->a->ldy);
        return;
    }
    for (int q = 0; q < j->parts; q++)
        for (const int p = (ith + q) % j->parts; take_part(j, p, &r0, &r1);)
            j->gemv->rows(j->w, j->w_row, r0, r1, j->gx, (int)j->m, j->a->y, j->a->ldy);
}

static void init_parts(mm_job *j) {
    j->parts = j->nth <= MAX_PARTS && j->n >= 4 * ROW_BLOCK * j->nth ? j->nth : 0;
    for (int p = 0; p < j->parts; p++) atomic_init(&j->part_next[p], part_start(j, p));
}

static const npl_gemm_kernels *gemm_for(npl_isa isa, npl_type t, int64_t m, int64_t k) {
    return m >= GEMM_MIN_M && k <= NPL_GEMM_MAX_K ? npl_gemm_get(isa, t) : NULL;
}

static const npl_gemv_kernels *gemv_for(npl_isa isa, int gfni, npl_type t, int64_t m, int64_t k) {
    return m < GEMM_MIN_M && k <= NPL_GEMM_MAX_K ? npl_gemv_get(isa, t, gfni) : NULL;
}

/* Weights that come packed (a->wp) take this family's packed GEMM / GEMV
 * where it has them (same bits: wpack.h); otherwise the original rows. */
static void use_packed(mm_job *j, npl_isa isa) {
    const npl_matmul_kernel_args *a = j->a;
    j->w = a->w;
    if (!a->wp || !npl_wpack_wanted(isa, a->wtype, a->k, a->n)) return;
    if (j->gemm) j->gemm = npl_gemm_get_packed(isa, a->wtype), j->w = a->wp;
    else if (j->gemv) j->gemv = npl_gemv_get_packed(isa, a->wtype), j->w = a->wp;
}

/* A block of 16 weight rows stays in cache while every activation row
 * passes over it. */
static void dot_rows(void *arg, int ith, int nth) {
    (void)ith; (void)nth;
    mm_job *j = arg;
    const char *wb = j->a->w, *xb = j->xq;
    float *y = j->a->y;
    const int64_t ldy = j->a->ldy;
    int64_t r0, r1;
    while (take_rows(j, &r0, &r1))
    for (int64_t nb = r0; nb < r1; nb += ROW_BLOCK) {
        int64_t ne = nb + ROW_BLOCK < r1 ? nb + ROW_BLOCK : r1;
        int64_t m = 0;
        if (j->dot4)
            for (; m + 4 <= j->m; m += 4) {
                const char *xr = xb + m * j->xq_row;
                for (int64_t r = nb; r < ne; r++)
                    j->dot4((int)j->k, y + m * ldy + r, (size_t)ldy, wb + r * j->w_row, xr, j->xq_row);
            }
        for (; m < j->m; m++) {
            const char *xr = xb + m * j->xq_row;
            float *yr = y + m * ldy;
            for (int64_t r = nb; r < ne; r++) j->dot((int)j->k, &yr[r], wb + r * j->w_row, xr);
        }
    }
}

size_t npl_matmul_kernel_scratch(npl_type wtype, int64_t k, int64_t m) {
    const npl_type_traits *t = npl_type_get(wtype);
    size_t row, total;
    if (!t || t->vec_dot_type == NPL_TYPE_F32) return 0;
    if (npl_row_size(t->vec_dot_type, k, &row) || __builtin_mul_overflow(row, (size_t)m, &total)) return 0;
    /* the best ISA's GEMM: an executor for a lower ISA just leaves this unused */
    if (gemm_for(NPL_ISA_AMX, wtype, m, k)) total += npl_gemm_x_size(m, k);
    if (gemv_for(NPL_ISA_AMX, 1, wtype, m, k)) total += npl_gemv_x_size(k) * (size_t)m;
    return total;
}

/* ---- several matrices on one activation (q, k, v; gate, up) in one dispatch ---- */

typedef struct {
    mm_job *j;
    int n;
} mm_group;

/* The decode GEMV's job for a up to which rows each thread takes (weights,
 * kernel, parts; no activations yet): 0 when a does not take that path. */
static int gemv_job(npl_isa isa, npl_pool *pool, const npl_matmul_kernel_args *a, mm_job *j) {
    const npl_kernels *kt = npl_kernels_get(isa);
    *j = (mm_job){.kt = kt, .a = a, .k = a->k, .n = a->n, .m = a->m, .nth = npl_pool_size(pool)};
    const npl_type_traits *t = npl_type_get(a->wtype);
    if (!t || !kt->vec_dot[a->wtype] || npl_row_size(a->wtype, j->k, &j->w_row)) return 0;
    j->gemv = gemv_for(kt->isa, !a->no_gfni, a->wtype, j->m, j->k);
    if (!j->gemv) return 0;
    use_packed(j, kt->isa);
    init_parts(j);
    return 1;
}

/* Threads go through the members in order, each taking chunks as gemv_rows
 * does: a member's last chunks overlap the next member's first ones instead
 * of every thread waiting for the slowest at each member's end. */
static void group_rows(void *arg, int ith, int nth) {
    const mm_group *g = arg;
    for (int i = 0; i < g->n; i++) gemv_rows(&g->j[i], ith, nth);
}

int npl_matmul_kernel_group(npl_isa isa, npl_pool *pool, const npl_matmul_kernel_args *a, int n, void *const *scratch) {
    const npl_kernels *kt = npl_kernels_get(isa);
    isa = kt->isa;
    mm_job j[NPL_MATMUL_GROUP_MAX];
    if (n < 2 || n > NPL_MATMUL_GROUP_MAX) return 1;
    for (int i = 0; i < n; i++) { /* the decode GEMV path for every member, else one by one */
        const npl_type_traits *t = npl_type_get(a[i].wtype);
        if (!t || !kt->vec_dot[a[i].wtype] || t->vec_dot_type == NPL_TYPE_F32 || !kt->quantize_row[t->vec_dot_type] ||
            a[i].m * a[i].k > INLINE_QUANT || !gemv_for(isa, !a[i].no_gfni, a[i].wtype, a[i].m, a[i].k) ||
            npl_row_size(a[i].wtype, a[i].k, &(size_t){0}) || npl_row_size(t->vec_dot_type, a[i].k, &(size_t){0}))
            return 1;
    }
    for (int i = 0; i < n; i++) { /* what npl_matmul_kernel does before its GEMV dispatch */
        mm_job *ji = &j[i];
        gemv_job(isa, pool, &a[i], ji); /* checked above: the GEMV path */
        npl_row_size(npl_type_get(a[i].wtype)->vec_dot_type, ji->k, &ji->xq_row);
        ji->xq_out = scratch[i];
        ji->xq = scratch[i];
        ji->gx_mem = (char *)scratch[i] + ji->xq_row * (size_t)ji->m;
        quantize_rows(ji, 0, 1);
        ji->chunk_max = CHUNK_ROWS / ji->m > ROW_BLOCK ? CHUNK_ROWS / ji->m & ~(int64_t)(ROW_BLOCK - 1) : ROW_BLOCK;
    }
    mm_group g = {j, n};
    npl_pool_prefetch(pool, NULL, 0); /* these weights are read now */
    npl_pool_run(pool, group_rows, &g);
    return 0;
}

int npl_matmul_kernel(npl_isa isa, npl_pool *pool, const npl_matmul_kernel_args *a, void *scratch, char *err,
                      size_t errlen) {
    const npl_type_traits *t = npl_type_get(a->wtype);
    const npl_kernels *kt = npl_kernels_get(isa);
    isa = kt->isa;
    mm_job j = {.kt = kt, .a = a, .w = a->w};
    j.k = a->k;
    j.n = a->n;
    j.m = a->m;
    if (!t || !kt->vec_dot[a->wtype]) {
        snprintf(err, errlen, "matmul: no kernel for %s weights", npl_type_name(a->wtype));
        return -1;
    }
    if (npl_row_size(a->wtype, j.k, &j.w_row)) {
        snprintf(err, errlen, "matmul: row of %lld not a multiple of the %s block", (long long)j.k, t->name);
        return -1;
    }
    if (t->vec_dot_type == NPL_TYPE_F32) {
        j.xq = a->x;
        j.xq_row = (size_t)a->ldx * sizeof(float);
    } else {
        if (!kt->quantize_row[t->vec_dot_type] || npl_row_size(t->vec_dot_type, j.k, &j.xq_row)) {
            snprintf(err, errlen, "matmul: cannot convert activations to %s", npl_type_name(t->vec_dot_type));
            return -1;
        }
        j.xq_out = scratch;
        j.xq = scratch;
        j.gemm = gemm_for(isa, a->wtype, j.m, j.k);
        if (j.gemm) npl_gemm_x_init(&j.xp, (char *)scratch + j.xq_row * (size_t)j.m, j.m, j.k);
        j.gemv = gemv_for(isa, !a->no_gfni, a->wtype, j.m, j.k);
        use_packed(&j, isa);
        j.gx_mem = (char *)scratch + j.xq_row * (size_t)j.m;
        if (j.m * j.k <= INLINE_QUANT) quantize_rows(&j, 0, 1);
        else npl_pool_run(pool, quantize_rows, &j);
    }
    atomic_init(&j.next, 0);
    j.nth = npl_pool_size(pool);
    j.chunk_max = j.gemm ? ROW_BLOCK : CHUNK_ROWS / j.m > ROW_BLOCK ? CHUNK_ROWS / j.m & ~(int64_t)(ROW_BLOCK - 1) : ROW_BLOCK;
    if (j.gemm) {
        npl_pool_run(pool, gemm_rows, &j);
        return 0;
    }
    if (j.gemv) {
        init_parts(&j);
        npl_pool_prefetch(pool, NULL, 0); /* these weights are read now */
        npl_pool_run(pool, gemv_rows, &j);
        return 0;
    }
    j.dot = kt->vec_dot[a->wtype];
    j.dot4 = npl_vec_dot4_get(isa, a->wtype);
    npl_pool_run(pool, dot_rows, &j);
    return 0;
}

void npl_matmul_kernel_prefetch(npl_isa isa, npl_pool *pool, const npl_matmul_kernel_args *a, int n, size_t bytes) {
    npl_pool_range r[NPL_POOL_PREFETCH_MAX];
    int nr = 0;
    if (npl_pool_size(pool) < 2) return;
    size_t left[MAX_PARTS]; /* what is left of each thread's share of bytes */
    for (int p = 0; p < MAX_PARTS; p++) left[p] = bytes / (size_t)npl_pool_size(pool);
    for (int i = 0; i < n && nr < NPL_POOL_PREFETCH_MAX; i++) {
        mm_job j;
        if (!gemv_job(isa, pool, &a[i], &j)) break; /* not a decode GEMV: read as it comes */
        const int parts = j.parts ? j.parts : 1;
        /* the worker's own range first: thread p reads range p first, and
         * the caller (share 0) is busy with the ops before */
        for (int q = 0; q < parts && nr < NPL_POOL_PREFETCH_MAX; q++) {
            const int p = (q + 1) % parts;
            const int64_t lo = j.parts ? part_start(&j, p) : 0, hi = j.parts ? part_start(&j, p + 1) : j.n;
            const size_t all = (size_t)(hi - lo) * j.w_row, take = left[p] < all ? left[p] : all;
            if (!take) continue;
            left[p] -= take;
            r[nr++] = (npl_pool_range){(const char *)j.w + (size_t)lo * j.w_row, take, p ? p : 1};
        }
    }
    if (nr) npl_pool_prefetch(pool, r, nr);
}
