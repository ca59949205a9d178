"""Bounded-memory reading of an untrusted `torch.save` file.

`torch.load(weights_only=True)` runs no code, but it allocates whatever the file declares: a
few MB of deflate-compressed zeros, or a pickle that names a 2 GB storage, become gigabytes
in the (unsandboxed) scorer. `check_archive` reads only the zip's directory and its small
pickle, with an unpickler that builds nothing but records of storage sizes, and refuses the
file before torch allocates anything, unless every storage is stored uncompressed and all of
them together fit `max_storage_bytes`.
"""

from __future__ import annotations

import io
import pickle
import zipfile
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# Bytes per element of the storage classes a state dict of plain tensors may use.
_STORAGE_ITEMSIZE = {
    "FloatStorage": 4, "DoubleStorage": 8, "HalfStorage": 2, "BFloat16Storage": 2,
    "LongStorage": 8, "IntStorage": 4, "ShortStorage": 2, "CharStorage": 1,
    "ByteStorage": 1, "BoolStorage": 1,
}
MAX_PICKLE_BYTES = 1 << 20  # a state dict's pickle is a few kB per hundred tensors


class ArchiveRefused(Exception):
    """Why the archive is not loaded (the message is shown to the agent)."""


@dataclass(frozen=True)
class _Storage:
    key: str
    nbytes: int


@dataclass(frozen=True)
class _TensorStub:
    storage: _Storage


def _rebuild_tensor_stub(storage: object, offset: object, size: object, stride: object,
                         *rest: object) -> _TensorStub:
    """Stands in for torch._utils._rebuild_tensor_v2: checks the view fits its storage."""
    del rest
    if not isinstance(storage, _Storage):
        raise ArchiveRefused("a tensor without a storage")
    if not (isinstance(offset, int) and isinstance(size, tuple) and isinstance(stride, tuple)
            and len(size) == len(stride)
            and all(isinstance(v, int) and v >= 0 for v in (*size, *stride))):
        raise ArchiveRefused("a tensor with a malformed shape or stride")
    return _TensorStub(storage)


class _SizeOnlyUnpickler(pickle.Unpickler):
    """Knows only OrderedDict, the tensor rebuild function and storage classes."""

    def __init__(self, data: bytes) -> None:
        super().__init__(io.BytesIO(data))
        self.storages: dict[str, int] = {}

    def find_class(self, module: str, name: str) -> Any:
        if (module, name) == ("collections", "OrderedDict"):
            return OrderedDict
        if (module, name) == ("torch._utils", "_rebuild_tensor_v2"):
            return _rebuild_tensor_stub
        if module == "torch" and name in _STORAGE_ITEMSIZE:
            return name
        raise ArchiveRefused(f"unsupported object {module}.{name} (save a plain state dict)")

    def persistent_load(self, pid: Any) -> _Storage:
        if not (isinstance(pid, tuple) and len(pid) == 5 and pid[0] == "storage"):
            raise ArchiveRefused("an unknown persistent reference")
        _, kind, key, _location, numel = pid
        if kind not in _STORAGE_ITEMSIZE or not isinstance(key, str):
            raise ArchiveRefused(f"an unsupported storage {kind!r}")
        if not isinstance(numel, int) or numel < 0:
            raise ArchiveRefused("a storage of negative or non-integer size")
        nbytes = numel * _STORAGE_ITEMSIZE[kind]
        if self.storages.setdefault(key, nbytes) != nbytes:
            raise ArchiveRefused(f"storage {key} is declared with two sizes")
        return _Storage(key, nbytes)


def _members(archive: zipfile.ZipFile) -> tuple[str, dict[str, zipfile.ZipInfo]]:
    """The archive's folder prefix and its members by name, checked for compression."""
    infos = archive.infolist()
    pickles = [i.filename for i in infos if i.filename.endswith("/data.pkl")]
    if len(pickles) != 1:
        raise ArchiveRefused("not a torch.save archive (no single data.pkl)")
    for info in infos:
        if info.compress_type != zipfile.ZIP_STORED or info.compress_size != info.file_size:
            raise ArchiveRefused(f"member {info.filename} is compressed (torch.save never "
                                 "compresses)")
    return pickles[0].removesuffix("data.pkl"), {i.filename: i for i in infos}


def check_archive(path: Path, max_storage_bytes: int) -> None:
    """Raise ArchiveRefused unless `path` is an uncompressed torch.save zip whose storages
    together hold at most `max_storage_bytes` and each match their declared size."""
    if not zipfile.is_zipfile(path):
        raise ArchiveRefused("not a torch.save zip archive (save with torch.save, the default "
                             "format)")
    try:
        with zipfile.ZipFile(path) as archive:
            prefix, members = _members(archive)
            pkl = members[prefix + "data.pkl"]
            if pkl.file_size > MAX_PICKLE_BYTES:
                raise ArchiveRefused(f"its pickle is {pkl.file_size} bytes, too large for a "
                                     "state dict")
            unpickler = _SizeOnlyUnpickler(archive.read(pkl))
            unpickler.load()
    except ArchiveRefused:
        raise
    except Exception as exc:  # a malformed zip or pickle: refused, whatever broke
        raise ArchiveRefused(
            f"unreadable archive ({type(exc).__name__}: {str(exc)[:200]})") from exc
    total = sum(unpickler.storages.values())
    if total > max_storage_bytes:
        raise ArchiveRefused(f"its tensors hold {total / 1e6:.1f} MB, more than the model's "
                             f"{max_storage_bytes / 1e6:.1f} MB")
    for key, nbytes in unpickler.storages.items():
        info = members.get(f"{prefix}data/{key}")
        if info is None or info.file_size != nbytes:
            raise ArchiveRefused(f"storage {key} does not match its declared size")
