"""onnxz: ONNX models in every form, from Python.

    import onnxz
    model = onnxz.load("model.onnxz")            # any form -> onnx.ModelProto (= onnx.load)
    onnxz.save(model, "model.onnxz")             # the form follows the name, as `onnxz convert`
    with onnxz.open("model.onnxz") as f:         # zero-copy numpy views, like safetensors
        w = f["encoder.weight"]

Forms: a single .onnx file; a .onnx file with its tensors in data files beside it
(two-file, N-file); an .onnxz archive; either of them encrypted (ONNXZEC1, ONNXCRY1) with a
passphrase (key=). The input's form is told by its content, the output's by its name:
"*.onnxz" (any case) an archive, "*.onnxc" an encrypted model, "*.onnx" a .onnx file (with
external_data= its tensors in data files). Built on the C libraries libonnxcore and libonnxz.

Errors: onnxz.Error (a ValueError) for a file onnxz refuses, with .status, .code, .file,
.offset, .rule and the one-line message the onnxz tool prints; OSError for a failed system
call.
"""
import collections.abc
import operator
import mmap
import os
import stat
import tempfile
import warnings

import numpy as np
import onnx
from google.protobuf.message import DecodeError

from . import _onnxz, _version
from ._onnxz import Error

__version__ = _version.__version__
__all__ = ["Error", "File", "UnsignedWarning", "convert", "load", "meta", "open", "save", "sign",
           "stub", "unpack", "verify_signature"]


def __dir__():
    """The API, not the modules it is built with (os, np, mmap...)."""
    return sorted(__all__ + ["__version__"])


_builtin_open = open


def _dtype_of(data_type):
    """(dtype, packed): the numpy dtype of an array over the raw bytes of a tensor of
    data_type (None: there is none) and whether that array holds the bytes of packed
    sub-byte elements, one-dimensional: the library's rule (oc_tensor_numpy_descr)."""
    descr, packed = _onnxz._numpy_descr(data_type)
    return None if descr is None else np.dtype(descr), packed


def _fspath(path):
    return os.fsdecode(os.fspath(path))


def _budget(max_memory):
    """The memory budget of a call (spec/security.md M-4): max_memory bytes, or by default
    the one the onnxz tool applies (the library's OC_RECOMMENDED_MAX_MEMORY, 1 GiB)."""
    if max_memory is None:
        return _onnxz._DEFAULT_MAX_MEMORY
    if isinstance(max_memory, bool) or not isinstance(max_memory, int) or max_memory <= 0:
        raise ValueError(f"onnxz: max_memory={max_memory!r}: give a number of bytes, more "
                         "than 0")
    return max_memory


def _save_opts(to, external_data, max_file_size, align, threshold, checksum, deflate_model, key,
               sync, max_memory=None):
    """save's and convert's keywords as the library's save options take them (their rules,
    and the form a name asks for, are the library's: oz_save_check)."""
    return (to, None if external_data is None else _fspath(external_data), max_file_size, align,
            threshold, bool(checksum), bool(deflate_model), key, bool(sync), _budget(max_memory))


def load(f, *, load_external_data=True, key=None, data_dir=None, max_memory=None,
         prefetch=False, trust=None):
    """Loads a model in any form and returns it as an onnx.ModelProto.

    f: a path (str, bytes, os.PathLike), an http://, https:// or hf:// URL (see open), the
        file's bytes, or a binary file object (whose data files, as for onnx.load, are
        beside the file its `name` gives, if it has one).
    load_external_data: read the tensors of data files in (as onnx.load does); False
        keeps their references (data_location EXTERNAL). Archives: the tensors' entries.
    key: the passphrase (str or bytes) of an encrypted file.
    data_dir: where the data files are, when they moved (default: beside the model; for
        bytes, external data is only read with a data_dir).
    max_memory: the memory budget in bytes of what decoding the model builds (its graph;
        not its tensors' bytes), as the tool's --max-memory: by default the tool's, 1 GiB.
        A model that needs more raises onnxz.Error (status "limit exceeded", naming max_memory)
        before it gets there (spec/security.md M-1..M-4).
    prefetch: tell the kernel the mapped files will be read (oc_parse_options.prefetch),
        for a file not yet in the page cache; whether it pays depends on the disk
        (docs/performance.md, "Prefetch"). Advice only: the result is the same.
    trust: a trusted public key's PEM file: the model must be signed with it (onnxz.sign);
        its whole signature is verified before it loads (oz_open_options.trust,
        spec/signing.md G-55), else onnxz.Error names the file and the part that differs.
        A local file (bytes: an archive's); a URL is refused: read one with open(trust=).

    A .onnx file and its data files are read under their pair lock (E-25), as the tool
    reads them: never one save's model with another save's data files.
    The result equals onnx.load's for the same model (SerializeToString() identical), and
    for the forms onnx.load cannot read, onnx.load of the model converted to one .onnx.
    Raises onnxz.Error for a file onnxz refuses, OSError when it cannot be read, and
    onnxz.Error (status "truncated", S-42) when another process cuts the file or a data
    file in place while it is read: never SIGBUS, never a model of what the cut left.
    Other threads run while onnxz reads and checks the file; protobuf's own parse into
    the ModelProto (python3-protobuf) holds the GIL, as it does in onnx.load.
    """
    if hasattr(f, "read"):
        name = getattr(f, "name", None)
        f = f.read()
        # as onnx.load: the data files are beside the file the object reads, if it has one
        if data_dir is None and load_external_data and isinstance(name, (str, bytes,
                                                                          os.PathLike)):
            data_dir = os.path.dirname(os.path.abspath(name))
    budget = _budget(max_memory)
    trust = None if trust is None else _fspath(trust)
    if isinstance(f, (bytes, bytearray, memoryview)):
        kind = _onnxz._detect(f)
        if kind in ("model", "empty") and key is None and trust is None:
            with memoryview(f) as m, m.cast("B") as view:  # bytes, whatever f's format
                model, external = _parse_checked(view, None, budget)
            if model is not None and not (external and load_external_data and
                                          data_dir is not None):
                return model
            # the data files' tensors read in; or beyond protobuf's limits: re-encoded
            data = _onnxz._load_memory(f, load_external_data and data_dir is not None,
                                       None if data_dir is None else _fspath(data_dir), budget)
            return onnx.ModelProto.FromString(data)
        # Archives and encrypted bytes: through a file, which the C reader maps.
        with tempfile.TemporaryDirectory(prefix="onnxz-") as tmp:
            path = os.path.join(tmp, "model")
            with _builtin_open(path, "wb") as out:
                out.write(f)
            return _from_split(_onnxz._load(path, load_external_data, key,
                                            None if data_dir is None else _fspath(data_dir),
                                            budget, False, trust))
    if key is None and trust is None and not _onnxz._is_url(f):
        model = _load_mapped(f, load_external_data, budget, prefetch)
        if model is not None:
            return model
    return _from_split(_onnxz._load(f, load_external_data, key,
                                    None if data_dir is None else _fspath(data_dir), budget,
                                    bool(prefetch), trust))


def _from_split(split):
    """The ModelProto of _onnxz._load's (skeleton, pieces): the skeleton parsed, then each
    piece's bytes set as its initializer's raw_data, one tensor at a time (a piece is
    released once copied), so that the weights are never in memory twice."""
    skeleton, pieces = split
    model = onnx.ModelProto.FromString(skeleton)
    del skeleton
    initializers = model.graph.initializer
    pieces.reverse()
    while pieces:
        index, span = pieces.pop()
        initializers[index].raw_data = bytes(span)
        del span
    return model


def _load_mapped(path, load_external_data, budget, prefetch):
    """A plain .onnx file whose bytes are the model onnx.load gives (no external data, or
    external data not asked for), parsed by protobuf straight from the file's mapping: no
    copy of the file into memory first, as onnx.load makes (f.read()); see _parse_checked.
    None when the file is of another kind (the caller takes the general path). A file cut
    short by another process meanwhile raises onnxz.Error (S-42): the mapping is watched
    while protobuf and onnxz's check read it. prefetch: the library's advice on its own
    mappings (oc_parse_options.prefetch), given to this one."""
    try:
        # O_NONBLOCK: a FIFO where the file was expected must not hang the open
        fd = os.open(_fspath(path), os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except (OSError, ValueError):
        return None  # the general path says what is wrong
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size == 0:
            return None
        if _onnxz._detect(os.pread(fd, 8, 0)) != "model":
            return None
        mapping = mmap.mmap(fd, 0, access=mmap.ACCESS_READ)
        if prefetch:
            mapping.madvise(mmap.MADV_WILLNEED)  # advice only: never raises on Linux
    except (OSError, ValueError):
        return None
    finally:
        os.close(fd)
    try:
        with memoryview(mapping) as view:
            watch = _onnxz._watch(view, _fspath(path))
            try:
                model, external = _parse_checked(view, os.fsdecode(_fspath(path)), budget)
            finally:
                watch.close()  # the cut, if any, wins over what the zeros it left gave
        if external and load_external_data:
            return None  # its tensors' data files are read in by the general path
        return model
    finally:
        mapping.close()


def _parse_checked(view, name, budget):
    """(model, external): view (a serialized model) parsed by protobuf, None when it is
    beyond protobuf's own limits, and whether a tensor refers to external data. Checked
    by onnxz's decoder, so that a model it refuses raises onnxz.Error naming name (None:
    bytes) as on every other path; the check runs on a thread of its own while protobuf
    parses (_onnxz._check_start), and its verdict comes first: a 100,000-node graph loaded
    in 0.048 s against 0.10 s one after the other. Whatever interrupts the parse (Ctrl-C)
    is raised once the check has let go of view. The check decodes within budget (M-1);
    where view is large enough for a decode to pass it, the check's verdict is waited for
    before protobuf builds anything, so that a refused model costs no more than the
    budget."""
    check = _onnxz._check_start(view, name, budget)
    if len(view) > budget // _onnxz._DECODE_AMPLIFICATION:  # the decode could pass it
        external = check.verdict()
        try:
            return onnx.ModelProto.FromString(view), external
        except DecodeError:
            return None, external
    try:
        model = onnx.ModelProto.FromString(view)
    except DecodeError:
        model = None
    except BaseException:
        check.wait()
        raise
    return model, check.verdict()  # the check's refusal, if any, wins


def save(model, path, *, external_data=None, max_file_size=None, align=None, threshold=None,
         checksum=False, deflate_model=False, key=None, to=None, sync=False, max_memory=None):
    """Writes model (an onnx.ModelProto, or its serialized bytes) to path, in the form its
    name asks for, replacing it: the files are byte for byte those `onnxz convert` writes for
    the same model and options.

    "*.onnxz" (any case): an archive: tensors of at least `threshold` bytes (default 1024)
        are stored entries on multiples of `align` (64 to 32768, default 64);
        deflate_model stores the model entry deflated.
    "*.onnx": one .onnx file; with external_data="LOC" its tensors of at least `threshold`
        bytes go to the data file LOC beside it (at multiples of `align`, default 64),
        split into LOC.1, LOC.2... past max_file_size bytes; checksum records their SHA-1.
    "*.onnxc": the model encrypted (ONNXZEC1) with the passphrase key.
    path may be "s3://BUCKET/KEY" (any of these forms, data files as objects beside it):
        each object is written with S3's multipart upload and AWS's settings as open reads
        them, appearing whole at the end; an error or Ctrl-C aborts the upload, leaving no
        part and no object (spec/remote.md R-21).
    to: 'onnx', 'onnxz' or 'onnxc' for a path of another name.
    sync: every file is written under a temporary name beside its target and renamed into
        place, so a reader or an interrupted save never sees half a file. By default, as
        onnx.save, numpy.save and safetensors do, the bytes are then left to the operating
        system to write; sync=True also waits for the disk (fsync of each file and of its
        directory, as `onnxz convert` does unless --no-sync), so that a power loss right
        after cannot leave a file empty or short, and a write error the disk reports late
        (EIO; ENOSPC on NFS or with quotas) raises instead of going unnoticed.
    Options that do not apply to the form raise ValueError, as in the tool.
    max_memory: the memory budget of what the save decodes and holds, as for load and
        the tool's --max-memory (default 1 GiB).

    An onnx.ModelProto is not serialized whole first, as onnx.save does: the raw_data of
    its initializers of 64 KiB or more goes from the model to the files one tensor at a
    time, so a save takes little memory beyond the model's own. The model must not change
    while it is saved (a tensor that changed size raises onnxz.Error). Ctrl-C ends a save
    between tensors, with KeyboardInterrupt, leaving no file.
    """
    opts = _save_opts(to, external_data, max_file_size, align, threshold, checksum,
                      deflate_model, key, sync, max_memory)
    _onnxz._save_check(path, opts)  # and R-14: no http(s):// or hf:// output
    if isinstance(model, (bytes, bytearray, memoryview)):
        _onnxz._save(model, path, opts)
        return
    split = _skeleton(model)
    if split is None or not _onnxz._save(split[0], path, opts, split[1], split[2]):
        _onnxz._save(model.SerializeToString(), path, opts)


# Initializers whose raw_data has at least this many bytes are streamed by save from the
# model to the files, one at a time, instead of through one serialized copy of the whole
# model (which doubles the memory a save of a large model takes, and is its slowest step).
_STREAMED = 1 << 16
# Streaming costs some microseconds of Python for each other initializer (copied into the
# skeleton one by one), which the bytes it keeps out of the serialized copy must pay for:
# a model streaming fewer than this many bytes per other initializer is serialized whole
# (100,000 small initializers beside one large one: 0.38 s streamed, 0.04 s serialized).
_STREAM_PER_TENSOR = 8 << 10
# S-45: initializers whose encodings pass this many bytes are all streamed, whatever their
# sizes, so that the skeleton protobuf serializes stays far from its 2 GiB limit.
_SKELETON_MAX = 1 << 30


def _has_unknown_fields(msg):
    """True when msg carries fields its schema does not know, which a copy made field by
    field would drop."""
    try:
        return len(msg.UnknownFields()) > 0
    except (AttributeError, NotImplementedError):  # protobuf without the method
        from google.protobuf import unknown_fields
        return len(unknown_fields.UnknownFieldSet(msg)) > 0


def _copy_fields(src, dst, skip):
    """Copies src's fields to dst, except the one named skip."""
    for field, value in src.ListFields():
        if field.name == skip:
            continue
        if field.label == field.LABEL_REPEATED:
            getattr(dst, field.name).MergeFrom(value)
        elif field.message_type is not None:
            getattr(dst, field.name).CopyFrom(value)
        else:
            setattr(dst, field.name, value)


def _raw_data_size(encoded, bare):
    """The byte count of a tensor's raw_data, from its encoded size and bare (the tensor
    without it), so that the bytes are not copied out to count them."""
    rest = encoded - bare.ByteSize() - 1  # its tag; then a varint n, n bytes
    for k in range(1, 11):
        n = rest - k
        if n >= 0 and max(1, (n.bit_length() + 6) // 7) == k:
            return n
    raise AssertionError("onnxz: a raw_data size protobuf did not encode")


def _skeleton(model):
    """(skeleton, tensors, sizes) for a save that streams the raw_data of model's large
    initializers (_onnxz._save): the model serialized with each such initializer's
    raw_data replaced by a marker reference (EXTERNAL, location "\\0" and its index in
    tensors, a name no file can have), those initializers, their raw_data sizes. None when
    streaming would not pay, or the model holds what a field-by-field copy would drop or
    cannot copy: save then serializes it whole."""
    if not isinstance(model, onnx.ModelProto) or not model.HasField("graph"):
        return None
    graph = model.graph
    initializers = list(graph.initializer)
    encoded = [t.ByteSize() for t in initializers]
    # S-45: a model that protobuf could not serialize whole streams every initializer,
    # those loaded from data files too (data_location DEFAULT, which the output then
    # leaves unset, as `onnxz convert` writes them)
    least = 0 if sum(encoded) > _SKELETON_MAX else _STREAMED
    big = [e > least and t.HasField("raw_data") and
           not (t.HasField("data_location") and (least or t.data_location)) and
           not len(t.external_data) and not _has_unknown_fields(t)
           for t, e in zip(initializers, encoded)]
    streamed = sum(e for e, b in zip(encoded, big) if b)
    if not streamed or (least and
                        streamed < _STREAM_PER_TENSOR * (len(initializers) - sum(big))):
        return None
    if _has_unknown_fields(model) or _has_unknown_fields(graph):
        return None
    try:
        skeleton = onnx.ModelProto()
        _copy_fields(model, skeleton, "graph")
        out_graph = skeleton.graph
        _copy_fields(graph, out_graph, "initializer")
        tensors, sizes = [], []
        for t, e, b in zip(initializers, encoded, big):
            out = out_graph.initializer.add()
            if b:
                _copy_fields(t, out, "raw_data")
                n = _raw_data_size(e, out)
                if n >= least:
                    out.data_location = onnx.TensorProto.EXTERNAL
                    entry = out.external_data.add()
                    entry.key, entry.value = "location", "\0%d" % len(tensors)
                    tensors.append(t)
                    sizes.append(n)
                    continue
                out.Clear()
            out.CopyFrom(t)
    except ValueError:  # a string that is not UTF-8: protobuf keeps it, Python cannot copy it
        return None
    if not tensors:
        return None
    return skeleton.SerializeToString(), tensors, sizes


def convert(src, dst, *, external_data=None, max_file_size=None, align=None, threshold=None,
            checksum=False, deflate_model=False, key=None, data_dir=None, to=None, sync=False,
            max_memory=None, trust=None, sign_key=None, sign_passphrase=None):
    """Converts the model at src (any form; a path or an http(s) URL, see open) to dst, as
    `onnxz convert -f SRC DST` does with the same options (see save); tensor bytes go from
    src's mapping (or the network, one tensor at a time) to dst without a copy. dst may
    be an s3:// URL, written as save writes one.
    key: the passphrase of an encrypted src, or of a .onnxc dst. data_dir: where src's data
    files are, when they moved. sync: as for save (`onnxz convert` syncs by default).
    max_memory: the budget of the decode and of what writing an archive holds beside it,
    as for load and save (default 1 GiB). trust: a trusted public key's PEM file: src's
    signature is verified first, as load(trust=) verifies it.
    dst is not signed, unless sign_key, a private key's PEM file (sign_passphrase: an
    encrypted key's), signs it once written, as onnxz.sign does (a local .onnxz or .onnx
    dst); a signed src converted without sign_key warns (onnxz.UnsignedWarning) that dst
    is unsigned (spec/signing.md G-42)."""
    opts = _save_opts(to, external_data, max_file_size, align, threshold, checksum,
                      deflate_model, key, sync, max_memory)
    _onnxz._save_check(dst, opts, True)  # before src is read (a URL as dst: R-14), no request
    was_signed = _onnxz._convert(src, dst, opts, key,
                                 None if data_dir is None else _fspath(data_dir),
                                 None if trust is None else _fspath(trust))
    if sign_key is not None:
        sign(dst, sign_key, passphrase=sign_passphrase)
    elif was_signed:
        warnings.warn(f"{_fspath(src)} was signed, {_fspath(dst)} is not: sign it "
                      "(onnxz.sign, or convert(sign_key=))", UnsignedWarning, stacklevel=2)


class UnsignedWarning(UserWarning):
    """convert() of a signed model wrote an unsigned one (spec/signing.md G-42)."""


def stub(archive, out, *, force=False, sync=False, max_memory=None):
    """Writes to out a small .onnx whose tensors are external data inside the .onnxz
    archive itself (location: the archive's file name; offset, length: where its entry's
    bytes are), as `onnxz stub ARCHIVE OUT` does, so that onnx.load, ONNX Runtime or any
    reader of classic external data uses the archive's weights in place (spec/onnxz.md
    A-60..A-63). out must be a .onnx name in the archive's directory; every tensor entry
    must be stored, not deflated. The stub records the entries it reads, so that
    File.verify() (and `onnxz verify`) of it fails once the archive was rebuilt.
    force: replace an existing out (else onnxz.Error). sync: wait for the disk, as for
    save. max_memory: the budget of the archive's model decode (default 1 GiB)."""
    _onnxz._stub(archive, out, bool(force), bool(sync), _budget(max_memory))


def sign(path, key, *, passphrase=None, signature=None):
    """Signs the model at path (an .onnxz archive, or a .onnx and its data files) with the
    private key in the PEM file key (ECDSA P-256 or Ed25519, as `openssl genpkey` writes
    it), as `onnxz sign` does, in the OpenSSF model-signing format (spec/signing.md): an
    archive keeps the signature as its entry __ONNXZ_SIGNATURE (written in place; no
    tensor moves), a .onnx model gets it beside it as MODEL.sig (or in the file
    signature). passphrase (str or bytes): the passphrase of an encrypted key. Returns
    what was signed, as a dict: in_archive, location, key_type ("ecdsa-p256" or
    "ed25519"), key_fingerprint (SHA-256 of the public key's PEM), parts, bytes,
    model_digest. Raises onnxz.Error naming the file and what is wrong."""
    return _onnxz._sign(path, key, passphrase, signature, False)


def verify_signature(path, trust, *, signature=None):
    """Verifies the signature of the model at path with the trusted public key in the PEM
    file trust (spec/signing.md G-31): the bundle, its signature over the statement, and
    every part of the model against the signed manifest. Returns the dict sign() returns;
    raises onnxz.Error naming what differs (a changed, missing or unlisted entry or file,
    another key, a bundle that is no bundle). signature: a .onnx model's bundle, when it
    is not MODEL.sig."""
    return _onnxz._sign(path, trust, None, signature, True)


def unpack(archive, dir, *, force=False, sync=True, max_memory=None):
    """Unpacks the .onnxz archive into the directory dir as a classic external-data model,
    as `onnxz unpack ARCHIVE DIR` does (spec/onnxz.md A-30, A-31): dir/model.onnx is the
    archive's model, byte for byte, and every other entry the file of the same name beside
    it, so onnx.load(dir + "/model.onnx") gives the model. Every check comes first (the
    archive's ZIP rules and CRC-32s, its model, its names; what dir holds); nothing is
    written unless all pass, and a failure or Ctrl-C (KeyboardInterrupt) half-way removes
    what was written. dir is made when missing; an existing one must be empty unless
    force (then files there are replaced). sync: wait for the disk for each file (the
    tool's default; False as its --no-sync). max_memory: the budget of the archive's
    reader and model decode (default 1 GiB)."""
    _onnxz._unpack(archive, dir, bool(force), bool(sync), _budget(max_memory))


def meta(path, *, producer=None, producer_version=None, doc_string=None, set=None,
         remove=(), append_only=False, max_memory=None, sign_key=None, passphrase=None,
         unsign=False):
    """Shows or edits the model's metadata, as `onnxz meta` does, and returns what
    `onnxz meta --json PATH` prints, as a dict: file, format ('onnxz' or 'onnx'),
    producer_name, producer_version, doc_string (None when absent) and metadata_props, a
    list of {"key": ..., "value": ...} in the model's order.

    Edits, applied in this order: producer, producer_version, doc_string (str: the new
    value); set, a mapping of metadata_props keys to values (the first entry of a key gets
    the value, later ones go; a new key is added at the end); remove, metadata_props keys
    whose every entry goes (an absent key is no error). An .onnxz archive is edited in
    place (only its model entry and central directory are rewritten; while another
    process has it open the edit is onnxz.Error "busy", unless append_only, which only
    appends, A-57); a .onnx file is written anew and renamed over the old one. Either way
    another edit of the file meanwhile is "busy" (A-58). A symbolic link edits the file it
    names; encrypted files are refused. Without edits path may be an http(s) URL.
    max_memory: the budget of the model's decode (default 1 GiB).

    A signed model (onnxz.sign) is refused (onnxz.Error "unsupported": the edit would
    break its signature) unless sign_key, a private key's PEM file (passphrase: an
    encrypted key's), signs it again (an archive in the same crash-safe edit), or unsign
    drops the signature (spec/signing.md G-40)."""
    for name, value in (("producer", producer), ("producer_version", producer_version),
                        ("doc_string", doc_string)):
        if value is not None and not isinstance(value, str):
            raise TypeError(f"onnxz.meta: {name} must be a str, not {type(value).__name__}")
    pairs = list((set or {}).items())
    keys = [remove] if isinstance(remove, str) else list(remove)
    for k in [k for k, _ in pairs] + keys:
        if not isinstance(k, str) or not k:
            raise ValueError(f"onnxz.meta: metadata_props key {k!r}: give a non-empty str")
    is_archive, (name, version, doc, props), _was_signed = _onnxz._meta(
        path, producer, producer_version, doc_string, pairs, keys, bool(append_only),
        _budget(max_memory), sign_key, passphrase, bool(unsign))
    return {"file": _onnxz._path_shown(_fspath(path)),
            "format": "onnxz" if is_archive else "onnx", "producer_name": name, "producer_version": version, "doc_string": doc,
            "metadata_props": [{"key": k, "value": v} for k, v in props]}


class File(collections.abc.Mapping):
    """A model file open for reading (see onnxz.open): its tensors as read-only numpy
    arrays that point into the file's mapping, without a copy. Safe to read from several
    threads. An array keeps the mapping alive: closing the file never invalidates one.

    A Mapping from tensor name to array: keys() (the names, as File.names), values(),
    items(), get(), `in`, len() and iteration. Two Files are equal only if they are the
    same object (comparing every tensor of two models is not what == should cost)."""

    __eq__ = object.__eq__
    __hash__ = object.__hash__

    def __init__(self, path, *, key=None, max_memory=None, prefetch=False, trust=None):
        self._path = _fspath(path)
        self._key = key
        self._budget = _budget(max_memory)
        self._reader = _onnxz._Reader(path, key, self._budget, bool(prefetch),
                                      None if trust is None else _fspath(trust))
        self._names = None
        self._model = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self):
        """Releases the file; arrays already taken stay valid."""
        if self._reader is not None:
            self._reader.close()
            self._reader = None

    def _open_reader(self):
        """The reader, open and with none of its files cut since (S-42): every call, those
        answered from what was read before too, raises a cut once one was seen."""
        if self._reader is None:
            raise ValueError("onnxz: the file is closed")
        self._reader.check()
        return self._reader

    @property
    def path(self):
        """The path or URL opened, as it may be shown: a URL without its user:password@
        (spec/security.md N-2)."""
        return _onnxz._path_shown(self._path)

    @property
    def is_archive(self):
        """True for an .onnxz archive."""
        return self._open_reader().is_archive()

    @property
    def model(self):
        """The model as an onnx.ModelProto whose tensors in data files or archive entries keep
        their external references (data_location EXTERNAL): the weights are not copied.
        Tensors inside a .onnx file are part of it."""
        r = self._open_reader()
        if self._model is None:
            if r.keeps_references():  # the model as opened, not read again (L-2)
                self._model = _from_split(r.model_split())
            else:
                self._model = _from_split(_onnxz._load(self._path, False, self._key, None,
                                                       self._budget))
        return self._model

    def _name_set(self):
        """The names, read once from the library's name table (K-1), and as a set: no call
        here takes time that grows with the number of tensors but the first."""
        if self._names is None:
            names = self._open_reader().names()
            self._names = (names, frozenset(names))
        return self._names

    @property
    def names(self):
        """The names of the model's tensors (initializers first), each once."""
        return list(self._name_set()[0])

    def __iter__(self):
        return iter(self._name_set()[0])

    def __len__(self):
        return len(self._name_set()[0])

    def __contains__(self, name):  # by name, without reading the tensor
        return name in self._name_set()[1]

    def __getitem__(self, name):
        if not isinstance(name, (str, bytes)):  # as a dict: KeyError, so get() gives its default
            raise KeyError(name)
        return self.tensor(name)

    def tensor(self, name):
        """The tensor `name` as a read-only numpy array of its dtype and shape that points
        into the file's mapping (or the decrypted buffer): zero copy. Types numpy lacks come
        as their raw unsigned type (bfloat16: uint16, float8: uint8, same shape); the packed
        4-bit and 2-bit types as their bytes (uint8, one-dimensional). A tensor held in the
        typed fields (float_data...) instead of raw bytes comes as the same array, read from
        the bytes the library converts them to (a copy), once its count is checked (W-42);
        STRING values as an object array of str (UTF-8; other bytes decoded with
        surrogateescape). A tensor the tool refuses (dims against its data, a count
        that differs, no data, a data_type ONNX does not define) raises onnxz.Error with the
        tool's message. KeyError for an unknown name.

        Names: .names gives each name as str, bytes that are not UTF-8 decoded with
        surrogateescape (os.fsdecode's rule), and such a str looks the tensor up as it
        was given; a bytes name (the name's bytes) does too."""
        span, data_type, dims = self._open_reader().tensor(name)  # dims and size checked
        if isinstance(span, tuple):  # STRING values: their bytes, as onnx gives them (str)
            values = np.array([s.decode("utf-8", "surrogateescape") for s in span],
                              dtype=object)
            return _shaped(self._path, name, values, dims)
        dtype, packed = _dtype_of(data_type)
        if packed:
            return np.frombuffer(span, dtype=dtype)
        if dtype is None:
            _onnxz._error(self._path, _onnxz._ERR_UNSUPPORTED,
                          f"tensor {name!r} has data_type {data_type}, which has no numpy dtype")
        return _shaped(self._path, name, _values(span, dtype, dims), dims)

    def get_slice(self, name):
        """The tensor `name` to be read in parts, as safetensors' get_slice: an object with
        .shape, .dtype (numpy's, as tensor() gives it) and [index], where index is what
        numpy takes for a basic slice: ints, slices with a step of 1 or more, an Ellipsis,
        fewer indices than dimensions. [index] reads only that part (from a URL: one range
        request per contiguous run of it) and gives a read-only numpy array, equal to
        f[name][index]: a view of the file's mapping, no copy, where the part is one run
        of a mapped file. Sub-byte types slice along whole bytes only, STRING not at all
        (onnxz.Error). KeyError for an unknown name; nothing is read here."""
        data_type, dims = self._open_reader().describe(name)
        return _Slice(self, name, data_type, dims)

    def get_tensor(self, name):
        """f[name] under safetensors' name for it (safe_open(...).get_tensor)."""
        return self.tensor(name)

    def metadata(self):
        """The model's metadata_props as a dict of str (what safetensors' metadata() gives
        for its header's __metadata__); {} when it has none."""
        return {p.key: p.value for p in self.model.metadata_props}

    def read_into(self, name, out, index=()):
        """Reads the tensor `name` (or the part of it `index` names, as get_slice's [index])
        into out, a writable C-contiguous buffer (a numpy array, a bytearray, ...) of at
        least its bytes, as they are stored (little-endian, row-major; out's dtype is not
        looked at); returns the count of bytes written. A buffer too small raises
        onnxz.Error before anything is read."""
        ranges = _ranges_of(index, len(self.get_slice(name).shape))
        return self._open_reader().read_into(name, ranges, out)

    def read_into_many(self, outs, num_threads=1):
        """Reads many tensors into buffers of the caller's in one library call
        (oz_reader_read_many), the GIL released, on num_threads threads (< 0: one per
        core): what a loader into pinned or staging memory wants. outs maps each name to
        its buffer ({name: out, ...}), or is an iterable of (name, out) and (name, out,
        index) tuples, index a part as get_slice's [index]. Each out is a writable
        C-contiguous buffer of exactly the bytes it receives, as they are stored
        (little-endian, row-major; its dtype is not looked at). From a local file the bytes
        are read with pread, never through the mapping; large tensors are split between
        the threads; a DEFLATED entry is inflated as a stream into the buffers, never
        whole into memory of its own. Every request is checked before any buffer is written (a wrong size
        raises onnxz.Error naming the tensor); Ctrl-C stops it. Returns the count of bytes
        written."""
        pairs = outs.items() if isinstance(outs, collections.abc.Mapping) else outs
        items = []
        for item in pairs:
            if len(item) == 3:
                name, out, index = item
                ranges = _ranges_of(index, len(self.get_slice(name).shape))
            else:
                (name, out), ranges = item, None
            items.append((name, ranges, out))
        return self._open_reader().read_many(items, int(num_threads))

    def verify(self, trust=None):
        """Checks the file as `onnxz verify` does (archives: every ZIP check and CRC-32 and
        every tensor resolving to its entry; .onnx: every external tensor resolved and its
        checksum verified; then ir_version, graph and every tensor's size; last, an
        archive's layout rules A-2..A-4: __MODEL_PROTO last, tensor entries stored, stored
        data on 64-byte boundaries), and a stub's references into an archive (A-62).
        Raises onnxz.Error with the tool's message. A .onnx file is verified only while it
        and its data files are the files opened: one a save replaced meanwhile raises
        onnxz.Error ("replaced since it was opened"; spec/security.md L-2).
        trust: a trusted public key's PEM file: the file's signature (onnxz.sign) is
        verified first, as `onnxz verify --trust` does, and its report returned (the dict
        verify_signature returns); an unsigned or tampered file raises onnxz.Error."""
        return self._open_reader().verify(self._key, trust)

    def info(self):
        """What `onnxz info --json` reports on the file, as a dict with the same keys and
        values: the file, its form, the model's fields and counts, its tensor bytes by
        where they live (tensor_bytes, raw_data, typed_data, external_data) and, for an
        .onnxz archive, its entries (archive; None for the other forms). A signed model
        adds signature: {location, key_fingerprint, parts, verified (False), problem}, as
        its bundle states it (spec/signing.md G-41; verify(trust=) checks it)."""
        from ._info import info
        return info(self)


def _values(span, dtype, dims):
    """The elements of span as a flat array of dtype (little-endian); none where dims
    hold no element (span may then be empty, or absent)."""
    dtype = np.dtype(dtype).newbyteorder("<")
    if 0 in dims:
        return np.empty(0, dtype=dtype)
    return np.frombuffer(span, dtype=dtype)


def _shaped(path, name, values, dims):
    """values (flat, of dims' element count) as a read-only array of shape dims; dims numpy
    cannot hold (more dimensions than it allows, or a size beyond its index) raise
    onnxz.Error naming the tensor, as a tensor the library refuses does."""
    try:
        a = values.reshape(dims)
    except ValueError as e:
        _onnxz._error(path, _onnxz._ERR_UNSUPPORTED,  # dims last: a long list is cut short
                      f"tensor {name!r}: numpy cannot represent its {len(dims)} dims ({e}): "
                      f"{list(dims)}")
    a.setflags(write=False)
    return a


_INT64_MAX = (1 << 63) - 1


def _clamp64(v):
    """An int as the library takes it: beyond any dimension either way, the same."""
    return max(-_INT64_MAX, min(_INT64_MAX, operator.index(v)))


def _range_of(index):
    """One index of a basic numpy slice as (start, stop, step, is_index) for the library,
    which applies Python's rules (negative from the end, clamping, an index inside its
    dimension, a step of 1 or more)."""
    if isinstance(index, slice):
        return (0 if index.start is None else _clamp64(index.start),
                _INT64_MAX if index.stop is None else _clamp64(index.stop),
                1 if index.step is None else _clamp64(index.step), False)
    try:
        return (_clamp64(index), 0, 1, True)
    except TypeError:
        raise TypeError(f"onnxz: a slice takes ints, slices and ..., not "
                        f"{type(index).__name__}") from None


def _ranges_of(index, rank):
    """A basic numpy index of a tensor of rank dims as the library's ranges."""
    index = index if isinstance(index, tuple) else (index,)
    if sum(i is Ellipsis for i in index) > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    if any(i is Ellipsis for i in index):
        at = next(k for k, i in enumerate(index) if i is Ellipsis)
        index = index[:at] + (slice(None),) * (rank - len(index) + 1) + index[at + 1:]
    if len(index) > rank:
        raise IndexError(f"too many indices: {len(index)} for a tensor of {rank} dimensions")
    return [_range_of(i) for i in index]


# safetensors' dtype codes (its get_dtype()) of the ONNX data types that have one; the
# others are given by ONNX's name (INT4, UINT4, INT2, UINT2, COMPLEX128, STRING).
_SAFETENSORS_DTYPES = {1: "F32", 2: "U8", 3: "I8", 4: "U16", 5: "I16", 6: "I32", 7: "I64",
                       9: "BOOL", 10: "F16", 11: "F64", 12: "U32", 13: "U64", 14: "C64",
                       16: "BF16", 17: "F8_E4M3", 18: "F8_E4M3FNUZ", 19: "F8_E5M2",
                       20: "F8_E5M2FNUZ", 23: "F4", 24: "F8_E8M0"}


_ONNX_ONLY_DTYPES = {8: "STRING", 15: "COMPLEX128", 21: "UINT4", 22: "INT4", 25: "UINT2",
                     26: "INT2"}


def _dtype_code(data_type):
    """data_type as safetensors names it, else as ONNX does (else its number)."""
    code = _SAFETENSORS_DTYPES.get(data_type, _ONNX_ONLY_DTYPES.get(data_type))
    return code if code else str(data_type)


class _Slice:
    """A tensor of an open File read in parts (File.get_slice)."""

    def __init__(self, file, name, data_type, dims):
        self._file, self._name, self._data_type = file, name, data_type
        self.shape = tuple(dims)
        self.dtype, self._packed = _dtype_of(data_type)

    def get_shape(self):
        """The tensor's dims as a list (safetensors' get_shape())."""
        return list(self.shape)

    def get_dtype(self):
        """The tensor's type as safetensors' get_dtype() names it ("F32", "BF16",
        "F8_E4M3", "F4" ...); ONNX's name for a type safetensors lacks ("INT4",
        "UINT4", "COMPLEX128", "STRING")."""
        return _dtype_code(self._data_type)

    def __len__(self):
        if not self.shape:
            raise TypeError("len() of a 0-d tensor")
        return self.shape[0]

    def __getitem__(self, index):
        ranges = _ranges_of(index, len(self.shape))
        span, dims = self._file._open_reader().slice(self._name, ranges)
        if self._packed:
            return np.frombuffer(span, dtype=self.dtype)
        if self.dtype is None:
            _onnxz._error(self._file._path, _onnxz._ERR_UNSUPPORTED,
                          f"tensor {self._name!r} has data_type {self._data_type}, which has "
                          f"no numpy dtype")
        return _shaped(self._file._path, self._name, _values(span, self.dtype, dims), dims)


def open(path, *, key=None, max_memory=None, prefetch=False, trust=None):
    """Opens the model at path (any form) for reading its tensors as zero-copy numpy
    arrays; a context manager (File). key: the passphrase of an encrypted file.

    path may be an http:// or https:// URL served with range requests (spec/remote.md):
    an .onnxz archive is opened with one to three requests, and each tensor is fetched
    when it is asked for (one request; the array then holds the fetched bytes, not a
    mapping); a .onnx model is read at open, and of its data files (beside it at the same
    place) only each one's tail, for its size: a tensor in them is fetched when asked for
    (its bytes, or the 8 MiB read-ahead window around them). .model and info() make no
    request of their own. Encrypted files are not read from URLs. Settings come from the
    environment, as for the tool: ONNXZ_HTTP_AUTH (an Authorization header value),
    ONNXZ_CA_FILE, ONNXZ_HTTP_INSECURE, ONNXZ_HTTP_TIMEOUT, ONNXZ_HTTP_RETRIES,
    ONNXZ_HTTP_PARALLEL (a value out of its range raises onnxz.Error naming it, at every
    load, open and convert). An s3://BUCKET/KEY URL is read the same way from S3 or a
    store that speaks its API, each request signed, with AWS's own settings: AWS_ACCESS_KEY_ID,
    AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN, else the AWS_PROFILE profile of
    ~/.aws/credentials and ~/.aws/config; AWS_REGION; AWS_ENDPOINT_URL_S3 (spec/remote.md
    R-16 to R-20). Of URLs, only an s3:// one is written (save and convert, R-21): an
    http(s):// or hf:// output is refused (R-14).

    hf://ORG/NAME/PATH and hf://ORG/NAME@REVISION/PATH read a file of a Hugging Face hub
    repository (spec/remote.md, "The Hugging Face hub"), at HF_ENDPOINT (default
    https://huggingface.co) with the token of HF_TOKEN, else of the file the hub's tools
    write (HF_TOKEN_PATH, else $HF_HOME/token, else ~/.cache/huggingface/token), sent to
    the hub only, never to the storage host it redirects to. The revision is pinned at
    open to the commit the hub reports: every later read of the File (each tensor, the
    data files beside the model) is of that commit, whatever is pushed meanwhile.

    Files changed under an open File (spec/security.md S-42): the arrays point into a
    mapping of the file. A file replaced by a rename (as onnxz, onnx.save to a new name
    then mv, and most tools save) changes nothing for them: they keep the old bytes. A
    file (the model or any of its data files) cut or rewritten in place by another
    process (truncate, `cp new.onnxz p`) would kill Python with SIGBUS when an array
    touches a page past its new end; instead that part of the mapping reads zeros and
    onnxz.Error (status "truncated") is raised: by the call that read the file when the
    cut came (open, a tensor read, names, model, info(), verify()), else (an array
    touched) in the main thread at its next Python statement, through the Python handler
    of SIGBUS, which is onnxz's (signal.getsignal shows it). From then on, every call of
    that File raises the cut too, never an answer read from the zeros. However many
    files are open, each is watched as long as a File or an array maps it. Bytes rewritten
    in place without a cut show through as they are. For files that others may rewrite in place, copy what you keep
    (numpy.array(f[name])) while the file is as you opened it.

    max_memory: the memory budget in bytes of what decoding the model and holding an
    archive's directory take, as for load and the tool's --max-memory (default 1 GiB):
    a 10 KB archive that would decode into gigabytes raises onnxz.Error instead.

    prefetch: tell the kernel the tensors' bytes will be read (oz_reader_options.prefetch:
    a .onnx file and its data files, an archive's tensor entries), for a first pass over
    the tensors of a file not yet in the page cache (a cold 1 GB archive read whole in
    0.62-0.74x the time, docs/performance.md, "Prefetch"). Advice only: the arrays are
    the same.

    trust: a trusted public key's PEM file (oz_reader_options.trust, spec/signing.md
    G-50..G-54): the model must be signed with it. An archive's signature, its entries
    and its model are checked at open, and each tensor's entry when first read (an
    array, a slice: the whole entry once), so that from a URL only the tensors read are
    fetched; a local .onnx's files are all hashed at open. A tampered part raises
    onnxz.Error naming the file and the tensor or entry; a .onnx at a URL and an
    encrypted file are refused."""
    return File(path, key=key, max_memory=max_memory, prefetch=prefetch, trust=trust)
