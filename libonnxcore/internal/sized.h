/*
 * internal/sized.h - the one mechanism by which both libraries read and fill a caller's
 * struct that begins with its size (every options struct, and the outputs oz_open_info,
 * oz_convert_info ...: onnxcore/options.h, "Extending"): the check of its size, the copy-in
 * of an options struct over its defaults (oc__sized_read, from a description of the
 * struct) and the copy-out of an output (oc__output_put). The descriptions are in
 * onnxcore_shared.h (libonnxcore's) and libonnxz/internal/options.h.
 */
#ifndef ONNXCORE_INTERNAL_SIZED_H
#define ONNXCORE_INTERNAL_SIZED_H

#include <stddef.h>
#include <string.h>

#include <onnxcore/limits.h>
#include <onnxcore/status.h>

#include "onnxcore_private.h"

/* The bytes of the size field: a struct of fewer bytes was never initialised. */
#define OC_OPTS_MIN_SIZE sizeof(size_t)

/* Fails with OC_ERR_INVALID_ARG for a caller's struct at opts whose size field (size)
 * was never set, is past OC_OPTIONS_MAX_SIZE (limits.h; nothing else is read then) or is
 * no multiple of sizeof(size_t) (it would end inside a field), and
 * for one longer than the `known` bytes of this library's that sets a byte past them. For every struct that begins with its size; an output struct passes
 * known = size (oc__output_check): the library fills the fields it knows and reads none,
 * so a later caller's fields past them are its own business, whatever they hold. */
static inline oc_status oc__opts_check(const void *opts, size_t size, size_t known,
                                       const char *what, oc_error *err) {
    if (size < OC_OPTS_MIN_SIZE)
        return oc_error_set(err, OC_ERR_INVALID_ARG, OC_NO_OFFSET,
                            "%s: size is %zu: initialise the options with their _INIT macro or "
                            "_init function",
                            what, size);
    if (size > OC_OPTIONS_MAX_SIZE)
        return oc_error_set(err, OC_ERR_INVALID_ARG, OC_NO_OFFSET,
                            "%s: size is %zu, more than any struct of a later version "
                            "(OC_OPTIONS_MAX_SIZE, %u): initialise the options with their "
                            "_INIT macro or _init function",
                            what, size, OC_OPTIONS_MAX_SIZE);
    /* Every version's size is a sizeof: a multiple of the alignment of its first field, a
     * size_t. Any other size ends inside a field (part of a pointer kept, the rest the
     * default's: a crash), so it is no version's. */
    if (size % OC_OPTS_MIN_SIZE)
        return oc_error_set(err, OC_ERR_INVALID_ARG, OC_NO_OFFSET,
                            "%s: size is %zu, which ends inside a field: no version of the "
                            "struct has that size (a multiple of %zu): initialise it with its "
                            "_INIT macro or _init function",
                            what, size, (size_t)OC_OPTS_MIN_SIZE);
    for (size_t i = known; i < size; i++)
        if (((const unsigned char *)opts)[i])
            return oc_error_set(err, OC_ERR_INVALID_ARG, OC_NO_OFFSET,
                                "%s: size is %zu, of which this library knows %zu: byte %zu "
                                "is set, an option of a later version",
                                what, size, known, i);
    return OC_OK;
}

/* ---- reading a caller's sized struct: one mechanism for every options struct ----
 *
 * A sized struct is described once (oc__sized_type): its name, its size and defaults in
 * this library, and the sized structs it embeds (oz_open_options.parse ...), each at its
 * offset here. oc__sized_read lays a caller's struct of any version over the defaults:
 * the bytes within the caller's size, then each embedded struct by its own size (a caller
 * of another version has embedded structs of another size, which moves every field after
 * them: those are read at the caller's offsets, the library's shifted by the difference,
 * exact since an embedded struct's size is a multiple of its alignment and no field after
 * it needs more). Bytes are copied whole, padding included: a field named padding_NN, or
 * the tail padding of an older struct, lands in padding of this library's layout, never
 * read. */
typedef struct oc__sized_type oc__sized_type;
typedef struct oc__sized_inner {
    size_t offset;                       /* in this library's layout of the outer struct */
    const oc__sized_type *(*type)(void); /* the embedded struct's description */
    const char *name;                    /* in messages: "oz_open_options.parse" */
} oc__sized_inner;
struct oc__sized_type {
    const char *name;             /* in messages: "oc_parse_options" */
    size_t size;                  /* sizeof the struct in this library */
    const void *defaults;         /* size bytes: what its _INIT macro sets */
    const oc__sized_inner *inner; /* the sized structs it embeds, by increasing offset */
    size_t n_inner;
};

/* The options a call reads from the caller's struct in (NULL: the defaults), described by
 * t: in itself when it and every struct it embeds are of this library's size; else local
 * (t->size bytes), the defaults overlaid with what in holds (an older, shorter struct) or
 * checked to set nothing past what this library knows (a later, longer one). *use is what
 * to read, also on failure (the defaults). Refused (OC_ERR_INVALID_ARG): a size never set
 * or past OC_OPTIONS_MAX_SIZE (nothing past it read), an embedded struct that does not fit
 * in its outer one, a byte of a later version set. */
OC_PRIVATE oc_status oc__sized_read(const oc__sized_type *t, const void *in, void *local,
                                    const void **use, oc_error *err);

/* An embedded sized struct: field f of T, described by type_fn. */
#define OC_SIZED_INNER(T, f, type_fn) \
    { offsetof(T, f), type_fn, #T "." #f }

/* Defines name##_type (the description of T, whose defaults are INIT) and name (the
 * reader of a caller's T: oc_status name(const T **opts, T *local, oc_error *err), which
 * points *opts at what to read, as oc__sized_read's *use). OC_SIZED_NESTED lists the
 * sized structs T embeds (OC_SIZED_INNER ...). Static inline, so that a description is a
 * constant of the header that both libraries and the tests see. */
#define OC_SIZED_READER_(T, name)                                                \
    static inline oc_status name(const T **opts, T *local, oc_error *err) {      \
        const void *use_;                                                        \
        oc_status st_ = oc__sized_read(name##_type(), *opts, local, &use_, err); \
        *opts = (const T *)use_;                                                 \
        return st_;                                                              \
    }
#define OC_SIZED_FLAT(T, INIT, name)                                              \
    static inline const oc__sized_type *name##_type(void) {                       \
        static const T defaults_ = INIT;                                          \
        static const oc__sized_type type_ = {#T, sizeof(T), &defaults_, NULL, 0}; \
        return &type_;                                                            \
    }                                                                             \
    OC_SIZED_READER_(T, name)
#define OC_SIZED_NESTED(T, INIT, name, ...)                                     \
    static inline const oc__sized_type *name##_type(void) {                     \
        static const T defaults_ = INIT;                                        \
        static const oc__sized_inner inner_[] = {__VA_ARGS__};                  \
        static const oc__sized_type type_ = {#T, sizeof(T), &defaults_, inner_, \
                                             sizeof inner_ / sizeof inner_[0]}; \
        return &type_;                                                          \
    }                                                                           \
    OC_SIZED_READER_(T, name)

/* The first statement of a public function after its argument checks: opts (a parameter,
 * a pointer to options of type T) from here on points to a complete struct (never NULL),
 * made by read (a reader OC_SIZED_FLAT or OC_SIZED_NESTED defines); a struct never
 * initialised returns OC_ERR_INVALID_ARG. One macro for every options type of both
 * libraries. */
#define OC_OPTS_ENTRY(T, read, opts, err)                    \
    T opts##_full_;                                          \
    do {                                                     \
        oc_status st_ = read(&(opts), &opts##_full_, (err)); \
        if (st_ != OC_OK) return st_;                        \
    } while (0)

/* The fields of found (of `known` bytes) that the caller's output struct out holds, by
 * its size; its size field and anything past them are left as they are. */
static inline void oc__output_put(void *out, const void *found, size_t known) {
    size_t size = *(const size_t *)out;
    if (size <= sizeof(size_t)) return; /* nothing but its size (or never set) */
    memcpy((char *)out + sizeof(size_t), (const char *)found + sizeof(size_t),
           (size < known ? size : known) - sizeof(size_t));
}

/* The check of an output struct (oz_open_info, oz_convert_info): only that its size was
 * set. */
static inline oc_status oc__output_check(const void *out, size_t size, const char *what,
                                         oc_error *err) {
    return oc__opts_check(out, size, size, what, err);
}

#endif
