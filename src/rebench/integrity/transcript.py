"""The run as a transcript: the model's own messages (for Inspect runs) as text units, and a
bounded plain-text transcript of every action for the model monitor."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rebench.integrity.flags import Evidence
from rebench.integrity.record import RunData, TextUnit, UnitKind

INSPECT_LOG_DIR = "inspect"  # as rebench.agents.inspect_agent writes it
# Characters of transcript a monitor reads at most (head and tail kept).
MAX_TRANSCRIPT_CHARS = 60_000
OUTPUT_TAIL_CHARS = 600


def _message_text(message: Any) -> str:
    text = getattr(message, "text", "") or ""
    calls = getattr(message, "tool_calls", None) or []
    for call in calls:
        text += f"\n[tool call {getattr(call, 'function', '?')}: {getattr(call, 'arguments', '')}]"
    return str(text)


def inspect_messages(run_dir: Path) -> tuple[list[tuple[int, str]], list[str]]:
    """(index, text) of every assistant message in the run's Inspect logs, and notes."""
    log_dir = run_dir / INSPECT_LOG_DIR
    logs = sorted(log_dir.glob("*.eval")) + sorted(log_dir.glob("*.json")) \
        if log_dir.is_dir() else []
    if not logs:
        return [], []
    try:
        from inspect_ai.log import read_eval_log
    except ImportError:
        return [], ["the run has Inspect logs but inspect_ai is not installed: the model's "
                    "messages were not read"]
    out: list[tuple[int, str]] = []
    notes: list[str] = []
    for path in logs:
        try:
            log = read_eval_log(str(path))
        except Exception as exc:  # any unreadable log is a note, not a crash
            notes.append(f"Inspect log {path.name} unreadable: {exc}")
            continue
        for sample in log.samples or []:
            for index, message in enumerate(sample.messages):
                if getattr(message, "role", "") == "assistant":
                    out.append((index, _message_text(message)))
    return out, notes


def message_units(run_dir: Path) -> tuple[list[TextUnit], list[str]]:
    """The model's messages as text units (rules scan them for judge-directed text)."""
    messages, notes = inspect_messages(run_dir)
    units = [TextUnit(UnitKind.MESSAGE, text, Evidence(file=f"inspect message {index}"))
             for index, text in messages]
    return units, notes


def _event_line(event_type: str, data: dict[str, Any]) -> str | None:
    if event_type == "exec":
        tail = f"{data.get('stdout') or ''}{data.get('stderr') or ''}"[-OUTPUT_TAIL_CHARS:]
        return f"$ {data.get('cmd', '')}\n[exit {data.get('returncode')}]\n{tail}"
    if event_type == "write_file":
        return f"[write_file {data.get('path')} ({data.get('bytes')} bytes)]"
    if event_type == "read_file":
        return f"[read_file {data.get('path')}]"
    if event_type in ("score", "final_score"):
        return f"[{event_type}: valid={data.get('valid')} normalized={data.get('normalized')}]"
    return None


def transcript_text(data: RunData) -> str:
    """Every action of the run, with each event's index, as plain text (bounded)."""
    parts = []
    for event in data.events:
        line = _event_line(event.type, event.data)
        if line is not None:
            parts.append(f"<event {event.seq} t={event.working_s:.0f}s>\n{line}")
    for index, text in inspect_messages(data.run_dir)[0]:
        parts.append(f"<model message {index}>\n{text}")
    text = "\n".join(parts)
    if len(text) > MAX_TRANSCRIPT_CHARS:
        half = MAX_TRANSCRIPT_CHARS // 2
        text = f"{text[:half]}\n[... {len(text) - 2 * half} characters cut ...]\n{text[-half:]}"
    return text
