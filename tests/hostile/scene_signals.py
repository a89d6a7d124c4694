#!/usr/bin/python3
"""Interrupted by a signal, nothing left behind (spec/security.md,
"Signals", S-1..S-3).

    scene_signals.py ONNXZ_EXE SAMPLE_MODEL WORKDIR

Every writing command (convert to each form, unpack, encrypt, decrypt, stub, meta on a
.onnx) is stopped in the middle of its save, with its temporary file(s) on disk
(ONNXZ_TEST_STOP), then sent SIGINT, SIGTERM or SIGHUP and continued. Each must die of
that signal (the parent sees it), leave no temporary file and, for unpack, no part of the
directory it created, and leave the previous target byte for byte as it was. A control
run of each, continued without a signal, must succeed: the stop is in the middle of a
real save. Encryption scenes are skipped when ONNXZ_HAVE_OPENSSL=0; with
ONNXZ_TEST_REDUCED=1 each scene is tried with one of the three signals, in turn.
"""

import os
import shutil
import signal
import sys

from scenelib import check, diff, finish, resume, snapshot, start_stopped

SIGNALS = [signal.SIGINT, signal.SIGTERM, signal.SIGHUP]


def main():
    exe, sample, work = sys.argv[1], sys.argv[2], sys.argv[3]
    exe = os.path.abspath(exe)
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    base = os.path.join(work, "base")
    os.makedirs(base)
    shutil.copy(sample, os.path.join(base, "m.onnx"))
    env = dict(os.environ, ONNXZ_KEY="correct horse")
    env.pop("ONNXZ_TEST_STOP", None)
    ssl = os.environ.get("ONNXZ_HAVE_OPENSSL", "1") != "0"

    def prepare(d):
        """The inputs every scene may use, made once by the tool itself."""
        import subprocess
        for args in (["convert", "m.onnx", "m.onnxz"],
                     ["convert", "m.onnx", "old.onnx", "--external-data", "old.data"],
                     ["convert", "m.onnx", "old.onnxz"]):
            subprocess.run([exe, "-q"] + args, cwd=d, env=env, check=True)
        if ssl:
            subprocess.run([exe, "-q", "encrypt", "m.onnx", "m.onnxzec", "--iterations", "1000"],
                           cwd=d, env=env, check=True)
        with open(os.path.join(d, "target"), "wb") as f:
            f.write(b"the previous target, which an interrupted save must not touch\n")

    prepare(base)
    # (name, argv after exe, stop point). Each replaces `target` (or writes a new DIR)
    # and is stopped once its temporary file exists (atomic-opened: the Nth temporary).
    scenes = [
        ("convert to .onnxz", ["convert", "-f", "--to", "onnxz", "m.onnx", "target"], "atomic-opened"),
        ("convert to .onnx", ["convert", "-f", "--to", "onnx", "m.onnxz", "target"], "atomic-opened"),
        ("convert to two files", ["convert", "-f", "--to", "onnx", "m.onnx", "target", "--external-data",
                                  "target.data"], "atomic-opened:2"),
        ("convert to N files", ["convert", "-f", "--to", "onnx", "m.onnx", "target", "--external-data",
                                "target.data", "--max-file-size", "64K"], "atomic-opened:4"),
        ("stub", ["stub", "-f", "old.onnxz", "target"], "atomic-opened"),
        ("meta on .onnx", ["meta", "target.onnx", "--set", "k=v"], "atomic-opened"),
        ("unpack (new DIR)", ["unpack", "m.onnxz", "outdir"], "atomic-renamed:3"),
        ("unpack into an empty DIR", ["unpack", "m.onnxz", "emptydir"], "atomic-renamed:3"),
    ]
    if ssl:
        scenes += [
            ("encrypt", ["encrypt", "-f", "m.onnx", "target", "--iterations", "1000"],
             "atomic-opened"),
            ("decrypt", ["decrypt", "-f", "m.onnxzec", "target"], "atomic-opened"),
        ]
    n = 0
    reduced = os.environ.get("ONNXZ_TEST_REDUCED") == "1"
    for i, (name, argv, point) in enumerate(scenes):
        # Reduced (valgrind): each scene with one of the signals, in turn.
        for sig in [None] + ([SIGNALS[i % len(SIGNALS)]] if reduced else SIGNALS):
            n += 1
            d = os.path.join(work, f"s{n}")
            shutil.copytree(base, d, symlinks=True)
            if argv[0] == "meta":
                shutil.copy(os.path.join(d, "m.onnx"), os.path.join(d, "target.onnx"))
            if "emptydir" in argv:
                os.mkdir(os.path.join(d, "emptydir"))
            before = snapshot(d)
            what = f"{name}, {'no signal' if sig is None else signal.Signals(sig).name}"
            p = start_stopped([exe, "-q"] + argv, point, d, env)
            if p is None:
                check(False, f"{what}: stops at {point}")
                continue
            new = sorted(set(snapshot(d)) - set(before))
            check(any(".tmp-" in k for k in new) or (argv[0] == "unpack" and len(new) >= 2),
                  f"{what}: written in part at the stop ({new})")
            status, err = resume(p, sig)
            after = snapshot(d)
            if sig is None:
                check(status == 0, f"{what}: completes (status {status}) {err.strip()}")
                check(not any(".tmp-" in k for k in after), f"{what}: no temporary left")
            else:
                check(status == -sig, f"{what}: dies of the signal (status {status}) {err.strip()}")
                check(after == before, f"{what}: nothing changed [{diff(before, after)}]")
            shutil.rmtree(d)
    finish()


if __name__ == "__main__":
    main()
