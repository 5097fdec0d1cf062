/* Malformed input that reaches the engine through files and prompts, in the
 * categories the other malformed-input tests do not cover (test_gguf_malformed:
 * the GGUF reader byte by byte; test_model_malformed: hyperparameters and
 * vocabulary metadata against the tensors; test_tokenizer: vocabulary
 * metadata; test_accel_errors: context binaries in memory):
 *
 *   config    MNN-style config.json: deep nesting, wrong types, absurd sizes
 *   gguf      a model file on disk truncated at many offsets
 *   package   a compiled package: context binary truncated, flipped, of
 *             another version or missing; graph file damaged; config.json
 *   prompt    1 MB without spaces, empty, token ids out of range
 *
 * Every case asserts that the call fails, and that its message names the
 * file (or the input: "prompt", "token id") and the field, and is one line
 * of printable text. The suite runs in the Release and the ASan+UBSan
 * build, so no crash, no leak and no undefined behaviour either. Prompts
 * that are odd but valid (invalid UTF-8, special-token text) must not fail:
 * they are checked at the end, separately from the failure cases.
 *
 * main() prints one line per case: "[category] name: message". */

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "compiler/compiler.h"
#include "format/gguf.h"
#include "llm/engine_config.h"
#include "llm/runner.h"
#include "npullm.h"
#include "npullm_accel.h"

static const char *data_dir;
static char tmp_dir[512];
static char model_f32[1024]; /* tests/data/models/rand-llama-f32.gguf */
static int n_cases;

/* ---- expectations ---- */

static int one_line(const char *msg) {
    for (const unsigned char *c = (const unsigned char *)msg; *c; c++)
        if (*c < 0x20 || *c == 0x7f) return 0;
    return 1;
}

/* The call failed; msg names `input` (a path or the kind of input) and
 * `field`, and is one line. */
static void expect_fail(const char *category, const char *name, int failed, const char *msg, const char *input,
                        const char *field) {
    n_cases++;
    if (!msg) msg = "";
    printf("[%s] %s: %s\n", category, name, msg);
    int named = strstr(msg, input) != NULL && strstr(msg, field) != NULL;
    CHECK(failed);
    CHECK(msg[0] != 0);
    CHECK(named);
    CHECK(one_line(msg));
    if (!failed || !named || !one_line(msg))
        fprintf(stderr, "  [%s] %s: failed %d, expected '%s' and '%s' in one line: %s\n", category, name, failed,
                input, field, msg);
}

static void tmp_path(char *out, size_t cap, const char *name) { snprintf(out, cap, "%s/%s", tmp_dir, name); }

static int write_file(const char *path, const void *p, size_t n) {
    FILE *f = fopen(path, "wb");
    if (!f) return -1;
    size_t w = n ? fwrite(p, 1, n, f) : 0;
    return fclose(f) == 0 && w == n ? 0 : -1;
}

static uint8_t *read_file(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    struct stat st;
    uint8_t *p = NULL;
    if (fstat(fileno(f), &st) == 0 && (p = malloc((size_t)st.st_size + 1)) &&
        fread(p, 1, (size_t)st.st_size, f) != (size_t)st.st_size) {
        free(p);
        p = NULL;
    }
    fclose(f);
    if (p) *n = (size_t)st.st_size;
    return p;
}

static npl_engine_params engine_params(void) {
    npl_engine_params p = npl_engine_default_params();
    p.n_ctx = 64;
    p.n_threads = 1;
    p.max_new_tokens = 4;
    p.temperature = 0;
    return p;
}

static npl_runner_params runner_params(void) {
    npl_runner_params p = npl_runner_default_params();
    p.n_ctx = 64;
    p.n_threads = 1;
    return p;
}

/* ---- config.json ---- */

/* Writes text as NAME.json and checks npl_engine_config_load and
 * npl_engine_open on it. */
static void config_case(const char *name, const char *text, size_t len, const char *field) {
    char path[1024], model[1024], err[512];
    tmp_path(path, sizeof path, "config-case.json");
    CHECK_EQ_INT(write_file(path, text, len), 0);
    npl_engine_params p = engine_params();
    char *owned[1] = {NULL};
    err[0] = 0;
    int rc = npl_engine_config_load(path, &p, model, sizeof model, owned, err, sizeof err);
    free(owned[0]);
    expect_fail("config", name, rc != 0, err, path, field);
    npl_engine_params ep = engine_params();
    err[0] = 0;
    npl_engine *e = npl_engine_open(path, &ep, err, sizeof err);
    CHECK(e == NULL); /* the same message through the engine */
    CHECK(strstr(err, path) && strstr(err, field) && one_line(err));
    npl_engine_close(e);
    unlink(path);
}

/* "{"llm_model": "<model>", <rest>}" */
static void config_with(const char *name, const char *rest, const char *field) {
    char text[4096];
    snprintf(text, sizeof text, "{\"llm_model\": \"%s\"%s%s}", model_f32, rest[0] ? ", " : "", rest);
    config_case(name, text, strlen(text), field);
}

static void config_cases(void) {
    /* a valid config opens, so the failures below are the changes' */
    char text[4096], path[1024], err[512];
    snprintf(text, sizeof text, "{\"llm_model\": \"%s\", \"thread_num\": 1, \"max_context_length\": 64}", model_f32);
    tmp_path(path, sizeof path, "config-valid.json");
    CHECK_EQ_INT(write_file(path, text, strlen(text)), 0);
    npl_engine_params ep = engine_params();
    npl_engine *e = npl_engine_open(path, &ep, err, sizeof err);
    if (!e) fprintf(stderr, "valid config: %s\n", err);
    CHECK(e != NULL);
    npl_engine_close(e);
    unlink(path);

    /* nesting deeper than cJSON's limit (1000), in an unused key and at the top */
    size_t depth = 5000, n = 0;
    char *deep = malloc(6 * depth + 4096);
    n += (size_t)sprintf(deep, "{\"llm_model\": \"%s\", \"x\": ", model_f32);
    for (size_t i = 0; i < depth; i++) deep[n++] = '[';
    for (size_t i = 0; i < depth; i++) deep[n++] = ']';
    deep[n++] = '}';
    config_case("arrays nested 5000 deep", deep, n, "nested too deeply");
    n = 0;
    for (size_t i = 0; i < depth; i++) n += (size_t)sprintf(deep + n, "{\"a\":");
    config_case("objects nested 5000 deep, unterminated", deep, n, "nested too deeply");
    free(deep);

    config_case("not JSON", "llm_model = x", 13, "malformed");
    config_case("truncated JSON", "{\"llm_model\": \"m.gguf\", \"thread_num\": ", 37, "malformed");
    config_case("an array, not an object", "[\"llm_model\"]", 13, "not a JSON object");
    config_case("empty file", "", 0, "not a JSON object");
    config_case("llm_model missing", "{\"thread_num\": 2}", 17, "llm_model: missing");
    config_case("llm_model a number", "{\"llm_model\": 42}", 17, "llm_model: must be a non-empty string");
    config_case("llm_model empty", "{\"llm_model\": \"\"}", 17, "llm_model: must be a non-empty string");
    config_with("thread_num a string", "\"thread_num\": \"4\"", "thread_num: must be an integer");
    config_with("thread_num 1e30", "\"thread_num\": 1e30", "thread_num: 1e+30 out of range [0, 256]");
    config_with("thread_num 2.5", "\"thread_num\": 2.5", "thread_num: 2.5 is not an integer");
    config_with("max_new_tokens -1", "\"max_new_tokens\": -1", "max_new_tokens: -1 out of range [0, 16777216]");
    config_with("max_context_length 2^40", "\"max_context_length\": 1099511627776", "max_context_length: 1099511627776 out of range [1, 16777216]");
    config_with("max_context_length null", "\"max_context_length\": null", "max_context_length: must be an integer");
    config_with("use_template a string", "\"use_template\": \"yes\"", "use_template: must be true or false");
    config_with("system_prompt a number", "\"system_prompt\": 7", "system_prompt: must be a string");
    config_with("backend_type an array", "\"backend_type\": []", "backend_type: must be a string");
    config_with("chunk_limits an object", "\"chunk_limits\": {\"a\": 1}", "chunk_limits");
    config_with("chunk_limits empty", "\"chunk_limits\": []", "chunk_limits");
    config_with("chunk_limits 9 entries", "\"chunk_limits\": [1,2,3,4,5,6,7,8,9]", "chunk_limits");
    config_with("chunk_limits 0", "\"chunk_limits\": [128, 0]", "chunk_limits");
    config_with("chunk_limits 1e9", "\"chunk_limits\": [1000000000]", "chunk_limits");
    config_with("chunk_limits a string", "\"chunk_limits\": [\"128\"]", "chunk_limits");
    config_with("temperature a string", "\"temperature\": \"hot\"", "temperature: expected a number");
    config_with("topK 1e12", "\"topK\": 1e12", "topK: expected an integer");
    config_with("sampler_type an object", "\"sampler_type\": {}", "sampler_type: expected a string");
    config_with("sampler_type with a newline and escape", "\"sampler_type\": \"penalty\\n\\u001b[2J\"",
                "sampler_type: unknown 'penalty\\x0a\\x1b[2J'");
    config_with("mixed_samplers a string", "\"sampler_type\": \"mixed\", \"mixed_samplers\": \"topK\"",
                "mixed_samplers: expected an array");
    char many[2048] = "\"sampler_type\": \"mixed\", \"mixed_samplers\": [";
    for (int i = 0; i < 100; i++) strcat(many, i ? ", \"topK\"" : "\"topK\"");
    strcat(many, "]");
    config_with("mixed_samplers 100 entries", many, "mixed_samplers: too many entries");
    config_with("mixed_samplers 9 stages", "\"sampler_type\": \"mixed\", \"mixed_samplers\": "
                "[\"topK\",\"topK\",\"topK\",\"topK\",\"topK\",\"topK\",\"topK\",\"topK\",\"topK\"]",
                "mixed_samplers: more than");

    /* larger than the 1 MiB cap: a valid object padded with spaces */
    size_t big = (1u << 20) + 100;
    char *huge = malloc(big);
    memset(huge, ' ', big);
    int k = sprintf(huge, "{\"llm_model\": \"%s\"}", model_f32);
    huge[k] = ' ';
    config_case("1 MiB + 100 bytes", huge, big, "larger than 1 MiB");
    free(huge);

    /* the model it names is missing: the message names that path */
    char missing[1100];
    tmp_path(missing, sizeof missing, "no-such-model.gguf");
    snprintf(text, sizeof text, "{\"llm_model\": \"no-such-model.gguf\"}");
    tmp_path(path, sizeof path, "config-missing-model.json");
    CHECK_EQ_INT(write_file(path, text, strlen(text)), 0);
    ep = engine_params();
    err[0] = 0;
    e = npl_engine_open(path, &ep, err, sizeof err);
    expect_fail("config", "llm_model names a missing file", e == NULL, err, missing, "open");
    npl_engine_close(e);
    unlink(path);
}

/* ---- a model file truncated on disk ---- */

static void gguf_truncation_cases(void) {
    char src[1024], path[1024], err[512], name[64];
    snprintf(src, sizeof src, "%s/models/rand-llama-q4_0.gguf", data_dir);
    size_t n = 0;
    uint8_t *bytes = read_file(src, &n);
    CHECK(bytes != NULL);
    if (!bytes) return;
    tmp_path(path, sizeof path, "truncated.gguf");
    /* header fields, the key/value section, the tensor infos, the data */
    const size_t cuts[] = {0, 3, 4, 7, 8, 15, 16, 23, 24, 100, 1000, 4000, 8000, n / 4, n / 2, n - 1};
    for (size_t i = 0; i < sizeof cuts / sizeof cuts[0]; i++) {
        CHECK_EQ_INT(write_file(path, bytes, cuts[i]), 0);
        npl_runner_params rp = runner_params();
        err[0] = 0;
        npl_runner *r = npl_runner_open(path, &rp, err, sizeof err);
        /* which field depends on where the cut falls */
        const char *field = strstr(err, "magic")       ? "magic"
                            : strstr(err, "version")   ? "version"
                            : strstr(err, "n_tensors") ? "n_tensors"
                            : strstr(err, "n_kv")      ? "n_kv"
                            : strstr(err, "kv[")       ? "kv["
                            : strstr(err, "tensor")    ? "tensor"
                                                       : "data section";
        snprintf(name, sizeof name, "cut at byte %zu of %zu", cuts[i], n);
        expect_fail("gguf", name, r == NULL, err, path, field);
        npl_runner_close(r);
    }
    free(bytes);
    unlink(path);
}

/* ---- compiled packages ---- */

static char pkg[700], bad[700];

static void pkg_file(char *out, size_t cap, const char *dir, const char *name) { snprintf(out, cap, "%s/%s", dir, name); }

/* bad/ = a fresh copy of pkg/ */
static void copy_package(void) {
    static const char *const files[] = {"model.gguf", "accel_0.bin", "config.json"};
    mkdir(bad, 0755);
    for (size_t i = 0; i < 3; i++) {
        char a[1024], b[1024];
        size_t n = 0;
        pkg_file(a, sizeof a, pkg, files[i]);
        pkg_file(b, sizeof b, bad, files[i]);
        uint8_t *p = read_file(a, &n);
        CHECK(p != NULL && write_file(b, p, n) == 0);
        free(p);
    }
}

static void remove_package(const char *dir) {
    static const char *const files[] = {"model.gguf", "accel_0.bin", "config.json"};
    for (size_t i = 0; i < 3; i++) {
        char a[1024];
        pkg_file(a, sizeof a, dir, files[i]);
        unlink(a);
    }
    rmdir(dir);
}

/* Opens bad/ through the runner and the engine; both must fail naming file and field. */
static void package_fails(const char *name, const char *file, const char *field) {
    char path[1024], err[1024];
    pkg_file(path, sizeof path, bad, file);
    npl_runner_params rp = runner_params();
    err[0] = 0;
    npl_runner *r = npl_runner_open(bad, &rp, err, sizeof err);
    expect_fail("package", name, r == NULL, err, path, field);
    npl_runner_close(r);
    npl_engine_params ep = engine_params();
    err[0] = 0;
    npl_engine *e = npl_engine_open(bad, &ep, err, sizeof err);
    CHECK(e == NULL);
    if (e || !strstr(err, path) || !strstr(err, field) || !one_line(err))
        fprintf(stderr, "  [package] %s through the engine: %s\n", name, err);
    CHECK(strstr(err, path) && strstr(err, field) && one_line(err));
    npl_engine_close(e);
}

static void binary_edit(size_t cut, long flip_at, uint32_t set_version, int pad) {
    char path[1024];
    size_t n = 0;
    pkg_file(path, sizeof path, bad, "accel_0.bin");
    uint8_t *p = read_file(path, &n);
    CHECK(p != NULL);
    if (!p) return;
    uint8_t *q = realloc(p, n + 1);
    if (!q) {
        free(p);
        return;
    }
    p = q;
    if (flip_at >= 0 && (size_t)flip_at < n) p[flip_at] ^= 0x5a;
    if (set_version) memcpy(p + 8, &set_version, 4);
    if (pad) p[n++] = 0;
    if (cut < n) n = cut;
    CHECK_EQ_INT(write_file(path, p, n), 0);
    free(p);
}

/* Rewrites bad/model.gguf with key `key` dropped (set_u32: replaced by a
 * u32, set_i32_fill: its i32 array filled with a value) or tensor
 * `drop_tensor` left out. */
typedef struct {
    const char *key;
    int drop;
    int set_u32;
    uint32_t u32;
    int fill_i32;
    int32_t i32;
    const char *drop_tensor;
    const char *rename_from, *rename_to; /* an entry of the npullm.graph.name array */
} graph_edit;

static int graph_rewrite(const graph_edit *ed) {
    char path[1024], err[512];
    pkg_file(path, sizeof path, pkg, "model.gguf");
    npl_gguf *g = npl_gguf_open(path, NULL, err, sizeof err);
    CHECK(g != NULL);
    if (!g) return -1;
    npl_gguf_writer *w = npl_gguf_writer_new();
    int rc = w ? 0 : -1;
    for (int64_t i = 0; !rc && i < npl_gguf_n_kv(g); i++) {
        npl_gguf_str k = npl_gguf_key(g, i);
        char key[256];
        snprintf(key, sizeof key, "%.*s", (int)k.len, k.ptr);
        int is = ed->key && !strcmp(key, ed->key);
        npl_gguf_vtype t = npl_gguf_kv_type(g, i);
        if (is && ed->drop) continue;
        if (is && ed->set_u32) {
            rc = npl_gguf_writer_set_u32(w, key, ed->u32);
        } else if (t == NPL_GGUF_STRING) {
            npl_gguf_str s = npl_gguf_kv_str(g, i);
            char *v = strndup(s.ptr, s.len);
            rc = v ? npl_gguf_writer_set_str(w, key, v) : -1;
            free(v);
        } else if (t != NPL_GGUF_ARRAY) {
            rc = npl_gguf_writer_set_scalar(w, key, t, npl_gguf_kv_data(g, i));
        } else if (npl_gguf_arr_type(g, i) != NPL_GGUF_STRING) {
            npl_gguf_vtype at = npl_gguf_arr_type(g, i);
            uint64_t n = npl_gguf_arr_n(g, i);
            if (is && ed->fill_i32 && at == NPL_GGUF_INT32) {
                int32_t *v = malloc(sizeof(int32_t) * (n ? n : 1));
                for (uint64_t j = 0; v && j < n; j++) v[j] = ed->i32;
                rc = v ? npl_gguf_writer_set_arr(w, key, at, v, n) : -1;
                free(v);
            } else {
                rc = npl_gguf_writer_set_arr(w, key, at, npl_gguf_arr_data(g, i), n);
            }
        } else {
            uint64_t n = npl_gguf_arr_n(g, i);
            char **s = calloc(n ? n : 1, sizeof(char *));
            rc = s ? 0 : -1;
            for (uint64_t j = 0; !rc && j < n; j++) {
                npl_gguf_str e = npl_gguf_arr_str(g, i, j);
                if (!(s[j] = strndup(e.ptr ? e.ptr : "", e.len))) rc = -1;
                if (!rc && ed->rename_from && !strcmp(key, "npullm.graph.name") && !strcmp(s[j], ed->rename_from)) {
                    free(s[j]);
                    if (!(s[j] = strdup(ed->rename_to))) rc = -1;
                }
            }
            if (!rc) rc = npl_gguf_writer_set_arr_str(w, key, (const char *const *)s, n);
            for (uint64_t j = 0; s && j < n; j++) free(s[j]);
            free(s);
        }
    }
    for (int64_t i = 0; !rc && i < npl_gguf_n_tensors(g); i++) {
        const npl_gguf_tensor *t = npl_gguf_tensor_at(g, i);
        if (ed->drop_tensor && !strcmp(t->name, ed->drop_tensor)) continue;
        rc = npl_gguf_writer_add_tensor(w, t->name, t->type, t->n_dims, t->ne, t->data, t->size);
    }
    char out[1024];
    pkg_file(out, sizeof out, bad, "model.gguf");
    if (!rc) rc = npl_gguf_writer_write(w, out, err, sizeof err);
    if (rc) fprintf(stderr, "rewrite of %s failed: %s\n", out, err);
    npl_gguf_writer_free(w);
    npl_gguf_close(g);
    return rc;
}

/* The name of some weight tensor of the graph file. */
static void some_tensor(char *out, size_t cap) {
    char path[1024], err[512];
    pkg_file(path, sizeof path, pkg, "model.gguf");
    npl_gguf *g = npl_gguf_open(path, NULL, err, sizeof err);
    out[0] = 0;
    if (g && npl_gguf_n_tensors(g) > 0) snprintf(out, cap, "%s", npl_gguf_tensor_at(g, npl_gguf_n_tensors(g) - 1)->name);
    npl_gguf_close(g);
}

static void package_cases(void) {
    char err[1024];
    snprintf(pkg, sizeof pkg, "%s/pkg", tmp_dir);
    snprintf(bad, sizeof bad, "%s/pkg-bad", tmp_dir);
    npl_compile_params cp = npl_compile_default_params();
    cp.chunk = 8;
    cp.n_ctx = 64;
    cp.n_threads = 1;
    cp.check = 0;
    if (npl_compile(model_f32, pkg, &cp, err, sizeof err)) {
        fprintf(stderr, "compile: %s\n", err);
        CHECK(0);
        return;
    }
    /* the undamaged copy opens */
    copy_package();
    npl_runner_params rp = runner_params();
    npl_runner *r = npl_runner_open(bad, &rp, err, sizeof err);
    if (!r) fprintf(stderr, "package copy: %s\n", err);
    CHECK(r != NULL);
    npl_runner_close(r);

    char path[1024];
    size_t size = 0;
    pkg_file(path, sizeof path, pkg, "accel_0.bin");
    free(read_file(path, &size));
    CHECK(size > 1024);

    /* the context binary */
    const struct { const char *name; size_t cut; } cuts[] = {
        {"context binary cut to 7 bytes", 7},
        {"context binary cut to 64 bytes", 64},
        {"context binary cut in half", size / 2},
        {"context binary one byte short", size - 1},
    };
    copy_package();
    binary_edit(0, -1, 0, 0);
    package_fails("context binary empty", "accel_0.bin", "empty");
    for (size_t i = 0; i < sizeof cuts / sizeof cuts[0]; i++) {
        copy_package();
        binary_edit(cuts[i].cut, -1, 0, 0);
        package_fails(cuts[i].name, "accel_0.bin", "context binary: truncated");
    }
    copy_package();
    binary_edit(SIZE_MAX, -1, 0, 1);
    package_fails("context binary one byte too long", "accel_0.bin", "context binary: truncated or padded");
    copy_package();
    binary_edit(SIZE_MAX, (long)(size / 2), 0, 0);
    package_fails("context binary byte flipped in the middle", "accel_0.bin", "context binary: checksum");
    copy_package();
    binary_edit(SIZE_MAX, (long)(size - 1), 0, 0);
    package_fails("context binary last byte flipped", "accel_0.bin", "context binary: checksum");
    copy_package();
    binary_edit(SIZE_MAX, 1, 0, 0);
    package_fails("context binary magic flipped", "accel_0.bin", "context binary: bad magic");
    copy_package();
    binary_edit(SIZE_MAX, -1, 99, 0);
    package_fails("context binary of another ABI version", "accel_0.bin", "context binary: ABI version 99");
    copy_package();
    pkg_file(path, sizeof path, bad, "accel_0.bin");
    unlink(path);
    package_fails("context binary missing", "accel_0.bin", "No such file");

    /* the graph file */
    copy_package();
    pkg_file(path, sizeof path, bad, "model.gguf");
    CHECK_EQ_INT(truncate(path, (off_t)(size / 4)), 0);
    package_fails("graph file truncated", "model.gguf", "past end");
    copy_package();
    CHECK_EQ_INT(graph_rewrite(&(graph_edit){.key = "npullm.graph.n_nodes", .set_u32 = 1, .u32 = 0xFFFFFFFFu}), 0);
    package_fails("graph n_nodes 2^32-1", "model.gguf", "npullm.graph.n_nodes");
    copy_package();
    CHECK_EQ_INT(graph_rewrite(&(graph_edit){.key = "npullm.graph.src", .drop = 1}), 0);
    package_fails("graph src array missing", "model.gguf", "npullm.graph.src");
    copy_package();
    CHECK_EQ_INT(graph_rewrite(&(graph_edit){.key = "npullm.graph.op", .fill_i32 = 1, .i32 = 1 << 30}), 0);
    package_fails("graph op ids out of range", "model.gguf", "npullm.graph.op");
    copy_package();
    CHECK_EQ_INT(graph_rewrite(&(graph_edit){.key = "npullm.graph.src", .fill_i32 = 1, .i32 = 1 << 30}), 0);
    package_fails("graph source ids out of range", "model.gguf", "npullm.graph.src");
    copy_package();
    CHECK_EQ_INT(graph_rewrite(&(graph_edit){.key = "npullm.graph.n_dims", .fill_i32 = 1, .i32 = 9}), 0);
    package_fails("graph n_dims 9", "model.gguf", "npullm.graph.n_dims");
    char weight[256];
    some_tensor(weight, sizeof weight);
    CHECK(weight[0] != 0);
    copy_package();
    CHECK_EQ_INT(graph_rewrite(&(graph_edit){.drop_tensor = weight}), 0);
    package_fails("graph weight tensor missing", "model.gguf", weight);
    copy_package();
    CHECK_EQ_INT(graph_rewrite(&(graph_edit){.rename_from = weight, .rename_to = "w\nsecond line\x1b[2J"}), 0);
    package_fails("graph weight name with a newline and an escape", "model.gguf", "w\\x0asecond line\\x1b");

    /* its config.json */
    copy_package();
    pkg_file(path, sizeof path, bad, "config.json");
    CHECK_EQ_INT(write_file(path, "{\"llm_model\": \"model.gguf\", \"chunk_limits\": [", 44), 0);
    package_fails("package config.json truncated", "config.json", "not a JSON object");
    copy_package();
    CHECK_EQ_INT(write_file(path, "{\"llm_model\": \"model.gguf\", \"chunk_limits\": [5, 1]}", 51), 0);
    package_fails("package chunk_limits not the compiled shapes", "config.json", "chunk_limits");

    remove_package(bad);
    remove_package(pkg);
}

/* ---- prompts ---- */

static int sink(const char *t, size_t n, void *u) {
    (void)t;
    *(size_t *)u += n;
    return 0;
}

static int valid_utf8(const char *s, size_t n) {
    for (size_t i = 0; i < n;) {
        unsigned char c = (unsigned char)s[i];
        size_t k = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
        if (!k || i + k > n) return 0;
        for (size_t j = 1; j < k; j++)
            if (((unsigned char)s[i + j] >> 6) != 2) return 0;
        i += k;
    }
    return 1;
}

typedef struct {
    char text[4096];
    size_t n;
} collect;

static int collect_cb(const char *t, size_t n, void *u) {
    collect *c = u;
    if (c->n + n < sizeof c->text) {
        memcpy(c->text + c->n, t, n);
        c->n += n;
    }
    return 0;
}

static void prompt_cases(void) {
    char err[512];
    npl_engine_params ep = engine_params();
    npl_engine *e = npl_engine_open(model_f32, &ep, err, sizeof err);
    CHECK(e != NULL);
    if (!e) return;
    size_t out = 0;

    /* 1 MB without spaces */
    size_t big = 1u << 20;
    char *p = malloc(big + 1);
    for (size_t i = 0; i < big; i++) p[i] = (char)('a' + (i * 7) % 26);
    p[big] = 0;
    npl_status st = npl_engine_chat(e, p, sink, &out);
    expect_fail("prompt", "1 MB without spaces (chat)", st == NPL_CONTEXT_FULL, npl_engine_last_error(e), "prompt",
                "does not fit the context of 64");
    npl_engine_reset(e);
    st = npl_engine_complete(e, p, sink, &out);
    expect_fail("prompt", "1 MB without spaces (complete)", st == NPL_CONTEXT_FULL, npl_engine_last_error(e), "prompt",
                "does not fit the context of 64");
    npl_engine_reset(e);
    st = npl_engine_set_prompt(e, p);
    expect_fail("prompt", "1 MB without spaces (set_prompt)", st == NPL_CONTEXT_FULL, npl_engine_last_error(e),
                "prompt", "does not fit the context of 64");
    /* 1 MB of invalid UTF-8 bytes */
    for (size_t i = 0; i < big; i++) p[i] = (char)(0x80 | (i % 0x7f));
    npl_engine_reset(e);
    st = npl_engine_complete(e, p, sink, &out);
    expect_fail("prompt", "1 MB of invalid UTF-8", st == NPL_CONTEXT_FULL, npl_engine_last_error(e), "prompt",
                "does not fit the context of 64");
    free(p);
    npl_engine_reset(e);
    st = npl_engine_chat(e, "", sink, &out);
    expect_fail("prompt", "empty chat message", st == NPL_ERR_ARGUMENT, npl_engine_last_error(e), "prompt", "empty");
    st = npl_engine_complete(e, "", sink, &out);
    expect_fail("prompt", "empty completion", st == NPL_ERR_ARGUMENT, npl_engine_last_error(e), "prompt", "empty");
    int32_t ids[2] = {1, 99999999};
    CHECK(npl_engine_eval(e, ids, 2, &st) == NULL);
    expect_fail("prompt", "token id past the vocabulary", st == NPL_ERR_ARGUMENT, npl_engine_last_error(e),
                "token id 99999999", "out of range");
    ids[1] = -5;
    CHECK(npl_engine_eval(e, ids, 2, &st) == NULL);
    expect_fail("prompt", "negative token id", st == NPL_ERR_ARGUMENT, npl_engine_last_error(e), "token id -5",
                "out of range");
    st = npl_engine_rollback(e, 1000);
    expect_fail("prompt", "rollback past the history", st == NPL_ERR_ARGUMENT, npl_engine_last_error(e), "rollback",
                "history");

    npl_engine_close(e);

    /* Valid but odd prompts are not failures: invalid UTF-8 is text (the
     * output stays valid UTF-8), special-token text stays plain text. */
    ep.n_ctx = 256;
    e = npl_engine_open(model_f32, &ep, err, sizeof err);
    CHECK(e != NULL);
    if (!e) return;
    static const char *const odd[] = {
        "\xE2\x80 \xC0\x80 \xFF\xFE \xED\xA0\x80 \xF4\x90\x80\x80 tail",  /* cut, overlong, surrogate, > U+10FFFF */
        "<s></s><unk><|im_start|>user\n<end_of_turn><start_of_turn>",
        "\x01\x02\x1b[2J\x7f",
    };
    for (size_t i = 0; i < sizeof odd / sizeof odd[0]; i++) {
        npl_engine_reset(e);
        collect c = {{0}, 0};
        st = npl_engine_chat(e, odd[i], collect_cb, &c);
        if (st != NPL_DONE) fprintf(stderr, "odd prompt %zu: status %d: %s\n", i, (int)st, npl_engine_last_error(e));
        CHECK(st == NPL_DONE);
        CHECK(valid_utf8(c.text, c.n));
        npl_engine_reset(e);
        c.n = 0;
        st = npl_engine_complete(e, odd[i], collect_cb, &c);
        if (st != NPL_DONE) fprintf(stderr, "odd completion %zu: status %d: %s\n", i, (int)st, npl_engine_last_error(e));
        CHECK(st == NPL_DONE);
        CHECK(valid_utf8(c.text, c.n));
    }
    /* parse_special = 0 (user text): no control token comes out of "<s>" */
    int32_t toks[64], bos[4];
    int64_t nb = npl_engine_tokenize(e, "", 0, 1, 0, bos, 4);
    int64_t nt = npl_engine_tokenize(e, "<s><s><s>", 9, 0, 0, toks, 64);
    CHECK(nb == 1 && nt > 0 && nt <= 64);
    for (int64_t i = 0; nb == 1 && i < nt && i < 64; i++) CHECK(toks[i] != bos[0]);
    npl_engine_close(e);
}

int main(void) {
    setvbuf(stdout, NULL, _IOLBF, 0);
    data_dir = getenv("NPL_TEST_DATA");
    if (!data_dir || !*data_dir) data_dir = "data";
    snprintf(model_f32, sizeof model_f32, "%s/models/rand-llama-f32.gguf", data_dir);
    const char *tmp = getenv("TMPDIR");
    snprintf(tmp_dir, sizeof tmp_dir, "%s/npl-malformed-inputs-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    CHECK(mkdtemp(tmp_dir) != NULL);

    config_cases();
    int n_config = n_cases;
    gguf_truncation_cases();
    int n_gguf = n_cases - n_config;
    package_cases();
    int n_package = n_cases - n_config - n_gguf;
    prompt_cases();
    int n_prompt = n_cases - n_config - n_gguf - n_package;
    rmdir(tmp_dir);
    printf("%d malformed-input cases: config %d, gguf on disk %d, package %d, prompt %d\n", n_cases, n_config, n_gguf,
           n_package, n_prompt);
    CHECK(n_cases >= 40);
    TEST_MAIN_END();
}
