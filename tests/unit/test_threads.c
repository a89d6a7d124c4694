/*
 * test_threads.c - the threads the library starts (oc__thread_start, internal/parallel.h):
 * the signals a program is sent are held back there (its handler runs on one of its own
 * threads, never mid-commit on ours: E-25), but the faults are not. Blocking SIGBUS does
 * not hold a fault back (POSIX leaves SIGBUS, SIGSEGV, SIGILL and SIGFPE generated while
 * blocked undefined; Linux kills the process instead of running the program's handler).
 * A library thread touching a mapping whose file was cut (a copy or a
 * hash from a mapping) must reach the program's handler: the Python package mends the
 * faults in its mappings so (spec/security.md S-42). Before, this test died of SIGBUS.
 * Under valgrind (ONNXZ_TEST_REDUCED) the masks only: valgrind does not raise the fault of
 * a cut file's page on a second thread, it reads something else.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "check.h"
#include "testdir.h"
#include "internal/parallel.h" /* internal: the static library's */

static long page_size;
static volatile sig_atomic_t mended;

/* Maps zeros over the faulting page, so that the touch completes (as the package does). */
static void on_sigbus(int sig, siginfo_t *info, void *uc) {
    (void)sig;
    (void)uc;
    uintptr_t at = (uintptr_t)info->si_addr & ~(uintptr_t)(page_size - 1);
    if (mmap((void *)at, (size_t)page_size, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1,
             0) != MAP_FAILED)
        mended = 1;
}

typedef struct touch {
    const volatile char *page; /* a mapping of a file cut to nothing; NULL: none touched */
    sigset_t mask;             /* the thread's, as it started */
    int value;                 /* what it read */
} touch;

static void *touch_page(void *arg) {
    touch *t = arg;
    pthread_sigmask(SIG_SETMASK, NULL, &t->mask);
    if (t->page) t->value = t->page[0];
    return NULL;
}

int main(int argc, char **argv) {
    if (td_start(argc, argv, "threads") != 0) return 2;
    page_size = sysconf(_SC_PAGESIZE);
    char fill[65536];
    memset(fill, 'x', sizeof fill);
    CHECK(page_size > 0 && (size_t)page_size <= sizeof fill);
    CHECK(td_write(td_at("cut"), fill, (size_t)page_size) == 0);
    int fd = open(td_at("cut"), O_RDONLY);
    CHECK(fd >= 0);
    void *map = mmap(NULL, (size_t)page_size, PROT_READ, MAP_PRIVATE, fd, 0);
    CHECK(map != MAP_FAILED);
    CHECK(truncate(td_at("cut"), 0) == 0);

    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_sigbus;
    sa.sa_flags = SA_SIGINFO;
    sigemptyset(&sa.sa_mask);
    CHECK(sigaction(SIGBUS, &sa, NULL) == 0);

    const char *reduced = getenv("ONNXZ_TEST_REDUCED");
    int fault = !(reduced && *reduced == '1');
    touch t = {.page = fault ? map : NULL, .value = -1};
    pthread_t thread;
    CHECK_EQ(oc__thread_start(&thread, touch_page, &t), 0);
    CHECK_EQ(pthread_join(thread, NULL), 0);
    if (fault) {
        CHECK(mended);
        CHECK_EQ(t.value, 0); /* the zeros mapped over the cut page */
    }
    const int held[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGPIPE, SIGALRM, SIGCHLD};
    const int faults[] = {SIGBUS, SIGSEGV, SIGILL, SIGFPE};
    for (size_t i = 0; i < sizeof held / sizeof *held; i++)
        CHECK_EQ(sigismember(&t.mask, held[i]), 1);
    for (size_t i = 0; i < sizeof faults / sizeof *faults; i++)
        CHECK_EQ(sigismember(&t.mask, faults[i]), 0);

    munmap(map, (size_t)page_size);
    close(fd);
    td_remove(td_dir);
    return check_report("threads");
}
