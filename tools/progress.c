/*
 * tools/progress.c - the progress bar (see progress.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "cli.h"
#include "progress.h"

#define PROGRESS_DELAY_MS  500.0
#define PROGRESS_REDRAW_MS 100.0
#define PROGRESS_WIDTH     24

/* How long the work runs before the bar shows. A test build lets the tests draw it at
 * once (ONNXZ_PROGRESS_DELAY_MS); a release tool reads no such variable. */
static double delay_ms(void) {
#ifdef ONNXZ_TEST_POINTS
    const char *delay = getenv("ONNXZ_PROGRESS_DELAY_MS");
    if (delay && *delay) return atof(delay);
#endif
    return PROGRESS_DELAY_MS;
}

void cli_progress_init(cli_progress *p, int verbosity) {
    p->enabled = verbosity >= CLI_NORMAL && isatty(STDERR_FILENO);
    p->drawn = false;
    p->drawn_full = false;
    p->start_ms = cli_now_ms();
    p->last_ms = 0;
    p->delay_ms = delay_ms();
}

static void format_eta(double seconds, char *buf, size_t size) {
    unsigned long s = seconds > 0 && seconds < 360000.0 ? (unsigned long)(seconds + 0.5) : 0;
    if (s >= 3600)
        snprintf(buf, size, "%lu:%02lu:%02lu", s / 3600, s / 60 % 60, s % 60);
    else
        snprintf(buf, size, "%lu:%02lu", s / 60, s % 60);
}

void cli_progress_update(void *ctx, uint64_t done, uint64_t total) {
    cli_progress *p = ctx;
    double now = cli_now_ms(), elapsed = now - p->start_ms;
    char bar[PROGRESS_WIDTH + 1], d[32], t[32], rate[32], eta[32];
    if (!p->enabled || elapsed < p->delay_ms) return;
    /* At most ten redraws a second, but the end is always shown (once). */
    bool full = done >= total;
    if (p->drawn && now - p->last_ms < PROGRESS_REDRAW_MS && (!full || p->drawn_full)) return;
    double frac = total ? (double)done / (double)total : 1.0;
    double per_s = elapsed > 0 ? (double)done / (elapsed / 1000.0) : 0;
    unsigned filled = (unsigned)(frac * PROGRESS_WIDTH);
    for (unsigned i = 0; i < PROGRESS_WIDTH; i++) bar[i] = i < filled ? '#' : '.';
    bar[PROGRESS_WIDTH] = '\0';
    cli_format_size(done, d, sizeof d);
    cli_format_size(total, t, sizeof t);
    cli_format_size((uint64_t)per_s, rate, sizeof rate);
    format_eta(per_s > 0 ? (double)(total - done) / per_s : 0, eta, sizeof eta);
    /* \r to the line's start, \033[K to clear what a longer earlier line left. */
    fprintf(stderr, "\r[%s] %3.0f%%  %s / %s  %s/s  ETA %s\033[K", bar, frac * 100.0, d, t, rate,
            eta);
    fflush(stderr);
    p->drawn = true;
    p->drawn_full = full;
    p->last_ms = now;
}

void cli_progress_end(cli_progress *p) {
    if (!p->drawn) return;
    fputs("\r\033[K", stderr);
    fflush(stderr);
    p->drawn = false;
}
