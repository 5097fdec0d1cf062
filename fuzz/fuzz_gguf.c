/* libFuzzer harness for the GGUF reader: open the input from memory and,
 * when it opens, touch everything the accessors hand out, so that any offset
 * the reader accepted but should not have shows up under ASan.
 * Build and run with: fuzz/run gguf SECONDS */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "format/gguf.h"

static volatile uint8_t sink;

static void touch(const void *p, uint64_t n) {
    if (!n) return;
    const uint8_t *b = p;
    sink ^= b[0];
    sink ^= b[n - 1];
}

static void walk_kv(const npl_gguf *g, int64_t i) {
    static const size_t esize[NPL_GGUF_VTYPE_COUNT] = {1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8};
    char key[300];
    npl_gguf_str k = npl_gguf_key(g, i);
    touch(k.ptr, k.len);
    npl_gguf_vtype t = npl_gguf_kv_type(g, i);
    double d;
    npl_gguf_get_number_at(g, i, &d);
    if (t == NPL_GGUF_STRING) {
        npl_gguf_str s = npl_gguf_kv_str(g, i);
        touch(s.ptr, s.len);
    } else if (t == NPL_GGUF_ARRAY) {
        npl_gguf_vtype et = npl_gguf_arr_type(g, i);
        uint64_t n = npl_gguf_arr_n(g, i);
        if (et == NPL_GGUF_STRING) {
            for (uint64_t j = 0; j <= n; j++) { /* j == n checks the out-of-range answer */
                npl_gguf_str s = npl_gguf_arr_str(g, i, j);
                touch(s.ptr, s.len);
            }
        } else if ((unsigned)et < NPL_GGUF_VTYPE_COUNT && esize[et]) {
            touch(npl_gguf_arr_data(g, i), n * esize[et]);
        }
    } else if ((unsigned)t < NPL_GGUF_VTYPE_COUNT) {
        touch(npl_gguf_kv_data(g, i), esize[t]);
    }
    /* typed getters by key (keys are NUL-free once accepted) */
    if (k.len < sizeof key) {
        memcpy(key, k.ptr, k.len);
        key[k.len] = 0;
        uint32_t u;
        int64_t s64;
        float f;
        int b;
        npl_gguf_str s;
        if (npl_gguf_find_key(g, key) != i) __builtin_trap();
        npl_gguf_get_u32(g, key, &u);
        npl_gguf_get_i64(g, key, &s64);
        npl_gguf_get_f32(g, key, &f);
        npl_gguf_get_bool(g, key, &b);
        if (!npl_gguf_get_str(g, key, &s)) touch(s.ptr, s.len);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static FILE *devnull;
    char err[256];
    if (!devnull) devnull = fopen("/dev/null", "w");
    npl_gguf *g = npl_gguf_open_memory(data, size, "fuzz.gguf", NULL, err, sizeof err);
    if (!g) {
        if (!memchr(err, 0, sizeof err) || strchr(err, '\n')) __builtin_trap(); /* one line, terminated */
        return 0;
    }
    npl_gguf_version(g);
    npl_gguf_alignment(g);
    touch(npl_gguf_base(g), npl_gguf_file_size(g));
    for (int64_t i = 0; i < npl_gguf_n_kv(g); i++) walk_kv(g, i);
    for (int64_t i = 0; i < npl_gguf_n_tensors(g); i++) {
        const npl_gguf_tensor *t = npl_gguf_tensor_at(g, i);
        if (!t || npl_gguf_find_tensor(g, t->name) != t) __builtin_trap();
        touch(t->name, strlen(t->name) + 1);
        touch(t->data, t->size);
    }
    npl_gguf_tensor_at(g, -1);
    npl_gguf_find_key(g, "general.alignment");
    if (devnull) npl_gguf_inspect(g, devnull);
    npl_gguf_close(g);
    return 0;
}
