"""What an agent gets: exec, files, official scoring and the clock of one run."""

from __future__ import annotations

import os
from typing import Any

from rebench.core.instructions import render_instructions
from rebench.harness.records import ScoreEntry
from rebench.harness.run import Run
from rebench.sandbox import ExecResult, Sandbox, SandboxConfig, make_sandbox


class Session:
    """The agent's handle on a run. Everything it does goes through the run's sandbox."""

    def __init__(self, run: Run) -> None:
        self.run = run
        self.sandbox: Sandbox = make_sandbox(run.isolation, workspace_config(run))
        self.sandbox.create()

    @property
    def instructions(self) -> str:
        return render_instructions(
            self.run.spec, self.run.profile, {"budget_h": round(self.run.record.budget_s / 3600, 2)}
        )

    def exec(self, cmd: str, timeout: float = 600.0) -> ExecResult:
        """Run a shell command in the workspace; never longer than the time left."""
        return self.sandbox.exec(cmd, timeout=max(0.1, min(timeout, self.time_left())))

    def read_file(self, path: str) -> bytes:
        return self.sandbox.read_file(path)

    def write_file(self, path: str, data: bytes | str) -> None:
        self.sandbox.write_file(path, data.encode() if isinstance(data, str) else data)

    def score(self) -> dict[str, Any]:
        """An official score; returns only what the agent may see."""
        return agent_view(self.run.score("agent"), self.run.spec.score_visible_to_agent)

    def time_left(self) -> float:
        return self.run.time_left_s()

    def close(self) -> None:
        self.sandbox.destroy()


def workspace_config(run: Run) -> SandboxConfig:
    """The agent's sandbox: its workspace read-write; the run's protected/ and every other
    run hidden (the whole runs root is hidden, the workspace re-bound inside it)."""
    env = {"REBENCH_PROFILE": run.profile.name, "REBENCH_ENV": run.spec.id}
    if "OMP_NUM_THREADS" in os.environ:
        env["OMP_NUM_THREADS"] = os.environ["OMP_NUM_THREADS"]
    return SandboxConfig(
        workdir=run.workspace,
        writable=True,
        network=run.profile.network,
        gpu=run.profile.gpus > 0,
        hidden=(run.run_dir.parent, run.protected),
        env=env,
    )


def agent_view(entry: ScoreEntry, visible: bool) -> dict[str, Any]:
    """The part of a score-log entry the agent is shown."""
    view: dict[str, Any] = {"index": entry.index, "valid": entry.valid, "message": entry.message}
    if visible:
        view["raw"] = entry.raw if entry.valid else None
        view["normalized"] = entry.normalized if entry.valid else None
    return view
