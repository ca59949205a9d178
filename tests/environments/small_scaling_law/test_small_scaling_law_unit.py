"""Fast checks: the folder, the FLOP formula, answer parsing, validity-only requested
scores, the recorded sweep, and one cheap final score (a tiny answer trains in seconds)."""

from __future__ import annotations

import json
import math
import threading
import time
from pathlib import Path

import pytest
from conftest import ScoreFn

from rebench.core.discovery import validate_environment
from rebench.core.instructions import render_instructions
from rebench.core.spec import Aggregation, EnvironmentSpec, Profile
from rebench.environments.small_scaling_law.scoring import Answer, parse_answer
from rebench.environments.small_scaling_law.sweep import load_sweep
from rebench.environments.small_scaling_law.trainer import Recipe, ScalingParams
from rebench.scoring import ScoreKind

TINY = {"loss_prediction": 7.0, "max_iters": 4, "n_embd": 16}


def test_environment_folder_is_complete() -> None:
    assert validate_environment("small_scaling_law") == []


def test_spec_hides_the_score_and_keeps_the_last(ssl_spec: EnvironmentSpec) -> None:
    assert not ssl_spec.score_visible_to_agent
    assert ssl_spec.aggregation is Aggregation.LAST
    assert ssl_spec.solution_globs == ("answer.json",)  # nothing else is ever snapshotted
    assert [s.name for s in ssl_spec.services] == ["experiments"]


def test_instructions_fill_every_placeholder(ssl_spec: EnvironmentSpec) -> None:
    for name in ssl_spec.profiles:
        text = render_instructions(ssl_spec, ssl_spec.profile(name))
        assert "{n_embd" not in text and "{target" not in text and "rebench-service" in text


def test_flops_formula_is_the_papers() -> None:
    paper = Recipe(vocab_size=50257, n_layer=4, block_size=1024, batch_size=64, head_size=8,
                   min_n_embd=8, max_n_embd=4096, lr=1e-3, seed=0, threads=1,
                   target_flops=5e17, eval_batch_size=8, val_windows=8, heldout_windows=8)
    assert paper.flops(1000, 20000) == pytest.approx(4 * 1000**2 * 72 * 1024 * 64 * 20000)
    assert paper.flops(1000, 20000) / 5e17 == pytest.approx(0.755, abs=1e-3)
    assert paper.iters_for(1000, 5e17) == 26490


@pytest.mark.parametrize("text, ok", [
    ('{"loss_prediction": 4.4, "max_iters": 20, "n_embd": 64}', True),
    ('{"loss_prediction": 4, "max_iters": 20, "n_embd": 64}', True),
    ('{"loss_prediction": 4.4, "max_iters": 20.0, "n_embd": 64}', False),
    ('{"loss_prediction": true, "max_iters": 20, "n_embd": 64}', False),
    ('{"loss_prediction": 4.4, "max_iters": 20}', False),
    ("[4.4, 20, 64]", False),
])
def test_parse_answer(text: str, ok: bool) -> None:
    assert isinstance(parse_answer(text), Answer) is ok


def test_requested_scores_only_check_validity(score_answer: ScoreFn) -> None:
    result = score_answer({"loss_prediction": 5.0, "max_iters": 400, "n_embd": 16},
                          ScoreKind.REQUESTED)
    assert not result.valid and result.details == {"check_only": True}
    assert result.message["is_valid"] is True
    assert set(result.message) == {"is_valid", "frac_flops_used"}
    assert 0 < result.message["frac_flops_used"] <= 1.1


def test_the_sweep_table_is_on_the_budget_line(ssl_cpu: Profile) -> None:
    points = load_sweep("cpu")
    assert len(points) >= 5
    target = ssl_cpu.params_as(ScalingParams).target_flops
    for p in points:
        assert 0.8 * target <= p.flops <= target and math.isfinite(p.loss)
    assert len({p.n_embd for p in points}) == len(points)


def test_a_tiny_answer_scores_by_the_formula(score_answer: ScoreFn) -> None:
    result = score_answer(TINY)
    assert result.valid, result.message
    assert result.message == {"is_valid": True, "frac_flops_used": result.message[
        "frac_flops_used"]}
    d = result.details
    assert d["loss"] > d["l_star"]  # 4 steps of a 16-wide model are far from the optimum
    assert result.raw == pytest.approx(1 - ((d["loss"] - d["l_star"]) + abs(7.0 - d["loss"])))
    again = score_answer(TINY)  # fixed seeds: the same answer scores the same
    assert again.raw == pytest.approx(result.raw, abs=1e-6)


def test_a_sweep_in_processes_runs_one_width_per_gpu_and_merges(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`sweep --processes N`: each width in its own process, on a GPU no other width is
    using at the time; one table."""
    from rebench.environments.small_scaling_law import sweep

    seen: list[tuple[int, str]] = []
    busy: set[str] = set()
    lock = threading.Lock()

    def fake_run(argv: list[str], env: dict[str, str], check: bool) -> None:
        assert check and argv[1:3] == ["-m", "rebench.environments.small_scaling_law.sweep"]
        width, gpu = int(argv[argv.index("--widths") + 1]), env["CUDA_VISIBLE_DEVICES"]
        with lock:
            assert gpu not in busy, f"two widths on GPU {gpu} at once"
            busy.add(gpu)
            seen.append((width, gpu))
        time.sleep(0.05 if width == 384 else 0.01)  # the others finish first
        with lock:
            busy.discard(gpu)
        point = {"n_embd": width, "max_iters": 10, "flops": 1.0, "loss": 5.0 - width / 1000,
                 "seconds": 1.0}
        Path(argv[argv.index("--out") + 1]).write_text(json.dumps(
            {"profile": "gpu", "target_flops": 2e16, "eval": "e", "machine": "m",
             "date": "d", "points": [point]}))

    monkeypatch.setattr(sweep.subprocess, "run", fake_run)
    monkeypatch.setattr(sweep.torch.cuda, "device_count", lambda: 1)
    with pytest.raises(SystemExit, match="needs as many GPUs"):
        sweep.run_sweep_in_processes("gpu", (384, 512), processes=2)
    assert seen == []
    monkeypatch.setattr(sweep.torch.cuda, "device_count", lambda: 2)
    out = tmp_path / "sweep.json"
    table = sweep.run_sweep_in_processes("gpu", (384, 512, 640, 768), processes=2, out=out)
    assert sorted(width for width, _ in seen) == [384, 512, 640, 768]
    assert {gpu for _, gpu in seen} == {"0", "1"}
    assert [p["n_embd"] for p in table["points"]] == [384, 512, 640, 768]  # type: ignore[index]
    assert json.loads(out.read_text()) == table
    assert "2 processes" in str(table["machine"])
