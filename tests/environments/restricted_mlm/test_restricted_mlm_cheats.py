"""restricted_mlm's cheats that this folder scores itself (the ones declared in the
environment's folder, degenerate.py CHEATS, are submitted as model.py and scored officially
by the generic cheat test): the cheats that the graph rules refuse from the exported graph
alone, exported in the test process and checked by those rules (IN_PROCESS); a lie that
gains nothing; the runaway children, stopped at a short export timeout."""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import shutil
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from mlm_cheats import CHEATS

from rebench.core.score import ScoreResult
from rebench.core.spec import EnvironmentSpec, Profile
from rebench.environments.restricted_mlm.export_child import (
    example_batch,
    export_model,
    graph_data,
)
from rebench.environments.restricted_mlm.graph_check import GraphError, parse_graph, plan
from rebench.environments.restricted_mlm.scoring import EvalPlan
from rebench.sandbox import Isolation
from rebench.scoring.context import ScoringContext
from rebench.scoring.declarations import cheats_of

# Cheats that the graph rules refuse from the exported graph alone (an op off the
# allow-list, an integer made from floats, a dtype), all of a reason code that a declared
# cheat also gives through the sandboxed, official path: exported in the test process (they
# are our files; the export child calls the same export_model and graph_data) and checked
# by parse_graph and plan with the cpu profile's numbers, the reason code and the detail as
# the scorer gives them. What the sandboxed path adds (the child, its files, the rendering
# of the reason) is the same for every cheat and is checked once per reason code (issue 28:
# eighteen sandboxed exports of about 5 s each). Issue 26's cheats are also checked by plan
# alone in test_restricted_mlm_rules.py (NEW_CHEATS). Marked (new) where the cheat was
# accepted before 1.1.0.
# cheat file -> (the agent-visible reason code, a text of the private detail)
IN_PROCESS = {
    "tensor_division.py": ("forbidden_op", "op aten.div"),
    "tensor_comparison.py": ("forbidden_op", "op aten.gt"),
    "tensor_softmax.py": ("forbidden_op", "softmax"),
    "unlisted_functions.py": ("forbidden_op", "op aten.sigmoid"),
    "aten_ops_direct.py": ("forbidden_op", "op aten.gelu"),
    "captured_reference.py": ("forbidden_op", "op aten.exp"),
    "argsort_index.py": ("forbidden_op", "aten.argsort"),
    "remainder_op.py": ("forbidden_op", "aten.remainder"),
    "round_op.py": ("forbidden_op", "aten.round"),
    "clamp_op.py": ("forbidden_op", "aten.clamp"),
    "bitwise_token_ops.py": ("forbidden_op", "aten.__and__"),
    "int_sum_exp_table.py": ("forbidden_cast", "aten.sum.dim_IntList"),  # new
    "activation_index_select.py": ("forbidden_cast", "makes integers from floats"),  # new
    "activation_gather.py": ("forbidden_cast", "makes integers from floats"),  # new
    "bool_sum_mask.py": ("forbidden_dtype", "torch.bool"),  # new
    "int_sum_reduction.py": ("forbidden_cast", "makes integers from floats"),  # new
    "float_bits_view.py": ("forbidden_cast", "aten.view.dtype"),  # new
    "float64_weights.py": ("forbidden_dtype", "torch.float64"),  # new
}
# Lies that the trusted side makes pointless: the graph it received is what it runs, so the
# score is that of the (honest, untrained) graph, far from the starting solution's.
NO_GAIN = {"lying_child_renamed_op.py"}
# Runaway children, scored with a short export timeout (the profile's is minutes): 3 s
# stops the child that hangs (any limit shows the stop; issue 28: it waited 20 s); the one
# that floods its output keeps 20 s, time to reach the 64 MB cap first on a busy machine.
# cheat -> (export timeout s, reason code, private detail text)
RUNAWAY = {
    "hangs_in_export.py": (3.0, "timeout", "exporting the model took longer than 3 s"),
    "floods_output.py": (20.0, "output_cap", "printed more than 64 MB of output"),
}


def test_every_cheat_is_covered() -> None:
    assert {p.name for p in CHEATS.glob("*.py")} == set(IN_PROCESS) | NO_GAIN | set(RUNAWAY)
    # every reason code checked here in the test process is also given through the
    # sandboxed, official path by some declared cheat
    declared = {cheat.reason for cheat in cheats_of("restricted_mlm")}
    assert {code for code, _ in IN_PROCESS.values()} <= declared


@pytest.mark.parametrize("name", sorted(IN_PROCESS))
def test_cheat_is_refused_from_its_graph(name: str, mlm_cpu: Profile, tmp_path: Path) -> None:
    shutil.copyfile(CHEATS / name, tmp_path / name)
    vocab, mask_id = 2048, 0  # the cpu profile's BPE and its end-of-text id
    (tmp_path / "config.json").write_text(json.dumps({"vocab_size": vocab}))
    spec = importlib.util.spec_from_file_location(f"mlm_cheat_{name[:-3]}", tmp_path / name)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    checks = EvalPlan(mlm_cpu.typed, vocab_size=vocab, mask_id=mask_id)
    p = checks.params
    graph, tensors = graph_data(export_model(module.get_trained_model(),
                                             example_batch(vocab, p.seq_len, p.batch_size,
                                                           mask_id)))
    code, text = IN_PROCESS[name]
    with pytest.raises(GraphError) as info:  # what the scorer does with the child's export
        plan(parse_graph(json.dumps(graph), tensors), tensors, p.batch_size, p.seq_len, vocab,
             checks.limits())
    assert info.value.code == code, str(info.value)
    assert text in str(info.value), str(info.value)


@pytest.mark.parametrize("name", sorted(NO_GAIN))
def test_lie_gains_nothing(name: str, mlm_score: Callable[[Path], ScoreResult],
                           cheat_solution: Callable[[str], Path]) -> None:
    result = mlm_score(cheat_solution(name))
    assert result.valid, result.message
    # What was run is the graph as sent: relu where the child said relu.
    assert "aten._softmax.default" not in result.details["ops"]
    assert result.details["ops"].get("aten.relu.default") == 1
    # An untrained 16-wide net: far worse than the trained unigram MLP (loss ~6.3).
    assert result.details["loss"] > 7.0


@pytest.mark.parametrize("name", sorted(RUNAWAY))
def test_runaway_child_is_stopped(name: str, mlm_spec: EnvironmentSpec, mlm_cpu: Profile,
                                  mlm_assets: Path, mlm_isolation: Isolation,
                                  cheat_solution: Callable[[str], Path], tmp_path: Path) -> None:
    from rebench.environments.restricted_mlm import scoring

    timeout_s, code, text = RUNAWAY[name]
    profile = dataclasses.replace(mlm_cpu, params={**mlm_cpu.params,
                                                   "export_timeout_s": timeout_s})
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    ctx = ScoringContext(mlm_spec, profile, cheat_solution(name), mlm_assets, scratch,
                         mlm_isolation)
    start = time.monotonic()
    try:
        result = scoring.score(ctx)
    finally:
        ctx.close()
    assert not result.valid and result.message == {"error": code}, result.message
    assert text in result.details["detail"], result.details
    assert time.monotonic() - start < 120
    log = scratch / "export_child.log"
    assert log.stat().st_size < 2 << 30  # capped near 64 MB (checked 10 times a second)
