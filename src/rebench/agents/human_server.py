"""The harness side of `rebench-task`: a unix-socket server answering the commands of
agents/task_cli.py, and the texts it answers with (scores, status, time).

Requests come from inside the sandbox, so they are read with a size limit and every
failure becomes an error reply, never a crash of the harness.
"""

from __future__ import annotations

import contextlib
import json
import math
import re
import socket
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from rebench.agents import task_cli
from rebench.core.duration import format_duration
from rebench.core.spec import Aggregation
from rebench.harness.records import ScoreEntry
from rebench.harness.session import Session
from rebench.scoring.contract import ScoreKind

_MAX_REQUEST_BYTES = 64 * 1024
# Characters of one shell command kept in events.jsonl.
MAX_COMMAND_CHARS = 2000
_KIND_LABELS = {ScoreKind.INITIAL: "the starting solution", ScoreKind.REQUESTED: "yours",
                ScoreKind.FINAL: "final"}
# `  42  some command`: bash's `history 1`.
_HISTORY_LINE = re.compile(r"^\s*(\d+)\*?\s+(.*)$", re.S)


def _fmt(x: float | None) -> str:
    return "-" if x is None or (isinstance(x, float) and not math.isfinite(x)) else f"{x:.4g}"


def short_time(seconds: float) -> str:
    """Compact time for the prompt: 7h59m, 4m05s, 0s."""
    s = max(0, int(seconds))
    if s >= 3600:
        return f"{s // 3600}h{s % 3600 // 60:02d}m"
    if s >= 60:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s}s"


def participant_paths(text: str, snapshot: Path, workspace: Path) -> str:
    """`text` with the snapshot's paths (what the scorer loaded) shown as the participant's
    files in the workspace, so tracebacks point at the files they edit."""
    for path in {str(snapshot.resolve()), str(snapshot)}:
        text = text.replace(path, str(workspace))
    return text


def format_message(message: Mapping[str, Any], snapshot: Path, workspace: Path) -> str:
    """A score's message as readable lines: `key: value`, multi-line texts (tracebacks) as
    they are, not as escaped JSON."""
    lines = []
    for key, value in message.items():
        text = value if isinstance(value, str) else json.dumps(value, default=str)
        text = participant_paths(text, snapshot, workspace)
        if "\n" in text:
            lines.append(f"{key}:")
            lines += [f"  {line}" for line in text.rstrip("\n").splitlines()]
        else:
            lines.append(f"{key}: {text}")
    return "\n".join(lines)


def describe_score(view: Mapping[str, Any]) -> str:
    """The head line for an agent-visible score view."""
    if "valid" not in view:  # a hidden score: only the environment's message is shown
        return f"score #{view.get('index')}: {json.dumps(view.get('message', {}))}"
    head = f"score #{view.get('index')}: {'valid' if view.get('valid') else 'INVALID'}"
    if "normalized" in view:
        head += f", normalized {_fmt(view.get('normalized'))} (raw {_fmt(view.get('raw'))})"
    return head


def _entry_line(entry: ScoreEntry, visible: bool, session: Session) -> str:
    what = _KIND_LABELS[entry.kind]
    head = f"#{entry.index:<3} {what:<21} at {format_duration(entry.working_s):>9}  "
    if not visible:  # the score is hidden: the environment's message says what counts
        return head + json.dumps(entry.message)
    if not entry.valid:
        snapshot = session.run.run_dir / entry.snapshot
        error = format_message(entry.message, snapshot, session.run.workspace)
        return head + "INVALID: " + error.replace("\n", "\n" + " " * 8)
    return head + f"normalized {_fmt(entry.normalized)} (raw {_fmt(entry.raw)})"


def format_status(session: Session) -> str:
    """Every score so far (#0 is the starting solution), the best one, and the time."""
    visible = session.run.spec.score_visible_to_agent
    entries = session.run.entries()
    lines = [_entry_line(e, visible, session) for e in entries]
    if not entries:
        lines.append("no score yet: the starting solution (#0) is being scored")
    valid = [e for e in entries if e.valid and math.isfinite(e.normalized)]
    if visible and valid:
        best = max(valid, key=lambda e: e.normalized)
        counts = ("its best score" if session.run.record.aggregation is Aggregation.BEST
                  else "its last valid score")
        lines.append(f"best so far: #{best.index}, normalized {_fmt(best.normalized)} "
                     f"(the run counts {counts})")
    lines.append(time_text(session))
    return "\n".join(lines)


def time_text(session: Session) -> str:
    used, left = session.working_s(), session.time_left()
    return (f"working time used {format_duration(used)}, left {format_duration(left)} "
            f"of {format_duration(used + left)} (scoring time counts against it)")


class TaskServer:
    """Answers `rebench-task` requests on a unix socket, one thread per connection.

    `on_end` is called when the participant ends the run on purpose (`rebench-task end`)."""

    def __init__(self, session: Session, path: Path, on_end: Callable[[], None]) -> None:
        self.session = session
        self.path = path
        self.on_end = on_end
        self._logged: dict[str, int] = {}  # shell -> last history number logged
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._sock.bind(str(path))
        self._sock.listen()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self._sock.accept()
            except OSError:
                return  # closed
            threading.Thread(target=self._handle, args=(conn,), daemon=True).start()

    def _handle(self, conn: socket.socket) -> None:
        def send(payload: dict[str, Any]) -> None:
            with contextlib.suppress(OSError):  # the client left (Ctrl-C): the work goes on
                conn.sendall(json.dumps(payload, default=str).encode() + b"\n")

        with conn:
            try:
                data = conn.makefile("rb").readline(_MAX_REQUEST_BYTES)
                request = json.loads(data)
                args = [str(a) for a in request.get("args", [])]
                reply = self.answer(str(request["command"]), args,
                                    lambda text: send({"note": text}))
            except Exception as exc:  # a bad request or an expired session: tell, go on
                reply = {"ok": False, "text": f"{type(exc).__name__}: {exc}"}
            send(reply)

    def answer(self, command: str, args: list[str],
               note: Callable[[str], None]) -> dict[str, Any]:
        """The reply to one command; `note` sends a progress line first."""
        session = self.session
        if command == task_cli.PROMPT_COMMAND:
            self._log_command(args)
            return {"ok": True, "text": short_time(session.time_left())}
        if command == "time":
            return {"ok": True, "text": time_text(session)}
        if command == "instructions":
            return {"ok": True, "text": session.instructions}
        if command == "status":
            return {"ok": True, "text": format_status(session)}
        if command == "score":
            return {"ok": True, "text": self._score(note)}
        if command == "end":
            session.events.emit("note", text="the participant ended the run (rebench-task end)")
            self.on_end()
            return {"ok": True, "text": "ending the run: the final score runs now"}
        return {"ok": False, "text": task_cli.usage()}

    def _score(self, note: Callable[[str], None]) -> str:
        if not self.session.run.entries():
            note("waiting for the starting solution's score (#0, begun when the run started) "
                 "to finish; yours runs right after it")
        view = self.session.score()
        entry = next(e for e in reversed(self.session.run.entries())
                     if e.index == view["index"])
        snapshot = self.session.run.run_dir / entry.snapshot
        body = format_message(view.get("message", {}), snapshot, self.session.run.workspace)
        return f"{describe_score(view)}\n{body}".rstrip()

    def _log_command(self, args: list[str]) -> None:
        """Log a shell's last history line (sent as a command starts) as a `shell_command`,
        once per history number and shell."""
        if len(args) < 2:
            return
        match = _HISTORY_LINE.match(args[1])
        shell = args[2] if len(args) > 2 else ""
        if match is None or self._logged.get(shell) == int(match.group(1)):
            return
        self._logged[shell] = int(match.group(1))
        self.session.events.emit("shell_command", shell=shell,
                                 history_number=int(match.group(1)),
                                 command=match.group(2)[:MAX_COMMAND_CHARS])

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self._sock.shutdown(socket.SHUT_RDWR)
        self._sock.close()
        with contextlib.suppress(OSError):
            self.path.unlink()

