/*
 * internal/poll_lock.h - the one way both libraries take an advisory lock on a file:
 * tried without blocking, again and again with growing pauses until they add up to a
 * bound, never a blocking wait (spec/security.md L-4, L-5). Its callers: the pair lock
 * (pair_lock.c, E-25: 10 ms doubling to 250 ms, 2 s), an archive's edit and content locks
 * and the flock `meta` takes on a .onnx file (libonnxz, A-58: 2 ms doubling to 50 ms,
 * 1 s). A lock a caller never takes itself can be given up on at once, and its holder
 * named, from /proc/locks and /proc/PID/fdinfo (L-5). Exported to libonnxz under
 * ONNXCORE_PRIVATE.
 */
#ifndef ONNXCORE_INTERNAL_POLL_LOCK_H
#define ONNXCORE_INTERNAL_POLL_LOCK_H

#include <stdbool.h>
#include <sys/types.h>

#include "onnxcore_private.h"
#include "onnxcore/status.h"

/* How a polled lock waits: pauses of first_ms doubling up to max_ms, until they add up to
 * wait_ms (0: one try). test_point, when not NULL, is reached (oc__test_point) before the
 * first pause, never when the lock is taken or given up on at once. */
typedef struct oc__lock_wait {
    long first_ms, max_ms, wait_ms;
    const char *test_point;
} oc__lock_wait;

/* What one try of a lock found. */
typedef enum oc__lock_try {
    OC__LOCK_TAKEN,   /* held now */
    OC__LOCK_HELD,    /* another holds it: pause and try again, until the bound */
    OC__LOCK_AGAIN,   /* try again at once, without a pause (the file was replaced) */
    OC__LOCK_REFUSED, /* give up now (a holder not worth waiting for) */
    OC__LOCK_NONE,    /* no such lock here (a filesystem without them): the caller's fallback */
    OC__LOCK_ERROR    /* the try failed otherwise (errno, or the caller's reason) */
} oc__lock_try;

/* Calls try_fn(ctx) until it returns other than OC__LOCK_HELD and OC__LOCK_AGAIN, pausing
 * after each HELD as w says; returns what the last try found: HELD once the pauses have
 * reached w->wait_ms. */
OC_PRIVATE oc__lock_try oc__lock_poll(const oc__lock_wait *w, oc__lock_try (*try_fn)(void *ctx),
                                      void *ctx);

/* One try of an open-file-description lock (fcntl F_OFD_SETLK) of type F_RDLCK, F_WRLCK
 * or F_UNLCK on len bytes of fd from first: TAKEN, HELD, NONE (no such locks here). */
OC_PRIVATE oc__lock_try oc__lock_ofd(int fd, off_t first, off_t len, short type);
/* One try of an exclusive flock of fd: TAKEN, HELD, NONE (no flock here). */
OC_PRIVATE oc__lock_try oc__lock_flock(int fd);

/* A lock that kept a caller waiting, as /proc/locks and /proc/PID/fdinfo tell it. */
typedef struct oc__lock_holder {
    long pid;         /* 0: not known (no /proc, or another user's process) */
    long uid;         /* -1: not known */
    bool foreign;     /* a lock onnxz never takes: the caller did not wait for it */
    const char *role; /* who takes such a lock in onnxz: "a reader", "a save"; or NULL */
    char what[80];    /* "a shared flock on", "a read lock on byte 2 of", ... "" : none seen */
} oc__lock_holder;
#define OC__LOCK_HOLDER_INIT \
    { 0, -1, false, NULL, "" }

/* After a try of fd's lock found it held: fills *h with a lock on fd's file that the
 * caller's conflicts with, a foreign one first (byte < 0: the caller's is an exclusive
 * flock; else also an open-file-description lock on that byte, onnxz's pair lock), and
 * returns whether it is foreign (a lock onnxz never takes: a shared flock, a POSIX lock,
 * an open-file-description lock over other bytes): then give up at once (L-5). */
OC_PRIVATE bool oc__lock_foreign(int fd, long byte, oc__lock_holder *h);
/* Once a caller gives up on fd's lock: the holder's process and user in *h, where /proc
 * shows them. */
OC_PRIVATE void oc__lock_name_holder(int fd, oc__lock_holder *h);

/* The error of a lock given up on (OC_ERR_BUSY) by `actor` ("save", "edit") on the `what`
 * ("model", "directory") `name`, held as *h says: at once for a foreign lock (rule L-5),
 * else after wait_ms (rule, the caller's: "E-25", "A-58"). */
OC_PRIVATE oc_status oc__lock_busy(const char *actor, const char *what, const char *name,
                                   const oc__lock_holder *h, long wait_ms, const char *rule,
                                   oc_error *err);

#endif
