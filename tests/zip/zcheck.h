/*
 * tests/zip/zcheck.h - the assertion kit of the ZIP tests (the same conventions as
 * tests/unit/check.h: a failed check prints file:line and the values, counts a failure,
 * and the test goes on; main ends with `return zcheck_report("name");`).
 */
#ifndef ONNXZ_TESTS_ZCHECK_H
#define ONNXZ_TESTS_ZCHECK_H

#include <stdio.h>
#include <string.h>

#include <onnxcore/status.h>

static int zc_failures_;
static long zc_count_;

static inline int zc_true_(const char *f, int l, int ok, const char *e) {
    zc_count_++;
    if (ok) return 1;
    zc_failures_++;
    fprintf(stderr, "%s:%d: CHECK(%s) failed\n", f, l, e);
    return 0;
}

static inline int zc_eq_(const char *f, int l, unsigned long long a, unsigned long long b,
                         const char *ea, const char *eb) {
    zc_count_++;
    if (a == b) return 1;
    zc_failures_++;
    fprintf(stderr, "%s:%d: CHECK_EQ(%s, %s) failed: %llu (0x%llx) != %llu (0x%llx)\n", f, l, ea,
            eb, a, a, b, b);
    return 0;
}

/* expr returns code, and (when rule is not NULL) the message cites that rule. */
static inline int zc_status_(const char *f, int l, oc_status got, oc_status want,
                             const oc_error *err, const char *rule, const char *e) {
    zc_count_++;
    int ok = got == want;
    if (ok && rule && err && !strstr(err->message, rule)) ok = 0;
    if (ok) return 1;
    zc_failures_++;
    fprintf(stderr, "%s:%d: %s returned %s (%d), expected %s (%d)%s%s", f, l, e,
            oc_status_name(got), (int)got, oc_status_name(want), (int)want, rule ? " citing " : "",
            rule ? rule : "");
    if (err)
        fprintf(stderr, "; err: offset=%lld message=\"%s\"",
                err->offset == OC_NO_OFFSET ? -1LL : (long long)err->offset, err->message);
    fputc('\n', stderr);
    return 0;
}

#define CHECK(c) zc_true_(__FILE__, __LINE__, (c) ? 1 : 0, #c)
#define CHECK_EQ(a, b) \
    zc_eq_(__FILE__, __LINE__, (unsigned long long)(a), (unsigned long long)(b), #a, #b)
#define CHECK_STATUS(expr, code, err) \
    zc_status_(__FILE__, __LINE__, (expr), (code), (err), NULL, #expr)
#define CHECK_RULE(expr, code, err, rule) \
    zc_status_(__FILE__, __LINE__, (expr), (code), (err), (rule), #expr)
#define CHECK_OK(expr, err) CHECK_STATUS(expr, OC_OK, err)
#define REQUIRE(c)             \
    do {                       \
        if (!CHECK(c)) return; \
    } while (0)

static inline int zcheck_report(const char *name) {
    if (zc_failures_) {
        fprintf(stderr, "%s: %d of %ld checks FAILED\n", name, zc_failures_, zc_count_);
        return 1;
    }
    printf("%s: all %ld checks passed\n", name, zc_count_);
    return 0;
}

#endif
