/* Progress bars (see progress.h). */
#include "core/progress.h"

#include <unistd.h>

void npl_progress_init(npl_progress *p, FILE *out) {
    p->out = out;
    p->tty = out && isatty(fileno(out));
    p->open = 0;
}

void npl_progress_bar(npl_progress *p, const char *label, int done, int total) {
    if (!p->out) return;
    if (!p->tty) { /* one plain line per update */
        fprintf(p->out, "%s %d/%d\n", label, done, total);
        fflush(p->out);
        return;
    }
    enum { W = 30 };
    int f = total > 0 ? (int)((long long)done * W / total) : W;
    fprintf(p->out, "\r%-34.34s [", label);
    for (int i = 0; i < W; i++) fputc(i < f ? '#' : '.', p->out);
    fprintf(p->out, "] %d/%d", done, total);
    p->open = done != total;
    if (!p->open) fputc('\n', p->out);
    fflush(p->out);
}

void npl_progress_end_line(npl_progress *p) {
    if (p->out && p->open) {
        fputc('\n', p->out);
        fflush(p->out);
    }
    p->open = 0;
}
