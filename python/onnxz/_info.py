"""File.info(): the figures `onnxz info --json` reports on a model, from its ModelProto
(with its tensors' external references) and the file."""
import os

from onnx import TensorProto


def _graphs_nodes(graph, out):
    """Counts every NodeProto of graph and of the subgraphs in its attributes."""
    for n in graph.node:
        _node(n, out)


def _node(n, out):
    out["nodes_total"] += 1
    for a in n.attribute:
        if a.HasField("t"):
            _tensor(a.t, out)
        for t in a.tensors:
            _tensor(t, out)
        if a.HasField("sparse_tensor"):
            _tensor(a.sparse_tensor.values, out)
            _tensor(a.sparse_tensor.indices, out)
        for sp in a.sparse_tensors:
            _tensor(sp.values, out)
            _tensor(sp.indices, out)
        if a.HasField("g"):
            _graph(a.g, out)
        for g in a.graphs:
            _graph(g, out)


def _graph(g, out):
    for t in g.initializer:
        _tensor(t, out)
    for sp in g.sparse_initializer:
        _tensor(sp.values, out)
        _tensor(sp.indices, out)
    _graphs_nodes(g, out)


def _tensor(t, out):
    out["tensors"] += 1
    if t.HasField("data_location") and t.data_location == TensorProto.EXTERNAL:
        kv = {e.key: e.value for e in t.external_data}
        loc = kv.get("location", "")
        length = kv.get("length")
        entry = out["locations"].setdefault(loc, {"location": loc, "tensors": 0, "bytes": 0})
        entry["tensors"] += 1
        out["external_tensors"] += 1
        if length is not None and length.isdigit():
            entry["bytes"] += int(length)
            out["external_bytes"] += int(length)
        else:
            out["unknown_length"] += 1


def info(f):
    """The keys of `onnxz info --json` that describe the file and the model: file,
    file_size, format, encrypted (encrypted files only), ir_version, producer_name,
    producer_version, domain, model_version, opset_import, graph_name, nodes, nodes_total,
    initializers, sparse_initializers, inputs, outputs, value_infos, functions,
    training_infos, metadata_props, tensors, and external_data (tensors, bytes,
    unknown_length, locations), with the same values. Not given: the byte shares
    (tensor_bytes, raw_data, typed_data) and the archive's ZIP listing (`archive`): run
    `onnxz info --json` for those."""
    m = f.model
    kind, payload_archive = f._open_reader().kind()
    out = {"file": f.path, "file_size": os.stat(f.path).st_size,
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
    acc = {"nodes_total": 0, "tensors": 0, "external_tensors": 0, "external_bytes": 0,
           "unknown_length": 0, "locations": {}}
    if g is not None:
        _graph(g, acc)
    for fn in m.functions:
        _graphs_nodes(fn, acc)
    for ti in m.training_info:
        for tg in (ti.initialization, ti.algorithm):
            _graph(tg, acc)
    out["nodes"] = len(g.node) if g is not None else 0
    out["nodes_total"] = acc["nodes_total"]
    out["initializers"] = len(g.initializer) if g is not None else 0
    out["sparse_initializers"] = len(g.sparse_initializer) if g is not None else 0
    out["inputs"] = len(g.input) if g is not None else 0
    out["outputs"] = len(g.output) if g is not None else 0
    out["value_infos"] = len(g.value_info) if g is not None else 0
    out["functions"] = len(m.functions)
    out["training_infos"] = len(m.training_info)
    out["metadata_props"] = len(m.metadata_props)
    out["tensors"] = acc["tensors"]
    locs = [acc["locations"][k] for k in sorted(acc["locations"], key=lambda s: s.encode())]
    out["external_data"] = {
        "tensors": acc["external_tensors"], "bytes": acc["external_bytes"],
        "unknown_length": acc["unknown_length"], "locations": locs}
    return out
