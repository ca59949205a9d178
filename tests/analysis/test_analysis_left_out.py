"""Which runs the report counts: interrupted, crashed, early-ended human and operator-marked
runs are left out by default (listed with the reason) and counted with --include; local human
runs are labelled apart from the published humans, and show in the tables on any environment."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from click.testing import CliRunner

from rebench.analysis.report import ReportSettings, build_report
from rebench.analysis.sources import LOCAL_HUMAN, LeftOut, from_run_dirs
from rebench.cli_report import report
from rebench.harness.records import RunStatus

WriteRun = Callable[..., Path]
HOUR = 3600.0


def _json(runs_dir: Path, *extra: str) -> dict[str, object]:
    result = CliRunner().invoke(report, ["--runs-root", str(runs_dir), "--json",
                                         "--bootstrap", "100", *extra])
    assert result.exit_code == 0, result.output
    data: dict[str, object] = json.loads(result.stdout)
    return data


def _run_ids(data: dict[str, object]) -> set[str]:
    runs = data["runs"]
    assert isinstance(runs, list)
    return {r["run_id"] for r in runs}


def test_interrupted_and_crashed_runs_are_left_out_and_listed(
    runs_dir: Path, make_run: WriteRun
) -> None:
    make_run("ok", "triton_cumsum", "start", 600.0, [(0.0, 0.0), (600.0, 0.2)])
    make_run("cut", "triton_cumsum", "start", 600.0, [(0.0, 0.0), (30.0, 0.9)],
             status=RunStatus.INTERRUPTED)
    make_run("boom", "triton_cumsum", "start", 600.0, [(0.0, 0.0), (600.0, 0.0)],
             extra={"agent_traceback": "Traceback ...\nRuntimeError: model API down"})
    data = _json(runs_dir)
    assert _run_ids(data) == {"ok"}
    problems = "\n".join(str(p) for p in data["problems"])  # type: ignore[attr-defined]
    assert "cut: interrupted before its final score" in problems
    assert "--include interrupted" in problems
    assert "boom: crashed" in problems
    both = _json(runs_dir, "--include", "interrupted", "--include", "crashed")
    assert _run_ids(both) == {"ok", "cut", "boom"}


def test_a_human_run_ended_in_minutes_is_not_a_full_budget_attempt(
    runs_dir: Path, make_run: WriteRun
) -> None:
    make_run("left", "triton_cumsum", "human", 8 * HOUR, [(0.0, 0.0), (90.0, 0.0)])
    make_run("full", "triton_cumsum", "human", 8 * HOUR, [(0.0, 0.0), (7.5 * HOUR, 0.7)])
    # an agent that submits early made its attempt: counting it is the honest reading
    make_run("quick", "triton_cumsum", "start", 8 * HOUR, [(0.0, 0.0), (90.0, 0.0)])
    table = from_run_dirs(runs_dir)
    assert {r.run_id for r in table.runs} == {"full", "quick"}
    (note,) = [p for p in table.problems if p.startswith("left:")]
    assert "ended after 1.5m of its 8h budget" in note
    assert {r.run_id for r in from_run_dirs(runs_dir, include=frozenset({LeftOut.EARLY})).runs} \
        == {"left", "full", "quick"}


def test_operator_marks_through_the_command(runs_dir: Path, make_run: WriteRun,
                                            monkeypatch: object) -> None:
    from rebench.cli import main

    make_run("p1", "triton_cumsum", "start", 600.0, [(0.0, 0.0), (600.0, 0.1)])
    make_run("a1", "triton_cumsum", "start", 600.0, [(0.0, 0.0), (600.0, 0.3)])
    env = {"REBENCH_RUNS": str(runs_dir)}
    runner = CliRunner()
    done = runner.invoke(main, ["mark", "p1", "practice", "--reason", "trying the terminal"],
                         env=env)
    assert done.exit_code == 0, done.output
    assert "left out of reports by default" in done.output
    assert runner.invoke(main, ["mark", "a1", "aborted"], env=env).exit_code == 0
    data = _json(runs_dir)
    assert _run_ids(data) == set()
    problems = "\n".join(str(p) for p in data["problems"])  # type: ignore[attr-defined]
    assert "p1: marked practice (trying the terminal)" in problems
    assert "a1: marked aborted" in problems
    assert _run_ids(_json(runs_dir, "--include", "practice")) == {"p1"}
    assert runner.invoke(main, ["mark", "a1", "ok"], env=env).exit_code == 0
    assert _run_ids(_json(runs_dir)) == {"a1"}
    bad = runner.invoke(main, ["mark", "nope", "practice"], env=env)
    assert bad.exit_code == 2 and "no run 'nope'" in bad.output
    wrong = runner.invoke(main, ["mark", "a1", "finished"], env=env)
    assert wrong.exit_code == 2  # not a mark: click's usage error


def test_local_humans_are_labelled_and_appear_on_every_environment(
    runs_dir: Path, make_run: WriteRun
) -> None:
    # a human baseline on rust (8 h) and short runs on triton: the best allocation at 8 h is
    # 16 x 30m on triton alone, yet the rust run must still show in the per-env table
    make_run("h-rust", "rust_codecontests_inference", "human", 8 * HOUR,
             [(0.0, 0.0), (8 * HOUR, 0.4)])
    for i in range(2):
        make_run(f"h-tri-{i}", "triton_cumsum", "human", 1800.0,
                 [(0.0, 0.0), (1800.0, 0.9)])
        make_run(f"s-rust-{i}", "rust_codecontests_inference", "start", 8 * HOUR,
                 [(0.0, 0.0), (8 * HOUR, 0.0)])
    result = build_report(from_run_dirs(runs_dir), ReportSettings(n_boot=100))
    assert LOCAL_HUMAN in result.table.agents() and "human" not in result.table.agents()
    (human,) = [s for s in result.focus if s.agent == LOCAL_HUMAN]
    shown = {e.env_id for e in human.per_env} | {
        e.env_id for e in result.focus_fill if e.agent == LOCAL_HUMAN}
    assert shown == {"rust_codecontests_inference", "triton_cumsum"}
    data = _json(runs_dir)
    per_env = data["per_environment"]
    assert isinstance(per_env, list)
    rust = [e for e in per_env if e["agent"] == LOCAL_HUMAN
            and e["env"] == "rust_codecontests_inference"]
    assert rust and rust[0]["score"] == 0.4


def test_page_labels_published_humans_apart_from_local_runs(
    tmp_path: Path, runs_dir: Path, make_run: WriteRun
) -> None:
    from rebench.analysis.html import render_html

    make_run("h1", "triton_cumsum", "human", 8 * HOUR, [(0.0, 0.0), (8 * HOUR, 0.5)],
             profile="gpu")
    page = render_html(build_report(from_run_dirs(runs_dir), ReportSettings(n_boot=100)), {})
    assert "human (local)" in page
    assert "human best, published" in page and "human mean 7-9 h, published" in page
