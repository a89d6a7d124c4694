/*
 * osign.c - a command-line driver over onnxz/sign.h for sign_test.py, in-process:
 *
 *   osign sign MODEL KEY [--pass S] [--sig PATH]     oz_sign
 *   osign verify MODEL TRUST [--sig PATH]             oz_signature_verify
 *   osign encrypted KEY                               oz_sign_key_encrypted: prints yes / no
 *   osign read MODEL TRUST|- [TENSOR...]              oz_reader_open with trust (-: none), then
 *                                                     oz_reader_read of each TENSOR (a name,
 *                                                     or "slice:NAME" for its first byte by
 *                                                     oz_reader_read_slice): "read NAME N" or
 *                                                     "fail NAME <status>: <message>" a line
 *                                                     (read: with the sum of its 64-bit words,
 *                                                     every byte touched)
 *   osign open MODEL TRUST                            oz_open with trust: "opened"
 *
 * On success the report goes to stdout as one line of key=value pairs (key, fingerprint,
 * parts, bytes, location, digest). Errors go to stderr as "osign: <status> (<code>):
 * <message>" and the exit status is the oc_status number (2 for usage errors).
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include <onnxz/onnxz.h>

static int fail(const oc_error *err) {
    fprintf(stderr, "osign: %s (%d): %s\n", oc_status_name(err->code), (int)err->code,
            err->message);
    return err->code == 2 ? 1 : (int)err->code;
}

/* osign read: each tensor's read, one line each; the exit status the first failure's. */
static int read_cmd(int argc, char **argv) {
    oz_reader_options ro = OZ_READER_OPTIONS_INIT;
    oz_reader *r = NULL;
    oc_error err;
    ro.trust = strcmp(argv[3], "-") == 0 ? NULL : argv[3]; /* "-": no key (a baseline) */
    if (oz_reader_open(argv[2], &ro, &r, NULL, &err) != OC_OK) return fail(&err);
    puts("opened");
    int rc = 0;
    for (int i = 4; i < argc; i++) {
        bool slice = strncmp(argv[i], "slice:", 6) == 0;
        const char *name = slice ? argv[i] + 6 : argv[i];
        const onnx_TensorProto *t = oz_reader_find(r, name, strlen(name));
        oc_bytes b = {0};
        oc_status st;
        if (!t) {
            printf("fail %s no such tensor\n", name);
            rc = rc ? rc : 8;
            continue;
        }
        if (slice) {
            oz_slice *s = NULL;
            oz_slice_range first = {0, 1, 1, false}; /* row 0 of the first dimension */
            st = oz_slice_new(t, &first, 1, &s, &err);
            if (st == OC_OK) st = oz_reader_read_slice(r, s, &b, &err);
            oz_slice_free(s);
        } else {
            st = oz_reader_read(r, t, &b, &err);
        }
        uint64_t sum = 0; /* every byte touched, as a load that uses them would */
        for (uint64_t k = 0; st == OC_OK && k < b.size; k += 8) {
            uint64_t w = 0;
            memcpy(&w, b.data + k, b.size - k < 8 ? (size_t)(b.size - k) : 8);
            sum += w;
        }
        if (st == OC_OK)
            printf("read %s %llu %016llx\n", name, (unsigned long long)b.size,
                   (unsigned long long)sum);
        else
            printf("fail %s %s: %s\n", name, oc_status_name(st), err.message);
        if (st != OC_OK && !rc) rc = (int)st;
        oc_bytes_release(&b);
    }
    oz_reader_close(r);
    return rc;
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: osign sign|verify|encrypted ...\n");
        return 2;
    }
    if (strcmp(argv[1], "read") == 0 && argc >= 4) return read_cmd(argc, argv);
    oz_sign_options o = OZ_SIGN_OPTIONS_INIT;
    for (int i = 4; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--pass") == 0) {
            o.passphrase = argv[i + 1];
            o.passphrase_len = strlen(argv[i + 1]);
        } else if (strcmp(argv[i], "--sig") == 0) {
            o.signature_path = argv[i + 1];
        } else {
            fprintf(stderr, "osign: unknown option %s\n", argv[i]);
            return 2;
        }
    }
    oc_error err;
    oc_error_clear(&err);
    oz_signature_report *r = NULL;
    oc_status st;
    if (strcmp(argv[1], "encrypted") == 0) {
        bool needs = false;
        if (oz_sign_key_encrypted(argv[2], &needs, &err) != OC_OK) return fail(&err);
        puts(needs ? "yes" : "no");
        return 0;
    }
    if (argc < 4) return 2;
    if (strcmp(argv[1], "open") == 0) {
        oz_open_options oo = OZ_OPEN_OPTIONS_INIT;
        oc_model *m = NULL;
        oo.trust = argv[3];
        if (oz_open(argv[2], &oo, &m, NULL, &err) != OC_OK) return fail(&err);
        oc_model_free(m);
        puts("opened");
        return 0;
    }
    if (strcmp(argv[1], "sign") == 0)
        st = oz_sign(argv[2], argv[3], &o, &r, &err);
    else if (strcmp(argv[1], "verify") == 0)
        st = oz_signature_verify(argv[2], argv[3], &o, &r, &err);
    else
        return 2;
    if (st != OC_OK) return fail(&err);
    printf("key=%s fingerprint=%s parts=%" PRIu64 " bytes=%" PRIu64 " in_archive=%d location=%s "
           "digest=%s\n",
           r->key_type, r->key_fingerprint, r->parts, r->bytes, (int)r->in_archive, r->location,
           r->model_digest);
    oz_signature_report_free(r);
    return 0;
}
