"""The feedback schema: whatever a scorer puts in its message, the agent sees only the
declared fields, rounded, and reasons from a fixed set."""

from __future__ import annotations

import math
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rebench.core.discovery import environment_ids, load_spec
from rebench.core.feedback import COMMON_REASONS, Feedback, FeedbackError
from rebench.core.score import ScoreResult
from rebench.harness.scoring import agent_visible

SCHEMA = Feedback(reasons={"no_model": "model.py is missing"}, numbers={"loss": 3},
                  flags=("within_threshold",))

junk = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner,
                                                                  max_size=3),
    max_leaves=8)


@settings(suppress_health_check=[HealthCheck.too_slow], deadline=None)  # loaded CI machines
@given(message=st.dictionaries(st.text(max_size=12), junk, max_size=6), valid=st.booleans())
def test_render_keeps_only_declared_fields(message: dict[str, Any], valid: bool) -> None:
    out = SCHEMA.render(message, valid=valid)
    allowed = {"valid", "loss", "within_threshold"} | ({"reason", "text"} if not valid else set())
    assert set(out) <= allowed
    assert out["valid"] is valid
    if not valid:
        assert out["reason"] in SCHEMA.all_reasons
        assert out["text"] == SCHEMA.all_reasons[out["reason"]]
    if "loss" in out:
        assert isinstance(out["loss"], float) and math.isfinite(out["loss"])
    assert SCHEMA.conforms(out)


def test_free_text_reasons_become_invalid_and_numbers_are_rounded() -> None:
    out = SCHEMA.render({"error": "exit status 65: byte A of held-out.jsonl",
                         "loss": 3.14159265, "stderr": "secret"}, valid=False)
    assert out == {"valid": False, "reason": "invalid", "text": COMMON_REASONS["invalid"],
                   "loss": 3.142}
    out = SCHEMA.render({"reason": "no_model", "loss": "3.1", "within_threshold": 1},
                        valid=False)
    assert out == {"valid": False, "reason": "no_model", "text": "model.py is missing"}


def test_schema_rejects_clashes_and_bad_places() -> None:
    with pytest.raises(FeedbackError):
        Feedback(reasons={"timeout": "mine"})
    with pytest.raises(FeedbackError):
        Feedback(numbers={"valid": 2})
    with pytest.raises(FeedbackError):
        Feedback(numbers={"loss": 9})
    with pytest.raises(FeedbackError):
        Feedback(numbers={"x": 2}, flags=("x",))


def test_agent_visible_moves_the_full_message_to_details() -> None:
    spec = load_spec(environment_ids()[0])
    result = ScoreResult.invalid("exit status 66 (held-out byte)", stderr="secret text")
    shown = agent_visible(spec, result)
    assert shown.message["reason"] == "invalid" and "secret" not in repr(shown.message)
    assert shown.details["scorer_message"] == {"error": "exit status 66 (held-out byte)"}
    assert shown.details["stderr"] == "secret text"


def test_hidden_score_checks_show_their_validity(toy_env: str) -> None:
    spec = load_spec(toy_env)
    check = ScoreResult(raw=math.nan, message={"is_valid": True}, details={"check_only": True})
    assert agent_visible(spec, check).message == {"valid": True}
    bad = ScoreResult(raw=math.nan, message={"is_valid": False, "error": "no_x"},
                      details={"check_only": True})
    assert agent_visible(spec, bad).message["reason"] == "no_x"


def test_every_environment_declares_a_feedback_schema() -> None:
    """Each environment says what its scores may tell the agent (its own reasons at
    least: an environment with only the common ones shows no reason of its own)."""
    missing = [e for e in environment_ids() if not load_spec(e).feedback.reasons]
    assert not missing, f"no feedback schema declared: {missing}"
