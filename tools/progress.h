/*
 * tools/progress.h - the progress bar on stderr for long writes.
 *
 * Drawn only when stderr is a terminal and the tool is not quiet, and only once the work
 * has taken more than half a second: bytes done of the total, percent, rate and time
 * left, redrawn at most ten times a second on one line that is erased at the end.
 * Nothing at all is written when stderr is not a terminal.
 */
#ifndef ONNXZ_TOOLS_PROGRESS_H
#define ONNXZ_TOOLS_PROGRESS_H

#include <stdbool.h>
#include <stdint.h>

typedef struct cli_progress {
    bool enabled;
    bool drawn;      /* a line is on the screen */
    bool drawn_full; /* ... and it shows the end (done == total) */
    double start_ms, last_ms, delay_ms;
} cli_progress;

/* Starts timing; the bar shows later only if stderr is a terminal and verbosity allows. */
void cli_progress_init(cli_progress *p, int verbosity);
/* An oc_progress_fn: ctx is the cli_progress. */
void cli_progress_update(void *ctx, uint64_t done, uint64_t total);
/* Erases the bar if it was drawn. */
void cli_progress_end(cli_progress *p);

#endif
