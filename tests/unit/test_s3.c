/*
 * test_s3.c - S3 in libonnxcore (internal/s3.h, oc_s3_options_load):
 *   - SigV4 against AWS's published example requests, typed in from their documentation:
 *     the "aws-sig-v4-test-suite" (AKIDEXAMPLE, service "service", 20150830T123600Z) and
 *     the four examples of S3's "Signature Calculations for the Authorization Header"
 *     (AKIAIOSFODNN7EXAMPLE, examplebucket, 20130524T000000Z). The randomized comparison
 *     with the SDK's own signer is tests/remote/s3/sigv4_oracle (node, @smithy/signature-v4).
 *   - s3:// URLs mapped onto AWS and onto an endpoint, path-style and virtual-hosted;
 *   - what a store's XML error says, as a message;
 *   - the settings as AWS's tools find them: the environment, the shared credentials and
 *     config files, profiles, and precedence.
 * Without OpenSSL the signing cases check the refusal instead.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "check.h"
#include "internal/s3.h"
#include "internal/url.h"
#include "internal/url.h"
#include "testdir.h"

static const char *work_dir = "/tmp";

#define SUITE_KEY    "AKIDEXAMPLE"
#define SUITE_SECRET "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"
#define SUITE_DATE   "20150830T123600Z"
#define S3_KEY       "AKIAIOSFODNN7EXAMPLE"
#define S3_SECRET    "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
#define S3_DATE      "20130524T000000Z"
#define S3_HOST      "examplebucket.s3.amazonaws.com"

/* Signs r and checks the whole Authorization header against the expected signed header
 * list and signature. */
static void expect_auth(const char *what, const oc__sigv4_request *r, const char *signed_headers,
                        const char *signature) {
    oc_error err;
    char *auth = NULL;
    oc_status st = oc__sigv4_authorization(r, &auth, &err);
    if (!oc_crypt_available()) { /* a build without OpenSSL refuses to sign */
        CHECK(st == OC_ERR_UNSUPPORTED && strstr(err.message, "OpenSSL") != NULL);
        return;
    }
    CHECK_OK(st, &err);
    char want[512];
    char date[9];
    memcpy(date, r->amz_date, 8);
    date[8] = '\0';
    snprintf(want, sizeof want,
             "AWS4-HMAC-SHA256 Credential=%s/%s/%s/%s/aws4_request, SignedHeaders=%s, "
             "Signature=%s",
             r->access_key_id, date, r->region, r->service, signed_headers, signature);
    if (!CHECK(auth && strcmp(auth, want) == 0))
        fprintf(stderr, "  %s:\n  got  %s\n  want %s\n", what, auth ? auth : "(null)", want);
    free(auth);
}

static oc__sigv4_request suite(const char *method, const char *path, const oc__sigv4_pair *q,
                               size_t nq, const oc__sigv4_pair *h, size_t nh) {
    oc__sigv4_request r = {.method = method,
                           .path = path,
                           .query = q,
                           .nquery = nq,
                           .headers = h,
                           .nheaders = nh,
                           .payload_hash = OC__S3_EMPTY_SHA256,
                           .amz_date = SUITE_DATE,
                           .region = "us-east-1",
                           .service = "service",
                           .access_key_id = SUITE_KEY,
                           .secret_access_key = SUITE_SECRET};
    return r;
}

/* The aws-sig-v4-test-suite cases a GET or an empty POST makes (the request's path given
 * as its bytes, as S3 signs it: encoded once). */
static void test_suite_vectors(void) {
    const oc__sigv4_pair hd[] = {{"Host", "example.amazonaws.com"}, {"X-Amz-Date", SUITE_DATE}};
    oc__sigv4_request r = suite("GET", "/", NULL, 0, hd, 2);
    expect_auth("get-vanilla", &r, "host;x-amz-date",
                "5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31");
    const oc__sigv4_pair q1[] = {{"Param2", "value2"}, {"Param1", "value1"}};
    r = suite("GET", "/", q1, 2, hd, 2);
    expect_auth("get-vanilla-query-order-key-case", &r, "host;x-amz-date",
                "b97d918cfa904a5beff61c982a1b6f458b799221646efd99d3219ec94cdf2500");
    const oc__sigv4_pair q2[] = {{"\xe1\x88\xb4", "bar"}};
    r = suite("GET", "/", q2, 1, hd, 2);
    expect_auth("get-vanilla-utf8-query", &r, "host;x-amz-date",
                "2cdec8eed098649ff3a119c94853b13c643bcf08f8b0a1d91e12c9027818dd04");
    r = suite("GET", "/example space/", NULL, 0, hd, 2);
    expect_auth("get-space-normalized", &r, "host;x-amz-date",
                "652487583200325589f1fba4c7e578f72c47cb61beeca81406b39ddec1366741");
    r = suite("GET", "/\xe1\x88\xb4", NULL, 0, hd, 2);
    expect_auth("get-utf8", &r, "host;x-amz-date",
                "8318018e0b0f223aa2bbf98705b62bb787dc9c0e678f255a891fd03141be5d85");
    const oc__sigv4_pair trim[] = {{"Host", "example.amazonaws.com"},
                                   {"My-Header1", " value1"},
                                   {"My-Header2", " \"a   b   c\""},
                                   {"X-Amz-Date", SUITE_DATE}};
    r = suite("GET", "/", NULL, 0, trim, 4);
    expect_auth("get-header-value-trim", &r, "host;my-header1;my-header2;x-amz-date",
                "acc3ed3afb60bb290fc8d2dd0098b9911fcaa05412b367055dee359757a9c736");
    r = suite("POST", "/", NULL, 0, hd, 2);
    expect_auth("post-vanilla", &r, "host;x-amz-date",
                "5da7c1a2acd57cee7505fc6676e4e544621c30862966e37dddb68e92efbe5d6b");
}

static oc__sigv4_request s3ex(const char *method, const char *path, const oc__sigv4_pair *q,
                              size_t nq, const oc__sigv4_pair *h, size_t nh, const char *payload) {
    oc__sigv4_request r = {.method = method,
                           .path = path,
                           .query = q,
                           .nquery = nq,
                           .headers = h,
                           .nheaders = nh,
                           .payload_hash = payload,
                           .amz_date = S3_DATE,
                           .region = "us-east-1",
                           .service = "s3",
                           .access_key_id = S3_KEY,
                           .secret_access_key = S3_SECRET};
    return r;
}

/* S3's four examples: GET Object with a range, PUT Object (a '$' in the key, a body),
 * GET Bucket Lifecycle (a query key without a value: "lifecycle="), GET Bucket (two
 * query parameters, sorted). */
static void test_s3_examples(void) {
    const oc__sigv4_pair get[] = {{"Host", S3_HOST},
                                  {"Range", "bytes=0-9"},
                                  {"x-amz-content-sha256", OC__S3_EMPTY_SHA256},
                                  {"x-amz-date", S3_DATE}};
    oc__sigv4_request r = s3ex("GET", "/test.txt", NULL, 0, get, 4, OC__S3_EMPTY_SHA256);
    expect_auth("GET Object", &r, "host;range;x-amz-content-sha256;x-amz-date",
                "f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41");
    const char *body = "44ce7dd67c959e0d3524ffac1771dfbba87d2b6b4b4e99e42034a8b803f8b072";
    const oc__sigv4_pair put[] = {{"Host", S3_HOST},
                                  {"Date", "Fri, 24 May 2013 00:00:00 GMT"},
                                  {"x-amz-date", S3_DATE},
                                  {"x-amz-storage-class", "REDUCED_REDUNDANCY"},
                                  {"x-amz-content-sha256", body}};
    r = s3ex("PUT", "/test$file.text", NULL, 0, put, 5, body);
    expect_auth("PUT Object", &r, "date;host;x-amz-content-sha256;x-amz-date;x-amz-storage-class",
                "98ad721746da40c64f1a55b78f14c238d841ea1380cd77a1b5971af0ece108bd");
    const oc__sigv4_pair hd[] = {
        {"Host", S3_HOST}, {"x-amz-content-sha256", OC__S3_EMPTY_SHA256}, {"x-amz-date", S3_DATE}};
    const oc__sigv4_pair lc[] = {{"lifecycle", ""}};
    r = s3ex("GET", "/", lc, 1, hd, 3, OC__S3_EMPTY_SHA256);
    expect_auth("GET Bucket Lifecycle", &r, "host;x-amz-content-sha256;x-amz-date",
                "fea454ca298b7da1c68078a5d1bdbfbbe0d65c699e0f91ac7a200a0136783543");
    const oc__sigv4_pair list[] = {{"prefix", "J"}, {"max-keys", "2"}};
    r = s3ex("GET", "/", list, 2, hd, 3, OC__S3_EMPTY_SHA256);
    expect_auth("GET Bucket", &r, "host;x-amz-content-sha256;x-amz-date",
                "34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7");
}

static void test_encode(void) {
    char out[64];
    const char *in = "a b/c+d~e%f\xc3\xa9*";
    CHECK(strcmp(oc__uri_encode(in, strlen(in), 1, out), "a%20b/c%2Bd~e%25f%C3%A9%2A") == 0);
    CHECK(strcmp(oc__uri_encode(in, strlen(in), 0, out), "a%20b%2Fc%2Bd~e%25f%C3%A9%2A") == 0);
    char d[17];
    oc__s3_amz_date(1369353600, d); /* 2013-05-24 00:00:00 UTC */
    CHECK(strcmp(d, S3_DATE) == 0);
}

static void expect_target(const char *url, const oc_s3_options *o, const char *want_url,
                          const char *want_host, const char *want_path) {
    oc_error err;
    oc__s3_target t;
    if (!CHECK_OK(oc__s3_target_make(url, o, &t, &err), &err)) return;
    if (!CHECK(strcmp(t.url, want_url) == 0 && strcmp(t.host, want_host) == 0 &&
               strcmp(t.path, want_path) == 0))
        fprintf(stderr, "  %s: got %s host %s path %s\n", url, t.url, t.host, t.path);
    oc__s3_target_free(&t);
}

/* A data file's location joined to a model's URL: its empty and "." components left out
 * (the file the path names on disk), an S3 key's other bytes as they are, an http(s) one's
 * encoded (spec/remote.md R-9). */
static void expect_join(const char *dir, const char *rel, const char *want) {
    char *got = oc__url_join(dir, rel, strlen(rel));
    if (!CHECK(got && strcmp(got, want) == 0))
        fprintf(stderr, "  join(%s, %s) = %s, want %s\n", dir, rel, got ? got : "NULL", want);
    free(got);
}

static void test_join(void) {
    expect_join("s3://b/d", "./w.bin", "s3://b/d/w.bin");
    expect_join("s3://b/d", "a/./b//c", "s3://b/d/a/b/c");
    expect_join("s3://b/d", "a b?#", "s3://b/d/a b?#");
    expect_join("https://h/d", "./sub//x y.bin", "https://h/d/sub/x%20y.bin");
    expect_join("hf://o/n@main/d", "././w.bin", "hf://o/n@main/d/w.bin");
}

static void test_targets(void) {
    oc_s3_options o = OC_S3_OPTIONS_INIT;
    /* AWS: virtual-hosted, in the region's endpoint; path-style for a bucket with a '.' */
    expect_target("s3://bucket-1/dir/a b+c.onnx", NULL,
                  "https://bucket-1.s3.us-east-1.amazonaws.com/dir/a%20b%2Bc.onnx",
                  "bucket-1.s3.us-east-1.amazonaws.com", "/dir/a b+c.onnx");
    o.region = "eu-west-1";
    expect_target("s3://my.bucket/k", &o, "https://s3.eu-west-1.amazonaws.com/my.bucket/k",
                  "s3.eu-west-1.amazonaws.com", "/my.bucket/k");
    o.path_style = 1;
    expect_target("s3://bucket/k", &o, "https://s3.eu-west-1.amazonaws.com/bucket/k",
                  "s3.eu-west-1.amazonaws.com", "/bucket/k");
    /* an endpoint: path-style unless asked; its port in the Host header; a prefix kept */
    o.path_style = 0;
    o.endpoint = "http://127.0.0.1:4568/";
    expect_target("s3://b/x/y?z#w", &o, "http://127.0.0.1:4568/b/x/y%3Fz%23w", "127.0.0.1:4568",
                  "/b/x/y?z#w");
    o.endpoint = "https://store.example/s3";
    expect_target("s3://b/k", &o, "https://store.example/s3/b/k", "store.example", "/s3/b/k");
    o.path_style = -1;
    expect_target("s3://bkt/k", &o, "https://bkt.store.example/s3/k", "bkt.store.example", "/s3/k");
    /* refused: no key, no bucket, a bucket that could reach another host, a bad endpoint */
    oc_error err;
    oc__s3_target t;
    static const char *const bad[] = {"s3://b",        "s3://b/",    "s3:///k",
                                      "s3://a@evil/k", "s3://b:1/k", "s3://b?x/k"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        CHECK_STATUS(oc__s3_target_make(bad[i], NULL, &t, &err), OC_ERR_INVALID_ARG, &err);
    o.endpoint = "ftp://h";
    CHECK_STATUS(oc__s3_target_make("s3://b/k", &o, &t, &err), OC_ERR_INVALID_ARG, &err);
    o.endpoint = "http://h/a%20b";
    CHECK_STATUS(oc__s3_target_make("s3://b/k", &o, &t, &err), OC_ERR_INVALID_ARG, &err);
    /* a region goes into AWS's host name and the signature's scope: a name only */
    static const char *const bad_regions[] = {
        "attacker.invalid/", "us-east-1.evil.com", "a/b", "EU-WEST-1", "r\r\nx: y", "r@h", "r%2e"};
    oc_s3_options r = OC_S3_OPTIONS_INIT;
    for (size_t i = 0; i < sizeof bad_regions / sizeof bad_regions[0]; i++) {
        r.region = bad_regions[i];
        CHECK_STATUS(oc__s3_target_make("s3://bkt/k", &r, &t, &err), OC_ERR_INVALID_ARG, &err);
        CHECK(strstr(err.message, "is not a region's name") != NULL);
    }
    r.region = "cn-north-1";
    expect_target("s3://bkt/k", &r, "https://bkt.s3.cn-north-1.amazonaws.com/k",
                  "bkt.s3.cn-north-1.amazonaws.com", "/k");
    /* an endpoint's host: DNS labels, an IPv4 or bracketed IPv6 address, a port's digits */
    static const char *const bad_hosts[] = {
        "http://h%2eevil/", "http://h\\evil", "http://-h",       "http://h-.x",
        "http://h..x",      "http://h:port",  "http://h:123456", "http://[::1",
        "http://h\r\nX: y", "http://[zz::1]", "http://h:",       "http://h.x."};
    for (size_t i = 0; i < sizeof bad_hosts / sizeof bad_hosts[0]; i++) {
        o.endpoint = bad_hosts[i];
        if (!CHECK_STATUS(oc__s3_target_make("s3://b/k", &o, &t, &err), OC_ERR_INVALID_ARG, &err))
            fprintf(stderr, "  endpoint %s accepted\n", bad_hosts[i]);
    }
    o.path_style = 0;
    o.endpoint = "http://[::1]:9000/p";
    expect_target("s3://b/k", &o, "http://[::1]:9000/p/b/k", "[::1]:9000", "/p/b/k");
    o.endpoint = "https://minio-1.store.example:443";
    expect_target("s3://b/k", &o, "https://minio-1.store.example:443/b/k",
                  "minio-1.store.example:443", "/b/k");
}

static void expect_explain(long status, const char *body, const char *region, oc_status code,
                           const char *want) {
    char out[256];
    oc_status st = oc__s3_explain(status, body, strlen(body), region, NULL, 0, out, sizeof out);
    if (!CHECK(st == code && strcmp(out, want) == 0))
        fprintf(stderr, "  got %s (%s), want %s\n", out, oc_status_name(st), want);
}

static void test_explain(void) {
    expect_explain(403,
                   "<?xml version=\"1.0\"?><Error><Code>SignatureDoesNotMatch</Code><Message>The "
                   "request signature we calculated does not match</Message></Error>",
                   "", OC_ERR_IO, "access denied (403 SignatureDoesNotMatch)");
    expect_explain(404, "<Error><Code>NoSuchKey</Code><Message>x</Message></Error>", "",
                   OC_ERR_NOT_FOUND, "no such key");
    expect_explain(404, "", "", OC_ERR_NOT_FOUND, "no such key");
    expect_explain(404, "<Error><Code>NoSuchBucket</Code></Error>", "", OC_ERR_NOT_FOUND,
                   "no such bucket");
    expect_explain(400, "<Error><Code>ExpiredToken</Code></Error>", "", OC_ERR_IO,
                   "the session token has expired (400 ExpiredToken)");
    expect_explain(301, "<Error><Code>PermanentRedirect</Code></Error>", "eu-west-1",
                   OC_ERR_INVALID_ARG,
                   "region mismatch (the bucket is in eu-west-1: set AWS_REGION, or the region "
                   "of the S3 settings)");
    expect_explain(400,
                   "<Error><Code>AuthorizationHeaderMalformed</Code><Region>ap-south-1</Region>"
                   "</Error>",
                   "", OC_ERR_INVALID_ARG,
                   "region mismatch (the bucket is in ap-south-1: set AWS_REGION, or the region "
                   "of the S3 settings)");
    /* the server's text is quoted (spec/security.md N-3): no byte a terminal acts on */
    expect_explain(500, "<Error><Code>Internal\x1b[2J</Code><Message>m\nn</Message></Error>", "",
                   OC_ERR_IO, "HTTP 500 Internal\\x1b[2J: m\\x0an");
    expect_explain(503, "<Error><Code>SlowDown</Code>", "", OC_ERR_IO, "HTTP 503 SlowDown");
    /* what the request carried, echoed by the server: masked wherever it stands, whole or
     * in part (a prefix in Code, a token cut by the body's end), before it is quoted */
    static const char secret[] = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY";
    char token[2100];
    for (size_t i = 0; i < sizeof token - 1; i++) token[i] = "AbCdEfGh0123+/="[(i * 7) % 15];
    token[sizeof token - 1] = '\0';
    static const char auth[] =
        "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20260101/us-east-1/s3/aws4_request, "
        "SignedHeaders=host;range;x-amz-content-sha256;x-amz-date, "
        "Signature=fe5f80f77d5fa3beca038a248ff027d0445342fe2855ddc963176630326f1024";
    const char *secrets[] = {secret, token, NULL, auth};
    char body[8192];
    snprintf(body, sizeof body,
             "<Error><Code>Weird%.20s</Code><Message>tok=%s key=%s sig %s auth=%s</Message>"
             "<Region>%.30s</Region></Error>",
             token, token, secret, auth + strlen(auth) - 64, auth, token + 100);
    char out[1024];
    oc_status st = oc__s3_explain(500, body, strlen(body), "", secrets, 4, out, sizeof out);
    CHECK(st == OC_ERR_IO);
    char piece[16];
    for (size_t i = 0; i + 8 <= strlen(token); i += 4) { /* no 8 bytes of the token */
        memcpy(piece, token + i, 8);
        piece[8] = '\0';
        if (!CHECK(strstr(out, piece) == NULL)) {
            fprintf(stderr, "  token bytes %zu.. shown: %s\n", i, out);
            break;
        }
    }
    if (!CHECK(strstr(out, "HTTP 500 Weird***: tok=*** key=*** sig *** auth=***") == out))
        fprintf(stderr, "  %s\n", out);
    if (!CHECK(strstr(out, "EXAMPLEKEY") == NULL && strstr(out, "fe5f80f7") == NULL))
        fprintf(stderr, "  %s\n", out);
    /* the region header and a body cut inside the token: masked too */
    st = oc__s3_explain(301, "<Error><Code>PermanentRedirect</Code></Error>", 46, token + 5,
                        secrets, 4, out, sizeof out);
    CHECK(st == OC_ERR_INVALID_ARG && strstr(out, "in ***:") != NULL);
    snprintf(body, sizeof body, "<Error><Code>X</Code><Message>t=%.9s", token);
    st = oc__s3_explain(500, body, strlen(body), "", secrets, 4, out, sizeof out);
    if (!CHECK(strcmp(out, "HTTP 500 X") == 0 || strstr(out, token) == NULL))
        fprintf(stderr, "  %s\n", out);
    CHECK(strstr(out, "AbCdEfGh0") == NULL);
}

/* A table of settings, as an environment would give them: "NAME=value" strings. */
static const char *lookup(void *ctx, const char *name) {
    size_t n = strlen(name);
    for (const char *const *e = ctx; *e; e++)
        if (strncmp(*e, name, n) == 0 && (*e)[n] == '=') return *e + n + 1;
    return NULL;
}

static int same(const char *a, const char *b) {
    return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

/* Loads the settings from env and checks the fields (NULL: unset). */
static void expect_load(const char *what, const char *const *env, const char *id,
                        const char *secret, const char *token, const char *region,
                        const char *endpoint) {
    oc_error err;
    oc_s3_options *o = NULL;
    if (!CHECK_OK(oc_s3_options_load(&o, lookup, (void *)env, &err), &err)) return;
    if (!CHECK(o->size == sizeof *o && same(o->access_key_id, id) &&
               same(o->secret_access_key, secret) && same(o->session_token, token) &&
               same(o->region, region) && same(o->endpoint, endpoint) && o->path_style == 0 &&
               o->problem == NULL))
        fprintf(stderr, "  %s: got %s %s %s %s %s\n", what,
                o->access_key_id ? o->access_key_id : "-", o->secret_access_key ? "(secret)" : "-",
                o->session_token ? o->session_token : "-", o->region ? o->region : "-",
                o->endpoint ? o->endpoint : "-");
    oc_s3_options_free(o);
}

static void test_settings(void) {
    char dir[4096], home[4200], aws[4300], cred[4400], conf[4400], other[4400];
    REQUIRE(td_make(work_dir, "s3", dir, sizeof dir) == 0);
    snprintf(home, sizeof home, "%s/home", dir);
    snprintf(aws, sizeof aws, "%s/.aws", home);
    REQUIRE(td_mkdirs(aws) == 0);
    snprintf(cred, sizeof cred, "%s/credentials", aws);
    snprintf(conf, sizeof conf, "%s/config", aws);
    snprintf(other, sizeof other, "%s/other-credentials", dir);
    const char *cred_text = "# comment\n"
                            "[default]\n"
                            "aws_access_key_id = AKIDDEFAULT\n"
                            "aws_secret_access_key=secret/default+1\r\n"
                            "\n"
                            "[dev]\n"
                            "aws_access_key_id = AKIDDEV\n"
                            "aws_secret_access_key = secretdev\n"
                            "aws_session_token = tokendev\n"
                            "[profile dev]\n" /* not a credentials file's section name */
                            "aws_access_key_id = WRONG\n";
    const char *conf_text = "[default]\n"
                            "region = us-west-2\n"
                            "[dev]\n" /* not a config file's section name for dev */
                            "region = wrong-1\n"
                            "[profile dev]\n"
                            "region = eu-central-1\n"
                            "s3 =\n"
                            "  addressing_style = path\n"
                            "endpoint_url = http://127.0.0.1:9000\n"
                            "[profile conf-only]\n"
                            "aws_access_key_id = AKIDCONF\n"
                            "aws_secret_access_key = secretconf\n";
    REQUIRE(td_write(cred, cred_text, strlen(cred_text)) == 0);
    REQUIRE(td_write(conf, conf_text, strlen(conf_text)) == 0);
    const char *other_text = "[default]\naws_access_key_id=AKIDOTHER\naws_secret_access_key=so\n";
    REQUIRE(td_write(other, other_text, strlen(other_text)) == 0);
    char h[4300], c[4500], f[4500];
    snprintf(h, sizeof h, "HOME=%s", home);
    snprintf(c, sizeof c, "AWS_SHARED_CREDENTIALS_FILE=%s", other);
    snprintf(f, sizeof f, "AWS_CONFIG_FILE=%s/nowhere", dir);

    oc_error err;
    const char *none[] = {"HOME=/nonexistent", NULL};
    expect_load("nothing", none, NULL, NULL, NULL, NULL, NULL);
    const char *env_keys[] = {h,
                              "AWS_ACCESS_KEY_ID=AKIDENV",
                              "AWS_SECRET_ACCESS_KEY=secretenv",
                              "AWS_SESSION_TOKEN=tokenenv",
                              "AWS_REGION=ap-south-1",
                              "AWS_DEFAULT_REGION=wrong-2",
                              "AWS_ENDPOINT_URL=http://wrong:1",
                              "AWS_ENDPOINT_URL_S3=http://127.0.0.1:4568",
                              NULL};
    expect_load("environment", env_keys, "AKIDENV", "secretenv", "tokenenv", "ap-south-1",
                "http://127.0.0.1:4568");
    /* a key id without its secret in the environment: the profile's pair instead */
    const char *half[] = {h, "AWS_ACCESS_KEY_ID=AKIDENV", "AWS_DEFAULT_REGION=sa-east-1",
                          "AWS_ENDPOINT_URL=http://h:2", NULL};
    expect_load("half", half, "AKIDDEFAULT", "secret/default+1", NULL, "sa-east-1", "http://h:2");
    const char *dflt[] = {h, NULL};
    expect_load("default profile", dflt, "AKIDDEFAULT", "secret/default+1", NULL, "us-west-2",
                NULL);
    const char *dev[] = {h, "AWS_PROFILE=dev", NULL};
    expect_load("profile dev", dev, "AKIDDEV", "secretdev", "tokendev", "eu-central-1",
                "http://127.0.0.1:9000");
    const char *conf_only[] = {h, "AWS_PROFILE=conf-only", NULL};
    expect_load("credentials in config", conf_only, "AKIDCONF", "secretconf", NULL, NULL, NULL);
    /* a profile named and nowhere: not an error of the load (local files are read), but
     * a problem every s3:// open names; the environment's keys are still taken */
    const char *missing[] = {h, "AWS_PROFILE=nobody", "AWS_REGION=eu-north-1", NULL};
    oc_s3_options *m = NULL;
    if (CHECK_OK(oc_s3_options_load(&m, lookup, (void *)missing, &err), &err)) {
        CHECK(m->access_key_id == NULL && m->problem &&
              strncmp(m->problem, "AWS_PROFILE: no profile 'nobody' in ", 36) == 0 &&
              strstr(m->problem, "/.aws/credentials nor ") && same(m->region, "eu-north-1"));
        oc__s3_target t;
        CHECK_STATUS(oc__s3_target_make("s3://b/k", m, &t, &err), OC_OK, &err);
        oc__s3_target_free(&t);
        oc_s3_options_free(m);
    }
    const char *files[] = {h, c, f, NULL};
    expect_load("files named", files, "AKIDOTHER", "so", NULL, NULL, NULL);
    /* refused: an endpoint that is not a URL (the message names the setting) */
    oc_s3_options *o = NULL;
    const char *bad[] = {"AWS_ENDPOINT_URL_S3=127.0.0.1:9000", NULL};
    CHECK_STATUS(oc_s3_options_load(&o, lookup, (void *)bad, &err), OC_ERR_INVALID_ARG, &err);
    CHECK(strstr(err.message, "AWS_ENDPOINT_URL_S3") != NULL && o == NULL);
    /* files that are not small regular ones: refused at once (a FIFO never blocks), the
     * message naming the file and why, never a secret */
    char fifo[4500], big[4500], setting[4600];
    snprintf(fifo, sizeof fifo, "%s/fifo", dir);
    snprintf(big, sizeof big, "%s/big", dir);
    REQUIRE(mkfifo(fifo, 0600) == 0);
    size_t bign = (1u << 20) + 1;
    char *bigtext = malloc(bign);
    REQUIRE(bigtext != NULL);
    memset(bigtext, '#', bign);
    REQUIRE(td_write(big, bigtext, bign) == 0);
    free(bigtext);
    static const struct {
        const char *name, *file, *why;
        oc_status status;
    } refused[] = {{"AWS_CONFIG_FILE", "%s/.aws", "the AWS config file: not a regular file",
                    OC_ERR_INVALID_ARG},
                   {"AWS_SHARED_CREDENTIALS_FILE", "%s/fifo",
                    "the AWS shared credentials file: not a regular file", OC_ERR_INVALID_ARG},
                   {"AWS_CONFIG_FILE", "%s/fifo", "the AWS config file: not a regular file",
                    OC_ERR_INVALID_ARG},
                   {"AWS_CONFIG_FILE", "%s/big", "the AWS config file: over the 1048576-byte limit",
                    OC_ERR_LIMIT}};
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
        char path[4500], want[4700];
        snprintf(path, sizeof path, refused[i].file,
                 strcmp(refused[i].file, "%s/.aws") == 0 ? home : dir);
        snprintf(setting, sizeof setting, "%s=%s", refused[i].name, path);
        snprintf(want, sizeof want, "%s: cannot read %s", path, refused[i].why);
        const char *env[] = {h, setting, NULL};
        CHECK_STATUS(oc_s3_options_load(&o, lookup, (void *)env, &err), refused[i].status, &err);
        if (!CHECK(o == NULL && strstr(err.message, want) != NULL &&
                   strstr(err.message, "secret") == NULL))
            fprintf(stderr, "  got \"%s\", want \"%s\"\n", err.message, want);
    }
    /* the environment's keys, region and endpoint: no file is opened (the FIFO is not) */
    snprintf(setting, sizeof setting, "AWS_SHARED_CREDENTIALS_FILE=%s", fifo);
    char conf_fifo[4600];
    snprintf(conf_fifo, sizeof conf_fifo, "AWS_CONFIG_FILE=%s", fifo);
    const char *env_all[] = {setting,
                             conf_fifo,
                             "AWS_ACCESS_KEY_ID=AKIDENV",
                             "AWS_SECRET_ACCESS_KEY=secretenv",
                             "AWS_REGION=ap-south-1",
                             "AWS_ENDPOINT_URL=http://h:2",
                             NULL};
    expect_load("keys, region, endpoint from the environment", env_all, "AKIDENV", "secretenv",
                NULL, "ap-south-1", "http://h:2");
    /* an endpoint's user:password@ is not shown */
    const char *pw[] = {"AWS_ENDPOINT_URL_S3=htp://alice:Pa55word@host", NULL};
    CHECK_STATUS(oc_s3_options_load(&o, lookup, (void *)pw, &err), OC_ERR_INVALID_ARG, &err);
    CHECK(strstr(err.message, "Pa55word") == NULL && strstr(err.message, "alice") == NULL);
    CHECK_STATUS(oc_s3_options_load(NULL, lookup, (void *)none, &err), OC_ERR_INVALID_ARG, &err);
    oc_s3_options_free(NULL);
    td_remove(dir);
}

int main(int argc, char **argv) {
    if (argc > 1) work_dir = argv[1];
    test_suite_vectors();
    test_s3_examples();
    test_encode();
    test_join();
    test_targets();
    test_explain();
    test_settings();
    return check_report("test_s3");
}
