#!/usr/bin/python3
"""End-to-end tests of the onnxz command-line tool.

    cli_test.py --onnxz PATH --sample samples/mlp.onnx --golden DIR --work DIR
                [--version X.Y.Z] GROUP

GROUP is one of the names in GROUPS below; each ctest test runs one group in its own
work directory (wiped first). Groups that compare with python3-onnx exit 77 (ctest's
SKIP_RETURN_CODE) when the onnx module is missing. Every failed check is reported,
not just the first; the exit status is 1 if any failed.
"""

import argparse
import json
import os
import re
import shutil
import subprocess
import sys

try:
    import numpy
    import onnx
    from onnx import TensorProto, helper, numpy_helper
except ImportError:  # only the groups that need it are skipped
    onnx = None

SKIP = 77
COMMANDS = ["convert", "info", "help"]
TYPED_FIELDS = ["float_data", "int32_data", "string_data", "int64_data", "double_data", "uint64_data"]
JSON_KEYS = {
    "file", "file_size", "ir_version", "producer_name", "producer_version", "domain",
    "model_version", "opset_import", "graph_name", "nodes", "nodes_total", "initializers",
    "sparse_initializers", "inputs", "outputs", "value_infos", "functions",
    "training_infos", "metadata_props", "tensors", "tensor_bytes", "raw_data",
    "typed_data", "external_data",
}
ERROR_RE = re.compile(r"^onnxz: error: (?P<file>.+?): (?P<msg>.+?)(?: \(at offset (?P<off>\d+)\))?$")
USAGE_RE = re.compile(r"^onnxz: usage error: .+ \(see 'onnxz (\w+ )?--help'\)$")


class Context:
    def __init__(self, args):
        self.onnxz = args.onnxz
        self.sample = args.sample
        self.golden = args.golden
        self.work = args.work
        self.version = args.version
        self.failures = []

    # ---- running the tool --------------------------------------------------------
    def run(self, *argv, cwd=None):
        p = subprocess.run([self.onnxz, *argv], capture_output=True, cwd=cwd, timeout=120)
        return p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")

    def path(self, name):
        return os.path.join(self.work, name)

    # ---- checks ------------------------------------------------------------------
    def check(self, cond, what):
        if not cond:
            self.failures.append(what)
        return cond

    def equal(self, got, want, what):
        return self.check(got == want, f"{what}: got {got!r}, want {want!r}")

    def expect_exit(self, argv, code, what):
        rc, out, err = self.run(*argv)
        self.equal(rc, code, f"{what}: exit status of onnxz {' '.join(argv)} (stderr {err!r})")
        return rc, out, err

    def expect_error(self, argv, file, what, offset=None):
        """Exit 1, nothing on stdout, exactly one stderr line in the error format.
        offset: None = must have none, True = must have one; returns the offset."""
        rc, out, err = self.expect_exit(argv, 1, what)
        self.equal(out, "", f"{what}: stdout must stay empty on failure")
        lines = err.splitlines()
        if not self.equal(len(lines), 1, f"{what}: stderr lines ({err!r})"):
            return None
        m = ERROR_RE.match(lines[0])
        if not self.check(m is not None, f"{what}: error line format: {lines[0]!r}"):
            return None
        self.equal(m.group("file"), file, f"{what}: file named in the error")
        if offset is None:
            self.check(m.group("off") is None, f"{what}: unexpected offset in {lines[0]!r}")
            return None
        self.check(m.group("off") is not None, f"{what}: no offset in {lines[0]!r}")
        return int(m.group("off")) if m.group("off") else None

    def expect_usage(self, argv, what):
        rc, out, err = self.expect_exit(argv, 2, what)
        self.equal(out, "", f"{what}: stdout must stay empty on a usage error")
        lines = err.splitlines()
        if self.equal(len(lines), 1, f"{what}: stderr lines ({err!r})"):
            self.check(USAGE_RE.match(lines[0]) is not None, f"{what}: usage line format: {lines[0]!r}")


def read(path):
    with open(path, "rb") as f:
        return f.read()


def write(path, data):
    with open(path, "wb") as f:
        f.write(data)


# ---- facts computed independently with python3-onnx ---------------------------------

def walk_messages(msg, type_name):
    """Every message of a type at any depth under msg (msg included)."""
    if msg.DESCRIPTOR.full_name == type_name:
        yield msg
    for field, value in msg.ListFields():
        if field.type != field.TYPE_MESSAGE:
            continue
        items = value if field.label == field.LABEL_REPEATED else [value]
        for item in items:
            yield from walk_messages(item, type_name)


def varint_size(v):
    v &= (1 << 64) - 1  # negatives are sign-extended to 64 bits, as protobuf does
    n = 1
    while v >= 0x80:
        v >>= 7
        n += 1
    return n


def typed_size(t):
    return (4 * len(t.float_data) + 8 * len(t.double_data)
            + sum(varint_size(v) for v in t.int32_data)
            + sum(varint_size(v) for v in t.int64_data)
            + sum(varint_size(v) for v in t.uint64_data)
            + sum(len(s) for s in t.string_data))


def python_facts(path):
    """What `onnxz info --json` must report, computed from python3-onnx's view of path."""
    m = onnx.load(path, load_external_data=False)
    g = m.graph
    tensors = list(walk_messages(m, "onnx.TensorProto"))
    raw = [t for t in tensors if t.HasField("raw_data")]
    typed = [t for t in tensors if any(len(getattr(t, f)) for f in TYPED_FIELDS)]
    external = [t for t in tensors if t.HasField("data_location") and t.data_location == TensorProto.EXTERNAL]
    locations, ext_bytes, unknown = {}, 0, 0
    for t in external:
        kv = {e.key: e.value for e in t.external_data}
        length = int(kv["length"]) if kv.get("length", "").isdigit() else None
        unknown += length is None
        loc = locations.setdefault(kv.get("location", ""), {"tensors": 0, "bytes": 0})
        loc["tensors"] += 1
        loc["bytes"] += length or 0
        ext_bytes += length or 0
    raw_bytes = sum(len(t.raw_data) for t in raw)
    typed_bytes = sum(typed_size(t) for t in typed)
    return {
        "file_size": os.path.getsize(path),
        "ir_version": m.ir_version if m.HasField("ir_version") else None,
        "producer_name": m.producer_name if m.HasField("producer_name") else None,
        "producer_version": m.producer_version if m.HasField("producer_version") else None,
        "domain": m.domain if m.HasField("domain") else None,
        "model_version": m.model_version if m.HasField("model_version") else None,
        "opset_import": [{"domain": o.domain or "ai.onnx", "version": o.version} for o in m.opset_import],
        "graph_name": g.name if m.HasField("graph") and g.HasField("name") else None,
        "nodes": len(g.node),
        "nodes_total": len(list(walk_messages(m, "onnx.NodeProto"))),
        "initializers": len(g.initializer),
        "sparse_initializers": len(g.sparse_initializer),
        "inputs": len(g.input),
        "outputs": len(g.output),
        "value_infos": len(g.value_info),
        "functions": len(m.functions),
        "training_infos": len(m.training_info),
        "metadata_props": len(m.metadata_props),
        "tensors": len(tensors),
        "tensor_bytes": raw_bytes + typed_bytes + ext_bytes,
        "raw_data": {"tensors": len(raw), "bytes": raw_bytes},
        "typed_data": {"tensors": len(typed), "bytes": typed_bytes},
        "external_data": {
            "tensors": len(external), "bytes": ext_bytes, "unknown_length": unknown,
            "locations": [{"location": k, **v} for k, v in sorted(locations.items())],
        },
    }


def compare_facts(ctx, info, facts, what):
    ctx.equal(set(info), JSON_KEYS, f"{what}: JSON keys")
    for key, want in facts.items():
        ctx.equal(info.get(key), want, f"{what}: {key}")


def info_json(ctx, path, what):
    rc, out, err = ctx.expect_exit(["info", "--json", path], 0, what)
    if rc != 0:
        return None
    ctx.equal(err, "", f"{what}: stderr")
    try:
        return json.loads(out)
    except ValueError as e:
        ctx.check(False, f"{what}: output is not JSON ({e}): {out!r}")
        return None


# ---- the rich model: subgraphs, functions, training info, every storage kind -------

# (name, location, offset, length) of the rich model's external tensors (float32), and
# the data files; the last tensor has no length key: it runs to the end of its file.
EXTERNAL_TENSORS = [("ext1", "weights.bin", 0, 64), ("ext2", "weights.bin", 64, 32),
                    ("ext3", "more/extra.bin", 0, 16), ("ext4", "extra.bin", 0, None)]
EXTERNAL_FILES = {"weights.bin": bytes(range(96)), "more/extra.bin": b"\x10" * 16,
                  "extra.bin": b"\x20" * 16}


def build_rich_model(work):
    """A model that exercises what the sample does not: If subgraphs, a function, a
    training graph, a sparse initializer, all typed fields, and external data in two
    files (one tensor without a length key). Not meant to pass the checker."""
    def const_node(name, value):
        return helper.make_node("Constant", [], [name], value=helper.make_tensor(
            name + "_t", TensorProto.FLOAT, [len(value)], value))

    then_g = helper.make_graph([const_node("a", [1.0, 2.0])], "then", [],
                               [helper.make_tensor_value_info("a", TensorProto.FLOAT, [2])])
    inner = helper.make_graph([const_node("c", [5.0, 6.0])], "inner", [],
                              [helper.make_tensor_value_info("c", TensorProto.FLOAT, [2])])
    else_g = helper.make_graph(
        [helper.make_node("If", ["cond"], ["b"], then_branch=inner, else_branch=inner),
         helper.make_node("Identity", ["b"], ["b2"])],
        "else", [], [helper.make_tensor_value_info("b2", TensorProto.FLOAT, [2])])
    nodes = [
        helper.make_node("If", ["cond"], ["y"], then_branch=then_g, else_branch=else_g),
        helper.make_node("Custom", ["y"], ["z"], domain="local"),
    ]
    inits = [
        numpy_helper.from_array(numpy.arange(6, dtype=numpy.float32), "raw6"),
        helper.make_tensor("i32", TensorProto.INT32, [4], [1, -1, 300, -70000]),
        helper.make_tensor("i64", TensorProto.INT64, [3], [0, -5, 1 << 40]),
        helper.make_tensor("u64", TensorProto.UINT64, [2], [7, (1 << 64) - 1]),
        helper.make_tensor("f64", TensorProto.DOUBLE, [2], [0.5, 1.5]),
        helper.make_tensor("str", TensorProto.STRING, [3], [b"x", b"hello", b""]),
    ]
    for name, location, offset, length in EXTERNAL_TENSORS:
        t = TensorProto(name=name, data_type=TensorProto.FLOAT, dims=[(length or 16) // 4])
        t.data_location = TensorProto.EXTERNAL
        for k, v in [("location", location), ("offset", offset), ("length", length)]:
            if v is not None:
                e = t.external_data.add()
                e.key, e.value = k, str(v)
        inits.append(t)
    sparse = helper.make_sparse_tensor(
        helper.make_tensor("sp_values", TensorProto.FLOAT, [2], [1.0, 2.0]),
        helper.make_tensor("sp_indices", TensorProto.INT64, [2], [0, 3]), [4])
    graph = helper.make_graph(
        nodes, "rich", [helper.make_tensor_value_info("cond", TensorProto.BOOL, [])],
        [helper.make_tensor_value_info("z", TensorProto.FLOAT, [2])],
        initializer=inits, sparse_initializer=[sparse])
    fn = helper.make_function("local", "Custom", ["x"], ["out"],
                              [helper.make_node("Identity", ["x"], ["t"]),
                               helper.make_node("Neg", ["t"], ["out"])],
                              [helper.make_opsetid("", 13)])
    model = helper.make_model(graph, functions=[fn], opset_imports=[
        helper.make_opsetid("", 13), helper.make_opsetid("local", 1)])
    model.producer_name = 'quote " backslash \\ newline \n tab \t accents \u00e9 \u2713'
    ti = model.training_info.add()
    ti.algorithm.CopyFrom(helper.make_graph([helper.make_node("Identity", ["p"], ["q"])],
                                            "train", [], []))
    helper.set_model_props(model, {"k": "v"})
    path = os.path.join(work, "rich.onnx")
    write(path, model.SerializeToString())
    for location, data in EXTERNAL_FILES.items():
        os.makedirs(os.path.dirname(os.path.join(work, location)), exist_ok=True)
        write(os.path.join(work, location), data)
    return path


# ---- the groups ---------------------------------------------------------------------

def group_usage(ctx):
    """Usage errors: exit 2, one line, a hint to run --help, nothing on stdout."""
    sample = ctx.sample
    for argv, what in [
        ([], "no command"),
        (["frobnicate"], "unknown command"),
        (["--bogus"], "unknown global option"),
        (["-Z", "info", sample], "unknown short global option"),
        (["info"], "info without FILE"),
        (["info", sample, sample], "info with two files"),
        (["info", "--bogus", sample], "unknown info option"),
        (["info", "--json=yes", sample], "value for a flag"),
        (["info", "-x", sample], "unknown short info option"),
        (["convert"], "convert without arguments"),
        (["convert", sample], "convert without OUT"),
        (["convert", sample, ctx.path("a"), ctx.path("b")], "convert with three files"),
        (["convert", "--frce", sample, ctx.path("a")], "misspelt convert option"),
        (["help", "frobnicate"], "help for an unknown command"),
        (["help", "info", "convert"], "help with two commands"),
    ]:
        ctx.expect_usage(argv, what)
    ctx.check(not os.path.exists(ctx.path("a")), "a usage error must not write anything")


def group_help(ctx):
    """--help and --version: exit 0, the usage line, options, an example."""
    rc, out, err = ctx.expect_exit(["--version"], 0, "--version")
    ctx.equal(out, f"onnxz {ctx.version}\n", "--version output")
    rc, out, err = ctx.expect_exit(["-V"], 0, "-V")
    ctx.equal(out, f"onnxz {ctx.version}\n", "-V output")
    for argv in (["--help"], ["-h"], ["help"]):
        rc, out, err = ctx.expect_exit(argv, 0, " ".join(argv))
        ctx.check(out.startswith("Usage: onnxz"), f"{argv}: usage line: {out[:60]!r}")
        for cmd in COMMANDS:
            ctx.check(re.search(rf"^  {cmd} ", out, re.M) is not None, f"{argv}: lists {cmd}")
        ctx.equal(err, "", f"{argv}: stderr")
    for cmd in COMMANDS:
        for argv in ([cmd, "--help"], [cmd, "-h"], ["help", cmd], ["-q", cmd, "--help"]):
            rc, out, err = ctx.expect_exit(argv, 0, " ".join(argv))
            ctx.check(out.startswith(f"Usage: onnxz {cmd}"), f"{argv}: usage line: {out[:60]!r}")
            ctx.check("Example" in out, f"{argv}: has an example")
            ctx.equal(err, "", f"{argv}: stderr")
        if cmd != "help":
            rc, out, _ = ctx.run(cmd, "--help")
            ctx.check("Options:" in out and "--quiet" in out, f"{cmd} --help lists options")
    rc, out, _ = ctx.run("info", "--help")
    for key in JSON_KEYS:
        ctx.check(key in out, f"info --help documents JSON key {key}")
    rc, out, _ = ctx.run("convert", "--help")
    ctx.check("--force" in out, "convert --help documents --force")


def group_errors(ctx):
    """Bad input: exit 1 and exactly one line `onnxz: error: FILE: MESSAGE (at offset N)`."""
    data = read(ctx.sample)
    missing = ctx.path("missing.onnx")
    ctx.expect_error(["info", missing], missing, "info, missing file")
    ctx.expect_error(["info", "--json", missing], missing, "info --json, missing file")
    ctx.expect_error(["convert", missing, ctx.path("out.onnx")], missing, "convert, missing file")
    ctx.check(not os.path.exists(ctx.path("out.onnx")), "failed convert must not create OUT")

    half = ctx.path("half.onnx")
    write(half, data[: len(data) // 2])
    for argv in (["info", half], ["info", "--json", half], ["convert", half, ctx.path("out.onnx")]):
        off = ctx.expect_error(argv, half, f"{argv[0]} truncated", offset=True)
        if off is not None:
            ctx.check(0 <= off <= len(data) // 2, f"truncated: offset {off} within the input")
    ctx.check(not os.path.exists(ctx.path("out.onnx")), "failed convert must not create OUT")

    for name, blob in [("ff.onnx", b"\xff" * 64), ("text.onnx", b"this is not an onnx model\n")]:
        garbage = ctx.path(name)
        write(garbage, blob)
        ctx.expect_error(["info", garbage], garbage, f"garbage {name}", offset=True)
        ctx.expect_error(["convert", garbage, ctx.path("out.onnx")], garbage,
                         f"convert garbage {name}", offset=True)

    ctx.expect_error(["info", ctx.work], ctx.work, "info on a directory")
    # Any output written before the failure would be partial output: there must be none.
    rc, out, err = ctx.run("-v", "info", half)
    ctx.equal((rc, out), (1, ""), "-v info truncated: exit 1 and no stdout")
    ctx.equal(len([l for l in err.splitlines() if l.startswith("onnxz: error: ")]), 1,
              "-v info truncated: one error line")


def group_convert(ctx):
    """convert reproduces protobuf's bytes for the sample and for a richer model."""
    if onnx is None:
        return SKIP
    out = ctx.path("copy.onnx")
    rc, stdout, err = ctx.expect_exit(["convert", ctx.sample, out], 0, "convert sample")
    ctx.equal(err, "", "convert: stderr")
    ctx.check(stdout.startswith(f"{ctx.sample} -> {out}"), f"convert: summary line {stdout!r}")
    if rc == 0:
        ctx.check(read(out) == read(ctx.sample), "convert: output identical to the sample")
        python_bytes = onnx.load(ctx.sample).SerializeToString()
        ctx.check(read(out) == python_bytes, "convert: output identical to python's serialization")

    quiet = ctx.path("quiet.onnx")
    rc, stdout, err = ctx.expect_exit(["-q", "convert", ctx.sample, quiet], 0, "convert -q")
    ctx.equal((stdout, err), ("", ""), "convert -q prints nothing")
    rc, stdout, err = ctx.expect_exit(["convert", "-v", ctx.sample, ctx.path("v.onnx")], 0, "convert -v")
    ctx.check("onnxz: " in err, f"convert -v prints diagnostics on stderr: {err!r}")

    # External data is read in, as onnx.load does: OUT equals python's load + serialize.
    rich = build_rich_model(ctx.work)
    rich_out = ctx.path("rich_copy.onnx")
    rc, _, _ = ctx.expect_exit(["convert", rich, rich_out], 0, "convert rich model")
    if rc == 0:
        ctx.check(read(rich_out) == onnx.load(rich).SerializeToString(),
                  "convert: rich model identical to python's load (external data read in)")
        info = info_json(ctx, rich_out, "info --json converted rich model")
        if info is not None:
            ctx.equal(info["external_data"]["tensors"], 0, "converted: no external tensors left")
            ctx.equal(info["raw_data"], {"tensors": 5, "bytes": 24 + 96 + 16 + 16},
                      "converted: external bytes now in raw_data")
    # A data file that is missing, or outside the model's directory, fails the convert.
    lonely = ctx.path("lonely")
    os.makedirs(lonely)
    shutil.copyfile(rich, os.path.join(lonely, "rich.onnx"))
    ctx.expect_error(["convert", os.path.join(lonely, "rich.onnx"), ctx.path("lonely_out.onnx")],
                     os.path.join(lonely, "rich.onnx"), "convert with missing data files")
    escape = ctx.path("escape")
    os.makedirs(escape)
    write(ctx.path("outside.bin"), bytes(16))
    t = TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[4],
                    data_location=TensorProto.EXTERNAL)
    for k, v in [("location", "../outside.bin"), ("length", "16")]:
        e = t.external_data.add()
        e.key, e.value = k, v
    write(os.path.join(escape, "m.onnx"), helper.make_model(helper.make_graph(
        [], "g", [], [], initializer=[t])).SerializeToString())
    ctx.expect_error(["convert", os.path.join(escape, "m.onnx"), ctx.path("escape_out.onnx")],
                     os.path.join(escape, "m.onnx"), "convert with a data file outside the model's directory")
    ctx.check(not os.path.exists(ctx.path("escape_out.onnx")), "failed convert must not create OUT")

    empty = ctx.path("empty.onnx")
    write(empty, b"")
    rc, _, _ = ctx.expect_exit(["convert", empty, ctx.path("empty_copy.onnx")], 0, "convert empty")
    if rc == 0:
        ctx.equal(read(ctx.path("empty_copy.onnx")), b"", "convert: empty model stays empty")


def group_force(ctx):
    """No overwrite without -f (old file untouched); -f replaces; IN == OUT needs -f."""
    out = ctx.path("out.onnx")
    old = b"precious old contents\n"
    write(out, old)
    ctx.expect_error(["convert", ctx.sample, out], out, "convert over an existing file")
    ctx.equal(read(out), old, "existing OUT untouched without -f")
    rc, _, err = ctx.run("convert", ctx.sample, out)
    ctx.check("-f" in err, f"the refusal mentions -f: {err!r}")

    for flag in ("-f", "--force"):
        write(out, old)
        ctx.expect_exit(["convert", flag, ctx.sample, out], 0, f"convert {flag}")
        ctx.check(read(out) == read(ctx.sample), f"convert {flag} replaced OUT")
    write(out, old)
    ctx.expect_exit(["convert", ctx.sample, out, "-f"], 0, "convert with -f after the files")
    ctx.check(read(out) == read(ctx.sample), "convert ... -f replaced OUT")

    # A failed convert with -f must leave the old OUT whole (atomic replace).
    half = ctx.path("half.onnx")
    write(half, read(ctx.sample)[:1000])
    write(out, old)
    ctx.expect_error(["convert", "-f", half, out], half, "convert -f from a truncated model", offset=True)
    ctx.equal(read(out), old, "OUT untouched by a failed convert -f")

    same = ctx.path("same.onnx")
    shutil.copyfile(ctx.sample, same)
    ctx.expect_error(["convert", same, same], same, "convert IN == OUT without -f")
    ctx.check(read(same) == read(ctx.sample), "IN untouched by the refusal")
    link = ctx.path("same_link.onnx")
    os.link(same, link)
    ctx.expect_error(["convert", same, link], link, "convert IN == OUT (hard link) without -f")
    ctx.expect_exit(["convert", "-f", same, same], 0, "convert -f IN == OUT")
    ctx.check(read(same) == read(ctx.sample), "convert -f IN == OUT rewrote the same bytes")


def group_info_human(ctx):
    """The human report of the sample against the golden file; alignment; -q/-v."""
    rc, out, err = ctx.expect_exit(["info", ctx.sample], 0, "info sample")
    ctx.equal(err, "", "info: stderr")
    golden = read(os.path.join(ctx.golden, "mlp.info.txt")).decode()
    want = golden.replace("@FILE@", ctx.sample)
    if not ctx.equal(out, want, "info: output differs from tests/cli/golden/mlp.info.txt"):
        sys.stderr.write("---- got ----\n" + out + "---- want ----\n" + want)
    for line in out.splitlines():
        if not line.startswith("    "):  # location lines may be longer than the column
            ctx.check(re.match(r"^[ \w()]{1,21}: +\S", line) and line[22] != " " and line[21] == " ",
                      f"info: value not aligned at column 23: {line!r}")
    rc, out_q, _ = ctx.expect_exit(["-q", "info", ctx.sample], 0, "info -q")
    ctx.equal(out_q, out, "info -q still prints the report")
    rc, out_v, err_v = ctx.expect_exit(["info", "-v", ctx.sample], 0, "info -v")
    ctx.equal(out_v, out, "info -v: same report on stdout")
    ctx.check(err_v.startswith("onnxz: "), f"info -v: diagnostics on stderr: {err_v!r}")

    if onnx is not None:
        rich = build_rich_model(ctx.work)
        rc, out, _ = ctx.expect_exit(["info", rich], 0, "info rich")
        ctx.check("\\x0a" in out and out.count("\n") == len(out.splitlines()),
                  "info: a newline in a model string is escaped, not printed")
        for key, value in [("    extra.bin", "1 tensor, 0 bytes"),
                           ("    more/extra.bin", "1 tensor, 16 bytes"),
                           ("    weights.bin", "2 tensors, 96 bytes"),
                           ("  external data", "4 tensors, 112 bytes, 1 without a length"),
                           ("nodes (total)", "10"), ("functions", "1"), ("training infos", "1"),
                           ("sparse initializers", "1")]:
            line = f"{key}:".ljust(22) + value
            ctx.check(line in out.splitlines(), f"info rich: line {line!r} in\n{out}")


def group_info_json(ctx):
    """--json on the sample: valid JSON, the documented keys, python3-onnx's facts, golden."""
    if onnx is None:
        return SKIP
    info = info_json(ctx, ctx.sample, "info --json sample")
    if info is None:
        return None
    compare_facts(ctx, info, python_facts(ctx.sample), "sample")
    ctx.equal(info["file"], ctx.sample, "file")
    golden = json.loads(read(os.path.join(ctx.golden, "mlp.info.json")))
    golden["file"] = ctx.sample
    ctx.equal(info, golden, "info --json differs from tests/cli/golden/mlp.info.json")
    # Spot checks that do not depend on the python walk above.
    ctx.equal(info["opset_import"], [{"domain": "ai.onnx", "version": 13},
                                     {"domain": "ai.onnx.ml", "version": 3}], "opsets")
    ctx.equal(info["raw_data"]["bytes"], 4 * (96 * 384 + 384 + 384 * 192 + 192 + 192 * 10 + 10),
              "raw bytes of the MLP weights")


def group_info_rich(ctx):
    """--json on a model with subgraphs, functions, training info, sparse and external
    tensors and awkward strings, against python3-onnx; and odd inputs."""
    if onnx is None:
        return SKIP
    rich = build_rich_model(ctx.work)
    info = info_json(ctx, rich, "info --json rich")
    if info is not None:
        facts = python_facts(rich)
        compare_facts(ctx, info, facts, "rich")
        # Hand-counted, so that a mistake shared by the tool and python_facts shows.
        ctx.equal(info["nodes_total"], 2 + 1 + 2 + 2 * 1 + 2 + 1, "nodes_total by hand")
        ctx.equal(info["external_data"]["bytes"], 112, "external bytes by hand")
        # 3 Constant values and the sparse values (2 floats each), the sparse indices
        # (varints 0 and 3), int32 [1, -1, 300, -70000], int64 [0, -5, 2**40],
        # uint64 [7, 2**64-1], 2 doubles, strings "x" "hello" "".
        ctx.equal(info["typed_data"]["bytes"],
                  3 * 8 + 8 + 2 + (1 + 10 + 2 + 10) + (1 + 10 + 6) + (1 + 10) + 16 + 6,
                  "typed bytes by hand")
    # info only reports external references: it works without the data files.
    lonely = ctx.path("lonely")
    os.makedirs(lonely)
    shutil.copyfile(rich, os.path.join(lonely, "rich.onnx"))
    alone = info_json(ctx, os.path.join(lonely, "rich.onnx"), "info --json without data files")
    if info is not None and alone is not None:
        ctx.equal(alone["external_data"], info["external_data"], "external facts without data files")
    # Strings that are not UTF-8 still give valid JSON (U+FFFD), and NUL is escaped.
    odd = ctx.path("odd.onnx")
    write(odd, b"\x12\x04\xff\xfeA\x00" + b"\x1a\x03\xe2\x9c\x93")  # producer_name, producer_version
    info = info_json(ctx, odd, "info --json non-UTF-8 strings")
    if info is not None:
        ctx.equal(info["producer_name"], "\ufffd\ufffdA\x00", "invalid UTF-8 replaced")
        ctx.equal(info["producer_version"], "\u2713", "valid UTF-8 kept")
        ctx.equal(info["graph_name"], None, "no graph: graph_name null")
    empty = ctx.path("empty.onnx")
    write(empty, b"")
    info = info_json(ctx, empty, "info --json empty model")
    if info is not None:
        compare_facts(ctx, info, python_facts(empty), "empty")


def mutate(rng, data):
    """One random corruption of data: truncation, bit flips, byte changes, insertions
    or deletions."""
    d = bytearray(data)
    kind = rng.randrange(5)
    if kind == 0:
        return bytes(d[: rng.randrange(len(d))])
    for _ in range(rng.randrange(1, 8)):
        pos = rng.randrange(len(d))
        if kind == 1:
            d[pos] ^= 1 << rng.randrange(8)
        elif kind == 2:
            d[pos] = rng.randrange(256)
        elif kind == 3:
            d[pos:pos] = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 5)))
        else:
            del d[pos: pos + rng.randrange(1, 10)]
    return bytes(d)


def group_robust(ctx):
    """Corrupted models (seeded, so reproducible): never a crash; either success with
    valid JSON or exit 1 with one error line and no stdout. Odd command lines too."""
    import random
    rng = random.Random(20240601)
    seeds = [read(ctx.sample)[:4096]]  # the header and graph, not just weight bytes
    if onnx is not None:
        seeds.append(read(build_rich_model(ctx.work)))
    bad = ctx.path("bad.onnx")
    for i in range(150):
        write(bad, mutate(rng, seeds[i % len(seeds)]))
        for argv in (["info", "--json", bad], ["convert", "-f", bad, ctx.path("out.onnx")]):
            rc, out, err = ctx.run(*argv)
            what = f"mutant {i}: onnxz {' '.join(argv[:-1])}"
            if rc == 1:
                lines = err.splitlines()
                ctx.check(out == "" and len(lines) == 1 and ERROR_RE.match(lines[0]) is not None,
                          f"{what}: failure output {out[:80]!r} {err!r}")
            elif ctx.equal(rc, 0, f"{what}: exit status (stderr {err[:300]!r})") and argv[0] == "info":
                try:
                    json.loads(out)
                except ValueError:
                    ctx.check(False, f"{what}: invalid JSON")
        if ctx.failures:
            shutil.copyfile(bad, ctx.path(f"failed-mutant-{i}.onnx"))
            break
    # "--" ends the options, so a file may start with a dash.
    dash = ctx.path("-dash.onnx")
    shutil.copyfile(ctx.sample, dash)
    rc, _, _ = ctx.expect_exit(["info", "--", dash], 0, "info -- FILE")
    os.chdir(ctx.work)
    ctx.expect_exit(["info", "--", "-dash.onnx"], 0, "info -- -dash.onnx")
    ctx.expect_usage(["info", "-dash.onnx"], "info -dash.onnx is an option")
    rc, out, _ = ctx.expect_exit(["-qv", "info", "-vq", "--json", "--", "-dash.onnx"], 0,
                                 "bundled short options")
    ctx.check(out.startswith("{"), "bundled short options: --json still applies")


GROUPS = {
    "usage": group_usage,
    "help": group_help,
    "errors": group_errors,
    "convert": group_convert,
    "force": group_force,
    "info_human": group_info_human,
    "info_json": group_info_json,
    "info_rich": group_info_rich,
    "robust": group_robust,
}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--onnxz", required=True)
    ap.add_argument("--sample", required=True)
    ap.add_argument("--golden", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--version", default="0.1.0", help="the version onnxz must report")
    ap.add_argument("group", choices=sorted(GROUPS))
    args = ap.parse_args()
    args.onnxz = os.path.abspath(args.onnxz)
    if not os.access(args.onnxz, os.X_OK):
        print(f"FAIL {args.group}: no onnxz executable at {args.onnxz}")
        return 1
    shutil.rmtree(args.work, ignore_errors=True)
    os.makedirs(args.work)
    ctx = Context(args)
    if GROUPS[args.group](ctx) == SKIP:
        print(f"SKIP {args.group}: python3-onnx is not available to {sys.executable}")
        return SKIP
    for f in ctx.failures:
        print("FAIL", f)
    print(f"{args.group}: {len(ctx.failures)} failure(s)")
    return 1 if ctx.failures else 0


if __name__ == "__main__":
    sys.exit(main())
