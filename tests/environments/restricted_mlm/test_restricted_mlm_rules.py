"""The value rules of graph_rules.py on their own (no sandbox, no prepared assets): dtypes,
where integers come from, index ranges, the live-memory and multiply-add bounds checked
from shapes before anything runs, and the deadline inside a forward.

The cheats marked new were accepted by 1.0.1's checks (issue 26, classes 2 and 3); they
are exported here in the test process (they are our files) and checked by `plan`."""

from __future__ import annotations

import importlib.util
import json
import math
import shutil
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from mlm_cheats import cheat_file
from torch import nn

from rebench.environments.restricted_mlm.export_child import (
    example_batch,
    export_model,
    graph_data,
)
from rebench.environments.restricted_mlm.graph_check import (
    GraphError,
    Limits,
    Masking,
    batch_rows,
    masked_loss,
    parse_graph,
    plan,
    run,
)

VOCAB = 2048  # the cpu profile's
CPU_LIMITS = Limits(1 << 26, 2 << 30, 8_000_000_000)  # the cpu profile's
# cheat -> the reason code `plan` must give (all accepted by 1.0.1's checks)
NEW_CHEATS = {
    "int_sum_exp_table.py": "forbidden_cast",
    "activation_index_select.py": "forbidden_cast",
    "activation_gather.py": "forbidden_cast",
    "bool_sum_mask.py": "forbidden_dtype",
    "half_precision_cast.py": "forbidden_dtype",
    "int_sum_reduction.py": "forbidden_cast",
    "float_bits_view.py": "forbidden_cast",
    "float64_weights.py": "forbidden_dtype",
    "index_range_probe.py": "bad_index",
    "live_memory_blowup.py": "too_much_memory",
    "compute_blowup.py": "too_much_compute",
}


def _export(model: nn.Module, vocab: int = VOCAB) -> tuple[str, dict[str, torch.Tensor]]:
    torch.manual_seed(0)
    graph, tensors = graph_data(export_model(model, example_batch(vocab, 128, 8, 0)))
    return json.dumps(graph), tensors


def _cheat(name: str, tmp_path: Path) -> nn.Module:
    shutil.copyfile(cheat_file(name), tmp_path / name)
    (tmp_path / "config.json").write_text(json.dumps({"vocab_size": VOCAB}))
    spec = importlib.util.spec_from_file_location(f"mlm_cheat_{name[:-3]}", tmp_path / name)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    model: nn.Module = module.get_trained_model()
    return model


@pytest.mark.parametrize("name", sorted(NEW_CHEATS))
def test_new_cheat_is_refused_before_it_runs(name: str, tmp_path: Path) -> None:
    text, tensors = _export(_cheat(name, tmp_path))
    program = parse_graph(text, tensors)  # every op name is on the allow-list
    start = time.monotonic()
    with pytest.raises(GraphError) as info:
        plan(program, tensors, 8, 128, VOCAB, CPU_LIMITS)
    assert info.value.code == NEW_CHEATS[name], str(info.value)
    # Shapes only: the 2.25 GiB graph and the 1.7e10 multiply-adds cost nothing here.
    assert time.monotonic() - start < 30


class IndexArithmetic(nn.Module):
    """Integer work on token ids that the rules allow: a position table indexed by arange,
    a bigram table indexed by tokens[i] * V + tokens[i + 1], an int32 cast of ids."""

    def __init__(self, vocab: int) -> None:
        super().__init__()
        self.vocab = vocab
        self.tok = nn.Embedding(vocab, 8)
        self.pos = nn.Embedding(128, 8)
        self.pair = nn.Embedding(vocab * vocab, 8)
        self.head = nn.Linear(8, vocab)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        positions = torch.arange(tokens.shape[1], device=tokens.device)
        nxt = torch.cat([tokens[:, 1:], tokens[:, :1]], dim=1)
        pairs = torch.add(tokens * self.vocab, nxt).to(torch.int32)
        h = self.tok(tokens) + self.pos(positions) + self.pair(pairs)
        out: torch.Tensor = self.head(torch.relu(h))
        return out


def test_index_arithmetic_on_tokens_is_allowed() -> None:
    model = IndexArithmetic(64)
    text, tensors = _export(model, 64)
    program = parse_graph(text, tensors)
    cost = plan(program, tensors, 8, 128, 64, CPU_LIMITS)
    assert cost.macs > 0 and cost.peak_bytes > 0
    tokens = torch.randint(0, 64, (8, 128))
    with torch.no_grad():
        expected = model(tokens)
    torch.testing.assert_close(run(program, tokens, tensors), expected)


def test_index_range_follows_the_arithmetic() -> None:
    """tokens * V + next reaches V * V - 1: a table one row shorter is refused."""
    model = IndexArithmetic(64)
    model.pair = nn.Embedding(64 * 64 - 1, 8)
    text, tensors = _export(model, 64)
    with pytest.raises(GraphError) as info:
        plan(parse_graph(text, tensors), tensors, 8, 128, 64, CPU_LIMITS)
    assert info.value.code == "bad_index" and "0..4095" in str(info.value)


def test_memory_and_compute_bounds_are_profile_numbers() -> None:
    """The same graph passes or fails by the bounds alone (peak bytes, multiply-adds)."""
    model = IndexArithmetic(64)
    text, tensors = _export(model, 64)
    program = parse_graph(text, tensors)
    cost = plan(program, tensors, 8, 128, 64, CPU_LIMITS)
    for limits, code in ((Limits(1 << 26, cost.peak_bytes - 1, 1 << 40), "too_much_memory"),
                         (Limits(1 << 26, 1 << 40, cost.macs - 1), "too_much_compute")):
        with pytest.raises(GraphError) as info:
            plan(program, tensors, 8, 128, 64, limits)
        assert info.value.code == code


class Chain(nn.Module):
    """200 matmuls of 1024 x 1024 x 1024 (2e11 multiply-adds): seconds per batch."""

    def __init__(self) -> None:
        super().__init__()
        self.embed = nn.Embedding(64, 1024)
        self.mix = nn.Parameter(torch.eye(1024))
        self.head = nn.Linear(1024, 64)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        h = self.embed(tokens)
        for _ in range(200):
            h = h @ self.mix
        out: torch.Tensor = self.head(h)
        return out


def test_one_slow_batch_is_stopped_inside_the_forward() -> None:
    text, tensors = _export(Chain(), 64)
    program = parse_graph(text, tensors)
    windows = np.random.default_rng(0).integers(0, 64, (8, 128)).astype(np.int64)
    masking = Masking(8, 128, 64, 0, 0.15, 1)
    start = time.monotonic()
    with pytest.raises(GraphError) as info:
        masked_loss(program, tensors, windows, masking, torch.device("cpu"), 0.5)
    elapsed = time.monotonic() - start
    assert info.value.code == "eval_timeout"
    # Stopped between two ops, long before the batch's 200 matmuls (one is ~0.1 s idle).
    assert elapsed < 8, elapsed


class PerRow(nn.Module):
    """An embedding and a head: each row's logits from that row alone."""

    def __init__(self) -> None:
        super().__init__()
        self.embed = nn.Embedding(64, 16)
        self.head = nn.Linear(16, 64)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        out: torch.Tensor = self.head(self.embed(tokens))
        return out


def _consecutive_loss(program: Any, tensors: dict[str, torch.Tensor], windows: Any,
                      masking: Masking) -> float:
    """masked_loss as restricted_mlm 1.1.0 computed it: batch i held windows 8i..8i+7 (text
    order), each batch's masks drawn in turn from the seed."""
    gen = torch.Generator().manual_seed(masking.seed)
    step, total, count = masking.batch_size, 0.0, 0
    for i in range(0, len(windows) // step * step, step):  # the remainder is not scored
        targets = torch.from_numpy(windows[i:i + step])
        mask = torch.rand((step, masking.seq_len), generator=gen) < masking.fraction
        inputs = torch.where(mask, torch.full_like(targets, masking.mask_id), targets)
        logits = run(program, inputs, tensors)
        total += float(torch.nn.functional.cross_entropy(logits[mask], targets[mask],
                                                         reduction="sum"))
        count += int(mask.sum())
    return total / count


def test_batches_hold_scattered_windows_and_each_window_keeps_its_mask() -> None:
    """Windows are laid out in text order; a scored batch holds windows from scattered
    places (a forward that mixes rows finds unrelated text beside each row), and a model
    that reads each row alone loses what it lost when batches were consecutive windows."""
    text, tensors = _export(PerRow(), 64)
    program = parse_graph(text, tensors)
    windows = np.random.default_rng(0).integers(0, 64, (43, 128)).astype(np.int64)
    masking = Masking(8, 128, 64, 0, 0.15, 1)
    got = masked_loss(program, tensors, windows, masking, torch.device("cpu"), math.inf)
    assert got == pytest.approx(_consecutive_loss(program, tensors, windows, masking),
                                rel=1e-6)
    rows = batch_rows(250, 8, 1)
    assert sorted(rows.ravel().tolist()) == list(range(2000))
    assert (rows == batch_rows(250, 8, 1)).all()
    neighbours = sum(abs(int(a) - int(b)) == 1 for batch in rows for a in batch for b in batch)
    assert neighbours / 2 < 0.05 * 250 * 28  # consecutive batches: 7 of 28 pairs each


class Bigram(nn.Module):
    """Logits from the token before each position, out of a fixed table of log
    probabilities (row `vocab`: no token before). With `mix_rows`, a row's first position
    reads the last token of the row above it in the batch (the batch flattened and shifted
    by one, all allowed ops); without, it reads "no token"."""

    def __init__(self, table: torch.Tensor, mix_rows: bool) -> None:
        super().__init__()
        self.table = nn.Parameter(table, requires_grad=False)
        self.mix_rows = mix_rows

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        batch, seq = tokens.shape
        none = torch.full((batch, 1), self.table.shape[0] - 1, dtype=tokens.dtype)
        if self.mix_rows:
            flat = tokens.reshape(-1)
            prev = torch.cat([none[0], flat[:-1]]).reshape(batch, seq)
        else:
            prev = torch.cat([none, tokens[:, :-1]], dim=1)
        return torch.nn.functional.embedding(prev, self.table)


def test_a_forward_that_mixes_rows_gains_nothing_from_the_batch() -> None:
    """The attack the scattered batches close, run through export, the graph check and
    masked_loss: on text where each token follows from the one before, a bigram forward
    that reads the row above for its first position beats its per-row twin when batches
    hold consecutive windows (1.1.0: the row above is the text just before), and does worse
    than the twin on scattered batches (the row above is unrelated text). The two differ
    at each row's first position only."""
    vocab = 64
    rng = np.random.default_rng(0)
    stream = np.zeros(43 * 128, dtype=np.int64)
    for i in range(1, len(stream)):  # the next token is 5 * prev + 3 (mod 64), 90% of it
        stream[i] = (5 * stream[i - 1] + 3) % vocab if rng.random() < 0.9 else \
            rng.integers(1, vocab)
    windows = stream.reshape(43, 128)  # contiguous, in text order, as eval_windows lays them
    table = torch.full((vocab + 1, vocab), math.log(0.1 / vocab))
    for prev in range(vocab):
        table[prev, (5 * prev + 3) % vocab] = math.log(0.9 + 0.1 / vocab)
    table[vocab] = -math.log(vocab)  # no token before: uniform
    masking = Masking(8, 128, vocab, 0, 0.15, 1)
    losses = {}
    for mix in (True, False):
        text, tensors = _export(Bigram(table.clone(), mix), vocab)
        program = parse_graph(text, tensors)
        plan(program, tensors, 8, 128, vocab, CPU_LIMITS)  # every op allowed
        losses[mix] = (
            _consecutive_loss(program, tensors, windows, masking),
            masked_loss(program, tensors, windows, masking, torch.device("cpu"), math.inf))
    (mixed_before, mixed_now), (per_row_before, per_row_now) = losses[True], losses[False]
    assert per_row_now == pytest.approx(per_row_before, rel=1e-6)
    assert mixed_before < per_row_before - 0.005  # the exploit under consecutive batches
    assert mixed_now > per_row_now  # no gain on scattered ones


def test_graph_cannot_pass_tensors_as_sizes(tmp_path: Path) -> None:
    """A node reference where the schema takes an int would read a value (a data-dependent
    shape): refused at parse."""
    text, tensors = _export(_cheat("float_to_int_cast.py", tmp_path))
    graph: dict[str, Any] = json.loads(text)
    node = next(n for n in graph["nodes"] if n["target"] == "aten.linear.default")
    graph["nodes"].append({"name": "sliced", "target": "aten.slice.Tensor",
                           "args": [{"ref": node["name"]}, 0, 0, {"ref": graph["inputs"][0]}],
                           "kwargs": {}, "where": ""})
    graph["output"] = [{"ref": "sliced"}]
    with pytest.raises(GraphError) as info:
        parse_graph(json.dumps(graph), tensors)
    assert info.value.code == "bad_graph"
