"""`python -m broker_sim check DATA_DIR [DATA_DIR ...] [--journal PATH] [--report PATH]`: the invariant checker alone.

`main(argv)` takes the arguments after `check`. Exit 0: no violation and the log read to its end
(an incomplete last batch is a note: the controller may still be writing); 1: violations, or a
problem with the log (corruption, a gap, an undecodable record); 2: bad arguments, or nothing to
check (a missing or empty data dir, an unreadable journal), with one line on stderr.

Prints a short summary (what was checked, at what speed, the first violations of each rule);
`--report` writes everything as JSON. `--journal` may be given once per fleet process.

One DATA_DIR: a controller's log (`check`). Several: the data dirs of a controller quorum's nodes,
one each (`quorum.check_quorum`): a line per node, then the committed log's check, then the
quorum's rules; the JSON report has a part per node, the committed log's check and the quorum's
violations.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import NoReturn

from broker_sim.journal import Entry, JournalError, read_journal

from . import CheckError, CheckResult, Violation, check
from .quorum import QuorumResult, check_quorum

SHOWN_PER_RULE = 3
SHOWN_TOTAL = 20
PROG = "python -m broker_sim check"


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        print(f"{PROG}: {message}", file=sys.stderr)
        raise SystemExit(2)


def parser() -> argparse.ArgumentParser:
    parse = _Parser(
        prog=PROG, description="Check a controller's metadata log (and a fleet run's journal) for violations."
    )
    parse.add_argument(
        "data_dirs",
        type=Path,
        nargs="+",
        metavar="DATA_DIR",
        help="the controller's data dir (or its __cluster_metadata-0); several: one per node of a quorum",
    )
    parse.add_argument(
        "--journal",
        type=Path,
        action="append",
        default=[],
        metavar="PATH",
        help="a run's journal (JSON lines); repeat for several fleet processes",
    )
    parse.add_argument("--report", type=Path, metavar="PATH", help="write the full result as JSON here")
    return parse


def main(argv: list[str]) -> int:
    try:
        args = parser().parse_args(argv)
    except SystemExit as exit_:
        return int(exit_.code or 0)
    started = time.perf_counter()
    journal = _journal(args.journal) if args.journal else None
    result: CheckResult | QuorumResult
    try:
        if len(args.data_dirs) == 1:
            result = check(args.data_dirs[0], journal)
        else:
            result = check_quorum(args.data_dirs, journal)
    except JournalError as exc:
        return _fail(f"cannot read the journal: {exc}")
    except CheckError as exc:
        return _fail(str(exc))
    elapsed = time.perf_counter() - started
    lines = summary(result, elapsed) if isinstance(result, CheckResult) else quorum_summary(result, elapsed)
    print("\n".join(lines))
    if args.report is not None:
        try:
            args.report.parent.mkdir(parents=True, exist_ok=True)
            args.report.write_text(json.dumps({**result.to_json(), "seconds": round(elapsed, 3)}, indent=2) + "\n")
        except OSError as exc:
            return _fail(f"cannot write the report {args.report}: {exc.strerror}")
    return 0 if result.ok else 1


def _journal(paths: list[Path]) -> Iterator[Entry]:
    """The entries of every journal, streamed (`check` reads them all before the log)."""
    for path in paths:
        try:
            yield from read_journal(path)
        except OSError as exc:
            raise JournalError(f"{path}: {exc.strerror}") from None


def _fail(message: str) -> int:
    print(f"{PROG}: {message}", file=sys.stderr)
    return 2


def quorum_summary(result: QuorumResult, elapsed: float) -> list[str]:
    """A line per node, the committed log's summary, the quorum's violations, the verdict."""
    committed = result.committed
    holders = ", ".join(result.nodes[index].label for index in committed.holders) or "no node"
    lines = [
        f"quorum of {len(result.nodes)} nodes (majority {committed.majority}): the committed log is offsets "
        f"{committed.start_offset}..{committed.end_offset}, held by {holders}; replayed from {result.replayed.label}"
    ]
    for node in result.nodes:
        state = node.quorum_state
        known = "" if state is None else f"; quorum-state: leader {state.leader_id}, epoch {state.leader_epoch}"
        if node.identical:
            where = "holds the committed log"
        elif node.diverges_at is not None:
            where = f"leaves the committed log at offset {node.diverges_at}"
        else:
            where = "a prefix of the committed log"
        lines.append(
            f"  {node.label} ({node.data_dir}): offsets {node.start_offset}..{node.end_offset}, "
            f"{len(node.outline):,} batches, last epoch {node.last_epoch}{known}; {where}"
        )
    lines.extend(summary(result.check, elapsed)[:-1])
    lines.extend(f"note: {note}" for note in result.notes)
    lines.extend(f"problem: {problem}" for problem in result.problems)
    if result.quorum.counts:
        by_rule = ", ".join(f"{rule} {count:,}" for rule, count in sorted(result.quorum.counts.items()))
        lines.append(f"quorum violations: {result.quorum.total:,} ({by_rule})")
        lines.extend(_shown(result.quorum.kept, result.quorum.total))
    lines.append("OK: no violations" if result.ok else "FAILED")
    return lines


def summary(result: CheckResult, elapsed: float) -> list[str]:
    counts = result.counts
    rate = counts.get("records", 0) / elapsed if elapsed > 0 else 0.0
    lines = [
        f"checked {result.data_dir}: offsets {result.start_offset}..{result.end_offset}, "
        f"{counts.get('records', 0):,} records in {counts.get('batches', 0):,} batches "
        f"({elapsed:.1f} s, {rate:,.0f} records/s); {counts.get('brokers', 0)} brokers, "
        f"{counts.get('topics', 0)} topics, {counts.get('partitions', 0)} partitions",
    ]
    if counts.get("journal_entries"):
        judged = ", ".join(
            f"{n:,} {k.removeprefix('journal_')}"
            for k, n in sorted(counts.items())
            if k.startswith("journal_") and k != "journal_entries"
        )
        unverifiable = sum(result.unverifiable.values())
        lines.append(
            f"journal: {counts['journal_entries']:,} entries; checked {judged or 'none'}; {unverifiable:,} unverifiable"
        )
    lines.extend(f"note: {note}" for note in result.notes)
    lines.extend(f"problem: {problem}" for problem in result.problems)
    if result.violation_counts:
        by_rule = ", ".join(f"{rule} {count:,}" for rule, count in sorted(result.violation_counts.items()))
        lines.append(f"violations: {result.violation_total:,} ({by_rule})")
        lines.extend(_shown(result.violations, result.violation_total))
    lines.append("OK: no violations" if result.ok else "FAILED")
    return lines


def _shown(violations: list[Violation], total: int) -> list[str]:
    """The first few violations of each rule, a line each, and how many more there are."""
    lines = []
    shown: dict[str, int] = {}
    for violation in violations:
        if shown.get(violation.rule, 0) < SHOWN_PER_RULE and sum(shown.values()) < SHOWN_TOTAL:
            shown[violation.rule] = shown.get(violation.rule, 0) + 1
            lines.append(f"  {violation.line()}")
    if sum(shown.values()) < total:
        lines.append(f"  ... {total - sum(shown.values()):,} more (the report lists the first of each rule)")
    return lines
