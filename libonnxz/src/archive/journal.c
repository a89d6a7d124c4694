/*
 * journal.c - the journal of an in-place edit (spec/onnxz.md ): a 40-byte file
 * beside the archive that marks the archive's end before an edit began appending to it.
 *
 * Layout (little-endian):
 *    0  8  magic "OZJRNL01"
 *    8  8  old_size    the archive's size before the edit
 *   16  8  new_size    its size once the appended tail is complete
 *   24  8  check_from  start of the part of the old archive the edit may later overwrite
 *   32  4  check_crc   CRC-32 of bytes [check_from, old_size) of the archive
 *   36  4  CRC-32 of bytes 0..35 of the journal
 * The journal is untrusted input like the archive: a file of another size, another magic
 * or a wrong checksum is not a journal, and its numbers are checked against the archive.
 * It is never followed through a link, never opened so that a FIFO could block, and only
 * ever created anew (written under a temporary name and linked to its own, which fails
 * if the name exists): a name that is anything else is refused, never removed.
 */
#define _DEFAULT_SOURCE /* realpath */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <string.h>
#include <unistd.h>

#include "internal/cleanup.h"
#include "internal/crc.h"
#include "internal/cursor.h"
#include "internal/error.h"
#include "internal/journal.h"
#include "internal/lock.h"
#include "onnxcore_private.h"

#define JOURNAL_SIZE 40u
static const uint8_t magic[8] = {'O', 'Z', 'J', 'R', 'N', 'L', '0', '1'};

char *oz__journal_path(const char *archive_path) {
    /* A link to the archive is followed (A-55, W-32): every name of it finds one journal. */
    struct stat st;
    char *real =
        lstat(archive_path, &st) == 0 && S_ISLNK(st.st_mode) ? realpath(archive_path, NULL) : NULL;
    const char *base = real ? real : archive_path;
    size_t n = strlen(base), k = sizeof OZ_JOURNAL_SUFFIX;
    char *p = malloc(n + k);
    if (p) {
        memcpy(p, base, n);
        memcpy(p + n, OZ_JOURNAL_SUFFIX, k);
    }
    free(real);
    return p;
}

oc_status oz__crc_range(int fd, uint64_t from, uint64_t to, uint32_t *crc, oc_error *err) {
    const size_t chunk = (size_t)1 << 18;
    uint8_t *buf = malloc(chunk);
    OC_RETURN_ERROR_IF(!buf, err, OC_ERR_NOMEM, OC_NO_OFFSET, "out of memory");
    uint32_t c = 0;
    for (uint64_t at = from; at < to;) {
        size_t want = to - at < chunk ? (size_t)(to - at) : chunk;
        ssize_t got = pread(fd, buf, want, (off_t)at);
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) {
            int e = got < 0 ? errno : 0;
            free(buf);
            if (got == 0)
                return oc__fail(err, OC_ERR_TRUNCATED, at, "the archive ended early at %llu",
                                (unsigned long long)at);
            return oc__fail_errno(err, e, "cannot read the archive at offset %llu",
                                  (unsigned long long)at);
        }
        c = oz__crc32(c, buf, (uint64_t)got);
        at += (uint64_t)got;
    }
    free(buf);
    *crc = c;
    return OC_OK;
}

/* fsync of the directory holding path, so that a created or removed name is durable.
 * Best effort, as in onnxcore's atomic files: some filesystems refuse it. */
static void sync_dir(const char *path) {
    char *dir = oc__path_dir(path);
    if (!dir) return;
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) {
        (void)fsync(fd);
        close(fd);
    }
    free(dir);
}

oc_status oz__journal_write(const char *jpath, const oz__journal *j, oc_error *err) {
    uint8_t b[JOURNAL_SIZE];
    uint8_t *p = oz__put_bytes(b, magic, sizeof magic);
    p = oz__put64(p, j->old_size);
    p = oz__put64(p, j->new_size);
    p = oz__put64(p, j->check_from);
    p = oz__put32(p, j->check_crc);
    oz__put32(p, oz__crc32(0, b, JOURNAL_SIZE - 4));
    /* Written whole under a temporary name, then linked to its name: link() fails when the
     * name exists, as O_EXCL does, and a crash never leaves the journal's name holding part
     * of a journal (an empty one would stop every later edit, A-55). The temporary is in the
     * signal cleanup registry while it exists; SIGKILL can leave it, under its own name. */
    size_t tn = strlen(jpath) + 32;
    char *tmp = malloc(tn);
    if (!tmp) return oc__fail(err, OC_ERR_NOMEM, OC_NO_OFFSET, "out of memory");
    int fd = -1;
    for (unsigned attempt = 0; attempt < 100 && fd < 0; attempt++) {
        uint64_t r = 0;
        if (getrandom(&r, sizeof r, GRND_NONBLOCK) != (ssize_t)sizeof r)
            r = ((uint64_t)getpid() << 20) ^ (uint64_t)attempt ^ (uint64_t)(uintptr_t)tmp;
        snprintf(tmp, tn, "%s.tmp-%012llx", jpath, (unsigned long long)(r & 0xffffffffffffull));
        fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
        if (fd < 0 && errno != EEXIST) break;
    }
    if (fd < 0) {
        int e = errno;
        free(tmp);
        return oc__fail_errno(err, e, "cannot create the edit journal %s", jpath);
    }
    oc_cleanup_entry *ce = oc_cleanup_register(tmp, 0);
    oc__test_point("journal-opened"); /* hostile_edit: killed here, no journal is left */
    ssize_t n;
    do {
        n = write(fd, b, JOURNAL_SIZE);
    } while (n < 0 && errno == EINTR);
    int e = n < 0 ? errno : 0;
    if (n == (ssize_t)JOURNAL_SIZE && fsync(fd) != 0) {
        e = errno;
        n = -1;
    }
    close(fd);
    if (n == (ssize_t)JOURNAL_SIZE && link(tmp, jpath) != 0) {
        e = errno;
        n = -1;
    }
    unlink(tmp);
    oc_cleanup_forget(ce);
    free(tmp);
    if (n != (ssize_t)JOURNAL_SIZE) {
        return e ? oc__fail_errno(err, e, "cannot create the edit journal %s", jpath)
                 : oc__fail(err, OC_ERR_IO, OC_NO_OFFSET, "cannot write the edit journal %s",
                            jpath);
    }
    sync_dir(jpath);
    return OC_OK;
}

oc_status oz__journal_remove(const char *jpath, oc_error *err) {
    if (unlink(jpath) != 0) {
        if (errno == ENOENT) return OC_OK;
        return oc__fail_errno(err, errno, "cannot remove the edit journal %s", jpath);
    }
    sync_dir(jpath);
    return OC_OK;
}

/* What is at the journal's name, for the message that refuses it. */
static const char *kind_of(mode_t mode) {
    return S_ISDIR(mode)    ? "a directory"
           : S_ISFIFO(mode) ? "a FIFO"
           : S_ISLNK(mode)  ? "a symbolic link"
                            : "not a regular file";
}

oc_status oz__journal_read(const char *jpath, oz__journal *j, int *found, oc_error *err) {
    *found = 0;
    /* The name is looked at before anything is opened (as external data is, E-18): a
     * device, a FIFO, a socket or a link at it is refused without an open(), which on a
     * device would run its driver's open. Then only a regular file is opened, again with
     * O_NOFOLLOW | O_NONBLOCK (the name may have changed in between), and fstat must show
     * the same file, still regular. */
    struct stat named;
    if (lstat(jpath, &named) != 0) {
        if (errno == ENOENT || errno == ENOTDIR) return OC_OK;
        return oc__fail_errno(err, errno, "cannot look at the edit journal %s", jpath);
    }
    *found = 1;
    if (!S_ISREG(named.st_mode))
        return oc_error_file(err, jpath,
                             oc__fail_rule(err, OC_ERR_IO, OC_NO_OFFSET, "A-55",
                                           "%s is %s, not an edit journal: move it away to edit",
                                           jpath, kind_of(named.st_mode)));
    int jfd = open(jpath, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (jfd < 0) return oc__fail_errno(err, errno, "cannot open the edit journal %s", jpath);
    struct stat st;
    uint8_t b[JOURNAL_SIZE + 1];
    ssize_t n = -1;
    int e = 0;
    if (fstat(jfd, &st) != 0) {
        e = errno;
    } else if (S_ISREG(st.st_mode)) {
        do {
            n = pread(jfd, b, sizeof b, 0);
        } while (n < 0 && errno == EINTR);
        e = n < 0 ? errno : 0;
    }
    close(jfd);
    if (e) return oc__fail_errno(err, e, "cannot read the edit journal %s", jpath);
    OC_RETURN_RULE_IF(!S_ISREG(st.st_mode) || st.st_dev != named.st_dev ||
                          st.st_ino != named.st_ino,
                      err, OC_ERR_IO, OC_NO_OFFSET, "A-55",
                      "%s changed while it was read (now %s): move it away to edit", jpath,
                      S_ISREG(st.st_mode) ? "another file" : kind_of(st.st_mode));
    if (n != (ssize_t)JOURNAL_SIZE || memcmp(b, magic, sizeof magic) != 0 ||
        oz__crc32(0, b, JOURNAL_SIZE - 4) != oz__le32(b + JOURNAL_SIZE - 4))
        return oc_error_file(
            err, jpath,
            oc__fail_rule(err, OC_ERR_IO, OC_NO_OFFSET, "A-55",
                          "%s is no complete edit journal (an edit that stopped before it "
                          "changed the archive leaves that, or the file is not ours): move it "
                          "away to edit",
                          jpath));
    oz__cursor c = oz__cursor_make(b + sizeof magic, JOURNAL_SIZE - sizeof magic);
    j->old_size = oz__get64(&c);
    j->new_size = oz__get64(&c);
    j->check_from = oz__get64(&c);
    j->check_crc = oz__get32(&c);
    return OC_OK;
}

int oz__journal_applies(const oz__journal *j, int fd, uint64_t size) {
    if (!(j->check_from < j->old_size && j->old_size < size && size <= j->new_size)) return 0;
    uint32_t crc;
    oc_error tmp;
    return oz__crc_range(fd, j->check_from, j->old_size, &crc, &tmp) == OC_OK &&
           crc == j->check_crc;
}
