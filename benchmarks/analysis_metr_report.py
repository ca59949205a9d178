"""Example: METR's released RE-Bench runs -> --from-csv -> `rebench report`.

    python benchmarks/analysis_metr_report.py PATH/all_runs.jsonl --out report-metr

PATH/all_runs.jsonl is METR/eval-analysis-public's data/external/all_runs.jsonl (or its
ai_rd_* rows). The data is not part of rebench; see rebench.analysis.metr for the caveats
(METR's score is a 0-1 capped transform, not the paper's normalized score).
"""

from __future__ import annotations

from pathlib import Path

import click

from rebench.analysis.metr import convert_metr_runs
from rebench.cli_report import report


@click.command()
@click.argument("source", type=click.Path(path_type=Path, dir_okay=False, exists=True))
@click.option("--out", type=click.Path(path_type=Path, file_okay=False),
              default=Path("report-metr"), show_default=True)
@click.option("--budget", default="8h", show_default=True)
def main(source: Path, out: Path, budget: str) -> None:
    """Convert, then write the report (HTML, JSON, events.csv) into OUT."""
    out.mkdir(parents=True, exist_ok=True)
    csv_path = out / "metr_runs.csv"
    summary = convert_metr_runs(source, csv_path)
    click.echo(f"{summary.runs} runs of {len(summary.agents)} agents -> {csv_path}")
    report.main(
        ["--from-csv", str(csv_path), "--out", str(out), "--budget", budget,
         "--budgets", "30m,1h,2h,4h,8h,16h,32h",
         "--title", "METR's released RE-Bench runs (Feb 2025). Scores are METR's 0-1 capped "
                    "transform, not the paper's normalized score"],
        standalone_mode=False,
    )


if __name__ == "__main__":
    main()
