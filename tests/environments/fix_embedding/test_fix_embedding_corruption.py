"""The corruption on a tiny model (no prepare): it lands on the paper's corrupted-to-uniform
loss ratio, never above uniform, and depends on the secret alone."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from rebench.assets.gpt import GPTConfig
from rebench.assets.secret import secret_rng
from rebench.assets.train import TrainConfig, evaluate, new_model, train
from rebench.environments.fix_embedding.corruption import (
    CORRUPTED_TO_UNIFORM,
    LOSS_TOLERANCE,
    Scrambler,
    corrupt_to_target,
)

CFG = GPTConfig(vocab_size=97, block_size=16, n_layer=1, n_head=2, n_embd=32)


@pytest.fixture(scope="module")
def tiny() -> tuple[torch.nn.Module, np.ndarray]:
    """A tiny GPT that has learnt a noisy counting sequence well below uniform's loss."""
    torch.set_num_threads(1)
    rng = np.random.default_rng(0)
    data = (np.arange(20_000) * 7 + rng.integers(0, 3, 20_000)) % CFG.vocab_size
    data = data.astype(np.uint16)
    model = new_model(CFG, seed=0)
    cfg = TrainConfig(steps=150, batch_size=16, lr=1e-2, min_lr=1e-3, warmup_steps=10)
    train(model, data, cfg, torch.device("cpu"))
    return model, data


def _measure(data: np.ndarray):  # type: ignore[no-untyped-def]
    return lambda model, windows: evaluate(model, data, windows, 16, torch.device("cpu"))


def test_the_start_lands_on_the_target_below_uniform(tiny) -> None:  # type: ignore[no-untyped-def]
    model, data = tiny
    measure = _measure(data)
    clean = measure(model, 128)
    uniform = math.log(CFG.vocab_size)
    assert clean < CORRUPTED_TO_UNIFORM * uniform - 1.0  # the model learnt something
    result = corrupt_to_target(model, secret_rng(b"s" * 32, "p"), measure, 128, clean)
    assert result.loss == pytest.approx(CORRUPTED_TO_UNIFORM * uniform, abs=LOSS_TOLERANCE)
    assert result.loss <= uniform and result.loss == pytest.approx(measure(result.model, 128))
    assert 0 < result.scrambled_rows <= CFG.vocab_size
    moved = result.permutation != np.arange(CFG.vocab_size)
    assert moved.sum() == result.scrambled_rows  # one cycle: every chosen row moves
    # Only the embedding changed.
    clean_state, bad_state = model.state_dict(), result.model.state_dict()
    assert [k for k in clean_state if not torch.equal(clean_state[k], bad_state[k])] == [
        "transformer.wte.weight"]


def test_the_corruption_depends_on_the_secret(tiny) -> None:  # type: ignore[no-untyped-def]
    model, _ = tiny
    a = Scrambler.draw(model, secret_rng(b"a" * 32, "p"))
    b = Scrambler.draw(model, secret_rng(b"b" * 32, "p"))
    again = Scrambler.draw(model, secret_rng(b"a" * 32, "p"))
    assert (a.order == again.order).all() and torch.equal(a.noise, again.noise)
    assert (a.order != b.order).any() and not torch.equal(a.noise, b.noise)


def test_a_model_worse_than_the_target_is_fully_scrambled(tiny) -> None:  # type: ignore[no-untyped-def]
    _, data = tiny
    untrained = new_model(CFG, seed=1)
    measure = _measure(data)
    result = corrupt_to_target(untrained, secret_rng(b"s" * 32, "p"), measure, 64,
                               measure(untrained, 64))
    assert result.scrambled_rows == CFG.vocab_size and result.noise == 0.0
