/* Stage 3 of npl_compile for one subgraph: every shape case lowered into one
 * new context, and what happens when the target refuses an LPBQ graph at
 * finalize.
 *
 * QNN's HTP finalize refuses some graphs holding 4-bit blockwise (LPBQ)
 * FullyConnected slices ("split too large", 1002: Gemma 3 270M's whole
 * decoder at AR-128, its layers 1, 11, 13, 17 alone at AR-16). The retry
 * lowers the subgraph again with its weights one 4-bit scale per output
 * channel (what fp16/w4 uses); narrower slices (128, 64, 32 output channels,
 * each right alone in the emulator, p7_lpbq) were tried and dropped (below).
 * Under int16/w4 every way (the first too) runs first in a forked probe
 * process, because QNN's finalize of such a graph may also die of SIGFPE
 * (GraphPrepare: Gemma's whole decoder at AR-128 with 128-, 64- and
 * 32-channel slices; its layers alone at AR-128 with the default ones), and
 * a crash cannot fall back to the CPU: only a way its probe finalized is
 * done for real (so each such subgraph is finalized twice). */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#include "compiler/compile_internal.h"

/* Whether segment sg holds a weight that went blockwise (LPBQ) in lowering. */
static int seg_has_lpbq(const npl_graph *g, const npl_segment *sg, const npl_lower_weight *wc) {
    for (int k = 0; k < sg->n_nodes; k++) {
        const npl_node *nd = npl_graph_node(g, sg->nodes[k]);
        if (wc[sg->nodes[k]].block) return 1;
        for (int s = 0; s < nd->n_src; s++)
            if (wc[nd->src[s]].block) return 1;
    }
    return 0;
}

/* Lowers every case into a new context *ctx (mode: 0 = the target's LPBQ
 * slices, NPL_LPBQ_PER_CHANNEL = no LPBQ). 0: done; 1: the target
 * refused (err; *fin: at finalize); -1: stop (aborted, or no context). */
static int lower_cases(const npl_compile_lower_job *j, seg_result *r, int mode, int progress, npl_accel_context **ctx,
                       int *fin, char *err, size_t errlen) {
    const npl_compile_params *p = j->p;
    char ref_s[16];
    snprintf(ref_s, sizeof ref_s, "%d", p->lpbq_refuse_above);
    npl_accel_option opts[2];
    uint32_t n_opts = 0;
    if (p->weight_sharing) opts[n_opts++] = (npl_accel_option){"weight_sharing", "1"};
    if (p->lpbq_refuse_above > 0) opts[n_opts++] = (npl_accel_option){"lpbq_refuse_above", ref_s};
    *fin = 0;
    if (j->api->context_create(j->abe, j->dev, n_opts ? opts : NULL, n_opts, ctx) != NPL_ACCEL_OK) {
        snprintf(err, errlen, "%s: %s", p->target, j->api->last_error(j->abe));
        return -1;
    }
    for (int c = 0; c < j->n_cases; c++) {
        if (progress && npl_compile_prog(j->pg, 2, c, j->n_cases, "lower + compile per shape")) return -1;
        npl_lower_args la = j->base;
        la.kv_len = j->cases[c].kv, la.no_lpbq = mode == NPL_LPBQ_PER_CHANNEL;
        if (j->cases[c].kv) snprintf(r->names[c], sizeof r->names[c], "s%d_ar%d_kv%d", j->si, j->cases[c].seq, j->cases[c].kv);
        else snprintf(r->names[c], sizeof r->names[c], "s%d_ar%d_o%d", j->si, j->cases[c].seq, j->cases[c].n_out);
        la.gname = r->names[c];
        if (npl_infer_all(la.g, j->cases[c].seq, j->cases[c].n_out, j->shapes, err, errlen) ||
            npl_lower_segment(j->api, j->abe, *ctx, &la, err, errlen)) {
            *fin = la.finalize_failed;
            return 1;
        }
        for (int i = 0; i < la.seg->n_inputs; i++) snprintf(r->in_names[c][i], 96, "%s", la.in_names[i]);
        snprintf(r->out_names[c], 96, "%s", la.out_name);
        if (c == 0) r->static_bytes = la.static_bytes;
    }
    return 0;
}

/* Lowering mode in a child process: 0 it finalized, 1 refused at finalize
 * or crashed, 2 refused before (err says), -1 no probe (fork failed or
 * aborted; the caller tries for real). *lpbq: whether a weight went LPBQ. */
static int probe(const npl_compile_lower_job *j, int mode, int *crashed, int *lpbq, char *err, size_t errlen) {
    int fd[2];
    *crashed = 0, *lpbq = 1;
    if (pipe(fd)) return -1;
    if (j->p->log) fflush(j->p->log);
    fflush(stdout), fflush(stderr);
    const pid_t pid = fork();
    if (pid < 0) {
        close(fd[0]), close(fd[1]);
        return -1;
    }
    if (pid == 0) { /* the child: its own copies of the weights and the target's state; no exit handlers */
        close(fd[0]);
        /* dies with the compile: the CLI's signal watcher (a thread, signals blocked) is not in the child */
        sigset_t none;
        sigemptyset(&none);
        signal(SIGTERM, SIG_DFL), signal(SIGINT, SIG_DFL);
        pthread_sigmask(SIG_SETMASK, &none, NULL);
#ifdef __linux__
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() == 1) _exit(2);
#endif
        seg_result *r = calloc(1, sizeof *r);
        npl_accel_context *ctx = NULL;
        char e[1024] = "";
        int fin = 0, rc = r ? lower_cases(j, r, mode, 0, &ctx, &fin, e, sizeof e) : -1;
        const char has = seg_has_lpbq(j->base.g, j->base.seg, j->base.wc) ? '1' : '0';
        if (write(fd[1], &has, 1) != 1 || (rc && write(fd[1], e, strlen(e)) < 0)) rc = -1;
        _exit(rc == 0 ? 0 : rc == 1 && fin ? 1 : 2);
    }
    close(fd[1]);
    ssize_t k;
    err[0] = 0;
    char buf[1025];
    size_t got = 0;
    for (;;) { /* the child's answer, until it closes the pipe (exits); an abort kills it */
        struct pollfd pf = {fd[0], POLLIN, 0};
        if (npl_compile_aborted(j->pg->g)) {
            kill(pid, SIGKILL);
            waitpid(pid, NULL, 0);
            close(fd[0]);
            return -1;
        }
        if (poll(&pf, 1, 100) <= 0) continue;
        if ((k = read(fd[0], buf + got, sizeof buf - 1 - got)) <= 0) break;
        got += (size_t)k;
        if (got == sizeof buf - 1) break;
    }
    close(fd[0]);
    buf[got] = 0;
    if (got) *lpbq = buf[0] == '1';
    snprintf(err, errlen, "%s", got ? buf + 1 : "");
    int st = 0;
    pid_t w;
    while ((w = waitpid(pid, &st, WNOHANG)) == 0 || (w < 0 && errno == EINTR)) {
        if (npl_compile_aborted(j->pg->g)) {
            kill(pid, SIGKILL);
            waitpid(pid, &st, 0);
            return -1;
        }
        nanosleep(&(struct timespec){0, 100000000}, NULL);
    }
    if (w < 0) return -1;
    if (WIFEXITED(st) && WEXITSTATUS(st) <= 2) {
        if (WEXITSTATUS(st) && !err[0]) snprintf(err, errlen, "refused (no reason from the probe process)");
        return WEXITSTATUS(st);
    }
    if (WIFSIGNALED(st)) {
        *crashed = WTERMSIG(st);
        snprintf(err, errlen, "the target's finalize died of signal %d (%s) in a probe process", *crashed, strsignal(*crashed));
    } else {
        snprintf(err, errlen, "the probe process failed (status %d)", st);
    }
    return 1;
}

static void mode_name(int mode, char *s, size_t n) {
    if (mode == NPL_LPBQ_PER_CHANNEL) snprintf(s, n, "per-channel 4-bit weights");
    else snprintf(s, n, "the target's LPBQ slices");
}

int npl_compile_lower_seg(const npl_compile_lower_job *j, seg_result *r, npl_accel_context **ctx, char *err, size_t errlen) {
    /* narrower LPBQ slices (128 / 64 / 32) are not in the ladder: in a whole graph QNN's finalize of them is not
     * repeatable (Gemma's decoder: refused or SIGFPE from run to run; the tiny
     * llama at 64: logits rel RMS 0.245 in 3 runs, 0.46 in the 4th), so a
     * refused LPBQ graph goes to per-channel 4-bit weights, which are stable */
    static const int modes[] = {0, NPL_LPBQ_PER_CHANNEL};
    int fin = 0;
    /* probes: where the weights may go LPBQ (w4 under static int16 matmuls) */
    if (j->base.wprec != NPL_WEIGHTS_W4 || j->base.act != NPL_ACCEL_DT_INT16 || !j->base.act_lo)
        return lower_cases(j, r, 0, 1, ctx, &fin, err, errlen);
    if (npl_compile_prog(j->pg, 2, 0, j->n_cases, "lower + compile per shape")) return -1; /* the probes' time is stage 3's */
    for (size_t m = 0; m < sizeof modes / sizeof modes[0]; m++) {
        char now[64], next[64];
        mode_name(modes[m], now, sizeof now);
        mode_name(m + 1 < sizeof modes / sizeof modes[0] ? modes[m + 1] : 0, next, sizeof next);
        int crashed = 0, lpbq = 1, rc = probe(j, modes[m], &crashed, &lpbq, err, errlen);
        if (rc == 2 || (rc == 1 && !crashed && !lpbq)) return 1; /* not LPBQ's doing: no retry */
        if (rc <= 0) {
            if (*ctx) j->api->context_free(*ctx), *ctx = NULL;
            rc = lower_cases(j, r, modes[m], 1, ctx, &fin, err, errlen);
            if (rc < 0 || (rc == 1 && !fin)) return rc;
            if (rc == 0) {
                r->lpbq_mode = modes[m], r->lpbq_ok = 1;
                return 0;
            }
        }
        r->lpbq_tried[r->n_lpbq_tried++] = (npl_lpbq_try){modes[m], crashed};
        if (m + 1 == sizeof modes / sizeof modes[0]) break;
        npl_progress_end_line(&j->pg->bar);
        if (j->p->log) fprintf(j->p->log, "warning: subgraph %d, %s: %s; retrying with %s\n", j->si, now, err, next);
    }
    return 1; /* every way refused: the last reason is in err */
}

void npl_compile_lpbq_summary(FILE *o, const seg_result *r) {
    if (!r->n_lpbq_tried) return;
    fprintf(o, "       LPBQ retry:");
    for (int k = 0; k < r->n_lpbq_tried; k++) {
        char s[64];
        mode_name(r->lpbq_tried[k].mode, s, sizeof s);
        if (r->lpbq_tried[k].signal) fprintf(o, " %s: finalize died of signal %d (in a probe process);", s, r->lpbq_tried[k].signal);
        else fprintf(o, " %s: finalize refused;", s);
    }
    char s[64];
    mode_name(r->lpbq_mode, s, sizeof s);
    if (r->lpbq_ok) fprintf(o, " finalized with %s\n", s);
    else fprintf(o, " nothing finalized\n");
}
