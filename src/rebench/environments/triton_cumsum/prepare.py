"""Nothing big to build: inputs are drawn fresh at every call. Records the profile's
parameters so the prepared marker (written by the generic runner) exists."""

from __future__ import annotations

import json

from rebench.scoring.context import PrepareContext


def prepare(ctx: PrepareContext) -> None:
    """Write the profile's parameters to protected/params.json."""
    ctx.progress("recording parameters", 0.0)
    record = {"env_id": ctx.spec.id, "profile": ctx.profile.name,
              "params": dict(ctx.profile.params)}
    (ctx.protected_dir / "params.json").write_text(json.dumps(record, indent=2, sort_keys=True))
    ctx.progress("done", 1.0)
