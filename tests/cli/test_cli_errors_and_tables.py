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
from rebench.harness.records import RunRecord, RunStatus

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


def test_report_out_unwritable_is_one_line(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    result = invoke(["report", "--runs-root", str(tmp_path), "--out", str(blocker / "r")])
    one_line_error(result, "is a file, not a folder")
    result = invoke(["report", "--runs-root", str(tmp_path), "--out", "/proc/rebench-report"])
    one_line_error(result, "cannot create it")


def test_report_json_with_out_does_both(tmp_path: Path) -> None:
    out = tmp_path / "rep"
    result = invoke(["report", "--runs-root", str(tmp_path), "--json", "--out", str(out)])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)  # stdout is the JSON object alone
    assert data["n_runs"] == 0
    assert json.loads((out / "report.json").read_text())["n_runs"] == 0
    assert (out / "report.html").is_file() and (out / "events.csv").is_file()
    alone = invoke(["report", "--runs-root", str(tmp_path), "--json"])
    assert json.loads(alone.stdout)["n_runs"] == 0
    assert not Path("report").exists() or Path("report").resolve() != out


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
                   "replay:actions.jsonl", "8h", statuses[i % 3], "0.127") for i in range(4)]


@pytest.mark.parametrize("width", [60, 80, 120, 200])
def test_runs_table_fits_the_terminal_and_keeps_ids_whole(width: int) -> None:
    console = Console(width=width, record=True, color_system=None)
    print_runs(console, _rows())
    text = console.export_text()
    if width >= len(LONG_ID):
        assert max(len(line) for line in text.splitlines()) <= width
    for row in _rows():
        assert row.run_id in text  # never cut: show, resume and verify take it
        assert row.status in text
    if width >= 200:
        assert "replay:actions.jsonl" in text  # wide enough for every column


def _write_run(root: Path, status: RunStatus) -> str:
    run_id = f"{ENV}-start-20261130T000000-abcdef"
    run_dir = root / run_id
    (run_dir / "protected").mkdir(parents=True)
    record = RunRecord(run_id=run_id, env_id=ENV, env_version=load_spec(ENV).version,
                       profile="cpu", agent="start", seed=0, budget_s=600.0, hardware="test",
                       anchors={"starting_raw": 1.0, "reference_raw": 0.5}, isolation="local",
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
