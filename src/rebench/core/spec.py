"""Environment specs: typed, frozen data. Behaviour lives elsewhere.

The services an environment declares (`ServiceSpec`, started with a `ServiceContext` that
holds the spec itself) live here too: a spec and its service declarations refer to each
other, so they are one module; what a running service implements is core/service.py."""

from __future__ import annotations

import dataclasses
import enum
import math
import typing
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rebench.core.errors import SpecError, UnknownProfileError
from rebench.core.feedback import NO_FEEDBACK, Feedback
from rebench.core.service import Service

ParamValue = int | float | str | bool
P = typing.TypeVar("P")


class Direction(enum.Enum):
    """Whether a lower or a higher raw score is better."""

    LOWER = "lower"
    HIGHER = "higher"


class Aggregation(enum.Enum):
    """Which of a run's valid scores counts: the best one, or the last one."""

    BEST = "best"
    LAST = "last"


@dataclass(frozen=True)
class Profile:
    """One way to run an environment (`cpu` or `gpu`): sizes, resources, budgets and anchors.

    `starting_raw`/`reference_raw` are the default normalization anchors, measured with
    `rebench calibrate` on `anchors_hardware`; a calibration of the current machine overrides them.
    `memory_gb`, `pids_max` and `file_size_gb` cap every untrusted process tree of the
    profile (the agent's sandbox and each scoring child).

    `params` are the numbers (and short identifiers) of the profile as a plain mapping (what
    fingerprints, records and the CLI read); `params_type` is the environment's frozen
    dataclass for them, set by `EnvironmentSpec` when the spec loads: the params are checked
    and converted then (SpecError on an unknown, missing or wrongly typed one), and trusted
    code reads the result as `typed`. `instruction_text` is prose that only fills
    placeholders of instructions.md (never read by code). `calibration_sd_limit` marks a
    timing environment: `rebench calibrate` checks the machine for interference with it
    (harness/evaluate.py).
    """

    name: str
    description: str
    starting_raw: float
    reference_raw: float
    anchors_hardware: str
    params: Mapping[str, ParamValue] = field(default_factory=dict)
    instruction_text: Mapping[str, str] = field(default_factory=dict)
    calibration_sd_limit: float | None = None
    gpus: int = 0
    memory_gb: float = 4.0
    pids_max: int = 1024
    file_size_gb: float = 16.0
    default_budget_s: float = 8 * 3600.0
    scoring_timeout_s: float = 300.0
    network: bool = False

    # Not part of a profile's identity: `params` is, and the typed value is made from it.
    params_type: type | None = field(default=None, repr=False, compare=False)
    _typed: Any = field(default=None, init=False, repr=False, compare=False)

    @property
    def typed(self) -> Any:
        """The params as an instance of `params_type`, checked and converted when the
        profile was made. Assign it to an annotated name so that the uses are type-checked:
        `params: MyParams = ctx.profile.typed`."""
        if self.params_type is None:
            raise SpecError(f"profile {self.name}: no params_type, so no typed params "
                            "(declare params_type on the EnvironmentSpec)")
        return self._typed

    def __post_init__(self) -> None:
        if not math.isfinite(self.starting_raw) or not math.isfinite(self.reference_raw):
            raise SpecError(f"profile {self.name}: anchors must be finite numbers")
        if self.starting_raw == self.reference_raw:
            raise SpecError(f"profile {self.name}: starting and reference anchors are equal")
        if self.scoring_timeout_s <= 0 or self.default_budget_s <= 0:
            raise SpecError(f"profile {self.name}: timeouts and budgets must be positive")
        if self.memory_gb <= 0 or self.pids_max <= 0 or self.file_size_gb <= 0:
            raise SpecError(f"profile {self.name}: resource limits must be positive")
        both = sorted(set(self.params) & set(self.instruction_text))
        if both:
            raise SpecError(f"profile {self.name}: {both} are both params and instruction text")
        if self.calibration_sd_limit is not None and not self.calibration_sd_limit > 0:
            raise SpecError(f"profile {self.name}: calibration_sd_limit must be positive")
        if self.params_type is not None:
            object.__setattr__(self, "_typed", _typed_params(self.name, self.params,
                                                             self.params_type))


def _typed_params(profile: str, params: Mapping[str, ParamValue], cls: type[P]) -> P:
    """`params` as the typed, frozen dataclass `cls`: every field without a default must be
    given, each with its declared type (int accepted for float), nothing else. SpecError
    otherwise, so a typo in a profile fails when the spec loads, not mid-scoring."""
    if not dataclasses.is_dataclass(cls):
        raise SpecError(f"profile {profile}: params_type {cls.__name__} is not a dataclass")
    fields = {f.name: f for f in dataclasses.fields(cls)}
    unknown = sorted(set(params) - set(fields))
    missing = sorted(n for n, f in fields.items() if n not in params
                     and f.default is dataclasses.MISSING
                     and f.default_factory is dataclasses.MISSING)
    if unknown or missing:
        raise SpecError(f"profile {profile}: params unknown {unknown}, missing {missing} "
                        f"(for {cls.__name__})")
    hints = typing.get_type_hints(cls)
    for name, value in params.items():
        if not _fits(value, hints[name]):
            raise SpecError(f"profile {profile}: param {name} = {value!r} is not a "
                            f"{getattr(hints[name], '__name__', hints[name])}")
    return cls(**{k: (float(v) if hints[k] is float else v) for k, v in params.items()})


def _fits(value: ParamValue, want: object) -> bool:
    """Whether a param value has the declared type: a Literal's values, a plain type
    (bool only for bool; int accepted for float)."""
    if typing.get_origin(want) is typing.Literal:
        return any(value == choice and type(value) is type(choice)
                   for choice in typing.get_args(want))
    if not isinstance(want, type):
        raise SpecError(f"param type {want!r} is not supported (use a plain type or a Literal)")
    if want is float:
        return isinstance(value, int | float) and not isinstance(value, bool)
    return isinstance(value, want) and (want is bool or not isinstance(value, bool))


@dataclass(frozen=True)
class SolutionRecipe:
    """How to produce a named solution (starting, reference, expert) in a workspace.

    `folder` is copied over the starting files; `run` is an argv executed in the workspace
    afterwards (e.g. a training script that writes the solution artifact), or empty.
    """

    folder: str
    run: tuple[str, ...] = ()
    run_timeout_s: float = 600.0


@dataclass(frozen=True)
class EnvironmentSpec:
    """Everything the harness knows about an environment. Bump `version` on any change."""

    id: str
    version: str
    title: str
    direction: Direction
    raw_score_meaning: str
    profiles: Mapping[str, Profile]
    solutions: Mapping[str, SolutionRecipe]
    aggregation: Aggregation = Aggregation.BEST
    score_visible_to_agent: bool = True
    # Glob patterns (relative to the workspace) that an official score snapshots.
    solution_globs: tuple[str, ...] = ("**/*",)
    snapshot_max_bytes: int = 64 * 1024 * 1024
    # Modules of the environment's package (e.g. "child") that untrusted children import
    # inside the sandbox; only these are copied into its child runtime (sandbox/runtime.py).
    child_modules: tuple[str, ...] = ()
    # Run-scoped trusted services the agent may call (ServiceSpec below, services/host.py).
    services: tuple[ServiceSpec, ...] = ()
    # The typed, frozen dataclass of the profiles' params: each profile is given it at load
    # (its params checked and converted then), and trusted code reads `profile.typed`
    # instead of a dict of numbers.
    params_type: type | None = None
    # What a score may tell the agent (core/feedback.py): the harness renders every
    # scorer message through it, so nothing undeclared reaches the agent.
    feedback: Feedback = NO_FEEDBACK
    paper_starting_raw: float | None = None
    paper_reference_raw: float | None = None

    def __post_init__(self) -> None:
        if not self.id.isidentifier():
            raise SpecError(f"environment id {self.id!r} must be a Python identifier")
        if not self.profiles:
            raise SpecError(f"{self.id}: at least one profile is required")
        for key, profile in self.profiles.items():
            if key != profile.name:
                raise SpecError(f"{self.id}: profile key {key!r} != name {profile.name!r}")
        if self.params_type is not None:
            object.__setattr__(self, "profiles", {
                key: self._typed_profile(profile) for key, profile in self.profiles.items()})
        for required in ("starting", "reference"):
            if required not in self.solutions:
                raise SpecError(f"{self.id}: solutions must include {required!r}")

    def _typed_profile(self, profile: Profile) -> Profile:
        """The profile with the spec's params_type (its params checked and converted)."""
        if profile.params_type is None:
            return dataclasses.replace(profile, params_type=self.params_type)
        if profile.params_type is not self.params_type:
            raise SpecError(f"{self.id}: profile {profile.name} has params_type "
                            f"{profile.params_type.__name__}, the spec "
                            f"{getattr(self.params_type, '__name__', self.params_type)}")
        return profile

    def profile(self, name: str) -> Profile:
        """The named profile, or a clear error listing the ones that exist."""
        try:
            return self.profiles[name]
        except KeyError:
            known = ", ".join(sorted(self.profiles))
            raise UnknownProfileError(
                f"environment {self.id} has no profile {name!r} (known: {known})"
            ) from None


def _no_pause() -> AbstractContextManager[None]:
    return nullcontext()


@dataclass(frozen=True)
class ServiceContext:
    """What a service gets when it starts: the run's environment and profile, the prepared
    assets (protected ones included: the service is trusted), a private scratch folder,
    `emit(type, fields)` to write its own events, and `clock_paused()`, a context manager
    under which the agent's working clock stands still (upstream retries, rate limits)."""

    spec: EnvironmentSpec
    profile: Profile
    assets_dir: Path
    scratch_dir: Path
    emit: Callable[[str, Mapping[str, Any]], None] = lambda kind, fields: None
    clock_paused: Callable[[], AbstractContextManager[None]] = _no_pause


@dataclass(frozen=True)
class ServiceSpec:
    """A service an environment declares. `name` is how the agent calls it
    (`rebench-service NAME '{json}'`); `start` builds it; `max_calls` caps the calls of a
    run (None: no cap); requests are at most `max_request_bytes` of JSON."""

    name: str
    description: str
    start: Callable[[ServiceContext], Service]
    max_calls: int | None = None
    max_request_bytes: int = 1 << 20

    def __post_init__(self) -> None:
        if not self.name.isidentifier():
            raise ValueError(f"service name {self.name!r} must be an identifier")
