"""fix_embedding's own checks on bad or cheating submissions. The known hacks on the
weights file (another architecture, non-finite or float64 weights, truncated, oversized,
compressed or forged archives, a pickle that runs code, the scramble undone from the
spec's seed) are declared in the environment's folder (degenerate.py, CHEATS) and scored
officially by the generic cheat test (tests/environments/test_degenerate_policies.py).
Here: what only this environment has (an oversized or compressed file refused with
torch.load never called, the held-out split and the secret out of reach, a pickle that
never runs even without a sandbox, the uniform predictor tied with the start, the
compiled-model prefix accepted)."""

from __future__ import annotations

import json
import math
import os
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
import torch

from rebench.assets.gpt import GPT, GPTConfig
from rebench.core.score import ScoreResult
from rebench.core.spec import EnvironmentSpec, Profile
from rebench.environments.fix_embedding.environment import FEEDBACK
from rebench.harness.scoring import official_score


def _large(assets: Path) -> tuple[GPTConfig, dict[str, torch.Tensor]]:
    record = json.loads((assets / "protected" / "eval.json").read_text())
    state = torch.load(assets / "public" / "large_model.pth", weights_only=True)
    return GPTConfig.from_json(record["config"]), state


def _submit(tmp: Path, obj: object) -> Path:
    solution = tmp / "solution"
    solution.mkdir(exist_ok=True)
    torch.save(obj, solution / "fixed_model.pth")
    return solution


@pytest.fixture
def score(fe_score: Callable[[Path], ScoreResult]) -> Callable[[Path], ScoreResult]:
    return fe_score


def assert_rejected(result: ScoreResult, reason: str, fragment: str = "") -> None:
    """NaN with the reason code `reason` (environment.FEEDBACK) as all the message says
    (the scorer's own message, or the official one rendered by the harness); `fragment`
    is in the private details, which say more."""
    assert math.isnan(result.raw), result
    said = result.details.get("scorer_message", result.message)
    assert said == {"error": reason}, said
    if "valid" in result.message:  # official: the rendered message
        assert FEEDBACK.conforms(result.message) and result.message["reason"] == reason
    assert fragment in str(result.details), result.details


def test_oversized_file(score, fe_assets: Path, tmp_path: Path,  # type: ignore[no-untyped-def]
                        monkeypatch: pytest.MonkeyPatch) -> None:
    """Refused on its size alone: nothing of it is read, torch.load never runs (the
    declared oversized_file is the same file scored officially)."""
    from rebench.assets import checkpoint

    _, state = _large(fe_assets)
    state["padding"] = torch.zeros(20_000_000)  # 80 MB beside a ~4 MB model
    solution = _submit(tmp_path, state)

    def never(*args: object, **kwargs: object) -> None:
        raise AssertionError("the file was read")

    monkeypatch.setattr(torch, "load", never)
    monkeypatch.setattr(checkpoint.zipfile, "ZipFile", never)
    assert_rejected(score(solution), "too_large")


def test_a_compressed_archive_is_refused_before_loading(  # type: ignore[no-untyped-def]
    score, fe_assets: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The review's memory attack: 5.7 MB of deflated zeros made the scorer allocate
    ~1.8 GB. Here 100 MB of zeros in a ~3 MB file (it passes the file-size check);
    torch.load must never see it (the declared compressed_archive, scored officially)."""
    import zipfile

    from rebench.environments.fix_embedding import scoring

    _, state = _large(fe_assets)
    state["transformer.wte.weight"] = torch.zeros(25_000_000)
    plain = tmp_path / "plain.pth"
    torch.save(state, plain)
    solution = tmp_path / "solution"
    solution.mkdir()
    with zipfile.ZipFile(plain) as zin, zipfile.ZipFile(
        solution / "fixed_model.pth", "w", compression=zipfile.ZIP_DEFLATED
    ) as zout:
        for info in zin.infolist():
            zout.writestr(info.filename, zin.read(info))
    plain.unlink()
    assert (solution / "fixed_model.pth").stat().st_size < 5_000_000

    def never(*args: object, **kwargs: object) -> None:
        raise AssertionError("torch.load was reached")

    monkeypatch.setattr(scoring.torch, "load", never)
    assert_rejected(score(solution), "unreadable", "compressed")


class _RunsCode:
    """Unpickling this would create the marker file (it must never happen)."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):  # type: ignore[no-untyped-def]
        return (os.system, (f"touch {self.marker}",))


def test_pickle_that_runs_code_is_refused_and_never_runs(
    fe_spec: EnvironmentSpec, fe_cpu: Profile, fe_assets: Path, tmp_path: Path
) -> None:
    marker = tmp_path / "pwned"
    _, state = _large(fe_assets)
    state["transformer.ln_f.weight"] = _RunsCode(marker)  # type: ignore[assignment]
    solution = _submit(tmp_path, state)
    # Official scoring: a fresh scorer process, as in a run.
    from rebench.sandbox import Isolation

    result = official_score(fe_spec, fe_cpu, solution, Isolation.LOCAL)
    # Refused by the size-only unpickler (it knows no os.system), before torch.load.
    assert_rejected(result, "unreadable", "unsupported object")
    assert not marker.exists()


def test_held_out_split_is_not_reachable_from_the_workspace(fe_assets: Path) -> None:
    """A model trained on the held-out split would beat honest work, so the split must not
    be in anything the agent gets: no public file holds its text."""
    test = np.fromfile(fe_assets / "protected" / "test.bin", dtype="<u2")
    public_bytes = [p.read_bytes() for p in (fe_assets / "public").rglob("*.bin")]
    rng = np.random.default_rng(0)
    for start in rng.integers(0, len(test) - 64, size=20):
        needle = test[start : start + 64].tobytes()
        assert not any(needle in hay for hay in public_bytes)


def test_sandboxed_solution_code_cannot_read_protected_assets(
    fe_spec: EnvironmentSpec, fe_cpu: Profile, fe_assets: Path, tmp_path: Path
) -> None:
    """Where bubblewrap is available, the scorer's sandbox hides the asset cache."""
    import subprocess

    try:
        from rebench.sandbox import Isolation, default_isolation

        isolation = default_isolation()
    except ImportError:
        pytest.skip("no bubblewrap sandbox in this build")
    if isolation is Isolation.LOCAL:
        pytest.skip("bubblewrap is not available here")
    from rebench.scoring.context import ScoringContext

    solution = tmp_path / "solution"
    solution.mkdir()
    (solution / "visible.txt").write_text("ok")
    ctx = ScoringContext(fe_spec, fe_cpu, solution, fe_assets, tmp_path / "s", isolation)
    # Positive control: the sandbox runs and sees the solution, so a failure below is the
    # hiding at work, not a sandbox that does not start.
    control = subprocess.run(ctx.untrusted_argv(["cat", "visible.txt"]), capture_output=True,
                             timeout=60)
    if control.returncode != 0 or control.stdout != b"ok":
        pytest.skip(f"the sandbox does not run here: {control.stderr[-300:]!r}")
    argv = ctx.untrusted_argv(["cat", str(fe_assets / "protected" / "test.bin")])
    proc = subprocess.run(argv, capture_output=True, timeout=60)
    assert proc.returncode != 0 and not proc.stdout


def test_compiled_model_prefix_is_accepted(score, fe_assets: Path, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """Honest path check: torch.compile's `_orig_mod.` prefix scores like the plain dict."""
    _, state = _large(fe_assets)
    plain = score(_submit(tmp_path, state))
    prefixed = score(_submit(tmp_path, {f"_orig_mod.{k}": v for k, v in state.items()}))
    assert plain.valid and prefixed.raw == plain.raw


# ---------------------------------------------------------------- issue 10: secrets, bounds


def test_a_uniform_predictor_scores_at_most_zero(  # type: ignore[no-untyped-def]
    score, fe_spec: EnvironmentSpec, fe_cpu: Profile, fe_assets: Path, tmp_path: Path
) -> None:
    """All-equal logits (a zero embedding: tied weights make every logit 0) know nothing, so
    they must not beat the start: both score the input-free loss U of this prepare."""
    cfg, state = _large(fe_assets)
    start = score(_submit(tmp_path, state))
    state["transformer.wte.weight"] = torch.zeros_like(state["transformer.wte.weight"])
    result = score(_submit(tmp_path, state))
    assert result.valid
    assert result.details["loss"] == pytest.approx(math.log(cfg.vocab_size), abs=1e-4)
    assert result.raw == start.raw


def test_the_secret_lives_only_in_protected(fe_assets: Path) -> None:
    from rebench.assets.secret import SECRET_FILE, load_secret

    secret = load_secret(fe_assets / "protected")
    assert not any(p.name == SECRET_FILE for p in (fe_assets / "public").rglob("*"))
    for path in (fe_assets / "public").rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            assert secret not in data and secret.hex().encode() not in data


def test_the_permutation_follows_from_the_secret(fe_cpu: Profile, fe_assets: Path) -> None:
    """Only the prepare's secret reproduces the permutation (the declared cheats
    permutation_from_seed_plus_* show that the spec's seed restores nothing)."""
    from rebench.assets.secret import load_secret, secret_rng
    from rebench.environments.fix_embedding.corruption import Scrambler

    cfg, _ = _large(fe_assets)
    record = json.loads((fe_assets / "protected" / "eval.json").read_text())
    rng = secret_rng(load_secret(fe_assets / "protected"), "fix_embedding/permutation")
    order = Scrambler.draw(GPT(cfg), rng).order
    rows = int(record["corruption"]["scrambled_rows"])
    expected = np.arange(cfg.vocab_size)
    expected[order[:rows]] = np.roll(order[:rows], -1)
    assert (np.load(fe_assets / "protected" / "permutation.npy") == expected).all()


def test_the_held_out_split_is_not_rebuilt_from_public_seeds(fe_assets: Path) -> None:
    """The review's attack: rebuild test.bin from package code, the public seed and the
    corpus. Keys an attacker could guess from public things hold out other works than the
    prepared split, and no held-out work is from a source every sandbox can read."""
    from rebench.assets.corpus import offline_documents, split_documents

    manifest = json.loads((fe_assets / "protected" / "corpus.json").read_text())
    held_out = set(manifest["groups"]["test"])
    assert held_out and not any(g.startswith("pydoc:") for g in held_out)
    docs = offline_documents()
    for guess in (b"1234", (1234).to_bytes(32, "big"), b"\0" * 32, b"fix_embedding"):
        test = split_documents(docs, guess, 0.05, 0.05)["test"]
        assert {f"{d.source}:{d.group}" for d in test} != held_out
