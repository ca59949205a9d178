"""Whether a score says it was taken on a busy machine: each environment's reference scored
officially (default isolation) on the quiet machine, then beside 1 and 2 busy loops
started before the scoring. Per scoring: the solution's raw score, the scorer's wall
seconds, the 1-minute load before and after, what harness/contention.py sampled (the
scorer's runnable threads, other work's, the hypervisor's steal), and both verdicts: the
sampled rule's (`contended`) and the load-average rule's it replaced (load above the cores
at either end). Writes a markdown table (docs/benchmarks/contention.md holds results).

    REBENCH_CACHE=DIR python benchmarks/contention_detect.py --out docs/benchmarks/x.md \
        [--env optimize_llm_foundry ...] [--hogs 0 1 2] [--settle 20]
"""

from __future__ import annotations

import argparse
import multiprocessing
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

from rebench.core.discovery import environment_ids, load_spec
from rebench.core.hardware import fingerprint
from rebench.harness.evaluate import score_folder
from rebench.harness.prepare import prepare_environment
from rebench.harness.workspace import materialize_solution
from rebench.sandbox import default_isolation


def _spin() -> None:
    while True:
        pass


def _row(env_id: str, hogs: int, workspace: Path, settle_s: float) -> str:
    spec = load_spec(env_id)
    profile = spec.profile("cpu")
    time.sleep(settle_s)  # the last scoring's threads out of the load average, mostly
    spinners = [multiprocessing.Process(target=_spin, daemon=True) for _ in range(hogs)]
    for proc in spinners:
        proc.start()
    if hogs:
        time.sleep(2.0)
    try:
        result = score_folder(spec, profile, workspace, default_isolation())
    finally:
        for proc in spinners:
            proc.kill()
            proc.join()
    d = result.details
    load_rule = max(float(d["load_before"]), float(d["load_after"])) > int(d["cores"])
    return (f"| {env_id} | {hogs} | {result.raw:.3f} | {d['scoring_wall_s']} | "
            f"{d['load_before']} / {d['load_after']} | {d['runnable_own']} | "
            f"{d['runnable_others']} | {d['steal_share']} | "
            f"{'yes' if d['contended'] else 'no'} | {'yes' if load_rule else 'no'} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--env", nargs="*", default=None)
    parser.add_argument("--hogs", nargs="*", type=int, default=[0, 1, 2])
    parser.add_argument("--settle", type=float, default=20.0)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    env_ids = args.env or [e for e in environment_ids() if not e.startswith("toy")]
    lines = [f"Measured {datetime.now(UTC):%Y-%m-%d %H:%M} UTC on {fingerprint(0)}, "
             "official scorings of each reference (cpu profile, default isolation).", "",
             "| environment | busy loops | raw | scorer wall s | load before / after | "
             "own runnable | others runnable | steal | contended | load rule |",
             "| --- | ---: | ---: | ---: | --- | ---: | ---: | ---: | --- | --- |"]
    with tempfile.TemporaryDirectory(prefix="rebench-contention-") as tmp:
        for env_id in env_ids:
            spec = load_spec(env_id)
            profile = spec.profile("cpu")
            prepare_environment(spec, profile)
            workspace = materialize_solution(spec, profile, "reference",
                                             Path(tmp) / env_id, default_isolation())
            for hogs in args.hogs:
                lines.append(_row(env_id, hogs, workspace, args.settle))
                print(lines[-1], flush=True)
    args.out.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
