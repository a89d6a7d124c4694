/* tools/interrupt.c - see interrupt.h. */
#include <signal.h>
#include <stddef.h>

#include <onnxcore/cleanup.h>

#include "interrupt.h"

static const int fatal[] = {SIGINT, SIGTERM, SIGHUP};

static void on_fatal(int sig) {
    oc_cleanup_run();
    signal(sig, SIG_DFL);
    raise(sig); /* pending until this handler returns, then the default action: death */
}

void interrupt_install(void) {
    struct sigaction sa, old;
    sa.sa_handler = on_fatal;
    sa.sa_flags = 0;
    sigemptyset(&sa.sa_mask);
    for (size_t i = 0; i < sizeof fatal / sizeof fatal[0]; i++)
        sigaddset(&sa.sa_mask, fatal[i]); /* one cleanup at a time */
    for (size_t i = 0; i < sizeof fatal / sizeof fatal[0]; i++)
        if (sigaction(fatal[i], NULL, &old) == 0 && old.sa_handler != SIG_IGN)
            sigaction(fatal[i], &sa, NULL);
}
