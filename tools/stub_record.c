/*
 * tools/stub_record.c - the entry records of a stub and their check (stub_record.h,
 * spec/onnxz.md A-60..A-63).
 */
#include "stub_record.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <onnxz/archive.h>

#include "onnxcore_private.h"

#include "cli.h"

oc_status stub_records_add(stub_records *r, const oz_zip_entry *e) {
    stub_record *rec;
    if (r->count == r->capacity) {
        uint64_t cap = r->capacity ? 2 * r->capacity : 16;
        stub_record *items = realloc(r->items, (size_t)cap * sizeof *items);
        if (!items) return OC_ERR_NOMEM;
        r->items = items;
        r->capacity = cap;
    }
    rec = &r->items[r->count];
    rec->name = malloc((size_t)e->name_len + 1);
    if (!rec->name) return OC_ERR_NOMEM;
    memcpy(rec->name, e->name, e->name_len);
    rec->name[e->name_len] = '\0';
    rec->offset = e->data_offset;
    rec->length = e->uncompressed_size;
    rec->crc32 = e->crc32;
    r->count++;
    return OC_OK;
}

void stub_records_free(stub_records *r) {
    for (uint64_t i = 0; i < r->count; i++) free(r->items[i].name);
    free(r->items);
    memset(r, 0, sizeof *r);
}

static int by_offset(const void *a, const void *b) {
    const stub_record *x = a, *y = b;
    return x->offset < y->offset ? -1 : x->offset > y->offset;
}

oc_status stub_records_attach(const stub_records *r, oc_model *model) {
    stub_record *sorted;
    char *text, *p;
    size_t size = 1;
    oc_status st;
    if (r->count == 0) return OC_OK;
    sorted = malloc((size_t)r->count * sizeof *sorted);
    if (!sorted) return OC_ERR_NOMEM;
    memcpy(sorted, r->items, (size_t)r->count * sizeof *sorted);
    qsort(sorted, (size_t)r->count, sizeof *sorted, by_offset);
    for (uint64_t i = 0; i < r->count; i++) size += 60 + strlen(sorted[i].name);
    p = text = malloc(size);
    if (!text) {
        free(sorted);
        return OC_ERR_NOMEM;
    }
    *p = '\0';
    for (uint64_t i = 0; i < r->count; i++) {
        /* Tensors that share an entry share its line. */
        if (i > 0 && sorted[i].offset == sorted[i - 1].offset) continue;
        p += sprintf(p, "%" PRIu64 " %" PRIu64 " %08" PRIx32 " %s\n", sorted[i].offset,
                     sorted[i].length, sorted[i].crc32, sorted[i].name);
    }
    st = cli_metadata_set(oc_model_arena(model), oc_model_proto(model), STUB_RECORD_KEY,
                          strlen(STUB_RECORD_KEY), text);
    free(text);
    free(sorted);
    return st;
}

/* ---- the check ------------------------------------------------------------------- */

/* One location the model names, and the archive it is (NULL: not an archive). The two
 * arrays keep the check linear in the tensors however they share entries (K-1): */
typedef struct stub_location {
    const oc_str *location;
    oz_archive *archive;
    /* Entry offsets sorted, for a model without records: each tensor's entry is found by
     * binary search, not by scanning every entry. Built on first use; NULL until then. */
    struct entry_at *by_offset;
    uint64_t nby_offset;
    /* One flag per entry: its CRC-32 has been checked and matched. Many tensors may name
     * one entry; its bytes are read once, not once per tensor. (A mismatch ends the
     * check, so no failed result is ever needed again.) NULL until first use. */
    uint8_t *crc_ok;
} stub_location;

/* An entry's data offset and its index in the central directory. */
struct entry_at {
    uint64_t offset, index;
};

typedef struct stub_checker {
    const char *path;
    const char *dir;      /* locations are relative to this directory */
    stub_records records; /* parsed from the model's STUB_RECORD_KEY, by offset */
    int has_records;      /* the model has the key */
    stub_location *locations;
    uint64_t nlocations;
    uint64_t checked;
    int failed; /* the problem has been printed */
} stub_checker;

static int str_is(const oc_str *s, const char *text, size_t n) {
    return s->size == n && memcmp(s->data, text, n) == 0;
}

/* Parses one decimal or hex number that ends at a space; 0 when it is not one. */
static int parse_field(const char **p, const char *end, int base, uint64_t *out) {
    uint64_t v = 0;
    const char *q = *p;
    for (; q < end && *q != ' '; q++) {
        unsigned d;
        if (*q >= '0' && *q <= '9')
            d = (unsigned)(*q - '0');
        else if (base == 16 && *q >= 'a' && *q <= 'f')
            d = (unsigned)(*q - 'a' + 10);
        else
            return 0;
        if (v > (UINT64_MAX - d) / (unsigned)base) return 0;
        v = v * (unsigned)base + d;
    }
    if (q == *p || q == end || q - *p > 20) return 0;
    *out = v;
    *p = q + 1;
    return 1;
}

/* lines "OFFSET LENGTH CRC32 NAME\n", sorted by offset, each offset once. */
static int parse_records(stub_checker *c, const oc_str *value) {
    const char *p = value->data, *end = value->data + value->size;
    uint64_t line = 0;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        oz_zip_entry e;
        uint64_t crc = 0;
        line++;
        memset(&e, 0, sizeof e);
        if (!nl || !parse_field(&p, nl, 10, &e.data_offset) ||
            !parse_field(&p, nl, 10, &e.uncompressed_size) || !parse_field(&p, nl, 16, &crc) ||
            crc > UINT32_MAX || p >= nl || memchr(p, '\0', (size_t)(nl - p)) ||
            (c->records.count && c->records.items[c->records.count - 1].offset >= e.data_offset)) {
            c->failed = 1;
            return cli_fail_msg(c->path,
                                "metadata '" STUB_RECORD_KEY "' line %" PRIu64
                                " is not 'OFFSET LENGTH CRC32 ENTRY' in offset order (A-61)",
                                line);
        }
        e.crc32 = (uint32_t)crc;
        e.name = p;
        e.name_len = (uint32_t)(nl - p);
        if (stub_records_add(&c->records, &e) != OC_OK) {
            c->failed = 1;
            return cli_fail_msg(c->path, "out of memory");
        }
        p = nl + 1;
    }
    return CLI_EXIT_OK;
}

static const stub_record *find_record(const stub_checker *c, uint64_t offset) {
    stub_record key;
    key.offset = offset;
    if (c->records.count == 0) return NULL;
    return bsearch(&key, c->records.items, (size_t)c->records.count, sizeof key, by_offset);
}

/* The location loc names, its archive opened once (archive NULL when it is not one). */
static int location_archive(stub_checker *c, const oc_str *loc, stub_location **where) {
    stub_location *grown;
    char *file;
    oc_error err;
    oz_archive *archive = NULL;
    for (uint64_t i = 0; i < c->nlocations; i++) {
        if (c->locations[i].location->size == loc->size &&
            memcmp(c->locations[i].location->data, loc->data, loc->size) == 0) {
            *where = &c->locations[i];
            return CLI_EXIT_OK;
        }
    }
    grown = realloc(c->locations, (size_t)(c->nlocations + 1) * sizeof *grown);
    file = malloc(strlen(c->dir) + loc->size + 2);
    if (grown) c->locations = grown;
    if (!grown || !file) {
        free(file);
        c->failed = 1;
        return cli_fail_msg(c->path, "out of memory");
    }
    /* The load before this one resolved every location safely (E-10, E-11). */
    sprintf(file, "%s/%.*s", c->dir, (int)loc->size, loc->data);
    oc_error_clear(&err);
    if (oz_is_archive_file(file) && oz_archive_open(file, NULL, &archive, &err) != OC_OK) {
        archive = NULL;
        /* Without records, a data file that only starts like a ZIP (a tensor's first
         * bytes) is ordinary data; a stub's archive must open. */
        if (c->has_records) {
            c->failed = 1;
            cli_fail(file, &err);
            free(file);
            return CLI_EXIT_FAILURE;
        }
    }
    free(file);
    memset(&c->locations[c->nlocations], 0, sizeof c->locations[c->nlocations]);
    c->locations[c->nlocations].location = loc;
    c->locations[c->nlocations].archive = archive;
    *where = &c->locations[c->nlocations++];
    return CLI_EXIT_OK;
}

static int by_entry_offset(const void *a, const void *b) {
    const struct entry_at *x = a, *y = b;
    if (x->offset != y->offset) return x->offset < y->offset ? -1 : 1;
    return x->index < y->index ? -1 : x->index > y->index;
}

/* Sorts the archive's entries but its model by data offset, once per location: then
 * equal offsets keep central directory order, the one a scan would have found first. */
static oc_status index_offsets(stub_location *l) {
    const oz_zip_reader *zip = oz_archive_zip(l->archive);
    uint64_t n = oz_zip_reader_count(zip);
    oz_zip_entry e;
    oc_error err;
    l->by_offset = malloc((size_t)(n ? n : 1) * sizeof *l->by_offset);
    if (!l->by_offset) return OC_ERR_NOMEM;
    oc_error_clear(&err);
    for (uint64_t i = 0; i < n; i++) {
        if (oz_zip_reader_entry(zip, i, &e, &err) != OC_OK || strcmp(e.name, OZ_MODEL_ENTRY) == 0)
            continue;
        l->by_offset[l->nby_offset].offset = e.data_offset;
        l->by_offset[l->nby_offset++].index = i;
    }
    qsort(l->by_offset, (size_t)l->nby_offset, sizeof *l->by_offset, by_entry_offset);
    return OC_OK;
}

/* The entry a tensor's reference means: the recorded one (by name), or without records
 * the first one (central directory order) whose data starts at the offset. 1 when found,
 * 0 when not, -1 when out of memory. */
static int find_entry(stub_location *l, const stub_record *rec, uint64_t offset, uint64_t *index) {
    oc_error err;
    uint64_t lo = 0, hi;
    oc_error_clear(&err);
    if (rec) return oz_zip_reader_find(oz_archive_zip(l->archive), rec->name, index, &err) == OC_OK;
    if (!l->by_offset && index_offsets(l) != OC_OK) return -1;
    /* The first element whose offset is not below the one sought. */
    for (hi = l->nby_offset; lo < hi;) {
        uint64_t mid = lo + (hi - lo) / 2;
        if (l->by_offset[mid].offset < offset)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == l->nby_offset || l->by_offset[lo].offset != offset) return 0;
    *index = l->by_offset[lo].index;
    return 1;
}

static oc_status check_tensor(void *vctx, onnx_TensorProto *t) {
    stub_checker *c = vctx;
    const oc_str *loc = oc_tensor_is_external(t) ? oc_tensor_external_value(t, "location") : NULL;
    const stub_record *rec;
    const oz_zip_reader *zip;
    stub_location *l = NULL;
    oz_zip_entry e;
    uint64_t offset, length, index = 0;
    int has_offset, has_length, found;
    char qt[OC_QUOTE_SIZE], qe[OC_QUOTE_SIZE], ql[OC_QUOTE_SIZE];
    oc_error err;
    if (!loc) return OC_OK;
    if (location_archive(c, loc, &l) != CLI_EXIT_OK) return OC_ERR_IO;
    if (!l->archive) return OC_OK;
    zip = oz_archive_zip(l->archive);
    oc_error_clear(&err);
    oc_quote(t->name.data, t->name.size, qt, sizeof qt);
    oc_quote(loc->data, loc->size, ql, sizeof ql);
    if (oc_tensor_external_range(t, &offset, &has_offset, &length, &has_length, &err) != OC_OK) {
        c->failed = 1;
        cli_fail(c->path, &err);
        return OC_ERR_MALFORMED;
    }
    rec = find_record(c, offset);
    if (c->has_records && !rec) {
        c->failed = 1;
        cli_fail_msg(c->path,
                     "tensor '%s': the stub has no record of an entry of %s at "
                     "offset %" PRIu64 " (A-62)",
                     qt, ql, offset);
        return OC_ERR_INCONSISTENT;
    }
    found = find_entry(l, rec, offset, &index);
    if (found < 0 ||
        (!l->crc_ok && !(l->crc_ok = calloc((size_t)oz_zip_reader_count(zip) + 1, 1)))) {
        c->failed = 1;
        cli_fail_msg(c->path, "out of memory");
        return OC_ERR_NOMEM;
    }
    if (!found || oz_zip_reader_entry(zip, index, &e, &err) != OC_OK) {
        c->failed = 1;
        if (rec)
            cli_fail_msg(c->path,
                         "tensor '%s': %s has no entry '%s' any more: the archive "
                         "was rebuilt after the stub was made; make the stub again (A-62)",
                         qt, ql, oc_quote(rec->name, strlen(rec->name), qe, sizeof qe));
        else
            cli_fail_msg(c->path,
                         "tensor '%s': no entry of %s has its data at offset %" PRIu64
                         ": the archive was rebuilt after the stub was made; make the stub "
                         "again (A-62)",
                         qt, ql, offset);
        return OC_ERR_INCONSISTENT;
    }
    oc_quote(e.name, e.name_len, qe, sizeof qe);
    if (e.data_offset != offset || !has_length || e.uncompressed_size != length ||
        e.method != OZ_ZIP_STORED || (rec && (rec->length != length || rec->crc32 != e.crc32))) {
        char was[48] = "";
        if (rec && rec->crc32 != e.crc32)
            snprintf(was, sizeof was, ", the stub recorded %08" PRIx32, rec->crc32);
        c->failed = 1;
        cli_fail_msg(c->path,
                     "tensor '%s': the stub reads %" PRIu64 " bytes at offset %" PRIu64
                     " of %s, but entry '%s' is %s%" PRIu64 " bytes at offset %" PRIu64
                     " (CRC-32 %08" PRIx32 "%s): the archive was rebuilt after the stub was "
                     "made; make the stub again (A-62)",
                     qt, length, offset, ql, qe, e.method == OZ_ZIP_STORED ? "" : "deflated, ",
                     e.uncompressed_size, e.data_offset, e.crc32, was);
        return OC_ERR_INCONSISTENT;
    }
    /* The bytes the runtime reads are the entry's own: their CRC-32 is the entry's. */
    if (!l->crc_ok[index] && oz_zip_reader_verify(zip, index, &err) != OC_OK) {
        c->failed = 1;
        cli_fail_msg(c->path, "tensor '%s': %s", qt, err.message);
        return OC_ERR_CHECKSUM;
    }
    l->crc_ok[index] = 1;
    c->checked++;
    return OC_OK;
}

int stub_check(const char *path, const char *data_dir, oc_model *model, uint64_t *checked) {
    onnx_ModelProto *m = oc_model_proto(model);
    const oc_str *value = NULL;
    stub_checker c;
    char *dir = NULL;
    int rc = CLI_EXIT_OK;
    memset(&c, 0, sizeof c);
    c.path = path;
    dir = data_dir ? NULL : oc__path_dir(path);
    if (!data_dir && !dir) return cli_fail_msg(path, "out of memory");
    c.dir = data_dir ? data_dir : dir;
    for (uint64_t i = 0; i < m->metadata_props.count; i++) {
        const onnx_StringStringEntryProto *e = m->metadata_props.items[i];
        if (e && str_is(&e->key, STUB_RECORD_KEY, strlen(STUB_RECORD_KEY))) value = &e->value;
    }
    c.has_records = value != NULL;
    if (value) rc = parse_records(&c, value);
    if (rc == CLI_EXIT_OK &&
        oc_msg_visit_tensors(&onnx_ModelProto_desc, m, check_tensor, &c) != OC_OK)
        rc = CLI_EXIT_FAILURE;
    if (rc != CLI_EXIT_OK && !c.failed) rc = cli_fail_msg(path, "cannot check the stub");
    for (uint64_t i = 0; i < c.nlocations; i++) {
        oz_archive_close(c.locations[i].archive);
        free(c.locations[i].by_offset);
        free(c.locations[i].crc_ok);
    }
    free(c.locations);
    stub_records_free(&c.records);
    free(dir);
    if (checked) *checked = c.checked;
    return rc;
}
