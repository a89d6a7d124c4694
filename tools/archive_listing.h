/*
 * tools/archive_listing.h - an archive opened and listed (oz_archive_list, onnxz/listing.h)
 * for `onnxz ls` and `info`, with the errors printed the tool's way.
 */
#ifndef ONNXZ_TOOLS_ARCHIVE_LISTING_H
#define ONNXZ_TOOLS_ARCHIVE_LISTING_H

#include <onnxcore/onnxcore.h>
#include <onnxz/archive.h>
#include <onnxz/listing.h>

typedef struct archive_listing {
    oz_archive *archive;
    oc_model *model;          /* decoded without tensor bytes; the names point into it */
    oz_archive_listing *list; /* the entries and totals */
} archive_listing;

/* Opens the archive at path (every ZIP check of oz_archive_open), decodes its model with
 * skip_external_data and lists it into *out. Prints the error and returns
 * CLI_EXIT_FAILURE on failure (*out is then empty and needs no close). */
int archive_listing_open(const char *path, int verbosity, archive_listing *out);
/* The same without the listing (out->list stays NULL), for a caller that lists the
 * archive itself (oz_info_collect). */
int archive_listing_open_unlisted(const char *path, int verbosity, archive_listing *out);
void archive_listing_close(archive_listing *listing);

#endif
