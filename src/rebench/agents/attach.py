"""`rebench attach RUN`: a second shell into a running human run (an editor in one
terminal, a shell in another).

The running harness listens on a unix socket in a private folder (mode 0700, outside every
sandbox); `attach.json` in the run directory names it. The client passes its terminal's
file descriptor over the socket (SCM_RIGHTS) and waits; the harness opens one more
sandboxed shell of the run on that terminal, recorded and logged like the first one, and
closes the connection when the shell ends. Only the same user can connect (the folder's
mode, and the peer's uid is checked).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import struct
import sys
import tempfile
import termios
import threading
from collections.abc import Callable
from pathlib import Path

import click

from rebench.core.errors import RunError

ATTACH_FILE = "attach.json"
_HELLO = b"rebench-attach"


def _peer_uid(conn: socket.socket) -> int:
    creds = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    uid: int = struct.unpack("3i", creds)[1]
    return uid


class AttachServer:
    """Accepts terminals for more shells of the run; `open_shell(fd)` runs one to its end."""

    def __init__(self, run_dir: Path, open_shell: Callable[[int], None]) -> None:
        self.run_dir = run_dir
        self.open_shell = open_shell
        self._dir = Path(tempfile.mkdtemp(prefix="rebench-attach-"))  # mode 0700
        self.path = self._dir / "attach.sock"
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._sock.bind(str(self.path))
        self._sock.listen()
        (run_dir / ATTACH_FILE).write_text(json.dumps({"socket": str(self.path),
                                                       "pid": os.getpid()}))
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self._sock.accept()
            except OSError:
                return  # closed
            threading.Thread(target=self._handle, args=(conn,), daemon=True).start()

    def _handle(self, conn: socket.socket) -> None:
        fds: list[int] = []
        with conn:
            try:
                if _peer_uid(conn) != os.getuid():
                    conn.sendall(b"refused: another user\n")
                    return
                msg, fds, _, _ = socket.recv_fds(conn, 64, 1)
                if msg != _HELLO or len(fds) != 1 or not os.isatty(fds[0]):
                    conn.sendall(b"refused: send one terminal\n")
                    return
                conn.sendall(b"ok\n")
                self.open_shell(fds[0])
            except OSError:
                pass  # the client's terminal or connection went away: the shell ended
            finally:
                for fd in fds:
                    with contextlib.suppress(OSError):
                        os.close(fd)

    def close(self) -> None:
        with contextlib.suppress(OSError):
            (self.run_dir / ATTACH_FILE).unlink()
        with contextlib.suppress(OSError):
            self._sock.shutdown(socket.SHUT_RDWR)
        self._sock.close()
        shutil.rmtree(self._dir, ignore_errors=True)


def attach(run_dir: Path, tty_fd: int | None = None) -> None:
    """Open a shell into the human run in `run_dir` on this terminal; returns when it ends.
    RunError when no human shell is running there."""
    fd = sys.stdin.fileno() if tty_fd is None else tty_fd
    if not os.isatty(fd):
        raise RunError("rebench attach needs a terminal on its standard input")
    try:
        info = json.loads((run_dir / ATTACH_FILE).read_text())
        path = str(info["socket"])
    except (OSError, ValueError, KeyError, TypeError):
        raise RunError(f"no human shell is running in {run_dir}") from None
    saved = termios.tcgetattr(fd)
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        try:
            sock.connect(path)
        except OSError as exc:
            raise RunError(f"the run's harness does not answer ({exc}); is it still "
                           "running?") from None
        socket.send_fds(sock, [_HELLO], [fd])
        try:
            reply = sock.makefile("rb").readline(256)
            if reply != b"ok\n":
                raise RunError(f"the harness refused: {reply.decode(errors='replace').strip()}")
            while sock.recv(64):  # the harness closes the connection when the shell ends
                pass
        finally:
            termios.tcsetattr(fd, termios.TCSADRAIN, saved)


@click.command("attach")
@click.argument("run_ref")
def attach_command(run_ref: str) -> None:
    """Open another shell into a running human run (RUN_REF: id or directory); exiting it
    leaves the run going."""
    from rebench.harness.run import open_run

    attach(open_run(run_ref).run_dir)
    click.echo("rebench: back from the run's shell; the run goes on.", err=True)
