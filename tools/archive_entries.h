/*
 * tools/archive_entries.h - what `onnxz ls`, `info` and `verify` (and the Python package's
 * File.info) know about an .onnxz archive: its entries in central-directory order, and for
 * each the tensors whose `location` names it, gathered before anything is printed.
 * archive_entries.c gathers them and prints nothing (it is compiled into the Python
 * extension too); archive_listing.c opens an archive for the tool's commands and prints
 * their errors.
 */
#ifndef ONNXZ_TOOLS_ARCHIVE_ENTRIES_H
#define ONNXZ_TOOLS_ARCHIVE_ENTRIES_H

#include <stdint.h>

#include <onnxcore/onnxcore.h>
#include <onnxz/archive.h>

/* Offsets are shown with the largest power of two dividing them, up to this. */
#define ARCHIVE_ALIGNMENT_CAP 4096u

typedef struct archive_entry {
    oz_zip_entry zip;    /* the central directory's view; strings belong to the reader */
    int is_model;        /* this is __MODEL_PROTO */
    uint64_t ntensors;   /* tensors whose location names this entry */
    uint64_t first_name; /* their names: listing->names[first_name .. first_name + ntensors) */
} archive_entry;

typedef struct archive_listing {
    oz_archive *archive;
    oc_model *model;        /* decoded without tensor bytes; the names point into it */
    archive_entry *entries; /* central-directory order */
    uint64_t count;
    oc_str *names; /* tensor names grouped by entry, in the model's encoding order */
    uint64_t model_index;
    uint64_t model_file_rank; /* __MODEL_PROTO's position by local header offset (0-based) */

    /* Totals. */
    uint64_t stored_entries, stored_bytes;
    uint64_t deflated_entries, deflated_bytes, deflated_compressed;
    uint64_t tensor_entries; /* entries at least one tensor points at */
    uint64_t deflated_tensor_entries;
    uint64_t min_tensor_alignment; /* of STORED tensor entries whose data offset is known;
                                    * 0 when there are none (a URL's: not read yet, R-10) */
} archive_listing;

/* Fills *out's entries, names and totals from ar and model (its tensors as references,
 * decoded with skip_external_data), which it borrows: out->archive and out->model are left
 * NULL, and the names point into model. On failure *out is empty. */
oc_status archive_entries_scan(const oz_archive *ar, onnx_ModelProto *model,
                               archive_listing *out, oc_error *err);
/* Frees what archive_entries_scan filled in (not archive or model); *l is then empty. */
void archive_entries_free(archive_listing *l);

/* Opens the archive at path (every ZIP check of oz_archive_open), decodes its model with
 * skip_external_data and fills *out. Prints the error and returns CLI_EXIT_FAILURE on
 * failure (*out is then empty and needs no close). */
int archive_listing_open(const char *path, int verbosity, archive_listing *out);
/* The same for an archive open already (ar, from path), and its model when it is loaded
 * already with skip_external_data (model; NULL: decoded here): *out takes both, on
 * failure too. */
int archive_listing_of(const char *path, oz_archive *ar, oc_model *model, archive_listing *out);
void archive_listing_close(archive_listing *listing);

/* The largest power of two dividing offset, capped at ARCHIVE_ALIGNMENT_CAP (0 gives the cap). */
uint64_t archive_offset_alignment(uint64_t offset);

/* "stored", "deflated" or "method N" into buf. */
const char *archive_method_name(uint16_t method, char *buf, size_t size);

#endif
