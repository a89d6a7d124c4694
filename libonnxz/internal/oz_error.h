/*
 * internal/oz_error.h - how libonnxz reports errors (the conventions of libonnxcore's
 * internal/error.h, with the oz__ prefix).
 *
 * oz__fail() fills the caller's oc_error where a fault is found and returns the code;
 * callers above only forward the status (OZ_FORWARD), so the first error wins.
 */
#ifndef ONNXZ_INTERNAL_ERROR_H
#define ONNXZ_INTERNAL_ERROR_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <onnxcore/status.h>

#include "internal/error.h" /* libonnxcore's: oc_error_set_rule, oc_error_set_errno_rule */

#if defined(__GNUC__)
#define OZ_PRINTF(f, a) __attribute__((format(printf, f, a)))
#define OZ_UNLIKELY(x)  __builtin_expect(!!(x), 0)
#else
#define OZ_PRINTF(f, a)
#define OZ_UNLIKELY(x) (x)
#endif

/* Fills err (if not NULL) and returns code; the message is kept to one line. This is
 * libonnxcore's oc_error_set: one implementation for both libraries. */
#define oz__fail oc_error_set
/* As oz__fail for a failed system call (oc_error_set_errno: ENOENT gives
 * OC_ERR_NOT_FOUND, EEXIST OC_ERR_EXISTS, ENOMEM OC_ERR_NOMEM, else OC_ERR_IO). */
#define oz__fail_errno oc_error_set_errno
/* The same for a message about a spec rule the input breaks: the rule ("Z-61") is an
 * argument of its own, recorded in err->rule and appended to the message. */
#define oz__fail_rule       oc_error_set_rule
#define oz__fail_errno_rule oc_error_set_errno_rule

/* Records the rule an error's message names in its own words (e.g. "(max_memory, M-2)"),
 * where the message does not end with the rule's usual " (M-2)" tag. */
static inline oc_status oz__error_rule(oc_error *err, const char *rule, oc_status code) {
    if (err) snprintf(err->rule, sizeof err->rule, "%s", rule);
    return code;
}

#define OZ_FORWARD(expr)                                                 \
    do {                                                                 \
        oc_status oz_fwd_status_ = (expr);                               \
        if (OZ_UNLIKELY(oz_fwd_status_ != OC_OK)) return oz_fwd_status_; \
    } while (0)

#define OZ_RETURN_ERROR_IF(cond, err, code, offset, ...)                              \
    do {                                                                              \
        if (OZ_UNLIKELY(cond)) return oz__fail((err), (code), (offset), __VA_ARGS__); \
    } while (0)

#define OZ_RETURN_RULE_IF(cond, err, code, offset, rule, ...)                                      \
    do {                                                                                           \
        if (OZ_UNLIKELY(cond)) return oz__fail_rule((err), (code), (offset), (rule), __VA_ARGS__); \
    } while (0)

/* Names, locations and other strings from an archive go into messages through
 * libonnxcore's oc_quote (onnxcore/status.h), with buffers of OC_QUOTE_SIZE bytes. */

#endif
