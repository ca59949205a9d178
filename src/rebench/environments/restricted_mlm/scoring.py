"""Trusted scorer of restricted_mlm: raw = ln(masked-token loss - c) on held-out data.

Phases: the sandboxed child exports the snapshot's forward as data (child_io.py); the graph
is checked against the op allow-list and rebuilt from allowed aten ops (graph_check.py);
a shape-only pass on meta tensors bounds its memory; then the scorer itself runs that
graph on the held-out batches, with masks it draws, and computes the loss. The forward
that is scored is exactly the forward that was checked; the agent's process never sees
the held-out tokens or the logits.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from rebench.core.score import ScoreResult
from rebench.environments.restricted_mlm.child_io import Export, ExportRequest, run_export
from rebench.environments.restricted_mlm.environment import MlmParams
from rebench.environments.restricted_mlm.graph_check import (
    GraphError,
    Masking,
    Program,
    check_output_shape,
    eval_windows,
    masked_loss,
    parse_graph,
    run,
)
from rebench.scoring.context import ScoringContext

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


def checked_program(export: Export, plan: EvalPlan) -> Program:
    """The allow-listed program, after a shape-only pass that bounds its memory."""
    p = plan.params
    program = parse_graph(export.graph_text, export.tensors)
    meta = {k: torch.empty_like(v, device="meta") for k, v in export.tensors.items()}
    tokens = torch.zeros((p.batch_size, p.seq_len), dtype=torch.long, device="meta")
    out = run(program, tokens, meta, p.max_node_elements)
    check_output_shape(out, p.batch_size, p.seq_len, plan.vocab_size)
    return program


def _device(ctx: ScoringContext) -> torch.device:
    if ctx.profile.gpus > 0 and torch.cuda.is_available():
        torch.backends.cuda.matmul.allow_tf32 = False  # exact fp32 evaluation
        return torch.device("cuda")
    return torch.device("cpu")


def score(ctx: ScoringContext) -> ScoreResult:
    """ln(held-out masked loss - c) of the snapshot's model; NaN with a reason if invalid."""
    protected = ctx.assets_dir / "protected"
    plan = EvalPlan.of(ctx.profile.params_as(MlmParams),
                       json.loads((protected / EVAL_FILE).read_text()))
    p = plan.params
    if not (ctx.solution_dir / "model.py").is_file():
        return ScoreResult.invalid("model.py is missing from the submission")
    details: dict[str, Any] = {}
    try:
        export = run_export(ctx, plan.request())
        details.update(export_s=round(export.child_s, 2), child_log_tail=export.log_tail)
        program = checked_program(export, plan)
        details["ops"] = program.op_counts
        tokens = np.memmap(protected / "test.bin", dtype=np.uint16, mode="r")
        start = time.monotonic()
        windows = eval_windows(tokens, p.seq_len, p.eval_batches * p.batch_size)
        loss = masked_loss(program, export.tensors, windows, plan.masking(), _device(ctx),
                           p.eval_time_limit_s)
        details["eval_s"] = round(time.monotonic() - start, 2)
    except GraphError as exc:
        return ScoreResult.invalid(str(exc), **details)
    return _result(loss, p, details)


def _result(loss: float, p: MlmParams, details: dict[str, Any]) -> ScoreResult:
    details.update(loss=loss, loss_floor=p.loss_floor, eval_batches=p.eval_batches)
    if not math.isfinite(loss):
        return ScoreResult.invalid("the held-out loss is not finite", **details)
    if loss <= p.loss_floor:
        return ScoreResult.invalid(f"held-out loss {loss:.4f} is at or below the floor "
                                   f"c = {p.loss_floor}: ln(loss - c) is undefined", **details)
    raw = math.log(loss - p.loss_floor)
    return ScoreResult(raw=raw, message={"loss": round(loss, 4), "score": round(raw, 4)},
                       details=details)
