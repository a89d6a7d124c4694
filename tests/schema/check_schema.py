#!/usr/bin/env python3
"""Rule W-1: libonnxcore's field tables are exactly the IR-14 schema.

Compiles tests/data/proto/*.proto with protoc into a descriptor set, then compares every
message and field (name, number, type, label, packing, oneof, message type) with the
tables that schema_dump prints. Also checks the tables list fields in ascending number
order (W-20 depends on it)."""
import os, shutil, subprocess, sys, tempfile
from google.protobuf import descriptor_pb2

dump_exe, proto_dir = sys.argv[1], sys.argv[2]
F = descriptor_pb2.FieldDescriptorProto
TYPES = {F.TYPE_INT64: "int64", F.TYPE_INT32: "int32", F.TYPE_UINT64: "uint64",
         F.TYPE_FLOAT: "float", F.TYPE_DOUBLE: "double", F.TYPE_ENUM: "enum",
         F.TYPE_STRING: "string", F.TYPE_BYTES: "bytes", F.TYPE_MESSAGE: "message"}

with tempfile.TemporaryDirectory() as tmp:
    os.makedirs(os.path.join(tmp, "onnx"))
    for name in ("onnx-ml.proto", "onnx-data.proto"):
        shutil.copy(os.path.join(proto_dir, name), os.path.join(tmp, "onnx", name))
    out = os.path.join(tmp, "set.pb")
    subprocess.run(["protoc", "-I", tmp, "--include_imports", "--descriptor_set_out=" + out,
                    "onnx/onnx-ml.proto", "onnx/onnx-data.proto"], check=True)
    fds = descriptor_pb2.FileDescriptorSet.FromString(open(out, "rb").read())

expected = {}
def walk(msg, prefix):
    name = prefix + msg.name
    for f in msg.field:
        if f.label == F.LABEL_REPEATED:
            label = "packed" if f.options.packed else "repeated"
        else:
            label = "oneof" if f.HasField("oneof_index") else "optional"
        if f.type not in TYPES:
            sys.exit(f"unexpected field type {f.type} in {name}.{f.name}")
        sub = f.type_name.split(".", 2)[-1] if f.type == F.TYPE_MESSAGE else "-"
        expected[(name, f.name)] = (f.number, TYPES[f.type], label, sub)
    for nested in msg.nested_type:
        walk(nested, name + ".")
for fd in fds.file:
    for m in fd.message_type:
        if m.name == "OperatorSetProto" or m.name == "OperatorProto":
            continue
        walk(m, "")

ours, order = {}, {}
for line in subprocess.run([dump_exe], check=True, capture_output=True, text=True).stdout.splitlines():
    msg, field, number, typ, label, sub = line.split("\t")
    typ = "bytes" if (msg, field) == ("TensorProto", "raw_data") else typ
    ours[(msg, field)] = (int(number), typ, label, sub)
    order.setdefault(msg, []).append(int(number))

problems = []
for key in sorted(set(expected) | set(ours)):
    if expected.get(key) != ours.get(key):
        problems.append(f"{key[0]}.{key[1]}: schema {expected.get(key)} tables {ours.get(key)}")
for msg, numbers in order.items():
    if numbers != sorted(set(numbers)):
        problems.append(f"{msg}: fields not in ascending number order: {numbers}")
messages = {k[0] for k in expected}
print(f"{len(expected)} fields in {len(messages)} messages checked")
if problems:
    print("\n".join(problems))
    sys.exit(1)
