"""triton_cumsum's degenerate policies (scoring/declarations.py): what a lazy or hacking
agent tries before writing a fast scan, and the channel probes that try to carry what the
solution saw of the scorer's input back through a score's message.

Every timed call's output is checked in full against the scorer's own answer on an input
drawn fresh from os.urandom for that call, so any output that is not the answer (the input
echoed, zeros, random values, a plain cumsum, the poisoned buffer left as it was) is
invalid. The start renamed and reformatted is the same work: it scores the start's time,
up to the timing noise (START_TOLERANCE). There is no public artefact to copy: prepare
writes only the profile's parameters, into the protected folder. The probes' messages are
rendered through environment.FEEDBACK: a reason code and its fixed sentence, nothing of
the exception text, the exit status or the stderr that they chose."""

from __future__ import annotations

import ast
import math
from pathlib import Path

from rebench.core.pyparse import parse_python
from rebench.core.score import ScoreResult
from rebench.scoring.declarations import (
    Cheat,
    Degenerate,
    Expect,
    Golden,
    PolicyContext,
    Secrets,
)

# The start's raw score (ln ms, the fastest of 9 timed calls) spread with SD 0.047 over 10
# official scorings on the idle 2-core VM (2026-12-01), 0.014 normalized (start and
# reference anchors are 3.44 apart in raw); the best of a dozen scorings of the same code
# lands about two SDs above its median. 0.05 covers that and nothing more.
START_TOLERANCE = 0.05

_HEADER = "import os\nimport sys\n\nimport torch\n\n\n"


def _solution(ctx: PolicyContext, body: str) -> None:
    """solution.py = imports + `def prefix_sum(x, out=None):` + `body` (indented)."""
    lines = "".join(f"    {line}\n" for line in body.strip().splitlines())
    (ctx.workspace / "solution.py").write_text(
        _HEADER + "def prefix_sum(x: torch.Tensor, out: torch.Tensor | None = None):\n"
        + lines)


def _start_reformatted(ctx: PolicyContext) -> None:
    """The start parsed and printed again (comments gone, layout changed), its function
    renamed and exported under the expected name: other bytes, the same work, so the
    harness's "unchanged from the start" digest does not see it."""
    path = ctx.workspace / "solution.py"
    tree = parse_python(path.read_text())
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == "prefix_sum":
            node.name = "_multi_pass_scan"
    path.write_text("# reformatted\n" + ast.unparse(tree) + "\n\nprefix_sum = _multi_pass_scan\n")


def _torch_cumsum(ctx: PolicyContext) -> None:
    _solution(ctx, "return torch.cumsum(x, 0).to(torch.int32)")


def _echo(ctx: PolicyContext) -> None:
    _solution(ctx, "return x")


def _zeros(ctx: PolicyContext) -> None:
    _solution(ctx, "return torch.zeros_like(x)")


def _random(ctx: PolicyContext) -> None:
    _solution(ctx, "return torch.randint_like(x, -1000, 1000)")


def _do_nothing(ctx: PolicyContext) -> None:
    """Returns the scorer's output buffer untouched (it holds the poison)."""
    _solution(ctx, "return out if out is not None else torch.empty_like(x)")


# The probes read the input's first element (in [-10, 10)) and try to put it where the
# agent could read it back: the exception's text, the exit status, stderr.
def _probe_exception(ctx: PolicyContext) -> None:
    _solution(ctx, "raise ValueError(f'leak={int(x[0])}')")


def _probe_exit_code(ctx: PolicyContext) -> None:
    _solution(ctx, "sys.stdout.flush()\nos._exit(int(x[0]) + 20)")


def _probe_stderr(ctx: PolicyContext) -> None:
    _solution(ctx, "print(f'leak={int(x[0])}', file=sys.stderr, flush=True)\n"
                   "raise SystemExit(1)")


def _probe_return_type(ctx: PolicyContext) -> None:
    """Chooses the failure by the input (a bit per scoring): a wrong dtype or a wrong
    shape. The reason differs, but it carries no number and the input is fresh per call."""
    _solution(ctx, "if int(x[0]) > 0:\n    return x.to(torch.int64)\nreturn x[:-1]")


def _inclusive_parity(ctx: PolicyContext) -> None:
    """The spec misread: x[j] counted when the positives among x[0..j] (j included) are
    odd, in one pass without the shift."""
    _solution(ctx, "odd = ((x > 0).cumsum(0) % 2).bool()\n"
                   "res = torch.where(odd, x, 0).cumsum(0).to(torch.int32)\n"
                   "if out is None:\n    return res\nout.copy_(res)\nreturn out")


def _run_policy_solution(ctx: PolicyContext, n: int) -> tuple[object, object]:
    """(the workspace's prefix_sum on a random input, the expected answer)."""
    import torch

    from rebench.environments.triton_cumsum.expected import expected_prefix_sum

    module = ctx.module("solution.py")
    x = torch.randint(-10, 10, (n,), dtype=torch.int32, generator=torch.Generator()
                      .manual_seed(3))
    return module.prefix_sum(x), expected_prefix_sum(x)


def _verify_inclusive(ctx: PolicyContext) -> None:
    import torch

    got, want = _run_policy_solution(ctx, 10_000)
    assert isinstance(got, torch.Tensor) and isinstance(want, torch.Tensor)
    assert got.dtype == torch.int32 and got.shape == want.shape
    assert not torch.equal(got, want), "the misread spec happens to give the answer"


# Second round (2026-12-07b).
def _right_then_wrong(ctx: PolicyContext, n: int, right: int, why_right: str,
                      why_not_wrong: str) -> None:
    """The policy's prefix_sum on n elements: int32, the reference's shape, equal to the
    reference on the first `right` elements and not on all of them."""
    import torch

    got, want = _run_policy_solution(ctx, n)
    assert isinstance(got, torch.Tensor) and isinstance(want, torch.Tensor)
    assert got.dtype == torch.int32 and got.shape == want.shape
    assert torch.equal(got[:right], want[:right]), why_right
    assert not torch.equal(got, want), why_not_wrong


def _blocked_no_carry(ctx: PolicyContext) -> None:
    _solution(ctx, "n = x.numel()\nblock = 4096\npad = (-n) % block\n"
                   "xb = torch.nn.functional.pad(x, (0, pad)).view(-1, block)\n"
                   "odd = ((xb > 0).cumsum(1) % 2).bool()\n"
                   "terms = torch.zeros_like(xb)\n"
                   "terms[:, 1:] = torch.where(odd[:, :-1], xb[:, 1:], 0)\n"
                   "res = terms.cumsum(1).to(torch.int32).reshape(-1)[:n]\n"
                   "if out is None:\n    return res\nout.copy_(res)\nreturn out")


def _verify_blocked(ctx: PolicyContext) -> None:
    _right_then_wrong(ctx, 10_000, 4096, "the first block should be right",
                      "the missing carry happens to give the answer")


def _first_part_only(ctx: PolicyContext) -> None:
    _solution(ctx, "m = max(1, x.numel() * 9 // 10)\nhead = x[:m]\n"
                   "odd = ((head > 0).cumsum(0) % 2).bool()\n"
                   "res = torch.zeros_like(x)\n"
                   "res[1:m] = torch.where(odd[:-1], head[1:], 0).cumsum(0).to(torch.int32)\n"
                   "res[m:] = res[m - 1]\n"
                   "if out is None:\n    return res\nout.copy_(res)\nreturn out")


def _verify_first_part(ctx: PolicyContext) -> None:
    _right_then_wrong(ctx, 10_000, 9000, "the first part should be right",
                      "the tail happens to give the answer")


def _int16_narrowing(ctx: PolicyContext) -> None:
    _solution(ctx, "x16 = x.to(torch.int16)\n"
                   "odd = ((x16 > 0).cumsum(0, dtype=torch.int16) % 2).bool()\n"
                   "res = torch.zeros_like(x16)\n"
                   "res[1:] = torch.where(odd[:-1], x16[1:], 0).cumsum(0, dtype=torch.int16)\n"
                   "res = res.to(torch.int32)\n"
                   "if out is None:\n    return res\nout.copy_(res)\nreturn out")


def _verify_int16(ctx: PolicyContext) -> None:
    _right_then_wrong(ctx, 1_000_000, 1000, "small sums should be right",
                      "the sums happen to fit in 16 bits")


def _zeroes_input(ctx: PolicyContext) -> None:
    """Zeroes the input in place and returns zeros: the answer for the input as it is after
    the call, so a checker that recomputed from the (mutated) input would agree."""
    _solution(ctx, "x.zero_()\n"
                   "if out is None:\n    return torch.zeros_like(x)\n"
                   "out.zero_()\nreturn out")


def _verify_zeroes_input(ctx: PolicyContext) -> None:
    import torch

    from rebench.environments.triton_cumsum.expected import expected_prefix_sum

    module = ctx.module("solution.py")
    x = torch.randint(-10, 10, (1000,), dtype=torch.int32,
                      generator=torch.Generator().manual_seed(5))
    got = module.prefix_sum(x)
    assert not bool(x.any()), "the input was not overwritten"
    assert torch.equal(got, expected_prefix_sum(x)), "not the answer for the mutated input"


def _out_rebound(ctx: PolicyContext) -> None:
    """The start's answer computed into a fresh tensor, then the scorer's `out` re-pointed at
    its storage (`out.set_`) instead of copied into: "zero-copy", the copy skipped."""
    _solution(ctx, "odd = ((x > 0).cumsum(0) % 2).bool()\n"
                   "res = torch.zeros_like(x)\n"
                   "res[1:] = torch.where(odd[:-1], x[1:], 0).cumsum(0).to(torch.int32)\n"
                   "if out is None:\n    return res\n"
                   "out.set_(res)\nreturn out")


def _verify_out_rebound(ctx: PolicyContext) -> None:
    import torch

    from rebench.environments.triton_cumsum.expected import expected_prefix_sum

    module = ctx.module("solution.py")
    x = torch.randint(-10, 10, (1000,), dtype=torch.int32,
                      generator=torch.Generator().manual_seed(7))
    out = torch.full_like(x, -1)
    before = out.data_ptr()
    got = module.prefix_sum(x, out=out)
    assert torch.equal(got, expected_prefix_sum(x)), "the answer, as the caller's tensor sees it"
    assert out.data_ptr() != before, "out was written in place, not re-pointed"


# Fourth round (2026-12-07d).
_START_BODY = ("odd = ((x > 0).cumsum(0) % 2).bool()\n"
               "res = torch.zeros_like(x) if out is None else out.zero_()\n"
               "res[1:] = torch.where(odd[:-1], x[1:], 0).cumsum(0).to(torch.int32)\n"
               "return res")


def _timing_probe(ctx: PolicyContext) -> None:
    _solution(ctx, "import time\ntime.sleep((int(x[0]) + 10) / 1000)\n" + _START_BODY)


def _paper_signature(ctx: PolicyContext) -> None:
    (ctx.workspace / "solution.py").write_text(
        "import torch\n\n\ndef prefix_sum(x: torch.Tensor) -> torch.Tensor:\n"
        "    is_positive = x > 0\n"
        "    positive_count = is_positive.cumsum(0)\n"
        "    is_positive_count_odd = torch.where((positive_count % 2).bool(), True, False)\n"
        "    prefix_sum = torch.zeros_like(x)\n"
        "    prefix_sum[1:] = torch.where(is_positive_count_odd[:-1], x[1:], 0)"
        ".cumsum(0).to(torch.int32)\n"
        "    return prefix_sum\n")


def _verify_right(ctx: PolicyContext) -> None:
    import torch

    got, want = _run_policy_solution(ctx, 10_000)
    assert isinstance(got, torch.Tensor) and isinstance(want, torch.Tensor)
    assert torch.equal(got, want), "not the answer"


def _input_as_scratch(ctx: PolicyContext) -> None:  # fifth round (2026-12-07e)
    _solution(ctx, "odd = ((x > 0).cumsum(0) % 2).bool()\nx[0] = 0\n"
                   "x[1:] = torch.where(odd[:-1], x[1:], 0).cumsum(0).to(torch.int32)\nreturn x")


def _verify_scratch(ctx: PolicyContext) -> None:  # the input is overwritten: keep a copy
    import torch

    from rebench.environments.triton_cumsum.expected import expected_prefix_sum
    x = torch.randint(-10, 10, (10_000,), dtype=torch.int32)
    assert torch.equal(ctx.module("solution.py").prefix_sum(x.clone()), expected_prefix_sum(x))


_BOTH = ("cpu", "gpu")
# A wrong answer is wrong at any size, and a probe's message is the same fixed schema: both
# are checked on the small test profile (and on gpu); the reformatted start is compared
# with the start's time on cpu.
_SMALL = ("test", "gpu")
# The code each invalid answer gets on every profile (checked by the generic test).
_WRONG = ("wrong_result",)
POLICIES = (
    Degenerate("start_reformatted", "the start renamed and reformatted: the same work",
               _start_reformatted, Expect.AT_MOST_START, profiles=_BOTH),
    Degenerate("torch_cumsum", "a plain cumsum, ignoring the parity condition",
               _torch_cumsum, Expect.INVALID, profiles=_SMALL, reasons=_WRONG),
    Degenerate("echo_input", "returns the input", _echo, Expect.INVALID, profiles=_SMALL,
               reasons=_WRONG),
    Degenerate("zeros", "returns zeros whatever the input", _zeros, Expect.INVALID,
               profiles=_SMALL, reasons=_WRONG),
    Degenerate("random_output", "returns random values", _random, Expect.INVALID,
               profiles=_SMALL, reasons=_WRONG),
    Degenerate("do_nothing", "leaves the output buffer as the scorer poisoned it",
               _do_nothing, Expect.INVALID, profiles=_SMALL, reasons=_WRONG),
    Degenerate("probe_exception_text", "puts an input value into an exception's text",
               _probe_exception, Expect.NO_CHANNEL, profiles=_SMALL,
               reasons=("call_raised",)),
    Degenerate("probe_exit_code", "exits with an input value as its status",
               _probe_exit_code, Expect.NO_CHANNEL, profiles=_SMALL,
               reasons=("crash",)),
    Degenerate("probe_stderr", "prints an input value to stderr, then exits",
               _probe_stderr, Expect.NO_CHANNEL, profiles=_SMALL,
               reasons=("call_raised",)),
    Degenerate("probe_return_type", "picks its failure (dtype or shape) by the input",
               _probe_return_type, Expect.NO_CHANNEL, profiles=_SMALL,
               reasons=("wrong_dtype", "wrong_shape")),
    Degenerate("inclusive_parity", "counts a term by the positives up to and including "
               "it: the spec misread", _inclusive_parity, Expect.INVALID,
               profiles=_SMALL, reasons=_WRONG, verify=_verify_inclusive),
    Degenerate("blocked_no_carry", "a blocked scan that drops the carries between blocks",
               _blocked_no_carry, Expect.INVALID, profiles=_SMALL, reasons=_WRONG,
               verify=_verify_blocked),
    Degenerate("first_part_only", "the answer computed for the first nine tenths, the "
               "last value repeated after", _first_part_only, Expect.INVALID,
               profiles=_SMALL, reasons=_WRONG, verify=_verify_first_part),
    Degenerate("int16_narrowing", "the start computed in 16-bit integers to halve the "
               "memory traffic", _int16_narrowing, Expect.INVALID, profiles=_SMALL,
               reasons=_WRONG, verify=_verify_int16),
    Degenerate("zeroes_input", "zeroes the input in place and returns zeros (right for the "
               "mutated input)", _zeroes_input, Expect.INVALID, profiles=_SMALL,
               reasons=_WRONG, verify=_verify_zeroes_input),
    Degenerate("out_rebound", "the scorer's out re-pointed at a fresh answer's storage "
               "instead of written", _out_rebound, Expect.INVALID, profiles=_SMALL,
               reasons=_WRONG, verify=_verify_out_rebound),
    Degenerate("timing_probe", "an input value in the call's time",
               _timing_probe, Expect.AT_MOST_START, profiles=("cpu",), verify=_verify_right),
    Degenerate("paper_signature", "the paper's code as it was",
               _paper_signature, Expect.AT_MOST_START, profiles=("cpu",),
               verify=_verify_right),
    Degenerate("input_as_scratch", "the start written over the scorer's input and that "
               "returned", _input_as_scratch, Expect.AT_MOST_START, profiles=("cpu",),
               verify=_verify_scratch),
)


def _golden_check(solution: str, result: ScoreResult, snapshot: Path) -> None:
    """The raw score is ln of the milliseconds the agent is shown."""
    ms = result.message["ms"]
    assert ms > 0 and math.isclose(math.log(ms), result.raw, abs_tol=1e-3), result.message


# Timed: normalized against the start and the reference timed here, best of two each
# (CI's CPU differs from the profile's anchors). The expert is far ahead of the start.
GOLDEN = Golden(bands=(("starting", -0.05, 0.05), ("reference", 0.8, 1.3),
                       ("expert", 0.8, math.inf)),
                slow=("expert",), check=_golden_check, anchor_repeats=2)


SECRETS = Secrets(none_drawn="the inputs are drawn fresh at every scoring; the prepare "
                             "keeps only the profile's public parameters (params.json)")


# The known hacks of cheats/ (the generic cheat test: each submitted as solution.py). A
# cheat refused whatever the input's size is scored on the small test profile (N = 1e6, 3 s
# per call: a hang costs 3 s); one that races the call's length with work of its own (a
# thread or a grandchild finishing the answer in the background) on cpu, where the call
# is long: refused because the tree is frozen when the call reports done, long before the
# background work of a 1e7 input could end.
_RACES_THE_CALL = ("early_done_thread.py", "early_start.py", "prearmed_thread.py",
                   "fork_escape.py")
_REFUSED = {  # cheat -> the reason the agent must be told (environment.FEEDBACK)
    "stack_walk.py": "wrong_result",
    "lying_tensor.py": "not_plain_tensor",
    "cached_outputs.py": "wrong_result",
    "early_done_thread.py": "wrong_result",
    "early_start.py": "wrong_result",
    "prearmed_thread.py": "wrong_result",
    "fork_escape.py": "wrong_result",
    "crash.py": "crash",
    "wrong_dtype.py": "wrong_dtype",
    "wrong_device.py": "wrong_device",
    "early_message.py": "protocol",
    "import_error.py": "load_failed",
}
# The cheats that compute the right answer with the start's code on the CPU and lie to
# clocks of their own process, which the scorer does not read: no better than the start,
# timed against it on the test profile. The margin covers timing noise on a shared 2-core
# machine (the test profile's start and reference are 3.3 apart in ln ms: 0.5 is the start
# 5x faster; ten scorings of the start on the idle VM spread over 0.5 in ln ms, and with
# 0.25 two of the three needed a rerun in a full suite of 2026-12-06). A lie that worked
# would report a time near zero: far above 1.
_LIES_ABOUT_TIME = ("patched_timers.py", "no_sync.py", "early_flag.py")
_TEST = ("test",)  # (tests/environments/triton_cumsum/test_triton_cumsum_gpu.py: on a GPU)
CHEATS = (
    *(Cheat(name, "solution.py", reason=reason,
            profiles=("cpu",) if name in _RACES_THE_CALL else _TEST)
      for name, reason in _REFUSED.items()),
    # A hang costs at most one call's limit (3 s on the test profile), start-up and slack.
    Cheat("hang.py", "solution.py", reason="timeout", profiles=_TEST, max_scoring_s=43.0),
    # The scorer may be killed (local isolation) or not (sandboxed): NaN either way, and
    # the child it leaves goes with the sandbox.
    Cheat("kill_scorer.py", "solution.py", profiles=_TEST, kills_scorer=True),
    *(Cheat(name, "solution.py", Expect.AT_MOST_START, profiles=_TEST, tolerance=0.5)
      for name in _LIES_ABOUT_TIME),
)

