"""Where restricted_mlm's cheat files are: the ones this folder's own tests score (the
graph-rule checks in the test process, the lie that gains nothing, the runaway children)
in its cheats/; the ones declared in the environment's folder (degenerate.py CHEATS, run
by the generic cheat test) in the environment's cheats/."""

from __future__ import annotations

from pathlib import Path

from rebench.scoring.declarations import cheats_folder

CHEATS = Path(__file__).parent / "cheats"


def cheat_file(name: str) -> Path:
    """A cheat of this folder's cheats/ or of the environment's (declared)."""
    here = CHEATS / name
    return here if here.is_file() else cheats_folder("restricted_mlm") / name
