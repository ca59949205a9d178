"""Helpers of the rust_codecontests_inference tests (a unique module name: every test folder
may have its own conftest.py, so tests never import from `conftest`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from rebench.sandbox import Isolation

ENV_ID = "rust_codecontests_inference"
ENV_DIR = Path(__file__).resolve().parents[3] / "src" / "rebench" / "environments" / ENV_ID
# The hangs scored in-process with limits of seconds; the other cheats are declared in the
# environment's own cheats/ folder (degenerate.py, CHEATS).
CHEATS = Path(__file__).resolve().parent / "cheats"
DECLARED_CHEATS = ENV_DIR / "cheats"


def bwrap_isolation() -> Isolation | None:
    """BWRAP when the bwrap sandbox exists and works here, else None (tests skip)."""
    try:
        from rebench.sandbox.bwrap import bwrap_available
    except ImportError:
        return None
    return Isolation.BWRAP if bwrap_available() else None


def first_problems(prepared: Path, n: int) -> list[dict[str, Any]]:
    with (prepared / "protected" / "test.jsonl").open() as fh:
        return [json.loads(line) for line, _ in zip(fh, range(n), strict=False)]
