/*
 * tools/stub_record.h - what a stub (`onnxz stub`) records of the archive entries its
 * tensors point into, and the check `onnxz verify` makes with it (spec/onnxz.md
 * A-60..A-63).
 *
 * A stub's tensors are classic external data (location = the archive's file name,
 * offset = an entry's data offset, length = its size), which is all a runtime reads.
 * So that a stub cannot go stale silently, the stub also holds, in its metadata_props
 * under STUB_RECORD_KEY, one line per entry it uses: "OFFSET LENGTH CRC32 NAME". Runtimes
 * ignore metadata; ONNX Runtime refuses external_data keys it does not know.
 */
#ifndef ONNXZ_TOOLS_STUB_RECORD_H
#define ONNXZ_TOOLS_STUB_RECORD_H

#include <stdint.h>

#include <onnxcore/onnxcore.h>
#include <onnxz/zip.h>

#define STUB_RECORD_KEY "onnxz.stub"

typedef struct stub_record {
    uint64_t offset; /* the entry's data offset in the archive */
    uint64_t length; /* its size */
    uint32_t crc32;  /* its CRC-32, from the central directory */
    char *name;      /* the entry's name, NUL-terminated, owned */
} stub_record;

/* The records of one stub, in the order they were added. Zero-initialised is empty. */
typedef struct stub_records {
    stub_record *items;
    uint64_t count;
    uint64_t capacity;
} stub_records;

/* Records an entry a tensor points at. OC_OK or OC_ERR_NOMEM. */
oc_status stub_records_add(stub_records *records, const oz_zip_entry *entry);

/* Sets the model's STUB_RECORD_KEY metadata to the records (one line per entry, by
 * offset; replacing any such key the model had). OC_OK or OC_ERR_NOMEM. */
oc_status stub_records_attach(const stub_records *records, oc_model *model);

void stub_records_free(stub_records *records);

/* Checks every EXTERNAL tensor of model whose location is an .onnxz archive (by content)
 * against that archive's entries. model: loaded from path with its references
 * kept (skip_external_data); locations are relative to data_dir, else to path's
 * directory. *checked (may be NULL) receives the number of tensors checked. Returns
 * CLI_EXIT_OK, or CLI_EXIT_FAILURE after printing the first problem, naming the tensor. */
int stub_check(const char *path, const char *data_dir, oc_model *model, uint64_t *checked);

#endif
