"""Measure the simulated weak model of rust_codecontests_inference: for every held-out problem
of a profile, sample K answers to the reference's prompt (and to a hinted prompt), judge each
on the public tests and on all tests, and report by difficulty the fractions that are correct,
wrong but pass the public tests, and fail the public tests.

    python benchmarks/rust_codecontests_simulator.py [--profile cpu] [--samples 12]

Needs the environment prepared (`rebench prepare rust_codecontests_inference`).
"""

from __future__ import annotations

import argparse
import collections
import importlib.util
import tempfile
import time
from pathlib import Path

from rebench.core.discovery import environment_dir, load_spec
from rebench.environments.rust_codecontests_inference.evaluation import all_tests, load_problems
from rebench.environments.rust_codecontests_inference.judge import Judge, TestCase
from rebench.environments.rust_codecontests_inference.simulator import KnownProblem, Simulator
from rebench.harness.workspace import require_prepared

ENV = "rust_codecontests_inference"
HINTS = ("\nUse i64 to avoid overflow, read the whole input (it can be large), consider edge "
         "cases, standard library only.")


def _reference_module() -> object:
    path = environment_dir(ENV) / "reference" / "solution.py"
    spec = importlib.util.spec_from_file_location("reference_solution", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--profile", default="cpu")
    parser.add_argument("--samples", type=int, default=12)
    args = parser.parse_args()
    spec = load_spec(ENV)
    profile = spec.profile(args.profile)
    problems = load_problems(require_prepared(spec, profile) / "protected" / "test.jsonl")
    ref = _reference_module()
    known = [KnownProblem(p["id"], p["difficulty"], p["description"], p["solution"])
             for p in problems]

    sim = Simulator(known, profile.typed.model_seed)
    jobs = {}
    for prompt_kind, suffix in (("reference", ""), ("hinted", HINTS)):
        for p in problems:
            text = ref.PROMPT.format(description=p["description"]) + suffix  # type: ignore[attr-defined]
            body = {"messages": [{"role": "user", "content": text}], "n": args.samples,
                    "temperature": ref.TEMPERATURE}  # type: ignore[attr-defined]
            for i, choice in enumerate(sim.complete(body)["choices"]):
                code = ref.extract_rust(choice["message"]["content"]) or ""  # type: ignore[attr-defined]
                public = [TestCase(a, b) for a, b in
                          zip(p["public_tests"]["input"], p["public_tests"]["output"], strict=True)]
                jobs[(prompt_kind, p["id"], i, "public")] = (code, public, 2.0)
                jobs[(prompt_kind, p["id"], i, "all")] = (code, all_tests(p), 2.0)
    start = time.monotonic()
    with tempfile.TemporaryDirectory() as tmp:
        results = Judge(Path(tmp)).judge_many(jobs)
    print(f"{len(jobs)} judgings in {time.monotonic() - start:.0f} s")
    for prompt_kind in ("reference", "hinted"):
        table: dict[int, collections.Counter[str]] = collections.defaultdict(collections.Counter)
        for p in problems:
            for i in range(args.samples):
                full = results[(prompt_kind, p["id"], i, "all")].passed
                public = results[(prompt_kind, p["id"], i, "public")].passed
                outcome = ("correct" if full else
                           "wrong_but_passes_public" if public else "fails_public")
                table[p["difficulty"]][outcome] += 1
        print(f"\n{prompt_kind} prompt, temperature {ref.TEMPERATURE}, {args.samples} samples "  # type: ignore[attr-defined]
              "per problem")
        for difficulty, counts in sorted(table.items()):
            total = sum(counts.values())
            shares = ", ".join(f"{k} {counts[k] / total:.2f}" for k in
                               ("correct", "wrong_but_passes_public", "fails_public"))
            print(f"  difficulty {difficulty} ({total // args.samples} problems): {shares}")


if __name__ == "__main__":
    main()
