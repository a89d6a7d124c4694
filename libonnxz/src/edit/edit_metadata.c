/*
 * edit_metadata.c - a model's metadata shown or edited in one call (onnxz/metadata.h):
 * an archive in place (oz_archive_edit_*), a .onnx file rewritten whole, each under its
 * lock.
 */
#define _DEFAULT_SOURCE /* flock, realpath */
#include "onnxz/metadata.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal/edit.h"
#include "internal/lock.h"
#include "internal/metadata.h"
#include "internal/signing.h"
#include "internal/zipread.h"
#include "internal/options.h"
#include "internal/error.h"
#include "onnxcore_private.h"
#include "onnxcore/http.h"
#include "onnxz/archive.h"
#include "onnxz/open.h"
#include "onnxz/sign.h"

void oz_metadata_options_init(oz_metadata_options *opts) {
    static const oz_metadata_options defaults = OZ_METADATA_OPTIONS_INIT;
    *opts = defaults;
}

/* The fields of found that the caller's info holds (by its size). */
static void info_put(oz_metadata_info *info, const oz_metadata_info *found) {
    if (info) oc__output_put(info, found, sizeof *found);
}

/* Every edit is well formed, before anything is read. */
static oc_status check_edits(const oz_metadata_edit *edits, size_t n, oc_error *err) {
    for (size_t i = 0; i < n; i++) {
        const oz_metadata_edit *e = &edits[i];
        if (e->op < OZ_METADATA_PRODUCER || e->op > OZ_METADATA_REMOVE)
            return oc__fail(err, OC_ERR_INVALID_ARG, OC_NO_OFFSET, "edit %zu: %d is no edit", i,
                            (int)e->op);
        if ((e->op == OZ_METADATA_SET || e->op == OZ_METADATA_REMOVE) && (!e->key || !*e->key))
            return oc__fail(err, OC_ERR_INVALID_ARG, OC_NO_OFFSET,
                            "edit %zu: a metadata_props key must not be empty", i);
        if (e->op != OZ_METADATA_REMOVE && !e->value)
            return oc__fail(err, OC_ERR_INVALID_ARG, OC_NO_OFFSET, "edit %zu: no value", i);
    }
    return OC_OK;
}

static oc_status set_field(oc_arena *arena, oc_str *field, const char *value) {
    return oc_str_set_cstr(arena, field, value);
}

static oc_status apply_edits(const oz_metadata_edit *edits, size_t n, oc_model *model,
                             oc_error *err) {
    onnx_ModelProto *m = oc_model_proto(model);
    oc_arena *arena = oc_model_arena(model);
    oc_status st = OC_OK;
    for (size_t i = 0; i < n && st == OC_OK; i++) {
        const oz_metadata_edit *e = &edits[i];
        switch (e->op) {
        case OZ_METADATA_PRODUCER:
            st = set_field(arena, &m->producer_name, e->value);
            OC_SET_HAS(ModelProto, m, producer_name);
            break;
        case OZ_METADATA_PRODUCER_VERSION:
            st = set_field(arena, &m->producer_version, e->value);
            OC_SET_HAS(ModelProto, m, producer_version);
            break;
        case OZ_METADATA_DOC_STRING:
            st = set_field(arena, &m->doc_string, e->value);
            OC_SET_HAS(ModelProto, m, doc_string);
            break;
        case OZ_METADATA_SET:
            st = oz__metadata_set(arena, m, e->key, strlen(e->key), e->value);
            break;
        case OZ_METADATA_REMOVE:
            oz__metadata_remove(m, e->key, strlen(e->key));
            break;
        }
    }
    return st == OC_OK ? OC_OK : oc__fail(err, st, OC_NO_OFFSET, "out of memory");
}

/* One try of lock_model_file's lock. */
typedef struct model_try {
    const char *path;
    int fd;       /* opened, and locked once TAKEN */
    int replaced; /* how often the name was replaced between open and lock */
    oc__lock_holder holder;
    int open_errno;
} model_try;

static oc__lock_try try_model(void *ctx) {
    model_try *m = ctx;
    if (m->fd >= 0) close(m->fd);
    m->fd = open(m->path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (m->fd < 0) {
        m->open_errno = errno;
        return OC__LOCK_ERROR;
    }
    oc__lock_try r = oc__lock_flock(m->fd);
    if (r == OC__LOCK_HELD) /* a shared flock: a lock onnxz never takes (L-5) */
        return oc__lock_foreign(m->fd, -1, &m->holder) ? OC__LOCK_REFUSED : r;
    struct stat a, b; /* TAKEN, or NONE (no flock here: unlocked, as before) */
    if (fstat(m->fd, &a) == 0 && stat(m->path, &b) == 0 && a.st_dev == b.st_dev &&
        a.st_ino == b.st_ino)
        return OC__LOCK_TAKEN;
    return ++m->replaced < 16 ? OC__LOCK_AGAIN : OC__LOCK_REFUSED;
}

/* One editor of a .onnx file at a time, and no save of a pair over it meanwhile
 * (E-25: a save takes the same lock): an exclusive flock on the file, taken before it is
 * read and held until the new file has replaced it, waited for as an archive's edit lock
 * is (oz__a58_wait), except one that onnxz never takes (a shared flock: L-5, busy at once,
 * naming its holder). Another editor's rename may have replaced the name between our open
 * and our lock: then the lock is on a file nobody will read again, so it is taken again on
 * the file the name now holds. */
static oc_status lock_model_file(const char *path, int *fd_out, oc_error *err) {
    model_try m = {path, -1, 0, OC__LOCK_HOLDER_INIT, 0};
    oc__lock_try r = oc__lock_poll(&oz__a58_wait, try_model, &m);
    if (r == OC__LOCK_TAKEN) {
        *fd_out = m.fd;
        return OC_OK;
    }
    if (r == OC__LOCK_ERROR)
        return oc_error_file(err, path, oc__fail_errno(err, m.open_errno, "cannot open %s", path));
    oc_status st;
    if (r == OC__LOCK_HELD || m.holder.foreign) {
        oc__lock_name_holder(m.fd, &m.holder);
        st = oc__lock_busy("edit", "model", path, &m.holder, OZ_LOCK_WAIT_MS, "A-58", err);
    } else {
        st = oc__fail_rule(err, OC_ERR_BUSY, OC_NO_OFFSET, "A-58",
                           "busy: it keeps being replaced while we lock it");
    }
    close(m.fd);
    return st;
}

/* A signed model is edited only when the caller says what becomes of its signature
 * (spec/signing.md G-40): signed again (sign_key) or dropped (unsign). */
static oc_status signature_rule(bool is_signed, const char *where, const oz_metadata_options *opts,
                                oc_error *err) {
    if (!is_signed || opts->sign_key || opts->unsign) return OC_OK;
    return oc__fail_rule(err, OC_ERR_UNSUPPORTED, OC_NO_OFFSET, "G-40",
                         "is signed (%s): editing its metadata would break the signature; sign "
                         "it again in the same edit (a private key: onnxz meta --key "
                         "PRIVATE.pem) or drop the signature (--unsign)",
                         where);
}

typedef struct resign_ctx {
    const oz__signer *sg;
    const char *path;
} resign_ctx;

/* The new __ONNXZ_SIGNATURE: every entry as the edit keeps it, the new model's bytes. */
static oc_status make_signature(void *ctx, const oz_zip_reader *zip, const uint8_t *model,
                                uint64_t model_n, uint8_t **data, uint64_t *size, oc_error *err) {
    const resign_ctx *c = ctx;
    char *bundle = NULL;
    size_t bundle_n = 0;
    OC_FORWARD(
        oz__signer_archive(c->sg, zip, c->path, model, model_n, &bundle, &bundle_n, NULL, err));
    *data = (uint8_t *)bundle;
    *size = bundle_n;
    return OC_OK;
}

/* An archive edited in place: the model read, changed and committed under the edit; a
 * signature signed again or dropped in the same commit (A-54: readers see the old signed
 * archive or the new one, never a mix). */
static oc_status edit_archive(const char *path, const oz_metadata_edit *edits, size_t n,
                              const oz_metadata_options *opts, const oz__signer *sg,
                              const oc_parse_options *po, oc_model **model, oz_metadata_info *found,
                              oc_error *err) {
    oz_archive_options ao = OZ_ARCHIVE_OPTIONS_INIT;
    oz_archive_edit *ed = NULL;
    uint64_t si = 0;
    ao.append_only = opts->append_only;
    oc_status st = oz_archive_edit_begin(path, &ao, &ed, err);
    if (st == OC_OK) {
        found->rolled_back = oz_archive_edit_rolled_back(ed, &found->cut_from, &found->cut_to);
        found->was_signed =
            oz__zip_reader_find_n(oz_archive_zip(oz_archive_edit_archive(ed)), OZ_SIGNATURE_ENTRY,
                                  strlen(OZ_SIGNATURE_ENTRY), &si);
        st = signature_rule(found->was_signed, "its entry " OZ_SIGNATURE_ENTRY, opts, err);
    }
    if (st == OC_OK) st = oz_archive_load_model(oz_archive_edit_archive(ed), po, model, err);
    if (st == OC_OK) {
        oc__test_point("meta-read");
        st = apply_edits(edits, n, *model, err);
    }
    resign_ctx c = {sg, path};
    if (st == OC_OK && sg)
        st = oz__archive_edit_commit_with(ed, &onnx_ModelProto_desc, oc_model_proto(*model),
                                          OZ_SIGNATURE_ENTRY, make_signature, &c, err);
    else if (st == OC_OK && found->was_signed)
        st = oz__archive_edit_commit_with(ed, &onnx_ModelProto_desc, oc_model_proto(*model),
                                          OZ_SIGNATURE_ENTRY, NULL, NULL, err);
    else if (st == OC_OK)
        st = oz_archive_edit_commit(ed, &onnx_ModelProto_desc, oc_model_proto(*model), err);
    oz_archive_edit_end(ed);
    return st;
}

/* A .onnx file written anew beside itself and renamed over the old one, under its lock;
 * the mapping keeps the old bytes while the new file is written. */
static oc_status edit_model_file(const char *path, const oz_metadata_edit *edits, size_t n,
                                 const oz_metadata_options *opts, const oz__signer *sg,
                                 const oc_parse_options *po, oc_model **model,
                                 oz_metadata_info *found, oc_error *err) {
    oz_open_options oo = OZ_OPEN_OPTIONS_INIT;
    int lock_fd = -1;
    struct stat bs;
    size_t pn = strlen(path);
    char *sig = malloc(pn + sizeof OZ_SIGNATURE_SUFFIX);
    OC_RETURN_ERROR_IF(!sig, err, OC_ERR_NOMEM, OC_NO_OFFSET, "out of memory");
    memcpy(sig, path, pn);
    memcpy(sig + pn, OZ_SIGNATURE_SUFFIX, sizeof OZ_SIGNATURE_SUFFIX);
    oc_status st = lock_model_file(path, &lock_fd, err);
    if (st == OC_OK) {
        found->was_signed = lstat(sig, &bs) == 0;
        st = signature_rule(found->was_signed, oc__path_base(sig), opts, err);
    }
    oo.parse = *po;
    oo.parse.no_copy = 1;
    if (st == OC_OK) st = oz_open(path, &oo, model, NULL, err);
    if (st == OC_OK) {
        oc__test_point("meta-read");
        st = apply_edits(edits, n, *model, err);
    }
    /* The old signature goes before the model changes, the new one comes after: a reader
     * sees the old signed model, or a model with no signature, or the new signed one,
     * never a signature that does not match (G-40). */
    if (st == OC_OK && found->was_signed && unlink(sig) != 0 && errno != ENOENT)
        st = oc__fail_errno(err, errno, "cannot remove its signature %s", sig);
    if (st == OC_OK) {
        oc_serialize_options so = OC_SERIALIZE_OPTIONS_INIT; /* replaces the file it edits */
        st = oc_model_save_file(*model, path, &so, err);
    }
    if (st == OC_OK && sg) st = oz__signer_model(sg, path, NULL, NULL, err);
    if (lock_fd >= 0) close(lock_fd);
    free(sig);
    return st;
}

/* The file's kind decides the edit: an archive in place, a .onnx rewritten; encrypted
 * files are refused, and a file too short to tell is left to oz_open to report. */
static oc_status edit_path(const char *path, const oz_metadata_edit *edits, size_t n,
                           const oz_metadata_options *opts, const oz__signer *sg, oc_model **model,
                           oz_metadata_info *found, oc_error *err) {
    oc_parse_options po = OC_PARSE_OPTIONS_INIT;
    oz_open_options oo = OZ_OPEN_OPTIONS_INIT;
    oc_crypt_format crypt;
    oz_kind kind = OZ_KIND_MODEL;
    po.max_memory = opts->max_memory;
    po.skip_external_data = 1; /* entries and data files stay references */
    OC_FORWARD(oz_detect_path(path, NULL, &kind, err));
    found->is_archive = oz_kind_is_archive(kind);
    if (n && oz_kind_is_encrypted(kind, &crypt))
        return oc__fail(err, OC_ERR_UNSUPPORTED, OC_NO_OFFSET,
                        "is encrypted (%s): decrypt it, edit, and encrypt it again",
                        oc_crypt_format_name(crypt));
    if (n && found->is_archive)
        return edit_archive(path, edits, n, opts, sg, &po, model, found, err);
    if (n && kind == OZ_KIND_MODEL)
        return edit_model_file(path, edits, n, opts, sg, &po, model, found, err);
    oo.parse = po;
    return oz_open(path, &oo, model, NULL, err);
}

oc_status oz_edit_metadata(const char *path, const oz_metadata_edit *edits, size_t n,
                           const oz_metadata_options *opts, oc_model **out, oz_metadata_info *info,
                           oc_error *err) {
    oz_metadata_info found = OZ_METADATA_INFO_INIT;
    oz_metadata_options full;
    oc_model *model = NULL;
    char *target = NULL;
    struct stat st_link;
    if (out) *out = NULL;
    if (info) OC_FORWARD(oc__output_check(info, info->size, "oz_metadata_info", err));
    oc_status st = !path || (n && !edits) ? oc__fail(err, OC_ERR_INVALID_ARG, OC_NO_OFFSET,
                                                     "oz_edit_metadata: missing argument")
                                          : oz__metadata_opts(&opts, &full, err);
    if (st == OC_OK) st = check_edits(edits, n, err);
    if (st == OC_OK && opts->sign_key && opts->unsign)
        st = oc__fail(err, OC_ERR_INVALID_ARG, OC_NO_OFFSET,
                      "sign again or drop the signature: not both");
    if (st == OC_OK && !n && (opts->sign_key || opts->unsign))
        st = oc__fail(err, OC_ERR_INVALID_ARG, OC_NO_OFFSET,
                      "signing again or dropping the signature goes with an edit (onnxz sign "
                      "signs a model as it is)");
    oz__signer *sg = NULL;
    if (st == OC_OK && opts->sign_key) { /* the key read before the model is locked */
        oz_sign_options so = OZ_SIGN_OPTIONS_INIT;
        so.passphrase = opts->passphrase;
        so.passphrase_len = opts->passphrase_len;
        st = oz__signer_open(opts->sign_key, &so, &sg, err);
    }
    if (st == OC_OK && n && oc_is_url(path)) /* before any request: a URL is never written */
        st = oc__fail(err, OC_ERR_INVALID_ARG, OC_NO_OFFSET,
                      "is a URL: onnxz edits local files only");
    /* An edit changes the file a symbolic link names, archive and .onnx alike (W-32): the
     * link is resolved once, for everything that follows. */
    if (st == OC_OK && !oc_is_url(path) && lstat(path, &st_link) == 0 && S_ISLNK(st_link.st_mode) &&
        !(target = realpath(path, NULL)))
        st = oc__fail_errno(err, errno, "a symbolic link to nothing usable");
    if (st == OC_OK)
        st = edit_path(target ? target : path, edits, n, opts, sg, &model, &found, err);
    oz__signer_close(sg);
    free(target);
    if (st == OC_OK && out)
        *out = model;
    else
        oc_model_free(model);
    info_put(info, &found);
    return st;
}
