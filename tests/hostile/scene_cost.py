#!/usr/bin/python3
"""Cost proportional to the input (spec/security.md K-1, K-2): inputs shaped to make a
lookup quadratic, each timed against an ordinary input of the same size.

    scene_cost.py [--only REGEX] ONNXZ_EXE WORKDIR

Every case builds its inputs in WORKDIR (python3-onnx and zipfile; the tool for the
archives it packs), runs one onnxz command on the crafted input and on an ordinary one of
the same size (or on n and on 4n of them), and compares the CPU time the two children
took (resource.RUSAGE_CHILDREN, best of three): a ratio, never a wall-clock limit. An
O(n log n) operation gives a ratio near 1 (crafted/ordinary) or near 4 (4n/n); the
quadratic ones this pins gave 20 to 200.

Each case checks the command's exit status and output too, so a command that fails fast
cannot pass as fast. Under ONNXZ_TEST_REDUCED=1 (valgrind) the inputs are small and only
those checks run: valgrind's own cost swamps the timing.

Exit status 0 when every case passed, 1 otherwise, 77 when python3-onnx is missing.
"""

import os
import re
import resource
import subprocess
import sys

try:
    import onnx
    from onnx import TensorProto, helper
except ImportError:
    print("scene_cost: python3-onnx is missing; skipped")
    sys.exit(77)

REDUCED = os.environ.get("ONNXZ_TEST_REDUCED") == "1"
RUNS = 1 if REDUCED else 3
# Bounds: crafted/ordinary (same size) and 4n/n. Linear work gives about 1 and 4; the
# quadratic lookups these cases pin gave 20 and more, and 16 for 4n/n.
SAME_SIZE_BOUND = 3.0
SCALING_BOUND = 7.0
# CPU seconds added to both sides of a ratio: process start-up and timer granularity,
# so two tiny times do not make a big ratio out of noise.
NOISE = 0.02

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from scene_common import run_scenes  # noqa: E402

EXE = None
WORK = None


def cpu_run(args, cwd=None):
    """Runs args; returns (CPU seconds of the child, CompletedProcess)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    p = subprocess.run(args, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       timeout=3600)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return cpu, p


def best_of(args, check, cwd=None, before_each=None):
    """Best CPU time of RUNS runs of args; check(p) raises when the run went wrong."""
    best = None
    for _ in range(RUNS):
        if before_each:
            before_each()
        cpu, p = cpu_run(args, cwd)
        check(p)
        best = cpu if best is None else min(best, cpu)
    return best


def expect_ok(p, stdout_re=None):
    if p.returncode != 0:
        raise AssertionError("exit %d: %s" % (p.returncode, p.stderr.decode(errors="replace")))
    if stdout_re and not re.search(stdout_re, p.stdout.decode(errors="replace")):
        raise AssertionError("stdout does not match %r:\n%s" %
                             (stdout_re, p.stdout.decode(errors="replace")[:2000]))


def compare(label, crafted, ordinary, bound):
    ratio = (crafted + NOISE) / (ordinary + NOISE)
    print("  %s: %.3f s against %.3f s CPU, ratio %.2f (bound %.1f)" %
          (label, crafted, ordinary, ratio, bound))
    if not REDUCED and ratio >= bound:
        raise AssertionError("%s: ratio %.2f is not below %.1f: the cost is not "
                             "proportional to the input" % (label, ratio, bound))


# ---- inputs ----------------------------------------------------------------------------

FNV_PRIME = 1099511628211
BITS = 17  # collisions in the low 17 bits collide in every table of up to 2^17 slots


def fnv_low(basis, data):
    mask = (1 << BITS) - 1
    h = basis & mask
    for b in data:
        h = ((h ^ b) * FNV_PRIME) & mask
    return h


def fnv_colliding(basis, count, alphabet, stem=b"x"):
    """count distinct names of one length whose FNV-1a hash (offset basis `basis`) agrees
    in its low BITS bits: a fixed-hash table with up to 2^BITS slots puts them all in
    one probe chain. Found backwards: each 3-byte suffix is a map from the state before
    it to the state after it, invertible because the prime is odd; so for each suffix
    the state that ends at 0 is known, and a prefix whose state is one of those gets
    that suffix."""
    mask = (1 << BITS) - 1
    inv = pow(FNV_PRIME, -1, 1 << BITS)
    ending = {}
    for a in alphabet:
        for b in alphabet:
            for c in alphabet:
                s = 0
                for byte in (c, b, a):
                    s = ((s * inv) & mask) ^ byte
                ending.setdefault(s, bytes((a, b, c)))
    names = []
    i = 0
    digits = len(alphabet)
    while len(names) < count:
        n, tail = i, bytearray()
        for _ in range(5):
            tail.append(alphabet[n % digits])
            n //= digits
        prefix = stem + bytes(tail)
        suffix = ending.get(fnv_low(basis, prefix))
        if suffix is not None:
            names.append(prefix + suffix)
        i += 1
    return names


def plain_names(count, alphabet, stem=b"x"):
    """count distinct names of the same shape as fnv_colliding's, without any care."""
    names = []
    digits = len(alphabet)
    for i in range(count):
        n, tail = i * 7919 + 13, bytearray()
        for _ in range(8):
            tail.append(alphabet[n % digits])
            n //= digits
        names.append(stem + bytes(tail))
    return names


LOWER = b"abcdefghijklmnopqrstuvwxyz0123456789_"


def save_model(path, initializers):
    graph = helper.make_graph([], "g", [], [], initializer=initializers)
    model = helper.make_model(graph, producer_name="scene_cost")
    with open(path, "wb") as f:
        f.write(model.SerializeToString())


def small_tensor(name):
    return helper.make_tensor(name, TensorProto.FLOAT, [1], b"\0\0\x80\x3f", raw=True)


def external_tensor(name, location):
    t = TensorProto()
    t.name = name
    t.data_type = TensorProto.FLOAT
    t.dims.append(1)
    t.data_location = TensorProto.EXTERNAL
    for k, v in (("location", location), ("offset", "0"), ("length", "4")):
        e = t.external_data.add()
        e.key, e.value = k, v
    return t


def pack(src, dst):
    if os.path.exists(dst):
        return
    p = subprocess.run([EXE, "convert", "-q", "--threshold", "1", src, dst],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    expect_ok(p)


# ---- cases -----------------------------------------------------------------------------


def case_archive_entries():
    """K-1: loading an archive resolves each tensor's entry by name. A linear scan over
    the files found so far made verify/convert of 100k entries take 26 s."""
    n = 500 if REDUCED else 10000
    times = {}
    for k in (n, 4 * n):
        src = os.path.join(WORK, "entries_%d.onnx" % k)
        dst = os.path.join(WORK, "entries_%d.onnxz" % k)
        save_model(src, [small_tensor("t%d" % i) for i in range(k)])
        pack(src, dst)
        times[k] = best_of([EXE, "verify", "-q", dst], expect_ok)
        out = os.path.join(WORK, "entries_back.onnx")
        times[k] += best_of([EXE, "convert", "-q", "-f", dst, out], expect_ok)
    compare("verify+convert of %d entries against %d" % (4 * n, n), times[4 * n], times[n],
            SCALING_BOUND)


def case_same_name():
    """K-1, A-10: converting to .onnxz names each entry after its tensor, with _2, _3, ...
    for names taken. The search restarted at _2 for every tensor: 20k tensors named W
    took 21 s."""
    n = 300 if REDUCED else 6000
    times = {}
    for kind, names in (("same", ["W"] * n), ("distinct", ["W%d" % i for i in range(n)])):
        src = os.path.join(WORK, "names_%s.onnx" % kind)
        dst = os.path.join(WORK, "names_%s.onnxz" % kind)
        save_model(src, [small_tensor(x) for x in names])
        times[kind] = best_of([EXE, "convert", "-q", "-f", "--threshold", "1", src, dst],
                              expect_ok)
    # The names: W, W_2, ..., W_n, all distinct (zipfile agrees).
    import zipfile
    with zipfile.ZipFile(os.path.join(WORK, "names_same.onnxz")) as z:
        got = set(z.namelist())
    want = {"W"} | {"W_%d" % k for k in range(2, n + 1)} | {"__MODEL_PROTO"}
    if got != want:
        raise AssertionError("entry names are not W, W_2 ... W_%d: %s" %
                             (n, sorted(got ^ want)[:10]))
    compare("convert of %d tensors named W against %d distinct names" % (n, n),
            times["same"], times["distinct"], SAME_SIZE_BOUND)


def count_locations(p, n):
    """info printed n locations (one line each, indented under external data)."""
    expect_ok(p, r"external data: +%d tensors, %d bytes" % (n, 4 * n))
    lines = [x for x in p.stdout.decode().splitlines() if re.match(r"    \S+: +1 tensors?, 4 ", x)]
    if len(lines) != n:
        raise AssertionError("info listed %d locations, not %d" % (len(lines), n))


def case_info_locations():
    """K-2: `onnxz info` totals external data per location. Its table hashed locations
    with unkeyed FNV-1a: locations colliding in the low bits made it quadratic (65,536
    took 9.3 s against 0.3 s)."""
    n = 300 if REDUCED else 16384
    crafted = fnv_colliding(14695981039346656037, n, LOWER)
    plain = plain_names(n, LOWER)
    assert len(crafted[0]) == len(plain[0])
    times = {}
    for kind, locs in (("crafted", crafted), ("plain", plain)):
        path = os.path.join(WORK, "locations_%s.onnx" % kind)
        save_model(path, [external_tensor("t%d" % i, loc.decode())
                          for i, loc in enumerate(locs)])
        times[kind] = best_of([EXE, "info", path], lambda p: count_locations(p, n))
    compare("info with %d colliding locations against %d plain ones" % (n, n),
            times["crafted"], times["plain"], SAME_SIZE_BOUND)


def case_writer_names():
    """K-2: the archive writer's set of entry names (A-10) hashed with unkeyed FNV-1a:
    tensor names colliding in the low bits made `convert` to .onnxz quadratic."""
    n = 300 if REDUCED else 32768
    crafted = fnv_colliding(1469598103934665603, n, LOWER)
    plain = plain_names(n, LOWER)
    times = {}
    for kind, names in (("crafted", crafted), ("plain", plain)):
        src = os.path.join(WORK, "wnames_%s.onnx" % kind)
        dst = os.path.join(WORK, "wnames_%s.onnxz" % kind)
        save_model(src, [small_tensor(x.decode()) for x in names])
        times[kind] = best_of([EXE, "convert", "-q", "-f", "--threshold", "1", src, dst],
                              expect_ok)
    compare("convert of %d colliding tensor names against %d plain ones" % (n, n),
            times["crafted"], times["plain"], SAME_SIZE_BOUND)


def aligned_info(z, name):
    """A ZipInfo whose data will start on a 64-byte boundary (A-4): Android's alignment
    record (0xD935, Z-11) of the right length in the local header."""
    import struct
    import zipfile
    p = (-(z.fp.tell() + 30 + len(name.encode()))) % 64
    if p < 6:
        p += 64
    zi = zipfile.ZipInfo(name)
    zi.extra = struct.pack("<HHH", 0xD935, p - 4, 64) + b"\0" * (p - 6)
    return zi


def write_names_archive(path, names):
    """An archive (written by python's zipfile) of empty entries with these names."""
    import zipfile
    with zipfile.ZipFile(path, "w") as z:
        for name in names:
            z.writestr(aligned_info(z, name), b"")
        # ir_version 8 and an empty graph (field 7): a model verify takes (W-41)
        z.writestr(aligned_info(z, "__MODEL_PROTO"), b"\x08\x08\x3a\x00")


def case_deep_names():
    """K-1, Z-36: no name may be both a file and a directory. The check listed every
    directory prefix of every name and sorted them: O(L^2 log) per name of length L, so
    500 names 2,000 levels deep took 8 times as long to verify as 500 flat names of the
    same length."""
    n = 20 if REDUCED else 500
    times = {}
    for kind, names in (("deep", ["a/" * 2000 + "f%d" % i for i in range(n)]),
                        ("flat", ["b" * 4000 + "f%d" % i for i in range(n)])):
        path = os.path.join(WORK, "paths_%s.onnxz" % kind)
        write_names_archive(path, names)
        times[kind] = best_of([EXE, "verify", path], lambda p: expect_ok(
            p, r"^OK .*%d entries with valid CRC-32s" % (n + 1)))
    compare("verify of %d names 2,000 levels deep against %d flat names" % (n, n),
            times["deep"], times["flat"], SAME_SIZE_BOUND)


def case_unpack_depth():
    """K-1: unpack makes and checks the parents of each entry, each with a path that the
    kernel walks from the top: O(d^2) per name d levels deep. 1,000 names 2,000 levels
    deep (8 MB) kept it busy for more than ten minutes. Names deeper than 64 levels are
    refused before anything is written; 64 levels unpack."""
    n = 50 if REDUCED else 1000
    deep = os.path.join(WORK, "unpack_deep.onnxz")
    write_names_archive(deep, ["a/" * 2000 + "f%d" % i for i in range(n)])
    out = os.path.join(WORK, "unpack_out")
    _, p = cpu_run([EXE, "unpack", deep, out], cwd=WORK)
    err = p.stderr.decode(errors="replace")
    if p.returncode != 1 or "is nested 2000 directories deep, more than unpack's limit of 64" \
            not in err:
        raise AssertionError("unpack of names 2,000 deep: exit %d, %r" % (p.returncode, err))
    if os.path.exists(out):
        raise AssertionError("unpack wrote %s before refusing" % out)
    ok = os.path.join(WORK, "unpack_64.onnxz")
    write_names_archive(ok, ["a/" * 63 + "b/f%d" % i for i in range(3)])
    _, p = cpu_run([EXE, "unpack", "-q", ok, out], cwd=WORK)
    expect_ok(p)
    if not os.path.isfile(os.path.join(out, "a/" * 63 + "b/f2")):
        raise AssertionError("unpack of names 64 levels deep did not write them")
    print("  2,000 levels refused, 64 levels unpacked")


def make_stub(tensors, name, records=True, copies=1):
    """An archive of float tensors (one entry each) and its stub (A-60); without records
    the stub loses its onnxz.stub key (a stub of an older onnxz, A-62). With copies > 1
    every tensor of the stub is repeated under other names, naming the same entry."""
    src = os.path.join(WORK, name + ".onnx")
    arc = os.path.join(WORK, name + ".onnxz")
    stub = os.path.join(WORK, name + "_stub.onnx")
    save_model(src, tensors)
    pack(src, arc)
    expect_ok(subprocess.run([EXE, "stub", "-f", arc, stub], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE))
    m = onnx.load(stub, load_external_data=False)
    if not records:
        keep = [p for p in m.metadata_props if p.key != "onnxz.stub"]
        del m.metadata_props[:]
        m.metadata_props.extend(keep)
    first = list(m.graph.initializer)
    for k in range(1, copies):
        for t in first:
            c = m.graph.initializer.add()
            c.CopyFrom(t)
            c.name = "%s_copy%d" % (t.name, k)
    with open(stub, "wb") as f:
        f.write(m.SerializeToString())
    return stub


def float_tensor(name, floats):
    return helper.make_tensor(name, TensorProto.FLOAT, [floats], b"\0\0\x80\x3f" * floats,
                              raw=True)


def case_stub_offsets():
    """K-1, A-62: verify of a stub without the onnxz.stub records finds each tensor's
    entry by its data offset. A scan of every entry per tensor made 80,000 tensors take
    16 s; timed against the same stub with its records (lookup by name)."""
    n = 300 if REDUCED else 30000
    tensors = [small_tensor("t%d" % i) for i in range(n)]
    times = {}
    for kind in ("records", "bare"):
        stub = make_stub(tensors, "offsets_" + kind, records=kind == "records")
        times[kind] = best_of([EXE, "verify", stub],
                              lambda p: expect_ok(p, r"%d references? into an archive match" % n))
    compare("verify of a stub of %d tensors without records against one with them" % n,
            times["bare"], times["records"], SAME_SIZE_BOUND)


def case_stub_shared_entry():
    """K-1, A-62: verify checks the CRC-32 of the entry a stub's tensor reads. It did so
    once per tensor: 2,000 tensors naming one 16 MB entry made 32 GB of CRC. Timed
    against the same number of tensors, each with its own entry, and the same bytes."""
    n, size = (20, 1 << 16) if REDUCED else (1000, 1 << 24)
    shared = make_stub([float_tensor("big", size // 4)], "shared_one", copies=n)
    own = make_stub([float_tensor("w%d" % i, size // 4 // n) for i in range(n)], "shared_own")
    times = {}
    for kind, stub in (("shared", shared), ("own", own)):
        times[kind] = best_of([EXE, "verify", stub],
                              lambda p: expect_ok(p, r"%d references? into an archive match" % n))
    compare("verify of %d tensors sharing one %d-byte entry against %d entries" %
            (n, size, n), times["shared"], times["own"], SAME_SIZE_BOUND)


CASES = [case_archive_entries, case_same_name, case_info_locations, case_writer_names,
         case_deep_names, case_unpack_depth, case_stub_offsets, case_stub_shared_entry]


def configure(exe, work):
    global EXE, WORK
    EXE, WORK = exe, work


if __name__ == "__main__":
    sys.exit(run_scenes(CASES, configure))
