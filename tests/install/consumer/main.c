/*
 * consumer - a program built against an installed onnxz, as a user's would be: packs a
 * model into an archive, loads the archive zero-copy, and compares tensor counts. It uses
 * the stable API alone (docs/api.md): it does not define ONNXZ_EXPERIMENTAL.
 * usage: consumer MODEL.onnx OUT.onnxz
 */
#include <stdio.h>

#include <onnxz/onnxz.h> /* the umbrella header: both libraries */

static unsigned long tensors(oc_model *m) {
    oc_model_stats *st = NULL;
    unsigned long n = 0;
    if (oc_model_stats_collect(oc_model_proto(m), &st, NULL) == OC_OK)
        n = (unsigned long)st->tensors;
    oc_model_stats_free(st);
    return n;
}

int main(int argc, char **argv) {
    if (argc != 3) return 2;
    oz_open_options o = OZ_OPEN_OPTIONS_INIT;
    o.parse.no_copy = 1;
    oc_model *m = NULL, *back = NULL;
    oc_error err;
    if (oz_open(argv[1], &o, &m, NULL, &err) != OC_OK || oz_save(m, argv[2], NULL, &err) != OC_OK ||
        oz_open(argv[2], &o, &back, NULL, &err) != OC_OK) {
        fprintf(stderr, "consumer: %s\n", err.message);
        return 1;
    }
    unsigned long a = tensors(m), b = tensors(back);
    printf("onnxcore %s: %lu tensors, %lu after the archive\n", oc_version(), a, b);
    oc_model_free(m);
    oc_model_free(back);
    return a == b && a > 0 ? 0 : 1;
}
