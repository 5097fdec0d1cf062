/* Progress bars for long commands. On a terminal one line is redrawn with
 * '\r'; anywhere else (a pipe, a log file, CI) every update is a plain line,
 * so the output reads the same in `less` as on screen. Every progress output
 * of the tree goes through here. */
#ifndef NPL_PROGRESS_H
#define NPL_PROGRESS_H
#include <stdio.h>

typedef struct {
    FILE *out;  /* NULL: silent */
    int tty;    /* out is a terminal: redraw with '\r' */
    int open;   /* a '\r' line is on screen without its newline */
} npl_progress;

void npl_progress_init(npl_progress *p, FILE *out);
/* "LABEL [#####.....] done/total"; the line ends when done == total. */
void npl_progress_bar(npl_progress *p, const char *label, int done, int total);
/* Ends a bar line left open, before other text goes to the same stream. */
void npl_progress_end_line(npl_progress *p);

#endif
