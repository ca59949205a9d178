"""`replay:FILE`: replays a recorded list of actions (JSONL), for tests and for re-running
trajectories.

One JSON object a line, `action` one of:

    {"action": "exec", "cmd": "python train.py", "timeout": 600}
    {"action": "write_file", "path": "solution.py", "content": "..."}   (or "content_b64")
    {"action": "read_file", "path": "log.txt"}
    {"action": "score"}
    {"action": "sleep", "seconds": 5}
    {"action": "time_left"}
    {"action": "service", "name": "experiments", "request": {...}}   (a run-scoped service)

Any action may carry `"at": SECONDS`: wait until the run's working clock reaches it first
(to reproduce a trajectory's timing). Blank lines and lines starting with `#` are skipped.
The whole file is checked when the agent is made, so a bad file fails before a run starts.
"""

from __future__ import annotations

import base64
import binascii
import json
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rebench.core.errors import RebenchError
from rebench.harness.events import Event
from rebench.harness.session import Session

# Fields each action needs, with their types.
_REQUIRED: dict[str, dict[str, type | tuple[type, ...]]] = {
    "exec": {"cmd": str},
    "write_file": {"path": str},
    "read_file": {"path": str},
    "score": {},
    "sleep": {"seconds": (int, float)},
    "time_left": {},
    "service": {"name": str, "request": dict},
}
_OPTIONAL: dict[str, type | tuple[type, ...]] = {
    "timeout": (int, float), "content": str, "content_b64": str, "at": (int, float),
    "note": str,
}
_SLEEP_STEP_S = 0.1


class ReplayFileError(RebenchError):
    """A replay file is missing or malformed."""


@dataclass(frozen=True)
class Action:
    """One parsed line of a replay file."""

    kind: str
    args: dict[str, Any] = field(default_factory=dict)
    line: int = 0


def _check_fields(obj: dict[str, Any], where: str) -> None:
    kind = obj["action"]
    for key, typ in {**_REQUIRED[kind], **_OPTIONAL}.items():
        if key in obj and (isinstance(obj[key], bool) or not isinstance(obj[key], typ)):
            raise ReplayFileError(f"{where}: field {key!r} has the wrong type")
    for key in _REQUIRED[kind]:
        if key not in obj:
            raise ReplayFileError(f"{where}: {kind} needs {key!r}")
    unknown = set(obj) - {"action", *_REQUIRED[kind], *_OPTIONAL}
    if unknown:
        raise ReplayFileError(f"{where}: unknown field(s) {sorted(unknown)}")
    for key in ("timeout", "seconds", "at"):
        if key in obj and (not math.isfinite(obj[key]) or obj[key] < 0):
            raise ReplayFileError(f"{where}: {key!r} must be a non-negative number")
    if kind == "write_file":
        if ("content" in obj) == ("content_b64" in obj):
            raise ReplayFileError(f"{where}: write_file needs one of content, content_b64")
        if "content_b64" in obj:
            try:
                base64.b64decode(obj["content_b64"], validate=True)
            except binascii.Error:
                raise ReplayFileError(f"{where}: content_b64 is not base64") from None


def parse_actions(text: str, source: str = "<replay>") -> list[Action]:
    """The actions of a replay file's text; ReplayFileError on anything malformed."""
    actions = []
    for lineno, line in enumerate(text.splitlines(), start=1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        where = f"{source}:{lineno}"
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ReplayFileError(f"{where}: not JSON ({exc.msg})") from None
        if not isinstance(obj, dict) or obj.get("action") not in _REQUIRED:
            raise ReplayFileError(
                f"{where}: each line needs \"action\": one of {', '.join(_REQUIRED)}"
            )
        _check_fields(obj, where)
        actions.append(Action(obj["action"], {k: v for k, v in obj.items() if k != "action"},
                              lineno))
    return actions


def load_actions(path: Path) -> list[Action]:
    """Read and check a replay file."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ReplayFileError(f"cannot read replay file {path}: {exc}") from None
    return parse_actions(text, str(path))


def _wait(session: Session, seconds: float) -> None:
    """Sleep `seconds` of working time, or until the time is up."""
    deadline = time.monotonic() + seconds
    while (left := deadline - time.monotonic()) > 0 and session.time_left() > 0:
        time.sleep(min(left, _SLEEP_STEP_S))


class ReplayAgent:
    """Performs the actions of a replay file in order, then stops."""

    def __init__(self, arg: str) -> None:
        if not arg:
            raise ReplayFileError("the replay agent needs a file: replay:PATH")
        self.path = Path(arg).expanduser().resolve()
        self.actions = load_actions(self.path)
        self.name = f"replay:{self.path.name}"

    def act(self, session: Session) -> None:
        for action in self.actions:
            if session.time_left() <= 0:
                return
            at = action.args.get("at")
            if at is not None:
                _wait(session, float(at) - session.working_s())
            try:
                perform(session, action)
            except OSError:
                continue  # a recorded read or write that fails now; the session logged it


def actions_from_events(events: Sequence[Event], keep_timing: bool = False) -> list[dict[str, Any]]:
    """A replay file's lines that redo a recorded run's actions (from its events.jsonl).

    Writes of files too large to be kept in their event cannot be redone and are skipped
    with a note. With `keep_timing`, every action waits for the working time it happened at.
    """
    lines: list[dict[str, Any]] = []
    for event in events:
        data = event.data
        if event.type == "exec":
            line: dict[str, Any] = {"action": "exec", "cmd": data["cmd"],
                                    "timeout": data.get("timeout", 600.0)}
        elif event.type == "write_file" and "error" not in data:
            if "content_b64" not in data:
                lines.append({"action": "time_left",
                              "note": f"skipped: {data['path']} was too large to record"})
                continue
            line = {"action": "write_file", "path": data["path"],
                    "content_b64": data["content_b64"]}
        elif event.type == "read_file":
            line = {"action": "read_file", "path": data["path"]}
        elif event.type == "score":
            line = {"action": "score"}
        else:
            continue
        if keep_timing:
            line["at"] = event.working_s
        lines.append(line)
    return lines


def perform(session: Session, action: Action) -> Any:
    """Do one action through the session; returns what the session returned."""
    args = action.args
    if action.kind == "exec":
        return session.exec(args["cmd"], timeout=float(args.get("timeout", 600.0)))
    if action.kind == "write_file":
        data = (base64.b64decode(args["content_b64"]) if "content_b64" in args
                else str(args["content"]).encode())
        return session.write_file(args["path"], data)
    if action.kind == "read_file":
        return session.read_file(args["path"])
    if action.kind == "score":
        return session.score()
    if action.kind == "service":
        return session.call_service(args["name"], dict(args["request"]))
    if action.kind == "sleep":
        session.events.emit("sleep", seconds=float(args["seconds"]))
        return _wait(session, float(args["seconds"]))
    left = session.time_left()
    session.events.emit("time_left", time_left_s=round(left, 3))
    return left
