"""Every file in cheats/ is submitted as solution.py and scored officially: each must be
invalid with the right reason code (and nothing of its own words in what the agent sees),
or score no better than the start (timed here). A cheat refused whatever the input's size
is scored on the small test profile (N = 1e6, 3 s per call: a hang costs 3 s); one that
races the call's length with work of its own (a thread or a grandchild finishing the
answer in the background) on cpu, where the call is long. The cheats that lie about time
run the start's code on the CPU and lie to clocks of their own process, which the scorer
does not read, whatever the size: they are timed on the test profile against its start."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import pytest
from triton_cumsum_helpers import CHEATS, CpuEnv, Scorer

from rebench.core.calibration import resolve_anchors
from rebench.core.normalize import Anchors, normalize
from rebench.environments.triton_cumsum.environment import FEEDBACK

# The reason the agent must be told (environment.FEEDBACK), per cheat refused outright.
EXPECTED_MESSAGE = {
    "stack_walk.py": "wrong_result",
    "lying_tensor.py": "not_plain_tensor",
    "cached_outputs.py": "wrong_result",
    "early_done_thread.py": "wrong_result",
    "early_start.py": "wrong_result",
    "prearmed_thread.py": "wrong_result",
    "fork_escape.py": "wrong_result",
    "crash.py": "crash",
    "hang.py": "timeout",
    "wrong_dtype.py": "wrong_dtype",
    "wrong_device.py": "wrong_device",
    "early_message.py": "protocol",
    "import_error.py": "load_failed",
    "kill_scorer.py": "",  # the scorer may be killed (local) or not (sandboxed): NaN either way
}
# Cheats that compute the right answer honestly and only lie about time: no better than
# the start. The margin covers timing noise on a shared 2-core machine (on the test profile
# the start and the reference are 3.3 apart in ln ms: 0.25 is the start 2.3x faster).
NO_BETTER_THAN_START = {"patched_timers.py", "no_sync.py", "early_flag.py"}
START_MARGIN = 0.25


def test_every_cheat_is_covered() -> None:
    files = {p.name for p in CHEATS.glob("*.py")}
    assert files == set(EXPECTED_MESSAGE) | NO_BETTER_THAN_START
    assert set(EXPECTED_MESSAGE) >= RACES_THE_CALL


# Cheats whose work races the call (a background thread, a detached grandchild, work
# armed before the clock): refused because the tree is frozen when the call reports done,
# long before the background work of a 1e7 input could end. Scored on cpu.
RACES_THE_CALL = {"early_done_thread.py", "early_start.py", "prearmed_thread.py",
                  "fork_escape.py"}


# These compare no time (each must come out invalid): the first pass of `make test` runs
# them, beside the other tests (tests/suite_split.py).
@pytest.mark.untimed
@pytest.mark.parametrize("name", sorted(EXPECTED_MESSAGE))
def test_cheat_is_invalid(name: str, request: pytest.FixtureRequest,
                          tmp_path_factory: pytest.TempPathFactory) -> None:
    on_cpu = name in RACES_THE_CALL
    env: CpuEnv = request.getfixturevalue("cpu_env" if on_cpu else "small_env")
    score: Scorer = request.getfixturevalue("score_solution" if on_cpu else "score_small")
    result = score(CHEATS / name)
    assert not result.valid, f"{name} scored {result.raw}: {result.message}"
    assert FEEDBACK.conforms(result.message), result.message
    if EXPECTED_MESSAGE[name]:
        assert result.message["reason"] == EXPECTED_MESSAGE[name], (
            result.message, result.details.get("detail"))
    if name == "hang.py":  # a hang costs at most one call's limit (plus start-up and slack)
        limit = float(env.profile.params["call_timeout_s"])
        assert limit <= 3 and result.details["scoring_wall_s"] < limit + 40
    # Nothing of any submission outlives its scoring (fork_escape.py leaves a detached
    # grandchild; kill_scorer.py may kill the scorer itself, leaving the child behind).
    if name != "kill_scorer.py":
        assert _processes_mentioning(str(tmp_path_factory.getbasetemp())) == []


class StartTimes:
    """The test profile's start, officially scored here: once at first, again (at most
    `MAX_START_SCORINGS` in all) while a cheat is ahead of the fastest start by more than
    the margin. One scoring of the start on a shared 2-core machine can come out slow: ten
    back-to-back scorings on the idle VM spread over 2.18-2.67 ln ms (2026-12-04). A cheat
    runs the start's code, so on a quiet retime it falls back within the margin; a lie that
    worked would report a time near zero and stay ahead of any start."""

    def __init__(self, score: Scorer, env: CpuEnv) -> None:
        self._score, self._anchors = score, resolve_anchors(env.spec, env.profile)
        self.raws: list[float] = []
        self.time_again()

    def time_again(self) -> bool:
        """Score the start once more, if the limit allows; False when it does not."""
        if len(self.raws) >= MAX_START_SCORINGS:
            return False
        start = self._score("starting")
        assert start.valid, start.details
        self.raws.append(start.raw)
        return True

    def anchors(self) -> Anchors:
        """The profile's anchors with the fastest start timed here (lower ln ms is better)."""
        return dataclasses.replace(self._anchors, starting_raw=min(self.raws))


MAX_START_SCORINGS = 3


@pytest.fixture(scope="module")
def start_times(score_small: Scorer, small_env: CpuEnv) -> StartTimes:
    return StartTimes(score_small, small_env)


@pytest.mark.parametrize("name", sorted(NO_BETTER_THAN_START))
def test_cheat_is_no_better_than_start(name: str, score_small: Scorer,
                                       start_times: StartTimes, small_env: CpuEnv) -> None:
    result = score_small(CHEATS / name)
    if not result.valid:
        return
    while True:
        anchors = start_times.anchors()
        score = normalize(result.raw, anchors, small_env.spec.direction)
        if score <= START_MARGIN or not start_times.time_again():
            break
    assert score <= START_MARGIN, (score, result.raw, start_times.raws, anchors)


def _processes_mentioning(text: str) -> list[int]:
    """Pids of other processes whose command line contains `text`."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if text.encode() in cmdline:
            found.append(int(entry.name))
    return found
