/*
 * onnxcore/file.h - mapping files for reading. (Every file onnxz writes is replaced
 * crash-safely, spec W-30; that writer is internal to the libraries.)
 */
#ifndef ONNXCORE_FILE_H
#define ONNXCORE_FILE_H

#include "export.h"

#include <stdint.h>

#include "bytes.h"
#include "codec.h"
#include "status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A whole file, read-only, kept alive by `owner`: the caller holds one reference and drops
 * it with oc_owner_unref; spans that share the mapping take their own. */
typedef struct oc_mapped {
    const uint8_t *data;
    uint64_t size;
    oc_owner *owner;
} oc_mapped;

#ifdef ONNXZ_EXPERIMENTAL /* experimental: docs/api.md */
/* Maps path read-only (or reads it, where mapping is impossible). Not a regular file:
 * OC_ERR_IO; missing: OC_ERR_NOT_FOUND. An empty file gives data NULL, size 0.
 * A mapping of 1 MiB or more also keeps a duplicate of its descriptor (at most 64
 * mappings at once), closed with the mapping, so that bytes copied out of it can be read
 * from the file instead of the pages (spec W-31). A duplicate shares the open file
 * description: locks taken on the caller's descriptor (flock) last until the mapping
 * goes. */
OC_API oc_status oc_map_file(const char *path, oc_mapped *out, oc_error *err);
/* The same for an open descriptor (not closed; name is used in messages). */
OC_API oc_status oc_map_fd(int fd, const char *name, oc_mapped *out, oc_error *err);
#endif

#ifdef __cplusplus
}
#endif

#endif
