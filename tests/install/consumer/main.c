/*
 * consumer - a program built against an installed onnxz, as a user's would be: packs a
 * model into an archive, loads the archive zero-copy, and compares tensor counts.
 * usage: consumer MODEL.onnx OUT.onnxz
 */
#include <stdio.h>

#include <onnxz/onnxz.h> /* the umbrella header: both libraries */

static oc_status count(void *ctx, onnx_TensorProto *t) {
    (void)t;
    ++*(unsigned long *)ctx;
    return OC_OK;
}

int main(int argc, char **argv) {
    if (argc != 3) return 2;
    oc_parse_options po = OC_PARSE_OPTIONS_INIT;
    po.no_copy = 1;
    oc_model *m = NULL, *back = NULL;
    oc_error err;
    unsigned long a = 0, b = 0;
    if (oc_model_load_file(argv[1], &po, &m, &err) != OC_OK ||
        oz_archive_save(m, argv[2], NULL, &err) != OC_OK ||
        oz_archive_load(argv[2], &po, &back, &err) != OC_OK) {
        fprintf(stderr, "consumer: %s\n", err.message);
        return 1;
    }
    oc_msg_visit_tensors(&onnx_ModelProto_desc, oc_model_proto(m), count, &a);
    oc_msg_visit_tensors(&onnx_ModelProto_desc, oc_model_proto(back), count, &b);
    printf("onnxcore %s: %lu tensors, %lu after the archive\n", oc_version(), a, b);
    oc_model_free(m);
    oc_model_free(back);
    return a == b && a > 0 ? 0 : 1;
}
