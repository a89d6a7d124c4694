/*
 * internal/error.h - how library code reports errors, in libonnxcore and libonnxz (which
 * reaches this header through the onnxcore_internal target).
 *
 * oc__fail() fills the caller's oc_error at the place where a fault is found and returns
 * the code; callers above only forward the status (OC_FORWARD), so the first error wins.
 */
#ifndef ONNXCORE_INTERNAL_ERROR_H
#define ONNXCORE_INTERNAL_ERROR_H

#include <stdio.h>

#include "onnxcore_private.h"
#include "onnxcore/status.h"

#if defined(__GNUC__)
#define OC_PRINTF(f, a) __attribute__((format(printf, f, a)))
#define OC_LIKELY(x)    __builtin_expect(!!(x), 1)
#define OC_UNLIKELY(x)  __builtin_expect(!!(x), 0)
#else
#define OC_PRINTF(f, a)
#define OC_LIKELY(x)   (x)
#define OC_UNLIKELY(x) (x)
#endif

/* As oc_error_set for a message about the input breaking a spec rule: rule ("A-21", at
 * most OC_ERROR_RULE_MAX - 1 bytes) goes into err->rule and ends the message as " (A-21)",
 * kept whole when a long message is cut. */
OC_PRIVATE oc_status oc_error_set_rule(oc_error *err, oc_status code, uint64_t offset,
                                       const char *rule, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 5, 6)))
#endif
    ;
/* As oc_error_set_errno with a spec rule (oc_error_set_rule): the message ends
 * " (RULE): strerror(errnum)". */
oc_status oc_error_set_errno_rule(oc_error *err, int errnum, const char *rule, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;

/* Fills err (if not NULL) and returns code (the public oc_error_set). */
#define oc__fail oc_error_set
/* As oc__fail for a failed system call: records errno and appends strerror. */
#define oc__fail_errno oc_error_set_errno
/* The same for a message about a spec rule the input breaks: the rule ("A-21") is an
 * argument of its own, recorded in err->rule and appended to the message. */
#define oc__fail_rule       oc_error_set_rule
#define oc__fail_errno_rule oc_error_set_errno_rule

/* Records the rule an error's message names in its own words (e.g. "(max_memory, M-1)"),
 * where the message does not end with the rule's usual " (M-1)" tag. */
static inline oc_status oc__error_rule(oc_error *err, const char *rule, oc_status code) {
    if (err) snprintf(err->rule, sizeof err->rule, "%s", rule);
    return code;
}

#define OC_FORWARD(expr)                                                 \
    do {                                                                 \
        oc_status oc_fwd_status_ = (expr);                               \
        if (OC_UNLIKELY(oc_fwd_status_ != OC_OK)) return oc_fwd_status_; \
    } while (0)

#define OC_RETURN_ERROR_IF(cond, err, code, offset, ...)                              \
    do {                                                                              \
        if (OC_UNLIKELY(cond)) return oc__fail((err), (code), (offset), __VA_ARGS__); \
    } while (0)

#define OC_RETURN_RULE_IF(cond, err, code, offset, rule, ...)                                      \
    do {                                                                                           \
        if (OC_UNLIKELY(cond)) return oc__fail_rule((err), (code), (offset), (rule), __VA_ARGS__); \
    } while (0)

#endif
