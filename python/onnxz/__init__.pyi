"""Type hints of the onnxz package (see onnxz/__init__.py for the full docstrings)."""
import os
from typing import (IO, Any, Dict, Iterator, List, Literal, Mapping, Optional, Sequence, Tuple,
                    Union)

import numpy as np
import onnx

PathLike = Union[str, bytes, "os.PathLike[str]", "os.PathLike[bytes]"]
Key = Union[str, bytes, bytearray, memoryview]
Form = Literal["onnx", "onnxz", "onnxc"]

__version__: str

class Error(ValueError):
    """A file onnxz refuses. str(): the onnxz tool's one-line message."""
    status: str            # the status name: "truncated", "malformed", ...
    code: int              # its number (onnxcore/status.h)
    file: Optional[str]    # the file the fault is in (None for bytes)
    offset: Optional[int]  # the input offset of the fault, or None
    rule: Optional[str]    # the spec rule the file breaks ("A-21", "Z-61"), or None

def load(f: Union[PathLike, bytes, bytearray, memoryview, IO[bytes]], *,
         load_external_data: bool = ..., key: Optional[Key] = ...,
         data_dir: Optional[PathLike] = ...,
         max_memory: Optional[int] = ..., prefetch: bool = ...,
         trust: Optional[PathLike] = ...) -> onnx.ModelProto:
    """A model in any form as onnx.load gives it."""

def save(model: Union[onnx.ModelProto, bytes], path: PathLike, *,
         external_data: Optional[PathLike] = ..., max_file_size: Optional[int] = ...,
         align: Optional[int] = ..., threshold: Optional[int] = ..., checksum: bool = ...,
         deflate_model: bool = ..., key: Optional[Key] = ...,
         to: Optional[Form] = ..., sync: bool = ...,
         max_memory: Optional[int] = ...) -> None:
    """Writes the model in the form path's name asks for, as `onnxz convert`."""

def convert(src: PathLike, dst: PathLike, *, external_data: Optional[PathLike] = ...,
            max_file_size: Optional[int] = ..., align: Optional[int] = ...,
            threshold: Optional[int] = ..., checksum: bool = ..., deflate_model: bool = ...,
            key: Optional[Key] = ..., data_dir: Optional[PathLike] = ...,
            to: Optional[Form] = ..., sync: bool = ...,
            max_memory: Optional[int] = ..., trust: Optional[PathLike] = ...,
            sign_key: Optional[PathLike] = ...,
            sign_passphrase: Union[str, bytes, None] = ...) -> None:
    """`onnxz convert -f SRC DST` with the same options."""

class UnsignedWarning(UserWarning): ...

def stub(archive: PathLike, out: PathLike, *, force: bool = ..., sync: bool = ...,
         max_memory: Optional[int] = ...) -> None:
    """`onnxz stub ARCHIVE OUT`: a .onnx whose tensors read the archive in place."""

def sign(path: PathLike, key: PathLike, *, passphrase: Union[str, bytes, None] = ...,
         signature: Optional[PathLike] = ...) -> Dict[str, Any]:
    """`onnxz sign MODEL --key KEY`: the OpenSSF model signature (spec/signing.md)."""

def verify_signature(path: PathLike, trust: PathLike, *,
                     signature: Optional[PathLike] = ...) -> Dict[str, Any]:
    """Checks a model's signature with a trusted public key (spec/signing.md G-31)."""

def unpack(archive: PathLike, dir: PathLike, *, force: bool = ..., sync: bool = ...,
           max_memory: Optional[int] = ...) -> None:
    """`onnxz unpack ARCHIVE DIR`: dir/model.onnx and a file per entry beside it."""

def meta(path: PathLike, *, producer: Optional[str] = ..., producer_version: Optional[str] = ...,
         doc_string: Optional[str] = ..., set: Optional[Mapping[str, str]] = ...,
         remove: Union[str, Sequence[str]] = ..., append_only: bool = ...,
         max_memory: Optional[int] = ..., sign_key: Optional[PathLike] = ...,
         passphrase: Union[str, bytes, None] = ..., unsign: bool = ...) -> Dict[str, Any]:
    """`onnxz meta [edits] PATH --json`: the fields after the edits."""

class File(Mapping[str, np.ndarray]):
    """An open model file: tensors as zero-copy read-only numpy arrays, by name."""
    def __init__(self, path: PathLike, *, key: Optional[Key] = ...,
                 max_memory: Optional[int] = ..., prefetch: bool = ...,
                 trust: Optional[PathLike] = ...) -> None: ...
    def __enter__(self) -> "File": ...
    def __exit__(self, *exc: Any) -> None: ...
    def close(self) -> None: ...
    @property
    def path(self) -> str: ...
    @property
    def is_archive(self) -> bool: ...
    @property
    def model(self) -> onnx.ModelProto: ...
    @property
    def names(self) -> List[str]: ...
    def __iter__(self) -> Iterator[str]: ...
    def __len__(self) -> int: ...
    def __contains__(self, name: object) -> bool: ...
    def __getitem__(self, name: str) -> np.ndarray: ...
    def tensor(self, name: str) -> np.ndarray: ...
    def get_tensor(self, name: str) -> np.ndarray: ...
    def get_slice(self, name: str) -> "_Slice": ...
    def metadata(self) -> Dict[str, str]: ...
    def read_into(self, name: str, out: Any, index: Any = ...) -> int: ...
    def read_into_many(self, outs: Any, num_threads: int = ...) -> int: ...
    def verify(self, trust: Optional[PathLike] = ...) -> Optional[Dict[str, Any]]: ...
    def info(self) -> Dict[str, Any]: ...

class _Slice:
    """A tensor read in parts (File.get_slice): [index] reads only that part."""
    shape: Tuple[int, ...]
    dtype: Optional[np.dtype]
    def get_shape(self) -> List[int]: ...
    def get_dtype(self) -> str: ...
    def __len__(self) -> int: ...
    def __getitem__(self, index: Any) -> np.ndarray: ...

def open(path: PathLike, *, key: Optional[Key] = ...,
         max_memory: Optional[int] = ..., prefetch: bool = ...,
         trust: Optional[PathLike] = ...) -> File:
    """Opens a model file for zero-copy reads of its tensors (a context manager)."""
