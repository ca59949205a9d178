"""`rebench-task`: the command a human (or any process) inside the sandbox uses to reach the
harness: `score`, `status`, `time`, `instructions`.

This file is copied into the sandbox as an executable script and runs there with
`python -I -S`: standard library only, no rebench imports. It sends one JSON request over the
unix socket named by $REBENCH_TASK_SOCKET and prints the harness's answer; everything it
receives is decided outside the sandbox (an official score is run by the harness, never here).
"""

from __future__ import annotations

import json
import os
import socket
import sys

COMMANDS = {
    "score": "score the current solution officially (logged; counts for the run)",
    "status": "the scores so far and the time left",
    "time": "working time used and left",
    "instructions": "print the task instructions again",
}
# An official score can take as long as the environment's scoring timeout.
REPLY_TIMEOUT_S = 3600.0
SOCKET_ENV = "REBENCH_TASK_SOCKET"


def usage() -> str:
    lines = ["usage: rebench-task COMMAND", "", "commands:"]
    lines += [f"  {name:<13} {text}" for name, text in COMMANDS.items()]
    return "\n".join(lines)


def request(command: str, path: str, timeout: float = REPLY_TIMEOUT_S) -> dict[str, object]:
    """Send `command` to the harness at socket `path`; its JSON reply."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(timeout)
        sock.connect(path)
        sock.sendall(json.dumps({"command": command}).encode() + b"\n")
        data = b""
        while not data.endswith(b"\n"):
            chunk = sock.recv(65536)
            if not chunk:
                break
            data += chunk
    reply = json.loads(data)
    if not isinstance(reply, dict):
        raise ValueError("malformed reply")
    return reply


def main(argv: list[str]) -> int:
    """Entry point; returns the exit status."""
    if len(argv) != 1 or argv[0] not in COMMANDS:
        print(usage(), file=sys.stderr)
        return 0 if argv[:1] in (["-h"], ["--help"], ["help"]) else 2
    path = os.environ.get(SOCKET_ENV)
    if not path:
        print(f"rebench-task: ${SOCKET_ENV} is not set (run this inside a rebench run)",
              file=sys.stderr)
        return 2
    if argv[0] == "score":
        print("scoring (this can take a while)...", file=sys.stderr, flush=True)
    try:
        reply = request(argv[0], path)
    except (OSError, ValueError) as exc:
        print(f"rebench-task: the harness did not answer ({exc})", file=sys.stderr)
        return 1
    print(str(reply.get("text", "")))
    return 0 if reply.get("ok") else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
