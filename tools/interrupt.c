/* tools/interrupt.c - see interrupt.h. */
#include <errno.h>
#include <signal.h>
#include <stddef.h>

#include <onnxcore/cleanup.h>

#include "interrupt.h"

static const int fatal[] = {SIGINT, SIGTERM, SIGHUP};

static volatile sig_atomic_t deferred, recorded;

/* Async-signal-safe: oc_cleanup_run only unlinks and rmdirs. */
static void on_fatal(int sig) {
    if (deferred && !recorded) {
        recorded = sig;
        return;
    }
    int saved = errno;
    oc_cleanup_run();
    errno = saved;
    signal(sig, SIG_DFL);
    raise(sig); /* pending until this handler returns, then the default action: death */
}

static void fatal_set(sigset_t *set) {
    sigemptyset(set);
    for (size_t i = 0; i < sizeof fatal / sizeof fatal[0]; i++) sigaddset(set, fatal[i]);
}

void interrupt_install(void) {
    struct sigaction sa, old;
    sa.sa_handler = on_fatal;
    sa.sa_flags = 0;
    fatal_set(&sa.sa_mask); /* one cleanup at a time */
    for (size_t i = 0; i < sizeof fatal / sizeof fatal[0]; i++)
        if (sigaction(fatal[i], NULL, &old) == 0 && old.sa_handler != SIG_IGN)
            sigaction(fatal[i], &sa, NULL);
}

void interrupt_defer(int on) {
    deferred = on;
    if (!on && recorded) {
        int sig = recorded;
        oc_cleanup_run();
        signal(sig, SIG_DFL);
        raise(sig);
    }
}

int interrupt_cancel(void *ctx) {
    (void)ctx;
    return recorded != 0;
}
