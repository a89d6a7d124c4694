/* tools/interrupt.c - see interrupt.h. */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <onnxcore/cleanup.h>

#include "interrupt.h"

static const int fatal[] = {SIGINT, SIGTERM, SIGHUP};

/* The list the handler takes back, or NULL. */
static interrupt_list *volatile watched;

void interrupt_list_undo(const interrupt_list *l) {
    for (size_t i = l->count; i-- > 0;) {
        if (l->is_dir[i])
            rmdir(l->paths[i]);
        else
            unlink(l->paths[i]);
    }
}

/* Async-signal-safe: unlink and rmdir over arrays no one changes while this runs. */
static void on_fatal(int sig) {
    int saved = errno;
    oc_cleanup_run(); /* first: temporaries may lie in directories the list names */
    if (watched) interrupt_list_undo(watched);
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

/* Blocks the fatal signals (the list is about to change); *old restores them. */
static void block(sigset_t *old) {
    sigset_t set;
    fatal_set(&set);
    pthread_sigmask(SIG_BLOCK, &set, old);
}

static void unblock(const sigset_t *old) { pthread_sigmask(SIG_SETMASK, old, NULL); }

static bool grow(interrupt_list *l) {
    size_t cap = l->cap ? l->cap * 2 : 64;
    char **p = realloc(l->paths, cap * sizeof *p);
    if (!p) return false;
    l->paths = p;
    bool *d = realloc(l->is_dir, cap * sizeof *d);
    if (!d) return false;
    l->is_dir = d;
    l->cap = cap;
    return true;
}

bool interrupt_list_add(interrupt_list *l, const char *path, bool is_dir) {
    char *copy = strdup(path);
    if (!copy) return false;
    sigset_t old;
    block(&old);
    bool ok = l->count < l->cap || grow(l);
    if (ok) {
        l->paths[l->count] = copy;
        l->is_dir[l->count++] = is_dir;
        watched = l;
    }
    unblock(&old);
    if (!ok) free(copy);
    return ok;
}

void interrupt_list_pop(interrupt_list *l) {
    if (!l->count) return;
    sigset_t old;
    block(&old);
    char *last = l->paths[--l->count];
    unblock(&old);
    free(last);
}

void interrupt_list_free(interrupt_list *l) {
    sigset_t old;
    block(&old);
    if (watched == l) watched = NULL;
    unblock(&old);
    for (size_t i = 0; i < l->count; i++) free(l->paths[i]);
    free(l->paths);
    free(l->is_dir);
    memset(l, 0, sizeof *l);
}
