"""The command server that lives inside a persistent bubblewrap sandbox.

`BwrapSandbox.create` starts it as the sandbox's main process with one end of a socket pair;
each request (one JSON line: id, cmd, env, timeout) runs `bash -c cmd` in its own session and
is answered with one JSON line (id, returncode, stdout, stderr, timed_out, duration_s).
Background processes outlive their request and die with the sandbox. Nothing this process
says is trusted: the harness treats replies as the agent's output, and enforces its own
deadline around every request.

Stdlib and rebench.sandbox.process only: it runs with `python -I -S`.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from rebench.sandbox.process import pump

_KILL_ROUNDS = 3  # a session can fork while it is being killed; sweep a few times


def session_members(sid: int) -> list[int]:
    """Pids of this pid namespace whose session id is `sid` (field 6 of /proc/PID/stat)."""
    members = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rfind(")") + 2:].split()
        if len(fields) > 3 and int(fields[3]) == sid:
            members.append(int(entry.name))
    return members


def kill_session(sid: int) -> None:
    """SIGKILL every process of session `sid` (a command's foreground and `&` jobs; jobs
    that called setsid left it and live until the sandbox is destroyed)."""
    for _ in range(_KILL_ROUNDS):
        members = session_members(sid)
        if not members:
            return
        for pid in members:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.01)


def run_request(request: Mapping[str, Any], base_env: Mapping[str, str]) -> dict[str, Any]:
    """Run one request and build its reply."""
    start = time.monotonic()
    reply: dict[str, Any] = {"id": request["id"], "timed_out": False}
    try:
        proc = subprocess.Popen(
            ["bash", "-c", str(request["cmd"])], cwd=str(request["cwd"]),
            env={**base_env, **request.get("env", {})}, stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,
        )
    except OSError as exc:
        return {**reply, "returncode": 127, "stdout": "", "stderr": str(exc),
                "duration_s": time.monotonic() - start}
    if proc.stdout is None or proc.stderr is None:
        raise RuntimeError("Popen gave no pipes")
    out, err, timed_out = pump(proc, (proc.stdout, proc.stderr), float(request["timeout"]),
                               lambda: kill_session(proc.pid))
    proc.wait()
    proc.stdout.close()
    proc.stderr.close()
    return {**reply, "returncode": proc.returncode, "stdout": out.text(),
            "stderr": err.text(), "timed_out": timed_out,
            "duration_s": time.monotonic() - start}


def serve(sock: socket.socket, base_env: Mapping[str, str]) -> None:
    """Answer requests until the harness closes its end; one thread per request."""
    send_lock = threading.Lock()

    def handle(line: bytes) -> None:
        try:
            request = json.loads(line)
            reply = run_request(request, base_env)
        except Exception as exc:  # a bad request must not take the server down
            reply = {"id": -1, "error": f"{type(exc).__name__}: {exc}"}
        data = json.dumps(reply).encode() + b"\n"
        with send_lock, contextlib.suppress(OSError):
            sock.sendall(data)

    reader = sock.makefile("rb")
    for line in reader:
        threading.Thread(target=handle, args=(line,), daemon=True).start()


def main() -> None:
    """Entry point: `inner.py FD` where FD is the sandbox's end of the socket pair."""
    sock = socket.socket(fileno=int(sys.argv[1]))
    serve(sock, dict(os.environ))


if __name__ == "__main__":
    main()
