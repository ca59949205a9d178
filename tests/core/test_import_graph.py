"""The import graph between rebench's subpackages has no cycles: protocols and registries
live below the code that uses them. Every `import` counts, at module level or inside a
function (a lazy import dodges a cycle at run time, not in the design); only imports under
`if TYPE_CHECKING:` are left out. Environments are plugins loaded by id with importlib
(`rebench.environments.<id>.scoring`), which is no import statement and no edge.

`cli` is the command line (rebench/cli*.py); every other unit is a first-level subpackage.

File by file the graph has no cycles either, and there imports under `if TYPE_CHECKING:`
count too: two modules that name each other's types, even for the type checker only, are
one module split in the wrong place (issue 28 closed core/spec <-> core/service and
scoring/context <-> scoring/contract). An import names the module it loads (`from pkg import
mod` the submodule `pkg.mod`, `from pkg import Name` the package's `__init__`), not the parent
packages that Python initialises on the way.
"""

from __future__ import annotations

import ast
import itertools
from collections.abc import Iterator, Mapping
from pathlib import Path

import rebench
from rebench.core.pyparse import parse_python

SRC = Path(rebench.__file__).resolve().parent
TOP = ("harness", "agents", "cli")  # never in a cycle with each other, allow-list or not
# Edges that may close a cycle, each with its reason. Every other cycle fails.
ALLOWED: dict[tuple[str, str], str] = {
    ("core", "environments"): "discovery adds $REBENCH_ENVIRONMENTS_PATH folders to the "
    "namespace package's __path__; it imports no environment's code",
}

Graph = Mapping[str, Mapping[str, list[str]]]  # unit -> unit -> ["module:line", ...]


def _unit(module: str) -> str:
    parts = module.split(".")
    if len(parts) < 2:
        return parts[0]
    return "cli" if parts[1].startswith("cli") else parts[1]


def _module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _type_checking_only(tree: ast.Module) -> set[int]:
    """ids of the nodes under `if TYPE_CHECKING:` (or `typing.TYPE_CHECKING`)."""
    skipped: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skipped |= {id(child) for stmt in node.body for child in ast.walk(stmt)}
    return skipped


def _imports(path: Path, module: str, *, type_checking: bool = False,
             ) -> Iterator[tuple[str, int, tuple[str, ...]]]:
    """(imported module, line, imported names) of every import statement of a file,
    relative ones resolved; those under `if TYPE_CHECKING:` only when `type_checking`."""
    tree = parse_python(path.read_text(), str(path))
    skipped = set() if type_checking else _type_checking_only(tree)
    package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            yield from ((alias.name, node.lineno, ()) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            names = tuple(alias.name for alias in node.names)
            if node.level:
                base = package[:len(package) - node.level + 1]
                yield (".".join([*base, *([node.module] if node.module else [])]),
                       node.lineno, names)
            elif node.module:
                yield node.module, node.lineno, names


def import_graph(root: Path) -> dict[str, dict[str, list[str]]]:
    """unit -> imported unit -> where, over every module under `root` (a package folder)."""
    graph: dict[str, dict[str, list[str]]] = {}
    for path in sorted(root.rglob("*.py")):
        module = _module_name(path, root)
        source = _unit(module)
        graph.setdefault(source, {})
        for target, line, _ in _imports(path, module):
            if target.split(".")[0] != root.name:
                continue
            unit = _unit(target)
            if unit not in (source, root.name):
                graph[source].setdefault(unit, []).append(f"{module}:{line}")
    return graph


def _loaded(target: str, names: tuple[str, ...], modules: set[str]) -> Iterator[str]:
    """The modules of `modules` that importing `names` from `target` loads: a name that is
    a submodule is that module, any other name is `target`'s own (its `__init__`);
    `import a.b.c` loads the longest prefix that is a module."""
    for name in names or ("",):
        candidate = f"{target}.{name}" if name else target
        if candidate not in modules:
            candidate = target
        while candidate and candidate not in modules:
            candidate = candidate.rpartition(".")[0]
        if candidate:
            yield candidate


def module_graph(root: Path) -> dict[str, dict[str, list[str]]]:
    """module -> imported module -> where, over every module under `root` (a package
    folder), imports under TYPE_CHECKING included."""
    paths = {_module_name(path, root): path for path in sorted(root.rglob("*.py"))}
    graph: dict[str, dict[str, list[str]]] = {}
    for module, path in paths.items():
        graph[module] = {}
        for target, line, names in _imports(path, module, type_checking=True):
            for loaded in _loaded(target, names, set(paths)):
                if loaded == module:
                    continue
                where = graph[module].setdefault(loaded, [])
                if f"{module}:{line}" not in where:
                    where.append(f"{module}:{line}")
    return graph


def _reachable(graph: Graph, start: str) -> set[str]:
    seen, todo = set(), [start]
    while todo:
        for nxt in graph.get(todo.pop(), {}):
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return seen


def cycles(graph: Graph) -> list[set[str]]:
    """The strongly connected sets of more than one unit (each is at least one cycle)."""
    reach = {unit: _reachable(graph, unit) for unit in graph}
    found: list[set[str]] = []
    for unit in sorted(graph):
        group = {unit} | {other for other in reach[unit] if unit in reach.get(other, set())}
        if len(group) > 1 and group not in found:
            found.append(group)
    return found


def without(graph: Graph, edges: Mapping[tuple[str, str], str]) -> dict[str, dict[str, list[str]]]:
    return {a: {b: where for b, where in targets.items() if (a, b) not in edges}
            for a, targets in graph.items()}


def _path(graph: Graph, start: str, goal: str) -> list[str]:
    """A shortest import path from `start` to `goal` (breadth first), [] if none."""
    before: dict[str, str] = {}
    todo = [start]
    while todo:
        unit = todo.pop(0)
        for nxt in sorted(graph.get(unit, {})):
            if nxt not in before:
                before[nxt] = unit
                todo.append(nxt)
    if goal not in before:
        return []
    path = [goal]
    while path[-1] != start:
        path.append(before[path[-1]])
    return path[::-1]


def explain(graph: Graph, a: str, b: str) -> str:
    """A shortest cycle through `a` and `b`, each hop with the imports that make it."""
    units = _path(graph, a, b) + _path(graph, b, a)[1:]
    hops = [f"  {x} -> {y}: {', '.join(graph[x][y][:3])}"
            + (f" (+{len(graph[x][y]) - 3})" if len(graph[x][y]) > 3 else "")
            for x, y in itertools.pairwise(units)]
    return "\n".join([f"cycle {' -> '.join(units)}", *hops])


def _pairs(group: set[str]) -> list[tuple[str, str]]:
    ordered = sorted(group)
    return [(ordered[0], other) for other in ordered[1:]]


def test_harness_agents_and_cli_are_in_no_cycle_with_each_other() -> None:
    graph = import_graph(SRC)
    bad = [(a, b) for g in cycles(graph) for a in TOP for b in TOP if a < b and {a, b} <= g]
    assert not bad, "\n".join(explain(graph, a, b) for a, b in bad)


def test_no_cycle_between_subpackages_but_the_allowed_edges() -> None:
    graph = import_graph(SRC)
    pruned = without(graph, ALLOWED)
    found = cycles(pruned)
    assert not found, "\n".join(explain(pruned, *_pairs(g)[0]) for g in found)


def test_every_allowed_edge_still_exists_and_closes_a_cycle() -> None:
    graph = import_graph(SRC)
    for (a, b), reason in ALLOWED.items():
        assert reason and b in graph.get(a, {}), f"stale allow-list entry {a} -> {b}"
        assert any({a, b} <= g for g in cycles(graph)), f"{a} -> {b} closes no cycle: drop it"


def test_no_cycle_between_modules() -> None:
    """No allow-list here: discovery's edge into `environments` (allowed between packages)
    reaches only the namespace package's `__init__`, which imports nothing back."""
    graph = module_graph(SRC)
    found = cycles(graph)
    assert not found, "\n".join(explain(graph, *_pairs(g)[0]) for g in found)


def _write(root: Path, files: Mapping[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def test_the_checker_finds_lazy_and_relative_imports_and_skips_type_checking(
        tmp_path: Path) -> None:
    """The checks above can fail: a cycle made by a function-level import, a relative
    import, or an aliased import is found; one made only under TYPE_CHECKING is not."""
    root = tmp_path / "rebench"
    _write(root, {
        "__init__.py": "",
        "harness/__init__.py": "",
        "harness/batch.py": "def f():\n    from rebench.agents.base import make\n",
        "agents/__init__.py": "",
        "agents/base.py": "from ..harness import batch\n",
        "core/__init__.py": "",
        "core/spec.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                        "    import rebench.scoring.x\n",
        "scoring/__init__.py": "import rebench.core.spec as spec\n",
        "cli_runs.py": "from rebench.harness import batch\n",
    })
    graph = import_graph(root)
    assert graph["harness"] == {"agents": ["rebench.harness.batch:2"]}
    assert graph["agents"] == {"harness": ["rebench.agents.base:1"]}
    assert graph["cli"] == {"harness": ["rebench.cli_runs:1"]}
    assert graph["core"] == {}
    assert cycles(graph) == [{"agents", "harness"}]
    assert explain(graph, "agents", "harness").splitlines() == [
        "cycle agents -> harness -> agents", "  agents -> harness: rebench.agents.base:1",
        "  harness -> agents: rebench.harness.batch:2"]
    assert cycles(without(graph, {("harness", "agents"): "test"})) == []


def test_the_module_checker_finds_type_only_and_lazy_cycles_inside_a_package(
        tmp_path: Path) -> None:
    """File by file, a cycle inside one subpackage is found, also when one side imports
    only under TYPE_CHECKING or inside a function; `from pkg import mod` is the submodule,
    `from pkg import Name` the package's `__init__`."""
    root = tmp_path / "rebench"
    _write(root, {
        "__init__.py": "",
        "core/__init__.py": "from rebench.core.spec import Spec\n",
        "core/spec.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                        "    from rebench.core.service import Ctx\n",
        "core/service.py": "from .spec import Spec\n",
        "scoring/__init__.py": "",
        "scoring/context.py": "def f():\n    from rebench.scoring import contract\n",
        "scoring/contract.py": "import rebench.scoring.context.inner\n",
        "scoring/kit.py": "from rebench.core import Spec\n",
    })
    graph = module_graph(root)
    assert graph["rebench.core.spec"] == {"rebench.core.service": ["rebench.core.spec:3"]}
    assert graph["rebench.scoring.context"] == {
        "rebench.scoring.contract": ["rebench.scoring.context:2"]}
    assert graph["rebench.scoring.contract"] == {
        "rebench.scoring.context": ["rebench.scoring.contract:1"]}
    assert graph["rebench.scoring.kit"] == {"rebench.core": ["rebench.scoring.kit:1"]}
    assert cycles(graph) == [{"rebench.core.service", "rebench.core.spec"},
                             {"rebench.scoring.context", "rebench.scoring.contract"}]
    assert import_graph(root) == {"rebench": {}, "core": {}, "scoring": {"core": [
        "rebench.scoring.kit:1"]}}
