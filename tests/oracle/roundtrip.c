/*
 * roundtrip - checks that libonnxcore re-encodes every message exactly as protobuf does.
 *
 * Usage: roundtrip [-v] [--files] MANIFEST   (-v: also list passing cases;
 *        --files: the file mode for every type, not only ModelProto)
 *
 * MANIFEST has one case per line: TYPE <TAB> INPUT <TAB> EXPECTED, where TYPE is a name
 * oc_msgdesc_find accepts and EXPECTED holds the bytes Google's protobuf writes after
 * parsing INPUT (relative paths are relative to the manifest's directory). For each case
 * the input is decoded and re-encoded in several ways, each compared with EXPECTED:
 *
 *   copy      oc_decode with default options; oc_encoded_size, oc_encode_to_memory and a
 *             streaming oc_encode must agree; decoding our output and encoding it again
 *             must reproduce it (idempotence)
 *   no_copy   oc_decode borrowing every raw_data (no_copy, raw_data_threshold 0)
 *   owner     as no_copy, the input kept alive by an oc_owner token we drop at once; its
 *             release poisons the input, so a span that failed to take a reference shows
 *   threads   oc_decode with num_threads 2
 *   file      ModelProto: oc_model_load_file (with and without no_copy, and with pread;
 *             external data
 *             not resolved) and oc_model_save_file; with --files also the other types,
 *             through oc_msg_load_file / oc_msg_save_file
 *
 * Prints one line per failure (identical failures of one case in several modes share a
 * line) and a summary; exits 1 on any failure or an empty manifest.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "onnxcore/onnxcore.h"

enum { MAX_FAILURE_LINES = 300 };

typedef struct buffer {
    uint8_t *data;
    uint64_t size;
    uint64_t cap;
} buffer;

typedef struct run {
    const char *case_name; /* the input path as the manifest gives it */
    char *tmpdir;          /* scratch directory for the file mode */
    uint64_t failure_lines;
    bool verbose;
    /* A case's identical failures in several modes are printed once, modes listed. */
    char pending[768];
    char pending_modes[128];
} run;

static void flush_failure(run *r) {
    if (!r->pending[0]) return;
    if (++r->failure_lines <= MAX_FAILURE_LINES)
        printf("FAIL %s [%s]: %s\n", r->case_name, r->pending_modes, r->pending);
    else if (r->failure_lines == MAX_FAILURE_LINES + 1)
        printf("... further failure lines suppressed\n");
    r->pending[0] = r->pending_modes[0] = '\0';
}

/* Records a failure of the current case in one mode. Always returns false. */
static bool fail(run *r, const char *mode, const char *fmt, ...) {
    char msg[sizeof r->pending];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (strcmp(msg, r->pending) != 0) {
        flush_failure(r);
        snprintf(r->pending, sizeof r->pending, "%s", msg);
        snprintf(r->pending_modes, sizeof r->pending_modes, "%s", mode);
    } else {
        size_t used = strlen(r->pending_modes);
        snprintf(r->pending_modes + used, sizeof r->pending_modes - used, ",%s", mode);
    }
    return false;
}

static bool fail_status(run *r, const char *mode, const char *what, oc_status st,
                        const oc_error *err) {
    if (err->offset != OC_NO_OFFSET)
        return fail(r, mode, "%s: %s at offset %" PRIu64 ": %s", what, oc_status_name(st),
                    err->offset, err->message);
    return fail(r, mode, "%s: %s: %s", what, oc_status_name(st), err->message);
}

static bool read_file(const char *path, buffer *out) {
    memset(out, 0, sizeof *out);
    FILE *f = fopen(path, "rb");
    if (!f) return false;
    struct stat st;
    if (fstat(fileno(f), &st) != 0 || st.st_size < 0) {
        fclose(f);
        return false;
    }
    out->size = (uint64_t)st.st_size;
    out->data = malloc(out->size ? (size_t)out->size : 1); /* never NULL for empty files */
    bool ok = out->data && fread(out->data, 1, (size_t)out->size, f) == out->size;
    fclose(f);
    if (!ok) {
        free(out->data);
        out->data = NULL;
    }
    return ok;
}

/* Compares our bytes with the expected ones; on a difference reports where. */
static bool same_bytes(run *r, const char *mode, const uint8_t *got, uint64_t got_size,
                       const uint8_t *want, uint64_t want_size) {
    uint64_t n = got_size < want_size ? got_size : want_size;
    uint64_t at = 0;
    while (at < n && got[at] == want[at]) at++;
    if (at == n && got_size == want_size) return true;
    char ours[3 * 8 + 1] = "", theirs[3 * 8 + 1] = "";
    for (uint64_t i = at; i < at + 8; i++) {
        if (i < got_size) snprintf(ours + 3 * (i - at), 4, " %02x", got[i]);
        if (i < want_size) snprintf(theirs + 3 * (i - at), 4, " %02x", want[i]);
    }
    return fail(r, mode,
                "first difference at offset %" PRIu64 " (ours %" PRIu64 " bytes, protobuf %" PRIu64
                "); ours:%s protobuf:%s",
                at, got_size, want_size, ours[0] ? ours : " <end>", theirs[0] ? theirs : " <end>");
}

static oc_status sink_append(void *ctx, const void *data, uint64_t size, oc_error *err) {
    buffer *b = ctx;
    if (b->size + size > b->cap) {
        uint64_t cap = b->cap ? b->cap : 4096;
        while (cap < b->size + size) cap *= 2;
        uint8_t *grown = realloc(b->data, (size_t)cap);
        if (!grown) {
            err->code = OC_ERR_NOMEM;
            err->sys_errno = 0;
            err->offset = OC_NO_OFFSET;
            snprintf(err->message, sizeof err->message, "test sink out of memory");
            return OC_ERR_NOMEM;
        }
        b->data = grown;
        b->cap = cap;
    }
    if (size) memcpy(b->data + b->size, data, (size_t)size);
    b->size += size;
    return OC_OK;
}

/* Encodes msg three ways (size, memory, sink) and checks they agree with expected. */
static bool encode_and_compare(run *r, const char *mode, const oc_msgdesc *desc, const void *msg,
                               const buffer *expected, void **out, uint64_t *out_size) {
    oc_error err;
    oc_error_clear(&err);
    uint64_t size = 0;
    oc_status st = oc_encoded_size(desc, msg, &size, &err);
    if (st != OC_OK) return fail_status(r, mode, "oc_encoded_size", st, &err);
    st = oc_encode_to_memory(desc, msg, out, out_size, &err);
    if (st != OC_OK) return fail_status(r, mode, "oc_encode_to_memory", st, &err);
    if (*out_size != size)
        return fail(r, mode, "oc_encoded_size says %" PRIu64 " but %" PRIu64 " were written", size,
                    *out_size);
    if (!same_bytes(r, mode, *out, *out_size, expected->data, expected->size)) return false;
    buffer streamed = {0};
    st = oc_encode(desc, msg, sink_append, &streamed, &err);
    bool ok = st == OC_OK ? same_bytes(r, "stream", streamed.data, streamed.size, expected->data,
                                       expected->size)
                          : fail_status(r, mode, "oc_encode", st, &err);
    free(streamed.data);
    return ok;
}

/* Decodes input with opts into a fresh arena and checks the re-encoding. */
static bool check_decode(run *r, const char *mode, const oc_msgdesc *desc, const buffer *input,
                         const buffer *expected, const oc_parse_options *opts, oc_owner *owner,
                         bool idempotence) {
    oc_arena *arena = oc_arena_new();
    void *msg = arena ? oc_msg_new(arena, desc) : NULL;
    if (!msg) {
        oc_arena_free(arena);
        return fail(r, mode, "out of memory");
    }
    oc_error err;
    oc_error_clear(&err);
    oc_status st = oc_decode(desc, msg, input->data, input->size, arena, opts, owner, &err);
    if (owner) oc_owner_unref(owner); /* from here only the decoded spans keep the input alive */
    if (st != OC_OK) {
        oc_arena_free(arena);
        return fail_status(r, mode, "oc_decode", st, &err);
    }
    void *out = NULL;
    uint64_t out_size = 0;
    bool ok = encode_and_compare(r, mode, desc, msg, expected, &out, &out_size);
    oc_arena_free(arena);
    if (ok && idempotence) {
        /* Our own output must decode and re-encode to itself. */
        buffer ours = {out, out_size, out_size};
        ok = check_decode(r, "idempotence", desc, &ours, &ours, NULL, NULL, false);
    }
    free(out);
    return ok;
}

/* The owner mode: the release poisons the input so reading it afterwards shows. */
typedef struct poison_ctx {
    buffer *input;
    int releases;
} poison_ctx;

static void poison_release(void *ctx) {
    poison_ctx *p = ctx;
    if (p->input->size) memset(p->input->data, 0xA5, (size_t)p->input->size);
    p->releases++;
}

static bool check_owner(run *r, const oc_msgdesc *desc, const buffer *input,
                        const buffer *expected) {
    buffer copy = {malloc(input->size ? (size_t)input->size : 1), input->size, input->size};
    if (!copy.data) return fail(r, "owner", "out of memory");
    if (input->size) memcpy(copy.data, input->data, (size_t)input->size);
    poison_ctx pc = {&copy, 0};
    oc_owner *owner = oc_owner_new(poison_release, &pc);
    bool ok = owner != NULL;
    if (!ok) fail(r, "owner", "oc_owner_new failed");
    oc_parse_options opts = OC_PARSE_OPTIONS_INIT;
    opts.no_copy = 1;
    opts.buffer.raw_data_threshold = 0;
    /* check_decode drops our reference after decoding and frees the arena at the end. */
    if (ok) ok = check_decode(r, "owner", desc, &copy, expected, &opts, owner, false);
    if (owner && pc.releases != 1)
        ok = fail(r, "owner", "owner released %d times after the arena was freed", pc.releases);
    free(copy.data);
    return ok;
}

static bool check_saved_file(run *r, const char *mode, const char *path, const buffer *expected) {
    buffer saved;
    if (!read_file(path, &saved))
        return fail(r, mode, "cannot read back %s: %s", path, strerror(errno));
    bool ok = same_bytes(r, mode, saved.data, saved.size, expected->data, expected->size);
    free(saved.data);
    return ok;
}

static bool check_file(run *r, const oc_msgdesc *desc, bool is_model, const char *input_path,
                       const buffer *expected) {
    char out_path[4096];
    snprintf(out_path, sizeof out_path, "%s/out.pb", r->tmpdir);
    bool ok = true;
    /* 0: mapped and copied, 1: mapped, no_copy, 2: read with pread (stream.c) */
    for (int variant = 0; variant <= 2; variant++) {
        const char *mode = variant == 2 ? "file pread" : variant ? "file no_copy" : "file";
        oc_parse_options opts = OC_PARSE_OPTIONS_INIT;
        opts.no_copy = variant == 1;
        opts.use_pread = variant == 2;
        opts.buffer.raw_data_threshold = 0;
        /* A codec round trip: EXTERNAL tensors stay references (tests/external loads them). */
        opts.skip_external_data = 1;
        oc_error err;
        oc_error_clear(&err);
        oc_status st;
        if (is_model) {
            oc_model *model = NULL;
            st = oc_model_load_file(input_path, &opts, &model, &err);
            if (st != OC_OK) {
                ok = fail_status(r, mode, "oc_model_load_file", st, &err);
                continue;
            }
            st = oc_model_save_file(model, out_path, NULL, &err);
            oc_model_free(model);
            if (st != OC_OK) {
                ok = fail_status(r, mode, "oc_model_save_file", st, &err);
                continue;
            }
        } else {
            oc_arena *arena = oc_arena_new();
            void *msg = NULL;
            st = oc_msg_load_file(desc, input_path, arena, &opts, &msg, &err);
            if (st != OC_OK) {
                oc_arena_free(arena);
                ok = fail_status(r, mode, "oc_msg_load_file", st, &err);
                continue;
            }
            st = oc_msg_save_file(desc, msg, out_path, NULL, &err);
            oc_arena_free(arena);
            if (st != OC_OK) {
                ok = fail_status(r, mode, "oc_msg_save_file", st, &err);
                continue;
            }
        }
        if (!check_saved_file(r, mode, out_path, expected)) ok = false;
        remove(out_path);
    }
    return ok;
}

static bool check_case(run *r, const char *type, const char *input_path, const char *expected_path,
                       bool file_mode) {
    const oc_msgdesc *desc = oc_msgdesc_find(type);
    if (!desc) return fail(r, "setup", "oc_msgdesc_find(\"%s\") returned NULL", type);
    buffer input, expected;
    if (!read_file(input_path, &input))
        return fail(r, "setup", "cannot read %s: %s", input_path, strerror(errno));
    if (!read_file(expected_path, &expected)) {
        free(input.data);
        return fail(r, "setup", "cannot read %s: %s", expected_path, strerror(errno));
    }
    bool ok = true;
    if (!check_decode(r, "copy", desc, &input, &expected, NULL, NULL, true)) ok = false;
    oc_parse_options opts = OC_PARSE_OPTIONS_INIT;
    opts.no_copy = 1;
    opts.buffer.raw_data_threshold = 0;
    if (!check_decode(r, "no_copy", desc, &input, &expected, &opts, NULL, false)) ok = false;
    if (!check_owner(r, desc, &input, &expected)) ok = false;
    oc_parse_options threads = OC_PARSE_OPTIONS_INIT;
    threads.num_threads = 2;
    if (!check_decode(r, "threads", desc, &input, &expected, &threads, NULL, false)) ok = false;
    bool is_model = strcmp(type, "ModelProto") == 0;
    if ((is_model || file_mode) && !check_file(r, desc, is_model, input_path, &expected))
        ok = false;
    free(input.data);
    free(expected.data);
    return ok;
}

/* path as given if absolute, else relative to dir. */
static char *resolve(const char *dir, const char *path) {
    if (path[0] == '/') return strdup(path);
    size_t n = strlen(dir) + strlen(path) + 2;
    char *full = malloc(n);
    if (full) snprintf(full, n, "%s/%s", dir, path);
    return full;
}

int main(int argc, char **argv) {
    run r = {0};
    bool file_mode = false;
    int argi = 1;
    for (; argi < argc && argv[argi][0] == '-'; argi++) {
        if (strcmp(argv[argi], "-v") == 0) {
            r.verbose = true;
        } else if (strcmp(argv[argi], "--files") == 0) {
            file_mode = true; /* load/save through files for every type, not only models */
        } else {
            fprintf(stderr, "roundtrip: unknown option %s\n", argv[argi]);
            return 2;
        }
    }
    if (argi + 1 != argc) {
        fprintf(stderr, "usage: roundtrip [-v] [--files] MANIFEST\n");
        return 2;
    }
    const char *manifest = argv[argi];
    FILE *mf = fopen(manifest, "r");
    if (!mf) {
        fprintf(stderr, "roundtrip: cannot open %s: %s\n", manifest, strerror(errno));
        return 1;
    }
    char *dir = strdup(manifest);
    char *slash = dir ? strrchr(dir, '/') : NULL;
    if (!dir) return 1;
    if (slash)
        *slash = '\0';
    else
        strcpy(dir, ".");
    size_t tn = strlen(dir) + sizeof "/roundtrip-XXXXXX";
    r.tmpdir = malloc(tn);
    if (!r.tmpdir) return 1;
    snprintf(r.tmpdir, tn, "%s/roundtrip-XXXXXX", dir);
    if (!mkdtemp(r.tmpdir)) {
        fprintf(stderr, "roundtrip: cannot create %s: %s\n", r.tmpdir, strerror(errno));
        return 1;
    }

    uint64_t passed = 0, failed = 0, lineno = 0;
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    while ((len = getline(&line, &cap, mf)) >= 0) {
        lineno++;
        while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r')) line[--len] = '\0';
        if (len == 0 || line[0] == '#') continue;
        char *type = line;
        char *in = strchr(type, '\t');
        char *exp = in ? strchr(in + 1, '\t') : NULL;
        if (!exp) {
            fprintf(stderr, "roundtrip: %s:%" PRIu64 ": expected 3 tab-separated fields\n",
                    manifest, lineno);
            failed++;
            continue;
        }
        *in++ = '\0';
        *exp++ = '\0';
        char *in_path = resolve(dir, in);
        char *exp_path = resolve(dir, exp);
        r.case_name = in;
        bool ok = in_path && exp_path && check_case(&r, type, in_path, exp_path, file_mode);
        flush_failure(&r);
        if (ok) {
            passed++;
            if (r.verbose) printf("ok   %s\n", in);
        } else {
            failed++;
        }
        free(in_path);
        free(exp_path);
    }
    free(line);
    fclose(mf);
    rmdir(r.tmpdir);
    free(r.tmpdir);
    free(dir);

    printf("%" PRIu64 " passed, %" PRIu64 " failed\n", passed, failed);
    if (passed + failed == 0) {
        printf("roundtrip: %s has no cases: a test that checks nothing fails\n", manifest);
        return 1;
    }
    return failed ? 1 : 0;
}
