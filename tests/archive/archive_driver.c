/*
 * archive_driver - library-level archive operations for archive_test.py:
 *   archive_driver roundtrip LIST OUTDIR [--align N] [--threshold N] [--deflate-model]
 *       for each .onnx path in LIST: load it (no_copy), save OUTDIR/<n>.onnxz, load that
 *       archive (no_copy), save OUTDIR/<n>.back.onnx and compare it with the source bytes
 *       prints one line per failure and a summary; exit 1 on any failure.
 *   archive_driver load ARCHIVE OUT.onnx [--copy] [--pread]
 *       prints `ok` or `<status>: <message>`.
 *   archive_driver tensor ARCHIVE NAME OUT.bin    (random access, oz_archive_read_tensor)
 *   archive_driver aligned ARCHIVE ALIGN          (every external tensor's pointer aligned)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <onnxcore/onnxcore.h>
#include <onnxz/archive.h>

#include "testdir.h"

static int report(oc_status st, const oc_error *err) {
    if (st == OC_OK) {
        printf("ok\n");
        return 0;
    }
    printf("%s: %s\n", oc_status_name(st), err->message);
    return 1;
}

static int roundtrip(int argc, char **argv) {
    oz_archive_options ao = OZ_ARCHIVE_OPTIONS_INIT;
    for (int i = 4; i < argc; i++) {
        if (!strcmp(argv[i], "--deflate-model"))
            ao.deflate_model = 1;
        else if (!strcmp(argv[i], "--align") && i + 1 < argc)
            ao.serialize.buffer.alignment = strtoull(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--threshold") && i + 1 < argc)
            ao.serialize.buffer.raw_data_threshold = strtoull(argv[++i], NULL, 10);
    }
    FILE *list = fopen(argv[2], "r");
    if (!list) return 2;
    char line[4096], arc[4200], back[4200];
    int n = 0, failed = 0;
    oc_parse_options po = OC_PARSE_OPTIONS_INIT;
    po.no_copy = 1;
    while (fgets(line, sizeof line, list)) {
        line[strcspn(line, "\n")] = '\0';
        if (!line[0]) continue;
        snprintf(arc, sizeof arc, "%s/%d.onnxz", argv[3], n);
        snprintf(back, sizeof back, "%s/%d.back.onnx", argv[3], n);
        n++;
        oc_model *m = NULL;
        oc_error err;
        oc_status st = oc_model_load_file(line, &po, &m, &err);
        if (st == OC_OK) st = oz_archive_save(m, arc, &ao, &err);
        oc_model_free(m);
        m = NULL;
        if (st == OC_OK) st = oz_archive_load(arc, &po, &m, &err);
        if (st == OC_OK) st = oc_model_save_file(m, back, NULL, &err);
        oc_model_free(m);
        if (st != OC_OK) {
            printf("FAIL %s: %s: %s\n", line, oc_status_name(st), err.message);
            failed++;
            continue;
        }
        size_t a, b;
        uint8_t *x = td_read(line, &a), *y = td_read(back, &b);
        if (!x || !y || a != b || memcmp(x, y, a) != 0) {
            printf("FAIL %s: .onnx -> .onnxz -> .onnx differs from the source\n", line);
            failed++;
        }
        free(x);
        free(y);
    }
    fclose(list);
    printf("%d archives, %d failed\n", n, failed);
    return failed || n == 0;
}

int main(int argc, char **argv) {
    if (argc >= 4 && !strcmp(argv[1], "roundtrip")) return roundtrip(argc, argv);
    oc_parse_options po = OC_PARSE_OPTIONS_INIT;
    po.no_copy = 1;
    oc_error err;
    oc_error_clear(&err);
    if (argc >= 4 && !strcmp(argv[1], "load")) {
        oz_zip_reader_options zo = OZ_ZIP_READER_OPTIONS_INIT;
        for (int i = 4; i < argc; i++) {
            if (!strcmp(argv[i], "--copy")) po.no_copy = 0;
            if (!strcmp(argv[i], "--pread")) zo.use_pread = 1;
        }
        oz_archive *ar = NULL;
        oc_model *m = NULL;
        oc_status st = oz_archive_open(argv[2], &zo, &ar, &err);
        if (st == OC_OK) st = oz_archive_load_model(ar, &po, &m, &err);
        oz_archive_close(ar);
        if (st == OC_OK) st = oc_model_save_file(m, argv[3], NULL, &err);
        oc_model_free(m);
        return report(st, &err);
    }
    if (argc == 5 && !strcmp(argv[1], "tensor")) {
        oz_archive *ar = NULL;
        oc_bytes b = {0};
        oc_status st = oz_archive_open(argv[2], NULL, &ar, &err);
        if (st == OC_OK) st = oz_archive_read_tensor(ar, argv[3], &b, &err);
        oz_archive_close(ar);
        if (st == OC_OK) {
            FILE *f = fopen(argv[4], "wb");
            if (f) {
                fwrite(b.data, 1, (size_t)b.size, f);
                fclose(f);
            }
        }
        oc_bytes_release(&b);
        return report(st, &err);
    }
    if (argc == 4 && !strcmp(argv[1], "aligned")) {
        oc_model *m = NULL;
        oc_status st = oz_archive_load(argv[2], &po, &m, &err);
        if (st != OC_OK) return report(st, &err);
        uint64_t align = strtoull(argv[3], NULL, 10), shared = 0, bad = 0;
        onnx_GraphProto *g = oc_model_proto(m)->graph;
        for (uint64_t i = 0; g && i < g->initializer.count; i++) {
            const oc_bytes *s = &g->initializer.items[i]->raw_data;
            if (s->mode != OC_BYTES_SHARED) continue;
            shared++;
            bad += ((uintptr_t)s->data % align) != 0;
        }
        oc_model_free(m);
        printf("%llu shared, %llu misaligned\n", (unsigned long long)shared,
               (unsigned long long)bad);
        return bad != 0 || shared == 0;
    }
    fprintf(stderr, "usage: see the comment at the top of archive_driver.c\n");
    return 2;
}
