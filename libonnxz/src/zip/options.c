/*
 * options.c - the oz_* options: their defaults (the *_init functions) and reading a
 * caller's struct by its size (internal/options.h), in one place.
 */
#include <stddef.h>
#include <string.h>

#include "internal/options.h"

void oz_zip_reader_options_init(oz_zip_reader_options *opts) {
    static const oz_zip_reader_options defaults = OZ_ZIP_READER_OPTIONS_INIT;
    *opts = defaults;
}

void oz_archive_options_init(oz_archive_options *opts) {
    static const oz_archive_options defaults = OZ_ARCHIVE_OPTIONS_INIT;
    *opts = defaults;
}

static const oz_convert_options convert_defaults = OZ_CONVERT_OPTIONS_INIT;

void oz_convert_options_init(oz_convert_options *opts) { *opts = convert_defaults; }

void oz_open_options_init(oz_open_options *opts) {
    static const oz_open_options defaults = OZ_OPEN_OPTIONS_INIT;
    *opts = defaults;
}

void oz_open_info_init(oz_open_info *info) {
    static const oz_open_info initial = OZ_OPEN_INFO_INIT;
    *info = initial;
}

/* Field f of src into the caller's dst when it lies within dst->size. */
#define OZ_INFO_PUT(dst, src, T, f)                                              \
    do {                                                                         \
        if (offsetof(T, f) + sizeof((src)->f) <= (dst)->size)                    \
            memcpy((char *)(dst) + offsetof(T, f), &(src)->f, sizeof((src)->f)); \
    } while (0)

void oz__open_info_put(oz_open_info *dst, const oz_open_info *src) {
    if (dst->size == sizeof *dst) {
        *dst = *src;
        return;
    }
    OZ_INFO_PUT(dst, src, oz_open_info, kind);
    OZ_INFO_PUT(dst, src, oz_open_info, is_archive);
    OZ_INFO_PUT(dst, src, oz_open_info, file_size);
}

oc_status oz__zip_opts(const oz_zip_reader_options **opts, oz_zip_reader_options *local,
                       oc_error *err) {
    const oz_zip_reader_options *in = *opts;
    if (in && in->size == sizeof *in) return OC_OK;
    oz_zip_reader_options_init(local);
    *opts = local;
    if (!in) return OC_OK;
    if (oc__opts_check(in, in->size, sizeof *in, "oz_zip_reader_options", err) != OC_OK)
        return OC_ERR_INVALID_ARG;
    OC_OPTS_COPY(local, in, oz_zip_reader_options, use_pread);
    OC_OPTS_COPY(local, in, oz_zip_reader_options, max_entries);
    OC_OPTS_COPY(local, in, oz_zip_reader_options, max_name_len);
    OC_OPTS_COPY(local, in, oz_zip_reader_options, max_central_dir);
    OC_OPTS_COPY(local, in, oz_zip_reader_options, max_inflated);
    OC_OPTS_COPY(local, in, oz_zip_reader_options, max_memory);
    OC_OPTS_COPY(local, in, oz_zip_reader_options, http);
    return OC_OK;
}

/* The embedded struct at byte `at` of a caller's struct of src_size bytes, of which this
 * library knows `known` bytes: absent (the caller's struct ends before it: 0), or present
 * with a size that is set and fits, nothing set past what is known (1); anything else is
 * OC_ERR_INVALID_ARG (-1). */
static int opts_embedded(size_t at, size_t src_size, const void *embedded, size_t known,
                         const char *what, oc_error *err) {
    if (at + OC_OPTS_MIN_SIZE > src_size) return 0;
    size_t size;
    memcpy(&size, embedded, sizeof size);
    if (size > src_size - at) {
        oc_error_set(err, OC_ERR_INVALID_ARG, OC_NO_OFFSET,
                     "%s of %zu bytes does not fit in the %zu bytes of the options holding it",
                     what, size, src_size - at);
        return -1;
    }
    return oc__opts_check(embedded, size, known, what, err) == OC_OK ? 1 : -1;
}

/* dst (the defaults) receives what the caller's src of src_size bytes holds. */
static oc_status archive_opts_copy(oz_archive_options *dst, const oz_archive_options *src,
                                   size_t src_size, oc_error *err) {
    size_t at = offsetof(oz_archive_options, serialize);
    int has = opts_embedded(at, src_size, &src->serialize, sizeof src->serialize,
                            "oz_archive_options.serialize", err);
    if (has < 0) return OC_ERR_INVALID_ARG;
    if (has == 0) return OC_OK;
    oc__serialize_opts_copy(&dst->serialize, &src->serialize);
    ptrdiff_t shift = (ptrdiff_t)src->serialize.size - (ptrdiff_t)sizeof(oc_serialize_options);
    OC_OPTS_COPY_AT(dst, src, src_size, oz_archive_options, deflate_model, shift);
    OC_OPTS_COPY_AT(dst, src, src_size, oz_archive_options, append_only, shift);
    OC_OPTS_COPY_AT(dst, src, src_size, oz_archive_options, max_memory, shift);
    return oc__opts_check(src, src_size, (size_t)((ptrdiff_t)sizeof *dst + shift),
                          "oz_archive_options", err);
}

oc_status oz__archive_opts(const oz_archive_options **opts, oz_archive_options *local,
                           oc_error *err) {
    const oz_archive_options *in = *opts;
    if (in && in->size == sizeof *in && in->serialize.size == sizeof in->serialize) return OC_OK;
    oz_archive_options_init(local);
    *opts = local;
    if (!in) return OC_OK;
    if (oc__opts_check(in, in->size, in->size, "oz_archive_options", err) != OC_OK) /* its size */
        return OC_ERR_INVALID_ARG;
    return archive_opts_copy(local, in, in->size, err);
}

oc_status oz__convert_opts(const oz_convert_options **opts, oz_convert_options *local,
                           oc_error *err) {
    const oz_convert_options *in = *opts;
    if (in && in->size == sizeof *in && in->load.size == sizeof in->load &&
        in->save.size == sizeof in->save && in->save.serialize.size == sizeof in->save.serialize)
        return OC_OK;
    *local = convert_defaults;
    *opts = local;
    if (!in) return OC_OK;
    if (oc__opts_check(in, in->size, in->size, "oz_convert_options", err) != OC_OK) /* its size */
        return OC_ERR_INVALID_ARG;
    OC_OPTS_COPY(local, in, oz_convert_options, output);
    size_t at = offsetof(oz_convert_options, load);
    int has =
        opts_embedded(at, in->size, &in->load, sizeof in->load, "oz_convert_options.load", err);
    if (has < 0) return OC_ERR_INVALID_ARG;
    if (has == 0) return OC_OK;
    oc__parse_opts_copy(&local->load, &in->load);
    /* save follows load: where the caller's load ends */
    at = offsetof(oz_convert_options, save) + in->load.size - sizeof(oc_parse_options);
    const oz_archive_options *save =
        (const oz_archive_options *)(const void *)((const char *)in + at);
    has = opts_embedded(at, in->size, save, sizeof *save, "oz_convert_options.save", err);
    if (has < 0) return OC_ERR_INVALID_ARG;
    if (has == 0) return OC_OK;
    if (archive_opts_copy(&local->save, save, save->size, err) != OC_OK) return OC_ERR_INVALID_ARG;
    size_t known = sizeof *in + in->load.size - sizeof in->load + save->size - sizeof *save;
    return oc__opts_check(in, in->size, known, "oz_convert_options", err);
}

oc_status oz__open_opts(const oz_open_options **opts, oz_open_options *local, oc_error *err) {
    const oz_open_options *in = *opts;
    if (in && in->size == sizeof *in && in->parse.size == sizeof in->parse) return OC_OK;
    oz_open_options_init(local);
    *opts = local;
    if (!in) return OC_OK;
    if (oc__opts_check(in, in->size, in->size, "oz_open_options", err) != OC_OK) /* its size */
        return OC_ERR_INVALID_ARG;
    size_t at = offsetof(oz_open_options, parse);
    int has =
        opts_embedded(at, in->size, &in->parse, sizeof in->parse, "oz_open_options.parse", err);
    if (has < 0) return OC_ERR_INVALID_ARG;
    if (has == 0) return OC_OK;
    oc__parse_opts_copy(&local->parse, &in->parse);
    ptrdiff_t shift = (ptrdiff_t)in->parse.size - (ptrdiff_t)sizeof(oc_parse_options);
    OC_OPTS_COPY_AT(local, in, in->size, oz_open_options, key, shift);
    OC_OPTS_COPY_AT(local, in, in->size, oz_open_options, key_len, shift);
    OC_OPTS_COPY_AT(local, in, in->size, oz_open_options, crypt, shift);
    return oc__opts_check(in, in->size, (size_t)((ptrdiff_t)sizeof *in + shift), "oz_open_options",
                          err);
}
