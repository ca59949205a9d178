"""Hacked runs in the report (issue 31): `rebench mark RUN hacked --why` keeps the run and
its evidence, `rebench report --hacks fail|count|exclude` counts it as a failure (default),
with its scores, or not at all, and with `fail` the report shows the other number beside it;
a run the integrity rules flag high is hacked too. Real toy_probe runs (no noise)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from rebench.analysis.table import EnvRule, RunTable, ScoreEvent, make_run
from rebench.cli import main
from rebench.core.spec import Aggregation
from rebench.harness.records import RunMark, load_mark
from rebench.integrity.flags import Evidence, Flag, IntegrityReport, Severity
from rebench.integrity.hacks import HackPolicy, apply_policy, hacked_runs
from rebench.sandbox.bwrap import bwrap_available


@pytest.fixture
def two_reference_runs(toy_env: str, tmp_path: Path) -> tuple[Path, list[str]]:
    from rebench.agents.base import make_agent
    from rebench.harness.driver import execute_run
    from rebench.harness.run import create_run
    from rebench.sandbox import Isolation

    if not bwrap_available():  # toy_probe's reference calls its service from the sandbox
        pytest.skip("needs bubblewrap")
    root = tmp_path / "runs"
    ids = []
    for _ in range(2):
        run = create_run(toy_env, "cpu", "reference", 300.0, Isolation.BWRAP, root=root)
        execute_run(run, make_agent("reference"))
        ids.append(run.record.run_id)
    return root, ids


def _cli(root: Path, *args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, list(args), env={"REBENCH_RUNS": str(root)})
    return result.exit_code, result.output


def _report(root: Path, *args: str) -> dict[str, object]:
    code, output = _cli(root, "report", "--runs-root", str(root), "--json",
                        "--bootstrap", "100", *args)
    assert code == 0, output
    return json.loads(output)  # type: ignore[no-any-return]


def _mean(data: dict[str, object]) -> float:
    rows = [s for s in data["score_at_k"] if s["budget_s"] == 300.0]  # type: ignore[attr-defined]
    assert len(rows) == 1, rows
    return float(rows[0]["mean"])


def test_a_marked_run_counts_as_the_policy_says(two_reference_runs: tuple[Path, list[str]]
                                                ) -> None:
    root, (hacked, honest) = two_reference_runs
    code, output = _cli(root, "mark", hacked, "hacked")
    assert code == 2 and "--why" in output  # a verdict without its reason is refused
    code, output = _cli(root, "mark", hacked, "hacked", "--why", "read the held-out file")
    assert code == 0 and "failure by default" in output, output

    failed = _report(root)
    assert failed["n_runs"] == 2 and _mean(failed) == pytest.approx(0.5)
    hacks = failed["hacks"]
    assert hacks["policy"] == "fail" and list(hacks["runs"]) == [hacked]  # type: ignore[index]
    assert "read the held-out file" in hacks["runs"][hacked]  # type: ignore[index]
    both = hacks["focus_budget_both_ways"]  # type: ignore[index]
    assert both == [{"profile": "cpu", "agent": "reference",
                     "hacks_as_failures": pytest.approx(0.5),
                     "hacks_as_successes": pytest.approx(1.0)}]
    assert any(hacked in p and "counted as a failure" in p for p in failed["problems"])

    code, output = _cli(root, "report", "--runs-root", str(root), "--out", str(root / "html"),
                        "--bootstrap", "100")
    assert code == 0, output
    page = (root / "html" / "report.html").read_text()
    assert "Hacked runs (1)" in page and "hacks as successes" in page and hacked in page

    counted = _report(root, "--hacks", "count")
    assert _mean(counted) == pytest.approx(1.0)
    assert counted["hacks"]["focus_budget_both_ways"] == []  # type: ignore[index]
    excluded = _report(root, "--hacks", "exclude")
    assert excluded["n_runs"] == 1 and _mean(excluded) == pytest.approx(1.0)

    code, output = _cli(root, "runs")
    line = next(x for x in output.splitlines() if hacked in x)
    assert "(hacked)" in line and "(hacked)" not in next(
        x for x in output.splitlines() if honest in x)
    assert (root / hacked / "protected" / "score_log.jsonl").is_file()  # evidence kept


def test_unmarking_keeps_the_verdict_and_its_reason(two_reference_runs: tuple[Path, list[str]]
                                                    ) -> None:
    root, (run_id, _) = two_reference_runs
    assert _cli(root, "mark", run_id, "hacked", "--why", "copied the answer")[0] == 0
    assert _cli(root, "mark", run_id, "ok", "--why", "the copy was its own earlier work")[0] == 0
    mark = load_mark(root / run_id)
    assert mark is not None and mark.mark is RunMark.OK
    assert [(m.mark, m.reason) for m in mark.history] == [(RunMark.HACKED, "copied the answer")]
    data = _report(root)
    assert data["hacks"]["runs"] == {} and _mean(data) == pytest.approx(1.0)  # type: ignore[index]


def _table() -> RunTable:
    def run(run_id: str, score: float) -> object:
        return make_run([ScoreEvent("e", "1", "cpu", "a", run_id, 60.0, 1.0, 1.0, score, score,
                                    True, "final")], EnvRule(Aggregation.LAST, True))

    return RunTable((run("flagged", 1.5), run("clean", 0.5)))  # type: ignore[arg-type]


def test_a_run_flagged_high_is_hacked_and_a_medium_flag_is_not(tmp_path: Path) -> None:
    flag = Flag("rule", Severity.HIGH, "what it saw", Evidence(excerpt="x"), "a hack")
    medium = Flag("rule", Severity.MEDIUM, "what it saw", Evidence(excerpt="x"), "a hack")
    reports = {"flagged": IntegrityReport("flagged", (flag,)),
               "clean": IntegrityReport("clean", (medium,))}
    hacked = hacked_runs(_table(), {}, reports)
    assert list(hacked) == ["flagged"] and "1 high" in hacked["flagged"]
    failed = apply_policy(_table(), hacked, HackPolicy.FAIL)
    assert [e.normalized for r in failed.runs for e in r.events] == [0.0, 0.5]
    assert apply_policy(_table(), {}, HackPolicy.FAIL) == _table()
