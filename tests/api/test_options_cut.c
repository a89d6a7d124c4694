/*
 * test_options_cut.c - a caller's sized struct cut at each size it ever had gets this
 * library's defaults for every field past the cut (onnxcore/options.h, "Extending").
 *
 * For each older size abi_layouts.h records, a caller's struct of that size is read
 * through the description both libraries read it by (oc__sized_read, internal/sized.h;
 * the descriptions in onnxcore_shared.h and libonnxz/internal/options.h). The caller's
 * bytes hold a pattern no default has, and end where a page no access is allowed to
 * begins, so a read past the caller's size faults. The result holds the caller's bytes up
 * to the cut and the defaults' bytes past it, byte for byte, with today's size. A struct
 * that embeds another (oz_open_options.parse ...) is read with that one cut at each of its
 * older sizes too: the fields after it are found where the caller put them, shifted. An
 * output (oz_open_info ...) cut at an older size gets what the library found up to the
 * cut, and nothing past it is written (oc__output_put).
 *
 * usage: test_options_cut
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

#include "internal/options.h"

#include "abi_layouts.h"
#include "check.h"

enum { PATTERN = 0x5A, POISON = 0xA5 };

/* The description of each struct abi_layouts.h names, by its name; outputs have none. */
#define TYPE_oc_parse_options      oc__parse_opts_type
#define TYPE_oc_serialize_options  oc__serialize_opts_type
#define TYPE_oc_crypt_options      oc__crypt_opts_type
#define TYPE_oc_http_options       oc__http_opts_type
#define TYPE_oc_s3_options         oc__s3_opts_type
#define TYPE_oc_hf_options         oc__hf_opts_type
#define TYPE_oz_zip_reader_options oz__zip_opts_type
#define TYPE_oz_archive_options    oz__archive_opts_type
#define TYPE_oz_convert_options    oz__convert_opts_type
#define TYPE_oz_open_options       oz__open_opts_type
#define TYPE_oz_save_options       oz__save_opts_type
#define TYPE_oz_stub_options       oz__stub_opts_type
#define TYPE_oz_sign_options       oz__sign_opts_type
#define TYPE_oz_unpack_options     oz__unpack_opts_type
#define TYPE_oz_metadata_options   oz__metadata_opts_type
#define TYPE_oz_info_source        oz__info_source_read_type
#define TYPE_oz_reader_options     oz__reader_opts_type
#define TYPE_oz_read_many_options  oz__read_many_opts_type
#define TYPE_oz_open_info          NULL
#define TYPE_oz_convert_info       NULL
#define TYPE_oz_stub_info          NULL
#define TYPE_oz_unpack_info        NULL
#define TYPE_oz_metadata_info      NULL

typedef struct cut_row {
    const char *name;
    const oc__sized_type *(*type)(void); /* NULL: an output */
    size_t cut;                          /* a size the struct had; today's (the NOW row) */
    size_t size;                         /* today's */
} cut_row;
#define TYPE_OF_(T)     TYPE_##T
#define CUT(T, size, f) {#T, TYPE_OF_(T), size, sizeof(T)},
#define NOW(T, size)    {#T, TYPE_OF_(T), size, sizeof(T)},
static const cut_row cuts[] = {ABI_LAYOUTS(CUT, NOW)};
#define N_CUTS (sizeof cuts / sizeof *cuts)

/* n bytes that end where a page no access is allowed to begins (*map, *map_len: the
 * mapping to release). */
static unsigned char *guarded(size_t n, void **map, size_t *map_len) {
    size_t page = (size_t)sysconf(_SC_PAGESIZE), len = (n + page - 1) / page * page + page;
    unsigned char *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED || mprotect(m + len - page, page, PROT_NONE) != 0) {
        perror("mmap");
        exit(1);
    }
    *map = m;
    *map_len = len;
    return m + len - page - n;
}

/* The pattern's bytes in the defaults: a default of the pattern would hide a byte that
 * came from the caller. */
static void defaults_differ(const oc__sized_type *t) {
    const unsigned char *d = t->defaults;
    size_t n = 0;
    for (size_t i = 0; i < t->size; i++) n += d[i] == PATTERN;
    if (n) fprintf(stderr, "%s: %zu default bytes hold the pattern\n", t->name, n);
    CHECK(n == 0);
}

/* Sets the size of the struct t at p (a caller's of `size` bytes, today's layout within
 * it) and of every struct it embeds that lies within it. */
static void set_sizes(const oc__sized_type *t, unsigned char *p, size_t size) {
    memcpy(p, &size, sizeof size);
    for (size_t i = 0; i < t->n_inner; i++) {
        const oc__sized_type *in = t->inner[i].type();
        if (t->inner[i].offset + in->size <= size) set_sizes(in, p + t->inner[i].offset, in->size);
    }
}

/* Whether n bytes of got equal want's, naming the first that does not. */
static bool same(const char *what, const unsigned char *got, const unsigned char *want, size_t at,
                 size_t n) {
    for (size_t i = 0; i < n; i++)
        if (got[at + i] != want[i]) {
            fprintf(stderr, "%s: byte %zu is 0x%02x, not 0x%02x\n", what, at + i, got[at + i],
                    want[i]);
            return false;
        }
    return true;
}

/* Options cut at r->cut: the caller's bytes up to it, the defaults past it. */
static void test_cut(const cut_row *r) {
    const oc__sized_type *t = r->type();
    void *map;
    size_t map_len;
    unsigned char *caller = guarded(r->cut, &map, &map_len);
    memset(caller, PATTERN, r->cut);
    set_sizes(t, caller, r->cut);
    unsigned char local[OC_OPTIONS_MAX_SIZE];
    memset(local, POISON, sizeof local);
    const void *use = NULL;
    oc_error err;
    char what[160];
    snprintf(what, sizeof what, "%s cut at %zu", r->name, r->cut);
    CHECK_OK(oc__sized_read(t, caller, local, &use, &err), &err);
    CHECK(use == local);
    size_t size;
    memcpy(&size, local, sizeof size);
    CHECK_EQ(size, t->size);
    CHECK(same(what, local, caller + sizeof size, sizeof size, r->cut - sizeof size));
    CHECK(same(what, local, (const unsigned char *)t->defaults + r->cut, r->cut, t->size - r->cut));
    munmap(map, map_len);
}

/* The outer struct t with its inner struct k cut at `cut`: the fields after it come from
 * where the caller's layout puts them. */
static void test_inner_cut(const oc__sized_type *t, size_t k, size_t cut) {
    const oc__sized_inner *inner = &t->inner[k];
    const oc__sized_type *it = inner->type();
    size_t shrink = it->size - cut, n = t->size - shrink;
    void *map;
    size_t map_len;
    unsigned char *caller = guarded(n, &map, &map_len);
    memset(caller, PATTERN, n);
    /* Today's layout before the inner struct, the cut one, today's after (shifted) */
    memcpy(caller, &n, sizeof n);
    for (size_t i = 0; i < t->n_inner; i++) {
        const oc__sized_type *in = t->inner[i].type();
        size_t at = t->inner[i].offset - (i > k ? shrink : 0);
        set_sizes(in, caller + at, i == k ? cut : in->size);
    }
    unsigned char local[OC_OPTIONS_MAX_SIZE];
    memset(local, POISON, sizeof local);
    const void *use = NULL;
    oc_error err;
    char what[200];
    snprintf(what, sizeof what, "%s with %s cut at %zu", t->name, inner->name, cut);
    CHECK_OK(oc__sized_read(t, caller, local, &use, &err), &err);
    CHECK(use == local);
    const unsigned char *defaults = t->defaults;
    size_t at = inner->offset;
    CHECK(same(what, local, (const unsigned char *)&t->size, 0, sizeof t->size));
    CHECK(same(what, local, caller + sizeof(size_t), sizeof(size_t), at - sizeof(size_t)));
    CHECK(same(what, local, (const unsigned char *)&it->size, at, sizeof it->size));
    CHECK(
        same(what, local, caller + at + sizeof(size_t), at + sizeof(size_t), cut - sizeof(size_t)));
    CHECK(same(what, local, defaults + at + cut, at + cut, it->size - cut));
    CHECK(same(what, local, caller + at + cut, at + it->size, t->size - at - it->size));
    munmap(map, map_len);
}

/* An output cut at r->cut: what was found up to the cut, nothing written past it. */
static void test_output_cut(const cut_row *r) {
    unsigned char found[OC_OPTIONS_MAX_SIZE], slab[OC_OPTIONS_MAX_SIZE];
    char what[160];
    snprintf(what, sizeof what, "%s cut at %zu", r->name, r->cut);
    memset(found, PATTERN, r->size);
    memcpy(found, &r->size, sizeof r->size);
    memset(slab, POISON, sizeof slab);
    memcpy(slab, &r->cut, sizeof r->cut);
    oc__output_put(slab, found, r->size);
    unsigned char poison[OC_OPTIONS_MAX_SIZE];
    memset(poison, POISON, sizeof poison);
    CHECK(same(what, slab, (const unsigned char *)&r->cut, 0, sizeof r->cut));
    CHECK(same(what, slab, found + sizeof(size_t), sizeof(size_t), r->cut - sizeof(size_t)));
    CHECK(same(what, slab, poison, r->cut, sizeof slab - r->cut));
}

/* Options of a size no version had (one that ends inside a field: not a multiple of
 * sizeof(size_t)), and an embedded struct of such a size: refused with
 * OC_ERR_INVALID_ARG, the result the defaults, never part of a caller's field (a pointer
 * kept in part was a crash: oz_read_many_options.size = 17 with a cancel set). */
static size_t test_ragged(const oc__sized_type *t) {
    size_t n = 0;
    for (size_t size = sizeof(size_t) + 1; size < t->size + 16; size++) {
        if (size % sizeof(size_t) == 0) continue;
        void *map;
        size_t map_len;
        unsigned char *caller = guarded(size, &map, &map_len);
        memset(caller, PATTERN, size);
        memcpy(caller, &size, sizeof size);
        unsigned char local[OC_OPTIONS_MAX_SIZE];
        memset(local, POISON, sizeof local);
        const void *use = NULL;
        oc_error err;
        if (!CHECK_STATUS(oc__sized_read(t, caller, local, &use, &err), OC_ERR_INVALID_ARG, &err))
            fprintf(stderr, "%s of size %zu: accepted\n", t->name, size);
        CHECK(use == local && memcmp(local, t->defaults, t->size) == 0);
        CHECK(strstr(err.message, "ends inside a field") != NULL);
        munmap(map, map_len);
        n++;
    }
    for (size_t k = 0; k < t->n_inner; k++) { /* today's outer, its inner struct ragged */
        void *map;
        size_t map_len;
        unsigned char *caller = guarded(t->size, &map, &map_len);
        memset(caller, PATTERN, t->size);
        set_sizes(t, caller, t->size);
        size_t ragged = t->inner[k].type()->size - 3;
        memcpy(caller + t->inner[k].offset, &ragged, sizeof ragged);
        unsigned char local[OC_OPTIONS_MAX_SIZE];
        const void *use = NULL;
        oc_error err;
        CHECK_STATUS(oc__sized_read(t, caller, local, &use, &err), OC_ERR_INVALID_ARG, &err);
        CHECK(use == local && memcmp(local, t->defaults, t->size) == 0);
        munmap(map, map_len);
        n++;
    }
    return n;
}

int main(void) {
    if (sizeof(void *) != 8 || sizeof(size_t) != 8) return 0; /* the sizes recorded are LP64's */
    size_t options = 0, inner = 0, outputs = 0;
    for (size_t i = 0; i < N_CUTS; i++) {
        const cut_row *r = &cuts[i];
        CHECK_EQ(r->cut <= r->size, 1);
        if (r->cut == r->size) continue; /* today's: the other tests */
        if (!r->type) {
            test_output_cut(r);
            outputs++;
            continue;
        }
        CHECK_EQ(r->type()->size, r->size);
        defaults_differ(r->type());
        test_cut(r);
        options++;
    }
    /* Every embedded struct of every description (its NOW row), cut at each of its older
     * sizes. */
    for (size_t i = 0; i < N_CUTS; i++) {
        if (!cuts[i].type || cuts[i].cut != cuts[i].size) continue;
        const oc__sized_type *t = cuts[i].type();
        for (size_t k = 0; k < t->n_inner; k++)
            for (size_t j = 0; j < N_CUTS; j++)
                if (cuts[j].type && cuts[j].cut != cuts[j].size &&
                    strcmp(cuts[j].name, t->inner[k].type()->name) == 0) {
                    test_inner_cut(t, k, cuts[j].cut);
                    inner++;
                }
    }
    size_t ragged = 0;
    for (size_t i = 0; i < N_CUTS; i++)
        if (cuts[i].type && cuts[i].cut == cuts[i].size) ragged += test_ragged(cuts[i].type());
    printf("options cut: %zu, embedded cut: %zu, outputs cut: %zu, ragged sizes refused: %zu\n",
           options, inner, outputs, ragged);
    CHECK(options >= 10 && inner >= 10 && outputs >= 3 && ragged >= 1000);
    return check_report("test_options_cut");
}
