"""Hidden tests that the samples answer (issue 26, degenerate policies): a program printing
the statement's sample outputs (the first one for any other input) once passed every
hidden test of a problem whose tests all had one answer (gcd of random numbers: 1; random
grids with no path: -1), normalized 0.075 on one prepare. The generator draws such hidden
tests again."""

from __future__ import annotations

import secrets

from rebench.environments.rust_codecontests_inference.problems import all_problems
from rebench.environments.rust_codecontests_inference.problems.base import (
    answered_by_samples,
)


def test_a_table_of_the_samples_is_recognised() -> None:
    public = {"input": ["1\n", "2\n"], "output": ["1\n", "4\n"]}
    constant = {"input": ["3\n", "4\n"], "output": ["1\n", "1"]}
    varied = {"input": ["3\n", "2\n"], "output": ["1\n", "9\n"]}
    repeated = {"input": ["2\n", "5\n"], "output": ["4\n", "1\n"]}
    assert answered_by_samples(public, [constant])
    assert answered_by_samples(public, [repeated, constant])
    assert not answered_by_samples(public, [constant, varied])


def test_no_problem_of_fresh_draws_is_answered_by_its_samples() -> None:
    for _ in range(3):
        for problem in all_problems(secrets.token_bytes(32)):
            assert not answered_by_samples(
                problem.public_tests, [problem.private_tests, problem.generated_tests]
            ), problem.id
