"""The score request and reply across the scorer process boundary: one versioned schema.

The harness writes a `ScoreRequest` to REQUEST.json and starts `scorer_main` in a fresh
process; that process writes a `ScoreReply` (a scored `ScoreResult`, or the trusted side's
failure) to RESULT.json. Both records are frozen dataclasses whose fields are checked when
they are built, and both JSON forms carry `schema`: a file of another version, or with a
field missing, unknown or of the wrong type, is refused with `ScorerSchemaError` on
whichever side reads it. That error is a `ScoringHarnessError`: a broken boundary is the
harness's fault (an infrastructure error, retried or recorded as such), never the agent's
NaN.
"""

from __future__ import annotations

import enum
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from rebench.core.errors import ScoringHarnessError
from rebench.core.score import ScoreResult
from rebench.sandbox import Isolation
from rebench.scoring.contract import ScoreKind

# Bump on any change to the fields or their meaning of either record.
SCHEMA_VERSION = 1

_E = TypeVar("_E", bound=enum.Enum)
_T = TypeVar("_T")


class ScorerSchemaError(ScoringHarnessError):
    """A score request or reply that does not match this version's schema."""


@dataclass(frozen=True)
class ScoreRequest:
    """What the scorer process is asked to score: the snapshot of a run's solution under an
    environment's profile, with the assets, a private scratch dir, the isolation of its
    untrusted children and the host paths they must never see."""

    env_id: str
    profile: str
    solution_dir: Path
    assets_dir: Path
    scratch_dir: Path
    isolation: Isolation
    hidden: tuple[Path, ...] = ()
    kind: ScoreKind = ScoreKind.FINAL

    def __post_init__(self) -> None:
        where = "score request"
        _check(where, "env_id", self.env_id, str)
        _check(where, "profile", self.profile, str)
        for name in ("solution_dir", "assets_dir", "scratch_dir"):
            _check(where, name, getattr(self, name), Path)
        _check(where, "isolation", self.isolation, Isolation)
        _check(where, "hidden", self.hidden, tuple)
        for path in self.hidden:
            _check(where, "hidden[]", path, Path)
        _check(where, "kind", self.kind, ScoreKind)

    def to_json(self) -> dict[str, object]:
        """The JSON form, with this version's `schema`."""
        return {"schema": SCHEMA_VERSION, "env_id": self.env_id, "profile": self.profile,
                "solution_dir": str(self.solution_dir), "assets_dir": str(self.assets_dir),
                "scratch_dir": str(self.scratch_dir), "isolation": self.isolation.value,
                "hidden": [str(p) for p in self.hidden], "kind": self.kind.value}

    @classmethod
    def from_json(cls, data: object) -> ScoreRequest:
        """The request in `data`; ScorerSchemaError when it does not match the schema."""
        where = "score request"
        obj = _fields(where, data, {"env_id", "profile", "solution_dir", "assets_dir",
                                    "scratch_dir", "isolation", "hidden", "kind"})
        hidden = _field(where, obj, "hidden", list)
        return cls(
            env_id=_field(where, obj, "env_id", str),
            profile=_field(where, obj, "profile", str),
            solution_dir=Path(_field(where, obj, "solution_dir", str)),
            assets_dir=Path(_field(where, obj, "assets_dir", str)),
            scratch_dir=Path(_field(where, obj, "scratch_dir", str)),
            isolation=_member(where, obj, "isolation", Isolation),
            hidden=tuple(Path(_check(where, "hidden[]", p, str)) for p in hidden),
            kind=_member(where, obj, "kind", ScoreKind),
        )


@dataclass(frozen=True)
class ScoreReply:
    """What the scorer process answers: `result` when the submission was scored (a bad
    submission is a NaN result, still a score), or `harness_error` (with its traceback)
    when the trusted side failed."""

    result: ScoreResult | None = None
    harness_error: str | None = None
    traceback: str = ""

    def __post_init__(self) -> None:
        where = "score reply"
        if (self.result is None) == (self.harness_error is None):
            raise ScorerSchemaError(f"{where}: exactly one of result and harness_error")
        if self.result is not None:
            _check(where, "result", self.result, ScoreResult)
            _number(where, "result.raw", self.result.raw)
            _check(where, "result.message", self.result.message, dict)
            _check(where, "result.details", self.result.details, dict)
        else:
            _check(where, "harness_error", self.harness_error, str)
        _check(where, "traceback", self.traceback, str)

    def to_json(self) -> dict[str, object]:
        """The JSON form, with this version's `schema`: `result` (ScoreResult.to_json) or
        `harness_error` and `traceback`."""
        if self.result is not None:
            return {"schema": SCHEMA_VERSION, "result": self.result.to_json()}
        return {"schema": SCHEMA_VERSION, "harness_error": self.harness_error,
                "traceback": self.traceback}

    @classmethod
    def from_json(cls, data: object) -> ScoreReply:
        """The reply in `data`; ScorerSchemaError when it does not match the schema."""
        where = "score reply"
        if isinstance(data, dict) and "result" in data:
            obj = _fields(where, data, {"result"})
            return cls(result=_result(_field(where, obj, "result", dict)))
        obj = _fields(where, data, {"harness_error", "traceback"})
        return cls(harness_error=_field(where, obj, "harness_error", str),
                   traceback=_field(where, obj, "traceback", str))


def _result(data: dict[str, Any]) -> ScoreResult:
    """A ScoreResult from its JSON form (core/score.py to_json), every field checked."""
    where = "score reply result"
    obj = _fields(where, data, {"raw", "valid", "message", "details"}, versioned=False)
    raw = obj["raw"]
    value = math.nan if raw is None else _number(where, "raw", raw)
    valid = _field(where, obj, "valid", bool)
    if valid != math.isfinite(value):
        raise ScorerSchemaError(f"{where}: valid is {valid} but raw is {raw!r}")
    return ScoreResult(raw=value, message=_field(where, obj, "message", dict),
                       details=_field(where, obj, "details", dict))


def write_json(path: Path, record: ScoreRequest | ScoreReply) -> None:
    """Write a request or reply; JSON has no NaN, so a non-finite number is refused."""
    path.write_text(json.dumps(record.to_json(), allow_nan=False))


def read_request(path: Path) -> ScoreRequest:
    """The request at `path`; ScorerSchemaError when unreadable or off the schema."""
    return ScoreRequest.from_json(_load(path, "score request"))


def read_reply(path: Path) -> ScoreReply:
    """The reply at `path`; ScorerSchemaError when unreadable or off the schema."""
    return ScoreReply.from_json(_load(path, "score reply"))


def _load(path: Path, where: str) -> object:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise ScorerSchemaError(f"{where} {path} is unreadable: {exc}") from exc


def _fields(where: str, data: object, names: set[str], *,
            versioned: bool = True) -> Mapping[str, object]:
    """`data` as a JSON object with exactly `names`, and `schema` of this version when
    `versioned` (a nested object has none of its own)."""
    if not isinstance(data, dict):
        raise ScorerSchemaError(f"{where}: expected a JSON object, not {type(data).__name__}")
    version = data.get("schema")
    if versioned and version != SCHEMA_VERSION:
        raise ScorerSchemaError(
            f"{where} has schema {version!r}, this harness reads schema {SCHEMA_VERSION} "
            "(the harness and the scorer process come from different versions of rebench)")
    missing = sorted(names - data.keys())
    unknown = sorted(data.keys() - names - ({"schema"} if versioned else set()))
    if missing or unknown:
        raise ScorerSchemaError(f"{where}: missing fields {missing}, unknown fields {unknown}")
    return data


def _field(where: str, obj: Mapping[str, object], name: str, kind: type[_T]) -> _T:
    return _check(where, name, obj[name], kind)


def _check(where: str, name: str, value: object, kind: type[_T]) -> _T:
    """`value` if it is a `kind` (a bool is not a number here), else ScorerSchemaError."""
    if not isinstance(value, kind) or (isinstance(value, bool) and kind is not bool):
        raise ScorerSchemaError(f"{where}: {name} must be {kind.__name__}, "
                                f"not {type(value).__name__} ({value!r:.80})")
    return value


def _number(where: str, name: str, value: object) -> float:
    """`value` as a float if it is a real number (an int or a float; a bool is not)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ScorerSchemaError(f"{where}: {name} must be a number, "
                                f"not {type(value).__name__} ({value!r:.80})")
    return float(value)


def _member(where: str, obj: Mapping[str, object], name: str, enum_type: type[_E]) -> _E:
    value = _field(where, obj, name, str)
    try:
        return enum_type(value)
    except ValueError:
        allowed = [m.value for m in enum_type]
        raise ScorerSchemaError(f"{where}: {name} {value!r} is not one of {allowed}") from None
