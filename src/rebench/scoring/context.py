"""What an environment's scorer and prepare step receive, and why a score is taken
(the protocols they implement over these: scoring/contract.py)."""

from __future__ import annotations

import enum
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from rebench.core.paths import PREPARED_ANCHORS
from rebench.core.spec import EnvironmentSpec, Profile
from rebench.sandbox import Isolation, Sandbox, SandboxConfig, make_sandbox
from rebench.sandbox.limits import Limits
from rebench.sandbox.runtime import env_child_modules
from rebench.scoring.kit import protected_dir, public_dir


class ScoreKind(enum.StrEnum):
    """Why a score is taken. INITIAL: the starting solution at t=0; REQUESTED: the agent
    asked (an environment may make these cheap checks, e.g. validity only, when its score
    is hidden); FINAL: at the end of the run, and for `evaluate`/`calibrate`. The values are
    what the score log records in `kind`. A StrEnum: a member is equal to its value, so a
    log line's `kind` read as JSON (the report's CSV rows, an old tool's `kind == "final"`)
    and a ScoreEntry's typed `kind` compare alike."""

    INITIAL = "initial"
    REQUESTED = "agent"
    FINAL = "final"


def profile_limits(profile: Profile) -> Limits:
    """The resource caps of every untrusted process tree of a profile."""
    return Limits(memory_bytes=int(profile.memory_gb * 1024**3), pids=profile.pids_max,
                  file_size_bytes=int(profile.file_size_gb * 1024**3))


@dataclass(frozen=True)
class ScoringContext:
    """Trusted inputs of one official scoring.

    `solution_dir` is the snapshot of the agent's solution: untrusted files, to be read as
    data or executed only through the untrusted runners (`scoring.runner.run_child`,
    `scoring.interactive.start_interactive`). `assets_dir` holds the prepared assets
    (`public/` as the agent saw them, `protected/` held-out data). `scratch_dir` is private
    to the trusted scorer. `kind` says why the score is taken (ScoreKind, above).
    Untrusted children run under the profile's limits, in
    sandboxes that `close` kills (the scorer process calls it when the score is done).
    """

    spec: EnvironmentSpec
    profile: Profile
    solution_dir: Path
    assets_dir: Path
    scratch_dir: Path
    isolation: Isolation
    hidden: tuple[Path, ...] = ()
    kind: ScoreKind = ScoreKind.FINAL
    _sandboxes: list[Sandbox] = field(default_factory=list, compare=False, repr=False)

    @property
    def protected_dir(self) -> Path:
        """The held-out half of the prepared assets (no sandbox mounts it)."""
        return protected_dir(self.assets_dir)

    @property
    def public_dir(self) -> Path:
        """The half of the prepared assets that the agent's workspace may be given."""
        return public_dir(self.assets_dir)

    def untrusted_sandbox(
        self,
        *,
        workdir: Path | None = None,
        writable: bool = False,
        extra_ro: tuple[Path, ...] = (),
        gpu: bool | None = None,
        env: Mapping[str, str] | None = None,
        host_shm: bool = False,
    ) -> Sandbox:
        """A sandbox for untrusted children of this scoring: the snapshot (or `workdir`)
        read-only unless `writable`, no network, nothing of the run, the cache or the
        scratch dir visible unless passed in `extra_ro`, the profile's limits. `close`
        destroys it (and everything it started). `host_shm` (gpu only) binds the host's
        /dev/shm for CUDA IPC with this trusted process (decision 0003): only a child that
        shares buffers with its parent asks for it, since whatever a child leaves there
        outlives the scoring (a later scoring's child could read it back)."""
        use_gpu = self.profile.gpus > 0 if gpu is None else gpu
        config = SandboxConfig(
            workdir=workdir or self.solution_dir,
            writable=writable,
            network=False,
            gpu=use_gpu,
            extra_ro=extra_ro,
            hidden=(*self.hidden, self.assets_dir, self.scratch_dir),
            env=dict(env or {}),
            limits=profile_limits(self.profile),
            runtime_modules=env_child_modules(self.spec.id, self.spec.child_modules),
            host_shm=use_gpu and host_shm,
        )
        sandbox = make_sandbox(self.isolation, config)
        self._sandboxes.append(sandbox)
        return sandbox

    def untrusted_argv(
        self,
        argv: Sequence[str],
        *,
        workdir: Path | None = None,
        writable: bool = False,
        extra_ro: tuple[Path, ...] = (),
        gpu: bool | None = None,
        env: Mapping[str, str] | None = None,
    ) -> list[str]:
        """Wrap `argv` so it runs in a fresh `untrusted_sandbox` (same arguments); the
        caller starts it. Environments use the runners instead (`scoring.runner`,
        `scoring.interactive`), which also kill what the child leaves; tests use this to
        probe what a sandbox sees."""
        sandbox = self.untrusted_sandbox(workdir=workdir, writable=writable,
                                         extra_ro=extra_ro, gpu=gpu, env=env)
        return sandbox.wrap(argv)

    def close(self) -> None:
        """Kill every untrusted process this scoring started, whatever state it is in."""
        while self._sandboxes:
            self._sandboxes.pop().destroy()


ProgressFn = Callable[[str, float | None], None]


def no_progress(message: str, fraction: float | None) -> None:
    """The default progress callback: report nothing."""
    del message, fraction


@dataclass(frozen=True)
class PrepareContext:
    """Inputs of an environment's `prepare(ctx)`: build assets into `assets_dir`
    (`public/` and `protected/`), deterministically and idempotently."""

    spec: EnvironmentSpec
    profile: Profile
    assets_dir: Path
    options: Mapping[str, str] = field(default_factory=dict)  # e.g. corpus, base_model
    progress: ProgressFn = no_progress

    @property
    def public_dir(self) -> Path:
        return public_dir(self.assets_dir)

    @property
    def protected_dir(self) -> Path:
        return protected_dir(self.assets_dir)

    def record_anchors(self, starting_raw: float, reference_raw: float,
                       **how: object) -> None:
        """Anchors measured on this prepared setting: an environment whose raw scores
        depend on what prepare drew (a budget, a held-out split) measures its starting and
        reference solution here, and normalization uses them over any calibration
        (core.calibration.resolve_anchors). `how`: what was measured, for the operator."""
        path = self.assets_dir / PREPARED_ANCHORS
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"starting_raw": starting_raw,
                                    "reference_raw": reference_raw, **how}, indent=1))
