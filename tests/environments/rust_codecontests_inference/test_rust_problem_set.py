"""The problem set: size, split, graded difficulty, determinism, and that every reference
Rust program passes all of its tests."""

from __future__ import annotations

import functools
import json
from collections import Counter
from pathlib import Path

from rebench.core.spec import EnvironmentSpec
from rebench.environments.rust_codecontests_inference.evaluation import all_tests, load_problems
from rebench.environments.rust_codecontests_inference.judge import Judge
from rebench.environments.rust_codecontests_inference.prepare import prepare
from rebench.environments.rust_codecontests_inference.problems import (
    FAMILIES,
    VALIDATION_FAMILIES,
    Problem,
    all_problems,
    split_problems,
)
from rebench.scoring.context import PrepareContext

KEY = b"tests: a fixed key"


@functools.cache
def _problems() -> list[Problem]:
    return all_problems(KEY)


def test_at_least_100_distinct_problems_with_graded_difficulty() -> None:
    problems = _problems()
    assert len(problems) >= 100
    assert len({p.id for p in problems}) == len(problems)
    assert len({p.description for p in problems}) == len(problems)
    assert len({p.solution for p in problems}) == len(problems)
    assert set(Counter(p.difficulty for p in problems)) == {1, 2, 3}


def test_every_problem_has_public_private_and_generated_tests() -> None:
    for p in _problems():
        assert len(p.public_tests["input"]) == len(p.public_tests["output"]) >= 2
        assert len(p.private_tests["input"]) >= 4
        assert len(p.generated_tests["input"]) >= 6
        for out in p.public_tests["output"]:
            assert out.split()[0] in p.description  # examples are in the statement


def test_generation_is_deterministic_in_the_key() -> None:
    a, b = _problems(), all_problems(KEY)
    assert [p.to_json() for p in a] == [p.to_json() for p in b]
    other = all_problems(KEY + b"!")
    for p, q in zip(a, other, strict=True):
        assert p.generated_tests != q.generated_tests and p.private_tests != q.private_tests
        assert p.description != q.description  # the examples differ too


def test_split_is_by_family() -> None:
    validation, test = split_problems(KEY)
    assert {p.family for p in validation} == set(VALIDATION_FAMILIES)
    assert not {p.family for p in validation} & {p.family for p in test}
    assert len(test) >= 60 and len(validation) >= 30
    assert len(FAMILIES) * 5 == len(validation) + len(test)


def test_prepare_keeps_held_out_problems_protected(prepared: Path) -> None:
    public = load_problems(prepared / "public" / "validation.jsonl")
    test = load_problems(prepared / "protected" / "test.jsonl")
    assert len(test) == 32
    assert not {p["id"] for p in public} & {p["id"] for p in test}
    assert len({p["family"] for p in test}) == len(FAMILIES) - len(VALIDATION_FAMILIES)
    assert all(p["family"] in VALIDATION_FAMILIES for p in public)
    public_text = (prepared / "public" / "validation.jsonl").read_text()
    assert not any(json.dumps(p["description"]) in public_text for p in test)
    assert (prepared / "protected" / "secret.bin").stat().st_size == 32
    public_files = [f for f in (prepared / "public").rglob("*") if f.is_file()]
    secret = (prepared / "protected" / "secret.bin").read_bytes()
    assert not any(secret in f.read_bytes() or secret.hex().encode() in f.read_bytes()
                   for f in public_files)


def test_held_out_set_is_drawn_fresh_at_each_prepare(spec: EnvironmentSpec,
                                                       tmp_path: Path) -> None:
    """Two prepares draw two secrets: same problems (ids), different instances; the public
    files of one prepare are not enough to tell its held-out tests."""
    builds = []
    for i in range(2):
        ctx = PrepareContext(spec, spec.profile("cpu"), tmp_path / str(i))
        ctx.public_dir.mkdir(parents=True)
        ctx.protected_dir.mkdir(parents=True)
        prepare(ctx)
        builds.append(load_problems(ctx.protected_dir / "test.jsonl"))
    first, second = builds
    assert [p["id"] for p in first] == [p["id"] for p in second]
    for p, q in zip(first, second, strict=True):
        assert p["generated_tests"] != q["generated_tests"]
        assert p["description"] != q["description"]


def test_every_reference_program_passes_all_its_tests(tmp_path: Path) -> None:
    """Compiles all reference programs (in parallel, cached by hash) and runs every test."""
    judge = Judge(tmp_path / "build")
    problems = _problems()
    jobs = {p.id: (p.solution, all_tests(p.to_json()), p.time_limit_s) for p in problems}
    results = judge.judge_many(jobs)
    failed = {pid: (r.verdict.value, r.detail[:200]) for pid, r in results.items() if not r.passed}
    assert not failed

