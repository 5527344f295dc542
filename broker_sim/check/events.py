"""What the checker's rules subscribe to: the events of a replay, as Kafka's `MetadataPublisher` follows its loader.

A `Subscriber` is a rule or a family of rules. The replay (`replay.Replay`, Kafka's
`MetadataLoader`) reads the journal, then the log, and publishes what it meets; each subscriber
keeps its own state, reads the replayed image (`LogRules`' model and history) but never writes it,
and returns its own findings (violations, notes, counts). The events, in the order of a replay:

1. `on_journal_entry(entry)`: each journal entry, in journal order, before the log is opened (the
   controller answers after its fsync, so a log read afterwards holds what the journal refers to);
   then `on_journal_end(plan)` with what `journal_plan` gathered of all of it.
2. `on_base_snapshot(snapshot, records)`: the log starts at a snapshot (older segments deleted).
3. For each batch, in offset order:
   - `on_snapshot(reached)`: a snapshot's end offset was reached: the state is the log's there;
   - `on_time(ms)`: the log's clock reached the batch's timestamp, the state is still the one before
     the batch (what was true by then is judged now);
   - `on_batch_begin(batch)`: the batch begins (its epoch, its kind, its records as read);
   - the records that take effect, each to the handlers its subscribers give for its type
     (`record_handlers`), at its offset: KIP-868 transactions hold data records back to their End
     (`Records`, one rule for every reader: `protocol.records.transactions`);
   - `on_batch_end(batch, changed)`: the batch applied; `changed` names the partitions it changed
     (kept only while a subscriber `wants_changes`, a delta in Kafka's terms).
4. `on_log_end(end)`: the end of the log (or of the committed prefix a quorum check replays).

Rules:
- Every hook is optional (a no-op here); the replay calls a hook only on the subscribers that
  follow it (`follows`: those that override it, unless they say otherwise when the replay asks,
  at the start of the journal, then of the log), so an event nobody follows costs nothing per
  batch or record.
- Subscribers are called in the order they are given, at every event. The image's owner
  (`LogRules`) applies each record before the other handlers of its type see it.
- A subscriber reports into its own `sink`; `findings` merges them (each rule's first few kept).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, ClassVar, NamedTuple

from protocol.records.transactions import OpenTransaction, TransactionReplay
from protocol.spec import Data

from .log import Batch, SnapshotFile
from .violations import ViolationSink

if TYPE_CHECKING:
    from broker_sim.journal import Entry

    from .journal_plan import JournalPlan
    from .state import Partition

RecordHandler = Callable[[int, Data], None]
SnapshotRecords = list[tuple[Data, int]]
#: the events a subscriber may override (the replay calls only those)
HOOKS = (
    "on_journal_entry",
    "on_journal_end",
    "on_base_snapshot",
    "on_snapshot",
    "on_time",
    "on_batch_begin",
    "on_batch_end",
    "on_log_end",
)


class SnapshotReached(NamedTuple):
    """A snapshot whose end offset the replay reached: at `offset` (a batch boundary), with the
    metadata transaction open there, if any; `read` gives its records (None: corrupt, a problem)."""

    snapshot: SnapshotFile
    offset: int
    transaction: OpenTransaction[tuple[int, Data]] | None
    read: Callable[[SnapshotFile], SnapshotRecords | None]


class LogEnd(NamedTuple):
    """Where the replay ended, and what the log lets the journal's judges trust."""

    offset: int
    whole: bool  # read from offset 0 to its end without a problem
    complete: bool  # no problem stopped the reading before its end
    beyond: SnapshotFile | None  # the newest snapshot ending past the log's end (the state from now on)
    read: Callable[[SnapshotFile], SnapshotRecords | None]


class Subscriber:
    """A rule, or a family of rules, following a replay (see the module docstring)."""

    name: ClassVar[str] = "subscriber"
    #: does it want `on_batch_end`'s changed partitions? (read once the journal is in)
    wants_changes: bool = False

    def __init__(self) -> None:
        self.sink = ViolationSink()

    # ------------------------------------------------------------------ events (no-ops here)
    def on_journal_entry(self, entry: Entry) -> None:
        """One journal entry, in journal order, before the log is opened."""

    def on_journal_end(self, plan: JournalPlan) -> None:
        """The whole journal was read: what `journal_plan` gathered of it."""

    def on_base_snapshot(self, snapshot: SnapshotFile, records: SnapshotRecords) -> None:
        """The replay starts at this snapshot's end offset, from its state."""

    def on_snapshot(self, reached: SnapshotReached) -> None:
        """The replay reached a snapshot's end offset."""

    def on_time(self, timestamp_ms: int) -> None:
        """The log's clock reached `timestamp_ms` (the next batch's); the state is the one before it."""

    def on_batch_begin(self, batch: Batch) -> None:
        """A batch begins; its records take effect next."""

    def record_handlers(self) -> Mapping[type, RecordHandler]:
        """The record types it follows, each with its handler of (offset, record)."""
        return {}

    def on_batch_end(self, batch: Batch, changed: Sequence[Partition]) -> None:
        """A batch was applied; `changed`: the partitions it changed (see `wants_changes`)."""

    def on_log_end(self, end: LogEnd) -> None:
        """The replay ended: judge what waited for the whole log."""

    def follows(self, hook: str) -> bool:
        """Is `hook` to be called? (Asked once per replay phase; a subscriber with nothing to judge
        at an event may decline it.)"""
        return overrides(self, hook)

    # ------------------------------------------------------------------ findings
    def notes(self) -> list[str]:
        return []

    def counts(self) -> Mapping[str, int]:
        """What it checked, by name (merged into `CheckResult.counts`)."""
        return {}

    def unverifiable(self) -> Mapping[str, int]:
        """Journal entries it could not judge, by kind."""
        return {}


def overrides(subscriber: Subscriber, hook: str) -> bool:
    """Does `subscriber` override `hook` of `Subscriber`?"""
    return getattr(type(subscriber), hook) is not getattr(Subscriber, hook)


def hooks(subscribers: Iterable[Subscriber], hook: str) -> list[Callable[..., None]]:
    """The bound `hook` of each subscriber that follows it, in order."""
    return [getattr(subscriber, hook) for subscriber in subscribers if subscriber.follows(hook)]


class Records:
    """The records of each batch that take effect, to the handlers of their type: KIP-868's
    transactions as `protocol.records.transactions` rules them, then dispatch by type."""

    def __init__(self, subscribers: Iterable[Subscriber], framing: Callable[[str, int], None]) -> None:
        self.transactions: TransactionReplay[tuple[int, Data]] = TransactionReplay(framing)
        handlers: dict[type, list[RecordHandler]] = {}
        for subscriber in subscribers:
            for kind, handler in subscriber.record_handlers().items():
                handlers.setdefault(kind, []).append(handler)
        self.dispatch: dict[type, RecordHandler] = {
            kind: found[0] if len(found) == 1 else _fan_out(found) for kind, found in handlers.items()
        }

    def take(self, batch: Batch) -> None:
        dispatch, control, take = self.dispatch, batch.control, self.transactions.take
        for offset, record, _ in batch.records:
            for at, effective in take(offset, record, (offset, record), control=control):
                handler = dispatch.get(type(effective))
                if handler is not None:
                    handler(at, effective)

    @property
    def open(self) -> OpenTransaction[tuple[int, Data]] | None:
        """The metadata transaction open at this position, if any."""
        return self.transactions.open

    def open_note(self) -> str | None:
        """What the end of the log leaves unapplied, if a transaction is open there."""
        transaction = self.transactions.open
        if transaction is None:
            return None
        return (
            f"{transaction.describe()} was still open at the end of the log: "
            f"its {len(transaction.held)} records are not applied"
        )


def _fan_out(handlers: list[RecordHandler]) -> RecordHandler:
    def each(offset: int, record: Data) -> None:
        for handler in handlers:
            handler(offset, record)

    return each


class Findings(NamedTuple):
    """The subscribers' findings merged, in subscriber order."""

    sink: ViolationSink
    notes: list[str]
    counts: Counter[str]
    unverifiable: Counter[str]


def findings(subscribers: Iterable[Subscriber]) -> Findings:
    merged = Findings(ViolationSink(), [], Counter(), Counter())
    for subscriber in subscribers:
        merged.sink.absorb(subscriber.sink)
        merged.notes.extend(subscriber.notes())
        merged.counts.update(subscriber.counts())
        merged.unverifiable.update(subscriber.unverifiable())
    return merged
