"""Fast checks: the folder, the FLOP formula, answer parsing, validity-only requested
scores, the recorded sweep, and one cheap final score (a tiny answer trains in seconds)."""

from __future__ import annotations

import itertools
import json
import math
import threading
import time
from pathlib import Path

import pytest
from conftest import ScoreFn

from rebench.core.discovery import validate_environment
from rebench.core.instructions import render_instructions
from rebench.core.spec import Aggregation, EnvironmentSpec
from rebench.environments.small_scaling_law.scoring import Answer, parse_answer
from rebench.environments.small_scaling_law.sweep import load_sweep
from rebench.environments.small_scaling_law.trainer import Recipe
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


@pytest.mark.parametrize("profile", ["cpu", "gpu"])
def test_the_sweep_table_is_on_the_budget_line(ssl_spec: EnvironmentSpec, profile: str) -> None:
    points = load_sweep(profile)
    assert len(points) >= 5
    params = ssl_spec.profile(profile).typed
    for p in points:
        assert 0.8 * params.target_flops <= p.flops <= params.target_flops
        assert math.isfinite(p.loss)
    assert len({p.n_embd for p in points}) == len(points)
    # L* is measured at prepare on the widths around the table's optimum.
    best = min(points, key=lambda p: p.loss)
    assert best.n_embd in [int(w) for w in params.lstar_widths.split(",")]


def test_the_gpu_sweep_has_its_optimum_inside_with_a_smooth_u(ssl_spec: EnvironmentSpec) -> None:
    """Issue 29: two widths on each side of the optimum, the loss rising monotonically away
    from it, neighbours within 0.1 nats of it; the table was made by this version's recipe
    (the merge refuses other parts)."""
    from rebench.environments.small_scaling_law import sweep

    table = json.loads(sweep.sweep_path("gpu").read_text())
    assert table["version"] == sweep.TRAINING_VERSION
    params = ssl_spec.profile("gpu").typed
    assert table["recipe"] == sweep.recipe_fingerprint(
        Recipe.of(params, int(table["recipe"]["vocab_size"])))
    points = sorted(load_sweep("gpu"), key=lambda p: p.n_embd)
    i = min(range(len(points)), key=lambda k: points[k].loss)
    assert 2 <= i <= len(points) - 3, [p.n_embd for p in points]
    losses = [p.loss for p in points]
    assert all(a > b for a, b in itertools.pairwise(losses[:i + 1]))
    assert all(a < b for a, b in itertools.pairwise(losses[i:]))
    assert max(losses[i - 1], losses[i + 1]) - losses[i] < 0.1
    assert set(table["curves"]) == {str(p.n_embd) for p in points}


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


def _part(profile: str, widths: list[int], **override: object) -> dict[str, object]:
    """A sweep part as `sweep --widths ... --out PART` writes it, with this code's recipe."""
    from rebench.core.discovery import load_spec
    from rebench.environments.small_scaling_law import sweep

    params = load_spec("small_scaling_law").profile(profile).typed
    recipe = Recipe.of(params, 2048)
    points = [{"n_embd": w, "max_iters": recipe.iters_for(w, recipe.target_flops),
               "flops": 1.0, "loss": 5.0 + abs(w - 32) / 100, "seconds": 1.0} for w in widths]
    part: dict[str, object] = {
        "profile": profile, "target_flops": recipe.target_flops, "eval": "e", "machine": "m",
        "date": "2026-12-03", "version": sweep.TRAINING_VERSION,
        "recipe": sweep.recipe_fingerprint(recipe), "train_tokens": 1000, "points": points,
        "curves": {str(w): [[1, 7.0], [2, 6.0]] for w in widths}}
    part.update(override)
    return part


def test_a_sweep_in_processes_runs_one_width_per_gpu_and_merges(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`sweep --processes N`: each width in its own process, on a GPU no other width is
    using at the time (or `per_gpu` widths to a GPU); one table, merged from the parts."""
    from rebench.environments.small_scaling_law import sweep

    seen: list[tuple[int, str]] = []
    busy: dict[str, int] = {}
    lock = threading.Lock()
    per_gpu = 1

    def fake_run(argv: list[str], env: dict[str, str], check: bool) -> None:
        assert check and argv[1:3] == ["-m", "rebench.environments.small_scaling_law.sweep"]
        width, gpu = int(argv[argv.index("--widths") + 1]), env["CUDA_VISIBLE_DEVICES"]
        with lock:
            assert busy.get(gpu, 0) < per_gpu, f"more than {per_gpu} widths on GPU {gpu}"
            busy[gpu] = busy.get(gpu, 0) + 1
            seen.append((width, gpu))
        time.sleep(0.05 if width == 24 else 0.01)  # the others finish first
        with lock:
            busy[gpu] -= 1
        Path(argv[argv.index("--out") + 1]).write_text(json.dumps(_part("gpu", [width])))

    monkeypatch.setattr(sweep.subprocess, "run", fake_run)
    monkeypatch.setattr(sweep.torch.cuda, "device_count", lambda: 1)
    with pytest.raises(SystemExit, match="needs as many GPUs"):
        sweep.run_sweep_in_processes("gpu", (24, 32), processes=2)
    assert seen == []
    monkeypatch.setattr(sweep.torch.cuda, "device_count", lambda: 2)
    out = tmp_path / "sweep.json"
    table = sweep.run_sweep_in_processes("gpu", (32, 24, 40, 48), processes=2, out=out)
    assert sorted(width for width, _ in seen) == [24, 32, 40, 48]
    assert {gpu for _, gpu in seen} == {"0", "1"}
    assert [p["n_embd"] for p in table["points"]] == [24, 32, 40, 48]  # type: ignore[index]
    assert set(table["curves"]) == {"24", "32", "40", "48"}  # type: ignore[arg-type]
    assert json.loads(out.read_text()) == table
    assert "2 processes" in str(table["machine"])
    # Small models: three widths share the one GPU.
    monkeypatch.setattr(sweep.torch.cuda, "device_count", lambda: 1)
    seen.clear()
    per_gpu = 3
    table = sweep.run_sweep_in_processes("gpu", (24, 32, 40), processes=3, out=out, per_gpu=3)
    assert {gpu for _, gpu in seen} == {"0"} and len(seen) == 3
    assert "3 to a GPU" in str(table["machine"])


def test_sweep_parts_merge_and_refuse_another_version_or_recipe(tmp_path: Path) -> None:
    """The sweep in pieces: parts of this version and recipe merge into one table sorted
    by width; a part of another version, another recipe, another profile or a width
    given twice is refused, naming the part."""
    from rebench.environments.small_scaling_law import sweep

    def write(name: str, part: dict[str, object]) -> Path:
        path = tmp_path / name
        path.write_text(json.dumps(part))
        return path

    good = [write("a.json", _part("gpu", [40, 16])), write("b.json", _part("gpu", [32]))]
    out = tmp_path / "sweep_gpu.json"
    table = sweep.merge_parts("gpu", good, out)
    assert [p["n_embd"] for p in table["points"]] == [16, 32, 40]  # type: ignore[index]
    assert json.loads(out.read_text()) == table
    old = write("old.json", _part("gpu", [24], version="1.3.0"))
    with pytest.raises(sweep.PartError, match=r"old\.json: made by small_scaling_law 1\.3\.0"):
        sweep.merge_parts("gpu", [*good, old], out)
    recipe = dict(_part("gpu", [24])["recipe"])  # type: ignore[call-overload]
    other = write("lr.json", _part("gpu", [24], recipe={**recipe, "lr": 1e-3}))
    with pytest.raises(sweep.PartError, match=r"lr.json: made with another recipe \(lr"):
        sweep.merge_parts("gpu", [*good, other], out)
    budget = write("budget.json", _part("gpu", [24], recipe={**recipe, "target_flops": 2e12}))
    with pytest.raises(sweep.PartError, match="target_flops"):
        sweep.merge_parts("gpu", [*good, budget], out)
    with pytest.raises(sweep.PartError, match="profile 'cpu'"):
        sweep.merge_parts("gpu", [write("cpu.json", _part("cpu", [24]))], out)
    with pytest.raises(sweep.PartError, match="a width is in two parts"):
        sweep.merge_parts("gpu", [*good, write("again.json", _part("gpu", [32]))], out)
    with pytest.raises(sweep.PartError, match="not a sweep part"):
        sweep.merge_parts("gpu", [write("junk.json", {"points": []})], out)
