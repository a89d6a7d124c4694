/*
 * schema_dump - prints libonnxcore's descriptor tables, one field per line:
 *   Message<TAB>field<TAB>number<TAB>type<TAB>label<TAB>submessage
 * check_schema.py compares this with what protoc reads from the .proto files (rule W-1).
 */
#include <stdio.h>

#include "internal/schema.h"

static const char *const type_names[] = {"int64", "int32",  "uint64", "float", "double",
                                         "enum",  "string", "bytes",  "bytes", "message"};
static const char *const label_names[] = {"optional", "repeated", "packed", "oneof"};

static void dump(const oc_msgdesc *d) {
    for (uint32_t i = 0; i < d->nfields; i++) {
        const oc_field *f = &d->fields[i];
        printf("%s\t%s\t%u\t%s\t%s\t%s\n", oc_msgdesc_name(d), f->name, f->number,
               type_names[f->type], label_names[f->label], f->sub ? oc_msgdesc_name(f->sub) : "-");
    }
}

int main(void) {
#define DUMP_(M, N) dump(&onnx_##M##_desc);
    ONNX_MESSAGES(DUMP_)
    return 0;
}
