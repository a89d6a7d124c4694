/*
 * onnxcore_shared.h - what libonnxcore and libonnxz share without it being public API:
 * reading a caller's options struct by its size. Not installed.
 *
 * Every public options struct begins with `size_t size`, set to the struct's size by its
 * *_INIT macro or *_init function (onnxcore/options.h, "Extending"). A caller compiled
 * against an older header passes a shorter struct: the library reads only the fields that
 * lie within `size` and takes the defaults for the others. A caller compiled against a
 * later header passes a longer one: accepted when what lies past the fields this library
 * knows is zero (the later fields' defaults), refused when it sets any of them, since
 * the library cannot honour an option it does not know. Public functions turn the
 * caller's pointer into one to a complete struct of this library's layout on entry
 * (oc__parse_opts ...), so the code below them reads fields as usual.
 */
#ifndef ONNXCORE_SHARED_H
#define ONNXCORE_SHARED_H

#include <stddef.h>
#include <string.h>

#include <onnxcore/options.h>
#include <onnxcore/status.h>

#include "internal/sized.h"

/* Copies field f of the caller's struct src (src_size bytes, laid out as type T up to f,
 * then `shift` bytes further on) into dst->f when it lies within src_size. shift is 0
 * except for the fields that follow an embedded options struct (see oz's archive options):
 * a caller's embedded struct of another size moves them. */
#define OC_OPTS_COPY_AT(dst, src, src_size, T, f, shift)                    \
    do {                                                                    \
        size_t at_ = offsetof(T, f) + (size_t)(shift);                      \
        if (at_ + sizeof((dst)->f) <= (src_size))                           \
            memcpy(&(dst)->f, (const char *)(src) + at_, sizeof((dst)->f)); \
    } while (0)
#define OC_OPTS_COPY(dst, src, T, f) OC_OPTS_COPY_AT(dst, src, (src)->size, T, f, 0)

/* dst (initialised with the defaults) receives the fields of src that src->size covers. */
static inline void oc__parse_opts_copy(oc_parse_options *dst, const oc_parse_options *src) {
    OC_OPTS_COPY(dst, src, oc_parse_options, buffer);
    OC_OPTS_COPY(dst, src, oc_parse_options, no_copy);
    OC_OPTS_COPY(dst, src, oc_parse_options, num_threads);
    OC_OPTS_COPY(dst, src, oc_parse_options, max_depth);
    OC_OPTS_COPY(dst, src, oc_parse_options, max_model_bytes);
    OC_OPTS_COPY(dst, src, oc_parse_options, max_tensor_bytes);
    OC_OPTS_COPY(dst, src, oc_parse_options, max_external_bytes);
    OC_OPTS_COPY(dst, src, oc_parse_options, skip_raw_data);
    OC_OPTS_COPY(dst, src, oc_parse_options, use_pread);
    OC_OPTS_COPY(dst, src, oc_parse_options, skip_external_data);
    OC_OPTS_COPY(dst, src, oc_parse_options, data_dir);
    OC_OPTS_COPY(dst, src, oc_parse_options, location);
    OC_OPTS_COPY(dst, src, oc_parse_options, verify_checksums);
    OC_OPTS_COPY(dst, src, oc_parse_options, storage_pool);
    OC_OPTS_COPY(dst, src, oc_parse_options, max_memory);
    OC_OPTS_COPY(dst, src, oc_parse_options, http);
    OC_OPTS_COPY(dst, src, oc_parse_options, loaded_location_default);
    OC_OPTS_COPY(dst, src, oc_parse_options, prefetch);
}

static inline void oc__serialize_opts_copy(oc_serialize_options *dst,
                                           const oc_serialize_options *src) {
    OC_OPTS_COPY(dst, src, oc_serialize_options, buffer);
    OC_OPTS_COPY(dst, src, oc_serialize_options, no_overwrite);
    OC_OPTS_COPY(dst, src, oc_serialize_options, external_data);
    OC_OPTS_COPY(dst, src, oc_serialize_options, max_external_file_size);
    OC_OPTS_COPY(dst, src, oc_serialize_options, checksum);
    OC_OPTS_COPY(dst, src, oc_serialize_options, progress);
    OC_OPTS_COPY(dst, src, oc_serialize_options, progress_ctx);
    OC_OPTS_COPY(dst, src, oc_serialize_options, fetch);
    OC_OPTS_COPY(dst, src, oc_serialize_options, no_sync);
}

/* On entry to a public function: *opts (the caller's pointer, NULL for the defaults)
 * becomes a pointer to a complete struct: the caller's own when it has this library's
 * size, else `local`, filled with the defaults and the caller's fields. */
static inline oc_status oc__parse_opts(const oc_parse_options **opts, oc_parse_options *local,
                                       oc_error *err) {
    const oc_parse_options *in = *opts;
    if (in && in->size == sizeof *in) return OC_OK;
    oc_parse_options_init(local);
    *opts = local;
    if (!in) return OC_OK;
    if (oc__opts_check(in, in->size, sizeof *in, "oc_parse_options", err) != OC_OK)
        return OC_ERR_INVALID_ARG;
    oc__parse_opts_copy(local, in);
    return OC_OK;
}

static inline oc_status oc__serialize_opts(const oc_serialize_options **opts,
                                           oc_serialize_options *local, oc_error *err) {
    const oc_serialize_options *in = *opts;
    if (in && in->size == sizeof *in) return OC_OK;
    oc_serialize_options_init(local);
    *opts = local;
    if (!in) return OC_OK;
    if (oc__opts_check(in, in->size, sizeof *in, "oc_serialize_options", err) != OC_OK)
        return OC_ERR_INVALID_ARG;
    oc__serialize_opts_copy(local, in);
    return OC_OK;
}

/* The first statement of a public function after its argument checks: opts (a parameter,
 * a pointer to options of type T) from here on points to a complete struct (never NULL),
 * made by read (oc__parse_opts ...); a struct never initialised returns
 * OC_ERR_INVALID_ARG. One macro for every options type of both libraries. */
#define OC_OPTS_ENTRY(T, read, opts, err)                    \
    T opts##_full_;                                          \
    do {                                                     \
        oc_status st_ = read(&(opts), &opts##_full_, (err)); \
        if (st_ != OC_OK) return st_;                        \
    } while (0)
#define OC_PARSE_OPTS(opts, err) OC_OPTS_ENTRY(oc_parse_options, oc__parse_opts, opts, err)
#define OC_SERIALIZE_OPTS(opts, err) \
    OC_OPTS_ENTRY(oc_serialize_options, oc__serialize_opts, opts, err)

#endif
