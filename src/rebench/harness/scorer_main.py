"""Entry point of the fresh, trusted scorer process: `python -m rebench.harness.scorer_main
REQUEST.json RESULT.json`. Started by the harness, never by the agent. Both files follow
harness/scorer_schema.py: a request off the schema is answered with a harness error."""

from __future__ import annotations

import importlib
import sys
import traceback
from pathlib import Path

from rebench.core.discovery import load_spec
from rebench.core.score import ScoreResult
from rebench.harness.scorer_schema import ScoreReply, ScoreRequest, read_request, write_json
from rebench.scoring.context import ScoringContext


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


def run_request(request: ScoreRequest) -> ScoreResult:
    """Score one request; untrusted children it started are killed before it returns."""
    spec = load_spec(request.env_id)
    ctx = ScoringContext(
        spec=spec,
        profile=spec.profile(request.profile),
        solution_dir=request.solution_dir,
        assets_dir=request.assets_dir,
        scratch_dir=request.scratch_dir,
        isolation=request.isolation,
        hidden=request.hidden,
        kind=request.kind,
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
    try:
        # a request off the schema is refused here, and reported like a scorer bug
        reply = ScoreReply(result=run_request(read_request(request_path)))
    except Exception as exc:  # a scorer bug is the harness's fault, never the agent's NaN
        reply = ScoreReply(harness_error=f"{type(exc).__name__}: {exc}",
                           traceback=traceback.format_exc()[-8000:])
    write_json(result_path, reply)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
