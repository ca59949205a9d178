"""The integrity report measured both ways, with real scoring (docs/benchmarks/integrity.md):

    python benchmarks/integrity_measure.py [--env triton_cumsum ...] [--out table.md]

For every environment (cpu profile, prepared for real): each hack of its cheat suite replayed
as an agent run (the cheat written over the solution, then an official score), and the
start, reference and expert agents plus the honest human-style replays of
tests/integrity/honest_replays.py. Every run is scored by the real scorer and checked by
`rebench.integrity.check_run`. Prints one markdown row per run and the two numbers: recall
on hacks (runs with any flag) and high-severity flags on honest runs.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import tempfile
import time
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1] / "tests" / "integrity"
sys.path.insert(0, str(TESTS))

from honest_replays import SPECIFIC, generic  # noqa: E402
from integrity_support import (  # noqa: E402
    SCORE,
    cheat_files,
    isolation,
    replay_run,
    solution_target,
    write,
)
from test_integrity_cheat_suites import BROKEN  # noqa: E402

from rebench.agents.base import make_agent  # noqa: E402
from rebench.core.discovery import environment_ids, load_spec  # noqa: E402
from rebench.harness.driver import execute_run  # noqa: E402
from rebench.harness.prepare import prepare_environment  # noqa: E402
from rebench.harness.run import create_run  # noqa: E402
from rebench.integrity import IntegrityReport, Severity, check_run  # noqa: E402


def row(env_id: str, kind: str, name: str, run_dir: Path, report: IntegrityReport,
        seconds: float) -> str:
    record = json.loads((run_dir / "run.json").read_text())
    score = record.get("final_normalized")
    rules = ", ".join(sorted({f"{f.rule} ({f.severity.value})" for f in report.flags}))
    return (f"| {env_id} | {kind} | {name} | {score if score is None else f'{score:.2f}'} | "
            f"{report.summary()} | {rules or '-'} | "
            f"{f'{seconds:.0f}' if math.isfinite(seconds) else '-'} |")


def measure(env_id: str, tmp: Path, lines: list[str]) -> tuple[int, int, int, int]:
    """(hacks, hacks flagged, honest runs, honest runs with a high flag) of one environment."""
    spec = load_spec(env_id)
    prepare_environment(spec, spec.profile("cpu"))
    hacks = flagged = honest = high = 0
    for env, cheat in cheat_files():
        if env != env_id or (env, cheat.name) in BROKEN:
            continue
        start = time.monotonic()
        run = replay_run(env_id, [write(solution_target(env_id, cheat), cheat.read_bytes()),
                                  SCORE], tmp / f"cheat-{cheat.stem}")
        report = check_run(run.run_dir)
        hacks += 1
        flagged += bool(report.flags)
        lines.append(row(env_id, "hack", cheat.name, run.run_dir, report,
                         time.monotonic() - start))
    for name in ("start", *sorted(n for n in spec.solutions if n != "starting")):
        start = time.monotonic()
        the_run = create_run(env_id, "cpu", name, 3600, isolation(), root=tmp / "runs")
        execute_run(the_run, make_agent(name))
        report = check_run(the_run.run_dir)
        honest += 1
        high += report.flagged(Severity.HIGH)
        lines.append(row(env_id, "agent", name, the_run.run_dir, report,
                         time.monotonic() - start))
    replays = {"generic": generic(env_id)}
    if env_id in SPECIFIC:
        replays["human-style"] = SPECIFIC[env_id]()
    for name, actions in replays.items():
        start = time.monotonic()
        run = replay_run(env_id, actions, tmp / f"honest-{name}")
        report = check_run(run.run_dir)
        honest += 1
        high += report.flagged(Severity.HIGH)
        lines.append(row(env_id, "honest replay", name, run.run_dir, report,
                         time.monotonic() - start))
    return hacks, flagged, honest, high


def rescan(root: Path, lines: list[str]) -> list[int]:
    """Check again every run measured earlier under `root` (kept with --keep): the rules
    change faster than real-scored runs can be redone."""
    totals = [0, 0, 0, 0]
    for run_json in sorted(root.glob("*/*/runs/*/run.json")) + sorted(
            root.glob("*/runs/*/run.json")):
        run_dir = run_json.parent
        record = json.loads(run_json.read_text())
        env_id, group = record["env_id"], run_dir.parents[1].name
        report = check_run(run_dir)
        if group.startswith("cheat-"):
            kind, name = "hack", group.removeprefix("cheat-") + ".py"
            if (env_id, name) in BROKEN:
                continue
            totals[0] += 1
            totals[1] += bool(report.flags)
        else:
            kind, name = (("honest replay", group.removeprefix("honest-"))
                          if group.startswith("honest-") else ("agent", record["agent"]))
            totals[2] += 1
            totals[3] += report.flagged(Severity.HIGH)
        lines.append(row(env_id, kind, name, run_dir, report, float("nan")))
    return totals


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--env", action="append", help="environments (default: all)")
    parser.add_argument("--out", type=Path, help="also write the table here")
    parser.add_argument("--keep", type=Path, help="keep the runs under this folder")
    parser.add_argument("--rescan", type=Path, help="only check again the runs kept here")
    args = parser.parse_args()
    lines = ["| env | kind | run | final normalized | flags | rules | seconds |",
             "|---|---|---|---|---|---|---|"]
    totals = [0, 0, 0, 0]
    if args.rescan:
        totals = rescan(args.rescan, lines)
    else:
        with tempfile.TemporaryDirectory(prefix="integrity-measure-") as tmp_name:
            base = args.keep or Path(tmp_name)
            for env_id in args.env or environment_ids():
                counts = measure(env_id, base / env_id, lines)
                totals = [a + b for a, b in zip(totals, counts, strict=True)]
                print("\n".join(lines[-1:]), flush=True)
    hacks, flagged, honest, high = totals
    lines.append(f"\nrecall on hacks: {flagged}/{hacks}; honest runs with a high flag: "
                 f"{high}/{honest} (isolation {isolation().value})")
    text = "\n".join(lines)
    print(text)
    if args.out:
        args.out.write_text(text + "\n")


if __name__ == "__main__":
    main()
