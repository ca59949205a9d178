"""Helpers for the Ray batch tests: a deterministic scorer, and a node harness that uses it.

Run as a script (`python ray_support.py ATTEMPT.json`) this is the harness command a test
cluster's nodes run instead of `python -m rebench.scale.node`: the same harness, with the
official scorer swapped for one that counts lines (raw = lines of solution.py / 100) and
takes REBENCH_TEST_SCORE_DELAY_S seconds, so attempts last long enough to be killed.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

from rebench.core.score import ScoreResult


def line_count_score(spec: object, profile: object, snapshot_dir: Path, isolation: object,
                     timeout_s: float | None = None, kind: object = None) -> ScoreResult:
    """raw = lines of solution.py / 100; NaN without one."""
    del spec, profile, isolation, timeout_s, kind
    time.sleep(float(os.environ.get("REBENCH_TEST_SCORE_DELAY_S", "0")))
    solution = snapshot_dir / "solution.py"
    if not solution.is_file():
        return ScoreResult.invalid("no solution.py")
    lines = len(solution.read_text().splitlines())
    return ScoreResult(raw=lines / 100, message={"lines": lines})


NODE_ENTRY = (str(Path(__file__).resolve()),)

if __name__ == "__main__":
    import rebench.harness.run
    from rebench.scale.node import main

    rebench.harness.run.official_score = line_count_score  # type: ignore[assignment]
    sys.exit(main())
