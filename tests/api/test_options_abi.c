/*
 * test_options_abi.c - a caller compiled against an older header keeps working.
 *
 * Every options struct begins with its size (onnxcore/options.h, "Extending"). This
 * program plays a caller built against an earlier version of the headers, in which the
 * last fields of today's structs did not exist yet: it declares those older, shorter
 * layouts itself, sets `size` to their sizeof, and passes them to the shared libraries.
 * Beyond the end of each old struct it leaves poison where today's layout has the fields
 * the old caller does not know (a bad pointer, a tiny limit): a library that read past
 * `size` would crash or fail. It checks that the old fields are honoured, that the
 * defaults stand for the missing ones, that the fields after an embedded options struct
 * of another size are found where the caller put them, and that a struct whose size was
 * never set is refused. It also plays a caller built against a later header (a longer
 * struct): zeros past what this library knows are accepted, anything else refused.
 *
 * usage: test_options_abi SCRATCH_DIR
 */
#define _DEFAULT_SOURCE /* MAP_ANONYMOUS */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <onnxz/onnxz.h>

#include "abi_layouts.h"
#include "check.h"
#include "testdir.h"
#include "testmodel.h"

/* ---- the layouts of the "old" header ---- */

/* oc_parse_options before storage_pool and max_memory. */
typedef struct old_parse_options {
    size_t size;
    oc_tensor_buffer_options buffer;
    int no_copy;
    int num_threads;
    uint32_t max_depth;
    uint64_t max_model_bytes;
    uint64_t max_tensor_bytes;
    uint64_t max_external_bytes;
    int skip_raw_data;
    int use_pread;
    int skip_external_data;
    const char *data_dir;
    const char *location;
    int verify_checksums;
} old_parse_options;

/* oc_serialize_options before progress and progress_ctx. */
typedef struct old_serialize_options {
    size_t size;
    oc_tensor_buffer_options buffer;
    int no_overwrite;
    const char *external_data;
    uint64_t max_external_file_size;
    int checksum;
} old_serialize_options;

typedef struct old_archive_options {
    size_t size;
    old_serialize_options serialize;
    int deflate_model;
    int append_only;
} old_archive_options;

/* oz_zip_reader_options before max_memory. */
typedef struct old_zip_reader_options {
    size_t size;
    int use_pread;
    uint64_t max_entries;
    uint32_t max_name_len;
    uint64_t max_central_dir;
    uint64_t max_inflated;
} old_zip_reader_options;

typedef struct old_convert_options {
    size_t size;
    oz_form output;
    old_parse_options load;
    old_archive_options save;
} old_convert_options;

/* The old layouts are prefixes of today's, and shorter: the test means something. */
#define SAME_AT(T, O, f) _Static_assert(offsetof(T, f) == offsetof(O, f), #f " moved")
SAME_AT(oc_parse_options, old_parse_options, verify_checksums);
SAME_AT(oc_serialize_options, old_serialize_options, checksum);
SAME_AT(oz_zip_reader_options, old_zip_reader_options, max_inflated);
_Static_assert(sizeof(old_parse_options) <= offsetof(oc_parse_options, storage_pool), "");
_Static_assert(sizeof(old_serialize_options) <= offsetof(oc_serialize_options, progress), "");
_Static_assert(sizeof(old_zip_reader_options) <= offsetof(oz_zip_reader_options, max_memory), "");
_Static_assert(sizeof(old_serialize_options) < sizeof(oc_serialize_options), "");

/* Room for an old struct followed by poison, aligned as any options struct. */
typedef union slab {
    max_align_t align;
    unsigned char bytes[1024];
} slab;

static void poison_at(slab *s, size_t at, const void *value, size_t n) {
    memcpy(s->bytes + at, value, n);
}

/* ---- a model with one large tensor ---- */

enum {
    TENSOR_BYTES = 256 * 1024
}; /* over OC_STORAGE_POOL_MIN_BLOCK: a copying load
                                     * takes it from opts->storage_pool when one is set */

static char dir[4096], model_path[4200], archive_path[4200], copy_path[4200], convert_path[4200],
    save_path[4200];

static int make_model_file(void) {
    oc_model *model = tm_model_new();
    oc_error err;
    oc_status st = OC_ERR_NOMEM;
    if (model &&
        tm_add_bytes(oc_model_arena(model), oc_model_proto(model)->graph, "W", TENSOR_BYTES, 1))
        st = oc_model_save_file(model, model_path, NULL, &err);
    oc_model_free(model);
    return st == OC_OK;
}

static const onnx_TensorProto *tensor_w(const oc_model *model) {
    const onnx_ModelProto *m = oc_model_proto_const(model);
    if (!m || !m->graph || m->graph->initializer.count != 1) return NULL;
    return m->graph->initializer.items[0];
}

static int tensor_intact(const oc_model *model) {
    const onnx_TensorProto *t = tensor_w(model);
    if (!t || t->raw_data.size != TENSOR_BYTES) return 0;
    for (uint64_t i = 0; i < TENSOR_BYTES; i++)
        if (t->raw_data.data[i] != tm_byte(i, 1)) return 0;
    return 1;
}

/* An old parse struct in s, its unknown fields poisoned: storage_pool a pointer that
 * faults when used, max_memory 1 byte (every decode would fail its budget). */
static old_parse_options *old_parse(slab *s) {
    memset(s->bytes, 0xA5, sizeof s->bytes);
    old_parse_options *o = (old_parse_options *)(void *)s->bytes;
    memset(o, 0, sizeof *o);
    o->size = sizeof *o;
    o->buffer.raw_data_threshold = 1024;
    void *bad = (void *)(uintptr_t)8;
    uint64_t tiny = 1;
    poison_at(s, offsetof(oc_parse_options, storage_pool), &bad, sizeof bad);
    poison_at(s, offsetof(oc_parse_options, max_memory), &tiny, sizeof tiny);
    return o;
}

static void test_parse_old(void) {
    slab s;
    oc_error err;
    oc_model *model = NULL;

    /* A copying load: the missing storage_pool is NULL (plain allocation), the missing
     * max_memory the default budget. */
    old_parse_options *o = old_parse(&s);
    CHECK_OK(oc_model_load_file(model_path, (const oc_parse_options *)(void *)o, &model, &err),
             &err);
    CHECK(model && tensor_intact(model));
    oc_model_free(model);
    model = NULL;

    /* The same through memory, with no_copy, and through oc_decode. */
    oc_mapped map;
    REQUIRE(oc_map_file(model_path, &map, &err) == OC_OK);
    o = old_parse(&s);
    o->no_copy = 1;
    CHECK_OK(
        oc_model_load_memory(map.data, map.size, (const oc_parse_options *)(void *)o, &model, &err),
        &err);
    CHECK(model && tensor_intact(model));
    CHECK(model && tensor_w(model) && oc_bytes_is_borrowed(&tensor_w(model)->raw_data));
    oc_model_free(model);
    model = NULL;
    oc_arena *arena = oc_arena_new();
    REQUIRE(arena);
    void *msg = oc_msg_new(arena, &onnx_ModelProto_desc);
    o = old_parse(&s);
    CHECK_OK(oc_decode(&onnx_ModelProto_desc, msg, map.data, map.size, arena,
                       (const oc_parse_options *)(void *)o, NULL, &err),
             &err);
    oc_arena_free(arena);
    oc_owner_unref(map.owner);

    /* The fields the old caller has are read: skip_raw_data, max_tensor_bytes, use_pread. */
    o = old_parse(&s);
    o->skip_raw_data = 1;
    CHECK_OK(oc_model_load_file(model_path, (const oc_parse_options *)(void *)o, &model, &err),
             &err);
    CHECK(model && tensor_w(model) && tensor_w(model)->raw_data.size == 0);
    oc_model_free(model);
    model = NULL;
    o = old_parse(&s);
    o->max_tensor_bytes = 1000;
    CHECK_STATUS(oc_model_load_file(model_path, (const oc_parse_options *)(void *)o, &model, &err),
                 OC_ERR_LIMIT, &err);
    CHECK(strstr(err.message, "max_tensor_bytes") != NULL);
    o = old_parse(&s);
    o->use_pread = 1;
    CHECK_OK(oc_model_load_file(model_path, (const oc_parse_options *)(void *)o, &model, &err),
             &err);
    CHECK(model && tensor_intact(model));
    oc_model_free(model);
    model = NULL;

    /* Through libonnxz: oz_load_any, oz_archive_load. */
    o = old_parse(&s);
    CHECK_OK(oz_load_any(model_path, (const oc_parse_options *)(void *)o, &model, &err), &err);
    CHECK(model && tensor_intact(model));
    oc_model_free(model);
    model = NULL;
    /* An older, shorter struct to oz_load_any on an encrypted file (review finding: the
     * struct was copied whole and then read as oz_open's, so bytes past the caller's struct
     * became a key): no key was given, so "a key is needed", never a decryption. The file
     * need only carry the magic: nothing is decrypted. */
    char enc_path[4300];
    snprintf(enc_path, sizeof enc_path, "%s.zec", model_path);
    FILE *f = fopen(enc_path, "wb");
    REQUIRE(f != NULL);
    static const char fake[] = "ONNXZEC1 and bytes that are never decrypted";
    REQUIRE(fwrite(fake, 1, sizeof fake, f) == sizeof fake);
    fclose(f);
    o = old_parse(&s);
    CHECK_STATUS(oz_load_any(enc_path, (const oc_parse_options *)(void *)o, &model, &err),
                 OC_ERR_INVALID_ARG, &err);
    CHECK(strstr(err.message, "a key is needed") != NULL);
    CHECK(model == NULL);
    remove(enc_path);
}

static void test_parse_unset_and_newer(void) {
    oc_error err;
    oc_model *model = NULL;
    /* A struct whose size was never set: refused, not misread. */
    oc_parse_options zero;
    memset(&zero, 0, sizeof zero);
    CHECK_STATUS(oc_model_load_file(model_path, &zero, &model, &err), OC_ERR_INVALID_ARG, &err);
    CHECK(strstr(err.message, "size") != NULL);
    CHECK(model == NULL);
    oz_zip_reader_options zz;
    memset(&zz, 0, sizeof zz);
    oz_zip_reader *r = NULL;
    CHECK_STATUS(oz_zip_reader_open(model_path, &zz, &r, &err), OC_ERR_INVALID_ARG, &err);
    CHECK(strstr(err.message, "oz_zip_reader_options") != NULL);

    /* A caller built against a later header (a longer struct): the fields this library
     * knows are read when the later ones are zero (their defaults); one of them set is an
     * option this library cannot honour, refused. */
    slab s;
    memset(s.bytes, 0, sizeof s.bytes);
    oc_parse_options *o = (oc_parse_options *)(void *)s.bytes;
    oc_parse_options_init(o);
    o->size = sizeof *o + 16;
    o->skip_raw_data = 1;
    CHECK_OK(oc_model_load_file(model_path, o, &model, &err), &err);
    CHECK(model && tensor_w(model) && tensor_w(model)->raw_data.size == 0);
    oc_model_free(model);
    model = NULL;
    s.bytes[sizeof *o + 15] = 1;
    CHECK_STATUS(oc_model_load_file(model_path, o, &model, &err), OC_ERR_INVALID_ARG, &err);
    CHECK(strstr(err.message, "later version") != NULL);
    CHECK(model == NULL);
    /* The same inside another struct: a later oz_open_options.parse. */
    memset(s.bytes, 0, sizeof s.bytes);
    oz_open_options *oo = (oz_open_options *)(void *)s.bytes;
    oz_open_options_init(oo);
    oo->parse.size = sizeof oo->parse + 8; /* (later fields of open would follow it) */
    oo->size = sizeof *oo + 8;
    CHECK_OK(oz_open(model_path, oo, &model, NULL, &err), &err);
    oc_model_free(model);
    model = NULL;
    s.bytes[offsetof(oz_open_options, parse) + sizeof oo->parse + 4] = 1;
    CHECK_STATUS(oz_open(model_path, oo, &model, NULL, &err), OC_ERR_INVALID_ARG, &err);
    CHECK(strstr(err.message, "oz_open_options.parse") != NULL);
}

/* An old serialize struct at `at` of s, with the fields it lacks poisoned: progress a
 * function pointer that faults when called. */
static old_serialize_options *old_serialize_at(slab *s, size_t at) {
    old_serialize_options *o = (old_serialize_options *)(void *)(s->bytes + at);
    memset(o, 0, sizeof *o);
    o->size = sizeof *o;
    o->buffer.raw_data_threshold = OC_EXTERNAL_THRESHOLD_DEFAULT;
    return o;
}

static void test_serialize_old(void) {
    slab s;
    oc_error err;
    oc_model *model = NULL;
    REQUIRE(oc_model_load_file(model_path, NULL, &model, &err) == OC_OK);
    memset(s.bytes, 0xA5, sizeof s.bytes);
    old_serialize_options *o = old_serialize_at(&s, 0);
    void *bad = (void *)(uintptr_t)8;
    poison_at(&s, offsetof(oc_serialize_options, progress), &bad, sizeof bad);
    CHECK_OK(oc_model_save_file(model, copy_path, (const oc_serialize_options *)(void *)o, &err),
             &err);
    /* no_overwrite, an old field, is read: it refuses the existing file. */
    o->no_overwrite = 1;
    CHECK_STATUS(
        oc_model_save_file(model, copy_path, (const oc_serialize_options *)(void *)o, &err),
        OC_ERR_EXISTS, &err);
    oc_model_free(model);
    model = NULL;
    CHECK_OK(oc_model_load_file(copy_path, NULL, &model, &err), &err);
    CHECK(model && tensor_intact(model));
    oc_model_free(model);
}

/* The method of the archive's __MODEL_PROTO, read with an old reader struct whose unknown
 * max_memory is poisoned to 1 byte (the reader's tables alone are more). */
static int model_entry_method(const char *path) {
    slab s;
    memset(s.bytes, 0xA5, sizeof s.bytes);
    old_zip_reader_options *zo = (old_zip_reader_options *)(void *)s.bytes;
    memset(zo, 0, sizeof *zo);
    zo->size = sizeof *zo;
    uint64_t tiny = 1;
    poison_at(&s, offsetof(oz_zip_reader_options, max_memory), &tiny, sizeof tiny);
    oz_zip_reader *r = NULL;
    oc_error err;
    oc_status st = oz_zip_reader_open(path, (const oz_zip_reader_options *)(void *)zo, &r, &err);
    CHECK_OK(st, &err);
    if (st != OC_OK) return -1;
    uint64_t index;
    oz_zip_entry e;
    int method = -1;
    if (oz_zip_reader_find(r, OZ_MODEL_ENTRY, &index, &err) == OC_OK &&
        oz_zip_reader_entry(r, index, &e, &err) == OC_OK)
        method = e.method;
    oz_zip_reader_close(r);
    return method;
}

/* An old archive struct: its serialize is 16 bytes shorter than today's, so deflate_model
 * and append_only sit where today's layout has serialize.progress; a library reading at
 * its own offsets would call them as a function, and find deflate_model 0. */
static old_archive_options *old_archive_at(slab *s, size_t at) {
    old_archive_options *o = (old_archive_options *)(void *)(s->bytes + at);
    memset(o, 0, sizeof *o);
    o->size = sizeof *o;
    old_serialize_at(s, at + offsetof(old_archive_options, serialize));
    memset(s->bytes + at + sizeof *o, 0, sizeof(oz_archive_options) - sizeof *o);
    return o;
}

static void test_archive_old(void) {
    slab s;
    oc_error err;
    oc_model *model = NULL;
    REQUIRE(oc_model_load_file(model_path, NULL, &model, &err) == OC_OK);
    for (int deflate = 0; deflate <= 1; deflate++) {
        memset(s.bytes, 0xA5, sizeof s.bytes);
        old_archive_options *o = old_archive_at(&s, 0);
        o->deflate_model = deflate;
        CHECK_OK(oz_archive_save(model, archive_path, (const oz_archive_options *)(void *)o, &err),
                 &err);
        CHECK_EQ(model_entry_method(archive_path), deflate ? OZ_ZIP_DEFLATED : OZ_ZIP_STORED);
    }
    oc_model_free(model);
    model = NULL;
    slab p;
    old_parse_options *po = old_parse(&p);
    CHECK_OK(oz_archive_load(archive_path, (const oc_parse_options *)(void *)po, &model, &err),
             &err);
    CHECK(model && tensor_intact(model));
    oc_model_free(model);
}

/* oz_convert_options of the old header: an old load and an old save (with an old
 * serialize) inside, each shifting everything after it. */
static void test_convert_old(void) {
    slab s;
    oc_error err;
    memset(s.bytes, 0xA5, sizeof s.bytes);
    old_convert_options *o = (old_convert_options *)(void *)s.bytes;
    memset(o, 0, sizeof *o);
    o->size = sizeof *o;
    o->output = OZ_FORM_AUTO;
    o->load.size = sizeof o->load;
    o->load.buffer.raw_data_threshold = 1024;
    old_archive_at(&s, offsetof(old_convert_options, save));
    o->save.deflate_model = 1;
    CHECK_OK(oz_convert(model_path, convert_path, (const oz_convert_options *)(void *)o, &err),
             &err);
    CHECK_EQ(model_entry_method(convert_path), OZ_ZIP_DEFLATED);
    oc_model *model = NULL;
    CHECK_OK(oz_load_any(convert_path, NULL, &model, &err), &err);
    CHECK(model && tensor_intact(model));
    oc_model_free(model);
    /* An old load field is read: max_tensor_bytes. */
    o->load.max_tensor_bytes = 1000;
    CHECK_STATUS(oz_convert(model_path, convert_path, (const oz_convert_options *)(void *)o, &err),
                 OC_ERR_LIMIT, &err);
}

/* ---- oc_crypt_options ---- */

/* Before no_overwrite. */
typedef struct old_crypt_options {
    size_t size;
    oc_crypt_format format;
    uint32_t iterations;
    uint32_t chunk_size;
    uint32_t max_iterations;
} old_crypt_options;
SAME_AT(oc_crypt_options, old_crypt_options, max_iterations);
_Static_assert(sizeof(old_crypt_options) <= offsetof(oc_crypt_options, no_overwrite), "");

/* An old struct asks for a fast ONNXZEC1 key; no_overwrite past its end is poisoned to 1,
 * so a library that read it would refuse to replace the file the second time. */
static void test_crypt_old(void) {
    oc_error err;
    char enc_path[4300];
    snprintf(enc_path, sizeof enc_path, "%s/m.zec1", dir);
    slab s;
    memset(s.bytes, 0xA5, sizeof s.bytes);
    old_crypt_options *o = (old_crypt_options *)(void *)s.bytes;
    o->size = sizeof *o;
    o->format = OC_CRYPT_ONNXZEC1;
    o->iterations = 1;
    o->chunk_size = 4096;
    o->max_iterations = 0;
    int yes = 1;
    poison_at(&s, offsetof(oc_crypt_options, no_overwrite), &yes, sizeof yes);
    const oc_crypt_options *co = (const oc_crypt_options *)(void *)o;
    static const char key[] = "abi";
    if (oc_crypt_available()) {
        for (int round = 0; round < 2; round++)
            CHECK_OK(oc_crypt_encrypt_file(model_path, enc_path, key, 3, co, &err), &err);
        oc_model *model = NULL;
        CHECK_OK(oc_crypt_load_model_file(enc_path, key, 3, co, NULL, &model, &err), &err);
        CHECK(model != NULL && tensor_intact(model));
        oc_model_free(model);
        /* The old fields are honoured: a header asking for 2 iterations is over a
         * max_iterations of 1. */
        void *enc = NULL;
        uint64_t n = 0;
        o->iterations = 2;
        CHECK_OK(oc_crypt_encrypt_memory("abc", 3, key, 3, co, &enc, &n, &err), &err);
        o->max_iterations = 1;
        oc_bytes plain = {0};
        CHECK_STATUS(oc_crypt_decrypt_memory(enc, n, key, 3, co, &plain, &err), OC_ERR_LIMIT, &err);
        oc_bytes_release(&plain);
        free(enc);
    }
    /* Today's initialisers, and a struct never initialised, refused before any work. */
    oc_crypt_options now = OC_CRYPT_OPTIONS_INIT, fn;
    oc_crypt_options_init(&fn);
    CHECK(now.size == sizeof now && fn.size == sizeof fn && now.format == fn.format &&
          fn.format == OC_CRYPT_NONE && !fn.iterations && !fn.chunk_size && !fn.max_iterations &&
          !fn.no_overwrite);
    memset(s.bytes, 0, sizeof s.bytes);
    void *out = NULL;
    uint64_t n = 0;
    CHECK_STATUS(oc_crypt_encrypt_memory("x", 1, key, 3, co, &out, &n, &err), OC_ERR_INVALID_ARG,
                 &err);
    CHECK(out == NULL);
}

/* ---- an output struct: oz_open_info ---- */

/* An info of an older header that knew only the kind; one older still, only the size. */
typedef struct old_open_info {
    size_t size;
    oz_kind kind;
} old_open_info;
typedef struct oldest_open_info {
    size_t size;
} oldest_open_info;
SAME_AT(oz_open_info, old_open_info, kind);

/* oz_open writes no byte past the caller's size: the rest of s still holds 0xA5. */
static int poison_intact(const slab *s, size_t from) {
    for (size_t i = from; i < sizeof s->bytes; i++)
        if (s->bytes[i] != 0xA5) return 0;
    return 1;
}

static void test_open_info_old(void) {
    oc_error err;
    oc_model *model = NULL;
    slab s;
    /* The kind only (is_archive, if it fits, lands in the old struct's own padding). */
    memset(s.bytes, 0xA5, sizeof s.bytes);
    old_open_info *o = (old_open_info *)(void *)s.bytes;
    o->size = sizeof *o;
    o->kind = OZ_KIND_EMPTY;
    CHECK_OK(oz_open(archive_path, NULL, &model, (oz_open_info *)(void *)o, &err), &err);
    CHECK(o->kind == OZ_KIND_ZIP);
    CHECK(poison_intact(&s, sizeof *o));
    oc_model_free(model);
    model = NULL;
    /* The size only: nothing else is written, and the open still succeeds. */
    memset(s.bytes, 0xA5, sizeof s.bytes);
    oldest_open_info *n = (oldest_open_info *)(void *)s.bytes;
    n->size = sizeof *n;
    CHECK_OK(oz_open(model_path, NULL, &model, (oz_open_info *)(void *)n, &err), &err);
    CHECK(n->size == sizeof *n && poison_intact(&s, sizeof *n));
    CHECK(model != NULL && tensor_intact(model));
    oc_model_free(model);
    model = NULL;
    /* Today's struct gets every field; one whose size was never set is refused, left as
     * it was, and *out is NULL. */
    oz_open_info info = OZ_OPEN_INFO_INIT;
    CHECK_OK(oz_open(archive_path, NULL, &model, &info, &err), &err);
    CHECK(info.kind == OZ_KIND_ZIP && info.is_archive);
    oc_model_free(model);
    model = NULL;
    /* A later caller's info, its own field past today's set: filled, that field kept. */
    memset(s.bytes, 0, sizeof s.bytes);
    oz_open_info *later = (oz_open_info *)(void *)s.bytes;
    *later = (oz_open_info)OZ_OPEN_INFO_INIT;
    later->size = sizeof *later + 16;
    s.bytes[sizeof *later + 9] = 0x5A;
    CHECK_OK(oz_open(archive_path, NULL, &model, later, &err), &err);
    CHECK(later->kind == OZ_KIND_ZIP && later->is_archive && s.bytes[sizeof *later + 9] == 0x5A);
    oc_model_free(model);
    model = NULL;
    oz_open_info_init(&info);
    CHECK(info.size == sizeof info && info.kind == OZ_KIND_MODEL && !info.is_archive);
    memset(s.bytes, 0xA5, sizeof s.bytes);
    memset(s.bytes, 0, sizeof(size_t));
    model = (oc_model *)(void *)&s; /* must come back NULL */
    CHECK_STATUS(oz_open(model_path, NULL, &model, (oz_open_info *)(void *)s.bytes, &err),
                 OC_ERR_INVALID_ARG, &err);
    CHECK(model == NULL && poison_intact(&s, sizeof(size_t)));
}

/* oc_error as the first header had it: the same 272 bytes, message of 256. Today's record
 * keeps that size and prefix (status.h), so an old caller's error is filled within its
 * struct, with a NUL-terminated message it reads where it always did. */
typedef struct old_error {
    oc_status code;
    int sys_errno;
    uint64_t offset;
    char message[256];
} old_error;

static void test_error_old(void) {
    char path[600];
    oc_model *model = NULL;
    slab s;
    CHECK(sizeof(old_error) == sizeof(oc_error));
    CHECK(offsetof(old_error, message) == offsetof(oc_error, message));
    /* 500 bytes of missing directories: a message longer than the record */
    memset(path, 'p', sizeof path - 1);
    path[sizeof path - 1] = '\0';
    for (size_t i = 50; i < sizeof path - 1; i += 50) path[i] = '/';
    memset(s.bytes, 0xA5, sizeof s.bytes);
    old_error *e = (old_error *)(void *)s.bytes;
    CHECK_STATUS(oc_model_load_file(path, NULL, &model, (oc_error *)(void *)e), OC_ERR_NOT_FOUND,
                 NULL);
    CHECK(e->code == OC_ERR_NOT_FOUND && e->sys_errno != 0);
    CHECK(memchr(e->message, '\0', sizeof e->message) != NULL);
    CHECK(strncmp(e->message, "cannot open ppp", 15) == 0);
    CHECK(poison_intact(&s, sizeof *e));
}

/* ---- the structs that grew last: oz_save_options, oz_convert_info, oc_http_options ---- */

/* oz_save_options before cancel and fetch. */
typedef struct old_save_options {
    size_t size;
    oz_form form;
    int no_overwrite;
    int no_sync;
    const char *external_data;
    bool has_max_file_size;
    uint64_t max_file_size;
    bool has_align;
    uint64_t align;
    bool has_threshold;
    uint64_t threshold;
    int checksum;
    int deflate_model;
    const void *key;
    size_t key_len;
    const oc_crypt_options *crypt;
    oc_progress_fn progress;
    void *progress_ctx;
} old_save_options;
SAME_AT(oz_save_options, old_save_options, progress_ctx);
_Static_assert(sizeof(old_save_options) <= offsetof(oz_save_options, cancel), "");

/* oz_convert_info before in_size. */
typedef struct old_convert_info {
    size_t size;
    bool input_failed;
    oz_kind in_kind;
    bool in_archive;
} old_convert_info;
SAME_AT(oz_convert_info, old_convert_info, in_archive);
_Static_assert(sizeof(old_convert_info) <= offsetof(oz_convert_info, in_size), "");

/* oc_http_options as it ended at parallel: 44 bytes of fields in 48. */
typedef struct old_http_options {
    size_t size;
    const char *auth;
    const char *ca_file;
    int insecure;
    uint32_t timeout_ms;
    uint32_t connect_ms;
    int retries;
    int parallel;
} old_http_options;
SAME_AT(oc_http_options, old_http_options, parallel);
_Static_assert(sizeof(old_http_options) == 48, "");
_Static_assert(sizeof(old_http_options) <= offsetof(oc_http_options, min_rate), "");

/* Refused before anything is read or written: a struct whose size is 0, and today's
 * struct followed by 16 bytes of a later version's fields, one of them set. s holds
 * today's struct (initialised); check runs the call on it. */
#define CHECK_REFUSED(s, T, call)                             \
    do {                                                      \
        T *t_ = (T *)(void *)(s)->bytes;                      \
        size_t keep_ = t_->size;                              \
        t_->size = 0;                                         \
        CHECK_STATUS(call, OC_ERR_INVALID_ARG, &err);         \
        CHECK(strstr(err.message, #T ": size is 0") != NULL); \
        t_->size = sizeof(T) + 16;                            \
        (s)->bytes[sizeof(T) + 9] = 1;                        \
        CHECK_STATUS(call, OC_ERR_INVALID_ARG, &err);         \
        CHECK(strstr(err.message, "later version") != NULL);  \
        (s)->bytes[sizeof(T) + 9] = 0;                        \
        t_->size = keep_;                                     \
    } while (0)

static void test_save_old(void) {
    slab s;
    oc_error err;
    oc_model *model = NULL;
    REQUIRE(oc_model_load_file(model_path, NULL, &model, &err) == OC_OK);
    /* An old struct, its unknown fields poisoned: a fetch that faults when used, a cancel
     * that is no function. Its own fields are honoured: the form, deflate_model,
     * no_overwrite. */
    memset(s.bytes, 0xA5, sizeof s.bytes);
    old_save_options *o = (old_save_options *)(void *)s.bytes;
    memset(o, 0, sizeof *o);
    o->size = sizeof *o;
    o->form = OZ_FORM_ONNXZ;
    o->deflate_model = 1;
    void *bad = (void *)(uintptr_t)8;
    poison_at(&s, offsetof(oz_save_options, fetch), &bad, sizeof bad);
    const oz_save_options *so = (const oz_save_options *)(void *)o;
    CHECK_OK(oz_save(model, save_path, so, &err), &err);
    CHECK_EQ(model_entry_method(save_path), OZ_ZIP_DEFLATED);
    o->no_overwrite = 1;
    CHECK_STATUS(oz_save(model, save_path, so, &err), OC_ERR_EXISTS, &err);

    /* A later caller's struct: zeros past today's fields are accepted. */
    memset(s.bytes, 0, sizeof s.bytes);
    oz_save_options *now = (oz_save_options *)(void *)s.bytes;
    oz_save_options_init(now);
    now->size = sizeof *now + 16;
    CHECK_OK(oz_save(model, save_path, now, &err), &err);
    now->size = sizeof *now;
    remove(save_path);
    CHECK_REFUSED(&s, oz_save_options, oz_save(model, save_path, now, &err));
    CHECK(access(save_path, F_OK) != 0);
    oc_model_free(model);
}

static void test_convert_info_old(void) {
    slab s;
    oc_error err;
    /* The old info gets the fields it has; nothing past it is written. */
    memset(s.bytes, 0xA5, sizeof s.bytes);
    old_convert_info *o = (old_convert_info *)(void *)s.bytes;
    o->size = sizeof *o;
    o->in_kind = OZ_KIND_EMPTY;
    o->in_archive = true;
    oz_convert_info *info = (oz_convert_info *)(void *)o;
    CHECK_OK(oz_convert_file(model_path, convert_path, NULL, NULL, info, &err), &err);
    CHECK(o->in_kind == OZ_KIND_MODEL && !o->in_archive && !o->input_failed);
    CHECK(poison_intact(&s, sizeof *o));
    /* A later caller's info: today's fields filled, its zeros left as they are. */
    memset(s.bytes, 0, sizeof s.bytes);
    oz_convert_info *now = (oz_convert_info *)(void *)s.bytes;
    *now = (oz_convert_info)OZ_CONVERT_INFO_INIT;
    now->size = sizeof *now + 16;
    CHECK_OK(oz_convert_file(convert_path, copy_path, NULL, NULL, now, &err), &err);
    CHECK(now->in_kind == OZ_KIND_ZIP && now->in_archive && now->in_size > 0);
    for (size_t i = sizeof *now; i < sizeof *now + 16; i++) CHECK(s.bytes[i] == 0);
    /* An output is never read: a later caller's fields past today's may hold anything and
     * are left as they are; only a size never set is refused. */
    now->size = sizeof *now + 16;
    s.bytes[sizeof *now + 9] = 0x5A;
    CHECK_OK(oz_convert_file(convert_path, copy_path, NULL, NULL, now, &err), &err);
    CHECK(now->in_archive && s.bytes[sizeof *now + 9] == 0x5A);
    s.bytes[sizeof *now + 9] = 0;
    now->size = 0;
    CHECK_STATUS(oz_convert_file(model_path, convert_path, NULL, NULL, now, &err),
                 OC_ERR_INVALID_ARG, &err);
    CHECK(strstr(err.message, "oz_convert_info: size is 0") != NULL);
}

/* ---- a size past OC_OPTIONS_MAX_SIZE ---- */

/* n bytes, zero, that end where a page no access is allowed to begins: a read past them
 * faults. */
static unsigned char *guarded(size_t n, void **map, size_t *map_len) {
    size_t page = (size_t)sysconf(_SC_PAGESIZE), len = (n + page - 1) / page * page + page;
    unsigned char *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) return NULL;
    if (mprotect(m + len - page, page, PROT_NONE) != 0) {
        munmap(m, len);
        return NULL;
    }
    *map = m;
    *map_len = len;
    return m + len - page - n;
}

/* A size that was never set (garbage) is refused before a byte past the size field is
 * read: the structs below end at a page no access is allowed to, and their sizes claim
 * far more. OC_OPTIONS_MAX_SIZE itself is a size a later version may have. */
static void test_size_capped(void) {
    static const size_t sizes[] = {OC_OPTIONS_MAX_SIZE + 1u, (size_t)1 << 40, SIZE_MAX};
    void *map;
    size_t map_len;
    oc_error err;
    oc_model *model = NULL;
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
        oc_parse_options *p = (oc_parse_options *)(void *)guarded(sizeof *p, &map, &map_len);
        REQUIRE(p != NULL);
        oc_parse_options_init(p);
        p->size = sizes[i];
        CHECK_STATUS(oc_model_load_file(model_path, p, &model, &err), OC_ERR_INVALID_ARG, &err);
        CHECK(strstr(err.message, "OC_OPTIONS_MAX_SIZE") != NULL && model == NULL);
        munmap(map, map_len);
        /* The same for a struct inside another (oz_open_options.parse), and an output. */
        oz_open_options *o = (oz_open_options *)(void *)guarded(sizeof *o, &map, &map_len);
        REQUIRE(o != NULL);
        oz_open_options_init(o);
        o->parse.size = sizes[i];
        CHECK_STATUS(oz_open(model_path, o, &model, NULL, &err), OC_ERR_INVALID_ARG, &err);
        CHECK(strstr(err.message, "oz_open_options.parse") != NULL && model == NULL);
        munmap(map, map_len);
        oz_convert_info *info = (oz_convert_info *)(void *)guarded(sizeof *info, &map, &map_len);
        REQUIRE(info != NULL);
        info->size = sizes[i];
        CHECK_STATUS(oz_convert_file(model_path, convert_path, NULL, NULL, info, &err),
                     OC_ERR_INVALID_ARG, &err);
        CHECK(strstr(err.message, "OC_OPTIONS_MAX_SIZE") != NULL);
        munmap(map, map_len);
    }
    /* The largest size accepted: zeros past today's fields. */
    unsigned char *b = guarded(OC_OPTIONS_MAX_SIZE, &map, &map_len);
    REQUIRE(b != NULL);
    oc_parse_options *p = (oc_parse_options *)(void *)b;
    oc_parse_options_init(p);
    p->size = OC_OPTIONS_MAX_SIZE;
    CHECK_OK(oc_model_load_file(model_path, p, &model, &err), &err);
    CHECK(model && tensor_intact(model));
    oc_model_free(model);
    munmap(map, map_len);
}

/* ---- where each struct grew ---- */

/* A field appended to a struct starts at or past the sizeof the struct had before it
 * (onnxcore/options.h, "Extending"): between its last field's end and that sizeof lies
 * tail padding, which a caller built against the older header passes within its size
 * holding anything. Each row of ABI_LAYOUTS (abi_layouts.h) is a size a struct has had
 * and the first field appended after it; members lie in declaration order (C11 6.7.2.1),
 * so every later field starts past that one. Each struct's last row is its sizeof today:
 * a struct that grows fails here until its new size and the field after the old one are
 * recorded. */
typedef struct layout_row {
    const char *what;
    size_t size;   /* a size the struct has had */
    size_t offset; /* where the first field appended after it starts; today's sizeof */
} layout_row;
#define GREW(T, size, f) {#T " after " #size " bytes: " #f, size, offsetof(T, f)},
#define NOW(T, size)     {#T " today", size, sizeof(T)},

static const layout_row layouts[] = {ABI_LAYOUTS(GREW, NOW)};

static void test_layouts(void) {
    if (sizeof(void *) != 8 || sizeof(size_t) != 8) return; /* the sizes recorded are LP64's */
    for (size_t i = 0; i < sizeof layouts / sizeof *layouts; i++) {
        const layout_row *r = &layouts[i];
        bool now = strstr(r->what, " today") != NULL;
        if (now ? r->offset == r->size : r->offset >= r->size) continue;
        fprintf(stderr, "%s: at %zu, %s %zu\n", r->what, r->offset,
                now ? "recorded as" : "inside the padding of the struct of", r->size);
        CHECK(!"a struct's layout");
    }
}

/* Through a URL nothing listens at: the options pass their check (the call fails to
 * connect, OC_ERR_IO), or are refused (OC_ERR_INVALID_ARG). */
static void test_http_old(void) {
    if (!oc_http_supported()) return;
    static const char url[] = "http://127.0.0.1:1/m.onnx";
    slab s;
    oc_error err;
    oz_kind kind;
    /* Its fields set one by one: its tail padding holds poison, as an old caller's may. */
    memset(s.bytes, 0xA5, sizeof s.bytes);
    old_http_options *o = (old_http_options *)(void *)s.bytes;
    o->size = sizeof *o;
    o->auth = o->ca_file = NULL;
    o->insecure = 0;
    o->timeout_ms = o->connect_ms = 0;
    o->retries = -1; /* none: fail at once */
    o->parallel = 0;
    void *bad = (void *)(uintptr_t)8;
    poison_at(&s, offsetof(oc_http_options, cancel), &bad, sizeof bad);
    const oc_http_options *h = (const oc_http_options *)(void *)o;
    CHECK_STATUS(oz_detect_path(url, h, &kind, &err), OC_ERR_IO, &err);
    memset(s.bytes, 0, sizeof s.bytes);
    oc_http_options *now = (oc_http_options *)(void *)s.bytes;
    *now = (oc_http_options)OC_HTTP_OPTIONS_INIT;
    now->retries = -1;
    now->size = sizeof *now + 16;
    CHECK_STATUS(oz_detect_path(url, now, &kind, &err), OC_ERR_IO, &err);
    now->size = sizeof *now;
    CHECK_REFUSED(&s, oc_http_options, oz_detect_path(url, now, &kind, &err));
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s SCRATCH_DIR\n", argv[0]);
        return 2;
    }
    snprintf(dir, sizeof dir, "%s/options_abi", argv[1]);
    td_remove(dir);
    if (td_mkdirs(dir) != 0) {
        fprintf(stderr, "cannot create %s\n", dir);
        return 1;
    }
    snprintf(model_path, sizeof model_path, "%s/m.onnx", dir);
    snprintf(copy_path, sizeof copy_path, "%s/copy.onnx", dir);
    snprintf(archive_path, sizeof archive_path, "%s/m.onnxz", dir);
    snprintf(convert_path, sizeof convert_path, "%s/c.onnxz", dir);
    snprintf(save_path, sizeof save_path, "%s/s.onnxz", dir);
    if (!make_model_file()) {
        fprintf(stderr, "cannot write %s\n", model_path);
        return 1;
    }
    test_parse_old();
    test_parse_unset_and_newer();
    test_serialize_old();
    test_archive_old();
    test_convert_old();
    test_open_info_old();
    test_crypt_old();
    test_error_old();
    test_save_old();
    test_convert_info_old();
    test_http_old();
    test_layouts();
    test_size_capped();
    return check_report("test_options_abi");
}
