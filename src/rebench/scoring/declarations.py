"""What an environment declares about itself for the generic tests: what official scoring
must give its own solutions (golden bands), the policies a lazy or hacking agent tries first
(degenerate policies) and the submissions that try to carry a secret back through a score's
feedback (channel probes).

An environment lists them in `rebench/environments/<id>/degenerate.py`:

    GOLDEN = Golden(bands=(("starting", -0.05, 0.05), ("reference", 0.8, 1.3)))
    POLICIES = (
        Degenerate("constant_output", "the same answer for every input", make=_constant),
        Degenerate("public_table", "the optimum copied from the package's sweep table",
                   make=_copy_table, expect=Expect.AT_MOST_START),
    )

Each `make(ctx)` turns `ctx.workspace` (a fresh copy of the starting files) into the
submission; it runs on the trusted side of a test, with the public assets at hand, as an
agent's own tools would. One generic test (tests/environments/test_degenerate_policies.py)
scores every declared policy of every discovered environment through official scoring
and checks its `expect`. Nothing here runs in a sandbox; the module is never a child
module (the sandbox cannot import it).
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

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
    AssertionError otherwise), so a policy that passes is not a vacuous one."""

    name: str
    why: str
    make: MakeFn
    expect: Expect = Expect.AT_MOST_START
    profiles: tuple[str, ...] = ("cpu",)
    slow: bool = False
    reasons: tuple[str, ...] = ()
    verify: VerifyFn | None = None

    def __post_init__(self) -> None:
        if not self.name.isidentifier():
            raise ValueError(f"policy name {self.name!r} must be an identifier")
        if not self.why:
            raise ValueError(f"policy {self.name}: say why it is degenerate")


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
