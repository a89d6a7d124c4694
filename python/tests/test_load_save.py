"""onnxz.load against onnx.load, onnxz.save / onnxz.convert against `onnxz convert`."""
import filecmp
import io
import os
import re
import subprocess
import sys
import warnings

import numpy as np
import onnx
from onnx import helper, numpy_helper
import pytest

import onnxz
from conftest import PRELOAD, make_model


def ser(m):
    return m.SerializeToString()


def test_corpus_equals_onnx_load(corpus):
    """Every model of python3-onnx's backend test corpus (~945): the same ModelProto."""
    bad = []
    for path in corpus:
        if ser(onnxz.load(path)) != ser(onnx.load(path)):
            bad.append(path)
    assert not bad, f"{len(bad)} differ, first {bad[:3]}"


def test_corpus_from_bytes(corpus):
    for path in corpus[::25]:
        with open(path, "rb") as f:
            data = f.read()
        assert ser(onnxz.load(data)) == ser(onnx.load_from_string(data))
        with open(path, "rb") as f:
            assert ser(onnxz.load(f)) == ser(onnx.load(path))


@pytest.mark.parametrize("layout", [
    dict(all_tensors_to_one_file=True, location="w.data", size_threshold=0),
    dict(all_tensors_to_one_file=True, location="w.data", size_threshold=1024),
    dict(all_tensors_to_one_file=False, size_threshold=0),  # N files, one per tensor
    dict(all_tensors_to_one_file=True, location="sub/w.bin", size_threshold=0),
])
def test_external_layouts_of_python_onnx(tmp_path, typed_model, layout):
    """The external-data layouts python3-onnx writes load as onnx.load loads them (tensors
    read in, data_location DEFAULT), and with load_external_data=False as references."""
    os.makedirs(tmp_path / "sub", exist_ok=True)
    p = str(tmp_path / "m.onnx")
    onnx.save_model(typed_model, p, save_as_external_data=True, **layout)
    assert ser(onnxz.load(p)) == ser(onnx.load(p))
    assert ser(onnxz.load(p, load_external_data=False)) == \
        ser(onnx.load(p, load_external_data=False))
    # a file object: its data files beside the file it reads, as onnx.load finds them
    with open(p, "rb") as a, open(p, "rb") as b:
        assert ser(onnxz.load(a)) == ser(onnx.load(b))
    with open(p, "rb") as a, open(p, "rb") as b:
        assert ser(onnxz.load(a, load_external_data=False)) == \
            ser(onnx.load(b, load_external_data=False))
    with open(p, "rb") as a:  # a stream without a name: references kept
        assert ser(onnxz.load(io.BytesIO(a.read()))) == \
            ser(onnx.load(p, load_external_data=False))
    # data files moved elsewhere: data_dir
    moved = tmp_path / "moved"
    moved.mkdir()
    os.rename(p, moved / "m.onnx")
    assert ser(onnxz.load(str(moved / "m.onnx"), data_dir=str(tmp_path))) == \
        ser(typed_model_loaded(typed_model, tmp_path))


def typed_model_loaded(model, tmp_path):
    single = str(tmp_path / "single.onnx")
    onnx.save(model, single)
    return onnx.load(single)


def test_archives_and_encrypted_equal_single_file(tmp_path, typed_model, tool):
    """Forms onnx.load cannot read: equal to onnx.load of the model converted to one .onnx
    by the tool."""
    src = str(tmp_path / "m.onnx")
    onnx.save(typed_model, src)
    for name, args in (("a.onnxz", []), ("d.onnxz", ["--deflate-model"]),
                       ("e.onnxc", ["--key-file", str(tmp_path / "key")])):
        (tmp_path / "key").write_text("secret phrase\n")
        out = str(tmp_path / name)
        subprocess.run([tool, "convert", "-q", src, out] + args, check=True)
        back = str(tmp_path / (name + ".onnx"))
        subprocess.run([tool, "convert", "-q", out, back] + args[1:] * 0 +
                       (["--key-file", str(tmp_path / "key")] if name.endswith("c") else []),
                       check=True)
        key = "secret phrase" if name.endswith("c") else None
        assert ser(onnxz.load(out, key=key)) == ser(onnx.load(back)), name
        with open(out, "rb") as f:
            assert ser(onnxz.load(f.read(), key=key)) == ser(onnx.load(back)), name


# The option sets of `onnxz convert`, and the same as keyword arguments.
OPTION_SETS = [
    ("m.onnx", {}, []),
    ("m.onnxz", {}, []),
    ("M.ONNXZ", {}, []),
    ("m.onnxz", dict(align=4096, threshold=100, deflate_model=True),
     ["--align", "4096", "--threshold", "100", "--deflate-model"]),
    ("m.onnx", dict(external_data="m.data"), ["--external-data", "m.data"]),
    ("m.onnx", dict(external_data="m.data", threshold=0, align=4096, checksum=True,
                    max_file_size=300000),
     ["--external-data", "m.data", "--threshold", "0", "--align", "4096", "--checksum",
      "--max-file-size", "300000"]),
]


def same_tree(a, b):
    names = sorted(os.listdir(a))
    assert names == sorted(os.listdir(b))
    for n in names:
        assert filecmp.cmp(os.path.join(a, n), os.path.join(b, n), shallow=False), n


def in_dir(d, fn):
    cwd = os.getcwd()
    os.chdir(d)
    try:
        fn()
    finally:
        os.chdir(cwd)


@pytest.mark.parametrize("out,kw,args", OPTION_SETS)
def test_save_and_convert_match_the_tool(tmp_path, out, kw, args, tool):
    """onnxz.convert(src, dst, **kw) writes what `onnxz convert src dst ARGS` writes;
    onnxz.save(model, dst, **kw) what the tool writes from the model saved by python3-onnx
    as one .onnx (the same model: onnx.load marks loaded tensors data_location DEFAULT)."""
    model = make_model(n_weights=3, size=200)
    src_dir = tmp_path / "src"
    src_dir.mkdir()
    src = str(src_dir / "in.onnx")
    onnx.save(model, src, save_as_external_data=True, location="in.data", size_threshold=0)
    loaded = onnx.load(src)
    single = str(src_dir / "single.onnx")
    onnx.save(loaded, single)
    d = {}
    for how in ("tool_src", "tool_single", "save", "convert"):
        d[how] = str(tmp_path / how)
        os.mkdir(d[how])
    subprocess.run([tool, "convert", "-q", src, out] + args, check=True, cwd=d["tool_src"])
    subprocess.run([tool, "convert", "-q", single, out] + args, check=True,
                   cwd=d["tool_single"])
    in_dir(d["save"], lambda: onnxz.save(loaded, out, **kw))
    in_dir(d["convert"], lambda: onnxz.convert(src, out, **kw))
    same_tree(d["tool_src"], d["convert"])
    same_tree(d["tool_single"], d["save"])
    # What was written loads as onnx.load loads it converted to one .onnx, and is the
    # model (an archive cannot keep an explicit data_location DEFAULT: its tensors are
    # entries, EXTERNAL, and loading them leaves the field unset as converting does).
    dst = os.path.join(d["save"], out)
    back = os.path.join(d["save"], "back.onnx")
    subprocess.run([tool, "convert", "-q", dst, back], check=True)
    if out.lower().endswith(".onnxz"):
        assert ser(onnxz.load(dst)) == ser(onnx.load(back))
    else:
        assert ser(onnxz.load(dst)) == ser(onnx.load(dst))
    assert ser(without_data_location(onnxz.load(dst))) == \
        ser(without_data_location(onnx.load(single)))


def without_data_location(m):
    for t in m.graph.initializer:
        t.ClearField("data_location")
    return m


def test_save_round_trips_through_onnx_load(tmp_path, typed_model):
    p = str(tmp_path / "m.onnx")
    onnxz.save(typed_model, p)
    assert ser(onnx.load(p)) == ser(typed_model)
    z = str(tmp_path / "m.onnxz")
    onnxz.save(typed_model, z)
    assert ser(onnxz.load(z)) == ser(typed_model)
    e = str(tmp_path / "e.onnx")
    onnxz.save(typed_model, e, external_data="e.bin")
    assert os.path.getsize(tmp_path / "e.bin") > 0
    # python3-onnx reads the tensors back in, leaving data_location DEFAULT where the
    # input had none: equal once that field is cleared
    back = onnx.load(e)
    for t in back.graph.initializer:
        t.ClearField("data_location")
    assert ser(back) == ser(typed_model)
    assert ser(onnxz.load(e)) == ser(onnx.load(e))


def sync_calls(tmp_path, code):
    """The fsync, fdatasync and syncfs calls of a Python process running code, as strace
    sees them; None (after running code) when strace is missing. Under ASan the child gets
    the preloaded runtime, without leak detection (LeakSanitizer cannot run under ptrace;
    the tests in this process check for leaks)."""
    import shutil
    env = dict(os.environ)
    if PRELOAD:
        env["LD_PRELOAD"] = PRELOAD
        env["ASAN_OPTIONS"] = env.get("ASAN_OPTIONS", "") + ":detect_leaks=0"
    strace = shutil.which("strace")
    if not strace:
        warnings.warn("strace is not installed: the sync calls are not checked")
        subprocess.run([sys.executable, "-c", code], check=True, env=env)
        return None
    log = str(tmp_path / "trace.log")
    subprocess.run([strace, "-f", "-qq", "-o", log, "-e",
                    "trace=fsync,fdatasync,syncfs", sys.executable, "-c", code],
                   check=True, env=env)
    with open(log) as f:  # "PID fsync(3) = 0" (signal and exit lines are not calls)
        return [line for line in f
                if re.match(r"^\d+\s+(fsync|fdatasync|syncfs)\(", line) and "ENOSYS" not in line]


@pytest.mark.parametrize("out,kw", [("m.onnx", {}), ("m.onnxz", {}),
                                    ("m.onnx", dict(external_data="m.bin"))])
def test_save_sync(tmp_path, model, out, kw):
    """save and convert leave the bytes to the operating system by default, as onnx.save
    does (still renamed into place whole); sync=True also fsyncs every file and its
    directory. The same bytes either way."""
    src = str(tmp_path / "src.onnx")
    onnx.save(model, src)
    trees = []
    for sync in (False, True):
        for fn in ("save", "convert"):
            d = tmp_path / f"{fn}.{sync}"
            d.mkdir()
            arg = f"onnx.load({src!r})" if fn == "save" else repr(src)
            code = (f"import onnx, onnxz; onnxz.{fn}({arg}, {str(d / out)!r}, "
                    f"sync={sync}, **{kw!r})")
            calls = sync_calls(tmp_path, code)
            if calls is not None and sync:
                nfiles = len(os.listdir(d))
                assert sum("fsync(" in c for c in calls) >= nfiles + 1, calls
            elif calls is not None:
                assert calls == []
            trees.append(str(d))
    for d in trees[1:]:
        same_tree(trees[0], d)


def test_save_option_rules(tmp_path, model):
    p = str(tmp_path / "m.onnxz")
    for kw in (dict(external_data="x.data"), dict(checksum=True), dict(max_file_size=10)):
        with pytest.raises(ValueError):
            onnxz.save(model, p, **kw)
    with pytest.raises(ValueError):
        onnxz.save(model, str(tmp_path / "m.onnx"), deflate_model=True)
    with pytest.raises(ValueError):
        onnxz.save(model, str(tmp_path / "m.onnx"), align=64)
    with pytest.raises(ValueError):
        onnxz.save(model, str(tmp_path / "m.bin"))
    with pytest.raises(ValueError):
        onnxz.save(model, p, align=48)
    with pytest.raises(ValueError):
        onnxz.save(model, str(tmp_path / "m.onnxc"))
    onnxz.save(model, str(tmp_path / "m.bin"), to="onnxz")
    assert ser(onnxz.load(str(tmp_path / "m.bin"))) == ser(model)
    # the library's rule of a form by name (oz_form_named): the extension in any case
    onnxz.save(model, str(tmp_path / "m.OnnxC"), key="k")
    with open(tmp_path / "m.OnnxC", "rb") as f:
        assert f.read(8) == b"ONNXZEC1"
    with pytest.raises(ValueError):
        onnxz.save(model, str(tmp_path / "m.bin"), to="ONNX")


def test_url_outputs_refused_as_the_tool_does(tmp_path, model, tool):
    """R-14 is the library's (oz_save_check): save, convert and `onnxz convert` refuse a
    URL as the output or the data file's location with the same message and file, the
    URL shown without its password, before the form is looked at, and write nothing."""
    src = str(tmp_path / "m.onnx")
    onnxz.save(model, src)
    for out, ext, shown in (("http://u:pw@host/o.onnxz", None, "http://host/o.onnxz"),
                            ("HTTPS://host/o", None, "HTTPS://host/o"),
                            ("o.onnx", "http://host/d", "http://host/d"),
                            ("o.onnxz", "https://host/d", "https://host/d")):
        want = f"{shown}: is a URL: onnxz writes local files only"
        for call in (lambda: onnxz.save(model, out, external_data=ext),
                     lambda: onnxz.convert(src, out, external_data=ext)):
            with pytest.raises(onnxz.Error) as e:
                call()
            assert (str(e.value), e.value.file, e.value.status) == (
                want, shown, "invalid argument"), out
        argv = [tool, "convert", src, out] + (["--external-data", ext] if ext else [])
        r = subprocess.run(argv, capture_output=True, text=True, cwd=tmp_path)
        assert (r.returncode, r.stderr) == (1, f"onnxz: error: {want}\n"), argv
    assert os.listdir(tmp_path) == ["m.onnx"]


def test_encrypted_save_and_load(tmp_path, model, tool):
    p = str(tmp_path / "m.onnxc")
    onnxz.save(model, p, key="pass word")
    assert ser(onnxz.load(p, key=b"pass word")) == ser(model)
    (tmp_path / "k").write_text("pass word\n")
    out = str(tmp_path / "back.onnx")
    subprocess.run([tool, "convert", "-q", "--key-file", str(tmp_path / "k"), p, out],
                   check=True)
    assert ser(onnx.load(out)) == ser(model)
    # a key is the output's only for an encrypted output: never a model written plain
    for name in ("plain.onnx", "plain.onnxz"):
        with pytest.raises(ValueError, match="key"):
            onnxz.save(model, str(tmp_path / name), key="pass word")
        assert not os.path.exists(tmp_path / name)
    # convert's one key opens an encrypted src and encrypts a .onnxc dst
    onnxz.convert(p, str(tmp_path / "dec.onnx"), key="pass word")
    assert ser(onnx.load(str(tmp_path / "dec.onnx"))) == ser(model)
    onnxz.convert(p, str(tmp_path / "re.onnxc"), key="pass word")
    assert ser(onnxz.load(str(tmp_path / "re.onnxc"), key="pass word")) == ser(model)


@pytest.fixture(scope="module")
def torch_exports(tmp_path_factory):
    """The runtime corpus's PyTorch exports (tests/runtime/export_torch.py: a CNN, a
    2-layer transformer encoder, an LSTM; Debian's python3-torch), made once."""
    import importlib.util
    if importlib.util.find_spec("torch") is None:  # not imported here: it runs in its own
        pytest.skip("python3-torch is not installed")  # process, without ASan's preload
    script = os.path.join(os.path.dirname(__file__), "..", "..", "tests", "runtime",
                          "export_torch.py")
    if not os.path.exists(script):
        pytest.skip("tests/runtime/export_torch.py is not beside this package")
    d = str(tmp_path_factory.mktemp("torch"))
    subprocess.run([sys.executable, script, d], check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    models = sorted(os.path.join(d, f) for f in os.listdir(d) if f.endswith(".onnx"))
    assert len(models) == 3
    return models


def test_torch_exports(tmp_path, torch_exports, tool):
    """PyTorch exports: onnxz.load equals onnx.load; each form onnxz.save writes loads in
    onnx.load (or, archives, in onnxz.load) to the same model; onnxz.open gives every
    initializer's values as numpy_helper does, in every form."""
    from onnx import external_data_helper, numpy_helper
    for path in torch_exports:
        want = onnx.load(path)
        assert ser(onnxz.load(path)) == ser(want), path
        base = os.path.splitext(os.path.basename(path))[0]
        two = str(tmp_path / f"{base}-two.onnx")
        onnxz.save(want, two, external_data=f"{base}.data", threshold=0)
        # onnx.load marks each tensor it read in data_location DEFAULT; the rest is equal
        back = onnx.load(two)
        for t in external_data_helper._get_all_tensors(back):  # attributes' tensors too
            t.ClearField("data_location")
        assert ser(back) == ser(want), two
        arc = str(tmp_path / f"{base}.onnxz")
        onnxz.save(want, arc)
        assert ser(onnxz.load(arc)) == ser(want), arc
        for form in (path, two, arc):
            with onnxz.open(form) as f:
                for init in want.graph.initializer:
                    np_want = numpy_helper.to_array(init)
                    got = f[init.name]
                    assert got.dtype == np_want.dtype and got.shape == np_want.shape, init.name
                    assert got.tobytes() == np_want.tobytes(), (form, init.name)


def test_long_calls_let_other_threads_run(tmp_path):
    """The C calls release the GIL: a thread that ticks every millisecond keeps ticking
    while onnxz.convert packs a 256 MiB model and File.verify reads it back (had either
    held the GIL, it would tick at most once meanwhile). The model is that large for
    verify's sake: its CRCs run on every core, and over 64 MiB (8 ms) a loaded machine
    left the thread no turn at all."""
    import threading
    import time
    inits = [numpy_helper.from_array(np.full(1 << 22, i, np.float32), f"w{i}")
             for i in range(16)]
    src, dst = str(tmp_path / "m.onnx"), str(tmp_path / "m.onnxz")
    onnx.save(helper.make_model(helper.make_graph([], "g", [], [], inits)), src)
    ticks, stop = [], threading.Event()

    def tick():
        while not stop.is_set():
            ticks.append(time.perf_counter())
            time.sleep(0.001)

    def during(call):
        t = threading.Thread(target=tick)
        t.start()
        time.sleep(0.01)
        t0 = time.perf_counter()
        call()
        t1 = time.perf_counter()
        stop.set()
        t.join()
        stop.clear()
        inside = [x for x in ticks if t0 <= x <= t1]
        ticks.clear()
        return t1 - t0, len(inside)

    for what, call in (("convert", lambda: onnxz.convert(src, dst, sync=True)),
                       ("verify", lambda: onnxz.open(dst).verify())):
        took, n = during(call)
        # A tick costs about a millisecond and a half on a quiet machine. Had the call held
        # the GIL the thread would tick at most once; a fortieth of the quiet pace leaves
        # room for a machine whose load starves the thread (a thirtieth was seen at load 10,
        # with the call's own threads on both cores).
        assert n >= max(3, took / 0.0015 / 40), (what, took, n)


def test_ctrl_c_at_any_moment_of_a_load(tmp_path):
    """load of a plain .onnx (protobuf parsing while onnxz's check reads the same buffer
    on its own thread) interrupted at random moments, from a path and from bytes: either
    the model or KeyboardInterrupt, never another exception, and no thread left behind."""
    import random
    import signal
    import threading
    import time
    nodes = [helper.make_node("Relu", [f"t{i}"], [f"t{i + 1}"], name=f"n{i}")
             for i in range(30000)]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("t0", 1, [1])],
                          [helper.make_tensor_value_info("t30000", 1, [1])])
    p = str(tmp_path / "g.onnx")
    onnx.save(helper.make_model(g), p)
    data = open(p, "rb").read()
    t0 = time.perf_counter()
    onnxz.load(p)
    took = time.perf_counter() - t0
    rng = random.Random(11)
    seen = {"ok": 0, "interrupted": 0}
    threads = threading.active_count()

    def interrupt(*_):
        if armed:
            raise KeyboardInterrupt

    old = signal.signal(signal.SIGALRM, interrupt)
    try:
        for i in range(200):
            try:
                try:  # armed inside the try: the alarm may fire as soon as it is set
                    armed = True
                    signal.setitimer(signal.ITIMER_REAL, rng.uniform(1e-5, took * 1.2))
                    onnxz.load(p if i % 2 else data)
                finally:
                    armed = False
                    signal.setitimer(signal.ITIMER_REAL, 0)
                seen["ok"] += 1
            except KeyboardInterrupt:
                seen["interrupted"] += 1
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
    assert seen["ok"] and seen["interrupted"], seen
    assert threading.active_count() == threads
