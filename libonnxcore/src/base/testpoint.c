/* testpoint.c - see onnxcore_private.h. */
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "onnxcore_private.h"

void oc__test_point(const char *name) {
    static atomic_ulong passes;
    const char *want = getenv("ONNXZ_TEST_STOP");
    size_t n = strlen(name);
    if (!want || strncmp(want, name, n) != 0 || (want[n] != '\0' && want[n] != ':')) return;
    unsigned long at = want[n] == ':' ? strtoul(want + n + 1, NULL, 10) : 1;
    if (atomic_fetch_add(&passes, 1) + 1 == at) raise(SIGSTOP);
}
