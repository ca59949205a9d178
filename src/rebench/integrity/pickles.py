"""Reading pickles without loading them: the pickle streams of a weights file (a torch zip
archive's data.pkl members, or a plain pickle) and the globals a stream would import when
loaded. Used by the integrity rules on submitted weights (checks.py, submission_checks.py)."""

from __future__ import annotations

import io
import pickletools
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

# Bytes of a pickle stream read at most.
MAX_PICKLE_BYTES = 64 * 1024 * 1024


def pickle_streams(path: Path) -> Iterator[bytes]:
    """The pickle streams of a torch zip file (its data.pkl members) or of a plain pickle."""
    if zipfile.is_zipfile(path):
        try:
            with zipfile.ZipFile(path) as archive:
                for info in archive.infolist():
                    if info.filename.endswith(".pkl") and info.file_size <= MAX_PICKLE_BYTES:
                        yield archive.read(info)
        except (zipfile.BadZipFile, OSError, RuntimeError, ValueError):
            return
        return
    with path.open("rb") as handle:
        head = handle.read(MAX_PICKLE_BYTES)
    if head[:1] == b"\x80":  # pickle protocol 2+ opcode
        yield head


def pickle_globals(stream: bytes) -> list[tuple[str, str]]:
    """(module, name) of every global a pickle stream imports when loaded."""
    found: list[tuple[str, str]] = []
    strings: list[str] = []
    try:
        for opcode, arg, _ in pickletools.genops(io.BytesIO(stream)):
            if opcode.name == "GLOBAL" and isinstance(arg, str):
                module, _, name = arg.partition(" ")
                found.append((module, name))
            elif opcode.name == "STACK_GLOBAL" and len(strings) >= 2:
                found.append((strings[-2], strings[-1]))
            if isinstance(arg, str):
                strings.append(arg)
    except (ValueError, EOFError, IndexError, KeyError, TypeError, UnicodeDecodeError):
        pass  # a truncated or odd stream: what was read so far still counts
    return found


# Bytes per element of the storage types a torch pickle names.
STORAGE_BYTES = {"DoubleStorage": 8, "FloatStorage": 4, "HalfStorage": 2,
                 "BFloat16Storage": 2, "LongStorage": 8, "IntStorage": 4, "ShortStorage": 2,
                 "CharStorage": 1, "ByteStorage": 1, "BoolStorage": 1, "UntypedStorage": 1,
                 "ComplexFloatStorage": 8, "ComplexDoubleStorage": 16}
_PUT = frozenset({"PUT", "BINPUT", "LONG_BINPUT"})
_GET = frozenset({"GET", "BINGET", "LONG_BINGET"})
_INT = frozenset({"INT", "BININT", "BININT1", "BININT2", "LONG", "LONG1", "LONG4"})


class _Op:
    """A value on the pickle's stack the storage parser does not need."""


def declared_storages(stream: bytes) -> list[tuple[str, str, int]]:
    """(storage type, key, bytes) of every storage a torch pickle stream declares: the
    persistent ids ('storage', torch.<Type>Storage, key, location, numel) that torch.load
    resolves to the archive's data/<key> members, with numel times the type's element
    size. Read from the opcodes (nothing is loaded); a stream cut short gives what was
    read."""
    found: list[tuple[str, str, int]] = []
    memo: dict[Any, Any] = {}
    recent: list[Any] = []
    try:
        for opcode, arg, _ in pickletools.genops(io.BytesIO(stream)):
            name = opcode.name
            if name in _PUT or name == "MEMOIZE":
                memo[arg if name in _PUT else len(memo)] = recent[-1] if recent else None
                continue
            if name == "BINPERSID" and "storage" in recent:
                at = len(recent) - 1 - recent[::-1].index("storage")
                parts = recent[at + 1:at + 5]
                if (len(parts) == 4 and isinstance(parts[0], tuple) and isinstance(parts[1], str)
                        and isinstance(parts[3], int)):
                    kind = parts[0][1].rpartition(".")[2]
                    if kind in STORAGE_BYTES:
                        found.append((kind, parts[1], parts[3] * STORAGE_BYTES[kind]))
                recent.clear()
                continue
            if name == "GLOBAL" and isinstance(arg, str):
                value: Any = ("global", arg.replace(" ", "."))
            elif name in _GET:
                value = memo.get(arg)
            elif (name in _INT and isinstance(arg, int)) or (
                    isinstance(arg, str) and ("UNICODE" in name or "STRING" in name)):
                value = arg
            else:
                value = _Op()
            recent = [*recent[-15:], value]
    except (ValueError, EOFError, IndexError, KeyError, TypeError, UnicodeDecodeError):
        pass  # a truncated or odd stream: what was read so far still counts
    return found
