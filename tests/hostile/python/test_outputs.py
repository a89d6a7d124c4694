"""spec/security.md S-41: only a regular file is replaced; `-` is standard output; a FIFO
or a character device is written through; anything else is refused (issue 28, item 2).
Before: `onnxz get -f m.onnxz W1 -o /dev/null` and `onnxz.save(m, "/dev/null",
to="onnx")` replaced the device node with a regular file (a FIFO and a link to
/proc/self/fd/1 likewise), and `-o -` wrote a file named `-`. The machine's own /dev/null
is never touched: the nodes are made here (mknod as root; skipped otherwise)."""
import os
import stat
import subprocess
import sys
import threading

import onnx
import pytest
from conftest import run

import onnxz

W1 = 256 * 256 * 4


def make_null(d):
    """A character device with /dev/null's numbers, or skip."""
    p = d / "null"
    try:
        os.mknod(p, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    except PermissionError as e:
        pytest.skip(f"mknod not permitted ({e})")
    return p


def node(p):
    st = os.lstat(p)
    return stat.S_IFMT(st.st_mode), st.st_rdev


class Reader:
    """Reads a FIFO to its end on a thread (the writer's open returns once it opened)."""

    def __init__(self, path):
        self.data = b""
        self.t = threading.Thread(target=self.run, args=(path,), daemon=True)
        self.t.start()

    def run(self, path):
        with open(path, "rb") as f:
            self.data = f.read()

    def join(self):
        self.t.join(30)
        assert not self.t.is_alive(), "the FIFO's reader never saw its end"
        return self.data


def tool_outputs(tool, archive, out):
    """Every command of the tool that names an output, to out."""
    return [[tool, "get", "-f", "m.onnxz", "W1", "-o", out], [tool, "get", "m.onnxz", "W1",
            "-o", out], [tool, "-q", "convert", "-f", "m.onnxz", out, "--to", "onnx"]]


def test_character_device_written_through(archive, tool):
    d = archive.parent
    null = make_null(d)
    before = node(null)
    for argv in tool_outputs(tool, archive, "null"):
        p = run(argv, cwd=d)
        assert p.returncode == 0, (argv, p.stderr)
        assert node(null) == before, f"{argv}: the device node was replaced"
    m = onnxz.load(str(archive))
    for to in ("onnx", "onnxz"):
        onnxz.save(m, str(null), to=to)
        assert node(null) == before, f"save to={to}: the device node was replaced"
    onnxz.convert(str(archive), str(null), to="onnx")
    assert node(null) == before
    link = d / "link"
    os.symlink("null", link)
    onnxz.save(m, str(link), to="onnx")
    assert node(link)[0] == stat.S_IFLNK and node(null) == before
    assert sorted(os.listdir(d)) == ["link", "m.onnxz", "null"], "no temporary file left"


def test_fifo_written_through(archive, tool):
    d = archive.parent
    fifo = d / "fifo"
    os.mkfifo(fifo)
    want = run([tool, "get", "m.onnxz", "W1"], cwd=d, check=True).stdout
    assert len(want) == W1
    for argv in tool_outputs(tool, archive, "fifo")[:2]:
        r = Reader(fifo)
        p = run(argv, cwd=d)
        assert p.returncode == 0, p.stderr
        assert r.join() == want and stat.S_ISFIFO(os.lstat(fifo).st_mode)
    m = onnxz.load(str(archive))
    r = Reader(fifo)
    onnxz.save(m, str(fifo), to="onnx")
    assert onnx.load_from_string(r.join()).SerializeToString() == m.SerializeToString()
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


def test_dash_is_standard_output(archive, tool):
    d = archive.parent
    want = run([tool, "get", "m.onnxz", "W1"], cwd=d, check=True).stdout
    p = run([tool, "get", "m.onnxz", "W1", "-o", "-"], cwd=d)
    assert p.returncode == 0 and p.stdout == want, p.stderr
    p = run([tool, "convert", "m.onnxz", "-", "--to", "onnx"], cwd=d)
    model = onnx.load_from_string(p.stdout)
    assert p.returncode == 0 and len(model.graph.initializer) == 4, p.stderr
    code = ("import onnxz, sys\nm = onnxz.load('m.onnxz')\nsys.stdout.flush()\n"
            "onnxz.save(m, '-', to='onnx')\n")
    p = subprocess.run([sys.executable, "-c", code], cwd=d, capture_output=True)
    assert p.returncode == 0 and onnx.load_from_string(p.stdout) == model, p.stderr
    assert not os.path.lexists(d / "-"), "a file named '-' was written"


def test_link_to_standard_output(archive, tool):
    """A link to /proc/self/fd/1 (standard output, here a pipe): written through."""
    d = archive.parent
    os.symlink("/proc/self/fd/1", d / "out")
    want = run([tool, "get", "m.onnxz", "W1"], cwd=d, check=True).stdout
    p = run([tool, "get", "-f", "m.onnxz", "W1", "-o", "out"], cwd=d)
    assert p.returncode == 0 and p.stdout == want, p.stderr
    assert os.readlink(d / "out") == "/proc/self/fd/1"


def test_archive_to_a_pipe_refused_before_a_byte(archive, tool):
    d = archive.parent
    p = run([tool, "convert", "m.onnxz", "-", "--to", "onnxz"], cwd=d)
    assert p.returncode == 1 and p.stdout == b"", p.stderr
    assert b"is a pipe" in p.stderr and b"S-41" in p.stderr


def test_block_device_and_socket_refused(archive, tool):
    d = archive.parent
    blk = d / "blk"
    try:
        os.mknod(blk, 0o600 | stat.S_IFBLK, os.makedev(7, 255))  # a loop device number
    except PermissionError as e:
        pytest.skip(f"mknod not permitted ({e})")
    before = node(blk)
    for argv in tool_outputs(tool, archive, "blk"):
        p = run(argv, cwd=d)
        assert p.returncode == 1 and b"S-41" in p.stderr, (argv, p.stderr)
    with pytest.raises(onnxz.Error, match="S-41"):
        onnxz.save(onnxz.load(str(archive)), str(blk), to="onnx")
    assert node(blk) == before


def test_dash_carries_only_the_data(archive, tool):
    """`-` as OUT: standard output holds the file's bytes and nothing else (no "IN -> OUT"
    status line after them), for every command that writes a file there."""
    d = archive.parent
    (d / "key").write_bytes(b"a passphrase\n")
    run([tool, "-q", "stub", "m.onnxz", "s.onnx"], cwd=d, check=True)
    p = run([tool, "stub", "m.onnxz", "-"], cwd=d)
    assert p.returncode == 0 and p.stdout == (d / "s.onnx").read_bytes(), p.stderr
    run([tool, "-q", "encrypt", "--key-file", "key", "m.onnxz", "e.enc"], cwd=d, check=True)
    p = run([tool, "decrypt", "--key-file", "key", "e.enc", "-"], cwd=d)
    assert p.returncode == 0 and p.stdout == archive.read_bytes(), p.stderr
    p = run([tool, "encrypt", "--key-file", "key", "m.onnxz", "-"], cwd=d)
    assert p.returncode == 0 and p.stdout[:8] == (d / "e.enc").read_bytes()[:8], p.stderr
    assert len(p.stdout) == (d / "e.enc").stat().st_size, "bytes after the encrypted file"


def test_link_to_a_socket_refused(archive, tool):
    """A link to a socket is refused as the socket is, never replaced by a regular file."""
    import socket
    d = archive.parent
    s = socket.socket(socket.AF_UNIX)
    s.bind(str(d / "sock"))
    os.symlink("sock", d / "lsock")
    try:
        for argv in tool_outputs(tool, archive, "lsock"):
            p = run(argv, cwd=d)
            assert p.returncode == 1 and b"S-41" in p.stderr, (argv, p.stderr)
            assert os.readlink(d / "lsock") == "sock", f"{argv}: the link was replaced"
        with pytest.raises(onnxz.Error, match="S-41"):
            onnxz.save(onnxz.load(str(archive)), str(d / "lsock"), to="onnx")
        assert os.readlink(d / "lsock") == "sock"
    finally:
        s.close()


def test_archive_to_a_fifo_refused_before_it_is_opened(archive, tool):
    """A FIFO with no reader as an archive's output: refused at once, by the tool and by
    Python (before: the open waited for a reader that never came)."""
    d = archive.parent
    os.mkfifo(d / "fifo")
    p = run([tool, "convert", "-f", "m.onnxz", "fifo", "--to", "onnxz"], cwd=d, timeout=20)
    assert p.returncode == 1 and b"fifo: is a pipe" in p.stderr and b"S-41" in p.stderr, p.stderr
    code = ("import onnxz\ntry:\n    onnxz.save(onnxz.load('m.onnxz'), 'fifo', to='onnxz')\n"
            "except onnxz.Error as e:\n    print(e)\n")
    p = subprocess.run([sys.executable, "-c", code], cwd=d, capture_output=True, timeout=20)
    assert p.returncode == 0 and b"is a pipe" in p.stdout and b"S-41" in p.stdout, p
    assert stat.S_ISFIFO(os.lstat(d / "fifo").st_mode)


def test_a_data_file_is_never_standard_output_nor_a_stream(archive, tool):
    """A data file is named by its model: `--external-data -` and a data file that is a
    FIFO or a device are refused (before: a location named '-' was written to standard
    output, and a FIFO was written through, so the model named a pipe)."""
    d = archive.parent
    p = run([tool, "convert", "m.onnxz", "two.onnx", "--external-data", "-"], cwd=d)
    assert p.returncode == 1 and b"standard output cannot be a data file" in p.stderr, p.stderr
    assert p.stdout == b"" and not os.path.lexists(d / "two.onnx")
    m = onnxz.load(str(archive))
    with pytest.raises(onnxz.Error, match="standard output cannot be a data file"):
        onnxz.save(m, str(d / "two.onnx"), external_data="-")
    os.mkfifo(d / "data.fifo")
    p = run([tool, "convert", "-f", "m.onnxz", "two.onnx", "--external-data", "data.fifo"],
            cwd=d, timeout=20)
    assert p.returncode == 1 and b"must be one" in p.stderr and b"S-41" in p.stderr, p.stderr
    assert not os.path.lexists(d / "two.onnx") and stat.S_ISFIFO(os.lstat(d / "data.fifo").st_mode)


def test_unpack_to_dash_refused(archive, tool):
    """`unpack X -`: standard output is no directory (before: a directory named '-')."""
    d = archive.parent
    p = run([tool, "unpack", "m.onnxz", "-"], cwd=d)
    assert p.returncode == 2 and b"standard output cannot be a directory" in p.stderr, p.stderr
    assert not os.path.lexists(d / "-")


def test_unpack_never_writes_through(archive, tool):
    """unpack -f into a directory where an entry's name is a FIFO: refused, the FIFO kept
    (a model's data files are files; before: written through, or blocked for a reader)."""
    d = archive.parent
    os.mkdir(d / "out")
    os.mkfifo(d / "out" / "W1")
    p = run([tool, "unpack", "-f", "m.onnxz", "out"], cwd=d, timeout=20)
    assert p.returncode == 1 and b"S-41" in p.stderr, p.stderr
    assert stat.S_ISFIFO(os.lstat(d / "out" / "W1").st_mode)


def test_refused_output_is_the_file_named(archive, tool):
    """An output refused (S-41) is the file its error line names, in every command that
    writes one: before, encrypt and decrypt named IN ("onnxz: error: m.onnxz: sock is not
    a regular file ...")."""
    import socket
    d = archive.parent
    (d / "key").write_bytes(b"a passphrase\n")
    run([tool, "-q", "encrypt", "--key-file", "key", "--iterations", "1000", "m.onnxz", "e.enc"],
        cwd=d, check=True)
    s = socket.socket(socket.AF_UNIX)
    s.bind(str(d / "sock"))
    try:
        crypt = [[tool, "encrypt", "-f", "--key-file", "key", "--iterations", "1000", "m.onnxz",
                  "sock"], [tool, "decrypt", "-f", "--key-file", "key", "e.enc", "sock"]]
        for argv in tool_outputs(tool, archive, "sock") + crypt:
            p = run(argv, cwd=d)
            assert p.returncode == 1 and p.stderr.startswith(b"onnxz: error: sock: ") \
                and b"S-41" in p.stderr, (argv, p.stderr)
    finally:
        s.close()



class Interrupted(Exception):
    """What the test's SIGINT handler raises (KeyboardInterrupt would end pytest)."""


def test_interrupted_fifo_output_raises_the_handlers_exception(archive):
    """Ctrl-C while a save waits for a FIFO's reader raises what the SIGINT handler raises
    (KeyboardInterrupt by default), as Python's own calls do (PEP 475): before,
    InterruptedError ("cannot open: Interrupted system call"), which an `except OSError`
    took for a file that could not be written."""
    import signal

    def interrupted(signum, frame):
        raise Interrupted()

    fifo = archive.parent / "fifo"
    os.mkfifo(fifo)
    m = onnxz.load(str(archive))
    old = signal.signal(signal.SIGINT, interrupted)
    timer = threading.Timer(0.3, os.kill, (os.getpid(), signal.SIGINT))
    timer.start()
    try:
        with pytest.raises(Interrupted):
            onnxz.save(m, str(fifo), to="onnx")
    finally:
        timer.cancel()
        signal.signal(signal.SIGINT, old)
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
