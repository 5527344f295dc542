"""A run's result, its final invariant check, its exit status and its JSON report.

Rules:
- `RunResult` is what the shell observed (one fleet process or several, merged); everything the
  run concludes is derived from it and from the final check here, in one place.
- Exit status: 2 when the controller was unreachable (bad arguments exit 2 before a run); 1 on any
  violation (seen during the run or found by the final check), on a problem the check reports (an
  unreadable log or journal), or when the run did not finish for another reason (a fleet process
  died); 130 when interrupted (SIGINT, SIGTERM) with nothing of the above; 0 otherwise.
- The final check is the checker's `broker_sim.check.check(data_dir, journal)`, imported when it
  runs (the checker is its own module; the run only asks it). A run with its own quorum
  (`--quorum`) checks every node's data dir with the checker's quorum check,
  `broker_sim.check.quorum.check_quorum(dirs, journal)` (what `python -m broker_sim check DIR1
  DIR2 DIR3` runs); a checker without it checks each node's dir alone (`how` says which).
- The report is written whole or not at all (a temporary file renamed over it).
"""

from __future__ import annotations

import importlib
import json
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from broker_sim.journal import Entry, JournalError, read_journal
from broker_sim.stats import FleetStats

EXIT_OK = 0
EXIT_VIOLATIONS = 1
EXIT_UNREACHABLE = 2
EXIT_INTERRUPTED = 130
REPORT_FORMAT = 1


@dataclass
class RunResult:
    stats: FleetStats
    finished: bool = False
    unreachable: str | None = None
    interrupted: bool = False
    failures: list[str] = field(default_factory=list)  # fleet processes that died or had to be stopped
    elapsed_s: float = 0.0
    processes: list[dict[str, Any]] = field(default_factory=list)  # one per fleet process (--processes)


@dataclass(frozen=True)
class FinalCheck:
    """The checker's verdict on the controller's data dir (and the run's journal)."""

    data_dir: Path  # a quorum's: the directory of its nodes' dirs
    journal: Path | None
    violations: list[tuple[str, str]]  # (rule, description)
    problems: list[str]
    nodes: tuple[Path, ...] = ()  # a quorum's nodes' data dirs
    how: str = "single"  # "single", "quorum" (check_quorum) or "each node" (check, node by node)
    notes: tuple[str, ...] = ()

    def describe(self) -> str:
        if not self.nodes:
            return str(self.data_dir)
        way = "" if self.how == "quorum" else ", each node alone"
        return f"the quorum's {len(self.nodes)} nodes in {self.data_dir}{way}"


class _Violation(Protocol):
    rule: str

    def line(self) -> str: ...


class _CheckResult(Protocol):
    violations: list[_Violation]
    problems: list[str]


def run_final_check(data_dir: Path, journal: Path | None) -> FinalCheck:
    """Check the controller's log in `data_dir`, with the run's journal when there is one."""
    try:
        entries = _entries(journal)
    except (OSError, JournalError) as error:
        return FinalCheck(data_dir, journal, [], [f"the journal {journal} is unreadable: {error}"])
    checker = importlib.import_module("broker_sim.check")  # the checker's own module, asked at the end only
    result: _CheckResult = checker.check(data_dir, entries)
    violations = [(violation.rule, violation.line()) for violation in result.violations]
    return FinalCheck(data_dir, journal, violations, list(result.problems))


def run_quorum_check(quorum_dir: Path, node_dirs: list[Path], journal: Path | None) -> FinalCheck:
    """Check a quorum's nodes' data dirs together, with the run's journal (see the module rules)."""
    nodes = tuple(node_dirs)
    try:
        entries = _entries(journal)
    except (OSError, JournalError) as error:
        return FinalCheck(quorum_dir, journal, [], [f"the journal {journal} is unreadable: {error}"], nodes, "quorum")
    checker = importlib.import_module("broker_sim.check")
    try:
        check_quorum = importlib.import_module("broker_sim.check.quorum").check_quorum
    except (ImportError, AttributeError):
        return _each_node(checker, quorum_dir, nodes, journal, entries)
    try:
        result: _CheckResult = check_quorum(list(nodes), entries)
    except checker.CheckError as error:
        return FinalCheck(quorum_dir, journal, [], [str(error)], nodes, "quorum")
    violations = [(violation.rule, violation.line()) for violation in result.violations]
    notes = tuple(getattr(result, "notes", ()))
    return FinalCheck(quorum_dir, journal, violations, list(result.problems), nodes, "quorum", notes)


def _each_node(
    checker: Any, quorum_dir: Path, nodes: tuple[Path, ...], journal: Path | None, entries: list[Entry] | None
) -> FinalCheck:
    """Each node's dir checked alone (a checker without the quorum check); findings named by node."""
    violations: list[tuple[str, str]] = []
    problems: list[str] = []
    for node in nodes:
        try:
            result: _CheckResult = checker.check(node, entries)
        except checker.CheckError as error:
            problems.append(f"{node.name}: {error}")
            continue
        violations += [(violation.rule, f"{node.name}: {violation.line()}") for violation in result.violations]
        problems += [f"{node.name}: {problem}" for problem in result.problems]
    note = "the checker has no quorum check (broker_sim.check.quorum): each node's log was checked alone"
    return FinalCheck(quorum_dir, journal, violations, problems, nodes, "each node", (note,))


def _entries(journal: Path | None) -> list[Entry] | None:
    if journal is None or not journal.exists():
        return None
    return list(read_journal(journal))


def all_violations(result: RunResult, final: FinalCheck | None) -> list[str]:
    """Every violation of the run, those seen live first, then the final check's."""
    found = list(result.stats.violations)
    if final is not None:
        found += [description for _rule, description in final.violations]
    return found


def exit_status(result: RunResult, final: FinalCheck | None) -> int:
    if result.unreachable is not None:
        return EXIT_UNREACHABLE
    if all_violations(result, final) or (final is not None and final.problems) or result.failures:
        return EXIT_VIOLATIONS
    if result.interrupted:
        return EXIT_INTERRUPTED
    return EXIT_OK if result.finished else EXIT_VIOLATIONS


def build_report(
    arguments: Mapping[str, Any],
    result: RunResult,
    final: FinalCheck | None,
    summary: Mapping[str, Any],
    paths: Mapping[str, Path | None],
) -> dict[str, Any]:
    return {
        "format": REPORT_FORMAT,
        "arguments": dict(arguments),
        "outcome": {
            "exit_status": exit_status(result, final),
            "finished": result.finished,
            "unreachable": result.unreachable,
            "interrupted": result.interrupted,
            "failures": list(result.failures),
            "elapsed_s": round(result.elapsed_s, 3),
            "processes": list(result.processes),
        },
        "violations": all_violations(result, final),
        "summary": dict(summary),
        "stats": result.stats.snapshot(),
        "check": None if final is None else _check_section(final),
        "paths": {name: None if path is None else str(path) for name, path in paths.items()},
    }


def write_report(path: Path, report: Mapping[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.tmp")
    temporary.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    os.replace(temporary, path)


def describe_lines(result: RunResult, final: FinalCheck | None) -> Iterable[str]:
    """The end-of-run verdict, one fact per line: violations, problems, a quorum check's notes, failed
    processes (and controller nodes)."""
    for violation in result.stats.violations:
        yield f"violation (seen during the run): {violation}"
    if final is not None:
        for rule, description in final.violations:
            yield f"violation of {rule}: {description}"
        for problem in final.problems:
            yield f"check problem: {problem}"
        for note in final.notes:
            yield f"check note: {note}"
    yield from result.failures


def _check_section(final: FinalCheck) -> dict[str, Any]:
    section = {
        "data_dir": str(final.data_dir),
        "journal": None if final.journal is None else str(final.journal),
        "violations": [{"rule": rule, "description": description} for rule, description in final.violations],
        "problems": list(final.problems),
    }
    if final.nodes:
        section.update(nodes=[str(node) for node in final.nodes], how=final.how, notes=list(final.notes))
    return section
