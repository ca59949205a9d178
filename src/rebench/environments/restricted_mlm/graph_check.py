"""Check an exported forward (graph.json + tensors) against the op allow-list and run it.

Trusted code of the scorer, written for the standard library and torch only, so that the
agent's `evaluate.py` can use a copy of it (the same checks, the same interpreter). Nothing
here executes code from the graph: op names are looked up in a fixed allow-list and called
through torch's own aten kernels; arguments are plain data. `plan` then checks the values
the graph makes (graph_rules.py: dtypes, index sources and ranges, memory, compute) on
meta tensors, before any data is seen.
"""

from __future__ import annotations

import json
import operator
import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import torch

if __package__:  # the scorer's package
    from .graph_rules import Checker, Cost, GraphError, Limits, check_ref_positions, refs_of
else:  # the agent's copy next to graph_rules.py in the workspace
    from graph_rules import (  # type: ignore[no-redef]
        Checker,
        Cost,
        GraphError,
        Limits,
        check_ref_positions,
        refs_of,
    )

__all__ = ["Cost", "GraphError", "Limits"]

# The paper's rule as aten ops: Linear, Embedding, matmul/einsum, sum, elementwise add and
# multiply, relu, indexing and reshaping, and tensors fixed during the forward.
COMPUTE_OPS = frozenset({
    "embedding", "linear", "addmm", "mm", "bmm", "matmul", "einsum", "sum", "add", "mul",
    "relu",
})
SHAPE_OPS = frozenset({
    "view", "_unsafe_view", "reshape", "unsqueeze", "squeeze", "permute", "transpose",
    "expand", "slice", "select", "index", "index_select", "gather", "cat", "stack",
    "as_strided", "t", "clone", "contiguous", "alias", "detach", "split", "split_with_sizes",
    "chunk", "unbind", "narrow", "flatten", "unflatten", "repeat", "lift_fresh_copy",
    "_to_copy",
})
# Fixed tensors made inside the forward (padding, identity matrices, position ids).
CONSTANT_OPS = frozenset({
    "zeros", "ones", "full", "eye", "arange", "scalar_tensor", "zeros_like", "ones_like",
    "full_like", "new_zeros", "new_ones", "new_full",
})
# Checks that export inserts for `.to(dtype)`: no output, skipped when the graph runs.
NO_OPS = frozenset({"_assert_tensor_metadata"})
ALLOWED_OPS = COMPUTE_OPS | SHAPE_OPS | CONSTANT_OPS | NO_OPS
MAX_NODES = 20_000
GETITEM = "_operator.getitem"  # picks one tensor out of split/chunk/unbind
_ATEN_NAME = re.compile(r"^aten\.([A-Za-z_][A-Za-z0-9_]*)\.([A-Za-z_][A-Za-z0-9_]*)$")
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,127}$")
# dtype names an argument may carry (the values a dtype makes are checked by graph_rules)
_DTYPES = {"float32", "float16", "bfloat16", "float64", "int64", "int32", "int16", "int8",
           "uint8", "bool"}


@dataclass(frozen=True)
class Step:
    """One call of the forward: `name = op(*args, **kwargs)`."""

    name: str
    target: str
    op: Callable[..., Any]
    args: Any
    kwargs: Mapping[str, Any]
    where: str


@dataclass(frozen=True)
class Program:
    """A checked forward: the token input's name, the tensors, the steps and the output."""

    input: str
    tensors: Mapping[str, torch.Tensor]
    steps: tuple[Step, ...]
    output: str
    last_use: Mapping[str, int]

    @property
    def op_counts(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for step in self.steps:
            counts[step.target] = counts.get(step.target, 0) + 1
        return counts


def _resolve_op(target: str) -> Callable[..., Any] | None:
    """The aten kernel of an allowed op name, else None."""
    if target == GETITEM:
        return operator.getitem
    match = _ATEN_NAME.match(target)
    if match is None or match.group(1) not in ALLOWED_OPS or "out" in match.group(2):
        return None
    packet = getattr(torch.ops.aten, match.group(1), None)
    op = getattr(packet, match.group(2), None) if packet is not None else None
    return op if isinstance(op, torch._ops.OpOverload) else None


def forbidden_message(target: str, where: str) -> str:
    """What the agent reads about one op outside the allow-list."""
    place = f" (from {where})" if where else ""
    return (f"op {target} is not allowed in the forward{place}. Allowed: nn.Linear, "
            "nn.Embedding, matmul/@/einsum, sum, elementwise add and multiply, relu, "
            "indexing and reshaping, and fixed tensors")


def _check_literal(value: Any, step: str) -> None:
    """Arguments must be plain data: refs, numbers, strings, lists and a few torch enums."""
    if value is None or isinstance(value, bool | int | str):
        return
    if isinstance(value, float):
        return
    if isinstance(value, list):
        for v in value:
            _check_literal(v, step)
        return
    if isinstance(value, dict) and len(value) == 1:
        (key, item), = value.items()
        if key == "ref" and isinstance(item, str):
            return
        if key == "dtype" and item in _DTYPES:
            return
        if key == "device" and isinstance(item, str):
            return
        if key == "layout" and item == "strided":
            return
        if key == "memory_format" and item in ("contiguous_format", "preserve_format"):
            return
        if key == "float" and item in ("inf", "-inf", "nan"):
            return
    raise GraphError("bad_graph", f"node {step}: argument {str(value)[:120]} is not a constant the "
                     "allow-list accepts (tensors and scalars fixed at export)")


def parse_graph(text: str, tensors: Mapping[str, torch.Tensor]) -> Program:
    """Check a graph.json against the allow-list and return the program it describes."""
    try:
        return _parse(text, tensors)
    except RecursionError:
        raise GraphError("bad_graph", "graph.json is nested too deeply") from None


def _parse(text: str, tensors: Mapping[str, torch.Tensor]) -> Program:
    try:
        graph = json.loads(text)
    except ValueError as exc:
        raise GraphError("bad_graph", f"graph.json is not valid JSON: {exc}") from None
    if not isinstance(graph, dict) or graph.get("format") != 1:
        raise GraphError("bad_graph", "graph.json has an unknown format")
    inputs = graph.get("inputs")
    if not isinstance(inputs, list) or len(inputs) != 1 or not isinstance(inputs[0], str):
        raise GraphError("bad_graph", "the forward must take exactly one input: the token ids")
    input_name = inputs[0]
    if input_name in tensors:
        raise GraphError("bad_graph", "the input's name is also the name of a stored tensor")
    tensor_names = graph.get("tensors")
    if not isinstance(tensor_names, list) or set(tensor_names) != set(tensors):
        raise GraphError("bad_graph", "graph.json and the tensors file name different tensors")
    defined = {input_name, *tensors}
    steps = [_parse_step(raw, defined) for raw in _node_list(graph)]
    output = graph.get("output")
    if not (isinstance(output, list) and len(output) == 1 and isinstance(output[0], dict)
            and isinstance(output[0].get("ref"), str) and output[0]["ref"] in defined):
        raise GraphError("stateful", "the forward must return exactly one tensor (the logits) and "
                         "change no state (no buffer updates)")
    out_name = output[0]["ref"]
    _check_depends_on_input(steps, input_name, out_name)
    last_use: dict[str, int] = {}
    for i, step in enumerate(steps):
        for ref in refs_of([step.args, list(step.kwargs.values())]):
            last_use[ref] = i
    return Program(input_name, dict(tensors), tuple(steps), out_name, last_use)


def _node_list(graph: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    nodes = graph.get("nodes")
    if not isinstance(nodes, list):
        raise GraphError("bad_graph", "graph.json has no node list")
    if len(nodes) > MAX_NODES:
        raise GraphError("bad_graph", f"the forward has {len(nodes)} ops, more than the "
                         f"limit {MAX_NODES}")
    forbidden = []
    for raw in nodes:
        if not isinstance(raw, dict) or not isinstance(raw.get("target"), str):
            raise GraphError("bad_graph", "graph.json has a malformed node")
        if _resolve_op(raw["target"]) is None:
            forbidden.append(forbidden_message(raw["target"], str(raw.get("where", ""))[:400]))
    if forbidden:
        more = f" (and {len(forbidden) - 1} more forbidden ops)" if len(forbidden) > 1 else ""
        raise GraphError("forbidden_op", forbidden[0] + more)
    return nodes


def _parse_step(raw: Mapping[str, Any], defined: set[str]) -> Step:
    name, target = raw.get("name"), str(raw["target"])
    args, kwargs = raw.get("args"), raw.get("kwargs")
    if not isinstance(name, str) or not _NAME.match(name) or name in defined:
        raise GraphError("bad_graph", f"node name {str(name)[:60]!r} is invalid or defined twice")
    if not isinstance(args, list) or not isinstance(kwargs, dict):
        raise GraphError("bad_graph", f"node {name}: malformed arguments")
    _check_literal(args, name)
    _check_literal(list(kwargs.values()), name)
    for ref in refs_of([args, list(kwargs.values())]):
        if ref not in defined:
            raise GraphError("bad_graph", f"node {name} uses {ref[:60]!r} before it is defined")
    defined.add(name)
    op = _resolve_op(target)
    assert op is not None  # _node_list refused every other target
    if op is not operator.getitem:
        check_ref_positions(op, args, kwargs, name)
    if target.startswith("aten.einsum.") and not (
            len(args) in (2, 3) and isinstance(args[1], list) and len(args[1]) <= 2):
        # With three or more operands torch's pairwise contraction can build intermediates
        # far larger than any output the memory check sees.
        raise GraphError("bad_graph", f"node {name}: einsum takes at most two operands here "
                         f"(from {raw.get('where', '')})")
    return Step(name, target, op, args, kwargs, str(raw.get("where", ""))[:400])


def _check_depends_on_input(steps: Sequence[Step], input_name: str, out_name: str) -> None:
    """The logits must be computed from the tokens, not stored (a table of precomputed
    outputs would otherwise be a constant)."""
    reach = {input_name}
    for step in steps:
        if any(r in reach for r in refs_of([step.args, list(step.kwargs.values())])):
            reach.add(step.name)
    if out_name not in reach:
        raise GraphError("ignores_input", "the forward's output does not depend on its input "
                         "tokens")


def _decode(value: Any, env: Mapping[str, Any], device: torch.device) -> Any:
    if isinstance(value, list):
        return [_decode(v, env, device) for v in value]
    if not isinstance(value, dict):
        return value
    (key, item), = value.items()
    if key == "ref":
        return env[item]
    if key == "dtype":
        return getattr(torch, item)
    if key == "device":
        return device  # every tensor lives where the scorer runs the forward
    if key == "layout":
        return torch.strided
    if key == "memory_format":
        return getattr(torch, item)
    return float(item)  # {"float": "inf" | "-inf" | "nan"}


def _call(step: Step, env: Mapping[str, Any], device: torch.device) -> Any:
    args = _decode(step.args, env, device)
    kwargs = {k: _decode(v, env, device) for k, v in step.kwargs.items()}
    kwargs.pop("pin_memory", None)
    packet = step.target.split(".")[1] if step.target.startswith("aten.") else ""
    if packet == "_to_copy":  # its dtype is checked by graph_rules (no float to integer)
        kwargs.pop("device", None)
    elif packet in NO_OPS:
        return None
    elif packet in CONSTANT_OPS:
        kwargs["device"] = device
    elif step.op is operator.getitem and not (
            len(args) == 2 and isinstance(args[0], list | tuple) and isinstance(args[1], int)):
        raise GraphError("bad_graph", f"node {step.name}: getitem only picks a tensor from a "
                         "list")
    return step.op(*args, **kwargs)


def run(program: Program, tokens: torch.Tensor, tensors: Mapping[str, torch.Tensor],
        checker: Checker | None = None, deadline: float | None = None) -> torch.Tensor:
    """The forward on `tokens`, step by step; `tensors` are the program's tensors on the
    device of `tokens` (meta tensors for a shape-only pass, which `checker` follows).
    Past `deadline` (time.monotonic()) it stops between two ops."""
    device = tokens.device
    env: dict[str, Any] = {program.input: tokens, **tensors}
    failed = "graph_error" if tokens.device.type == "meta" else "eval_failed"
    for i, step in enumerate(program.steps):
        if deadline is not None and time.monotonic() > deadline:
            raise GraphError("eval_timeout", f"the forward is too slow: stopped at node "
                             f"{step.name} past the time limit")
        try:
            with torch.no_grad():
                value = _call(step, env, device)
        except GraphError:
            raise
        except Exception as exc:  # a graph that torch refuses to run: the submission's fault
            raise GraphError(failed, f"node {step.name} ({step.target}, from {step.where}) "
                             f"failed: {type(exc).__name__}: {str(exc)[:300]}") from None
        if checker is not None:
            packet = step.target.split(".")[1] if step.target.startswith("aten.") else \
                "getitem"
            checker.node(step, packet, _decode(step.args, env, device),
                         {k: _decode(v, env, device) for k, v in step.kwargs.items()}, value)
        env[step.name] = value
        for ref in refs_of([step.args, list(step.kwargs.values())]):
            # Free intermediate values after their last use (inputs and tensors stay).
            if (program.last_use.get(ref) == i and ref in env
                    and ref not in (program.output, program.input) and ref not in tensors):
                del env[ref]
                if checker is not None:
                    checker.free(ref)
    out = env[program.output]
    if not isinstance(out, torch.Tensor):
        raise GraphError("bad_output_shape", "the forward's output is not a tensor")
    return out


def plan(program: Program, tensors: Mapping[str, torch.Tensor], batch: int, seq_len: int,
         vocab: int, limits: Limits) -> Cost:
    """Check, from shapes only and before any data: every value's dtype, where integers
    come from and the range of every index (graph_rules.Checker), the peak live memory
    and the multiply-adds of one forward (against `limits`), and the logits' shape."""
    meta = {k: torch.empty_like(v, device="meta") for k, v in tensors.items()}
    tokens = torch.zeros((batch, seq_len), dtype=torch.long, device="meta")
    used = set(program.last_use) | {program.output}
    checker = Checker(limits, vocab, (program.input, tokens), tensors, meta, used)
    out = run(program, tokens, meta, checker)
    check_output_shape(out, batch, seq_len, vocab)
    return checker.cost


def check_output_shape(out: torch.Tensor, batch: int, seq_len: int, vocab: int) -> None:
    """Logits must be [batch, seq_len, vocab] float32."""
    if tuple(out.shape) != (batch, seq_len, vocab):
        raise GraphError("bad_output_shape", f"the forward returns shape {tuple(out.shape)}, "
                         f"expected {(batch, seq_len, vocab)} (logits)")
    if out.dtype != torch.float32:
        raise GraphError("bad_output_shape", f"the forward returns {out.dtype}, expected "
                         "float32 logits")


@dataclass(frozen=True)
class Masking:
    """How evaluation batches are made: shape, mask id, fraction masked, mask seed."""

    batch_size: int
    seq_len: int
    vocab_size: int
    mask_id: int
    fraction: float
    seed: int


def eval_windows(tokens: Any, seq_len: int, count: int) -> Any:
    """[count, seq_len] int64 windows spread evenly over a 1-D token array (fewer, disjoint
    ones when the array is short)."""
    import numpy as np

    count = min(count, len(tokens) // seq_len)
    starts = np.linspace(0, len(tokens) - seq_len, num=count).astype(np.int64)
    return np.stack([np.asarray(tokens[s:s + seq_len], dtype=np.int64) for s in starts])


def batch_rows(batches: int, step: int, seed: int) -> Any:
    """[batches, step]: the windows (by index) that each scored batch holds, every one of
    the first batches * step windows once, in an order drawn from `seed`. Windows are laid
    out in text order, so batches of consecutive windows held neighbouring stretches of
    text, and a forward that mixes its rows (reshape, permute and as_strided are allowed)
    could read context across a row's edge; in scattered batches a row's neighbours are
    unrelated text. A model that reads each row alone loses exactly what it lost before:
    each window keeps its mask (masked_loss)."""
    import numpy as np

    order = np.random.default_rng(seed).permutation(batches * step)
    return order.reshape(batches, step)


def masked_loss(program: Program, tensors: Mapping[str, torch.Tensor], windows: Any,
                masking: Masking, device: torch.device, time_limit_s: float) -> float:
    """Mean cross-entropy over the masked positions of all windows: masks drawn here with
    the fixed seed, the forward run by `run` on batches of scattered windows (batch_rows),
    the loss computed here."""
    on_device = {k: v.to(device) for k, v in tensors.items()}
    gen = torch.Generator().manual_seed(masking.seed)
    total, count = 0.0, 0
    # Checked inside the forward (between ops), so one slow batch cannot run on; plan()
    # has bounded the work of each op beforehand.
    deadline = time.monotonic() + time_limit_s
    step = masking.batch_size
    batches = len(windows) // step
    # Each window's mask as it was drawn when batches were consecutive windows: the same
    # stream, batch after batch, so a window keeps its mask whatever batch it is scored in.
    masks = torch.cat([torch.zeros((0, masking.seq_len), dtype=torch.bool)] + [
        torch.rand((step, masking.seq_len), generator=gen) < masking.fraction
        for _ in range(batches)])
    for i, rows in enumerate(batch_rows(batches, step, masking.seed)):
        targets = torch.from_numpy(windows[rows])
        mask = masks[torch.from_numpy(rows)]
        inputs = torch.where(mask, torch.full_like(targets, masking.mask_id), targets)
        logits = run(program, inputs.to(device), on_device, deadline=deadline)
        check_output_shape(logits, step, masking.seq_len, masking.vocab_size)
        picked = logits.float()[mask.to(device)]
        loss = torch.nn.functional.cross_entropy(picked, targets[mask].to(device),
                                                 reduction="sum")
        total, count = total + float(loss), count + int(mask.sum())
        if time.monotonic() > deadline:
            raise GraphError("eval_timeout", f"the forward is too slow: {i + 1} "
                             f"batches took more than {time_limit_s:.0f} s")
    return total / max(count, 1)
