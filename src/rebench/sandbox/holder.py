"""The harness side of a persistent sandbox: one long-lived bwrap process whose main process
is the command server of `rebench.sandbox.inner`, reached over a socket pair.

Replies are untrusted (code inside can reach the server), so they are parsed defensively and
every request has a harness-side deadline; a server that misses it, dies or talks nonsense
gets the whole sandbox killed, which also kills every process inside.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from rebench.sandbox.base import ExecResult
from rebench.sandbox.process import MAX_OUTPUT_BYTES, kill_group
from rebench.sandbox.runtime import RUNTIME_MOUNT

# Seconds the server gets beyond a request's timeout to kill the command and answer.
REPLY_GRACE_S = 5.0
# A reply carries two streams of at most MAX_OUTPUT_BYTES each, JSON-escaped (up to 6x).
_MAX_REPLY_BYTES = 16 * MAX_OUTPUT_BYTES
# The server runs from the sandbox's child runtime (runtime.py), not from rebench's source.
_BOOT = (f"import sys; sys.path.insert(0, {RUNTIME_MOUNT!r}); "
         "from rebench.sandbox.inner import main; main()")


class SandboxLostError(RuntimeError):
    """The sandbox's server died, timed out or misbehaved; the sandbox was killed."""


def server_argv(sock_fd: int) -> list[str]:
    """The command that starts the in-sandbox server on inherited socket `sock_fd`."""
    return [sys.executable, "-I", "-S", "-c", _BOOT, str(sock_fd)]


class _Slot:
    def __init__(self) -> None:
        self.done = threading.Event()
        self.reply: dict[str, Any] | None = None


class Holder:
    """A running persistent sandbox (start one with `start_holder`)."""

    def __init__(self, proc: subprocess.Popen[bytes], sock: socket.socket,
                 stderr_file: Any) -> None:
        self.proc = proc
        self._sock = sock
        self._stderr = stderr_file
        self._send_lock = threading.Lock()
        self._slots: dict[int, _Slot] = {}
        self._slots_lock = threading.Lock()
        self._ids = itertools.count(1)
        self.alive = True
        self._reader = threading.Thread(target=self._read_replies, daemon=True)
        self._reader.start()

    def _read_replies(self) -> None:
        reader = self._sock.makefile("rb")
        try:
            while True:
                line = reader.readline(_MAX_REPLY_BYTES)
                if not line or not line.endswith(b"\n"):
                    break
                self._deliver(line)
        except (OSError, ValueError):
            pass
        self.alive = False
        with self._slots_lock:
            for slot in self._slots.values():
                slot.done.set()

    def _deliver(self, line: bytes) -> None:
        try:
            reply = json.loads(line)
            slot_id = int(reply["id"])
        except (ValueError, KeyError, TypeError):
            return  # nonsense from inside: ignore it, the deadline still holds
        with self._slots_lock:
            slot = self._slots.get(slot_id)
        if slot is not None and not slot.done.is_set():
            slot.reply = reply
            slot.done.set()

    def request(self, cmd: str, cwd: Path, env: Mapping[str, str], timeout: float) -> ExecResult:
        """Run `cmd` inside; SandboxLostError if the server does not answer in time."""
        start = time.monotonic()
        slot_id, slot = next(self._ids), _Slot()
        with self._slots_lock:
            self._slots[slot_id] = slot
        try:
            if not self.alive:
                raise SandboxLostError("the sandbox's command server died")
            line = json.dumps({"id": slot_id, "cmd": cmd, "cwd": str(cwd), "env": dict(env),
                               "timeout": timeout}).encode() + b"\n"
            try:
                with self._send_lock:
                    self._sock.sendall(line)
            except OSError as exc:
                raise SandboxLostError(f"the sandbox is gone ({exc})") from exc
            if not slot.done.wait(timeout + REPLY_GRACE_S) or slot.reply is None:
                raise SandboxLostError("the sandbox stopped answering" if self.alive
                                       else "the sandbox's command server died")
            return _to_result(slot.reply, time.monotonic() - start)
        finally:
            with self._slots_lock:
                self._slots.pop(slot_id, None)

    def setup_error(self) -> str:
        """What bwrap printed on stderr (its reason when the sandbox failed to start)."""
        with contextlib.suppress(OSError, ValueError):
            self._stderr.seek(0)
            return str(self._stderr.read(4000).decode(errors="replace")).strip()
        return ""

    def close(self) -> None:
        """Kill the sandbox and everything in it; wait for bwrap to exit."""
        self.alive = False
        with contextlib.suppress(OSError):
            self._sock.shutdown(socket.SHUT_RDWR)
        kill_group(self.proc.pid)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=10)
        self._sock.close()
        self._stderr.close()


def start_holder(build_argv: Callable[[list[str]], list[str]]) -> Holder:
    """Start a persistent sandbox. `build_argv(inner_argv)` returns the bwrap command line
    that runs `inner_argv` inside."""
    parent, child = socket.socketpair()
    stderr_file = tempfile.TemporaryFile()  # noqa: SIM115 (lives as long as the Holder)
    try:
        argv = build_argv(server_argv(child.fileno()))
        proc = subprocess.Popen(argv, pass_fds=(child.fileno(),), stdin=subprocess.DEVNULL,
                                stdout=subprocess.DEVNULL, stderr=stderr_file,
                                start_new_session=True)
    except BaseException:
        parent.close()
        stderr_file.close()
        raise
    finally:
        child.close()
    return Holder(proc, parent, stderr_file)


def _to_result(reply: Mapping[str, Any], elapsed: float) -> ExecResult:
    """An ExecResult from a reply; malformed fields become an error result."""
    try:
        return ExecResult(
            returncode=int(reply["returncode"]),
            stdout=str(reply["stdout"])[:MAX_OUTPUT_BYTES + 100],
            stderr=str(reply["stderr"])[:MAX_OUTPUT_BYTES + 100],
            timed_out=bool(reply["timed_out"]),
            duration_s=elapsed,
        )
    except (KeyError, TypeError, ValueError):
        error = str(reply.get("error", "malformed reply"))[:2000]
        return ExecResult(returncode=-1, stdout="", stderr=f"[sandbox error: {error}]",
                          timed_out=False, duration_s=elapsed)
