/* The layer rules of src/, checked on the #include lines of every source:
 * - src/kernels (the leaf kernel library) includes only src/kernels and
 *   system headers;
 * - src/cpu (the CPU backend) includes nothing from src/accel;
 * - src/accel/vnpu includes nothing from src/cpu, nor the graph, session or
 *   backend headers, nor the layers above them (llm, compiler, plugin, ...);
 * - src/compiler, src/llm and src/plugin include no accelerator and do not
 *   even name vnpu: they reach accelerators only through the ABI and the
 *   plugin a compile or a package names (issue 14).
 * Argument: the src directory (default ../src, ctest runs in tests/). */
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "check.h"

typedef struct {
    const char *dir;    /* files under src/<dir> */
    const char *why;
    const char *only;   /* quoted includes must start with this, or NULL */
    const char *deny[16]; /* quoted includes starting with one of these are refused */
    const char *word;   /* a word no line of these files may contain (any case), or NULL */
} layer_rule;

static const layer_rule RULES[] = {
    {"kernels/", "the kernel library is a leaf", "kernels/", {NULL}, NULL},
    {"cpu/", "the CPU backend does not know the accelerators", NULL, {"accel/", NULL}, NULL},
    {"accel/vnpu/", "vnpu is built on the kernels, not on the CPU backend or the graph", NULL,
     {"cpu/", "llm/", "compiler/", "plugin/", "module/", "models/", "format/", "core/graph.h", "core/session.h",
      "core/backend.h", "core/eval.h", "core/ops.h", "core/shape.h", NULL}, NULL},
    {"compiler/", "the compiler asks the target it is given", NULL, {"accel/", NULL}, "vnpu"},
    {"llm/", "the engine runs whatever plugin a package names", NULL, {"accel/", NULL}, "vnpu"},
    {"plugin/", "the plugin runtime loads accelerators by name", NULL, {"accel/", NULL}, "vnpu"},
};
enum { N_RULES = sizeof RULES / sizeof RULES[0] };

static const char *g_src;
static int g_files[N_RULES], g_bad;

/* NULL if `inc` (quoted: 1, angle: 0) is allowed in files of rule r, else what is wrong */
static const char *refusal(const layer_rule *r, const char *inc, int quoted) {
    if (!quoted) return r->only && !strncmp(inc, "npullm", 6) ? "a public npullm header" : NULL;
    if (strstr(inc, "..")) return "a relative path";
    if (r->only && strncmp(inc, r->only, strlen(r->only))) return "outside its layer";
    for (int i = 0; r->deny[i]; i++)
        if (!strncmp(inc, r->deny[i], strlen(r->deny[i]))) return "a layer it must not depend on";
    return NULL;
}

/* 1 if line contains word, ignoring case */
static int has_word(const char *line, const char *word) {
    const size_t n = strlen(word);
    for (const char *p = line; *p; p++)
        if (!strncasecmp(p, word, n)) return 1;
    return 0;
}

/* The header named by an #include line: quoted sets *quoted; NULL if none. */
static const char *included(char *line, int *quoted) {
    char *p = line;
    while (*p == ' ' || *p == '\t') p++;
    if (*p++ != '#') return NULL;
    while (*p == ' ' || *p == '\t') p++;
    if (strncmp(p, "include", 7)) return NULL;
    p += 7;
    while (*p == ' ' || *p == '\t') p++;
    const char close = *p == '"' ? '"' : *p == '<' ? '>' : 0;
    if (!close) return NULL;
    *quoted = close == '"';
    char *e = strchr(++p, close);
    if (!e) return NULL;
    *e = 0;
    return p;
}

static void check_file(const char *path, const layer_rule *r) {
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "%s: cannot open\n", path);
        g_bad++;
        return;
    }
    char line[1024];
    for (int ln = 1; fgets(line, sizeof line, f); ln++) {
        if (r->word && has_word(line, r->word)) {
            fprintf(stderr, "%s:%d: names %s (%s)\n", path, ln, r->word, r->why);
            g_bad++;
        }
        int quoted = 0;
        const char *inc = included(line, &quoted);
        const char *no = inc ? refusal(r, inc, quoted) : NULL;
        if (no) {
            fprintf(stderr, "%s:%d: includes %s, %s (%s)\n", path, ln, inc, no, r->why);
            g_bad++;
        }
    }
    fclose(f);
}

static int visit(const char *path, const struct stat *st, int type, struct FTW *ftw) {
    (void)st, (void)ftw;
    const size_t n = strlen(path);
    if (type != FTW_F || n < 2 || (strcmp(path + n - 2, ".c") && strcmp(path + n - 2, ".h"))) return 0;
    const char *rel = path + strlen(g_src) + 1;
    for (int i = 0; i < N_RULES; i++)
        if (!strncmp(rel, RULES[i].dir, strlen(RULES[i].dir))) {
            g_files[i]++;
            check_file(path, &RULES[i]);
        }
    return 0;
}

int main(int argc, char **argv) {
    /* the rules themselves, on includes that must pass and must fail */
    CHECK(refusal(&RULES[0], "kernels/gemm.h", 1) == NULL);
    CHECK(refusal(&RULES[0], "immintrin.h", 0) == NULL);
    CHECK(refusal(&RULES[0], "core/graph.h", 1) != NULL);
    CHECK(refusal(&RULES[0], "npullm.h", 0) != NULL);
    CHECK(refusal(&RULES[1], "kernels/matmul.h", 1) == NULL);
    CHECK(refusal(&RULES[1], "accel/vnpu/vnpu.h", 1) != NULL);
    CHECK(refusal(&RULES[2], "kernels/matmul.h", 1) == NULL);
    CHECK(refusal(&RULES[2], "cpu/cpu_backend.h", 1) != NULL);
    CHECK(refusal(&RULES[2], "core/session.h", 1) != NULL);
    CHECK(refusal(&RULES[2], "../../cpu/cpu_backend.h", 1) != NULL);
    CHECK(refusal(&RULES[3], "accel/vnpu/vnpu_api.h", 1) != NULL);
    CHECK(refusal(&RULES[3], "npullm_accel.h", 1) == NULL);
    CHECK(has_word("    /* the VNPU table */", "vnpu") && !has_word("    /* the target's table */", "vnpu"));
    char l1[] = "  #  include \"cpu/x.h\" // why", l2[] = "#include <stdio.h>", l3[] = "int include;";
    int q = -1;
    const char *h1 = included(l1, &q);
    CHECK(h1 && !strcmp(h1, "cpu/x.h") && q == 1);
    const char *h2 = included(l2, &q);
    CHECK(h2 && !strcmp(h2, "stdio.h") && q == 0);
    CHECK(included(l3, &q) == NULL);

    g_src = argc > 1 ? argv[1] : "../src";
    if (nftw(g_src, visit, 16, FTW_PHYS)) {
        fprintf(stderr, "%s: cannot walk the source tree\n", g_src);
        return 1;
    }
    for (int i = 0; i < N_RULES; i++) {
        printf("src/%s: %d files\n", RULES[i].dir, g_files[i]);
        CHECK(g_files[i] > 0); /* a rule over no files checks nothing */
    }
    if (g_bad) fprintf(stderr, "%d include(s) break the layer rules\n", g_bad);
    CHECK_EQ_INT(g_bad, 0);
    TEST_MAIN_END();
}
