"""Score arbitrary solution folders (no run, no log), and calibrate anchors."""

from __future__ import annotations

import dataclasses
import math
import os
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rebench.core.calibration import (
    CalibrationEntry,
    find_interference,
    new_entry,
    resolve_anchors,
    save_entry,
)
from rebench.core.errors import CalibrationError
from rebench.core.hardware import usable_cores
from rebench.core.normalize import Anchors, normalize
from rebench.core.score import ScoreResult
from rebench.core.spec import Direction, EnvironmentSpec, Profile
from rebench.harness.scoring import agent_visible, official_score, snapshot_solution
from rebench.harness.workspace import materialize_solution, require_prepared
from rebench.sandbox import Isolation


@dataclass(frozen=True)
class Evaluation:
    """An official score of a solution folder, normalized with the anchors in force."""

    env_id: str
    profile: str
    result: ScoreResult
    normalized: float
    anchors: Anchors
    load: float = 0.0  # the machine's 1-minute load average when the score was taken

    def to_json(self) -> dict[str, Any]:
        return {
            "env": self.env_id,
            "profile": self.profile,
            "raw": self.result.raw if self.result.valid else None,
            "normalized": self.normalized if math.isfinite(self.normalized) else None,
            "valid": self.result.valid,
            "message": self.result.message,
            "anchors": self.anchors.to_json(),
            "load": self.load,
        }


def score_folder(
    spec: EnvironmentSpec, profile: Profile, solution_dir: Path, isolation: Isolation
) -> ScoreResult:
    """Snapshot a solution folder and score the snapshot officially."""
    require_prepared(spec, profile)
    with tempfile.TemporaryDirectory(prefix="rebench-eval-") as tmp:
        snapshot = Path(tmp) / "snapshot"
        try:
            snapshot_solution(spec, solution_dir, snapshot)
        except (OSError, ValueError) as exc:
            return agent_visible(spec, ScoreResult.invalid(
                "snapshot", error=f"could not snapshot the solution: {exc}"))
        return official_score(spec, profile, snapshot, isolation)


def evaluate_folder(
    spec: EnvironmentSpec, profile: Profile, solution_dir: Path, isolation: Isolation
) -> Evaluation:
    result = score_folder(spec, profile, solution_dir, isolation)
    anchors = resolve_anchors(spec, profile)
    return Evaluation(
        spec.id, profile.name, result, normalize(result.raw, anchors, spec.direction), anchors,
        load=round(os.getloadavg()[0], 2),
    )


# Calibration reports steps as plain messages (no fraction, unlike prepare's ProgressFn).
StatusFn = Callable[[str], None]


def evaluate_named(
    spec: EnvironmentSpec, profile: Profile, name: str, isolation: Isolation,
    rebuild: bool | None = None, progress: StatusFn = lambda _msg: None,
) -> Evaluation:
    """Evaluate one of the environment's own solutions (starting, reference, expert),
    built once and kept (workspace.materialize_solution; `rebuild` builds it again)."""
    with tempfile.TemporaryDirectory(prefix=f"rebench-{name}-") as tmp:
        workspace = materialize_solution(spec, profile, name, Path(tmp) / "ws", isolation,
                                         rebuild, progress)
        return evaluate_folder(spec, profile, workspace, isolation)


# A timing calibration found a busy machine: how long to wait for the load to drop before
# measuring again, and how many measurements to try in all before refusing.
BUSY_WAIT_S = 60.0
CALIBRATION_ATTEMPTS = 2


def calibrate(
    spec: EnvironmentSpec,
    profile: Profile,
    repeats: int,
    isolation: Isolation,
    progress: StatusFn = lambda _msg: None,
    save: bool = True,
    allow_busy: bool = False,
    rebuild: bool | None = None,
) -> CalibrationEntry:
    """Score the starting and the reference solution `repeats` times each on this machine
    and store the medians as this hardware's anchors.

    Timing environments (a profile with a `calibration_sd_limit`) also score the
    reference once before and once after the samples and read the load average; if the
    machine was busy (core.calibration.find_interference) the measurement is repeated
    once the load has dropped, and refused (CalibrationError, nothing saved) if the
    machine is still busy then. With `allow_busy` a busy measurement is saved with a
    loud warning and the reasons in the entry (`interference`).

    Solutions with a build command are built once and kept (workspace.materialize_solution);
    `rebuild` (default: $REBENCH_REBUILD) builds them again first."""
    if repeats < 1:
        raise CalibrationError("repeats must be at least 1")
    attempts = 1 if allow_busy or not profile.calibration_sd_limit else CALIBRATION_ATTEMPTS
    for attempt in range(1, attempts + 1):
        entry, reasons = _measure(spec, profile, repeats, isolation, progress,
                                  rebuild if attempt == 1 else False)
        if not reasons:
            break
        why = f"{spec.id}: the machine was busy while calibrating (" + "; ".join(reasons) + ")"
        if allow_busy:
            progress(f"WARNING: {why}; the anchors are saved but may skew later scores: "
                     "calibrate again on an idle machine")
            entry = dataclasses.replace(entry, interference=reasons)
            break
        if attempt == attempts:
            raise CalibrationError(why + "; anchors not saved. Calibrate on an idle machine "
                                   "(or pass --allow-busy to keep them anyway)")
        progress(f"{why}; waiting for the load to drop, then measuring again")
        _wait_for_quiet(BUSY_WAIT_S)
    if save:
        save_entry(entry)
    return entry


def _measure(spec: EnvironmentSpec, profile: Profile, repeats: int, isolation: Isolation,
             progress: StatusFn, rebuild: bool | None = None,
             ) -> tuple[CalibrationEntry, tuple[str, ...]]:
    """One calibration measurement and, for a timing environment, the signs of a busy
    machine found in it (empty when it was quiet)."""
    sd_limit = profile.calibration_sd_limit
    load_before = os.getloadavg()[0]

    built: set[str] = set()  # a rebuild asked for builds each solution once, not per probe

    def scores(name: str, runs: int) -> list[float]:
        with tempfile.TemporaryDirectory(prefix=f"rebench-cal-{name}-") as tmp:
            if not spec.solutions[name].run:  # else materialize_solution says which it does
                progress(f"building the {name} solution")
            workspace = materialize_solution(spec, profile, name, Path(tmp) / "ws", isolation,
                                             False if name in built else rebuild, progress)
            built.add(name)
            return _score_repeatedly(spec, profile, workspace, isolation, name, runs, progress)

    # Timing environments: a reference probe before everything and one after (the last).
    before = scores("reference", 1)[0] if sd_limit else math.nan
    samples = {"starting": scores("starting", repeats)}
    samples["reference"] = scores("reference", repeats + (1 if sd_limit else 0))
    probes = (before, samples["reference"].pop() if sd_limit else math.nan)
    load = (round(load_before, 2), round(os.getloadavg()[0], 2))
    entry = new_entry(spec, profile, samples["starting"], samples["reference"], load)
    _check_order(spec, entry)
    if not sd_limit:
        return entry, ()
    found = find_interference(samples["starting"], samples["reference"], probes, load,
                              sd_limit, usable_cores())
    return entry, tuple(found.reasons) if found.found else ()


def _wait_for_quiet(limit_s: float) -> None:
    """Wait until the 1-minute load is below half the cores, at most `limit_s`."""
    deadline = time.monotonic() + limit_s
    while os.getloadavg()[0] > usable_cores() / 2 and time.monotonic() < deadline:
        time.sleep(2.0)


def _score_repeatedly(spec: EnvironmentSpec, profile: Profile, workspace: Path,
                      isolation: Isolation, name: str, runs: int,
                      progress: StatusFn) -> list[float]:
    raws = []
    for i in range(runs):
        progress(f"scoring {name} ({i + 1}/{runs})")
        result = score_folder(spec, profile, workspace, isolation)
        if not result.valid:
            raise CalibrationError(f"{spec.id} {name} solution scored invalid: {result.message}")
        raws.append(result.raw)
    return raws


def _check_order(spec: EnvironmentSpec, entry: CalibrationEntry) -> None:
    better = entry.reference_raw < entry.starting_raw
    if better != (spec.direction is Direction.LOWER) or entry.reference_raw == entry.starting_raw:
        raise CalibrationError(
            f"{spec.id}: reference ({entry.reference_raw:.4f}) is not better than the start "
            f"({entry.starting_raw:.4f}) on this machine; anchors not saved"
        )
