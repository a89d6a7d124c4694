"""File.get_slice (onnxz/slice.h): random basic indices over random shapes and dtypes, in
an archive, a .onnx with external data and an encrypted file, equal to numpy's indexing of
the whole tensor (the oracle); a leading slice of a mapped file is a view of the mapping;
the refusals."""
import builtins
import subprocess
import sys
import zipfile

import numpy as np
import onnx
import pytest
from onnx import helper, numpy_helper

import onnxz
from conftest import PRELOAD

DTYPES = (np.float32, np.float64, np.float16, np.int8, np.uint8, np.int16, np.int32,
          np.int64, np.uint64, np.bool_, np.complex64)


def random_tensors(rng, n=14):
    """n arrays of random ranks (0 to 4), dims (0 to 9) and dtypes."""
    out = {}
    for i in range(n):
        shape = tuple(int(d) for d in rng.integers(0 if i % 5 == 0 else 1, 10,
                                                   size=int(rng.integers(0, 5))))
        dt = DTYPES[i % len(DTYPES)]
        out[f"t{i}"] = (rng.standard_normal(shape) * 50).astype(dt)
    # large enough for an entry and a data file whatever the threshold
    out["big"] = rng.standard_normal((64, 33, 5)).astype(np.float32)
    return out


def random_part(rng, d):
    """An index of one dimension of size d: an int inside it, or a slice."""
    kind = rng.integers(0, 4)
    if kind == 0 and d > 0:
        return int(rng.integers(-d, d))
    if kind == 1:
        return slice(None)
    end = lambda: None if rng.integers(0, 4) == 0 else int(rng.integers(-d - 3, d + 4))
    return slice(end(), end(), None if rng.integers(0, 2) else int(rng.integers(1, 4)))


def random_index(rng, shape):
    """A basic index numpy takes: ints, slices (steps of 1 or more), fewer indices than
    dims, or an Ellipsis standing for a run of dims."""
    parts = [random_part(rng, d) for d in shape]
    if parts and rng.integers(0, 4) == 0:
        a = int(rng.integers(0, len(parts) + 1))
        b = int(rng.integers(a, len(parts) + 1))
        parts[a:b] = [Ellipsis]
    else:
        parts = parts[:int(rng.integers(0, len(parts) + 1))]
    return parts[0] if len(parts) == 1 and rng.integers(0, 2) else tuple(parts)


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """{form: (path, key)} of one model of random tensors, and the tensors."""
    rng = np.random.default_rng(30)
    tensors = random_tensors(rng)
    model = helper.make_model(helper.make_graph(
        [], "g", [], [], [numpy_helper.from_array(a, n) for n, a in tensors.items()]))
    d = tmp_path_factory.mktemp("slice")
    forms = {"archive": (str(d / "m.onnxz"), None), "external": (str(d / "m.onnx"), None),
             "encrypted": (str(d / "m.onnxc"), "k")}
    onnxz.save(model, forms["archive"][0], threshold=64)
    onnxz.save(model, forms["external"][0], external_data="m.data", threshold=64)
    onnxz.save(model, forms["encrypted"][0], key="k")
    return forms, tensors


@pytest.mark.parametrize("form", ["archive", "external", "encrypted"])
def test_slices_equal_numpy_indexing(files, form):
    forms, tensors = files
    path, key = forms[form]
    rng = np.random.default_rng(12345)
    with onnxz.open(path, key=key) as f:
        for name, want in tensors.items():
            s = f.get_slice(name)
            assert s.shape == want.shape and s.dtype == f[name].dtype
            whole = f[name]
            for _ in range(60):
                idx = random_index(rng, want.shape)
                got = s[idx]
                ref = whole[idx]
                assert got.dtype == ref.dtype and got.shape == ref.shape, (name, idx)
                assert np.array_equal(got, ref), (name, idx)
                assert np.array_equal(got, want[idx]), (name, idx)


@pytest.mark.parametrize("form", ["archive", "external"])
def test_leading_slice_is_a_view_of_the_mapping(files, form):
    forms, _ = files
    with onnxz.open(forms[form][0]) as f:
        whole = f["big"]
        part = f.get_slice("big")[10:20]
    lo = whole.__array_interface__["data"][0]
    at = part.__array_interface__["data"][0]
    assert at == lo + 10 * 33 * 5 * 4  # inside the whole tensor's view: no copy
    assert not part.flags.writeable
    assert np.array_equal(part, whole[10:20])  # and valid after the file is closed
    with onnxz.open(forms[form][0]) as f:  # runs gathered: a buffer of its own
        gathered = f.get_slice("big")[:, 3]
    at = gathered.__array_interface__["data"][0]
    assert not lo <= at < lo + whole.nbytes and np.array_equal(gathered, whole[:, 3])


def test_refusals(files):
    forms, _ = files
    with onnxz.open(forms["archive"][0]) as f:
        s = f.get_slice("big")
        with pytest.raises(onnxz.Error, match="step"):
            s[::-1]
        with pytest.raises(onnxz.Error, match="step"):
            s[:, ::0]
        with pytest.raises(onnxz.Error, match="outside dimension 1"):
            s[0, 33]
        with pytest.raises(onnxz.Error, match="outside dimension 0"):
            s[-65]
        with pytest.raises(IndexError):
            s[0, 0, 0, 0]
        with pytest.raises(IndexError):
            s[..., 0, ...]
        with pytest.raises(TypeError):
            s[None]
        with pytest.raises(KeyError):
            f.get_slice("nothing")
    assert np.array_equal(s.get_shape(), [64, 33, 5])
    with pytest.raises(ValueError, match="closed"):
        s[0]


def test_huge_python_ints_are_clamped(files):
    forms, tensors = files
    with onnxz.open(forms["external"][0]) as f:
        s = f.get_slice("big")
        assert np.array_equal(s[-(1 << 80):1 << 80], tensors["big"])
        with pytest.raises(onnxz.Error, match="outside"):
            s[1 << 80]


def test_string_tensor_is_refused(tmp_path):
    t = helper.make_tensor("s", onnx.TensorProto.STRING, [2], vals=[b"a", b"b"])
    model = helper.make_model(helper.make_graph([], "g", [], [], [t]))
    onnxz.save(model, str(tmp_path / "s.onnx"))
    with onnxz.open(str(tmp_path / "s.onnx")) as f:
        with pytest.raises(onnxz.Error, match="STRING"):
            f.get_slice("s")[0]


@pytest.mark.parametrize("form", ["archive", "external", "encrypted"])
def test_read_into_a_buffer_of_the_caller(files, form):
    forms, tensors = files
    path, key = forms[form]
    with onnxz.open(path, key=key) as f:
        for name, want in tensors.items():
            out = np.empty_like(want)
            assert f.read_into(name, out) == want.nbytes
            assert np.array_equal(out, want)
        part = np.zeros((5, 33), dtype=np.float32)
        assert f.read_into("big", part, (slice(3, 8), Ellipsis, 2)) == part.nbytes
        assert np.array_equal(part, tensors["big"][3:8, :, 2])
        with pytest.raises(onnxz.Error, match="a buffer of 16 bytes"):
            f.read_into("big", bytearray(16))
        with pytest.raises((TypeError, BufferError)):
            f.read_into("big", bytes(100000))


@pytest.mark.parametrize("form", ["archive", "external", "encrypted"])
def test_read_into_many_equals_each_tensor(files, form):
    """read_into_many (oz_reader_read_many) gives what f[name] and f[name][index] give,
    on 1, 2 and all threads, from a dict and from a list with slices."""
    forms, tensors = files
    path, key = forms[form]
    with onnxz.open(path, key=key) as f:
        for threads in (1, 2, -1):
            outs = {name: np.full_like(want, 7) for name, want in tensors.items()}
            total = sum(a.nbytes for a in tensors.values())
            assert f.read_into_many(outs, num_threads=threads) == total
            for name, want in tensors.items():
                assert np.array_equal(outs[name], want), (name, threads)
            parts = [("big", np.zeros((5, 33), np.float32), (slice(3, 8), Ellipsis, 2)),
                     ("big", np.zeros((64, 5), np.float32), (slice(None), 7)),
                     ("t1", np.zeros_like(tensors["t1"]))]
            assert f.read_into_many(parts, num_threads=threads) == sum(p[1].nbytes for p in parts)
            assert np.array_equal(parts[0][1], tensors["big"][3:8, :, 2])
            assert np.array_equal(parts[1][1], tensors["big"][:, 7])
            assert np.array_equal(parts[2][1], tensors["t1"])
        assert f.read_into_many({}) == 0


def test_read_into_many_refusals(files):
    """A wrong size, a bad name or a read-only buffer: nothing written into any buffer."""
    forms, tensors = files
    with onnxz.open(forms["external"][0]) as f:
        good = np.zeros_like(tensors["big"])
        for bad, exc, says in (
                (bytearray(tensors["t1"].nbytes + 1), onnxz.Error, "'t1': a buffer of"),
                (bytes(tensors["t1"].nbytes), (TypeError, BufferError), None)):
            with pytest.raises(exc, match=says):
                f.read_into_many([("big", good), ("t1", bad)], num_threads=2)
            assert not good.any()
        with pytest.raises(KeyError):
            f.read_into_many({"big": good, "nothing": bytearray(4)})
        with pytest.raises(onnxz.Error, match="for the 20 bytes of its slice"):
            f.read_into_many([("big", bytearray(8), (0, 0))])
    with pytest.raises(ValueError, match="closed"):
        f.read_into_many({"big": good})


def test_read_into_many_is_interrupted(tmp_path):
    """Ctrl-C during a long read_into_many (the same 4 MiB read again and again) raises
    KeyboardInterrupt at once, on one thread and on two."""
    import signal
    import time
    big = np.arange(1 << 20, dtype=np.float32)
    model = helper.make_model(helper.make_graph([], "g", [], [],
                                                [numpy_helper.from_array(big, "w")]))
    path = str(tmp_path / "m.onnx")
    onnxz.save(model, path, external_data="m.data")
    out = np.empty_like(big)

    def interrupt(*_):
        raise KeyboardInterrupt

    old = signal.signal(signal.SIGALRM, interrupt)
    try:
        with onnxz.open(path) as f:
            for threads in (1, 2):
                start = time.monotonic()
                with pytest.raises(KeyboardInterrupt):
                    signal.setitimer(signal.ITIMER_REAL, 0.1)
                    f.read_into_many([("w", out)] * 20000, num_threads=threads)  # 80 GiB
                assert time.monotonic() - start < 5
                signal.setitimer(signal.ITIMER_REAL, 0)
            assert f.read_into_many({"w": out}) == big.nbytes and np.array_equal(out, big)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


ROWS, COLS = 65536, 1024  # float32: 256 MiB, row i all i


def peak_above(setup, measured, after):
    """Runs setup, then measured, then after in a new Python process and returns the peak
    RSS while measured ran over the RSS before it (VmHWM, reset through clear_refs): a
    child's getrusage peak would hold what it shared with this process at the fork."""
    code = ("import numpy as np, onnxz\n" + setup +
            "with open('/proc/self/statm') as _f:\n"
            "    _before = int(_f.read().split()[1]) * 4096\n"
            "with open('/proc/self/clear_refs', 'w') as _c:\n"
            "    _c.write('5')\n" + measured +
            "with open('/proc/self/status') as _st:\n"
            "    _peak = [int(l.split()[1]) * 1024 for l in _st if l.startswith('VmHWM:')][0]\n"
            + after + "print(_peak - _before)\n")
    r = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True,
                       text=True)
    return int(r.stdout)


def rows(lo, hi):
    return np.broadcast_to(np.arange(lo, hi, dtype=np.float32)[:, None], (hi - lo, COLS))


def deflated_archive(path, n=ROWS, bad_crc=False):
    """An archive (built with zipfile, the oracle's writer) whose one tensor "z" (FLOAT
    [n, 1024], row i all i: 256 MiB by default) is a DEFLATED entry (about 1/1000 of
    it), written in pieces: never whole in memory. bad_crc: its CRC-32 changed in both
    its headers (an entry whose bytes changed)."""
    t = onnx.TensorProto(name="z", data_type=onnx.TensorProto.FLOAT, dims=[n, COLS],
                         data_location=onnx.TensorProto.EXTERNAL)
    t.external_data.add(key="location", value="z")
    t.external_data.add(key="length", value=str(n * COLS * 4))
    model = helper.make_model(helper.make_graph([], "g", [], [], [t]))
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        with z.open("z", "w") as w:
            for lo in range(0, n, 4096):
                w.write(rows(lo, min(n, lo + 4096)).tobytes())
        z.writestr(zipfile.ZipInfo("__MODEL_PROTO"), model.SerializeToString())
    if bad_crc:
        with zipfile.ZipFile(path) as z:
            local, central = z.getinfo("z").header_offset + 14, z.start_dir + 16
        with builtins.open(path, "r+b") as f:
            for at in (local, central):  # "z" is the first entry in both
                f.seek(at)
                crc = int.from_bytes(f.read(4), "little") ^ 1
                f.seek(at)
                f.write(crc.to_bytes(4, "little"))
    return path


@pytest.fixture(scope="module")
def deflated(tmp_path_factory):
    return deflated_archive(str(tmp_path_factory.mktemp("deflated") / "z.onnxz"))


@pytest.mark.skipif(bool(PRELOAD),
                    reason="ASan keeps freed memory in its quarantine")
def test_slice_of_a_deflated_entry_costs_the_slice(deflated):
    """A slice of a 256 MiB DEFLATED entry is inflated as a stream up to its last byte,
    the bytes before it thrown away: the peak RSS of the reads, over the RSS before them,
    stays far below the tensor (inflating it whole would add all 256 MiB); each slice
    equals numpy's slice of the whole tensor (row i all i)."""
    above = peak_above(f"""
f = onnxz.open({deflated!r})
s = f.get_slice("z")
""", """
parts = [s[65530:], s[1000:1003, 7], s[40000:40600:300, ::100], s[-1, -4:]]
""", f"""
np.save({deflated + ".npy"!r}, np.concatenate([p.ravel() for p in parts]))
""")
    assert above < 24 << 20, above
    whole = rows(0, ROWS)
    want = [whole[65530:], whole[1000:1003, 7], whole[40000:40600:300, ::100],
            whole[-1, -4:]]
    got = np.load(deflated + ".npy")
    assert np.array_equal(got, np.concatenate([p.ravel() for p in want]))


def test_deflated_slices_equal_numpy(deflated):
    whole = rows(0, ROWS)
    with onnxz.open(deflated) as f:
        s = f.get_slice("z")
        for idx in [(slice(0, 2),), (5, slice(1, 9, 3)), (slice(ROWS - 3, None), 0),
                    (slice(100, 90),), (Ellipsis, slice(-2, None))]:
            assert np.array_equal(s[idx], whole[idx]), idx
        out = np.empty((2, COLS), np.float32)
        assert f.read_into("z", out, (slice(7, 9),)) == out.nbytes
        assert np.array_equal(out, whole[7:9])


@pytest.mark.skipif(bool(PRELOAD),
                    reason="ASan keeps freed memory in its quarantine")
def test_read_into_many_of_a_deflated_entry_rss_is_the_slices(deflated):
    """read_into_many (oz_reader_read_many) of three one-row slices of a 256 MiB DEFLATED
    entry inflates each as a stream into its buffer, as read_into does: the peak RSS of
    the call, over the RSS before it, stays far below the tensor (each request inflating
    it whole, as it once did, held 256 MiB more per request); the rows equal numpy's (row
    i all i)."""
    above = peak_above(f"""
f = onnxz.open({deflated!r})
outs = [np.empty((1, {COLS}), np.float32) for _ in range(3)]
for o in outs:
    o.fill(-1)  # touched before the peak is reset
rows = (0, 30000, {ROWS} - 2)
""", """
n = f.read_into_many([("z", o, (slice(i, i + 1),)) for i, o in zip(rows, outs)])
""", """
assert n == sum(o.nbytes for o in outs), n
assert all((o == i).all() for i, o in zip(rows, outs))
""")
    assert above < 24 << 20, above


def test_deflated_crc_is_checked_on_whole_reads_only(tmp_path):
    """spec/onnxz-zip.md Z-79: a slice that reads every byte of its entry is checked as a
    whole read is (a DEFLATED entry's CRC-32, Z-77); a part is not, its CRC covering bytes
    it does not read."""
    p = deflated_archive(str(tmp_path / "bad.onnxz"), 64, bad_crc=True)
    with onnxz.open(p) as f:
        assert np.array_equal(f.get_slice("z")[3:5], rows(3, 5))
        assert np.array_equal(f.get_slice("z")[63], rows(63, 64)[0])  # to the last byte
        with pytest.raises(onnxz.Error, match="CRC-32"):
            f.get_slice("z")[:]
        with pytest.raises(onnxz.Error, match="CRC-32"):
            f["z"]
        out = np.empty((64, COLS), np.float32)
        with pytest.raises(onnxz.Error, match="CRC-32"):
            f.read_into("z", out)


def packed(nibbles):
    """4-bit elements packed as ONNX packs them: two a byte, the first in the low half,
    an odd count's last byte padded with 0."""
    n = list(nibbles) + [0] * (len(nibbles) % 2)
    return bytes((n[i] & 15) | (n[i + 1] & 15) << 4 for i in range(0, len(n), 2))


@pytest.mark.parametrize("data_type,name", [(22, "INT4"), (21, "UINT4"), (23, "FLOAT4E2M1")])
def test_sub_byte_types_slice_on_byte_boundaries(tmp_path, data_type, name):
    """The issue's rule for 4-bit types: slices along the leading dims whose runs start
    and end on byte boundaries give their packed bytes (the bytes of the elements numpy
    would take, packed as ONNX packs them); any other is refused with onnxz.Error naming
    the tensor and its type. (python3-onnx 1.12 has no 4-bit types: the tensors are
    made from their bytes.)"""
    rng = np.random.default_rng(int(data_type))
    vals = rng.integers(0, 16, size=(8, 6))
    odd = rng.integers(0, 16, size=(3, 3))
    tensors = [onnx.TensorProto(name="even", data_type=data_type, dims=[8, 6],
                                raw_data=packed(vals.ravel())),
               onnx.TensorProto(name="odd", data_type=data_type, dims=[3, 3],
                                raw_data=packed(odd.ravel()))]
    model = helper.make_model(helper.make_graph([], "g", [], [], tensors))
    for path in (str(tmp_path / "m.onnxz"), str(tmp_path / "m.onnx")):
        onnxz.save(model, path, threshold=0) if path.endswith("z") else onnxz.save(model, path)
        with onnxz.open(path) as f:
            s = f.get_slice("even")
            assert s.get_dtype() == {22: "INT4", 21: "UINT4", 23: "F4"}[data_type]
            for idx in [slice(2, 5), 3, slice(None), slice(0, 8, 2), (slice(1, 3), slice(2, 6))]:
                want = packed(vals[idx].ravel())
                assert s[idx].tobytes() == want and s[idx].dtype == np.uint8, idx
            for idx in [(slice(None), 1), (0, slice(1, 4)), (slice(None), slice(0, 3))]:
                with pytest.raises(onnxz.Error, match=f"'even'.*{name}.*splits bytes"):
                    s[idx]
            o = f.get_slice("odd")
            assert o[0:2].tobytes() == packed(odd[0:2].ravel())
            assert o[2:].tobytes() == packed(odd[2:].ravel())  # to the padded end
            for idx in [1, slice(1, 2), slice(0, 1)]:
                with pytest.raises(onnxz.Error, match="splits bytes"):
                    o[idx]


def test_safetensors_compatibility_methods(files, tmp_path):
    """What code written for safetensors' safe_open calls works unchanged: keys(),
    get_tensor(), get_slice(...).get_shape() / get_dtype() / [index], metadata()."""
    forms, tensors = files
    with onnxz.open(forms["archive"][0]) as f:
        assert sorted(f.keys()) == sorted(tensors)
        for name, want in tensors.items():
            assert np.array_equal(f.get_tensor(name), want)
            s = f.get_slice(name)
            assert s.get_shape() == list(want.shape)
            assert s.get_dtype() == {np.float32: "F32", np.float64: "F64", np.float16: "F16",
                                     np.int8: "I8", np.uint8: "U8", np.int16: "I16",
                                     np.int32: "I32", np.int64: "I64", np.uint64: "U64",
                                     np.bool_: "BOOL", np.complex64: "C64"}[want.dtype.type]
        big = f.get_slice("big")
        vocab, hidden = big.get_shape()[:2]
        assert np.array_equal(big[:, :hidden // 2], tensors["big"][:, :hidden // 2])
        assert f.metadata() == {}
    model = helper.make_model(helper.make_graph([], "g", [], [], []))
    helper.set_model_props(model, {"format": "pt", "k": "v"})
    onnxz.save(model, str(tmp_path / "meta.onnxz"))
    with onnxz.open(str(tmp_path / "meta.onnxz")) as f:
        assert f.metadata() == {"format": "pt", "k": "v"}
