"""Feedback as a channel (issue 26, class 4): finetune.sh runs on the held-out rows, so
whatever it can choose (its exit status, its output, an exception's text, its time, the
exact distance of its weights to the reference) must not reach the agent. Each probe in
cheats/ tries one channel; scored officially on the cpu profile, the agent's message must
be exactly a rendering of environment.FEEDBACK, and the scorer's own message (kept in the
private details as `scorer_message`) must already hold nothing but a reason code or the
score's numbers: the scorer does not rely on the harness to drop what it should not say.

Before the fix, the scorer said "finetune.sh exited with code <byte>", and a valid score
showed the exact norm."""

from __future__ import annotations

import json
import math

import pytest
from foundry_helpers import CHEATS, CpuEnv, Scorer

from rebench.core.paths import env_cache_dir
from rebench.core.score import ScoreResult
from rebench.environments.optimize_llm_foundry.environment import FEEDBACK

# These compare no wall-clock time (what the message shows; a time is only bounded from
# below, by a sleep): they run in the first pass of `make test`, beside the others, though
# optimize_llm_foundry is a timing environment (tests/suite_split.py).
pytestmark = pytest.mark.untimed


def _heldout_byte(cpu_env: CpuEnv) -> int:
    """The byte the probes read: the 10th from the end of the first held-out row."""
    heldout = env_cache_dir(cpu_env.spec.id, cpu_env.profile.name) / "protected"
    first = (heldout / "heldout_data.jsonl").read_bytes().split(b"\n")[0] + b"\n"
    return int(first[-10])


def _scorer_said(result: ScoreResult) -> dict[str, object]:
    """What the environment's scorer returned before the harness rendered it."""
    said = result.details.get("scorer_message", result.message)
    assert isinstance(said, dict)
    return said


def _assert_fixed_schema(result: ScoreResult, reason: str | None) -> None:
    shown = result.message
    assert FEEDBACK.conforms(shown), shown
    if reason is None:
        assert result.valid and set(shown) == {"valid", "seconds", "score"}, shown
        # the shown numbers are the score's, rounded: nothing but the time
        assert shown["score"] == round(result.raw, 2)
        assert shown["seconds"] == round(math.exp(result.raw), 1)
    else:
        assert not result.valid and shown["reason"] == reason, shown
        assert _scorer_said(result) == {"error": reason}, _scorer_said(result)


def test_the_schema_shows_no_norm_exit_code_or_output() -> None:
    assert set(FEEDBACK.numbers) == {"seconds", "score"} and FEEDBACK.flags == ()
    for text in FEEDBACK.reasons.values():  # fixed sentences: no placeholders
        assert "{" not in text


def test_exit_code_carries_no_heldout_byte(score_solution: Scorer, cpu_env: CpuEnv) -> None:
    result = score_solution(CHEATS / "exit_code_channel.sh")
    byte = _heldout_byte(cpu_env)
    # The channel exists (the operator sees the status)...
    assert result.details["exit_code"] == byte, (result.details, byte)
    # ...and the agent sees the fixed reason only.
    _assert_fixed_schema(result, "pipeline_failed")
    assert str(byte) not in json.dumps(result.message)


def test_stderr_and_exception_text_carry_nothing(score_solution: Scorer,
                                                 cpu_env: CpuEnv) -> None:
    result = score_solution(CHEATS / "stderr_channel.sh")
    assert "RuntimeError" in str(result.details["output_tail"])  # the operator sees it
    _assert_fixed_schema(result, "pipeline_failed")
    assert "prompt" not in json.dumps(result.message)


def test_an_invalid_runs_time_is_not_shown(score_solution: Scorer, cpu_env: CpuEnv) -> None:
    result = score_solution(CHEATS / "timing_channel_invalid.sh")
    delay = (_heldout_byte(cpu_env) % 32) / 10
    assert float(str(result.details["seconds"])) >= delay
    _assert_fixed_schema(result, "pipeline_failed")
    assert "seconds" not in result.message and "score" not in result.message


@pytest.mark.slow
def test_a_valid_runs_time_is_its_score_only(score_solution: Scorer, cpu_env: CpuEnv) -> None:
    """The delay shows in the seconds, which are the score: the probe pays for each bit it
    reads with a slower (worse) score. Nothing else of the run is shown."""
    result = score_solution(CHEATS / "timing_channel_valid.sh", base="reference")
    _assert_fixed_schema(result, None)
    assert _scorer_said(result) == {"seconds": round(math.exp(result.raw), 1),
                                    "score": round(result.raw, 2)}
    assert float(str(result.details["seconds"])) >= (_heldout_byte(cpu_env) % 32) / 10


@pytest.mark.slow
def test_the_norm_is_never_shown(score_solution: Scorer, cpu_env: CpuEnv) -> None:
    """Weights moved by 0.004 on purpose (under the threshold): valid, and the message
    does not say how far from the reference they are."""
    result = score_solution(CHEATS / "norm_probe.sh", base="reference")
    threshold = cpu_env.profile.typed.norm_threshold
    norm = float(str(result.details["norm"]))
    assert 0.003 < norm < threshold, norm
    _assert_fixed_schema(result, None)
    assert "norm" not in _scorer_said(result)
    assert all(not math.isclose(float(v), norm, rel_tol=0.2)
               for k, v in result.message.items() if k != "valid")
