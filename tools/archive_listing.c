/*
 * tools/archive_listing.c - an archive opened and listed for `onnxz ls`, `info`, `get` and
 * `verify` (archive_entries.h), with their errors printed.
 */
#include "archive_entries.h"

#include <inttypes.h>
#include <string.h>

#include "cli.h"

int archive_listing_open(const char *path, int verbosity, archive_listing *out) {
    oc_error err;
    oz_archive *ar;
    double start = cli_now_ms();
    oc_error_clear(&err);
    if (cli_archive_open(path, &ar, &err) != OC_OK) {
        memset(out, 0, sizeof *out);
        return cli_fail(path, &err);
    }
    int rc = archive_listing_of(path, ar, NULL, out);
    if (rc == CLI_EXIT_OK)
        cli_note(verbosity, CLI_VERBOSE, "read %s's directory (%" PRIu64 " entries) in %.1f ms",
                 path, out->count, cli_now_ms() - start);
    return rc;
}

int archive_listing_of(const char *path, oz_archive *ar, oc_model *model, archive_listing *out) {
    oc_parse_options opts;
    oc_error err;
    oc_status st = OC_OK;
    oc_error_clear(&err);
    if (!model) {
        cli_parse_options_init(&opts);
        opts.no_copy = 1;
        opts.skip_external_data = 1;
        st = oz_archive_load_model(ar, &opts, &model, &err);
        if (st != OC_OK) model = NULL;
    }
    if (st == OC_OK) st = archive_entries_scan(ar, oc_model_proto(model), out, &err);
    if (st != OC_OK) memset(out, 0, sizeof *out);
    out->archive = ar; /* *out takes both, on failure too */
    out->model = model;
    if (st == OC_OK) return CLI_EXIT_OK;
    archive_listing_close(out);
    return cli_fail(path, &err);
}

void archive_listing_close(archive_listing *l) {
    oc_model *model = l->model;
    oz_archive *ar = l->archive;
    archive_entries_free(l);
    oc_model_free(model);
    oz_archive_close(ar);
}
