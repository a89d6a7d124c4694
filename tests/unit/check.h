/*
 * tests/unit/check.h - the tiny assertion kit of the C tests.
 *
 * CHECK(cond)              the condition holds
 * CHECK_EQ(a, b)           two integers (any width or signedness) are equal
 * CHECK_PTR_EQ(a, b)       two pointers are equal
 * CHECK_MEM_EQ(a, b, n)    n bytes at a and b are equal (prints the first difference)
 * CHECK_STR_EQ(s, cstr)    an oc_str holds exactly the NUL-terminated cstr
 * CHECK_STATUS(expr, code, err)  expr returns code (prints the status names and err)
 * CHECK_RULE(expr, code, err, rule)  ... and err's message cites the spec rule (e.g. "Z-12")
 * CHECK_OK(expr, err)      expr returns OC_OK
 *
 * A failed check prints file:line, the expression and the values, and counts a failure;
 * the test goes on. main ends with `return check_report("name");`, which is nonzero when
 * anything failed. Checks may run on several threads at once: the counts are atomic.
 */
#ifndef ONNXZ_TESTS_CHECK_H
#define ONNXZ_TESTS_CHECK_H

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <onnxcore/onnxcore.h>

static _Atomic int check_failures_;
static _Atomic long check_count_;

static inline int check_fail_(const char *file, int line) {
    check_failures_++;
    fprintf(stderr, "%s:%d: ", file, line);
    return 0;
}

static inline int check_true_(const char *file, int line, int ok, const char *expr) {
    check_count_++;
    if (ok) return 1;
    check_fail_(file, line);
    fprintf(stderr, "CHECK(%s) failed\n", expr);
    return 0;
}

static inline int check_eq_(const char *file, int line, unsigned long long a, unsigned long long b,
                            const char *ea, const char *eb) {
    check_count_++;
    if (a == b) return 1;
    check_fail_(file, line);
    fprintf(stderr, "CHECK_EQ(%s, %s) failed: %lld (0x%llx) != %lld (0x%llx)\n", ea, eb,
            (long long)a, a, (long long)b, b);
    return 0;
}

static inline int check_ptr_eq_(const char *file, int line, const void *a, const void *b,
                                const char *ea, const char *eb) {
    check_count_++;
    if (a == b) return 1;
    check_fail_(file, line);
    fprintf(stderr, "CHECK_PTR_EQ(%s, %s) failed: %p != %p\n", ea, eb, a, b);
    return 0;
}

static inline int check_mem_eq_(const char *file, int line, const void *a, const void *b,
                                unsigned long long n, const char *ea, const char *eb) {
    check_count_++;
    if (n == 0 || (a && b && memcmp(a, b, (size_t)n) == 0)) return 1;
    check_fail_(file, line);
    if (!a || !b) {
        fprintf(stderr, "CHECK_MEM_EQ(%s, %s, %llu) failed: NULL pointer\n", ea, eb, n);
        return 0;
    }
    const unsigned char *pa = a, *pb = b;
    unsigned long long i = 0;
    while (i < n && pa[i] == pb[i]) i++;
    fprintf(stderr,
            "CHECK_MEM_EQ(%s, %s, %llu) failed: first difference at %llu: 0x%02x != 0x%02x\n", ea,
            eb, n, i, pa[i], pb[i]);
    return 0;
}

static inline int check_str_eq_(const char *file, int line, oc_str s, const char *cstr,
                                const char *es) {
    check_count_++;
    if (oc_str_eq(s, cstr)) return 1;
    check_fail_(file, line);
    fprintf(stderr, "CHECK_STR_EQ(%s, \"%s\") failed: got \"%.*s\" (%llu bytes)\n", es, cstr,
            s.data ? (int)(s.size > 200 ? 200 : s.size) : 0, s.data ? s.data : "",
            (unsigned long long)s.size);
    return 0;
}

/* expr returned want, and (when rule is not NULL) err's message cites that rule. */
static inline int check_status_(const char *file, int line, oc_status got, oc_status want,
                                const oc_error *err, const char *rule, const char *expr) {
    check_count_++;
    if (got == want && (!rule || (err && strstr(err->message, rule)))) return 1;
    check_fail_(file, line);
    fprintf(stderr, "%s returned %s (%d), expected %s (%d)%s%s", expr, oc_status_name(got),
            (int)got, oc_status_name(want), (int)want, rule ? " citing " : "", rule ? rule : "");
    if (err)
        fprintf(stderr, "; err: code=%s errno=%d offset=%lld message=\"%s\"",
                oc_status_name(err->code), err->sys_errno,
                err->offset == OC_NO_OFFSET ? -1LL : (long long)err->offset, err->message);
    fputc('\n', stderr);
    return 0;
}

#define CHECK(cond) check_true_(__FILE__, __LINE__, (cond) ? 1 : 0, #cond)
#define CHECK_EQ(a, b) \
    check_eq_(__FILE__, __LINE__, (unsigned long long)(a), (unsigned long long)(b), #a, #b)
#define CHECK_PTR_EQ(a, b) \
    check_ptr_eq_(__FILE__, __LINE__, (const void *)(a), (const void *)(b), #a, #b)
#define CHECK_MEM_EQ(a, b, n) \
    check_mem_eq_(__FILE__, __LINE__, (a), (b), (unsigned long long)(n), #a, #b)
#define CHECK_STR_EQ(s, cstr) check_str_eq_(__FILE__, __LINE__, (s), (cstr), #s)
#define CHECK_STATUS(expr, code, err) \
    check_status_(__FILE__, __LINE__, (expr), (code), (err), NULL, #expr)
#define CHECK_RULE(expr, code, err, rule) \
    check_status_(__FILE__, __LINE__, (expr), (code), (err), (rule), #expr)
#define CHECK_OK(expr, err) CHECK_STATUS(expr, OC_OK, err)

/* Stops the current test function when cond fails (for preconditions without which the
 * rest would only crash). */
#define REQUIRE(cond)             \
    do {                          \
        if (!CHECK(cond)) return; \
    } while (0)

/* Runs one test function and prints how many checks it made and how many failed. */
#define RUN(fn)                                                                 \
    do {                                                                        \
        long before_ = check_count_;                                            \
        int failed_ = check_failures_;                                          \
        fn();                                                                   \
        printf("  %-28s %6ld checks, %d failed\n", #fn, check_count_ - before_, \
               check_failures_ - failed_);                                      \
        fflush(stdout);                                                         \
    } while (0)

static inline int check_report(const char *name) {
    if (check_failures_) {
        fprintf(stderr, "%s: %d of %ld checks FAILED\n", name, check_failures_, check_count_);
        return 1;
    }
    printf("%s: all %ld checks passed\n", name, check_count_);
    return 0;
}

#endif
