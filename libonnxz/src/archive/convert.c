/*
 * convert.c - any form to any form (onnxz/convert.h).
 */
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include <onnxcore/crypto_model.h>
#include <onnxcore/external.h>
#include <onnxcore/http.h>

#include "onnxz/convert.h"
#include "onnxcore/external.h"
#include "onnxz/open.h"
#include "internal/archive.h"
#include "internal/error.h"
#include "internal/external.h"
#include "internal/options.h"
#include "internal/signing.h"
#include "internal/save_url.h"
#include "internal/crypt_url.h"

/* The forms by name, indexed by oz_form; each name is also the form's extension. */
static const char *const form_names[] = {"auto", "onnx", "onnxz", "onnxc"};
#define FORM_COUNT (sizeof form_names / sizeof form_names[0])

oz_form oz_form_named(const char *path) {
    size_t n = path ? strlen(path) : 0;
    for (size_t f = OZ_FORM_ONNX; f < FORM_COUNT; f++) {
        size_t k = strlen(form_names[f]);
        if (n > k && path[n - k - 1] == '.' && strcasecmp(path + n - k, form_names[f]) == 0)
            return (oz_form)f;
    }
    return OZ_FORM_AUTO;
}

oz_form oz_form_parse(const char *name) {
    for (size_t f = OZ_FORM_ONNX; name && f < FORM_COUNT; f++)
        if (strcmp(name, form_names[f]) == 0) return (oz_form)f;
    return OZ_FORM_AUTO;
}

const char *oz_form_name(oz_form form) {
    return (size_t)form < FORM_COUNT ? form_names[form] : form_names[OZ_FORM_AUTO];
}

/* The deprecated calls below are built on one another through these static twins, so
 * that none calls a deprecated function. */

static oz_form form_of_name(const char *path) {
    oz_form form = oz_form_named(path);
    return form == OZ_FORM_AUTO ? OZ_FORM_ONNX : form;
}

oz_form oz_form_of_name(const char *path) { return form_of_name(path); }

static oc_status load_any(const char *path, const oc_parse_options *opts, oc_model **out,
                          oc_error *err) {
    if (out) *out = NULL;
    /* The caller's struct is read by its size first (it may be older and shorter): copied
     * whole, it would also be taken for a caller's struct by oz_open, which would then read
     * the key past it. */
    OC_PARSE_OPTS(opts, err);
    oz_open_options o = OZ_OPEN_OPTIONS_INIT;
    o.parse = *opts;
    return oz_open(path, &o, out, NULL, err);
}

oc_status oz_load_any(const char *path, const oc_parse_options *opts, oc_model **out,
                      oc_error *err) {
    return load_any(path, opts, out, err);
}

/* The one home of a save, whatever asked for it (oz_save_any, oz_save, oz_convert,
 * oz_convert_file): model to path in `form` (not AUTO), with ao's layout and files; key
 * and crypt for OZ_FORM_ONNXC. */
/* The bytes the model's arena holds, which a save's budget counts (M-5). */
static uint64_t model_held(const oc_model *model) {
    /* The arena is only measured: the cast is for an accessor that also serves writers. */
    return oc_arena_bytes_used(oc_model_arena((oc_model *)(uintptr_t)model));
}

static oc_status save_as(const oc_model *model, const char *path, oz_form form,
                         const oz_archive_options *ao, const void *key, size_t key_len,
                         const oc_crypt_options *crypt, const oc_http_options *http,
                         oc_error *err) {
    /* S-40: the model's references resolved (a fetch) or the save refused, before any
     * file is touched. */
    OC_FORWARD(oc_check_references_resolved(&onnx_ModelProto_desc, oc_model_proto_const(model),
                                            ao->serialize.fetch, err));
    switch (form) {
    case OZ_FORM_ONNXZ:
        if (ao->serialize.external_data)
            return oc__fail(err, OC_ERR_INVALID_ARG, OC_NO_OFFSET,
                            "external_data does not apply to an archive, which holds its "
                            "tensors itself");
        return oz__archive_save_url(model, path, ao, http, err);
    case OZ_FORM_ONNX:
        if (ao->max_memory && ao->serialize.external_data) /* M-5, as an archive's */
            OC_FORWARD(oc__external_save_budget(&onnx_ModelProto_desc, oc_model_proto_const(model),
                                                &ao->serialize, model_held(model), ao->max_memory,
                                                err));
        if (http)
            return oc_msg_save_url(&onnx_ModelProto_desc, oc_model_proto_const(model), path,
                                   &ao->serialize, http, err);
        return oc_model_save_file(model, path, &ao->serialize, err);
    case OZ_FORM_ONNXC:
        return oc_crypt_save_model_url(model, path, key, key_len, crypt, &ao->serialize, http, err);
    default:
        return oc__fail(err, OC_ERR_INVALID_ARG, OC_NO_OFFSET, "unknown output form %d", (int)form);
    }
}

static oc_status save_any(const oc_model *model, const char *path, oz_form form,
                          const oz_archive_options *opts, oc_error *err) {
    OZ_ARCHIVE_OPTS(opts, err);
    if (!model)
        return oc__fail(err, OC_ERR_INVALID_ARG, OC_NO_OFFSET, "oz_save_any: missing argument");
    if (form == OZ_FORM_AUTO) form = form_of_name(path);
    if (form == OZ_FORM_ONNXC)
        return oc__fail(err, OC_ERR_INVALID_ARG, OC_NO_OFFSET,
                        "oz_save_any: an encrypted output needs a key: use oz_save");
    return save_as(model, path, form, opts, NULL, 0, NULL, NULL, err);
}

oc_status oz_save_any(const oc_model *model, const char *path, oz_form form,
                      const oz_archive_options *opts, oc_error *err) {
    return save_any(model, path, form, opts, err);
}

oc_status oz_convert(const char *in, const char *out, const oz_convert_options *opts,
                     oc_error *err) {
    if (!in || !out)
        return oc__fail(err, OC_ERR_INVALID_ARG, OC_NO_OFFSET, "oz_convert: missing argument");
    OZ_CONVERT_OPTS(opts, err);
    oc_parse_options load = opts->load;
    load.no_copy = 1;
    load.skip_external_data = 0;
    oc_model *model = NULL;
    OC_FORWARD(load_any(in, &load, &model, err));
    oc_status st = save_any(model, out, opts->output, &opts->save, err);
    oc_model_free(model); /* last: the save streamed from the mapping the tensors hold */
    return st;
}

/* ---- oz_save and oz_convert_file: the rules of every save option ------------------- */

void oz_save_options_init(oz_save_options *opts) {
    static const oz_save_options defaults = OZ_SAVE_OPTIONS_INIT;
    *opts = defaults;
}

static const char *const option_names[] = {"",      "form",      "external_data", "max_file_size",
                                           "align", "threshold", "checksum",      "deflate_model",
                                           "key",   "crypt"};

const char *oz_save_option_name(oz_save_option opt) {
    return (size_t)opt < sizeof option_names / sizeof option_names[0] ? option_names[opt] : "";
}

/* Fails the check on option `opt`: "NAME WHY". */
#if defined(__GNUC__)
__attribute__((format(printf, 4, 5)))
#endif
static oc_status
refuse(oz_save_option opt, oz_save_option *bad, oc_error *err, const char *fmt, ...) {
    char why[OC_ERROR_MESSAGE_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    if (bad) *bad = opt;
    return oc__fail(err, OC_ERR_INVALID_ARG, OC_NO_OFFSET, "%s %s", oz_save_option_name(opt), why);
}

#define SAVE_DEFAULT_ALIGN 64u
/* The largest alignment for data files: far beyond any page size, small enough that the
 * padding it may add stays reasonable. */
#define SAVE_MAX_FILE_ALIGN (1u << 20)

/* Options that do not apply to the output's form are mistakes, not no-ops. */
static oc_status check_applies(const oz_save_options *o, oz_form form, oz_save_option *bad,
                               oc_error *err) {
    bool archive = form == OZ_FORM_ONNXZ, external = o->external_data != NULL;
    if (o->crypt && form != OZ_FORM_ONNXC)
        return refuse(OZ_SAVE_OPT_CRYPT, bad, err, "applies to .onnxc output only");
    if (external && form == OZ_FORM_ONNXC)
        return refuse(OZ_SAVE_OPT_EXTERNAL_DATA, bad, err,
                      "does not apply to .onnxc output: an encrypted model holds its tensors "
                      "itself");
    if (external && archive)
        return refuse(OZ_SAVE_OPT_EXTERNAL_DATA, bad, err,
                      "applies to .onnx output; an .onnxz archive holds its tensors itself");
    if (o->deflate_model && !archive)
        return refuse(OZ_SAVE_OPT_DEFLATE_MODEL, bad, err, "applies to .onnxz output only");
    if (o->has_align && !archive && !external)
        return refuse(OZ_SAVE_OPT_ALIGN, bad, err,
                      "applies to .onnxz output or with external_data");
    if (o->has_threshold && !archive && !external)
        return refuse(OZ_SAVE_OPT_THRESHOLD, bad, err,
                      "applies to .onnxz output or with external_data");
    if (o->has_max_file_size && !external)
        return refuse(OZ_SAVE_OPT_MAX_FILE_SIZE, bad, err, "applies with external_data only");
    if (o->checksum && !external)
        return refuse(OZ_SAVE_OPT_CHECKSUM, bad, err, "applies with external_data only");
    if (o->key && form != OZ_FORM_ONNXC) /* else a model meant encrypted is written plain */
        return refuse(OZ_SAVE_OPT_KEY, bad, err, "applies to .onnxc output only");
    return OC_OK;
}

/* The values themselves; a .onnxc output's missing key too, unless it is to come later. */
static oc_status check_values(const oz_save_options *o, oz_form form, bool key_later,
                              oz_save_option *bad, oc_error *err) {
    uint64_t align = o->has_align ? o->align : SAVE_DEFAULT_ALIGN;
    if (form == OZ_FORM_ONNXC && !o->key && !key_later)
        return refuse(OZ_SAVE_OPT_KEY, bad, err, "is needed for .onnxc output (the passphrase)");
    if (o->external_data && o->external_data[0] == '\0')
        return refuse(OZ_SAVE_OPT_EXTERNAL_DATA, bad, err, "needs a file name");
    if (o->has_max_file_size && o->max_file_size == 0)
        return refuse(OZ_SAVE_OPT_MAX_FILE_SIZE, bad, err, "must be more than 0");
    if (align == 0 || (align & (align - 1)) != 0)
        return refuse(OZ_SAVE_OPT_ALIGN, bad, err, "%" PRIu64 " is not a power of two", align);
    if (form == OZ_FORM_ONNXZ && (align < OZ_ZIP_MIN_ALIGNMENT || align > OZ_ZIP_MAX_ALIGNMENT))
        return refuse(OZ_SAVE_OPT_ALIGN, bad, err, "for an archive must be from %u to %u",
                      OZ_ZIP_MIN_ALIGNMENT, OZ_ZIP_MAX_ALIGNMENT);
    if (form != OZ_FORM_ONNXZ && align > SAVE_MAX_FILE_ALIGN)
        return refuse(OZ_SAVE_OPT_ALIGN, bad, err, "for data files must be at most %u",
                      SAVE_MAX_FILE_ALIGN);
    return OC_OK;
}

/* An s3:// output, which oz_save_options.http lets a save write (spec/remote.md). */
static int is_s3(const char *path) { return path && strncasecmp(path, "s3://", 5) == 0; }

static oc_status save_check(const char *out, const oz_save_options *opts, bool key_later,
                            oz_form *form, oz_save_option *bad, oc_error *err) {
    if (bad) *bad = OZ_SAVE_OPT_NONE;
    if (!out) return oc__fail(err, OC_ERR_INVALID_ARG, OC_NO_OFFSET, "oz_save: missing argument");
    oz_save_options full;
    OC_FORWARD(oz__save_opts(&opts, &full, err));
    if (!is_s3(out) || !opts->http) OC_FORWARD(oz__refuse_url_output(out, err));
    OC_FORWARD(oz__refuse_url_output(opts->external_data, err));
    oz_form f = opts->form == OZ_FORM_AUTO ? oz_form_named(out) : opts->form;
    if (opts->form != OZ_FORM_AUTO && (opts->form < OZ_FORM_ONNX || opts->form > OZ_FORM_ONNXC))
        return refuse(OZ_SAVE_OPT_FORM, bad, err, "%d is not a form", (int)opts->form);
    if (f == OZ_FORM_AUTO)
        return refuse(OZ_SAVE_OPT_FORM, bad, err,
                      "is not known by the output's name: name it *.onnx, *.onnxz or *.onnxc, "
                      "or give the form");
    if (form) *form = f;
    OC_FORWARD(check_applies(opts, f, bad, err));
    return check_values(opts, f, key_later, bad, err);
}

oc_status oz_save_check(const char *out, const oz_save_options *opts, oz_form *form,
                        oz_save_option *bad, oc_error *err) {
    return save_check(out, opts, false, form, bad, err);
}

oc_status oz_save_check_before_key(const char *out, const oz_save_options *opts, oz_form *form,
                                   oz_save_option *bad, oc_error *err) {
    return save_check(out, opts, true, form, bad, err);
}

/* The caller's cancel asked to stop: no file, no input, nothing is at fault. */
static oc_status cancelled(oc_error *err) {
    return oc__fail(err, OC_ERR_CANCELLED, OC_NO_OFFSET, "the save was cancelled");
}

/* A fetch watched: a failure of the input's (a request, a CRC, a data file gone) is told
 * from the output's, and the caller's cancel is asked before each tensor. */
typedef struct watched_fetch {
    const oc_tensor_fetch *inner;
    const oz_save_options *opts;
    bool input_failed;
} watched_fetch;

typedef struct watched_sink {
    oc_write_fn write;
    void *ctx;
    bool failed;
} watched_sink;

static oc_status watched_write(void *ctx, const void *data, uint64_t size, oc_error *err) {
    watched_sink *w = ctx;
    oc_status st = w->write(w->ctx, data, size, err);
    if (st != OC_OK) w->failed = true;
    return st;
}

static oc_status watched_size(void *ctx, const onnx_TensorProto *t, uint64_t *n, oc_error *err) {
    watched_fetch *f = ctx;
    oc_status st = f->inner->size(f->inner->ctx, t, n, err);
    if (st != OC_OK) f->input_failed = true;
    return st;
}

static oc_status watched_stream(void *ctx, const onnx_TensorProto *t, oc_write_fn write,
                                void *write_ctx, oc_error *err) {
    watched_fetch *f = ctx;
    if (f->opts->cancel && f->opts->cancel(f->opts->cancel_ctx)) return cancelled(err);
    watched_sink sink = {write, write_ctx, false};
    oc_status st = f->inner->stream(f->inner->ctx, t, watched_write, &sink, err);
    if (st != OC_OK && !sink.failed) f->input_failed = true;
    return st;
}

/* oz_save of options oz_save_check passed, telling `form`, and an input's failure (through
 * opts->fetch) in *input_failed. */
static oc_status save_watched(const oc_model *model, const char *out, const oz_save_options *opts,
                              oz_form form, bool *input_failed, oc_error *err) {
    watched_fetch watched = {opts->fetch, opts, false};
    oc_tensor_fetch fetch = {watched_size, watched_stream, &watched};
    const oc_tensor_fetch *f = opts->fetch && opts->fetch->size ? &fetch : NULL;
    oc_status st = OC_OK;
    if (form == OZ_FORM_ONNXZ) {
        /* an archive holds only tensors whose bytes are the size their dims and type
         * make (W-40), which a runtime can map and index by shape. */
        st = oc_model_check_tensor_sizes_fetched(model, f, err);
        if (st != OC_OK && !watched.input_failed) {
            char msg[OC_ERROR_MESSAGE_MAX];
            snprintf(msg, sizeof msg, "%s", err ? err->message : "wrong size");
            oc__fail_rule(err, st, OC_NO_OFFSET, "A-13",
                          "%s; an .onnxz archive holds only tensors of the size their shape makes",
                          msg);
            watched.input_failed = true; /* the input's tensors, not OUT, are at fault */
        }
    }
    if (st == OC_OK && opts->cancel && opts->cancel(opts->cancel_ctx)) st = cancelled(err);
    if (st == OC_OK) {
        oz_archive_options ao = OZ_ARCHIVE_OPTIONS_INIT;
        ao.serialize.no_overwrite = opts->no_overwrite;
        ao.serialize.no_sync = opts->no_sync;
        ao.serialize.progress = opts->progress;
        ao.serialize.progress_ctx = opts->progress_ctx;
        ao.serialize.fetch = f;
        if (form == OZ_FORM_ONNXZ || opts->external_data) {
            ao.serialize.buffer.alignment = opts->has_align ? opts->align : SAVE_DEFAULT_ALIGN;
            if (opts->has_threshold) ao.serialize.buffer.raw_data_threshold = opts->threshold;
        }
        ao.deflate_model = opts->deflate_model;
        ao.max_memory = opts->max_memory;
        ao.serialize.external_data = opts->external_data;
        ao.serialize.max_external_file_size = opts->has_max_file_size ? opts->max_file_size : 0;
        ao.serialize.checksum = opts->checksum;
        oc_crypt_options co = OC_CRYPT_OPTIONS_INIT;
        st = save_as(model, out, form, &ao, opts->key, opts->key_len,
                     opts->crypt ? opts->crypt : &co, is_s3(out) ? opts->http : NULL, err);
    }
    if (input_failed) *input_failed = watched.input_failed;
    return st;
}

/* Drops the cached pages of path, a file a save is about to replace: it stays whole on
 * disk until its successor is renamed over it, and its pages would stay cached beside the
 * new file's, memory slow to touch first on a VM (a save over a 1 GB archive: 3.0 s ->
 * 1.1 s) that pushes other files out of the cache. Only a regular file with no other
 * link (another name keeps its bytes in use), opened without following a link or waking
 * a FIFO's writer. Advice: nothing is reported. */
static void release_cached(const char *path) {
#ifdef POSIX_FADV_DONTNEED
    struct stat st, now;
    if (lstat(path, &st) != 0 || !S_ISREG(st.st_mode) || st.st_nlink != 1) return;
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) return;
    if (fstat(fd, &now) == 0 && now.st_dev == st.st_dev && now.st_ino == st.st_ino &&
        now.st_nlink == 1)
        (void)posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    close(fd);
#else
    (void)path;
#endif
}

/* The files a save to out replaces: out, and its data file when the location is a plain
 * name beside it (an absolute one reduced to its name, as the save writes it). */
static void release_replaced(const char *out, const char *external_data) {
    char path[4096];
    release_cached(out);
    if (!external_data) return;
    const char *loc = external_data[0] == '/' ? strrchr(external_data, '/') + 1 : external_data;
    if (!loc[0] || strcmp(loc, ".") == 0 || strcmp(loc, "..") == 0 || strchr(loc, '/')) return;
    const char *slash = strrchr(out, '/');
    int dir = slash ? (int)(slash - out + 1) : 0;
    int n = snprintf(path, sizeof path, "%.*s%s", dir, out, loc);
    if (n > 0 && (size_t)n < sizeof path) release_cached(path);
}

oc_status oz_save(const oc_model *model, const char *out, const oz_save_options *opts,
                  oc_error *err) {
    oz_save_options full;
    OC_FORWARD(oz__save_opts(&opts, &full, err));
    if (!model) return oc__fail(err, OC_ERR_INVALID_ARG, OC_NO_OFFSET, "oz_save: missing argument");
    /* Not in oz_convert_file: its input may be its output, read while it is written. */
    oz_form form;
    OC_FORWARD(oz_save_check(out, opts, &form, NULL, err));
    if (!opts->no_overwrite) release_replaced(out, opts->external_data);
    return save_watched(model, out, opts, form, NULL, err);
}

/* The fields of found that the caller's info holds (by its size, checked on entry). */
static void info_put(oz_convert_info *info, const oz_convert_info *found) {
    if (info) oc__output_put(info, found, sizeof *found);
}

oc_status oz_convert_file(const char *in, const char *out, const oz_open_options *in_opts,
                          const oz_save_options *out_opts, oz_convert_info *info, oc_error *err) {
    if (info) OC_FORWARD(oc__output_check(info, info->size, "oz_convert_info", err));
    oz_convert_info found = OZ_CONVERT_INFO_INIT;
    oz_save_options so;
    oz_form form;
    oc_status st =
        !in ? oc__fail(err, OC_ERR_INVALID_ARG, OC_NO_OFFSET, "oz_convert_file: missing argument")
            : oz__save_opts(&out_opts, &so, err);
    if (st == OC_OK) {
        so = *out_opts;
        st = oz_save_check(out, &so, &form, NULL, err);
    }
    oz_open_options oo = OZ_OPEN_OPTIONS_INIT;
    if (st == OC_OK && in_opts) {
        const oz_open_options *full = in_opts;
        OZ_OPEN_OPTS(full, err);
        oo = *full;
    }
    oc_model *model = NULL;
    oz_weights *weights = NULL;
    oc_tensor_fetch fetch = {NULL, NULL, NULL};
    if (st == OC_OK) {
        oz_open_info oi = OZ_OPEN_INFO_INIT;
        /* Tensor bytes go from IN's mapping to OUT without a copy; a URL's (an archive's
         * entries, a model's data files) are downloaded as they are written. */
        oo.parse.no_copy = 1;
        oo.parse.skip_external_data = 0;
        found.input_failed = true;
        if (oc_is_url(in) && form != OZ_FORM_ONNXC)
            st = oz_open_deferred(in, &oo, &model, &weights, &oi, err);
        else
            st = oz_open(in, &oo, &model, &oi, err);
        found.in_kind = oi.kind;
        found.in_archive = oi.is_archive;
        found.in_size = oi.file_size;
        if (st == OC_OK) found.in_signed = oz__path_signed(in, oi.kind);
    }
    if (st == OC_OK) {
        oz_weights_fetch(weights, &fetch);
        so.fetch = fetch.size ? &fetch : NULL;
        st = save_watched(model, out, &so, form, &found.input_failed, err);
    }
    oc_model_free(model); /* last: the save streamed from the mapping the tensors hold */
    oz_weights_close(weights);
    info_put(info, &found);
    return st;
}
