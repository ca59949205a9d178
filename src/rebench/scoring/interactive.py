"""The untrusted runner for long-lived children: a sandboxed process the scorer talks to
call after call (e.g. a timed function behind a pipe protocol), frozen between calls and
killed with everything it started when the scoring ends.

    child = start_interactive(ctx, argv, pass_fds=(go_r, done_w), log_path=scratch / "log")
    try:
        ...                      # the environment's own protocol over the passed fds
        child.resume(); ...; child.stop_fast(); walked = child.freeze()
    finally:
        child.kill()

Run-to-completion children use `runner.run_child` instead. Both run in a fresh sandbox of
the scoring (`ScoringContext.untrusted_sandbox`: the profile's limits, no network); this
one also writes the child's stdout and stderr to a log file capped in size, makes the
scorer a child subreaper (orphans of the child are found by walking /proc) and freezes the
tree with SIGSTOP, which is fast enough to sit inside a timed region.
"""

from __future__ import annotations

import os
import resource
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from rebench.sandbox import Sandbox
from rebench.sandbox.proctree import (
    ChildTree,
    TreeNotStoppedError,
    descendants,
    set_child_subreaper,
)
from rebench.scoring.context import ScoringContext

LOG_TAIL_CHARS = 1500


class ChildTreeError(Exception):
    """The child's process tree kept growing while it was being frozen (a fork bomb):
    the agent-visible reason is the text."""


@dataclass
class InteractiveChild:
    """A running untrusted child: its process, its whole tree, its sandbox and log."""

    proc: subprocess.Popen[bytes]
    tree: ChildTree
    sandbox: Sandbox
    log_path: Path

    def stop_fast(self) -> None:
        """SIGSTOP the child's group and every process seen before (a few system calls)."""
        self.tree.stop_fast()

    def freeze(self) -> bool:
        """Freeze the whole tree, walking /proc for processes that escaped the group.
        True if one was found (it may have run meanwhile: the caller counts the walk as
        the child's time). ChildTreeError if the tree keeps growing."""
        self.tree.stop_fast()
        try:
            return self.tree.stop_all()
        except TreeNotStoppedError as exc:
            raise ChildTreeError(str(exc)) from None

    def resume(self) -> None:
        self.tree.resume()

    def kill(self) -> None:
        """Kill the whole tree and its sandbox (always safe to call, also twice)."""
        self.tree.kill()
        self.sandbox.destroy()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()

    def exit_text(self, wait_s: float = 5.0) -> str:
        """How the child ended, for a message: exit code or signal (it is waited for)."""
        try:
            code = self.proc.wait(timeout=wait_s)
        except subprocess.TimeoutExpired:
            return "it closed its result pipe"
        if code > 128:  # a sandbox wrapper reports a signal as 128 + signal number
            return f"exit code {code}: signal {code - 128}?"
        return f"exit code {code}" if code >= 0 else f"signal {-code}"

    def log_tail(self, limit: int = LOG_TAIL_CHARS) -> str:
        """The end of the child's output (it may be large: only the end is read)."""
        try:
            with self.log_path.open("rb") as log:
                log.seek(max(0, self.log_path.stat().st_size - limit))
                data = log.read(limit)
        except OSError:
            return ""
        return data.decode("utf-8", errors="replace").strip()


def start_interactive(ctx: ScoringContext, argv: Sequence[str], *, pass_fds: Sequence[int],
                      log_path: Path, env: Mapping[str, str] | None = None,
                      log_max_bytes: int = 256 << 20,
                      gpu: bool | None = None) -> InteractiveChild:
    """Start `argv` in a fresh sandbox of the scoring, running in the snapshot, with
    `pass_fds` inherited and stdout/stderr to `log_path` (no file the child writes may
    outgrow `log_max_bytes`). The caller kills it (`kill`), whatever happens."""
    set_child_subreaper()
    # A long-lived child shares its buffers with this process (CUDA IPC on a gpu).
    sandbox = ctx.untrusted_sandbox(gpu=gpu, env=env, host_shm=True)
    host_env = {k: v for k, v in os.environ.items() if not k.startswith("REBENCH_")}
    baseline = descendants(os.getpid())
    with log_path.open("wb") as log:
        proc = subprocess.Popen(
            sandbox.wrap(list(argv)), stdin=subprocess.DEVNULL, stdout=log,
            stderr=subprocess.STDOUT, pass_fds=tuple(pass_fds), start_new_session=True,
            env={**host_env, **(env or {})}, cwd=ctx.solution_dir,
            close_fds=True, preexec_fn=lambda: _cap_file_size(log_max_bytes),
        )
    return InteractiveChild(proc=proc, tree=ChildTree(proc.pid, baseline), sandbox=sandbox,
                            log_path=log_path)


def _cap_file_size(limit: int) -> None:
    """Runs in the forked child before exec: a chatty or hostile child cannot fill the
    disk through its log or any file it writes."""
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))


__all__ = ["ChildTreeError", "InteractiveChild", "start_interactive"]
