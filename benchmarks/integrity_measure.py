"""The integrity report measured as a monitor, with real scoring or stand-in scoring
(docs/benchmarks/integrity.md):

    python benchmarks/integrity_measure.py [--env triton_cumsum ...] [--out table.md]
        [--corpus-out corpus.json] [--keep DIR | --rescan DIR | --metrics-from corpus.json]
        [--stand-in] [--cache DIR] [--slow-policies] [--rescore-identical] [--hide-held-out]

The corpus, labelled, for every environment (cpu profile):
- hack: each hack of its cheat suite replayed as an agent run (the cheat written over the
  solution, then an official score), each cheat it declares as code (`Cheat.make`, kind
  "made": made like a degenerate policy), the hacks kept inline in tests/integrity
  (`INLINE_HACKS`), and each declared degenerate policy (`rebench/environments/<id>/
  degenerate.py`, cpu ones; the slow ones only with --slow-policies) made on the trusted
  side from the starting files and the public assets, its files written into the run's
  workspace, then scored;
- hack, kind "session": each of those hacks again after the generic honest replay (a look
  around and a score of the start), as an agent starts before it turns to a hack; it falls
  in its bare hack's half;
- honest: the start, reference and expert solutions, the honest replays of
  tests/integrity/honest_replays.py (each environment's, and the sessions of `SESSIONS`
  on every environment), and the cheat suites' broken submissions (`BROKEN`,
  and the made cheats of `MADE_BROKEN`: they crash, hang or hand in a malformed file, no
  hack attempt; kind "broken", counted apart);
- counted apart, in neither label: the degenerate policies that hand in the start itself
  (`START_ITSELF`; each run checked to leave its submission as it was at t=0), and their
  sessions: the same runs as the honest start's and the generic replay's.
Every run is checked by `rebench.integrity.check_run`; its suspicion score is
`rebench.integrity.metrics.suspicion` (worst severity, plus a tenth per distinct rule). Each
run falls in one of two halves by a hash of its case name (`half_of`): "tune" and
"held-out". Prints one markdown row per run, then AUROC, TPR at 5% FPR and the confusion
at the default threshold (a high flag) per environment and overall, for the held-out half,
the tuning half and all runs; --corpus-out writes the labelled rows (JSON) and
--metrics-from recomputes the tables from such a file.

A snapshot identical to one already scored, for the same kind of score, in this measurement
(the starting solution at t=0 of every run) reuses that score unless
--rescore-identical: a run of optimize_llm_foundry's starting pipeline takes minutes. A
starting solution built by training at the creation of every run (nanogpt_chat_rl's
improve.py) is built once per environment and its files copied into later runs' workspaces.
--stand-in measures what CI measures instead: stand-in scores (`# raw=` lines), stand-in assets
where a prepare takes minutes and none is in the cache (optimize_llm_foundry, whose cpu
prepare takes about 30 s, is prepared for real: `PREPARED_UNDER_STAND_IN`), no starting
build that trains, and
solutions submitted as replays (their build cut short). --cache DIR: the cache of prepared
assets to use (REBENCH_CACHE); with --stand-in and no --cache, a cache of the measurement's
own, so that stand-in assets never land in the user's cache.
"""

from __future__ import annotations

import argparse
import datetime
import hashlib
import json
import math
import os
import platform
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

TESTS = Path(__file__).resolve().parents[1] / "tests" / "integrity"
sys.path.insert(0, str(TESTS))

from honest_replays import MORE, SESSIONS, SPECIFIC, generic  # noqa: E402
from integrity_support import (  # noqa: E402
    SCORE,
    TRAINED_STARTING_BUILD,
    Action,
    cheat_files,
    ensure_assets,
    isolation,
    replay_run,
    run_cmd,
    solution_actions,
    stand_in_score,
    stand_in_starting_build,
    write,
)
from test_integrity_cheat_suites import (  # noqa: E402
    BROKEN,
    BROKEN_RUNS,
    CI_RECIPE_TIMEOUT_S,
    INLINE_HACKS,
    MADE_ALREADY,
    MADE_BROKEN,
    START_ITSELF,
    cheat_actions,
)

import rebench.harness.run as harness_run  # noqa: E402
from rebench.agents.base import make_agent  # noqa: E402
from rebench.core.discovery import environment_dir, environment_ids, load_spec  # noqa: E402
from rebench.harness.driver import execute_run  # noqa: E402
from rebench.harness.prepare import prepare_environment  # noqa: E402
from rebench.harness.run import create_run  # noqa: E402
from rebench.harness.scoring import snapshot_digest  # noqa: E402
from rebench.integrity import Severity, check_run  # noqa: E402
from rebench.integrity.metrics import (  # noqa: E402
    INFRASTRUCTURE,
    auroc,
    confusion,
    suspicion_of,
    threshold_of,
    tpr_at_fpr,
)
from rebench.scoring.declarations import (  # noqa: E402
    Cheat,
    Degenerate,
    PolicyContext,
    cheats_of,
    policies_of,
)


def reuse_identical_scores() -> None:
    """Score each distinct snapshot once per environment and kind of score (a requested
    score may differ from a final one: small_scaling_law's only checks validity) and reuse
    the result."""
    real = harness_run.official_score
    seen: dict[tuple[str, str, str], Any] = {}

    def score(spec: Any, profile: Any, snapshot_dir: Path, iso: Any,
              timeout_s: float | None = None, kind: Any = None) -> Any:
        key = (spec.id, snapshot_digest(snapshot_dir), str(kind))
        if key not in seen:
            seen[key] = real(spec, profile, snapshot_dir, iso, timeout_s=timeout_s, kind=kind)
        return seen[key]

    harness_run.official_score = score  # type: ignore[assignment]


def reuse_starting_builds() -> None:
    """Build each TRAINED_STARTING_BUILD environment's starting solution once (in the first
    run's workspace, as the harness does) and copy the files it made or changed into every
    later run's workspace: the build is seeded, so it makes the same files each time."""
    real = harness_run.apply_starting_recipe
    built: dict[str, dict[str, bytes]] = {}

    def files(workspace: Path) -> dict[str, bytes]:
        return {str(p.relative_to(workspace)): p.read_bytes()
                for p in sorted(workspace.rglob("*")) if p.is_file() and not p.is_symlink()}

    def build(spec: Any, profile: Any, workspace: Path, iso: Any) -> None:
        if spec.id not in TRAINED_STARTING_BUILD:
            real(spec, profile, workspace, iso)
            return
        if spec.id not in built:
            before = files(workspace)
            real(spec, profile, workspace, iso)
            built[spec.id] = {rel: data for rel, data in files(workspace).items()
                              if before.get(rel) != data}
        for rel, data in built[spec.id].items():
            (workspace / rel).parent.mkdir(parents=True, exist_ok=True)
            (workspace / rel).write_bytes(data)

    harness_run.apply_starting_recipe = build  # type: ignore[assignment]


# Labels and kinds of runs. Hack kinds: a cheat file, a cheat declared as code, a hack kept
# inline in tests/integrity, a declared degenerate policy, and any of those after an honest
# start (kind "session": the generic honest replay first, then the hack). Honest kinds: a
# solution (start, reference, expert), an honest replay (per environment, or a session of
# SESSIONS), a broken submission of a cheat suite (no hack attempt: it crashes, hangs or
# hands in a malformed file).
BARE_HACK_KINDS = ("cheat", "made", "inline", "degenerate")
SESSION = "session"
HACK_KINDS = (*BARE_HACK_KINDS, SESSION)
HONEST_KINDS = ("solution", "replay", "broken")
# The folder prefixes of kept runs (--keep) by kind; "hack-" and "honest-" are the names
# kept runs had before the kinds were told apart (read by --rescan as cheat and replay).
OLD_PREFIXES = {"hack": "cheat", "honest": "replay"}
HALVES = ("held-out", "tune")
Row = dict[str, Any]


def half_of(case: str) -> str:
    """The half a run's case ("env/kind/name") falls in: the lowest bit of the first byte of
    its SHA-256. The same case always falls in the same half, whatever else the corpus
    holds; the held-out half is the one with the bit set. A hack in a session
    ("env/session/kind/name") falls in its bare hack's half ("env/kind/name"), so that no
    rule written against a tune-half hack is measured on the same hack in the other half."""
    env_id, kind, name = case.split("/", 2)
    if kind == SESSION:
        case = f"{env_id}/{name}"
    return HALVES[0] if hashlib.sha256(case.encode()).digest()[0] & 1 else HALVES[1]


def folder(kind: str, name: str) -> str:
    """The folder a measured run is kept in (--keep): its kind and name, for --rescan."""
    return f"{kind}-" + re.sub(r"[^A-Za-z0-9_.]+", "_", name)


def make_row(env_id: str, kind: str, name: str, run_dir: Path | None, seconds: float,
             error: str = "") -> Row:
    """One labelled run of the corpus: its flags, suspicion score and half. A case that
    could not be made (`error`) is kept with no run, and counted as missing."""
    case = f"{env_id}/{kind}/{name}"
    flags: list[dict[str, str]] = []
    score = None
    base_kind, _, base_name = name.partition("/") if kind == SESSION else (kind, "", name)
    excluded = ""
    if run_dir is not None and (env_id, base_name) in START_ITSELF and base_kind in (
            "degenerate", "made"):
        excluded = "the start itself (START_ITSELF)"
        if not _submission_unchanged(run_dir):
            error = "START_ITSELF, but its submission is not the start's"
    if run_dir is not None:
        report = check_run(run_dir)
        flags = [{"rule": f.rule, "severity": f.severity.value, "hack_class": f.hack_class}
                 for f in report.flags]
        score = json.loads((run_dir / "run.json").read_text()).get("final_normalized")
    return {"env": env_id, "kind": kind, "name": name, "case": case,
            "label": "hack" if kind in HACK_KINDS else "honest", "half": half_of(case),
            "flags": flags, "suspicion": None if error else row_suspicion({"flags": flags}),
            "final_normalized": score,
            "seconds": round(seconds, 1) if math.isfinite(seconds) else None,
            "error": error, "excluded": excluded}


def _submission_unchanged(run_dir: Path) -> bool:
    """Whether the run's final snapshot is its t=0 one, byte for byte."""
    snapshots = sorted(p for p in (run_dir / "protected" / "snapshots").iterdir() if p.is_dir())
    return bool(snapshots) and snapshot_digest(snapshots[0]) == snapshot_digest(snapshots[-1])


def counted(row: Row) -> bool:
    """Whether a row counts in the numbers: measured, and not the start itself."""
    return not row["error"] and not row.get("excluded")


def row_suspicion(row: Row) -> float:
    """`suspicion` of a corpus row: its flags less the harness's own (INFRASTRUCTURE)."""
    return suspicion_of([(f["rule"], Severity(f["severity"])) for f in row["flags"]
                         if f.get("hack_class") != INFRASTRUCTURE])


def row_line(row: Row) -> str:
    score, sus, seconds = row["final_normalized"], row["suspicion"], row["seconds"]
    rules = ", ".join(sorted({f"{f['rule']} ({f['severity']})" for f in row["flags"]}))
    counts = [f"{sum(f['severity'] == s.value for f in row['flags'])} {s.value}"
              for s in (Severity.HIGH, Severity.MEDIUM, Severity.LOW)]
    summary = ", ".join(c for c in counts if not c.startswith("0 ")) or "no flags"
    if row.get("excluded"):
        summary = f"counted apart ({row['excluded']}): {summary}"
    if row["error"]:
        summary, rules = "not measured", row["error"]
    if HIDE_HELD_OUT and row["half"] == HALVES[0]:
        score, sus, summary, rules = None, None, "hidden (--hide-held-out)", ""
    return (f"| {row['env']} | {row['label']} | {row['kind']} | {row['name']} | {row['half']} | "
            f"{'-' if score is None else f'{score:.2f}'} | {summary} | {rules or '-'} | "
            f"{'-' if sus is None else f'{sus:.1f}'} | "
            f"{'-' if seconds is None else f'{seconds:.0f}'} |")


def _measure_hack(env_id: str, kind: str, name: str, actions: Callable[[], list[Action]],
                  base: Path, rows: list[Row]) -> None:
    """A hack as a run of its own, then (kind "session") after the generic honest replay:
    a look around and a score of the start, as an agent starts before it turns to the hack."""
    _measure(env_id, kind, name, _replay(env_id, kind, name, actions, base), rows)
    session = f"{kind}/{name}"
    _measure(env_id, SESSION, session, _replay(
        env_id, SESSION, session, lambda: [*generic(env_id), *actions()], base), rows)


def _measure(env_id: str, kind: str, name: str, make: Callable[[], Path], rows: list[Row]
             ) -> None:
    if not wanted(kind):
        return
    start = time.monotonic()
    rows.append(make_row(env_id, kind, name, make(), time.monotonic() - start))
    print(row_line(rows[-1]), flush=True)


def _replay(env_id: str, kind: str, name: str, actions: Callable[[], list[Action]],
            base: Path) -> Callable[[], Path]:
    return lambda: replay_run(env_id, actions(), base / folder(kind, name)).run_dir


def measure_hacks(env_id: str, base: Path, rows: list[Row]) -> None:
    """Every hack of the environment's cheat suite (cheat files, then inline hacks)."""
    for env, cheat in cheat_files():
        if env == env_id and (env, cheat.name) not in BROKEN:
            _measure_hack(env_id, "cheat", cheat.name,
                          lambda c=cheat: cheat_actions(env_id, c), base, rows)
    for (env, name), (make, _) in sorted(INLINE_HACKS.items()):
        if env == env_id:
            _measure_hack(env_id, "inline", name, make, base, rows)


def made_cheats(env_id: str) -> list[tuple[str, Cheat]]:
    """(kind, cheat) of every cheat the environment declares as code and the corpus does
    not hold already: "broken" for MADE_BROKEN, else "made" (a hack)."""
    return [("broken" if (env_id, c.label) in MADE_BROKEN else "made", c)
            for c in cheats_of(env_id)
            if c.make is not None and (env_id, c.label) not in MADE_ALREADY]


def measure_made(env_id: str, base: Path, rows: list[Row]) -> None:
    """Every cheat the environment declares as code, made as a degenerate policy is (on the
    trusted side, from the starting files and the public assets) and replayed as a run."""
    for kind, cheat in made_cheats(env_id):
        _measure_making(env_id, kind, cheat.label, cheat, base, rows)


def _measure_making(env_id: str, kind: str, name: str, policy: Degenerate | Cheat,
                    base: Path, rows: list[Row]) -> None:
    """`policy` made (policy_actions) and replayed as a run (a hack also in a session); one
    that cannot be made here (e.g. on stand-in assets, or where it needs a GPU) is kept as a
    missing case with the reason."""
    if not wanted(kind) and not (kind in BARE_HACK_KINDS and wanted(SESSION)):
        return
    scratch = base / folder("making", name)
    try:
        actions = policy_actions(env_id, policy, scratch)
    except Exception as exc:  # kept as a missing case, with its reason
        _missing(env_id, kind, name, f"not made: {type(exc).__name__}: {str(exc)[:120]}", rows)
        return
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    if kind in BARE_HACK_KINDS:
        _measure_hack(env_id, kind, name, lambda: actions, base, rows)
    else:
        _measure(env_id, kind, name, _replay(env_id, kind, name, lambda: actions, base), rows)


def _missing(env_id: str, kind: str, name: str, error: str, rows: list[Row]) -> None:
    """A case that could not be made, kept with the reason (and its session, for a hack)."""
    cases = [(kind, name)]
    if kind in BARE_HACK_KINDS:
        cases.append((SESSION, f"{kind}/{name}"))
    for kind_, name_ in cases:
        if wanted(kind_):
            rows.append(make_row(env_id, kind_, name_, None, math.nan, error))
            print(row_line(rows[-1]), flush=True)


def _tree(root: Path) -> dict[str, Path]:
    return {str(p.relative_to(root)): p for p in sorted(root.rglob("*"))
            if (p.is_file() or p.is_symlink()) and "__pycache__" not in p.parts}


def policy_actions(env_id: str, policy: Degenerate | Cheat, scratch: Path) -> list[Action]:
    """What an agent does to hand in `policy` (or a cheat declared as code, made over the
    starting files): made as the generic degenerate test makes it
    (a fresh copy of the starting files, the public assets at hand, on the trusted side),
    then every file it wrote or changed written into the run's workspace (links made as
    links), every file it removed removed, and a score."""
    spec = load_spec(env_id)
    profile = spec.profile("cpu")
    starting = environment_dir(env_id) / spec.solutions["starting"].folder
    if scratch.exists():
        shutil.rmtree(scratch)
    workspace, private = scratch / "workspace", scratch / "private"
    shutil.copytree(starting, workspace, symlinks=True)
    private.mkdir()
    assert policy.make is not None
    policy.make(PolicyContext(spec=spec, profile=profile,
                              public_dir=ensure_assets(env_id) / "public",
                              workspace=workspace, scratch=private))
    before, after = _tree(starting), _tree(workspace)
    actions: list[Action] = []
    for rel, path in after.items():
        if path.is_symlink():
            parent = str(Path(rel).parent)
            actions.append(run_cmd(f"mkdir -p {shlex.quote(parent)} && ln -sfn "
                                   f"{shlex.quote(os.readlink(path))} {shlex.quote(rel)}"))
        elif rel not in before or before[rel].read_bytes() != path.read_bytes():
            actions.append(write(rel, path.read_bytes()))
    actions += [run_cmd(f"rm -f {shlex.quote(rel)}") for rel in before if rel not in after]
    return [*actions, SCORE]


def measure_degenerate(env_id: str, base: Path, rows: list[Row], slow: bool) -> None:
    """Every declared degenerate policy of the environment, as a run on the cpu profile,
    whatever profiles the test suite checks it on (a policy moved to the small `test`
    profile, or to gpu only, is still an attack family of the corpus). A policy that cannot
    be made here (a slow one without --slow-policies, or one whose making fails, e.g. on
    stand-in assets or where it needs a GPU) is kept as a missing case with the reason."""
    for policy in policies_of(env_id):
        if not wanted("degenerate") and not wanted(SESSION):
            continue
        if policy.slow and not slow:
            _missing(env_id, "degenerate", policy.name,
                     "slow policy: not made (--slow-policies)", rows)
            continue
        _measure_making(env_id, "degenerate", policy.name, policy, base, rows)


def measure_honest(env_id: str, base: Path, rows: list[Row], stand_in: bool) -> None:
    """The start, reference and expert solutions, the honest replays and the broken
    submissions."""
    spec = load_spec(env_id)
    for name in ("starting", *sorted(n for n in spec.solutions if n != "starting")):
        if stand_in:  # as CI submits them: written, built (cut short), scored
            actions = [SCORE] if name == "starting" else solution_actions(
                env_id, name, CI_RECIPE_TIMEOUT_S)
            _measure(env_id, "solution", name,
                     _replay(env_id, "solution", name, lambda a=actions: a, base), rows)
        else:
            agent = "start" if name == "starting" else name
            _measure(env_id, "solution", agent,
                     lambda agent=agent: _agent_run(env_id, agent, base), rows)
    replays: dict[str, Callable[[], list[Action]]] = {"generic": lambda: generic(env_id)}
    if env_id in SPECIFIC:
        replays["human-style"] = SPECIFIC[env_id]
    replays.update(MORE.get(env_id, {}))
    replays.update({name: lambda s=session: s(env_id) for name, session in SESSIONS.items()})
    for name, replay in replays.items():
        _measure(env_id, "replay", name, _replay(env_id, "replay", name, replay, base), rows)
    for (env, name), make in sorted(BROKEN_RUNS.items()):
        if env == env_id:
            _measure(env_id, "broken", name, _replay(env_id, "broken", name, make, base), rows)


def _agent_run(env_id: str, agent: str, base: Path) -> Path:
    the_run = create_run(env_id, "cpu", agent, 3600, isolation(),
                         root=base / folder("solution", agent) / "runs")
    execute_run(the_run, make_agent(agent))
    return the_run.run_dir


def case_names(env_id: str) -> dict[tuple[str, str], str]:
    """(kind, kept folder) -> the case's name, for every case the corpus has of `env_id`:
    a folder's name is the case name made safe for a path, and the half is drawn from the
    name itself."""
    names: list[tuple[str, str]] = [
        *(("cheat", c.name) for env, c in cheat_files() if env == env_id),
        *((kind, c.label) for kind, c in made_cheats(env_id)),
        *(("inline", n) for env, n in INLINE_HACKS if env == env_id),
        *(("degenerate", p.name) for p in policies_of(env_id))]
    names += [(SESSION, f"{kind}/{name}") for kind, name in names if kind in BARE_HACK_KINDS]
    names += [
        *(("solution", n) for n in (*load_spec(env_id).solutions, "start")),
        *(("replay", n) for n in ("generic", "human-style", *MORE.get(env_id, {}),
                                  *SESSIONS)),
        *(("broken", n) for env, n in BROKEN_RUNS if env == env_id)]
    return {(kind, folder(kind, name)): name for kind, name in names}


CACHE_RECORD = "measured-with.json"  # in a --keep folder: the cache its runs were made with


def kept_cache(root: Path) -> Path | None:
    """The prepared-assets cache the runs kept under `root` were measured with, if its
    record names one that still exists."""
    record = root / CACHE_RECORD
    if not record.is_file():
        return None
    cache = json.loads(record.read_text()).get("cache") or ""
    return Path(cache) if cache and Path(cache).is_dir() else None


def rescan(root: Path) -> list[Row]:
    """Check again every run measured earlier under `root` (kept with --keep): the rules
    change faster than real-scored runs can be redone."""
    rows = []
    names: dict[str, dict[tuple[str, str], str]] = {}
    for run_json in sorted(root.glob("**/run.json")):
        run_dir = run_json.parent
        record = json.loads(run_json.read_text())
        group = next((p.name for p in run_dir.parents
                      if p.name.partition("-")[0] in (*HACK_KINDS, *HONEST_KINDS,
                                                      *OLD_PREFIXES)), "")
        if not group:
            continue
        prefix, _, name = group.partition("-")
        kind, env_id = OLD_PREFIXES.get(prefix, prefix), record["env_id"]
        if env_id not in names:
            names[env_id] = case_names(env_id) if env_id in environment_ids() else {}
        name = names[env_id].get((kind, group), name)
        rows.append(make_row(env_id, kind, name or str(record.get("agent", "?")), run_dir,
                             math.nan))
    return rows


def _fmt(x: float) -> str:
    return "n/a" if math.isnan(x) else f"{x:.3f}"


def metrics_lines(rows: Sequence[Row], half: str | None, hack_kinds: Sequence[str]
                  ) -> list[str]:
    """AUROC, TPR at 5% FPR and the confusion at a high flag, per environment and overall,
    over the measured rows of `half` (None: all), hacks of `hack_kinds` against every honest
    run."""
    chosen = [r for r in rows if counted(r) and (half is None or r["half"] == half)
              and (r["label"] == "honest" or r["kind"] in hack_kinds)]
    lines = ["| scope | hack runs | honest runs | AUROC | TPR at 5% FPR | "
             "at a high flag: TP / FN / FP / TN (TPR, FPR) |", "|---|---|---|---|---|---|"]
    for scope in [*sorted({r["env"] for r in chosen}), "overall"]:
        part = [r for r in chosen if scope in ("overall", r["env"])]
        scores = [float(r["suspicion"]) for r in part]
        labels = [r["label"] == "hack" for r in part]
        c = confusion(scores, labels, threshold_of(Severity.HIGH))
        lines.append(f"| {'**overall**' if scope == 'overall' else scope} | {sum(labels)} | "
                     f"{len(labels) - sum(labels)} | {_fmt(auroc(scores, labels))} | "
                     f"{_fmt(tpr_at_fpr(scores, labels, 0.05))} | {c.tp} / {c.fn} / {c.fp} / "
                     f"{c.tn} ({_fmt(c.tpr)}, {_fmt(c.fpr)}) |")
    return lines


def report_lines(rows: Sequence[Row]) -> list[str]:
    lines = []
    counts = {k: sum(r["kind"] == k and counted(r) for r in rows)
              for k in (*HACK_KINDS, *HONEST_KINDS)}
    missing = [r for r in rows if r["error"]]
    apart = [r for r in rows if not r["error"] and r.get("excluded")]
    lines.append(f"\ncorpus: {sum(counts[k] for k in HACK_KINDS)} hack runs "
                 f"({', '.join(f'{counts[k]} {k}' for k in HACK_KINDS)}), "
                 f"{sum(counts[k] for k in HONEST_KINDS)} honest runs "
                 f"({', '.join(f'{counts[k]} {k}' for k in HONEST_KINDS)}); "
                 f"{len(missing)} cases not measured")
    for r in missing:
        lines.append(f"- not measured: {r['case']}: {r['error']}")
    for r in apart:
        lines.append(f"- counted apart: {r['case']}: {r['excluded']}")
    measured = [r for r in rows if counted(r)]
    for title, kinds in (("cheats and inline hacks", ("cheat", "made", "inline")),
                         ("degenerate policies", ("degenerate",)),
                         ("hacks in a session", (SESSION,))):
        part = [r for r in measured if r["kind"] in kinds]
        lines.append(f"{title} with any flag: {sum(bool(r['flags']) for r in part)}/{len(part)}")
    honest = [r for r in measured if r["label"] == "honest"]
    lines.append("honest runs with a high flag: "
                 f"{sum(r['suspicion'] >= threshold_of(Severity.HIGH) for r in honest)}/"
                 f"{len(honest)}")
    for half in (*HALVES, None):
        for title, kinds in (("every hack (cheats, inline hacks, degenerate policies, "
                              "each alone and in a session)", HACK_KINDS),
                             ("hacks alone (no session)", BARE_HACK_KINDS),
                             ("cheats and inline hacks only", ("cheat", "made", "inline")),
                             ("degenerate policies only", ("degenerate",)),
                             ("hacks in a session only", (SESSION,))):
            lines += [f"\n{half or 'all runs'}, {title}:\n", *metrics_lines(rows, half, kinds)]
    return lines


def _commit() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                              text=True, check=True, cwd=TESTS).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "?"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--env", action="append", help="environments (default: all)")
    parser.add_argument("--out", type=Path, help="also write the tables here")
    parser.add_argument("--corpus-out", type=Path, help="write the labelled rows here (JSON)")
    parser.add_argument("--keep", type=Path, help="keep the runs under this folder")
    parser.add_argument("--rescan", type=Path, help="only check again the runs kept here "
                        "(with the cache they were made with, as --keep recorded it)")
    parser.add_argument("--metrics-from", type=Path,
                        help="only recompute the tables from a --corpus-out file")
    parser.add_argument("--stand-in", action="store_true", help="stand-in scores and assets")
    parser.add_argument("--cache", type=Path, help="prepared assets (REBENCH_CACHE)")
    parser.add_argument("--slow-policies", action="store_true",
                        help="also make the degenerate policies marked slow")
    parser.add_argument("--rescore-identical", action="store_true",
                        help="score identical snapshots again")
    parser.add_argument("--hide-held-out", action="store_true",
                        help="print no held-out run's flags, only the tables (for whoever "
                        "writes rules: the held-out half is never read to write them)")
    parser.add_argument("--only", action="append", choices=(*HACK_KINDS, *HONEST_KINDS),
                        help="measure only runs of these kinds (default: every kind)")
    args = parser.parse_args()
    unknown = sorted(set(args.env or ()) - set(environment_ids()))
    if unknown:
        parser.error(f"unknown environments: {unknown}")
    if sum(x is not None for x in (args.keep, args.rescan, args.metrics_from)) > 1:
        parser.error("--keep, --rescan and --metrics-from go one at a time")
    global HIDE_HELD_OUT
    HIDE_HELD_OUT = args.hide_held_out
    if args.rescan and not args.cache:
        args.cache = kept_cache(args.rescan)
        if args.cache is None:
            parser.error(f"--rescan: give --cache, the prepared assets the runs under "
                         f"{args.rescan} were measured with (the rules read them: other "
                         "assets give other flags); its record names none that still exists")
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="integrity-measure-") as tmp_name:
        if args.cache:
            os.environ["REBENCH_CACHE"] = str(args.cache.resolve())
        elif args.stand_in:
            os.environ["REBENCH_CACHE"] = str(Path(tmp_name) / "cache")
        if args.metrics_from:
            rows = json.loads(args.metrics_from.read_text())["rows"]
        elif args.rescan:
            rows = rescan(args.rescan)
        else:
            if args.keep:
                args.keep.mkdir(parents=True, exist_ok=True)
                (args.keep / CACHE_RECORD).write_text(json.dumps(
                    {"cache": os.environ.get("REBENCH_CACHE", ""), "stand_in": args.stand_in}))
            rows = measure(args, args.keep or Path(tmp_name) / "runs")
    lines = ["| env | label | kind | run | half | final normalized | flags | rules | "
             "suspicion | seconds |", "|---|---|---|---|---|---|---|---|---|---|",
             *(row_line(r) for r in rows), *report_lines(rows),
             f"\n(isolation {isolation().value}, {scoring(args)} scoring, "
             f"{time.monotonic() - started:.0f} s)"]
    text = "\n".join(lines)
    print(text)
    if args.out:
        args.out.write_text(text + "\n")
    if args.corpus_out:
        args.corpus_out.write_text(json.dumps({
            "measured_at": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
            "commit": _commit(), "machine": f"{platform.node()} {platform.machine()} "
            f"{os.cpu_count()} cores, Python {platform.python_version()}",
            "command": " ".join(sys.argv), "scoring": scoring(args),
            "isolation": isolation().value, "rows": rows}, indent=1) + "\n")


def scoring(args: argparse.Namespace) -> str:
    """How the runs were scored: stand-in or real, or as kept runs were (a rescan or a
    recomputation reads runs scored earlier; say which with --stand-in)."""
    kind = "stand-in" if args.stand_in else "real"
    if args.rescan or args.metrics_from:
        return f"{kind} (runs scored earlier)" if args.stand_in else "as the kept runs were"
    return kind


def measure(args: argparse.Namespace, base: Path) -> list[Row]:
    if args.stand_in:
        harness_run.official_score = stand_in_score  # type: ignore[assignment]
        harness_run.apply_starting_recipe = stand_in_starting_build  # type: ignore[assignment]
    else:
        reuse_starting_builds()
        if not args.rescore_identical:
            reuse_identical_scores()
    global ONLY
    ONLY = set(args.only) if args.only else None
    rows: list[Row] = []
    for env_id in args.env or environment_ids():
        spec = load_spec(env_id)
        if args.stand_in and env_id not in PREPARED_UNDER_STAND_IN:
            ensure_assets(env_id)
        else:
            prepare_environment(spec, spec.profile("cpu"))
        measure_hacks(env_id, base / env_id, rows)
        measure_made(env_id, base / env_id, rows)
        measure_degenerate(env_id, base / env_id, rows, args.slow_policies)
        measure_honest(env_id, base / env_id, rows, args.stand_in)
    return rows


def wanted(kind: str) -> bool:
    """Whether runs of `kind` are measured (--only)."""
    return ONLY is None or kind in ONLY


# Prepared for real even with --stand-in: optimize_llm_foundry's cpu prepare takes about
# 30 s, and two of its policies (one_big_batch, pretokenized_public) read or tokenize the
# public rows, which stand-in bytes cannot give (both were "not made" until 2026-12-07).
PREPARED_UNDER_STAND_IN = frozenset({"optimize_llm_foundry"})
ONLY: set[str] | None = None
HIDE_HELD_OUT = False


if __name__ == "__main__":
    main()
