"""Score arbitrary solution folders (no run, no log), and calibrate anchors."""

from __future__ import annotations

import dataclasses
import math
import os
import tempfile
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
from rebench.core.normalize import Anchors, normalize
from rebench.core.score import ScoreResult
from rebench.core.spec import Direction, EnvironmentSpec, Profile
from rebench.harness.scoring import official_score, snapshot_solution
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
            return ScoreResult.invalid(f"could not snapshot the solution: {exc}")
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


def evaluate_named(
    spec: EnvironmentSpec, profile: Profile, name: str, isolation: Isolation
) -> Evaluation:
    """Evaluate one of the environment's own solutions (starting, reference, expert)."""
    with tempfile.TemporaryDirectory(prefix=f"rebench-{name}-") as tmp:
        workspace = materialize_solution(spec, profile, name, Path(tmp) / "ws", isolation)
        return evaluate_folder(spec, profile, workspace, isolation)


# Calibration reports steps as plain messages (no fraction, unlike prepare's ProgressFn).
StatusFn = Callable[[str], None]


def calibrate(
    spec: EnvironmentSpec,
    profile: Profile,
    repeats: int,
    isolation: Isolation,
    progress: StatusFn = lambda _msg: None,
    save: bool = True,
    strict: bool = False,
) -> CalibrationEntry:
    """Score the starting and the reference solution `repeats` times each on this machine
    and store the medians as this hardware's anchors.

    Timing environments (a profile with a `calibration_sd_limit`) also score the
    reference once before and once after the samples and read the load average; if the
    machine was busy (core.calibration.find_interference) a warning goes to `progress` and
    into the entry (`interference`), or, with `strict`, nothing is saved and
    CalibrationError says why."""
    if repeats < 1:
        raise CalibrationError("repeats must be at least 1")
    sd_limit = profile.calibration_sd_limit
    load_before = os.getloadavg()[0]

    def scores(name: str, runs: int) -> list[float]:
        with tempfile.TemporaryDirectory(prefix=f"rebench-cal-{name}-") as tmp:
            progress(f"building the {name} solution")
            workspace = materialize_solution(spec, profile, name, Path(tmp) / "ws", isolation)
            return _score_repeatedly(spec, profile, workspace, isolation, name, runs, progress)

    # Timing environments: a reference probe before everything and one after (the last).
    before = scores("reference", 1)[0] if sd_limit else math.nan
    samples = {"starting": scores("starting", repeats)}
    samples["reference"] = scores("reference", repeats + (1 if sd_limit else 0))
    probes = (before, samples["reference"].pop() if sd_limit else math.nan)
    load = (round(load_before, 2), round(os.getloadavg()[0], 2))
    entry = new_entry(spec, profile, samples["starting"], samples["reference"], load)
    _check_order(spec, entry)
    if sd_limit:
        found = find_interference(samples["starting"], samples["reference"], probes, load,
                                  sd_limit, os.cpu_count() or 1)
        if found.found:
            why = (f"{spec.id}: the machine was busy while calibrating ("
                   + "; ".join(found.reasons) + ")")
            if strict:
                raise CalibrationError(why + "; anchors not saved. Calibrate on an idle "
                                       "machine.")
            progress(f"WARNING: {why}; the anchors are saved but may skew later scores: "
                     "calibrate again on an idle machine (or use --strict to refuse)")
            entry = dataclasses.replace(entry, interference=found.reasons)
    if save:
        save_entry(entry)
    return entry


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
