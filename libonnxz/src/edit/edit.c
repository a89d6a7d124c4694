/*
 * edit.c - replacing an archive's model in place (spec/onnxz.md A-50..A-59).
 *
 * The archive: the other entries lie in [0, D) (D: where the last of them ends), the
 * model's local header at M >= D, then its data, the central directory and the end
 * records up to E, the size of the file. tail(P) is the new tail (model entry, central
 * directory, end records) placed at offset P; its central directory copies the other
 * entries' central headers verbatim (they do not move) and ends with the model's.
 *
 *   direct   if |tail(D)| <= M - D, the bytes [D, M) are unused already (an earlier
 *            edit's): write tail(D) there, fsync, cut the file at D + |tail(D)|, fsync.
 *   append   otherwise: journal (old size E) made durable; tail(P) written at
 *            P = max(E, D + |tail(D)|) (a gap [E, P) stays a hole); fsync (the commit
 *            point: the file is the new archive); journal removed; then, unless
 *            append_only, compact: tail(D) written over the now unused [D, P), fsync, cut
 *            the file at D + |tail(D)|, fsync.
 *
 * Every write lands on bytes that no state a reader may see still refers to, and every
 * switch from one archive to the next is one ftruncate or one fsync of a complete tail
 * (the argument: spec A-54..A-56). Nothing is written before D, so no tensor byte is ever
 * touched, and nothing is written at all before every check has passed. The whole edit,
 * from reading the model to the last write, runs under the locks of A-58
 * (internal/lock.h): oz_archive_edit_begin takes them, oz_archive_edit_end drops them.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <onnxcore/external.h>
#include <onnxcore/http.h>

#include "internal/archive.h"
#include "internal/crc.h"
#include "internal/cursor.h"
#include "internal/edit.h"
#include "internal/error.h"
#include "internal/journal.h"
#include "internal/lock.h"
#include "internal/zipbuild.h"
#include "internal/zipread.h"
#include "internal/options.h"
#include "onnxz/archive.h"

#ifdef ONNXZ_TEST_POINTS
void (*oz__edit_test_hook)(const char *step) = NULL;
#define edit_hook(name) (oz__edit_test_hook ? oz__edit_test_hook(name) : (void)0)
#else
#define edit_hook(name) ((void)(name))
#endif

/* A step of A-54: where a test build stops or kills the editor (internal/edit.h). */
static void step(const char *name) {
    edit_hook(name);
    oc__test_point(name);
}

/* ---- the new model against the archive (A-51) ---- */

typedef struct ref_ctx {
    const oz_zip_reader *zip;
    uint64_t model_index;
    oc_error *err;
} ref_ctx;

static oc_status check_ref(void *ctx, onnx_TensorProto *t) {
    const ref_ctx *c = ctx;
    if (!oc_tensor_is_external(t)) return OC_OK;
    char tname[OC_QUOTE_SIZE], qloc[OC_QUOTE_SIZE];
    oc_quote((const uint8_t *)t->name.data, (size_t)t->name.size, tname, OC_QUOTE_SIZE);
    const oc_str *loc = oc_tensor_external_value(t, "location");
    OC_RETURN_RULE_IF(!loc, c->err, OC_ERR_INCONSISTENT, OC_NO_OFFSET, "A-51",
                      "tensor '%s' is EXTERNAL but has no location", tname);
    oc_quote((const uint8_t *)loc->data, (size_t)loc->size, qloc, OC_QUOTE_SIZE);
    char name[OZ_ZIP_MAX_NAME_LEN_HARD + 1];
    uint64_t index = 0;
    oc_error tmp;
    int found = loc->size > 0 && loc->size <= OZ_ZIP_MAX_NAME_LEN_HARD &&
                !memchr(loc->data, '\0', (size_t)loc->size);
    if (found) {
        memcpy(name, loc->data, (size_t)loc->size);
        name[loc->size] = '\0';
        found = oz_zip_reader_find(c->zip, name, &index, &tmp) == OC_OK && index != c->model_index;
    }
    OC_RETURN_RULE_IF(!found, c->err, OC_ERR_INCONSISTENT, OC_NO_OFFSET, "A-51",
                      "tensor '%s' points at '%s', which is no tensor entry of the archive", tname,
                      qloc);
    oz_zip_entry e;
    OC_FORWARD(oz_zip_reader_entry(c->zip, index, &e, c->err));
    uint64_t offset, length;
    bool has_offset, has_length;
    OC_FORWARD(oc_tensor_external_range(t, &offset, &has_offset, &length, &has_length, c->err));
    OC_RETURN_RULE_IF((has_offset && offset != 0) || (has_length && length != e.uncompressed_size),
                      c->err, OC_ERR_INCONSISTENT, OC_NO_OFFSET, "A-51",
                      "tensor '%s': entry '%s' holds %llu bytes, which is not what the "
                      "tensor's offset and length say",
                      tname, qloc, (unsigned long long)e.uncompressed_size);
    return OC_OK;
}

/* ---- the edit ---- */

struct oz_archive_edit {
    char *path;
    char *jpath; /* path + OZ_JOURNAL_SUFFIX */
    int fd;
    int append_only;
    int deflate_model;
    uint64_t align; /* asked for; 0: the archive's own */
    int done;       /* a commit was tried: the archive below is stale */
    oz_archive *ar;
    const oz_zip_reader *zip;
    uint64_t model_index;
    uint64_t count; /* entries, the model included */
    uint64_t d;     /* end of the last entry before the model (0 with none) */
    uint64_t m;     /* the model's local header */
    uint64_t e;     /* the file's size */
    uint32_t alignment;
    oz__entry model;     /* the new model entry, named OZ_MODEL_ENTRY (lho set per placement) */
    const uint8_t *data; /* its bytes as stored (model.csize of them) */
    uint8_t *others;     /* central headers of every other entry, verbatim, in order */
    uint64_t others_len;
    const uint8_t *comment;
    uint16_t comment_len;
    /* An entry written before the model (oz__archive_edit_commit_entry), or none; an
     * entry of its name that lies last before the model is dropped from the archive. */
    const char *extra_name;
    const char *drop_name; /* the entry of this name is dropped (extra_name's, or alone) */
    oz__entry extra;
    const uint8_t *extra_data;
    uint64_t drop_index; /* the entry replaced (UINT64_MAX: none) */
    uint8_t *xlh;        /* scratch: the extra entry's local header */
    uint8_t *lh;         /* scratch: a local header */
    uint8_t *cd;         /* scratch: the central directory and end records */
    uint64_t cut_from;   /* a rollback removed bytes [cut_from, cut_to) */
    uint64_t cut_to;     /* (both 0: none) */
};
typedef struct oz_archive_edit edit;

/* One placement of the new tail. */
typedef struct tail {
    uint64_t at;
    size_t xlh_len; /* the extra entry's local header (0: no extra entry), then its data */
    size_t lh_len;
    uint64_t cd_len; /* central directory + end records, in ed->cd */
    uint64_t size;
} tail;

static oc_status pwrite_all(int fd, const void *data, uint64_t n, uint64_t at, oc_error *err) {
    const uint8_t *p = data;
    while (n) {
        size_t want = n > ((uint64_t)1 << 30) ? ((size_t)1 << 30) : (size_t)n;
        ssize_t got = pwrite(fd, p, want, (off_t)at);
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0)
            return oc__fail_errno(err, got < 0 ? errno : EIO,
                                  "cannot write the archive at offset %llu",
                                  (unsigned long long)at);
        p += got;
        at += (uint64_t)got;
        n -= (uint64_t)got;
    }
    return OC_OK;
}

static oc_status sync_fd(const edit *ed, oc_error *err) {
    if (fsync(ed->fd) != 0)
        return oc_error_file(err, ed->path, oc__fail_errno(err, errno, "cannot sync %s", ed->path));
    return OC_OK;
}

static oc_status cut(const edit *ed, uint64_t size, oc_error *err) {
    if (ftruncate(ed->fd, (off_t)size) != 0)
        return oc__fail_errno(err, errno, "cannot shorten %s to %llu bytes", ed->path,
                              (unsigned long long)size);
    return sync_fd(ed, err);
}

/* Lays out the new tail at offset `at`: the model's local header into ed->lh, the central
 * directory and end records into ed->cd (both sized for the worst case beforehand). */
static void place(edit *ed, uint64_t at, tail *t) {
    t->at = at;
    t->xlh_len = 0;
    /* every entry, less the one dropped, plus the extra one */
    uint64_t count = ed->count - (ed->drop_index != UINT64_MAX);
    if (ed->extra_name) {
        ed->extra.lho = at;
        t->xlh_len =
            oz__build_local(ed->xlh, &ed->extra, (const uint8_t *)ed->extra_name, ed->alignment);
        at += t->xlh_len + ed->extra.csize;
        count++;
    }
    ed->model.lho = at;
    t->lh_len = oz__build_local(ed->lh, &ed->model, (const uint8_t *)OZ_MODEL_ENTRY, ed->alignment);
    uint64_t cd_off = at + t->lh_len + ed->model.csize;
    uint8_t *p = oz__put_bytes(ed->cd, ed->others, (size_t)ed->others_len);
    if (ed->extra_name) p = oz__put_central(p, &ed->extra, (const uint8_t *)ed->extra_name);
    p = oz__put_central(p, &ed->model, (const uint8_t *)OZ_MODEL_ENTRY);
    uint64_t cd_size = (uint64_t)(p - ed->cd);
    p += oz__build_end(p, count, cd_size, cd_off, ed->comment, ed->comment_len);
    t->cd_len = (uint64_t)(p - ed->cd);
    t->size = cd_off - t->at + t->cd_len;
}

/* Writes a tail laid out by place(): local header and data, then (after the test seam
 * `torn`) the central directory and end records, then fsync. */
static oc_status write_tail(edit *ed, const tail *t, const char *torn, oc_error *err) {
    uint64_t at = t->at;
    if (t->xlh_len) {
        OC_FORWARD(pwrite_all(ed->fd, ed->xlh, t->xlh_len, at, err));
        OC_FORWARD(pwrite_all(ed->fd, ed->extra_data, ed->extra.csize, at + t->xlh_len, err));
        at += t->xlh_len + ed->extra.csize;
    }
    OC_FORWARD(pwrite_all(ed->fd, ed->lh, t->lh_len, at, err));
    OC_FORWARD(pwrite_all(ed->fd, ed->data, ed->model.csize, at + t->lh_len, err));
    step(torn);
    OC_FORWARD(pwrite_all(ed->fd, ed->cd, t->cd_len, at + t->lh_len + ed->model.csize, err));
    return sync_fd(ed, err);
}

/* The alignment of the archive's STORED data: what its padding records state, when
 * every STORED data offset is a multiple of it; else the largest power of two up to 4,096
 * dividing them all; else 64. */
static oc_status archive_alignment(const edit *ed, uint32_t *out, oc_error *err) {
    uint32_t stated = 0, divides = 32768;
    int any = 0, looked = 0;
    uint8_t *x = NULL;
    for (uint64_t i = 0; i < ed->count; i++) {
        oz_zip_entry e;
        if (i == ed->model_index || oz_zip_reader_entry(ed->zip, i, &e, NULL) != OC_OK ||
            e.method != OZ_ZIP_STORED)
            continue;
        any = 1;
        while (divides >= 64 && e.data_offset % divides) divides >>= 1;
        if (looked >= 16) continue;
        looked++;
        uint64_t xlen = e.data_offset - e.local_header_offset - OZ_LOCAL_SIZE - e.name_len;
        if (xlen == 0 || xlen > 65535) continue;
        uint8_t *p = realloc(x, (size_t)xlen);
        if (!p) {
            free(x);
            return oc__fail(err, OC_ERR_NOMEM, OC_NO_OFFSET, "out of memory");
        }
        x = p;
        if (oc_source_read(oz__zip_reader_source(ed->zip),
                           e.local_header_offset + OZ_LOCAL_SIZE + e.name_len, x, xlen,
                           NULL) != OC_OK)
            continue;
        oz__cursor c = oz__cursor_make(x, xlen);
        while (c.left >= 4) {
            uint16_t id = oz__get16(&c), len = oz__get16(&c);
            const uint8_t *d = oz__take(&c, len);
            if (!d) break;
            if (id != OZ_EXTRA_ALIGN || len < 2) continue;
            uint32_t a = oz__le16(d);
            if (a >= OZ_ZIP_MIN_ALIGNMENT && a <= OZ_ZIP_MAX_ALIGNMENT && !(a & (a - 1)) &&
                a > stated)
                stated = a;
        }
    }
    free(x);
    if (stated && divides >= stated)
        *out = stated;
    else if (any && divides >= 64)
        *out = divides > 4096 ? 4096 : divides;
    else
        *out = OZ_ZIP_DEFAULT_ALIGNMENT;
    return OC_OK;
}

/* ---- steps ---- */

/* Reads n bytes of the archive at `at` through the reader's source (the archive is the
 * file's first bytes: the source reads the edited file's descriptor). */
static oc_status read_archive(const edit *ed, void *buf, uint64_t n, uint64_t at, oc_error *err) {
    uint64_t got;
    OC_FORWARD(oc_source_read_some(oz__zip_reader_source(ed->zip), at, buf, n, &got, err));
    OC_RETURN_ERROR_IF(got < n, err, OC_ERR_TRUNCATED, at + got,
                       "the archive ended early (did it change during the edit?)");
    return OC_OK;
}

/* The file, opened for writing and locked: against other editors always, against
 * readers unless the edit only appends. */
static oc_status open_locked(edit *ed, oc_error *err) {
    ed->fd = open(ed->path, O_RDWR | O_CLOEXEC | O_NONBLOCK); /* never hang on a FIFO */
    if (ed->fd < 0) return oc__fail_errno(err, errno, "cannot open %s for editing", ed->path);
    struct stat st;
    if (fstat(ed->fd, &st) != 0)
        return oc_error_file(err, ed->path, oc__fail_errno(err, errno, "cannot stat %s", ed->path));
    if (!S_ISREG(st.st_mode))
        return oc_error_file(
            err, ed->path,
            oc__fail(err, OC_ERR_IO, OC_NO_OFFSET, "%s is not a regular file", ed->path));
    OC_FORWARD(oz__lock(ed->fd, OZ_LOCK_EDIT, OZ_LOCK_EDIT, F_WRLCK, OZ_LOCK_WAIT_MS, ed->path,
                        "is being edited by another process", err));
    if (!ed->append_only)
        OC_FORWARD(oz__lock(ed->fd, OZ_LOCK_CONTENT, OZ_LOCK_CONTENT, F_WRLCK, OZ_LOCK_WAIT_MS,
                            ed->path,
                            "is open in another process (or this one), which an edit that "
                            "overwrites or shortens it would break; edit it once it is "
                            "closed, or append only",
                            err));
    return OC_OK;
}

/* True when the first `size` bytes of the file (all of it: UINT64_MAX) are an archive. */
static int opens_as_archive(const edit *ed, uint64_t size) {
    oz_zip_reader_options zo = OZ_ZIP_READER_OPTIONS_INIT;
    zo.use_pread = 1;
    oz_zip_reader *zip;
    oz_archive *ar = NULL;
    oc_error tmp;
    int ok = oz__zip_reader_open_fd_prefix(ed->fd, size, &zo, &zip, &tmp) == OC_OK &&
             oz__archive_wrap(zip, ed->path, &ar, &tmp) == OC_OK;
    oz_archive_close(ar);
    return ok;
}

/* True when `count` central headers, by the generic ZIP structure (signature, three
 * lengths), fill exactly [at, at + size) of the file, which ends by `end`. */
static int central_parses(int fd, uint64_t at, uint64_t size, uint64_t count, uint64_t end) {
    if (at > end || size > end - at) return 0;
    uint64_t used = 0;
    for (uint64_t i = 0; i < count; i++) {
        uint8_t h[OZ_CENTRAL_SIZE];
        if (size - used < OZ_CENTRAL_SIZE ||
            pread(fd, h, OZ_CENTRAL_SIZE, (off_t)(at + used)) != (ssize_t)OZ_CENTRAL_SIZE ||
            oz__le32(h) != OZ_SIG_CENTRAL)
            return 0;
        used += OZ_CENTRAL_SIZE + (uint64_t)oz__le16(h + 28) + oz__le16(h + 30) + oz__le16(h + 32);
        if (used > size) return 0;
    }
    return used == size;
}

/* the offset of an end of central directory record at or after `from` that some ZIP
 * reader would take as the file's end (UINT64_MAX: none). Readers differ in which record
 * they take (the last whose comment reaches the end of the file; the last signature in
 * the file's last 22 + 65,535 bytes), and some let the central directory sit right before
 * the record whatever offset it states; so any signature in that window counts whose
 * central directory parses by the generic structure at either place. A zip64 end (a
 * saturated field) counts unparsed. Unreadable bytes count as none. */
static uint64_t zip_end_after(int fd, uint64_t from, uint64_t size) {
    const uint64_t window = OZ_EOCD_SIZE + 65535u;
    uint64_t lo = size > window ? size - window : 0;
    if (lo < from) lo = from;
    if (size < lo + OZ_EOCD_SIZE) return UINT64_MAX;
    size_t n = (size_t)(size - lo);
    uint8_t *b = malloc(n);
    if (!b || pread(fd, b, n, (off_t)lo) != (ssize_t)n) {
        free(b);
        return UINT64_MAX;
    }
    uint64_t found = UINT64_MAX;
    for (size_t i = n - OZ_EOCD_SIZE + 1; i-- > 0 && found == UINT64_MAX;) {
        const uint8_t *r = b + i;
        if (oz__le32(r) != OZ_SIG_EOCD) continue;
        uint64_t at = lo + i, count = oz__le16(r + 10);
        uint64_t cd_size = oz__le32(r + 12), cd_off = oz__le32(r + 16);
        if (count == OZ_MAX16 || cd_size == OZ_MAX32 || cd_off == OZ_MAX32 ||
            central_parses(fd, cd_off, cd_size, count, at) ||
            (cd_size <= at && central_parses(fd, at - cd_size, cd_size, count, at)))
            found = at;
    }
    free(b);
    return found;
}

/* the journal of an interrupted edit. The file is cut back to the journal's old
 * size only when that provably removes nothing but the torn tail of this library's own
 * append: the file is no archive as it is; the journal fits it (its CRC of the old
 * model's bytes included); nothing past the old end is a ZIP end another reader could
 * take (bytes appended by another program after the crash are not cut away: the edit is
 * refused instead); and the first old_size bytes are an archive. A journal of ours whose
 * edit completed is removed; anything else at the journal's name is refused and left
 * alone. */
static oc_status recover(edit *ed, oc_error *err) {
    oz__journal j;
    int found;
    OC_FORWARD(oz__journal_read(ed->jpath, &j, &found, err));
    if (!found) return OC_OK;
    struct stat st;
    if (fstat(ed->fd, &st) != 0)
        return oc_error_file(err, ed->path, oc__fail_errno(err, errno, "cannot stat %s", ed->path));
    uint64_t size = (uint64_t)st.st_size;
    if (!opens_as_archive(ed, UINT64_MAX)) {
        if (!oz__journal_applies(&j, ed->fd, size) || !opens_as_archive(ed, j.old_size))
            return OC_OK; /* not ours to mend: the archive's own fault is reported next */
        uint64_t end = zip_end_after(ed->fd, j.old_size, size);
        OC_RETURN_RULE_IF(end != UINT64_MAX, err, OC_ERR_INCONSISTENT, end, "A-56",
                          "another ZIP end follows an interrupted edit: nothing cut; to undo "
                          "the edit cut the file to %llu bytes, else remove the journal %s",
                          (unsigned long long)j.old_size, ed->jpath);
        OC_FORWARD(cut(ed, j.old_size, err));
        ed->cut_from = j.old_size;
        ed->cut_to = size;
    }
    return oz__journal_remove(ed->jpath, err);
}

static oc_status open_archive(edit *ed, oc_error *err) {
    oz_zip_reader_options zo = OZ_ZIP_READER_OPTIONS_INIT;
    zo.use_pread = 1; /* no mapping of a file that is about to change */
    oz_zip_reader *zip;
    OC_FORWARD(oz_zip_reader_open_fd(ed->fd, &zo, &zip, err));
    OC_FORWARD(oz__archive_wrap(zip, ed->path, &ed->ar, err));
    ed->zip = oz_archive_zip(ed->ar);
    ed->model_index = oz__archive_model_index(ed->ar);
    ed->count = oz_zip_reader_count(ed->zip);
    ed->e = oz_zip_reader_size(ed->zip);
    uint32_t clen;
    ed->comment = oz_zip_reader_comment(ed->zip, &clen);
    ed->comment_len = (uint16_t)clen;
    return OC_OK;
}

/* the model must be the last entry in the file. Finds M and D. */
static oc_status find_layout(edit *ed, oc_error *err) {
    oz_zip_entry e;
    OC_FORWARD(oz_zip_reader_entry(ed->zip, ed->model_index, &e, err));
    ed->m = e.local_header_offset;
    ed->d = 0;
    ed->drop_index = UINT64_MAX;
    uint64_t drop_lho = 0;
    if (ed->drop_name &&
        oz__zip_reader_find_n(ed->zip, ed->drop_name, strlen(ed->drop_name), &ed->drop_index)) {
        OC_FORWARD(oz_zip_reader_entry(ed->zip, ed->drop_index, &e, err));
        drop_lho = e.local_header_offset;
    }
    for (uint64_t i = 0; i < ed->count; i++) {
        if (i == ed->model_index || i == ed->drop_index) continue;
        OC_FORWARD(oz_zip_reader_entry(ed->zip, i, &e, err));
        char q[OC_QUOTE_SIZE];
        OC_RETURN_RULE_IF(e.local_header_offset > ed->m, err, OC_ERR_UNSUPPORTED,
                          e.local_header_offset, "A-50",
                          "entry '%s' lies after " OZ_MODEL_ENTRY " in the file: only an "
                          "archive whose model is its last entry can be edited in place; "
                          "repack it instead",
                          oc_quote((const uint8_t *)e.name, e.name_len, q, OC_QUOTE_SIZE));
        OC_RETURN_RULE_IF(
            ed->drop_index != UINT64_MAX && e.local_header_offset > drop_lho, err,
            OC_ERR_UNSUPPORTED, e.local_header_offset, "A-50",
            "entry '%s' lies after %s in the file: only the last entry before " OZ_MODEL_ENTRY
            " can be replaced in place; repack the archive instead",
            oc_quote((const uint8_t *)e.name, e.name_len, q, OC_QUOTE_SIZE), ed->drop_name);
        uint64_t end = e.data_offset + e.compressed_size;
        /* a data descriptor (another writer's) follows the data: at most 24 bytes */
        if (e.flags & OZ_FLAG_DESCRIPTOR) end = ed->m - end < 24 ? ed->m : end + 24;
        if (end > ed->d) ed->d = end;
    }
    return OC_OK;
}

/* The central headers of every entry but the model, verbatim and in order (their local
 * header offsets stay valid: those entries do not move). */
static oc_status read_others(edit *ed, oc_error *err) {
    uint64_t cd_off, cd_size;
    oz_zip_reader_central_dir(ed->zip, &cd_off, &cd_size);
    uint8_t *cd = malloc(cd_size ? (size_t)cd_size : 1);
    ed->others = malloc(cd_size ? (size_t)cd_size : 1);
    OC_RETURN_ERROR_IF(!cd || !ed->others, err, OC_ERR_NOMEM, OC_NO_OFFSET, "out of memory");
    oc_status st = read_archive(ed, cd, cd_size, cd_off, err);
    uint64_t used = 0;
    for (uint64_t i = 0; st == OC_OK && i < ed->count; i++) {
        /* The reader has checked these headers; the bounds are checked again all the same. */
        uint64_t len = cd_size - used < OZ_CENTRAL_SIZE
                           ? UINT64_MAX
                           : OZ_CENTRAL_SIZE + (uint64_t)oz__le16(cd + used + 28) +
                                 oz__le16(cd + used + 30) + oz__le16(cd + used + 32);
        if (len > cd_size - used) {
            st = oc__fail(err, OC_ERR_INCONSISTENT, cd_off + used,
                          "the central directory changed during the edit");
            break;
        }
        if (i != ed->model_index && i != ed->drop_index) {
            memcpy(ed->others + ed->others_len, cd + used, (size_t)len);
            ed->others_len += len;
        }
        used += len;
    }
    free(cd);
    return st;
}

static oc_status run(edit *ed, oc_error *err) {
    tail t;
    place(ed, ed->d, &t);
    uint64_t compact = t.size; /* |tail(D)| */
    /* Direct writing needs [D, M) unused by the archive as it is: not so when an entry in
     * it is being replaced. */
    if (!ed->append_only && ed->drop_index == UINT64_MAX && compact <= ed->m - ed->d) {
        /* direct: [D, M) is unused already (left by an earlier edit) */
        OC_FORWARD(write_tail(ed, &t, "compacting", err));
        step("compacted");
        OC_FORWARD(cut(ed, t.at + t.size, err));
        step("truncated");
        return OC_OK;
    }
    /* Append at P >= E, far enough that tail(D) will fit below it: P = max(E, D + |tail(D)|).
     * A gap [E, P) reads as zeros (a hole) and is never written. */
    uint64_t p = ed->e;
    if (!ed->append_only && compact > ed->e - ed->d) p = ed->d + compact;
    tail a;
    place(ed, p, &a);
    oz__journal j = {ed->e, p + a.size, ed->m, 0};
    OC_FORWARD(oz__crc_range(ed->fd, ed->m, ed->e, &j.check_crc, err));
    OC_FORWARD(oz__journal_write(ed->jpath, &j, err));
    step("journaled");
    oc_status st = write_tail(ed, &a, "appending", err);
    if (st != OC_OK) { /* back to the old archive; if this fails too, the journal stays */
        if (cut(ed, ed->e, NULL) == OC_OK) (void)oz__journal_remove(ed->jpath, NULL);
        return st;
    }
    /* The commit point: the file is the new archive, complete and durable. The journal
     * is stale now; should it stay (a failure here, a crash), the next edit removes it. */
    step("appended");
    (void)oz__journal_remove(ed->jpath, NULL);
    step("committed");
    if (ed->append_only) return OC_OK;
    /* Compaction: [D, P) is unused now. Best effort after the commit point: a failure
     * leaves the appended layout, which is complete. */
    place(ed, ed->d, &t);
    if (write_tail(ed, &t, "compacting", NULL) != OC_OK) return OC_OK;
    step("compacted");
    if (cut(ed, t.at + t.size, NULL) != OC_OK) return OC_OK;
    step("truncated");
    return OC_OK;
}

oc_status oz_archive_edit_begin(const char *path, const oz_archive_options *opts,
                                oz_archive_edit **out, oc_error *err) {
    OC_RETURN_ERROR_IF(!path || !*path || !out, err, OC_ERR_INVALID_ARG, OC_NO_OFFSET,
                       "oz_archive_edit_begin: missing argument");
    if (oc_is_url(path))
        return oc_error_file(err, path,
                             oc__fail(err, OC_ERR_INVALID_ARG, OC_NO_OFFSET,
                                      "%s is a URL: onnxz edits local files only", path));
    OZ_ARCHIVE_OPTS(opts, err);
    *out = NULL;
    uint64_t align = opts->serialize.buffer.alignment;
    OC_RETURN_RULE_IF(align && (align < OZ_ZIP_MIN_ALIGNMENT || align > OZ_ZIP_MAX_ALIGNMENT ||
                                (align & (align - 1)) != 0),
                      err, OC_ERR_INVALID_ARG, OC_NO_OFFSET, "Z-10",
                      "alignment %llu is not a power of two from %u to %u",
                      (unsigned long long)align, OZ_ZIP_MIN_ALIGNMENT, OZ_ZIP_MAX_ALIGNMENT);
    edit *ed = calloc(1, sizeof *ed);
    OC_RETURN_ERROR_IF(!ed, err, OC_ERR_NOMEM, OC_NO_OFFSET, "out of memory");
    ed->fd = -1;
    ed->drop_index = UINT64_MAX;
    ed->append_only = opts->append_only;
    ed->deflate_model = opts->deflate_model;
    ed->align = align;
    oc_status st = OC_OK;
    if (!(ed->path = strdup(path)) || !(ed->jpath = oz__journal_path(path)))
        st = oc__fail(err, OC_ERR_NOMEM, OC_NO_OFFSET, "out of memory");
    if (st == OC_OK) st = open_locked(ed, err);
    if (st == OC_OK) st = recover(ed, err);
    if (st == OC_OK) st = open_archive(ed, err);
    if (st != OC_OK) {
        oz_archive_edit_end(ed);
        return st;
    }
    oc__test_point("edit-begun");
    *out = ed;
    return OC_OK;
}

bool oz_archive_edit_rolled_back(const oz_archive_edit *ed, uint64_t *from, uint64_t *to) {
    if (!ed || ed->cut_to == 0) return false;
    if (from) *from = ed->cut_from;
    if (to) *to = ed->cut_to;
    return true;
}

const oz_archive *oz_archive_edit_archive(const oz_archive_edit *ed) {
    return ed && !ed->done ? ed->ar : NULL;
}

/* The edit with the model's encoded bytes (checked already), after the extra entry of
 * ed (if any): everything is read, checked and laid out before the first byte is written. */
static oc_status commit_encoded(edit *ed, const uint8_t *encoded, uint64_t encoded_n,
                                oc_error *err) {
    uint8_t *packed = NULL;
    oc_status st = find_layout(ed, err);
    if (st == OC_OK) st = read_others(ed, err);
    if (st == OC_OK) {
        if (ed->align)
            ed->alignment = (uint32_t)ed->align;
        else
            st = archive_alignment(ed, &ed->alignment, err);
    }
    if (st == OC_OK) {
        ed->model.name_len = (uint32_t)strlen(OZ_MODEL_ENTRY);
        ed->model.crc = oz__crc32(0, encoded, encoded_n);
        ed->model.usize = encoded_n;
        ed->model.method = OZ_ZIP_STORED;
        ed->model.csize = encoded_n;
        ed->data = encoded;
        if (ed->deflate_model) {
            if (encoded_n > OZ_ZIP_DEFAULT_MAX_INFLATED)
                st = oc__fail_rule(
                    err, OC_ERR_LIMIT, OC_NO_OFFSET, "Z-66",
                    "a DEFLATED model of %llu bytes is over the %llu-byte read limit",
                    (unsigned long long)encoded_n, (unsigned long long)OZ_ZIP_DEFAULT_MAX_INFLATED);
            else
                st = oz__deflate(encoded, encoded_n, -1, &packed, &ed->model.csize, err);
            ed->model.method = OZ_ZIP_DEFLATED;
            ed->data = packed;
        }
    }
    if (st == OC_OK) {
        /* Z-52: nothing a reader with default limits would refuse. The model's central
         * header is at most 46 + name + 28 bytes, and so is the extra entry's. */
        uint64_t cd_max = ed->others_len + OZ_CENTRAL_SIZE + ed->model.name_len + 28u;
        if (ed->extra_name) cd_max += OZ_CENTRAL_SIZE + ed->extra.name_len + 28u;
        if (cd_max > OZ_ZIP_DEFAULT_MAX_CENTRAL_DIR)
            st = oc__fail_rule(err, OC_ERR_LIMIT, OC_NO_OFFSET, "Z-66",
                               "the central directory would exceed %llu bytes",
                               (unsigned long long)OZ_ZIP_DEFAULT_MAX_CENTRAL_DIR);
        ed->lh = st == OC_OK ? malloc(OZ_LOCAL_MAX(ed->model.name_len, ed->alignment)) : NULL;
        ed->cd = st == OC_OK ? malloc((size_t)cd_max + OZ_END_MAX + ed->comment_len) : NULL;
        if (st == OC_OK && (!ed->lh || !ed->cd))
            st = oc__fail(err, OC_ERR_NOMEM, OC_NO_OFFSET, "out of memory");
        if (st == OC_OK && ed->extra_name &&
            !(ed->xlh = malloc(OZ_LOCAL_MAX(ed->extra.name_len, ed->alignment))))
            st = oc__fail(err, OC_ERR_NOMEM, OC_NO_OFFSET, "out of memory");
    }
    if (st == OC_OK) st = run(ed, err);
    ed->data = NULL;
    free(packed);
    return st;
}

oc_status oz_archive_edit_commit(oz_archive_edit *ed, const oc_msgdesc *desc, const void *msg,
                                 oc_error *err) {
    OC_RETURN_ERROR_IF(!ed || !desc || !msg, err, OC_ERR_INVALID_ARG, OC_NO_OFFSET,
                       "oz_archive_edit_commit: missing argument");
    OC_RETURN_ERROR_IF(ed->done, err, OC_ERR_INVALID_ARG, OC_NO_OFFSET,
                       "oz_archive_edit_commit: this edit has already been committed");
    ed->done = 1;
    void *encoded = NULL;
    uint64_t encoded_n = 0;
    oc_status st = oc_encode_to_memory(desc, msg, &encoded, &encoded_n, err);
    if (st == OC_OK) {
        ref_ctx c = {ed->zip, ed->model_index, err};
        st = oc_msg_visit_tensors(desc, (void *)(uintptr_t)msg, check_ref, &c);
    }
    if (st == OC_OK) st = commit_encoded(ed, encoded, encoded_n, err);
    free(encoded);
    return st;
}

oc_status oz__archive_edit_commit_entry(oz_archive_edit *ed, const uint8_t *model, uint64_t model_n,
                                        int deflate_model, const char *name, const uint8_t *data,
                                        uint64_t size, oc_error *err) {
    OC_RETURN_ERROR_IF(!ed || !model || !name || (!data && size), err, OC_ERR_INVALID_ARG,
                       OC_NO_OFFSET, "oz__archive_edit_commit_entry: missing argument");
    OC_RETURN_ERROR_IF(ed->done, err, OC_ERR_INVALID_ARG, OC_NO_OFFSET,
                       "oz__archive_edit_commit_entry: this edit has already been committed");
    ed->done = 1;
    ed->deflate_model = deflate_model;
    ed->extra_name = name;
    ed->extra.name_len = (uint32_t)strlen(name);
    ed->extra.method = OZ_ZIP_STORED;
    ed->extra.crc = oz__crc32(0, data, size);
    ed->extra.usize = ed->extra.csize = size;
    ed->extra_data = data;
    ed->drop_name = name;
    oc_status st = commit_encoded(ed, model, model_n, err);
    ed->extra_data = NULL;
    ed->extra_name = ed->drop_name = NULL;
    return st;
}

oc_status oz__archive_edit_commit_with(oz_archive_edit *ed, const oc_msgdesc *desc, const void *msg,
                                       const char *name, oz__edit_entry_fn make, void *ctx,
                                       oc_error *err) {
    OC_RETURN_ERROR_IF(!ed || !desc || !msg || !name, err, OC_ERR_INVALID_ARG, OC_NO_OFFSET,
                       "oz__archive_edit_commit_with: missing argument");
    OC_RETURN_ERROR_IF(ed->done, err, OC_ERR_INVALID_ARG, OC_NO_OFFSET,
                       "oz__archive_edit_commit_with: this edit has already been committed");
    ed->done = 1;
    void *encoded = NULL;
    uint64_t encoded_n = 0;
    uint8_t *data = NULL;
    uint64_t size = 0;
    oc_status st = oc_encode_to_memory(desc, msg, &encoded, &encoded_n, err);
    if (st == OC_OK) {
        ref_ctx c = {ed->zip, ed->model_index, err};
        st = oc_msg_visit_tensors(desc, (void *)(uintptr_t)msg, check_ref, &c);
    }
    if (st == OC_OK && make) st = make(ctx, ed->zip, encoded, encoded_n, &data, &size, err);
    if (st == OC_OK) {
        ed->drop_name = name;
        if (make) {
            ed->extra_name = name;
            ed->extra.name_len = (uint32_t)strlen(name);
            ed->extra.method = OZ_ZIP_STORED;
            ed->extra.crc = oz__crc32(0, data, size);
            ed->extra.usize = ed->extra.csize = size;
            ed->extra_data = data;
        }
        st = commit_encoded(ed, encoded, encoded_n, err);
        ed->extra_data = NULL;
        ed->extra_name = ed->drop_name = NULL;
    }
    free(data);
    free(encoded);
    return st;
}

void oz_archive_edit_end(oz_archive_edit *ed) {
    if (!ed) return;
    oz_archive_close(ed->ar);
    if (ed->fd >= 0) close(ed->fd); /* releases the locks */
    free(ed->path);
    free(ed->jpath);
    free(ed->others);
    free(ed->lh);
    free(ed->xlh);
    free(ed->cd);
    free(ed);
}

oc_status oz_archive_replace_model(const char *path, const oc_msgdesc *desc, const void *msg,
                                   const oz_archive_options *opts, oc_error *err) {
    OC_RETURN_ERROR_IF(!desc || !msg, err, OC_ERR_INVALID_ARG, OC_NO_OFFSET,
                       "oz_archive_replace_model: missing argument");
    oz_archive_edit *ed;
    OC_FORWARD(oz_archive_edit_begin(path, opts, &ed, err));
    oc_status st = oz_archive_edit_commit(ed, desc, msg, err);
    oz_archive_edit_end(ed);
    return st;
}
