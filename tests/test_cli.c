/* The npullm CLI ($NPL_CLI) as a user drives it, on the small random GGUFs:
 * command line over config.json, llama.cpp's flag names, unknown flags
 * anywhere, values that cannot take effect, --version, and what bench,
 * bench-matmul and config errors print. */
#include <fcntl.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "npullm.h"

extern char **environ;

static const char *cli;
static char dir[512], model[1024];
static char out[1 << 16], err[1 << 16];

static void slurp(const char *path, char *buf, size_t cap) {
    FILE *fp = fopen(path, "rb");
    size_t n = fp ? fread(buf, 1, cap - 1, fp) : 0;
    if (fp) fclose(fp);
    buf[n] = 0;
}

/* Runs the CLI with the NULL-terminated arguments; stdout in out, stderr in
 * err; returns the exit status (-1 if it did not exit). */
static int run(const char *arg0, ...) {
    const char *argv[64];
    int n = 0;
    argv[n++] = cli;
    va_list ap;
    va_start(ap, arg0);
    for (const char *a = arg0; a && n < 63; a = va_arg(ap, const char *)) argv[n++] = a;
    va_end(ap);
    argv[n] = NULL;
    char po[600], pe[600];
    snprintf(po, sizeof po, "%s/out.txt", dir);
    snprintf(pe, sizeof pe, "%s/err.txt", dir);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 1, po, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    posix_spawn_file_actions_addopen(&fa, 2, pe, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    pid_t pid;
    int st = -1;
    if (posix_spawn(&pid, cli, &fa, NULL, (char *const *)argv, environ) == 0) waitpid(pid, &st, 0);
    posix_spawn_file_actions_destroy(&fa);
    slurp(po, out, sizeof out);
    slurp(pe, err, sizeof err);
    return st != -1 && WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static int one_line(const char *s) {
    const char *nl = strchr(s, '\n');
    return nl && nl[1] == 0;
}

/* "decode N tok" of the stats line, -1 if absent */
static int decoded(void) {
    const char *d = strstr(err, "decode ");
    int n = -1;
    if (d) sscanf(d, "decode %d tok", &n);
    return n;
}

static int context_used(void) {
    const char *d = strstr(err, "| context ");
    int n = -1;
    if (d) sscanf(d, "| context %d", &n);
    return n;
}

static const char *write_config(const char *name, const char *fmt, ...) {
    static char paths[16][700]; /* a few stay valid at once */
    static int next;
    char *path = paths[next++ % 16];
    snprintf(path, sizeof paths[0], "%s/%s", dir, name);
    FILE *fp = fopen(path, "w");
    if (!fp) return path;
    va_list ap;
    va_start(ap, fmt);
    vfprintf(fp, fmt, ap);
    va_end(ap);
    fclose(fp);
    return path;
}

/* ---- command line over config.json ---- */

static void test_precedence(void) {
    /* config: 20 new tokens; the command line asks for 3 */
    const char *c1 = write_config("n.json", "{\"llm_model\": \"%s\", \"max_new_tokens\": 20}", model);
    int rc = run("run", "-m", c1, "-p", "hi", "-n", "3", "--temp", "0", NULL);
    CHECK_EQ_INT(rc, 0);
    CHECK_EQ_INT(decoded(), 3);
    /* config: MNN topK sampling at temperature 1; --temp 0 makes it greedy,
     * so the seed cannot matter and the answer is the plain greedy one */
    const char *c2 = write_config("k.json", "{\"llm_model\": \"%s\", \"max_new_tokens\": 20, \"sampler_type\": \"topK\"}",
                                  model);
    static char greedy[1 << 16], a[1 << 16];
    CHECK_EQ_INT(run("run", "-m", model, "-p", "hi", "-n", "20", "--temp", "0", "--no-stats", NULL), 0);
    snprintf(greedy, sizeof greedy, "%s", out);
    CHECK(strlen(greedy) > 1);
    for (int seed = 1; seed <= 3; seed++) {
        char s[8];
        snprintf(s, sizeof s, "%d", seed);
        CHECK_EQ_INT(run("run", "-m", c2, "-p", "hi", "--temp", "0", "--seed", s, "--no-stats", NULL), 0);
        snprintf(a, sizeof a, "%s", out);
        CHECK(!strcmp(a, greedy));
    }
    /* without --temp the config's sampler is used: the seeds differ (so the
     * equalities above mean something) */
    CHECK_EQ_INT(run("run", "-m", c2, "-p", "hi", "--seed", "1", "--no-stats", NULL), 0);
    snprintf(a, sizeof a, "%s", out);
    CHECK_EQ_INT(run("run", "-m", c2, "-p", "hi", "--seed", "2", "--no-stats", NULL), 0);
    CHECK(strcmp(a, out) != 0);
    /* the general rule, on another key: the config's context of 64 does not
     * hold the templated prompt (the random model has no template of its
     * own: it would complete "hi" raw); -c 160 wins */
    const char *c3 = write_config("c.json", "{\"llm_model\": \"%s\", \"max_context_length\": 64, \"thread_num\": 1}",
                                  model);
    rc = run("run", "-m", c3, "-p", "hi", "-n", "2", "--temp", "0", "--chat-template", "llama3", NULL);
    CHECK(rc != 0);
    CHECK(strstr(err, "context of 64") != NULL);
    rc = run("run", "-m", c3, "-p", "hi", "-n", "2", "--temp", "0", "--chat-template", "llama3", "-c", "160", NULL);
    CHECK_EQ_INT(rc, 0);
    CHECK_EQ_INT(decoded(), 2);
    /* and a config value still applies where no flag is given */
    rc = run("run", "-m", c1, "-p", "hi", "--temp", "0", NULL);
    CHECK_EQ_INT(rc, 0);
    CHECK(decoded() > 3 && decoded() <= 20);
}

/* ---- llama.cpp's flag names and conventions ---- */

static void test_aliases(void) {
    static char ref[1 << 16];
    CHECK_EQ_INT(run("run", "-m", model, "-p", "hello", "-n", "6", "-c", "128", "-t", "1", "--temp", "0.7",
                     "--seed", "5", "--top-k", "20", "--top-p", "0.9", "--min-p", "0.1", "--repeat-penalty", "1.1",
                     "--no-stats", NULL), 0);
    snprintf(ref, sizeof ref, "%s", out);
    CHECK(strlen(ref) > 1);
    CHECK_EQ_INT(run("run", "--model", model, "--prompt", "hello", "--n-predict", "6", "--ctx-size", "128",
                     "--threads", "1", "--temp", "0.7", "-s", "5", "--top-k", "20", "--top-p", "0.9", "--min-p",
                     "0.1", "--repeat-penalty", "1.1", "--no-stats", NULL), 0);
    CHECK(!strcmp(out, ref));
    CHECK_EQ_INT(run("run", "--model", model, "--prompt", "hello", "--predict", "6", "--ctx-size", "128",
                     "--threads", "1", "--temp", "0.7", "--seed", "5", "--top-k", "20", "--top-p", "0.9", "--min-p",
                     "0.1", "--repeat-penalty", "1.1", "--no-stats", NULL), 0);
    CHECK(!strcmp(out, ref));
    /* --file and -sys/--system-prompt */
    const char *pf = write_config("prompt.txt", "hello");
    CHECK_EQ_INT(run("run", "-m", model, "--file", pf, "-n", "6", "-c", "128", "-t", "1", "--temp", "0.7", "--seed",
                     "5", "--top-k", "20", "--top-p", "0.9", "--min-p", "0.1", "--repeat-penalty", "1.1",
                     "--no-stats", NULL), 0);
    CHECK(!strcmp(out, ref));
    /* a base model (no tokenizer.chat_template) completes raw: a system
     * prompt has nowhere to go without a template named */
    CHECK(run("run", "-m", model, "-p", "hello", "-n", "4", "--system", "be brief", NULL) != 0);
    CHECK(strstr(err, "no tokenizer.chat_template") && strstr(err, "--chat-template"));
    CHECK_EQ_INT(run("run", "-m", model, "-p", "hello", "-n", "4", "--temp", "0", "--chat-template", "llama3",
                     "--system", "be brief", "--no-stats", NULL), 0);
    snprintf(ref, sizeof ref, "%s", out);
    CHECK_EQ_INT(run("run", "-m", model, "-p", "hello", "-n", "4", "--temp", "0", "--chat-template", "llama3",
                     "--system-prompt", "be brief", "--no-stats", NULL), 0);
    CHECK(!strcmp(out, ref));
    CHECK_EQ_INT(run("run", "-m", model, "-p", "hello", "-n", "4", "--temp", "0", "--chat-template", "llama3",
                     "-sys", "be brief", "--no-stats", NULL), 0);
    CHECK(!strcmp(out, ref));
    /* -n -1: until EOS or the context is full, which is a normal end */
    int rc = run("run", "-m", model, "-p", "hi", "-n", "-1", "-c", "90", "--temp", "0", NULL);
    CHECK_EQ_INT(rc, 0);
    CHECK(decoded() > 0);
    CHECK(context_used() <= 90);
    /* --seed -1: random; two runs at temperature 1.5 differ */
    static char a[1 << 16];
    CHECK_EQ_INT(run("run", "-m", model, "-p", "hi", "-n", "24", "--temp", "1.5", "--seed", "-1", "--no-stats", NULL), 0);
    snprintf(a, sizeof a, "%s", out);
    usleep(1100000); /* the clock seed has a one-second part */
    CHECK_EQ_INT(run("run", "-m", model, "-p", "hi", "-n", "24", "--temp", "1.5", "--seed", "-1", "--no-stats", NULL), 0);
    CHECK(strcmp(a, out) != 0);
    /* other subcommands */
    CHECK_EQ_INT(run("tokenize", "--model", model, "--prompt", "hello world", "--ids", NULL), 0);
    snprintf(a, sizeof a, "%s", out);
    CHECK_EQ_INT(run("tokenize", "-m", model, "-p", "hello world", "--ids", NULL), 0);
    CHECK(!strcmp(a, out) && a[0] == '[');
    CHECK_EQ_INT(run("bench", "--model", model, "--n-prompt", "8", "--n-gen", "2", "--repetitions", "1",
                     "--threads", "1", "--ubatch-size", "4", "--output", "json", NULL), 0);
    CHECK(strstr(out, "\"test\": \"pp8\"") != NULL);
    CHECK(strstr(out, "\"test\": \"tg2\"") != NULL);
}

/* ---- unknown flags ---- */

static void expect_unknown(const char *what) {
    printf("  %s -> %s", what, err);
    CHECK(one_line(err));
    CHECK(strstr(err, "unknown flag --mlock") != NULL);
    CHECK(strstr(err, "usage") == NULL);
    CHECK(strstr(err, "needs a value") == NULL);
}

static void test_unknown_flags(void) {
    /* each subcommand with a valid first flag and value of its own */
    static const struct { const char *cmd, *flag; } cmds[] = {
        {"run", "-m"}, {"tokenize", "-m"}, {"perplexity", "-m"}, {"bench", "-m"}, {"bench-matmul", "--precisions"},
        {"compile", "-m"}, {"eval-logits", "-m"}, {"serve", "-m"}, {"inspect", NULL}};
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
        const char *c = cmds[i].cmd, *f = cmds[i].flag, *v = !strcmp(c, "bench-matmul") ? "fp32" : model;
        CHECK_EQ_INT(run(c, "--mlock", NULL), 2); /* alone */
        expect_unknown(c);
        if (f) {
            CHECK_EQ_INT(run(c, f, v, "--mlock", NULL), 2); /* last */
            expect_unknown(c);
            CHECK_EQ_INT(run(c, f, v, "--mlock", "-t", "1", NULL), 2); /* middle */
            expect_unknown(c);
            CHECK_EQ_INT(run(c, "--mlock", f, v, NULL), 2); /* first */
            expect_unknown(c);
        } else {
            CHECK_EQ_INT(run(c, model, "--mlock", NULL), 2);
            expect_unknown(c);
        }
    }
    CHECK_EQ_INT(run("run", "-m", model, "-p", "hi", "-n", "1", "--mlock", NULL), 2);
    expect_unknown("run ... --mlock");
    /* a known flag at the end without its value says so */
    CHECK_EQ_INT(run("run", "-m", model, "-n", NULL), 2);
    CHECK(one_line(err) && strstr(err, "-n needs a value"));
    /* an unknown command: one line */
    CHECK_EQ_INT(run("frobnicate", NULL), 2);
    CHECK(one_line(err) && strstr(err, "unknown command"));
}

/* ---- values that cannot take effect ---- */

static void test_conflicts(void) {
    const char *pf = write_config("p.txt", "hi");
    CHECK_EQ_INT(run("run", "-m", model, "-p", "hi", "-f", pf, NULL), 2);
    CHECK(one_line(err) && strstr(err, "-p") && strstr(err, "-f"));
    CHECK_EQ_INT(run("run", "-m", model, "-p", "hi", "--raw", "--system", "x", NULL), 2);
    CHECK(one_line(err) && strstr(err, "--system") && strstr(err, "--raw"));
    CHECK_EQ_INT(run("run", "-m", model, "-p", "hi", "--raw", "--chat-template", "chatml", NULL), 2);
    CHECK(one_line(err) && strstr(err, "--chat-template"));
    /* a context above the trained one (4096 in these files) runs, with a warning */
    CHECK_EQ_INT(run("run", "-m", model, "-p", "hi", "-n", "1", "-c", "5000", "--temp", "0", "--no-stats", NULL), 0);
    CHECK(strstr(err, "warning") && strstr(err, "5000") && strstr(err, "trained context of 4096"));
    CHECK_EQ_INT(run("run", "-m", model, "-p", "hi", "-n", "1", "-c", "4096", "--temp", "0", "--no-stats", NULL), 0);
    CHECK(strstr(err, "warning") == NULL);
    const char *cw = write_config("cw.json", "{\"llm_model\": \"%s\", \"max_context_length\": 5000}", model);
    CHECK_EQ_INT(run("run", "-m", cw, "-p", "hi", "-n", "1", "--temp", "0", "--no-stats", NULL), 0);
    CHECK(strstr(err, "cw.json: max_context_length 5000 is above the model's trained context of 4096") != NULL);
    /* config backend_type / precision that do not take effect */
    const char *c = write_config("bt.json", "{\"llm_model\": \"%s\", \"backend_type\": \"opencl\"}", model);
    CHECK_EQ_INT(run("run", "-m", c, "-p", "hi", "-n", "1", NULL), 1);
    CHECK(one_line(err) && strstr(err, "bt.json: backend_type: 'opencl' is not supported") && strstr(err, "\"cpu\""));
    c = write_config("pr.json", "{\"llm_model\": \"%s\", \"precision\": \"low\"}", model);
    CHECK_EQ_INT(run("run", "-m", c, "-p", "hi", "-n", "1", NULL), 1);
    CHECK(one_line(err) && strstr(err, "pr.json: precision: 'low' is not supported") && strstr(err, "\"normal\""));
    c = write_config("ok.json", "{\"llm_model\": \"%s\", \"backend_type\": \"cpu\", \"precision\": \"high\"}", model);
    CHECK_EQ_INT(run("run", "-m", c, "-p", "hi", "-n", "1", "--no-stats", NULL), 0);
    c = write_config("us.json", "{\"llm_model\": \"%s\", \"use_template\": false, \"system_prompt\": \"x\"}", model);
    CHECK_EQ_INT(run("run", "-m", c, "-p", "hi", "-n", "1", NULL), 1);
    CHECK(one_line(err) && strstr(err, "us.json: system_prompt"));
    c = write_config("ut.json", "{\"llm_model\": \"%s\", \"use_template\": false}", model);
    CHECK_EQ_INT(run("run", "-m", c, "-p", "hi", "-n", "1", "--system", "x", NULL), 2);
    CHECK(one_line(err) && strstr(err, "--system") && strstr(err, "use_template"));

    /* a package: -c and --chunk must be what it was compiled with */
    char pkg[700], q8[1024];
    snprintf(pkg, sizeof pkg, "%s/pkg", dir);
    snprintf(q8, sizeof q8, "%s/models/rand-llama-q8_0.gguf", getenv("NPL_TEST_DATA"));
    CHECK_EQ_INT(run("compile", "-m", q8, "-o", pkg, "--ctx", "128", "--chunk", "16", "--no-check", NULL), 0);
    CHECK_EQ_INT(run("run", "-m", pkg, "-p", "hi", "-n", "2", "--temp", "0", "--no-stats", NULL), 0);
    CHECK_EQ_INT(run("run", "-m", pkg, "-p", "hi", "-n", "2", "--temp", "0", "-c", "128", "--chunk", "16,1",
                     "--no-stats", NULL), 0);
    CHECK_EQ_INT(run("run", "-m", pkg, "-p", "hi", "-n", "2", "-c", "64", NULL), 2);
    CHECK(one_line(err) && strstr(err, "-c 64") && strstr(err, "compiled for a context of 128"));
    CHECK_EQ_INT(run("run", "-m", pkg, "-p", "hi", "-n", "2", "-c", "256", NULL), 2);
    CHECK(one_line(err) && strstr(err, "compiled for a context of 128"));
    CHECK_EQ_INT(run("run", "-m", pkg, "-p", "hi", "-n", "2", "--chunk", "32,1", NULL), 2);
    CHECK(one_line(err) && strstr(err, "--chunk 32,1") && strstr(err, "compiled for chunks 16,1"));
    /* its config naming another precision than the compiled one */
    char cfg[800];
    snprintf(cfg, sizeof cfg, "%s/config.json", pkg);
    FILE *fp = fopen(cfg, "w");
    if (fp) {
        fprintf(fp, "{\"llm_model\": \"model.gguf\", \"chunk_limits\": [16, 1], \"max_context_length\": 128, "
                    "\"precision\": \"f32\"}\n");
        fclose(fp);
    }
    CHECK_EQ_INT(run("run", "-m", pkg, "-p", "hi", "-n", "2", NULL), 1);
    CHECK(one_line(err) && strstr(err, "precision: 'f32'") && strstr(err, "\"f16\""));
}

/* ---- --version ---- */

static void test_version(void) {
    CHECK_EQ_INT(run("--version", NULL), 0);
    char want[64];
    snprintf(want, sizeof want, "npullm %s", NPL_VERSION_STRING);
    CHECK(!strncmp(out, want, strlen(want)));
    CHECK(strstr(out, "kernel families built: 0 generic") != NULL);
    CHECK(strstr(out, "cpu: ") != NULL);
    CHECK(!strcmp(npl_version(), NPL_VERSION_STRING));
    snprintf(want, sizeof want, "%d.%d.%d", NPL_VERSION_MAJOR, NPL_VERSION_MINOR, NPL_VERSION_PATCH);
    CHECK(!strcmp(npl_version(), want));
}

/* ---- what bench, bench-matmul and config errors print ---- */

static void test_bench_output(void) {
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    int th = -1;
    CHECK_EQ_INT(run("bench", "-m", model, "-p", "8", "-n", "2", "-r", "1", "-o", "json", NULL), 0);
    const char *t = strstr(out, "\"threads\": ");
    if (t) sscanf(t, "\"threads\": %d", &th);
    CHECK_EQ_INT(th, cores > 256 ? 256 : cores);
    CHECK(strstr(out, "\"isa\": \"") && strstr(out, "\"cpu\": \""));
    CHECK_EQ_INT(run("bench", "-m", model, "-p", "8", "-n", "0", "-r", "1", "-t", "1", "-o", "csv", NULL), 0);
    CHECK(!strncmp(out, "model,arch,isa,threads,cpu,test,", 32));
    CHECK(strstr(out, ",1,\"") != NULL);
    CHECK_EQ_INT(run("bench", "-m", model, "-p", "8", "-n", "0", "-r", "1", NULL), 0);
    char row[64];
    snprintf(row, sizeof row, " | %ld | pp8 |", cores > 256 ? 256 : cores);
    CHECK(strstr(out, row) != NULL);
    CHECK(strstr(out, " | 0 | pp8 |") == NULL);

    /* bench-matmul: the comparison line's numbers are the tables', and its
     * wording matches them */
    CHECK_EQ_INT(run("bench-matmul", "--m", "32", "--k", "256", "--n", "256", "--warmup", "1", "--iters", "3",
                     "--precisions", "fp32,fp16", "-t", "1", NULL), 0);
    const char *h = strstr(out, "best vnpu precision against the CPU backend: vnpu ");
    CHECK(h != NULL);
    if (!h) return;
    char prec[16], word[16];
    double v = 0, c = 0, ratio = 0;
    const char *ms1 = strstr(h, "static) "), *ms2 = strstr(h, ") ") ? strstr(strstr(h, "vs CPU"), ") ") : NULL;
    CHECK(sscanf(h, "best vnpu precision against the CPU backend: vnpu %15s", prec) == 1);
    CHECK(ms1 && sscanf(ms1, "static) %lf ms", &v) == 1);
    CHECK(ms2 && sscanf(ms2, ") %lf ms", &c) == 1);
    const char *is = strstr(h, "vnpu is ");
    CHECK(is && sscanf(is, "vnpu is %lfx %15s", &ratio, word) == 2);
    printf("  bench-matmul: %s %.3f vs cpu %.3f: %.2fx %s\n", prec, v, c, ratio, word);
    CHECK(v > 0 && c > 0);
    if (v < c) CHECK(!strcmp(word, "faster"));
    if (v > c) CHECK(!strcmp(word, "slower"));
    double expect = v < c ? c / v : v / c; /* printed values are rounded to 0.001 ms */
    CHECK(ratio > expect * (1 - 0.001 / v - 0.001 / c) - 0.006 && ratio < expect * (1 + 0.001 / v + 0.001 / c) + 0.006);
    /* the same times are in table (b): the static row of that precision and the CPU row */
    char rowv[64], rowc[64];
    snprintf(rowv, sizeof rowv, "%.3f±", v);
    snprintf(rowc, sizeof rowc, "%.3f±", c);
    const char *b = strstr(out, "(b) STATIC vs APP_WRITE");
    CHECK(b != NULL);
    if (b) {
        char key[64];
        snprintf(key, sizeof key, "\n%-9s static", prec);
        const char *sr = strstr(b, key), *cr = strstr(b, "\nfp32      cpu");
        CHECK(sr && cr);
        if (sr) CHECK(strstr(sr, rowv) && strstr(sr, rowv) < strchr(sr + 1, '\n'));
        if (cr) CHECK(strstr(cr, rowc) && strstr(cr, rowc) < strchr(cr + 1, '\n'));
    }
}

static void test_config_messages(void) {
    const char *c = write_config("tp.json", "{\"llm_model\": \"%s\", \"topP\": 2}", model);
    CHECK_EQ_INT(run("run", "-m", c, "-p", "hi", "-n", "1", NULL), 1);
    printf("  %s", err);
    CHECK(one_line(err) && strstr(err, "tp.json: topP: 2 out of range [0, 1]"));
    CHECK(strstr(err, "top_p") == NULL);
    c = write_config("mp.json", "{\"llm_model\": \"%s\", \"sampler_type\": \"minP\", \"minP\": -0.5}", model);
    CHECK_EQ_INT(run("run", "-m", c, "-p", "hi", "-n", "1", NULL), 1);
    CHECK(one_line(err) && strstr(err, "mp.json: minP: -0.5 out of range"));
    c = write_config("inf.json", "{\"llm_model\": \"%s\", \"temperature\": 1e999}", model);
    CHECK_EQ_INT(run("run", "-m", c, "-p", "hi", "-n", "1", NULL), 1);
    printf("  %s", err);
    CHECK(one_line(err) && strstr(err, "inf.json: temperature: 1e999: out of range"));
    CHECK(strstr(err, "got a number") == NULL);
    c = write_config("th.json", "{\"llm_model\": \"%s\", \"thread_num\": 1000}", model);
    CHECK_EQ_INT(run("run", "-m", c, "-p", "hi", "-n", "1", NULL), 1);
    CHECK(one_line(err) && strstr(err, "th.json: thread_num: 1000 out of range [0, 256]"));
    c = write_config("mn.json", "{\"llm_model\": \"%s\", \"max_new_tokens\": 2.5}", model);
    CHECK_EQ_INT(run("run", "-m", c, "-p", "hi", "-n", "1", NULL), 1);
    CHECK(one_line(err) && strstr(err, "mn.json: max_new_tokens: 2.5 is not an integer"));
}

int main(void) {
    setvbuf(stdout, NULL, _IOLBF, 0);
    cli = getenv("NPL_CLI");
    const char *data = getenv("NPL_TEST_DATA");
    CHECK(cli && *cli && data && *data);
    if (!cli || !*cli || !data || !*data) TEST_MAIN_END();
    snprintf(model, sizeof model, "%s/models/rand-llama-f32.gguf", data);
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/npl-cli-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    CHECK(mkdtemp(dir) != NULL);
    printf("precedence\n");
    test_precedence();
    printf("aliases\n");
    test_aliases();
    printf("unknown flags\n");
    test_unknown_flags();
    printf("conflicts\n");
    test_conflicts();
    printf("version\n");
    test_version();
    printf("bench output\n");
    test_bench_output();
    printf("config messages\n");
    test_config_messages();
    char cmd[700];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    CHECK(system(cmd) == 0);
    TEST_MAIN_END();
}
