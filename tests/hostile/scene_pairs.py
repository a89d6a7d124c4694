#!/usr/bin/python3
"""Issue 16 section 4 (last bullet) and issue 12: a model and its data files are one pair
(spec/external-data.md E-25, E-26).

    scene_pairs.py ONNXZ_EXE SAMPLE_MODEL WORKDIR

Variants of the sample model with the same sizes: doc_string "A", "B" or "O" and every
weight 1.0, 2.0 or 3.0, so a model beside another variant's data still verifies (same
lengths) but is found out by content: onnx.load (python3-onnx, the oracle) gives a
doc_string and weights that must come from the same variant. Writer A is stopped between
its renames (ONNXZ_TEST_STOP=atomic-renamed:1: its data file renamed, its model not yet):
  1. writer B replaces the same two-file target meanwhile; then A continues;
  2. an onnxz reader (convert to a single file) reads the target meanwhile;
  3. A is sent SIGINT there;
and the final pair (and the reader's output) must be one variant. The other process must
wait on the pair lock (seen in /proc/locks, not timed) rather than run between renames.
  4. issue 12: re-converting to the same --external-data LOCATION with fewer parts
     removes the parts the replaced model used, and nothing else.
Skipped (77) without python3-onnx.
"""

import os
import shutil
import signal
import subprocess
import sys
import time

from scenelib import check, finish, resume, start_stopped

try:
    import numpy as np
    import onnx
    from onnx import numpy_helper
except ImportError:
    print("skip: python3-onnx missing")
    sys.exit(77)


def variant(sample, doc, value, path):
    m = onnx.load(sample)
    m.doc_string = doc
    for i, t in enumerate(m.graph.initializer):
        a = numpy_helper.to_array(t)
        m.graph.initializer[i].CopyFrom(numpy_helper.from_array(np.full_like(a, value), t.name))
    onnx.save(m, path)


def which(path):
    """The variant of the pair at path by its doc_string, and whether its weights agree."""
    m = onnx.load(path)
    values = {float(v) for t in m.graph.initializer for v in numpy_helper.to_array(t).flat}
    want = {"A": 1.0, "B": 2.0, "O": 3.0}.get(m.doc_string)
    return m.doc_string, values == {want}, sorted(values)


def wait_blocked(p, timeout=60):
    """Waits until p waits for a lock (a '->' line of /proc/locks with its pid) or ends.
    Returns 'blocked', 'ended' or 'neither' (after timeout)."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if p.poll() is not None:
            return "ended"
        try:
            with open("/proc/locks") as f:
                for line in f:
                    parts = line.split()
                    if "->" in parts and str(p.pid) in parts:
                        return "blocked"
        except OSError:
            return "neither"
        time.sleep(0.01)  # polling an observable state, not a timed assertion
    return "neither"


def main():
    exe, sample, work = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2]), sys.argv[3]
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    for doc, value in (("A", 1.0), ("B", 2.0), ("O", 3.0)):
        variant(sample, doc, value, os.path.join(work, f"{doc}.onnx"))
    ext = ["--external-data", "t.data"]

    def fresh(n):
        d = os.path.join(work, f"s{n}")
        os.makedirs(d)
        for v in "ABO":
            shutil.copy(os.path.join(work, f"{v}.onnx"), d)
        subprocess.run([exe, "-q", "convert", "O.onnx", "t.onnx"] + ext, cwd=d, check=True)
        return d

    def writer_a(d):
        return start_stopped([exe, "-q", "convert", "-f", "A.onnx", "t.onnx"] + ext,
                             "atomic-renamed:1", d)

    def during_commit(n, argv, what):
        """Runs argv while writer A is stopped between its renames: it must wait for A's
        pair lock; then A continues. Returns the directory, or None."""
        d = fresh(n)
        a = writer_a(d)
        if not check(a is not None, f"{what}: A stops between its renames"):
            return None
        other = subprocess.Popen([exe, "-q"] + argv, cwd=d, stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE)
        state = wait_blocked(other)
        check(state == "blocked", f"{what}: waits for A's pair lock ({state})")
        sa, ea = resume(a)
        _, eo = other.communicate(timeout=120)
        ok = sa == 0 and other.returncode == 0
        check(ok, f"{what}: both succeed ({sa} {ea} / {other.returncode} {eo})")
        return d if ok else None

    # 1. Two writers; 2. an onnxz reader meanwhile.
    for argv, what, result in ((["convert", "-f", "B.onnx", "t.onnx"] + ext, "two writers", "t.onnx"),
                               (["convert", "t.onnx", "r.onnx"], "reader", "r.onnx")):
        d = during_commit(len(what), argv, what)
        if d:
            doc, same, vals = which(os.path.join(d, result))
            check(same, f"{what}: model and data from one write (doc {doc}, weights {vals})")

    # 3. A signal between the renames.
    d = fresh(3)
    a = writer_a(d)
    if check(a is not None, "signal: A stops between its renames"):
        sa, ea = resume(a, signal.SIGINT)
        check(sa == -signal.SIGINT, f"signal: A dies of SIGINT ({sa} {ea})")
        doc, same, vals = which(os.path.join(d, "t.onnx"))
        check(same and doc == "A", f"signal: the pair A renamed whole first (doc {doc}, weights {vals})")
        left = [f for f in os.listdir(d) if ".tmp-" in f]
        check(not left, f"signal: no temporary file left ({left})")

    # 4. Issue 12: fewer parts.
    d = fresh(4)
    subprocess.run([exe, "-q", "convert", "-f", "A.onnx", "t.onnx", "--max-file-size", "64K"] + ext,
                   cwd=d, check=True)
    parts = sorted(f for f in os.listdir(d) if f.startswith("t.data"))
    check(len(parts) >= 3, f"fewer parts: the first save has parts {parts}")
    for name in ("t.data.77", "other.bin"):  # not named by the model: never removed
        with open(os.path.join(d, name), "w") as f:
            f.write("keep")
    r = subprocess.run([exe, "-q", "convert", "-f", "B.onnx", "t.onnx"] + ext, cwd=d,
                       capture_output=True)
    left = sorted(f for f in os.listdir(d) if f.startswith("t.data"))
    check(r.returncode == 0 and left == ["t.data", "t.data.77"],
          f"fewer parts: the replaced model's parts removed, others kept ({left})")
    check(os.path.exists(os.path.join(d, "other.bin")), "fewer parts: other files kept")
    doc, same, vals = which(os.path.join(d, "t.onnx"))
    check(same and doc == "B", f"fewer parts: the result is B whole (doc {doc})")
    finish()


if __name__ == "__main__":
    main()
