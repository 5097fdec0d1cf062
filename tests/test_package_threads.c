/* Package mode runs one pool: `npullm run -m PKG -t 2` on a package
 * compiled here (f32, from a random llama) has exactly 2 threads in the
 * process, the CPU session's pool, which vnpu runs on as well (before ABI
 * version 2's host pool, vnpu started a second pool: 3 threads). The run is
 * interactive so the process waits at its prompt while /proc/PID/task is
 * counted, and it is counted again throughout a turn.
 * `npullm compile -t 2` runs one pool as well: the CPU samples and the target
 * share it, so the process has at most 3 threads (the caller and one worker
 * of the 2-thread pool, and package_dir.c's signal-waiting thread); before
 * compile handed its pool to the target, vnpu started its own: 4. */
#include <dirent.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "compiler/compiler.h"

static int n_tasks(pid_t pid) {
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/task", (int)pid);
    DIR *d = opendir(path);
    if (!d) return -1;
    int n = 0;
    for (struct dirent *e; (e = readdir(d));) n += e->d_name[0] != '.';
    closedir(d);
    return n;
}

/* Reads the child's stderr until it has printed the chat prompt "> " again
 * (or timeout_s passes), counting its threads every millisecond; returns 0
 * when the prompt came, *max_tasks the largest count seen. */
static int wait_prompt(int fd, pid_t pid, int timeout_s, int *max_tasks) {
    char buf[4096];
    size_t len = 0;
    time_t end = time(NULL) + timeout_s;
    while (time(NULL) < end) {
        int t = n_tasks(pid);
        if (t > *max_tasks) *max_tasks = t;
        struct pollfd p = {fd, POLLIN, 0};
        if (poll(&p, 1, 1) <= 0) continue;
        ssize_t r = read(fd, buf + len, sizeof buf - 1 - len);
        if (r <= 0) return -1; /* exited */
        len += (size_t)r;
        buf[len] = 0;
        if (len >= 2 && !strcmp(buf + len - 2, "> ")) return 0;
        if (len > sizeof buf / 2) { /* keep the tail */
            memmove(buf, buf + len - 8, 8);
            len = 8;
        }
    }
    return -1;
}

/* the most threads `npullm compile -t 2` had while it ran, polled every ms (ctx 2048 and
 * chunk 512 make the check stage last long enough to be seen) */
static int compile_threads(const char *cli, const char *model, const char *dir) {
    pid_t pid = fork();
    if (pid < 0) return -1;
    if (pid == 0) {
        if (!freopen("/dev/null", "w", stdout) || !freopen("/dev/null", "w", stderr)) _exit(126);
        execl(cli, cli, "compile", "-m", model, "-o", dir, "-t", "2", "--ctx", "2048", "--chunk", "512", "--act", "f32",
              (char *)NULL);
        _exit(127);
    }
    int max = 0, status = 0;
    for (;;) {
        int t = n_tasks(pid);
        if (t > max) max = t;
        pid_t w = waitpid(pid, &status, WNOHANG);
        if (w == pid) break;
        if (w < 0) return -1;
        nanosleep(&(struct timespec){0, 1000000}, NULL);
    }
    return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? max : -1;
}

int main(void) {
    const char *data = getenv("NPL_TEST_DATA"), *cli = getenv("NPL_CLI");
    CHECK(cli != NULL);
    if (!cli) TEST_MAIN_END();
    char model[1024], dir[256], err[1024];
    snprintf(model, sizeof model, "%s/models/rand-llama-f32.gguf", data ? data : "data");
    snprintf(dir, sizeof dir, "/tmp/npl_test_pkg_threads_%d", (int)getpid());
    npl_compile_params p = npl_compile_default_params();
    p.n_ctx = 256;
    p.chunk = 16;
    p.act = NPL_ACT_F32;
    CHECK_EQ_INT(npl_compile(model, dir, &p, err, sizeof err), 0);
    if (npl_test_failures) {
        fprintf(stderr, "compile: %s\n", err);
        TEST_MAIN_END();
    }

    int in[2], errp[2];
    CHECK(pipe(in) == 0 && pipe(errp) == 0);
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        dup2(in[0], 0);
        dup2(errp[1], 2);
        close(in[1]);
        close(errp[0]);
        if (!freopen("/dev/null", "w", stdout)) _exit(126);
        execl(cli, cli, "run", "-m", dir, "-t", "2", "-n", "24", "--temp", "0", "--raw", (char *)NULL);
        _exit(127);
    }
    close(in[0]);
    close(errp[1]);
    int at_prompt = 0, during_turn = 0;
    CHECK_EQ_INT(wait_prompt(errp[0], pid, 120, &at_prompt), 0); /* loaded: both backends exist */
    at_prompt = n_tasks(pid);
    const char turn[] = "once upon a time\n";
    CHECK(write(in[1], turn, sizeof turn - 1) == (ssize_t)(sizeof turn - 1));
    CHECK_EQ_INT(wait_prompt(errp[0], pid, 120, &during_turn), 0); /* answered, prompt again */
    printf("threads of `npullm run -m PKG -t 2`: %d at the prompt, at most %d during a turn\n", at_prompt,
           during_turn);
    CHECK_EQ_INT(at_prompt, 2);
    CHECK(during_turn <= 2 && during_turn >= 1);
    close(in[1]); /* EOF: the chat ends */
    int status = 0;
    CHECK(waitpid(pid, &status, 0) == pid);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    close(errp[0]);
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    CHECK_EQ_INT(system(cmd), 0);
    int ct = compile_threads(cli, model, dir);
    printf("threads of `npullm compile -t 2`: at most %d\n", ct);
    CHECK(ct >= 2 && ct <= 3);
    CHECK_EQ_INT(system(cmd), 0);
    TEST_MAIN_END();
}
