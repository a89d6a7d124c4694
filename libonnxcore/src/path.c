/*
 * path.c - file name arithmetic (internal/path.h).
 */
#include <stdlib.h>
#include <string.h>

#include "internal/path.h"

char *oc__path_dir(const char *path) {
    const char *slash = strrchr(path, '/');
    size_t n = !slash ? 1 : slash == path ? 1 : (size_t)(slash - path);
    char *dir = malloc(n + 1);
    if (!dir) return NULL;
    memcpy(dir, slash ? path : ".", n);
    dir[n] = '\0';
    return dir;
}

const char *oc__path_base(const char *path) {
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}
