"""What a new user sees from the `rebench` command: one-line errors with exit status 2 (bad
runs folder, unwritable --out, YAML syntax), tables that read at 80 columns, plain statuses,
--json with --out, a non-zero exit for an invalid score, and no folder left by a failed start."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from rich.console import Console

from rebench.cli import main
from rebench.cli_runs import RunRow, discard_unstarted_runs, print_runs
from rebench.core.discovery import load_spec
from rebench.core.normalize import Anchors, AnchorSource
from rebench.harness.records import RunRecord, RunStatus
from rebench.sandbox import Isolation

ENV = "triton_cumsum"
LONG_ID = "rust_codecontests_inference-replay-actions-jsonl-20261130T120000-a1b2c3"


def invoke(args: list[str], **env: str) -> Result:
    return CliRunner().invoke(main, args, env=env)


def one_line_error(result: Result, *needles: str) -> None:
    assert result.exit_code == 2, result.output
    text = result.stderr.strip()
    assert "Traceback" not in result.output
    assert text.startswith("error:") and len(text.splitlines()) == 1, text
    for needle in needles:
        assert needle in text, text


def test_runs_folder_under_a_file_or_unwritable_is_one_line(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    result = invoke(["run", ENV, "--agent", "start", "--isolation", "local"],
                    REBENCH_RUNS=str(blocker / "runs"))
    one_line_error(result, "is a file, not a folder", "REBENCH_RUNS")
    # /proc refuses new folders even to root
    result = invoke(["run", ENV, "--agent", "start", "--isolation", "local"],
                    REBENCH_RUNS="/proc/rebench-runs")
    one_line_error(result, "cannot create the runs folder /proc/rebench-runs")


def _one_run_csv(tmp_path: Path) -> Path:
    path = tmp_path / "runs.csv"
    path.write_text("env,agent,run_id,time_limit_s,working_s,normalized,profile\n"
                    "triton_cumsum,start,r1,600,600,0.0,cpu\n")
    return path


def test_report_out_unwritable_is_one_line(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    csv = str(_one_run_csv(tmp_path))
    result = invoke(["report", "--from-csv", csv, "--out", str(blocker / "r")])
    one_line_error(result, "is a file, not a folder")
    result = invoke(["report", "--from-csv", csv, "--out", "/proc/rebench-report"])
    one_line_error(result, "cannot create it")


def test_report_json_with_out_does_both(tmp_path: Path) -> None:
    out = tmp_path / "rep"
    csv = str(_one_run_csv(tmp_path))
    result = invoke(["report", "--from-csv", csv, "--json", "--out", str(out)])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)  # stdout is the JSON object alone
    assert data["n_runs"] == 1 and data["profile"] == "cpu"
    assert json.loads((out / "report.json").read_text())["n_runs"] == 1
    assert (out / "report.html").is_file() and (out / "events.csv").is_file()
    alone = invoke(["report", "--from-csv", csv, "--json"])
    assert json.loads(alone.stdout)["n_runs"] == 1
    assert not Path("report").exists() or Path("report").resolve() != out


def test_report_of_nothing_is_an_error_and_writes_nothing(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    runs.mkdir()
    result = invoke(["report", "--runs-root", str(runs)])
    one_line_error(result, "no runs to report in run directories under")
    assert list(runs.iterdir()) == []


def test_report_goes_into_the_runs_folder_by_default(tmp_path: Path) -> None:
    """Not ./report in the current folder (a checkout does not ignore it)."""
    csv = str(_one_run_csv(tmp_path))
    runs = tmp_path / "runs"
    result = invoke(["report", "--from-csv", csv], REBENCH_RUNS=str(runs))
    assert result.exit_code == 0, result.output
    assert (runs / "report" / "report.html").is_file()
    assert f"wrote {runs / 'report' / 'report.html'}" in result.output


def test_runs_of_a_missing_runs_folder_is_an_error(tmp_path: Path) -> None:
    result = invoke(["runs"], REBENCH_RUNS=str(tmp_path / "nowhere"))
    one_line_error(result, "no runs folder", str(tmp_path / "nowhere"))


def test_yaml_syntax_error_is_shown_as_written(tmp_path: Path) -> None:
    spec = tmp_path / "batch.yaml"
    spec.write_text("environments: [triton_cumsum\nagents: [start]\n")
    result = invoke(["batch", str(spec), "--isolation", "local"],
                    REBENCH_RUNS=str(tmp_path / "runs"))
    # the console must not eat `[...]` as markup
    one_line_error(result, "not valid YAML", "line 2, column 7", "expected ',' or ']'")


def _rows() -> list[RunRow]:
    statuses = ("finished", "interrupted (practice)", "running")
    return [RunRow(f"{LONG_ID[:-1]}{i}", "rust_codecontests_inference", "cpu",
                   "replay:actions.jsonl", "8h", statuses[i % 3], "agent-invalid", "0.127")
            for i in range(4)]


@pytest.mark.parametrize("width", [60, 80, 120, 200])
def test_runs_table_fits_the_terminal_and_keeps_ids_whole(width: int) -> None:
    console = Console(width=width, record=True, color_system=None, force_terminal=True)
    print_runs(console, _rows())
    text = console.export_text()
    if width >= len(LONG_ID):
        assert max(len(line) for line in text.splitlines()) <= width
    for row in _rows():
        assert row.run_id in text  # never cut: show, resume and verify take it
        assert row.status in text
    # every field at every width (two lines per run where the table does not fit)
    assert text.count("replay:actions.jsonl") == len(_rows())
    assert text.count("agent-invalid") == len(_rows())
    assert text.count("8h") == len(_rows())


def test_piped_runs_table_has_every_column_on_one_line_per_run() -> None:
    console = Console(width=80, record=True, color_system=None, force_terminal=False)
    print_runs(console, _rows())
    lines = [x for x in console.export_text().splitlines() if x.strip()]
    assert lines[0].split() == ["run", "id", "env", "profile", "agent", "budget", "status",
                                "outcome", "score"]
    for row in _rows():
        (line,) = [x for x in lines if row.run_id in x]
        assert "rust_codecontests_inference" in line and "replay:actions.jsonl" in line


def _write_run(root: Path, status: RunStatus) -> str:
    run_id = f"{ENV}-start-20261130T000000-abcdef"
    run_dir = root / run_id
    (run_dir / "protected").mkdir(parents=True)
    record = RunRecord(run_id=run_id, env_id=ENV, env_version=load_spec(ENV).version,
                       profile="cpu", agent="start", seed=0, budget_s=600.0, hardware="test",
                       anchors=Anchors(1.0, 0.5, AnchorSource.PROFILE_DEFAULT, "test"),
                       isolation=Isolation.LOCAL,
                       created_at="2026-11-30T00:00:00+00:00", status=status)
    (run_dir / "run.json").write_text(json.dumps(record.to_json()))
    return run_id


def test_show_prints_the_status_word(tmp_path: Path) -> None:
    run_id = _write_run(tmp_path, RunStatus.INTERRUPTED)
    result = invoke(["show", run_id], REBENCH_RUNS=str(tmp_path), COLUMNS="100")
    assert result.exit_code == 0, result.output
    assert "interrupted" in result.stdout and "RunStatus" not in result.stdout


def test_evaluate_exits_nonzero_for_an_invalid_score(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    from rebench.core.normalize import Anchors
    from rebench.core.score import ScoreResult
    from rebench.harness.evaluate import Evaluation

    anchors = Anchors.from_json({"starting_raw": 1.0, "reference_raw": 0.5,
                                 "source": "profile-default", "hardware": "test"})

    def fake(spec: object, profile: object, folder: Path, iso: object) -> Evaluation:
        return Evaluation(ENV, "cpu", ScoreResult.invalid("no solution.py in the folder"),
                          math.nan, anchors)

    monkeypatch.setattr("rebench.harness.evaluate.evaluate_folder", fake)
    empty = tmp_path / "empty"
    empty.mkdir()
    result = invoke(["evaluate", ENV, "--solution", str(empty), "--isolation", "local",
                     "--json"])
    assert result.exit_code == 1, result.output
    assert json.loads(result.stdout.splitlines()[0])["valid"] is False
    assert "invalid" in invoke(["evaluate", "--help"]).stdout


def test_failed_start_leaves_no_run_folder(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    result = invoke(["run", ENV, "--agent", "start", "--isolation", "local"],
                    REBENCH_RUNS=str(runs), REBENCH_CACHE=str(tmp_path / "empty-cache"))
    one_line_error(result, "is not prepared", "rebench prepare")
    assert not runs.exists() or not any(runs.iterdir())


def test_discard_unstarted_runs_removes_only_half_made_folders(tmp_path: Path) -> None:
    (tmp_path / "older-without-json").mkdir()
    with pytest.raises(RuntimeError), discard_unstarted_runs(tmp_path):
        (tmp_path / "half-made" / "protected").mkdir(parents=True)
        (tmp_path / "complete").mkdir()
        (tmp_path / "complete" / "run.json").write_text("{}")
        raise RuntimeError("populate failed")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["complete", "older-without-json"]


def test_score_message_is_one_line_of_pairs() -> None:
    from rebench.cli_tables import message_text

    text = message_text({"valid": True, "seconds": 12.345678901, "reason": "timeout",
                         "flags": [1, 2]})
    assert text == 'valid=true seconds=12.3457 reason=timeout flags=[1, 2]'


def test_batch_table_keeps_every_run_id_whole_at_80_columns() -> None:
    from rebench.cli_tables import print_outcomes
    from rebench.harness.batch import BatchJob, BatchOutcome

    job = BatchJob("rust_codecontests_inference", "cpu", "replay:actions.jsonl", 3, 28800.0)
    outcomes = [BatchOutcome(job, run_id=f"{LONG_ID[:-1]}{i}", state="finished",
                             final_normalized=0.5) for i in range(2)]
    console = Console(width=80, record=True, color_system=None, force_terminal=True)
    print_outcomes(console, outcomes)
    text = console.export_text()
    for o in outcomes:
        assert o.run_id in text.replace("\n", "") and "seed=3" in text
