"""The weights of large initializers go one tensor at a time between a ModelProto and the
files, never through one serialized copy of the whole model:
- onnxz.save of an onnx.ModelProto streams their raw_data to the files (onnxz._skeleton,
  _onnxz._save): the same files as `onnxz convert` of the model saved by onnx.save;
- onnxz.load sets them on the parsed skeleton from the file's mapping (onnxz._from_split):
  the same ModelProto as onnx.load."""
import os
import stat
import subprocess
import sys

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import onnxz
from conftest import PRELOAD
from test_load_save import OPTION_SETS, in_dir, same_tree


def mixed_model(seed=0):
    """Initializers save streams (numpy_helper leaves data_location unset, raw_data of at
    least 64 KiB: w_big*, one just at the bound) between ones it leaves in the skeleton:
    small, typed (float_data), one with an explicit data_location DEFAULT, one just below
    the bound, and a large tensor inside a Constant node."""
    rng = np.random.default_rng(seed)

    def arr(n, dt=np.float32):
        return (rng.standard_normal(n) * 100).astype(dt)

    inits = [
        numpy_helper.from_array(arr(16), "small"),
        numpy_helper.from_array(arr(70000), "w_big0"),
        numpy_helper.from_array(arr(16384), "w_at_bound"),  # 65536 bytes: streamed
        numpy_helper.from_array(arr(16383), "below_bound"),
        helper.make_tensor("typed", TensorProto.FLOAT, [20000], arr(20000).tolist()),
        numpy_helper.from_array(arr(40000, np.int16), "w_big_int16"),
        numpy_helper.from_array(arr(300000), "w_big1"),
    ]
    explicit = numpy_helper.from_array(arr(30000), "explicit_default")
    explicit.data_location = TensorProto.DEFAULT
    inits.insert(3, explicit)
    inits[1].doc_string = "kept beside the streamed bytes"
    const = helper.make_node("Constant", [], ["c"], value=numpy_helper.from_array(
        arr(50000), "in_constant"))
    nodes = [const, helper.make_node("Add", ["w_big0", "small"], ["y"])]
    graph = helper.make_graph(nodes, "g", [], [helper.make_tensor_value_info(
        "y", TensorProto.FLOAT, None)], inits, doc_string="graph doc")
    m = helper.make_model(graph, producer_name="onnxz-tests",
                          opset_imports=[helper.make_opsetid("", 17)])
    helper.set_model_props(m, {"k": "v"})
    return m


def test_the_skeleton_streams_what_it_should():
    m = mixed_model()
    skeleton, tensors, sizes = onnxz._skeleton(m)
    assert [t.name for t in tensors] == ["w_big0", "w_at_bound", "w_big_int16", "w_big1"]
    assert sizes == [len(t.raw_data) for t in tensors]
    back = onnx.ModelProto.FromString(skeleton)
    by_name = {t.name: t for t in back.graph.initializer}
    for i, t in enumerate(tensors):
        ref = by_name[t.name]
        assert not ref.HasField("raw_data")
        assert ref.data_location == TensorProto.EXTERNAL
        assert [(e.key, e.value) for e in ref.external_data] == [("location", f"\0{i}")]
    # the rest is the model
    for t in back.graph.initializer:
        if t.name in by_name and t.data_location == TensorProto.EXTERNAL:
            t.ClearField("data_location")
            del t.external_data[:]
            t.raw_data = next(x.raw_data for x in tensors if x.name == t.name)
    assert back.SerializeToString() == m.SerializeToString()


@pytest.mark.parametrize("out,kw,args", OPTION_SETS)
def test_streamed_save_matches_the_tool(tmp_path, out, kw, args, tool):
    """onnxz.save(model) with streamed tensors writes what the tool writes from the model
    saved by onnx.save, and what a save of the serialized model writes."""
    m = mixed_model()
    single = str(tmp_path / "single.onnx")
    onnx.save(m, single)
    d = {how: str(tmp_path / how) for how in ("tool", "streamed", "serialized")}
    for p in d.values():
        os.mkdir(p)
    subprocess.run([tool, "convert", "-q", single, out] + args, check=True, cwd=d["tool"])
    in_dir(d["streamed"], lambda: onnxz.save(m, out, **kw))
    in_dir(d["serialized"], lambda: onnxz.save(m.SerializeToString(), out, **kw))
    same_tree(d["tool"], d["streamed"])
    same_tree(d["tool"], d["serialized"])


def test_streamed_encrypted_save(tmp_path, tool):
    m = mixed_model()
    p = str(tmp_path / "m.onnxc")
    onnxz.save(m, p, key="phrase")
    assert onnxz.load(p, key="phrase").SerializeToString() == m.SerializeToString()
    (tmp_path / "k").write_text("phrase\n")
    back = str(tmp_path / "back.onnx")
    subprocess.run([tool, "convert", "-q", "--key-file", str(tmp_path / "k"), p, back],
                   check=True)
    assert onnx.load(back).SerializeToString() == m.SerializeToString()


def test_references_of_the_models_own_are_refused(tmp_path):
    """A model that still holds EXTERNAL references of its own (deep in a node here): the
    streamed save declines before writing, and the serialized one refuses the model
    (spec/security.md S-40: a reference the save cannot read would lose its bytes), the
    same way for a ModelProto and its bytes, writing nothing."""
    m = mixed_model()
    ref = m.graph.node[0].attribute[0].t
    ref.ClearField("raw_data")
    ref.data_location = TensorProto.EXTERNAL
    e = ref.external_data.add()
    e.key, e.value = "location", "elsewhere.bin"
    split = onnxz._skeleton(m)
    assert split is not None
    p = str(tmp_path / "m.onnx")
    opts = onnxz._save_opts(None, None, None, None, None, False, False, None, False)
    assert onnxz._onnxz._save(split[0], p, opts, split[1], split[2]) is False
    assert os.listdir(tmp_path) == []
    for model in (m, m.SerializeToString()):
        with pytest.raises(onnxz.Error, match=r"tensor 'in_constant' is a reference to "
                           r"external data \('elsewhere.bin'\).*\(S-40\)") as e:
            onnxz.save(model, p)
        assert e.value.rule == "S-40"
    assert os.listdir(tmp_path) == []


def test_unknown_fields_are_not_dropped(tmp_path):
    """A graph with a field its schema does not know: not split (a field-by-field copy
    would drop it); saved as the serialized model is."""
    m = mixed_model()
    data = m.SerializeToString()
    # ModelProto.graph is field 7: append to the graph a varint field 900 (unknown).
    g = m.graph.SerializeToString() + bytes([0xa0, 0x38, 0x05])
    m2 = onnx.ModelProto()
    m2.ParseFromString(data)
    m2.graph.ParseFromString(g)
    assert onnxz._skeleton(m2) is None
    p, q = str(tmp_path / "a.onnx"), str(tmp_path / "b.onnx")
    onnxz.save(m2, p)
    onnxz.save(m2.SerializeToString(), q)
    with open(p, "rb") as a, open(q, "rb") as b:
        assert a.read() == b.read()


class _Raises:
    """A stand-in TensorProto whose raw_data raises exc, or has the wrong size."""

    def __init__(self, exc=None, data=b""):
        self.exc, self.data = exc, data

    @property
    def raw_data(self):
        if self.exc:
            raise self.exc
        return self.data


@pytest.mark.parametrize("name", ["m.onnx", "m.onnxz", "m.onnxc"])
def test_interrupted_streamed_save_leaves_nothing(tmp_path, name):
    """Ctrl-C (KeyboardInterrupt) or any exception while a tensor's bytes are taken ends
    the save with that exception; a tensor that changed size, with onnxz.Error. Neither
    leaves a file, not even a temporary one."""
    skeleton, tensors, sizes = onnxz._skeleton(mixed_model())
    p = str(tmp_path / name)
    key = "k" if name.endswith(".onnxc") else None
    opts = onnxz._save_opts(None, None, None, None, None, False, False, key, False)
    for i in range(len(tensors)):
        for bad, exc in ((_Raises(KeyboardInterrupt()), KeyboardInterrupt),
                         (_Raises(RuntimeError("boom")), RuntimeError),
                         (_Raises(data=b"x" * (sizes[i] - 1)), onnxz.Error)):
            ts = list(tensors)
            ts[i] = bad
            with pytest.raises(exc) as info:
                onnxz._onnxz._save(skeleton, p, opts, ts, sizes)
            if exc is onnxz.Error:
                assert info.value.status == "inconsistent"
                assert tensors[i].name in str(info.value) and p in str(info.value)
            assert os.listdir(tmp_path) == []
    # the list handed over changing meanwhile (another thread; here, the callback)
    ts = list(tensors)

    class Clears:
        def __init__(self, t):
            self.t = t

        @property
        def raw_data(self):
            ts.clear()
            return self.t.raw_data

    ts[:] = [Clears(t) for t in tensors]
    assert onnxz._onnxz._save(skeleton, p, opts, ts, sizes) is True
    os.unlink(p)


@pytest.mark.skipif(bool(PRELOAD), reason="ASan keeps freed memory in its quarantine")
@pytest.mark.parametrize("out", ["m.onnxz", "m.onnx"])
def test_streamed_save_memory(tmp_path, out):
    """Saving a 96 MiB model takes little more memory than one tensor: the peak RSS of the
    save, over the RSS before it, stays below a quarter of the model (serializing it first
    would add all of it)."""
    code = f"""
import resource, numpy as np, onnx, onnxz
from onnx import helper, numpy_helper, TensorProto
def rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096
inits = []
for i in range(24):  # 4 MiB each, built one at a time
    inits.append(numpy_helper.from_array(np.full(1 << 20, i, np.float32), f"w{{i}}"))
g = helper.make_graph([], "g", [], [], inits)
m = helper.make_model(g)
before = rss()
with open("/proc/self/clear_refs", "w") as f:  # the peak from here (ru_maxrss keeps the
    f.write("5")                                # forked parent's, which may be larger)
onnxz.save(m, {str(tmp_path / out)!r})
with open("/proc/self/status") as f:
    peak = [int(l.split()[1]) * 1024 for l in f if l.startswith("VmHWM:")][0]
print(peak - before)
"""
    r = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True,
                       text=True)
    above, model = int(r.stdout), 24 << 22
    assert above < model // 4, (above, model)
    back = onnxz.load(str(tmp_path / out))
    assert len(back.graph.initializer) == 24
    assert numpy_helper.to_array(back.graph.initializer[23])[-1] == 23


def test_streamed_load_of_every_form(tmp_path, tool):
    """Two-file, N-file (python3-onnx's layouts), archive and encrypted: the same
    ModelProto as onnx.load of the same (or of the converted) file, the large initializers
    handed over apart."""
    m = mixed_model()
    single = str(tmp_path / "single.onnx")
    onnx.save(m, single)
    for name, layout in (("two.onnx", dict(all_tensors_to_one_file=True, location="w.data")),
                         ("n.onnx", dict(all_tensors_to_one_file=False))):
        p = str(tmp_path / name)
        # (a model of its own: onnx.save moves the tensors of the one it is given out)
        onnx.save(mixed_model(), p, save_as_external_data=True, size_threshold=0, **layout)
        skeleton, pieces = onnxz._onnxz._load(p, True, None, None)
        assert len(pieces) == 5 and all(span.is_shared() for _, span in pieces)
        assert onnxz.load(p).SerializeToString() == onnx.load(p).SerializeToString()
        with onnxz.open(p) as f:
            assert f.model.SerializeToString() == \
                onnx.load(p, load_external_data=False).SerializeToString()
    (tmp_path / "k").write_text("phrase\n")
    for name, args, key in (("a.onnxz", [], None),
                            ("e.onnxc", ["--key-file", str(tmp_path / "k")], "phrase")):
        p = str(tmp_path / name)
        subprocess.run([tool, "convert", "-q", single, p] + args, check=True)
        back = str(tmp_path / (name + ".onnx"))
        subprocess.run([tool, "convert", "-q", p, back] + args, check=True)
        assert onnxz.load(p, key=key).SerializeToString() == \
            onnx.load(back).SerializeToString()
    with onnxz.open(single) as f:  # tensors inside the .onnx: handed over apart too
        assert f.model.SerializeToString() == m.SerializeToString()


@pytest.mark.skipif(bool(PRELOAD), reason="ASan reserves and keeps memory of its own")
@pytest.mark.parametrize("form", ["m.onnxz", "two.onnx"])
def test_streamed_load_memory(tmp_path, form):
    """Loading a 96 MiB model holds its weights once: it succeeds with the process's
    private memory (RLIMIT_DATA: the file's read-only mapping does not count) limited to
    what it had plus 1.5 times the model. A serialized copy of the model on the way, as
    before, needs twice the model and fails there (protobuf aborts on std::bad_alloc)."""
    m = helper.make_model(helper.make_graph([], "g", [], [], [
        numpy_helper.from_array(np.full(1 << 20, i, np.float32), f"w{i}")
        for i in range(24)]))
    p = str(tmp_path / form)
    if form.endswith(".onnxz"):
        onnxz.save(m, p)
    else:
        onnx.save(m, p, save_as_external_data=True, location="w.data")
    code = f"""
import resource, onnxz
def vmdata():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmData:"):
                return int(line.split()[1]) * 1024
limit = vmdata() + (24 << 22) * 3 // 2
resource.setrlimit(resource.RLIMIT_DATA, (limit, limit))
m = onnxz.load({p!r})
assert len(m.graph.initializer) == 24
assert m.graph.initializer[23].raw_data[:4] == bytes.fromhex("0000b841")  # 23.0f
"""
    subprocess.run([sys.executable, "-c", code], check=True)


def resident_pages(fd):
    """How many pages of the file open as fd are in the page cache (mincore)."""
    import ctypes
    import mmap
    size = os.fstat(fd).st_size
    libc = ctypes.CDLL(None, use_errno=True)
    m = mmap.mmap(fd, size, access=mmap.ACCESS_COPY)  # private: from_buffer needs writable
    try:
        first = ctypes.c_char.from_buffer(m)
        vec = (ctypes.c_ubyte * ((size + mmap.PAGESIZE - 1) // mmap.PAGESIZE))()
        r = libc.mincore(ctypes.c_void_p(ctypes.addressof(first)), ctypes.c_size_t(size), vec)
        assert r == 0, os.strerror(ctypes.get_errno())
        del first
        return sum(v & 1 for v in vec)
    finally:
        m.close()


def cached_file(path, size=4 << 20):
    """A file of size bytes on disk and in the page cache; its descriptor, kept open."""
    with open(path, "wb") as f:
        f.write(os.urandom(size))
        f.flush()
        os.fsync(f.fileno())
    fd = os.open(path, os.O_RDONLY)
    while os.read(fd, 1 << 20):
        pass
    assert resident_pages(fd) == size // 4096
    return fd


@pytest.mark.parametrize("out,kw", [("m.onnxz", {}), ("m.onnx", dict(external_data="m.data")),
                                    ("m.onnx", dict(external_data="m.data",
                                                    max_file_size=300000))])
def test_save_releases_what_it_replaces(tmp_path, out, kw):
    """save drops the cached pages of the files it replaces (the target; its data file)
    before writing their successors (onnx.save reuses that memory by truncating in place);
    the old files stay whole until the rename, as ever. Nothing else: not a file with
    another link, not a link's target (the link is replaced), not a numbered part. A FIFO
    at the target is written through, never replaced (spec/security.md S-41): a .onnx
    reaches its reader, an archive (patched as it is written) is refused before it is opened."""
    p = str(tmp_path / out)
    data = [str(tmp_path / "m.data")] if "external_data" in kw else []
    fds = [cached_file(name) for name in [p] + data]
    others = [cached_file(str(tmp_path / name)) for name in ("elsewhere", "m.data.1")]
    try:
        onnxz.save(mixed_model(), p, **kw)
        # (a .onnx model with data files is read again for the parts it named, E-25)
        released = fds[1:] if data else fds
        assert [resident_pages(fd) for fd in released] == [0] * len(released)
        assert resident_pages(others[0]) == 1024
        for link in (os.symlink, os.link):
            os.unlink(p)
            link(str(tmp_path / "elsewhere"), p)
            onnxz.save(mixed_model(), p, **kw)
            assert not os.path.islink(p) and resident_pages(others[0]) == 1024
        os.unlink(p)
        os.mkfifo(p)
        reader = subprocess.Popen(["cat", p], stdout=subprocess.PIPE)
        try:
            if out.endswith(".onnxz"):
                with pytest.raises(onnxz.Error, match="is a pipe"):
                    onnxz.save(mixed_model(), p, **kw)
                assert reader.poll() is None  # refused unopened: the reader still waits
            else:
                onnxz.save(mixed_model(), p, **kw)
                got = onnx.load_from_string(reader.communicate(timeout=60)[0])
                assert len(got.graph.initializer) == len(mixed_model().graph.initializer)
            assert stat.S_ISFIFO(os.lstat(p).st_mode)
        finally:
            reader.kill()
            reader.wait()
    finally:
        for fd in fds + others:
            os.close(fd)


def test_models_streaming_would_not_pay_for(tmp_path):
    """Many small initializers beside few large ones: serialized whole (the Python
    copying of each small one would cost more than the copy streaming saves)."""
    inits = [numpy_helper.from_array(np.full(4, i, np.float32), f"s{i}") for i in range(2000)]
    inits.append(numpy_helper.from_array(np.zeros(1 << 16, np.float32), "big"))  # 256 KiB
    m = helper.make_model(helper.make_graph([], "g", [], [], inits))
    assert onnxz._skeleton(m) is None
    del inits[:1990]  # 10 small ones: 80 KiB against 256 KiB streamed
    m = helper.make_model(helper.make_graph([], "g", [], [], inits))
    assert [t.name for t in onnxz._skeleton(m)[1]] == ["big"]


def test_strings_that_are_not_utf8(tmp_path):
    """A model whose strings are not UTF-8 (protobuf keeps them; Python cannot copy them
    field by field) is saved, serialized whole, as before."""
    m = mixed_model()
    data = m.SerializeToString() + b"\x32\x02\xff\xfe"  # ModelProto.doc_string (6)
    bad = onnx.ModelProto.FromString(data)
    assert onnxz._skeleton(bad) is None
    p, q = str(tmp_path / "a.onnxz"), str(tmp_path / "b.onnxz")
    onnxz.save(bad, p)
    onnxz.save(data, q)
    with open(p, "rb") as a, open(q, "rb") as b:
        assert a.read() == b.read()
