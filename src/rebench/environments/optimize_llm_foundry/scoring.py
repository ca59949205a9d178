"""Score a solution: run its `bash finetune.sh` on held-out data in a fresh sandbox, timed
from outside, and accept the result only if the trained weights are close to the reference
weights (trained at prepare by the starting pipeline on the same held-out file).

1. The snapshot (code and configuration only) is copied into a fresh folder inside the
   scorer's private scratch dir, which is deleted after the scoring: nothing of an earlier
   scoring, and nothing of the agent's workspace but the snapshot, is there.
2. Outputs and caches are wiped, the base model and tokenizer are laid fresh from the
   public assets, and the protected held-out rows become train_data.jsonl: they exist only
   in this folder and only from now on.
3. `bash finetune.sh` runs sandboxed through the untrusted runner (the profile's limits, no
   network, the folder the only writable place, its output to a private, size-capped log);
   the clock is the runner's, time.monotonic from start to the script's return.
4. As soon as it returns every process it started is killed, then trained_model/ is read
   as data (safetensors from bytes, size-checked, never through a link).
5. raw = ln(seconds) if sum over tensors of ||w - w_ref||_2 < the profile's threshold.
"""

from __future__ import annotations

import math
from pathlib import Path

import torch
from safetensors.torch import load_file

from rebench.core.errors import ScorerFault
from rebench.core.score import ScoreResult
from rebench.environments.optimize_llm_foundry.environment import FoundryParams
from rebench.environments.optimize_llm_foundry.pipeline import lay_out
from rebench.environments.optimize_llm_foundry.weights import (
    expected_of,
    norm_distance,
    read_weights,
)
from rebench.sandbox.safefs import CopyLimits, copy_tree_beneath
from rebench.scoring.context import ScoringContext
from rebench.scoring.runner import ChildFailure, ChildOutcome, run_child

LOG_TAIL_CHARS = 2000
LOG_FILE = "finetune.log"  # in the scratch dir, out of the sandbox's reach
# The pipeline prints a few kilobytes; a script that writes more than this is stopped.
MAX_LOG_BYTES = 256 * 1024**2


def _reference(protected: Path) -> dict[str, torch.Tensor]:
    try:
        return dict(load_file(str(protected / "reference_model.safetensors")))
    except Exception as exc:  # our own protected asset is broken
        raise ScorerFault(f"reference weights unreadable: {exc}") from exc


def _run(ctx: ScoringContext, work: Path) -> ChildOutcome:
    """`bash finetune.sh` in `work`, sandboxed; `seconds` runs from its start to its return
    (or to the runner's stop: timeout, output cap). Every process of the run is dead when
    this returns, whatever it left behind."""
    return run_child(ctx, ["bash", "finetune.sh"], timeout_s=ctx.profile.scoring_timeout_s,
                     workdir=work, writable=True, env={"PYTHONUNBUFFERED": "1"},
                     max_output_bytes=MAX_LOG_BYTES, output_file=ctx.scratch_dir / LOG_FILE)


def _failed(ctx: ScoringContext, run: ChildOutcome, details: dict[str, object]) -> str | None:
    """Why the run cannot be scored (the agent's message), or None when it returned 0."""
    hidden = "(its output is not shown: it ran on held-out data)"
    if run.failure is ChildFailure.TIMEOUT:
        return f"finetune.sh did not finish within {ctx.profile.scoring_timeout_s:.0f} s"
    if run.failure is ChildFailure.OUTPUT_CAP:
        return f"finetune.sh wrote more than {MAX_LOG_BYTES >> 20} MB of output {hidden}"
    if run.returncode != 0:
        # The output stays private: it could print the held-out rows to the agent.
        details.update(output_tail=run.stderr_tail[-LOG_TAIL_CHARS:], failure=run.failure.value)
        return f"finetune.sh exited with code {run.returncode} {hidden}"
    return None


def score(ctx: ScoringContext) -> ScoreResult:
    """ln(seconds of finetune.sh) when its weights match the reference; NaN otherwise."""
    protected, public = ctx.assets_dir / "protected", ctx.assets_dir / "public"
    reference = _reference(protected)
    expected = expected_of(reference)
    work = ctx.scratch_dir / "work"
    copy_tree_beneath(ctx.solution_dir, work, ("**/*",),
                      CopyLimits(max_bytes=ctx.spec.snapshot_max_bytes))
    if not (work / "finetune.sh").is_file():
        return ScoreResult.invalid("finetune.sh is missing from the solution")
    lay_out(work, public, protected / "heldout_data.jsonl")
    run = _run(ctx, work)
    stopped = run.failure in (ChildFailure.TIMEOUT, ChildFailure.OUTPUT_CAP)
    details: dict[str, object] = {"seconds": round(run.seconds, 3),
                                  "exit_code": None if stopped else run.returncode}
    failed = _failed(ctx, run, details)
    if failed is not None:
        return ScoreResult.invalid(failed, **details)
    state = read_weights(work, expected)
    if isinstance(state, str):
        return ScoreResult.invalid(state, **details)
    distance = norm_distance(state, reference)
    threshold = ctx.profile.params_as(FoundryParams).norm_threshold
    details.update(norm=distance, threshold=threshold)
    if not distance < threshold:
        return ScoreResult.invalid(
            f"trained weights differ from the reference: norm {distance:.4g} >= "
            f"{threshold:.4g} (the finetuning must keep its behaviour)", **details)
    raw = math.log(run.seconds)
    return ScoreResult(raw=raw, message={"seconds": round(run.seconds, 2), "norm": distance,
                                         "score": round(raw, 4)}, details=details)
