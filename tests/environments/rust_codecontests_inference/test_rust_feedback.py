"""What a score tells the agent (issue 26, feedback schema): the solved fraction and counts,
nothing that code which read the held-out statements chose. Before 1.2.0 the message showed
the per-problem verdict counts, the solution's error count, its time-out flag and its token
use, and an import failure on the held-out run came back as invalid with the exception's
text: each carried bytes of a held-out statement (the probes below put one in each)."""

from __future__ import annotations

import math
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from rust_cc_support import ENV_DIR

from rebench.core.spec import EnvironmentSpec
from rebench.environments.rust_codecontests_inference import degenerate, scoring
from rebench.scoring.context import ScoringContext
from rebench.scoring.declarations import PolicyContext


def _policy(name: str, tmp_path: Path, spec: EnvironmentSpec) -> Path:
    workspace = tmp_path / f"ws-{name}"
    shutil.copytree(ENV_DIR / "starting", workspace)
    policy = next(p for p in degenerate.POLICIES if p.name == name)
    policy.make(PolicyContext(spec=spec, profile=spec.profile("cpu"), public_dir=tmp_path,
                              workspace=workspace, scratch=tmp_path))
    return workspace / "solution.py"


@pytest.mark.parametrize("probe", ["probe_runtime", "probe_import"])
def test_a_probe_on_held_out_statements_shows_only_the_score(
        small_context: Callable[..., ScoringContext], spec: EnvironmentSpec, tmp_path: Path,
        probe: str) -> None:
    result = scoring.score(small_context(_policy(probe, tmp_path, spec)))
    assert result.valid and result.raw == 0.0, result.message
    assert result.message == {"solved": 0, "problems": 3, "fraction_solved": 0.0}
    # The probe did run on the held-out statements and did try its channels (kept private).
    private = str(result.details)
    assert "LEAK" in private, private[:2000]
    if probe == "probe_import":
        # Validity is decided before the held-out problems: an import that fails only once
        # problems exist is a valid 0 (above), not an invalid score whose reason the probe
        # would choose; one that always fails is `import_failed` (below). Merged here from
        # a test that scored the same probe on the same problems.
        assert "LEAK" in str(result.details["fatal"])


def test_a_module_that_never_loads_is_import_failed(
        small_context: Callable[..., ScoringContext], spec: EnvironmentSpec,
        tmp_path: Path) -> None:
    broken = scoring.score(small_context(_policy("function_renamed", tmp_path, spec)))
    assert math.isnan(broken.raw) and broken.message == {"error": "import_failed"}
    assert "generate_solution" in broken.details["fatal"]


def test_every_message_conforms_to_the_schema(spec: EnvironmentSpec) -> None:
    assert set(spec.feedback.reasons) == {"no_solution", "import_failed"}
    assert set(spec.feedback.numbers) == {"fraction_solved", "solved", "problems"}
    rendered = spec.feedback.render({"solved": 1, "problems": 3, "fraction_solved": 1 / 3,
                                     "verdicts": {"passed": 1}}, valid=True)
    assert rendered == {"valid": True, "solved": 1.0, "problems": 3.0,
                        "fraction_solved": 0.3333}
