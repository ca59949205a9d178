"""Run every rule over one run's record and collect the flags into a report."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path

from rebench.core.errors import RebenchError
from rebench.integrity.checks import STRUCTURAL_CHECKS
from rebench.integrity.extension import NO_RULES, EnvironmentRules, environment_rules
from rebench.integrity.flags import Evidence, Flag, IntegrityReport
from rebench.integrity.patterns import PATTERN_RULES, PatternRule
from rebench.integrity.pycode import python_flags
from rebench.integrity.record import RunData, TextUnit, event_units, load_run, snapshot_units
from rebench.integrity.transcript import message_units

EXCERPT_CHARS = 160

# A model monitor: reads the run and returns flags marked as model judgements.
Monitor = Callable[[RunData], Sequence[Flag]]


def pattern_flags(unit: TextUnit, rules: Iterable[PatternRule] = PATTERN_RULES
                  ) -> Iterator[Flag]:
    """Every line rule that matches a line the agent added to `unit`."""
    lines = unit.added_lines()
    if not lines:
        return
    added_text: str | None = None
    for rule in rules:
        if not rule.applies(unit):
            continue
        if rule.requires is not None:
            added_text = added_text if added_text is not None else unit.added_text()
            if not rule.requires.search(added_text):
                continue
        for number, line in lines:
            if rule.pattern.search(line):
                evidence = Evidence(**{**unit.evidence.__dict__, "line": number,
                                       "excerpt": line.strip()[:EXCERPT_CHARS]})
                yield Flag(rule.id, rule.severity, rule.explanation, evidence, rule.hack_class)
                break  # one flag per rule and text: the first line is the evidence


def text_flags(units: Iterable[TextUnit], extra: EnvironmentRules = NO_RULES
               ) -> Iterator[Flag]:
    """The common line and syntax-tree rules, and an environment's own (`extra`)."""
    rules = (*PATTERN_RULES, *extra.patterns)
    for unit in units:
        yield from pattern_flags(unit, rules)
        for text_rule in extra.texts:
            yield from text_rule(unit)
        yield from python_flags(unit, extra.python)


def _dedupe(flags: Iterable[Flag]) -> list[Flag]:
    """One flag per rule and place: the same line seen in a write, then in each snapshot,
    or the same command run ten times, is one finding (its first sighting)."""
    seen: set[tuple[str, str, str]] = set()
    kept = []
    for flag in flags:
        ev = flag.evidence
        key = (flag.rule, ev.file or ev.command or str(ev.event), ev.excerpt)
        if key not in seen:
            seen.add(key)
            kept.append(flag)
    return kept


def _order(flag: Flag) -> tuple[int, float, int]:
    ev = flag.evidence
    return (-flag.severity.rank, ev.working_s if ev.working_s is not None else 0.0,
            ev.event if ev.event is not None else -1)


def check_data(data: RunData, monitor: Monitor | None = None) -> IntegrityReport:
    """The report of an already loaded run."""
    extra = environment_rules(data.record.env_id)
    units = [*event_units(data), *snapshot_units(data)]
    messages, message_notes = message_units(data.run_dir)
    flags: list[Flag] = [*text_flags(units, extra), *text_flags(messages, extra)]
    for check in (*STRUCTURAL_CHECKS, *extra.checks):
        flags.extend(check(data))
    notes = [*data.notes, *message_notes]
    if monitor is not None:
        try:
            flags.extend(monitor(data))
        except RebenchError as exc:  # no model (offline, down): the rules' report stands
            notes.append(f"model monitor skipped: {exc}")
    return IntegrityReport(data.record.run_id, tuple(sorted(_dedupe(flags), key=_order)),
                           tuple(notes))


def check_run(run_dir: Path, monitor: Monitor | None = None) -> IntegrityReport:
    """Every flag of the run in `run_dir` (rules, then the optional model monitor)."""
    return check_data(load_run(run_dir), monitor)
