"""Per-run integrity report: flags of hack attempts found in a run's record.

`check_run(run_dir)` reads run.json, events.jsonl, the score log and the snapshots, runs every
rule (line rules in `patterns`, syntax-tree rules in `pycode`, structural rules in `checks`)
and, optionally, a model monitor (`monitor`), and returns an IntegrityReport. See
docs/integrity.md for the rules and for what the report cannot see.
"""

from rebench.integrity.engine import check_data, check_run
from rebench.integrity.flags import Evidence, Flag, IntegrityReport, Judge, Severity

__all__ = ["Evidence", "Flag", "IntegrityReport", "Judge", "Severity", "check_data",
           "check_run"]
