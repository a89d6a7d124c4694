/*
 * lock.c - the locks of spec/onnxz.md A-58 (see internal/lock.h), polled as every lock of
 * both libraries is (libonnxcore's internal/poll_lock.h).
 */
#include <fcntl.h>

#include "internal/error.h"
#include "internal/lock.h"
#include "internal/poll_lock.h"

const oc__lock_wait oz__a58_wait = {2, 50, OZ_LOCK_WAIT_MS, NULL};

/* One try of the locks of oz__lock. */
typedef struct range_try {
    int fd, first, last;
    short type;
} range_try;

static oc__lock_try try_range(void *ctx) {
    const range_try *r = ctx;
    return oc__lock_ofd(r->fd, r->first, r->last - r->first + 1, r->type);
}

oc_status oz__lock(int fd, int first, int last, short type, long wait_ms, const char *path,
                   const char *why, oc_error *err) {
    range_try r = {fd, first, last, type};
    oc__lock_wait w = oz__a58_wait;
    w.wait_ms = wait_ms;
    /* NONE: no such locks here (EINVAL, ENOLCK, EOPNOTSUPP): go on unlocked. */
    if (oc__lock_poll(&w, try_range, &r) != OC__LOCK_HELD) return OC_OK;
    return oc__fail_rule(err, OC_ERR_BUSY, OC_NO_OFFSET, "A-58", "busy: %s %s", path, why);
}
