"""What `rebench instructions` prints (issue 30, finding 11): every environment's text opens
with its title line, and small_scaling_law's says exactly what its experiment service does
with a learning rate (accepted for experiments, never used by the scoring run)."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from click.testing import CliRunner

from rebench.cli import main
from rebench.core.discovery import environment_ids, load_spec


def _instructions(env_id: str, profile: str = "cpu") -> str:
    result = CliRunner().invoke(main, ["instructions", env_id, "--profile", profile])
    assert result.exit_code == 0, result.output
    return result.stdout


@pytest.mark.parametrize("env_id", environment_ids())
def test_instructions_open_with_a_title_line(env_id: str) -> None:
    first, blank, body = _instructions(env_id).split("\n", 2)
    assert re.fullmatch(r"# \S.*", first), f"{env_id}: first line {first!r}"
    assert blank == "" and body.strip(), env_id


class _Recorder:
    """A stand-in trainer and service context: what the service would train, no training."""

    def __init__(self) -> None:
        self.trained: list[tuple[int, int, float | None]] = []

    def __call__(self, n_embd: int, max_iters: int, lr: float | None) -> dict[str, Any]:
        self.trained.append((n_embd, max_iters, lr))
        return {"curve": [[max_iters, 5.0]], "final_loss": 5.0}

    def emit(self, *_args: object, **_kwargs: object) -> None:
        pass


@pytest.mark.parametrize("profile", ["cpu", "gpu"])
def test_scaling_law_instructions_say_what_the_service_does_with_lr(profile: str) -> None:
    from rebench.environments.small_scaling_law.service import Experiments
    from rebench.environments.small_scaling_law.trainer import Recipe

    text = _instructions("small_scaling_law", profile)
    params = load_spec("small_scaling_law").profile(profile).typed
    recipe = Recipe.of(params, vocab_size=2048)
    # Every request the text shows: the JSON example and the run_experiment.py forms.
    shown = [json.loads(m) for m in re.findall(r"experiments '(\{.*?\})'", text)]
    for argv in re.findall(r"python run_experiment\.py ([\d. ]+?)\)?[`;]", text):
        n_embd, max_iters, *lr = argv.split()
        shown.append({"n_embd": int(n_embd), "max_iters": int(max_iters)}
                     | ({"lr": float(lr[0])} if lr else {}))
    assert any("lr" in r for r in shown) and any("lr" not in r for r in shown), shown
    trainer = _Recorder()
    service = Experiments(recipe, 1e30, 1e30, trainer, trainer)  # type: ignore[arg-type,unused-ignore]
    for request in shown:
        reply = service.handle(request)
        assert reply["ok"], (request, reply)
        assert reply["lr"] == request.get("lr", params.lr)
    assert [lr for *_, lr in trainer.trained] == [r.get("lr") for r in shown]
    # The default it names is the recipe's, and the scoring run is said to use only it.
    flat = " ".join(text.split())
    assert f"default, {params.lr:g} (`lr` in `recipe.json`)" in flat
    assert "Scoring always trains with that default" in flat
