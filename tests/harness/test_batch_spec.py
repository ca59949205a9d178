"""Batch files: what is accepted, what is refused with a clear message, GPU handing out."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from rebench.agents.base import make_agent
from rebench.core.errors import RebenchError
from rebench.harness.batch import BatchSpecError, GpuPool, load_batch_spec, parse_batch_spec


def test_expands_the_product(prepared_env: str) -> None:
    spec = parse_batch_spec({"environments": [prepared_env], "agents": ["start", "reference"],
                             "seeds": [0, 1], "budgets": ["90s", "2m"], "concurrency": 2,
                             "gpus": "none"}, make_agent=make_agent)
    assert len(spec.jobs) == 8 and spec.concurrency == 2 and spec.gpu_ids == ()
    assert {j.budget_s for j in spec.jobs} == {90.0, 120.0}
    assert {(j.agent, j.seed) for j in spec.jobs} == {
        ("start", 0), ("start", 1), ("reference", 0), ("reference", 1)}


def test_defaults(prepared_env: str) -> None:
    spec = parse_batch_spec({"environments": prepared_env, "agents": "start"},
                            make_agent=make_agent)
    (job,) = spec.jobs
    assert (job.profile, job.seed, job.budget_s, spec.concurrency) == ("cpu", 0, None, 1)


@pytest.mark.parametrize("data, complaint", [
    ([1, 2], "mapping"),
    ({"agents": ["start"]}, "needs 'environments'"),
    ({"environments": ["triton_cumsum"], "agents": []}, "empty"),
    ({"environments": ["triton_cumsum"], "agents": ["start"], "colour": 1}, "unknown key"),
    ({"environments": ["triton_cumsum"], "agents": ["start"], "budgets": ["soon"]},
     "bad duration"),
    ({"environments": ["triton_cumsum"], "agents": ["start"], "concurrency": 0}, "positive"),
    ({"environments": ["triton_cumsum"], "agents": ["start"], "seeds": ["a"]}, "integers"),
    ({"environments": ["triton_cumsum"], "agents": ["start"], "gpus": "many"}, "gpus must"),
    ({"environments": ["triton_cumsum"], "agents": ["human"]}, "terminal"),
    ({"environments": ["triton_cumsum"], "agents": ["wizard"]}, "unknown agent"),
    ({"environments": ["no_such_env"], "agents": ["start"]}, "unknown environment"),
    ({"environments": ["triton_cumsum"], "agents": ["start"], "profiles": ["tpu"]},
     "profile"),
    ({"environments": ["triton_cumsum"], "agents": ["start"], "profiles": ["gpu"],
      "gpus": "none"}, "needs 1 GPU"),
])
def test_bad_batch_files(prepared_env: str, data: object, complaint: str) -> None:
    with pytest.raises(RebenchError, match=complaint):
        parse_batch_spec(data, make_agent=make_agent)


def test_unreadable_and_malformed_files(tmp_path: Path) -> None:
    with pytest.raises(BatchSpecError, match="cannot read"):
        load_batch_spec(tmp_path / "missing.yaml", make_agent=make_agent)
    bad = tmp_path / "bad.yaml"
    bad.write_text("environments: [unclosed\n")
    with pytest.raises(BatchSpecError, match="not valid YAML"):
        load_batch_spec(bad, make_agent=make_agent)


def test_gpu_pool_hands_out_exclusively() -> None:
    pool = GpuPool([0, 1, 2])
    first = pool.acquire(2)
    assert first == (0, 1)
    got: list[tuple[int, ...]] = []
    waiter = threading.Thread(target=lambda: got.append(pool.acquire(2)))
    waiter.start()
    time.sleep(0.1)
    assert got == []  # only one free: it waits
    pool.release(first)
    waiter.join(2)
    assert got and len(set(got[0])) == 2 and pool.acquire(0) == ()
