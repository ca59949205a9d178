"""`rebench-task` as it runs inside the sandbox: stdlib only, notes first, Ctrl-C kindly."""

from __future__ import annotations

import ast
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

from rebench.agents import task_cli
from rebench.agents.human_shell import install_task_dir
from rebench.core.pyparse import parse_python

STDLIB = set(sys.stdlib_module_names) | {"__future__"}


def test_task_cli_imports_only_the_standard_library() -> None:
    tree = parse_python(Path(task_cli.__file__).read_text())
    names = {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import)
             for a in n.names}
    names |= {n.module.split(".")[0] for n in ast.walk(tree)
              if isinstance(n, ast.ImportFrom) and n.module}
    assert names <= STDLIB, names - STDLIB


def serve(path: Path, replies: list[bytes], hold: threading.Event) -> list[bytes]:
    """A fake harness: sends `replies`, then holds the connection until `hold` is set."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.bind(str(path))
    sock.listen()
    seen: list[bytes] = []

    def run() -> None:
        conn, _ = sock.accept()
        with conn:
            seen.append(conn.makefile("rb").readline())
            for reply in replies:
                conn.sendall(reply)
            hold.wait(30)
        sock.close()

    threading.Thread(target=run, daemon=True).start()
    return seen


def start_cli(tmp_path: Path, *args: str) -> subprocess.Popen[str]:
    install_task_dir(tmp_path)
    env = {"PATH": os.defpath, task_cli.SOCKET_ENV: str(tmp_path / "task.sock")}
    return subprocess.Popen([str(tmp_path / "rebench-task"), *args], env=env, text=True,
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, preexec_fn=default_sigint)


def default_sigint() -> None:
    """Ctrl-C as a terminal delivers it: a test run started in the background by a
    non-interactive shell ignores SIGINT, and its children would inherit that."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def test_notes_come_first_then_the_answer(tmp_path: Path) -> None:
    hold = threading.Event()
    hold.set()
    seen = serve(tmp_path / "task.sock", [b'{"note": "waiting for #0"}\n',
                                          b'{"ok": true, "text": "score #1: valid"}\n'], hold)
    proc = start_cli(tmp_path, "score")
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0
    assert "waiting for #0" in err and "counts against your budget" in err
    assert out.strip() == "score #1: valid"
    assert json.loads(seen[0]) == {"command": "score", "args": []}


def test_ctrl_c_while_scoring_says_the_score_goes_on(tmp_path: Path) -> None:
    hold = threading.Event()
    serve(tmp_path / "task.sock", [b'{"note": "scoring"}\n'], hold)
    proc = start_cli(tmp_path, "score")
    assert proc.stderr is not None
    assert "this can take a while" in proc.stderr.readline()
    time.sleep(0.5)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=30)
    hold.set()
    assert proc.returncode == 130
    assert "The score goes on in the harness" in err
    assert "Traceback" not in err + out


def test_end_without_a_terminal_asks_for_yes(tmp_path: Path) -> None:
    proc = start_cli(tmp_path, "end")  # no server: it must not even connect
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 1
    assert "--yes" in err and "the run goes on" in err


def test_usage_and_unknown_commands(tmp_path: Path) -> None:
    proc = start_cli(tmp_path, "bogus")
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 2 and "usage: rebench-task" in err
