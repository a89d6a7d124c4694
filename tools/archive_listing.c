/*
 * tools/archive_listing.c - an archive opened and listed for `onnxz ls` and `info`
 * (archive_listing.h), with their errors printed.
 */
#include "archive_listing.h"

#include <inttypes.h>
#include <string.h>

#include "cli.h"

int archive_listing_open_unlisted(const char *path, int verbosity, archive_listing *out) {
    oc_parse_options opts;
    oc_error err;
    oc_status st;
    double start = cli_now_ms();
    memset(out, 0, sizeof *out);
    oc_error_clear(&err);
    cli_parse_options_init(&opts);
    opts.no_copy = 1;
    opts.skip_external_data = 1;
    st = cli_archive_open(path, &out->archive, &err);
    if (st == OC_OK) st = oz_archive_load_model(out->archive, &opts, &out->model, &err);
    if (st != OC_OK) {
        archive_listing_close(out);
        return cli_fail(path, &err);
    }
    cli_note(verbosity, CLI_VERBOSE, "read %s's directory (%" PRIu64 " entries) in %.1f ms",
             cli_shown(path), oz_zip_reader_count(oz_archive_zip(out->archive)),
             cli_now_ms() - start);
    return CLI_EXIT_OK;
}

int archive_listing_open(const char *path, int verbosity, archive_listing *out) {
    oc_error err;
    int rc = archive_listing_open_unlisted(path, verbosity, out);
    oc_error_clear(&err);
    if (rc == CLI_EXIT_OK &&
        oz_archive_list(out->archive, oc_model_proto(out->model), &out->list, &err) != OC_OK) {
        archive_listing_close(out);
        return cli_fail(path, &err);
    }
    return rc;
}

void archive_listing_close(archive_listing *l) {
    oz_archive_listing_free(l->list);
    oc_model_free(l->model);
    oz_archive_close(l->archive);
    memset(l, 0, sizeof *l);
}
