"""Measured anchors per (environment, version, profile, hardware), kept in one JSON file."""

from __future__ import annotations

import json
import math
import os
import tempfile
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rebench.core.hardware import fingerprint
from rebench.core.normalize import Anchors, AnchorSource
from rebench.core.paths import PREPARED_ANCHORS, PREPARED_MARKER, calibration_file, env_cache_dir
from rebench.core.spec import EnvironmentSpec, Profile


@dataclass(frozen=True)
class CalibrationEntry:
    env_id: str
    version: str
    profile: str
    hardware: str
    starting_raw: float
    reference_raw: float
    starting_samples: tuple[float, ...]
    reference_samples: tuple[float, ...]
    measured_at: str
    load: tuple[float, ...] = ()  # 1-minute load average before and after (timing envs)
    interference: tuple[str, ...] = ()  # signs of a busy machine it was measured on

    @property
    def key(self) -> str:
        return calibration_key(self.env_id, self.version, self.profile, self.hardware)


def calibration_key(env_id: str, version: str, profile: str, hardware: str) -> str:
    return f"{env_id}|{version}|{profile}|{hardware}"


def load_entries(path: Path | None = None) -> dict[str, CalibrationEntry]:
    path = path or calibration_file()
    if not path.is_file():
        return {}
    try:
        data: dict[str, dict[str, Any]] = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError):
        return {}
    entries = {}
    for key, raw in data.items():
        raw["starting_samples"] = tuple(raw.get("starting_samples", ()))
        raw["reference_samples"] = tuple(raw.get("reference_samples", ()))
        raw["load"] = tuple(raw.get("load", ()))
        raw["interference"] = tuple(raw.get("interference", ()))
        entries[key] = CalibrationEntry(**raw)
    return entries


def save_entry(entry: CalibrationEntry, path: Path | None = None) -> Path:
    """Add or replace one entry; the file is rewritten atomically."""
    path = path or calibration_file()
    entries = load_entries(path)
    entries[entry.key] = entry
    payload = {
        key: {**e.__dict__, "starting_samples": list(e.starting_samples),
              "reference_samples": list(e.reference_samples), "load": list(e.load),
              "interference": list(e.interference)}
        for key, e in sorted(entries.items())
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".calibration-")
    with os.fdopen(fd, "w") as fh:
        json.dump(payload, fh, indent=2)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)
    return path


def new_entry(
    spec: EnvironmentSpec, profile: Profile, starting: list[float], reference: list[float],
    load: tuple[float, ...] = (),
) -> CalibrationEntry:
    import statistics

    return CalibrationEntry(
        env_id=spec.id,
        version=spec.version,
        profile=profile.name,
        hardware=fingerprint(profile.gpus),
        starting_raw=statistics.median(starting),
        reference_raw=statistics.median(reference),
        starting_samples=tuple(starting),
        reference_samples=tuple(reference),
        measured_at=datetime.now(UTC).isoformat(timespec="seconds"),
        load=load,
    )


@dataclass(frozen=True)
class Interference:
    """Signs that a timing calibration ran on a busy machine (see `find_interference`)."""

    reasons: tuple[str, ...]

    @property
    def found(self) -> bool:
        return bool(self.reasons)


def find_interference(
    starting: list[float], reference: list[float], probes: tuple[float, float],
    load: tuple[float, float], sd_limit: float, cores: int,
) -> Interference:
    """Spread across repeats above `sd_limit` (raw units, i.e. ln of time), a reference
    probe scored before and after the samples that moved by more than 3 x `sd_limit`, or a
    1-minute load average above half the cores before (1.5 x the cores after, which
    counts the calibration's own work): any of them means other work shared the
    machine, and anchors measured so would skew every later score on it."""
    import statistics

    reasons = []
    for name, samples in (("starting", starting), ("reference", reference)):
        if len(samples) > 1 and statistics.stdev(samples) > sd_limit:
            reasons.append(f"{name} samples spread SD {statistics.stdev(samples):.4f} > "
                           f"{sd_limit}")
    if abs(probes[1] - probes[0]) > 3 * sd_limit:
        reasons.append(f"reference probe moved from {probes[0]:.4f} before to "
                       f"{probes[1]:.4f} after")
    # Before: any load is another's. After: the calibration's own scorings keep up to
    # `cores` threads busy, so only load well beyond that is someone else's.
    if load[0] > cores / 2 or load[1] > cores * 1.5:
        reasons.append(f"load average {max(load):.2f} on {cores} cores")
    return Interference(tuple(reasons))


def resolve_anchors(
    spec: EnvironmentSpec, profile: Profile, path: Path | None = None
) -> Anchors:
    """The anchors an environment measured when it was prepared (its raw scores depend on
    a setting drawn at prepare, so no other measurement fits), else the calibration of this
    machine, else the profile's defaults."""
    hardware = fingerprint(profile.gpus)
    prepared = prepared_anchors(spec, profile)
    if prepared is not None:
        return Anchors(prepared[0], prepared[1], AnchorSource.PREPARE, hardware)
    entry = load_entries(path).get(calibration_key(spec.id, spec.version, profile.name, hardware))
    if entry is not None:
        return Anchors(entry.starting_raw, entry.reference_raw, AnchorSource.CALIBRATION, hardware)
    return Anchors(
        profile.starting_raw, profile.reference_raw, AnchorSource.PROFILE_DEFAULT,
        profile.anchors_hardware,
    )


def prepared_anchors(spec: EnvironmentSpec, profile: Profile) -> tuple[float, float] | None:
    """(starting_raw, reference_raw) recorded by this version's prepare of the profile
    (PrepareContext.record_anchors), or None: not prepared, prepared by another version, or
    an environment that does not measure anchors at prepare."""
    assets = env_cache_dir(spec.id, profile.name)
    try:
        marker = json.loads((assets / PREPARED_MARKER).read_text())
        data = json.loads((assets / PREPARED_ANCHORS).read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(marker, dict) or marker.get("version") != spec.version:
        return None
    try:
        start, ref = float(data["starting_raw"]), float(data["reference_raw"])
    except (KeyError, TypeError, ValueError):
        return None
    if not (math.isfinite(start) and math.isfinite(ref)) or start == ref:
        return None
    return start, ref
