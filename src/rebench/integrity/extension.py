"""Rules an environment adds for the hacks of its own task, found by folder convention.

An environment folder may hold `integrity.py` defining `RULES = EnvironmentRules(...)`: line
rules, syntax-tree rules and structural checks that run, next to the common ones, on that
environment's runs only (a forbidden op means something only in restricted_mlm, a copy into
trained_model/ only in optimize_llm_foundry). The environment's own folder is the one place
that knows its files and its rules; nothing here names an environment.
"""

from __future__ import annotations

import ast
import importlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from rebench.core.errors import RebenchError, SpecError
from rebench.integrity.flags import Flag
from rebench.integrity.patterns import PatternRule
from rebench.integrity.record import RunData, TextUnit

# A syntax-tree rule: one Python file the agent wrote (its unit and parsed tree) -> flags.
PythonRule = Callable[[TextUnit, ast.Module], Iterator[Flag]]
# A text rule: one text unit (a file, a command) -> flags, for what a regular expression
# over single lines cannot say (e.g. shell variables expanded first).
TextRule = Callable[[TextUnit], Iterator[Flag]]
# A structural rule: the whole run -> flags.
Check = Callable[[RunData], Iterator[Flag]]
MODULE = "integrity"


@dataclass(frozen=True)
class EnvironmentRules:
    """What an environment's integrity.py adds to the common rules."""

    patterns: tuple[PatternRule, ...] = ()
    texts: tuple[TextRule, ...] = ()
    python: tuple[PythonRule, ...] = ()
    checks: tuple[Check, ...] = ()


NO_RULES = EnvironmentRules()


def environment_rules(env_id: str) -> EnvironmentRules:
    """The rules of environment `env_id`'s integrity.py; none when it has no such file or
    is not installed here (the report's notes already say the latter)."""
    from rebench.core.discovery import environment_dir

    try:
        folder = environment_dir(env_id)
    except RebenchError:
        return NO_RULES
    if not (folder / f"{MODULE}.py").is_file():
        return NO_RULES
    module = importlib.import_module(f"rebench.environments.{env_id}.{MODULE}")
    rules = getattr(module, "RULES", None)
    if not isinstance(rules, EnvironmentRules):
        raise SpecError(f"{env_id}/{MODULE}.py must define RULES = EnvironmentRules(...)")
    return rules
