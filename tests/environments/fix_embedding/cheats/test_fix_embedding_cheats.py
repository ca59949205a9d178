"""Deliberately bad or cheating submissions: each must score NaN with a clear message (or
no better than the start), and none may run code in the scorer."""

from __future__ import annotations

import json
import math
import os
import shutil
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
import torch

from rebench.assets.gpt import GPT, GPTConfig
from rebench.core.score import ScoreResult
from rebench.core.spec import EnvironmentSpec, Profile
from rebench.harness.scoring import official_score


def _large(assets: Path) -> tuple[GPTConfig, dict[str, torch.Tensor]]:
    record = json.loads((assets / "protected" / "eval.json").read_text())
    state = torch.load(assets / "public" / "large_model.pth", weights_only=True)
    return GPTConfig.from_json(record["config"]), state


def _submit(tmp: Path, obj: object) -> Path:
    solution = tmp / "solution"
    solution.mkdir(exist_ok=True)
    torch.save(obj, solution / "fixed_model.pth")
    return solution


@pytest.fixture
def score(fe_score: Callable[[Path], ScoreResult]) -> Callable[[Path], ScoreResult]:
    return fe_score


def assert_rejected(result: ScoreResult, fragment: str) -> None:
    """NaN with an agent-visible message that says why."""
    assert math.isnan(result.raw), result
    assert fragment in result.message["error"], result.message


def test_missing_file(score, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    (tmp_path / "empty").mkdir()
    assert_rejected(score(tmp_path / "empty"), "fixed_model.pth not found")


def test_different_architecture(score, fe_assets: Path, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    cfg, _ = _large(fe_assets)
    deeper = GPT(GPTConfig(cfg.vocab_size, cfg.block_size, cfg.n_layer + 1, cfg.n_head, cfg.n_embd))
    assert_rejected(score(_submit(tmp_path, deeper.state_dict())), "keys differ")
    wider = GPT(GPTConfig(cfg.vocab_size, cfg.block_size, cfg.n_layer, cfg.n_head, cfg.n_embd + 32))
    assert_rejected(score(_submit(tmp_path, wider.state_dict())), "has shape")


def test_the_small_model_is_not_accepted(score, fe_assets: Path, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    solution = tmp_path / "solution"
    solution.mkdir()
    shutil.copyfile(fe_assets / "public" / "small_correct_model.pth", solution / "fixed_model.pth")
    assert_rejected(score(solution), "keys differ")


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_non_finite_weights(score, fe_assets: Path, tmp_path: Path, bad: float) -> None:  # type: ignore[no-untyped-def]
    _, state = _large(fe_assets)
    state["transformer.h.0.mlp.c_fc.weight"][3, 5] = bad
    assert_rejected(score(_submit(tmp_path, state)), "NaN or infinite")


def test_wrong_dtype_and_non_tensor(score, fe_assets: Path, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    _, state = _large(fe_assets)
    doubled = {k: v.double() for k, v in state.items()}
    assert_rejected(score(_submit(tmp_path, doubled)), "dtype")
    state["transformer.ln_f.bias"] = [0.0] * 4  # type: ignore[assignment]
    assert_rejected(score(_submit(tmp_path, state)), "not a plain dense tensor")
    assert_rejected(score(_submit(tmp_path, [1, 2, 3])), "state dict")


def test_truncated_file(score, fe_assets: Path, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    data = (fe_assets / "public" / "large_model.pth").read_bytes()
    solution = tmp_path / "solution"
    solution.mkdir()
    (solution / "fixed_model.pth").write_bytes(data[: len(data) // 2])
    assert_rejected(score(solution), "could not be loaded")


def test_oversized_file(score, fe_assets: Path, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    _, state = _large(fe_assets)
    state["padding"] = torch.zeros(20_000_000)  # 80 MB beside a ~4 MB model
    assert_rejected(score(_submit(tmp_path, state)), "too large")


class _RunsCode:
    """Unpickling this would create the marker file (it must never happen)."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):  # type: ignore[no-untyped-def]
        return (os.system, (f"touch {self.marker}",))


def test_pickle_that_runs_code_is_refused_and_never_runs(
    fe_spec: EnvironmentSpec, fe_cpu: Profile, fe_assets: Path, tmp_path: Path
) -> None:
    marker = tmp_path / "pwned"
    _, state = _large(fe_assets)
    state["transformer.ln_f.weight"] = _RunsCode(marker)  # type: ignore[assignment]
    solution = _submit(tmp_path, state)
    # Official scoring: a fresh scorer process, as in a run.
    from rebench.sandbox import Isolation

    result = official_score(fe_spec, fe_cpu, solution, Isolation.LOCAL)
    assert_rejected(result, "weights_only")
    assert not marker.exists()


def test_held_out_split_is_not_reachable_from_the_workspace(fe_assets: Path) -> None:
    """A model trained on the held-out split would beat honest work, so the split must not
    be in anything the agent gets: no public file holds its text."""
    test = np.fromfile(fe_assets / "protected" / "test.bin", dtype="<u2")
    public_bytes = [p.read_bytes() for p in (fe_assets / "public").rglob("*.bin")]
    rng = np.random.default_rng(0)
    for start in rng.integers(0, len(test) - 64, size=20):
        needle = test[start : start + 64].tobytes()
        assert not any(needle in hay for hay in public_bytes)


def test_sandboxed_solution_code_cannot_read_protected_assets(
    fe_spec: EnvironmentSpec, fe_cpu: Profile, fe_assets: Path, tmp_path: Path
) -> None:
    """Where bubblewrap is available, the scorer's sandbox hides the asset cache."""
    import subprocess

    try:
        from rebench.sandbox import Isolation, default_isolation

        isolation = default_isolation()
    except ImportError:
        pytest.skip("no bubblewrap sandbox in this build")
    if isolation is Isolation.LOCAL:
        pytest.skip("bubblewrap is not available here")
    from rebench.harness.context import ScoringContext

    solution = tmp_path / "solution"
    solution.mkdir()
    (solution / "visible.txt").write_text("ok")
    ctx = ScoringContext(fe_spec, fe_cpu, solution, fe_assets, tmp_path / "s", isolation)
    # Positive control: the sandbox runs and sees the solution, so a failure below is the
    # hiding at work, not a sandbox that does not start.
    control = subprocess.run(ctx.untrusted_argv(["cat", "visible.txt"]), capture_output=True,
                             timeout=60)
    if control.returncode != 0 or control.stdout != b"ok":
        pytest.skip(f"the sandbox does not run here: {control.stderr[-300:]!r}")
    argv = ctx.untrusted_argv(["cat", str(fe_assets / "protected" / "test.bin")])
    proc = subprocess.run(argv, capture_output=True, timeout=60)
    assert proc.returncode != 0 and not proc.stdout


def test_compiled_model_prefix_is_accepted(score, fe_assets: Path, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """Honest path check: torch.compile's `_orig_mod.` prefix scores like the plain dict."""
    _, state = _large(fe_assets)
    plain = score(_submit(tmp_path, state))
    prefixed = score(_submit(tmp_path, {f"_orig_mod.{k}": v for k, v in state.items()}))
    assert plain.valid and prefixed.raw == plain.raw
