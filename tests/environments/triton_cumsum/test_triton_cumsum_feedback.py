"""What a triton_cumsum score tells the agent (issue 26: a fixed schema, environment.FEEDBACK)
and the declared degenerate policies (degenerate.py), which the generic test scores
officially with the reason each must get. Before 1.3.0 an invalid score's message was the scorer's
free text, which carried the child's exception text and its exit status."""

from __future__ import annotations

import ast
import shutil
from pathlib import Path

from rebench.core.discovery import environment_dir, load_spec
from rebench.core.pyparse import parse_python
from rebench.environments.triton_cumsum import degenerate
from rebench.environments.triton_cumsum.environment import FEEDBACK
from rebench.environments.triton_cumsum.protocol import CHILD_REASONS
from rebench.scoring.declarations import Expect, PolicyContext

ENV_DIR = environment_dir("triton_cumsum")


def _codes_passed_to(names: set[str], path: Path) -> list[object]:
    """The first argument of every call to one of `names` in `path` (constants or not)."""
    found: list[object] = []
    for node in ast.walk(parse_python(path.read_text())):
        if isinstance(node, ast.Call) and node.args:
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if name in names:
                arg = node.args[0]
                found.append(arg.value if isinstance(arg, ast.Constant)
                             else ("expression", ast.unparse(arg)))
    return found


def test_every_failure_the_scorer_can_give_is_a_declared_code() -> None:
    reasons = FEEDBACK.all_reasons
    codes = (_codes_passed_to({"SubmissionError"}, ENV_DIR / "session.py")
             + _codes_passed_to({"invalid"}, ENV_DIR / "scoring.py"))
    literal = [c for c in codes if isinstance(c, str)]
    assert literal and all(c in reasons for c in literal), sorted(
        c for c in literal if c not in reasons)
    # the only non-literal reasons: the caught error's own code, the verification's code
    assert {c for c in codes if not isinstance(c, str)} == {
        ("expression", "exc.reason"), ("expression", "reason")}, codes
    assert set(reasons) >= CHILD_REASONS
    assert "load" not in FEEDBACK.numbers and set(FEEDBACK.numbers) == {"ms", "raw",
                                                                          "timed_calls"}


def test_the_spec_declares_the_schema() -> None:
    assert load_spec("triton_cumsum").feedback is FEEDBACK


def test_every_failing_policy_declares_its_reason() -> None:
    """The generic test (tests/environments/test_degenerate_policies.py) scores each policy
    officially and checks the declared reason codes; here: every one that fails has them."""
    failing = [p for p in degenerate.POLICIES if p.expect is not Expect.AT_MOST_START]
    assert failing and all(p.reasons for p in failing), [p.name for p in failing]
    assert any(p.expect is Expect.NO_CHANNEL for p in degenerate.POLICIES)


def _make(name: str, tmp_path: Path) -> Path:
    """The policy's submission, made from a fresh copy of the starting files."""
    policy = next(p for p in degenerate.POLICIES if p.name == name)
    spec = load_spec("triton_cumsum")
    workspace = tmp_path / "workspace"
    shutil.copytree(ENV_DIR / "starting", workspace)
    policy.make(PolicyContext(spec=spec, profile=spec.profile("cpu"),
                              public_dir=tmp_path / "public", workspace=workspace,
                              scratch=tmp_path))
    return workspace / "solution.py"


def test_the_reformatted_start_is_other_bytes_with_the_same_function(tmp_path: Path) -> None:
    """Not caught by the harness's unchanged-start digest: it must not gain by more than
    the timing noise (degenerate.START_TOLERANCE, checked by the generic policy test)."""
    made = _make("start_reformatted", tmp_path)
    assert made.read_bytes() != (ENV_DIR / "starting" / "solution.py").read_bytes()
    namespace: dict[str, object] = {}
    exec(compile(made.read_text(), str(made), "exec"), namespace)
    import torch

    from rebench.environments.triton_cumsum.expected import expected_prefix_sum

    x = torch.randint(-10, 10, (1000,), dtype=torch.int32)
    assert torch.equal(namespace["prefix_sum"](x), expected_prefix_sum(x))  # type: ignore[operator]
