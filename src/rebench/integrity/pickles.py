"""Reading pickles without loading them: the pickle streams of a weights file (a torch zip
archive's data.pkl members, or a plain pickle) and the globals a stream would import when
loaded. Used by the integrity rules on submitted weights (checks.py, submission_checks.py)."""

from __future__ import annotations

import io
import pickletools
import zipfile
from collections.abc import Iterator
from pathlib import Path

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
