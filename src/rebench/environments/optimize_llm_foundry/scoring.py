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

What the agent is told is environment.FEEDBACK: a reason code for an invalid run, the
seconds and score of a valid one; exit status, output, weights problems and the norm go
to the private details only (the script ran on held-out data and chose them).
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
    Unusable,
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


def _failed(run: ChildOutcome) -> str | None:
    """The reason code why the run cannot be scored, or None when it returned 0.

    A code only (environment.FEEDBACK): finetune.sh ran on the held-out rows, so its exit
    status, its output and whether it said "MemoryError" are its own choice, a channel
    for the rows. Running out of memory and any other failure give the same code."""
    if run.failure in (ChildFailure.TIMEOUT, ChildFailure.OUTPUT_CAP):
        return run.reason  # the common codes: the runner's stop, not the script's word
    if run.failure is not ChildFailure.NONE or run.returncode != 0:
        return "pipeline_failed"
    return None


def score(ctx: ScoringContext) -> ScoreResult:
    """ln(seconds of finetune.sh) when its weights match the reference; NaN otherwise."""
    protected, public = ctx.protected_dir, ctx.public_dir
    reference = _reference(protected)
    expected = expected_of(reference)
    work = ctx.scratch_dir / "work"
    copy_tree_beneath(ctx.solution_dir, work, ("**/*",),
                      CopyLimits(max_bytes=ctx.spec.snapshot_max_bytes))
    if not (work / "finetune.sh").is_file():
        return ScoreResult.invalid("no_finetune_sh")
    lay_out(work, public, protected / "heldout_data.jsonl")
    run = _run(ctx, work)
    stopped = run.failure in (ChildFailure.TIMEOUT, ChildFailure.OUTPUT_CAP)
    # Private (the score log's details, for the operator): everything the script chose.
    details: dict[str, object] = {"seconds": round(run.seconds, 3),
                                  "exit_code": None if stopped else run.returncode,
                                  "failure": run.failure.value}
    failed = _failed(run)
    if failed is not None:
        details["output_tail"] = run.stderr_tail[-LOG_TAIL_CHARS:]
        return ScoreResult.invalid(failed, **details)
    state = read_weights(work, expected)
    if isinstance(state, Unusable):
        return ScoreResult.invalid(state.reason, weights_problem=state.text, **details)
    distance = norm_distance(state, reference)
    params: FoundryParams = ctx.profile.typed
    threshold = params.norm_threshold
    details.update(norm=distance, threshold=threshold)
    if not distance < threshold:
        return ScoreResult.invalid("weights_differ", **details)
    raw = math.log(run.seconds)
    # The time is the score (ln seconds), so it is shown; the norm never is (FEEDBACK).
    return ScoreResult(raw=raw, message={"seconds": round(run.seconds, 1),
                                         "score": round(raw, 2)}, details=details)
