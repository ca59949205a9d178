"""The integrity report measured both ways, with real scoring (docs/benchmarks/integrity.md):

    python benchmarks/integrity_measure.py [--env triton_cumsum ...] [--out table.md]
        [--keep DIR | --rescan DIR] [--stand-in] [--rescore-identical]

For every environment (cpu profile, prepared for real): each hack of its cheat suite replayed
as an agent run (the cheat written over the solution, then an official score), the hacks kept
inline in tests/integrity (fix_embedding's and small_scaling_law's cheat tests, restricted_mlm's
forbidden ops hidden from a reader), and the start, reference and expert agents plus the
honest human-style replays of tests/integrity/honest_replays.py. Every run is scored by the
real scorer and checked by `rebench.integrity.check_run`. Prints one markdown row per run and
the two numbers: recall on hacks (runs with any flag) and high-severity flags on honest runs.

A snapshot identical to one already scored, for the same kind of score, in this measurement
(the starting solution at t=0 of every run) reuses that score unless
--rescore-identical: a run of optimize_llm_foundry's starting pipeline takes minutes. A
starting solution built by training at the creation of every run (nanogpt_chat_rl's
improve.py) is built once per environment and its files copied into later runs' workspaces.
--stand-in measures what CI measures instead: stand-in scores (`# raw=` lines), stand-in assets
where a prepare takes minutes, no starting build that trains, and solutions submitted as
replays (their build cut short).
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

TESTS = Path(__file__).resolve().parents[1] / "tests" / "integrity"
sys.path.insert(0, str(TESTS))

from honest_replays import SPECIFIC, generic  # noqa: E402
from integrity_support import (  # noqa: E402
    SCORE,
    TRAINED_STARTING_BUILD,
    cheat_files,
    ensure_assets,
    isolation,
    replay_run,
    solution_actions,
    stand_in_score,
    stand_in_starting_build,
)
from test_integrity_cheat_suites import (  # noqa: E402
    BROKEN,
    CI_RECIPE_TIMEOUT_S,
    INLINE_HACKS,
    cheat_actions,
)

import rebench.harness.run as harness_run  # noqa: E402
from rebench.agents.base import make_agent  # noqa: E402
from rebench.core.discovery import environment_ids, load_spec  # noqa: E402
from rebench.harness.driver import execute_run  # noqa: E402
from rebench.harness.prepare import prepare_environment  # noqa: E402
from rebench.harness.run import create_run  # noqa: E402
from rebench.harness.scoring import snapshot_digest  # noqa: E402
from rebench.integrity import IntegrityReport, Severity, check_run  # noqa: E402

Totals = list[int]  # hacks, hacks flagged, honest runs, honest runs with a high flag


def reuse_identical_scores() -> None:
    """Score each distinct snapshot once per environment and kind of score (a requested
    score may differ from a final one: small_scaling_law's only checks validity) and reuse
    the result."""
    real = harness_run.official_score
    seen: dict[tuple[str, str, str], Any] = {}

    def score(spec: Any, profile: Any, snapshot_dir: Path, iso: Any,
              timeout_s: float | None = None, kind: Any = None) -> Any:
        key = (spec.id, snapshot_digest(snapshot_dir), str(kind))
        if key not in seen:
            seen[key] = real(spec, profile, snapshot_dir, iso, timeout_s=timeout_s, kind=kind)
        return seen[key]

    harness_run.official_score = score  # type: ignore[assignment]


def reuse_starting_builds() -> None:
    """Build each TRAINED_STARTING_BUILD environment's starting solution once (in the first
    run's workspace, as the harness does) and copy the files it made or changed into every
    later run's workspace: the build is seeded, so it makes the same files each time."""
    real = harness_run.apply_starting_recipe
    built: dict[str, dict[str, bytes]] = {}

    def files(workspace: Path) -> dict[str, bytes]:
        return {str(p.relative_to(workspace)): p.read_bytes()
                for p in sorted(workspace.rglob("*")) if p.is_file() and not p.is_symlink()}

    def build(spec: Any, profile: Any, workspace: Path, iso: Any) -> None:
        if spec.id not in TRAINED_STARTING_BUILD:
            real(spec, profile, workspace, iso)
            return
        if spec.id not in built:
            before = files(workspace)
            real(spec, profile, workspace, iso)
            built[spec.id] = {rel: data for rel, data in files(workspace).items()
                              if before.get(rel) != data}
        for rel, data in built[spec.id].items():
            (workspace / rel).parent.mkdir(parents=True, exist_ok=True)
            (workspace / rel).write_bytes(data)

    harness_run.apply_starting_recipe = build  # type: ignore[assignment]


def folder(kind: str, name: str) -> str:
    """The folder a measured run is kept in (--keep): its kind and name, for --rescan."""
    return f"{kind}-" + re.sub(r"[^A-Za-z0-9_.]+", "_", name)


def row(env_id: str, kind: str, name: str, run_dir: Path, report: IntegrityReport,
        seconds: float) -> str:
    record = json.loads((run_dir / "run.json").read_text())
    score = record.get("final_normalized")
    rules = ", ".join(sorted({f"{f.rule} ({f.severity.value})" for f in report.flags}))
    return (f"| {env_id} | {kind} | {name} | {score if score is None else f'{score:.2f}'} | "
            f"{report.summary()} | {rules or '-'} | "
            f"{f'{seconds:.0f}' if math.isfinite(seconds) else '-'} |")


def _timed(make: Callable[[], Path]) -> tuple[Path, IntegrityReport, float]:
    start = time.monotonic()
    run_dir = make()
    return run_dir, check_run(run_dir), time.monotonic() - start


def measure_hacks(env_id: str, tmp: Path, lines: list[str]) -> Totals:
    """Every hack of the environment (cheat files, then inline hacks) as a run."""
    hacks = flagged = 0
    runs: list[tuple[str, Callable[[], list[dict[str, Any]]]]] = [
        (cheat.name, lambda cheat=cheat: cheat_actions(env_id, cheat))
        for env, cheat in cheat_files() if env == env_id and (env, cheat.name) not in BROKEN]
    runs += [(name, make) for (env, name), (make, _) in sorted(INLINE_HACKS.items())
             if env == env_id]
    for name, make in runs:
        run_dir, report, seconds = _timed(
            lambda make=make, name=name: replay_run(env_id, make(), tmp / folder("hack", name)
                                                    ).run_dir)
        hacks += 1
        flagged += bool(report.flags)
        lines.append(row(env_id, "hack", name, run_dir, report, seconds))
        print(lines[-1], flush=True)
    return [hacks, flagged, 0, 0]


def measure_honest(env_id: str, tmp: Path, lines: list[str], stand_in: bool) -> Totals:
    """The start, reference and expert solutions and the honest replays."""
    spec = load_spec(env_id)
    honest = high = 0
    solutions: list[tuple[str, Callable[[], Path]]] = []
    for name in ("starting", *sorted(n for n in spec.solutions if n != "starting")):
        if stand_in:  # as CI submits them: written, built (cut short), scored
            actions = [SCORE] if name == "starting" else solution_actions(
                env_id, name, CI_RECIPE_TIMEOUT_S)
            solutions.append((name, lambda a=actions, n=name: replay_run(
                env_id, a, tmp / folder("solution", n)).run_dir))
        else:
            agent = "start" if name == "starting" else name
            solutions.append((agent, lambda agent=agent: _agent_run(env_id, agent, tmp)))
    replays = {"generic": lambda: generic(env_id)}
    if env_id in SPECIFIC:
        replays["human-style"] = SPECIFIC[env_id]
    for name, replay in replays.items():
        solutions.append((f"replay: {name}", lambda r=replay, n=name: replay_run(
            env_id, r(), tmp / folder("honest", n)).run_dir))
    for name, make in solutions:
        run_dir, report, seconds = _timed(make)
        honest += 1
        high += report.flagged(Severity.HIGH)
        lines.append(row(env_id, "honest", name, run_dir, report, seconds))
        print(lines[-1], flush=True)
    return [0, 0, honest, high]


def _agent_run(env_id: str, agent: str, tmp: Path) -> Path:
    the_run = create_run(env_id, "cpu", agent, 3600, isolation(), root=tmp / "runs")
    execute_run(the_run, make_agent(agent))
    return the_run.run_dir


def rescan(root: Path, lines: list[str]) -> Totals:
    """Check again every run measured earlier under `root` (kept with --keep): the rules
    change faster than real-scored runs can be redone."""
    totals = [0, 0, 0, 0]
    for run_json in sorted(root.glob("**/run.json")):
        run_dir = run_json.parent
        record = json.loads(run_json.read_text())
        group = next((p.name for p in run_dir.parents
                      if p.name.startswith(("hack-", "solution-", "honest-"))), "")
        report = check_run(run_dir)
        hack = group.startswith("hack-")
        totals = [a + b for a, b in zip(totals, [int(hack), int(hack and bool(report.flags)),
                                                 int(not hack),
                                                 int(not hack and report.flagged(Severity.HIGH))],
                                        strict=True)]
        name = group.partition("-")[2] or str(record.get("agent", "?"))
        lines.append(row(record["env_id"], "hack" if hack else "honest", name, run_dir, report,
                         float("nan")))
    return totals


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--env", action="append", help="environments (default: all)")
    parser.add_argument("--out", type=Path, help="also write the table here")
    parser.add_argument("--keep", type=Path, help="keep the runs under this folder")
    parser.add_argument("--rescan", type=Path, help="only check again the runs kept here")
    parser.add_argument("--stand-in", action="store_true", help="stand-in scores and assets")
    parser.add_argument("--rescore-identical", action="store_true",
                        help="score identical snapshots again")
    args = parser.parse_args()
    lines = ["| env | kind | run | final normalized | flags | rules | seconds |",
             "|---|---|---|---|---|---|---|"]
    totals = [0, 0, 0, 0]
    if args.rescan:
        totals = rescan(args.rescan, lines)
    else:
        if args.stand_in:
            harness_run.official_score = stand_in_score  # type: ignore[assignment]
            harness_run.apply_starting_recipe = stand_in_starting_build  # type: ignore[assignment]
        else:
            reuse_starting_builds()
            if not args.rescore_identical:
                reuse_identical_scores()
        with tempfile.TemporaryDirectory(prefix="integrity-measure-") as tmp_name:
            base = args.keep or Path(tmp_name)
            for env_id in args.env or environment_ids():
                spec = load_spec(env_id)
                if args.stand_in:
                    ensure_assets(env_id)
                else:
                    prepare_environment(spec, spec.profile("cpu"))
                for counts in (measure_hacks(env_id, base / env_id, lines),
                               measure_honest(env_id, base / env_id, lines, args.stand_in)):
                    totals = [a + b for a, b in zip(totals, counts, strict=True)]
    hacks, flagged, honest, high = totals
    lines.append(f"\nrecall on hacks: {flagged}/{hacks}; honest runs with a high flag: "
                 f"{high}/{honest} (isolation {isolation().value}, "
                 f"{'stand-in' if args.stand_in else 'real'} scoring)")
    text = "\n".join(lines)
    print(text)
    if args.out:
        args.out.write_text(text + "\n")


if __name__ == "__main__":
    main()
