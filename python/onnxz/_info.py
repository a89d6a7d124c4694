"""File.info(): the report of `onnxz info --json`, as the library writes it for both
(oz_info_write_json), parsed."""
import json


def info(f):
    """The keys and values of `onnxz info --json` on what f opened; "file" is File.path
    (a path's bytes that are not UTF-8 kept, where the JSON shows U+FFFD)."""
    out = json.loads(f._open_reader().info())
    out["file"] = f.path
    return out
