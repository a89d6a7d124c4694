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
import hashlib
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import time
import zipfile

# Built without OpenSSL, SHA-1 checksums are refused with a clear error (ONNXZ_HAVE_OPENSSL=0).
HAVE_OPENSSL = os.environ.get("ONNXZ_HAVE_OPENSSL", "1") == "1"
# Under valgrind (tests/CMakeLists.txt: ONNXZ_TEST_REDUCED=1 with ONNXZ_TEST_WRAPPER) every
# onnxz run costs about a second and each ONNXCRY1 key derivation (100,000 PBKDF2 rounds)
# a few: robust runs a fifth of its mutants (the first ones of the same seeded sequence);
# crypt_input reads and writes ONNXCRY1 for the .onnx source only (ONNXZEC1 for both).
REDUCED = os.environ.get("ONNXZ_TEST_REDUCED") == "1"
# A tool built with ONNXZ_TEST_POINTS (it then reads ONNXZ_PROGRESS_DELAY_MS).
TEST_POINTS = os.environ.get("ONNXZ_TEST_POINTS") == "ON"

try:
    import numpy
    import onnx
    from onnx import TensorProto, helper, numpy_helper
except ImportError:  # only the groups that need it are skipped
    onnx = None

SKIP = 77
COMMANDS = ["convert", "info", "ls", "verify", "unpack", "meta", "stub", "encrypt", "decrypt",
            "bench", "help"]
TYPED_FIELDS = ["float_data", "int32_data", "string_data", "int64_data", "double_data", "uint64_data"]
JSON_KEYS = {
    "file", "file_size", "ir_version", "producer_name", "producer_version", "domain",
    "model_version", "opset_import", "graph_name", "nodes", "nodes_total", "initializers",
    "sparse_initializers", "inputs", "outputs", "value_infos", "functions",
    "training_infos", "metadata_props", "tensors", "tensor_bytes", "raw_data",
    "typed_data", "external_data", "format", "archive",
}
ARCHIVE_KEYS = {"entries", "stored", "deflated", "tensor_entries", "deflated_tensor_entries",
                "min_tensor_alignment", "zero_copy", "model_entry"}
BENCH_KEYS = {"first_s", "min_s", "median_s", "bytes"}
MODEL_ENTRY = "__MODEL_PROTO"
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
    def run(self, *argv, cwd=None, env=None):
        """env: extra environment variables. ONNXZ_KEY is never inherited, and the tool runs
        in a session of its own: no controlling terminal, so a passphrase prompt cannot
        block (it must fail instead)."""
        full = {k: v for k, v in os.environ.items() if k != "ONNXZ_KEY"}
        full.update(env or {})
        p = subprocess.run([self.onnxz, *argv], capture_output=True, cwd=cwd, timeout=120,
                           env=full, stdin=subprocess.DEVNULL, start_new_session=True)
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

    def expect_exit(self, argv, code, what, env=None):
        rc, out, err = self.run(*argv, env=env)
        self.equal(rc, code, f"{what}: exit status of onnxz {' '.join(argv)} (stderr {err!r})")
        return rc, out, err

    def expect_error(self, argv, file, what, offset=None, env=None, message=None):
        """Exit 1, nothing on stdout, exactly one stderr line in the error format.
        offset: None = must have none, True = must have one, "any" = either; returns the
        offset. message: a regular expression the message must contain."""
        rc, out, err = self.expect_exit(argv, 1, what, env=env)
        self.equal(out, "", f"{what}: stdout must stay empty on failure")
        lines = err.splitlines()
        if not self.equal(len(lines), 1, f"{what}: stderr lines ({err!r})"):
            return None
        m = ERROR_RE.match(lines[0])
        if not self.check(m is not None, f"{what}: error line format: {lines[0]!r}"):
            return None
        self.equal(m.group("file"), file, f"{what}: file named in the error")
        if message is not None:
            self.check(re.search(message, m.group("msg")) is not None,
                       f"{what}: message {m.group('msg')!r} does not match {message!r}")
        if offset == "any":
            return int(m.group("off")) if m.group("off") else None
        if offset is None:
            self.check(m.group("off") is None, f"{what}: unexpected offset in {lines[0]!r}")
            return None
        self.check(m.group("off") is not None, f"{what}: no offset in {lines[0]!r}")
        return int(m.group("off")) if m.group("off") else None

    def expect_usage(self, argv, what, env=None):
        rc, out, err = self.expect_exit(argv, 2, what, env=env)
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
        "format": "onnx",
        "archive": None,
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


def python_load(path):
    """python3-onnx's onnx.load(path), with the one difference E-16 allows: a tensor loaded
    from external data has no data_location afterwards (onnx.load sets DEFAULT)."""
    refs = onnx.load(path, load_external_data=False)
    m = onnx.load(path)
    for r, t in zip(walk_messages(refs, "onnx.TensorProto"), walk_messages(m, "onnx.TensorProto")):
        if r.HasField("data_location") and r.data_location == TensorProto.EXTERNAL:
            t.ClearField("data_location")
    return m


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
        # convert: options that do not apply to the conversion asked for, bad values
        (["convert", "--deflate-model", sample, ctx.path("a.onnx")], "--deflate-model to .onnx"),
        (["convert", "--external-data", "x.data", sample, ctx.path("a.onnxz")], "--external-data to .onnxz"),
        (["convert", "--external-data=", sample, ctx.path("a.onnx")], "--external-data without a name"),
        (["convert", "--align", "64", sample, ctx.path("a.onnx")], "--align to a single .onnx"),
        (["convert", "--threshold", "64", sample, ctx.path("a.onnx")], "--threshold to a single .onnx"),
        (["convert", "--max-file-size", "1M", sample, ctx.path("a.onnx")], "--max-file-size alone"),
        (["convert", "--max-file-size", "1M", sample, ctx.path("a.onnxz")], "--max-file-size to .onnxz"),
        (["convert", "--checksum", sample, ctx.path("a.onnx")], "--checksum alone"),
        (["convert", "--align", "100", sample, ctx.path("a.onnxz")], "--align not a power of two"),
        (["convert", "--align", "32", sample, ctx.path("a.onnxz")], "--align below 64 for an archive"),
        (["convert", "--align", "64K", sample, ctx.path("a.onnxz")], "--align above 32K for an archive"),
        (["convert", "--align", "0", "--external-data", "d", sample, ctx.path("a.onnx")], "--align 0"),
        (["convert", "--threshold", "12X", sample, ctx.path("a.onnxz")], "--threshold with a bad suffix"),
        (["convert", "--threshold", "-1", sample, ctx.path("a.onnxz")], "--threshold negative"),
        (["convert", "--threshold", "99999999999999999999", sample, ctx.path("a.onnxz")], "--threshold too large"),
        (["convert", "--threshold", "17179869184G", sample, ctx.path("a.onnxz")], "--threshold overflows with its suffix"),
        (["convert", "--max-file-size", "0", "--external-data", "d", sample, ctx.path("a.onnx")], "--max-file-size 0"),
        (["convert", "--align"], "--align without a value"),
        # ls, verify, unpack, bench
        (["ls"], "ls without ARCHIVE"),
        (["ls", sample, sample], "ls with two files"),
        (["ls", "--bogus", sample], "unknown ls option"),
        (["verify"], "verify without FILE"),
        (["verify", "--checksum", sample], "unknown verify option"),
        (["unpack", sample], "unpack without DIR"),
        (["unpack", sample, ctx.path("a"), ctx.path("b")], "unpack with three arguments"),
        (["bench"], "bench without MODE"),
        (["bench", "load"], "bench without FILE"),
        (["bench", "parse", sample], "bench with an unknown mode"),
        (["bench", "read", "--no-copy", sample], "bench read --no-copy"),
        (["bench", "map", "--touch-pages", sample], "bench map --touch-pages"),
        (["bench", "load", "--every-byte", sample], "bench load --every-byte"),
        (["bench", "copy", "--pool", sample], "bench copy --pool"),
        (["bench", "copy", "--every-byte", sample], "bench copy --every-byte"),
        (["bench", "read", "--threads", "2", sample], "bench read --threads"),
        (["bench", "map", "--threads", "2", sample], "bench map --threads"),
        (["bench", "read", "--prefetch", sample], "bench read --prefetch"),
        (["bench", "load", "--populate", sample], "bench load --populate"),
        (["bench", "map", "--prefetch", "--populate", sample], "bench map --prefetch --populate"),
        (["bench", "load", "--repeat", "0", sample], "bench --repeat 0"),
        (["bench", "load", "--repeat", "x", sample], "bench --repeat x"),
        (["bench", "load", "--threads", "-1", sample], "bench --threads -1"),
    ]:
        ctx.expect_usage(argv, what)
    for name in ("a", "a.onnx", "a.onnxz", "b"):
        ctx.check(not os.path.exists(ctx.path(name)), f"a usage error must not write anything ({name})")


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
    # The manual page is the helps, in roff: every command's whole help is in it, and
    # groff (when installed) renders it without a warning.
    rc, man, err = ctx.expect_exit(["--man"], 0, "--man")
    ctx.check(man.startswith(f'.TH ONNXZ 1 "" "onnxz {ctx.version}"'), f"--man: title line {man[:60]!r}")
    for section in ("NAME", "SYNOPSIS", "DESCRIPTION", "COMMANDS", "ENVIRONMENT", "EXIT STATUS"):
        ctx.check(f"\n.SH {section}\n" in man, f"--man: section {section}")
    groff = shutil.which("groff")
    if groff:
        p = subprocess.run([groff, "-man", "-Tutf8", "-ww"], input=man.encode(), capture_output=True)
        ctx.equal((p.returncode, p.stderr), (0, b""), "--man: groff renders it without warnings")
        page = p.stdout.decode("utf-8", "replace")
        page = re.sub(r".\x08", "", page)  # overstrike bold and underline
        flat = " ".join(page.split())
        for cmd in COMMANDS:
            _, text, _ = ctx.run(cmd, "--help")
            body = " ".join(text.split("\n", 2)[2].split())  # the help after its usage line
            ctx.check(body in flat, f"--man: the page holds all of `{cmd} --help`")
    else:
        MISSING_CLIENTS.add("groff")


def group_errors(ctx):
    """Bad input: exit 1 and exactly one line `onnxz: error: FILE: MESSAGE (at offset N)`."""
    data = read(ctx.sample)
    missing = ctx.path("missing.onnx")
    ctx.expect_error(["info", missing], missing, "info, missing file")
    ctx.expect_error(["info", "--json", missing], missing, "info --json, missing file")
    ctx.expect_error(["convert", missing, ctx.path("out.onnx")], missing, "convert, missing file")
    ctx.check(not os.path.exists(ctx.path("out.onnx")), "failed convert must not create OUT")
    # The file is named once: the tool prints it, the message does not repeat it.
    for argv in (["info", missing], ["verify", missing], ["ls", missing], ["bench", "load", missing],
                 ["convert", missing, ctx.path("out.onnxz")], ["unpack", missing, ctx.path("d")]):
        rc, _, err = ctx.run(*argv)
        ctx.equal(err, f"onnxz: error: {missing}: cannot open: No such file or directory\n",
                  f"{argv[0]}: missing file message")
    rc, _, err = ctx.run("info", ctx.work)
    ctx.equal(err, f"onnxz: error: {ctx.work}: is not a regular file\n", "info on a directory: message")

    # A URL is read, never written: not even where a local path of that spelling exists
    # (run in a directory holding "http:/host/", a planted archive in it, and a symbolic
    # link "http:/host/l.onnxz" to it), and no request is made for an edit.
    os.makedirs(ctx.path("http:/host"), exist_ok=True)
    planted = ctx.path("http:/host/m.onnxz")
    rc, _, _ = ctx.run("convert", ctx.sample, planted)
    if os.path.lexists(ctx.path("http:/host/l.onnxz")):
        os.unlink(ctx.path("http:/host/l.onnxz"))
    os.symlink("m.onnxz", ctx.path("http:/host/l.onnxz"))
    before = read(planted)
    for argv, url, verb in (
            (["convert", ctx.sample, "http://host/o.onnxz"], "http://host/o.onnxz", "writes"),
            (["convert", ctx.sample, "HTTPS://host/o.onnx", "--external-data", "o.data"],
             "HTTPS://host/o.onnx", "writes"),
            (["convert", ctx.sample, "http://host/m.onnxz", "-f"], "http://host/m.onnxz", "writes"),
            (["unpack", planted, "http://host/d"], "http://host/d", "writes"),
            (["convert", ctx.sample, "o.onnx", "--external-data", "http://host/d"],
             "http://host/d", "writes"),
            (["get", planted, "fc1_weight", "-o", "http://host/g"], "http://host/g", "writes"),
            (["stub", planted, "http://host/s.onnx"], "http://host/s.onnx", "writes"),
            (["encrypt", planted, "http://host/e.onnxc"], "http://host/e.onnxc", "writes"),
            (["meta", "--producer", "x", "http://host/m.onnxz"], "http://host/m.onnxz", "edits"),
            (["meta", "--producer", "x", "http://host/l.onnxz"], "http://host/l.onnxz", "edits")):
        rc, out, err = ctx.run(*argv, cwd=ctx.work)
        ctx.equal((rc, out, err), (1, "", f"onnxz: error: {url}: is a URL: onnxz {verb} local "
                                          "files only\n"), f"{' '.join(argv)}: refused")
    ctx.equal(sorted(os.listdir(ctx.path("http:/host"))), ["l.onnxz", "m.onnxz"],
              "URL outputs: nothing written where a local path of that spelling is")
    ctx.check(read(planted) == before, "URL outputs: the planted archive is untouched")

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
    # An HTTP setting out of its range is an error naming it (oc_http_options_parse), not
    # silently the default.
    for var, value in (("ONNXZ_HTTP_TIMEOUT", "0"), ("ONNXZ_HTTP_PARALLEL", "many")):
        ctx.expect_error(["info", ctx.sample], "environment", f"{var}={value}", env={var: value},
                         message=rf"^{var}: '{value}' is not a whole number from ")
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
        ctx.check(read(rich_out) == python_load(rich).SerializeToString(),
                  "convert: rich model identical to python's load (external data read in, E-16)")
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

    # A 0-byte file is not a model (its other commands: inputs_test.py).
    empty = ctx.path("empty.onnx")
    write(empty, b"")
    ctx.expect_error(["convert", empty, ctx.path("empty_copy.onnx")], empty, "convert empty",
                     message="^empty file, not an ONNX model$")
    ctx.check(not os.path.exists(ctx.path("empty_copy.onnx")), "convert empty: no output")


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
    empty = ctx.path("bare.onnx")
    write(empty, b"\x08\x08")  # ir_version 8 and nothing else (0 bytes: not a model)
    info = info_json(ctx, empty, "info --json bare model")
    if info is not None:
        compare_facts(ctx, info, python_facts(empty), "bare")


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
    for i in range(30 if REDUCED else 150):
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
    # Corrupted archives: every command that reads one, same rules.
    if onnx is not None and not ctx.failures:
        arc = ctx.path("names.onnxz")
        rc, _, _ = ctx.run("convert", "--threshold", "0", build_names_model(ctx.work), arc)
        seed = read(arc)
        bad = ctx.path("bad.onnxz")
        for i in range(24 if REDUCED else 120):
            d = bytearray(seed)
            # Mostly the structure (headers, central directory, model), not tensor bytes.
            region = rng.choice([(0, 200), (len(d) - 1200, len(d)), (0, len(d))])
            for _ in range(rng.randrange(1, 4)):
                pos = rng.randrange(max(region[0], 0), region[1])
                d[pos] = rng.randrange(256)
            if rng.randrange(6) == 0:
                d = d[: rng.randrange(len(d))]
            write(bad, bytes(d))
            for argv in (["info", "--json", bad], ["ls", "--json", bad], ["verify", bad],
                         ["convert", "-f", bad, ctx.path("out.onnx")],
                         ["unpack", "-f", bad, ctx.path("out.dir")]):
                rc, out, err = ctx.run(*argv)
                what = f"archive mutant {i}: onnxz {argv[0]}"
                if rc == 1:
                    lines = err.splitlines()
                    ctx.check(out == "" and len(lines) == 1 and ERROR_RE.match(lines[0]) is not None,
                              f"{what}: failure output {out[:80]!r} {err!r}")
                elif ctx.equal(rc, 0, f"{what}: exit status (stderr {err[:300]!r})") and "--json" in argv:
                    try:
                        json.loads(out)
                    except ValueError:
                        ctx.check(False, f"{what}: invalid JSON")
            if ctx.failures:
                shutil.copyfile(bad, ctx.path(f"failed-archive-mutant-{i}.onnxz"))
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


# ---- oracles for archives: Python's zipfile, the local headers, python3-onnx ----------

def zip_entries(path):
    """Each entry as Python's zipfile sees it, in central-directory order, with where its
    data starts, read from its local header (which zipfile does not report)."""
    methods = {zipfile.ZIP_STORED: "stored", zipfile.ZIP_DEFLATED: "deflated"}
    out = []
    with zipfile.ZipFile(path) as z, open(path, "rb") as f:
        for zi in z.infolist():
            f.seek(zi.header_offset)
            head = f.read(30)
            if struct.unpack("<I", head[:4])[0] != 0x04034B50:
                raise ValueError(f"{path}: no local header at {zi.header_offset}")
            name_len, extra_len = struct.unpack("<HH", head[26:30])
            out.append({"name": zi.filename,
                        "method": methods.get(zi.compress_type, f"method {zi.compress_type}"),
                        "size": zi.file_size, "compressed_size": zi.compress_size,
                        "data_offset": zi.header_offset + 30 + name_len + extra_len,
                        "header_offset": zi.header_offset, "crc32": zi.CRC})
    return out


def alignment_of(offset):
    """The largest power of two dividing offset, capped at 4096 (as `onnxz ls` shows it)."""
    if offset == 0:
        return 4096
    a = 1
    while a < 4096 and offset % (2 * a) == 0:
        a *= 2
    return a


def archive_model(path):
    with zipfile.ZipFile(path) as z:
        return onnx.ModelProto.FromString(z.read(MODEL_ENTRY))


def is_external(t):
    return t.HasField("data_location") and t.data_location == TensorProto.EXTERNAL


def entry_tensors(model):
    """location -> names of the tensors that name it, in encoding order."""
    refs = {}
    for t in walk_messages(model, "onnx.TensorProto"):
        if is_external(t):
            kv = {e.key: e.value for e in t.external_data}
            if "location" in kv:
                refs.setdefault(kv["location"], []).append(t.name)
    return refs


def ls_oracle(path):
    """What `onnxz ls --json` must say, from zipfile, the local headers and python3-onnx."""
    refs = entry_tensors(archive_model(path))
    entries = []
    for e in zip_entries(path):
        entries.append({"name": e["name"], "method": e["method"], "size": e["size"],
                        "compressed_size": e["compressed_size"], "data_offset": e["data_offset"],
                        "alignment": alignment_of(e["data_offset"]), "crc32": e["crc32"],
                        "model": e["name"] == MODEL_ENTRY, "tensors": refs.get(e["name"], [])})
    return {"file": path, "file_size": os.path.getsize(path), "entries": entries}


def rezip(src, dst, tensor_method=zipfile.ZIP_STORED, model_method=zipfile.ZIP_STORED,
          model_first=False, drop=(), rename=None, extra=()):
    """Rewrites an archive with Python's zipfile (so nothing is aligned): entries in
    another order or method, some dropped, one renamed (and the model's locations with
    it), extra (name, bytes) entries added before the model."""
    with zipfile.ZipFile(src) as z:
        items = [(i.filename, z.read(i.filename)) for i in z.infolist() if i.filename not in drop]
    if rename:
        old, new = rename
        model = onnx.ModelProto.FromString(dict(items)[MODEL_ENTRY])
        for t in walk_messages(model, "onnx.TensorProto"):
            for e in t.external_data:
                if e.key == "location" and e.value == old:
                    e.value = new
        items = [(new if n == old else n, model.SerializeToString() if n == MODEL_ENTRY else d)
                 for n, d in items]
    items = [it for it in items if it[0] != MODEL_ENTRY] + list(extra) + \
        [it for it in items if it[0] == MODEL_ENTRY]
    if model_first:
        items.sort(key=lambda it: it[0] != MODEL_ENTRY)
    with zipfile.ZipFile(dst, "w") as out:
        for name, data in items:
            out.writestr(name, data, model_method if name == MODEL_ENTRY else tensor_method)
    return dst


def model_first_in_directory(src, dst):
    """The same archive with __MODEL_PROTO's central-directory record moved to the front:
    the data stays in place (the model last in the file), only the directory order changes."""
    data = read(src)
    eocd = data.rindex(b"PK\x05\x06")
    count, cd_size, cd_at = struct.unpack("<HII", data[eocd + 10:eocd + 20])
    records, pos = [], cd_at
    for _ in range(count):
        n, m, k = struct.unpack("<HHH", data[pos + 28:pos + 34])
        records.append(data[pos:pos + 46 + n + m + k])
        pos += 46 + n + m + k
    records.sort(key=lambda r: MODEL_ENTRY.encode() not in r[46:46 + struct.unpack("<H", r[28:30])[0]])
    write(dst, data[:cd_at] + b"".join(records) + data[cd_at + cd_size:])
    return dst


MISSING_CLIENTS = set()


def zip_clients(ctx, path, align, what):
    """Real ZIP clients accept the archive; zipalign -c ALIGN checks every stored entry's
    data offset. A client that is not installed is reported, not failed."""
    for argv, needle in [(["unzip", "-tqq"], None), (["7z", "t"], "Everything is Ok"),
                         ([sys.executable, "-m", "zipfile", "-t"], None),
                         (["zipalign", "-c", str(align)], None)]:
        if argv[0] != sys.executable and not shutil.which(argv[0]):
            MISSING_CLIENTS.add(argv[0])
            continue
        p = subprocess.run(argv + [path], capture_output=True, text=True, errors="replace")
        ctx.check(p.returncode == 0 and (needle is None or needle in p.stdout),
                  f"{what}: {' '.join(argv)} rejects {path}: {(p.stdout + p.stderr)[-300:]!r}")


# convert's default --threshold (OC_EXTERNAL_THRESHOLD_DEFAULT, spec/external-data.md E-27):
# of the sample mlp's tensors, fc2.bias (768 bytes) and fc3.bias (40) stay inside the model.
DEFAULT_THRESHOLD = 1024


def check_archive(ctx, arc, source, threshold, align, what):
    """The archive against the model it was made from (python3-onnx's loaded view):
    A-2 model last, A-4 stored data aligned, A-11/A-12/A-20 exactly the tensors with
    raw_data >= threshold (and not empty: A-14) are entries holding their bytes, every other
    tensor unchanged."""
    try:
        entries = zip_entries(arc)
        model = archive_model(arc)
    except Exception as e:  # noqa: BLE001 - any failure to read it is the finding
        ctx.check(False, f"{what}: Python cannot read {arc}: {e}")
        return None
    ctx.equal(entries[-1]["name"], MODEL_ENTRY, f"{what}: {MODEL_ENTRY} last in the directory (A-2)")
    ctx.equal(max(e["header_offset"] for e in entries), entries[-1]["header_offset"],
              f"{what}: {MODEL_ENTRY} last in the file (A-2)")
    for e in entries:
        if e["method"] == "stored":
            ctx.equal(e["data_offset"] % align, 0, f"{what}: entry {e['name']} data aligned to {align}")
    with zipfile.ZipFile(arc) as z:
        data = {e["name"]: z.read(e["name"]) for e in entries}
    src = list(walk_messages(source, "onnx.TensorProto"))
    got = list(walk_messages(model, "onnx.TensorProto"))
    if not ctx.equal(len(got), len(src), f"{what}: tensor count"):
        return None
    used = set()
    for s, g in zip(src, got):
        if s.HasField("raw_data") and len(s.raw_data) >= max(threshold, 1):
            kv = {e.key: e.value for e in g.external_data}
            loc = kv.get("location")
            ctx.check(is_external(g) and not g.HasField("raw_data") and "offset" not in kv,
                      f"{what}: tensor {s.name} is an external reference without offset (A-20)")
            ctx.equal(kv.get("length"), str(len(s.raw_data)), f"{what}: tensor {s.name} length")
            ctx.check(data.get(loc) == s.raw_data, f"{what}: entry {loc!r} holds tensor {s.name}'s bytes (A-12)")
            used.add(loc)
        else:
            ctx.check(g == s, f"{what}: tensor {s.name} stays inside the model unchanged")
    ctx.equal(sorted(used | {MODEL_ENTRY}), sorted(data), f"{what}: entries are the tensors and the model")
    return entries


def all_tensor_bytes(model):
    """name -> (data_type, dims, bytes) of every tensor, as python3-onnx decodes it."""
    out = []
    for t in walk_messages(model, "onnx.TensorProto"):
        arr = numpy_helper.to_array(t)
        out.append((t.name, t.data_type, list(t.dims), arr.tobytes() if arr.dtype != object else list(arr.flat)))
    return out


def same_tensors(ctx, want_model, got_path, what):
    """python3-onnx loads got_path (with its external data) to the same tensors."""
    try:
        got = onnx.load(got_path)
    except Exception as e:  # noqa: BLE001
        ctx.check(False, f"{what}: onnx.load({got_path}) fails: {e}")
        return None
    ctx.check(all_tensor_bytes(got) == all_tensor_bytes(want_model), f"{what}: onnx.load gives the same tensors")
    return got


def checker_passes(ctx, path, what):
    try:
        onnx.checker.check_model(path)
    except Exception as e:  # noqa: BLE001
        ctx.check(False, f"{what}: onnx.checker.check_model({path}) fails: {e}")


def external_refs(path):
    """(tensor name, {key: value}, [keys in order]) of every external tensor, in encoding order."""
    m = onnx.load(path, load_external_data=False)
    return [(t.name, {e.key: e.value for e in t.external_data}, [e.key for e in t.external_data])
            for t in walk_messages(m, "onnx.TensorProto") if is_external(t)]


def raw_by_name(model):
    return {t.name: t.raw_data for t in walk_messages(model, "onnx.TensorProto") if t.HasField("raw_data")}


def build_names_model(work):
    """Tensor names that exercise A-10's entry names (dots and slashes, a leading digit, a
    leading "__", two names equal but for case, one past 120 bytes), a Constant holding
    raw bytes, and a small and a typed tensor that stay inside the model. Passes the checker."""
    rng = numpy.random.default_rng(7)

    def arr(n, name):
        return numpy_helper.from_array(rng.random(n, dtype=numpy.float32), name)

    long_name = "L" * 150
    inits = [arr(300, "W"), arr(300, "w"), arr(1000, "layer.0/weight"), arr(100, "0bias"),
             arr(64, "__x"), arr(50, long_name), arr(4, "small"),
             helper.make_tensor("typed", TensorProto.FLOAT, [300], [0.5] * 300)]
    nodes = [helper.make_node("Constant", [], ["k"], value=arr(300, "k_value")),
             helper.make_node("Add", ["W", "w"], ["s"]),
             helper.make_node("Add", ["s", "k"], ["s2"]),
             helper.make_node("Add", ["s2", "typed"], ["y"])]
    graph = helper.make_graph(nodes, "names", [], [helper.make_tensor_value_info("y", TensorProto.FLOAT, [300])],
                              initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    path = os.path.join(work, "names.onnx")
    write(path, model.SerializeToString())
    return path


# A-10 applied by hand to build_names_model, in encoding order (node attributes first).
NAMES_ENTRIES = ["k_value", "W", "w_2", "layer_0_weight", "t0bias", "t__x", "L" * 120, MODEL_ENTRY]


def make_archive(ctx, src, name, *flags):
    arc = ctx.path(name)
    rc, _, err = ctx.run("convert", *flags, src, arc)
    ctx.equal(rc, 0, f"convert {src} {arc} {' '.join(flags)}: exit status ({err!r})")
    return arc


# ---- the groups: conversions -------------------------------------------------------

def group_convert_archive(ctx):
    """.onnx -> .onnxz -> .onnx gives the source bytes (A-22); the archive passes unzip,
    7z, zipfile and zipalign and holds exactly the model's tensors; options, forms, -f."""
    if onnx is None:
        return SKIP
    sample, src = ctx.sample, onnx.load(ctx.sample)
    arc = ctx.path("mlp.onnxz")
    rc, out, err = ctx.expect_exit(["convert", sample, arc], 0, "convert to .onnxz")
    ctx.equal(err, "", "convert to .onnxz: stderr")
    ctx.check(re.match(rf"^{re.escape(sample)} -> {re.escape(arc)} \(453914 => \d+ bytes\)\n$", out),
              f"convert to .onnxz: summary line {out!r}")
    check_archive(ctx, arc, src, DEFAULT_THRESHOLD, 64, "default archive")
    zip_clients(ctx, arc, 64, "default archive")
    back = ctx.path("mlp.back.onnx")
    ctx.expect_exit(["convert", arc, back], 0, "convert .onnxz to .onnx")
    ctx.check(read(back) == read(sample), ".onnx -> .onnxz -> .onnx gives the source bytes (A-22)")

    # The input's form comes from its content, the output's from its name (any case).
    disguised = ctx.path("disguised.onnx")
    shutil.copyfile(arc, disguised)
    ctx.expect_exit(["convert", disguised, ctx.path("disguised.back.onnx")], 0, "archive named .onnx")
    ctx.check(read(ctx.path("disguised.back.onnx")) == read(sample), "an archive is read as one whatever its name")
    upper = make_archive(ctx, sample, "UPPER.ONNXZ")
    ctx.check(read(upper) == read(arc), "OUT.ONNXZ is an archive too")

    # --align, with and without a size suffix; zipalign checks the larger alignment.
    a4k = make_archive(ctx, sample, "a4k.onnxz", "--align", "4K")
    check_archive(ctx, a4k, src, DEFAULT_THRESHOLD, 4096, "--align 4K")
    zip_clients(ctx, a4k, 4096, "--align 4K")
    ctx.check(read(make_archive(ctx, sample, "a4096.onnxz", "--align", "4096")) == read(a4k),
              "--align 4K and --align 4096 give the same archive")
    a32k = make_archive(ctx, sample, "a32k.onnxz", "--align=32KiB")
    check_archive(ctx, a32k, src, DEFAULT_THRESHOLD, 32768, "--align=32KiB")

    # --threshold: nothing moves out at 1M; 1K is 1024.
    whole = make_archive(ctx, sample, "whole.onnxz", "--threshold", "1M")
    entries = check_archive(ctx, whole, src, 1 << 20, 64, "--threshold 1M")
    if entries:
        ctx.equal([e["name"] for e in entries], [MODEL_ENTRY], "--threshold 1M: the model alone")
    ctx.expect_exit(["convert", whole, ctx.path("whole.back.onnx")], 0, "convert --threshold 1M archive back")
    ctx.check(read(ctx.path("whole.back.onnx")) == read(sample), "--threshold 1M round trip")
    t1k = make_archive(ctx, sample, "t1k.onnxz", "--threshold", "1k")
    check_archive(ctx, t1k, src, 1024, 64, "--threshold 1k")
    ctx.check(read(make_archive(ctx, sample, "t1024.onnxz", "--threshold", "1024")) == read(t1k),
              "--threshold 1k and 1024 give the same archive")

    # --deflate-model: the model deflated, tensors stored and aligned.
    dm = make_archive(ctx, sample, "dm.onnxz", "--deflate-model")
    entries = check_archive(ctx, dm, src, DEFAULT_THRESHOLD, 64, "--deflate-model")
    if entries:
        ctx.equal(entries[-1]["method"], "deflated", "--deflate-model: __MODEL_PROTO deflated")
        ctx.check(all(e["method"] == "stored" for e in entries[:-1]), "--deflate-model: tensors stored")
    zip_clients(ctx, dm, 64, "--deflate-model")
    ctx.expect_exit(["convert", dm, ctx.path("dm.back.onnx")], 0, "convert deflated-model archive back")
    ctx.check(read(ctx.path("dm.back.onnx")) == read(sample), "--deflate-model round trip")

    # Entry names (A-10) and a tensor inside a node attribute.
    names = build_names_model(ctx.work)
    narc = make_archive(ctx, names, "names.onnxz", "--threshold", "64")  # small tensors too
    entries = check_archive(ctx, narc, onnx.load(names), 64, 64, "names archive")
    if entries:
        ctx.equal([e["name"] for e in entries], NAMES_ENTRIES, "entry names follow A-10")
    zip_clients(ctx, narc, 64, "names archive")
    ctx.expect_exit(["convert", narc, ctx.path("names.back.onnx")], 0, "convert names archive back")
    ctx.check(read(ctx.path("names.back.onnx")) == read(names), "names model round trip")

    # An N-file external-data model (three data files) in, its data read in.
    rich = build_rich_model(ctx.work)
    rarc = make_archive(ctx, rich, "rich.onnxz", "--threshold", "64")
    ctx.expect_exit(["convert", rich, ctx.path("rich.direct.onnx")], 0, "convert rich model to .onnx")
    check_archive(ctx, rarc, python_load(rich), 64, 64, "rich archive")
    ctx.expect_exit(["convert", rarc, ctx.path("rich.back.onnx")], 0, "convert rich archive back")
    ctx.check(read(ctx.path("rich.back.onnx")) == read(ctx.path("rich.direct.onnx")),
              "external-data model -> .onnxz -> .onnx gives the bytes of -> .onnx (A-22)")
    ctx.check(read(ctx.path("rich.back.onnx")) == python_load(rich).SerializeToString(),
              "external-data model -> .onnxz -> .onnx equals python's load (E-16)")

    # -f: an existing archive stays untouched without it; in-place rewrite with it.
    old = b"old archive\n"
    taken = ctx.path("taken.onnxz")
    write(taken, old)
    ctx.expect_error(["convert", sample, taken], taken, "convert over an existing archive")
    ctx.equal(read(taken), old, "existing archive untouched without -f")
    ctx.expect_exit(["convert", "-f", sample, taken], 0, "convert -f over an existing archive")
    ctx.check(read(taken) == read(arc), "convert -f replaced the archive")
    ctx.expect_error(["convert", taken, taken], taken, "convert archive onto itself without -f")
    rc, out, _ = ctx.expect_exit(["convert", "-f", taken, taken], 0, "convert -f archive onto itself")
    ctx.check(f"({os.path.getsize(arc)} => {os.path.getsize(arc)} bytes)" in out, f"in-place summary {out!r}")
    ctx.check(read(taken) == read(arc), "archive rewritten in place from its own mapping")
    ctx.expect_usage(["convert", "--data-dir", ctx.work, arc, ctx.path("x.onnx")], "--data-dir with an archive")
    ctx.check(not os.path.exists(ctx.path("x.onnx")), "a usage error writes nothing")


def group_convert_external(ctx):
    """Two-file and N-file output: python3-onnx loads the same tensors and the checker
    passes; alignment, threshold, splitting, checksums; external-data input, --data-dir;
    data files are never overwritten without -f."""
    if onnx is None:
        return SKIP
    sample, src = ctx.sample, onnx.load(ctx.sample)
    src_raw = raw_by_name(src)
    two = ctx.path("two.onnx")
    rc, out, _ = ctx.expect_exit(["convert", sample, two, "--external-data", "two.data"], 0, "two-file convert")
    ctx.check(out.startswith(f"{sample} -> {two} (") and "data in two.data (451584 bytes)" in out,
              f"two-file convert: summary line {out!r}")
    same_tensors(ctx, src, two, "two-file")
    checker_passes(ctx, two, "two-file")
    refs = external_refs(two)
    ctx.equal([n for n, _, _ in refs],
              [t.name for t in walk_messages(src, "onnx.TensorProto")
               if len(t.raw_data) >= DEFAULT_THRESHOLD],
              "two-file: exactly the tensors of >= 1024 bytes went out")
    data = read(ctx.path("two.data"))
    for name, kv, keys in refs:
        ctx.equal(keys, ["location", "offset", "length"], f"two-file: {name} keys in order (E-20)")
        ctx.equal(kv["location"], "two.data", f"two-file: {name} location")
        off, n = int(kv["offset"]), int(kv["length"])
        ctx.equal(off % 64, 0, f"two-file: {name} offset aligned to 64 by default")
        ctx.check(data[off:off + n] == src_raw[name], f"two-file: {name} bytes in the data file")

    # --align 1 packs the tensors; --threshold 1K keeps smaller ones inside.
    ctx.expect_exit(["convert", sample, ctx.path("packed.onnx"), "--external-data", "packed.data",
                     "--align", "1"], 0, "--align 1")
    refs = external_refs(ctx.path("packed.onnx"))
    offsets = [int(kv["offset"]) for _, kv, _ in refs]
    lengths = [int(kv["length"]) for _, kv, _ in refs]
    ctx.equal(offsets, [sum(lengths[:i]) for i in range(len(lengths))], "--align 1: tensors packed")
    ctx.equal(os.path.getsize(ctx.path("packed.data")), sum(lengths), "--align 1: data file size")
    ctx.expect_exit(["convert", sample, ctx.path("thr.onnx"), "--external-data", "thr.data",
                     "--threshold", "1K", "--align", "4K"], 0, "--threshold 1K --align 4K")
    refs = external_refs(ctx.path("thr.onnx"))
    ctx.equal([n for n, _, _ in refs], [n for n, r in src_raw.items() if len(r) >= 1024],
              "--threshold 1K: tensors under 1024 bytes stay inside")
    ctx.check(all(int(kv["offset"]) % 4096 == 0 for _, kv, _ in refs), "--align 4K offsets")
    same_tensors(ctx, src, ctx.path("thr.onnx"), "--threshold 1K")

    # --max-file-size: LOCATION, LOCATION.1, ...; each within the maximum unless it holds
    # a single larger tensor (E-22).
    split = ctx.path("split.onnx")
    rc, out, _ = ctx.expect_exit(["convert", sample, split, "--external-data", "split.data",
                                  "--max-file-size", "200K"], 0, "--max-file-size 200K")
    refs = external_refs(split)
    files = sorted(f for f in os.listdir(ctx.work) if f.startswith("split.data"))
    ctx.equal(sorted({kv["location"] for _, kv, _ in refs}), files, "split: the references name every part")
    ctx.check(files[:2] == ["split.data", "split.data.1"] and len(files) >= 3, f"split: parts {files}")
    ctx.check(f"data in split.data and {len(files) - 1} more files" in out, f"split: summary {out!r}")
    for f in files:
        held = [kv for _, kv, _ in refs if kv["location"] == f]
        ctx.check(os.path.getsize(ctx.path(f)) <= 200 * 1024 or len(held) == 1,
                  f"split: {f} within the maximum or a single tensor")
    same_tensors(ctx, src, split, "split")
    checker_passes(ctx, split, "split")
    ctx.expect_exit(["convert", sample, ctx.path("split2.onnx"), "--external-data", "split2.data",
                     "--max-file-size", "204800"], 0, "--max-file-size 204800")
    for f in files:
        ctx.check(read(ctx.path(f)) == read(ctx.path("split2" + f[5:])), f"200K and 204800 split alike: {f}")

    # --checksum: SHA-1 of each tensor's bytes; verify checks them.
    ck = ctx.path("ck.onnx")
    if not HAVE_OPENSSL:  # SHA-1 comes from OpenSSL: refused clearly, nothing written
        rc, _, err = ctx.run("convert", sample, ck, "--external-data", "ck.data", "--checksum")
        ctx.check(rc == 1 and "OpenSSL" in err and not os.path.exists(ck),
                  f"--checksum without OpenSSL: rc={rc} {err!r}")
    else:
        ctx.expect_exit(["convert", sample, ck, "--external-data", "ck.data", "--checksum"], 0, "--checksum")
        refs = external_refs(ck)
        for name, kv, keys in refs:
            ctx.equal(keys, ["location", "offset", "length", "checksum"], f"--checksum: {name} keys")
            ctx.equal(kv.get("checksum"), hashlib.sha1(src_raw[name]).hexdigest(), f"--checksum: {name} SHA-1")
        checker_passes(ctx, ck, "--checksum")

    # External-data input: what python's onnx.load gives, as .onnx and through an archive.
    ctx.expect_exit(["convert", two, ctx.path("two.single.onnx")], 0, "two-file to single file")
    python_bytes = python_load(two).SerializeToString()
    ctx.check(read(ctx.path("two.single.onnx")) == python_bytes, "two-file -> .onnx equals python's load")
    ctx.expect_exit(["convert", split, ctx.path("split.onnxz")], 0, "N-file to archive")
    ctx.expect_exit(["convert", ctx.path("split.onnxz"), ctx.path("split.back.onnx")], 0, "archive to .onnx")
    ctx.check(read(ctx.path("split.back.onnx")) == python_load(split).SerializeToString(),
              "N-file -> .onnxz -> .onnx equals python's load (E-16)")
    ctx.expect_exit(["convert", split, ctx.path("split.direct.onnx")], 0, "N-file to .onnx")
    ctx.check(read(ctx.path("split.back.onnx")) == read(ctx.path("split.direct.onnx")),
              "N-file -> .onnxz -> .onnx gives the bytes of N-file -> .onnx (A-22)")
    ctx.expect_exit(["convert", ctx.path("split.onnxz"), ctx.path("again.onnx"), "--external-data",
                     "again.data"], 0, "archive to two-file")
    same_tensors(ctx, src, ctx.path("again.onnx"), "archive to two-file")
    checker_passes(ctx, ctx.path("again.onnx"), "archive to two-file")

    # Moved data: --data-dir finds it; without it the convert fails and writes nothing.
    lonely, elsewhere = ctx.path("lonely"), ctx.path("elsewhere")
    os.makedirs(lonely)
    os.makedirs(elsewhere)
    shutil.copyfile(two, os.path.join(lonely, "two.onnx"))
    shutil.copyfile(ctx.path("two.data"), os.path.join(elsewhere, "two.data"))
    moved_out = ctx.path("moved.onnx")
    ctx.expect_error(["convert", os.path.join(lonely, "two.onnx"), moved_out],
                     os.path.join(lonely, "two.onnx"), "moved data without --data-dir")
    ctx.check(not os.path.exists(moved_out), "failed convert writes nothing")
    ctx.expect_exit(["convert", "--data-dir", elsewhere, os.path.join(lonely, "two.onnx"), moved_out], 0,
                    "--data-dir")
    ctx.check(os.path.exists(moved_out) and read(moved_out) == python_bytes, "--data-dir: the same model")

    # In place: the data file is replaced while the load still maps the old one.
    inplace = ctx.path("inplace.onnx")
    ctx.expect_exit(["convert", sample, inplace, "--external-data", "inplace.data"], 0, "two-file for in-place")
    before = os.path.getsize(inplace)
    rc, out, _ = ctx.expect_exit(["convert", "-f", inplace, inplace, "--external-data", "inplace.data",
                                  "--align", "4K"], 0, "two-file converted in place")
    ctx.check(out.startswith(f"{inplace} -> {inplace} ({before} => "), f"in-place summary {out!r}")
    same_tensors(ctx, src, inplace, "two-file converted in place")

    # Data files are never overwritten without -f; the model is not written either.
    old = b"old data\n"
    write(ctx.path("keep.data"), old)
    ctx.expect_error(["convert", sample, ctx.path("keep.onnx"), "--external-data", "keep.data"],
                     ctx.path("keep.data"), "existing data file")
    ctx.equal(read(ctx.path("keep.data")), old, "existing data file untouched")
    ctx.check(not os.path.exists(ctx.path("keep.onnx")), "no model written beside a refused data file")
    ctx.expect_exit(["convert", "-f", sample, ctx.path("keep.onnx"), "--external-data", "keep.data"], 0,
                    "existing data file with -f")
    same_tensors(ctx, src, ctx.path("keep.onnx"), "-f over a data file")
    write(ctx.path("parts.data.7"), old)
    ctx.expect_error(["convert", sample, ctx.path("parts.onnx"), "--external-data", "parts.data",
                      "--max-file-size", "1M"], ctx.path("parts.data.7"), "existing part file")
    ctx.equal(read(ctx.path("parts.data.7")), old, "existing part file untouched")
    ctx.expect_exit(["convert", sample, ctx.path("abs.onnx"), "--external-data",
                     os.path.join("/nonexistent", "abs.data")], 0, "absolute location keeps its file name")
    ctx.equal({kv["location"] for _, kv, _ in external_refs(ctx.path("abs.onnx"))}, {"abs.data"},
              "absolute --external-data reduced to its file name (E-23)")


# ---- ls, verify, unpack, info on archives -------------------------------------------

def group_get(ctx):
    """get: every form (a single .onnx, two-file, N-file, .onnxz) gives the bytes
    python3-onnx reads and the count --json gives; W-40 is checked before any byte is
    written; typed values (a 0-d tensor's one value too) give the bytes python3-onnx's
    array of them holds, STRING ones are refused, not written empty."""
    if onnx is None:
        return SKIP
    sample, src = ctx.sample, onnx.load(ctx.sample)
    want = raw_by_name(src)
    forms = {"single": sample, "archive": make_archive(ctx, sample, "g.onnxz")}
    for name, flags in (("two", ["--external-data", "two.data"]),
                        ("n", ["--external-data", "n.data", "--max-file-size", "64K"])):
        forms[name] = ctx.path(f"{name}.onnx")
        ctx.expect_exit(["convert", sample, forms[name], *flags], 0, f"convert to {name}")
    for form, path in forms.items():
        for tensor, data in want.items():
            out = ctx.path(f"{form}.{tensor}.bin")
            ctx.expect_exit(["get", path, tensor, "-o", out], 0, f"get {form} {tensor}")
            ctx.check(os.path.exists(out) and read(out) == data, f"get {form} {tensor}: its bytes")
            meta = json.loads(ctx.expect_exit(["get", "--json", path, tensor], 0, f"get --json {form}")[1])
            ctx.equal(meta["bytes"], len(data), f"get --json {form} {tensor}: bytes")
        ctx.expect_error(["get", path, "nothing"], path, f"get {form}: no such tensor", message="no tensor named")
        for t in src.graph.initializer:  # --slice: numpy's indexing of the array
            a = numpy_helper.to_array(t)
            for spec, index in (("1:3", numpy.s_[1:3]), ("::5,-1", numpy.s_[::5, -1]),
                                ("-2", numpy.s_[-2])):
                if a.ndim < spec.count(",") + 1:
                    continue
                out = ctx.path(f"{form}.{t.name}.slice.bin")
                ctx.expect_exit(["get", path, t.name, "--slice", spec, "-o", out, "-f"], 0,
                                f"get --slice {spec} {form} {t.name}")
                ctx.check(os.path.exists(out) and read(out) == a[index].astype(
                    a.dtype.newbyteorder("<")).tobytes(), f"get --slice {spec} {form} {t.name}")
                npy = ctx.path(f"{form}.{t.name}.slice.npy")
                ctx.expect_exit(["get", path, t.name, "--slice", spec, "--npy", "-o", npy, "-f"],
                                0, f"get --slice {spec} --npy {form} {t.name}")
                ctx.check(os.path.exists(npy) and numpy.array_equal(numpy.load(npy), a[index]),
                          f"get --slice {spec} --npy {form} {t.name}: numpy.load of it")
            npy = ctx.path(f"{form}.{t.name}.npy")
            ctx.expect_exit(["get", path, t.name, "--npy", "-o", npy, "-f"], 0,
                            f"get --npy {form} {t.name}")
            got = numpy.load(npy) if os.path.exists(npy) else None
            ctx.check(got is not None and got.dtype == a.dtype and numpy.array_equal(got, a),
                      f"get --npy {form} {t.name}: numpy.load of it")
        tensor = src.graph.initializer[0].name
        ctx.expect_usage(["get", path, tensor, "--slice", "1,,2"], f"get --slice 1,,2 {form}")
        ctx.expect_error(["get", path, tensor, "--slice", "::-1"], path, f"get --slice ::-1 {form}",
                         message="step -1")

    short = helper.make_tensor("short", TensorProto.UINT8, [3], b"abc", raw=True)
    short.dims[0] = 4  # 3 bytes where its dims make 4
    typed = [helper.make_tensor("scalar", TensorProto.FLOAT, [], [1.5]),
             helper.make_tensor("typed", TensorProto.INT16, [2], [-2, 300])]
    odd = helper.make_model(helper.make_graph([], "odd", [], [], initializer=[
        short, *typed, helper.make_tensor("strings", TensorProto.STRING, [1], [b"a"])]))
    odd_path = ctx.path("odd.onnx")
    write(odd_path, odd.SerializeToString())
    for t in typed:
        out = ctx.path(f"odd.{t.name}.bin")
        a = numpy_helper.to_array(t)
        ctx.expect_exit(["get", odd_path, t.name, "-o", out], 0, f"get {t.name}")
        ctx.check(os.path.exists(out) and read(out) == a.astype(a.dtype.newbyteorder("<")).tobytes(),
                  f"get {t.name}: the bytes of python3-onnx's array")
        npy = ctx.path(f"odd.{t.name}.npy")
        ctx.expect_exit(["get", odd_path, t.name, "--npy", "-o", npy], 0, f"get --npy {t.name}")
        ctx.check(os.path.exists(npy) and numpy.array_equal(numpy.load(npy), a),
                  f"get --npy {t.name}: numpy.load of it")
    npy = ctx.path("odd.strings.npy")
    ctx.expect_error(["get", odd_path, "strings", "--npy", "-o", npy], odd_path, "get --npy strings",
                     message="no numpy dtype")
    ctx.check(not os.path.exists(npy), "get --npy strings: nothing written")
    for tensor, message in (("short", r"make 4 bytes, but its raw_data holds 3 \(W-40\)"),
                            ("strings", "holds STRING values, which have no raw bytes")):
        out = ctx.path(f"odd.{tensor}.bin")
        ctx.expect_error(["get", odd_path, tensor, "-o", out], odd_path, f"get {tensor}", message=message)
        ctx.check(not os.path.exists(out), f"get {tensor}: nothing written")
    check_get_npy(ctx)


def check_get_npy(ctx):
    """get --npy of a tensor of each ONNX type numpy has a dtype for, in a .onnx, with
    external data and in an archive: numpy.load reads python3-onnx's array (bfloat16 as
    its uint16 bits), its slices numpy's indexing of that array; a header too long for
    .npy 1.0 is 2.0, as numpy's own reader of the header sees it."""
    rng = numpy.random.default_rng(30)
    arrays = [rng.standard_normal((7, 6)).astype(d) for d in ("<f4", "<f2", "<f8")]
    arrays += [rng.integers(-100, 100, (7, 6)).astype(d)
               for d in ("|i1", "|u1", "<i2", "<u2", "<i4", "<u4", "<i8", "<u8")]
    arrays += [rng.integers(0, 2, (7, 6)).astype(bool),
               (rng.standard_normal((7, 6)) + 1j * rng.standard_normal((7, 6))).astype("<c8"),
               (rng.standard_normal((7, 6)) - 1j).astype("<c16")]
    tensors = [numpy_helper.from_array(a, f"t_{a.dtype.name}") for a in arrays]
    bits = (rng.standard_normal((7, 6)).astype("<f4").view("<u4") >> 16).astype("<u2")
    tensors.append(helper.make_tensor("t_bfloat16", TensorProto.BFLOAT16, [7, 6],
                                      bits.tobytes(), raw=True))
    model = ctx.path("dtypes.onnx")
    write(model, helper.make_model(helper.make_graph([], "dtypes", [], [],
                                                     initializer=tensors)).SerializeToString())
    forms = {"single": model, "archive": make_archive(ctx, model, "dtypes.onnxz", "--threshold", "0"),
             "external": ctx.path("dtypes.ext.onnx")}
    ctx.expect_exit(["convert", model, forms["external"], "--external-data", "dtypes.data",
                     "--threshold", "0"], 0, "convert dtypes to external data")
    slices = (("0:128,:", numpy.s_[0:128, :]), ("-3:-1,::2", numpy.s_[-3:-1, ::2]),
              ("1,2", numpy.s_[1, 2]), ("5:2", numpy.s_[5:2]), (":,-1", numpy.s_[:, -1]),
              ("1::3,4:", numpy.s_[1::3, 4:]), ("-9:", numpy.s_[-9:]))
    for form, path in forms.items():
        for t in tensors:
            a = numpy_helper.to_array(t)
            if t.data_type == TensorProto.BFLOAT16:  # python3-onnx widens it to float32
                a = (a.astype("<f4").view("<u4") >> 16).astype("<u2")
            for spec, index in (("", ()), *slices):
                what = f"get --npy --slice {spec!r} {form} {t.name}"
                out = ctx.path(f"dtypes.{form}.{t.name}.npy")
                ctx.expect_exit(["get", path, t.name, "--npy", "-o", out, "-f",
                                 *(["--slice", spec] if spec else [])], 0, what)
                got = numpy.load(out) if os.path.exists(out) else None
                ctx.check(got is not None and got.dtype == a.dtype and got.shape == a[index].shape
                          and numpy.array_equal(got, a[index]), f"{what}: numpy.load of it")
                if spec:
                    meta = json.loads(ctx.expect_exit(
                        ["get", path, t.name, "--json", "--slice", spec], 0, what + " --json")[1])
                    ctx.equal(meta["dims"], list(a[index].shape), f"{what} --json: dims")
                    ctx.equal(meta["bytes"], a[index].nbytes, f"{what} --json: bytes")

    # Types numpy lacks, as the Python package views them: float8 as uint8 in its shape,
    # packed 4-bit ones as their bytes, one-dimensional (python3-onnx 1.12 knows neither,
    # so the tensors are made with their type numbers).
    raw = bytes(range(0x70, 0x7c))
    for data_type, dims, spec, want in ((17, [3, 4], "", numpy.frombuffer(raw, "|u1").reshape(3, 4)),
                                        (17, [3, 4], "-1,1:", numpy.frombuffer(raw[9:], "|u1")),
                                        (22, [24], "", numpy.frombuffer(raw, "|u1")),
                                        (22, [24], "4:12", numpy.frombuffer(raw[2:6], "|u1"))):
        t = helper.make_tensor("odd", TensorProto.UINT8, [len(raw)], raw, raw=True)
        t.data_type = data_type
        t.dims[:] = dims
        path, out = ctx.path(f"type{data_type}.onnx"), ctx.path(f"type{data_type}.npy")
        write(path, helper.make_model(helper.make_graph([], "g", [], [], initializer=[t]))
              .SerializeToString())
        what = f"get --npy --slice {spec!r} of data_type {data_type}"
        ctx.expect_exit(["get", path, "odd", "--npy", "-o", out, "-f",
                         *(["--slice", spec] if spec else [])], 0, what)
        got = numpy.load(out) if os.path.exists(out) else None
        ctx.check(got is not None and got.dtype == want.dtype and got.shape == want.shape
                  and numpy.array_equal(got, want), f"{what}: numpy.load of it ({got!r})")

    deep = [1] * 25000 + [3]  # a header of 75000 bytes: past .npy 1.0's 65535
    path = ctx.path("deep.onnx")
    write(path, helper.make_model(helper.make_graph([], "deep", [], [], initializer=[
        helper.make_tensor("deep", TensorProto.INT16, deep, [1, -2, 3])])).SerializeToString())
    out = ctx.path("deep.npy")
    ctx.expect_exit(["get", path, "deep", "--npy", "-o", out], 0, "get --npy deep")
    if ctx.check(os.path.exists(out), "get --npy deep: written"):
        with open(out, "rb") as f:
            version = numpy.lib.format.read_magic(f)
            if not ctx.equal(version, (2, 0), "get --npy deep: .npy version"):
                return
            shape, fortran, dtype = numpy.lib.format.read_array_header_2_0(f, max_header_size=1 << 20)
            start, data = f.tell(), f.read()
        ctx.check(shape == tuple(deep) and not fortran and dtype == numpy.dtype("<i2"),
                  f"get --npy deep: header ({len(shape)} dims, {dtype})")
        ctx.equal(start % 64, 0, "get --npy deep: data aligned on 64 bytes")
        ctx.equal(data, numpy.array([1, -2, 3], "<i2").tobytes(), "get --npy deep: data")


def parse_ls_line(line):
    name, method, size, offset, align, tensors = line.split(None, 5)
    return name, method, int(size), int(offset), int(align), tensors


def group_ls(ctx):
    """`ls` against zipfile, the local headers and python3-onnx; the golden listing."""
    if onnx is None:
        return SKIP
    arc = make_archive(ctx, ctx.sample, "mlp.onnxz")
    narc = make_archive(ctx, build_names_model(ctx.work), "names.onnxz", "--threshold", "0")
    deflated = rezip(narc, ctx.path("deflated.onnxz"), tensor_method=zipfile.ZIP_DEFLATED,
                     model_method=zipfile.ZIP_DEFLATED)
    extra = rezip(arc, ctx.path("extra.onnxz"), extra=[("notes/readme.txt", b"hello\n")])
    a32k = make_archive(ctx, ctx.sample, "a32k.onnxz", "--align", "32K")  # offsets past the cap
    for path in (arc, narc, deflated, extra, a32k):
        rc, out, err = ctx.expect_exit(["ls", "--json", path], 0, f"ls --json {path}")
        if rc != 0:
            continue
        ctx.equal(err, "", f"ls --json {path}: stderr")
        try:
            got = json.loads(out)
        except ValueError as e:
            ctx.check(False, f"ls --json {path}: not JSON ({e})")
            continue
        ctx.equal(got, ls_oracle(path), f"ls --json {path} against zipfile + python3-onnx")
        # The human table says the same, line for line.
        rc, out, _ = ctx.expect_exit(["ls", path], 0, f"ls {path}")
        lines = out.splitlines()
        ctx.equal(lines[0].split(), ["NAME", "METHOD", "SIZE", "OFFSET", "ALIGN", "TENSOR"], "ls header")
        want = ls_oracle(path)["entries"]
        if ctx.equal(len(lines) - 1, len(want), f"ls {path}: one line per entry"):
            for line, e in zip(lines[1:], want):
                tensors = "(model)" if e["model"] else (", ".join(e["tensors"]) or "-")
                ctx.equal(parse_ls_line(line), (e["name"], e["method"], e["size"], e["data_offset"],
                                                e["alignment"], tensors), f"ls {path}: line {line!r}")
    rc, out, _ = ctx.expect_exit(["ls", arc], 0, "ls sample archive")
    golden = read(os.path.join(ctx.golden, "mlp.ls.txt")).decode()
    if not ctx.equal(out, golden, "ls: output differs from tests/cli/golden/mlp.ls.txt"):
        sys.stderr.write("---- got ----\n" + out + "---- want ----\n" + golden)
    ctx.expect_error(["ls", ctx.sample], ctx.sample, "ls on a .onnx file")
    ctx.expect_error(["ls", ctx.path("missing.onnxz")], ctx.path("missing.onnxz"), "ls on a missing file")


def flip_byte(src, dst, offset):
    d = bytearray(read(src))
    d[offset] ^= 0x55
    write(dst, bytes(d))
    return dst


def group_verify(ctx):
    """verify passes what is right and names the first problem of what is not; where a
    ZIP client can judge the same thing, it agrees."""
    if onnx is None:
        return SKIP
    sample = ctx.sample
    arc = make_archive(ctx, sample, "mlp.onnxz")
    rc, out, err = ctx.expect_exit(["verify", arc], 0, "verify archive")
    ctx.check(out.startswith(f"OK {arc}: onnxz archive, 5 entries") and out.count("\n") == 1,
              f"verify archive: OK line {out!r}")
    rc, out, _ = ctx.expect_exit(["verify", "--json", arc], 0, "verify --json archive")
    try:
        got = json.loads(out)
        entries = zip_entries(arc)
        ctx.equal(got, {"file": arc, "format": "onnxz", "ok": True, "entries": len(entries),
                        "tensor_entries": len(entries) - 1, "entry_tensors": len(entries) - 1,
                        "entry_bytes": sum(e["size"] for e in entries[:-1]),
                        "model_size": entries[-1]["size"]}, "verify --json archive")
    except ValueError as e:
        ctx.check(False, f"verify --json: not JSON ({e})")
    ctx.equal(ctx.run("-q", "verify", arc)[:2], (0, ""), "verify -q: exit 0, nothing printed")
    ctx.expect_exit(["verify", make_archive(ctx, sample, "dm.onnxz", "--deflate-model")], 0,
                    "verify deflated-model archive")

    # .onnx: decodes, external data resolves, checksums match.
    rc, out, _ = ctx.expect_exit(["verify", sample], 0, "verify .onnx")
    ctx.equal(out, f"OK {sample}: onnx model, 8 tensors\n", "verify .onnx: OK line")
    if HAVE_OPENSSL:  # checksums need SHA-1 from OpenSSL
        ck = ctx.path("ck.onnx")
        ctx.expect_exit(["convert", sample, ck, "--external-data", "ck.data", "--checksum"], 0, "two-file with checksums")
        rc, out, _ = ctx.expect_exit(["verify", ck], 0, "verify two-file")
        ctx.equal(out, f"OK {ck}: onnx model, 8 tensors, 4 in 1 external data file (441.0 KiB), "
                       "4 checksums verified\n", "verify two-file: OK line")
        rc, out, _ = ctx.expect_exit(["verify", "--json", ck], 0, "verify two-file --json")
        if rc == 0:
            ctx.equal(json.loads(out), {"file": ck, "format": "onnx", "ok": True, "tensors": 8,
                                        "external_tensors": 4, "external_files": 1,
                                        "external_bytes": 451584, "checksums_verified": 4}, "verify --json two-file")
        first = external_refs(ck)[0][1]
        flip_byte(ctx.path("ck.data"), ctx.path("ck.data"), int(first["offset"]) + 3)
        rc, _, err = ctx.run("verify", ck)
        ctx.expect_error(["verify", ck], ck, "verify two-file with a changed byte")
        ctx.check("checksum" in err, f"verify names the checksum: {err!r}")
        os.remove(ctx.path("ck.data"))
        ctx.expect_error(["verify", ck], ck, "verify two-file without its data file")
    ctx.expect_usage(["verify", "--data-dir", ctx.work, arc], "verify --data-dir on an archive")
    ctx.expect_usage(["verify", "--data-dir", ctx.work, "--trust", ctx.path("no-such-key.pem"), arc],
                     "verify --data-dir on an archive is a usage error before --trust's key is read")

    # A changed byte in a tensor's data: our CRC check and unzip's agree.
    e = zip_entries(arc)[0]
    bad = flip_byte(arc, ctx.path("crc.onnxz"), e["data_offset"] + 5)
    rc, _, err = ctx.run("verify", bad)
    off = ctx.expect_error(["verify", bad], bad, "verify with a bad CRC", offset=True)
    ctx.equal(off, e["data_offset"], "verify: the bad CRC's offset is the entry's data")
    ctx.check("CRC" in err or "crc" in err, f"verify names the CRC: {err!r}")
    if shutil.which("unzip"):
        ctx.check(subprocess.run(["unzip", "-tqq", bad], capture_output=True).returncode != 0,
                  "unzip -t also rejects the bad CRC")
    with zipfile.ZipFile(bad) as z:
        ctx.equal(z.testzip(), e["name"], "zipfile.testzip finds the same entry")
    # The layout rules, on archives Python's zipfile wrote (which load, A-23).
    for name, kwargs, rule in [
            ("first.onnxz", {"model_first": True}, "A-2"),
            ("deflated.onnxz", {"tensor_method": zipfile.ZIP_DEFLATED}, "A-3"),
            ("unaligned.onnxz", {}, "A-4")]:
        path = rezip(arc, ctx.path(name), **kwargs)
        if rule == "A-4":
            ctx.check(any(x["data_offset"] % 64 for x in zip_entries(path)), "precondition: an unaligned entry")
        rc, _, err = ctx.run("verify", path)
        ctx.expect_error(["verify", path], path, f"verify {name}")
        ctx.check(f"({rule})" in err, f"verify {name}: names rule {rule}: {err!r}")
        ctx.expect_exit(["convert", path, ctx.path(name + ".onnx")], 0, f"{name} still loads (A-23)")
        ctx.check(read(ctx.path(name + ".onnx")) == read(sample), f"{name} loads the same model")
    # A-2 in the central directory alone: the model's data last, its record first.
    cd_first = model_first_in_directory(arc, ctx.path("cd_first.onnxz"))
    with zipfile.ZipFile(cd_first) as z:
        ctx.equal(z.namelist()[0], MODEL_ENTRY, "precondition: model first in the directory")
    rc, _, err = ctx.run("verify", cd_first)
    ctx.expect_error(["verify", cd_first], cd_first, "verify with the model first in the directory")
    ctx.check("central directory" in err and "(A-2)" in err, f"directory order: names A-2: {err!r}")
    # A tensor whose entry is missing, an entry with the wrong length, a cut archive.
    missing = rezip(arc, ctx.path("missing.onnxz"), drop=[e["name"]])
    rc, _, err = ctx.run("verify", missing)
    ctx.expect_error(["verify", missing], missing, "verify with a missing entry")
    ctx.check("A-21" in err, f"missing entry: names A-21: {err!r}")
    cut = ctx.path("cut.onnxz")
    write(cut, read(arc)[:-100])
    ctx.expect_error(["verify", cut], cut, "verify a cut archive", offset="any")
    ctx.expect_error(["verify", ctx.path("nope.onnxz")], ctx.path("nope.onnxz"), "verify a missing file")


def tree(root):
    """relative path -> bytes of every file under root."""
    out = {}
    for d, _, files in os.walk(root):
        for f in files:
            p = os.path.join(d, f)
            out[os.path.relpath(p, root)] = read(p)
    return out


def group_unpack(ctx):
    """unpack gives what unzip gives with __MODEL_PROTO renamed model.onnx, which
    python3-onnx loads and checks; DIR rules; nothing written from a bad archive."""
    if onnx is None:
        return SKIP
    sample, src = ctx.sample, onnx.load(ctx.sample)
    cases = [("mlp", make_archive(ctx, sample, "mlp.onnxz"), src),
             ("dm", make_archive(ctx, sample, "dm.onnxz", "--deflate-model"), src)]
    names = build_names_model(ctx.work)
    narc = make_archive(ctx, names, "names.onnxz", "--threshold", "64")
    # Entries in a subdirectory and deflated tensors, as a generic ZIP tool may write them.
    sub = rezip(narc, ctx.path("sub.onnxz"), tensor_method=zipfile.ZIP_DEFLATED,
                rename=("layer_0_weight", "weights/layer_0_weight"))
    cases += [("names", narc, onnx.load(names)), ("sub", sub, onnx.load(names))]
    for label, arc, model in cases:
        out_dir = ctx.path(f"{label}.dir")
        rc, out, err = ctx.expect_exit(["unpack", arc, out_dir], 0, f"unpack {label}")
        if rc != 0:
            continue
        ctx.check(re.match(rf"^{re.escape(arc)} -> {re.escape(out_dir)}/model.onnx \+ \d+ data files? \(\d+ bytes\)\n$", out),
                  f"unpack {label}: summary {out!r}")
        if shutil.which("unzip"):
            ref = ctx.path(f"{label}.unzip")
            subprocess.run(["unzip", "-qo", arc, "-d", ref], check=True)
            os.rename(os.path.join(ref, MODEL_ENTRY), os.path.join(ref, "model.onnx"))
            ctx.check(tree(out_dir) == tree(ref), f"unpack {label}: the files unzip gives (model renamed)")
        else:
            MISSING_CLIENTS.add("unzip")
        got = same_tensors(ctx, model, os.path.join(out_dir, "model.onnx"), f"unpack {label}")
        checker_passes(ctx, os.path.join(out_dir, "model.onnx"), f"unpack {label}")
        back = ctx.path(f"{label}.back.onnx")
        ctx.expect_exit(["convert", os.path.join(out_dir, "model.onnx"), back], 0, f"convert unpacked {label}")
        if got is not None:
            ctx.check(read(back) == python_load(os.path.join(out_dir, "model.onnx")).SerializeToString(),
                      f"unpacked {label}: our load equals python's (E-16)")
            ctx.check(read(back) == model.SerializeToString(), f"unpacked {label}: the source model again")

    # DIR: a non-empty one is refused (and left as it was), -f writes into it.
    arc = cases[0][1]
    busy = ctx.path("busy")
    os.makedirs(busy)
    write(os.path.join(busy, "mine.txt"), b"mine\n")
    ctx.expect_error(["unpack", arc, busy], busy, "unpack into a non-empty directory")
    ctx.equal(sorted(os.listdir(busy)), ["mine.txt"], "non-empty DIR untouched")
    ctx.expect_exit(["unpack", "-f", arc, busy], 0, "unpack -f into a non-empty directory")
    ctx.equal(read(os.path.join(busy, "mine.txt")), b"mine\n", "unpack -f keeps unrelated files")
    ctx.check(os.path.exists(os.path.join(busy, "model.onnx")), "unpack -f wrote the model")
    ctx.expect_exit(["unpack", "-f", arc, busy], 0, "unpack -f again over its own files")
    empty = ctx.path("empty")
    os.makedirs(empty)
    ctx.expect_exit(["unpack", arc, empty], 0, "unpack into an empty directory")
    afile = ctx.path("afile")
    write(afile, b"x")
    ctx.expect_error(["unpack", arc, afile], afile, "unpack into a regular file")
    ctx.expect_error(["unpack", arc, ctx.path("no/such/parent")], ctx.path("no/such/parent"),
                     "unpack where the parent is missing")
    # A bad archive: nothing is written, DIR is not even created.
    e = zip_entries(arc)[1]
    bad = flip_byte(arc, ctx.path("bad.onnxz"), e["data_offset"])
    ctx.expect_error(["unpack", bad, ctx.path("bad.dir")], bad, "unpack a bad archive", offset="any")
    ctx.check(not os.path.exists(ctx.path("bad.dir")), "unpack of a bad archive creates nothing")
    clash = rezip(arc, ctx.path("clash.onnxz"), rename=(e["name"], "model.onnx"))
    ctx.expect_error(["unpack", clash, ctx.path("clash.dir")], clash, "unpack with an entry named model.onnx")
    ctx.check(not os.path.exists(ctx.path("clash.dir")), "refused unpack creates nothing")
    ctx.expect_error(["unpack", ctx.sample, ctx.path("x.dir")], ctx.sample, "unpack a .onnx file")


def archive_facts(path):
    """What `info --json` must say about an archive: the model's facts (python_facts on
    __MODEL_PROTO) with the archive's size, and its entries from zipfile."""
    entries = zip_entries(path)
    refs = entry_tensors(archive_model(path))
    model_path = path + ".model"
    with zipfile.ZipFile(path) as z:
        write(model_path, z.read(MODEL_ENTRY))
    facts = python_facts(model_path)
    os.remove(model_path)
    tensor_entries = [e for e in entries if e["name"] in refs and e["name"] != MODEL_ENTRY]
    stored = [e for e in entries if e["method"] == "stored"]
    deflated = [e for e in entries if e["method"] == "deflated"]
    aligns = [alignment_of(e["data_offset"]) for e in tensor_entries if e["method"] == "stored"]
    model = [e for e in entries if e["name"] == MODEL_ENTRY][0]
    facts.update({
        "format": "onnxz",
        "file_size": os.path.getsize(path),
        "archive": {
            "entries": len(entries),
            "stored": {"entries": len(stored), "bytes": sum(e["size"] for e in stored)},
            "deflated": {"entries": len(deflated), "bytes": sum(e["size"] for e in deflated),
                         "compressed_bytes": sum(e["compressed_size"] for e in deflated)},
            "tensor_entries": len(tensor_entries),
            "deflated_tensor_entries": len([e for e in tensor_entries if e["method"] == "deflated"]),
            "min_tensor_alignment": min(aligns) if aligns else 0,
            "zero_copy": all(e["method"] == "stored" for e in tensor_entries),
            "model_entry": {"method": model["method"], "size": model["size"],
                            "compressed_size": model["compressed_size"], "last": model is entries[-1]
                            and model["header_offset"] == max(e["header_offset"] for e in entries)},
        },
    })
    return facts


def group_info_archive(ctx):
    """info on archives against python3-onnx and zipfile; zero-copy and deflated entries."""
    if onnx is None:
        return SKIP
    arc = make_archive(ctx, ctx.sample, "mlp.onnxz")
    rich = make_archive(ctx, build_rich_model(ctx.work), "rich.onnxz", "--threshold", "0")
    deflated = rezip(arc, ctx.path("deflated.onnxz"), tensor_method=zipfile.ZIP_DEFLATED,
                     model_method=zipfile.ZIP_DEFLATED)
    first = rezip(arc, ctx.path("first.onnxz"), model_first=True)
    for path in (arc, rich, deflated, first):
        info = info_json(ctx, path, f"info --json {path}")
        if info is not None:
            compare_facts(ctx, info, archive_facts(path), f"archive {os.path.basename(path)}")
            ctx.equal(set(info["archive"]), ARCHIVE_KEYS, "archive JSON keys")
    rc, out, err = ctx.expect_exit(["info", arc], 0, "info archive")
    lines = out.splitlines()
    for line in ["format:               onnxz archive", "archive entries:      5",
                 "  tensor entries:     4, stored, aligned to 64: zero-copy",
                 "  deflated:           0 entries, 0 bytes",
                 "  model entry:        __MODEL_PROTO, stored, 2479 bytes (2.4 KiB)",
                 "  external data:      4 tensors, 451584 bytes (441.0 KiB)"]:
        ctx.check(line in lines, f"info archive: line {line!r} in\n{out}")
    ctx.check(not any(l.startswith("    ") for l in lines), "info archive: no per-entry location lines")
    rc, out, _ = ctx.expect_exit(["info", deflated], 0, "info deflated archive")
    ctx.check("4 deflated: not zero-copy" in out, f"info deflated archive notes it is not zero-copy:\n{out}")
    rc, out, _ = ctx.expect_exit(["info", first], 0, "info model-first archive")
    ctx.check("not the last entry" in out, f"info notes the model is not last:\n{out}")
    # Archives are told by content, not by name.
    disguised = ctx.path("disguised.onnx")
    shutil.copyfile(arc, disguised)
    info = info_json(ctx, disguised, "info --json disguised archive")
    if info is not None:
        ctx.equal(info["format"], "onnxz", "an archive named .onnx is shown as one")


def group_bench(ctx):
    """bench's JSON line, in the exact shape bench/bench_load.py calls and reads; bytes
    against the file's size and python3-onnx's tensor bytes."""
    if onnx is None:
        return SKIP
    sample = ctx.sample
    arc = make_archive(ctx, sample, "mlp.onnxz")
    two = ctx.path("two.onnx")
    ctx.expect_exit(["convert", sample, two, "--external-data", "two.data"], 0, "two-file for bench")
    tensor_bytes = sum(len(t.raw_data) for t in walk_messages(onnx.load(sample), "onnx.TensorProto"))

    def bench(argv, what):
        rc, out, err = ctx.expect_exit(argv, 0, what)
        if rc != 0:
            return None
        try:
            got = json.loads(out.strip().splitlines()[-1])
        except (ValueError, IndexError) as e:
            ctx.check(False, f"{what}: last line is not JSON ({e}): {out!r}")
            return None
        if ctx.equal(set(got), BENCH_KEYS, f"{what}: JSON keys"):
            ctx.check(0 <= got["min_s"] <= got["median_s"] and got["min_s"] <= got["first_s"],
                      f"{what}: min <= median, min <= first: {got}")
        return got

    for argv, want in [
            (["bench", "read", sample, "--json"], os.path.getsize(sample)),
            (["bench", "map", sample, "--json"], os.path.getsize(sample)),
            (["bench", "map", arc, "--repeat", "2", "--json"], os.path.getsize(arc)),
            (["bench", "map", arc, "--every-byte", "--json"], os.path.getsize(arc)),
            (["bench", "map", arc, "--every-byte", "--prefetch", "--json"], os.path.getsize(arc)),
            (["bench", "map", arc, "--populate", "--json"], os.path.getsize(arc)),
            (["bench", "copy", sample, "--json"], os.path.getsize(sample)),
            (["bench", "copy", arc, "--threads", "3", "--repeat", "2", "--json"], os.path.getsize(arc)),
            (["bench", "load", sample, "--repeat", "3", "--json"], tensor_bytes),
            (["bench", "load", sample, "--threads", "2", "--repeat", "3", "--json"], tensor_bytes),
            (["bench", "load", sample, "--no-copy", "--repeat", "3", "--json"], tensor_bytes),
            (["bench", "load", sample, "--no-copy", "--prefetch", "--json"], tensor_bytes),
            (["bench", "load", sample, "--prefetch", "--json"], tensor_bytes),
            (["bench", "load", two, "--no-copy", "--prefetch", "--json"], tensor_bytes),
            (["bench", "load", arc, "--no-copy", "--json"], tensor_bytes),
            (["bench", "load", arc, "--no-copy", "--touch-pages", "--json"], tensor_bytes),
            (["bench", "load", arc, "--json"], tensor_bytes),
            (["bench", "load", two, "--no-copy", "--json"], tensor_bytes)]:
        got = bench(argv, " ".join(argv[:2] + argv[3:]))
        if got is not None:
            ctx.equal(got["bytes"], want, f"{' '.join(argv)}: bytes")
    rc, out, _ = ctx.expect_exit(["bench", "load", "--repeat", "5", sample], 0, "bench human output")
    ctx.check(re.match(r"^load \(copy\) .*: 5 runs, 452392 bytes .*\n  first +\d+\.\d+ s\n  min +\d+\.\d+ s\n"
                       r"  median +\d+\.\d+ s", out) is not None, f"bench human output: {out!r}")
    ctx.equal(ctx.run("-q", "bench", "read", sample)[:2], (0, ""), "bench -q prints nothing")
    garbage = ctx.path("garbage.onnx")
    write(garbage, b"\xff" * 64)
    ctx.expect_error(["bench", "load", garbage], garbage, "bench load garbage", offset=True)
    ctx.expect_error(["bench", "read", ctx.path("nope")], ctx.path("nope"), "bench read missing")
    ctx.expect_error(["bench", "map", ctx.work], ctx.work, "bench map a directory")


# ---- encryption (encrypt, decrypt; encrypted input to convert, info, verify) ----------

PASS = b"correct horse battery staple"
NO_OPENSSL_RE = r"built without OpenSSL"
FAST = ["--iterations", "1000"]  # PBKDF2 at the default 600,000 is slow on purpose


def load_refcrypt():
    """tests/crypto/refcrypt.py: an independent implementation of spec/encryption.md on
    python3-cryptography; None when that is missing."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "crypto"))
    try:
        import refcrypt
    except ImportError:
        MISSING_CLIENTS.add("python3-cryptography")
        return None
    return refcrypt


def openssl_cry1_decrypt(data, passphrase):
    """ONNXCRY1 decrypted with the openssl command line alone: `openssl kdf` derives the key
    (PBKDF2-HMAC-SHA256, 100,000 iterations, the header's salt), `openssl enc -d` decrypts
    AES-256-CBC with the header's IV. (enc's own -pbkdf2 would derive the IV too, which
    ONNXCRY1 stores instead.) None when openssl is missing."""
    if not shutil.which("openssl"):
        MISSING_CLIENTS.add("openssl")
        return None
    salt, iv = data[8:24], data[24:40]
    r = subprocess.run(["openssl", "kdf", "-keylen", "32", "-kdfopt", "digest:SHA256",
                        "-kdfopt", "hexpass:" + passphrase.hex(), "-kdfopt", "hexsalt:" + salt.hex(),
                        "-kdfopt", "iter:100000", "PBKDF2"], capture_output=True, text=True)
    if r.returncode != 0:
        return b"openssl kdf failed: " + r.stderr.encode()
    key = bytes.fromhex(r.stdout.strip().replace(":", ""))
    r = subprocess.run(["openssl", "enc", "-d", "-aes-256-cbc", "-K", key.hex(), "-iv", iv.hex()],
                       input=data[40:], capture_output=True)
    return r.stdout if r.returncode == 0 else b"openssl enc failed: " + r.stderr


def group_crypt(ctx):
    """encrypt/decrypt: round trips; our ONNXZEC1 decrypts with refcrypt.py, our ONNXCRY1 with
    the openssl command line, and files they encrypt decrypt with us; key sources
    (--key-file, ONNXZ_KEY; never argv; no terminal -> usage error); wrong key -> one line;
    no overwrite without -f. Built without OpenSSL: exit 1 with the library's message."""
    sample = ctx.sample
    plain_onnx = read(sample)
    arc = ctx.path("mlp.onnxz")
    ctx.expect_exit(["convert", sample, arc], 0, "convert the sample to .onnxz")
    keyfile = ctx.path("key.txt")
    write(keyfile, PASS + b"\n")  # one trailing newline is not part of the passphrase
    kf = ["--key-file", keyfile]
    env = {"ONNXZ_KEY": PASS.decode()}

    # Usage errors first: they hold in either build.
    for argv, what in [
            (["encrypt", "--key", "x", sample, ctx.path("u1")], "--key on argv"),
            (["encrypt", "--key=x", sample, ctx.path("u1")], "--key= on argv"),
            (["encrypt", "--passphrase", "x", sample, ctx.path("u1")], "--passphrase on argv"),
            (["decrypt", "--key", "x", sample, ctx.path("u1")], "decrypt --key on argv"),
            (["convert", "--key", "x", sample, ctx.path("u1.onnxc")], "convert --key on argv"),
            (["info", "--passphrase", "x", sample], "info --passphrase on argv"),
            (["verify", "--key", "x", sample], "verify --key on argv"),
            (["encrypt", sample], "encrypt without OUT"),
            (["decrypt", sample], "decrypt without OUT"),
            (["encrypt", "--format", "aes", sample, ctx.path("u1")], "unknown --format"),
            (["encrypt", "--format", "onnxcry1", "--iterations", "5", sample, ctx.path("u1")],
             "--iterations with onnxcry1"),
            (["encrypt", "--format", "onnxcry1", "--chunk-size", "4K", sample, ctx.path("u1")],
             "--chunk-size with onnxcry1"),
            (["encrypt", "--iterations", "0", sample, ctx.path("u1")], "--iterations 0"),
            (["encrypt", "--chunk-size", "16", sample, ctx.path("u1")], "--chunk-size below 64"),
            (["encrypt", "--chunk-size", "1G", sample, ctx.path("u1")], "--chunk-size above 64M"),
            (["decrypt", "--format", "onnxcry1", sample, ctx.path("u1")], "decrypt --format"),
            (["convert", "--format", "onnxcry1", sample, ctx.path("u1.onnx")], "--format without .onnxc"),
            (["convert", "--external-data", "d", sample, ctx.path("u1.onnxc")], "--external-data to .onnxc")]:
        ctx.expect_usage(argv, what)
    ctx.check(not os.path.exists(ctx.path("u1")) and not os.path.exists(ctx.path("u1.onnxc")),
              "a usage error writes nothing")
    # The passphrase is never taken from an argument: --key is refused above, and the
    # words of the passphrase given as arguments are not a key source either.
    if HAVE_OPENSSL:
        rc, out, err = ctx.expect_exit(["encrypt", sample, ctx.path("u2")], 2,
                                       "no --key-file, no ONNXZ_KEY, no terminal")
        ctx.check(USAGE_RE.match(err.strip()) is not None and "ONNXZ_KEY" in err and
                  "--key-file" in err and len(err.splitlines()) == 1,
                  f"no passphrase source: one usage line naming the sources: {err!r}")
    else:  # without OpenSSL that comes first, before any passphrase is asked for
        ctx.expect_error(["encrypt", sample, ctx.path("u2")], sample, "no OpenSSL, no key source",
                         message=NO_OPENSSL_RE)

    if not HAVE_OPENSSL:
        fake = ctx.path("fake.enc")
        write(fake, b"ONNXZEC1" + bytes(100))
        for argv, file in [(["encrypt", *kf, sample, ctx.path("n1")], sample),
                           (["decrypt", *kf, fake, ctx.path("n2")], fake),
                           (["convert", *kf, sample, ctx.path("n3.onnxc")], ctx.path("n3.onnxc")),
                           (["convert", *kf, fake, ctx.path("n4.onnx")], fake),
                           (["info", *kf, fake], fake),
                           (["verify", *kf, fake], fake)]:
            ctx.expect_error(argv, file, f"no OpenSSL: {argv[0]}", message=NO_OPENSSL_RE)
        ctx.check(not any(os.path.exists(ctx.path(n)) for n in ("n1", "n2", "n3.onnxc", "n4.onnx")),
                  "no OpenSSL: nothing written")
        return None

    ref = load_refcrypt()
    # Round trips, both formats, both payloads, small chunks to get many of them.
    for src, label in [(sample, "onnx"), (arc, "onnxz")]:
        data = read(src)
        for fmt, extra in [("onnxzec1", FAST + ["--chunk-size", "4K"]), ("onnxcry1", [])]:
            enc, dec = ctx.path(f"{label}.{fmt}.enc"), ctx.path(f"{label}.{fmt}.dec")
            rc, out, err = ctx.expect_exit(["encrypt", *kf, "--format", fmt, *extra, src, enc], 0,
                                           f"encrypt {label} {fmt}")
            if rc != 0:
                continue
            ctx.check(re.match(rf"^{re.escape(src)} -> {re.escape(enc)} \({fmt.upper()}, "
                               rf"{len(data)} => {os.path.getsize(enc)} bytes\)\n$", out) is not None,
                      f"encrypt {label} {fmt}: summary line {out!r}")
            blob = read(enc)
            ctx.equal(blob[:8], fmt.upper().encode(), f"{label} {fmt}: magic")
            ctx.expect_exit(["decrypt", *kf, enc, dec], 0, f"decrypt {label} {fmt}")
            ctx.check(read(dec) == data, f"{label} {fmt}: decrypt gives the input back")
            if fmt == "onnxzec1" and ref is not None:
                try:
                    ctx.check(ref.zec1_decrypt(blob, PASS) == data, f"{label}: refcrypt decrypts ours")
                except Exception as e:  # noqa: BLE001 - any failure of the oracle is a finding
                    ctx.check(False, f"{label}: refcrypt rejects our ONNXZEC1: {e}")
                hdr_iter, hdr_chunk = struct.unpack("<II", blob[12:20])
                ctx.equal((hdr_iter, hdr_chunk), (1000, 4096), f"{label}: --iterations/--chunk-size in the header")
            if fmt == "onnxcry1":
                got = openssl_cry1_decrypt(blob, PASS)
                if got is not None:
                    ctx.check(got == data, f"{label}: openssl decrypts our ONNXCRY1 ({got[:80]!r})")
    # Files the oracles encrypt decrypt with us.
    if ref is not None:
        for name, blob in [("ref.zec1", ref.zec1_encrypt(plain_onnx, PASS, iterations=1000, chunk_size=1000)),
                           ("ref.cry1", ref.cry1_encrypt(plain_onnx, PASS))]:
            write(ctx.path(name), blob)
            ctx.expect_exit(["decrypt", *kf, ctx.path(name), ctx.path(name + ".dec")], 0, f"decrypt {name}")
            ctx.check(os.path.exists(ctx.path(name + ".dec")) and read(ctx.path(name + ".dec")) == plain_onnx,
                      f"{name}: decrypts to the original")
    # The default format is ONNXZEC1 with the default parameters.
    dflt = ctx.path("default.enc")
    ctx.expect_exit(["encrypt", *kf, sample, dflt], 0, "encrypt with defaults")
    if os.path.exists(dflt):
        ctx.equal(read(dflt)[:8], b"ONNXZEC1", "default format")
        ctx.equal(struct.unpack("<II", read(dflt)[12:20]), (600000, 1 << 20), "default parameters")

    # Key sources: ONNXZ_KEY works; --key-file wins over it; the newline rule.
    enc = ctx.path("onnx.onnxzec1.enc")
    ctx.expect_exit(["decrypt", enc, ctx.path("env.dec")], 0, "decrypt with ONNXZ_KEY", env=env)
    ctx.check(os.path.exists(ctx.path("env.dec")) and read(ctx.path("env.dec")) == plain_onnx, "ONNXZ_KEY decrypts")
    wrong = ctx.path("wrong.txt")
    write(wrong, b"not the passphrase")
    ctx.expect_error(["decrypt", "--key-file", wrong, enc, ctx.path("w.dec")], enc,
                     "--key-file wins over ONNXZ_KEY", env=env, message="wrong passphrase")
    two_nl = ctx.path("two-newlines.txt")
    write(two_nl, PASS + b"\n\n")
    ctx.expect_error(["decrypt", "--key-file", two_nl, enc, ctx.path("w.dec")], enc,
                     "only one trailing newline is stripped", message="wrong passphrase")
    no_nl = ctx.path("no-newline.txt")
    write(no_nl, PASS)
    ctx.expect_exit(["decrypt", "--key-file", no_nl, enc, ctx.path("nonl.dec")], 0, "key file without newline")
    empty = ctx.path("empty.txt")
    write(empty, b"\n")
    ctx.expect_error(["decrypt", "--key-file", empty, enc, ctx.path("w.dec")], empty, "empty key file",
                     message="empty")
    ctx.expect_error(["decrypt", "--key-file", ctx.path("nokey"), enc, ctx.path("w.dec")],
                     ctx.path("nokey"), "missing key file")
    ctx.expect_error(["decrypt", enc, ctx.path("w.dec")], "ONNXZ_KEY", "empty ONNXZ_KEY",
                     env={"ONNXZ_KEY": ""})
    # Wrong key: exit 1, one line, OUT not created; both formats.
    for e in (enc, ctx.path("onnx.onnxcry1.enc")):
        ctx.expect_error(["decrypt", "--key-file", wrong, e, ctx.path("w.dec")], e, f"wrong key {e}",
                         message="passphrase|key")
    ctx.check(not os.path.exists(ctx.path("w.dec")), "a failed decrypt leaves no output")
    # Damage is detected (ONNXZEC1).
    bad = ctx.path("flipped.enc")
    blob = bytearray(read(enc))
    blob[len(blob) // 2] ^= 1
    write(bad, bytes(blob))
    ctx.expect_error(["decrypt", *kf, bad, ctx.path("w.dec")], bad, "flipped bit", offset="any")
    ctx.expect_error(["decrypt", *kf, sample, ctx.path("w.dec")], sample, "decrypt a plain file",
                     message="not an encrypted file")
    # No overwrite without -f; -f replaces; in place with -f.
    exist = ctx.path("exists.enc")
    write(exist, b"keep me")
    ctx.expect_error(["encrypt", *kf, *FAST, sample, exist], exist, "encrypt onto an existing file")
    ctx.equal(read(exist), b"keep me", "existing OUT untouched")
    ctx.expect_error(["decrypt", *kf, enc, exist], exist, "decrypt onto an existing file")
    cry1 = ctx.path("onnx.onnxcry1.enc")
    ctx.expect_error(["decrypt", *kf, cry1, exist], exist, "decrypt ONNXCRY1 onto an existing file")
    ctx.equal(read(exist), b"keep me", "existing OUT untouched by ONNXCRY1")
    ctx.expect_exit(["decrypt", "-f", *kf, cry1, exist], 0, "decrypt ONNXCRY1 -f")
    ctx.check(read(exist) == plain_onnx, "decrypt ONNXCRY1 -f replaced OUT")
    ctx.expect_exit(["encrypt", "-f", *kf, *FAST, sample, exist], 0, "encrypt -f")
    ctx.equal(read(exist)[:8], b"ONNXZEC1", "encrypt -f replaced OUT")
    inplace = ctx.path("inplace.onnx")
    shutil.copyfile(sample, inplace)
    ctx.expect_error(["encrypt", *kf, *FAST, inplace, inplace], inplace, "IN == OUT without -f")
    ctx.expect_exit(["encrypt", "-f", *kf, *FAST, inplace, inplace], 0, "encrypt in place with -f")
    ctx.expect_exit(["decrypt", "-f", *kf, inplace, inplace], 0, "decrypt in place with -f")
    ctx.check(read(inplace) == plain_onnx, "in place there and back")
    ctx.equal(ctx.run("-q", "encrypt", *kf, *FAST, sample, ctx.path("quiet.enc"))[:2], (0, ""), "encrypt -q")
    prompt_on_terminal(ctx, sample, plain_onnx)
    return None


def prompt_on_terminal(ctx, sample, plain):
    """With neither --key-file nor ONNXZ_KEY, the passphrase is read from the terminal (a
    pseudo-terminal here) with echo off: it never appears in what the terminal shows."""
    try:
        import pty
        import time
    except ImportError:
        return

    def run(argv, answers):
        pid, fd = pty.fork()
        if pid == 0:
            os.environ.pop("ONNXZ_KEY", None)
            os.execv(ctx.onnxz, [ctx.onnxz, *argv])
        shown = b""
        for a in answers:
            deadline = time.time() + 20
            while not shown.rstrip().endswith(b":") and time.time() < deadline:
                try:
                    shown += os.read(fd, 4096)
                except OSError:
                    break
            os.write(fd, a)
            shown += b"|"
        while True:
            try:
                d = os.read(fd, 4096)
            except OSError:
                break
            if not d:
                break
            shown += d
        _, status = os.waitpid(pid, 0)
        os.close(fd)
        return os.WEXITSTATUS(status), shown.decode("utf-8", "replace")

    enc, dec = ctx.path("tty.enc"), ctx.path("tty.dec")
    rc, shown = run(["encrypt", *FAST, sample, enc], [b"tty-secret\n", b"tty-secret\n"])
    ctx.equal(rc, 0, f"encrypt with the passphrase typed twice ({shown!r})")
    ctx.check("Passphrase for" in shown and "Repeat" in shown and "tty-secret" not in shown,
              f"prompt shown, passphrase not echoed: {shown!r}")
    rc, shown = run(["decrypt", enc, dec], [b"tty-secret\n"])
    ctx.equal(rc, 0, f"decrypt with the passphrase typed ({shown!r})")
    ctx.check(os.path.exists(dec) and read(dec) == plain, "typed passphrase round trip")
    rc, shown = run(["encrypt", *FAST, sample, ctx.path("tty2.enc")], [b"one\n", b"two\n"])
    ctx.check(rc == 1 and "do not match" in shown, f"mismatched passphrases: {rc} {shown!r}")


def group_crypt_input(ctx):
    """convert, info and verify read encrypted models and archives (once decrypted, the same
    model as python3-onnx reads from the plain file); convert writes .onnxc (an encrypted
    model that refcrypt / openssl decrypt to the bytes convert writes for .onnx)."""
    if not HAVE_OPENSSL:
        return None  # group_crypt checks the no-OpenSSL errors of these commands
    if onnx is None:
        return SKIP
    sample = ctx.sample
    arc = ctx.path("mlp.onnxz")
    ctx.expect_exit(["convert", sample, arc], 0, "convert the sample to .onnxz")
    keyfile = ctx.path("key.txt")
    write(keyfile, PASS + b"\n")
    kf = ["--key-file", keyfile]
    env = {"ONNXZ_KEY": PASS.decode()}
    ref = load_refcrypt()
    want = python_facts(sample)
    for src, label, payload in [(sample, "onnx", "onnx"), (arc, "onnxz", "onnxz")]:
        for fmt in ("onnxzec1", "onnxcry1"):
            if REDUCED and fmt == "onnxcry1" and label == "onnxz":
                continue
            enc = ctx.path(f"{label}.{fmt}.enc")
            extra = FAST if fmt == "onnxzec1" else []
            rc, _, _ = ctx.expect_exit(["encrypt", *kf, "--format", fmt, *extra, src, enc], 0,
                                       f"encrypt {label} {fmt}")
            if rc:
                continue
            what = f"{label} in {fmt}"
            # convert: the same bytes as converting the plain file.
            for ext in ("onnx", "onnxz"):
                out, plain_out = ctx.path(f"{label}.{fmt}.{ext}"), ctx.path(f"{label}.{fmt}.plain.{ext}")
                ctx.expect_exit(["convert", *kf, enc, out], 0, f"convert {what} to .{ext}")
                ctx.expect_exit(["convert", src, plain_out], 0, f"convert plain {label} to .{ext}")
                ctx.check(os.path.exists(out) and read(out) == read(plain_out),
                          f"convert {what} to .{ext}: same bytes as from the plain file")
            same_tensors(ctx, onnx.load(sample), ctx.path(f"{label}.{fmt}.onnx"), f"convert {what}")
            # info: the model's facts; format names the payload; encrypted names the format.
            rc, out, err = ctx.expect_exit(["info", "--json", enc], 0, f"info {what}", env=env)
            if rc == 0:
                got = json.loads(out)
                ctx.equal(got.get("encrypted"), fmt.upper(), f"info {what}: encrypted")
                ctx.equal(got.get("format"), payload, f"info {what}: format")
                ctx.equal(got.get("archive"), None, f"info {what}: archive")
                for k in ("tensors", "initializers", "nodes", "producer_name", "metadata_props"):
                    ctx.equal(got.get(k), want.get(k), f"info {what}: {k}")
            rc, out, _ = ctx.expect_exit(["info", *kf, enc], 0, f"info {what} (human)")
            ctx.check(re.search(rf"^format: +{'onnxz archive' if payload == 'onnxz' else 'onnx'} "
                                rf"\(encrypted: {fmt.upper()}\)$", out, re.M) is not None,
                      f"info {what}: format line in {out[:300]!r}")
            # verify
            rc, out, _ = ctx.expect_exit(["verify", "--json", *kf, enc], 0, f"verify {what}")
            if rc == 0:
                got = json.loads(out)
                ctx.equal((got["format"], got["ok"], got["encryption"], got["payload"], got["tensors"]),
                          ("encrypted", True, fmt.upper(), payload, want["tensors"]), f"verify {what}: JSON")
            rc, out, _ = ctx.expect_exit(["verify", *kf, enc], 0, f"verify {what} (human)")
            ctx.check(out.startswith(f"OK {enc}: encrypted ({fmt.upper()})"), f"verify {what}: {out!r}")
    # Wrong key, no key, damage.
    enc = ctx.path("onnxz.onnxzec1.enc")
    wrong = ctx.path("wrong.txt")
    write(wrong, b"nope")
    for argv in (["info", enc], ["verify", enc], ["convert", enc, ctx.path("w.onnx")]):
        ctx.expect_error([argv[0], "--key-file", wrong, *argv[1:]], enc, f"{argv[0]} wrong key",
                         message="wrong passphrase")
        ctx.expect_usage(argv, f"{argv[0]} encrypted without a passphrase source")
    ctx.check(not os.path.exists(ctx.path("w.onnx")), "a failed convert writes nothing")
    bad = ctx.path("flipped.enc")
    blob = bytearray(read(enc))
    blob[200] ^= 0x40
    write(bad, bytes(blob))
    ctx.expect_error(["verify", *kf, bad], bad, "verify a damaged encrypted archive", offset="any")

    # convert to .onnxc: an encrypted model; the oracles decrypt it to what convert writes
    # for .onnx (every tensor inside, none in the clear).
    plain = ctx.path("plain.onnx")
    ctx.expect_exit(["convert", sample, plain], 0, "convert sample to .onnx")
    for src, label in [(sample, "onnx"), (arc, "onnxz")]:
        for fmt in ("onnxzec1", "onnxcry1"):
            if REDUCED and fmt == "onnxcry1" and label == "onnxz":
                continue
            out = ctx.path(f"{label}.{fmt}.onnxc")
            extra = FAST if fmt == "onnxzec1" else []
            rc, _, _ = ctx.expect_exit(["convert", *kf, "--format", fmt, *extra, src, out], 0,
                                       f"convert {label} to .onnxc ({fmt})")
            if rc:
                continue
            blob = read(out)
            ctx.equal(blob[:8], fmt.upper().encode(), f".onnxc {label} {fmt}: magic")
            if fmt == "onnxzec1" and ref is not None:
                ctx.check(ref.zec1_decrypt(blob, PASS) == read(plain), f".onnxc {label}: refcrypt gives the .onnx bytes")
            if fmt == "onnxcry1":
                got = openssl_cry1_decrypt(blob, PASS)
                if got is not None:
                    ctx.check(got == read(plain), f".onnxc {label}: openssl gives the .onnx bytes")
            back = ctx.path(f"{label}.{fmt}.back.onnxz")
            ctx.expect_exit(["convert", out, back], 0, f".onnxc {label} {fmt} back to .onnxz", env=env)
            ctx.check(os.path.exists(back) and read(back) == read(arc), f".onnxc {label} {fmt} -> .onnxz: same archive")
    ctx.expect_error(["convert", *kf, *FAST, sample, ctx.path("onnx.onnxzec1.onnxc")],
                     ctx.path("onnx.onnxzec1.onnxc"), ".onnxc exists without -f")
    ctx.expect_exit(["convert", "-f", *kf, *FAST, sample, ctx.path("onnx.onnxzec1.onnxc")], 0, ".onnxc -f")
    return None


# ---- meta -----------------------------------------------------------------------------

def local_headers(path):
    """name -> (local header offset, data offset, the entry's stored bytes) of each entry."""
    out = {}
    for e in zip_entries(path):
        with open(path, "rb") as f:
            f.seek(e["data_offset"])
            out[e["name"]] = (e["header_offset"], e["data_offset"], f.read(e["compressed_size"]))
    return out


def group_meta(ctx):
    """meta shows and edits producer, producer_version, doc_string, metadata_props: an archive
    in place (tensor entries keep their local header offsets and bytes; unzip/7z/zipfile
    accept it; python3-onnx sees the edit), a .onnx rewritten; repeated edits work."""
    if onnx is None:
        return SKIP
    sample = ctx.sample
    src = onnx.load(sample)
    arc = ctx.path("mlp.onnxz")
    ctx.expect_exit(["convert", sample, arc], 0, "convert the sample to .onnxz")
    for argv, what in [(["meta"], "meta without FILE"),
                       (["meta", "--set", "novalue", arc], "--set without ="),
                       (["meta", "--set", "=v", arc], "--set with an empty key"),
                       (["meta", "--unset", "", arc], "--unset ''"),
                       (["meta", "--bogus", arc], "unknown meta option")]:
        ctx.expect_usage(argv, what)

    def props(m):
        return [(p.key, p.value) for p in m.metadata_props]

    def expect_json(path, model, what):
        rc, out, err = ctx.expect_exit(["meta", "--json", path], 0, what)
        if rc:
            return
        got = json.loads(out)
        ctx.equal(got["producer_name"], model.producer_name if model.HasField("producer_name") else None, f"{what}: producer_name")
        ctx.equal(got["producer_version"], model.producer_version if model.HasField("producer_version") else None, f"{what}: producer_version")
        ctx.equal(got["doc_string"], model.doc_string if model.HasField("doc_string") else None, f"{what}: doc_string")
        ctx.equal([(p["key"], p["value"]) for p in got["metadata_props"]], props(model), f"{what}: metadata_props")

    expect_json(sample, src, "meta --json .onnx")
    expect_json(arc, archive_model(arc), "meta --json .onnxz")
    rc, out, _ = ctx.expect_exit(["meta", sample], 0, "meta .onnx (human)")
    ctx.check(f"producer name     {src.producer_name}\n" in out and
              all(f"  {k} = {v}\n" in out for k, v in props(src)), f"meta human output: {out!r}")

    before = local_headers(arc)
    size_before = os.path.getsize(arc)
    graph_before = archive_model(arc).graph.SerializeToString()
    rc, out, err = ctx.expect_exit(["meta", arc, "--producer", "edited-by-meta", "--producer-version", "9.9",
                                    "--doc-string", "new doc \u00e9", "--set", "license=MIT",
                                    "--set", "new.key=a=b", "--unset", "seed", "--unset", "absent"],
                                   0, "meta edit .onnxz")
    after = local_headers(arc)
    for name, (hdr, data_off, data) in before.items():
        if name == MODEL_ENTRY:
            continue
        ctx.check(name in after and after[name][:2] == (hdr, data_off) and after[name][2] == data,
                  f"meta edit: entry {name} kept its local header offset and bytes")
    ctx.equal(sorted(after), sorted(before), "meta edit: the same entries")
    ctx.check(os.path.getsize(arc) < size_before + 4096, "meta edit: the archive did not grow by a copy")
    want = onnx.ModelProto()
    want.CopyFrom(src)
    want.producer_name, want.producer_version, want.doc_string = "edited-by-meta", "9.9", "new doc \u00e9"
    kv = [(k, ("MIT" if k == "license" else v)) for k, v in props(src) if k != "seed"] + [("new.key", "a=b")]
    del want.metadata_props[:]
    for k, v in kv:
        want.metadata_props.add(key=k, value=v)
    got = archive_model(arc)
    ctx.equal((got.producer_name, got.producer_version, got.doc_string, props(got)),
              (want.producer_name, want.producer_version, want.doc_string, kv), "python3-onnx sees the edit")
    ctx.check(got.graph.SerializeToString() == graph_before, "meta edit: the graph is unchanged")
    expect_json(arc, want, "meta --json after the edit")
    zip_clients(ctx, arc, 64, "after meta")
    ctx.expect_exit(["verify", arc], 0, "verify after meta")
    back = ctx.path("back.onnx")
    ctx.expect_exit(["convert", arc, back], 0, "convert the edited archive")
    if os.path.exists(back):
        same_tensors(ctx, src, back, "edited archive")
        b = onnx.load(back)
        ctx.equal((b.producer_name, props(b)), (want.producer_name, kv), "converted back: metadata")
    # A second edit works too, and -q prints nothing.
    rc, out, _ = ctx.expect_exit(["-q", "meta", arc, "--set", "second=2", "--producer", "again"], 0, "second edit")
    ctx.equal(out, "", "meta -q edit prints nothing")
    got = archive_model(arc)
    ctx.equal((got.producer_name, props(got)), ("again", kv + [("second", "2")]), "second edit seen")
    after2 = local_headers(arc)
    ctx.check(all(after2[n] == before[n] for n in before if n != MODEL_ENTRY), "second edit: tensor entries unchanged")
    zip_clients(ctx, arc, 64, "after a second meta edit")
    ctx.check(not os.path.exists(arc + "-journal"), "no journal left behind")

    # .onnx: rewritten, the rest of the model unchanged.
    m = ctx.path("m.onnx")
    shutil.copyfile(sample, m)
    ctx.expect_exit(["meta", m, "--set", "k=v", "--doc-string", "d"], 0, "meta edit .onnx")
    got = onnx.load(m)
    w2 = onnx.ModelProto()
    w2.CopyFrom(src)
    w2.doc_string = "d"
    w2.metadata_props.add(key="k", value="v")
    ctx.check(got == w2, "meta .onnx: python3-onnx sees exactly the edit")
    checker_passes(ctx, m, "meta .onnx")
    # .onnx with external data: references kept, data file untouched.
    two = ctx.path("two.onnx")
    ctx.expect_exit(["convert", sample, two, "--external-data", "two.data"], 0, "two-file model")
    data_before = read(ctx.path("two.data"))
    ctx.expect_exit(["meta", two, "--producer", "x"], 0, "meta on a two-file model")
    ctx.equal(read(ctx.path("two.data")), data_before, "data file untouched")
    ctx.equal(onnx.load(two).producer_name, "x", "two-file model edited")
    same_tensors(ctx, src, two, "two-file model after meta")
    # Encrypted and missing files: one error line.
    ctx.expect_error(["meta", ctx.path("missing")], ctx.path("missing"), "meta missing file")
    fake = ctx.path("fake.enc")
    write(fake, b"ONNXZEC1" + bytes(100))
    ctx.expect_error(["meta", fake, "--producer", "x"], fake, "meta on an encrypted file", message="encrypted")
    return None


# ---- stub -----------------------------------------------------------------------------

def group_stub(ctx):
    """stub writes a .onnx whose external tensors point into the archive (location = its name,
    offset = the entry's data offset from the local header, length = its size): python3-onnx
    loads the source model's tensors from it and the checker passes; refusals."""
    if onnx is None:
        return SKIP
    sample = ctx.sample
    src = onnx.load(sample)
    d = ctx.path("models")
    os.makedirs(d)
    arc = os.path.join(d, "mlp.onnxz")
    ctx.expect_exit(["convert", sample, arc], 0, "convert the sample to .onnxz")
    out = os.path.join(d, "mlp.onnx")
    rc, text, err = ctx.expect_exit(["stub", arc, out], 0, "stub")
    ctx.check(re.match(rf"^{re.escape(out)} \(\d+ bytes\): \d+ tensors, \d+ bytes, in mlp.onnxz\n$", text) is not None,
              f"stub summary line {text!r}")
    if rc == 0:
        ctx.check(os.path.getsize(out) < 16384, "the stub is small")
        entries = {e["name"]: e for e in zip_entries(arc)}
        refs = external_refs(out)
        ctx.check(len(refs) > 0, "stub: some external tensors")
        for name, kv, _keys in refs:
            amodel = archive_model(arc)
            loc = {t.name: {e.key: e.value for e in t.external_data}["location"]
                   for t in walk_messages(amodel, "onnx.TensorProto") if is_external(t)}
            e = entries.get(loc.get(name))
            if not ctx.check(e is not None, f"stub: tensor {name} had an entry"):
                continue
            ctx.equal((kv.get("location"), int(kv.get("offset", -1)), int(kv.get("length", -1))),
                      ("mlp.onnxz", e["data_offset"], e["size"]), f"stub: {name}'s reference")
        same_tensors(ctx, src, out, "stub")
        checker_passes(ctx, out, "stub")
        # Run from elsewhere with a relative path: the location is still the file name.
        rel = ctx.path("rel.onnx")
        ctx.expect_error(["stub", arc, rel], rel, "stub in another directory", message="same directory")
        ctx.check(not os.path.exists(rel), "refused stub not written")
        rc, _, _ = ctx.run("stub", "mlp.onnxz", "rel.onnx", cwd=d)
        ctx.equal(rc, 0, "stub with relative names")
        same_tensors(ctx, src, os.path.join(d, "rel.onnx"), "stub with relative names")
        # The archive is unchanged, and still valid after a meta edit the stub survives.
        ctx.expect_exit(["meta", arc, "--set", "k=v"], 0, "meta after stub")
        same_tensors(ctx, src, out, "stub after meta edit of the archive")
    ctx.expect_error(["stub", arc, out], out, "stub onto an existing file", message="exists")
    ctx.expect_exit(["stub", "-f", arc, out], 0, "stub -f")
    # A deflated tensor entry cannot be referenced.
    deflated = os.path.join(d, "deflated.onnxz")
    rezip(arc, deflated, tensor_method=zipfile.ZIP_DEFLATED)
    dout = os.path.join(d, "deflated.onnx")
    ctx.expect_error(["stub", deflated, dout], deflated, "stub of a deflated archive", message="deflated")
    ctx.check(not os.path.exists(dout), "refused stub not written")
    ctx.expect_error(["stub", sample, os.path.join(os.path.dirname(sample), "x.onnx")], sample,
                     "stub of a .onnx", message="not an .onnxz archive")
    ctx.expect_usage(["stub", arc], "stub without OUT")
    return None


# Runs a command and prints its exit status and peak RSS (KiB). A fresh interpreter without
# numpy or onnx does the fork: Linux counts the memory a child had before exec (a copy of
# its parent's) in its peak, so a large parent would hide what the tool itself used.
RSS_PROBE = """
import os, sys
pid = os.fork()
if pid == 0:
    os.execv(sys.argv[1], sys.argv[1:])
_, status, usage = os.wait4(pid, 0)
print(os.waitstatus_to_exitcode(status), usage.ru_maxrss)
"""


def measured_run(ctx, argv, env=None, stderr=None):
    """Runs onnxz with argv; returns (exit status, peak RSS in bytes, stderr bytes or None).
    stderr: a file descriptor for the tool's stderr (a terminal), else a pipe."""
    full = {k: v for k, v in os.environ.items() if k != "ONNXZ_KEY"}
    full.update(env or {})
    p = subprocess.run([sys.executable, "-S", "-c", RSS_PROBE, ctx.onnxz, *argv],
                       stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                       stderr=stderr if stderr is not None else subprocess.PIPE, env=full,
                       timeout=300)
    code, kib = p.stdout.split()[-2:]
    return int(code), int(kib) * 1024, p.stderr


def rss_is_the_tools(ctx):
    """Peak RSS says something about onnxz itself only for a plain build run directly: not
    through a wrapper script (valgrind) and not with ASan's shadow memory."""
    with open(ctx.onnxz, "rb") as f:
        exe = f.read()
    return exe[:4] == b"\x7fELF" and b"__asan_init" not in exe


def group_stream(ctx):
    """Conversions stream tensor bytes from the input's mapping to the output with bounded
    memory: every direction between a two-file model, an archive and a single .onnx of
    200 MiB peaks far below the model's size. And the progress bar: on stderr only when it
    is a terminal, never with -q or into a pipe."""
    if onnx is None:
        return SKIP
    rng = numpy.random.default_rng(7)
    sizes = [64 << 20, 64 << 20, 48 << 20, 24 << 20, 1000, 10]
    tensors = [numpy_helper.from_array(rng.integers(0, 255, n, dtype=numpy.uint8), f"w{i}")
               for i, n in enumerate(sizes)]
    node = helper.make_node("Identity", ["x"], ["y"])
    graph = helper.make_graph([node], "stream", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])], tensors)
    model = helper.make_model(graph)
    want = raw_by_name(model)  # before onnx.save moves the bytes out of `model`
    two = ctx.path("two.onnx")
    onnx.save(model, two, save_as_external_data=True, location="two.data", size_threshold=0)
    total = sum(sizes)
    limit = 64 << 20  # bounded whatever the weights' size; the graph here is a few hundred bytes
    measure = rss_is_the_tools(ctx)
    steps = [("pack", [two, ctx.path("a.onnxz")]),
             ("unpack", [ctx.path("a.onnxz"), ctx.path("b.onnx"), "--external-data", "b.data"]),
             ("archive to one file", [ctx.path("a.onnxz"), ctx.path("one.onnx")]),
             ("one file to archive", [ctx.path("one.onnx"), ctx.path("c.onnxz")]),
             ("one file to two files", [ctx.path("one.onnx"), ctx.path("d.onnx"),
                                        "--external-data", "d.data", "--checksum"] if HAVE_OPENSSL
              else [ctx.path("one.onnx"), ctx.path("d.onnx"), "--external-data", "d.data"])]
    for what, argv in steps:
        rc, rss, err = measured_run(ctx, ["convert", "-q", *argv])
        if not ctx.equal(rc, 0, f"stream {what}: exit status (stderr {err!r})"):
            return 0  # the later steps read this one's output
        if measure:
            ctx.check(rss < limit, f"stream {what}: peak RSS {rss >> 20} MiB for a "
                                   f"{total >> 20} MiB model (limit {limit >> 20} MiB)")
    for out in ["b.onnx", "one.onnx", "d.onnx"]:
        got = raw_by_name(onnx.load(ctx.path(out)))
        ctx.check(got == want, f"stream: {out} holds the source's tensors")
    rc, out, err = ctx.run("verify", ctx.path("c.onnxz"))
    ctx.equal(rc, 0, f"stream: the archive from one file verifies ({err!r})")

    # The progress bar: a terminal on stderr, no delay (a knob of test builds only).
    if TEST_POINTS:
        stream_progress(ctx, two)
    else:
        print("note: progress bar checks left out: a build without ONNXZ_TEST_POINTS")
    if not ctx.failures:  # 1.8 GB of models: kept only to look at a failure
        shutil.rmtree(ctx.work, ignore_errors=True)
    return 0


def stream_progress(ctx, two):
    """The progress bar of a convert of the two-file model `two`, drawn at once."""
    import pty
    master, slave = pty.openpty()
    rc, _, _ = measured_run(ctx, ["convert", two, ctx.path("p.onnxz")],
                            env={"ONNXZ_PROGRESS_DELAY_MS": "0"}, stderr=slave)
    os.close(slave)
    shown = b""
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # EIO: the terminal's other side is closed
            break
        if not chunk:
            break
        shown += chunk
    os.close(master)
    ctx.equal(rc, 0, "progress: convert on a terminal succeeds")
    text = shown.decode("utf-8", "replace")
    ctx.check(re.search(r"\[#+\.*\] +\d+%  [\d.]+ (B|KiB|MiB) / 200\.0 MiB  [\d.]+ \S+/s  ETA \d+:\d\d", text),
              f"progress: a bar with bytes done / total, rate and ETA on the terminal: {text[:200]!r}")
    ctx.check(" 100%" in text, "progress: the bar reaches 100%")
    ctx.check(text.endswith("\r\x1b[K"), f"progress: the bar is erased at the end: {text[-40:]!r}")
    # Not a terminal, or quiet: nothing but the result.
    rc, _, err = measured_run(ctx, ["convert", "-q", two, ctx.path("q.onnxz")],
                              env={"ONNXZ_PROGRESS_DELAY_MS": "0"})
    ctx.equal((rc, err), (0, b""), "progress: nothing on stderr when it is a pipe")
    master, slave = pty.openpty()
    rc, _, _ = measured_run(ctx, ["convert", "-q", two, ctx.path("r.onnxz")],
                            env={"ONNXZ_PROGRESS_DELAY_MS": "0"}, stderr=slave)
    os.close(slave)
    try:
        quiet = os.read(master, 65536)
    except OSError:
        quiet = b""
    os.close(master)
    ctx.equal((rc, quiet), (0, b""), "progress: nothing with -q, even on a terminal")


SYNC_CALLS = ("fsync", "fdatasync", "sync_file_range", "syncfs", "sync")


def traced(ctx, argv, log):
    """Runs onnxz under strace and returns (exit status, {syscall: count}) for the sync
    calls and renames, or (status, None) when strace is missing or onnxz is a wrapper
    (valgrind: the trace would not be ours)."""
    strace = shutil.which("strace")
    wrapped = open(ctx.onnxz, "rb").read(2) == b"#!"
    if not strace or wrapped:
        rc, _, err = ctx.run(*argv)
        return rc, None
    calls = ",".join(SYNC_CALLS + ("rename", "renameat", "renameat2"))
    # LeakSanitizer cannot run under ptrace; the other groups check for leaks
    env = {k: v for k, v in os.environ.items() if k != "ONNXZ_KEY"}
    env["ASAN_OPTIONS"] = env.get("ASAN_OPTIONS", "") + ":detect_leaks=0"
    p = subprocess.run([strace, "-f", "-qq", "-o", log, "-e", f"trace={calls}", ctx.onnxz, *argv],
                       capture_output=True, timeout=300, stdin=subprocess.DEVNULL, env=env)
    counts = {}
    for line in open(log):
        m = re.match(r"^\d+\s+(\w+)\(", line)
        if m and not line.rstrip().endswith("= -1 ENOSYS (Function not implemented)"):
            counts[m.group(1)] = counts.get(m.group(1), 0) + 1
    os.unlink(log)
    return p.returncode, counts


def group_sync(ctx):
    """Every file is written under a temporary name and renamed into place; by default it is
    also fsynced (and its directory). --no-sync keeps every rename, drops every fsync, and
    writes the same bytes. Either way a file past 64 MiB is flushed while written
    (sync_file_range, W-33). The kernel is the oracle: strace counts the calls."""
    if onnx is None:
        return SKIP
    import numpy as np
    from onnx import helper, numpy_helper
    sample = ctx.sample
    keyfile = ctx.path("key.txt")
    write(keyfile, b"correct horse battery staple\n")
    # 80 MiB in one tensor: past the 64 MiB writeback window.
    big = ctx.path("big.onnx")
    w = numpy_helper.from_array(np.arange(20 << 20, dtype=np.float32), "w")
    g = helper.make_graph([helper.make_node("Identity", ["w"], ["y"])], "big", [],
                          [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, None)], [w])
    onnx.save(helper.make_model(g), big)
    arc = make_archive(ctx, sample, "src.onnxz")
    refs = entry_tensors(archive_model(arc))
    tensor = refs[sorted(refs)[0]][0]
    # (label, argv with OUT standing for the output, the files it writes, writeback expected)
    cases = [
        ("onnx", ["convert", sample, "OUT/m.onnx"], ["m.onnx"], False),
        ("onnxz", ["convert", sample, "OUT/m.onnxz"], ["m.onnxz"], False),
        ("external", ["convert", sample, "OUT/m.onnx", "--external-data", "m.bin",
                      "--threshold", "0", "--max-file-size", "1"], None, False),
        ("onnxc", ["convert", sample, "OUT/m.onnxc", "--key-file", keyfile, *FAST], ["m.onnxc"], False),
        ("get", ["get", arc, tensor, "-o", "OUT/t.bin"], ["t.bin"], False),
        ("unpack", ["unpack", arc, "OUT/dir"], None, False),
        ("big", ["convert", big, "OUT/big.onnxz"], ["big.onnxz"], True),
    ]
    if not HAVE_OPENSSL:  # .onnxc is refused before anything is written (group crypt)
        cases = [c for c in cases if c[0] != "onnxc"]
    wrapped = open(ctx.onnxz, "rb").read(2) == b"#!"
    for label, argv, files, writeback in cases:
        if writeback and wrapped:
            continue  # under valgrind: strace cannot see ours, and 160 MiB would take minutes
        got = {}
        for mode in ("sync", "no-sync"):
            out = ctx.path(f"{label}.{mode}")
            os.makedirs(out)
            full = [a.replace("OUT", out) for a in argv] + (["--no-sync"] if mode == "no-sync" else [])
            rc, counts = traced(ctx, full, ctx.path(f"{label}.{mode}.trace"))
            if not ctx.equal(rc, 0, f"sync {label} {mode}: exit status"):
                continue
            got[mode] = tree(out)
            nfiles = sum(len(f) for _, _, f in os.walk(out))
            ctx.check(files is None or sorted(os.listdir(out)) == sorted(files),
                      f"sync {label} {mode}: files {sorted(os.listdir(out))}")
            if counts is None:
                continue
            renames = sum(counts.get(c, 0) for c in ("rename", "renameat", "renameat2"))
            ctx.equal(renames, nfiles, f"sync {label} {mode}: one rename per file written")
            if mode == "sync":
                # every file, and its directory after its rename
                ctx.check(counts.get("fsync", 0) >= nfiles + 1,
                          f"sync {label}: fsync calls {counts} for {nfiles} files")
            else:
                ctx.equal({c: n for c, n in counts.items() if c in SYNC_CALLS and c != "sync_file_range"},
                          {}, f"sync {label} --no-sync: sync calls")
            ctx.equal(counts.get("sync_file_range", 0) >= 1, writeback,
                      f"sync {label} {mode}: flushed while written ({counts})")
        if len(got) == 2 and label == "onnxc":  # a fresh salt and nonce each time
            plain = {}
            for mode in got:
                dec = ctx.path(f"onnxc.{mode}.onnx")
                ctx.expect_exit(["decrypt", "--key-file", keyfile, ctx.path(f"onnxc.{mode}/m.onnxc"),
                                 dec], 0, f"sync onnxc {mode}: decrypt")
                plain[mode] = read(dec) if os.path.exists(dec) else None
            ctx.check(plain["sync"] is not None and plain["sync"] == plain["no-sync"] == read(sample),
                      "sync onnxc: --no-sync encrypts the same model")
        elif len(got) == 2:
            ctx.check(got["sync"] == got["no-sync"], f"sync {label}: --no-sync writes the same bytes")
    if not shutil.which("strace"):
        MISSING_CLIENTS.add("strace")


def group_settings(ctx):
    """AWS's and the hub's settings files (spec/remote.md R-20): read only for a command
    that opens an s3:// or hf:// URL, never blocking (a FIFO), refused in one line naming
    the file and why unless a regular file of at most 1 MiB (4 KiB for a token); the
    environment's credentials before any file's; a profile named but found nowhere
    refused as the AWS CLI refuses it; an endpoint's user:password@ never shown."""
    d = ctx.path("settings")
    os.makedirs(d)
    fifo = os.path.join(d, "fifo")
    os.mkfifo(fifo)
    big = os.path.join(d, "big")
    write(big, b"[default]\n" + b"#" * (1 << 20))
    os.makedirs(os.path.join(d, "dir"))
    clean = {k: "" for k in os.environ if k.startswith(("AWS_", "HF_", "HUGGING"))}
    clean.update(HOME=os.path.join(d, "nohome"), AWS_ENDPOINT_URL_S3="http://127.0.0.1:9",
                 HF_ENDPOINT="http://127.0.0.1:9", ONNXZ_HTTP_RETRIES="0")
    _, want, _ = ctx.run("info", ctx.sample, env=clean)
    broken = [
        ("a FIFO as the credentials file", "AWS_SHARED_CREDENTIALS_FILE", fifo, "s3",
         r"the AWS shared credentials file: not a regular file"),
        ("a FIFO as the config file", "AWS_CONFIG_FILE", fifo, "s3", r"the AWS config file: not a regular file"),
        ("a directory as the config file", "AWS_CONFIG_FILE", os.path.join(d, "dir"), "s3",
         r"the AWS config file: not a regular file"),
        ("a config file over 1 MiB", "AWS_CONFIG_FILE", big, "s3", r"the AWS config file: over the 1048576-byte limit"),
        ("a FIFO as the token file", "HF_TOKEN_PATH", fifo, "hf", r"the hub's token file: not a regular file"),
        ("a token file over 4 KiB", "HF_TOKEN_PATH", big, "hf", r"the hub's token file: over the 4096-byte limit"),
    ]
    for what, name, path, scheme, message in broken:
        env = dict(clean, **{name: path})
        t0 = time.monotonic()
        rc, out, err = ctx.run("info", ctx.sample, env=env)
        ctx.check(rc == 0 and out == want and err == "",
                  f"{what}: info of a local file: exit {rc}, stderr {err!r}")
        url = "s3://bkt/m.onnx" if scheme == "s3" else "hf://org/repo/m.onnx"
        ctx.expect_error(["info", url], "environment", f"{what}: info {url}", env=env,
                         message=re.escape(path) + ": cannot read " + message)
        ctx.check(time.monotonic() - t0 < 30, f"{what}: took {time.monotonic() - t0:.0f} s")
    # the environment's keys, region and endpoint: no file is read (a FIFO stays unopened);
    # the request goes to the closed port
    env = dict(clean, AWS_SHARED_CREDENTIALS_FILE=fifo, AWS_CONFIG_FILE=fifo, AWS_ACCESS_KEY_ID="AKIA",
               AWS_SECRET_ACCESS_KEY="S", AWS_REGION="us-east-1")
    rc, _, err = ctx.run("info", "s3://bkt/m.onnx", env=env)
    ctx.check(rc == 1 and "fifo" not in err and "s3://bkt/m.onnx" in err,
              f"keys in the environment: the files were read: {err!r}")
    # a profile named but found in neither file: refused, not unsigned requests
    home = os.path.join(d, "home")
    os.makedirs(os.path.join(home, ".aws"))
    write(os.path.join(home, ".aws", "credentials"), b"[default]\naws_access_key_id=AKIA\naws_secret_access_key=S\n")
    env = dict(clean, HOME=home, AWS_PROFILE="typo")
    ctx.expect_error(["info", "s3://bkt/m.onnx"], "s3://bkt/m.onnx", "AWS_PROFILE=typo", env=env,
                     message=r"AWS_PROFILE: no profile 'typo' in ")
    rc, out, err = ctx.run("info", ctx.sample, env=env)
    ctx.check(rc == 0 and out == want, f"AWS_PROFILE=typo: info of a local file: exit {rc}, {err!r}")
    # HF_TOKEN with a trailing newline, as the hub's tools take it: a token, not an error
    rc, _, err = ctx.run("info", "hf://org/repo/m.onnx", env=dict(clean, HF_TOKEN="hf_abc\n"))
    ctx.check(rc == 1 and "HF_TOKEN" not in err and "hf://org/repo/m.onnx" in err,
              f"HF_TOKEN ending in a newline: {err!r}")
    # a region that would change AWS's host name: refused before any request
    env = dict(clean, AWS_REGION="attacker.invalid/", AWS_ENDPOINT_URL_S3="")
    ctx.expect_error(["info", "s3://bkt/m.onnx"], "s3://bkt/m.onnx", "AWS_REGION=attacker.invalid/",
                     env=env, message=r"the S3 region 'attacker\.invalid/' is not a region's name")
    # an endpoint that is not http(s): named without what may be its password
    for name, url in (("AWS_ENDPOINT_URL_S3", "s3://bkt/m.onnx"), ("HF_ENDPOINT", "hf://org/repo/m.onnx")):
        env = dict(clean, **{name: "htps://alice:Pa55word@host"})
        ctx.expect_error(["info", url], "environment", f"{name} with a password", env=env,
                         message=name + r": 'htps://\.\.\.@host' is not an http")
        rc, out, err = ctx.run("info", url, env=env)
        ctx.check("Pa55word" not in err + out and "alice" not in err, f"{name}: the password shown: {err!r}")


GROUPS = {
    "usage": group_usage,
    "help": group_help,
    "errors": group_errors,
    "settings": group_settings,
    "convert": group_convert,
    "force": group_force,
    "info_human": group_info_human,
    "info_json": group_info_json,
    "info_rich": group_info_rich,
    "robust": group_robust,
    "convert_archive": group_convert_archive,
    "convert_external": group_convert_external,
    "get": group_get,
    "ls": group_ls,
    "verify": group_verify,
    "unpack": group_unpack,
    "info_archive": group_info_archive,
    "bench": group_bench,
    "crypt": group_crypt,
    "crypt_input": group_crypt_input,
    "meta": group_meta,
    "stub": group_stub,
    "stream": group_stream,
    "sync": group_sync,
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
    try:
        if GROUPS[args.group](ctx) == SKIP:
            print(f"SKIP {args.group}: python3-onnx is not available to {sys.executable}")
            return SKIP
    except BaseException:
        # What failed before the exception is usually its cause: print it first.
        for f in ctx.failures:
            print("FAIL", f)
        raise
    for f in ctx.failures:
        print("FAIL", f)
    for client in sorted(MISSING_CLIENTS):
        print(f"note: {client} is not installed; its checks did not run")
    print(f"{args.group}: {len(ctx.failures)} failure(s)")
    return 1 if ctx.failures else 0


if __name__ == "__main__":
    sys.exit(main())
