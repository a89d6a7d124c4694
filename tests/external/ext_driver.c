/*
 * ext_driver - loads a model with external data and saves it, with the library's options
 * on the command line, for ext_test.py:
 *   ext_driver IN OUT [--no-copy] [--threads N] [--align N] [--data-dir D] [--location L]
 *                     [--verify] [--skip-external]
 *                     [--external-data LOC [--max-file-size N] [--threshold N] [--checksum]]
 * Prints `ok` or `<status name>: <message>` and exits 0 or 1.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnxcore/onnxcore.h"

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: ext_driver IN OUT [options]\n");
        return 2;
    }
    oc_parse_options po = OC_PARSE_OPTIONS_INIT;
    oc_serialize_options so = OC_SERIALIZE_OPTIONS_INIT;
    for (int i = 3; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--no-copy"))
            po.no_copy = 1;
        else if (!strcmp(a, "--verify"))
            po.verify_checksums = 1;
        else if (!strcmp(a, "--skip-external"))
            po.skip_external_data = 1;
        else if (!strcmp(a, "--checksum"))
            so.checksum = 1;
        else if (v && !strcmp(a, "--threads"))
            po.num_threads = atoi(argv[++i]);
        else if (v && !strcmp(a, "--align"))
            po.buffer.alignment = so.buffer.alignment = strtoull(argv[++i], NULL, 10);
        else if (v && !strcmp(a, "--data-dir"))
            po.data_dir = argv[++i];
        else if (v && !strcmp(a, "--location"))
            po.location = argv[++i];
        else if (v && !strcmp(a, "--external-data"))
            so.external_data = argv[++i];
        else if (v && !strcmp(a, "--max-file-size"))
            so.max_external_file_size = strtoull(argv[++i], NULL, 10);
        else if (v && !strcmp(a, "--threshold"))
            so.buffer.raw_data_threshold = strtoull(argv[++i], NULL, 10);
        else {
            fprintf(stderr, "ext_driver: unknown option %s\n", a);
            return 2;
        }
    }
    oc_model *m = NULL;
    oc_error err;
    oc_error_clear(&err);
    oc_status st = oc_model_load_file(argv[1], &po, &m, &err);
    if (st == OC_OK) st = oc_model_save_file(m, argv[2], &so, &err);
    oc_model_free(m);
    if (st != OC_OK) {
        printf("%s: %s\n", oc_status_name(st), err.message);
        return 1;
    }
    printf("ok\n");
    return 0;
}
