/* npl_compile refuses a model the runtime cannot run (issue 17 item 6):
 * a vocabulary npl_engine_open refuses (an unsupported pre-tokenizer, an
 * unsupported tokenizer model) fails the compile before any stage's work,
 * with the message open gives, leaving nothing at -o. Before, compile built
 * the whole package of such a model (the graph does not need the
 * tokenizer) and only `run` failed on it. The models are copies of
 * rand-llama-f32.gguf with one tokenizer key changed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "compiler/compiler.h"
#include "format/graph_file.h"
#include "format/gguf.h"
#include "npullm.h"

static char dir[512];

/* src with tokenizer.ggml.model and tokenizer.ggml.pre replaced */
static int retokenized(const char *src, const char *dst, const char *model, const char *pre) {
    char err[512];
    npl_gguf *g = npl_gguf_open(src, NULL, err, sizeof err);
    if (!g) return fprintf(stderr, "%s\n", err), -1;
    npl_gguf_writer *w = npl_gguf_writer_new();
    static const char *const skip[] = {"tokenizer.ggml.model", "tokenizer.ggml.pre", NULL};
    int rc = w ? npl_gguf_copy_kv(w, g, skip, err, sizeof err) : -1;
    if (!rc) rc = npl_gguf_writer_set_str(w, "tokenizer.ggml.model", model);
    if (!rc) rc = npl_gguf_writer_set_str(w, "tokenizer.ggml.pre", pre);
    for (int64_t i = 0; !rc && i < npl_gguf_n_tensors(g); i++) {
        const npl_gguf_tensor *t = npl_gguf_tensor_at(g, i);
        rc = npl_gguf_writer_add_tensor(w, t->name, t->type, t->n_dims, t->ne, t->data, t->size);
    }
    if (!rc) rc = npl_gguf_writer_write(w, dst, err, sizeof err);
    if (rc) fprintf(stderr, "%s: %s\n", dst, err);
    npl_gguf_writer_free(w);
    npl_gguf_close(g);
    return rc;
}

static void refused(const char *src, const char *name, const char *model, const char *pre, const char *why) {
    char path[700], out[700], run_err[512] = "", cc_err[512] = "", log[8192] = "";
    snprintf(path, sizeof path, "%s/%s.gguf", dir, name);
    snprintf(out, sizeof out, "%s/%s-pkg", dir, name);
    CHECK(retokenized(src, path, model, pre) == 0);

    npl_engine_params ep = npl_engine_default_params();
    ep.n_threads = 1;
    npl_engine *e = npl_engine_open(path, &ep, run_err, sizeof run_err);
    CHECK(e == NULL);
    npl_engine_close(e);
    CHECK(strstr(run_err, why) != NULL);

    npl_compile_params cp = npl_compile_default_params();
    cp.n_threads = 1;
    cp.chunk = 8;
    cp.n_ctx = 64;
    FILE *lf = tmpfile();
    cp.log = lf;
    int rc = npl_compile(path, out, &cp, cc_err, sizeof cc_err);
    if (lf) {
        rewind(lf);
        size_t n = fread(log, 1, sizeof log - 1, lf);
        log[n] = 0;
        fclose(lf);
    }
    printf("%s: run: %s\n%s: compile: %s\n", name, run_err, name, cc_err);
    CHECK_EQ_INT(rc, -1);
    CHECK(strcmp(cc_err, run_err) == 0);            /* the message run gives */
    CHECK(strstr(log, "partition") == NULL);        /* no stage after the first began */
    struct stat st;
    CHECK(stat(out, &st) != 0);                     /* nothing at -o */
    unlink(path);
}

int main(void) {
    const char *data = getenv("NPL_TEST_DATA");
    char src[600];
    snprintf(src, sizeof src, "%s/models/rand-llama-f32.gguf", data ? data : "data");
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/npl-compile-refuses-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    CHECK(mkdtemp(dir) != NULL);
    /* the unmodified model compiles (so the refusals below are the tokenizer's) */
    char out[700], err[512];
    snprintf(out, sizeof out, "%s/ok-pkg", dir);
    npl_compile_params cp = npl_compile_default_params();
    cp.n_threads = 1;
    cp.chunk = 8;
    cp.n_ctx = 64;
    CHECK_EQ_INT(npl_compile(src, out, &cp, err, sizeof err), 0);

    refused(src, "bad-pre", "gpt2", "no-such-pre", "tokenizer.ggml.pre: unsupported pre-tokenizer \"no-such-pre\"");
    refused(src, "bad-model", "rwkv", "default", "tokenizer.ggml.model: unsupported tokenizer model \"rwkv\"");

    char cmd[700];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    CHECK(system(cmd) == 0);
    TEST_MAIN_END();
}
