"""Agent-facing instructions: instructions.md with {placeholders} filled from the profile.

The template language is the useful subset of `str.format`: `{name}` and `{name:spec}`
(e.g. `{timeout_s:.0f}`) are filled, `{{` and `}}` stand for literal braces. Any other
brace (code in the instructions) is kept as written, and so is a placeholder whose name is
unknown, so a missing parameter shows up in tests instead of raising for the agent.
"""

from __future__ import annotations

import re

from rebench.core.discovery import environment_dir
from rebench.core.spec import EnvironmentSpec, Profile

# `{{`, `}}`, or `{identifier}` / `{identifier:format-spec}`.
TOKEN = re.compile(r"\{\{|\}\}|\{([A-Za-z_][A-Za-z0-9_]*)(?::([^{}\n]*))?\}")
# What a rendered text must not contain: an unfilled placeholder or an escaped brace.
LEFTOVER = re.compile(r"\{\{|\}\}|\{[A-Za-z_][A-Za-z0-9_]*(?::[^{}\n]*)?\}")


def fill(template: str, values: dict[str, object]) -> str:
    """`template` with its placeholders filled from `values` (see the module docstring)."""

    def one(match: re.Match[str]) -> str:
        token = match.group(0)
        if token in ("{{", "}}"):
            return token[0]
        name, spec = match.group(1), match.group(2)
        if name not in values:
            return token
        try:
            return format(values[name], spec or "")
        except (TypeError, ValueError):  # a spec that does not suit the value: keep it seen
            return token

    return TOKEN.sub(one, template)


def leftovers(text: str) -> list[str]:
    """Placeholder-like pieces left in a rendered text (empty when it rendered fully)."""
    return LEFTOVER.findall(text)


def render_instructions(
    spec: EnvironmentSpec, profile: Profile, extra: dict[str, object] | None = None
) -> str:
    """The instructions for `profile`; unknown placeholders are left as they are."""
    text = (environment_dir(spec.id) / "instructions.md").read_text()
    values: dict[str, object] = {
        **profile.params,
        **profile.instruction_text,
        "profile": profile.name,
        "env_id": spec.id,
        "scoring_timeout_s": int(profile.scoring_timeout_s),
        "default_budget_h": round(profile.default_budget_s / 3600, 2),
        **(extra or {}),
    }
    return fill(text, values)
