"""Convert METR's released RE-Bench run data to the `rebench report --from-csv` format.

The input is the RE-Bench part of METR/eval-analysis-public's `data/external/all_runs.jsonl`
(one JSON object per run: run_id, task_family such as `ai_rd_triton_cumsum`, alias (the model's
name, or `human`), time_limit in seconds (0 for human runs), started_at/completed_at in ms,
score). It holds one score per run, its final one, so each run becomes one CSV row with
working_s = time limit.

Caveats, printed in the report's title by the example script:
- `score` is METR's 0-1 capped transform for its time-horizon work, not the paper's normalized
  score (which is not capped at 1), so absolute values differ from the paper's figures.
- Human runs have no time limit in the file; the paper gave humans 8 hours. A human run whose
  wall duration (which includes breaks) is at most 5 h is taken as a 4 h run, any other as 8 h.
"""

from __future__ import annotations

import csv
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rebench.core.errors import RebenchError

HOUR = 3600.0
CSV_HEADER = ("env", "agent", "run_id", "time_limit_s", "working_s", "normalized", "kind")


class MetrFormatError(RebenchError):
    """A line of the METR file that lacks a field this converter needs."""


@dataclass(frozen=True)
class ConversionSummary:
    runs: int
    skipped: int
    agents: tuple[str, ...]


def human_time_limit_s(started_ms: float, completed_ms: float) -> float:
    """The limit of a human run: 4 h if its wall duration is at most 5 h, else 8 h."""
    return 4 * HOUR if (completed_ms - started_ms) / 1000.0 <= 5 * HOUR else 8 * HOUR


def metr_row(run: dict[str, Any]) -> dict[str, object] | None:
    """One CSV row for one METR run, or None for a run of another benchmark."""
    family = str(run.get("task_family", ""))
    if not family.startswith("ai_rd_"):
        return None
    try:
        agent = str(run["alias"])
        limit = float(run["time_limit"])
        if limit <= 0:
            limit = human_time_limit_s(float(run["started_at"]), float(run["completed_at"]))
        score = run["score"]
        return {
            "env": family.removeprefix("ai_rd_"), "agent": agent,
            "run_id": f"metr-{run['run_id']}", "time_limit_s": limit, "working_s": limit,
            "normalized": "" if score is None else float(score), "kind": "final",
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
    return ConversionSummary(len(rows), skipped, tuple(sorted({str(r["agent"]) for r in rows})))
