"""Score = 1 - [(L(answer) - L*)+ + |loss_prediction - L(answer)|], hidden from the agent.

Requested scores only check validity (NaN, message {is_valid, frac_flops_used}, or a
reason code of FEEDBACK); the initial and final scores train the answer's configuration at
the target budget with the trusted trainer and fixed seeds, and evaluate it on the secret
held-out windows of this prepare's drawn mixture (an answer of a shape the prepare already
trained, such as the starting answer, is read from protected/trained.json: the same
deterministic training, not run twice). L* is the best loss that prepare measured
on those same windows (protected/lstar.json), never a number of the package: the public
sweep table documents the recipe on another setting. Only answer.json is read from the
snapshot, as data.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass

from rebench.environments.small_scaling_law.assets import (
    load_l_star,
    load_protected,
    load_trained,
)
from rebench.environments.small_scaling_law.trainer import Recipe, ScalingParams, train_config
from rebench.scoring import ScoreKind, ScoreResult, ScoringContext

MAX_ANSWER_BYTES = 10_000


@dataclass(frozen=True)
class Answer:
    """A well-formed answer.json."""

    loss_prediction: float
    max_iters: int
    n_embd: int


def parse_answer(text: str) -> Answer | str:
    """The answer, or why it is malformed."""
    try:
        data = json.loads(text)
    except ValueError:
        return "answer.json is not valid JSON"
    if not isinstance(data, dict):
        return "answer.json must be a JSON object"
    pred, iters, width = data.get("loss_prediction"), data.get("max_iters"), data.get("n_embd")
    if isinstance(pred, bool) or not isinstance(pred, (int, float)) or not math.isfinite(pred) \
            or pred <= 0:
        return "loss_prediction must be a finite positive number"
    for key, value in (("max_iters", iters), ("n_embd", width)):
        if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
            return f"{key} must be a positive integer"
    assert isinstance(iters, int) and isinstance(width, int)
    return Answer(float(pred), iters, width)


def read_answer(ctx: ScoringContext) -> Answer | str:
    """The answer, or the reason code (FEEDBACK) of why it is not one."""
    path = ctx.solution_dir / "answer.json"
    if path.is_symlink() or not path.is_file() or path.stat().st_size > MAX_ANSWER_BYTES:
        return "no_answer"
    try:
        parsed = parse_answer(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError):
        return "no_answer"
    return "malformed_answer" if isinstance(parsed, str) else parsed


def invalid(reason: str, frac: float | None = None, **private: object) -> ScoreResult:
    """NaN with a reason code of FEEDBACK (and the FLOP fraction, a function of the answer
    alone); the free text stays in the private details."""
    message: dict[str, object] = {"is_valid": False, "reason": reason}
    if frac is not None:
        message["frac_flops_used"] = round(frac, 4)
    return ScoreResult(raw=math.nan, message=message, details={"reason": reason, **private})


def raw_score(loss: float, l_star: float, prediction: float) -> float:
    """1 - [(L - L*)+ + |prediction - L|]. The gap is clamped at 0: an answer trained
    on more than the target (up to max_budget_ratio) or on a width the prepare did not
    measure can reach below the measured L*, and must not score above a perfect answer."""
    return 1.0 - (max(loss - l_star, 0.0) + abs(prediction - loss))


def score(ctx: ScoringContext) -> ScoreResult:
    answer = read_answer(ctx)
    if isinstance(answer, str):
        return invalid(answer)
    data = load_protected(ctx.assets_dir)
    params: ScalingParams = ctx.profile.typed
    recipe = Recipe.of(params, data.vocab_size, data.target_flops)
    shape = recipe.shape_error(answer.n_embd, answer.max_iters)
    if shape:
        return invalid("bad_width", why=shape)
    frac = recipe.flops(answer.n_embd, answer.max_iters) / recipe.target_flops
    if frac > params.max_budget_ratio:
        return invalid("over_budget", frac)
    message = {"is_valid": True, "frac_flops_used": round(frac, 4)}
    if ctx.kind is ScoreKind.REQUESTED:
        return ScoreResult(raw=math.nan, message=message, details={"check_only": True})
    l_star = load_l_star(ctx.assets_dir)
    key = (answer.n_embd, answer.max_iters)
    trained = load_trained(ctx.assets_dir)
    if key in trained:  # the prepare trained this very shape (same trainer, seed, windows)
        loss, source = trained[key], "prepare"
    else:
        loss = train_config(recipe, data.train, data.heldout_rows, answer.n_embd,
                            answer.max_iters).final_loss
        source = "trained"
    if not math.isfinite(loss):
        return invalid("diverged", frac)
    raw = raw_score(loss, l_star, answer.loss_prediction)
    return ScoreResult(raw=raw, message=message, details={
        "loss": loss, "l_star": l_star, "loss_prediction": answer.loss_prediction,
        "n_embd": answer.n_embd, "max_iters": answer.max_iters, "frac_flops_used": frac,
        "loss_source": source})
