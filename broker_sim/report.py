"""A run's result, its final invariant check, its exit status and its JSON report.

Rules:
- `RunResult` is what the shell observed (one fleet process or several, merged); everything the
  run concludes is derived from it and from the final check here, in one place.
- Exit status: 2 when the controller was unreachable (bad arguments exit 2 before a run); 1 on any
  violation (seen during the run or found by the final check), on a problem the check reports (an
  unreadable log or journal), or when the run did not finish for another reason (a fleet process
  died); 130 when interrupted (SIGINT, SIGTERM) with nothing of the above; 0 otherwise.
- The final check is the checker's `broker_sim.check.check(data_dir, journal)`, imported when it
  runs (the checker is its own module; the run only asks it).
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

    data_dir: Path
    journal: Path | None
    violations: list[tuple[str, str]]  # (rule, description)
    problems: list[str]


class _Violation(Protocol):
    rule: str

    def line(self) -> str: ...


class _CheckResult(Protocol):
    violations: list[_Violation]
    problems: list[str]


def run_final_check(data_dir: Path, journal: Path | None) -> FinalCheck:
    """Check the controller's log in `data_dir`, with the run's journal when there is one."""
    entries: list[Entry] | None = None
    if journal is not None and journal.exists():
        try:
            entries = list(read_journal(journal))
        except (OSError, JournalError) as error:
            return FinalCheck(data_dir, journal, [], [f"the journal {journal} is unreadable: {error}"])
    checker = importlib.import_module("broker_sim.check")  # the checker's own module, asked at the end only
    result: _CheckResult = checker.check(data_dir, entries)
    violations = [(violation.rule, violation.line()) for violation in result.violations]
    return FinalCheck(data_dir, journal, violations, list(result.problems))


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
    """The end-of-run verdict, one fact per line: violations, problems, failed processes."""
    for violation in result.stats.violations:
        yield f"violation (seen during the run): {violation}"
    if final is not None:
        for rule, description in final.violations:
            yield f"violation of {rule}: {description}"
        for problem in final.problems:
            yield f"check problem: {problem}"
    yield from result.failures


def _check_section(final: FinalCheck) -> dict[str, Any]:
    return {
        "data_dir": str(final.data_dir),
        "journal": None if final.journal is None else str(final.journal),
        "violations": [{"rule": rule, "description": description} for rule, description in final.violations],
        "problems": list(final.problems),
    }
