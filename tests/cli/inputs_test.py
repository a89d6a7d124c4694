#!/usr/bin/python3
"""End-to-end tests of stubs that cannot go stale silently and of inputs a user gets wrong.

    inputs_test.py --onnxz PATH --sample samples/mlp.onnx --work DIR [--readme README.md]
                   [--demo scripts/demo.sh] GROUP

Groups (each a ctest test, in its own work directory):
  stub_check    a stub records its entries (spec/onnxz.md A-60, A-61) and `verify` checks
                them (A-62): a rebuilt archive fails naming the tensor, a `meta` edit of
                the archive passes (A-63); python3-onnx's onnx.load and zipfile are the
                oracles for what the stub reads and what the archive holds.
  stub_runtime  the same stubs in ONNX Runtime (onnxruntime-node): a stub runs with the
                source's outputs, bit for bit, after a meta edit too; a stale one runs with
                other outputs (what A-62 catches); ORT refuses an unknown external_data
                key (why A-61 records in metadata). Skipped (77) without node and
                onnxruntime-node: ONNXZ_ORT_DIR names the directory tests/runtime/install_ort.sh
                installed it into (ctest sets it).
  inputs        empty files, models without ir_version or graph (W-41), tensors an
                archive must not hold (A-13).
  outputs       OUT: an empty name, a directory, a name of no known form, --to.
  docs          README synopsis and install notes, demo.sh, help texts without broken lines.
The tool's conventions (exit codes, one error line) are checked with cli_test.py's Context.
"""

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import zipfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cli_test  # noqa: E402
from cli_test import (HAVE_OPENSSL, SKIP, Context, all_tensor_bytes, external_refs,  # noqa: E402
                      flip_byte, read, same_tensors, write, zip_entries)

onnx = cli_test.onnx
if onnx is not None:
    from onnx import TensorProto, helper, numpy_helper  # noqa: E402

STUB_KEY = "onnxz.stub"


def stub_records(path):
    """The stub's A-61 records, as python3-onnx reads its metadata: [(offset, length, crc, name)]."""
    m = onnx.load(path, load_external_data=False)
    value = {p.key: p.value for p in m.metadata_props}.get(STUB_KEY)
    if value is None:
        return None
    out = []
    for line in value.split("\n")[:-1]:
        off, length, crc, name = line.split(" ", 3)
        out.append((int(off), int(length), int(crc, 16), name))
    return out


def make_stub(ctx, d, src=None):
    """d/m.onnxz from src (default: the sample) and its stub d/s.onnx."""
    os.makedirs(d, exist_ok=True)
    arc, stub = os.path.join(d, "m.onnxz"), os.path.join(d, "s.onnx")
    ctx.expect_exit(["convert", "-f", src or ctx.sample, arc], 0, "pack for a stub")
    ctx.expect_exit(["stub", "-f", arc, stub], 0, "stub")
    return arc, stub


def first_external(stub):
    return external_refs(stub)[0][0]


def group_stub_check(ctx):
    if onnx is None:
        return SKIP
    src = onnx.load(ctx.sample)
    d = ctx.path("s")
    arc, stub = make_stub(ctx, d)
    refs = external_refs(stub)
    # The sample's tensors of 1024 bytes or more (E-27's default threshold): 4 of its 5.
    ctx.check(len(refs) == 4, f"precondition: the sample's stub has 4 references ({len(refs)})")

    # the references are classic external data (only the keys ORT knows), and
    # the records are the entries as zipfile sees them, one per entry, by offset.
    entries = {e["data_offset"]: e for e in zip_entries(arc)}
    for name, kv, keys in refs:
        ctx.equal(sorted(keys), ["length", "location", "offset"], f"A-60: {name}'s external_data keys")
    recs = stub_records(stub)
    if ctx.check(recs is not None, "A-61: the stub has the onnxz.stub metadata"):
        ctx.equal([r[0] for r in recs], sorted({int(kv["offset"]) for _, kv, _ in refs}),
                  "A-61: one record per referenced offset, in order")
        for off, length, crc, name in recs:
            e = entries.get(off)
            if ctx.check(e is not None, f"A-61: a record at {off} is an entry's data offset"):
                ctx.equal((length, crc, name), (e["size"], e["crc32"], e["name"]),
                          f"A-61: record of {name} is the entry's size, CRC-32 and name")
    ctx.check(all_tensor_bytes(onnx.load(stub)) == all_tensor_bytes(src),
              "onnx.load of the stub reads the archive's weights: the source's tensors")

    # verify checks every reference; the summary says so.
    rc, out, _ = ctx.expect_exit(["verify", stub], 0, "verify a fresh stub")
    ctx.check("4 references into an archive match its entries" in out, f"verify summary: {out!r}")
    rc, out, _ = ctx.expect_exit(["verify", "--json", stub], 0, "verify --json a stub")
    if rc == 0:
        ctx.equal(cli_test.json.loads(out).get("archive_references"), 4, "verify --json: archive_references")
    rc, out, _ = ctx.expect_exit(["verify", "--json", ctx.sample], 0, "verify --json a model")
    if rc == 0:
        ctx.check("archive_references" not in cli_test.json.loads(out), "no archive_references without a stub")

    # a meta edit of the archive keeps the stub valid (and loading the same weights).
    ctx.expect_exit(["meta", arc, "--set", "licence=MIT", "--producer", "someone else"], 0, "meta edit")
    ctx.expect_exit(["verify", stub], 0, "verify the stub after a meta edit of the archive (A-63)")
    same_tensors(ctx, src, stub, "stub after a meta edit")
    # ... and so does an edit of the stub itself.
    ctx.expect_exit(["meta", stub, "--set", "note=mine"], 0, "meta edit of the stub")
    ctx.expect_exit(["verify", stub], 0, "verify the stub after editing it (A-63)")

    # the archive rebuilt at another alignment: onnx.load of the old stub reads
    # other bytes without an error (the defect), and verify fails naming the first tensor.
    ctx.expect_exit(["convert", "-f", ctx.sample, arc, "--align", "4096"], 0, "rebuild at --align 4096")
    try:
        stale = all_tensor_bytes(onnx.load(stub)) != all_tensor_bytes(src)
    except Exception:  # noqa: BLE001 - a load error is as good: not silently wrong
        stale = True
    ctx.check(stale, "precondition: the stale stub reads other bytes than the source's")
    ctx.expect_error(["verify", stub], stub, "verify a stale stub (rebuilt archive)",
                     message=rf"^tensor '{re.escape(refs[0][0])}': .*rebuilt after the stub was made.*\(A-62\)$")
    ctx.expect_error(["verify", "-q", stub], stub, "verify -q a stale stub", message="A-62")
    # Made again, it passes.
    ctx.expect_exit(["stub", "-f", arc, stub], 0, "stub again")
    ctx.expect_exit(["verify", stub], 0, "verify the new stub")

    # Rebuilt from other weights of the same shapes: every offset and size is the same,
    # only the CRC-32 the stub recorded tells.
    other = onnx.load(ctx.sample)
    for t in other.graph.initializer:
        if t.HasField("raw_data") and len(t.raw_data) >= 64:
            t.raw_data = bytes(b ^ 0x01 for b in t.raw_data)
    other_path = ctx.path("other.onnx")
    onnx.save(other, other_path)
    offsets = sorted(e["data_offset"] for e in zip_entries(arc))
    ctx.expect_exit(["convert", "-f", other_path, arc, "--align", "4096"], 0, "rebuild from other weights")
    ctx.equal(sorted(e["data_offset"] for e in zip_entries(arc)), offsets, "precondition: the same data offsets")
    ctx.expect_error(["verify", stub], stub, "verify a stub of other weights",
                     message=r"CRC-32 [0-9a-f]{8}, the stub recorded [0-9a-f]{8}\).*A-62")

    # A stub without records (an older onnxz's): each reference must still be an entry's
    # data, whole, with its CRC-32.
    arc, stub = make_stub(ctx, ctx.path("norec"))
    ctx.expect_exit(["meta", stub, "--unset", STUB_KEY], 0, "drop the records")
    ctx.equal(stub_records(stub), None, "precondition: no records")
    ctx.expect_exit(["verify", stub], 0, "verify a stub without records")
    ctx.expect_exit(["convert", "-f", ctx.sample, arc, "--align", "4096"], 0, "rebuild")
    ctx.expect_error(["verify", stub], stub, "verify a stale stub without records",
                     message=rf"^tensor '{re.escape(first_external(stub))}': no entry of m.onnxz has its data at offset \d+")
    # A record that is not a record; a reference the records do not know.
    arc, stub = make_stub(ctx, ctx.path("bad"))
    ctx.expect_exit(["meta", stub, "--set", f"{STUB_KEY}=64 12 zz W\n"], 0, "spoil the records")
    ctx.expect_error(["verify", stub], stub, "verify with a malformed record", message=r"line 1 .*\(A-61\)")
    ctx.expect_exit(["meta", stub, "--set", f"{STUB_KEY}=1 2 00000000 x\n"], 0, "foreign records")
    ctx.expect_error(["verify", stub], stub, "verify with no record for a reference",
                     message=r"no record of an entry of m.onnxz at offset \d+ \(A-62\)")
    # The bytes themselves: one flipped in a tensor's data.
    arc, stub = make_stub(ctx, ctx.path("flip"))
    flip_byte(arc, arc, int(external_refs(stub)[0][1]["offset"]) + 3)
    ctx.expect_error(["verify", stub], stub, "verify a stub whose archive bytes changed", message="CRC")

    # Not a stub: a two-file model whose data file starts like a ZIP (its first tensor's
    # bytes) is ordinary external data, which verify takes as it did.
    # 2 KiB: over the default threshold (E-27), so the tensor goes to the data file.
    t = numpy_helper.from_array(cli_test.numpy.frombuffer(b"PK\x03\x04" + bytes(2044), dtype="uint8"), "pk")
    pk = ctx.path("pk.onnx")
    g = helper.make_graph([], "g", [], [helper.make_tensor_value_info("pk", TensorProto.UINT8, None)], [t])
    onnx.save(helper.make_model(g), pk)
    two = ctx.path("pk_two.onnx")
    ctx.expect_exit(["convert", pk, two, "--external-data", "pk_two.data"], 0, "two-file with a PK data file")
    ctx.check(read(ctx.path("pk_two.data"))[:4] == b"PK\x03\x04", "precondition: the data file starts like a ZIP")
    ctx.expect_exit(["verify", two], 0, "verify a two-file model whose data starts like a ZIP")

    # The stub is refused where it would be wrong from the start.
    d = ctx.path("s")
    arc = os.path.join(d, "m.onnxz")
    ctx.expect_usage(["stub", arc, os.path.join(d, "x.onnxz")], "stub OUT named .onnxz")
    os.makedirs(os.path.join(d, "dir.onnx"))
    ctx.expect_error(["stub", arc, os.path.join(d, "dir.onnx")], os.path.join(d, "dir.onnx"),
                     "stub onto a directory", message="^is a directory$")
    return None


# ---- ONNX Runtime ------------------------------------------------------------------

# ONNX Runtime through the suite's one runner (tests/runtime/runner.js): ONNXZ_ORT_DIR names
# the directory whose node_modules holds onnxruntime-node (tests/runtime/install_ort.sh).
RUNNER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "runtime", "runner.js")


def find_ort():
    """(node, ORT_DIR), or (None, None) when the variable is not set (a run by hand)."""
    d = os.environ.get("ONNXZ_ORT_DIR")
    node = shutil.which("node")
    if not d:
        return None, None
    if not node or not os.path.isdir(os.path.join(d, "node_modules", "onnxruntime-node")):
        sys.exit(f"ONNXZ_ORT_DIR={d}: node or onnxruntime-node is missing")
    return node, d


def group_stub_runtime(ctx):
    if onnx is None:
        return SKIP
    node, ort_dir = find_ort()
    if not ort_dir:
        print("SKIP stub_runtime: ONNXZ_ORT_DIR is not set (ctest sets it: tests/cli/CMakeLists.txt)")
        return SKIP
    jobs = ctx.path("ort_jobs.json")
    x = [((i * 37) % 101) / 50 - 1 for i in range(2 * 96)]  # the sample's input, fixed values

    def run(model):
        """(0, digests of every output) or (1, "ERROR " + ORT's message)."""
        with open(jobs, "w") as f:
            json.dump([{"id": "m", "model": model,
                        "feeds": {"x": {"type": "float32", "dims": [2, 96], "data": x}}}], f)
        p = subprocess.run([node, RUNNER, ort_dir, jobs], capture_output=True, timeout=300)
        r = json.loads(p.stdout.decode().splitlines()[-1])
        if "error" in r:
            return 1, "ERROR " + r["error"]
        return 0, json.dumps(r["outputs"], sort_keys=True)

    rc, want = run(ctx.sample)
    if not ctx.equal(rc, 0, f"ORT runs the sample ({want!r})"):
        return None
    arc, stub = make_stub(ctx, ctx.path("s"))
    ctx.equal(run(stub), (0, want), "ORT: the stub's outputs are the source's, bit for bit")
    ctx.expect_exit(["meta", arc, "--set", "k=v"], 0, "meta edit")
    ctx.equal(run(stub), (0, want), "ORT: the stub after a meta edit of the archive (A-63)")
    ctx.expect_exit(["convert", "-f", ctx.sample, arc, "--align", "4096"], 0, "rebuild")
    rc, out = run(stub)
    ctx.check(rc == 0 and out != want, f"ORT runs the stale stub with other outputs, no error ({rc}, {out!r})")
    ctx.expect_error(["verify", stub], stub, "verify catches what ORT does not", message="A-62")
    # A-61's reason: an external_data key ORT does not know makes it refuse the model.
    m = onnx.load(stub, load_external_data=False)
    for t in m.graph.initializer:
        if t.data_location == TensorProto.EXTERNAL:
            e = t.external_data.add()
            e.key, e.value = "onnxz_entry", "x"
    extra = ctx.path("s/extra_key.onnx")
    onnx.save(m, extra)
    rc, out = run(extra)
    ctx.check(rc != 0 and out.startswith("ERROR"), f"ORT refuses an unknown external_data key ({out!r})")
    return None


# ---- inputs -------------------------------------------------------------------------

def tensor_model(t):
    g = helper.make_graph([], "g", [], [helper.make_tensor_value_info(t.name, TensorProto.FLOAT, None)], [t])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m


def group_inputs(ctx):
    if onnx is None:
        return SKIP
    empty = ctx.path("empty.onnx")
    write(empty, b"")
    msg = "^empty file, not an ONNX model$"
    for argv in (["convert", empty, ctx.path("o.onnx")], ["convert", empty, ctx.path("o.onnxz")],
                 ["info", empty], ["info", "--json", empty], ["verify", empty],
                 ["unpack", empty, ctx.path("dir")], ["meta", empty, "--set", "a=b"]):
        ctx.expect_error(argv, empty, f"{argv[0]} of an empty file", message=msg)
    ctx.equal(sorted(os.listdir(ctx.work)), ["empty.onnx"], "an empty input leaves nothing behind")
    ctx.equal(read(empty), b"", "meta left the empty file as it was")

    # W-41: no ir_version, no graph: convert passes the model on unchanged, verify reports it
    # (as onnx.checker does).
    no_ir = onnx.load(ctx.sample)
    no_ir.ClearField("ir_version")
    no_graph = onnx.load(ctx.sample)
    no_graph.ClearField("graph")
    for name, m, what in (("no_ir.onnx", no_ir, r"no ir_version.*\(W-41\)"),
                          ("no_graph.onnx", no_graph, r"no graph \(W-41\)")):
        p = ctx.path(name)
        onnx.save(m, p)
        out = ctx.path("copy_" + name)
        ctx.expect_exit(["convert", p, out], 0, f"convert {name}")
        ctx.equal(read(out) if os.path.exists(out) else None, read(p), f"convert {name}: unchanged")
        ctx.expect_error(["verify", p], p, f"verify {name}", message=what)
        try:
            onnx.checker.check_model(m)
            ctx.check(False, f"oracle: onnx.checker rejects {name} too")
        except onnx.checker.ValidationError:
            pass

    # tensors an archive must not hold. Packing fails naming the tensor and writes
    # nothing; the same model still converts to .onnx (loaders take it, W-40).
    cases = [("short", [3, 5], b"\0" * 56, r"make 60 bytes, but its raw_data holds 56"),
             ("long", [2], b"\0" * 80, r"make 8 bytes, but its raw_data holds 80"),
             ("overflow", [1 << 32, 1 << 32, 1 << 32], b"\0" * 64, r"more than 2\^64 - 1 elements"),
             ("negative", [-4, 4], b"\0" * 64, r"is negative")]
    for cid, dims, raw, what in cases:
        t = TensorProto(name=f"W.{cid}", data_type=TensorProto.FLOAT, dims=dims, raw_data=raw)
        p = ctx.path(f"{cid}.onnx")
        write(p, tensor_model(t).SerializeToString())
        d = ctx.path(f"out_{cid}")
        os.makedirs(d)
        for argv in (["convert", p, os.path.join(d, "x.onnxz")],
                     ["convert", "--to", "onnxz", p, os.path.join(d, "x.bin")],
                     ["convert", "--threshold", "1G", p, os.path.join(d, "x.onnxz")]):
            ctx.expect_error(argv, p, f"pack {cid}",
                             message=rf"^tensor 'W\.{cid}': .*{what}.*\(W-40\).*\(A-13\)$")
        ctx.equal(os.listdir(d), [], f"pack {cid}: nothing written")
        ctx.expect_exit(["convert", p, os.path.join(d, "x.onnx")], 0, f"{cid} still converts to .onnx")
    return None


# ---- OUT ----------------------------------------------------------------------------

def group_outputs(ctx):
    sample = ctx.sample
    arc = ctx.path("m.onnxz")
    ctx.expect_exit(["convert", sample, arc], 0, "pack")
    key = ctx.path("k.txt")
    write(key, b"secret passphrase\n")
    # An empty name: a usage error, wherever a command takes an OUT.
    crypt = HAVE_OPENSSL  # without OpenSSL, encrypt refuses first (exit 1, cli_require_crypto)
    for argv in (["convert", sample, ""], ["convert", "-f", sample, ""], ["stub", arc, ""],
                 ["unpack", arc, ""]) + ((["encrypt", "--key-file", key, sample, ""],) if crypt else ()):
        ctx.expect_usage(argv, f"{argv[0]} with an empty OUT")
    # A directory: "is a directory", with -f too, and the directory untouched.
    d = ctx.path("outdir")
    os.makedirs(d)
    write(os.path.join(d, "keep"), b"x")
    for argv in (["convert", sample, d], ["convert", "-f", sample, d], ["convert", sample, d + "/"],
                 ["convert", "--to", "onnxz", sample, d]) + ((["encrypt", "--key-file", key, sample, d],
                                                              ["encrypt", "-f", "--key-file", key, sample, d]) if crypt else ()):
        ctx.expect_error(argv, argv[-1], f"{' '.join(argv[:2])} onto a directory", message="^is a directory$")
    ctx.equal(os.listdir(d), ["keep"], "the directory is untouched")
    if HAVE_OPENSSL:
        enc = ctx.path("m.enc")
        ctx.expect_exit(["encrypt", "--key-file", key, "--iterations", "1000", sample, enc], 0, "encrypt")
        ctx.expect_error(["decrypt", "--key-file", key, enc, d], d, "decrypt onto a directory",
                         message="^is a directory$")
    # A name of no known form: a usage error naming the forms; --to says which.
    for name in ("model.zip", "model.bin", "model", "model.onnx.tmp"):
        rc, out, err = ctx.expect_exit(["convert", sample, ctx.path(name)], 2, f"convert to {name}")
        ctx.check(all(s in err for s in ("*.onnx", "*.onnxz", "*.onnxc", "--to")),
                  f"convert to {name}: the usage error names the forms: {err!r}")
        ctx.check(not os.path.exists(ctx.path(name)), f"convert to {name}: nothing written")
    ctx.expect_usage(["convert", "--to", "zip", sample, ctx.path("m.zip")], "--to zip")
    ctx.expect_usage(["convert", "--to", "ONNXZ", sample, ctx.path("m.zip")], "--to is lower case")
    # --to onnxz: an archive (zipfile's oracle), which converts back to the source's bytes.
    zbin = ctx.path("model.bin")
    ctx.expect_exit(["convert", "--to", "onnxz", sample, zbin], 0, "convert --to onnxz")
    ctx.check(os.path.exists(zbin) and zipfile.is_zipfile(zbin) and
              cli_test.MODEL_ENTRY in zipfile.ZipFile(zbin).namelist(), "--to onnxz wrote an archive")
    back = ctx.path("back.onnx")
    ctx.expect_exit(["convert", zbin, back], 0, "convert it back")
    ctx.equal(read(back) if os.path.exists(back) else None, read(sample), "--to onnxz: back to the source's bytes")
    # --to onnx: a .onnx whatever the name, with the options of a .onnx output.
    ctx.expect_exit(["convert", "--to", "onnx", arc, ctx.path("plain.zip")], 0, "convert --to onnx")
    plain = ctx.path("plain.zip")
    ctx.equal(read(plain) if os.path.exists(plain) else None, read(sample), "--to onnx: the .onnx bytes")
    ctx.expect_usage(["convert", "--to", "onnx", "--deflate-model", sample, ctx.path("x.zip")],
                     "--to onnx with an archive option")
    ctx.expect_usage(["convert", "--to", "onnxz", "--external-data", "d", sample, ctx.path("y.onnx")],
                     "--to onnxz with --external-data")
    # Names in any case.
    ctx.expect_exit(["convert", sample, ctx.path("UP.ONNXZ")], 0, "convert to UP.ONNXZ")
    ctx.check(os.path.exists(ctx.path("UP.ONNXZ")) and zipfile.is_zipfile(ctx.path("UP.ONNXZ")),
              "UP.ONNXZ is an archive")
    ctx.expect_exit(["convert", arc, ctx.path("UP.ONNX")], 0, "convert to UP.ONNX")
    if HAVE_OPENSSL:
        c = ctx.path("enc.bin")
        ctx.expect_exit(["convert", "--to", "onnxc", "--key-file", key, "--iterations", "1000", sample, c], 0,
                        "convert --to onnxc")
        ctx.check(os.path.exists(c) and read(c)[:8] == b"ONNXZEC1", "--to onnxc wrote an encrypted model")
    return None


# ---- docs ---------------------------------------------------------------------------

def group_docs(ctx):
    readme = read(ctx.args.readme).decode()
    # The README's tool section names every command `onnxz --help` lists.
    _, top, _ = ctx.run("--help")
    commands = re.findall(r"^  (\w+) {2,}", top.split("Commands:")[1].split("\n\n")[0], re.M)
    section = readme.split("## The tool")[1].split("\n## ")[0]
    ctx.check(len(commands) >= 10, f"precondition: onnxz --help lists the commands ({commands})")
    for cmd in commands:
        if cmd != "help":
            ctx.check(f"`{cmd}`" in section, f"README's tool section names {cmd}")
    # docs/tool.md is what `onnxz --markdown` prints from the help texts, byte for byte: a
    # help text changed without regenerating it fails here.
    rc, md, _ = ctx.run("--markdown")
    committed = read(os.path.join(os.path.dirname(ctx.args.readme), "docs", "tool.md")).decode()
    ctx.check(rc == 0 and md == committed,
              "docs/tool.md is `onnxz --markdown`: regenerate it with "
              "build/tools/onnxz --markdown > docs/tool.md")
    for cmd in commands:
        _, text, _ = ctx.run(cmd, "--help")
        ctx.check(f"```text\n{text}```" in md, f"docs/tool.md holds `{cmd} --help` verbatim")
    _, man, _ = ctx.run("--man")
    ctx.check(all(f".SS {cmd}\n" in man for cmd in commands), "the manual page has every command")
    # Where the tool is and how to put it on PATH or install it.
    for what in ("build/tools/onnxz", "PATH", "cmake --install build"):
        ctx.check(what in readme, f"README says {what!r}")
    # demo.sh says what its build step does before running it.
    demo = read(ctx.args.demo).decode()
    build = demo.index("cmake -S")
    ctx.check(re.search(r'echo "[^"]*build', demo[:build]) is not None, "demo.sh announces its build step")
    # Help texts: no broken lines. Within a paragraph of plain (unindented) text, every
    # line but the last runs to near the right margin; a short one is a break mid-sentence.
    for cmd in ["convert", "info", "ls", "verify", "unpack", "meta", "stub", "encrypt", "decrypt", "bench"]:
        _, text, _ = ctx.run(cmd, "--help")
        lines = text.split("\n")
        for i in range(len(lines) - 1):
            line, nxt = lines[i], lines[i + 1]
            # (a line may end early before a command that does not fit on it: `...`)
            plain = line and not line.startswith(" ") and nxt and not nxt.startswith((" ", "`"))
            if plain and not line.endswith((":", ".")) and len(line) < 45:
                ctx.check(False, f"{cmd} --help: a broken line {line!r} before {nxt!r}")
    return None


GROUPS = {"stub_check": group_stub_check, "stub_runtime": group_stub_runtime, "inputs": group_inputs,
          "outputs": group_outputs, "docs": group_docs}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--onnxz", required=True)
    ap.add_argument("--sample", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--readme")
    ap.add_argument("--demo")
    ap.add_argument("group", choices=sorted(GROUPS))
    args = ap.parse_args()
    args.onnxz = os.path.abspath(args.onnxz)
    args.golden = args.version = None
    shutil.rmtree(args.work, ignore_errors=True)
    os.makedirs(args.work)
    ctx = Context(args)
    ctx.args = args
    if GROUPS[args.group](ctx) == SKIP:
        print(f"SKIP {args.group}")
        return SKIP
    for f in ctx.failures:
        print("FAIL", f)
    print(f"{args.group}: {len(ctx.failures)} failure(s)")
    return 1 if ctx.failures else 0


if __name__ == "__main__":
    sys.exit(main())
