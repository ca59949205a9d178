"""Spec validation, durations, instructions placeholders, calibration storage."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rebench.core.calibration import (
    calibration_key,
    load_entries,
    new_entry,
    resolve_anchors,
    save_entry,
)
from rebench.core.duration import format_duration, parse_duration
from rebench.core.errors import SpecError, UnknownProfileError
from rebench.core.hardware import fingerprint
from rebench.core.instructions import fill
from rebench.core.normalize import AnchorSource
from rebench.core.paths import PREPARED_ANCHORS, PREPARED_MARKER, env_cache_dir
from rebench.core.spec import Direction, EnvironmentSpec, Profile, SolutionRecipe
from rebench.scoring.context import PrepareContext


def make_spec(start: float = 2.0, ref: float = 1.0) -> EnvironmentSpec:
    profile = Profile("cpu", "test", starting_raw=start, reference_raw=ref,
                      anchors_hardware="test-machine")
    return EnvironmentSpec(
        id="toy", version="1", title="Toy", direction=Direction.LOWER,
        raw_score_meaning="ln(ms)", profiles={"cpu": profile},
        solutions={"starting": SolutionRecipe("starting"),
                   "reference": SolutionRecipe("reference")},
    )


def test_spec_rejects_bad_definitions() -> None:
    with pytest.raises(SpecError):
        make_spec(1.0, 1.0)
    with pytest.raises(SpecError):
        EnvironmentSpec(id="bad-id", version="1", title="x", direction=Direction.LOWER,
                        raw_score_meaning="", profiles=make_spec().profiles,
                        solutions=make_spec().solutions)
    with pytest.raises(SpecError):
        EnvironmentSpec(id="toy", version="1", title="x", direction=Direction.LOWER,
                        raw_score_meaning="", profiles=make_spec().profiles,
                        solutions={"starting": SolutionRecipe("starting")})


def test_unknown_profile_names_the_known_ones() -> None:
    with pytest.raises(UnknownProfileError, match="known: cpu"):
        make_spec().profile("tpu")


@pytest.mark.parametrize(("text", "seconds"), [
    ("90s", 90), ("30m", 1800), ("8h", 28800), ("1h30m", 5400), ("2d", 172800),
    ("45", 45), ("1.5h", 5400), (" 10 m ", 600),
])
def test_parse_duration(text: str, seconds: float) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "abc", "10x", "-5", "0", "1h-2m", "h", "nan", "inf"])
def test_parse_duration_rejects(text: str) -> None:
    with pytest.raises(ValueError, match="duration"):
        parse_duration(text)


def test_format_duration() -> None:
    assert format_duration(5400) == "1h30m00s"
    assert format_duration(75) == "1m15s"


def test_placeholders_leave_code_braces_alone() -> None:
    text = "N = {n}; d = {'a': 1}; f'{x + 1}' {n}"
    filled = fill(text, {"n": "7"})
    assert filled == "N = 7; d = {'a': 1}; f'{x + 1}' 7"


def test_calibration_overrides_defaults_for_this_hardware(tmp_path: Path) -> None:
    spec = make_spec()
    profile = spec.profile("cpu")
    path = tmp_path / "cal.json"
    default = resolve_anchors(spec, profile, path)
    assert default.source is AnchorSource.PROFILE_DEFAULT
    assert (default.starting_raw, default.hardware) == (2.0, "test-machine")
    entry = new_entry(spec, profile, [3.0, 3.2, 3.1], [1.5, 1.4, 1.6])
    save_entry(entry, path)
    anchors = resolve_anchors(spec, profile, path)
    assert anchors.source is AnchorSource.CALIBRATION
    assert (anchors.starting_raw, anchors.reference_raw) == (3.1, 1.5)
    assert anchors.hardware == fingerprint(0)
    stored = load_entries(path)
    key = calibration_key("toy", "1", "cpu", fingerprint(0))
    assert stored[key].starting_samples == (3.0, 3.2, 3.1)


def test_calibration_of_other_version_is_ignored(tmp_path: Path) -> None:
    spec = make_spec()
    path = tmp_path / "cal.json"
    save_entry(new_entry(spec, spec.profile("cpu"), [3.0], [1.0]), path)
    bumped = EnvironmentSpec(**{**spec.__dict__, "version": "2"})
    assert resolve_anchors(bumped, bumped.profile("cpu"), path).source is (
        AnchorSource.PROFILE_DEFAULT
    )


def test_anchors_measured_at_prepare_win_for_their_version_only(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An environment whose raw scores follow a setting drawn at prepare records its
    anchors there; they beat a calibration (measured on another draw) and the profile's,
    but only for the version that prepared them and only when well formed."""
    monkeypatch.setenv("REBENCH_CACHE", str(tmp_path / "cache"))
    spec = make_spec()
    profile = spec.profile("cpu")
    path = tmp_path / "cal.json"
    save_entry(new_entry(spec, profile, [3.0], [1.0]), path)
    assets = env_cache_dir(spec.id, profile.name)
    context = PrepareContext(spec, profile, assets)
    context.record_anchors(2.5, 1.25, note="measured")
    assert resolve_anchors(spec, profile, path).source is AnchorSource.CALIBRATION  # no marker
    (assets / PREPARED_MARKER).write_text(json.dumps({"version": spec.version}))
    anchors = resolve_anchors(spec, profile, path)
    assert anchors.source is AnchorSource.PREPARE
    assert (anchors.starting_raw, anchors.reference_raw) == (2.5, 1.25)
    assert json.loads((assets / PREPARED_ANCHORS).read_text())["note"] == "measured"
    (assets / PREPARED_MARKER).write_text(json.dumps({"version": "other"}))
    assert resolve_anchors(spec, profile, path).source is AnchorSource.CALIBRATION
    (assets / PREPARED_MARKER).write_text(json.dumps({"version": spec.version}))
    for broken in ("{", '{"starting_raw": 1.0}', '{"starting_raw": "NaN", "reference_raw": 1}',
                   '{"starting_raw": 1.0, "reference_raw": 1.0}'):
        (assets / PREPARED_ANCHORS).write_text(broken)
        assert resolve_anchors(spec, profile, path).source is AnchorSource.CALIBRATION, broken
