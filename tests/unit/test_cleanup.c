/*
 * test_cleanup.c - the signal cleanup registry (cleanup.h, spec/security.md S-1, S-2):
 * what is registered goes, files first and directories deepest first whatever the order
 * they were registered in; what was forgotten, or never registered, stays; more paths
 * than one chunk of slots; a live oc_atomic_file's temporary goes too. (The tool's
 * handler around it is tested end to end by tests/hostile/scene_signals.py.)
 */
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <onnxcore/onnxcore.h>

#include "check.h"
#include "testdir.h"
#include "internal/cleanup.h"         /* internal: the static library's */
#include "internal/onnxcore_atomic.h" /* internal: the static library's */

enum { NFILES = 200 }; /* more than one chunk of 64 slots */

static int exists(const char *p) {
    struct stat st;
    return lstat(p, &st) == 0;
}

int main(int argc, char **argv) {
    char dir[900], p[1000];
    if (td_make(argc > 1 ? argv[1] : NULL, "cleanup", dir, sizeof dir) != 0) {
        fprintf(stderr, "test_cleanup: cannot make a scratch directory\n");
        return 1;
    }
    /* Directories registered parent-last and parent-first: a/b/c, then d and d/e. */
    oc_cleanup_entry *e[NFILES + 8];
    const char *dirs[] = {"a", "a/b", "a/b/c", "d", "d/e", "keep"};
    for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++) {
        snprintf(p, sizeof p, "%s/%s", dir, dirs[i]);
        CHECK(mkdir(p, 0777) == 0);
    }
    /* registered out of order: c before b before a; d before d/e */
    const char *reg[] = {"a/b/c", "d", "a/b", "d/e", "a"};
    for (size_t i = 0; i < sizeof reg / sizeof reg[0]; i++) {
        snprintf(p, sizeof p, "%s/%s", dir, reg[i]);
        CHECK((e[NFILES + i] = oc_cleanup_register(p, 1)) != NULL);
    }
    for (int i = 0; i < NFILES; i++) {
        snprintf(p, sizeof p, "%s/%s/f%d", dir, i % 2 ? "a/b/c" : "keep", i);
        CHECK(td_write(p, "x", 1) == 0);
        CHECK((e[i] = oc_cleanup_register(p, 0)) != NULL);
    }
    /* the even ones (in keep/) are committed: forgotten, they stay */
    for (int i = 0; i < NFILES; i += 2) oc_cleanup_forget(e[i]);
    oc_cleanup_forget(NULL);
    /* A live temporary file, in a child that dies after the cleanup as a handler would
     * make it (so nothing is freed after it, as in a real signal). */
    snprintf(p, sizeof p, "%s/keep/target", dir);
    pid_t child = fork();
    if (child == 0) {
        oc_atomic_file af;
        oc_error err;
        if (oc_atomic_open(&af, p, false, &err) != OC_OK || !exists(af.tmp_path)) _exit(2);
        oc_cleanup_run();
        _exit(exists(af.tmp_path) ? 1 : 0);
    }
    int status = -1;
    CHECK(child > 0 && waitpid(child, &status, 0) == child);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0); /* 1: still there, 2: not made */

    oc_cleanup_run();

    snprintf(p, sizeof p, "%s/a", dir);
    CHECK(!exists(p)); /* a/b/c emptied, then c, b, a */
    snprintf(p, sizeof p, "%s/d", dir);
    CHECK(!exists(p));
    CHECK_EQ(td_count(dir, 1), 1); /* keep/ only */
    snprintf(p, sizeof p, "%s/keep", dir);
    CHECK_EQ(td_count(p, 0), NFILES / 2);
    oc_cleanup_run(); /* again: nothing left to do, nothing else touched */
    CHECK_EQ(td_count(p, 0), NFILES / 2);
    /* The entries stay registered: after a cleanup has started, forgetting one leaves its
     * string to the dying process. */
    td_remove(p);
    td_remove(dir);
    return check_report("test_cleanup");
}
