"""How the large model is broken: rows of its (tied) token embedding are moved around, with
the rows and their new places drawn from the prepare secret, and noise is added.

Scrambling every row makes the model worse than a uniform predictor (with tied weights the
output side is scrambled too: 10.1 nats against ln 2048 = 7.62 on cpu), so a model that
knows nothing would beat the start. In the paper the corrupted GPT-2 scored 10.49 against
uniform's ln 50257 = 10.82. So the corruption is chosen by measured held-out loss, to land on
the paper's ratio times uniform's loss:
1. rows: the largest number of scrambled rows whose loss stays at or below the target;
2. noise: whole rows make the loss jump (one frequent token moves it by tenths of a nat),
   so Gaussian noise (also from the secret) is added to every row, at the strength that
   brings the loss onto the target. The start's loss is thus the same for every secret, and
   the start anchor holds for every prepare. (Scaling the embedding down instead would leave
   a free gain: scaling it back up.)
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch

from rebench.assets.gpt import GPT

# The paper's corrupted loss over a uniform predictor's: 10.49 / ln(50257).
CORRUPTED_TO_UNIFORM = 10.49 / math.log(50257)
SEARCH_WINDOWS = 64  # evaluation windows per step of the row search
SEARCH_STEPS = 256  # the row search resolves the count to vocab_size / SEARCH_STEPS
LOSS_TOLERANCE = 0.01  # nats: how close the noise search lands on the target

Measure = Callable[[GPT, int], float]  # (model, windows) -> held-out loss


@dataclass(frozen=True)
class Corruption:
    """The corrupted model: its embedding row i is the clean model's row permutation[i]."""

    model: GPT
    permutation: np.ndarray
    scrambled_rows: int
    noise: float  # noise standard deviation over the clean embedding's
    loss: float  # held-out loss on the scorer's full evaluation windows
    uniform_loss: float  # ln(vocab_size): what a model with all-equal logits scores

    @property
    def target_loss(self) -> float:
        return CORRUPTED_TO_UNIFORM * self.uniform_loss


@dataclass(frozen=True)
class Scrambler:
    """The clean model and the secret draws: which rows move (`order`) and the noise."""

    model: GPT
    order: np.ndarray
    noise: torch.Tensor  # standard normal, the embedding's shape

    @classmethod
    def draw(cls, model: GPT, rng: np.random.Generator) -> Scrambler:
        vocab, dim = model.config.vocab_size, model.config.n_embd
        order = rng.permutation(vocab)
        noise = torch.from_numpy(rng.standard_normal((vocab, dim), dtype=np.float32))
        return cls(model, order, noise)

    def __call__(self, rows: int, noise: float = 0.0) -> tuple[GPT, np.ndarray]:
        """A copy of the model in which the first `rows` tokens of `order` pass their
        embedding rows along one cycle (each takes the next one's row; the sets are nested
        in `rows`), every other row kept, plus `noise` x the embedding's std x the noise."""
        perm = np.arange(self.model.config.vocab_size)
        chosen = self.order[:rows]
        perm[chosen] = np.roll(chosen, -1)
        corrupted = GPT(self.model.config)
        corrupted.load_state_dict(self.model.state_dict())
        with torch.no_grad():
            weight = corrupted.transformer.wte.weight
            std = float(weight.std())
            weight.copy_(weight[torch.from_numpy(perm)] + noise * std * self.noise)
        return corrupted.eval(), perm


def _rows_at_most(loss_at: Callable[[int], float], vocab: int, target: float) -> int:
    """The largest row count (to vocab / SEARCH_STEPS) whose loss is at most `target`."""
    if loss_at(vocab) <= target:
        return vocab
    low, high = 0, vocab  # loss(low) <= target < loss(high)
    while high - low > max(1, vocab // SEARCH_STEPS):
        mid = (low + high) // 2
        low, high = (low, mid) if loss_at(mid) > target else (mid, high)
    return low


def _noise_onto(loss_at: Callable[[float], float], target: float, at_zero: float
                ) -> tuple[float, float]:
    """The noise level whose loss is within LOSS_TOLERANCE of `target` (at most `target`),
    and that loss, given the loss without noise is at most `target` (regula falsi, Illinois
    variant, on a bracket)."""
    low, f_low = 0.0, at_zero - target  # f <= 0 here
    high = 1.0
    f_high = loss_at(high) - target
    while f_high <= 0:  # strong enough noise drowns the embedding: loss above uniform's
        low, f_low = high, f_high
        high *= 2
        f_high = loss_at(high) - target
    side = 0
    for _ in range(30):
        if abs(f_low) <= LOSS_TOLERANCE:
            break
        mid = low - f_low * (high - low) / (f_high - f_low)
        f_mid = loss_at(mid) - target
        if f_mid <= 0:
            low, f_low = mid, f_mid
            if side == -1:
                f_high /= 2
            side = -1
        else:
            high, f_high = mid, f_mid
            if side == 1:
                f_low /= 2
            side = 1
    return low, f_low + target


def corrupt_to_target(
    model: GPT, rng: np.random.Generator, measure: Measure, windows: int, clean_loss: float
) -> Corruption:
    """Scramble rows, then add noise (see the module docstring), so the loss on the scorer's
    `windows` lands on the target, never above a uniform predictor's. `clean_loss` is the
    model's own loss on those windows."""
    vocab = model.config.vocab_size
    uniform = math.log(vocab)
    target = CORRUPTED_TO_UNIFORM * uniform
    scrambler = Scrambler.draw(model, rng)
    if clean_loss > target:
        # A model no better than the target (e.g. an untrained --base-model): nothing to
        # aim at, so every row is scrambled, as in the paper.
        corrupted, perm = scrambler(vocab)
        return Corruption(corrupted, perm, vocab, 0.0, measure(corrupted, windows), uniform)
    probe = min(windows, SEARCH_WINDOWS)
    rows = _rows_at_most(lambda r: measure(scrambler(r)[0], probe), vocab, target)
    at_zero = measure(scrambler(rows)[0], windows)
    while at_zero > target and rows > 0:  # the probe windows were a sample
        rows = rows * 9 // 10
        at_zero = measure(scrambler(rows)[0], windows)
    noise, loss = _noise_onto(
        lambda n: measure(scrambler(rows, n)[0], windows), target, at_zero)
    corrupted, perm = scrambler(rows, noise)
    return Corruption(corrupted, perm, rows, noise, loss, uniform)
