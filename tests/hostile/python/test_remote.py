"""Servers that misbehave on purpose, as the Python package meets them (spec/security.md
N-2, N-3, N-4, N-6, R-15), served by tests/remote/fault_server.py: no user:password@ in
anything shown (str(e), e.file, File.path, File.info()["file"], for passwords holding '@',
'/', '?' or '#', percent-encoded or not); a server's text (an ETag holding ESC, an OSC
sequence, BEL and U+202E) reaches onnxz.Error quoted, never raw; forked children open
their own connections; Ctrl-C ends a slow read; a dripping server is refused."""
import os
import signal
import subprocess
import sys
import time

import pytest

import onnxz
from onnxz import _onnxz
from conftest import make_model

sys.path.insert(0, os.path.join(os.path.dirname(__file__), os.pardir, os.pardir, "remote"))
from fault_server import Fault, FaultServer  # noqa: E402

pytestmark = pytest.mark.skipif(not _onnxz._http_supported(),
                                reason="this onnxz was built without libcurl")

HOSTILE = '"\x1b]0;owned\x07\x1b[31m' + "\u202e".encode().decode("latin-1") + 'gpj.exe"'
RAW = ("\x1b", "\x07", "\u202e")


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    d = tmp_path_factory.mktemp("served")
    onnxz.save(make_model(n=3, size=64), str(d / "m.onnxz"))
    # tensors past the tail the open keeps (64 KiB): each read is a request
    onnxz.save(make_model(n=8, size=128), str(d / "big.onnxz"))
    with FaultServer() as srv:
        srv.put("m.onnxz", (d / "m.onnxz").read_bytes())
        srv.put("big.onnxz", (d / "big.onnxz").read_bytes())
        yield srv


# Passwords as users write them: plain, with '@', '/', '?', '#' or a blank, percent-encoded
# or not (raw, libcurl refuses the URL, a '/', '?' or '#' ending the authority early and a
# blank ending a URL in a message; its error must not show the password either). Each
# holds "Pw" and "Zq".
PASSWORDS = ["PwZq", "Pw@Zq", "Pw%40Zq", "Pw/Zq", "Pw%2FZq", "Pw?Zq", "Pw%3FZq", "Pw#Zq",
             "Pw%23Zq", "Pw@/?#Zq", "Pw Zq", "Pw\tZq", "Pw%20Zq", "Pw Zq/x", "Pw/ Zq@x"]


def shown(e):
    """What an error shows: its text and the file it names."""
    return str(e) + " " + str(e.filename if isinstance(e, OSError) else e.file)


def test_no_password_in_what_is_shown(server):
    """spec/security.md N-2 through every face: str(e), e.file, File.path, File.info()."""
    server.reset(None)
    url = server.url("m.onnxz")
    for pw in PASSWORDS:
        secret = url.replace("http://", f"http://alice:{pw}@")
        with pytest.raises((onnxz.Error, OSError)) as e:
            onnxz.load(secret.replace("m.onnxz", "gone.onnxz"))
        text = shown(e.value)
        assert not any(s in text for s in ("alice", "Pw", "Zq")), (pw, text)
        if any(c in pw for c in "@/?# \t"):  # raw: not a URL libcurl reads
            with pytest.raises((onnxz.Error, OSError)) as e:
                onnxz.open(secret)
            text = shown(e.value)
            assert not any(s in text for s in ("alice", "Pw", "Zq")), (pw, text)
            continue
        assert e.value.file == url.replace("m.onnxz", "gone.onnxz")
        with onnxz.open(secret) as f:
            assert f.info()["file"] == url and f.path == url, pw
            assert len(f.names) == 3


def test_server_text_is_quoted(server):
    server.reset(Fault("etag", start=1, location=HOSTILE))
    with onnxz.open(server.url("big.onnxz")) as f, pytest.raises(onnxz.Error) as e:
        for name in f.names:
            f[name]
    text = str(e.value)
    assert "changed on the server" in text, text
    assert not any(r in text for r in RAW), repr(text)
    assert "\\x1b" in text, repr(text)
    server.finish()


def python_env(**settings):
    """The environment of a Python these tests start: ours and the settings."""
    return dict(os.environ, **settings)


FORK = """
import os, sys
import onnxz
with onnxz.open(sys.argv[1]) as f:
    want = {n: f[n].tobytes() for n in f.names}  # the pool now holds a connection
    kids = []
    for _ in range(4):
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                code = 0 if all(f[n].tobytes() == want[n] for _ in range(20) for n in want) else 2
            except onnxz.Error as e:
                print(e, flush=True)
            finally:
                os._exit(code)
        kids.append(pid)
    mine = all(f[n].tobytes() == want[n] for _ in range(20) for n in want)
    codes = [os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) for pid in kids]
print(mine, codes)
"""


def test_forked_children_open_their_own_connections(server, tmp_path):
    """spec/remote.md R-6: a child of fork() never reads on its parent's kept-alive
    connections. Four children and the parent read every tensor 20 times at once (in a
    process of their own: fork under pytest's plumbing is not what a user runs); before,
    they shared the parent's pooled connection and read each other's responses ("Received
    HTTP/0.9 when not allowed", wrong bytes)."""
    server.reset(None)
    r = subprocess.run([sys.executable, "-c", FORK, server.url("big.onnxz")],
                       capture_output=True, text=True, timeout=120, env=python_env())
    assert r.stdout.strip().splitlines()[-1:] == ["True [0, 0, 0, 0]"], (r.stdout, r.stderr)


INTERRUPTED = """
import sys, onnxz
try:
    with onnxz.open(sys.argv[1]) as f:
        for n in f.names:
            f[n]
except KeyboardInterrupt:
    print("KeyboardInterrupt", flush=True)
    sys.exit(3)
"""


def test_ctrl_c_during_a_slow_read_raises_keyboard_interrupt(server):
    """spec/security.md N-6: SIGINT while a read waits on a server that drips its body (1
    byte every 0.2 s, within every timeout's reach for 30 s) raises KeyboardInterrupt in
    Python at once; before, the read ran on until the server stopped."""
    server.reset(Fault("drip_body", start=1, interval=0.2))
    env = python_env(ONNXZ_HTTP_TIMEOUT="30", ONNXZ_HTTP_RETRIES="0")
    p = subprocess.Popen([sys.executable, "-c", INTERRUPTED, server.url("big.onnxz")],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    time.sleep(2)  # opened, and the first tensor's read has begun
    sent = time.monotonic()
    p.send_signal(signal.SIGINT)
    try:
        out, err = p.communicate(timeout=20)
    finally:
        p.kill()
        server.finish()
    took = time.monotonic() - sent
    assert p.returncode == 3 and "KeyboardInterrupt" in out, (p.returncode, out, err)
    assert took < 3, took


INTERRUPTED_MANY = """
import sys, numpy as np, onnxz
try:
    with onnxz.open(sys.argv[1]) as f:
        outs = {n: np.empty(f.get_slice(n).shape, f.get_slice(n).dtype) for n in f.names}
        f.read_into_many(outs, num_threads=2)
except KeyboardInterrupt:
    print("KeyboardInterrupt", flush=True)
    sys.exit(3)
"""


def test_ctrl_c_during_a_slow_read_into_many_raises_keyboard_interrupt(server):
    """N-6 for read_into_many (oz_reader_read_many): every tensor asked for at once, the
    server dripping; SIGINT raises KeyboardInterrupt at once, the library asking Python's
    handlers on the calling thread while its connections wait."""
    server.reset(Fault("drip_body", start=1, interval=0.2))
    env = python_env(ONNXZ_HTTP_TIMEOUT="30", ONNXZ_HTTP_RETRIES="0")
    p = subprocess.Popen([sys.executable, "-c", INTERRUPTED_MANY, server.url("big.onnxz")],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    time.sleep(2)  # opened, and the reads have begun
    sent = time.monotonic()
    p.send_signal(signal.SIGINT)
    try:
        out, err = p.communicate(timeout=20)
    finally:
        p.kill()
        server.finish()
    took = time.monotonic() - sent
    assert p.returncode == 3 and "KeyboardInterrupt" in out, (p.returncode, out, err)
    assert took < 3, took


def test_a_dripping_server_is_refused_under_r15(server, monkeypatch):
    """spec/remote.md R-15: a body that drips (1 byte every 0.2 s) is abandoned once it
    falls under the minimum rate over the stall timeout; the error carries the rule."""
    server.reset(Fault("drip_body", start=1, interval=0.2))
    monkeypatch.setenv("ONNXZ_HTTP_TIMEOUT", "2")
    monkeypatch.setenv("ONNXZ_HTTP_RETRIES", "0")
    try:
        with pytest.raises(onnxz.Error) as e:
            with onnxz.open(server.url("big.onnxz")) as f:
                for name in f.names:
                    f[name]
    finally:
        server.finish()
    assert e.value.rule == "R-15" and "too slow" in str(e.value), (e.value.rule, str(e.value))
