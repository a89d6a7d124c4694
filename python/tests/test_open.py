"""onnxz.open: zero-copy views checked against /proc/self/maps, lifetimes, refusals."""
import gc
import json
import os
import subprocess
import sys
import threading
import zipfile

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import onnxz
from conftest import PRELOAD, make_model


def mapping_of(address):
    """The /proc/self/maps line whose range holds address (None if none)."""
    with open("/proc/self/maps") as f:
        for line in f:
            lo, hi = (int(x, 16) for x in line.split()[0].split("-"))
            if lo <= address < hi:
                return line.split(None, 5)
    return None


def expected_arrays(model):
    """numpy_helper's arrays; types python3-onnx 1.13 has no dtype for: their raw bytes."""
    out = {}
    for t in model.graph.initializer:
        if t.data_type in (17, 22):
            out[t.name] = np.frombuffer(t.raw_data, dtype=np.uint8)
        else:
            out[t.name] = numpy_helper.to_array(t)
    return out


@pytest.fixture(params=["onnxz", "onnx", "external", "encrypted"])
def form(request, tmp_path, typed_model):
    """The typed model in each form: (path, key, the file the weights lie in or None)."""
    kind = request.param
    typed_model = onnx.ModelProto.FromString(typed_model.SerializeToString())  # onnx.save
    # with external data changes the model it is given
    if kind == "onnxz":
        p = str(tmp_path / "m.onnxz")
        onnxz.save(typed_model, p)
        return p, None, p
    if kind == "onnx":
        p = str(tmp_path / "m.onnx")
        onnx.save(typed_model, p)
        return p, None, p
    if kind == "external":
        p = str(tmp_path / "m.onnx")
        onnx.save(typed_model, p, save_as_external_data=True, location="m.data",
                  size_threshold=1024)
        return p, None, str(tmp_path / "m.data")
    p = str(tmp_path / "m.onnxc")
    onnxz.save(typed_model, p, key="k")
    return p, "k", None


def test_every_tensor_and_dtype(form, typed_model):
    path, key, _ = form
    want = expected_arrays(typed_model)
    with onnxz.open(path, key=key) as f:
        assert sorted(f.names) == sorted(want)
        for name, a in want.items():
            got = f[name]
            assert not got.flags.writeable
            if name == "t_bfloat16":
                assert got.dtype == np.uint16 and got.shape == (4, 100)
                assert got.tobytes() == typed_model.graph.initializer[
                    [t.name for t in typed_model.graph.initializer].index(name)].raw_data
            elif name == "t_float8":
                assert got.dtype == np.uint8 and got.shape == (2, 600)
                assert np.array_equal(got.ravel(), a)
            elif name == "t_int4":
                assert got.dtype == np.uint8 and got.shape == (1500,)
                assert np.array_equal(got, a)
            else:
                assert got.dtype == a.dtype and got.shape == a.shape, name
                assert np.array_equal(got, a), name



def test_prefetch_is_advice(form, typed_model):
    """prefetch=True (the kernel asked to read the mapped files ahead) is accepted by open
    and load in every form, and gives the same arrays and the same model."""
    path, key, _ = form
    with onnxz.open(path, key=key, prefetch=True) as f, onnxz.open(path, key=key) as g:
        assert sorted(f.names) == sorted(expected_arrays(typed_model))
        for name in g.names:
            assert f[name].dtype == g[name].dtype and f[name].shape == g[name].shape
            assert f[name].tobytes() == g[name].tobytes(), name
    for external in (True, False):
        plain = onnxz.load(path, key=key, load_external_data=external)
        ahead = onnxz.load(path, key=key, load_external_data=external, prefetch=True)
        assert ahead.SerializeToString() == plain.SerializeToString()

def test_zero_copy_into_the_mapping(form, typed_model):
    path, key, weights_file = form
    with onnxz.open(path, key=key) as f:
        a = f["w0"]
        b = f["w0"]
        assert np.shares_memory(a, b)
        m = mapping_of(a.ctypes.data)
        assert m is not None
        if weights_file is not None:
            # the array lies in the read-only mapping of the file holding the weights
            assert len(m) == 6 and os.path.realpath(m[5].strip()) == \
                os.path.realpath(weights_file), m
            assert m[1].startswith("r") and m[1][1] == "-", m
        with pytest.raises(ValueError):
            a[0, 0] = 1.0
        with pytest.raises(ValueError):
            a.setflags(write=True)


def test_arrays_outlive_close_del_and_gc(form, typed_model):
    path, key, _ = form
    want = expected_arrays(typed_model)["w1"]
    f = onnxz.open(path, key=key)
    a = f["w1"]
    f.close()
    with pytest.raises(ValueError):
        f["w1"]
    assert np.array_equal(a, want)
    f = onnxz.open(path, key=key)
    b = f.tensor("w1")
    del f
    gc.collect()
    assert np.array_equal(b, want)
    v = b[3:5]
    del a, b
    gc.collect()
    assert np.array_equal(v, want[3:5])


def test_model_and_names(tmp_path, typed_model):
    p = str(tmp_path / "m.onnxz")
    onnxz.save(typed_model, p)
    with onnxz.open(p) as f:
        m = f.model
        ext = [t for t in m.graph.initializer if t.data_location == onnx.TensorProto.EXTERNAL]
        assert ext and all(not t.raw_data for t in ext)  # weights left in the archive
        assert len(m.graph.node) == len(typed_model.graph.node)
        assert "w0" in f and "nope" not in f
        with pytest.raises(KeyError):
            f["nope"]
        f.verify()
        assert f.is_archive


def tool_output(tool, argv, key=None):
    env = dict(os.environ)
    env.pop("ONNXZ_KEY", None)
    if key is not None:
        env["ONNXZ_KEY"] = key
    return subprocess.run([tool] + argv, check=True, capture_output=True, env=env).stdout


def cli_helpers():
    """tests/cli/cli_test.py's archive rewriters (rezip, model_first_in_directory): the
    archives the tool's own tests break the layout rules with."""
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "tests", "cli"))
    try:
        import cli_test
    finally:
        sys.path.pop(0)
    return cli_test


@pytest.fixture
def every_form(tmp_path, typed_model, tool):
    """The typed model in every form, plus archives breaking the layout rules (which
    load): [(name, path, key)]."""
    cases = []
    p = str(tmp_path / "m.onnxz")
    onnxz.save(typed_model, p)
    cases.append(("onnxz", p, None))
    o = str(tmp_path / "m.onnx")
    onnx.save(typed_model, o)
    cases.append(("onnx", o, None))
    e = str(tmp_path / "e.onnx")
    onnx.save(onnx.ModelProto.FromString(typed_model.SerializeToString()), e,
              save_as_external_data=True, location="e.data", size_threshold=1024)
    cases.append(("two-file", e, None))
    n = str(tmp_path / "n" / "n.onnx")
    os.mkdir(tmp_path / "n")
    onnx.save(onnx.ModelProto.FromString(typed_model.SerializeToString()), n,
              save_as_external_data=True, all_tensors_to_one_file=False, size_threshold=0)
    cases.append(("n-file", n, None))
    c = str(tmp_path / "m.onnxc")
    onnxz.save(typed_model, c, key="k")
    cases.append(("encrypted", c, "k"))
    cz = str(tmp_path / "z.onnxc")
    env = dict(os.environ, ONNXZ_KEY="k")
    subprocess.run([tool, "convert", "-q", p, cz], check=True, env=env)
    cases.append(("encrypted archive", cz, "k"))
    h = cli_helpers()
    cases.append(("A-2 file", h.rezip(p, str(tmp_path / "first.onnxz"), model_first=True), None))
    cases.append(("A-2 directory",
                  h.model_first_in_directory(p, str(tmp_path / "cd_first.onnxz")), None))
    cases.append(("A-3", h.rezip(p, str(tmp_path / "deflated.onnxz"),
                                 tensor_method=zipfile.ZIP_DEFLATED), None))
    cases.append(("A-4", h.rezip(p, str(tmp_path / "unaligned.onnxz")), None))
    return cases


def test_info_matches_the_tool(every_form, tool):
    """File.info() is the tool's document: one writer (oz_info_write_json), byte for byte."""
    for name, path, key in every_form:
        with onnxz.open(path, key=key) as f:
            mine = f.info()
            text = f._open_reader().info()
        out = tool_output(tool, ["info", "--json", path], key)
        assert text.encode() == out, name
        theirs = json.loads(out)
        assert list(mine) == list(theirs), name
        for k in theirs:
            assert mine[k] == theirs[k], (name, k)
        assert (mine["archive"] is None) == (name not in ("onnxz", "A-2 file", "A-2 directory",
                                                           "A-3", "A-4")), name
    deflated = dict((n, p) for n, p, _ in every_form)["A-3"]
    with onnxz.open(deflated) as f:
        a = f.info()["archive"]
    assert a["deflated_tensor_entries"] and not a["zero_copy"]


def test_verify_matches_the_tool(every_form, tool, tmp_path):
    h = cli_helpers()
    arc = every_form[0][1]
    cases = list(every_form)
    entry = h.zip_entries(arc)[0]
    cases.append(("CRC", h.flip_byte(arc, str(tmp_path / "crc.onnxz"),
                                     entry["data_offset"] + 5), None))
    failed = set()
    for name, path, key in cases:
        env = dict(os.environ)
        env.pop("ONNXZ_KEY", None)
        if key is not None:
            env["ONNXZ_KEY"] = key
        r = subprocess.run([tool, "verify", path], capture_output=True, text=True, env=env)
        try:
            with onnxz.open(path, key=key) as f:
                f.verify()
        except onnxz.Error as e:
            assert r.returncode == 1, (name, str(e))
            assert r.stderr.strip() == "onnxz: error: " + str(e), name
            assert e.file == path
            if name.startswith("A-"):  # the rule broken, as a field and ending the message
                assert e.rule == name.split()[0] and str(e).endswith(" (%s)" % e.rule), name
            failed.add(name)
        else:
            assert r.returncode == 0, (name, r.stderr)
    assert failed == {"A-2 file", "A-2 directory", "A-3", "A-4", "CRC"}


def test_threads_read_concurrently(form):
    """Four threads reading every tensor of one File 50 times get what one thread reads
    (test_every_tensor_and_dtype checks that against python3-onnx)."""
    p, key, _ = form
    errors = []
    with onnxz.open(p, key=key) as f:
        want = {n: f[n].tobytes() for n in f.names}

        def work():
            try:
                for _ in range(50):
                    for n, a in want.items():
                        if f[n].tobytes() != a:
                            errors.append(n)
            except Exception as e:  # reported below
                errors.append(repr(e))
        ts = [threading.Thread(target=work) for _ in range(4)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
    assert not errors



@pytest.mark.parametrize("suffix", [".onnxz", ".onnx"])
def test_close_while_other_threads_read(tmp_path, suffix):
    """A close() racing reads from other threads: every read gives the right array or
    'closed', never bytes of a freed model (tensor() read the tensor's data_type after
    dropping its reference to the model, a use-after-free under ASan)."""
    model = make_model(n_weights=8, size=16)
    p = str(tmp_path / ("m" + suffix))
    onnxz.save(model, p)
    want = expected_arrays(model)
    errors = []
    for _ in range(30):
        f = onnxz.open(p)
        reader = f._reader

        def work():
            try:
                for _ in range(20):
                    for n, a in want.items():
                        span, _, dims = reader.tensor(n)  # the File's reader, closed below
                        if not np.array_equal(np.frombuffer(span, np.float32).reshape(dims), a):
                            errors.append(n)
                    reader.names()
            except ValueError as e:
                if "closed" not in str(e):
                    errors.append(repr(e))
            except Exception as e:  # reported below
                errors.append(repr(e))
        ts = [threading.Thread(target=work) for _ in range(4)]
        for t in ts:
            t.start()
        f.close()
        for t in ts:
            t.join()
    assert not errors



def test_typed_tensor_in_a_fresh_process(tmp_path):
    """A tensor in typed fields (float_data) converted by File.tensor in a process that
    imported only onnxz: `import onnx` does not load onnx.numpy_helper (this suite's own
    imports would hide an AttributeError)."""
    t = helper.make_tensor("t", TensorProto.FLOAT, [2, 3], vals=[1, 2, 3, 4, 5, 6])
    p = str(tmp_path / "typed.onnx")
    onnx.save(helper.make_model(helper.make_graph([], "g", [], [], [t])), p)
    code = ("import sys, onnxz\n"
            "with onnxz.open(sys.argv[1]) as f:\n"
            "    print(f['t'].tolist())\n")
    env = dict(os.environ, **({"LD_PRELOAD": PRELOAD} if PRELOAD else {}))
    r = subprocess.run([sys.executable, "-c", code, p], capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]"



def test_typed_tensors_of_a_sparse_attribute(tmp_path):
    """Every name File.names lists can be read: the values and indices of a sparse tensor in
    a node's attribute, held in typed fields, are read, not a KeyError."""
    vals = helper.make_tensor("sv", TensorProto.FLOAT, [2], vals=[1.5, 2.5])
    idx = helper.make_tensor("si", TensorProto.INT64, [2], vals=[0, 3])
    node = helper.make_node("Constant", [], ["c"],
                            sparse_value=helper.make_sparse_tensor(vals, idx, [4]))
    graph = helper.make_graph([node], "g", [],
                              [helper.make_tensor_value_info("c", TensorProto.FLOAT, [4])])
    p = str(tmp_path / "sparse.onnx")
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), p)
    with onnxz.open(p) as f:
        assert sorted(f.names) == ["si", "sv"]
        assert f["sv"].tolist() == [1.5, 2.5]
        assert f["si"].tolist() == [0, 3]



@pytest.mark.parametrize("dims,raw", [([0, -3], b""), ([-1, -4], b"\0" * 16),
                                      ([0, 2**62, 2**62], b"")])
def test_hostile_dims_raise_onnxz_error(tmp_path, dims, raw):
    """Negative dims whose product still matches the bytes, and dims numpy cannot hold
    though they hold no element, raise onnxz.Error, not numpy's ValueError."""
    t = TensorProto(name="w", data_type=TensorProto.FLOAT, dims=dims, raw_data=raw)
    p = str(tmp_path / "dims.onnx")
    with open(p, "wb") as f:
        f.write(helper.make_model(helper.make_graph([], "g", [], [], [t])).SerializeToString())
    with onnxz.open(p) as f, pytest.raises(onnxz.Error, match="'w'") as e:
        f["w"]
    assert e.value.file == p and e.value.status and e.value.code
    assert str(e.value).startswith(p + ": ")


# Every TensorProto.DataType with raw bytes, by its number (onnx.proto3; python3-onnx 1.13
# lacks the newer ones): (element bits, the documented dtype, packed: 1-D bytes).
DATA_TYPES = {
    1: (32, np.float32), 2: (8, np.uint8), 3: (8, np.int8), 4: (16, np.uint16),
    5: (16, np.int16), 6: (32, np.int32), 7: (64, np.int64), 9: (8, np.bool_),
    10: (16, np.float16), 11: (64, np.float64), 12: (32, np.uint32), 13: (64, np.uint64),
    14: (64, np.complex64), 15: (128, np.complex128), 16: (16, np.uint16),
    17: (8, np.uint8), 18: (8, np.uint8), 19: (8, np.uint8), 20: (8, np.uint8),
    21: (4, "packed"), 22: (4, "packed"), 23: (4, "packed"), 24: (8, np.uint8),
    25: (2, "packed"), 26: (2, "packed"),
}


@pytest.mark.parametrize("suffix", [".onnx", ".onnxz"])
def test_every_data_type_number(tmp_path, tool, suffix):
    """Each type's tensor comes back with its documented dtype and shape (the packed
    4-bit and 2-bit types as their bytes), and in a .onnx a payload one byte short of what
    its dims make raises onnxz.Error with the tool's W-40 message, as `onnxz verify` says
    it."""
    rng = np.random.default_rng(3)
    dims = [6, 8]
    good, short = [], []
    for code, (bits, _) in DATA_TYPES.items():
        n = 48 * bits // 8
        raw = rng.integers(0, 2, n, dtype=np.uint8).tobytes()  # 0/1: valid bools too
        good.append(TensorProto(name=f"t{code}", data_type=code, dims=dims, raw_data=raw))
        short.append(TensorProto(name=f"s{code}", data_type=code, dims=dims,
                                 raw_data=raw[:-1]))
    # (an archive refuses to hold a tensor of another size than its shape makes, A-13)
    for tensors, bad in ((good, False), (short, True))[:1 if suffix == ".onnxz" else 2]:
        p = str(tmp_path / (("bad" if bad else "good") + suffix))
        model = helper.make_model(helper.make_graph([], "g", [], [], tensors))
        onnxz.save(model, p, threshold=0) if suffix == ".onnxz" else onnx.save(model, p)
        with onnxz.open(p) as f:
            for t in tensors:
                bits, dtype = DATA_TYPES[t.data_type]
                if bad:
                    with pytest.raises(onnxz.Error) as e:
                        f[t.name]
                    assert e.value.status == "inconsistent" and "(W-40)" in str(e.value)
                    continue
                a = f[t.name]
                if dtype == "packed":
                    assert a.dtype == np.uint8 and a.shape == (48 * bits // 8,)
                else:
                    assert a.dtype == dtype and a.shape == tuple(dims), t.data_type
                assert a.tobytes() == t.raw_data
        if bad:  # the message is the tool's
            r = subprocess.run([tool, "verify", p], capture_output=True, text=True)
            with onnxz.open(p) as f, pytest.raises(onnxz.Error) as e:
                f[short[0].name]
            assert str(e.value).split(": ", 1)[1] in r.stderr


def test_a_name_that_is_not_utf8_reads_back(tmp_path):
    """.names gives a name that is not UTF-8 with surrogate escapes; f[name] takes it back."""
    t = numpy_helper.from_array(np.arange(4, dtype=np.float32), "x")
    model = helper.make_model(helper.make_graph([], "g", [], [], [t]))
    data = model.SerializeToString()
    assert data.count(b"\x42\x01x") == 1  # TensorProto.name (field 8): "x"
    data = data.replace(b"\x42\x01x", b"\x42\x01\xff")
    for suffix in (".onnx", ".onnxz"):
        p = str(tmp_path / ("bad" + suffix))
        if suffix == ".onnx":
            with open(p, "wb") as f:
                f.write(data)
        else:
            onnxz.save(data, p, threshold=0)
        with onnxz.open(p) as f:
            assert f.names == ["\udcff"]
            assert f["\udcff"].tolist() == [0.0, 1.0, 2.0, 3.0]
            assert f[b"\xff"].tolist() == [0.0, 1.0, 2.0, 3.0]


def test_archive_tensor_name_with_nul(tmp_path):
    """A tensor named "a\\0b" beside one named "a": reading the first from an archive gives
    its own bytes, not those of "a" under the first's type and shape (a lookup by C string
    would stop at the NUL): names are compared by name and length."""
    inits = [numpy_helper.from_array(np.full(4, v, np.float32), n)
             for n, v in (("a\0b", 0.0), ("a", 1.0))]
    graph = helper.make_graph([], "g", [], [], inits)
    p = str(tmp_path / "nul.onnxz")
    onnxz.save(helper.make_model(graph), p, threshold=0)
    with onnxz.open(p) as f:
        assert f["a"].tolist() == [1.0] * 4
        assert f["a\0b"].tolist() == [0.0] * 4


def rss_kib():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])


@pytest.mark.parametrize("kind", ["onnxz", "onnx", "external"])
def test_open_close_cycles_do_not_grow_rss(tmp_path, kind):
    model = make_model(n_weights=2, size=64)
    p = str(tmp_path / ("m.onnxz" if kind == "onnxz" else "m.onnx"))
    if kind == "external":
        onnx.save(model, p, save_as_external_data=True, location="m.data")
    else:
        onnxz.save(model, p)
    n = int(os.environ.get("ONNXZ_PY_CYCLES", "10000"))

    def cycle(k):
        for _ in range(k):
            with onnxz.open(p) as f:
                f["w0"].sum()
    cycle(min(n, 1000))  # warm up: allocator pools, caches
    gc.collect()
    before = rss_kib()
    cycle(n)
    gc.collect()
    grown = rss_kib() - before
    assert grown < 4096, f"RSS grew by {grown} KiB over {n} cycles"


# ---- refusals: onnxz.Error, never a crash -------------------------------------------

def test_wrong_key_and_no_key(tmp_path, model):
    p = str(tmp_path / "m.onnxc")
    onnxz.save(model, p, key="right")
    with pytest.raises(onnxz.Error) as e:
        onnxz.open(p, key="wrong")
    assert e.value.status and e.value.code and e.value.file == p
    assert isinstance(e.value, ValueError) and str(e.value).startswith(p + ": ")
    with pytest.raises(onnxz.Error):
        onnxz.load(p, key=b"wrong")
    with pytest.raises(onnxz.Error):
        onnxz.load(p)


def test_truncated_archive_at_every_cut(tmp_path, tool):
    model = make_model(n_weights=2, size=32)
    p = str(tmp_path / "m.onnxz")
    onnxz.save(model, p)
    data = open(p, "rb").read()
    t = str(tmp_path / "t.onnxz")
    for cut in list(range(1, 200)) + list(range(200, len(data), 97)):
        with open(t, "wb") as f:
            f.write(data[:cut])
        with pytest.raises(onnxz.Error) as e:
            onnxz.load(t)
        # the same one-line message as the tool's, with the same status
        r = subprocess.run([tool, "info", t], capture_output=True, text=True)
        assert r.returncode == 1
        assert r.stderr.strip() == "onnxz: error: " + str(e.value), cut
        with pytest.raises(onnxz.Error):
            onnxz.open(t)


def test_truncated_onnx_at_every_cut(tmp_path, tool):
    """A plain .onnx file is parsed by protobuf while onnxz's decoder checks it in another
    thread: the check's refusal wins, with the tool's message, and no thread is left."""
    import threading
    data = make_model(n_weights=2, size=32).SerializeToString()
    t = str(tmp_path / "t.onnx")
    threads = threading.active_count()
    for cut in range(1, len(data), 7):
        with open(t, "wb") as f:
            f.write(data[:cut])
        try:
            onnxz.load(t)
        except onnxz.Error as e:
            r = subprocess.run([tool, "info", t], capture_output=True, text=True)
            assert r.returncode == 1
            assert r.stderr.strip() == "onnxz: error: " + str(e), cut
        else:  # a cut between fields leaves a model: the tool reads it too
            assert subprocess.run([tool, "info", t], capture_output=True).returncode == 0
    assert threading.active_count() == threads


def test_hostile_bytes(tmp_path):
    rng = np.random.default_rng(7)
    model = make_model(n_weights=2, size=32)
    good = {"onnx": model.SerializeToString()}
    p = str(tmp_path / "m.onnxz")
    onnxz.save(model, p)
    good["onnxz"] = open(p, "rb").read()
    h = str(tmp_path / "h")
    refused = 0
    for kind, data in good.items():
        for i in range(300):
            b = bytearray(data)
            for _ in range(1 + i % 8):
                b[rng.integers(0, len(b))] = rng.integers(0, 256)
            with open(h, "wb") as f:
                f.write(b)
            for call in (lambda: onnxz.load(h), lambda: onnxz.open(h).verify()):
                try:
                    call()
                except onnxz.Error as e:
                    assert e.status and e.file == h
                    refused += 1
    assert refused > 100
    with pytest.raises(onnxz.Error) as e:
        onnxz.load(b"\x0a\xff\xff\xff\xff\x0f")
    assert e.value.status == "truncated" and e.value.offset is not None


def test_io_errors_are_oserror(tmp_path):
    with pytest.raises(FileNotFoundError):
        onnxz.load(str(tmp_path / "missing.onnx"))
    with pytest.raises(FileNotFoundError):
        onnxz.open(str(tmp_path / "missing.onnxz"))
    with pytest.raises(onnxz.Error) as e:  # not a regular file: a refusal, no I/O failure
        onnxz.load(str(tmp_path))
    assert e.value.file == str(tmp_path)


def test_fifo_and_device_are_refused_not_waited_on(tmp_path):
    """A FIFO or a device where a model was expected: onnxz.Error at once, never a hang
    (the open must not wait for a writer). In a child process, so a hang fails the test
    instead of stalling the suite."""
    fifo = str(tmp_path / "m.onnx")
    os.mkfifo(fifo)
    code = ("import onnxz, sys\n"
            "for p in sys.argv[1:]:\n"
            "    try:\n"
            "        onnxz.load(p)\n"
            "    except onnxz.Error as e:\n"
            "        print(e.status)\n")
    env = dict(os.environ)
    if PRELOAD:
        env["LD_PRELOAD"] = PRELOAD
    r = subprocess.run([sys.executable, "-c", code, fifo, "/dev/zero"], capture_output=True,
                       text=True, timeout=60, env=env)
    assert r.returncode == 0, r.stderr
    assert len(r.stdout.splitlines()) == 2, r.stdout  # one refusal each


def test_a_bad_http_setting_is_an_error_naming_it(tmp_path, monkeypatch):
    """The HTTP settings come from the environment as the tool reads them
    (oc_http_options_parse): a value out of its range names the variable, at each call."""
    path = str(tmp_path / "m.onnxz")
    onnxz.save(make_model(), path)
    monkeypatch.setenv("ONNXZ_HTTP_RETRIES", "-1")
    calls = (lambda: onnxz.load(path), lambda: onnxz.open(path),
             lambda: onnxz.convert(path, str(tmp_path / "c.onnx")))
    for call in calls:
        with pytest.raises(onnxz.Error, match=r"ONNXZ_HTTP_RETRIES: '-1' is not a whole number "
                                              r"from 0 to 100"):
            call()
    monkeypatch.setenv("ONNXZ_HTTP_RETRIES", "0")
    with onnxz.open(path) as f:
        assert f.names


def test_cut_files_raise_not_sigbus(tmp_path):
    """S-42 in every build, ASan's included (its own SIGBUS handler stays for faults that
    are not ours): a data file cut under an array, then a plain .onnx cut while load
    parses it, each raise onnxz.Error in a child that SIGBUS would kill. The hostile cases
    are in tests/hostile/python/test_sigbus.py."""
    two, plain = str(tmp_path / "two.onnx"), str(tmp_path / "plain.onnx")
    onnxz.save(make_model(n_weights=2), two, external_data="two.data")
    onnxz.save(make_model(n_weights=2), plain)
    code = r"""
import os, sys, onnxz
two, plain = sys.argv[1:]
a = onnxz.open(two)["w1"]
os.truncate(os.path.join(os.path.dirname(two), "two.data"), 0)
try:
    a.sum()
    print("no error")
except onnxz.Error as e:
    print(e.status, "S-42" in str(e))
parse = onnxz._parse_checked
def cut_then_parse(view, name, budget):
    os.truncate(plain, 100)
    return parse(view, name, budget)
onnxz._parse_checked = cut_then_parse
try:
    onnxz.load(plain)
    print("no error")
except onnxz.Error as e:
    print(e.status, "S-42" in str(e))
"""
    env = dict(os.environ)
    if PRELOAD:
        env["LD_PRELOAD"] = PRELOAD
    r = subprocess.run([sys.executable, "-c", code, two, plain], capture_output=True,
                       text=True, timeout=60, env=env)
    assert r.returncode == 0, (r.returncode, r.stderr)
    assert r.stdout.splitlines() == ["truncated True", "truncated True"], r.stdout
