"""The invariant checker: a controller's metadata log (read with `protocol`) and a run's journal -> violations.

`check(data_dir, journal)` is a pure function of the files and entries it is given; it never
imports `controller`, so it can judge any controller that writes Kafka's `__cluster_metadata`
format. Modules: `log` (reading segments and snapshots), `state` (the checker's own model),
`rules` and `partition_rules` (the invariants at every log position), `snapshot` (base state and
snapshot checks), `journal_plan`, `journal_rules`, `liveness` and `delivery` (the journal against
the log), `violations` (what is reported), `cli` (`python -m broker_sim check`).

Rules:
- A violation is a rule broken by the controller; a problem is a log that cannot be read to its
  end (corruption, a gap, an undecodable record, a corrupt snapshot). Either fails the check.
  Notes (an incomplete last batch, skipped record types) do not.
- The journal is read completely, once, before the log is opened (see `journal_plan.plan`).
- Each snapshot the replay passes is compared with the replayed state at its end offset, unless it
  ends inside an open metadata transaction (Kafka snapshots only between transactions:
  `transaction-framing`); no snapshot may hold a transaction marker (the same rule).
- A metadata transaction still open at the end of the log is not applied, and said in a note.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from broker_sim.journal import Entry
from protocol.records.transactions import MARKERS as TRANSACTION_MARKERS
from protocol.spec import Data

from .delivery import Delivery
from .journal_plan import JournalPlan, plan
from .journal_rules import JournalCheck
from .liveness import NS_PER_MS, Liveness
from .log import CheckError, LogReader, LogReading, SnapshotFile, SnapshotProblem
from .rules import LogRules
from .snapshot import compare, load_base
from .state import Model
from .violations import RULES, Violation, ViolationSink

__all__ = ["RULES", "CheckError", "CheckResult", "Violation", "check"]


@dataclass
class CheckResult:
    """What a check found. `violations` holds the first few of each rule; `violation_counts` all."""

    data_dir: Path
    violations: list[Violation]
    violation_counts: dict[str, int]
    problems: list[str]
    notes: list[str]
    counts: dict[str, int]  # what was checked: records, batches, brokers, topics, partitions, journal entries...
    start_offset: int = 0
    end_offset: int = 0
    unverifiable: dict[str, int] = field(default_factory=dict)  # journal entries the log could not judge

    @property
    def violation_total(self) -> int:
        return sum(self.violation_counts.values())

    @property
    def ok(self) -> bool:
        return not self.violation_counts and not self.problems

    def to_json(self) -> dict[str, Any]:
        return {
            "data_dir": str(self.data_dir),
            "ok": self.ok,
            "violation_total": self.violation_total,
            "violation_counts": self.violation_counts,
            "violations": [violation.to_json() for violation in self.violations],
            "problems": self.problems,
            "notes": self.notes,
            "counts": self.counts,
            "unverifiable": self.unverifiable,
            "start_offset": self.start_offset,
            "end_offset": self.end_offset,
        }


def check(data_dir: Path, journal: Iterable[Entry] | None = None) -> CheckResult:
    """Check the metadata log of `data_dir` (and, given, a run's journal); raises `CheckError` only
    when there is no log to check at all."""
    journal_plan = plan(journal if journal is not None else ())
    model = Model(watch=journal_plan.watch)
    sink = ViolationSink()
    rules = LogRules(model, sink)
    liveness = Liveness(journal_plan.lifecycle)
    run_end_ms = None if liveness.run_end_ns is None else liveness.run_end_ns // NS_PER_MS
    delivery = Delivery(liveness.runs, run_end_ms, journal_plan.observations, journal_plan.unnamed_observations)
    with LogReader(Path(data_dir)) as reader:
        reading = reader.reading
        start = _load_start(reader, rules)
        if start is not None:
            if delivery.enabled:
                model.changed = []
            _replay(reader, start, rules, liveness, delivery)
    liveness.finish(model)
    delivery.finish(model)
    whole = reading.start_offset == 0 and reading.base_snapshot is None and start is not None
    journal_check = JournalCheck(
        journal_plan, model, rules.history, sink, whole, reading.complete and start is not None
    )
    journal_check.run()
    liveness.report(rules.history, sink)
    delivery.report(sink)
    return _result(Path(data_dir), reading, rules, journal_plan, journal_check, liveness)


def _load_start(reader: LogReader, rules: LogRules) -> int | None:
    """Where replay starts: 0, or the end of the base snapshot loaded into the model; None if no start exists."""
    reading = reader.reading
    first = reading.segments[0][0] if reading.segments else None
    if first == 0:
        return 0
    candidates = [s for s in reading.snapshots if first is None or s.end_offset >= first]
    if first is None:
        candidates = candidates[-1:]  # no segments: the newest snapshot is the whole state
    for snapshot in candidates:
        try:
            records = reader.read_snapshot(snapshot)
        except SnapshotProblem as exc:
            reading.problems.append(f"corrupt snapshot: {exc}")
            continue
        _markers(snapshot, records, rules)
        load_base(rules, snapshot, records)
        reading.base_snapshot = snapshot
        reading.start_offset = reading.end_offset = snapshot.end_offset
        return snapshot.end_offset
    reading.problems.append(
        f"the log starts at offset {first} (older segments deleted) and no valid snapshot covers the offsets below it"
    )
    reading.complete = False
    return None


def _replay(reader: LogReader, start: int, rules: LogRules, liveness: Liveness, delivery: Delivery) -> None:
    reading = reader.reading
    pending = [s for s in reading.snapshots if s.end_offset > start]
    model = rules.model
    for batch in reader.batches(start):
        while pending and pending[0].end_offset <= batch.base_offset:
            _compare(pending.pop(0), batch.base_offset, rules, reader)
        if liveness.waiting:
            liveness.probe(model, batch.timestamp_ms)
        if delivery.owed:
            delivery.probe(model, batch.timestamp_ms)
        rules.batch(batch)
        if model.changed:
            delivery.offer(model, model.changed, batch.timestamp_ms)
            model.changed.clear()
    beyond = []
    for snapshot in pending:
        if snapshot.end_offset == reading.end_offset:
            _compare(snapshot, reading.end_offset, rules, reader)
        elif reading.complete:
            beyond.append(snapshot)
    if beyond:
        _superseding(beyond[-1], reader, rules)
    if (note := rules.open_transaction_note()) is not None:
        reading.notes.append(note)


def _superseding(snapshot: SnapshotFile, reader: LogReader, rules: LogRules) -> None:
    """The newest snapshot ends beyond the log's end: a controller restarts the log there (Kafka's
    `truncateToLatestSnapshot`, and fencer's), so it is the state from now on. Noted, and checked
    on its own (the partition rules a base snapshot gets); the log below it was checked as read."""
    reading = reader.reading
    try:
        records = reader.read_snapshot(snapshot)
    except SnapshotProblem as exc:
        reading.problems.append(f"corrupt snapshot: {exc}")
        return
    reading.notes.append(
        f"snapshot {snapshot.path.name} ends at offset {snapshot.end_offset}, beyond the log's end "
        f"({reading.end_offset}): a controller restarts the log there, as Kafka does; the snapshot was "
        "checked on its own, the records between are not in the log"
    )
    alone = LogRules(Model(), rules.sink)
    _markers(snapshot, records, alone)
    load_base(alone, snapshot, records)


def _compare(snapshot: SnapshotFile, offset: int, rules: LogRules, reader: LogReader) -> None:
    if snapshot.end_offset != offset:
        rules.sink.add(
            Violation(
                "snapshot-state",
                f"snapshot {snapshot.path.name} ends at offset {snapshot.end_offset}, inside the batch at {offset}",
                snapshot.end_offset,
            )
        )
        return
    if rules.transaction is not None:
        rules.sink.add(
            Violation(
                "transaction-framing",
                f"snapshot {snapshot.path.name} ends at offset {snapshot.end_offset}, inside the transaction "
                f"begun at offset {rules.transaction.begin} (Kafka snapshots only between transactions)",
                snapshot.end_offset,
            )
        )
        return
    try:
        records = reader.read_snapshot(snapshot)
    except SnapshotProblem as exc:
        reader.reading.problems.append(f"corrupt snapshot: {exc}")
        return
    _markers(snapshot, records, rules)
    rules.snapshots_compared += 1
    violation = compare(rules.model, snapshot, records)
    if violation is not None:
        rules.sink.add(violation)


def _markers(snapshot: SnapshotFile, records: list[tuple[Data, int]], rules: LogRules) -> None:
    """A `transaction-framing` violation if the snapshot holds transaction markers."""
    markers = sorted({type(record).__name__ for record, _ in records if isinstance(record, TRANSACTION_MARKERS)})
    if markers:
        rules.sink.add(
            Violation(
                "transaction-framing",
                f"snapshot {snapshot.path.name} holds {', '.join(markers)}: a snapshot is taken between "
                "transactions and holds none of their markers",
                snapshot.end_offset,
            )
        )


def _result(
    data_dir: Path,
    reading: LogReading,
    rules: LogRules,
    journal_plan: JournalPlan,
    journal_check: JournalCheck,
    liveness: Liveness,
) -> CheckResult:
    model = rules.model
    notes = list(reading.notes) + liveness.notes
    notes.extend(f"skipped {count} record(s): {reason}" for reason, count in sorted(reading.skipped_types.items()))
    if reading.base_snapshot is not None:
        notes.append(
            f"the log starts at offset {reading.start_offset}: replayed from {reading.base_snapshot.path.name}"
        )
    counts = Counter(
        records=rules.records,
        batches=reading.batches,
        segments=len(reading.segments),
        snapshots=len(reading.snapshots),
        snapshots_compared=rules.snapshots_compared,
        brokers=len(model.brokers),
        topics=len(model.topics),
        partitions=sum(len(topic.partitions) for topic in model.topics.values()),
        journal_entries=journal_plan.entries,
    )
    counts.update({f"journal_{kind}": number for kind, number in journal_check.checked.items()})
    return CheckResult(
        data_dir=data_dir,
        violations=list(rules.sink.kept),
        violation_counts=dict(rules.sink.counts),
        problems=list(reading.problems) + journal_plan.problems,
        notes=notes,
        counts=dict(counts),
        start_offset=reading.start_offset,
        end_offset=reading.end_offset,
        unverifiable=dict(journal_check.unverifiable + journal_plan.unidentified),
    )
