/* npullm compile and the output directory (issue 13 items 1 and 9), through
 * the CLI on a tiny random model:
 * - --force replaces an npullm package (marked, or an older unmarked one)
 *   and refuses anything else — a directory, a file, a symlink, a package
 *   with a file of the user's, a model directory with an MNN config — with
 *   one line, deleting nothing;
 * - a bad -o parent fails before any stage, naming the path as given;
 * - SIGINT / SIGTERM / SIGHUP at every progress step of every stage (held there by
 *   the NPL_TEST_COMPILE_STALL hook), and at plain delays, exit promptly
 *   with 128 + signal and leave no temp directory; an ignored SIGHUP
 *   (nohup) stays ignored; an old package under
 *   --force is untouched; a failure after the temp dir exists removes it;
 * - the library's own abort (another thread) stops a compile the same way;
 * - --no-check says "not checked"; progress written to a pipe has no '\r',
 *   to a terminal it redraws with '\r'. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "compiler/compiler.h"

static const char *cli, *model;
static char dir[512];

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static char *slurp(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    char *b = calloc(1, 1 << 16);
    if (b) fread(b, 1, (1 << 16) - 1, f);
    fclose(f);
    return b;
}

static int put(const char *path, const char *text) {
    FILE *f = fopen(path, "wb");
    if (!f) return -1;
    fputs(text, f);
    return fclose(f);
}

static int exists(const char *path) {
    struct stat st;
    return lstat(path, &st) == 0;
}

/* entries of dir named like a compile's temp or old directory */
static int leftovers(void) {
    DIR *d = opendir(dir);
    int n = 0;
    for (struct dirent *e; d && (e = readdir(d));)
        if (strstr(e->d_name, ".tmp.") || strstr(e->d_name, ".old.")) {
            fprintf(stderr, "  leftover: %s/%s\n", dir, e->d_name);
            n++;
        }
    if (d) closedir(d);
    return n;
}

/* ---- the CLI as a child process, stderr to a pipe (or a terminal) ---- */

typedef struct {
    pid_t pid;
    int fd;
    char out[1 << 16];
    size_t n;
} child;

static int ignore_hup; /* the next spawn starts with SIGHUP ignored, as under nohup */

static int spawn(child *c, const char *out, const char *extra, const char *stall, int err_fd, int read_fd) {
    const char *argv[24] = {cli, "compile", "-m", model, "-o", out, "--chunk", "8", "--ctx", "64", "-t", "1"};
    int n = 12;
    char ex[256];
    snprintf(ex, sizeof ex, "%s", extra ? extra : "");
    for (char *t = strtok(ex, " "); t && n < 23; t = strtok(NULL, " ")) argv[n++] = t;
    argv[n] = NULL;
    c->n = 0;
    c->out[0] = 0;
    c->fd = read_fd;
    fflush(NULL);
    if ((c->pid = fork()) < 0) return -1;
    if (c->pid == 0) {
        int null = open("/dev/null", O_WRONLY);
        dup2(null, 1);
        dup2(err_fd, 2);
        if (read_fd >= 0) close(read_fd);
        /* a foreground command's dispositions, whatever ctest was started with */
        signal(SIGINT, SIG_DFL);
        signal(SIGTERM, SIG_DFL);
        signal(SIGHUP, ignore_hup ? SIG_IGN : SIG_DFL);
        if (stall) setenv("NPL_TEST_COMPILE_STALL", stall, 1);
        else unsetenv("NPL_TEST_COMPILE_STALL");
        execv(cli, (char *const *)argv);
        _exit(127);
    }
    close(err_fd);
    return 0;
}

/* Reads the child's stderr until `want` appears (NULL: until EOF) or the
 * deadline; 1 if it appeared (or EOF was reached for NULL). */
static int read_until(child *c, const char *want, double timeout) {
    double end = now() + timeout;
    while (now() < end) {
        if (want && strstr(c->out, want)) return 1;
        struct pollfd p = {c->fd, POLLIN, 0};
        if (poll(&p, 1, 50) <= 0) continue;
        ssize_t k = read(c->fd, c->out + c->n, sizeof c->out - 1 - c->n);
        if (k <= 0) return want ? strstr(c->out, want) != NULL : 1; /* EOF (or EIO on a closed pty) */
        c->n += (size_t)k;
        c->out[c->n] = 0;
    }
    return 0;
}

/* Waits for the child's exit: its exit code, -1 on a timeout (killed). */
static int reap(child *c, double timeout) {
    read_until(c, NULL, timeout);
    close(c->fd);
    double end = now() + timeout;
    int st;
    while (now() < end) {
        pid_t r = waitpid(c->pid, &st, WNOHANG);
        if (r == c->pid) return WIFEXITED(st) ? WEXITSTATUS(st) : 1000 + WTERMSIG(st);
        nanosleep(&(struct timespec){0, 5000000}, NULL);
    }
    kill(c->pid, SIGKILL);
    waitpid(c->pid, &st, 0);
    return -1;
}

/* Runs the CLI to the end: exit code; stderr in c->out. */
static int run(child *c, const char *out, const char *extra) {
    int p[2];
    if (pipe(p)) return -1;
    if (spawn(c, out, extra, NULL, p[1], p[0])) return -1;
    return reap(c, 120);
}

static int one_line(const char *s) {
    const char *nl = strchr(s, '\n');
    return nl && nl[1] == 0;
}

static void path_in(char *buf, size_t n, const char *name) { snprintf(buf, n, "%s/%s", dir, name); }

/* ---- --force ---- */

static void check_force(void) {
    child c;
    char victim[600], notes[700], file[600], link[600], pkg[600], cfg[700], extra[700], mnn[600], p2[700];
    path_in(victim, sizeof victim, "victim");
    snprintf(notes, sizeof notes, "%s/notes.txt", victim);
    CHECK(mkdir(victim, 0755) == 0 && put(notes, "important\n") == 0);
    int rc = run(&c, victim, "--force");
    printf("--force onto a directory: exit %d: %s", rc, c.out);
    CHECK(rc == 1 && one_line(c.out) && strstr(c.out, victim) && strstr(c.out, "not an npullm package"));
    char *t = slurp(notes);
    CHECK(t && !strcmp(t, "important\n")); /* today: deleted, exit 0 */
    free(t);

    path_in(file, sizeof file, "afile");
    CHECK(put(file, "data\n") == 0);
    rc = run(&c, file, "--force");
    printf("--force onto a file: exit %d: %s", rc, c.out);
    CHECK(rc == 1 && one_line(c.out) && strstr(c.out, "is a file"));
    t = slurp(file);
    CHECK(t && !strcmp(t, "data\n"));
    free(t);

    /* a package, then --force onto it: replaced (chunk 8 -> 4) */
    path_in(pkg, sizeof pkg, "pkg");
    snprintf(cfg, sizeof cfg, "%s/config.json", pkg);
    rc = run(&c, pkg, NULL);
    CHECK_EQ_INT(rc, 0);
    t = slurp(cfg);
    CHECK(t && strstr(t, "\"npullm_package_version\": 1") && strstr(t, "\"chunk_limits\": [8, 1]"));
    free(t);
    rc = run(&c, pkg, NULL);
    printf("existing package without --force: exit %d: %s", rc, c.out);
    CHECK(rc == 1 && one_line(c.out) && strstr(c.out, "already exists"));
    rc = run(&c, pkg, "--force --chunk 4");
    CHECK_EQ_INT(rc, 0);
    t = slurp(cfg);
    CHECK(t && strstr(t, "\"chunk_limits\": [4, 1]"));
    free(t);

    /* a symlink to a package: refused, both untouched */
    path_in(link, sizeof link, "link");
    CHECK(symlink(pkg, link) == 0);
    rc = run(&c, link, "--force --chunk 2");
    printf("--force onto a symlink: exit %d: %s", rc, c.out);
    CHECK(rc == 1 && one_line(c.out) && strstr(c.out, "symbolic link"));
    t = slurp(cfg);
    CHECK(t && strstr(t, "\"chunk_limits\": [4, 1]"));
    free(t);
    struct stat st;
    CHECK(lstat(link, &st) == 0 && S_ISLNK(st.st_mode));

    /* a package holding a file of the user's: refused, the file stays */
    snprintf(extra, sizeof extra, "%s/my-notes.txt", pkg);
    CHECK(put(extra, "mine\n") == 0);
    rc = run(&c, pkg, "--force");
    printf("--force onto a package with a user file: exit %d: %s", rc, c.out);
    CHECK(rc == 1 && one_line(c.out) && strstr(c.out, "my-notes.txt"));
    CHECK(exists(extra));
    unlink(extra);

    /* a package from before the marker (config.json without it, model.gguf
     * with npullm.package.version): replaced */
    t = slurp(cfg);
    char *m = t ? strstr(t, "  \"npullm_package_version\": 1,\n") : NULL;
    CHECK(m != NULL);
    if (m) {
        memmove(m, m + 30, strlen(m + 30) + 1);
        CHECK(put(cfg, t) == 0);
    }
    free(t);
    rc = run(&c, pkg, "--force --chunk 2");
    printf("--force onto an unmarked (older) package: exit %d\n", rc);
    CHECK_EQ_INT(rc, 0);
    t = slurp(cfg);
    CHECK(t && strstr(t, "\"chunk_limits\": [2, 1]") && strstr(t, "npullm_package_version"));
    free(t);

    /* a user's model directory with an MNN-style config.json naming model.gguf:
     * the same layout, but not a package (no npullm.package.version) */
    path_in(mnn, sizeof mnn, "mnn");
    snprintf(p2, sizeof p2, "%s/model.gguf", mnn);
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "cp '%s' '%s'", model, p2);
    CHECK(mkdir(mnn, 0755) == 0 && system(cmd) == 0);
    snprintf(p2, sizeof p2, "%s/config.json", mnn);
    CHECK(put(p2, "{\"llm_model\": \"model.gguf\", \"thread_num\": 2}\n") == 0);
    rc = run(&c, mnn, "--force");
    printf("--force onto a model directory: exit %d: %s", rc, c.out);
    CHECK(rc == 1 && one_line(c.out) && strstr(c.out, "not an npullm package"));
    snprintf(p2, sizeof p2, "%s/model.gguf", mnn);
    CHECK(exists(p2));
    CHECK_EQ_INT(leftovers(), 0);
}

/* ---- -o's parent, before any stage ---- */

static void check_parent(void) {
    child c;
    char nodir[600], underfile[600];
    path_in(nodir, sizeof nodir, "no/such/dir/pkg");
    path_in(underfile, sizeof underfile, "afile/pkg");
    const char *bad[] = {"/proc/npl-compile-test", nodir, underfile, "/proc/self/npl"};
    for (int i = 0; i < 4; i++) {
        double t0 = now();
        int rc = run(&c, bad[i], NULL);
        printf("-o %s: exit %d in %.3f s: %s", bad[i], rc, now() - t0, c.out);
        CHECK_EQ_INT(rc, 1);
        CHECK(one_line(c.out));
        CHECK(strstr(c.out, bad[i]) != NULL); /* the path as the user gave it */
        CHECK(strstr(c.out, ".tmp.") == NULL);
        CHECK(strstr(c.out, "[1/6]") == NULL); /* no stage ran */
    }
}

/* ---- signals ---- */

static const char *STEPS[][2] = {
    {"1:0", "[1/6] model graph 0/2\n"},       {"1:2", "[1/6] model graph 2/2\n"},
    {"2:0", "[2/6] partition 0/1\n"},         {"2:1", "[2/6] partition 1/1\n"},
    {"3:0", "[3/6] lower + compile per shape 0/3\n"}, {"3:2", "[3/6] lower + compile per shape 2/3\n"},
    {"3:3", "[3/6] lower + compile per shape 3/3\n"}, {"4:0", "[4/6] check vs CPU samples 0/3\n"},
    {"4:1", "[4/6] check vs CPU samples 1/3\n"},     {"4:3", "[4/6] check vs CPU samples 3/3\n"},
    {"5:0", "[5/6] replace with plugin ops 0/1\n"},  {"5:1", "[5/6] replace with plugin ops 1/1\n"},
    {"6:0", "[6/6] write package 0/3\n"},     {"6:1", "[6/6] write package 1/3\n"},
    {"6:2", "[6/6] write package 2/3\n"},
};

/* The CLI held at a step, then sig: 128 + sig within 5 s of the signal. */
static int interrupt_at(const char *out, const char *extra, const char *stall, const char *line, int sig, child *c) {
    int p[2];
    if (pipe(p) || spawn(c, out, extra, stall, p[1], p[0])) return -1;
    int seen = read_until(c, line, 60);
    CHECK(seen);
    if (!seen) fprintf(stderr, "  never saw '%s' in: %s\n", line, c->out);
    kill(c->pid, sig);
    double t0 = now();
    int rc = reap(c, 30);
    double dt = now() - t0;
    if (dt > 5) fprintf(stderr, "  exit took %.2f s after the signal\n", dt);
    CHECK(dt <= 5);
    return rc;
}

static void check_signals(void) {
    child c;
    char out[600], cfg[700];
    path_in(out, sizeof out, "sig");
    int n_ok = 0, n = 0;
    for (size_t i = 0; i < sizeof STEPS / sizeof STEPS[0]; i++)
        for (int s = 0; s < 3; s++) {
            int sig = s == 0 ? SIGINT : s == 1 ? SIGTERM : SIGHUP;
            int rc = interrupt_at(out, NULL, STEPS[i][0], STEPS[i][1], sig, &c);
            int left = leftovers();
            n++;
            if (rc == 128 + sig && !left && !exists(out) && strstr(c.out, "interrupted")) n_ok++;
            else fprintf(stderr, "  signal %d at %s: exit %d, %d leftovers, -o %s: %s\n", sig, STEPS[i][0], rc, left,
                         exists(out) ? "exists" : "absent", c.out);
        }
    printf("signals held at each step: %d/%d exited 128+sig leaving nothing\n", n_ok, n);
    CHECK_EQ_INT(n_ok, n);

    /* --force over a package: interrupted mid-write, the old one is untouched */
    CHECK_EQ_INT(run(&c, out, NULL), 0);
    snprintf(cfg, sizeof cfg, "%s/config.json", out);
    char *before = slurp(cfg);
    for (int k = 12; k < 15; k++) {
        int rc = interrupt_at(out, "--force --chunk 4", STEPS[k][0], STEPS[k][1], SIGINT, &c);
        char *after = slurp(cfg);
        CHECK_EQ_INT(rc, 130);
        CHECK(before && after && !strcmp(before, after));
        CHECK_EQ_INT(leftovers(), 0);
        free(after);
    }
    free(before);

    /* after the package is in place: it stays, complete */
    int rc = interrupt_at(out, "--force --chunk 4", "6:3", "[6/6] write package 3/3\n", SIGINT, &c);
    char *t = slurp(cfg);
    printf("SIGINT after the move into place: exit %d, %s", rc, strstr(c.out, "npullm compile: interrupted"));
    CHECK_EQ_INT(rc, 130);
    CHECK(t && strstr(t, "\"chunk_limits\": [4, 1]"));
    CHECK_EQ_INT(leftovers(), 0);
    free(t);

    /* SIGHUP ignored by the parent (nohup) stays ignored */
    {
        char o3[600];
        path_in(o3, sizeof o3, "nohup");
        int p[2];
        ignore_hup = 1;
        CHECK(pipe(p) == 0 && spawn(&c, o3, NULL, "4:1", p[1], p[0]) == 0);
        ignore_hup = 0;
        CHECK(read_until(&c, STEPS[8][1], 60));
        kill(c.pid, SIGHUP);
        nanosleep(&(struct timespec){0, 300000000}, NULL);
        CHECK(waitpid(c.pid, &(int){0}, WNOHANG) == 0); /* still running */
        kill(c.pid, SIGTERM);
        rc = reap(&c, 30);
        printf("nohup: SIGHUP ignored, then SIGTERM: exit %d\n", rc);
        CHECK_EQ_INT(rc, 128 + SIGTERM);
        CHECK_EQ_INT(leftovers(), 0);
    }

    /* plain delays, no hook: each run either finished (a whole package) or
     * was interrupted (nothing at -o), and nothing else is left */
    int finished = 0, stopped = 0;
    for (int k = 0; k < 24; k++) {
        char o2[600];
        snprintf(o2, sizeof o2, "%s/delay%d", dir, k);
        int p[2];
        CHECK(pipe(p) == 0 && spawn(&c, o2, NULL, NULL, p[1], p[0]) == 0);
        nanosleep(&(struct timespec){0, (long)k * 5000000L}, NULL);
        kill(c.pid, k & 1 ? SIGTERM : SIGINT);
        rc = reap(&c, 30);
        snprintf(cfg, sizeof cfg, "%s/config.json", o2);
        t = slurp(cfg);
        if (rc == 0) {
            finished++;
            CHECK(t && strstr(t, "npullm_package_version"));
        } else {
            /* 128 + sig, or killed by it before the CLI set up its signal
             * thread (before it wrote anything) */
            int sig = k & 1 ? SIGTERM : SIGINT;
            stopped++;
            CHECK(rc == 128 + sig || (rc == 1000 + sig && !exists(o2)));
            if (rc != 128 + sig && rc != 1000 + sig) fprintf(stderr, "  delay %d ms: exit %d: %s\n", k * 5, rc, c.out);
            CHECK(!exists(o2) || (t && strstr(t, "npullm_package_version"))); /* signal after the rename */
        }
        free(t);
        CHECK_EQ_INT(leftovers(), 0);
    }
    printf("signals at 0..115 ms: %d interrupted, %d finished, no leftovers\n", stopped, finished);
}

/* ---- a failure after the temp dir exists ---- */

static void check_failure_cleanup(void) {
    child c;
    char out[600], mine[700];
    path_in(out, sizeof out, "raced");
    snprintf(mine, sizeof mine, "%s/mine.txt", out);
    int p[2];
    CHECK(pipe(p) == 0 && spawn(&c, out, NULL, "6:2:1500", p[1], p[0]) == 0);
    CHECK(read_until(&c, "[6/6] write package 2/3\n", 60));
    /* -o appears while the compile writes: the rename must not take it */
    CHECK(mkdir(out, 0755) == 0 && put(mine, "x\n") == 0);
    int rc = reap(&c, 60);
    printf("-o created during the compile: exit %d: %s", rc, strstr(c.out, "npullm compile:"));
    CHECK_EQ_INT(rc, 1);
    CHECK(exists(mine));
    CHECK_EQ_INT(leftovers(), 0);
}

/* ---- the library's abort from another thread ---- */

static void *abort_later(void *g) {
    nanosleep(&(struct timespec){0, 200000000}, NULL);
    npl_compile_guard_abort(g);
    return NULL;
}

static void check_library_abort(void) {
    char out[600], err[1024];
    path_in(out, sizeof out, "lib");
    npl_compile_params p = npl_compile_default_params();
    p.chunk = 8;
    p.n_ctx = 64;
    p.n_threads = 1;
    p.stall_at = "6:1";
    p.guard = npl_compile_guard_new();
    CHECK(p.guard != NULL);
    if (!p.guard) return;
    pthread_t t;
    CHECK(pthread_create(&t, NULL, abort_later, p.guard) == 0);
    double t0 = now();
    int rc = npl_compile(model, out, &p, err, sizeof err);
    pthread_join(t, NULL);
    printf("library abort: rc %d in %.2f s: %s\n", rc, now() - t0, rc ? err : "");
    CHECK(rc != 0 && !strcmp(err, "interrupted"));
    CHECK(now() - t0 < 5);
    CHECK(!exists(out));
    CHECK_EQ_INT(leftovers(), 0);
    npl_compile_guard_free(p.guard);
}

/* ---- output ---- */

static void check_output(void) {
    child c;
    char out[600];
    path_in(out, sizeof out, "nocheck");
    int rc = run(&c, out, "--no-check");
    CHECK_EQ_INT(rc, 0);
    CHECK(strstr(c.out, "not checked") != NULL);
    CHECK(strstr(c.out, "max abs err") == NULL);
    CHECK(strchr(c.out, '\r') == NULL); /* a pipe: plain lines */
    CHECK(strstr(c.out, "[6/6] write package 3/3\n") != NULL);
    path_in(out, sizeof out, "checked");
    rc = run(&c, out, NULL);
    CHECK_EQ_INT(rc, 0);
    CHECK(strstr(c.out, "max abs err") != NULL && strstr(c.out, "not checked") == NULL);
    CHECK(strchr(c.out, '\r') == NULL);

    /* a terminal: the bar redraws with '\r' */
    int m = posix_openpt(O_RDWR | O_NOCTTY);
    CHECK(m >= 0 && grantpt(m) == 0 && unlockpt(m) == 0);
    if (m < 0) return;
    int s = open(ptsname(m), O_RDWR | O_NOCTTY);
    CHECK(s >= 0);
    path_in(out, sizeof out, "tty");
    CHECK(spawn(&c, out, NULL, NULL, s, m) == 0);
    rc = reap(&c, 120);
    CHECK_EQ_INT(rc, 0);
    CHECK(strchr(c.out, '\r') != NULL);
    printf("progress: pipe without '\\r', terminal with it\n");
}

int main(void) {
    setvbuf(stdout, NULL, _IOLBF, 0);
    const char *data = getenv("NPL_TEST_DATA");
    cli = getenv("NPL_CLI");
    CHECK(data && cli && *cli);
    if (!data || !cli) TEST_MAIN_END();
    static char mpath[1024];
    snprintf(mpath, sizeof mpath, "%s/models/rand-llama-f32.gguf", data);
    model = mpath;
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/npl-compile-safety-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    CHECK(mkdtemp(dir) != NULL);

    check_force();
    check_parent();
    check_signals();
    check_failure_cleanup();
    check_library_abort();
    check_output();

    char cmd[700];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (!npl_test_failures) CHECK(system(cmd) == 0);
    else fprintf(stderr, "kept %s\n", dir);
    TEST_MAIN_END();
}
