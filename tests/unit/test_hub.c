/*
 * test_hub.c - the Hugging Face hub's two units in libonnxcore, each rule with a case it
 * accepts and one it refuses:
 *
 *   hf:// URLs (libonnxcore/src/http/hf.c, spec/remote.md H-1): parsed, decoded, checked
 *     as locations, mapped onto the resolve URL as the hub's own client spells it;
 *   the settings (oc_hf_options_load, H-2): HF_ENDPOINT, HF_TOKEN, the token file and its
 *     places in order, a token that cannot be a header refused without being shown;
 *   the cache's links (libonnxcore/src/io/path_safety.c, spec/external-data.md E-28):
 *     followed while they stay in the repository folder, refused as they leave it.
 *
 * usage: test_hub WORKDIR
 */
#define _GNU_SOURCE /* O_PATH */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <onnxcore/http.h>

#include "check.h"
#include "testdir.h"
#include "internal/hf.h"
#include "internal/path_safety.h"

/* ---- H-1: the URL ---- */

static void parses(const char *url, const char *repo, const char *rev, const char *path,
                   const char *resolve) {
    oc_hf_ref r;
    oc_error err;
    oc_error_clear(&err);
    if (!CHECK_OK(oc__hf_parse(url, &r, &err), &err)) {
        fprintf(stderr, "  %s: %s\n", url, err.message);
        return;
    }
    CHECK(strcmp(r.repo, repo) == 0);
    CHECK(rev ? r.rev && strcmp(r.rev, rev) == 0 : r.rev == NULL);
    CHECK(strcmp(r.path, path) == 0);
    char *u = oc__hf_resolve_url("http://hub.test:8080/", &r, r.rev ? r.rev : "main");
    if (CHECK(u != NULL) && !CHECK(strcmp(u, resolve) == 0)) fprintf(stderr, "  got %s\n", u);
    free(u);
    oc__hf_ref_free(&r);
}

static void refused(const char *url, const char *why) {
    oc_hf_ref r;
    oc_error err;
    oc_error_clear(&err);
    CHECK_STATUS(oc__hf_parse(url, &r, &err), OC_ERR_INVALID_ARG, &err);
    if (!CHECK(strstr(err.message, why) != NULL)) fprintf(stderr, "  %s: %s\n", url, err.message);
    CHECK(r.repo == NULL && r.rev == NULL && r.path == NULL);
}

static void test_urls(void) {
    parses("hf://org/name/model.onnx", "org/name", NULL, "model.onnx",
           "http://hub.test:8080/org/name/resolve/main/model.onnx");
    /* a branch with '/' is written %2F and sent so; a blank in a file name encoded */
    parses("hf://o-1/n.2_x@refs%2Fpr%2F1/sub/my%20m.onnx", "o-1/n.2_x", "refs/pr/1",
           "sub/my m.onnx", "http://hub.test:8080/o-1/n.2_x/resolve/refs%2Fpr%2F1/sub/my%20m.onnx");
    parses("HF://org/name@v1.0/a b+c.onnx", "org/name", "v1.0", "a b+c.onnx",
           "http://hub.test:8080/org/name/resolve/v1.0/a%20b%2Bc.onnx");
    refused("hf://org/name", "no path");
    refused("hf://org", "no repository and path");
    refused("hf://org/name@main", "no path");
    refused("hf://org/name@/m.onnx", "an empty revision");
    refused("hf://o--x/name/m.onnx", "ORG and NAME");
    refused("hf://.org/name/m.onnx", "ORG and NAME");
    refused("hf://tok@org/name/m.onnx", "ORG and NAME");
    refused("hf://org/name/a/../m.onnx", "'.' or '..' component");
    refused("hf://org/name/%2e%2e/x.onnx", "'.' or '..' component"); /* decoded first */
    refused("hf://org/name/a%2F..%2Fx", "'.' or '..' component");
    refused("hf://org/name/a//b.onnx", "an empty component");
    refused("hf://org/name/dir/", "names a directory");
    refused("hf://org/name/m%00.onnx", "%00");
    refused("hf://org/name/m%zz.onnx", "two hex digits");
    refused("hf://org/name/m%4", "two hex digits");
    refused("hf://org/name@b%g1/m.onnx", "two hex digits");
    /* a revision that would read as a step of the resolve URL's path, or is no git name */
    refused("hf://org/name@./m.onnx", "its revision has a '.' or '..' component");
    refused("hf://org/name@../m.onnx", "its revision has a '.' or '..' component");
    refused("hf://org/name@%2e%2e/m.onnx", "its revision has a '.' or '..' component");
    refused("hf://org/name@refs%2F..%2Fx/m.onnx", "its revision has a '.' or '..' component");
    refused("hf://org/name@%2Fmain/m.onnx", "its revision has an empty component");
    refused("hf://org/name@a%2F%2Fb/m.onnx", "its revision has an empty component");
    refused("hf://org/name@main%2F/m.onnx", "its revision ends with '/'");
    refused("hf://org/name@ma%0Ain/m.onnx", "its revision holds a blank or a control byte");
    parses("hf://org/name@v1.0..2/m.onnx", "org/name", "v1.0..2", "m.onnx",
           "http://hub.test:8080/org/name/resolve/v1.0..2/m.onnx");
    CHECK(oc__hf_is_commit("0123456789abcdef0123456789abcdef01234567"));
    CHECK(!oc__hf_is_commit("0123456789ABCDEF0123456789abcdef01234567"));
    CHECK(!oc__hf_is_commit("0123456789abcdef0123456789abcdef0123456"));
    CHECK(!oc__hf_is_commit("main"));
    oc_hf_ref r;
    oc_error err;
    oc_error_clear(&err);
    if (CHECK_OK(oc__hf_parse("hf://org/name/sub/m x.onnx", &r, &err), &err)) {
        char *u = oc__hf_url(&r, "0123456789abcdef0123456789abcdef01234567");
        CHECK(u && strcmp(u, "hf://org/name@0123456789abcdef0123456789abcdef01234567/sub/"
                             "m%20x.onnx") == 0);
        free(u);
        oc__hf_ref_free(&r);
    }
    CHECK(oc_is_url("hf://org/name/m.onnx") && oc_is_url("HF://o/n/m"));
    /* oc_url_scheme_of: the scheme the tool and the package ask for, as oc_is_url tests */
    CHECK(oc_url_scheme_of("hf://o/n/m") == OC_URL_HF &&
          oc_url_scheme_of("Hf://o/n/m") == OC_URL_HF);
    CHECK(oc_url_scheme_of("s3://b/k") == OC_URL_S3 && oc_url_scheme_of("S3://b/k") == OC_URL_S3);
    CHECK(oc_url_scheme_of("https://h/m") == OC_URL_HTTP &&
          oc_url_scheme_of("HTTP://h/m") == OC_URL_HTTP);
    CHECK(oc_url_scheme_of("m.onnx") == OC_URL_NONE && oc_url_scheme_of("s3:/b/k") == OC_URL_NONE &&
          oc_url_scheme_of("./hf://x") == OC_URL_NONE && oc_url_scheme_of(NULL) == OC_URL_NONE &&
          oc_url_scheme_of("") == OC_URL_NONE);
    char shown[128];
    oc_path_shown("hf://hf_secret@org/name/m.onnx: not found", shown, sizeof shown);
    CHECK(strcmp(shown, "hf://org/name/m.onnx: not found") == 0);
}

/* ---- H-2: the settings ---- */

/* A lookup over NAME=VALUE strings. */
static const char *table_get(void *ctx, const char *name) {
    size_t n = strlen(name);
    for (const char *const *e = ctx; *e; e++)
        if (strncmp(*e, name, n) == 0 && (*e)[n] == '=') return *e + n + 1;
    return NULL;
}

static void write_text(const char *path, const char *text) {
    FILE *f = fopen(path, "wb");
    if (!CHECK(f != NULL)) return;
    fputs(text, f);
    fclose(f);
}

/* The token oc_hf_options_load finds in env (NULL: none); "!" when it fails. */
static char *token_of(const char **env, char *msg, size_t cap) {
    oc_hf_options *o = NULL;
    oc_error err;
    oc_error_clear(&err);
    msg[0] = '\0';
    if (oc_hf_options_load(&o, table_get, (void *)env, &err) != OC_OK) {
        snprintf(msg, cap, "%s", err.message);
        CHECK(o == NULL);
        return strdup("!");
    }
    CHECK(o->size == sizeof *o);
    char *t = o->token ? strdup(o->token) : NULL;
    oc_hf_options_free(o);
    return t;
}

static void token_is(const char **env, const char *want) {
    char msg[OC_ERROR_MESSAGE_MAX];
    char *t = token_of(env, msg, sizeof msg);
    if (!CHECK(want ? t && strcmp(t, want) == 0 : t == NULL))
        fprintf(stderr, "  token %s, want %s (%s)\n", t ? t : "(none)", want ? want : "(none)",
                msg);
    free(t);
}

static void test_settings(void) {
    char file[4200], home[4200], hf_home[4200], xdg[4200], path_env[4300], home_env[4300],
        hf_home_env[4300], xdg_env[4300];
    snprintf(file, sizeof file, "%s", td_at("tokfile"));
    snprintf(home, sizeof home, "%s", td_at("home"));
    snprintf(hf_home, sizeof hf_home, "%s", td_at("hfhome"));
    snprintf(xdg, sizeof xdg, "%s", td_at("xdg"));
    CHECK(mkdir(home, 0700) == 0 && mkdir(hf_home, 0700) == 0 && mkdir(xdg, 0700) == 0);
    char p[4400];
    snprintf(p, sizeof p, "%s/.cache", home);
    CHECK(mkdir(p, 0700) == 0);
    snprintf(p, sizeof p, "%s/.cache/huggingface", home);
    CHECK(mkdir(p, 0700) == 0);
    snprintf(p, sizeof p, "%s/.cache/huggingface/token", home);
    write_text(p, "hf_home_default\n");
    snprintf(p, sizeof p, "%s/huggingface", xdg);
    CHECK(mkdir(p, 0700) == 0);
    snprintf(p, sizeof p, "%s/huggingface/token", xdg);
    write_text(p, "hf_xdg");
    snprintf(p, sizeof p, "%s/token", hf_home);
    write_text(p, "  hf_in_hf_home \r\n");
    write_text(file, "hf_in_file\n");
    snprintf(path_env, sizeof path_env, "HF_TOKEN_PATH=%s", file);
    snprintf(home_env, sizeof home_env, "HOME=%s", home);
    snprintf(hf_home_env, sizeof hf_home_env, "HF_HOME=%s", hf_home);
    snprintf(xdg_env, sizeof xdg_env, "XDG_CACHE_HOME=%s", xdg);

    /* each place, and what comes first */
    const char *e1[] = {"HF_TOKEN=hf_env", "HUGGING_FACE_HUB_TOKEN=hf_old", path_env, NULL};
    token_is(e1, "hf_env");
    const char *e2[] = {"HF_TOKEN=", "HUGGING_FACE_HUB_TOKEN=hf_old", path_env, NULL};
    token_is(e2, "hf_old");
    const char *e3[] = {path_env, hf_home_env, xdg_env, home_env, NULL};
    token_is(e3, "hf_in_file");
    const char *e4[] = {hf_home_env, xdg_env, home_env, NULL};
    token_is(e4, "hf_in_hf_home"); /* blanks and the line break stripped */
    const char *e5[] = {xdg_env, home_env, NULL};
    token_is(e5, "hf_xdg");
    const char *e6[] = {home_env, NULL};
    token_is(e6, "hf_home_default");
    const char *e7[] = {NULL};
    token_is(e7, NULL); /* nowhere to look */
    /* a token file that does not exist, or holds nothing: no token, no error */
    const char *e8[] = {"HF_TOKEN_PATH=/nonexistent/onnxz/token", home_env, NULL};
    token_is(e8, NULL);
    write_text(file, " \n");
    token_is(e3, NULL);

    /* a token that cannot be a header's credentials: refused, never shown */
    char msg[OC_ERROR_MESSAGE_MAX];
    const char *bad1[] = {"HF_TOKEN=hf_a\r\nX-Injected: 1", NULL};
    char *t = token_of(bad1, msg, sizeof msg);
    CHECK(strcmp(t, "!") == 0 && strstr(msg, "HF_TOKEN: not a token") && !strstr(msg, "hf_a"));
    free(t);
    write_text(file, "hf_two words\n");
    t = token_of(e3, msg, sizeof msg);
    CHECK(strcmp(t, "!") == 0 && strstr(msg, "not a token") && !strstr(msg, "hf_two"));
    free(t);
    /* one that cannot be read (a directory): an error naming it */
    char dir_env[4300];
    snprintf(dir_env, sizeof dir_env, "HF_TOKEN_PATH=%s", home);
    const char *bad2[] = {dir_env, NULL};
    t = token_of(bad2, msg, sizeof msg);
    CHECK(strcmp(t, "!") == 0 && strstr(msg, home) && strstr(msg, "not a regular file"));
    free(t);
    /* a FIFO there: refused at once (opened without blocking), naming it and why */
    char fifo[4300], fifo_env[4400];
    snprintf(fifo, sizeof fifo, "%s", td_at("fifo"));
    CHECK(mkfifo(fifo, 0600) == 0);
    snprintf(fifo_env, sizeof fifo_env, "HF_TOKEN_PATH=%s", fifo);
    const char *bad3[] = {fifo_env, NULL};
    t = token_of(bad3, msg, sizeof msg);
    if (!CHECK(strcmp(t, "!") == 0 && strstr(msg, fifo) &&
               strstr(msg, "cannot read the hub's token file: not a regular file")))
        fprintf(stderr, "  %s\n", msg);
    free(t);
    /* HF_TOKEN cleaned as the hub's tools clean it: a trailing newline is no error */
    const char *nl[] = {"HF_TOKEN=hf_env\n", NULL};
    token_is(nl, "hf_env");
    const char *blank[] = {"HF_TOKEN= \r\n", path_env, NULL}; /* only blanks: the file's */
    write_text(file, "hf_in_file\n");
    token_is(blank, "hf_in_file");

    /* the endpoint */
    oc_hf_options *o = NULL;
    oc_error err;
    oc_error_clear(&err);
    const char *ep[] = {"HF_ENDPOINT=https://mirror.test/", NULL};
    if (CHECK_OK(oc_hf_options_load(&o, table_get, (void *)ep, &err), &err))
        CHECK(o->endpoint && strcmp(o->endpoint, "https://mirror.test/") == 0);
    oc_hf_options_free(o);
    const char *ep2[] = {"HF_ENDPOINT=ftp://mirror.test", NULL};
    CHECK_STATUS(oc_hf_options_load(&o, table_get, (void *)ep2, &err), OC_ERR_INVALID_ARG, &err);
    CHECK(o == NULL && strstr(err.message, "HF_ENDPOINT"));
    const char *ep3[] = {"HF_ENDPOINT=htps://alice:Pa55word@mirror.test", NULL};
    CHECK_STATUS(oc_hf_options_load(&o, table_get, (void *)ep3, &err), OC_ERR_INVALID_ARG, &err);
    CHECK(o == NULL && !strstr(err.message, "Pa55word") && !strstr(err.message, "alice"));
    const char *none[] = {NULL};
    if (CHECK_OK(oc_hf_options_load(&o, table_get, (void *)none, &err), &err))
        CHECK(o->endpoint == NULL && o->token == NULL);
    oc_hf_options_free(o);
    oc_hf_options_free(NULL);
}

/* ---- E-28: the cache's links ---- */

#define REV "0123456789abcdef0123456789abcdef01234567"

static int opened(int root, const char *prefix, const char *rel, int *e) {
    struct stat st;
    const char *why = NULL;
    int fd = oc__open_in_hub_cache(root, prefix, rel, &st, &why);
    *e = errno;
    if (fd >= 0) close(fd);
    return fd >= 0 ? 1 : why ? -2 : -1;
}

static void test_cache(void) {
    char repo[4300], snap[4400], p[4600], q[4600];
    snprintf(repo, sizeof repo, "%s", td_at("hub"));
    CHECK(mkdir(repo, 0755) == 0);
    snprintf(repo, sizeof repo, "%s", td_at("hub/models--org--name"));
    CHECK(mkdir(repo, 0755) == 0);
    snprintf(p, sizeof p, "%s/blobs", repo);
    CHECK(mkdir(p, 0755) == 0);
    snprintf(p, sizeof p, "%s/snapshots", repo);
    CHECK(mkdir(p, 0755) == 0);
    snprintf(snap, sizeof snap, "%s/snapshots/" REV, repo);
    CHECK(mkdir(snap, 0755) == 0);
    snprintf(p, sizeof p, "%s/sub", snap);
    CHECK(mkdir(p, 0755) == 0);
    snprintf(p, sizeof p, "%s/blobs/aaaa", repo);
    write_text(p, "data");
    write_text(td_at("outside.bin"), "secret");
    struct {
        const char *name, *target;
    } links[] = {
        {"data.bin", "../../blobs/aaaa"},        /* as the hub's tools write it */
        {"sub/deep.bin", "../../../blobs/aaaa"}, /* from a folder of the snapshot */
        {"chain.bin", "data.bin"},               /* a link to a link, inside */
        {"dirlink", "../../blobs"},              /* a folder by a link, inside */
        {"abs.bin", NULL},                       /* absolute, to the right file */
        {"out.bin", "../../../../outside.bin"},  /* out of the repository */
        {"back.bin", "../../../../hub/models--org--name/blobs/aaaa"}, /* out and back */
        {"passwd.bin", "/etc/passwd"},                                /* absolute, anywhere */
        {"loop1", "loop2"},
        {"loop2", "loop1"},
        {"hop.bin", "../../blobs/hop"}, /* inside, then a link out */
        {"dangling.bin", "../../blobs/none"},
    };
    for (size_t i = 0; i < sizeof links / sizeof links[0]; i++) {
        snprintf(p, sizeof p, "%s/%s", snap, links[i].name);
        if (links[i].target)
            snprintf(q, sizeof q, "%s", links[i].target);
        else
            snprintf(q, sizeof q, "%s/blobs/aaaa", repo);
        CHECK(symlink(q, p) == 0);
    }
    snprintf(p, sizeof p, "%s/blobs/hop", repo);
    CHECK(symlink("../../../outside.bin", p) == 0);

    int dirfd = open(snap, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    char prefix[1024];
    int root = oc__hub_cache_root(dirfd, prefix, sizeof prefix);
    if (!CHECK(root >= 0)) return;
    CHECK(strcmp(prefix, "snapshots/" REV "/") == 0);
    struct stat a, b;
    CHECK(fstat(root, &a) == 0 && stat(repo, &b) == 0 && a.st_ino == b.st_ino);
    int e;
    CHECK_EQ(opened(root, prefix, "data.bin", &e), 1);
    CHECK_EQ(opened(root, prefix, "sub/deep.bin", &e), 1);
    CHECK_EQ(opened(root, prefix, "chain.bin", &e), 1);
    CHECK_EQ(opened(root, prefix, "dirlink/aaaa", &e), 1);
    CHECK(opened(root, prefix, "abs.bin", &e) == -1 && e == EXDEV);
    CHECK(opened(root, prefix, "out.bin", &e) == -1 && e == EXDEV);
    CHECK(opened(root, prefix, "back.bin", &e) == -1 && e == EXDEV);
    CHECK(opened(root, prefix, "passwd.bin", &e) == -1 && e == EXDEV);
    CHECK(opened(root, prefix, "loop1", &e) == -1 && e == ELOOP);
    CHECK(opened(root, prefix, "hop.bin", &e) == -1 && e == EXDEV);
    CHECK(opened(root, prefix, "dangling.bin", &e) == -1 && e == ENOENT);
    CHECK(opened(root, prefix, "sub", &e) == -2); /* a directory: E-18's why */
    close(root);
    /* from a folder of the snapshot: the prefix down to it */
    int subfd = openat(dirfd, "sub", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    root = oc__hub_cache_root(subfd, prefix, sizeof prefix);
    CHECK(root >= 0 && strcmp(prefix, "snapshots/" REV "/sub/") == 0);
    if (root >= 0) CHECK_EQ(opened(root, prefix, "deep.bin", &e), 1);
    if (root >= 0) close(root);
    close(subfd);
    close(dirfd);
    /* not a cache's layout: no repository folder */
    dirfd = open(td_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    CHECK(oc__hub_cache_root(dirfd, prefix, sizeof prefix) == -1);
    close(dirfd);
    snprintf(p, sizeof p, "%s/blobs", repo); /* the repository, but no snapshot */
    dirfd = open(p, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    CHECK(oc__hub_cache_root(dirfd, prefix, sizeof prefix) == -1);
    close(dirfd);
}

int main(int argc, char **argv) {
    if (td_start(argc, argv, "hub") != 0) return 2;
    test_urls();
    test_settings();
    test_cache();
    td_remove(td_dir);
    return check_report("test_hub");
}
