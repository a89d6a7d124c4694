#!/usr/bin/python3
"""A location naming a device or a FIFO is refused without being opened
(spec/external-data.md E-18).

    scene_devices.py ONNXZ_EXE SAMPLE_MODEL WORKDIR

A two-file model made by the tool, whose data file is then replaced by
  - a FIFO: a thread of this script blocks in open(FIFO, O_WRONLY), which returns only
    when some process opens the FIFO for reading; it must still be blocked after every
    command ran (and no command may hang);
  - a character device (mknod, numbers 1,3 as /dev/null, which does nothing when
    opened; skipped with a message when mknod is not permitted): under strace, when
    installed, no open of it other than O_PATH may appear.
verify and convert (which load external data) must each exit 1 naming the tensor's file as "not a regular
file", and nothing in the directory may change.
"""

import os
import re
import shutil
import subprocess
import sys
import threading

from scenelib import check, diff, finish, snapshot

COMMANDS = [["verify", "m.onnx"], ["convert", "m.onnx", "out.onnxz"]]
MESSAGE = re.compile(r"^onnxz: error: m\.onnx: .*external data file 'w\.bin' is not a regular file")


def run_all(exe, d, what, prefix=()):
    before = snapshot(d)
    for argv in COMMANDS:
        p = subprocess.run(list(prefix) + [exe] + argv, cwd=d, capture_output=True, timeout=60)
        err = p.stderr.decode("utf-8", "replace").strip().splitlines()
        last = err[-1] if err else ""
        check(p.returncode == 1 and MESSAGE.match(last) is not None,
              f"{what}, {argv[0]}: refused (status {p.returncode}: {last})")
    after = snapshot(d)
    check(before == after, f"{what}: nothing changed [{diff(before, after)}]")


def main():
    exe, sample, work = os.path.abspath(sys.argv[1]), sys.argv[2], sys.argv[3]
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    subprocess.run([exe, "-q", "convert", os.path.abspath(sample), "m.onnx", "--external-data",
                    "w.bin"], cwd=work, check=True)
    os.unlink(os.path.join(work, "w.bin"))

    # A FIFO: would a reader open it, the writer's open returns.
    fifo = os.path.join(work, "w.bin")
    os.mkfifo(fifo)
    opened = threading.Event()

    def writer():
        fd = os.open(fifo, os.O_WRONLY)  # blocks until a reader opens the FIFO
        opened.set()
        os.close(fd)

    t = threading.Thread(target=writer, daemon=True)
    t.start()
    run_all(exe, work, "FIFO")
    check(not opened.is_set(), "FIFO: no command opened it for reading")
    if not opened.is_set():  # release the writer thread: open it ourselves
        os.close(os.open(fifo, os.O_RDONLY | os.O_NONBLOCK))
    t.join(5)
    os.unlink(fifo)

    # A character device.
    try:
        os.mknod(fifo, 0o600 | 0o020000, os.makedev(1, 3))
    except PermissionError as e:
        print(f"skip character device: mknod not permitted ({e})")
        finish()
        return
    run_all(exe, work, "character device")
    strace = shutil.which("strace")
    wrapped = open(exe, "rb").read(2) == b"#!"  # under valgrind: the trace is not ours
    if strace and not wrapped:
        log = os.path.join(work, "strace.log")
        subprocess.run([strace, "-f", "-o", log, "-e", "trace=open,openat,openat2", exe,
                        "verify", "m.onnx"], cwd=work, capture_output=True, timeout=60)
        opens = [line for line in open(log) if "w.bin" in line]
        os.unlink(log)
        check(opens and all("O_PATH" in line for line in opens),
              f"character device: opened only with O_PATH ({[o.strip() for o in opens]})")
    else:
        print("skip the strace check: " + ("no strace" if not strace else "wrapped executable"))
    finish()


if __name__ == "__main__":
    main()
