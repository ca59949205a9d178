"""Deliberately bad or cheating submissions: each must score NaN with a clear message (or
no better than the start), and none may run code in the scorer."""

from __future__ import annotations

import json
import math
import os
import shutil
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


def test_missing_file(score, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    (tmp_path / "empty").mkdir()
    assert_rejected(score(tmp_path / "empty"), "no_model", "fixed_model.pth not found")


def test_different_architecture(score, fe_assets: Path, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    cfg, _ = _large(fe_assets)
    deeper = GPT(GPTConfig(cfg.vocab_size, cfg.block_size, cfg.n_layer + 1, cfg.n_head, cfg.n_embd))
    wrong = "wrong_architecture"
    assert_rejected(score(_submit(tmp_path, deeper.state_dict())), wrong, "keys differ")
    wider = GPT(GPTConfig(cfg.vocab_size, cfg.block_size, cfg.n_layer, cfg.n_head, cfg.n_embd + 32))
    assert_rejected(score(_submit(tmp_path, wider.state_dict())), wrong, "has shape")


def test_the_small_model_is_not_accepted(score, fe_assets: Path, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    solution = tmp_path / "solution"
    solution.mkdir()
    shutil.copyfile(fe_assets / "public" / "small_correct_model.pth", solution / "fixed_model.pth")
    assert_rejected(score(solution), "wrong_architecture", "keys differ")


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_non_finite_weights(score, fe_assets: Path, tmp_path: Path, bad: float) -> None:  # type: ignore[no-untyped-def]
    _, state = _large(fe_assets)
    state["transformer.h.0.mlp.c_fc.weight"][3, 5] = bad
    assert_rejected(score(_submit(tmp_path, state)), "nonfinite_weights", "NaN or infinite")


def test_wrong_dtype_and_non_tensor(score, fe_assets: Path, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    _, state = _large(fe_assets)
    doubled = {k: v.double() for k, v in state.items()}
    assert_rejected(score(_submit(tmp_path, doubled)), "wrong_architecture", "dtype")
    state["transformer.ln_f.bias"] = [0.0] * 4  # type: ignore[assignment]
    assert_rejected(score(_submit(tmp_path, state)), "wrong_architecture",
                    "not a plain dense tensor")
    assert_rejected(score(_submit(tmp_path, [1, 2, 3])), "unreadable", "state dict")


def test_truncated_file(score, fe_assets: Path, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    data = (fe_assets / "public" / "large_model.pth").read_bytes()
    solution = tmp_path / "solution"
    solution.mkdir()
    (solution / "fixed_model.pth").write_bytes(data[: len(data) // 2])
    # Cut before the zip directory: refused by the archive check before torch.load.
    assert_rejected(score(solution), "unreadable", "not a torch.save zip archive")


def test_oversized_file(score, fe_assets: Path, tmp_path: Path,  # type: ignore[no-untyped-def]
                        monkeypatch: pytest.MonkeyPatch) -> None:
    """Refused on its size alone: nothing of it is read, torch.load never runs."""
    from rebench.assets import checkpoint

    _, state = _large(fe_assets)
    state["padding"] = torch.zeros(20_000_000)  # 80 MB beside a ~4 MB model
    solution = _submit(tmp_path, state)

    def never(*args: object, **kwargs: object) -> None:
        raise AssertionError("the file was read")

    monkeypatch.setattr(torch, "load", never)
    monkeypatch.setattr(checkpoint.zipfile, "ZipFile", never)
    assert_rejected(score(solution), "too_large")


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


def _normalized(spec: EnvironmentSpec, profile: Profile, raw: float) -> float:
    from rebench.core.calibration import resolve_anchors
    from rebench.core.normalize import normalize

    return normalize(raw, resolve_anchors(spec, profile), spec.direction)


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


def test_huge_finite_weights_are_invalid_with_json_safe_details(
    fe_spec: EnvironmentSpec, fe_cpu: Profile, fe_assets: Path, tmp_path: Path
) -> None:
    """Finite weights whose logits overflow float32 once crashed the scorer process (NaN
    in details, refused by JSON). Official scoring in a fresh scorer process, as in a run."""
    _, state = _large(fe_assets)
    huge = {k: v * 1e30 for k, v in state.items()}
    assert all(bool(torch.isfinite(v).all()) for v in huge.values())
    result = official_score(fe_spec, fe_cpu, _submit(tmp_path, huge), _isolation())
    assert_rejected(result, "nonfinite_loss")
    json.dumps(result.to_json(), allow_nan=False)  # strict JSON: no NaN or inf anywhere


def _isolation():  # type: ignore[no-untyped-def]
    from rebench.sandbox import Isolation

    return Isolation.LOCAL


def test_a_compressed_archive_is_refused_before_loading(  # type: ignore[no-untyped-def]
    score, fe_assets: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The review's memory attack: 5.7 MB of deflated zeros made the scorer allocate
    ~1.8 GB. Here 100 MB of zeros in a ~3 MB file (it passes the file-size check);
    torch.load must never see it."""
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


def test_a_pickle_declaring_huge_storages_is_refused(  # type: ignore[no-untyped-def]
    score, fe_assets: Path, tmp_path: Path
) -> None:
    """A small, uncompressed file whose pickle declares a 1.8 GB storage for one tensor."""
    import zipfile

    _, state = _large(fe_assets)
    state["transformer.ln_f.bias"] = torch.zeros(4)
    plain = _submit(tmp_path, state) / "fixed_model.pth"
    with zipfile.ZipFile(plain) as z:
        members = {i.filename: z.read(i) for i in z.infolist()}
    name = next(n for n in members if n.endswith("data.pkl"))
    forged = members[name].replace(b"K\x04t", b"J" + (450_000_000).to_bytes(4, "little") + b"t")
    assert forged != members[name]
    members[name] = forged
    with zipfile.ZipFile(plain, "w") as z:
        for member, data in members.items():
            z.writestr(member, data)
    assert_rejected(score(plain.parent), "unreadable", "more than the model")


def test_the_secret_lives_only_in_protected(fe_assets: Path) -> None:
    from rebench.assets.secret import SECRET_FILE, load_secret

    secret = load_secret(fe_assets / "protected")
    assert not any(p.name == SECRET_FILE for p in (fe_assets / "public").rglob("*"))
    for path in (fe_assets / "public").rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            assert secret not in data and secret.hex().encode() not in data


def test_the_permutation_follows_from_the_secret_not_the_spec_seed(  # type: ignore[no-untyped-def]
    score, fe_spec: EnvironmentSpec, fe_cpu: Profile, fe_assets: Path, tmp_path: Path
) -> None:
    """The review's attack: recompute the permutation from the spec's seed (the old
    PCG64(seed + 3)) and undo it. It now restores nothing; only the prepare secret
    reproduces the permutation."""
    from rebench.assets.secret import load_secret, secret_rng
    from rebench.environments.fix_embedding.corruption import Scrambler

    cfg, state = _large(fe_assets)
    seed = fe_cpu.typed.seed
    for guess in (seed + 3, seed, seed + 1):
        perm = np.random.Generator(np.random.PCG64(guess)).permutation(cfg.vocab_size)
        undone = dict(state)
        undone["transformer.wte.weight"] = state["transformer.wte.weight"][np.argsort(perm)]
        result = score(_submit(tmp_path, undone))
        assert not result.valid or _normalized(fe_spec, fe_cpu, result.raw) <= 0.05, guess
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
