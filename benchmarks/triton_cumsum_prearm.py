"""Issue 26, class 8 on the GPU: does work armed before the clock still gain?

Scores two twins of the reference's Triton kernels through the official scorer
(`official_score`, bwrap isolation by default), `--runs` times each, alternating the order
every round so that drift of the machine hits both alike:

- honest: benchmarks/triton_cumsum_prearm_solution.py with ARMED_SLOTS = 0;
- prearmed: the same file with ARMED_SLOTS = --slots: after each call it leaves the next
  batch's work for one slot waiting on the GPU for that slot's input (see the file).

(`--with-reference` adds the shipped reference as a third arm.) Reports per arm the median
ms and raw, the SD of raw (the scorer's noise), the normalized scores under the profile's
anchors, how many calls the armed work served (parsed from the child's `prearm:` line in
the private details: zero means the arming did not happen and the comparison shows
nothing), and the difference of the medians against the noise. Writes prearm.json and
prearm.md to --out after every scoring, so a run cut short keeps what it measured.

    PYTHONPATH=$PWD/src python benchmarks/triton_cumsum_prearm.py --out $OUT [--runs 6]

Environment 1.2.0 (inputs drawn before the clock) measured the prearmed kind at about 17%
faster than honest (normalized 1.15 against 1.0); 1.3.0 draws them inside the clock.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
ENV_DIR = ROOT / "src" / "rebench" / "environments" / "triton_cumsum"
SOLUTION = Path(__file__).resolve().parent / "triton_cumsum_prearm_solution.py"
LINE = re.compile(r"prearm: (.*)$", re.MULTILINE)


def make_twin(dest: Path, slots: int) -> Path:
    """A workspace with the twin armed for `slots` slots (0: honest) and scan_gpu.py."""
    dest.mkdir(parents=True)
    text = SOLUTION.read_text()
    text, count = re.subn(r"^ARMED_SLOTS = \d+(?=  #)", f"ARMED_SLOTS = {slots}", text,
                          flags=re.MULTILINE)
    if count != 1:
        raise RuntimeError("ARMED_SLOTS line not found in the solution template")
    (dest / "solution.py").write_text(text)
    shutil.copy(ENV_DIR / "reference" / "scan_gpu.py", dest / "scan_gpu.py")
    return dest


def make_reference(dest: Path) -> Path:
    """The shipped reference solution as a workspace."""
    shutil.copytree(ENV_DIR / "reference", dest)
    return dest


def prearm_stats(details: dict[str, Any]) -> dict[str, int]:
    """The last `prearm:` line the child printed (private details), as numbers."""
    found = LINE.findall(str(details.get("child_log_tail") or ""))
    if not found:
        return {}
    pairs = (item.split("=", 1) for item in found[-1].split())
    return {key: int(value) for key, value in pairs if value.lstrip("-").isdigit()}


def score_once(spec: Any, profile: Any, workspace: Path, isolation: Any,
               tag: str) -> dict[str, Any]:
    """One official scoring of `workspace`: the agent-visible result and a few private
    details (draw and preparation times, the child's prearm counts)."""
    from rebench.harness.scoring import official_score, snapshot_solution

    snap = workspace.parent / f"snap-{tag}"
    snapshot_solution(spec, workspace, snap)
    began = time.monotonic()
    result = official_score(spec, profile, snap, isolation)
    details = result.details
    draw = details.get("draw_ms") or []
    return {
        "valid": result.valid, "raw": result.raw if result.valid else None,
        "ms": result.message.get("ms"), "message": result.message,
        "detail": details.get("detail"), "wall_s": round(time.monotonic() - began, 1),
        "prep_waited_ms_max": details.get("prep_waited_ms_max"),
        "draw_ms_median": round(statistics.median(draw), 4) if draw else None,
        "load_after": details.get("load_after"), "prearm": prearm_stats(details),
    }


def summarize(rows: list[dict[str, Any]], anchors: Any, direction: Any) -> dict[str, Any]:
    """Median ms/raw, SD of raw, normalized median, validity and prearm totals of an arm."""
    from rebench.core.normalize import normalize

    raws = [r["raw"] for r in rows if r["valid"]]
    med = statistics.median(raws) if raws else None
    armed = [r["prearm"].get("armed_calls", 0) for r in rows]
    return {
        "scorings": len(rows), "valid": len(raws), "raws": [round(r, 5) for r in raws],
        "median_raw": med, "median_ms": math.exp(med) if med is not None else None,
        "sd_raw": statistics.stdev(raws) if len(raws) > 1 else None,
        "normalized_median": normalize(med, anchors, direction) if med is not None else None,
        "armed_calls": armed, "ready_at_entry": [r["prearm"].get("ready_at_entry", 0)
                                                 for r in rows],
        "arm_errors": [r["prearm"].get("arm_errors", 0) for r in rows],
        "invalid_reasons": [r["message"].get("reason") for r in rows if not r["valid"]],
    }


def compare(honest: dict[str, Any], prearmed: dict[str, Any]) -> dict[str, Any]:
    """Difference of the medians (prearmed - honest; negative: prearmed faster) against
    the scorer's noise: the SD of raw of one scoring, and the standard error of a
    difference of two medians (1.2533 x SE of the mean, normal approximation)."""
    if honest["median_raw"] is None or prearmed["median_raw"] is None:
        return {"verdict": "no comparison: an arm has no valid scoring"}
    diff = prearmed["median_raw"] - honest["median_raw"]
    sds = [s for s in (honest["sd_raw"], prearmed["sd_raw"]) if s is not None]
    noise = statistics.mean(sds) if sds else math.nan
    se = 1.2533 * math.sqrt(sum((s or 0.0) ** 2 / max(1, a["valid"])
                                for s, a in ((honest["sd_raw"], honest),
                                             (prearmed["sd_raw"], prearmed))))
    used = sum(prearmed["armed_calls"]) > 0
    within = abs(diff) < noise if math.isfinite(noise) else False
    verdict = ("armed work was never used: the arming failed, nothing is shown"
               if not used else
               f"prearmed - honest = {diff:+.4f} raw ({math.expm1(diff):+.1%} in ms); "
               f"noise (SD of raw per scoring) {noise:.4f}; SE of the difference {se:.4f}: "
               + ("within the noise" if within else "OUTSIDE the noise"))
    return {"diff_raw": diff, "diff_ms_fraction": math.expm1(diff), "noise_sd_raw": noise,
            "se_diff": se, "armed_work_used": used, "within_noise": within and used,
            "verdict": verdict}


def write_report(out: Path, report: dict[str, Any]) -> None:
    """prearm.json (everything) and prearm.md (the table and the verdict)."""
    out.mkdir(parents=True, exist_ok=True)
    (out / "prearm.json").write_text(json.dumps(report, indent=1, default=str))
    lines = [f"# triton_cumsum: pre-armed work against its honest twin ({report['date']})", "",
             f"{report['hardware']}, spec {report['spec_version']}, isolation "
             f"{report['isolation']}, {report['runs']} scorings per arm, armed slots "
             f"{report['slots']}, anchors {report['anchors']}", "",
             "| arm | valid | median ms | median raw | SD raw | normalized | armed calls "
             "(per scoring) | ready at entry |",
             "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for name, arm in report.get("summary", {}).items():
        lines.append(
            f"| {name} | {arm['valid']}/{arm['scorings']} | {_f(arm['median_ms'])} | "
            f"{_f(arm['median_raw'])} | {_f(arm['sd_raw'])} | {_f(arm['normalized_median'])} "
            f"| {arm['armed_calls']} | {arm['ready_at_entry']} |")
    lines += ["", f"**{report.get('comparison', {}).get('verdict', 'incomplete')}**", ""]
    for name, rows in report["rows"].items():
        lines.append(f"- {name} raws: " + ", ".join(_f(r["raw"]) for r in rows))
    (out / "prearm.md").write_text("\n".join(lines) + "\n")


def _f(value: float | None) -> str:
    return "-" if value is None else f"{value:.4f}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True, help="folder for the results")
    parser.add_argument("--runs", type=int, default=6, help="official scorings per arm")
    parser.add_argument("--slots", type=int, default=6, help="slots armed per batch")
    parser.add_argument("--isolation", choices=("local", "bwrap"), default="bwrap")
    parser.add_argument("--with-reference", action="store_true")
    args = parser.parse_args()
    os.environ.setdefault("REBENCH_CACHE", tempfile.mkdtemp(prefix="rebench-cache-"))
    from rebench.core.calibration import resolve_anchors
    from rebench.core.discovery import load_spec
    from rebench.core.hardware import fingerprint
    from rebench.harness.prepare import prepare_environment
    from rebench.sandbox import Isolation

    spec = load_spec("triton_cumsum")
    profile = spec.profile("gpu")
    prepare_environment(spec, profile)
    anchors = resolve_anchors(spec, profile)
    work = Path(tempfile.mkdtemp(prefix="tc-prearm-"))
    arms = {"honest": make_twin(work / "honest", 0),
            "prearmed": make_twin(work / "prearmed", args.slots)}
    if args.with_reference:
        arms["reference"] = make_reference(work / "reference")
    report: dict[str, Any] = {
        "hardware": fingerprint(profile.gpus), "spec_version": spec.version,
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "runs": args.runs,
        "slots": args.slots, "isolation": args.isolation,
        "anchors": f"{anchors.starting_raw:.4f} -> {anchors.reference_raw:.4f}",
        "rows": {name: [] for name in arms},
    }
    names = list(arms)
    for i in range(args.runs):
        for name in names if i % 2 == 0 else names[::-1]:
            row = score_once(spec, profile, arms[name], Isolation(args.isolation),
                             f"{name}-{i}")
            report["rows"][name].append(row)
            print(f"{name} #{i + 1}: {row['message']} prearm {row['prearm']} "
                  f"draw {row['draw_ms_median']} ms wall {row['wall_s']} s", flush=True)
            report["summary"] = {n: summarize(rows, anchors, spec.direction)
                                 for n, rows in report["rows"].items() if rows}
            if "honest" in report["summary"] and "prearmed" in report["summary"]:
                report["comparison"] = compare(report["summary"]["honest"],
                                               report["summary"]["prearmed"])
            write_report(args.out, report)
    print((args.out / "prearm.md").read_text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
