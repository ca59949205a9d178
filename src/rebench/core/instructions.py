"""Agent-facing instructions: instructions.md with {placeholders} filled from the profile."""

from __future__ import annotations

import re

from rebench.core.discovery import environment_dir
from rebench.core.spec import EnvironmentSpec, Profile

# Only {identifier} is a placeholder, so code in the instructions keeps its braces.
PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")


def render_instructions(
    spec: EnvironmentSpec, profile: Profile, extra: dict[str, object] | None = None
) -> str:
    """The instructions for `profile`; unknown placeholders are left as they are."""
    text = (environment_dir(spec.id) / "instructions.md").read_text()
    values: dict[str, object] = {
        **profile.params,
        "profile": profile.name,
        "env_id": spec.id,
        "scoring_timeout_s": int(profile.scoring_timeout_s),
        "default_budget_h": round(profile.default_budget_s / 3600, 2),
        **(extra or {}),
    }
    return PLACEHOLDER.sub(lambda m: str(values.get(m.group(1), m.group(0))), text)
