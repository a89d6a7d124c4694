/*
 * onnxcore/options.h - options shared by parsing, serialization and buffer operations.
 *
 * The hierarchy: oc_parse_options and oc_serialize_options both hold an
 * oc_tensor_buffer_options named `buffer` (right after their size field), so any function
 * taking a `const oc_tensor_buffer_options *` accepts `&parse.buffer` or
 * `&serialize.buffer`.
 *
 * Initialise with the *_INIT macros or the *_init functions: the documented defaults are
 * not all zero (raw_data_threshold is 1024 for parsing and for serialization, and 0 is a
 * meaningful threshold). A NULL options pointer always means "the defaults". Every flag
 * (an int read as true or false) defaults to 0 and is named for what setting it does
 * (no_overwrite, no_sync, skip_raw_data), so that a flag reads one way in every struct.
 * Every job that writes a target (a save, a conversion, encryption and decryption, a
 * stub, an unpack into a directory) replaces it by default, as onnx.save does, and
 * refuses an existing one (OC_ERR_EXISTS) with no_overwrite (spec/onnx-wire.md W-30).
 *
 * Extending. Every options struct of both libraries (these, oc_crypt_options,
 * oc_http_options, oz_*_options) and every struct a call fills or reads as a record
 * (oz_open_info, oz_convert_info, oz_stub_info, oz_unpack_info, oz_metadata_info,
 * oz_info_source) begin with `size_t size`, which the *_INIT macro or *_init function sets to sizeof the
 * struct; the macros name their fields (designated initialisers), so the fields keep their
 * meaning when one is added. New fields are only ever appended, and a library reads (or
 * writes) only the fields that lie within the `size` the caller's struct has: a program
 * compiled against an older, shorter struct gets the defaults for the fields it does not
 * know. An appended field starts at or past the struct's sizeof before it, not merely
 * after its last field: the bytes between the two are tail padding, which an older
 * caller passes within its size holding anything, so a field placed there would read
 * garbage. Where alignment would put the new field inside that padding (a uint32_t after
 * a struct of 8-byte alignment that ends 4 bytes short of its sizeof), an explicit
 * padding member that is never read fills it first (oc_http_options.padding_48); test
 * api.options_abi records each struct's sizes and checks that every later field starts
 * at or past them. A struct whose size is 0 (never initialised) or past
 * OC_OPTIONS_MAX_SIZE (limits.h: garbage, refused before another byte is read) is refused
 * with OC_ERR_INVALID_ARG, and so is one whose size is not a multiple of sizeof(size_t)
 * (every version's is: any other ends inside a field, test api.options_cut), and one longer than this library knows (from a program
 * compiled against a later header) that sets anything past the fields it knows, an option
 * it cannot honour; zeros there are accepted (test api.options_abi). Set fields by name
 * after initialising; do not fill these structs positionally. oc_tensor_buffer_options,
 * embedded in both, is fixed: it never grows, and has no size of its own. It sits inside oc_parse_options and
 * oc_serialize_options right after their size, so a field added to it would move every
 * field that follows in both (the break the size field exists to prevent), and the
 * enclosing struct's size already says whether it is there. A new buffer setting is a new
 * field at the end of the enclosing structs (or of a new options struct), never of this
 * one; oc_msg_consolidate_tensors, which takes it alone, reads both its fields always.
 */
#ifndef ONNXCORE_OPTIONS_H
#define ONNXCORE_OPTIONS_H

#include "export.h"

#include <stddef.h>
#include <stdint.h>

#include "bytes.h"
#include "limits.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Fixed layout (it is embedded in other options): it never grows. */
typedef struct oc_tensor_buffer_options {
    uint64_t raw_data_threshold; /* tensors whose raw_data has fewer bytes are left alone */
    uint64_t alignment;          /* 0 = none, else a power of two */
} oc_tensor_buffer_options;

typedef struct oc_parse_options {
    size_t size; /* sizeof(oc_parse_options), set by OC_PARSE_OPTIONS_INIT / _init */
    /* raw_data_threshold (default 1024): with no_copy, raw_data of at least this many
     * bytes is borrowed from the input; smaller raw_data is copied. */
    oc_tensor_buffer_options buffer;
    int no_copy;        /* borrow tensor bytes from the input instead of copying them */
    int num_threads;    /* 0 or 1 = serial, N = N threads, negative = number of cores */
    uint32_t max_depth; /* nesting limit; 0 = OC_DEFAULT_MAX_DEPTH, at most OC_MAX_DEPTH_HARD */
    /* Size caps (limits.h; 0 = the default, no cap): the serialized model, one tensor's
     * payload (raw_data or external data), and all external data of one load. */
    uint64_t max_model_bytes;
    uint64_t max_tensor_bytes;
    uint64_t max_external_bytes;
    int skip_raw_data; /* drop tensor payloads (raw_data) while parsing: graph only */
    int use_pread;     /* file loads: read with pread, not a mapping (network
                        * filesystems); copies every tensor once, ignores no_copy */

    /* External data (spec/external-data.md), for loads from a file, or from memory when
     * data_dir is set. */
    int skip_external_data; /* keep EXTERNAL tensors as references instead of loading */
    const char *data_dir;   /* look for data files here instead of the model's directory */
    const char *location;   /* use this data file instead of the one the tensors name (a
                             * moved file): it stands for the first location found and its
                             * `.N` parts; trusted (it comes from the caller) */
    int verify_checksums;   /* check `checksum` keys (SHA-1); needs OpenSSL */

    /* Copying loads take tensor storage from this pool (bytes.h), so that loading again
     * after the model is freed reuses memory already faulted in. NULL: plain allocation. */
    oc_storage_pool *storage_pool;

    /* The memory budget of a decode (limits.h OC_DEFAULT_MAX_MEMORY; 0 = the default, no
     * cap): bytes of decoded structures (the arena) plus an inflated __MODEL_PROTO. */
    uint64_t max_memory;

    /* Loads from a URL (onnxcore/http.h): its settings; NULL: the defaults. */
    const struct oc_http_options *http;

    /* A tensor whose external data a load reads in says data_location DEFAULT, as
     * onnx.load leaves it (the Python package's load, whose result equals onnx.load's);
     * 0: the field is cleared, the form before the bytes were moved out (E-16). */
    int loaded_location_default;

    uint32_t padding_132; /* never read: the tail padding of the struct before prefetch */
    /* Mapped loads with no_copy (the tensors are spans of the file's mapping): tell the
     * kernel the mapped bytes will be read (MADV_WILLNEED, in 2 MiB pieces: each call
     * reads at most one readahead window), for a first pass over the tensors of a file
     * not in the page cache: a .onnx and its data files whole, an archive's tensor
     * entries. Measured (docs/performance.md, "Prefetch"): a cold 1 GB archive read
     * whole in 0.62-0.74x the time without it. Off by default (the pages a load never
     * touches are read too). Advice only: it never fails a load. Ignored by copying and
     * use_pread loads, which read every byte during the load anyway. */
    int prefetch;
} oc_parse_options;

/* The defaults; every field not named is 0 or NULL. */
#define OC_PARSE_OPTIONS_INIT                                                      \
    {                                                                              \
        .size = sizeof(oc_parse_options), .buffer = {.raw_data_threshold = 1024u } \
    }

/* Receives a save's progress (oc_serialize_options.progress). */
typedef void (*oc_progress_fn)(void *ctx, uint64_t done, uint64_t total);

typedef struct oc_serialize_options {
    size_t size; /* sizeof(oc_serialize_options), set by OC_SERIALIZE_OPTIONS_INIT / _init */
    /* raw_data_threshold (default OC_EXTERNAL_THRESHOLD_DEFAULT, 1024): tensors below it
     * stay inside the model when tensor bytes are written elsewhere (external data,
     * archives); tensors with no raw_data bytes always do (spec/external-data.md E-27). */
    oc_tensor_buffer_options buffer;
    int no_overwrite; /* save to a path: refuse an existing file (OC_ERR_EXISTS); 0 replaces it */

    /* External data: with external_data set, a save to a path writes every tensor whose
     * raw_data has at least buffer.raw_data_threshold bytes to that file (relative to the
     * model's directory; an absolute path is reduced to its file name), each at an offset
     * rounded up to buffer.alignment. */
    const char *external_data;
    uint64_t max_external_file_size; /* > 0: split into LOCATION, LOCATION.1, ... */
    int checksum;                    /* write a `checksum` key (SHA-1) per tensor */

    /* Progress of a save to a path: called as bytes reach the files, with the bytes
     * written so far and the total expected (the model's serialized size with every
     * tensor inside it; headers and padding make the files differ from it slightly, so
     * done is capped at total, and the last call has done == total). NULL: no calls. */
    oc_progress_fn progress;
    void *progress_ctx;

    /* Tensors that are still EXTERNAL references (a model loaded with skip_external_data):
     * with fetch set, a save writes each as if its bytes had been loaded, streaming them
     * from fetch one tensor at a time, so that a converter never holds a model's weights
     * in memory (onnxcore/external.h). NULL: they are written as the references they are. */
    const struct oc_tensor_fetch *fetch;

    /* A save to a path writes a temporary file beside the target and renames it into
     * place (spec W-30), and by default makes the result durable: the file is fsynced
     * before the rename and its directory after. With no_sync set neither is waited
     * for: the rename still makes the save all-or-nothing for readers and for an
     * interrupted process, but after a power loss or an operating-system crash the
     * target may be empty or hold part of its bytes (what onnx.save and most writers
     * give), and a write error only the fsync would report (EIO; ENOSPC on NFS or
     * with quotas) goes unreported. For scratch outputs and pipelines that check their
     * results anyway. Either
     * way a file past 64 MiB has its bytes sent to disk as they are written, from a
     * thread of its own, so that a large save does not pile its bytes up in memory as
     * dirty pages (W-33). In-place edits of an archive (oz_archive_edit_*,
     * onnxz/archive.h) ignore it: their crash safety rests on the order of their
     * fsyncs. */
    int no_sync;
} oc_serialize_options;

/* The default threshold for writing tensors outside the model (spec/external-data.md
 * E-27): ONNX Runtime resolves a graph's shape inputs (Pad's pads, Reshape's shape, Slice,
 * Expand, Tile...) only from bytes inside the model, and 1024 bytes hold any of them up
 * to rank 128; it is also onnx.save's default. */
#define OC_EXTERNAL_THRESHOLD_DEFAULT 1024u
#define OC_SERIALIZE_OPTIONS_INIT                               \
    {                                                           \
        .size = sizeof(oc_serialize_options), .buffer = {       \
            .raw_data_threshold = OC_EXTERNAL_THRESHOLD_DEFAULT \
        }                                                       \
    }

/* Set *opts to the defaults (as the _INIT macros), size included. */
OC_API void oc_parse_options_init(oc_parse_options *opts);
OC_API void oc_serialize_options_init(oc_serialize_options *opts);

#ifdef __cplusplus
}
#endif

#endif
