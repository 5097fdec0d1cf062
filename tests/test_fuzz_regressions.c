/* Fuzz regressions: every file in tests/data/fuzz-regressions/TARGET/ (inputs
 * that once crashed or failed a check of fuzz/fuzz_TARGET.c, kept after the
 * fix) and every seed in fuzz/corpus/TARGET/ goes through the same entry
 * code as the fuzzer: the harness sources are compiled into this test with
 * their LLVMFuzzerTestOneInput renamed. A harness reports a failure by
 * aborting (or, in the sanitizer build, by ASan/UBSan), so this test passes
 * when every input runs through.
 *
 * Adding a regression: minimize the crash (build-fuzz/fuzz_TARGET
 * -minimize_crash=1 -runs=N CRASH), copy the result into
 * tests/data/fuzz-regressions/TARGET/ under a name that says what it
 * caught, and fix the bug. See fuzz/README.md. */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* ---- the harnesses (file-scope names that clash are renamed) ---- */
#define LLVMFuzzerTestOneInput fuzz_gguf_one
#define sink gguf_sink
#include "../fuzz/fuzz_gguf.c"
#undef sink
#undef LLVMFuzzerTestOneInput

#define LLVMFuzzerTestOneInput fuzz_tokenizer_one
#define sink tokenizer_sink
#include "../fuzz/fuzz_tokenizer.c"
#undef sink
#undef LLVMFuzzerTestOneInput

#define LLVMFuzzerTestOneInput fuzz_model_one
#include "../fuzz/fuzz_model.c"
#undef LLVMFuzzerTestOneInput

#define LLVMFuzzerTestOneInput fuzz_chat_template_one
#include "../fuzz/fuzz_chat_template.c"
#undef LLVMFuzzerTestOneInput

#define LLVMFuzzerTestOneInput fuzz_config_one
#include "../fuzz/fuzz_config.c"
#undef LLVMFuzzerTestOneInput

#define LLVMFuzzerTestOneInput fuzz_text_stream_one
#include "../fuzz/fuzz_text_stream.c"
#undef LLVMFuzzerTestOneInput

#define LLVMFuzzerTestOneInput fuzz_vnpu_binary_one
#include "../fuzz/fuzz_vnpu_binary.c"
#undef LLVMFuzzerTestOneInput

typedef int (*fuzz_entry)(const uint8_t *data, size_t size);

static const struct {
    const char *name;
    fuzz_entry run;
} targets[] = {
    {"gguf", fuzz_gguf_one},
    {"tokenizer", fuzz_tokenizer_one},
    {"model", fuzz_model_one},
    {"chat_template", fuzz_chat_template_one},
    {"config", fuzz_config_one},
    {"text_stream", fuzz_text_stream_one},
    {"vnpu_binary", fuzz_vnpu_binary_one},
};

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* Runs every regular file of dir through run; returns the count, -1 on a read error. */
static int run_dir(const char *dir, fuzz_entry run) {
    DIR *d = opendir(dir);
    if (!d) return 0; /* no inputs for this target */
    char *names[4096];
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) && n < (int)(sizeof names / sizeof names[0]))
        if (e->d_name[0] != '.') names[n++] = strdup(e->d_name);
    closedir(d);
    qsort(names, (size_t)n, sizeof names[0], cmp_str); /* a stable order for the log */
    int count = 0;
    for (int i = 0; i < n; i++) {
        char path[4096];
        struct stat st;
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        free(names[i]);
        if (stat(path, &st) || !S_ISREG(st.st_mode)) continue;
        FILE *f = fopen(path, "rb");
        uint8_t *buf = malloc((size_t)st.st_size + 1);
        if (!f || !buf || fread(buf, 1, (size_t)st.st_size, f) != (size_t)st.st_size) {
            fprintf(stderr, "test_fuzz_regressions: cannot read %s\n", path);
            if (f) fclose(f);
            free(buf);
            count = -1;
            continue;
        }
        fclose(f);
        printf("  %s\n", path);
        fflush(stdout); /* the last name printed is the input that crashed */
        run(buf, (size_t)st.st_size);
        free(buf);
        if (count >= 0) count++;
    }
    return count;
}

int main(void) {
    const char *data = getenv("NPL_TEST_DATA");
    if (!data || !*data) data = "data";
    char root[2048]; /* the repository: tests/data/../.. */
    snprintf(root, sizeof root, "%s/../..", data);
    int fail = 0, total_reg = 0, total_seed = 0;
    for (size_t t = 0; t < sizeof targets / sizeof targets[0]; t++) {
        char dir[4096];
        snprintf(dir, sizeof dir, "%s/fuzz-regressions/%s", data, targets[t].name);
        int r = run_dir(dir, targets[t].run);
        snprintf(dir, sizeof dir, "%s/fuzz/corpus/%s", root, targets[t].name);
        int s = run_dir(dir, targets[t].run);
        printf("%-14s %3d regression inputs, %3d seeds\n", targets[t].name, r, s);
        if (r < 0 || s < 0) fail = 1;
        total_reg += r > 0 ? r : 0;
        total_seed += s > 0 ? s : 0;
    }
    printf("%d regression inputs and %d seeds ran through their harnesses\n", total_reg, total_seed);
    if (fail) printf("FAIL: some inputs could not be read\n");
    return fail;
}
