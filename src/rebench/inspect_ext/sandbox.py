"""The `rebench` Inspect sandbox provider: Inspect's tools run inside a rebench run's sandbox.

Each Inspect sample is one rebench run. `sample_init` either starts a new run (the
`inspect eval rebench/<env>` path) or attaches to a run whose session a rebench driver
already holds (the `rebench run ENV --agent inspect:MODEL` path). Every exec goes through
the run's `Session`, so the workspace, the hidden `protected/`, the clock and the event log
are exactly those of any other rebench agent.
"""

from __future__ import annotations

import base64
import secrets
import shlex
import threading
from collections.abc import Mapping
from typing import Any, Literal, overload

import anyio
from inspect_ai.util import (
    ExecResult,
    SandboxEnvironment,
    SandboxEnvironmentConfigType,
    sandboxenv,
)
from inspect_ai.util._sandbox import SandboxTimeoutError
from inspect_ai.util._sandbox.environment import SandboxUserUnsupportedError
from pydantic import BaseModel

from rebench.harness.lifecycle import RunLifecycle
from rebench.harness.session import OutOfTimeError, Session
from rebench.inspect_ext.lifecycle import (
    RunConfig,
    RunSummary,
    finish_session,
    interrupt_session,
    start_session,
)
from rebench.inspect_ext.sample_end import end_sample_at_deadline

SANDBOX_NAME = "rebench"
# Commands are one `bash -c` string (one argv element, at most 128 KiB on Linux): stdin up
# to this size travels inline as base64, larger stdin through a file in the workspace.
_INLINE_STDIN_BYTES = 48 * 1024
# Inspect passes timeout=None for "no limit"; the session still caps it at the time left.
_NO_TIMEOUT_S = 24 * 3600.0


# Sessions held by a rebench driver, by run id, for `attach` configs. Inspect creates
# sandboxes itself, so a driver in the same process hands its session over through here.
_ATTACHED: dict[str, Session] = {}
_ATTACHED_LOCK = threading.Lock()


def attach_session(session: Session) -> str:
    """Make `session` available to a sandbox config with `attach=<run id>`."""
    run_id = session.run.record.run_id
    with _ATTACHED_LOCK:
        _ATTACHED[run_id] = session
    return run_id


def detach_session(run_id: str) -> None:
    """Forget an attached session (its driver finishes and closes it)."""
    with _ATTACHED_LOCK:
        _ATTACHED.pop(run_id, None)


def _attached(run_id: str) -> Session:
    with _ATTACHED_LOCK:
        session = _ATTACHED.get(run_id)
    if session is None:
        raise RuntimeError(f"no rebench session attached for run {run_id}")
    return session


def shell_command(
    cmd: list[str], cwd: str | None, env: dict[str, str] | None, stdin_ref: str | None
) -> str:
    """One bash command line for Inspect's exec arguments (argv, cwd, env, stdin)."""
    parts = []
    if cwd:
        parts.append(f"cd {shlex.quote(cwd)} || exit 1")
    for key, value in (env or {}).items():
        if not key.isidentifier():
            raise ValueError(f"bad environment variable name {key!r}")
        parts.append(f"export {key}={shlex.quote(value)}")
    line = shlex.join(cmd)
    if stdin_ref is not None:
        line = f"{line} {stdin_ref}"
    parts.append(line)
    return "\n".join(parts)


@sandboxenv(name=SANDBOX_NAME)
class RebenchSandboxEnvironment(SandboxEnvironment):
    """A rebench session seen as an Inspect sandbox (exec, read_file, write_file)."""

    def __init__(self, session: Session, lifecycle: RunLifecycle | None = None) -> None:
        super().__init__()
        self.session = session
        # Owned (a lifecycle): started here, so finished and closed here. Attached (None):
        # the driver does both.
        self.lifecycle = lifecycle
        self.owned = lifecycle is not None
        self.summary: RunSummary | None = None
        self._finish_lock = threading.Lock()  # the scorer and the cleanup may both finish

    @classmethod
    def config_deserialize(cls, config: dict[str, Any]) -> BaseModel:
        return RunConfig(**config)

    @classmethod
    async def sample_init(
        cls,
        task_name: str,
        config: SandboxEnvironmentConfigType | None,
        metadata: dict[str, str],
    ) -> dict[str, SandboxEnvironment]:
        if not isinstance(config, RunConfig):
            raise ValueError("the rebench sandbox needs a RunConfig")
        if config.attach:
            return {"default": cls(_attached(config.attach))}
        life = await anyio.to_thread.run_sync(start_session, config)
        assert life.session is not None
        return {"default": cls(life.session, life)}

    @classmethod
    async def sample_cleanup(
        cls,
        task_name: str,
        config: SandboxEnvironmentConfigType | None,
        environments: dict[str, SandboxEnvironment],
        interrupted: bool,
    ) -> None:
        for environment in environments.values():
            env = environment.as_type(RebenchSandboxEnvironment)
            if env.lifecycle is None:
                continue
            try:
                if interrupted:
                    # Ctrl-C (the eval was cancelled): no final score, and the run is
                    # recorded as interrupted, not as a finished attempt.
                    await anyio.to_thread.run_sync(interrupt_session, env.lifecycle)
                else:
                    # A sample that errored was never scored: the run still gets its final
                    # score, and is recorded as crashed.
                    await anyio.to_thread.run_sync(env.finish_unscored)
            finally:
                env.session.close()

    def finish_unscored(self) -> None:
        """Cleanup's finish: a sample that never reached the scorer ended in an error."""
        with self._finish_lock:
            if self.summary is None:
                self.session.run.record.extra.crashed = (
                    "the Inspect sample ended without being scored (an error)")
        self.finish()

    def finish(self, usage: Mapping[str, Any] | None = None) -> RunSummary:
        """Force the run's final score (once) and summarise it; `usage`: the sample's
        model usage, recorded as the run's cost."""
        with self._finish_lock:
            if self.summary is None:
                self.summary = finish_session(self.session, self.lifecycle, usage)
        return self.summary

    async def exec(
        self,
        cmd: list[str],
        input: str | bytes | None = None,
        cwd: str | None = None,
        env: dict[str, str] | None = None,
        user: str | None = None,
        timeout: int | None = None,
        timeout_retry: bool = True,
        concurrency: bool = True,
    ) -> ExecResult[str]:
        if user is not None:
            raise SandboxUserUnsupportedError("the rebench sandbox runs as one user only")
        limit = float(timeout) if timeout is not None else _NO_TIMEOUT_S
        data = input.encode() if isinstance(input, str) else input
        stdin_file = None
        stdin_ref = None
        if data is not None and len(data) <= _INLINE_STDIN_BYTES:
            stdin_ref = f"< <(printf %s {base64.b64encode(data).decode()} | base64 -d)"
        elif data is not None:
            stdin_file = f".rebench-stdin-{secrets.token_hex(6)}"
            await self.write_file(stdin_file, data)
            stdin_ref = f"< {shlex.quote(str(self.session.run.workspace.resolve() / stdin_file))}"
        line = shell_command(cmd, cwd, env, stdin_ref)
        try:
            result = await anyio.to_thread.run_sync(
                self.session.exec, line, limit, abandon_on_cancel=True
            )
        except OutOfTimeError as exc:
            raise self.out_of_time() from exc
        finally:
            if stdin_file is not None:
                (self.session.run.workspace / stdin_file).unlink(missing_ok=True)
        if result.timed_out:
            raise SandboxTimeoutError(
                f"command timed out after {result.duration_s:.0f} s",
                truncated_output=result.stdout[-10_000:],
            )
        return ExecResult(
            success=result.returncode == 0,
            returncode=result.returncode,
            stdout=result.stdout,
            stderr=result.stderr,
        )

    async def write_file(self, file: str, contents: str | bytes) -> None:
        data = contents.encode() if isinstance(contents, str) else contents
        try:
            await anyio.to_thread.run_sync(self.session.write_file, file, data)
        except OutOfTimeError as exc:
            raise self.out_of_time() from exc

    @overload
    async def read_file(self, file: str, text: Literal[True] = True) -> str: ...

    @overload
    async def read_file(self, file: str, text: Literal[False]) -> bytes: ...

    async def read_file(self, file: str, text: bool = True) -> str | bytes:
        try:
            data = await anyio.to_thread.run_sync(self.session.read_file, file)
        except OutOfTimeError as exc:
            raise self.out_of_time() from exc
        return data.decode("utf-8") if text else data

    def out_of_time(self) -> SandboxTimeoutError:
        """The run's time is up: end the Inspect sample (it goes on to scoring) and give the
        tool call in flight a timeout."""
        end_sample_at_deadline(self.session)
        return SandboxTimeoutError("the run's working time is used up")
