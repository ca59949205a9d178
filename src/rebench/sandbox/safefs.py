"""Race-free host-side file operations on folders that untrusted code can change.

The agent's processes may rename, swap (renameat2 RENAME_EXCHANGE) or replace any path of
its workspace with a symlink at any moment, also between a check and the open that follows
it. So nothing here resolves a path and opens it later: every path is walked one component
at a time from a directory file descriptor, each component opened with O_NOFOLLOW (a symlink
anywhere fails with ELOOP/ENOTDIR instead of being followed), `..` is refused, and every
opened file is checked with fstat on the descriptor itself (a FIFO or device swapped in is
refused, and O_NONBLOCK keeps a FIFO from blocking the open).

A directory descriptor, once held, stays inside the tree: the workspace is its own bind
mount in the sandbox, and a rename cannot move a folder across mounts.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import stat
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_WRITE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_CHUNK = 1 << 20


class UnsafePathError(PermissionError):
    """A path leaves its root, goes through a symlink, or names something not a regular
    file or folder."""


def split_relative(path: str | os.PathLike[str]) -> list[str]:
    """The components of a relative path; UnsafePathError for absolute paths and `..`."""
    text = os.fspath(path)
    if text.startswith("/"):
        raise UnsafePathError(f"{text}: absolute paths are not allowed here")
    parts = [p for p in text.split("/") if p not in ("", ".")]
    if any(p == ".." for p in parts):
        raise UnsafePathError(f"{text}: '..' is not allowed here")
    if not parts:
        raise UnsafePathError(f"{text!r} names no file")
    return parts


def open_root(root: Path) -> int:
    """A descriptor of the trusted root folder (its own path is the harness's, not the
    agent's, so it may be resolved normally)."""
    return os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)


def _open_dir_at(dir_fd: int, name: str, create: bool) -> int:
    try:
        return os.open(name, _DIR_FLAGS, dir_fd=dir_fd)
    except FileNotFoundError:
        if not create:
            raise
        with contextlib.suppress(FileExistsError):
            os.mkdir(name, 0o755, dir_fd=dir_fd)
        return os.open(name, _DIR_FLAGS, dir_fd=dir_fd)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):
            raise UnsafePathError(f"{name}: not a folder (a symlink or a file)") from None
        raise


def walk_to_parent(root_fd: int, parts: Sequence[str], create: bool = False) -> int:
    """A new descriptor of the folder holding `parts[-1]`, walked without following links."""
    fd = os.dup(root_fd)
    try:
        for name in parts[:-1]:
            nxt = _open_dir_at(fd, name, create)
            os.close(fd)
            fd = nxt
    except BaseException:
        os.close(fd)
        raise
    return fd


def _open_regular(dir_fd: int, name: str, flags: int, mode: int = 0o644) -> int:
    """Open `name` in `dir_fd` without following a link; refuse anything not regular."""
    try:
        fd = os.open(name, flags, mode, dir_fd=dir_fd)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENXIO, errno.EISDIR):
            raise UnsafePathError(f"{name}: not a regular file (a symlink, FIFO or folder)") \
                from None
        raise
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise UnsafePathError(f"{name}: not a regular file")
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _open_beneath(root: Path, path: str, flags: int, create: bool) -> int:
    """A descriptor of the regular file `path` under `root`, walked without links."""
    parts = split_relative(path)
    root_fd = open_root(root)
    try:
        parent = walk_to_parent(root_fd, parts, create=create)
    finally:
        os.close(root_fd)
    try:
        return _open_regular(parent, parts[-1], flags)
    finally:
        os.close(parent)


def read_beneath(root: Path, path: str, max_bytes: int | None = None) -> bytes:
    """The bytes of the regular file `path` under `root`, never through a link.

    ValueError when the file is larger than `max_bytes`."""
    fd = _open_beneath(root, path, _READ_FLAGS, create=False)
    with os.fdopen(fd, "rb") as handle:
        if max_bytes is None:
            return handle.read()
        data = handle.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise ValueError(f"{path} is larger than {max_bytes} bytes")
    return data


def write_beneath(root: Path, path: str, data: bytes) -> None:
    """Write `data` to `path` under `root` (folders made as needed), never through a link:
    a link or FIFO where the file or a folder should be is refused."""
    fd = _open_beneath(root, path, _WRITE_FLAGS, create=True)
    with os.fdopen(fd, "wb") as handle:
        handle.truncate(0)
        handle.write(data)


@lru_cache(maxsize=64)
def _glob_regex(pattern: str) -> re.Pattern[str]:
    """A regex for a workspace glob: `**/` any folders (also none), `*` and `?` within one
    path component, like pathlib's glob."""
    out, i = [], 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append("(?:[^/]+/)*")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif pattern[i] == "*":
            out.append("[^/]*")
            i += 1
        elif pattern[i] == "?":
            out.append("[^/]")
            i += 1
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    return re.compile("".join(out) + r"\Z")


def matches(rel: str, patterns: Sequence[str]) -> bool:
    """Whether a relative path matches any of the glob patterns."""
    return any(_glob_regex(p).match(rel) for p in patterns)


@dataclass(frozen=True)
class CopyLimits:
    """Bounds of a tree copy: total bytes and number of files."""

    max_bytes: int
    max_files: int = 20_000
    max_depth: int = 32


class _Budget:
    def __init__(self, limits: CopyLimits) -> None:
        self.limits = limits
        self.bytes = 0
        self.files = 0

    def take(self, n_bytes: int, rel: str) -> None:
        self.bytes += n_bytes
        if self.bytes > self.limits.max_bytes:
            raise ValueError(
                f"solution files are over the limit of {_size(self.limits.max_bytes)} for a "
                f"snapshot (reached at {rel})")

    def count(self, rel: str) -> None:
        self.files += 1
        if self.files > self.limits.max_files:
            raise ValueError(f"more than {self.limits.max_files} solution files (at {rel})")


def _size(n_bytes: int) -> str:
    return f"{n_bytes / 1e6:.1f} MB" if n_bytes >= 100_000 else f"{n_bytes} bytes"


def _entries(dir_fd: int) -> Iterator[tuple[str, os.stat_result]]:
    """(name, lstat) of a folder's entries, sorted; entries that vanish are skipped."""
    for name in sorted(os.listdir(dir_fd)):
        try:
            yield name, os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
        except FileNotFoundError:
            continue


def _copy_file(src_fd: int, dest: Path, budget: _Budget, rel: str) -> None:
    dest.parent.mkdir(parents=True, exist_ok=True)
    with open(dest, "wb") as out:
        while chunk := os.read(src_fd, _CHUNK):
            budget.take(len(chunk), rel)
            out.write(chunk)


def _copy_dir(dir_fd: int, prefix: str, dest: Path, patterns: Sequence[str],
              budget: _Budget, copied: list[str], depth: int) -> None:
    if depth > budget.limits.max_depth:
        return
    for name, st in _entries(dir_fd):
        if name.startswith(".") or name == "__pycache__":
            continue
        rel = f"{prefix}{name}"
        if stat.S_ISDIR(st.st_mode):
            try:
                sub = _open_dir_at(dir_fd, name, create=False)
            except (UnsafePathError, FileNotFoundError):
                continue  # swapped for a link or removed since the listing
            try:
                _copy_dir(sub, rel + "/", dest, patterns, budget, copied, depth + 1)
            finally:
                os.close(sub)
        elif stat.S_ISREG(st.st_mode) and matches(rel, patterns):
            try:
                fd = _open_regular(dir_fd, name, _READ_FLAGS)
            except (UnsafePathError, FileNotFoundError):
                continue
            try:
                budget.count(rel)
                _copy_file(fd, dest / rel, budget, rel)
            finally:
                os.close(fd)
            copied.append(rel)


def copy_tree_beneath(src_root: Path, dest: Path, patterns: Sequence[str],
                      limits: CopyLimits) -> list[str]:
    """Copy the regular files under `src_root` whose relative paths match `patterns` into
    `dest` (a trusted, fresh folder), skipping dotfiles, __pycache__, links and anything
    that is not a regular file. Returns the copied relative paths, sorted.

    ValueError past the limits; FileNotFoundError if `src_root` is missing."""
    root_fd = open_root(src_root)
    copied: list[str] = []
    dest.mkdir(parents=True, exist_ok=True)
    try:
        _copy_dir(root_fd, "", dest, patterns, _Budget(limits), copied, 0)
    finally:
        os.close(root_fd)
    return sorted(copied)


__all__ = ["CopyLimits", "UnsafePathError", "copy_tree_beneath", "matches", "read_beneath",
           "split_relative", "write_beneath"]
