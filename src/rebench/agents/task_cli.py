"""`rebench-task`: the command a human (or any process) inside the sandbox uses to reach the
harness: `score`, `status`, `time`, `instructions`, `end`.

This file is copied into the sandbox as an executable script and runs there with
`python -I -S`: standard library only, no rebench imports (inside the sandbox `import
rebench` fails). It sends one JSON request over the unix socket named by
$REBENCH_TASK_SOCKET and prints the harness's answer; everything it receives is decided
outside the sandbox (an official score is run by the harness, never here).

The reply is a stream of JSON lines: `{"note": ...}` lines are progress notes (printed at
once), the last line `{"ok": ..., "text": ...}` is the answer.
"""

from __future__ import annotations

import json
import os
import socket
import sys
from collections.abc import Callable

COMMANDS = {
    "score": "score the current solution officially (logged; counts for the run)",
    "status": "the scores so far, the best one, and the time left",
    "time": "working time used and left",
    "instructions": "print the task instructions again",
    "end": "end the run now (asks first): the final score runs, no more working time",
}
# Used by the shell's prompt: logs the last command, answers the time left in short.
PROMPT_COMMAND = "_prompt"
# An official score can take as long as the environment's scoring timeout.
REPLY_TIMEOUT_S = 3600.0
# Set by the human shell for the commands inside the sandbox; read there, it is the
# sandbox's interface, not a harness setting (core/paths.py reads those).
SOCKET_ENV = "REBENCH_TASK_SOCKET"
_MAX_REPLY_BYTES = 4 << 20


def usage() -> str:
    lines = ["usage: rebench-task COMMAND", "", "commands:"]
    lines += [f"  {name:<13} {text}" for name, text in COMMANDS.items()]
    return "\n".join(lines)


def request(command: str, path: str, args: list[str] | None = None,
            timeout: float = REPLY_TIMEOUT_S,
            on_note: Callable[[str], None] | None = None) -> dict[str, object]:
    """Send `command` to the harness at socket `path`; its final JSON reply. Notes that
    come first are passed to `on_note` when given."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(timeout)
        sock.connect(path)
        sock.sendall(json.dumps({"command": command, "args": args or []}).encode() + b"\n")
        reader = sock.makefile("rb")
        while True:
            line = reader.readline(_MAX_REPLY_BYTES)
            if not line.endswith(b"\n"):
                raise ValueError("the reply ended early")
            reply = json.loads(line)
            if not isinstance(reply, dict):
                raise ValueError("malformed reply")
            if "note" in reply and "text" not in reply:
                if on_note is not None:
                    on_note(str(reply["note"]))
                continue
            return reply


def _confirm_end() -> bool:
    if not sys.stdin.isatty():
        print("rebench-task end: asks for confirmation on a terminal; "
              "use `rebench-task end --yes` from a script", file=sys.stderr)
        return False
    try:
        answer = input('End the run now? The final score runs and no working time is left '
                       'afterwards. Type "end" to end it: ')
    except EOFError:
        return False
    return answer.strip() == "end"


def _note(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def main(argv: list[str]) -> int:
    """Entry point; returns the exit status."""
    command, args = (argv[0], argv[1:]) if argv else ("", [])
    known = command in COMMANDS and (not args or (command, args) == ("end", ["--yes"]))
    if not known and command != PROMPT_COMMAND:
        print(usage(), file=sys.stderr)
        return 0 if argv[:1] in (["-h"], ["--help"], ["help"]) else 2
    path = os.environ.get(SOCKET_ENV)
    if not path:
        print(f"rebench-task: ${SOCKET_ENV} is not set (run this inside a rebench run)",
              file=sys.stderr)
        return 2
    if command == "end" and not args and not _confirm_end():
        print("rebench-task: the run goes on.", file=sys.stderr)
        return 1
    if command == "score":
        _note("scoring (this can take a while; the time it takes counts against your "
              "budget)...")
    try:
        reply = request(command, path, args, on_note=_note)
    except KeyboardInterrupt:
        if command == "score":
            _note("\nrebench-task: stopped waiting. The score goes on in the harness and "
                  "will be logged; see `rebench-task status`.")
        return 130
    except (OSError, ValueError) as exc:
        print(f"rebench-task: the harness did not answer ({exc})", file=sys.stderr)
        return 1
    print(str(reply.get("text", "")))
    return 0 if reply.get("ok") else 1


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except KeyboardInterrupt:  # Ctrl-C while answering "end?" or connecting: no traceback
        sys.exit(130)
