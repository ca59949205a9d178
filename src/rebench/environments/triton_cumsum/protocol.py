"""The tiny wire protocol between the trusted scorer and the untrusted child, over two pipes.

Every message is one tag byte, optionally followed by a 4-byte little-endian length and a
payload. On the timed path only single tag bytes travel (`G` go, `D` done), so a call costs
one pipe write and one pipe read on each side. Nothing the child sends is ever unpickled:
the scorer reads tags and UTF-8 text only. (The scorer sends the child one pickled blob at
start-up, the CUDA IPC handles: that direction is trusted to untrusted, which is safe.)
"""

from __future__ import annotations

import enum
import os
import select
import struct
import time
from dataclasses import dataclass

# gpu: the shared flag page (a sealed memfd) of int64 slots: [GO] (the call's number) and
# [SLOT] (which buffer pair it uses) written by the scorer, [DONE] by the child; and the
# child's own CLOCK_MONOTONIC stamps of its last call (ns: go seen, call returned, synchronized),
# read only to explain where time goes (never trusted, never part of a score).
FLAG_BYTES = 64
GO, DONE, SLOT = 0, 1, 2
SEEN, RETURNED, SYNCED = 3, 4, 5

# What an ERROR message's first line may say (its reason code; the rest of the payload is
# the child's own text, which the scorer keeps private). Each is a reason of
# environment.FEEDBACK; anything else the scorer reads as a protocol breach.
CHILD_REASONS = frozenset({"load_failed", "call_raised", "not_plain_tensor", "wrong_dtype",
                           "wrong_device", "wrong_shape"})

# Upper bound on any payload, so a hostile child cannot make the scorer buffer gigabytes.
MAX_PAYLOAD = 64 * 1024
_LEN = struct.Struct("<I")


class Tag(bytes, enum.Enum):
    """Message kinds. Child to scorer: READY, DONE, ERROR. Scorer to child: GO, QUIT,
    HANDLES."""

    READY = b"R"
    DONE = b"D"
    ERROR = b"E"
    GO = b"G"
    QUIT = b"Q"
    HANDLES = b"H"


_WITH_PAYLOAD = {Tag.ERROR, Tag.HANDLES}


class ProtocolError(Exception):
    """The other side broke the protocol (unknown tag, oversized payload, early EOF)."""


class ChildGone(ProtocolError):
    """The pipe closed: the child exited or was killed."""


class Timeout(Exception):
    """No message arrived within the deadline."""


@dataclass(frozen=True)
class Message:
    tag: Tag
    payload: bytes = b""

    @property
    def text(self) -> str:
        return self.payload.decode("utf-8", errors="replace")


def encode(tag: Tag, payload: bytes = b"") -> bytes:
    if tag in _WITH_PAYLOAD:
        return tag.value + _LEN.pack(len(payload)) + payload
    if payload:
        raise ValueError(f"message {tag.name} carries no payload")
    return tag.value


def send(fd: int, tag: Tag, payload: bytes = b"") -> None:
    """Write one whole message (blocking)."""
    data = memoryview(encode(tag, payload))
    while data:
        written = os.write(fd, data)
        data = data[written:]


def _read_exact(fd: int, size: int, deadline: float) -> bytes:
    chunks: list[bytes] = []
    left = size
    while left:
        wait_readable(fd, deadline)
        chunk = os.read(fd, left)
        if not chunk:
            raise ChildGone("pipe closed in the middle of a message")
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def wait_readable(fd: int, deadline: float) -> None:
    """Block until `fd` is readable or the monotonic `deadline` passes (Timeout)."""
    while True:
        left = None if deadline == float("inf") else deadline - time.monotonic()
        if left is not None and left <= 0:
            raise Timeout()
        ready, _, _ = select.select([fd], [], [], left)
        if ready:
            return


def receive(fd: int, deadline: float, max_payload: int = MAX_PAYLOAD) -> Message:
    """Read one message; ChildGone on EOF, ProtocolError on garbage, Timeout on deadline."""
    raw_tag = _read_exact(fd, 1, deadline)
    try:
        tag = Tag(raw_tag)
    except ValueError:
        raise ProtocolError(f"unknown message tag {raw_tag!r}") from None
    if tag not in _WITH_PAYLOAD:
        return Message(tag)
    (length,) = _LEN.unpack(_read_exact(fd, _LEN.size, deadline))
    if length > max_payload:
        raise ProtocolError(f"message of {length} bytes exceeds the {max_payload} limit")
    return Message(tag, _read_exact(fd, length, deadline))


def pending(fd: int) -> bool:
    """True if something (or EOF) is waiting on `fd` right now."""
    ready, _, _ = select.select([fd], [], [], 0)
    return bool(ready)
