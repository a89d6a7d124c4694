"""File.info(): what `onnxz info --json` reports on a file, with the same keys and values.
The model's header fields are read from its ModelProto here; the counts, the byte shares
and an archive's entries come from the libraries (oc_model_stats_collect, oz_archive_list),
as the tool's do."""
import os

from . import _onnxz


def info(f):
    """The keys of `onnxz info --json`: file, file_size, format, encrypted (encrypted files
    only), ir_version, producer_name, producer_version, domain, model_version,
    opset_import, graph_name, nodes, nodes_total, initializers, sparse_initializers,
    inputs, outputs, value_infos, functions, training_infos, metadata_props, tensors,
    tensor_bytes, raw_data, typed_data, external_data and archive (None unless the file is
    an unencrypted .onnxz archive)."""
    m = f.model
    reader = f._open_reader()
    kind, payload_archive = reader.kind()
    stats = reader.stats(f._key)
    # the size of the file as opened (L-2; a URL's: no request of its own), as in the tool
    size = reader.file_size() or (0 if _onnxz._is_url(f._path) else os.stat(f._path).st_size)
    out = {"file": f.path, "file_size": size,
           "format": "onnxz" if payload_archive else "onnx"}
    if kind in ("ONNXZEC1", "ONNXCRY1"):
        out["encrypted"] = kind

    def opt(name):
        return getattr(m, name) if m.HasField(name) else None

    for name in ("ir_version", "producer_name", "producer_version", "domain", "model_version"):
        out[name] = opt(name)
    out["opset_import"] = [{"domain": o.domain or "ai.onnx", "version": o.version}
                           for o in m.opset_import]
    g = m.graph if m.HasField("graph") else None
    out["graph_name"] = g.name if g is not None and g.HasField("name") else None
    out.update(stats)
    return out
