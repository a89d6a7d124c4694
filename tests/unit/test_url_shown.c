/*
 * test_url_shown.c - no password of a URL is ever shown (spec/security.md N-2): a property
 * test of oc_path_shown over many generated URLs, alone and inside messages, with
 * passwords as users mistype them ('@', '/', '?', '#', ':', blanks, percent-escapes,
 * several '@'), and of oc__url_ambiguous, which makes the URL source refuse a URL whose
 * password RFC 3986 would cut short.
 *
 * Every byte a generated URL holds is lowercase, a digit or punctuation, except in its
 * password, which holds at least one uppercase letter: an uppercase letter in what is
 * shown is a byte of the password.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <onnxcore/http.h>
#include <onnxcore/onnxcore.h>

#include "internal/url.h"

#include "check.h"

static unsigned long long rng = 0x9e3779b97f4a7c15ull;

static unsigned pick(unsigned n) { /* xorshift64*, reproducible */
    rng ^= rng >> 12;
    rng ^= rng << 25;
    rng ^= rng >> 27;
    return (unsigned)((rng * 2685821657736338717ull) >> 33) % n;
}

static void add(char *buf, size_t *n, const char *s) {
    size_t k = strlen(s);
    memcpy(buf + *n, s, k);
    *n += k;
    buf[*n] = '\0';
}

static void add_from(char *buf, size_t *n, const char *alphabet, unsigned min, unsigned max) {
    unsigned len = min + pick(max - min + 1);
    size_t a = strlen(alphabet);
    for (unsigned i = 0; i < len; i++) {
        char c[2] = {alphabet[pick((unsigned)a)], '\0'};
        add(buf, n, c);
    }
}

/* A password: uppercase letters (at least one), and what breaks a URL's split. */
static void add_password(char *buf, size_t *n) {
    static const char *const parts[] = {"@",   "/",   "?",   "#",  ":", " ", "\t",
                                        "%40", "%2F", "%",   "@@", "a", "7", "//",
                                        " /",  "/ @", "%4A", "]",  "[", "."};
    unsigned count = 1 + pick(6);
    add_from(buf, n, "ABCDEFGHIJKLMNOPQRSTUVWXYZ", 1, 3);
    for (unsigned i = 0; i < count; i++) {
        if (pick(2)) add(buf, n, parts[pick(sizeof parts / sizeof parts[0])]);
        if (pick(2)) add_from(buf, n, "QWXYZ", 1, 2);
    }
}

/* scheme://user:password@host[:port]/path[?query][#fragment] */
static void make_url(char *buf, int with_password) {
    static const char *const schemes[] = {"http://", "https://", "HTTP://", "hTTps://"};
    static const char *const hosts[] = {"host", "127.0.0.1", "[::1]", "[fe80::1%25eth0]",
                                        "models.example.org"};
    size_t n = 0;
    buf[0] = '\0';
    add(buf, &n, schemes[pick(4)]);
    if (with_password) {
        add_from(buf, &n, "alice.b-ob_9", 0, 6); /* the user's name: may be empty */
        if (pick(8) == 0) add(buf, &n, "/x");    /* a name holding a '/' */
        add(buf, &n, ":");
        add_password(buf, &n);
        add(buf, &n, "@");
    }
    add(buf, &n, hosts[pick(5)]);
    if (pick(2)) add(buf, &n, pick(2) ? ":8080" : ":1");
    add(buf, &n, "/");
    add_from(buf, &n, "abc/_-.9", 0, 12);
    if (pick(4) == 0) add(buf, &n, "@v1"); /* an '@' in a path */
    add(buf, &n, pick(2) ? "m.onnxz" : "m.onnx");
    if (pick(3) == 0) add(buf, &n, "?t=1");
    if (pick(4) == 0) add(buf, &n, "#f");
}

static int shows_uppercase(const char *s) {
    for (; *s; s++)
        if (isupper((unsigned char)*s)) return 1;
    return 0;
}

/* scheme:// is shown lowercase only for the property; its case is no secret */
static void lower_scheme(char *s) {
    for (char *p = s; *p && *p != ':'; p++) *p = (char)tolower((unsigned char)*p);
}

/* The URL alone (a path, e.file, File.path, info's "file") and in messages as the
 * libraries and the tool make them. */
static void test_password_never_shown(void) {
    char url[512], text[2048], shown[2048];
    static const char *const messages[] = {"%s",
                                           "%s: http 404",
                                           "cannot open %s: no such file",
                                           "%s is not an archive",
                                           "%s: entry 'w@1' missing",
                                           "%s\nsecond line"};
    int leaks = 0;
    for (int i = 0; i < 200000; i++) {
        make_url(url, 1);
        lower_scheme(url);
        snprintf(text, sizeof text, messages[pick(6)], url);
        oc_path_shown(text, shown, sizeof shown);
        if (shows_uppercase(shown) && leaks++ < 5)
            fprintf(stderr, "shown %s\n   of %s\n", shown, text);

        oc_error err; /* a library message, and the file it names */
        oc_error_clear(&err);
        oc_error_file(&err, url, oc_error_set(&err, OC_ERR_IO, OC_NO_OFFSET, "%s", text));
        if (shows_uppercase(err.message) && leaks++ < 5)
            fprintf(stderr, "message %s\n   of %s\n", err.message, text);
    }
    CHECK_EQ(leaks, 0);
}

/* What may not hold a password is shown whole: a URL with a port, a path, a query, in a
 * message whose text names an entry holding ':' and '@' ("URL: why"). */
static void test_no_password_kept_whole(void) {
    static const char *const kept[] = {
        "http://host/m.onnxz",
        "https://127.0.0.1:8080/dir/m.onnx?t=1#f",
        "http://[::1]/a/b/m.onnxz: entry 'in:0@1' missing",
        "cannot open http://host/m.onnxz: http 404",
        "http://host/m.onnx is not an archive; mail a@b",
        "/models/a:b@c.onnxz",
        /* an s3:// key is its bytes: ':', '@', '?', '#' in it are shown */
        "s3://bucket/dir/a:b@c?d#e.onnxz: no such key",
        "S3://b/k@1",
    };
    for (size_t i = 0; i < sizeof kept / sizeof kept[0]; i++) {
        char shown[512];
        oc_path_shown(kept[i], shown, sizeof shown);
        CHECK(strcmp(shown, kept[i]) == 0);
        if (strcmp(shown, kept[i]) != 0) fprintf(stderr, "  %s -> %s\n", kept[i], shown);
    }
}

/* The cases of the report, and what each is shown as. */
static void test_cases(void) {
    static const char *const cases[][2] = {
        {"http://alice:p w/x@host/m.onnxz", "http://host/m.onnxz"},
        {"http://alice:p w/x@host/m.onnxz: http 404", "http://host/m.onnxz: http 404"},
        {"http://alice:pa/ss@host/m", "http://host/m"},
        {"http://alice:a@b@host/m", "http://host/m"},
        {"http://alice:a b c@host/m", "http://host/m"},
        {"http://al/ice:pw@host/m", "http://host/m"},
        {"http://alice:%40%2F@host/m", "http://host/m"},
        {"http://alice:p#w?x/y z@host:1/m and http://bob:q/r@h/n", "http://h/n"},
        {"a: http://alice:pw@h/m\nb: http://h/n", "a: http://h/m\nb: http://h/n"},
        /* a port may be a password's start ("alice:123/45@h"): its line hidden to its last '@' */
        {"http://h:1/m: entry 'w@1' missing", "http://1' missing"},
        /* "key:secret@" typed before an s3:// bucket (refused, never sent) is not shown */
        {"s3://AKID:se/cr@et@bucket/k: not a bucket name", "s3://bucket/k: not a bucket name"},
        {"s3://AKID:secret@bucket/k: not a bucket name", "s3://bucket/k: not a bucket name"},
        /* after a ':', to the line's last '@', as for http */
        {"read s3://a:b@c/d@e and s3://f/g", "read s3://e and s3://f/g"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char shown[512];
        oc_path_shown(cases[i][0], shown, sizeof shown);
        CHECK(strcmp(shown, cases[i][1]) == 0);
        if (strcmp(shown, cases[i][1]) != 0) fprintf(stderr, "  %s -> %s\n", cases[i][0], shown);
    }
}

/* The source refuses what it cannot split as the user meant; a password percent-encoded
 * (or none) is read. */
static void test_ambiguous(void) {
    CHECK(oc__url_ambiguous("http://alice:p w/x@host/m.onnxz"));
    CHECK(oc__url_ambiguous("http://alice:p@w/x@host/m.onnxz"));
    CHECK(oc__url_ambiguous("http://alice:123/45@host/m.onnxz"));
    CHECK(oc__url_ambiguous("http://127.0.0.1:8080/a@b.onnxz"));
    CHECK(!oc__url_ambiguous("http://alice:a%20b%2Fc%40d@host:1/m.onnxz"));
    CHECK(!oc__url_ambiguous("http://alice:a@b@host/m.onnxz"));
    CHECK(!oc__url_ambiguous("http://host/a@b.onnxz"));
    CHECK(!oc__url_ambiguous("http://127.0.0.1:8080/a%40b.onnxz"));
    CHECK(!oc__url_ambiguous("/local/a:b@c.onnxz"));
    char url[512];
    for (int i = 0; i < 20000; i++) { /* a URL without a password is never refused */
        make_url(url, 0);
        if (strchr(url, '@')) continue; /* '@' in a path beside a port: refused, see above */
        CHECK(!oc__url_ambiguous(url));
    }
}

int main(void) {
    test_cases();
    test_no_password_kept_whole();
    test_ambiguous();
    test_password_never_shown();
    return check_report("test_url_shown");
}
