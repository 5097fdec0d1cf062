/* Every nn kernel (norms, activations, softmax, attention) on every ISA table
 * this CPU has, plus RoPE and the f16 row converters, against
 * straightforward double-precision references written here. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "kernels/nn_kernels.h"

/* ---- helpers ---- */

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static uint32_t rnd_u32(void) {
    rng ^= rng >> 12;
    rng ^= rng << 25;
    rng ^= rng >> 27;
    return (uint32_t)((rng * 0x2545F4914F6CDD1Dull) >> 32);
}
static float rnd_uniform(float lo, float hi) { return lo + (hi - lo) * (float)(rnd_u32() >> 8) * 0x1p-24f; }

/* f16 -> double, written from the IEEE definition (independent of the library) */
static double f16_decode(uint16_t h) {
    const int e = (h >> 10) & 31, m = h & 1023;
    double v;
    if (e == 0) v = ldexp(m, -24);
    else if (e == 31) v = m ? NAN : INFINITY;
    else v = ldexp(1024 + m, e - 25);
    return (h & 0x8000) ? -v : v;
}

/* float -> f16 by search: nearest of the two neighbouring halves, ties to even;
 * 0x7C00 counts as 65536 so values from 65520 round to inf as IEEE says. */
static uint16_t f16_encode_ref(float x) {
    if (isnan(x)) return 0x7E00;
    const uint16_t sign = signbit(x) ? 0x8000 : 0;
    const double ax = fabs((double)x);
    if (ax >= 65536.0) return sign | 0x7C00;
    unsigned lo = 0, hi = 0x7C00; /* dec(lo) <= ax < dec(hi) */
    while (hi - lo > 1) {
        const unsigned mid = (lo + hi) / 2;
        if (f16_decode((uint16_t)mid) <= ax) lo = mid;
        else hi = mid;
    }
    const double dlo = f16_decode((uint16_t)lo), dhi = hi == 0x7C00 ? 65536.0 : f16_decode((uint16_t)hi);
    unsigned r;
    if (ax - dlo < dhi - ax) r = lo;
    else if (ax - dlo > dhi - ax) r = hi;
    else r = (lo & 1) ? hi : lo;
    return (uint16_t)(sign | r);
}

/* a random finite f16 of magnitude below 2 (one in 16 is zero) */
static uint16_t rnd_f16(void) {
    const uint32_t r = rnd_u32();
    if ((r & 15) == 0) return 0;
    const unsigned e = 9 + (r >> 4) % 7, m = (r >> 8) & 1023;
    return (uint16_t)(((r >> 20) & 1) << 15 | e << 10 | m);
}

/* One CHECK per array: the first element outside rel*|want| + abs is printed. */
static void check_array(const char *what, const char *isa, int n_case, const float *got, const double *want,
                        int64_t n, double rel, double abs_tol) {
    int64_t bad = -1;
    for (int64_t i = 0; i < n && bad < 0; i++) {
        const double err = fabs((double)got[i] - want[i]);
        if (!(err <= rel * fabs(want[i]) + abs_tol) && !(isinf(want[i]) && got[i] == want[i])) bad = i;
    }
    if (bad >= 0)
        fprintf(stderr, "%s [%s] n=%d: element %lld: got %.9g want %.9g\n", what, isa, n_case, (long long)bad,
                (double)got[bad], want[bad]);
    CHECK(bad < 0);
}

/* ---- rows: norms, activations, add, scale, softmax ---- */

static void test_rows(const npl_nn_kernels *k, const char *isa) {
    static const int sizes[] = {1, 3, 7, 8, 15, 16, 17, 31, 33, 64, 100, 640, 2053};
    enum { MAXN = 2053 };
    static float x[MAXN], w[MAXN], u[MAXN], y[MAXN], y2[MAXN];
    static double ref[MAXN];
    for (size_t si = 0; si < sizeof sizes / sizeof *sizes; si++) {
        const int n = sizes[si];
        for (int i = 0; i < n; i++) {
            x[i] = rnd_uniform(-3.0f, 3.0f);
            w[i] = rnd_uniform(-2.0f, 2.0f);
            u[i] = rnd_uniform(-2.0f, 2.0f);
        }
        /* rms_norm, with and without weight, and in place */
        const float eps = 1e-6f;
        double ss = 0;
        for (int i = 0; i < n; i++) ss += (double)x[i] * x[i];
        const double sc = 1.0 / sqrt(ss / n + eps);
        for (int i = 0; i < n; i++) ref[i] = x[i] * sc * w[i];
        k->rms_norm(x, w, y, n, eps);
        check_array("rms_norm", isa, n, y, ref, n, 1e-5, 1e-7);
        for (int i = 0; i < n; i++) ref[i] = x[i] * sc;
        k->rms_norm(x, NULL, y, n, eps);
        check_array("rms_norm(no w)", isa, n, y, ref, n, 1e-5, 1e-7);
        memcpy(y2, x, sizeof(float) * n);
        k->rms_norm(y2, NULL, y2, n, eps);
        CHECK(memcmp(y2, y, sizeof(float) * n) == 0);

        /* swiglu and geglu over a wide gate range, also in place (y == g) */
        for (int i = 0; i < n; i++) x[i] = rnd_uniform(-12.0f, 12.0f);
        if (n > 4) x[1] = -100.0f, x[2] = 100.0f, x[3] = 0.0f;
        for (int i = 0; i < n; i++) ref[i] = (double)x[i] / (1.0 + exp(-(double)x[i])) * u[i];
        k->swiglu(x, u, y, n);
        check_array("swiglu", isa, n, y, ref, n, 1e-5, 1e-7);
        memcpy(y2, x, sizeof(float) * n);
        k->swiglu(y2, u, y2, n);
        CHECK(memcmp(y2, y, sizeof(float) * n) == 0);
        for (int i = 0; i < n; i++) {
            const double g = x[i];
            ref[i] = 0.5 * g * (1.0 + tanh(sqrt(2.0 / M_PI) * (g + 0.044715 * g * g * g))) * u[i];
        }
        k->geglu(x, u, y, n);
        check_array("geglu", isa, n, y, ref, n, 1e-5, 1e-7);
        memcpy(y2, x, sizeof(float) * n);
        k->geglu(y2, u, y2, n);
        CHECK(memcmp(y2, y, sizeof(float) * n) == 0);

        /* add and scale */
        for (int i = 0; i < n; i++) ref[i] = (double)x[i] + u[i];
        k->add(x, u, y, n);
        check_array("add", isa, n, y, ref, n, 1e-7, 0);
        for (int i = 0; i < n; i++) ref[i] = (double)x[i] * 0.37f;
        k->scale(x, 0.37f, y, n);
        check_array("scale", isa, n, y, ref, n, 1e-7, 0);
        memcpy(y2, x, sizeof(float) * n);
        k->scale(y2, 0.37f, y2, n);
        CHECK(memcmp(y2, y, sizeof(float) * n) == 0);

        /* softmax with a wide range and a few masked (-inf) entries */
        for (int i = 0; i < n; i++) y[i] = rnd_uniform(-20.0f, 20.0f);
        if (n >= 3) y[n / 2] = -INFINITY, y[n - 1] = -INFINITY;
        double mx = -INFINITY, sum = 0;
        for (int i = 0; i < n; i++) mx = y[i] > mx ? y[i] : mx;
        for (int i = 0; i < n; i++) sum += exp((double)y[i] - mx);
        for (int i = 0; i < n; i++) ref[i] = exp((double)y[i] - mx) / sum;
        k->softmax(y, n);
        check_array("softmax", isa, n, y, ref, n, 1e-5, 1e-12);
    }
}

/* ---- attention ---- */

typedef struct {
    int hd, n_head, n_kv, n_q, n_ctx, window;
    float softcap, scale;
    int64_t q_stride, out_stride;
    int32_t *pos;
    float *q, *out;
    uint16_t *kc, *vc;
    double *ref; /* [n_q][n_head][hd] */
} attn_case;

static void attn_reference(attn_case *c) {
    const int G = c->n_head / c->n_kv;
    const int64_t cache = (int64_t)c->n_ctx * c->n_kv * c->hd;
    double *s = malloc(sizeof(double) * (size_t)c->n_ctx);
    double *kd = malloc(sizeof(double) * (size_t)cache), *vd = malloc(sizeof(double) * (size_t)cache);
    for (int64_t i = 0; i < cache; i++) {
        kd[i] = f16_decode(c->kc[i]);
        vd[i] = f16_decode(c->vc[i]);
    }
    for (int i = 0; i < c->n_q; i++) {
        for (int h = 0; h < c->n_head; h++) {
            double *r = c->ref + ((int64_t)i * c->n_head + h) * c->hd;
            memset(r, 0, sizeof(double) * (size_t)c->hd);
            const int32_t p = c->pos[i];
            if (p < 0) continue;
            const float *q = c->q + i * c->q_stride + (int64_t)h * c->hd;
            const int kvh = h / G;
            double mx = -INFINITY, sum = 0;
            /* materialize every score, then mask */
            for (int j = 0; j < c->n_ctx; j++) {
                const double *kr = kd + ((int64_t)j * c->n_kv + kvh) * c->hd;
                double d = 0;
                for (int e = 0; e < c->hd; e++) d += (double)q[e] * kr[e];
                d *= c->scale;
                if (c->softcap > 0) d = c->softcap * tanh(d / c->softcap);
                const int visible = j <= p && (c->window <= 0 || p - j < c->window);
                s[j] = visible ? d : -INFINITY;
                mx = s[j] > mx ? s[j] : mx;
            }
            for (int j = 0; j < c->n_ctx; j++) {
                s[j] = exp(s[j] - mx);
                sum += s[j];
            }
            for (int j = 0; j < c->n_ctx; j++) {
                if (s[j] == 0) continue;
                const double *vr = vd + ((int64_t)j * c->n_kv + kvh) * c->hd;
                for (int e = 0; e < c->hd; e++) r[e] += s[j] / sum * vr[e];
            }
        }
    }
    free(s);
    free(kd);
    free(vd);
}

/* Fills q, caches and the reference for the given positions (n_ctx = max + 1). */
static void attn_setup(attn_case *c, float q_amp) {
    int32_t mx = 0;
    for (int i = 0; i < c->n_q; i++) mx = c->pos[i] > mx ? c->pos[i] : mx;
    c->n_ctx = mx + 1;
    c->scale = 1.0f / sqrtf((float)c->hd);
    c->q_stride = (int64_t)c->n_head * c->hd + 3; /* strides that are not the row size */
    c->out_stride = (int64_t)c->n_head * c->hd + 5;
    c->q = malloc(sizeof(float) * (size_t)(c->q_stride * c->n_q));
    c->out = malloc(sizeof(float) * (size_t)(c->out_stride * c->n_q));
    const int64_t cache = (int64_t)c->n_ctx * c->n_kv * c->hd;
    c->kc = malloc(sizeof(uint16_t) * (size_t)cache);
    c->vc = malloc(sizeof(uint16_t) * (size_t)cache);
    c->ref = malloc(sizeof(double) * (size_t)c->n_q * c->n_head * c->hd);
    for (int64_t i = 0; i < c->q_stride * c->n_q; i++) c->q[i] = rnd_uniform(-q_amp, q_amp);
    for (int64_t i = 0; i < cache; i++) {
        c->kc[i] = rnd_f16();
        c->vc[i] = rnd_f16();
    }
    /* Cache rows no query attends hold NaN: a kernel that reads them into a
     * sum (wrong mask, or a tile spanning a gap) fails loudly. */
    for (int j = 0; j < c->n_ctx; j++) {
        int seen = 0;
        for (int i = 0; i < c->n_q; i++)
            seen |= c->pos[i] >= j && (c->window <= 0 || c->pos[i] - j < c->window);
        if (seen) continue;
        for (int64_t e = 0; e < (int64_t)c->n_kv * c->hd; e++) {
            c->kc[(int64_t)j * c->n_kv * c->hd + e] = 0x7E00;
            c->vc[(int64_t)j * c->n_kv * c->hd + e] = 0x7E00;
        }
    }
    attn_reference(c);
}

static void attn_free(attn_case *c) {
    free(c->q);
    free(c->out);
    free(c->kc);
    free(c->vc);
    free(c->ref);
}

/* Runs the kernel as nth threads would (every ith in turn) and compares. */
static void attn_check(const npl_nn_kernels *k, const char *isa, attn_case *c, int nth, int id) {
    for (int64_t i = 0; i < c->out_stride * c->n_q; i++) c->out[i] = NAN; /* every output must be written */
    const npl_attn_args a = {
        .q = c->q, .q_stride = c->q_stride, .kc = c->kc, .vc = c->vc, .out = c->out,
        .out_stride = c->out_stride, .pos = c->pos, .n_q = c->n_q, .n_head = c->n_head,
        .n_kv = c->n_kv, .hd = c->hd, .scale = c->scale, .softcap = c->softcap, .window = c->window,
    };
    for (int ith = 0; ith < nth; ith++) k->attention(&a, ith, nth);
    int bad = 0;
    for (int i = 0; i < c->n_q && !bad; i++) {
        for (int h = 0; h < c->n_head && !bad; h++) {
            const float *o = c->out + i * c->out_stride + (int64_t)h * c->hd;
            const double *r = c->ref + ((int64_t)i * c->n_head + h) * c->hd;
            for (int e = 0; e < c->hd; e++) {
                const int ok = c->pos[i] < 0 ? o[e] == 0.0f : fabs(o[e] - r[e]) <= 1e-4;
                if (!ok) {
                    fprintf(stderr,
                            "attention [%s] case %d (hd %d, heads %d/%d, n_q %d, window %d, softcap %g, nth %d): "
                            "q %d (pos %d) head %d elem %d: got %.7g want %.7g\n",
                            isa, id, c->hd, c->n_head, c->n_kv, c->n_q, c->window, (double)c->softcap, nth, i,
                            c->pos[i], h, e, (double)o[e], r[e]);
                    bad = 1;
                    break;
                }
            }
        }
    }
    CHECK(!bad);
}

typedef struct {
    const npl_nn_kernels *k;
    const char *name;
} isa_table;

static void test_attention(const isa_table *tabs, int n_tabs) {
    static const int hds[] = {64, 128, 256};
    static const int heads[][2] = {{4, 1}, {8, 8}, {4, 2}};
    static const int nqs[] = {1, 7, 33};
    static const int windows[] = {0, 5, 512};
    static const float caps[] = {0.0f, 50.0f};
    static const int starts[] = {0, 37, 530};
    int id = 0;
    for (int a = 0; a < 3; a++)
        for (int b = 0; b < 3; b++)
            for (int d = 0; d < 3; d++)
                for (int w = 0; w < 3; w++)
                    for (int s = 0; s < 2; s++, id++) {
                        attn_case c = {.hd = hds[a], .n_head = heads[b][0], .n_kv = heads[b][1], .n_q = nqs[d],
                                       .window = windows[w], .softcap = caps[s]};
                        int32_t pos[33];
                        const int start = starts[id % 3];
                        for (int i = 0; i < c.n_q; i++) pos[i] = start + i;
                        if (c.n_q >= 7) pos[3] = -1, pos[c.n_q - 1] = -1; /* padding rows */
                        c.pos = pos;
                        /* with a softcap, scores large enough for the cap to matter */
                        attn_setup(&c, c.softcap > 0 ? 40.0f : 1.0f);
                        for (int t = 0; t < n_tabs; t++) {
                            attn_check(tabs[t].k, tabs[t].name, &c, 1, id);
                            attn_check(tabs[t].k, tabs[t].name, &c, 3, id);
                        }
                        attn_free(&c);
                    }

    /* Unordered positions (tiles must not merge far-apart rows), head sizes
     * that take the fallbacks (80: not a multiple of 16; 36: not of 8),
     * groups of 3 and 8 heads, more threads than pairs, one long decode.
     * Heads past 512 up to NPL_ATTN_MAX_HD (the x86 tiles take fewer rows
     * there; 520 and 776 are multiples of 8 only) and odd sizes (100, 33,
     * 2): every size the model loader accepts. */
    static const int32_t mixed[] = {40, 3, -1, 41, 10, 42, 0, 39, 2, 200, 201, 150};
    static const struct {
        int hd, nh, nkv, n_q, window;
        float cap;
    } extra[] = {
        {64, 8, 8, 12, 0, 0}, {64, 8, 8, 12, 16, 0}, {80, 4, 2, 12, 0, 0},
        {36, 4, 2, 12, 7, 50}, {128, 6, 3, 12, 0, 0}, {64, 12, 4, 12, 0, 0},
        {64, 16, 2, 12, 5, 50}, {256, 4, 1, 1, 0, 0},
        {768, 4, 2, 12, 0, 0}, {1024, 8, 1, 12, 16, 50}, {NPL_ATTN_MAX_HD, 2, 2, 1, 0, 0}, {520, 4, 1, 12, 0, 0},
        {776, 2, 1, 12, 0, 0}, {100, 4, 2, 12, 7, 0}, {33, 6, 3, 12, 0, 50}, {2, 2, 1, 12, 0, 0},
    };
    for (size_t e = 0; e < sizeof extra / sizeof *extra; e++, id++) {
        attn_case c = {.hd = extra[e].hd, .n_head = extra[e].nh, .n_kv = extra[e].nkv, .n_q = extra[e].n_q,
                       .window = extra[e].window, .softcap = extra[e].cap};
        int32_t pos[12];
        memcpy(pos, mixed, sizeof pos);
        if (c.n_q == 1) pos[0] = 3000;
        c.pos = pos;
        attn_setup(&c, 1.0f);
        for (int t = 0; t < n_tabs; t++) {
            attn_check(tabs[t].k, tabs[t].name, &c, 1, id);
            attn_check(tabs[t].k, tabs[t].name, &c, 2, id);
            attn_check(tabs[t].k, tabs[t].name, &c, 7, id);
        }
        attn_free(&c);
    }
}

/* ---- RoPE ---- */

static void test_rope(void) {
    static const int32_t positions[] = {0, 1, 17, 1000, 8191};
    static const float bases[] = {10000.0f, 1000000.0f};
    static const float scales[] = {1.0f, 0.125f};
    static const int dims[][2] = {{64, 64}, {128, 128}, {128, 64}, {256, 256}};
    enum { NH = 3 };
    float x[NH * 256], y[NH * 256];
    double ref[NH * 256];
    for (int neox = 0; neox <= 1; neox++)
        for (int b = 0; b < 2; b++)
            for (int fs = 0; fs < 2; fs++)
                for (int p = 0; p < 5; p++)
                    for (int d = 0; d < 4; d++) {
                        const int hd = dims[d][0], n_rot = dims[d][1], half = n_rot / 2;
                        for (int i = 0; i < NH * hd; i++) x[i] = rnd_uniform(-1.0f, 1.0f);
                        for (int h = 0; h < NH; h++) {
                            const float *xh = x + h * hd;
                            double *rh = ref + h * hd;
                            for (int i = 0; i < hd; i++) rh[i] = xh[i];
                            for (int i = 0; i < half; i++) {
                                const double th = (double)positions[p] * scales[fs] *
                                                  pow((double)bases[b], -2.0 * i / n_rot);
                                const int i0 = neox ? i : 2 * i, i1 = neox ? i + half : 2 * i + 1;
                                rh[i0] = xh[i0] * cos(th) - xh[i1] * sin(th);
                                rh[i1] = xh[i0] * sin(th) + xh[i1] * cos(th);
                            }
                        }
                        memcpy(y, x, sizeof(float) * NH * hd);
                        npl_rope(y, NH, hd, n_rot, positions[p], bases[b], scales[fs], neox);
                        check_array(neox ? "rope neox" : "rope", "generic", positions[p], y, ref, NH * hd, 0, 2e-6);
                        int untouched = 1; /* dims past n_rot are copied bit for bit */
                        for (int h = 0; h < NH; h++)
                            for (int i = n_rot; i < hd; i++) untouched &= y[h * hd + i] == x[h * hd + i];
                        CHECK(untouched);
                    }
}

/* ---- f16 rows ---- */

static void test_f16_rows(void) {
    enum { N = 65536 };
    uint16_t *h = malloc(sizeof(uint16_t) * N), *h2 = malloc(sizeof(uint16_t) * N);
    float *f = malloc(sizeof(float) * N);
    /* every half decodes exactly */
    for (int i = 0; i < N; i++) h[i] = (uint16_t)i;
    npl_f16_to_f32_row_fast(h, f, N);
    int bad = 0;
    for (int i = 0; i < N; i++) {
        const double want = f16_decode((uint16_t)i);
        if (isnan(want) ? !isnan(f[i]) : (double)f[i] != want) bad++;
    }
    CHECK_EQ_INT(bad, 0);
    /* encoding: random floats over every f16 range, specials and exact ties */
    for (int i = 0; i < N; i++) {
        const uint32_t r = rnd_u32();
        f[i] = ldexpf(rnd_uniform(1.0f, 2.0f), (int)(r % 48) - 30) * ((r >> 8) & 1 ? -1.0f : 1.0f);
    }
    const float special[] = {0.0f, -0.0f, INFINITY, -INFINITY, 65504.0f, 65519.99f, 65520.0f, 70000.0f,
                             0x1p-24f, 0x1p-25f, 0x1.8p-25f, 0x1p-26f, 0x1p-14f, 0x1.ffcp-15f,
                             1.0f + 0x1p-11f, 1.0f + 0x3p-11f, -(1.0f + 0x1p-11f), 2049.0f, 2051.0f};
    memcpy(f, special, sizeof special);
    npl_f32_to_f16_row_fast(f, h, N);
    bad = 0;
    for (int i = 0; i < N; i++)
        if (h[i] != f16_encode_ref(f[i])) {
            if (!bad) fprintf(stderr, "f32->f16 %.9g: got %04x want %04x\n", (double)f[i], h[i], f16_encode_ref(f[i]));
            bad++;
        }
    CHECK_EQ_INT(bad, 0);
    f[5] = NAN;
    npl_f32_to_f16_row_fast(f, h, 8);
    CHECK(isnan(f16_decode(h[5])));
    /* every tail length matches the full-row result and writes nothing past n */
    for (int n = 0; n <= 40; n++) {
        memset(h2, 0xAB, sizeof(uint16_t) * 48);
        npl_f32_to_f16_row_fast(f + 100, h2, n);
        int ok = 1;
        for (int i = 0; i < 48; i++) ok &= i < n ? h2[i] == f16_encode_ref(f[100 + i]) : h2[i] == 0xABAB;
        CHECK(ok);
        float g[48];
        for (int i = 0; i < 48; i++) g[i] = -7.0f;
        npl_f16_to_f32_row_fast(h + 100, g, n);
        ok = 1;
        for (int i = 0; i < 48; i++) ok &= i < n ? (double)g[i] == f16_decode(h[100 + i]) : g[i] == -7.0f;
        CHECK(ok);
    }
    free(h);
    free(h2);
    free(f);
}

int main(void) {
    const npl_isa best = npl_cpu_best_isa();
    isa_table tabs[4];
    int n_tabs = 0;
    for (int isa = NPL_ISA_GENERIC; isa <= (int)best; isa++) {
        const npl_nn_kernels *k = npl_nn_kernels_get((npl_isa)isa);
        CHECK(k != NULL);
        if (!k) continue;
        CHECK(k->rms_norm && k->swiglu && k->geglu && k->add && k->scale && k->softmax && k->attention);
        int seen = 0; /* AMX has no nn kernels of its own: same table as AVX-512 */
        for (int t = 0; t < n_tabs; t++) seen |= tabs[t].k == k;
        if (seen) continue;
        tabs[n_tabs].k = k;
        tabs[n_tabs].name = npl_isa_name((npl_isa)isa);
        n_tabs++;
    }
    /* asking for more than the CPU has gives the best table it has */
    CHECK(npl_nn_kernels_get(NPL_ISA_AMX) == npl_nn_kernels_get(best));
    printf("testing %d nn kernel table(s), best ISA %s\n", n_tabs, npl_isa_name(best));

    for (int t = 0; t < n_tabs; t++) test_rows(tabs[t].k, tabs[t].name);
    test_rope();
    test_f16_rows();
    test_attention(tabs, n_tabs);
    TEST_MAIN_END();
}
