/*
 * osign.c - a command-line driver over onnxz/sign.h for sign_test.py, in-process:
 *
 *   osign sign MODEL KEY [--pass S] [--sig PATH]     oz_sign
 *   osign verify MODEL TRUST [--sig PATH]             oz_signature_verify
 *   osign encrypted KEY                               oz_sign_key_encrypted: prints yes / no
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

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: osign sign|verify|encrypted ...\n");
        return 2;
    }
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
