/* make_vnpu_seeds: seed corpus for fuzz/fuzz_vnpu_binary.c — real vnpu
 * context binaries, compiled for the generic kernel family (loadable on any
 * x86-64) and for this CPU's best family:
 *   net-generic.bin   the accelerator tests' decoder block (tests/accel_net.h)
 *                     as two graphs, "prefill" at 4 tokens and "decode" at 1,
 *                     sharing weights and the KV cache; f32/f16/bf16/int8
 *                     per-axis/q8_0 weights, fused bias, act-mul and gate-up
 *   ops-generic.bin   one small graph with the ops the net lacks: q4_0 Gather
 *                     and MatMul with bias, int8 per-block and uint8
 *                     per-tensor weights with offsets, FullyConnected, GeGLU,
 *                     Gelu, Softmax, Scale, Transpose, Concat, Cast
 *   ops-best.bin      the same for the best family of this CPU
 * Build and run (from the repository root):
 *   clang -O1 -D_GNU_SOURCE -Iinclude -Isrc -Itests fuzz/make_vnpu_seeds.c \
 *       build-fuzz/libnpullm.a $(pkg-config --libs libpcre2-8 libcjson) \
 *       -fsanitize=address,undefined -lpthread -lm -ldl -o /tmp/make_vnpu_seeds
 *   /tmp/make_vnpu_seeds fuzz/corpus/vnpu_binary */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "accel/vnpu/vnpu_api.h"
#include "accel_net.h"

static const npl_accel_api *api;
static npl_accel_backend *be;
static npl_accel_device *dev;

static void die(const char *what, int st) {
    fprintf(stderr, "make_vnpu_seeds: %s: status %d: %s\n", what, st, be ? api->last_error(be) : "");
    exit(1);
}

static void save(npl_accel_context *ctx, const char *dir, const char *name) {
    uint64_t size = 0, written = 0;
    int st = api->context_get_binary_size(ctx, &size);
    if (st) die("get_binary_size", st);
    void *buf = malloc(size);
    if (!buf) die("malloc", 0);
    if ((st = api->context_get_binary(ctx, buf, size, &written))) die("get_binary", st);
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(buf, 1, written, f) != written || fclose(f)) die(path, 0);
    printf("%8llu  %s\n", (unsigned long long)written, path);
    free(buf);
}

static void backend(const char *family) {
    if (dev) api->device_free(dev);
    if (be) api->backend_free(be);
    be = NULL;
    dev = NULL;
    npl_accel_option opt[2] = {{"kernel_family", family}, {"threads", "1"}};
    char err[256];
    int st = api->backend_create(opt, 2, &be, err, sizeof err);
    if (st) {
        fprintf(stderr, "make_vnpu_seeds: backend %s: %s\n", family, err);
        exit(1);
    }
    if ((st = api->device_create(be, NULL, 0, &dev))) die("device_create", st);
}

static void finalize(npl_accel_context *ctx, const char *name) {
    npl_accel_graph *g;
    int st = api->graph_retrieve(ctx, name, &g);
    if (!st) st = api->graph_finalize(g);
    if (st) die(name, st);
}

static void net_seed(const char *dir) {
    static net_weights w;
    net_weights_init(&w);
    backend("generic");
    npl_accel_context *ctx;
    int st = api->context_create(be, dev, NULL, 0, &ctx);
    if (!st) st = net_build(api, ctx, "prefill", 4, &w);
    if (!st) st = net_build(api, ctx, "decode", 1, &w);
    if (st) die("net", st);
    finalize(ctx, "prefill");
    finalize(ctx, "decode");
    save(ctx, dir, "net-generic.bin");
    api->context_free(ctx);
}

/* ---- the small graph of the other ops ---- */

enum { K = 32, N = 32, S = 2, V = 8 };

static npl_accel_tensor_id T(net_builder *b, const char *name, uint32_t kind, uint32_t dt, uint32_t rank, uint32_t d0,
                             uint32_t d1, const void *data, size_t size, const npl_accel_quant *q) {
    return net_t(b, name, kind, dt, rank, d0, d1, 0, data, size, q);
}

static void ops_seed(const char *dir, const char *family, const char *file) {
    static block_q4_0 table[V * K / 32], wq4[N * K / 32];
    static float tmp[N * K], bias[N], sblk[N * K / 32], su8;
    static int8_t w8[K * N];
    static uint8_t wu8[N * K];
    static uint16_t wf16[N * K];
    static int32_t offs[N * K / 32], off_u8;
    net_rng = 12345;
    for (int i = 0; i < N * K; i++) tmp[i] = net_rand();
    npl_type_get(NPL_TYPE_Q4_0)->from_float(tmp, table, V * K);
    npl_type_get(NPL_TYPE_Q4_0)->from_float(tmp, wq4, N * K);
    for (int i = 0; i < N; i++) bias[i] = 0.1f * net_rand();
    for (int i = 0; i < K * N; i++) w8[i] = (int8_t)(net_rand() * 127);
    for (int i = 0; i < N * K / 32; i++) sblk[i] = 0.01f, offs[i] = (int32_t)(net_rand() * 4);
    for (int i = 0; i < N * K; i++) wu8[i] = (uint8_t)(128 + net_rand() * 127), wf16[i] = npl_f32_to_f16(tmp[i] / 8);
    su8 = 0.02f;
    off_u8 = -128;

    backend(family);
    npl_accel_context *ctx;
    int st = api->context_create(be, dev, NULL, 0, &ctx);
    if (st) die("context_create", st);
    net_builder b = {api, ctx, NULL, "ops", 0};
    b.status = api->graph_create(ctx, "ops", &b.g);
    const uint32_t F32 = NPL_ACCEL_DT_F32, ST = NPL_ACCEL_STATIC, NA = NPL_ACCEL_NATIVE;
    /* per-block int8: weight [N, K] (transposed), channel axis 0, blocks of 32 along K */
    npl_accel_quant qblk = {NPL_ACCEL_QUANT_PER_BLOCK, 0, 32, N * K / 32, sblk, offs};
    npl_accel_quant qu8 = {NPL_ACCEL_QUANT_PER_TENSOR, 0, 0, 1, &su8, &off_u8};
    npl_accel_tensor_id tok = T(&b, "tok", NPL_ACCEL_APP_WRITE, NPL_ACCEL_DT_INT32, 1, S, 0, NULL, 0, NULL);
    npl_accel_tensor_id tab = T(&b, "table", ST, NPL_ACCEL_DT_Q4_0, 2, V, K, table, sizeof table, NULL);
    npl_accel_tensor_id wq = T(&b, "w_q4", ST, NPL_ACCEL_DT_Q4_0, 2, N, K, wq4, sizeof wq4, NULL);
    npl_accel_tensor_id bq = T(&b, "bias", ST, F32, 1, N, 0, bias, sizeof bias, NULL);
    npl_accel_tensor_id wb = T(&b, "w_i8_blk", ST, NPL_ACCEL_DT_INT8, 2, N, K, w8, sizeof w8, &qblk);
    npl_accel_tensor_id wu = T(&b, "w_u8", ST, NPL_ACCEL_DT_UINT8, 2, N, K, wu8, sizeof wu8, &qu8);
    npl_accel_tensor_id wh = T(&b, "w_f16", ST, NPL_ACCEL_DT_F16, 2, N, K, wf16, sizeof wf16, NULL);
    npl_accel_tensor_id x = T(&b, "x", NA, F32, 2, S, K, NULL, 0, NULL);
    npl_accel_tensor_id xin = T(&b, "xin", NPL_ACCEL_APP_WRITE, F32, 2, S, K, NULL, 0, NULL);
    npl_accel_tensor_id xs = T(&b, "xs", NA, F32, 2, S, K, NULL, 0, NULL);
    npl_accel_tensor_id y = T(&b, "y", NA, F32, 2, S, N, NULL, 0, NULL);
    npl_accel_tensor_id z = T(&b, "z", NA, F32, 2, S, N, NULL, 0, NULL);
    npl_accel_tensor_id u = T(&b, "u", NA, F32, 2, S, N, NULL, 0, NULL);
    npl_accel_tensor_id h = T(&b, "h", NA, F32, 2, S, N, NULL, 0, NULL);
    npl_accel_tensor_id gg = T(&b, "geglu", NA, F32, 2, S, N, NULL, 0, NULL);
    npl_accel_tensor_id ge = T(&b, "gelu", NA, F32, 2, S, N, NULL, 0, NULL);
    npl_accel_tensor_id sm = T(&b, "softmax", NA, F32, 2, S, N, NULL, 0, NULL);
    npl_accel_tensor_id sc = T(&b, "scaled", NA, F32, 2, S, N, NULL, 0, NULL);
    npl_accel_tensor_id tr = T(&b, "transposed", NA, F32, 2, N, S, NULL, 0, NULL);
    npl_accel_tensor_id cc = T(&b, "concat", NA, F32, 2, 2 * N, S, NULL, 0, NULL);
    npl_accel_tensor_id out = T(&b, "out", NPL_ACCEL_APP_READ, NPL_ACCEL_DT_F16, 2, 2 * N, S, NULL, 0, NULL);
    npl_accel_param t1 = net_pi("transpose_in1", 1), beta = net_pf("beta", 0.5), scale = net_pf("scale", 3.0);
    npl_accel_param perm = net_pi("perm", 0), axis = net_pi("axis", 0), eps = net_pf("epsilon", 1e-6);
    static const int64_t perm10[2] = {1, 0};
    perm.type = NPL_ACCEL_PARAM_INTS;
    perm.count = 2;
    perm.ints = perm10;
    net_n(&b, "Gather", (npl_accel_tensor_id[]){tab, tok}, 2, x, NULL, 0);
    net_n(&b, "Add", (npl_accel_tensor_id[]){x, xin}, 2, xs, NULL, 0);
    net_n(&b, "MatMul", (npl_accel_tensor_id[]){xs, wq, bq}, 3, y, &t1, 1);
    net_n(&b, "MatMul", (npl_accel_tensor_id[]){y, wb}, 2, z, &t1, 1);
    net_n(&b, "FullyConnected", (npl_accel_tensor_id[]){z, wu}, 2, u, NULL, 0);
    net_n(&b, "MatMul", (npl_accel_tensor_id[]){xs, wh}, 2, h, &t1, 1);
    net_n(&b, "GeGLU", (npl_accel_tensor_id[]){u, h}, 2, gg, NULL, 0);
    net_n(&b, "Gelu", &gg, 1, ge, NULL, 0);
    net_n(&b, "Softmax", &ge, 1, sm, &beta, 1);
    net_n(&b, "Scale", &sm, 1, sc, &scale, 1);
    net_n(&b, "Transpose", &sc, 1, tr, &perm, 1);
    net_n(&b, "Concat", (npl_accel_tensor_id[]){tr, tr}, 2, cc, &axis, 1);
    net_n(&b, "Cast", &cc, 1, out, NULL, 0);
    (void)eps;
    if (b.status) die("ops graph", b.status);
    finalize(ctx, "ops");
    save(ctx, dir, file);
    api->context_free(ctx);
}

int main(int argc, char **argv) {
    const char *dir = argc > 1 ? argv[1] : "fuzz/corpus/vnpu_binary";
    api = npl_vnpu_get_api(NPL_ACCEL_ABI_VERSION);
    if (!api) die("no vnpu table", 0);
    net_seed(dir);
    ops_seed(dir, "generic", "ops-generic.bin");
    ops_seed(dir, "auto", "ops-best.bin");
    api->device_free(dev);
    api->backend_free(be);
    return 0;
}
