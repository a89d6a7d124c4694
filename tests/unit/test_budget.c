/*
 * test_budget.c - the memory budget of a decode (oc_parse_options.max_memory, spec
 * security.md M-1) and the keyed name table (nametab.h, K-2).
 *
 * The input is the amplifier the budget exists for: a graph of N empty initializers, two
 * bytes each on the wire, a TensorProto of a few hundred bytes each once decoded.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include <onnxcore/onnxcore.h>

#include "internal/nametab.h" /* internal: the static library's */

#include "check.h"
#include "testdir.h"

/* ModelProto{ir_version 8, graph{initializer {} x n}}; *size receives its length. */
static uint8_t *empty_initializers(uint64_t n, uint64_t *size) {
    uint64_t glen = 2 * n, hdr = 0;
    uint8_t *m = malloc(2 + 1 + 10 + glen);
    if (!m) return NULL;
    m[hdr++] = 0x08; /* ir_version */
    m[hdr++] = 0x08;
    m[hdr++] = 0x3a; /* graph, length-delimited */
    for (uint64_t v = glen;; v >>= 7) {
        m[hdr++] = (uint8_t)((v & 0x7f) | (v >= 0x80 ? 0x80 : 0));
        if (v < 0x80) break;
    }
    for (uint64_t i = 0; i < n; i++) {
        m[hdr + 2 * i] = 0x2a; /* initializer, empty */
        m[hdr + 2 * i + 1] = 0x00;
    }
    *size = hdr + glen;
    return m;
}

static void test_budget_refuses(const char *dir) {
    enum { N = 200000 }; /* decodes into tens of MiB */
    uint64_t size;
    uint8_t *m = empty_initializers(N, &size);
    REQUIRE(m != NULL);
    oc_error err;
    oc_model *model = NULL;
    oc_parse_options po = OC_PARSE_OPTIONS_INIT;

    /* The default: no cap. */
    CHECK_EQ(po.max_memory, 0);
    CHECK_OK(oc_model_load_memory(m, size, &po, &model, &err), &err);
    REQUIRE(model != NULL);
    CHECK_EQ(oc_model_proto(model)->graph->initializer.count, N);
    uint64_t needed = oc_arena_bytes_used(oc_model_arena(model));
    CHECK(needed > 100ull * N); /* the amplification: over 50 times the 2 bytes each */
    CHECK(needed <= OC_DECODE_AMPLIFICATION * size); /* and within the bound limits.h gives */
    oc_model_free(model);

    /* A budget below what the decode needs: OC_ERR_LIMIT naming the option, fast. */
    po.max_memory = needed / 4;
    model = NULL;
    CHECK_STATUS(oc_model_load_memory(m, size, &po, &model, &err), OC_ERR_LIMIT, &err);
    CHECK(strstr(err.message, "max_memory") != NULL);

    /* A budget above it: the same model loads, and the arena is uncapped afterwards (the
     * caller may build on the model). */
    po.max_memory = needed + (16u << 20);
    CHECK_OK(oc_model_load_memory(m, size, &po, &model, &err), &err);
    REQUIRE(model != NULL);
    CHECK_EQ(oc_model_proto(model)->graph->initializer.count, N);
    CHECK(oc_arena_alloc(oc_model_arena(model), 64u << 20) != NULL);
    oc_model_free(model);

    /* The pread path counts the same way. */
    char path[4200];
    snprintf(path, sizeof path, "%s/budget.onnx", dir);
    FILE *f = fopen(path, "wb");
    REQUIRE(f != NULL);
    CHECK_EQ(fwrite(m, 1, (size_t)size, f), size);
    fclose(f);
    po.use_pread = 1;
    po.max_memory = needed / 4;
    CHECK_STATUS(oc_model_load_file(path, &po, &model, &err), OC_ERR_LIMIT, &err);
    po.max_memory = 0;
    CHECK_OK(oc_model_load_file(path, &po, &model, &err), &err);
    oc_model_free(model);
    remove(path);
    free(m);
}

/* Review finding: under use_pread a long field (here a 24 MiB doc_string) was read whole
 * into the decode window by realloc, outside the budget: 240 MB of memory for a 16 MiB
 * max_memory before failing. The window counts against the budget (M-1), and a decode
 * that succeeds through windows leaves err as it was (a field cut by a window's edge is
 * a suspension, not an error). */
static void test_budget_pread_window(const char *dir) {
    enum { DOC = 24u << 20 };
    uint8_t hdr[16], chunk[65536];
    size_t at = 0;
    hdr[at++] = 0x08; /* ir_version 8 */
    hdr[at++] = 0x08;
    hdr[at++] = 0x32; /* doc_string (field 6), length-delimited */
    for (uint64_t v = DOC;; v >>= 7) {
        hdr[at++] = (uint8_t)((v & 0x7f) | (v >= 0x80 ? 0x80 : 0));
        if (v < 0x80) break;
    }
    char path[4200];
    snprintf(path, sizeof path, "%s/doc.onnx", dir);
    FILE *f = fopen(path, "wb"); /* written in pieces: this process never holds 24 MiB */
    REQUIRE(f != NULL);
    CHECK_EQ(fwrite(hdr, 1, at, f), at);
    memset(chunk, 'd', sizeof chunk);
    for (uint64_t n = 0; n < DOC; n += sizeof chunk)
        CHECK_EQ(fwrite(chunk, 1, sizeof chunk, f), sizeof chunk);
    fclose(f);
    oc_parse_options po = OC_PARSE_OPTIONS_INIT;
    oc_model *model = NULL;
    oc_error err;
    po.use_pread = 1;
    po.max_memory = 4u << 20;
    struct rusage ru;
    REQUIRE(getrusage(RUSAGE_SELF, &ru) == 0);
    long before = ru.ru_maxrss;
    CHECK_STATUS(oc_model_load_file(path, &po, &model, &err), OC_ERR_LIMIT, &err);
    CHECK(strstr(err.message, "max_memory") != NULL);
    /* Run first in the process, so that the high-water mark before the load is low: the
     * window stays under the budget, so the peak grew by nowhere near the field's 24 MiB
     * (a growth, not a level: valgrind and ASan add their own). */
    REQUIRE(getrusage(RUSAGE_SELF, &ru) == 0);
    CHECK(ru.ru_maxrss - before < 12 * 1024); /* KiB */
    po.max_memory = 0;
    memset(&err, 0, sizeof err);
    CHECK_OK(oc_model_load_file(path, &po, &model, &err), &err);
    CHECK_EQ(err.code, OC_OK);
    REQUIRE(model != NULL);
    CHECK_EQ(oc_model_proto(model)->doc_string.size, DOC);
    oc_model_free(model);
    remove(path);
}

/* ---- the name table ---- */

typedef struct names {
    char (*s)[16];
    size_t *len;
} names;

static void name_at(const void *ctx, uint64_t i, const void **name, size_t *len) {
    const names *n = ctx;
    *name = n->s[i];
    *len = n->len[i];
}

static void test_nametab(void) {
    enum { N = 50000 };
    names n = {calloc(N, sizeof *n.s), calloc(N, sizeof *n.len)};
    REQUIRE(n.s && n.len);
    oc_nametab *t = oc_nametab_new(4, name_at, &n); /* grows past what it expected */
    REQUIRE(t != NULL);
    for (uint64_t i = 0; i < N; i++) {
        n.len[i] = (size_t)snprintf(n.s[i], sizeof n.s[i], "w%llu", (unsigned long long)(i / 2));
        /* every name comes twice: the second add finds the first */
        int64_t got = oc_nametab_add(t, n.s[i], n.len[i], i);
        if (!CHECK_EQ(got, (int64_t)(i - i % 2))) break;
    }
    CHECK_EQ(oc_nametab_count(t), N / 2);
    CHECK_EQ(oc_nametab_find(t, "w7", 2, oc_nametab_hash("w7", 2)), 14);
    CHECK_EQ(oc_nametab_find(t, "w", 1, oc_nametab_hash("w", 1)), -1);
    CHECK_EQ(oc_nametab_find(t, "", 0, oc_nametab_hash("", 0)), -1);
    /* An empty name may come as NULL (an empty oc_str): the same name as "". */
    CHECK_EQ(oc_nametab_hash(NULL, 0), oc_nametab_hash("", 0));
    /* Names are bytes: a NUL inside is part of the name. */
    memcpy(n.s[1], "w0\0x", 4);
    n.len[1] = 4;
    CHECK_EQ(oc_nametab_add(t, n.s[1], 4, 1), 1);
    CHECK_EQ(oc_nametab_find(t, "w0", 2, oc_nametab_hash("w0", 2)), 0);
    oc_nametab_free(t);
    oc_nametab_free(NULL);
    free(n.s);
    free(n.len);
}

int main(int argc, char **argv) {
    char dir[4096];
    if (td_make(argc > 1 ? argv[1] : NULL, "budget", dir, sizeof dir) != 0) {
        perror("scratch directory");
        return 1;
    }
    test_budget_pread_window(dir); /* first: it reads the process's peak memory */
    test_budget_refuses(dir);
    test_nametab();
    td_remove(dir);
    return check_report("test_budget");
}
