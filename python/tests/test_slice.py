"""File.get_slice (onnxz/slice.h): random basic indices over random shapes and dtypes, in
an archive, a .onnx with external data and an encrypted file, equal to numpy's indexing of
the whole tensor (the oracle); a leading slice of a mapped file is a view of the mapping;
the refusals."""
import numpy as np
import onnx
import pytest
from onnx import helper, numpy_helper

import onnxz

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
