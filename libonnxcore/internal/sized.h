/*
 * internal/sized.h - the check every struct that begins with its size goes through (the
 * options of both libraries and the outputs oz_open_info, oz_convert_info:
 * onnxcore/options.h, "Extending"). Reading such a struct field by field is in
 * onnxcore_shared.h; this header has no other dependency, so any floor may use it.
 */
#ifndef ONNXCORE_INTERNAL_SIZED_H
#define ONNXCORE_INTERNAL_SIZED_H

#include <stddef.h>
#include <string.h>

#include <onnxcore/limits.h>
#include <onnxcore/status.h>

/* The bytes of the size field: a struct of fewer bytes was never initialised. */
#define OC_OPTS_MIN_SIZE sizeof(size_t)

/* Fails with OC_ERR_INVALID_ARG for a caller's struct at opts whose size field (size)
 * was never set or is past OC_OPTIONS_MAX_SIZE (limits.h; nothing else is read then), and
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
    for (size_t i = known; i < size; i++)
        if (((const unsigned char *)opts)[i])
            return oc_error_set(err, OC_ERR_INVALID_ARG, OC_NO_OFFSET,
                                "%s: size is %zu, of which this library knows %zu: byte %zu "
                                "is set, an option of a later version",
                                what, size, known, i);
    return OC_OK;
}

/* The options a call reads from the caller's struct in (NULL: the defaults), of `known`
 * bytes in this library, whose defaults are at `defaults`: in itself when of this size;
 * else local, the defaults overlaid with the fields in holds (an older, shorter struct) or
 * checked to set nothing past them (a later, longer one). *use is what to read, also on
 * failure (the defaults). */
static inline oc_status oc__opts_adopt(const void *in, const void *defaults, void *local,
                                       size_t known, const char *what, const void **use,
                                       oc_error *err) {
    size_t size = in ? *(const size_t *)in : 0;
    *use = in;
    if (in && size == known) return OC_OK;
    memcpy(local, defaults, known);
    *use = local;
    if (!in) return OC_OK;
    oc_status st = oc__opts_check(in, size, known, what, err);
    if (st != OC_OK) return st;
    memcpy(local, in, size < known ? size : known);
    memcpy(local, &known, sizeof known);
    return OC_OK;
}

/* The fields of found (of `known` bytes) that the caller's output struct out holds, by
 * its size; its size field and anything past them are left as they are. */
static inline void oc__output_put(void *out, const void *found, size_t known) {
    size_t size = *(const size_t *)out;
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
