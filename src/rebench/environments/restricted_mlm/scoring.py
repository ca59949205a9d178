"""Trusted scorer of restricted_mlm: raw = ln(masked-token loss - c) on held-out data.

Phases: the sandboxed child exports the snapshot's forward as data (child_io.py); the graph
is checked against the op allow-list and rebuilt from allowed aten ops (graph_check.py);
a shape-only pass on meta tensors checks every value's dtype, where integers come from and
every index's range, and bounds the live memory and the multiply-adds of a forward before
anything runs (graph_rules.py); then the scorer itself runs that graph on the held-out
batches, with masks it draws and a deadline checked between ops, and computes the loss.
The forward that is scored is exactly the forward that was checked; the agent's process
never sees the held-out tokens or the logits.

What the agent reads is a reason code of environment.FEEDBACK (its fixed sentence) or the
score and loss, rounded; which op or line broke a rule stays in the private details (the
agent's evaluate.py prints it: the checks depend on the code only, never on held-out data).
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from rebench.core.hardware import load_stretch
from rebench.core.score import ScoreResult
from rebench.environments.restricted_mlm.child_io import Export, ExportRequest, run_export
from rebench.environments.restricted_mlm.environment import MlmParams
from rebench.environments.restricted_mlm.graph_check import (
    Cost,
    GraphError,
    Limits,
    Masking,
    Program,
    eval_windows,
    masked_loss,
    parse_graph,
    plan,
)
from rebench.scoring.context import ScoringContext
from rebench.scoring.kit import log_loss_score, torch_device

EVAL_FILE = "eval.json"


@dataclass(frozen=True)
class EvalPlan:
    """How one scoring runs: the profile's shapes, masking, data size, floor and limits, and
    the vocabulary and mask id of the tokenizer that prepare used (its eval.json)."""

    params: MlmParams
    vocab_size: int
    mask_id: int

    @classmethod
    def of(cls, params: MlmParams, record: Mapping[str, Any]) -> EvalPlan:
        return cls(params, vocab_size=int(record["vocab_size"]), mask_id=int(record["mask_id"]))

    def masking(self) -> Masking:
        p = self.params
        return Masking(p.batch_size, p.seq_len, self.vocab_size, self.mask_id, p.mask_fraction,
                       p.mask_seed)

    def request(self) -> ExportRequest:
        p = self.params
        return ExportRequest(self.vocab_size, p.seq_len, p.batch_size, self.mask_id,
                             p.export_timeout_s, p.max_tensor_bytes)


    def limits(self) -> Limits:
        p = self.params
        return Limits(p.max_node_elements, p.max_live_bytes, p.max_forward_macs)


def checked_program(export: Export, eval_plan: EvalPlan) -> tuple[Program, Cost]:
    """The allow-listed program and its cost, after the shape-only pass of graph_rules."""
    p = eval_plan.params
    program = parse_graph(export.graph_text, export.tensors)
    cost = plan(program, export.tensors, p.batch_size, p.seq_len, eval_plan.vocab_size,
                eval_plan.limits())
    return program, cost


def score(ctx: ScoringContext) -> ScoreResult:
    """ln(held-out masked loss - c) of the snapshot's model; NaN with a reason if invalid."""
    protected = ctx.protected_dir
    params: MlmParams = ctx.profile.typed
    plan = EvalPlan.of(params,
                       json.loads((protected / EVAL_FILE).read_text()))
    p = plan.params
    if not (ctx.solution_dir / "model.py").is_file():
        return ScoreResult.invalid("no_model")
    details: dict[str, Any] = {}
    try:
        export = run_export(ctx, plan.request())
        details.update(export_s=round(export.child_s, 2), child_log_tail=export.log_tail)
        program, cost = checked_program(export, plan)
        details.update(ops=program.op_counts, peak_bytes=cost.peak_bytes, macs=cost.macs)
        tokens = np.memmap(protected / "test.bin", dtype=np.uint16, mode="r")
        start = time.monotonic()
        windows = eval_windows(tokens, p.seq_len, p.eval_batches * p.batch_size)
        # The limit stretches with the machine's load (a busy machine is not a slow
        # forward); the multiply-add bound of plan() holds whatever the load.
        limit_s = p.eval_time_limit_s * load_stretch()
        details["eval_limit_s"] = round(limit_s, 1)
        loss = masked_loss(program, export.tensors, windows, plan.masking(),
                           torch_device(ctx.profile, exact_fp32=True),
                           limit_s)
        details["eval_s"] = round(time.monotonic() - start, 2)
    except GraphError as exc:
        return ScoreResult.invalid(exc.code, detail=str(exc), **exc.details, **details)
    return _result(loss, p, details)


def _result(loss: float, p: MlmParams, details: dict[str, Any]) -> ScoreResult:
    details.update(loss=loss, loss_floor=p.loss_floor, eval_batches=p.eval_batches)
    return log_loss_score(loss, p.loss_floor, details, nonfinite="not_finite")
