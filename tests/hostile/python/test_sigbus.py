"""spec/security.md S-42: a file cut or rewritten in place under an open File's arrays
raises onnxz.Error; it never kills Python with SIGBUS (issue 28, item 3). Before: the
child below died of SIGBUS (exit status -7) at its first touch of the array. A file
replaced by a rename keeps working as before: the arrays keep the old file's bytes."""
import os
import shutil
import signal
import subprocess
import sys

import onnx
import pytest
from conftest import make_model, run

# The child opens the file, takes an array, lets the parent change the file (it waits for
# a line on stdin), then touches the array; it reports what it got on stdout.
CHILD = r"""
import sys, numpy as np, onnxz
f = onnxz.open(sys.argv[1])
a = f["W3"]
b = np.array(f["W2"])  # a copy: untouched by what happens to the file
print("ready", flush=True)
sys.stdin.readline()
try:
    total = float(a.sum())
    print("sum", total, flush=True)
    print("copy", float(b.sum()), flush=True)
except onnxz.Error as e:
    print("error", e, flush=True)
    sys.exit(3)
print("done", flush=True)
"""


def child_after(path, change):
    p = subprocess.Popen([sys.executable, "-c", CHILD, str(path)], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert p.stdout.readline() == b"ready\n"
    change()
    out, err = p.communicate(b"go\n", timeout=60)
    return p.returncode, out.decode(), err.decode()


@pytest.fixture(params=["archive", "onnx"])
def model_file(request, tmp_path, tool):
    onnx.save(make_model(), str(tmp_path / "m.onnx"))
    if request.param == "onnx":
        return tmp_path / "m.onnx"
    run([tool, "-q", "convert", "m.onnx", "m.onnxz"], cwd=tmp_path, check=True)
    return tmp_path / "m.onnxz"


def small_copy(path, tmp_path):
    """A smaller file of the same form, to copy over path in place."""
    onnx.save(make_model(n=1, size=4), str(tmp_path / "small.onnx"))
    if path.suffix == ".onnxz":
        run([os.environ["ONNXZ_TOOL"], "-q", "convert", "small.onnx", "small.onnxz"],
            cwd=tmp_path, check=True)
        return tmp_path / "small.onnxz"
    return tmp_path / "small.onnx"


@pytest.mark.parametrize("how", ["truncate", "cp"])
def test_cut_in_place_raises(model_file, tmp_path, how):
    if how == "truncate":
        code, out, err = child_after(model_file, lambda: os.truncate(model_file, 100))
    else:
        small = small_copy(model_file, tmp_path)
        code, out, err = child_after(
            model_file, lambda: subprocess.run(["cp", str(small), str(model_file)], check=True))
    assert code != -signal.SIGBUS, f"killed by SIGBUS: {err}"
    assert code == 3, (code, out, err)
    assert "error " in out and "(S-42)" in out and str(model_file) in out, out


def test_rename_over_keeps_working(model_file, tmp_path):
    small = small_copy(model_file, tmp_path)
    code, out, err = child_after(model_file, lambda: shutil.move(str(small), str(model_file)))
    assert code == 0, (code, out, err)
    assert f"sum {3.5 * 256 * 256}" in out and f"copy {2.5 * 256 * 256}" in out, out


def test_other_faults_still_kill(tmp_path):
    """Faults outside the package's mappings keep their default action."""
    code = ("import mmap, os, sys, onnxz\n"
            "open(sys.argv[1], 'wb').write(b'x' * 8192)\n"
            "f = open(sys.argv[1], 'rb'); m = mmap.mmap(f.fileno(), 8192, prot=mmap.PROT_READ)\n"
            "onnxz.open(sys.argv[2]).names\n"
            "os.truncate(sys.argv[1], 0); m[5000]\n")
    onnx.save(make_model(n=1, size=4), str(tmp_path / "m.onnx"))
    p = subprocess.run([sys.executable, "-c", code, str(tmp_path / "x"),
                        str(tmp_path / "m.onnx")], capture_output=True)
    assert p.returncode == -signal.SIGBUS, (p.returncode, p.stderr)
