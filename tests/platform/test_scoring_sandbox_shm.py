"""Only a scoring child that shares buffers with the trusted process (the interactive
runner: CUDA IPC on a gpu) sees the host's /dev/shm. A run-to-completion child on a gpu
gets a private one: what it left there would outlive the scoring, and a later scoring's
child (optimize_llm_foundry's finetune.sh, say) could copy weights trained on held-out
rows back in."""

from __future__ import annotations

from pathlib import Path

from rebench.core.discovery import load_spec
from rebench.sandbox import Isolation
from rebench.scoring.context import ScoringContext


def _gpu_context(tmp_path: Path) -> ScoringContext:
    spec = load_spec("optimize_llm_foundry")
    return ScoringContext(spec, spec.profile("gpu"), tmp_path, tmp_path / "assets",
                          tmp_path / "scratch", Isolation.BWRAP)


def test_a_gpu_scoring_child_gets_a_private_dev_shm(tmp_path: Path) -> None:
    ctx = _gpu_context(tmp_path)
    try:
        sandbox = ctx.untrusted_sandbox()
        assert sandbox.config.gpu and not sandbox.config.host_shm
        shared = ctx.untrusted_sandbox(host_shm=True)
        assert shared.config.host_shm
    finally:
        ctx.close()
