"""Answers that are public (issue 26, class 6): the scored budget and a token-noise rate
are drawn at prepare and L* measured for them, so the package's sweep table is not the
answer (since 1.5.0 its rescaled optimum is the starting answer); the gap to L* is clamped,
so an answer over the target cannot score above a perfect one; what the scorer says is a
declared reason code; the integrity rule flags an answer changed without experiments."""

from __future__ import annotations

import json
import math
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from conftest import ScoreFn

from rebench.core.calibration import resolve_anchors
from rebench.core.normalize import AnchorSource
from rebench.core.paths import PREPARED_ANCHORS
from rebench.core.spec import EnvironmentSpec, Profile
from rebench.environments.small_scaling_law.assets import (
    load_l_star,
    load_protected,
    load_trained,
    write_trained,
)
from rebench.environments.small_scaling_law.environment import FEEDBACK
from rebench.environments.small_scaling_law.integrity import unmeasured_answer_flags
from rebench.environments.small_scaling_law.prepare import add_noise, draw_noise, draw_target
from rebench.environments.small_scaling_law.scoring import raw_score
from rebench.environments.small_scaling_law.sweep import load_sweep
from rebench.harness.events import Event
from rebench.harness.scoring import agent_visible
from rebench.integrity.flags import Severity
from rebench.sandbox import Isolation
from rebench.scoring import ScoreKind, ScoringContext


def _best() -> tuple[int, int, float]:
    best = min(load_sweep("cpu"), key=lambda p: p.loss)
    return best.n_embd, best.max_iters, best.loss


def test_the_gap_to_l_star_is_clamped_at_zero() -> None:
    """Before 1.2.0 an answer trained on 1.1 x the target reached below L* and scored
    above 1; now the best a loss can do is match L*."""
    assert raw_score(4.50, 4.60, 4.50) == 1.0
    assert raw_score(4.70, 4.60, 4.65) == pytest.approx(1 - (0.10 + 0.05))


def test_the_drawn_budget_puts_the_table_optimum_over_budget(ssl_spec: EnvironmentSpec
                                                             ) -> None:
    for name in ssl_spec.profiles:
        p = ssl_spec.profile(name).typed
        assert p.target_high * p.max_budget_ratio < p.target_flops * 0.999
        draws = {draw_target(p, np.random.default_rng(seed)) for seed in range(50)}
        assert len(draws) > 10 and all(p.target_low <= d <= p.target_high for d in draws)


def test_l_star_is_measured_at_the_drawn_budget(ssl_cpu: Profile, ssl_assets: Path) -> None:
    p = ssl_cpu.typed
    data = load_protected(ssl_assets)
    assert p.target_low <= data.target_flops <= p.target_high
    recipe = json.loads((ssl_assets / "public" / "recipe.json").read_text())
    assert recipe["target_flops"] == data.target_flops
    table = json.loads((ssl_assets / "protected" / "lstar.json").read_text())
    assert [q["n_embd"] for q in table["points"]] == [int(w) for w in
                                                      p.lstar_widths.split(",")]
    assert table["target_flops"] == data.target_flops
    l_star = load_l_star(ssl_assets)
    assert math.isfinite(l_star) and l_star != pytest.approx(_best()[2], abs=1e-6)


def test_the_anchors_are_measured_on_the_drawn_setting(ssl_spec: EnvironmentSpec,
                                                       ssl_cpu: Profile,
                                                       ssl_assets: Path) -> None:
    """The start's and the reference's raw move with the draw (the reference's by 0.2
    between two cpu prepares), so the prepare measures both and normalization uses them;
    the agent's copy of the assets does not carry them."""
    anchors = resolve_anchors(ssl_spec, ssl_cpu)
    assert anchors.source is AnchorSource.PREPARE
    assert anchors.starting_raw < anchors.reference_raw <= 1.0
    recorded = json.loads((ssl_assets / PREPARED_ANCHORS).read_text())
    assert recorded["l_star"] == pytest.approx(load_l_star(ssl_assets))
    start = json.loads((ssl_assets / "public" / "answer.json").read_text())
    assert recorded["start"] == start and recorded["reference_experiments"] == 15
    assert not list((ssl_assets / "public").rglob("anchors.json"))


def test_the_prepare_keeps_every_held_out_training_it_ran(ssl_assets: Path) -> None:
    """trained.json holds the L* widths and both anchors' answers, with the losses the
    anchors were computed from."""
    trained = load_trained(ssl_assets)
    points = json.loads((ssl_assets / "protected" / "lstar.json").read_text())["points"]
    for p in points:
        assert trained[(p["n_embd"], p["max_iters"])] == p["loss"]
    recorded = json.loads((ssl_assets / PREPARED_ANCHORS).read_text())
    for name in ("start", "reference"):
        answer = recorded[name]
        loss = trained[(int(answer["n_embd"]), int(answer["max_iters"]))]
        raw = raw_score(loss, load_l_star(ssl_assets), float(answer["loss_prediction"]))
        assert raw == pytest.approx(recorded[f"{'starting' if name == 'start' else name}_raw"])


def _assets_with_trained(ssl_assets: Path, folder: Path,
                         losses: dict[tuple[int, int], float]) -> Path:
    """A copy of the prepared assets (links to its files) with another trained.json."""
    (folder / "protected").mkdir(parents=True)
    for item in (ssl_assets / "protected").iterdir():
        (folder / "protected" / item.name).symlink_to(item)
    (folder / "public").symlink_to(ssl_assets / "public")
    (folder / "protected" / "trained.json").unlink()
    write_trained(folder, losses)
    return folder


def test_the_scorer_reads_a_shape_the_prepare_trained_and_trains_any_other(
        ssl_spec: EnvironmentSpec, ssl_cpu: Profile, ssl_assets: Path,
        tmp_path: Path) -> None:
    from rebench.environments.small_scaling_law import scoring

    assets = _assets_with_trained(ssl_assets, tmp_path / "assets", {(16, 3): 9.25})

    def final(n_embd: int, max_iters: int) -> dict[str, object]:
        folder = tmp_path / f"answer-{max_iters}"
        folder.mkdir()
        (folder / "answer.json").write_text(json.dumps(
            {"loss_prediction": 9.0, "max_iters": max_iters, "n_embd": n_embd}))
        ctx = ScoringContext(ssl_spec, ssl_cpu, folder, assets, tmp_path / "scratch",
                             Isolation.LOCAL, kind=ScoreKind.FINAL)
        return scoring.score(ctx).details

    read = final(16, 3)
    assert read["loss"] == 9.25 and read["loss_source"] == "prepare"
    trained = final(16, 2)  # not in the table: trained (two steps, a second)
    assert trained["loss_source"] == "trained" and trained["loss"] != 9.25


def test_the_copied_table_optimum_is_over_the_drawn_budget(score_answer: ScoreFn) -> None:
    width, iters, loss = _best()
    result = score_answer({"loss_prediction": loss, "max_iters": iters, "n_embd": width})
    assert not result.valid and result.message["reason"] == "over_budget"


@pytest.mark.parametrize(("text", "code"), [
    ("not json", "malformed_answer"),
    ('{"loss_prediction": 4.4, "max_iters": 20, "n_embd": 12}', "bad_width"),
    ('{"loss_prediction": "l_star", "max_iters": 20, "n_embd": 16}', "malformed_answer"),
])
def test_invalid_answers_give_a_declared_reason_code(
        ssl_spec: EnvironmentSpec, score_answer: ScoreFn, text: str, code: str) -> None:
    result = score_answer(text, ScoreKind.REQUESTED)
    shown = agent_visible(ssl_spec, result).message
    assert shown["reason"] == code and code in FEEDBACK.reasons
    assert shown["text"] == FEEDBACK.reasons[code] and FEEDBACK.conforms(shown)


def test_a_requested_check_shows_validity_and_the_fraction_only(
        ssl_spec: EnvironmentSpec, score_answer: ScoreFn) -> None:
    result = score_answer({"loss_prediction": 7.0, "max_iters": 4, "n_embd": 16,
                           "reason": "crash", "l_star": 1.0}, ScoreKind.REQUESTED)
    shown = agent_visible(ssl_spec, result).message
    assert shown == {"valid": True, "frac_flops_used": shown["frac_flops_used"]}
    assert 0 < shown["frac_flops_used"] < 0.01


def _run(answers: list[tuple[float, object]], experiments: list[float]) -> SimpleNamespace:
    events = [Event(seq=i, time="t", wall_s=w, working_s=w, type="service_call",
                    data={"service": "experiments", "ok": True, "request": "{}",
                          "reply": "{}"}) for i, w in enumerate(experiments)]

    def distinct_texts(rel: str, max_bytes: int) -> object:
        for working_s, answer in answers:
            entry = SimpleNamespace(working_s=working_s, wall_time="t")
            yield SimpleNamespace(entry=entry, rel=rel, snapshot="s"), json.dumps(answer)

    return SimpleNamespace(events=events, distinct_texts=distinct_texts,
                           record=SimpleNamespace(profile="cpu"),
                           starting_texts={"answer.json": json.dumps(answers[0][1])})


def test_an_answer_changed_without_experiments_is_flagged() -> None:
    width, _, loss = _best()
    start = {"loss_prediction": round(loss, 4), "max_iters": 4000, "n_embd": width}
    guess = {"loss_prediction": round(loss + 1.1, 4), "max_iters": 4000, "n_embd": width}
    other = {"loss_prediction": 9.0, "max_iters": 367, "n_embd": 96}
    rescaled = {**start, "max_iters": 3000}
    flags = list(unmeasured_answer_flags(_run([(0.0, start), (20.0, guess),  # type: ignore[arg-type]
                                               (26.0, other), (27.0, rescaled)], [])))
    # The starting answer and the public table's at any max_iters are not flagged: the
    # table's answer is the start's (it scores 0).
    assert [f.rule for f in flags] == ["answer-unmeasured"] * 2
    assert {f.severity for f in flags} == {Severity.MEDIUM}
    worked = list(unmeasured_answer_flags(_run([(100.0, guess)], [1.0, 2.0, 3.0])))  # type: ignore[arg-type]
    assert worked == []


def test_noise_replaces_the_drawn_fraction_with_vocabulary_tokens() -> None:
    rng = np.random.default_rng(0)
    clean = rng.integers(0, 2048, size=200_000).astype(np.uint16)
    noisy = add_noise(clean, 0.2, 2048, np.random.default_rng(1))
    assert noisy.dtype == np.uint16 and noisy.shape == clean.shape
    assert int(noisy.max()) < 2048
    # a replaced token equals the clean one with probability 1/2048
    assert (noisy != clean).mean() == pytest.approx(0.2 * (1 - 1 / 2048), abs=0.005)
    assert (add_noise(clean, 0.0, 2048, rng) == clean).all()


def test_the_noise_rate_is_drawn_in_the_profile_range(ssl_spec: EnvironmentSpec) -> None:
    for name in ssl_spec.profiles:
        p = ssl_spec.profile(name).typed
        assert 0 < p.noise_low < p.noise_high < 1
        draws = {draw_noise(p, np.random.default_rng(seed)) for seed in range(50)}
        assert len(draws) > 10 and all(p.noise_low <= d <= p.noise_high for d in draws)


def test_the_prepared_data_is_noised_and_the_start_is_the_documented_answer(
        ssl_cpu: Profile, ssl_assets: Path) -> None:
    """The protected splits carry the drawn noise rate (secret: meta.json is protected,
    recipe.json does not name it); the starting answer is the public table's optimum at the
    drawn budget with the table's loss; L* lies above the table's loss (the noise raises
    every loss) by more than the draw of the budget alone moves it (0.06 on cpu)."""
    from rebench.environments.small_scaling_law.assets import corpus_splits

    p = ssl_cpu.typed
    meta = json.loads((ssl_assets / "protected" / "meta.json").read_text())
    rate = meta["noise_rate"]
    assert p.noise_low <= rate <= p.noise_high
    recipe = json.loads((ssl_assets / "public" / "recipe.json").read_text())
    assert "noise" not in json.dumps(recipe)
    data = load_protected(ssl_assets)
    with corpus_splits(p.tokenizer) as splits:
        clean = np.asarray(splits.tokens("train"))
    assert data.train.shape == clean.shape
    assert (np.asarray(data.train) != clean).mean() == pytest.approx(rate, abs=0.01)
    width, _, loss = _best()
    start = json.loads((ssl_assets / "public" / "answer.json").read_text())
    assert start["n_embd"] == width and start["loss_prediction"] == round(loss, 4)
    flops = (recipe["n_layer"] * width * width * 12 * 6 * recipe["block_size"]
             * recipe["batch_size"] * start["max_iters"])
    assert 0.99 * data.target_flops <= flops <= data.target_flops
    assert load_l_star(ssl_assets) > loss + 0.3
