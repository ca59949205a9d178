"""Convert METR's released RE-Bench run data to the `rebench report --from-csv` format.

The input is the RE-Bench part of METR/eval-analysis-public's `data/external/all_runs.jsonl`
(one JSON object per run: run_id, task_family such as `ai_rd_triton_cumsum`, alias (the model's
name, or `human`), time_limit in seconds (0 for human runs), started_at/completed_at in ms,
score). It holds one score per run, its final one, so each run becomes one CSV row with
working_s = time limit.

Caveats, printed in the report's title by the example script:
- `score` is METR's 0-1 capped transform for its time-horizon work, not the paper's
  normalized score (which is not capped at 1), and it cannot be converted back; the CSV says
  so (column scale = metr_capped), and the report then draws no paper-scale reference (the
  paper's human mean, Table 5) on the same axis as these scores.
- Human runs have no time limit in the file; the limit is read off the wall duration, which
  includes breaks: at most 4.5 h -> 4 h (METR's few 4 h runs end at 3.98 h), at most 10 h ->
  8 h (the paper's limit; METR's human means take 7-9 h runs), longer -> left out (ceiling
  attempts of days, or runs with long breaks: their limit is unknown).
- Human runs are named `human (METR runs)`: a baseline in the data, apart from the paper's
  published human facts and from local `human` runs.
"""

from __future__ import annotations

import csv
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rebench.core.errors import RebenchError

HOUR = 3600.0
CSV_HEADER = ("env", "agent", "run_id", "time_limit_s", "working_s", "normalized", "kind",
              "scale", "left_out")
METR_HUMAN = "human (METR runs)"
# (longest wall duration, time limit) of human runs, in hours; see the module docstring.
HUMAN_LIMIT_BINS = ((4.5, 4.0), (10.0, 8.0))


class MetrFormatError(RebenchError):
    """A line of the METR file that lacks a field this converter needs."""


@dataclass(frozen=True)
class ConversionSummary:
    runs: int
    skipped: int
    agents: tuple[str, ...]
    left_out: int = 0


def human_time_limit_s(started_ms: float, completed_ms: float) -> float | None:
    """The limit of a human run from its wall duration (HUMAN_LIMIT_BINS), or None when it
    is longer than any limit."""
    hours = (completed_ms - started_ms) / 1000.0 / HOUR
    return next((limit * HOUR for top, limit in HUMAN_LIMIT_BINS if hours <= top), None)


def metr_row(run: dict[str, Any]) -> dict[str, object] | None:
    """One CSV row for one METR run, or None for a run of another benchmark."""
    family = str(run.get("task_family", ""))
    if not family.startswith("ai_rd_"):
        return None
    try:
        agent = str(run["alias"])
        limit: float | None = float(run["time_limit"])
        left_out = ""
        if not limit or limit <= 0:
            agent = METR_HUMAN if agent == "human" else agent
            limit = human_time_limit_s(float(run["started_at"]), float(run["completed_at"]))
            if limit is None:
                hours = (float(run["completed_at"]) - float(run["started_at"])) / 3.6e6
                left_out = (f"human run of {hours:.1f} h wall time, longer than any limit "
                            "(a ceiling attempt or long breaks): its limit is unknown")
                limit = 8 * HOUR
        score = run["score"]
        return {
            "env": family.removeprefix("ai_rd_"), "agent": agent,
            "run_id": f"metr-{run['run_id']}", "time_limit_s": limit, "working_s": limit,
            "normalized": "" if score is None else float(score), "kind": "final",
            "scale": "metr_capped", "left_out": left_out,
        }
    except (KeyError, TypeError, ValueError) as exc:
        raise MetrFormatError(f"run {run.get('run_id')!r}: {exc!r}") from exc


def convert_metr_runs(source: Path, dest: Path) -> ConversionSummary:
    """Write `dest` (CSV for --from-csv) from METR's all_runs.jsonl (or its RE-Bench rows)."""
    rows: list[dict[str, object]] = []
    skipped = 0
    for line in source.read_text().splitlines():
        if not line.strip():
            continue
        row = metr_row(json.loads(line))
        if row is None:
            skipped += 1
        else:
            rows.append(row)
    with dest.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=CSV_HEADER)
        writer.writeheader()
        writer.writerows(rows)
    return ConversionSummary(len(rows), skipped, tuple(sorted({str(r["agent"]) for r in rows})),
                             sum(bool(r["left_out"]) for r in rows))
