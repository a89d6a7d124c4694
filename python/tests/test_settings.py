"""AWS's and the hub's settings files (spec/remote.md R-20) as the package reads them:
only for a call on an s3:// or hf:// URL, never blocking on a FIFO (which would hang the
call with the GIL held), refused with onnxz.Error naming the file and why. Each case runs
in a child interpreter with a timeout, so that a hang fails instead of stalling the suite."""
import os
import subprocess
import sys

import onnx

from conftest import PRELOAD, make_model

CHILD = r"""
import sys, onnxz
src, out = sys.argv[1], sys.argv[2]
r = onnxz.open(src)
assert sorted(r.keys()), "no tensors"
onnxz.load(src)
onnxz.convert(src, out)
for url in ("s3://bkt/m.onnx", "hf://org/repo/m.onnx"):
    try:
        onnxz.open(url)
    except onnxz.Error as e:
        print(url, str(e))
    else:
        print(url, "opened")
"""


def run_child(tmp_path, extra):
    src = tmp_path / "m.onnx"
    onnx.save(make_model(n_weights=2, size=16), str(src))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "HF_", "HUGGING"))}
    env.update(HOME=str(tmp_path / "nohome"), AWS_ENDPOINT_URL_S3="http://127.0.0.1:9",
               HF_ENDPOINT="http://127.0.0.1:9", ONNXZ_HTTP_RETRIES="0", **extra)
    if PRELOAD:
        env["LD_PRELOAD"] = PRELOAD
    p = subprocess.run([sys.executable, "-c", CHILD, str(src), str(tmp_path / "out.onnxz")],
                       capture_output=True, text=True, env=env, timeout=60)
    assert p.returncode == 0, p.stderr
    return dict(line.split(" ", 1) for line in p.stdout.splitlines())


def test_a_fifo_as_settings_file_touches_no_local_call(tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    got = run_child(tmp_path, {"AWS_SHARED_CREDENTIALS_FILE": str(fifo), "HF_TOKEN_PATH": str(fifo)})
    want = f"{fifo}: cannot read the AWS shared credentials file: not a regular file"
    assert want in got["s3://bkt/m.onnx"]
    assert f"{fifo}: cannot read the hub's token file: not a regular file" in got["hf://org/repo/m.onnx"]


def test_a_directory_as_config_and_a_missing_profile(tmp_path):
    (tmp_path / "dir").mkdir()
    got = run_child(tmp_path, {"AWS_CONFIG_FILE": str(tmp_path / "dir"), "AWS_PROFILE": "typo"})
    assert "the AWS config file: not a regular file" in got["s3://bkt/m.onnx"]
    got = run_child(tmp_path, {"AWS_PROFILE": "typo"})
    assert "AWS_PROFILE: no profile 'typo' in " in got["s3://bkt/m.onnx"]


def test_hf_token_with_a_trailing_newline_is_a_token(tmp_path):
    got = run_child(tmp_path, {"HF_TOKEN": "hf_abc\n"})
    assert "HF_TOKEN" not in got["hf://org/repo/m.onnx"]  # refused by the closed port, not the token
