/*
 * path_safety.c - where a data file named by a model may be (spec/external-data.md E-10,
 * E-11, E-18): the checks of a location's spelling, the walk beneath the model's
 * directory that follows no symbolic link, and the reopen of a regular file only.
 *
 * A security unit: every location read from a model passes here before any file is
 * opened (tests/unit/test_path_safety.c).
 */
#define _GNU_SOURCE /* syscall() for openat2 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#if defined(__has_include)
#if __has_include(<linux/openat2.h>)
#include <linux/openat2.h>
#define OC_HAVE_OPENAT2_H 1
#endif
#endif

#include "internal/path_safety.h"

/* A location from a file must name a file beneath the base directory: relative, no `..`
 * component, no NUL. Returns NULL when fine, else why not. */
const char *oc__location_problem(const oc_str *loc) {
    if (loc->size == 0) return "is empty";
    if (memchr(loc->data, '\0', (size_t)loc->size)) return "contains a NUL byte";
    if (loc->data[0] == '/') return "is an absolute path";
    const char *p = loc->data, *end = loc->data + loc->size;
    while (p < end) {
        const char *slash = memchr(p, '/', (size_t)(end - p));
        const char *stop = slash ? slash : end;
        if (stop - p == 2 && p[0] == '.' && p[1] == '.') return "leaves the model directory (..)";
        p = slash ? slash + 1 : end;
    }
    if (loc->data[loc->size - 1] == '/') return "names a directory";
    /* the last component "." names the directory it is in (".", "sub/.") */
    if (loc->data[loc->size - 1] == '.' && (loc->size == 1 || loc->data[loc->size - 2] == '/'))
        return "names a directory";
    return NULL;
}

/* How a data file is opened for reading: never blocking (a FIFO), never a terminal. */

/* Opens rel beneath dirfd without following any symbolic link, or returns -1 with errno.
 * flags: OC__READ_FLAGS, or O_PATH | O_CLOEXEC to look at the file without opening it
 * (then a symbolic link as the last component gives a descriptor of the link itself
 * where openat2 is missing: the caller checks the type). */
int oc__open_beneath(int dirfd, const char *rel, int flags) {
#if defined(OC_HAVE_OPENAT2_H) && defined(SYS_openat2)
    struct open_how how;
    memset(&how, 0, sizeof how);
    how.flags = (uint64_t)(unsigned)flags;
    how.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
    long r = syscall(SYS_openat2, dirfd, rel, &how, sizeof how);
    if (r >= 0 || (errno != ENOSYS && errno != EPERM)) return (int)r;
#endif
    /* Kernels before 5.6 (or seccomp filters refusing openat2): walk the components,
     * refusing symbolic links at each step. `..` was rejected before we got here. */
    char *copy = strdup(rel);
    if (!copy) return -1;
    int cur = dirfd, result = -1;
    char *save = NULL;
    char *comp = strtok_r(copy, "/", &save);
    while (comp) {
        char *next = strtok_r(NULL, "/", &save);
        int fd;
        if (strcmp(comp, ".") == 0) {
            comp = next;
            continue;
        }
        fd =
            openat(cur, comp,
                   next ? (O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC) : (flags | O_NOFOLLOW));
        if (fd < 0 && (errno == ENOTDIR || errno == ELOOP)) {
            /* O_DIRECTORY|O_NOFOLLOW on a symlink gives ENOTDIR: say what it really is */
            struct stat lst;
            int e = errno;
            errno = fstatat(cur, comp, &lst, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(lst.st_mode)
                        ? ELOOP
                        : e;
        }
        if (cur != dirfd) {
            int e = errno;
            close(cur);
            errno = e;
        }
        if (fd < 0) {
            cur = dirfd;
            break;
        }
        cur = fd;
        if (!next) result = fd;
        comp = next;
    }
    if (result < 0 && cur != dirfd) close(cur);
    int e = errno;
    free(copy);
    errno = e;
    return result;
}

/* Opens the regular file that pathfd (an O_PATH descriptor) stands for, for reading,
 * after checking its type without opening it (E-18): a device, FIFO or socket is never
 * opened, since opening some devices acts (a watchdog arms, a tape rewinds). The reopen
 * goes through /proc/self/fd, which names pathfd's own inode; without /proc the name is
 * opened once more (rel beneath dir_fd, or the caller's path) and the inode must be the
 * same. Returns the descriptor, or -1 with errno, or -1 with *why set (a reason). */
int oc__reopen_regular(int pathfd, int dir_fd, const char *rel, const char *path, struct stat *st,
                       const char **why) {
    *why = NULL;
    if (fstat(pathfd, st) != 0) return -1;
    if (S_ISLNK(st->st_mode)) {
        errno = ELOOP;
        return -1;
    }
    if (!S_ISREG(st->st_mode)) {
        *why = "is not a regular file";
        return -1;
    }
    char proc[40];
    snprintf(proc, sizeof proc, "/proc/self/fd/%d", pathfd);
    int fd = open(proc, OC__READ_FLAGS);
    if (fd < 0 && errno == ENOENT) /* no /proc: by name, then the same inode */
        fd = path ? open(path, OC__READ_FLAGS) : oc__open_beneath(dir_fd, rel, OC__READ_FLAGS);
    struct stat now;
    if (fd >= 0 && (fstat(fd, &now) != 0 || now.st_dev != st->st_dev || now.st_ino != st->st_ino)) {
        close(fd);
        *why = "changed while it was opened";
        return -1;
    }
    return fd;
}

int oc__open_location(int dir_fd, const char *rel, const char *path, struct stat *st,
                      const char **why) {
    *why = NULL;
    int pathfd =
        path ? open(path, O_PATH | O_CLOEXEC) : oc__open_beneath(dir_fd, rel, O_PATH | O_CLOEXEC);
    if (pathfd < 0) return -1;
    int fd = oc__reopen_regular(pathfd, dir_fd, rel, path, st, why);
    int e = errno;
    close(pathfd);
    errno = e;
    return fd;
}

/* ---- the Hugging Face hub's cache (spec/external-data.md E-28) ---- */

#define HUB_MAX_LINKS 40 /* as the kernel's own limit on links followed in one lookup */

/* Whether name is a cache repository's folder: "models--", "datasets--" or "spaces--"
 * and at least one more byte. */
static int hub_repo_name(const char *name, size_t n) {
    static const char *const kinds[] = {"models--", "datasets--", "spaces--"};
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
        size_t k = strlen(kinds[i]);
        if (n > k && memcmp(name, kinds[i], k) == 0) return 1;
    }
    return 0;
}

int oc__hub_cache_root(int dirfd, char *prefix, size_t cap) {
    char proc[40], real[4096];
    snprintf(proc, sizeof proc, "/proc/self/fd/%d", dirfd);
    ssize_t n = readlink(proc, real, sizeof real - 1);
    if (n <= 0 || real[0] != '/') return -1; /* no /proc: the strict rule only */
    real[n] = '\0';
    /* The innermost ".../REPO/snapshots/REV" on the way: the component after the repo's
     * folder is "snapshots", and one more (the revision) follows. */
    const char *comp[512];
    size_t len[512], nc = 0;
    for (char *p = real; *p;) {
        while (*p == '/') p++;
        if (!*p) break;
        char *e = strchr(p, '/');
        size_t l = e ? (size_t)(e - p) : strlen(p);
        if (nc == sizeof comp / sizeof comp[0]) return -1;
        comp[nc] = p, len[nc++] = l;
        p += l;
    }
    size_t repo = SIZE_MAX;
    for (size_t i = 0; i + 2 < nc; i++)
        if (hub_repo_name(comp[i], len[i]) && len[i + 1] == 9 &&
            memcmp(comp[i + 1], "snapshots", 9) == 0)
            repo = i;
    if (repo == SIZE_MAX) return -1;
    /* Up to the repository's folder by "..", which the kernel takes physically (the
     * directory's own parents, as the real path above names them); the path beneath it
     * down to the directory. */
    size_t up = nc - 1 - repo, o = 0;
    char dots[4096];
    if (up * 3 >= sizeof dots) return -1;
    for (size_t i = 0; i < up; i++) memcpy(dots + 3 * i, i + 1 < up ? "../" : "..", 3);
    dots[3 * up - 1] = '\0';
    prefix[0] = '\0';
    for (size_t i = repo + 1; i < nc; i++) {
        if (o + len[i] + 2 > cap) return -1;
        memcpy(prefix + o, comp[i], len[i]);
        o += len[i];
        prefix[o++] = '/';
    }
    prefix[o] = '\0';
    return openat(dirfd, dots, O_PATH | O_DIRECTORY | O_CLOEXEC);
}

/* rel beneath root_fd with its symbolic links replaced by what they name, as the kernel
 * would follow them, into out (a path of no link, beneath root_fd): 0, or -1 with errno
 * EXDEV (an absolute link, or a `..` above root_fd), ELOOP (more than HUB_MAX_LINKS
 * links), ENAMETOOLONG, or what looking at a component gave. Reading a link is all this
 * does: the file is opened afterwards following none (oc__open_beneath), so a component
 * changed into a link meanwhile is refused, never followed. */
static int resolve_beneath(int root_fd, const char *rel, char *out, size_t cap) {
    char pending[8192], target[4096];
    size_t o = 0, links = 0;
    if (strlen(rel) >= sizeof pending) return errno = ENAMETOOLONG, -1;
    strcpy(pending, rel);
    out[0] = '\0';
    char *p = pending;
    while (*p) {
        while (*p == '/') p++;
        if (!*p) break;
        char *e = strchr(p, '/');
        size_t l = e ? (size_t)(e - p) : strlen(p);
        char *rest = p + l; /* "" or "/..." */
        if (l == 1 && p[0] == '.') {
            p = rest;
            continue;
        }
        if (l == 2 && p[0] == '.' && p[1] == '.') {
            if (o == 0) return errno = EXDEV, -1; /* above the root */
            while (o > 0 && out[o - 1] != '/') o--;
            if (o > 0) o--; /* the '/' before the component */
            out[o] = '\0';
            p = rest;
            continue;
        }
        if (o + 1 + l + 1 > cap) return errno = ENAMETOOLONG, -1;
        size_t before = o;
        if (o) out[o++] = '/';
        memcpy(out + o, p, l);
        o += l;
        out[o] = '\0';
        struct stat st;
        if (fstatat(root_fd, out, &st, AT_SYMLINK_NOFOLLOW) != 0) return -1;
        if (!S_ISLNK(st.st_mode)) {
            p = rest;
            continue;
        }
        if (++links > HUB_MAX_LINKS) return errno = ELOOP, -1;
        ssize_t tn = readlinkat(root_fd, out, target, sizeof target - 1);
        if (tn <= 0) return tn == 0 ? (errno = ENOENT, -1) : -1;
        target[tn] = '\0';
        if (target[0] == '/') return errno = EXDEV, -1; /* names no place beneath the root */
        o = before; /* the link's own name goes: its target stands in its place */
        out[o] = '\0';
        size_t rl = strlen(rest);
        if ((size_t)tn + rl + 1 > sizeof pending) return errno = ENAMETOOLONG, -1;
        memmove(pending + tn, rest, rl + 1);
        memcpy(pending, target, (size_t)tn);
        p = pending;
    }
    if (o == 0) return errno = EISDIR, -1; /* the root itself */
    return 0;
}

int oc__open_in_hub_cache(int root_fd, const char *prefix, const char *rel, struct stat *st,
                          const char **why) {
    char full[8192], resolved[4096];
    *why = NULL;
    if ((size_t)snprintf(full, sizeof full, "%s%s", prefix, rel) >= sizeof full)
        return errno = ENAMETOOLONG, -1;
    if (resolve_beneath(root_fd, full, resolved, sizeof resolved) != 0) return -1;
    return oc__open_location(root_fd, resolved, NULL, st, why);
}
