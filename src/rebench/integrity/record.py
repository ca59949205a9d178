"""A run's record, read once into what the rules scan: text units (commands, their output,
files the agent wrote, snapshot files) and binary snapshot files, with the starting files
and assets they are compared against.

Reading is read-only and never trusts the run directory's contents: sizes are bounded
before anything is read, symlinks are not followed, and undecodable text is skipped.
"""

from __future__ import annotations

import base64
import binascii
import enum
import hashlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from rebench.core.errors import RebenchError, ScoreLogError
from rebench.harness.events import Event, read_events
from rebench.harness.records import RunRecord, ScoreEntry
from rebench.harness.score_log import read_log
from rebench.integrity.flags import Evidence

# Text files larger than this are not scanned (solutions are code, not data).
MAX_TEXT_BYTES = 1_000_000
# Suffixes of files scanned as text (no suffix: scanned too, if it decodes).
TEXT_SUFFIXES = frozenset({"", ".py", ".sh", ".txt", ".md", ".json", ".rs", ".c", ".cc",
                           ".cpp", ".cu", ".h", ".cuh", ".toml", ".yaml", ".yml", ".cfg",
                           ".ini", ".jsonl", ".pyx", ".triton"})
# Suffixes of model weight / pickle files (checked for copies and for unsafe pickles).
WEIGHT_SUFFIXES = frozenset({".pth", ".pt", ".bin", ".safetensors", ".ckpt", ".npy", ".npz",
                             ".pkl", ".pickle"})
COMMAND_EXCERPT = 200


class UnitKind(enum.Enum):
    """Where a text comes from."""

    COMMAND = "command"  # the command line of an exec event (heredocs included)
    OUTPUT = "output"  # stdout and stderr of an exec event (a bounded tail)
    FILE = "file"  # a file the agent wrote (write_file event) or a snapshot file
    MESSAGE = "message"  # a model's message (Inspect transcript)


@dataclass(frozen=True)
class TextUnit:
    """One text to scan, where it came from, and the starting version's lines (lines
    already in the starting files are not the agent's and are never flagged)."""

    kind: UnitKind
    text: str
    evidence: Evidence
    baseline: frozenset[str] = frozenset()

    def added_lines(self) -> list[tuple[int, str]]:
        """(1-based line number, line) of every non-blank line not in the baseline."""
        return [(n, line) for n, line in enumerate(self.text.splitlines(), start=1)
                if line.strip() and line.strip() not in self.baseline]

    def added_text(self) -> str:
        return "\n".join(line for _, line in self.added_lines())

    def at(self, line: int) -> Evidence:
        """This unit's evidence, pointed at one line (1-based) with that line as excerpt."""
        lines = self.text.splitlines()
        excerpt = lines[line - 1].strip()[:160] if 0 < line <= len(lines) else ""
        return Evidence(**{**self.evidence.__dict__, "line": line, "excerpt": excerpt})


@dataclass(frozen=True)
class SnapshotFile:
    """A regular file of one official score's snapshot."""

    rel: str
    path: Path
    size: int
    snapshot: str  # protected/snapshots/<n>
    entry: ScoreEntry

    def digest(self) -> str:
        return file_digest(self.path)


# The labels of KnownFiles that the agent was given (the rest it must never have).
GIVEN_LABELS = ("public/", "starting/")


@dataclass
class KnownFiles:
    """Files the agent was given or must never have (public assets, starting files,
    protected assets, reference and expert solutions), found by size then hash."""

    by_size: dict[int, list[tuple[str, Path]]] = field(default_factory=dict)
    _digests: dict[Path, str] = field(default_factory=dict)

    def add_tree(self, label: str, root: Path) -> None:
        if not root.is_dir():
            return
        for path in sorted(root.rglob("*")):
            if path.is_file() and not path.is_symlink():
                rel = path.relative_to(root)
                self.by_size.setdefault(path.stat().st_size, []).append((f"{label}/{rel}", path))

    def truncations(self, path: Path, size: int) -> list[str]:
        """Labels of the files the agent was given (public assets, starting files) of
        which `path`, `size` bytes long, is the beginning: a copy cut short, every byte of
        it a given file's."""
        if size == 0:
            return []
        head = path.read_bytes()[:size]
        found = []
        for known_size, entries in self.by_size.items():
            if known_size <= size:
                continue
            for label, known in entries:
                if not label.startswith(GIVEN_LABELS):
                    continue
                with known.open("rb") as handle:
                    if (handle.read(4096) == head[:4096]
                            and handle.read(max(size - 4096, 0)) == head[4096:]):
                        found.append(label)
        return found

    def matches(self, size: int, digest: str) -> list[str]:
        """Labels of the known files with exactly these bytes."""
        found = []
        for label, path in self.by_size.get(size, []):
            if path not in self._digests:
                self._digests[path] = file_digest(path)
            if self._digests[path] == digest:
                found.append(label)
        return found


@dataclass
class RunData:
    """Everything the rules read of one run."""

    run_dir: Path
    record: RunRecord
    events: list[Event]
    entries: list[ScoreEntry]
    starting_texts: dict[str, str]  # starting files and public text assets, by workspace path
    known: KnownFiles
    notes: list[str] = field(default_factory=list)
    log_error: str | None = None  # why the score log's hash chain does not verify

    def snapshot_files(self) -> Iterator[SnapshotFile]:
        """Every regular file of every logged snapshot, in log order."""
        for entry in self.entries:
            root = self.run_dir / entry.snapshot
            if not root.is_dir() or root.is_symlink():
                continue
            for path in sorted(root.rglob("*")):
                if path.is_file() and not path.is_symlink():
                    yield SnapshotFile(str(path.relative_to(root)), path, path.stat().st_size,
                                       entry.snapshot, entry)

    def distinct_texts(self, rel: str, max_bytes: int) -> Iterator[tuple[SnapshotFile, str]]:
        """Each distinct text of the file `rel` across the snapshots (files over
        `max_bytes` skipped), with the first snapshot file that holds it."""
        seen: set[str] = set()
        for item in self.snapshot_files():
            if item.rel != rel or item.size > max_bytes:
                continue
            text = item.path.read_bytes().decode(errors="replace")
            if text not in seen:
                seen.add(text)
                yield item, text

    def distinct_submissions(self, rel: str) -> Iterator[SnapshotFile]:
        """Each distinct non-empty content of the file `rel` in the agent's snapshots (the
        initial one left out), as the first snapshot file that holds it."""
        seen: set[str] = set()
        for item in self.snapshot_files():
            if item.entry.kind == "initial" or item.rel != rel or item.size == 0:
                continue
            digest = item.digest()
            if digest not in seen:
                seen.add(digest)
                yield item

    def baseline(self, rel: str) -> frozenset[str]:
        text = self.starting_texts.get(rel.lstrip("./"), "")
        return frozenset(line.strip() for line in text.splitlines() if line.strip())


def file_digest(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def decode_text(data: bytes) -> str | None:
    """`data` as text, or None if it looks binary."""
    if b"\x00" in data[:4096]:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def load_run(run_dir: Path) -> RunData:
    """Read a run directory; RebenchError if it is not one."""
    if not (run_dir / "run.json").is_file():
        raise RebenchError(f"{run_dir} is not a run directory (no run.json)")
    record = RunRecord.load(run_dir / "run.json")
    notes: list[str] = []
    events = read_events(run_dir / "events.jsonl")
    if not events:
        notes.append("events.jsonl is missing or empty: commands and file writes unseen")
    log = run_dir / "protected" / "score_log.jsonl"
    log_error = None
    try:
        entries = read_log(log)
    except ScoreLogError as exc:
        log_error = str(exc)
        entries = read_log(log, verify=False)
    starting, known = _known_files(record, notes)
    return RunData(run_dir, record, events, entries, starting, known, notes, log_error)


def _known_files(record: RunRecord, notes: list[str]) -> tuple[dict[str, str], KnownFiles]:
    """The environment's starting texts and every file an honest run could copy."""
    from rebench.core.discovery import environment_dir
    from rebench.core.paths import env_cache_dir

    known = KnownFiles()
    starting: dict[str, str] = {}
    try:
        env_dir = environment_dir(record.env_id)
    except RebenchError:
        notes.append(f"environment {record.env_id} is not installed: starting files, "
                     "reference and expert solutions unknown")
        return starting, known
    for path in sorted((env_dir / "starting").rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts:
            text = decode_text(path.read_bytes()[:MAX_TEXT_BYTES])
            if text is not None:
                starting[str(path.relative_to(env_dir / "starting"))] = text
    known.add_tree("starting", env_dir / "starting")
    for name in ("reference", "expert"):
        known.add_tree(name, env_dir / name)
    assets = env_cache_dir(record.env_id, record.profile)
    if not assets.is_dir():
        notes.append(f"assets of {record.env_id} ({record.profile}) are not in this cache: "
                     "copies of public or protected assets cannot be recognised")
    _add_public_texts(starting, assets / "public")
    known.add_tree("public", assets / "public")
    known.add_tree("protected", assets / "protected")
    return starting, known


def _add_public_texts(starting: dict[str, str], public: Path) -> None:
    """Public text assets (copied into every workspace, e.g. a copy of the scorer's export
    code) are not the agent's either: their lines join the starting files' baseline."""
    if not public.is_dir():
        return
    for path in sorted(public.rglob("*")):
        if (path.is_file() and not path.is_symlink() and path.suffix in TEXT_SUFFIXES
                and path.stat().st_size <= MAX_TEXT_BYTES):
            text = decode_text(path.read_bytes())
            if text is not None:
                rel = str(path.relative_to(public))
                starting[rel] = f"{starting[rel]}\n{text}" if rel in starting else text


def event_units(data: RunData) -> Iterator[TextUnit]:
    """Commands (agents' exec and human shells' command lines), their output, and the text
    files written through write_file."""
    for event in data.events:
        base = Evidence(event=event.seq, time=event.time, working_s=event.working_s)
        if event.type == "exec":
            cmd = str(event.data.get("cmd", ""))
            cut = cmd if len(cmd) <= COMMAND_EXCERPT else cmd[:COMMAND_EXCERPT] + "..."
            with_cmd = Evidence(**{**base.__dict__, "command": cut})
            yield TextUnit(UnitKind.COMMAND, cmd, with_cmd)
            output = f"{event.data.get('stdout') or ''}\n{event.data.get('stderr') or ''}"
            yield TextUnit(UnitKind.OUTPUT, output, with_cmd)
        elif event.type == "shell_command":  # a human shell's command line (no output)
            cmd = str(event.data.get("command", ""))
            cut = cmd if len(cmd) <= COMMAND_EXCERPT else cmd[:COMMAND_EXCERPT] + "..."
            yield TextUnit(UnitKind.COMMAND, cmd, Evidence(**{**base.__dict__, "command": cut}))
        elif event.type == "write_file" and "content_b64" in event.data:
            try:
                raw = base64.b64decode(str(event.data["content_b64"]), validate=True)
            except (binascii.Error, ValueError):
                continue
            text = decode_text(raw)
            path = str(event.data.get("path", ""))
            if text is not None:
                yield TextUnit(UnitKind.FILE, text, Evidence(**{**base.__dict__, "file": path}),
                               data.baseline(path))


def snapshot_units(data: RunData) -> Iterator[TextUnit]:
    """Each distinct text file of the snapshots, once (at its first snapshot)."""
    seen: set[tuple[str, str]] = set()
    for item in data.snapshot_files():
        if Path(item.rel).suffix not in TEXT_SUFFIXES or item.size > MAX_TEXT_BYTES:
            continue
        key = (item.rel, item.digest())
        if key in seen:
            continue
        seen.add(key)
        text = decode_text(item.path.read_bytes())
        if text is None:
            continue
        evidence = Evidence(working_s=item.entry.working_s, time=item.entry.wall_time,
                            file=item.rel, snapshot=item.snapshot)
        yield TextUnit(UnitKind.FILE, text, evidence, data.baseline(item.rel))
