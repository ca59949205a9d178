"""The score log: hash chain, tamper evidence, torn lines, failed writes lose nothing."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from rebench.core.errors import ScoreLogError
from rebench.harness.records import ScoreEntry
from rebench.harness.score_log import GENESIS, append_entry, last_hash, read_log
from rebench.scoring import ScoreKind


def entry(i: int, prev: str, raw: float = 1.0) -> ScoreEntry:
    return ScoreEntry(
        index=i, wall_time="2026-01-01T00:00:00Z", wall_s=float(i), working_s=float(i),
        raw=raw, normalized=raw, valid=math.isfinite(raw), kind=ScoreKind.REQUESTED,
        message={"ms": i}, details={}, snapshot=f"protected/snapshots/{i:04d}", prev_hash=prev,
    )


def write_three(path: Path) -> None:
    for i, raw in enumerate([1.0, math.nan, 0.5]):
        append_entry(path, entry(i, last_hash(path), raw))


def test_round_trip_with_nan(tmp_path: Path) -> None:
    path = tmp_path / "log.jsonl"
    write_three(path)
    entries = read_log(path)
    assert [e.index for e in entries] == [0, 1, 2]
    assert math.isnan(entries[1].raw) and not entries[1].valid
    assert entries[0].prev_hash == GENESIS


def test_kind_is_the_member_in_memory_and_its_value_on_disk(tmp_path: Path) -> None:
    path = tmp_path / "log.jsonl"
    write_three(path)
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert [line["kind"] for line in lines] == ["agent"] * 3
    (first, *_) = read_log(path, verify=True)
    assert first.kind is ScoreKind.REQUESTED and first.kind == "agent"
    assert entry(0, GENESIS).to_json()["kind"] == "agent"
    with pytest.raises(ValueError, match="kind 'finished' is not one of initial, agent, final"):
        ScoreEntry.from_json({**entry(0, GENESIS).to_json(), "kind": "finished"})


def test_a_line_of_an_unknown_kind_is_a_score_log_error(tmp_path: Path) -> None:
    path = tmp_path / "log.jsonl"
    write_three(path)
    lines = path.read_text().splitlines()
    lines[2] = lines[2].replace('"kind": "agent"', '"kind": "bonus"')
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(ScoreLogError, match=r"line 3 is not a score entry: .*'bonus'"):
        read_log(path, verify=False)  # verified, the edit fails the chain first


def test_edit_breaks_the_chain(tmp_path: Path) -> None:
    path = tmp_path / "log.jsonl"
    write_three(path)
    lines = path.read_text().splitlines()
    doctored = json.loads(lines[0])
    doctored["raw"] = -5.0
    lines[0] = json.dumps(doctored, sort_keys=True)
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(ScoreLogError, match="altered"):
        read_log(path)


def test_deleted_line_breaks_the_chain(tmp_path: Path) -> None:
    path = tmp_path / "log.jsonl"
    write_three(path)
    lines = path.read_text().splitlines()
    path.write_text("\n".join([lines[0], lines[2]]) + "\n")
    with pytest.raises(ScoreLogError, match="chain"):
        read_log(path)


def test_torn_last_line_is_ignored(tmp_path: Path) -> None:
    path = tmp_path / "log.jsonl"
    write_three(path)
    with path.open("a") as fh:
        fh.write('{"index": 3, "raw": 0.')
    assert len(read_log(path)) == 3


def test_entry_must_chain(tmp_path: Path) -> None:
    path = tmp_path / "log.jsonl"
    write_three(path)
    with pytest.raises(ScoreLogError):
        append_entry(path, entry(3, GENESIS))


def test_failed_write_keeps_earlier_lines(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "log.jsonl"
    write_three(path)
    before = path.read_bytes()
    import os

    def full_disk(fd: int) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", full_disk)
    with pytest.raises(OSError, match="No space"):
        append_entry(path, entry(3, last_hash(path)))
    monkeypatch.undo()
    assert path.read_bytes() == before
    assert len(read_log(path)) == 3
