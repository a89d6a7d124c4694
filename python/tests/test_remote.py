"""Models at http(s):// URLs (spec/remote.md), served by Debian's nginx with range requests
(tests/remote/nginx_env.py): onnxz.load, onnxz.open and onnxz.convert read them as they
read the same files on disk, against python3-onnx and the onnxz tool on the local copies;
a URL is never written (R-14)."""
import json
import os
import subprocess
import sys
import threading
import zipfile

import numpy as np
import onnx
import pytest

import onnxz
from onnxz import _onnxz
from conftest import make_model

sys.path.insert(0, os.path.join(os.path.dirname(__file__), os.pardir, os.pardir, "tests",
                                "remote"))
import nginx_env  # noqa: E402

_WHY_NOT = ("this onnxz was built without libcurl" if not _onnxz._http_supported()
            else nginx_env.available())
pytestmark = pytest.mark.skipif(_WHY_NOT is not None, reason=str(_WHY_NOT))

FORMS = ("m.onnx", "two.onnx", "n.onnx", "m.onnxz")


@pytest.fixture(scope="module")
def served(tmp_path_factory, tool):
    """(nginx, root): the same model as a single .onnx, two-file, N-file and an archive."""
    root = tmp_path_factory.mktemp("root")
    model = make_model(n_weights=6, size=128, extra_types=True)
    onnx.save(model, str(root / "m.onnx"))
    for argv in (["m.onnx", "m.onnxz"], ["m.onnx", "two.onnx", "--external-data", "two.data"],
                 ["m.onnx", "n.onnx", "--external-data", "n.data", "--max-file-size", "100000"]):
        subprocess.run([tool, "convert", *argv], cwd=root, check=True, capture_output=True)
    assert os.path.exists(root / "n.data.1")  # really split
    # a two-file model whose data file is larger than a read-ahead window (8 MiB, R-11)
    rng = np.random.default_rng(1)
    big = onnx.helper.make_model(onnx.helper.make_graph(
        [], "big", [], [], [onnx.numpy_helper.from_array(
            rng.standard_normal(1 << 20).astype(np.float32), f"b{i}") for i in range(5)]))
    onnx.save(big, str(root / "big.onnx"), save_as_external_data=True, location="big.data",
              size_threshold=0)
    with nginx_env.Nginx(str(root), str(tmp_path_factory.mktemp("nginx"))) as ng:
        yield ng, root


@pytest.mark.parametrize("name", FORMS)
def test_load_equals_onnx_load_of_the_local_file(served, name):
    ng, root = served
    want = onnx.load(str(root / name)) if name != "m.onnxz" else onnx.load(str(root / "m.onnx"))
    got = onnxz.load(ng.url(name))
    assert got.SerializeToString() == want.SerializeToString()
    # references kept: as onnx.load(..., load_external_data=False) of the local file
    if name != "m.onnxz":
        want = onnx.load(str(root / name), load_external_data=False)
        got = onnxz.load(ng.url(name), load_external_data=False)
        assert got.SerializeToString() == want.SerializeToString()


@pytest.mark.parametrize("name", FORMS)
def test_open_gives_the_local_arrays_and_info(served, tool, name):
    ng, root = served
    url = ng.url(name)
    with onnxz.open(url) as f, onnxz.open(str(root / name)) as g:
        assert f.names == g.names and len(f.names) > 10
        for n in g.names:
            a, b = f[n], g[n]
            assert a.dtype == b.dtype and a.shape == b.shape and np.array_equal(a, b)
            assert not a.flags.writeable
        assert f.is_archive == g.is_archive == (name == "m.onnxz")
        info = f.info()
        assert info["file"] == url and info["file_size"] == os.path.getsize(root / name)
        r = subprocess.run([tool, "info", "--json", url], capture_output=True, text=True,
                           check=True)
        theirs = json.loads(r.stdout)
        local = g.info()
        if local["archive"]:
            # A remote entry's data offset is unknown until its local header has been
            # read, which depends on what the reader fetched before: None or 64.
            for d in (info, theirs):
                assert d["archive"]["min_tensor_alignment"] in (None, 64)
                d["archive"]["min_tensor_alignment"] = 64
        assert info == theirs
        assert {**info, "file": local["file"]} == local
        f.verify()


def test_an_archive_tensor_is_fetched_when_asked_for(served):
    """Opening a remote archive reads its directory and model, not its tensors: each
    tensor asked for afterwards costs one request, of little more than its bytes."""
    ng, root = served
    with onnxz.open(str(root / "m.onnxz")) as g:
        sizes = {n: g[n].nbytes for n in g.names if n.startswith("w")}
    mark = ng.mark()
    with onnxz.open(ng.url("m.onnxz")) as f:
        opened = ng.requests_since(mark)
        mark = ng.mark()
        for n in sizes:
            f[n]
        reqs = ng.requests_since(mark)
    assert len(opened) <= 3  # none when this process opened it in the last 10 s
    assert len(reqs) == len(sizes)
    assert sum(r["body_bytes_sent"] for r in reqs) <= sum(sizes.values()) + 4096 * len(sizes)


def test_a_remote_onnx_leaves_its_data_files_where_they_are(served):
    """open of a URL's .onnx reads the .onnx and each data file's tail, not the data;
    .model and info() cost no request; a tensor costs a read-ahead window at most."""
    ng, root = served
    size = os.path.getsize(root / "big.data")
    want = onnx.load(str(root / "big.onnx"))
    mark = ng.mark()
    with onnxz.open(ng.url("big.onnx")) as f:
        data = [r for r in ng.requests_since(mark) if "/big.data" in r["request"]]
        assert sum(r["body_bytes_sent"] for r in data) <= 66560
        mark = ng.mark()
        m, info = f.model, f.info()
        assert ng.requests_since(mark) == []
        assert (m.SerializeToString() ==
                onnx.load(str(root / "big.onnx"), load_external_data=False).SerializeToString())
        assert info["external_data"]["bytes"] == size
        mark = ng.mark()
        a = f["b3"]
        sent = sum(r["body_bytes_sent"] for r in ng.requests_since(mark))
        assert a.nbytes <= sent <= (8 << 20) + 66560 < size
        assert not a.flags.writeable
        for t in want.graph.initializer:
            assert np.array_equal(f[t.name], onnx.numpy_helper.to_array(t))


def test_a_slice_reads_its_runs_alone(served):
    """get_slice from a URL reads each contiguous run of the slice with one range request,
    never the whole tensor: from a data file of 4 MiB tensors, and from an archive's
    entries (after the entry's local header); what it gives is numpy's indexing of the
    local file."""
    ng, root = served
    with onnxz.open(str(root / "big.onnx")) as g, onnxz.open(str(root / "m.onnx")) as h:
        b2, w1 = g["b2"], h["w1"]
    with onnxz.open(ng.url("big.onnx")) as f:
        mark = ng.mark()
        part = f.get_slice("b2")[1000:3000]
        reqs = [r for r in ng.requests_since(mark) if "/big.data" in r["request"]]
    assert np.array_equal(part, b2[1000:3000])
    ranged = [r for r in reqs if r["body_bytes_sent"] == part.nbytes]
    assert len(ranged) == 1 and sum(r["body_bytes_sent"] for r in reqs) <= part.nbytes + 66560
    with onnxz.open(ng.url("m.onnxz")) as f:
        mark = ng.mark()
        part = f.get_slice("w1")[10:20, 0:64]
        reqs = ng.requests_since(mark)
    assert np.array_equal(part, w1[10:20, 0:64])
    runs = [r for r in reqs if r["body_bytes_sent"] == 64 * 4]
    assert len(runs) == 10 and len(reqs) <= 11  # 10 rows, and the entry's local header
    assert sum(r["body_bytes_sent"] for r in reqs) <= part.nbytes + 4096


@pytest.fixture(scope="module")
def random_served(tmp_path_factory, tool):
    """(nginx, tensors, forms): test_slice's random tensors as an archive, a two-file and an
    N-file model, served by nginx."""
    from test_slice import random_tensors
    root = tmp_path_factory.mktemp("random")
    tensors = random_tensors(np.random.default_rng(31))
    model = onnx.helper.make_model(onnx.helper.make_graph(
        [], "g", [], [], [onnx.numpy_helper.from_array(a, n) for n, a in tensors.items()]))
    onnxz.save(model, str(root / "r.onnxz"), threshold=64)
    onnxz.save(model, str(root / "r2.onnx"), external_data="r2.data", threshold=64)
    onnx.save(model, str(root / "src.onnx"))
    subprocess.run([tool, "convert", "src.onnx", "rn.onnx", "--external-data", "rn.data",
                    "--max-file-size", "8000", "--threshold", "64"], cwd=root, check=True,
                   capture_output=True)
    assert os.path.exists(root / "rn.data.1")  # really split
    with nginx_env.Nginx(str(root), str(tmp_path_factory.mktemp("nginx"))) as ng:
        yield ng, tensors, ("r.onnxz", "r2.onnx", "rn.onnx")


def test_random_slices_from_a_url_equal_numpy(random_served):
    """The property test of test_slice.py over HTTP: random basic indices of random shapes
    and dtypes, read with get_slice from the URL of each form, equal numpy's indexing of
    the tensor (the oracle), with a fixed seed."""
    from test_slice import random_index
    ng, tensors, forms = random_served
    rng = np.random.default_rng(54321)
    for name in forms:
        with onnxz.open(ng.url(name)) as f:
            for t, want in tensors.items():
                s = f.get_slice(t)
                assert s.shape == want.shape
                for _ in range(12):
                    idx = random_index(rng, want.shape)
                    got = s[idx]
                    assert got.shape == want[idx].shape, (name, t, idx)
                    assert np.array_equal(got, want[idx]), (name, t, idx)


def test_slices_of_deflated_and_changed_entries(served, tmp_path):
    """spec/onnxz-zip.md Z-79 from a URL: a slice of a DEFLATED entry (16 MiB, row i all
    i) is inflated from one streamed request, given up after its last byte, and equals
    numpy's slice of the whole; in a copy of m.onnxz whose one byte of w1 changed (its
    headers untouched), a slice short of the whole entry is not checked against the CRC
    (it reads the changed byte as it is), the whole tensor is (R-12), as its whole read."""
    from test_slice import deflated_archive, rows
    ng, root = served
    deflated_archive(str(root / "z.onnxz"), 4096)
    with onnxz.open(ng.url("z.onnxz")) as f:
        s, whole = f.get_slice("z"), rows(0, 4096)
        for idx in [(slice(0, 2),), (slice(4000, None), slice(3, 5)), (-1,), (Ellipsis,)]:
            assert np.array_equal(s[idx], whole[idx]), idx
    with onnxz.open(str(root / "m.onnxz")) as f:
        w1 = f["w1"]
    with zipfile.ZipFile(root / "m.onnxz") as z:
        t = next(t for t in onnx.load_from_string(z.read("__MODEL_PROTO")).graph.initializer
                 if t.name == "w1")
        info = z.getinfo(next(e.value for e in t.external_data if e.key == "location"))
    data = bytearray((root / "m.onnxz").read_bytes())
    at = info.header_offset + 30 + len(info.filename.encode()) + \
        int.from_bytes(data[info.header_offset + 28:info.header_offset + 30], "little")
    assert bytes(data[at:at + w1.nbytes]) == w1.tobytes()
    data[at + w1.nbytes - 1] ^= 0x40  # the last byte of the last row
    (root / "changed.onnxz").write_bytes(bytes(data))
    with onnxz.open(ng.url("changed.onnxz")) as f:
        s = f.get_slice("w1")
        assert np.array_equal(s[:2], w1[:2])
        assert not np.array_equal(s[-1:], w1[-1:])  # read as it is, not checked
        with pytest.raises(onnxz.Error, match="CRC-32"):
            s[:]
        with pytest.raises(onnxz.Error, match="CRC-32"):
            f["w1"]
        with pytest.raises(onnxz.Error, match="CRC-32"):
            f.read_into("w1", np.empty_like(w1))
        with pytest.raises(onnxz.Error, match="CRC-32 of entry 'w1'") as e:  # read_many too
            f.read_into_many({"w0": np.empty_like(w1), "w1": np.empty_like(w1)})
        assert e.value.rule == "R-12"
        part = np.empty_like(w1[:2])
        f.read_into_many([("w1", part, (slice(0, 2),))])
        assert np.array_equal(part, w1[:2])


def test_a_slice_of_a_large_deflated_entry_stops_downloading(served):
    """The compressed bytes of a DEFLATED entry are fetched as they are inflated, in
    windows of 1 MiB doubling up to 16 MiB, and no more after the slice's last byte
    (Z-79): a slice of the first rows of a 48 MiB entry of random bytes (deflate cannot
    shrink them) costs the first window, and equals numpy's slice of the whole; one to
    the end reads it all."""
    ng, root = served
    rng = np.random.default_rng(7)
    whole = rng.integers(0, 256, size=(3 << 10, 16 << 10), dtype=np.uint8)  # 48 MiB
    t = onnx.TensorProto(name="r", data_type=onnx.TensorProto.UINT8, dims=whole.shape,
                         data_location=onnx.TensorProto.EXTERNAL)
    t.external_data.add(key="location", value="r")
    t.external_data.add(key="length", value=str(whole.nbytes))
    model = onnx.helper.make_model(onnx.helper.make_graph([], "g", [], [], [t]))
    with zipfile.ZipFile(root / "r.onnxz", "w", zipfile.ZIP_DEFLATED, compresslevel=1) as z:
        z.writestr("r", whole.tobytes())
        z.writestr(zipfile.ZipInfo("__MODEL_PROTO"), model.SerializeToString())
        compressed = z.getinfo("r").compress_size
    with onnxz.open(ng.url("r.onnxz")) as f:
        mark = ng.mark()
        part = f.get_slice("r")[:4, 100:200]
        sent = sum(r["body_bytes_sent"] for r in ng.requests_since(mark))
        assert np.array_equal(part, whole[:4, 100:200])
        assert np.array_equal(f.get_slice("r")[-2:], whole[-2:])  # to the end: all of it
    assert compressed > 48 << 20 and sent < (1 << 20) + 4096, (sent, compressed)


def test_a_remote_file_is_read_from_several_threads(served):
    ng, root = served
    for name in ("m.onnxz", "two.onnx"):
        read_concurrently(ng.url(name), str(root / name))


def read_concurrently(url, path):
    with onnxz.open(path) as g:
        want = {n: g[n].copy() for n in g.names}
    errors = []
    with onnxz.open(url) as f:
        def read_all(order):
            try:
                for n in order:
                    assert np.array_equal(f[n], want[n])
            except BaseException as e:  # noqa: BLE001 - reported below
                errors.append(e)
        names = list(want)
        threads = [threading.Thread(target=read_all, args=(names[i:] + names[:i],))
                   for i in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert not errors, errors


@pytest.mark.parametrize("name", FORMS)
def test_convert_from_a_url_matches_the_tools_convert_of_the_file(served, tool, tmp_path,
                                                                  name):
    ng, root = served
    mine, theirs = tmp_path / "mine.onnxz", tmp_path / "theirs.onnxz"
    onnxz.convert(ng.url(name), str(mine))
    subprocess.run([tool, "convert", str(root / name), str(theirs)], check=True,
                   capture_output=True)
    assert mine.read_bytes() == theirs.read_bytes()


def test_https_needs_its_ca(served, monkeypatch):
    ng, root = served
    monkeypatch.delenv("ONNXZ_CA_FILE", raising=False)
    monkeypatch.delenv("ONNXZ_HTTP_INSECURE", raising=False)
    with pytest.raises(onnxz.Error, match="certificate"):
        onnxz.open(ng.url("m.onnxz", https=True))
    monkeypatch.setenv("ONNXZ_CA_FILE", ng.ca_file)  # read at each open, as by the tool
    with onnxz.open(ng.url("m.onnxz", https=True)) as f:
        assert f.names == onnxz.open(str(root / "m.onnxz")).names


def test_missing_and_hostile_objects_raise_onnxz_error(served):
    ng, root = served
    with pytest.raises(onnxz.Error) as e:
        onnxz.load(ng.url("missing.onnxz"))
    assert e.value.status == "not found" and "404" in str(e.value)
    # an archive whose tensor entry was damaged in transit: its CRC-32 catches it
    data = bytearray((root / "m.onnxz").read_bytes())
    with onnxz.open(str(root / "m.onnxz")) as g:
        span = g["w3"]
        at = bytes(data).find(span.tobytes())
    assert at > 0
    data[at + 100] ^= 0xFF
    (root / "bad.onnxz").write_bytes(bytes(data))
    with onnxz.open(ng.url("bad.onnxz")) as f, pytest.raises(onnxz.Error) as e:
        f["w3"]
    assert e.value.file == ng.url("bad.onnxz")
    with pytest.raises(onnxz.Error):
        onnxz.load(ng.url("bad.onnxz"))


def test_a_url_is_never_written(served, tool, tmp_path, monkeypatch):
    """R-14: an output, a data file's location or an edit that is a URL is refused before
    any request, also where a local path of the same spelling exists (a directory "http:"
    holding the host's name); by the package and by the tool."""
    ng, root = served
    monkeypatch.chdir(tmp_path)
    os.makedirs("http:/host")
    model = make_model(n_weights=1, size=64)
    src, url = str(root / "m.onnx"), ng.url("m.onnxz")
    calls = (lambda: onnxz.save(model, "http://host/m.onnxz"),
             lambda: onnxz.save(model, "HTTPS://host/m.onnx", external_data="m.data"),
             lambda: onnxz.save(model, str(tmp_path / "p.onnx"), external_data="http://host/d"),
             lambda: onnxz.convert(src, "http://host/c.onnxz"),
             lambda: onnxz.convert(url, ng.url("copy.onnxz")),
             lambda: onnxz.convert(url, str(tmp_path / "c.onnx"), external_data="http://host/d"))
    for i, call in enumerate(calls):
        mark = ng.mark()
        with pytest.raises(onnxz.Error) as e:
            call()
        assert e.value.status == "invalid argument" and "is a URL" in str(e.value), i
        assert ng.requests_since(mark, settle=0.05) == [], i
    for argv in (["convert", url, ng.url("o.onnxz")],
                 ["convert", url, "o.onnx", "--external-data", "http://host/d"],
                 ["unpack", url, "http://host/u"],
                 ["get", url, "w0", "-o", "http://host/g"],
                 ["meta", "--producer", "x", url]):
        mark = ng.mark()
        r = subprocess.run([tool, *argv], capture_output=True, text=True)
        assert r.returncode == 1 and "is a URL: onnxz" in r.stderr, (argv, r.stderr)
        assert ng.requests_since(mark, settle=0.05) == [], argv
    assert os.listdir("http:/host") == [] and os.listdir(tmp_path) == ["http:"]
    assert not os.path.exists(root / "copy.onnxz")


def test_messages_that_are_not_utf8(tmp_path):
    """What a file system (or a server: an ETag) says may not be UTF-8: onnxz.Error shows
    it escaped, never UnicodeDecodeError; .file keeps the path as os.fsdecode gives it."""
    base = os.fsencode(str(tmp_path)) + b"/\xff"
    t = onnx.TensorProto(name="s", data_type=8, dims=[1], raw_data=b"x")
    with open(base + b".onnx", "wb") as f:
        f.write(onnx.helper.make_model(onnx.helper.make_graph([], "g", [], [], [t]))
                .SerializeToString())
    with onnxz.open(base + b".onnx") as f, pytest.raises(onnxz.Error) as e:
        f["s"]  # a type with no numpy dtype: refused by the package itself
    assert e.value.file == os.fsdecode(base + b".onnx") and e.value.status == "unsupported"
    with open(base + b".onnxz", "wb") as f:
        f.write(b"PK\x03\x04" + b"\0" * 40)  # an archive cut short: refused by the library
    with pytest.raises(onnxz.Error) as e:
        onnxz.load(os.fsdecode(base + b".onnxz"))  # (bytes would be the model's bytes)
    assert e.value.file == os.fsdecode(base + b".onnxz") and "\\xff" in str(e.value)


def test_read_into_many_from_a_url(served):
    """read_into_many (oz_reader_read_many) from a URL gives the local file's arrays; each
    run of touching pieces is one range request, cut in 4 MiB ranges fetched on several
    connections at once; nothing but the pieces' bytes (and an archive entry's local
    header) is fetched."""
    ng, root = served
    for name in FORMS:
        with onnxz.open(ng.url(name)) as f, onnxz.open(str(root / name)) as g:
            outs = {n: np.empty_like(g[n]) for n in g.names}
            assert f.read_into_many(outs, num_threads=2) == sum(a.nbytes for a in outs.values())
            for n in g.names:
                assert np.array_equal(outs[n], g[n]), (name, n)
            part = np.empty((3, 64), np.float32)
            f.read_into_many([("w1", part, (slice(5, 8), slice(0, 64)))])
            assert np.array_equal(part, g["w1"][5:8, 0:64])
    # An archive: each tensor one request of its bytes, after its entry's local header.
    with onnxz.open(str(root / "m.onnxz")) as g:
        want = {n: g[n] for n in g.names if n.startswith("w")}
    with onnxz.open(ng.url("m.onnxz")) as f:
        mark = ng.mark()
        outs = {n: np.empty_like(a) for n, a in want.items()}
        f.read_into_many(outs)
        reqs = ng.requests_since(mark)
    assert all(np.array_equal(outs[n], a) for n, a in want.items())
    data = [r for r in reqs if r["body_bytes_sent"] == 128 * 128 * 4]
    # (the last entry may lie partly in the object's tail, kept since the open)
    assert len(want) - 1 <= len(data) <= len(want) and len(reqs) <= 2 * len(want)
    assert sum(r["body_bytes_sent"] for r in reqs) <= 128 * 128 * 4 * len(want) + 4096 * len(want)
    # A data file of five 4 MiB tensors side by side: pieces that touch are one range.
    with onnxz.open(str(root / "big.onnx")) as g:
        b = {n: g[n] for n in g.names}
    with onnxz.open(ng.url("big.onnx")) as f:
        mark = ng.mark()
        lo, hi = np.empty(1000, np.float32), np.empty(2000, np.float32)
        f.read_into_many([("b1", hi, (slice(1000, 3000),)), ("b1", lo, (slice(0, 1000),))])
        reqs = [r for r in ng.requests_since(mark) if "/big.data" in r["request"]]
        assert np.array_equal(lo, b["b1"][:1000]) and np.array_equal(hi, b["b1"][1000:3000])
        ranged = [r for r in reqs if r["body_bytes_sent"] == 3000 * 4]
        assert len(ranged) == 1 and sum(r["body_bytes_sent"] for r in reqs) <= 3000 * 4 + 66560
        mark = ng.mark()
        outs = {n: np.empty_like(a) for n, a in b.items()}
        f.read_into_many(outs)
        reqs = [r for r in ng.requests_since(mark) if "/big.data" in r["request"]]
    assert all(np.array_equal(outs[n], a) for n, a in b.items())
    whole = sum(a.nbytes for a in b.values())
    chunks = [r for r in reqs if r["body_bytes_sent"] == 4 << 20]
    # 4 MiB ranges of one run, the last shorter by the tail kept since the open
    assert len(chunks) == len(reqs) - 1 == whole // (4 << 20) - 1
    assert sum(r["body_bytes_sent"] for r in reqs) <= whole
    assert len({r["connection"] for r in chunks}) >= 2  # on several connections at once
