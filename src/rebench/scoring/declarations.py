"""What an environment declares about itself for the generic tests: what official scoring
must give its own solutions (golden bands), the policies a lazy or hacking agent tries first
(degenerate policies), the submissions that try to carry a secret back through a score's
feedback (channel probes) and which of its prepare's protected files hold what it drew at
random (secrets).

An environment lists them in `rebench/environments/<id>/degenerate.py`:

    GOLDEN = Golden(bands=(("starting", -0.05, 0.05), ("reference", 0.8, 1.3)))
    POLICIES = (
        Degenerate("constant_output", "the same answer for every input", make=_constant),
        Degenerate("public_table", "the optimum copied from the package's sweep table",
                   make=_copy_table, expect=Expect.AT_MOST_START),
    )
    SECRETS = Secrets(drawn=("secret.bin",))
    CHEATS = (
        Cheat("stack_walk.py", submit_as="solution.py", reason="wrong_result"),
        Cheat(name="nan_weights", make=_nan_weights, why="a NaN in one weight",
              reason="nonfinite_weights"),
    )

A cheat is a file of the environment's `cheats/` folder, or data its `make` writes from
the prepared assets, written over a fresh workspace and scored officially like a policy.

Each `make(ctx)` turns `ctx.workspace` (a fresh copy of the starting files) into the
submission; it runs on the trusted side of a test, with the public assets at hand, as an
agent's own tools would. One generic test (tests/environments/test_degenerate_policies.py)
scores every declared policy of every discovered environment through official scoring
and checks its `expect`; another (tests/environments/test_leaks_all_environments.py)
prepares the environment, builds a fresh agent workspace and checks that it holds none of
the bytes of SECRETS' drawn files nor of any other protected file. Nothing here runs in a
sandbox; the module is never a child module (the sandbox cannot import it).
"""

from __future__ import annotations

import enum
import importlib
import itertools
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from types import ModuleType
from typing import TypeVar

from rebench.core.discovery import environment_dir, load_spec
from rebench.core.score import ScoreResult
from rebench.core.spec import EnvironmentSpec, Profile


class Expect(enum.Enum):
    """The outcome a declared policy must get from official scoring.

    INVALID: NaN. AT_MOST_START: NaN, or a normalized score at most the starting
    solution's (0, with the environment's declared tolerance). NO_CHANNEL: whatever the
    score, the agent-visible message is exactly a rendering of the environment's
    feedback schema and carries no reason or number that the probe chose."""

    INVALID = "invalid"
    AT_MOST_START = "at_most_start"
    NO_CHANNEL = "no_channel"


@dataclass(frozen=True)
class PolicyContext:
    """What a policy's `make` may use: the spec and profile, the prepared assets' public
    part (what the agent sees), a workspace holding the starting files, and a private
    scratch folder."""

    spec: EnvironmentSpec
    profile: Profile
    public_dir: Path
    workspace: Path
    scratch: Path

    def module(self, rel: str) -> ModuleType:
        """The workspace's file `rel` imported as a fresh module, as the agent's own script
        would import it (for a policy's `verify`, or a `make` that runs the submission)."""
        import importlib.util

        name = f"_rebench_policy_{next(_MODULES)}"
        spec = importlib.util.spec_from_file_location(name, self.workspace / rel)
        if spec is None or spec.loader is None:
            raise ImportError(f"cannot import {self.workspace / rel}")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module


_MODULES = itertools.count()

MakeFn = Callable[[PolicyContext], None]
VerifyFn = Callable[[PolicyContext], None]


@dataclass(frozen=True)
class Degenerate:
    """One declared policy: `make` writes it into the workspace; `expect` is what official
    scoring must give it. `profiles` names the profiles it is checked on (the generic test
    runs the cpu ones); `slow` marks one whose making or scoring takes minutes.

    `reasons`: when scored invalid, the reason codes (of the feedback schema) the agent may
    be shown; empty for any declared one. `verify(ctx)`: run after `make` on the same
    context, it checks that the submission really does what `why` says (raises
    AssertionError otherwise), so a policy that passes is not a vacuous one.

    `hole`: for a policy known to gain over the start that the environment does not yet
    defend, where that is written down (a decision, the README). The generic test then
    expects it to fail (strictly: once the hole is closed it fails until `hole` is
    removed), and the policy stays in the integrity corpus as the attack it is."""

    name: str
    why: str
    make: MakeFn
    expect: Expect = Expect.AT_MOST_START
    profiles: tuple[str, ...] = ("cpu",)
    slow: bool = False
    reasons: tuple[str, ...] = ()
    verify: VerifyFn | None = None
    hole: str = ""

    def __post_init__(self) -> None:
        if not self.name.isidentifier():
            raise ValueError(f"policy name {self.name!r} must be an identifier")
        if not self.why:
            raise ValueError(f"policy {self.name}: say why it is degenerate")
        if self.hole and self.expect is not Expect.AT_MOST_START:
            raise ValueError(f"policy {self.name}: a known hole is a gain over the start")


@dataclass(frozen=True)
class Cheat:
    """One known hack, kept either as a file of the environment's `cheats/` folder (its
    first lines say what it tries; `why` says it for a file that cannot hold a comment,
    such as JSON), written at `submit_as`, or, where the hack is data made from the
    prepared assets (a weights file, a pickle, an answer sized by the drawn budget), as
    code: `make(ctx)` writes it into the workspace as a policy's does, under `name`, and
    `why` says what it tries. Either is written over a fresh workspace of solution `base`
    (built, as a run's is), or over the starting files as they are where `base` is None
    (a policy's workspace: for a hack that replaces the whole submission, no build is
    needed), snapshotted and scored officially on each of `profiles`. It must get `expect`:
    INVALID, refused with reason code `reason` (any, where empty); or AT_MOST_START, for a
    cheat that computes the task as the start does, or lies about something the scorer
    does not read. `detail`, where given, must be somewhere in the scorer's private
    details: the outcome came for the right cause. After its scoring no process of the
    submission may be left, unless `kills_scorer` (it may kill its own scorer, leaving its
    child to the sandbox's end); `max_scoring_s` bounds the scoring's wall time (a hang
    must cost at most its limit).
    `tolerance`: for AT_MOST_START, how far above the start it may land (normalized; the
    environment's START_TOLERANCE where None), for a profile whose timings are noisier
    than the cpu one's.

    The generic test (tests/environments/test_degenerate_policies.py) runs every declared
    cheat and checks that every file of the folder is declared: a new cheat is tested by
    being added to both (a made one, by being declared)."""

    file: str = ""
    submit_as: str = ""
    expect: Expect = Expect.INVALID
    reason: str = ""
    detail: str = ""
    base: str | None = "starting"
    profiles: tuple[str, ...] = ("cpu",)
    slow: bool = False
    max_scoring_s: float | None = None
    kills_scorer: bool = False
    tolerance: float | None = None
    why: str = ""
    make: MakeFn | None = None
    name: str = ""

    def __post_init__(self) -> None:
        if self.make is None:
            self._check_file()
        elif self.file or self.submit_as:
            raise ValueError(f"cheat {self.name or self.file!r}: a made cheat has no file "
                             "or submit_as (its make writes the workspace)")
        elif not self.name.isidentifier() or not self.why:
            raise ValueError(f"cheat {self.name!r}: a made cheat needs an identifier for "
                             "its name and a why")
        label = self.label
        if self.expect is Expect.NO_CHANNEL:
            raise ValueError(f"cheat {label}: a channel probe is a degenerate policy")
        if self.expect is not Expect.INVALID and self.reason:
            raise ValueError(f"cheat {label}: a reason is for INVALID only")
        if self.tolerance is not None and self.expect is not Expect.AT_MOST_START:
            raise ValueError(f"cheat {label}: a tolerance is for AT_MOST_START only")
        if not self.profiles:
            raise ValueError(f"cheat {label}: name the profiles it is scored on")

    def _check_file(self) -> None:
        if "/" in self.file or not self.file:
            raise ValueError(f"cheat {self.file!r}: a file name of the cheats/ folder")
        if self.name:
            raise ValueError(f"cheat {self.file}: a file cheat is named by its file")
        target = PurePosixPath(self.submit_as)
        if (not self.submit_as or target.is_absolute() or ".." in target.parts
                or target.as_posix() != self.submit_as):
            raise ValueError(f"cheat {self.file}: submit_as {self.submit_as!r} must be a plain "
                             "path relative to the workspace")

    @property
    def label(self) -> str:
        """The cheat's name in test ids and messages: a made one's name, a file's stem."""
        return self.name or PurePosixPath(self.file).stem


# Normalized scores at most this far above the start still count as "at most the start"
# for a policy whose expect is AT_MOST_START, where the environment declares no tolerance
# of its own (the scorer's noise at the start; a timing environment states its own).
DEFAULT_START_TOLERANCE = 0.05


# (solution, low, high): the band its official score must normalize into.
Band = tuple[str, float, float]
# check(solution, result, snapshot): an environment's own assertions on a golden scoring.
GoldenCheck = Callable[[str, ScoreResult, Path], None]


@dataclass(frozen=True)
class Golden:
    """What official scoring must give the environment's own solutions on the cpu profile
    (the generic golden test, tests/environments/test_golden_all_environments.py). Each
    solution of `bands` is built as a run's workspace is, snapshotted, scored by the
    harness's scorer process under the default isolation, normalized, and must land in its
    band; `slow` names the solutions whose building or scoring takes minutes. `check` adds
    the environment's own assertions on each result.

    A timing environment (a profile with `calibration_sd_limit`) is normalized with anchors
    measured on the machine running the test: its start and reference scored
    `anchor_repeats` times each, the best kept (on a shared machine interference only adds
    time), so the bands hold on any machine; every other environment uses the anchors in
    force (resolve_anchors)."""

    bands: tuple[Band, ...] = (("starting", -0.05, 0.05), ("reference", 0.8, 1.3))
    slow: tuple[str, ...] = ("reference",)
    check: GoldenCheck | None = None
    anchor_repeats: int = 1

    def __post_init__(self) -> None:
        names = [name for name, _, _ in self.bands]
        if "starting" not in names or "reference" not in names:
            raise ValueError("a golden declaration bands the starting and the reference "
                             "solution at least")
        if any(low > high for _, low, high in self.bands):
            raise ValueError(f"a band's low is above its high: {self.bands}")
        if self.anchor_repeats < 1:
            raise ValueError("anchor_repeats must be at least 1")


@dataclass(frozen=True)
class Secrets:
    """What the environment's prepare keeps in `protected/` that no agent may get, for the
    generic leak test (tests/environments/test_leaks_all_environments.py): a fresh agent
    workspace (the starting files and the public assets) must hold no protected file, and
    none of the bytes of a `drawn` one anywhere inside any of its files.

    `drawn`: the files (paths relative to protected/) whose bytes the prepare draws at
    random: a key such as `secret.bin` that the held-out material derives from, a record
    of a drawn target or budget. Each must exist after every prepare, and be long enough
    (at least 16 bytes) that its bytes cannot turn up in a workspace by chance.
    `none_drawn`: when `drawn` is empty, why the prepare keeps no drawn key (e.g. "the
    inputs are drawn fresh at every scoring; nothing is drawn at prepare"). Exactly one of
    the two is given.
    `given`: protected files that the agent is given on purpose (the workspace holds a copy
    by design), left out of the check; empty normally."""

    drawn: tuple[str, ...] = ()
    none_drawn: str = ""
    given: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        for field_name in ("drawn", "given"):
            names = getattr(self, field_name)
            if not isinstance(names, tuple):
                raise ValueError(f"Secrets.{field_name} must be a tuple of file names "
                                 f"(e.g. ('secret.bin',)), not {names!r}")
            for name in names:
                _check_relative(field_name, name)
        if self.drawn and self.none_drawn.strip():
            raise ValueError("Secrets: give either the drawn files or none_drawn's reason, "
                             "not both")
        if not self.drawn and not self.none_drawn.strip():
            raise ValueError("Secrets: name the protected files the prepare draws at random "
                             "(drawn=...) or say why it draws none (none_drawn=...)")
        both = sorted(set(self.drawn) & set(self.given))
        if both:
            raise ValueError(f"Secrets: a drawn file cannot be given to the agent: {both}")


def _check_relative(field_name: str, name: object) -> None:
    """A protected file's name: a relative path below protected/, written plainly."""
    if not isinstance(name, str) or not name:
        raise ValueError(f"Secrets.{field_name}: {name!r} is not a file name")
    path = PurePosixPath(name)
    if path.is_absolute() or ".." in path.parts or "\\" in name:
        raise ValueError(f"Secrets.{field_name}: {name!r} must be a path relative to "
                         "protected/, without '..'")
    if path.as_posix() != name or path.parts in ((), (".",)):
        raise ValueError(f"Secrets.{field_name}: write {name!r} as a plain relative path "
                         f"({path.as_posix()!r})")


def declarations_of(env_id: str) -> ModuleType | None:
    """The environment's declarations module (its degenerate.py), or None where it has
    none. An environment outside the package must be discoverable when asked for."""
    if not (environment_dir(env_id) / "degenerate.py").is_file():
        return None
    load_spec(env_id)  # makes an environment outside the package importable
    return importlib.import_module(f"rebench.environments.{env_id}.degenerate")


_D = TypeVar("_D", "Cheat", "Degenerate")


def _declared(env_id: str, name: str, kind: type[_D]) -> tuple[_D, ...]:
    items = tuple(getattr(declarations_of(env_id), name, ()))
    wrong = [c for c in items if not isinstance(c, kind)]
    if wrong:
        raise TypeError(f"{env_id}: {name} holds something other than a {kind.__name__}: "
                        f"{wrong}")
    return items


def cheats_of(env_id: str) -> tuple[Cheat, ...]:
    """The cheats the environment declares (CHEATS), each checked to be a Cheat."""
    return _declared(env_id, "CHEATS", Cheat)


def policies_of(env_id: str) -> tuple[Degenerate, ...]:
    """The degenerate policies the environment declares (POLICIES), each checked to be a
    Degenerate (none without a degenerate.py)."""
    return _declared(env_id, "POLICIES", Degenerate)


def cheats_folder(env_id: str) -> Path:
    """Where the environment's cheat files are: its folder's cheats/."""
    return environment_dir(env_id) / "cheats"

