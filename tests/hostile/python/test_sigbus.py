"""spec/security.md S-42: a file cut or rewritten in place under an open File's arrays
raises onnxz.Error; it never kills Python with SIGBUS (issue 28, item 3). Before: the
child below died of SIGBUS (exit status -7) at its first touch of the array. A file
replaced by a rename keeps working as before: the arrays keep the old file's bytes.
Then the holes an attack on the first handler found, each of which killed the child: a
data file of a two-file or N-file .onnx cut, the first of 70 open archives cut, a cut
when no descriptor is free (the handler read /proc/self/maps), and a cut while
onnxz.load parses the file."""
import glob
import os
import shutil
import signal
import subprocess
import sys

import onnx
import onnxz
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


def child_after(path, change, child=CHILD, args=()):
    p = subprocess.Popen([sys.executable, "-c", child, str(path), *map(str, args)],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
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


@pytest.mark.parametrize("split", [None, 300000])
def test_data_file_cut_raises(tmp_path, split):
    """A two-file .onnx (split None) or an N-file one (a data file per tensor): the arrays
    lie in the data files' mappings, watched as the model's is."""
    path = tmp_path / "two.onnx"
    if split is None:
        onnxz.save(make_model(), str(path), external_data="two.data")
    else:
        onnxz.save(make_model(), str(path), external_data="two.data", max_file_size=split)
    data = sorted(glob.glob(str(tmp_path / "two.data*")))
    assert len(data) == (1 if split is None else 4), data  # N files: one per tensor

    def cut():
        for d in data:
            os.truncate(d, 0)
    code, out, err = child_after(path, cut)
    assert code != -signal.SIGBUS, f"killed by SIGBUS: {err}"
    assert code == 3, (code, out, err)
    assert "error " in out and "(S-42)" in out and "two.data" in out, out


# The child opens every file named, keeps an array of each (the Files dropped: the arrays
# alone keep the mappings), then touches the first one's after the parent's change. With
# "nofile", it first takes every free descriptor, as a server at its limit may have.
MANY = r"""
import gc, os, resource, sys, numpy as np, onnxz
arrays = [onnxz.open(p)["W3"] for p in sys.argv[1:] if p != "nofile"]
gc.collect()
held = []
if "nofile" in sys.argv:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(soft, 512), hard))
    try:
        while True:
            held.append(os.open(os.devnull, os.O_RDONLY))
    except OSError:
        pass
print("ready", flush=True)
sys.stdin.readline()
try:
    print("sum", float(arrays[0].sum()), flush=True)
except onnxz.Error as e:
    print("error", e, flush=True)
    sys.exit(3)
"""


def test_first_of_many_archives_cut_raises(archive, tmp_path):
    """70 archives open: the first is watched as long as its array lives, not forgotten
    for newer ones (the handler remembered 64 files, the oldest dropped first)."""
    paths = []
    for i in range(70):
        paths.append(tmp_path / f"a{i}.onnxz")
        shutil.copy(archive, paths[-1])
    code, out, err = child_after(paths[0], lambda: os.truncate(paths[0], 100), MANY, paths[1:])
    assert code != -signal.SIGBUS, f"killed by SIGBUS: {err}"
    assert code == 3, (code, out, err)
    assert "(S-42)" in out and str(paths[0]) in out, out


def test_cut_without_free_descriptor_raises(archive):
    """No descriptor free (RLIMIT_NOFILE reached): the handler opens nothing."""
    code, out, err = child_after(archive, lambda: os.truncate(archive, 100), MANY, ["nofile"])
    assert code != -signal.SIGBUS, f"killed by SIGBUS: {err}"
    assert code == 3, (code, out, err)
    assert "(S-42)" in out and str(archive) in out, out


# The child loads the file, having arranged for it to be cut once onnxz.load has mapped it
# and before protobuf and onnxz's check read it (the Python layer's own mapping of a plain
# .onnx, read on two threads).
LOAD_CUT = r"""
import os, sys, onnxz
parse = onnxz._parse_checked
def cut_then_parse(view, name, budget):
    os.truncate(sys.argv[1], 100)
    return parse(view, name, budget)
onnxz._parse_checked = cut_then_parse
try:
    onnxz.load(sys.argv[1])
except onnxz.Error as e:
    print("error", e, flush=True)
    sys.exit(3)
print("loaded", flush=True)
"""


def test_cut_during_load_raises(tmp_path):
    path = tmp_path / "m.onnx"
    onnx.save(make_model(), str(path))
    p = run([sys.executable, "-c", LOAD_CUT, str(path)])
    out, err = p.stdout.decode(), p.stderr.decode()
    assert p.returncode != -signal.SIGBUS, f"killed by SIGBUS: {err}"
    assert p.returncode == 3, (p.returncode, out, err)
    assert "(S-42)" in out and str(path) in out, out


def test_cut_during_library_load_raises(tmp_path):
    """A two-file .onnx is loaded by the library (decoded in its mapping, the GIL
    released): the .onnx cut once mapped (test point file-mapped), the decode reads zeros
    and the load raises the cut, not what the zeros made."""
    path = tmp_path / "two.onnx"
    model = make_model()
    onnx.save(model, str(path), save_as_external_data=True, location="two.data",
              size_threshold=0)
    env = dict(os.environ, ONNXZ_TEST_STOP="file-mapped")
    code = "import sys, onnxz\ntry:\n    onnxz.load(sys.argv[1])\nexcept onnxz.Error as e:\n" \
           "    print('error', e, flush=True)\n    sys.exit(3)\nprint('loaded')\n"
    p = subprocess.Popen([sys.executable, "-c", code, str(path)], env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    _, status = os.waitpid(p.pid, os.WUNTRACED)
    assert os.WIFSTOPPED(status), status
    os.truncate(path, 0)
    os.truncate(tmp_path / "two.data", 0)
    os.kill(p.pid, signal.SIGCONT)
    out, err = (b.decode() for b in p.communicate(timeout=60))
    assert p.returncode != -signal.SIGBUS, f"killed by SIGBUS: {err}"
    assert p.returncode == 3, (p.returncode, out, err)
    assert "(S-42)" in out and "two." in out, out


# The races a review found in the handler's table and in how it tells the main thread,
# each of which could kill or hang a process or mend the wrong memory; and the calls of an
# open File that read mapped bytes, whose cut came out at the next statement after the
# call returned (from zeros) instead of from the call. The child makes the call in a
# thread of its own: a cut the call does not raise goes to the main thread, which dies of
# it at the join (exit 1, no line printed).
CALL_CUT = r"""
import os, sys, threading, onnxz
path, call = sys.argv[1], sys.argv[2]
f = onnxz.open(path)
if call != "verify":  # verify: the parent cuts the file while verify has it mapped
    os.truncate(path, 0)
calls = {"tensor": lambda: f["W3"], "info": f.info, "names": lambda: f.names,
         "verify": f.verify}
got = []
def work():
    try:
        calls[call]()
        got.append("returned")
    except onnxz.Error as e:
        got.append(f"raised {e}")
t = threading.Thread(target=work)
t.start()
t.join()
print(got[0], flush=True)
"""


@pytest.mark.parametrize("call", ["tensor", "info", "names"])
def test_cut_raised_by_the_call(tmp_path, call):
    """A plain .onnx is decoded in its mapping: names, fields and tensors read it."""
    path = tmp_path / "m.onnx"
    onnx.save(make_model(), str(path))
    p = run([sys.executable, "-c", CALL_CUT, str(path), call])
    out, err = p.stdout.decode(), p.stderr.decode()
    assert p.returncode == 0, (p.returncode, out, err)
    assert out.startswith("raised ") and "(S-42)" in out and str(path) in out, out


def test_cut_during_verify_raised_by_it(tmp_path):
    """verify() maps the .onnx again (the second pass at the test point file-mapped, the
    first being open's): cut then, its decode reads zeros and verify raises the cut."""
    path = tmp_path / "m.onnx"
    onnx.save(make_model(), str(path))
    env = dict(os.environ, ONNXZ_TEST_STOP="file-mapped:2")
    p = subprocess.Popen([sys.executable, "-c", CALL_CUT, str(path), "verify"], env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    _, status = os.waitpid(p.pid, os.WUNTRACED)
    assert os.WIFSTOPPED(status), status
    os.truncate(path, 0)
    os.kill(p.pid, signal.SIGCONT)
    out, err = (b.decode() for b in p.communicate(timeout=60))
    assert p.returncode == 0, (p.returncode, out, err)
    assert out.startswith("raised ") and "(S-42)" in out and str(path) in out, out


# The child forks again and again while a thread of it opens and closes files (each open
# adds a mapping to the handler's table, each close drops it): each grandchild opens the
# file and reads a tensor. A lock in the table, taken by the thread at the fork, stayed
# taken in the grandchild, whose open then waited forever.
FORKS = r"""
import os, sys, threading, onnxz
path, forks = sys.argv[1], int(sys.argv[2])
stop = []
def churn():
    while not stop:
        with onnxz.open(path) as f:
            f["W3"]
t = threading.Thread(target=churn)
t.start()
for i in range(forks):
    pid = os.fork()
    if pid == 0:
        try:
            with onnxz.open(path) as f:
                os._exit(0 if float(f["W2"].sum()) == 2.5 * 256 * 256 else 1)
        except BaseException:
            os._exit(2)
    _, status = os.waitpid(pid, 0)
    if status:
        print("child", i, "status", status, flush=True)
        break
stop.append(1)
t.join()
print("forked", i + 1, flush=True)
"""


def test_fork_while_files_open_and_close(model_file):
    p = run([sys.executable, "-c", FORKS, str(model_file), "150"], timeout=300)
    out, err = p.stdout.decode(), p.stderr.decode()
    assert p.returncode == 0, (p.returncode, out, err)
    assert out == "forked 150\n", (out, err)


# Threads claim and free slots of the table (each holds two dozen files open at once, so
# the table grows while handlers read it) while others fault in their own scopes (a
# tensor read of a file cut under it: raised by that read, naming that file) and the
# main thread faults outside any scope (an array touched after its file was cut: raised
# at its next bytecode). A handler that read a slot being reused (the kind of one
# mapping, the range of another) could mend the wrong memory or report to the wrong
# place; a fault reported to the main thread by mistake kills the child outside its try.
STRESS = r"""
import os, shutil, sys, threading, onnxz
src, d, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3])
bad = []
def churn(k):
    for i in range(rounds):
        files = [onnxz.open(src) for _ in range(24)]
        for f in files:
            if float(f["W3"][0, 0]) != 3.5:
                bad.append(("read", k, i))
            f.close()
def cut_in_scope(k):
    p = os.path.join(d, f"cut{k}.onnx")
    for i in range(rounds):
        shutil.copy(src, p)
        with onnxz.open(p) as f:
            os.truncate(p, 0)
            try:
                f["W3"]
                bad.append(("returned", k, i))
            except onnxz.Error as e:
                if "(S-42)" not in str(e) or p not in str(e):
                    bad.append(("error", k, i, str(e)))
threads = [threading.Thread(target=churn, args=(k,)) for k in range(3)]
threads += [threading.Thread(target=cut_in_scope, args=(k,)) for k in range(3)]
for t in threads:
    t.start()
main = os.path.join(d, "main.onnx")
raised = 0
for i in range(rounds):
    shutil.copy(src, main)
    f = onnxz.open(main)
    a = f["W3"]
    os.truncate(main, 0)
    try:
        a.sum()
        for _ in range(3):
            pass
    except onnxz.Error as e:
        raised += "(S-42)" in str(e) and main in str(e)
    del a
    f.close()
for t in threads:
    t.join()
print("bad", bad, "raised", raised, flush=True)
"""


def test_faults_while_threads_map_and_unmap(tmp_path):
    src = tmp_path / "m.onnx"
    onnx.save(make_model(), str(src))
    rounds = 25
    p = run([sys.executable, "-c", STRESS, str(src), str(tmp_path), str(rounds)], timeout=600)
    out, err = p.stdout.decode(), p.stderr.decode()
    assert p.returncode == 0, (p.returncode, out, err)
    assert out == f"bad [] raised {rounds}\n", (out, err)


# The child takes an array, the file (or the data file) is cut, an array's touch raises
# the cut; then it makes each call of the same File and prints what each gave. The cut
# part of the mapping reads zeros from then on: a File that went on answering gave names
# of zeros, a KeyError for a name it had, tensors and info() of zeros.
AFTER_CUT = r"""
import os, sys, onnxz
path, cut = sys.argv[1], sys.argv[2]
f = onnxz.open(path)
a = f["W3"]
os.truncate(cut, 0)
try:
    float(a.sum())
    print("touch returned", flush=True)
except onnxz.Error as e:
    print("touch raised", flush=True)
calls = {"names": lambda: f.names, "contains": lambda: "W0" in f, "tensor": lambda: f["W0"],
         "tensor again": lambda: f["W3"], "info": f.info, "model": lambda: f.model,
         "verify": f.verify, "get_slice": lambda: f.get_slice("W1")[0:2],
         "read_into": lambda: f.read_into("W1", bytearray(1 << 20))}
for name, call in calls.items():
    try:
        call()
        print(name, "returned", flush=True)
    except onnxz.Error as e:
        print(name, "raised", e.status, str(e).replace(chr(10), " "), flush=True)
    except Exception as e:
        print(name, type(e).__name__, e, flush=True)
"""


@pytest.mark.parametrize("form", ["archive", "external"])
def test_every_call_after_a_cut_raises(tmp_path, tool, form):
    """Once a cut was seen in a mapping a File reads from, each of its calls raises it:
    never the zeros the mended mapping reads, never a KeyError. (A data file is named as
    the model names it.)"""
    if form == "archive":
        onnx.save(make_model(), str(tmp_path / "m.onnx"))
        run([tool, "-q", "convert", "m.onnx", "m.onnxz"], cwd=tmp_path, check=True)
        path = cut = tmp_path / "m.onnxz"
    else:
        path, cut = tmp_path / "two.onnx", tmp_path / "two.data"
        onnxz.save(make_model(), str(path), external_data="two.data")
    p = run([sys.executable, "-c", AFTER_CUT, str(path), str(cut)])
    out, err = p.stdout.decode(), p.stderr.decode()
    assert p.returncode == 0, (p.returncode, out, err)
    lines = out.splitlines()
    assert lines[0] == "touch raised", out
    assert len(lines) == 10, out
    for line in lines[1:]:
        assert " raised truncated " in line and "(S-42)" in line and cut.name in line, out
