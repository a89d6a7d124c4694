/*
 * test_read_tensor.c - oz_archive_read_tensor and oz_archive_read_tensor_n on an archive of
 * many tensors: every tensor reads back its bytes (external entries, inline ones, typed
 * fields as the bytes raw_data would hold), the
 * first of two tensors of one name wins, a name holding a NUL byte is found by its length
 * only, unknown names are OC_ERR_NOT_FOUND; two threads read every tensor at once from one
 * freshly opened archive (the lazy index is built under their race). Prints the time of one
 * read (the mean over all tensors, after the first call that builds the index). And
 * oz_archive_tensor_entry: the entry each tensor's location names.
 *
 * usage: test_read_tensor WORKDIR [NODES TENSORS]
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include <onnxcore/onnxcore.h>
#include <onnxz/archive.h>

#include "check.h"
#include "testdir.h"
#include "testmodel.h"

static size_t n_tensors = 2000, n_nodes = 20000;
static const char nul_name[] = {'n', 'u', 'l', '\0', 'x'}; /* 5 bytes */

/* Tensor k: external (1100 + k % 50 bytes) unless k % 10 == 9 (16 bytes, inline). */
static uint64_t tensor_size(size_t k) { return k % 10 == 9 ? 16 : 1100 + k % 50; }
static uint8_t pattern(uint64_t i, size_t k) { return tm_byte(i, k * 13); }

static void tensor_name(size_t k, char *buf, size_t n) { snprintf(buf, n, "w.%zu", k); }

/* Tensor k's size and bytes under a name of name_len bytes. */
static void add_tensor(oc_arena *a, onnx_GraphProto *g, const char *name, size_t name_len,
                       size_t k) {
    tm_add_bytes_n(a, g, name, name_len, tensor_size(k), k * 13);
}

static oc_model *make_model(void) {
    oc_model *m = tm_model_new();
    oc_arena *a = oc_model_arena(m);
    onnx_ModelProto *mp = oc_model_proto(m);
    char name[32];
    for (size_t k = 0; k < n_tensors; k++) {
        tensor_name(k, name, sizeof name);
        add_tensor(a, mp->graph, name, strlen(name), k);
    }
    /* a second "w.0" (ignored: the first wins) and a name with a NUL byte */
    add_tensor(a, mp->graph, "w.0", 3, 1);
    add_tensor(a, mp->graph, nul_name, sizeof nul_name, n_tensors);
    onnx_TensorProto *t = OC_ADD(a, TensorProto, mp->graph->initializer); /* typed fields */
    oc_str_set_cstr(a, &t->name, "typed");
    OC_SET_HAS(TensorProto, t, name);
    t->data_type = 5; /* INT16 */
    OC_SET_HAS(TensorProto, t, data_type);
    *(int64_t *)oc_array_push(a, &t->dims, sizeof(int64_t)) = 2;
    *(int32_t *)oc_array_push(a, &t->int32_data, sizeof(int32_t)) = -2;
    *(int32_t *)oc_array_push(a, &t->int32_data, sizeof(int32_t)) = 300;
    for (size_t k = 0; k < n_nodes; k++) {
        onnx_NodeProto *nd = tm_add_node(a, mp->graph, "Relu");
        snprintf(name, sizeof name, "n.%zu", k);
        oc_str_set_cstr(a, &nd->name, name);
        OC_SET_HAS(NodeProto, nd, name);
    }
    return m;
}

static int same_bytes(const oc_bytes *b, size_t k) {
    if (b->size != tensor_size(k)) return 0;
    for (uint64_t i = 0; i < b->size; i++)
        if (b->data[i] != pattern(i, k)) return 0;
    return 1;
}

/* Reads every tensor; the number of reads that gave wrong bytes or failed. */
static size_t read_all(const oz_archive *ar) {
    size_t bad = 0;
    char name[32];
    for (size_t k = 0; k < n_tensors; k++) {
        oc_bytes b = {0};
        oc_error err;
        tensor_name(k, name, sizeof name);
        if (oz_archive_read_tensor(ar, name, &b, &err) != OC_OK || !same_bytes(&b, k)) bad++;
        oc_bytes_release(&b);
    }
    return bad;
}

static void *reader_thread(void *p) { return (void *)(uintptr_t)read_all(p); }

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
    if (argc != 2 && argc != 4) {
        fprintf(stderr, "usage: test_read_tensor WORKDIR [NODES TENSORS]\n");
        return 2;
    }
    if (argc == 4) {
        n_nodes = strtoul(argv[2], NULL, 10);
        n_tensors = strtoul(argv[3], NULL, 10);
    }
    if (td_make(argv[1], "read_tensor", td_dir, sizeof td_dir) != 0) return 2;
    const char *path = td_at("read_tensor.onnxz"); /* the one file of the test */
    oc_error err;
    oc_model *m = make_model();
    CHECK(oz_archive_save(m, path, NULL, &err) == OC_OK);
    oc_model_free(m);

    oz_archive *ar;
    if (oz_archive_open(path, NULL, &ar, &err) != OC_OK) {
        fprintf(stderr, "open: %s\n", err.message);
        return 1;
    }
    oc_bytes b = {0};
    double t0 = now();
    CHECK(oz_archive_read_tensor(ar, "w.0", &b, &err) == OC_OK && same_bytes(&b, 0));
    oc_bytes_release(&b);
    double t1 = now();
    CHECK(read_all(ar) == 0);
    double t2 = now();
    printf("first read %.3f ms; %zu reads %.2f us each (%zu nodes)\n", (t1 - t0) * 1e3, n_tensors,
           (t2 - t1) * 1e6 / (double)n_tensors, n_nodes);

    /* a NUL byte in the name: found by its length, not by its prefix */
    CHECK(oz_archive_read_tensor_n(ar, nul_name, sizeof nul_name, &b, &err) == OC_OK &&
          same_bytes(&b, n_tensors));
    oc_bytes_release(&b);
    CHECK(oz_archive_read_tensor(ar, "nul", &b, &err) == OC_ERR_NOT_FOUND);
    CHECK(strcmp(err.message, "the model has no tensor named 'nul'") == 0);
    CHECK(oz_archive_read_tensor_n(ar, nul_name, 4, &b, &err) == OC_ERR_NOT_FOUND);
    CHECK(oz_archive_read_tensor_n(ar, "w.1x", 3, &b, &err) == OC_OK && same_bytes(&b, 1));
    oc_bytes_release(&b);
    /* typed fields: the bytes raw_data would hold, not an empty span */
    CHECK(oz_archive_read_tensor_n(ar, "typed", 5, &b, &err) == OC_OK && b.size == 4 &&
          memcmp(b.data, "\xfe\xff\x2c\x01", 4) == 0);
    oc_bytes_release(&b);
    CHECK(oz_archive_read_tensor(ar, "w.", &b, &err) == OC_ERR_NOT_FOUND);
    CHECK(oz_archive_read_tensor(ar, "zzz", &b, &err) == OC_ERR_NOT_FOUND);
    CHECK(oz_archive_read_tensor_n(ar, NULL, 0, &b, &err) == OC_ERR_NOT_FOUND);
    CHECK(oz_archive_read_tensor_n(ar, NULL, 1, &b, &err) == OC_ERR_INVALID_ARG);
    CHECK(strcmp(err.message, "oz_archive_read_tensor_n: missing argument") == 0);
    CHECK(oz_archive_read_tensor(ar, NULL, &b, &err) == OC_ERR_INVALID_ARG);
    CHECK(strcmp(err.message, "oz_archive_read_tensor: missing argument") == 0);

    /* oz_archive_tensor_entry: each external tensor's entry is the one its location names;
     * inline tensors and a location that names no entry have none */
    oc_parse_options po = OC_PARSE_OPTIONS_INIT;
    po.no_copy = 1;
    po.skip_external_data = 1;
    oc_model *refs = NULL;
    CHECK(oz_archive_load_model(ar, &po, &refs, &err) == OC_OK);
    const onnx_GraphProto *g = refs ? oc_model_proto(refs)->graph : NULL;
    size_t external = 0, inline_ = 0;
    for (size_t k = 0; g && k < g->initializer.count; k++) {
        onnx_TensorProto *t = g->initializer.items[k];
        uint64_t index = UINT64_MAX;
        oz_zip_entry e;
        if (!oc_tensor_is_external(t)) {
            inline_++;
            CHECK(!oz_archive_tensor_entry(oz_archive_zip(ar), t, &index) && index == UINT64_MAX);
            continue;
        }
        const oc_str *loc = oc_tensor_external_value(t, "location");
        CHECK(oz_archive_tensor_entry(oz_archive_zip(ar), t, &index) &&
              oz_zip_reader_entry(oz_archive_zip(ar), index, &e, &err) == OC_OK && loc &&
              e.name_len == loc->size && memcmp(e.name, loc->data, loc->size) == 0);
        if (++external == 1) { /* the same tensor with a location that names no entry */
            oc_str keep = *loc;
            ((oc_str *)loc)->size = loc->size - 1;
            CHECK(!oz_archive_tensor_entry(oz_archive_zip(ar), t, &index));
            *(oc_str *)loc = keep;
        }
    }
    /* k % 10 == 9 and "typed" inline; the second "w.0" and the NUL-named tensor external */
    CHECK(external == n_tensors - n_tensors / 10 + 2 && inline_ == n_tensors / 10 + 1);
    CHECK(!oz_archive_tensor_entry(NULL, g ? g->initializer.items[0] : NULL, &external));
    oc_model_free(refs);
    oz_archive_close(ar);

    /* two threads on one fresh archive: both race to build the index */
    for (int round = 0; round < 3; round++) {
        CHECK(oz_archive_open(path, NULL, &ar, &err) == OC_OK);
        pthread_t th[2];
        void *bad[2] = {(void *)1, (void *)1};
        for (int i = 0; i < 2; i++) CHECK(pthread_create(&th[i], NULL, reader_thread, ar) == 0);
        for (int i = 0; i < 2; i++) CHECK(pthread_join(th[i], &bad[i]) == 0);
        CHECK(bad[0] == NULL && bad[1] == NULL);
        oz_archive_close(ar);
    }
    td_remove(td_dir);
    return check_report("test_read_tensor");
}
