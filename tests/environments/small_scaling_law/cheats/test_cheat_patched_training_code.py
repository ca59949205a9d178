"""Cheat: patch the training code in the workspace (model.py, a sitecustomize.py, a fake
torch) so that experiments or the final score train something else. The service and the
scorer use trusted code only: the service takes JSON, the scorer reads answer.json alone."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from rebench.agents.base import make_agent
from rebench.core.score import ScoreResult
from rebench.harness.driver import execute_run
from rebench.harness.events import read_events
from rebench.harness.run import create_run
from rebench.sandbox import Isolation
from rebench.sandbox.bwrap import bwrap_available
from rebench.scoring import ScoreKind

TINY = {"loss_prediction": 7.0, "max_iters": 4, "n_embd": 16}
POISON = {
    "model.py": "raise SystemExit('patched model')\n",
    "sitecustomize.py": "import builtins; builtins.PATCHED = True\n",
    "torch/__init__.py": "raise ImportError('patched torch')\n",
    "trainer.py": "def train_config(*a, **k): raise SystemExit('patched')\n",
}


def test_the_scorer_ignores_everything_but_answer_json(
        score_folder: Callable[[Path, ScoreKind], ScoreResult], tmp_path: Path) -> None:
    clean, patched = tmp_path / "clean", tmp_path / "patched"
    for folder in (clean, patched):
        folder.mkdir()
        (folder / "answer.json").write_text(json.dumps(TINY))
    for name, text in POISON.items():
        (patched / name).parent.mkdir(parents=True, exist_ok=True)
        (patched / name).write_text(text)
    a, b = score_folder(clean, ScoreKind.FINAL), score_folder(patched, ScoreKind.FINAL)
    assert a.valid and b.valid and a.raw == pytest.approx(b.raw, abs=1e-9)


@pytest.mark.slow
@pytest.mark.skipif(not bwrap_available(), reason="needs bubblewrap")
def test_experiments_ignore_a_patched_workspace(
        ssl_assets: Path, replay_agent: Callable[[list[dict[str, object]]], str],
        tmp_path: Path) -> None:
    call = "rebench-service experiments '{\"n_embd\": 16, \"max_iters\": 3}'"
    writes: list[dict[str, object]] = [
        {"action": "write_file", "path": n, "content": t} for n, t in POISON.items()]
    agent = replay_agent([
        {"action": "exec", "cmd": call + "; mkdir -p torch"},
        *writes,
        {"action": "exec", "cmd": "export PYTHONPATH=$PWD; " + call},
    ])
    run = create_run("small_scaling_law", "cpu", agent, 600, Isolation.BWRAP,
                     root=tmp_path / "runs")
    execute_run(run, make_agent(agent))
    execs = [e.data for e in read_events(run.run_dir / "events.jsonl") if e.type == "exec"]
    first, second = (json.loads(e["stdout"]) for e in execs)
    assert first["ok"] and second["ok"]
    assert first["val_loss"] == second["val_loss"]
    assert first["train_loss_curve"] == second["train_loss_curve"]
