"""What an agent gets: exec, files, official scoring and the clock of one run.

Every action is logged to the run's events.jsonl with wall and working seconds. Once the
run's time is up (or the harness stops the agent) every action raises OutOfTimeError, and
`expire` kills every process the agent started.
"""

from __future__ import annotations

import base64
import contextlib
import os
import subprocess
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from rebench.core.errors import RebenchError, ScoringHarnessError
from rebench.core.instructions import render_instructions
from rebench.core.spec import ServiceContext
from rebench.harness.events import MAX_CONTENT_BYTES, EventLog
from rebench.harness.records import RunUsage, ScoreEntry
from rebench.harness.run import Run
from rebench.sandbox import ExecResult, Sandbox, SandboxConfig, make_sandbox
from rebench.sandbox.process import kill_group
from rebench.scoring.context import profile_limits
from rebench.scoring.contract import ScoreKind
from rebench.services.host import ServiceHost


class OutOfTimeError(RebenchError):
    """The run's working time is used up: the session takes no more actions."""


class Session:
    """The agent's handle on a run. Everything it does goes through the run's sandbox.

    Opening a session starts the run's working clock."""

    def __init__(self, run: Run, events: EventLog | None = None) -> None:
        self.run = run
        self.events = events or EventLog(run.run_dir / "events.jsonl", run.clock)
        self.services = start_services(run, self.events)
        self.sandbox: Sandbox = make_sandbox(
            run.isolation, workspace_config(run, self.services.socket_dir))
        self.sandbox.create()
        run.scorer.agent_sandbox = self.sandbox  # frozen during the agent's official scores
        self._expired = threading.Event()
        self._tracked: list[subprocess.Popen[bytes]] = []
        self._on_close: list[Callable[[], None]] = []
        self._end_turn: Callable[[], None] = self.close
        self._tracked_lock = threading.Lock()
        self._usage_counted = False
        run.clock.start()

    @property
    def instructions(self) -> str:
        return render_instructions(
            self.run.spec, self.run.profile, {"budget_h": round(self.run.record.budget_s / 3600, 2)}
        )

    def _check_time(self, action: str) -> None:
        if self._expired.is_set() or self.run.time_left_s() <= 0:
            raise OutOfTimeError(f"the run's working time is used up ({action} refused)")

    def exec(self, cmd: str, timeout: float = 600.0) -> ExecResult:
        """Run a shell command in the workspace; never longer than the time left."""
        self._check_time("exec")
        limit = max(0.1, min(timeout, self.time_left()))
        result = self.sandbox.exec(cmd, timeout=limit)
        alive = self.sandbox.live_processes()  # for the integrity report: what outlived it
        self.events.emit("exec", cmd=cmd, timeout=round(limit, 3), returncode=result.returncode,
                         timed_out=result.timed_out, duration_s=round(result.duration_s, 3),
                         stdout=result.stdout, stderr=result.stderr, live_after=alive)
        return result

    def read_file(self, path: str) -> bytes:
        self._check_time("read_file")
        try:
            data = self.sandbox.read_file(path)
        except OSError as exc:
            self.events.emit("read_file", path=path, error=f"{type(exc).__name__}: {exc}")
            raise
        self.events.emit("read_file", path=path, bytes=len(data))
        return data

    def write_file(self, path: str, data: bytes | str) -> None:
        self._check_time("write_file")
        raw = data.encode() if isinstance(data, str) else data
        fields: dict[str, Any] = {"path": path, "bytes": len(raw)}
        if len(raw) <= MAX_CONTENT_BYTES:  # small files are kept so a replay can redo them
            fields["content_b64"] = base64.b64encode(raw).decode()
        try:
            self.sandbox.write_file(path, raw)
        except OSError as exc:
            self.events.emit("write_file", **fields, error=f"{type(exc).__name__}: {exc}")
            raise
        self.events.emit("write_file", **fields)

    def score(self) -> dict[str, Any]:
        """An official score; returns only what the agent may see. A harness failure while
        scoring is logged as such and shown as an error, never as the agent's NaN."""
        self._check_time("score")
        alive = self.sandbox.live_processes()  # for the integrity report: what still runs
        try:
            entry = self.run.scorer.score(ScoreKind.REQUESTED)
        except ScoringHarnessError as exc:
            self.events.emit("harness_error", during="score", error=str(exc)[-4000:],
                             fsync=True)
            # A fixed text: the harness's error can quote what the child returned.
            return {"valid": False, "message": {
                "error": "the harness failed while scoring (not your solution's fault; "
                         "nothing was logged)"}}
        self.events.emit("score", index=entry.index, valid=entry.valid, raw=entry.raw,
                         normalized=entry.normalized, message=entry.message,
                         live_processes=alive,
                         harness_wait_s=entry.details.get("harness_wait_s", 0.0), fsync=True)
        return agent_view(entry, self.run.spec.score_visible_to_agent,
                          self.run.spec.feedback.score_places)

    def call_service(self, name: str, request: dict[str, Any]) -> dict[str, Any]:
        """Call one of the run's trusted services (metered and logged by the host)."""
        self._check_time("service")
        return self.services.call(name, request)

    def time_left(self) -> float:
        return self.run.time_left_s()

    def working_s(self) -> float:
        """Working seconds used so far."""
        return self.run.working_s()

    def track(self, proc: subprocess.Popen[bytes]) -> None:
        """Kill this process's group when the session expires or closes (for agents that
        start their own sandboxed processes, such as the human agent's shell)."""
        with self._tracked_lock:
            self._tracked.append(proc)

    def kill_tracked(self) -> None:
        with self._tracked_lock:
            tracked, self._tracked = self._tracked, []
        for proc in tracked:
            kill_group(proc.pid)
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=5)

    @property
    def expired(self) -> bool:
        return self._expired.is_set()

    def expire(self) -> None:
        """The hard stop: refuse further actions and kill every process of the agent."""
        self._expired.set()
        self.close()

    def on_end_turn(self, end: Callable[[], None]) -> None:
        """How `end_turn` ends this session's turn: its RunLifecycle's end_turn (agent_end,
        the session closed, the clock paused); by default the session is only closed."""
        self._end_turn = end

    def end_turn(self) -> None:
        """The agent says it is done from inside its own turn (an Inspect agent's scorer,
        under a rebench driver): end the turn now, before the final score, as every front
        end does; the driver's own end of the turn then finds it ended."""
        self._end_turn()

    def on_close(self, release: Callable[[], None]) -> None:
        """Call `release` when the session closes (a lock, a heartbeat)."""
        self._on_close.append(release)

    def close(self) -> None:
        """Kill every process of the agent; later scores freeze nothing; count the CPU the
        sandbox used into the run's record (once); release what was registered with
        `on_close` (last first)."""
        self.run.scorer.agent_sandbox = None
        self.kill_tracked()
        with self._tracked_lock:
            counted, self._usage_counted = self._usage_counted, True
        if not counted:
            usage = self.run.record.usage or RunUsage()
            self.run.record.usage = usage.with_agent_cpu(self.sandbox.cpu_seconds())
        self.sandbox.destroy()
        self.services.close()
        while self._on_close:
            self._on_close.pop()()


def start_services(run: Run, events: EventLog) -> ServiceHost:
    """The run's services, started (none for most environments)."""
    from rebench.core.paths import env_cache_dir

    def emit(kind: str, fields: Mapping[str, Any]) -> None:
        events.emit(kind, **dict(fields))

    def service_emit(kind: str, fields: Mapping[str, Any]) -> None:
        events.emit("service_event", event=kind, **dict(fields))

    def context(scratch: Path) -> ServiceContext:
        return ServiceContext(
            spec=run.spec, profile=run.profile,
            assets_dir=env_cache_dir(run.spec.id, run.profile.name), scratch_dir=scratch,
            emit=service_emit, clock_paused=run.clock.paused)

    host = ServiceHost(run.spec.services, context, emit)
    host.start()
    return host


def workspace_config(run: Run, services_dir: Path | None = None) -> SandboxConfig:
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
        limits=profile_limits(run.profile),
        services_dir=services_dir,
    )


def agent_view(entry: ScoreEntry, visible: bool, places: int = 4) -> dict[str, Any]:
    """The part of a score-log entry the agent is shown. With a hidden score only the
    message the environment wrote for the agent (e.g. validity, resources used). The raw
    and normalized score are rounded to `places` (the environment's feedback schema):
    their last digits are timing noise, or a channel."""
    if not visible:
        return {"index": entry.index, "message": entry.message}
    return {"index": entry.index, "valid": entry.valid, "message": entry.message,
            "raw": round(entry.raw, places) if entry.valid else None,
            "normalized": round(entry.normalized, places) if entry.valid else None}
