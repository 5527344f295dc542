"""The replay: read the journal, then the log, and publish what is met to the subscribers (Kafka's `MetadataLoader`).

`Replay(reader, image, subscribers).run(journal)` publishes the events of `events` in order; the
rules are the subscribers'. The replay itself decides only what reading decides:

- The journal is read completely, once, before the log is opened (`journal_plan` gathers it: the
  journal's image, as `LogRules`' model is the log's).
- Where replay starts: offset 0 when the oldest segment starts there; else the oldest valid
  snapshot ending within the segments (with no segment, the newest snapshot), published as
  `on_base_snapshot`; none is a problem, and nothing is replayed. A corrupt snapshot is a problem.
- Each snapshot whose end offset the replay passes is published when the first batch at or after
  it begins (`on_snapshot`, at that batch's base offset: a snapshot ending inside a batch says so),
  or at the end of the log when it ends there; the newest one ending beyond the end of a log read
  completely is `LogEnd.beyond` (a controller restarts the log there).
- KIP-868 transactions are the replay's (`events.Records`, as Kafka's loader handles them); a
  transaction still open at the end of the log is not applied, and said in a note.
- The change tracking `on_batch_end` reports is on while a subscriber `wants_changes` (from the
  start of the replay, after any base snapshot).
- `until` (a quorum check's committed end offset, a batch boundary) ends the replay before the
  batch starting there: what lies beyond is not read, and no snapshot ending beyond it is
  published, nor taken for the state a controller restarts from.
- A journal already gathered (`JournalPlan`) may be given instead of entries: only
  `on_journal_end` is published then.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from broker_sim.journal import Entry

from .events import LogEnd, Records, SnapshotReached, SnapshotRecords, Subscriber, hooks
from .journal_plan import JournalPlan
from .log import NO_END, LogReader, LogReading, SnapshotFile, SnapshotProblem
from .rules import LogRules


class Replay:
    """One replay of one log (see the module rules); `image` owns the replayed state."""

    def __init__(
        self, reader: LogReader, image: LogRules, subscribers: Sequence[Subscriber], until: int | None = None
    ) -> None:
        self.reader = reader
        self.until = until
        self.reading: LogReading = reader.reading
        self.image = image
        self.subscribers = [image, *subscribers]
        self.journal = JournalPlan()
        self.records = Records(self.subscribers, image.framing_fault)
        self.started = False  # a start (offset 0 or a base snapshot) was found
        self.notes: list[str] = []

    def run(self, journal: Iterable[Entry] | JournalPlan) -> None:
        if isinstance(journal, JournalPlan):
            self.journal = journal
            for journal_end in hooks(self.subscribers, "on_journal_end"):
                journal_end(journal)
        else:
            self._read_journal(journal)
        start = self._load_start()
        if start is None:
            self._end(None)
            return
        self.started = True
        if any(subscriber.wants_changes for subscriber in self.subscribers):
            self.image.model.changed = []
        self._end(self._replay(start))

    def read_snapshot(self, snapshot: SnapshotFile) -> SnapshotRecords | None:
        """A snapshot's records; None if it is corrupt (a problem of the reading)."""
        try:
            return self.reader.read_snapshot(snapshot)
        except SnapshotProblem as exc:
            self.reading.problems.append(f"corrupt snapshot: {exc}")
            return None

    # ------------------------------------------------------------------ the journal
    def _read_journal(self, journal: Iterable[Entry]) -> None:
        add, followers = self.journal.add, hooks(self.subscribers, "on_journal_entry")
        if followers:
            for entry in journal:
                add(entry)
                for follow in followers:
                    follow(entry)
        else:
            for entry in journal:
                add(entry)
        for journal_end in hooks(self.subscribers, "on_journal_end"):
            journal_end(self.journal)

    # ------------------------------------------------------------------ the log
    def _load_start(self) -> int | None:
        """Where replay starts: 0, or the end of the base snapshot published; None if no start exists."""
        reading = self.reading
        first = reading.segments[0][0] if reading.segments else None
        if first == 0:
            return 0
        candidates = [s for s in reading.snapshots if first is None or s.end_offset >= first]
        if first is None:
            candidates = candidates[-1:]  # no segments: the newest snapshot is the whole state
        for snapshot in candidates:
            records = self.read_snapshot(snapshot)
            if records is None:
                continue
            for base in hooks(self.subscribers, "on_base_snapshot"):
                base(snapshot, records)
            reading.base_snapshot = snapshot
            reading.start_offset = reading.end_offset = snapshot.end_offset
            return snapshot.end_offset
        reading.problems.append(
            f"the log starts at offset {first} (older segments deleted) "
            "and no valid snapshot covers the offsets below it"
        )
        reading.complete = False
        return None

    def _replay(self, start: int) -> list[SnapshotFile]:
        """Every batch from `start`, published; the snapshots not reached on the way."""
        subscribers, records = self.subscribers, self.records
        until = NO_END if self.until is None else self.until
        pending = [s for s in self.reading.snapshots if start < s.end_offset <= until]
        at_time, begin, end = (hooks(subscribers, hook) for hook in ("on_time", "on_batch_begin", "on_batch_end"))
        changed = self.image.model.changed if self.image.model.changed is not None else []
        for batch in self.reader.batches(start, until):
            while pending and pending[0].end_offset <= batch.base_offset:
                self._reached(pending.pop(0), batch.base_offset)
            for follow in at_time:
                follow(batch.timestamp_ms)
            for follow in begin:
                follow(batch)
            records.take(batch)
            for follow in end:
                follow(batch, changed)
            if changed:
                changed.clear()
        return pending

    def _reached(self, snapshot: SnapshotFile, offset: int) -> None:
        reached = SnapshotReached(snapshot, offset, self.records.open, self.read_snapshot)
        for follow in hooks(self.subscribers, "on_snapshot"):
            follow(reached)

    def _end(self, pending: list[SnapshotFile] | None) -> None:
        reading = self.reading
        beyond = []
        for snapshot in pending or ():
            if snapshot.end_offset == reading.end_offset:
                self._reached(snapshot, reading.end_offset)
            elif reading.complete and self.until is None:
                beyond.append(snapshot)
        if (note := self.records.open_note()) is not None:
            self.notes.append(note)
        whole = reading.start_offset == 0 and reading.base_snapshot is None and self.started
        end = LogEnd(
            reading.end_offset,
            whole,
            reading.complete and self.started,
            beyond[-1] if beyond else None,
            self.read_snapshot,
        )
        for follow in hooks(self.subscribers, "on_log_end"):
            follow(end)
