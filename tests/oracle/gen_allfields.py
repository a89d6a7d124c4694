#!/usr/bin/python3
"""Build messages covering every message and field of the IR-14 schema, with protobuf's bytes.

The IR-14 schemas (tests/data/proto) are compiled with protoc --python_out into a temporary
directory and imported from there. python3-onnx must NOT be imported in this process: its
older onnx.* descriptors would clash with these in protobuf's descriptor pool.

Cases (each one file, parsed by protobuf and re-serialized to get the expectation):
  * reflective: for every message type, walking its descriptor so that no field is missed:
    empty, every field explicitly zero/empty (proto2 presence), one case per oneof member,
    several fills with edge values (negative int32 = 10-byte varint, INT64 min/max,
    UINT64 max, -0.0, NaN, inf, empty and long strings...) nested a few levels deep, and
    fills with unknown fields (varint, length-delimited, fixed32, fixed64, group) merged
    into every nested message;
  * built by hand: a realistic ModelProto using every attribute type, training info,
    functions, sparse initializers, metadata everywhere, device configurations;
    sequence/map/optional nesting; deep nesting; raw_data of many sizes; big strings;
  * hand-encoded non-canonical inputs: packed encoding of unpacked fields and the reverse,
    fields out of order, repeated optional scalars (last wins) and messages (merged), two
    oneof members (last wins), empty packed runs, over-long varints, out-of-range closed
    enum values and wrong wire types (both kept by protobuf as unknown fields);
  * large: a ModelProto with 100,000 nodes and one with a 50 MB raw_data initializer.
After generating, a coverage walk over protobuf's own parse of the cases checks that every
field of every message was set (and every optional field once to its zero value).

Usage: /usr/bin/python3 gen_allfields.py --protos DIR --protoc PROTOC OUT
Writes OUT/cases/*.pb, OUT/expected/* and OUT/manifest.tsv (format: see gen_corpus.py).
"""
import argparse
import math
import os
import random
import shutil
import struct
import subprocess
import sys
import tempfile

from oracle_common import require_protobuf, write_manifest

ml = data = FD = None  # set by load_schema()

# ---------------------------------------------------------------------------------------
# The IR-14 schema, compiled at run time.


def load_schema(proto_dir, protoc, tmp):
    """protoc --python_out the two schemas into tmp and import them as onnx.*_pb2."""
    global ml, data, FD
    if "onnx" in sys.modules:
        raise SystemExit("gen_allfields: python3-onnx is already imported; run separately")
    impl = require_protobuf(protoc)
    src = os.path.join(tmp, "src", "onnx")  # onnx-data.proto imports "onnx/onnx-ml.proto"
    py = os.path.join(tmp, "py")
    os.makedirs(src)
    os.makedirs(py)
    for name in ("onnx-ml.proto", "onnx-data.proto"):
        shutil.copy(os.path.join(proto_dir, name), src)
    subprocess.run([protoc, "-I", os.path.join(tmp, "src"), "--python_out", py,
                    "onnx/onnx-ml.proto", "onnx/onnx-data.proto"], check=True)
    open(os.path.join(py, "onnx", "__init__.py"), "w").close()
    sys.path.insert(0, py)
    from google.protobuf.descriptor import FieldDescriptor
    import onnx.onnx_data_pb2 as data_mod
    import onnx.onnx_ml_pb2 as ml_mod
    if not os.path.realpath(ml_mod.__file__).startswith(os.path.realpath(tmp)):
        raise SystemExit(f"gen_allfields: imported the wrong onnx_ml_pb2 ({ml_mod.__file__})")
    ml, data, FD = ml_mod, data_mod, FieldDescriptor
    return impl


def all_message_descriptors():
    """Every message of both files, nested ones included, in declaration order."""
    out = []

    def walk(desc):
        out.append(desc)
        for nested in desc.nested_types:
            walk(nested)

    for module in (ml, data):
        for desc in module.DESCRIPTOR.message_types_by_name.values():
            walk(desc)
    return out


def type_name(desc):
    """The name oc_msgdesc_find accepts: "TensorProto", "TypeProto.Tensor"..."""
    return desc.full_name[len("onnx."):]


def message_class(desc):
    module = ml if desc.file.name.endswith("onnx-ml.proto") else data
    cls = module
    for part in type_name(desc).split("."):
        cls = getattr(cls, part)
    return cls


# ---------------------------------------------------------------------------------------
# Edge values by field type. Index k picks one; repeated fields take all of them, rotated.

BIG = "x" * 300  # a 2-byte length prefix
EDGES = {}


def init_edges():
    EDGES.update({
        FD.TYPE_INT64: [1, -1, 2**63 - 1, -2**63, 0, 127, 128, 300, -300, 2**31, -2**31 - 1,
                        2**32, 16384],
        FD.TYPE_INT32: [-1, 1, 2**31 - 1, -2**31, 0, 127, 128, -128, 16383, 16384],
        FD.TYPE_UINT64: [2**64 - 1, 1, 0, 2**63, 127, 128, 2**32 - 1, 2**32],
        FD.TYPE_FLOAT: [-0.0, 1.5, math.nan, math.inf, -math.inf, 0.0, -2.25,
                        3.4028234663852886e38, 1.401298464324817e-45, 1.1754943508222875e-38],
        FD.TYPE_DOUBLE: [-0.0, 2.5, math.nan, math.inf, -math.inf, 0.0, 1e300, -1e-300,
                         5e-324, 2.2250738585072014e-308],
        FD.TYPE_STRING: ["s", "", "ünïcødé ✓ 名前", "a\x00b", BIG, "tab\there"],
        FD.TYPE_BYTES: [b"\x00\xff\x80", b"", bytes(range(256)), b"b", b"\x00"],
    })


def edge(fd, k):
    if fd.type == FD.TYPE_ENUM:
        values = [v.number for v in fd.enum_type.values]
    else:
        values = EDGES[fd.type]
    return values[k % len(values)]


def edges_rotated(fd, k):
    if fd.type == FD.TYPE_ENUM:
        values = [v.number for v in fd.enum_type.values]
    else:
        values = EDGES[fd.type]
    k %= len(values)
    return values[k:] + values[:k]


def zero(fd):
    if fd.type == FD.TYPE_STRING:
        return ""
    if fd.type == FD.TYPE_BYTES:
        return b""
    if fd.type in (FD.TYPE_FLOAT, FD.TYPE_DOUBLE):
        return 0.0
    return 0  # integers and enums (every ONNX enum has a 0 value)


def check_field_types():
    """Fail if the schema grew a field type this generator would silently skip."""
    known = set(EDGES) | {FD.TYPE_ENUM, FD.TYPE_MESSAGE}
    for desc in all_message_descriptors():
        for fd in desc.fields:
            if fd.type not in known:
                raise SystemExit(f"gen_allfields: {desc.full_name}.{fd.name} has field "
                                 f"type {fd.type}, unknown to this generator")


# ---------------------------------------------------------------------------------------
# Hand encoding (for unknown fields and non-canonical inputs).

VARINT, I64, LEN, SGROUP, EGROUP, I32 = 0, 1, 2, 3, 4, 5


def varint(n, pad=0):
    """Varint of n (negative: two's complement, 10 bytes), with pad extra 0x80 bytes."""
    n &= (1 << 64) - 1
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if not n:
            break
        out.append(b | 0x80)
    if pad:  # continue with zero groups: same value, more bytes
        out += bytes([b | 0x80]) + b"\x80" * (pad - 1) + b"\x00"
    else:
        out.append(b)
    return bytes(out)


def key(num, wt, pad=0):
    return varint(num << 3 | wt, pad)


def f_varint(num, v, pad=0):
    return key(num, VARINT) + varint(v, pad)


def f_len(num, payload):
    return key(num, LEN) + varint(len(payload)) + payload


def f_str(num, s):
    return f_len(num, s.encode() if isinstance(s, str) else s)


def f_fixed32(num, u):
    return key(num, I32) + struct.pack("<I", u)


def f_fixed64(num, u):
    return key(num, I64) + struct.pack("<Q", u)


def f_float(num, x):
    return key(num, I32) + struct.pack("<f", x)


def f_double(num, x):
    return key(num, I64) + struct.pack("<d", x)


def packed_varints(num, values):
    return f_len(num, b"".join(varint(v) for v in values))


def packed_floats(num, values):
    return f_len(num, b"".join(struct.pack("<f", v) for v in values))


def packed_doubles(num, values):
    return f_len(num, b"".join(struct.pack("<d", v) for v in values))


def group(num, payload):
    return key(num, SGROUP) + payload + key(num, EGROUP)


# Unknown fields of every wire type, with numbers no ONNX message uses.
UNKNOWN = (f_varint(999, 2**63 + 5)
           + f_len(1000, b"unknown\x00bytes")
           + f_fixed32(1001, 0xDEADBEEF)
           + f_fixed64(1002, 0x0123456789ABCDEF)
           + group(1003, f_varint(1, 7) + f_len(2, b"in group")
                   + group(3, f_fixed32(1, 1)) + f_fixed64(4, 2))
           + f_len(1004, b"")
           + f_varint(536870911, 1))  # the largest field number


# ---------------------------------------------------------------------------------------
# Reflective filling.


class Fill:
    """How to fill a message: which edge index, how deep, how many repeated items."""

    def __init__(self, k, max_depth, reps, unknown=False):
        self.k, self.max_depth, self.reps, self.unknown = k, max_depth, reps, unknown


def fill(msg, plan, k, depth=0):
    """Sets every field of msg (one member per oneof, chosen by k) with edge values."""
    desc = msg.DESCRIPTOR
    chosen = {o.name: o.fields[(k + depth) % len(o.fields)] for o in desc.oneofs}
    for fd in desc.fields:
        if fd.containing_oneof is not None and chosen[fd.containing_oneof.name] is not fd:
            continue
        repeated = fd.label == FD.LABEL_REPEATED
        if fd.type == FD.TYPE_MESSAGE:
            if depth >= plan.max_depth:  # leaves: present but empty, no recursion
                if repeated:
                    getattr(msg, fd.name).add()
                else:
                    getattr(msg, fd.name).SetInParent()
                continue
            items = ([getattr(msg, fd.name).add() for _ in range(plan.reps(depth))]
                     if repeated else [getattr(msg, fd.name)])
            for i, sub in enumerate(items):
                sub.SetInParent()
                fill(sub, plan, k + i + 1, depth + 1)
        elif repeated:
            getattr(msg, fd.name).extend(edges_rotated(fd, k))
        else:
            setattr(msg, fd.name, edge(fd, k))
    if plan.unknown:
        msg.MergeFromString(UNKNOWN)


def fill_zero(msg, oneof_pick):
    """Every optional field present with its zero value / as an empty message."""
    desc = msg.DESCRIPTOR
    for fd in desc.fields:
        if fd.label == FD.LABEL_REPEATED:
            continue
        o = fd.containing_oneof
        if o is not None and o.fields[oneof_pick % len(o.fields)] is not fd:
            continue
        if fd.type == FD.TYPE_MESSAGE:
            getattr(msg, fd.name).SetInParent()
        else:
            setattr(msg, fd.name, zero(fd))


def reflective_cases(desc):
    cls = message_class(desc)
    name = type_name(desc)
    cases = [(name, "empty", b"")]
    n_oneof = max([len(o.fields) for o in desc.oneofs] or [1])
    for j in range(n_oneof):
        m = cls()
        fill_zero(m, j)
        cases.append((name, f"zeros_{j}", m.SerializeToString()))
    # The fills: k cycles edge values and oneof members; depth and fan-out vary.
    plans = [Fill(k, 3, lambda d: [3, 2, 1, 1][d]) for k in range(4)]
    plans += [Fill(k, 5, lambda d: 1) for k in range(4, 6)]
    plans += [Fill(k, 2, lambda d: 2, unknown=True) for k in range(6, 8)]
    for plan in plans:
        m = cls()
        fill(m, plan, plan.k)
        label = ("unknown" if plan.unknown else "full") + f"_{plan.k}"
        cases.append((name, label, m.SerializeToString()))
    # Each field alone, set to every edge value (single fields stress presence/sizes).
    for fd in desc.fields:
        if fd.type == FD.TYPE_MESSAGE or fd.label == FD.LABEL_REPEATED:
            continue
        for i, value in enumerate(edges_rotated(fd, 0)):
            m = cls()
            setattr(m, fd.name, value)
            cases.append((name, f"only_{fd.name}_{i}", m.SerializeToString()))
    return cases


# ---------------------------------------------------------------------------------------
# Built by hand: realistic messages the reflective walk does not shape.


def meta(container, tag):
    p = container.metadata_props.add()
    p.key, p.value = f"{tag}.key", f"{tag} value"


def tensor(name, dims, data_type, raw=None):
    t = ml.TensorProto(name=name, data_type=data_type)
    t.dims.extend(dims)
    if raw is not None:
        t.raw_data = raw
    return t


def value_info(name, elem_type, shape):
    vi = ml.ValueInfoProto(name=name)
    tt = vi.type.tensor_type
    tt.elem_type = elem_type
    tt.shape.SetInParent()
    for d in shape:
        dim = tt.shape.dim.add()
        if isinstance(d, str):
            dim.dim_param = d
        else:
            dim.dim_value = d
    meta(vi, "value_info")
    return vi


def every_attribute_type(node):
    """One attribute of each AttributeType, with the matching value field."""
    A = ml.AttributeProto
    node.attribute.add(name="f", type=A.FLOAT, f=-0.0)
    node.attribute.add(name="i", type=A.INT, i=-1)
    node.attribute.add(name="s", type=A.STRING, s=b"")
    node.attribute.add(name="t", type=A.TENSOR).t.CopyFrom(tensor("t", [2], 7, b"\x01" * 16))
    g = node.attribute.add(name="g", type=A.GRAPH).g
    g.name = "sub"
    g.node.add(op_type="Identity", input=["x"], output=["y"])
    a = node.attribute.add(name="floats", type=A.FLOATS)
    a.floats.extend([1.0, math.nan, -math.inf])
    node.attribute.add(name="ints", type=A.INTS).ints.extend([-2**63, 0, 2**63 - 1])
    node.attribute.add(name="strings", type=A.STRINGS).strings.extend([b"", b"a", b"\xff"])
    a = node.attribute.add(name="tensors", type=A.TENSORS)
    a.tensors.add().CopyFrom(tensor("t0", [], 1))
    a.tensors.add().string_data.extend([b"x", b""])
    a = node.attribute.add(name="graphs", type=A.GRAPHS)
    a.graphs.add(name="g0")
    a.graphs.add()
    sp = node.attribute.add(name="sparse", type=A.SPARSE_TENSOR).sparse_tensor
    sp.values.CopyFrom(tensor("v", [2], 1))
    sp.values.float_data.extend([1.0, 2.0])
    sp.indices.CopyFrom(tensor("i", [2], 7))
    sp.indices.int64_data.extend([0, 5])
    sp.dims.extend([10])
    a = node.attribute.add(name="sparses", type=A.SPARSE_TENSORS)
    a.sparse_tensors.add().dims.extend([1, 2])
    a.sparse_tensors.add()
    tp = node.attribute.add(name="tp", type=A.TYPE_PROTO).tp
    tp.sequence_type.elem_type.tensor_type.elem_type = 1
    a = node.attribute.add(name="tps", type=A.TYPE_PROTOS)
    a.type_protos.add().map_type.key_type = 7
    a.type_protos.add().optional_type.elem_type.sparse_tensor_type.elem_type = 1
    node.attribute.add(name="ref", type=A.FLOAT, ref_attr_name="alpha", doc_string="ref")
    node.attribute.add(name="undefined", type=A.UNDEFINED)


def realistic_model():
    m = ml.ModelProto(ir_version=14, producer_name="oracle", producer_version="1",
                      domain="ai.onnxz.test", model_version=3, doc_string="doc")
    m.opset_import.add(domain="", version=23)
    m.opset_import.add(domain="ai.onnx.ml", version=5)
    meta(m, "model")
    g = m.graph
    g.name, g.doc_string = "main", "graph doc"
    meta(g, "graph")
    g.input.append(value_info("X", 1, ["N", 3]))
    g.output.append(value_info("Y", 1, ["N", 0]))
    g.value_info.append(value_info("H", 1, []))
    g.initializer.append(tensor("W", [3, 2], 1, struct.pack("<6f", *range(6))))
    w = g.initializer[0]
    w.doc_string = "weights"
    meta(w, "tensor")
    ext = tensor("E", [4], 1)
    ext.data_location = ml.TensorProto.EXTERNAL
    for k, v in (("location", "w.bin"), ("offset", "0"), ("length", "16")):
        ext.external_data.add(key=k, value=v)
    g.initializer.append(ext)
    seg = tensor("S", [2], 7)
    seg.segment.begin, seg.segment.end = 0, 2
    seg.int64_data.extend([1, -1])
    g.initializer.append(seg)
    sp = g.sparse_initializer.add()
    sp.values.CopyFrom(tensor("SV", [2], 1))
    sp.values.float_data.extend([0.5, -0.5])
    sp.indices.CopyFrom(tensor("SI", [2, 2], 7))
    sp.indices.int64_data.extend([0, 1, 2, 0])
    sp.dims.extend([3, 3])
    qa = g.quantization_annotation.add(tensor_name="H")
    qa.quant_parameter_tensor_names.add(key="SCALE_TENSOR", value="s")
    n = g.node.add(name="n0", op_type="Custom", domain="ai.onnxz.test", overload="v2",
                   doc_string="node doc", input=["X", "", "W"], output=["H"])
    meta(n, "node")
    every_attribute_type(n)
    dc = n.device_configurations.add(configuration_id="cfg", pipeline_stage=-1)
    ss = dc.sharding_spec.add(tensor_name="X")
    ss.device.extend([0, 1, -1])
    ss.index_to_device_group_map.add(key=-1).value.extend([0, 1])
    sd = ss.sharded_dim.add(axis=-1)
    sd.simple_sharding.add(dim_value=0, num_shards=2)
    sd.simple_sharding.add(dim_param="N", num_shards=2)
    g.node.add(op_type="Relu", input=["H"], output=["Y"])
    ti = m.training_info.add()
    ti.initialization.name = "init"
    ti.initialization.node.add(op_type="RandomNormal", output=["W"])
    ti.algorithm.name = "algo"
    ti.algorithm.node.add(op_type="Sub", input=["W", "G"], output=["W_new"])
    ti.initialization_binding.add(key="W", value="W")
    ti.update_binding.add(key="W", value="W_new")
    m.training_info.add()  # an empty TrainingInfoProto
    f = m.functions.add(name="F", domain="ai.onnxz.test", overload="o", doc_string="fn")
    f.input.extend(["a", "b"])
    f.output.append("c")
    f.attribute.append("alpha")
    f.attribute_proto.add(name="beta", type=ml.AttributeProto.FLOAT, f=0.5)
    f.node.add(op_type="Add", input=["a", "b"], output=["c"])
    f.opset_import.add(domain="", version=23)
    f.value_info.append(value_info("c", 1, [1]))
    meta(f, "function")
    dev = m.configuration.add(name="dev", num_devices=2)
    dev.device.extend(["cuda:0", "cuda:1"])
    return m


def nested_containers():
    """SequenceProto / MapProto / OptionalProto inside one another."""
    seq = data.SequenceProto(name="seq", elem_type=data.SequenceProto.SEQUENCE)
    inner = seq.sequence_values.add(name="inner", elem_type=data.SequenceProto.MAP)
    mp = inner.map_values.add(name="map", key_type=7)
    mp.keys.extend([-1, 0, 2**63 - 1])
    mp.values.elem_type = data.SequenceProto.OPTIONAL
    for i in range(3):
        opt = mp.values.optional_values.add(name=f"o{i}")
        if i == 0:
            opt.elem_type = data.OptionalProto.TENSOR
            opt.tensor_value.CopyFrom(tensor("t", [1], 1, b"\0\0\x80\x3f"))
        elif i == 1:
            opt.elem_type = data.OptionalProto.OPTIONAL
            opt.optional_value.optional_value.elem_type = data.OptionalProto.UNDEFINED
        else:
            opt.elem_type = data.OptionalProto.SPARSE_TENSOR
            opt.sparse_tensor_value.dims.append(4)
    smap = seq.sequence_values.add(elem_type=data.SequenceProto.MAP).map_values.add()
    smap.key_type = 8
    smap.string_keys.extend([b"a", b"", b"\xff"])
    smap.values.tensor_values.add().dims.append(0)
    seq.sparse_tensor_values.add().dims.extend([2, 2])
    seq.tensor_values.add()
    return seq


def deep_cases():
    """Long nesting chains (kept under both decoders' limit of 100 levels)."""
    cases = []
    m = ml.ModelProto(ir_version=14)
    g = m.graph
    for level in range(25):  # graph -> node -> attribute -> graph: 3 levels each
        g.name = f"g{level}"
        a = g.node.add(op_type="If").attribute.add(name="then", type=ml.AttributeProto.GRAPH)
        g = a.g
    cases.append(("ModelProto", "deep_graphs", m.SerializeToString()))
    t = ml.TypeProto()
    cur = t
    for _ in range(40):  # TypeProto -> Sequence -> TypeProto: 2 levels each
        cur = cur.sequence_type.elem_type
    cur.tensor_type.elem_type = 1
    cases.append(("TypeProto", "deep_types", t.SerializeToString()))
    s = data.SequenceProto()
    cur = s
    for _ in range(80):
        cur = cur.sequence_values.add(name="s")
    cases.append(("SequenceProto", "deep_sequences", s.SerializeToString()))
    o = data.OptionalProto()
    cur = o
    for _ in range(80):
        cur = cur.optional_value
        cur.elem_type = data.OptionalProto.OPTIONAL
    cases.append(("OptionalProto", "deep_optionals", o.SerializeToString()))
    return cases


def raw_data_cases():
    cases = []
    rng = random.Random(14)
    for size in (0, 1, 2, 63, 64, 65, 127, 128, 1023, 1024, 1025, 4096, 16383, 16384,
                 65537, 1 << 20, (1 << 21) + 3):
        t = tensor(f"raw{size}", [size], 2, rng.randbytes(size))
        cases.append(("TensorProto", f"raw_{size}", t.SerializeToString()))
    # Several tensors around the no_copy threshold inside one graph.
    m = ml.ModelProto(ir_version=14)
    for size in (0, 1023, 1024, 1025, 0, 70000):
        m.graph.initializer.append(tensor(f"w{size}", [size], 2, rng.randbytes(size)))
    cases.append(("ModelProto", "raw_sizes_in_graph", m.SerializeToString()))
    # Many payloads over the decoder's 64 KiB parallel-copy size, at every kind of place
    # a tensor can be, so that copies done by a thread pool must all land right.
    m = ml.ModelProto(ir_version=14)
    big = lambda i: tensor(f"p{i}", [65536 + i], 2, rng.randbytes(65536 + i))  # noqa: E731
    for i in range(8):
        m.graph.initializer.append(big(i))
    a = m.graph.node.add(op_type="If").attribute.add(name="g", type=ml.AttributeProto.GRAPH)
    a.g.initializer.append(big(8))
    a.g.node.add(op_type="Constant").attribute.add(name="value", type=4).t.CopyFrom(big(9))
    sp = m.graph.sparse_initializer.add()
    sp.values.CopyFrom(big(10))
    sp.indices.CopyFrom(big(11))
    m.training_info.add().initialization.initializer.append(big(12))
    m.functions.add(name="f").node.add().attribute.add(name="t").tensors.append(big(13))
    cases.append(("ModelProto", "raw_many_parallel_copies", m.SerializeToString()))
    return cases


def big_string_cases():
    m = ml.ModelProto(doc_string="d" * 70000, producer_name="p" * 2097152)
    m.graph.node.add(name="n" * 16384, doc_string="é" * 100000)
    t = ml.TensorProto()
    t.string_data.extend([b"s" * 127, b"s" * 128, b"\x00" * 200000, b""])
    return [("ModelProto", "big_strings", m.SerializeToString()),
            ("TensorProto", "big_string_data", t.SerializeToString())]


def built_cases():
    cases = [("ModelProto", "realistic", realistic_model().SerializeToString())]
    withunk = realistic_model()
    withunk.MergeFromString(UNKNOWN)
    withunk.graph.node[0].attribute[3].t.MergeFromString(UNKNOWN)
    withunk.graph.initializer[0].MergeFromString(UNKNOWN)
    cases.append(("ModelProto", "realistic_unknown", withunk.SerializeToString()))
    cases.append(("SequenceProto", "nested_containers", nested_containers().SerializeToString()))
    opt = data.OptionalProto(name="opt", elem_type=data.OptionalProto.SEQUENCE)
    opt.sequence_value.CopyFrom(nested_containers())
    cases.append(("OptionalProto", "optional_sequence", opt.SerializeToString()))
    mp = data.MapProto(name="m", key_type=7)
    mp.keys.extend(range(-5, 5))
    mp.values.CopyFrom(nested_containers())
    cases.append(("MapProto", "map_nested", mp.SerializeToString()))
    return cases + deep_cases() + raw_data_cases() + big_string_cases()


# ---------------------------------------------------------------------------------------
# Hand-encoded non-canonical inputs. Field numbers: see tests/data/proto/onnx-ml.proto.


def noncanonical_cases():
    c = []

    def add(type_, label, payload):
        c.append((type_, "nc_" + label, payload))

    # TensorProto: dims=1 data_type=2 segment=3 float_data=4 int32_data=5 string_data=6
    # int64_data=7 name=8 raw_data=9 double_data=10 uint64_data=11 doc_string=12
    # external_data=13 data_location=14 metadata_props=16
    T = "TensorProto"
    add(T, "dims_packed", packed_varints(1, [2, 3, 2**63 - 1, -1]))
    add(T, "dims_packed_and_unpacked",
        packed_varints(1, [2, 3]) + f_varint(1, 4) + packed_varints(1, []) + f_varint(1, -1)
        + packed_varints(1, [5]))
    add(T, "dims_empty_packed_run", packed_varints(1, []) + f_varint(2, 1))
    add(T, "float_data_unpacked", f_float(4, 1.5) + f_float(4, -0.0) + f_float(4, math.inf))
    add(T, "float_data_mixed", packed_floats(4, [1.0, 2.0]) + f_float(4, 3.0)
        + packed_floats(4, []) + packed_floats(4, [4.0]))
    add(T, "float_data_nan_payloads", f_fixed32(4, 0x7FC00001) + f_fixed32(4, 0xFFC12345)
        + f_len(4, struct.pack("<II", 0x7F800001, 0x80000001)))
    add(T, "float_data_empty_packed", packed_floats(4, []) + f_varint(2, 1))
    add(T, "int32_data_unpacked", f_varint(5, 1) + f_varint(5, -1) + f_varint(5, -2**31)
        + f_varint(5, 2**31 - 1))
    add(T, "int32_data_5byte_negative", f_len(5, b"\xff\xff\xff\xff\x0f" + varint(3)))
    add(T, "int32_data_truncated_64bit", packed_varints(5, [2**35 + 7, 2**63 + 1]))
    add(T, "int64_data_unpacked", f_varint(7, -2**63) + f_varint(7, 2**63 - 1)
        + f_varint(7, 0))
    add(T, "double_data_unpacked", f_double(10, 1e300) + f_double(10, -0.0)
        + f_fixed64(10, 0x7FF0000000000001) + packed_doubles(10, [2.5]))
    add(T, "uint64_data_unpacked", f_varint(11, 2**64 - 1) + f_varint(11, 0)
        + packed_varints(11, [2**63]) + f_varint(11, 1))
    add(T, "string_data_with_empty", f_str(6, b"") + f_str(6, b"a") + f_str(6, b""))
    add(T, "out_of_order", f_str(8, "late name") + f_varint(7, 5) + f_varint(1, 3)
        + f_varint(2, 7) + f_str(16, f_str(1, "k") + f_str(2, "v")) + f_varint(1, 4)
        + f_str(9, b"\x01\x02") + f_varint(14, 0) + f_str(12, "doc"))
    add(T, "reverse_order", f_str(16, b"") + f_varint(14, 1) + f_str(13, b"")
        + f_str(12, "d") + packed_varints(11, [1]) + packed_doubles(10, [1.0])
        + f_str(9, b"r") + f_str(8, "n") + packed_varints(7, [1]) + f_str(6, b"s")
        + packed_varints(5, [1]) + packed_floats(4, [1.0]) + f_str(3, f_varint(1, 1))
        + f_varint(2, 1) + f_varint(1, 1))
    add(T, "data_type_twice", f_varint(2, 1) + f_varint(2, 7))
    add(T, "name_twice", f_str(8, "first") + f_str(8, "second"))
    add(T, "name_twice_last_empty", f_str(8, "first") + f_str(8, ""))
    add(T, "raw_data_twice", f_str(9, b"first raw") + f_str(9, b"2nd"))
    add(T, "raw_data_then_empty", f_str(9, b"raw") + f_str(9, b""))
    add(T, "segment_twice_merged", f_str(3, f_varint(1, 1)) + f_str(3, f_varint(2, 5)))
    add(T, "segment_twice_overwrite", f_str(3, f_varint(1, 1) + f_varint(2, 9))
        + f_str(3, f_varint(1, 2)))
    add(T, "segment_empty", f_str(3, b""))
    add(T, "overlong_varints", f_varint(2, 1, pad=3) + f_varint(1, 0, pad=9)
        + key(8, LEN) + varint(2, pad=2) + b"ab")
    add(T, "overlong_tags", key(2, VARINT, pad=1) + varint(1) + key(1, VARINT, pad=3)
        + varint(3))
    add(T, "data_type_5byte_negative", key(2, VARINT) + b"\xff\xff\xff\xff\x0f")
    add(T, "data_type_truncated_64bit", f_varint(2, 2**32 + 1))
    add(T, "data_location_unknown_7", f_varint(14, 7))
    add(T, "data_location_1_then_7", f_varint(14, 1) + f_varint(14, 7) + f_varint(2, 1))
    add(T, "data_location_negative", f_varint(14, -1))
    add(T, "data_location_overlong", f_varint(14, 1, pad=2))
    add(T, "data_location_truncated_valid", f_varint(14, 2**32 + 1))
    add(T, "data_location_truncated_unknown", f_varint(14, 2**32 + 7))
    add(T, "data_location_5byte_negative", key(14, VARINT) + b"\xff\xff\xff\xff\x0f")
    add(T, "unknown_enum_between_unknowns", f_varint(999, 1) + f_varint(14, 7)
        + f_str(1000, b"x") + f_varint(14, 9) + f_varint(2, 1))
    add(T, "packed_fields_wrong_wire_types", f_varint(4, 1) + f_fixed32(7, 2)
        + f_fixed64(5, 3) + f_varint(6, 4) + f_fixed32(10, 5) + f_varint(13, 6))
    add(T, "wrong_wire_types", key(8, VARINT) + varint(5) + f_fixed64(1, 7)
        + f_fixed32(9, 1) + f_str(2, b"xx") + f_str(14, b"") + f_varint(3, 1)
        + key(12, I32) + b"abcd")
    add(T, "unknown_interleaved", f_varint(999, 1) + f_varint(1, 2) + f_str(1000, b"u")
        + f_varint(1, 3) + f_fixed32(1001, 5) + f_str(8, "n") + group(1003, b""))
    # protobuf re-encodes unknown fields from their values: over-long varints shrink.
    add(T, "unknown_overlong_varint", f_varint(999, 1, pad=2) + f_varint(2, 1))
    add(T, "unknown_overlong_tag", key(999, VARINT, pad=1) + varint(1))
    add(T, "unknown_overlong_length", key(999, LEN) + varint(2, pad=1) + b"ab")
    add(T, "unknown_enum_overlong", f_varint(2, 5) + f_varint(14, 7, pad=1))
    add(T, "unknown_group_overlong", key(1003, SGROUP, pad=1) + f_varint(1, 2, pad=1)
        + key(1003, EGROUP))
    # proto2 strings are not checked for UTF-8 (libprotobuf only logs an error).
    add(T, "invalid_utf8_string", f_str(8, b"\xff\xfe") + f_str(12, b"\xc3"))
    add(T, "metadata_interleaved", f_str(16, f_str(1, "a")) + f_varint(2, 1)
        + f_str(16, f_str(2, "b")) + f_str(13, f_str(1, "location")))
    add(T, "string_entry_twice", f_str(16, f_str(1, "k1") + f_str(1, "k2") + f_str(2, "v")))

    # AttributeProto: name=1 f=2 i=3 s=4 t=5 g=6 floats=7 ints=8 strings=9 tensors=10
    # graphs=11 doc_string=13 tp=14 type_protos=15 type=20 ref_attr_name=21
    # sparse_tensor=22 sparse_tensors=23
    A = "AttributeProto"
    add(A, "ints_packed", f_str(1, "a") + packed_varints(8, [1, -1, 2**63 - 1])
        + f_varint(20, 7))
    add(A, "floats_packed", packed_floats(7, [1.0, -0.0, math.nan]) + f_varint(20, 6))
    add(A, "ints_mixed", f_varint(8, 1) + packed_varints(8, [2, 3]) + packed_varints(8, [])
        + f_varint(8, 4))
    add(A, "floats_mixed", f_float(7, 1.0) + packed_floats(7, []) + packed_floats(7, [2.0])
        + f_float(7, 3.0))
    add(A, "type_unknown_99", f_str(1, "x") + f_varint(20, 99))
    add(A, "type_2_then_99", f_varint(20, 2) + f_varint(20, 99) + f_varint(3, 5))
    add(A, "type_99_then_2", f_varint(20, 99) + f_varint(20, 2))
    add(A, "type_negative", f_varint(20, -2))
    add(A, "type_length_delimited", f_str(20, varint(1)) + f_varint(20, 3))
    add(A, "repeated_wrong_wire_types", f_fixed64(8, 1) + f_fixed64(7, 2) + f_varint(9, 3)
        + f_varint(10, 4) + f_fixed32(11, 5) + f_varint(8, 6))
    add(A, "t_twice_merged", f_str(5, f_varint(1, 2) + f_str(8, "a"))
        + f_str(5, f_varint(1, 3) + f_str(8, "b") + f_str(9, b"r")))
    add(A, "g_twice_merged", f_str(6, f_str(1, f_str(4, "Relu")) + f_str(2, "g1"))
        + f_str(6, f_str(1, f_str(4, "Abs")) + f_str(2, "g2")))
    add(A, "f_twice", f_float(2, 1.0) + f_float(2, -0.0))
    add(A, "i_twice", f_varint(3, -1) + f_varint(3, 2))
    add(A, "strings_interleaved", f_str(9, b"a") + f_str(1, "n") + f_str(9, b"")
        + f_varint(20, 8) + f_str(9, b"c"))
    add(A, "tp_twice_merged", f_str(14, f_str(1, f_varint(1, 1)))
        + f_str(14, f_str(1, f_str(2, b""))))

    # TypeProto: tensor_type=1 sequence_type=4 map_type=5 denotation=6 opaque_type=7
    # sparse_tensor_type=8 optional_type=9 (one oneof, except denotation)
    P = "TypeProto"
    add(P, "oneof_tensor_then_sequence", f_str(1, f_varint(1, 1)) + f_str(4, b""))
    add(P, "oneof_sequence_then_tensor", f_str(4, f_str(1, f_str(1, b""))) + f_str(1, b""))
    add(P, "oneof_same_member_merged", f_str(1, f_varint(1, 1))
        + f_str(1, f_str(2, f_str(1, f_varint(1, 3)))))
    add(P, "oneof_switch_and_back", f_str(1, f_varint(1, 1)) + f_str(5, f_varint(1, 7))
        + f_str(1, f_str(2, b"")))
    add(P, "oneof_all_members", f_str(1, b"") + f_str(4, b"") + f_str(5, b"")
        + f_str(6, "den") + f_str(7, f_str(1, "d")) + f_str(8, b"") + f_str(9, b""))
    add(P, "denotation_between", f_str(6, "a") + f_str(9, b"") + f_str(6, "b"))

    # TensorShapeProto.Dimension: dim_value=1 dim_param=2 (oneof) denotation=3
    D = "TensorShapeProto.Dimension"
    add(D, "value_then_param", f_varint(1, 3) + f_str(2, "N"))
    add(D, "param_then_value", f_str(2, "N") + f_varint(1, 3))
    add(D, "value_twice", f_varint(1, 3) + f_varint(1, -1))
    add(D, "param_empty", f_str(2, b""))
    add(D, "value_zero", f_varint(1, 0))
    add(D, "denotation_first", f_str(3, "DATA_BATCH") + f_varint(1, 1))
    add("TensorShapeProto", "dims_interleaved_unknown",
        f_str(1, f_varint(1, 1)) + f_varint(77, 1) + f_str(1, f_str(2, "M"))
        + f_str(1, b""))

    # SimpleShardedDimProto: dim_value=1 dim_param=2 (oneof) num_shards=3
    S = "SimpleShardedDimProto"
    add(S, "param_then_value", f_str(2, "p") + f_varint(3, 2) + f_varint(1, 8))
    add(S, "value_then_param", f_varint(1, 8) + f_str(2, "p"))
    add(S, "num_shards_twice", f_varint(3, 1) + f_varint(3, 2))

    # Unpacked repeated int64 of other messages, sent packed.
    add("IntIntListEntryProto", "value_packed", f_varint(1, 1) + packed_varints(2, [1, 2]))
    add("ShardingSpecProto", "device_packed", packed_varints(2, [0, -1]) + f_str(1, "t"))
    add("SparseTensorProto", "dims_packed", packed_varints(3, [10, 20]) + f_str(1, b""))
    add("MapProto", "keys_packed", packed_varints(3, [-1, 1]) + f_varint(2, 7))
    add("DeviceConfigurationProto", "num_devices_5byte_negative",
        key(2, VARINT) + b"\xfe\xff\xff\xff\x0f" + f_str(3, "d"))
    add("NodeDeviceConfigurationProto", "pipeline_stage_twice",
        f_varint(3, 1) + f_str(1, "c") + f_varint(3, -7))

    # ModelProto: ir_version=1 ... graph=7 opset_import=8 metadata_props=14
    # training_info=20 functions=25 configuration=26
    M = "ModelProto"
    node = lambda op: f_str(1, f_str(4, op))  # noqa: E731 (a GraphProto.node field)
    add(M, "interleaved_and_merged",
        f_str(8, f_varint(2, 1)) + f_varint(1, 7) + f_str(8, f_str(1, "ai"))
        + f_str(7, node("A") + f_str(2, "g")) + f_varint(1, 8)
        + f_str(7, node("B") + f_str(2, "g2") + node("C")) + f_str(14, b""))
    add(M, "graph_nodes_interleaved",
        f_str(7, node("A") + f_str(2, "name") + node("B")
              + f_str(5, f_str(8, "w") + packed_varints(1, [1])) + node("C")
              + f_str(11, f_str(1, "x")) + node("D")))
    add(M, "nested_noncanonical_tensor",
        f_str(7, f_str(5, f_str(8, "w") + f_float(4, 1.0) + f_float(4, 2.0)
                          + packed_varints(1, [2]) + f_varint(14, 7) + f_varint(999, 1))))
    add(M, "unknown_everywhere",
        UNKNOWN + f_varint(1, 9) + f_str(7, UNKNOWN + node("X") + UNKNOWN)
        + f_str(20, UNKNOWN + f_str(1, UNKNOWN)) + UNKNOWN)
    add(M, "known_number_wrong_type", f_fixed32(7, 1) + f_str(1, b"x") + f_varint(8, 1)
        + f_varint(1, 9))
    add(M, "training_info_merged_graphs",
        f_str(20, f_str(1, node("A")) + f_str(1, node("B")) + f_str(3, f_str(1, "k"))))
    add(M, "empty_submessages", f_str(7, b"") + f_str(8, b"") + f_str(20, b"")
        + f_str(25, b"") + f_str(26, b""))

    # Data containers.
    add("SequenceProto", "elements_interleaved",
        f_str(3, b"") + f_str(1, "s") + f_str(4, b"") + f_str(3, f_varint(1, 1))
        + f_varint(2, 1) + f_str(5, b"") + f_str(7, b"") + f_str(6, b""))
    add("OptionalProto", "value_twice_merged",
        f_str(3, f_varint(1, 1)) + f_varint(2, 1) + f_str(3, f_str(8, "t")))
    add("OptionalProto", "all_values", f_str(7, b"") + f_str(6, b"") + f_str(5, b"")
        + f_str(4, b"") + f_str(3, b""))
    add("MapProto", "values_twice_merged", f_str(5, f_str(1, "a"))
        + f_str(4, b"k") + f_str(5, f_varint(2, 1)))
    return c


# ---------------------------------------------------------------------------------------
# Large inputs.


def large_cases():
    m = ml.ModelProto(ir_version=14, producer_name="large")
    m.opset_import.add(domain="", version=23)
    g = m.graph
    g.name = "chain"
    g.input.append(value_info("x0", 1, [1, 1024]))
    for i in range(100000):
        n = g.node.add(op_type="Add", name=f"n{i}")
        n.input.extend([f"x{i}", "one"])
        n.output.append(f"x{i + 1}")
        if i % 10 == 0:
            n.attribute.add(name="axis", type=ml.AttributeProto.INT, i=-i)
    g.output.append(value_info("x100000", 1, [1, 1024]))
    big = ml.ModelProto(ir_version=14)
    big.graph.initializer.append(
        tensor("w50mb", [50 * 1024 * 1024], 2, random.Random(50).randbytes(50 * 1024 * 1024)))
    big.graph.initializer.append(tensor("after", [1], 2, b"\x07"))
    return [("ModelProto", "large_100k_nodes", m.SerializeToString()),
            ("ModelProto", "large_50mb_raw_data", big.SerializeToString())]


# ---------------------------------------------------------------------------------------
# Coverage: every field of every message set somewhere, every optional one also to zero.


def coverage(parsed_messages):
    seen_set, seen_zero, seen_top, seen_nested = set(), set(), set(), set()

    def walk(msg):
        desc = msg.DESCRIPTOR
        for fd, value in msg.ListFields():
            seen_set.add((desc.full_name, fd.name))
            if fd.type == FD.TYPE_MESSAGE:
                items = value if fd.label == FD.LABEL_REPEATED else [value]
                for sub in items:
                    seen_nested.add(sub.DESCRIPTOR.full_name)
                    walk(sub)
            elif fd.label != FD.LABEL_REPEATED and value == zero(fd) \
                    and not (isinstance(value, float) and math.copysign(1, value) < 0):
                seen_zero.add((desc.full_name, fd.name))

    for msg in parsed_messages:
        seen_top.add(msg.DESCRIPTOR.full_name)
        walk(msg)
    missing = []
    for desc in all_message_descriptors():
        if desc.full_name not in seen_top:
            missing.append(f"{desc.full_name} as a top-level message")
        if desc.full_name not in seen_nested and desc.full_name not in (
                "onnx.ModelProto",):  # nothing contains a ModelProto
            missing.append(f"{desc.full_name} nested in another message")
        for fd in desc.fields:
            if (desc.full_name, fd.name) not in seen_set:
                missing.append(f"{desc.full_name}.{fd.name} set")
            if fd.label != FD.LABEL_REPEATED and fd.type != FD.TYPE_MESSAGE \
                    and (desc.full_name, fd.name) not in seen_zero:
                missing.append(f"{desc.full_name}.{fd.name} set to its zero value")
    return missing


# ---------------------------------------------------------------------------------------


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--protos", required=True, help="directory with onnx-ml/onnx-data.proto")
    ap.add_argument("--protoc", default="protoc")
    ap.add_argument("--no-large", action="store_true", help="skip the 100k-node/50 MB cases")
    ap.add_argument("out")
    args = ap.parse_args()
    out = os.path.abspath(args.out)
    if os.path.exists(out):
        shutil.rmtree(out)
    os.makedirs(os.path.join(out, "cases"))
    with tempfile.TemporaryDirectory(prefix="oracle-pb-") as tmp:
        impl = load_schema(os.path.abspath(args.protos), args.protoc, tmp)
        init_edges()
        check_field_types()
        descs = all_message_descriptors()

        cases = []
        for desc in descs:
            cases += reflective_cases(desc)
        cases += built_cases()
        cases += noncanonical_cases()
        if not args.no_large:
            cases += large_cases()

        classes = {type_name(d): message_class(d) for d in descs}
        entries, parsed = [], []
        for i, (type_, label, payload) in enumerate(cases):
            msg = classes[type_]()
            msg.ParseFromString(payload)  # protobuf must accept every input
            expected = msg.SerializeToString()
            path = os.path.join(out, "cases", f"{i:04d}_{type_}_{label}.pb")
            with open(path, "wb") as f:
                f.write(payload)
            entries.append((type_, path, payload, expected))
            parsed.append(msg)
        missing = coverage(parsed)
        if missing:
            raise SystemExit("gen_allfields: not covered:\n  " + "\n  ".join(missing))
        counts = write_manifest(out, entries)
    print(f"gen_allfields: {counts['total']} cases over {len(descs)} message types, "
          f"{counts['differ']} re-serialize differently; every field covered "
          f"(protobuf python implementation: {impl})")


if __name__ == "__main__":
    main()
