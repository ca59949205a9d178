"""Where the test suite's time goes: reads the JUnit XML reports of a `make test` run and
prints Markdown (per folder of tests: count and seconds; the slowest tests; the fixtures'
setup time where pytest charged it to the first test that used them).

    CI=true make test TEST_JUNIT=/tmp/junit   # its two passes: parallel.xml, timing.xml
    .venv/bin/python benchmarks/suite_times.py /tmp/junit/*.xml > docs/benchmarks/test-suite.md

pytest's JUnit `time` of a test includes its setup and teardown, so a session fixture (a
prepare, a built solution) shows up in the first test that asks for it."""

from __future__ import annotations

import argparse
import sys
import xml.etree.ElementTree as ET
from collections import defaultdict
from pathlib import PurePosixPath


def rows(path: str) -> list[tuple[str, str, float, str]]:
    """(folder, test id, seconds, outcome) per test case."""
    out = []
    for case in ET.parse(path).getroot().iter("testcase"):
        module = case.get("classname", "").replace(".", "/")
        test_id = f"{module}.py::{case.get('name', '')}"
        outcome = "passed"
        for tag in ("failure", "error", "skipped"):
            if case.find(tag) is not None:
                outcome = tag
        parts = PurePosixPath(module).parts
        folder = "/".join(parts[:3] if parts[:2] == ("tests", "environments") else parts[:2])
        out.append((folder, test_id, float(case.get("time", 0.0)), outcome))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("junit", nargs="+", help="JUnit XML reports (one per pytest pass)")
    parser.add_argument("--top", type=int, default=25)
    args = parser.parse_args()
    cases = [case for path in args.junit for case in rows(path)]
    total = sum(c[2] for c in cases)
    by_folder: dict[str, list[float]] = defaultdict(list)
    for folder, _, seconds, _ in cases:
        by_folder[folder].append(seconds)
    write = sys.stdout.write
    write(f"Total: {len(cases)} tests, {total:.0f} s ({total / 60:.1f} min) of test time\n\n")
    write("| folder | tests | seconds | share |\n| --- | ---: | ---: | ---: |\n")
    for folder, times in sorted(by_folder.items(), key=lambda kv: -sum(kv[1])):
        write(f"| {folder} | {len(times)} | {sum(times):.0f} | {sum(times) / total:.0%} |\n")
    write(f"\nThe {args.top} slowest (setup included):\n\n| seconds | test | outcome |\n"
          "| ---: | --- | --- |\n")
    for _, test_id, seconds, outcome in sorted(cases, key=lambda c: -c[2])[:args.top]:
        write(f"| {seconds:.1f} | `{test_id}` | {outcome} |\n")


if __name__ == "__main__":
    main()
