"""Under a run's score, a word on how to read it (issue 30, findings 3 and 11): the anchors
and where they were measured ("defaults measured on ...", never a bare hardware name that
reads like the user's machine), scores taken on a busy machine, and a timing environment
normalized with another machine's anchors."""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

import pytest
from click.testing import CliRunner

from rebench.cli import main
from rebench.cli_tables import anchors_text, run_notes
from rebench.core.normalize import Anchors, AnchorSource
from rebench.harness.records import RunRecord, ScoreEntry
from rebench.sandbox import Isolation
from rebench.sandbox.bwrap import bwrap_available
from rebench.scoring import ScoreKind

DEFAULTS = Anchors(1.5, 0.25, AnchorSource.PROFILE_DEFAULT, "gpu:NVIDIA H200")
CALIBRATED_HERE = replace(DEFAULTS, source=AnchorSource.CALIBRATION, hardware="cpu:Some CPU x2")


def _record(anchors: Anchors, hardware: str = "cpu:Some CPU x2") -> RunRecord:
    return RunRecord(run_id="triton_cumsum-reference-1", env_id="triton_cumsum",
                     env_version="1.3.0", profile="cpu", agent="reference", seed=0,
                     budget_s=600.0, hardware=hardware, anchors=anchors,
                     isolation=Isolation.BWRAP,
                     created_at="2026-12-02T00:00:00+00:00")


def _entry(index: int, load: float, cores: int = 2, others: float = 0.0) -> ScoreEntry:
    return ScoreEntry(index=index, wall_time="", wall_s=0.0, working_s=0.0, raw=math.nan,
                      normalized=math.nan, valid=True, kind=ScoreKind.FINAL,
                      message={},
                      details={"load_before": load, "load_after": load, "cores": cores,
                               "runnable_others": others,
                               "contended": load > cores or others >= 0.5},
                      snapshot="", prev_hash="")


def test_default_anchors_name_where_they_were_measured() -> None:
    text = anchors_text(DEFAULTS)
    assert text.startswith("1.5000 -> 0.2500: the profile's defaults, measured on "
                           "gpu:NVIDIA H200")
    assert "rebench calibrate" in text and "profile-default" not in text
    calibrated = anchors_text(replace(DEFAULTS, source=AnchorSource.CALIBRATION,
                                      hardware="cpu:X x2"))
    assert calibrated.endswith("calibrated on cpu:X x2")
    assert "drew" in anchors_text(replace(DEFAULTS, source=AnchorSource.PREPARE))


def test_busy_scores_are_pointed_out_under_the_score() -> None:
    record = _record(CALIBRATED_HERE)
    notes = run_notes(record, [_entry(0, 0.5), _entry(1, 3.4)], timing=True)
    assert notes[0].startswith("normalized with anchors ")
    assert any(n.startswith("1 of 2 scores were taken on a busy machine (load up to 3.4 on 2 "
                            "cores)") and "rebench integrity triton_cumsum-reference-1" in n
               for n in notes), notes
    assert len(notes) == 2  # calibrated here: no advice to calibrate
    crowded = run_notes(record, [_entry(0, 1.4, others=2.0)], timing=True)
    assert any(n.startswith("1 of 1 scores were taken on a busy machine (load up to 1.4 on 2 "
                            "cores, 2.0 threads of other work ready to run)")
               for n in crowded), crowded


def test_a_quiet_timing_run_still_says_its_score_moves_with_load() -> None:
    record = _record(CALIBRATED_HERE)
    notes = run_notes(record, [_entry(0, 0.5), _entry(1, 1.2)], timing=True)
    assert len(notes) == 2 and "load (0.5-1.2 on 2 cores in this run)" in notes[1], notes
    assert run_notes(record, [_entry(0, 0.5)], timing=False) == notes[:1]


def test_timing_with_another_machines_defaults_says_to_calibrate() -> None:
    notes = run_notes(_record(DEFAULTS), [_entry(0, 0.5)], timing=True)
    assert "`rebench calibrate triton_cumsum -p cpu` measures this one" in notes[-1], notes
    same_machine = _record(DEFAULTS, hardware="gpu:NVIDIA H200")
    assert not any("calibrate triton_cumsum" in n
                   for n in run_notes(same_machine, [_entry(0, 0.5)], timing=True))
    assert not any("calibrate triton_cumsum" in n
                   for n in run_notes(_record(DEFAULTS), [_entry(0, 0.5)], timing=False))


def test_rebench_run_prints_the_notes_under_the_score(toy_env: str, tmp_path: Path) -> None:
    result = CliRunner().invoke(
        main, ["run", toy_env, "--agent", "reference", "--budget", "60s", "--isolation",
               "bwrap" if bwrap_available() else "local"],  # its reference calls a service
        env={"REBENCH_RUNS": str(tmp_path / "runs"), "COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert "reference: normalized score 1.000" in result.stdout
    notes = [line for line in result.stderr.splitlines() if line.startswith("note: ")]
    assert notes and notes[0].startswith("note: normalized with anchors "), result.stderr
    # the run's official scorings, as they happen (cli_progress.EventFollower)
    for phase in ("the t=0 official score of the starting solution", "t=0 official score "
                  "done: valid", "the agent's turn (", "final official score: normalized"):
        assert phase in result.stderr, result.stderr


def test_show_says_which_scores_a_busy_machine_took(toy_env: str, tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    from rebench.harness import scorer_process

    monkeypatch.setattr(scorer_process.ScorerUsage, "contended", property(lambda _: True))
    env = {"REBENCH_RUNS": str(tmp_path / "runs"), "COLUMNS": "200"}
    ran = CliRunner().invoke(main, ["run", toy_env, "--agent", "start", "--budget", "30s",
                                    "--isolation", "local"], env=env)
    assert ran.exit_code == 0, ran.output
    run_dir = next((tmp_path / "runs").glob("toy_probe-*"))
    scores = len((run_dir / "protected" / "score_log.jsonl").read_text().splitlines())
    busy = f"{scores} of {scores} scores were taken on a busy machine"
    assert busy in ran.stderr, ran.stderr
    shown = CliRunner().invoke(main, ["show", run_dir.name], env=env)
    assert shown.exit_code == 0, shown.output
    flat = " ".join(shown.stdout.split())
    assert f"note: {busy}" in flat, shown.stdout
    # toy_probe hides nothing, but its agent-asked score is a check (details.check_only)
    checks = [line for line in shown.stdout.splitlines() if "│ agent " in line and "=" in line]
    assert checks and all("yes (check)" in line for line in checks), shown.stdout
    assert "note: normalized with anchors" not in flat  # the table has them
