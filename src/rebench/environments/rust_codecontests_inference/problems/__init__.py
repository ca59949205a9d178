"""The problem set: every family, the split by family, and the build of all problems."""

from __future__ import annotations

from rebench.environments.rust_codecontests_inference.problems.base import (
    Family,
    Problem,
    build_problem,
    derive_key,
)
from rebench.environments.rust_codecontests_inference.problems.families_a import (
    ARRAYS,
    DIGITS,
    NUMBERS,
    STRINGS,
)
from rebench.environments.rust_codecontests_inference.problems.families_b import (
    RANGES,
    SORTING,
    SUBARRAYS,
)
from rebench.environments.rust_codecontests_inference.problems.families_c import (
    DP,
    GRIDS,
)
from rebench.environments.rust_codecontests_inference.problems.families_d import (
    BASES,
    GREEDY,
    SIMULATION,
)
from rebench.environments.rust_codecontests_inference.problems.families_e import (
    MATRICES,
    PAIRS,
    SEARCH,
    WINDOWS,
)
from rebench.environments.rust_codecontests_inference.problems.families_f import COUNTING, POINTS
from rebench.environments.rust_codecontests_inference.problems.families_g import GRAPHS, STACKS

FAMILIES: tuple[Family, ...] = (
    ARRAYS, STRINGS, DIGITS, NUMBERS, RANGES, SUBARRAYS, SORTING, STACKS, GRIDS, DP, GRAPHS,
    SIMULATION, GREEDY, BASES, PAIRS, MATRICES, SEARCH, WINDOWS, COUNTING, POINTS,
)

# Validation and held-out problems come from different families, so that solving the
# validation problems by hand teaches nothing that transfers to the held-out ones.
VALIDATION_FAMILIES: frozenset[str] = frozenset(
    {"arrays", "digits", "stacks", "grids", "simulation", "pairs", "counting"}
)


def all_problems(key: bytes) -> list[Problem]:
    """Every problem of every family built from `key`, in a fixed order."""
    return [build_problem(f, v, key) for f in FAMILIES for v in f.variants]


def split_problems(secret: bytes) -> tuple[list[Problem], list[Problem]]:
    """(validation, held-out test) problems. Each side is built from its own sub-key of
    `secret`, so the public validation problems reveal nothing of the held-out ones."""
    validation = [build_problem(f, v, derive_key(secret, "validation"))
                  for f in FAMILIES if f.key in VALIDATION_FAMILIES for v in f.variants]
    test = [build_problem(f, v, derive_key(secret, "held-out"))
            for f in FAMILIES if f.key not in VALIDATION_FAMILIES for v in f.variants]
    return validation, test


__all__ = ["FAMILIES", "VALIDATION_FAMILIES", "Problem", "all_problems", "derive_key",
           "split_problems"]
