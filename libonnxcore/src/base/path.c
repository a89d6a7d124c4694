/*
 * path.c - file name arithmetic (onnxcore_private.h).
 */
#include <stdlib.h>
#include <string.h>

#include "onnxcore/http.h"
#include "onnxcore_private.h"
#include "internal/url.h"

/* A URL's directory: up to its path's last '/', query and fragment dropped (they belong
 * to the object named, not to its neighbours); the host's root when there is no path. */
static char *url_dir(const char *url) {
    const char *host = strstr(url, "://") + 3; /* oc_is_url: the scheme is there */
    /* an s3:// key is its bytes: a '?' or '#' in it is part of the name */
    size_t end = oc__is_s3_url(url) ? strlen(url) : strcspn(url, "?#");
    size_t path = (size_t)(host - url) + strcspn(host, "/?#");
    size_t n = path;
    for (size_t i = path; i < end; i++)
        if (url[i] == '/') n = i;
    char *dir = malloc(n + 1);
    if (!dir) return NULL;
    memcpy(dir, url, n);
    dir[n] = '\0';
    return dir;
}

char *oc__path_dir(const char *path) {
    if (oc_is_url(path)) return url_dir(path);
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
