#!/usr/bin/python3
"""Memory bounded by a budget the caller sets (spec/security.md M-1..M-3).

    scene_memory.py [--only REGEX] ONNXZ_EXE WORKDIR

The amplifier: a graph of N empty initializers is 2 bytes each on the wire and a
TensorProto of some 400 bytes each once decoded; deflated as __MODEL_PROTO (1000 to 1),
9.6 KB of archive decoded into 1.9 GB before the budget existed. Each case runs the tool
on such an input and checks, from os.wait4's accounting of that one child, that it fails
with the one-line OC_ERR_LIMIT message naming --max-memory and that its peak RSS stayed
near the budget; then that raising the budget lets a legitimately large graph load, and
that the ZIP reader's tables count too.

Under ONNXZ_TEST_REDUCED=1 (valgrind) every run uses --max-memory 16M, and RSS is not
checked (valgrind's own use dominates it).

Exit status 0 when every case passed, 1 otherwise.
"""

import os
import re
import sys
import tempfile
import zipfile

REDUCED = os.environ.get("ONNXZ_TEST_REDUCED") == "1"
DEFAULT_BUDGET = 1 << 30  # CLI_DEFAULT_MAX_MEMORY
# Peak RSS allowed above the budget: the program, the input's pages, the deflated and
# inflated model, the last arena block (up to 8 MiB) and the allocator's slack.
RSS_SLACK = 96 << 20
ERROR_RE = re.compile(r"^onnxz: error: (?P<file>.+?): (?P<msg>.*)$")

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from scene_common import run_scenes  # noqa: E402

EXE = None
WORK = None
SANITIZED = False


def run(args):
    """Runs the tool in WORK; returns (status, stdout, stderr, peak RSS in bytes of that
    one child, from os.wait4)."""
    with tempfile.TemporaryFile() as fo, tempfile.TemporaryFile() as fe:
        pid = os.posix_spawn(EXE, [EXE] + args, os.environ, file_actions=[
            (os.POSIX_SPAWN_DUP2, fo.fileno(), 1), (os.POSIX_SPAWN_DUP2, fe.fileno(), 2)])
        _, wstatus, usage = os.wait4(pid, 0)
        fo.seek(0)
        fe.seek(0)
        out, err = fo.read().decode(errors="replace"), fe.read().decode(errors="replace")
    status = os.waitstatus_to_exitcode(wstatus)
    return status, out, err, usage.ru_maxrss * 1024


def expect_limit(args, path, budget, what):
    if REDUCED:
        args = args + ["--max-memory", "16M"]
        budget = 16 << 20
    status, out, err, rss = run(args)
    lines = err.splitlines()
    print("  %-40s exit %d, peak RSS %d MiB" % (what, status, rss >> 20))
    if status != 1 or len(lines) != 1:
        raise AssertionError("%s: exit %d, stderr %r (want exit 1 and one line)" %
                             (what, status, err[:500]))
    m = ERROR_RE.match(lines[0])
    if not m or m.group("file") != path:
        raise AssertionError("%s: not one error line naming %s: %r" % (what, path, lines[0]))
    if not re.search(r"budget of %d bytes.*\(max_memory, M-[12]\); --max-memory raises the "
                     r"budget" % budget, m.group("msg")):
        raise AssertionError("%s: the message does not name the budget and the flag: %r" %
                             (what, lines[0]))
    # AddressSanitizer's shadow adds an eighth of what the program touches.
    slack = RSS_SLACK + (budget // 8 if SANITIZED else 0)
    if not REDUCED and rss > budget + slack:
        raise AssertionError("%s: peak RSS %d bytes, over the budget of %d plus %d" %
                             (what, rss, budget, slack))


def varint(n):
    out = bytearray()
    while True:
        b, n = n & 0x7F, n >> 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def empty_initializers(n):
    """ModelProto{ir_version 8, graph{initializer{} x n}}: 2 bytes per initializer."""
    graph = b"\x2a\x00" * n
    return b"\x08\x08" + b"\x3a" + varint(len(graph)) + graph


def write_bomb_archive(path, n):
    """An archive whose only entry is __MODEL_PROTO, deflated (python's zipfile writes it:
    an independent writer; the tool reads it like any other archive)."""
    with zipfile.ZipFile(path, "w") as z:
        z.writestr(zipfile.ZipInfo("__MODEL_PROTO"), empty_initializers(n),
                   compress_type=zipfile.ZIP_DEFLATED, compresslevel=9)


# ---- cases -----------------------------------------------------------------------------

BOMB_N = 4_800_000  # 9.6 MB inflated, about 9.5 KB deflated, 1.9 GB decoded


def case_bomb_archive():
    """M-1: a 9.6 KB archive whose deflated model decodes into 1.9 GB: every command that
    decodes it stops at the budget, with OC_ERR_LIMIT naming it."""
    path = "bomb.onnxz"
    write_bomb_archive(os.path.join(WORK, path), BOMB_N)
    size = os.path.getsize(os.path.join(WORK, path))
    if size > 12000:
        raise AssertionError("the bomb is %d bytes, not about 9.6 KB" % size)
    expect_limit(["info", path], path, DEFAULT_BUDGET, "info (default budget)")
    for cmd in (["ls", path], ["verify", path], ["meta", path], ["stub", path, "out.onnx"],
                ["unpack", path, "outdir"], ["convert", path, "out.onnx"],
                ["info", "--json", path]):
        expect_limit(cmd + ["--max-memory", "64M"], path, 64 << 20, " ".join(cmd[:1]) +
                     " --max-memory 64M")
    for left in ("out.onnx", "outdir"):
        if os.path.exists(os.path.join(WORK, left)):
            raise AssertionError("%s was written" % left)


def case_bomb_plain():
    """M-1: the same graph as a plain 9.6 MB .onnx (no deflate: the decode alone
    amplifies 200 times)."""
    path = "bomb.onnx"
    with open(os.path.join(WORK, path), "wb") as f:
        f.write(empty_initializers(BOMB_N))
    expect_limit(["info", path], path, DEFAULT_BUDGET, "info (default budget)")
    expect_limit(["verify", path, "--max-memory", "64M"], path, 64 << 20,
                 "verify --max-memory 64M")
    expect_limit(["convert", path, "out.onnxz", "--max-memory", "64M"], path, 64 << 20,
                 "convert --max-memory 64M")


def case_raise_budget():
    """M-3: a legitimately large graph (200,000 initializers, some 80 MB decoded) fails
    under a budget too small for it, and loads once --max-memory is raised (and under
    the default)."""
    n = 20_000 if REDUCED else 200_000
    path = "large.onnx"
    with open(os.path.join(WORK, path), "wb") as f:
        f.write(empty_initializers(n))
    if not REDUCED:
        expect_limit(["info", path, "--max-memory", "16M"], path, 16 << 20,
                     "info --max-memory 16M")
    for flag in ([], ["--max-memory", "512M"], ["--max-memory=2G"]):
        status, out, err, rss = run(["info", path] + flag)
        print("  %-40s exit %d, peak RSS %d MiB" % ("info " + " ".join(flag), status,
                                                     rss >> 20))
        if status != 0 or not re.search(r"initializers: +%d\n" % n, out):
            raise AssertionError("info %s: exit %d, %r" % (flag, status, (out + err)[:500]))
    # The flag is a size: 0 and nonsense are usage errors (exit 2).
    for bad in ("0", "lots"):
        status, _, err, _ = run(["info", path, "--max-memory", bad])
        if status != 2:
            raise AssertionError("--max-memory %s: exit %d, %r" % (bad, status, err))


def case_zip_tables():
    """M-2: what the ZIP reader holds for an archive's central directory (an entry record
    and table slots per entry) counts against the budget too."""
    n = 2000 if REDUCED else 100_000
    # An archive of n tiny stored entries and a model naming none of them; written by
    # zipfile, so the central directory is all the tool has to hold.
    path = "entries.onnxz"
    with zipfile.ZipFile(os.path.join(WORK, path), "w") as z:
        for i in range(n):
            z.writestr("e%06d" % i, b"")
        z.writestr("__MODEL_PROTO", empty_initializers(1))
    budget = (128 << 10) if REDUCED else (8 << 20)
    status, out, err, _ = run(["ls", path, "--max-memory", str(budget)])
    if status != 1 or not re.search(r"need about \d+ bytes of memory, more than the budget "
                                    r"of %d \(max_memory, M-2\); --max-memory" % budget, err):
        raise AssertionError("ls under %d bytes: exit %d, %r" % (budget, status, err[:500]))
    status, out, err, _ = run(["ls", path])
    if status != 0 or len(out.splitlines()) != n + 2:
        raise AssertionError("ls under the default: exit %d, %r" % (status, err[:500]))
    print("  %d entries: refused under %d bytes, listed under the default" % (n, budget))


def case_deflated_model():
    """M-5: an archive's model entry deflated (--deflate-model) is compressed as it is
    encoded, never gathered whole with a compressed copy beside it: a 64 MiB model, its
    weights kept inside (--threshold 1G), converts under --max-memory 16M with RSS near
    that budget (the input's pages aside); zipfile, the oracle, inflates the entry to the
    model's own bytes."""
    n = (4 if REDUCED else 64) << 20
    # Written a MiB at a time: the child's peak RSS (wait4) counts the pages this process
    # ever held, so the model is never built here whole.
    head = b"\x08" + varint(n) + b"\x10\x02" + b"\x42\x01w" + b"\x4a" + varint(n)
    tensor_len = len(head) + n
    graph_head = b"\x2a" + varint(tensor_len)
    graph_len = len(graph_head) + tensor_len
    chunk = os.urandom(1 << 20)  # incompressible: deflate touches all it writes
    with open(os.path.join(WORK, "big.onnx"), "wb") as f:
        f.write(b"\x08\x08" + b"\x3a" + varint(graph_len) + graph_head + head)
        for _ in range(n // len(chunk)):
            f.write(chunk)
    args = ["--max-memory", "16M", "convert", "-f", "big.onnx", "big.onnxz", "--threshold", "1G",
            "--deflate-model"]
    status, out, err, rss = run(args)
    print("  %-40s exit %d, peak RSS %d MiB" % ("convert --deflate-model (16M)", status,
                                                 rss >> 20))
    if status != 0:
        raise AssertionError("convert --deflate-model: exit %d, %r" % (status, err[:500]))
    with zipfile.ZipFile(os.path.join(WORK, "big.onnxz")) as z:
        info = z.getinfo("__MODEL_PROTO")
        with z.open("__MODEL_PROTO") as e, open(os.path.join(WORK, "big.onnx"), "rb") as f:
            same = all(e.read(1 << 20) == f.read(1 << 20) for _ in range(n // (1 << 20) + 2))
        if info.compress_type != zipfile.ZIP_DEFLATED or not same:
            raise AssertionError("__MODEL_PROTO is not the model deflated")
    slack = RSS_SLACK + ((16 << 20) // 8 if SANITIZED else 0)
    if not REDUCED and rss > (16 << 20) + slack:
        raise AssertionError("convert --deflate-model: peak RSS %d MiB, over the budget of "
                             "16 MiB plus %d MiB" % (rss >> 20, slack >> 20))


CASES = [case_bomb_archive, case_bomb_plain, case_raise_budget, case_zip_tables,
         case_deflated_model]


def configure(exe, work):
    global EXE, WORK, SANITIZED
    EXE, WORK = exe, work
    with open(exe, "rb") as f:
        SANITIZED = b"__asan_init" in f.read()


if __name__ == "__main__":
    sys.exit(run_scenes(CASES, configure))
