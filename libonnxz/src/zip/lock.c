/*
 * lock.c - the locks of spec/onnxz.md A-58 (see internal/lock.h), and test stop points.
 */
#define _GNU_SOURCE /* F_OFD_SETLK */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "internal/error.h"
#include "internal/lock.h"

#ifndef F_OFD_SETLK /* older C libraries: process-owned locks, the closest there is */
#define F_OFD_SETLK F_SETLK
#endif

oc_status oz__lock(int fd, int first, int last, short type, long wait_ms, const char *path,
                   const char *why, oc_error *err) {
    struct flock fl;
    memset(&fl, 0, sizeof fl);
    fl.l_type = type;
    fl.l_whence = SEEK_SET;
    fl.l_start = first;
    fl.l_len = last - first + 1;
    long waited = 0, pause = 2;
    while (fcntl(fd, F_OFD_SETLK, &fl) != 0) {
        if (errno == EINTR) continue;
        /* No such locks here (EINVAL, ENOLCK, EOPNOTSUPP): go on unlocked. */
        if (errno != EAGAIN && errno != EACCES) return OC_OK;
        if (waited >= wait_ms)
            return oc__fail_rule(err, OC_ERR_BUSY, OC_NO_OFFSET, "A-58", "busy: %s %s", path, why);
        /* polled, never a blocking wait, so that the bound holds */
        struct timespec ts = {0, pause * 1000000L};
        while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
        }
        waited += pause;
        pause = pause * 2 > 50 ? 50 : pause * 2;
    }
    return OC_OK;
}
