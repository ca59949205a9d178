"""Entry point of the fresh, trusted scorer process: `python -m rebench.harness.scorer_main
REQUEST.json RESULT.json`. Started by the harness, never by the agent."""

from __future__ import annotations

import importlib
import json
import sys
import traceback
from pathlib import Path

from rebench.core.discovery import load_spec
from rebench.core.score import ScoreResult
from rebench.harness.context import ScoringContext
from rebench.sandbox import Isolation


def _deny_memory_reads() -> None:
    """Make this process non-dumpable so same-user processes cannot read its memory
    through /proc/<pid>/mem or ptrace (defence in depth beside the sandbox)."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        pr_set_dumpable = 4
        libc.prctl(pr_set_dumpable, 0, 0, 0, 0)
    except (OSError, AttributeError):
        pass


def run_request(request: dict[str, object]) -> ScoreResult:
    """Score one request; untrusted children it started are killed before it returns."""
    spec = load_spec(str(request["env_id"]))
    profile = spec.profile(str(request["profile"]))
    ctx = ScoringContext(
        spec=spec,
        profile=profile,
        solution_dir=Path(str(request["solution_dir"])),
        assets_dir=Path(str(request["assets_dir"])),
        scratch_dir=Path(str(request["scratch_dir"])),
        isolation=Isolation(str(request["isolation"])),
        hidden=tuple(Path(str(p)) for p in request.get("hidden", []) or []),  # type: ignore[attr-defined]
    )
    scoring = importlib.import_module(f"rebench.environments.{spec.id}.scoring")
    try:
        result = scoring.score(ctx)
    finally:
        ctx.close()
    if not isinstance(result, ScoreResult):
        raise TypeError(f"{spec.id}.scoring.score returned {type(result).__name__}")
    return result


def main(argv: list[str]) -> int:
    request_path, result_path = Path(argv[0]), Path(argv[1])
    _deny_memory_reads()
    request = json.loads(request_path.read_text())
    try:
        payload = run_request(request).to_json()
    except Exception as exc:  # a scorer bug is the harness's fault, never the agent's NaN
        payload = {"harness_error": f"{type(exc).__name__}: {exc}",
                   "traceback": traceback.format_exc()[-8000:]}
    result_path.write_text(json.dumps(payload, allow_nan=False))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
