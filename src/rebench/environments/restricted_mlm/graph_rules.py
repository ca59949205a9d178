"""The trusted rules on the VALUES of a checked forward: dtypes, where integers come from,
index ranges, and the memory and compute the graph needs. Decided from shapes only, before
any data is seen (graph_check.plan runs the graph on meta tensors with a `Checker`).

Written for the standard library and torch only (the agent's `evaluate.py` uses a copy).

Why: an op allow-list alone lets forbidden functions through as tables. A float rounded to
an integer (a cast, or a sum with an integer dtype) and used as an index into a table of
precomputed values computes any function (exp, division, ...) of an activation; a cast to
bool is a comparison, a cast to float16 a rounding. So:
- every value is float32 (activations, weights) or int64/int32 (indices); no bool, no
  float16/bfloat16/float64;
- an integer value is never computed from a float value: integers flow only from the input
  tokens and fixed integer tensors, through a few integer ops (indexing, reshaping, add,
  mul, sum, relu); so every index is a function of the tokens, never of an activation;
- every index is within its table for EVERY possible token input (value ranges tracked
  from the vocabulary and the fixed tensors), so no evaluation can fail on held-out data;
- the live memory of an evaluation (with tensor lifetimes, views sharing storage) and the
  multiply-adds of one forward are bounded by the profile before anything runs.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import torch

FLOAT = torch.float32
INT_RANGE = {torch.int64: 1 << 62, torch.int32: (1 << 31) - 1}  # |value| bound, no overflow
VALUE_DTYPES = frozenset({FLOAT, *INT_RANGE})
# Ops that may take or make integer values (the index arithmetic on token ids).
INT_OPS = frozenset({
    "add", "mul", "sum", "relu", "embedding", "index", "index_select", "gather", "cat",
    "stack", "_to_copy", "view", "_unsafe_view", "reshape", "unsqueeze", "squeeze", "permute",
    "transpose", "expand", "slice", "select", "as_strided", "t", "clone", "contiguous",
    "alias", "detach", "split", "split_with_sizes", "chunk", "unbind", "narrow", "flatten",
    "unflatten", "repeat", "lift_fresh_copy", "getitem",
})
# Ops whose tensor argument is read for its shape only (their values are fixed).
SHAPE_ONLY_OPS = frozenset({"zeros_like", "ones_like", "full_like", "new_zeros", "new_ones",
                            "new_full", "zeros", "ones", "full", "eye", "arange",
                            "scalar_tensor"})
MATMUL_OPS = frozenset({"mm", "bmm", "matmul", "addmm", "linear", "einsum"})


class GraphError(Exception):
    """The exported forward breaks a rule or cannot be run. `code` is the agent-visible
    reason (environment.FEEDBACK); the text says exactly what and where (shown by the
    agent's evaluate.py, kept private at an official score)."""

    def __init__(self, code: str, text: str, **details: Any) -> None:
        super().__init__(text)
        self.code = code
        self.details = details  # private: for the operator, never for the agent


@dataclass(frozen=True)
class Limits:
    """The profile's bounds on one forward, checked before it runs on data."""

    max_node_elements: int  # elements of any op's output
    max_live_bytes: int  # stored tensors + live values + one op's working copies
    max_forward_macs: int  # multiply-adds (or element touches) of one forward


@dataclass(frozen=True)
class Fact:
    """What the checker knows of one tensor value: its dtype and, for integers, bounds on
    its values over every possible token input."""

    dtype: torch.dtype
    lo: int = 0
    hi: int = 0


@dataclass
class Cost:
    """What one forward needs, from shapes: peak live bytes and multiply-adds."""

    peak_bytes: int = 0
    macs: int = 0


def refs_of(value: Any) -> list[str]:
    """The names an (already checked) argument refers to."""
    if isinstance(value, dict) and "ref" in value:
        return [str(value["ref"])]
    if isinstance(value, list):
        return [r for v in value for r in refs_of(v)]
    return []


def check_ref_positions(op: Any, args: Sequence[Any], kwargs: Mapping[str, Any],
                        name: str) -> None:
    """Node references only where the op's schema takes tensors: a tensor passed as an
    int (a size, a slice bound) would read its value and make shapes data-dependent."""
    schema = op._schema.arguments
    named = {a.name: a for a in schema}
    pairs = [(schema[i] if i < len(schema) else None, v) for i, v in enumerate(args)]
    pairs += [(named.get(k), v) for k, v in kwargs.items()]
    for arg, value in pairs:
        if refs_of(value) and (arg is None or "Tensor" not in str(arg.type)):
            raise GraphError("bad_graph", f"node {name}: a node reference is passed where "
                             f"{op} takes no tensor ({getattr(arg, 'name', '?')})")


def _interval(values: Sequence[Fact]) -> tuple[int, int]:
    return min(f.lo for f in values), max(f.hi for f in values)


def _mul(a: tuple[int, int], b: tuple[int, int]) -> tuple[int, int]:
    products = [x * y for x in a for y in b]
    return min(products), max(products)


def _number(value: Any) -> tuple[int, int] | None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(
            value):
        return None
    return math.floor(value), math.ceil(value)


class Checker:
    """Follows a meta run of the program (graph_check.run calls `node` after each op and
    `free` when a value dies): enforces the dtype and index rules and adds up the cost."""

    def __init__(self, limits: Limits, vocab: int, tokens: tuple[str, torch.Tensor],
                 tensors: Mapping[str, torch.Tensor], meta: Mapping[str, torch.Tensor],
                 used: set[str]) -> None:
        """`tokens`: the input's name and meta tensor; `tensors`: the stored tensors (their
        integer values bound the indices); `meta`: the meta tensors the run uses."""
        self.limits = limits
        self.cost = Cost()
        self.facts: dict[str, Any] = {tokens[0]: Fact(torch.int64, 0, vocab - 1)}
        self._storages: dict[int, list[int]] = {}  # storage id -> [bytes, live references]
        self._held: dict[str, list[int]] = {}  # value name -> storage ids it holds
        self._live = 0
        self.hold(tokens[0], tokens[1])
        for tname, value in tensors.items():
            if tname not in used:
                continue
            if value.dtype not in VALUE_DTYPES:
                raise GraphError("forbidden_dtype", f"tensor {tname[:60]} has dtype "
                                 f"{value.dtype}: values must be float32 (or int64/int32 "
                                 "indices)")
            lo, hi = (int(value.min()), int(value.max())) if (
                value.dtype in INT_RANGE and value.numel()) else (0, 0)
            self.facts[tname] = Fact(value.dtype, lo, hi)
            self.hold(tname, meta[tname])

    def hold(self, name: str, value: Any) -> None:
        """Count the storages of `value` as live (views share their base's storage)."""
        ids = []
        for t in _tensors(value):
            storage = t.untyped_storage()
            key = storage._cdata
            entry = self._storages.setdefault(key, [storage.nbytes(), 0])
            if entry[1] == 0:
                self._live += entry[0]
            entry[1] += 1
            ids.append(key)
        self._held[name] = ids

    def free(self, name: str) -> None:
        for key in self._held.pop(name, []):
            entry = self._storages[key]
            entry[1] -= 1
            if entry[1] == 0:
                self._live -= entry[0]
                # A dead storage's address may be reused by the next one of another size:
                # forget it, or the next value would be counted at the old size.
                del self._storages[key]

    def node(self, step: Any, packet: str, args: list[Any], kwargs: dict[str, Any],
             value: Any) -> None:
        """Check one op's output (meta) against the rules, record its facts and cost."""
        where = f"node {step.name} ({step.target}, from {step.where})"
        if value is None:  # a metadata assertion: no value
            return
        # (a list picked by getitem is no input of its own)
        ins: list[Fact] = [f for f in (self.facts.get(r) for r in refs_of(
            [step.args, list(step.kwargs.values())])) if isinstance(f, Fact)]
        outs = _tensors(value)
        for t in outs:
            if t.dtype not in VALUE_DTYPES:
                raise GraphError("forbidden_dtype", f"{where} makes a {t.dtype} value: values "
                                 "must be float32 (or int64/int32 indices from the tokens)")
        integer = any(f.dtype in INT_RANGE for f in ins) or any(t.dtype in INT_RANGE
                                                                 for t in outs)
        if any(t.dtype in INT_RANGE for t in outs) and packet not in SHAPE_ONLY_OPS and any(
                f.dtype not in INT_RANGE for f in ins):
            raise GraphError("forbidden_cast", f"{where} makes integers from floats (a "
                             "rounding, comparison or integer reduction of activations)")
        if integer and packet not in INT_OPS and packet not in SHAPE_ONLY_OPS:
            raise GraphError("bad_index", f"{where}: integers may only be indexed, reshaped, "
                             "added, multiplied or summed (index arithmetic on token ids)")
        _check_indices(packet, args, step, self.facts, where)
        if packet == "as_strided":
            _check_strided(args, where)
        self.facts[step.name] = self._out_facts(packet, args, kwargs, step, ins, value, where)
        self._account(step, packet, args, value, where)

    def _out_facts(self, packet: str, args: list[Any], kwargs: dict[str, Any], step: Any,
                   ins: list[Fact], value: Any, where: str) -> Any:
        if packet == "getitem":
            return self.facts[refs_of(step.args[0])[0]][args[1]]
        bounds = _int_bounds(packet, args, kwargs, step, ins, value)
        facts = []
        for t in _tensors(value):
            lo, hi = bounds if t.dtype in INT_RANGE else (0, 0)
            if t.dtype in INT_RANGE and max(abs(lo), abs(hi)) > INT_RANGE[t.dtype]:
                raise GraphError("bad_index", f"{where}: integer values may overflow "
                                 f"{t.dtype} (bounds {lo}..{hi})")
            facts.append(Fact(t.dtype, lo, hi))
        return facts if isinstance(value, list | tuple) else facts[0]

    def _account(self, step: Any, packet: str, args: list[Any], value: Any,
                 where: str) -> None:
        numel = sum(t.numel() for t in _tensors(value))
        lim = self.limits
        if numel > lim.max_node_elements:
            raise GraphError("too_much_memory", f"{where} makes {numel} elements, more than "
                             f"the limit {lim.max_node_elements}")
        self.hold(step.name, value)
        inputs = _tensors(args)
        # An op may copy its inputs (a matmul of a broadcast or strided view materializes
        # it) and write its output once more before the result is in place.
        working = 0 if packet not in MATMUL_OPS | {"sum", "embedding", "gather", "index",
                                                   "index_select"} else (
            sum(t.numel() * t.element_size() for t in inputs)
            + sum(t.numel() * t.element_size() for t in _tensors(value)))
        self.cost.peak_bytes = max(self.cost.peak_bytes, self._live + working)
        if self.cost.peak_bytes > lim.max_live_bytes:
            raise GraphError("too_much_memory", f"{where}: the forward needs "
                             f"{self.cost.peak_bytes / 2**20:.0f} MiB live, more than the "
                             f"limit {lim.max_live_bytes / 2**20:.0f} MiB")
        self.cost.macs += node_macs(packet, args, value)
        if self.cost.macs > lim.max_forward_macs:
            raise GraphError("too_much_compute", f"{where}: the forward needs more than "
                             f"{lim.max_forward_macs:.3g} multiply-adds per batch")


def _tensors(value: Any) -> list[torch.Tensor]:
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, list | tuple):
        return [t for v in value for t in _tensors(v)]
    return []


def _int_bounds(packet: str, args: list[Any], kwargs: dict[str, Any], step: Any,
                ins: list[Fact], value: Any) -> tuple[int, int]:
    """Bounds on the integer values an op makes, over every token input."""
    ints = [f for f in ins if f.dtype in INT_RANGE]
    if packet in SHAPE_ONLY_OPS:
        return _constant_bounds(packet, args, kwargs, value)
    if packet == "embedding":
        return ins[0].lo, ins[0].hi  # the table's values
    if packet in ("index", "index_select", "gather"):
        return ins[0].lo, ins[0].hi  # a subset of the source's values
    if not ints:
        return 0, 0
    if packet == "add":
        a = (ins[0].lo, ins[0].hi)
        b = (ins[1].lo, ins[1].hi) if len(ins) > 1 else _number(args[1]) or (0, 0)
        alpha = _number(kwargs.get("alpha", args[2] if len(args) > 2 else 1)) or (1, 1)
        b = _mul(b, alpha)
        return a[0] + b[0], a[1] + b[1]
    if packet == "mul":
        a = (ins[0].lo, ins[0].hi)
        b = (ins[1].lo, ins[1].hi) if len(ins) > 1 else _number(args[1]) or (0, 0)
        return _mul(a, b)
    if packet == "sum":
        n = max(args[0].numel() // max(sum(t.numel() for t in _tensors(value)), 1), 1)
        return min(ints[0].lo, n * ints[0].lo), max(ints[0].hi, n * ints[0].hi)
    if packet == "relu":
        return max(ints[0].lo, 0), max(ints[0].hi, 0)
    return _interval(ints)  # reshaping, slicing, cat, casts between integer types


def _constant_bounds(packet: str, args: list[Any], kwargs: dict[str, Any],
                     value: Any) -> tuple[int, int]:
    if packet in ("full", "full_like", "new_full", "scalar_tensor"):
        fill = args[1] if packet != "scalar_tensor" else args[0]
        fill = kwargs.get("fill_value", fill) if packet != "scalar_tensor" else fill
        got = _number(fill)
        return got if got is not None else (0, 0)
    if packet == "arange":
        nums = [float(a) for a in args if isinstance(a, int | float) and not isinstance(a, bool)]
        start, step = (nums[0], nums[2] if len(nums) > 2 else 1.0) if len(nums) > 1 else (0, 1)
        n = max(sum(t.numel() for t in _tensors(value)), 1)
        ends = (start, start + (n - 1) * step)
        return math.floor(min(ends)), math.ceil(max(ends))
    return 0, 1  # zeros, ones, eye


def _check_indices(packet: str, args: list[Any], step: Any, facts: Mapping[str, Any],
                   where: str) -> None:
    """Every index op's indices within their table for every token input."""
    pairs: list[tuple[Any, int, bool]] = []  # (raw index arg, table size, negatives wrap)
    if packet == "embedding":
        pairs.append((step.args[1], args[0].shape[0], False))
    elif packet in ("index_select", "gather"):
        dim = args[1] % max(args[0].dim(), 1)
        pairs.append((step.args[2], args[0].shape[dim] if args[0].dim() else 1, False))
    elif packet == "index":
        for i, raw in enumerate(step.args[1]):
            if raw is not None:
                pairs.append((raw, args[0].shape[i], True))
    for raw, size, wraps in pairs:
        for ref in refs_of(raw):
            fact = facts.get(ref)
            low = -size if wraps else 0
            if not isinstance(fact, Fact) or fact.dtype not in INT_RANGE:
                raise GraphError("bad_index", f"{where}: indices must be integers")
            if fact.lo < low or fact.hi > size - 1:
                raise GraphError("bad_index", f"{where}: indices may take values "
                                 f"{fact.lo}..{fact.hi}, outside {low}..{size - 1} "
                                 "for some token input")


def _check_strided(args: list[Any], where: str) -> None:
    """as_strided may only address elements of its input's storage (the meta pass does
    not check this; a real one would read other memory, or fail at evaluation)."""
    src, size, stride = args[0], list(args[1]), list(args[2])
    offset = args[3] if len(args) > 3 and args[3] is not None else src.storage_offset()
    if any(s < 0 for s in stride) or offset < 0:
        raise GraphError("bad_graph", f"{where}: negative strides or offset")
    if all(n > 0 for n in size):
        last = offset + sum((n - 1) * s for n, s in zip(size, stride, strict=False))
        if last >= src.untyped_storage().nbytes() // src.element_size():
            raise GraphError("bad_graph", f"{where}: as_strided reaches past its input")


def node_macs(packet: str, args: list[Any], value: Any) -> int:
    """Multiply-adds of one op from shapes (element touches for the others)."""
    out = sum(t.numel() for t in _tensors(value))
    if packet in ("mm", "bmm", "matmul"):
        return out * (int(args[0].shape[-1]) if args[0].dim() else 1)
    if packet == "addmm":
        return out * int(args[1].shape[-1]) + out
    if packet == "linear":
        return out * int(args[0].shape[-1]) + out
    if packet == "einsum":
        return _einsum_macs(str(args[0]), _tensors(args[1]))
    return max(out, sum(t.numel() for t in _tensors(args)))


def _einsum_macs(equation: str, operands: list[torch.Tensor]) -> int:
    """The product of every index's size: the work of a two-operand contraction."""
    sizes: dict[str, int] = {}
    ellipsis: list[int] = []
    terms = equation.replace(" ", "").split("->")[0].split(",")
    for term, t in zip(terms, operands, strict=False):
        shape = list(t.shape)
        head, _, tail = term.partition("...")
        middle = shape[len(head):len(shape) - len(tail)] if "..." in term else []
        for letter, n in zip(head + tail, shape[:len(head)] + shape[len(shape) - len(tail):],
                             strict=False):
            sizes[letter] = max(sizes.get(letter, 1), n)
        for i, n in enumerate(reversed(middle)):
            if i < len(ellipsis):
                ellipsis[i] = max(ellipsis[i], n)
            else:
                ellipsis.append(n)
    total = 1
    for n in [*sizes.values(), *ellipsis]:
        total *= n
    return total
