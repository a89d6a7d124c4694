"""The Python package on s3:// URLs (issue 29), against s3rver behind the SigV4 gate
(tests/remote/s3/README.md): onnxz.load, onnxz.open and onnxz.convert of objects that
Amazon's client (@aws-sdk/client-s3) uploaded give what they give for the local files
(python3-onnx's onnx.load and the onnxz tool are the oracles); the store's refusals raise
onnxz.Error naming the object, never showing a secret; credentials come from AWS_*
variables, from ~/.aws with AWS_PROFILE, or from nowhere (a public bucket).

Run by tests/python/run_pytest.sh with ONNXZ_PYTEST_DIR set to this directory (ctest
remote.s3_python); S3_NODE_MODULES names the npm packages tests/remote/s3/install.sh put.
"""
import os
import re
import subprocess
import sys

import numpy as np
import onnx
from onnx import helper, numpy_helper
import pytest

import onnxz
from conftest import PRELOAD

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir))
import s3_env  # noqa: E402

KEY = "s3 python passphrase"
FORMS = ("m.onnx", "two.onnx", "n.onnx", "m.onnxz")
MAIN, TEMP, EXPIRED = (s3_env.ACCOUNTS[a] for a in ("main", "temp", "expired"))
WRONG = "Wrong/Secret+Key0001abcdefghijklmnopqrstu"
SECRETS = [a["secret"] for a in s3_env.ACCOUNTS.values()] + [
    a["token"] for a in s3_env.ACCOUNTS.values() if "token" in a] + [WRONG]


def _tool():
    return os.environ.get("ONNXZ_TOOL") or "onnxz"


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    """(gate, root): the models of root uploaded by the SDK under models/p/, m.onnxz in
    public-models/p/ and eu-models/p/ too."""
    node_modules = os.environ.get("S3_NODE_MODULES")
    assert node_modules, "S3_NODE_MODULES: the npm packages of tests/remote/s3/install.sh"
    root = tmp_path_factory.mktemp("root")
    rng = np.random.default_rng(3)
    inits = [numpy_helper.from_array(rng.standard_normal((64, 64)).astype(np.float32), f"w{i}")
             for i in range(6)]
    inits.append(numpy_helper.from_array(np.arange(7, dtype=np.int64), "idx"))
    graph = helper.make_graph([helper.make_node("Identity", ["w0"], ["y"])], "g", [],
                                   [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [64, 64])],
                                   inits)
    onnx.save(helper.make_model(graph), str(root / "m.onnx"))
    (root / "key.txt").write_text(KEY)
    for argv in (["convert", "m.onnx", "m.onnxz"],
                 ["convert", "m.onnx", "two.onnx", "--external-data", "two.data"],
                 ["convert", "m.onnx", "n.onnx", "--external-data", "n.data", "--max-file-size", "20000"],
                 ["encrypt", "--key-file", "key.txt", "--iterations", "1000", "m.onnxz", "enc.onnxz"]):
        subprocess.run([_tool(), "-q", *argv], cwd=root, check=True, capture_output=True)
    assert (root / "n.data.1").exists()
    gate = s3_env.Gate(str(tmp_path_factory.mktemp("gate")), node_modules).start()
    try:
        files = sorted(f for f in os.listdir(root) if f != "key.txt")
        ops = [{"op": "put", "bucket": "models", "key": f"p/{f}", "file": str(root / f)} for f in files]
        ops.append({"op": "put", "bucket": "public-models", "key": "p/m.onnxz", "file": str(root / "m.onnxz")})
        # opened by the request-count test alone: a reader remembers recent opens
        ops.append({"op": "put", "bucket": "models", "key": "p/once.onnxz", "file": str(root / "m.onnxz")})
        assert all("error" not in r for r in gate.sdk(ops))
        assert all("error" not in r for r in gate.sdk(
            [{"op": "put", "bucket": "eu-models", "key": "p/m.onnxz", "file": str(root / "m.onnxz")}],
            region="eu-west-1"))
        yield gate, root
    finally:
        gate.stop()


@pytest.fixture
def aws(store, monkeypatch, tmp_path):
    """Sets the environment as a user's would be: set(account, region) puts the account's
    credentials (None: none) in AWS_*, the gate's endpoint in AWS_ENDPOINT_URL_S3, and an
    empty HOME."""
    gate, _ = store

    def set_env(account="main", region=s3_env.REGION, home=None):
        for k in list(os.environ):
            if k.startswith("AWS_"):
                monkeypatch.delenv(k)
        for k, v in gate.env(account, region, base={}).items():
            monkeypatch.setenv(k, v)
        monkeypatch.setenv("HOME", str(home or tmp_path))
        if home:
            monkeypatch.delenv("AWS_SHARED_CREDENTIALS_FILE")
            monkeypatch.delenv("AWS_CONFIG_FILE")
            monkeypatch.delenv("AWS_REGION")

    set_env()
    return set_env


@pytest.mark.parametrize("name", FORMS)
def test_load_equals_onnx_load_of_the_local_file(store, aws, name):
    gate, root = store
    want = onnx.load(str(root / ("m.onnx" if name == "m.onnxz" else name)))
    got = onnxz.load(f"s3://models/p/{name}")
    assert got.SerializeToString() == want.SerializeToString()
    if name != "m.onnxz":  # references kept, as onnx.load(..., load_external_data=False)
        want = onnx.load(str(root / name), load_external_data=False)
        got = onnxz.load(f"s3://models/p/{name}", load_external_data=False)
        assert got.SerializeToString() == want.SerializeToString()


@pytest.mark.parametrize("name", FORMS)
def test_open_gives_the_local_arrays_and_info(store, aws, name):
    gate, root = store
    url = f"s3://models/p/{name}"
    with onnxz.open(url) as f, onnxz.open(str(root / name)) as g:
        assert f.names == g.names and len(f.names) == 7
        for n in g.names:
            a, b = f[n], g[n]
            assert a.dtype == b.dtype and a.shape == b.shape and np.array_equal(a, b)
        assert f.is_archive == g.is_archive == (name == "m.onnxz")
        info = f.info()
        assert info["file"] == url and info["file_size"] == os.path.getsize(root / name)
        f.verify()


def test_open_list_and_one_tensor_in_three_requests(store, aws):
    gate, root = store
    mark = gate.mark()
    with onnxz.open("s3://models/p/once.onnxz") as f:
        names = f.names
        a = f["w3"]
    reqs = gate.requests_since(mark)
    assert 1 <= len(reqs) <= 3, [(r["method"], r["range"]) for r in reqs]
    assert {(r["auth"], r["key_id"]) for r in reqs} == {("sigv4", MAIN["key_id"])}
    assert len(names) == 7 and a.shape == (64, 64)


@pytest.mark.parametrize("name", ("m.onnxz", "two.onnx", "n.onnx"))
def test_convert_writes_the_bytes_of_the_tools_local_convert(store, aws, tmp_path, name):
    gate, root = store
    for suffix in (".onnxz", ".onnx"):
        mine, theirs = tmp_path / f"mine{suffix}", tmp_path / f"theirs{suffix}"
        onnxz.convert(f"s3://models/p/{name}", str(mine))
        subprocess.run([_tool(), "-q", "convert", str(root / name), str(theirs)], check=True,
                       capture_output=True)
        assert mine.read_bytes() == theirs.read_bytes()


def test_an_encrypted_archive_is_refused_at_a_url(store, aws, tmp_path):
    """The library decrypts files on disk only (as for https://): with the right passphrase,
    load, open and convert of the object raise the one-line "download it first" naming it,
    and convert writes nothing; the local file, as a control, loads."""
    gate, root = store
    url = "s3://models/p/enc.onnxz"
    assert len(onnxz.load(str(root / "enc.onnxz"), key=KEY).graph.initializer) == 7
    pattern = r"encrypted.*URL.*download it first"
    _refused(lambda: onnxz.load(url, key=KEY), url, pattern)
    _refused(lambda: onnxz.open(url, key=KEY), url, pattern)
    _refused(lambda: onnxz.convert(url, str(tmp_path / "plain.onnxz"), key=KEY), url, pattern)
    assert not (tmp_path / "plain.onnxz").exists()


def _refused(call, url, pattern):
    with pytest.raises(onnxz.Error) as e:
        call()
    msg = str(e.value)
    assert url in msg and "\n" not in msg.strip()
    assert re.search(pattern, msg, re.I), msg
    assert not any(s in msg for s in SECRETS), msg
    return msg


@pytest.mark.parametrize("case", ("wrong secret", "expired token", "missing key", "missing bucket",
                                  "other region", "no credentials"))
def test_the_stores_refusals_name_the_object_and_no_secret(store, aws, tmp_path, capfd, case):
    url = "s3://models/p/m.onnxz"
    pattern = {"wrong secret": r"SignatureDoesNotMatch", "expired token": r"ExpiredToken|expired",
               "missing key": r"NoSuchKey|no such key", "missing bucket": r"NoSuchBucket|no such bucket",
               "other region": r"region.*eu-west-1", "no credentials": r"AccessDenied|access denied"}[case]
    if case == "wrong secret":
        aws(dict(MAIN, secret=WRONG))
    elif case == "expired token":
        aws("expired")
    elif case == "missing key":
        url = "s3://models/p/nothing.onnxz"
    elif case == "missing bucket":
        url = "s3://no-such-bucket/p/m.onnxz"
    elif case == "other region":
        url = "s3://eu-models/p/m.onnxz"
    else:
        aws(None)
    _refused(lambda: onnxz.load(url), url, pattern)
    _refused(lambda: onnxz.open(url), url, pattern)
    _refused(lambda: onnxz.convert(url, str(tmp_path / "out.onnx")), url, pattern)
    assert not (tmp_path / "out.onnx").exists()
    out, err = capfd.readouterr()
    assert not any(s in out or s in err for s in SECRETS)


def test_credentials_from_the_session_token_the_profile_and_nowhere(store, aws, tmp_path, monkeypatch):
    gate, root = store
    want = onnx.load(str(root / "m.onnx")).SerializeToString()

    def signed_with(url):
        mark = gate.mark()
        assert onnxz.load(url).SerializeToString() == want
        return {(r["auth"], r["key_id"]) for r in gate.requests_since(mark)}

    aws("temp")
    assert signed_with("s3://models/p/m.onnxz") == {("sigv4", TEMP["key_id"])}
    home = tmp_path / "home"
    (home / ".aws").mkdir(parents=True)
    (home / ".aws" / "credentials").write_text(
        f"[default]\naws_access_key_id = {MAIN['key_id']}\naws_secret_access_key = {WRONG}\n\n"
        f"[gate]\naws_access_key_id = {MAIN['key_id']}\naws_secret_access_key = {MAIN['secret']}\n")
    (home / ".aws" / "config").write_text("[default]\nregion = us-east-1\n\n[profile gate]\nregion = eu-west-1\n")
    aws(None, home=home)
    monkeypatch.setenv("AWS_PROFILE", "gate")  # its region, eu-west-1, from ~/.aws/config
    assert signed_with("s3://eu-models/p/m.onnxz") == {("sigv4", MAIN["key_id"])}
    monkeypatch.delenv("AWS_PROFILE")  # the default profile: its secret is wrong
    _refused(lambda: onnxz.load("s3://models/p/m.onnxz"), "s3://models/p/m.onnxz", r"SignatureDoesNotMatch")
    aws(None)
    assert signed_with("s3://public-models/p/m.onnxz") == {("anonymous", "")}


# ---- writing s3:// objects (spec/remote.md R-21) ------------------------------------------

def _object(gate, key, path):
    r = gate.sdk([{"op": "get", "bucket": "models", "key": key, "file": str(path)}])[0]
    return None if "error" in r else path.read_bytes()


def _nothing_left(gate, key):
    r = gate.sdk([{"op": "uploads", "bucket": "models"},
                  {"op": "head", "bucket": "models", "key": key}])
    assert r[0]["uploads"] == []
    assert r[1].get("error") == "NotFound"


def test_an_encrypted_save_to_s3_decrypts_to_the_model(store, aws, tmp_path):
    gate, root = store
    onnxz.convert(str(root / "m.onnx"), "s3://models/pw/c.onnxc", key=KEY)
    enc = _object(gate, "pw/c.onnxc", tmp_path / "c.onnxc")
    assert enc is not None
    back = onnxz.load(str(tmp_path / "c.onnxc"), key=KEY)
    assert back.SerializeToString() == onnx.load(str(root / "m.onnx")).SerializeToString()


def test_save_with_data_files_to_s3(store, aws, tmp_path):
    """onnxz.save with external_data to s3://: the model and data objects are the local
    save's files."""
    gate, root = store
    model = onnx.load(str(root / "m.onnx"))
    onnxz.save(model, str(tmp_path / "two.onnx"), external_data="two.data")
    onnxz.save(model, "s3://models/pw/two.onnx", external_data="two.data")
    for name in ("two.onnx", "two.data"):
        assert _object(gate, f"pw/{name}", tmp_path / "x") == (tmp_path / name).read_bytes()


@pytest.mark.parametrize("suffix", (".onnxz", ".onnx"))
def test_convert_and_save_to_s3_write_the_local_bytes(store, aws, tmp_path, suffix):
    """onnxz.convert and onnxz.save to s3:// (multipart upload): the object Amazon's client
    reads back is the file the tool's local convert (and the local save) writes."""
    gate, root = store
    theirs = tmp_path / f"theirs{suffix}"
    subprocess.run([_tool(), "-q", "convert", str(root / "m.onnx"), str(theirs)], check=True,
                   capture_output=True)
    onnxz.convert(str(root / "m.onnx"), f"s3://models/pw/c{suffix}")
    assert _object(gate, f"pw/c{suffix}", tmp_path / "c") == theirs.read_bytes()
    model = onnx.load(str(root / "m.onnx"))
    onnxz.save(model, str(tmp_path / f"local{suffix}"))
    for _ in range(2):  # a save replaces, as onnx.save does
        onnxz.save(model, f"s3://models/pw/s{suffix}")
    assert _object(gate, f"pw/s{suffix}", tmp_path / "s") == (tmp_path / f"local{suffix}").read_bytes()
    assert gate.sdk([{"op": "uploads", "bucket": "models"}])[0]["uploads"] == []


def test_a_failed_write_leaves_no_upload_and_no_object(store, aws, tmp_path, capfd):
    gate, root = store
    url = "s3://models/pw/wrong.onnxz"
    aws(dict(MAIN, secret=WRONG))
    _refused(lambda: onnxz.convert(str(root / "m.onnx"), url), url, r"SignatureDoesNotMatch")
    aws()
    _nothing_left(gate, "pw/wrong.onnxz")
    out, err = capfd.readouterr()
    assert not any(s in out or s in err for s in SECRETS)


def test_ctrl_c_mid_upload_aborts_it(store, aws, tmp_path):
    """Ctrl-C while a part is in flight (the gate answers parts 3 s late): KeyboardInterrupt,
    AbortMultipartUpload sent, no pending upload and no object."""
    import signal
    import time
    gate, root = store
    key = "pw/ctrl-c.onnxz"
    mark = gate.mark()
    gate.faults({"delay_ms": 3000})
    try:
        env = dict(os.environ, **({"LD_PRELOAD": PRELOAD} if PRELOAD else {}))
        p = subprocess.Popen([sys.executable, "-c", "import onnxz, sys; onnxz.convert(sys.argv[1], sys.argv[2])",
                              str(root / "m.onnx"), f"s3://models/{key}"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and not any(
                r["method"] == "POST" and "uploads" in r["query"]
                for r in gate.requests_since(mark, settle=0, timeout=0)):
            time.sleep(0.1)
        time.sleep(0.5)
        p.send_signal(signal.SIGINT)
        out, err = p.communicate(timeout=60)
    finally:
        gate.faults(None)
    assert p.returncode != 0 and b"KeyboardInterrupt" in err, err
    assert any(r["method"] == "DELETE" and "uploadId" in r["query"] for r in gate.requests_since(mark))
    _nothing_left(gate, key)
