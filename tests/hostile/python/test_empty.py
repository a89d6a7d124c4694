"""spec/security.md S-44: a regular file of size 0 is empty whatever reading it gives
(issue 28, item 9). Before: `onnxz convert /proc/self/mem out.onnx` (reads fail) and a
/proc file shorter than the detection window (/proc/sys/kernel/ostype) exited 0 with an
empty model written."""
import os

import pytest
from conftest import run, snapshot

import onnxz

FILES = ["/proc/self/mem", "/proc/sys/kernel/ostype", "/proc/self/status", "empty.onnx"]


@pytest.mark.parametrize("path", FILES)
def test_empty_everywhere(tmp_path, tool, path, monkeypatch):
    (tmp_path / "empty.onnx").write_bytes(b"")
    if not os.path.exists(path if os.path.isabs(path) else tmp_path / path):
        pytest.skip(f"{path} is not here")
    msg = f"{path}: empty file, not an ONNX model"
    before = snapshot(tmp_path)
    for argv in (["convert", path, "out.onnx"], ["convert", path, "out.onnxz"], ["info", path],
                 ["verify", path]):
        p = run([tool] + argv, cwd=tmp_path)
        assert p.returncode == 1 and p.stderr.decode().strip().endswith(msg), (argv, p.stderr)
    monkeypatch.chdir(tmp_path)
    for call in (lambda: onnxz.load(path), lambda: onnxz.open(path).names,
                 lambda: onnxz.open(path).model, lambda: onnxz.convert(path, "o.onnx")):
        with pytest.raises(onnxz.Error, match=msg):
            call()
    assert snapshot(tmp_path) == before
