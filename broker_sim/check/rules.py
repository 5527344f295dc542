"""The invariants of the metadata log, checked at every position while the log is replayed.

`LogRules` takes each batch and record in log order, checks the record against the state before
it (the rules of docs/semantics.md, which follow Kafka's KRaft controller at metadata version 3.9),
then applies it to the `Model` (partition records are `partition_rules`'). The rules, by id
(violations.RULES):
- Partitions: at creation and at every change, the ISR is a non-empty subset of distinct replicas
  (`isr-shape`), the leader is in it or -1 (`leader-in-isr`), replicas are distinct registered
  brokers (`replica-set`), RECOVERING comes only with a new leader and at most one ISR member
  (`leader-recovery`), the leader's replica is online (`offline-leader`).
- A replica added to an ISR, by a PartitionRecord or a change, is registered, unfenced, not in
  controlled shutdown and online at that position (`isr-admission`); a broker a change makes
  leader likewise (`leader-eligibility`). A leader that was already there is not re-judged: the
  last ISR member keeps its place when fenced, and a leader without successor stays leader
  during controlled shutdown.
- A change naming a leader bumps the leader epoch; naming the current leader is a bump without a
  leader change (`leader-epoch`; MV 3.9 bumps only on a leader change, or when a reassignment
  drops replicas). A PartitionRecord for an existing partition must not lower either epoch.
- A PartitionChangeRecord changes something: one whose every field says "unchanged" is
  `change-noop` (Kafka's PartitionChangeBuilder writes none; replayed, it would still raise the
  partition epoch and refuse every AlterPartition built on the one before).
- A replica marked offline leaves the ISR unless it is the last member (`offline-in-isr`). When a
  broker is fenced (BrokerRegistrationChangeRecord Fenced=1, written after the partition changes
  that move it out) it leads nothing and is in no ISR but as its only member (`fenced-leader`).
- Brokers: epochs strictly increase per broker, equal only for the same incarnation
  (`broker-epoch`); a new incarnation starts fenced and outside controlled shutdown, and
  re-registering the same one clears neither flag (`broker-registration`); a change names the
  registered epoch and an unfence never ends a controlled shutdown (`broker-change`).
- Controller epochs never decrease, and only a LeaderChange control batch raises them
  (`controller-epoch`). Topics: fresh names and ids, records naming topics and partitions that
  exist (`unknown-topic`, `unknown-partition`).
- Metadata transactions (KIP-868): the records of the data batches from a BeginTransactionRecord
  to its EndTransactionRecord take effect together at the End, each through the same rules at its
  own offset (the state they are judged against is the state at the End); an
  AbortTransactionRecord drops them; a transaction still open at the end of the log is not applied
  (`open_transaction_note`). Control records (a LeaderChange) inside one apply where they stand.
  A Begin while a transaction is open (ignored: the open one goes on), and an End or Abort with
  none open (ignored), are `transaction-framing`, as Kafka's replay refuses them.
A record that breaks a rule is still applied where it can be (the controller's brokers saw it),
except broker changes naming the wrong epoch, which Kafka refuses to replay.

`LogRules` is the subscriber that owns the replayed image (`Model`, `History`; see `events`): the
controller epoch rules at `on_batch_begin`, each record through its handler, a base snapshot
loaded at `on_base_snapshot`. The other subscribers read the image, never write it. `batch` checks
and applies one batch alone, through the same `events.Records` a replay uses.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING

from protocol.records.control import LeaderChangeMessage
from protocol.records.metadata import (
    BrokerRegistrationChangeRecord,
    FenceBrokerRecord,
    PartitionChangeRecord,
    PartitionRecord,
    RegisterBrokerRecord,
    RemoveTopicRecord,
    TopicRecord,
    UnfenceBrokerRecord,
    UnregisterBrokerRecord,
)
from protocol.spec import ZERO_UUID, Data

from .events import RecordHandler, Records, SnapshotRecords, Subscriber
from .log import Batch, SnapshotFile
from .partition_rules import UncleanElection, partition_change, partition_record, snapshot_partition_checks
from .rendering import render_record
from .state import Model, Partition, partition_state
from .violations import Violation, ViolationSink

if TYPE_CHECKING:
    from .journal_plan import JournalPlan

FENCE, UNFENCE = 1, -1
LISTED = 5  # partitions named in one violation about many


@dataclass(frozen=True, slots=True)
class BrokerEvent:
    """A broker record the journal rules look up: where and when it was written."""

    offset: int
    timestamp_ms: int
    rendering: str


@dataclass
class History:
    """What the journal rules need of the log besides captured partition states (all small)."""

    #: (broker, epoch) -> (incarnation, offset of the RegisterBrokerRecord; None: from the base snapshot)
    registrations: dict[tuple[int, int], tuple[str, int | None]] = field(default_factory=dict)
    #: (broker, epoch) -> the LogDirs of its RegisterBrokerRecord (record v3+: none before)
    registration_dirs: dict[tuple[int, int], tuple[str, ...]] = field(default_factory=dict)
    #: topic id (int) -> (name, offset of the TopicRecord or None, replica count of each partition)
    topics: dict[int, tuple[str, int | None, list[int]]] = field(default_factory=dict)
    fences: dict[tuple[int, int], list[BrokerEvent]] = field(default_factory=dict)  # (broker, epoch)
    shutdowns: dict[tuple[int, int], list[BrokerEvent]] = field(default_factory=dict)  # (broker, epoch)
    epochs_seen: set[int] = field(default_factory=set)  # controller epochs of the log
    unclean: list[UncleanElection] = field(default_factory=list)  # leaders from outside the ISR (partition_rules)


class LogRules(Subscriber):
    """Checks and applies the log's records in order; violations go to `sink`."""

    name = "log"

    def __init__(self, model: Model, sink: ViolationSink) -> None:
        super().__init__()
        self.model = model
        self.sink = sink
        self.history = History()
        self.epoch_raised = False
        self.timestamp_ms = 0
        self.records = 0
        self.last_change: dict[int, str] = {}  # broker id -> the record that last set its state
        self.max_epoch: dict[int, int] = {}  # broker id -> highest epoch ever registered
        self._alone: Records | None = None  # the record stream of `batch` (a replay has its own)
        self.dispatch: dict[type, RecordHandler] = {
            PartitionChangeRecord: partial(partition_change, self),
            PartitionRecord: partial(partition_record, self),
            BrokerRegistrationChangeRecord: self.broker_change,
            RegisterBrokerRecord: self.register_broker,
            TopicRecord: self.topic,
            RemoveTopicRecord: self.remove_topic,
            LeaderChangeMessage: self.leader_change,
            FenceBrokerRecord: self.old_fence,
            UnfenceBrokerRecord: self.old_fence,
            UnregisterBrokerRecord: self.unregister_broker,
        }

    def violation(
        self, rule: str, message: str, offset: int | None, *, records: Iterable[str] = (), **where: object
    ) -> None:
        if not self.sink.count_only(rule):
            self.sink.add(Violation(rule, message, offset, records=tuple(records), **where))  # type: ignore[arg-type]

    # ------------------------------------------------------------------ events
    def record_handlers(self) -> Mapping[type, RecordHandler]:
        return self.dispatch

    def on_journal_end(self, plan: JournalPlan) -> None:
        self.model.watch = plan.watch

    def on_base_snapshot(self, snapshot: SnapshotFile, records: SnapshotRecords) -> None:
        self.load_base(snapshot, records)

    def counts(self) -> Mapping[str, int]:
        model = self.model
        return {
            "records": self.records,
            "brokers": len(model.brokers),
            "topics": len(model.topics),
            "partitions": sum(len(topic.partitions) for topic in model.topics.values()),
        }

    # ------------------------------------------------------------------ batches
    def batch(self, batch: Batch) -> None:
        """Check and apply one batch outside a replay: its epoch rules, then each record that takes effect."""
        if self._alone is None:
            self._alone = Records([self], self.framing_fault)
        self.on_batch_begin(batch)
        self._alone.take(batch)

    def on_batch_begin(self, batch: Batch) -> None:
        """The controller epoch rules of a batch (its records follow, each to its handler)."""
        model, epoch = self.model, batch.epoch
        self.timestamp_ms = batch.timestamp_ms
        if model.based and model.history_from_ms is None:
            model.history_from_ms = batch.timestamp_ms
        self.history.epochs_seen.add(epoch)
        if epoch < model.controller_epoch:
            self.violation(
                "controller-epoch",
                f"the batch's controller epoch {epoch} is below the log's {model.controller_epoch}",
                batch.base_offset,
                records=[_render_batch(batch)],
            )
        elif epoch > model.controller_epoch:
            if not batch.control and model.controller_epoch >= 0:
                self.violation(
                    "controller-epoch",
                    f"a data batch raises the controller epoch from {model.controller_epoch} to {epoch} "
                    "without a LeaderChange",
                    batch.base_offset,
                    records=[_render_batch(batch)],
                )
            model.controller_epoch, self.epoch_raised = epoch, True
        else:
            self.epoch_raised = False
        self.records += len(batch.records)

    # ------------------------------------------------------------------ transactions
    def framing_fault(self, message: str, offset: int) -> None:
        """A metadata transaction's markers out of order (`events.Records` tells)."""
        self.violation("transaction-framing", message, offset)

    def open_transaction_note(self) -> str | None:
        """What the end of the batches given to `batch` leaves unapplied, if a transaction is open there."""
        return None if self._alone is None else self._alone.open_note()

    # ------------------------------------------------------------------ a base snapshot
    def load_base(self, snapshot: SnapshotFile, records: SnapshotRecords) -> None:
        """Start the model from a snapshot (see `snapshot`'s rules): its partitions are held to the
        shape rules only, their states captured for the journal with no offset."""
        model, history = self.model, self.history
        model.controller_epoch, model.based = snapshot.epoch, True
        history.epochs_seen.add(snapshot.epoch)
        for record, _ in records:
            if isinstance(record, RegisterBrokerRecord):
                broker = model.register(record.broker_id, record.broker_epoch, record.incarnation_id)
                broker.fenced, broker.shutting_down = record.fenced, record.in_controlled_shutdown
                self.max_epoch[record.broker_id] = record.broker_epoch
                history.registrations[(record.broker_id, record.broker_epoch)] = (str(record.incarnation_id), None)
                history.registration_dirs[(record.broker_id, record.broker_epoch)] = tuple(map(str, record.log_dirs))
            elif isinstance(record, TopicRecord):
                model.add_topic(record.topic_id, record.name, None)
                history.topics[record.topic_id.int] = (record.name, None, [])
            elif isinstance(record, PartitionRecord):
                topic = model.topics.get(record.topic_id.int)
                if topic is None:
                    continue  # the snapshot comparison of later snapshots has no use for it either
                partition = topic.partitions[record.partition_id] = Partition(topic, record.partition_id)
                model.update_partition(partition, partition_state(record))
                model.base_epochs[(record.topic_id.int, record.partition_id)] = record.partition_epoch
                history.topics[record.topic_id.int][2].append(len(record.replicas))
                snapshot_partition_checks(self, snapshot.end_offset, partition, record)
                if model.watch:
                    model.capture(partition, None, ())

    def leader_change(self, offset: int, record: Data) -> None:
        if not self.epoch_raised and self.model.controller_epoch >= 0:
            self.violation(
                "controller-epoch",
                f"a LeaderChange that does not raise the controller epoch ({self.model.controller_epoch}): "
                "two controller incarnations would share it",
                offset,
                records=[render_record(record, offset)],
            )
        self.epoch_raised = False

    # ------------------------------------------------------------------ brokers
    def register_broker(self, offset: int, record: Data) -> None:
        assert isinstance(record, RegisterBrokerRecord)
        broker_id, epoch = record.broker_id, record.broker_epoch
        rendering = render_record(record, offset)
        for rule, message in self._registration_faults(record):
            extra = self.last_change_of(broker_id) if "same incarnation" in message else []
            self.violation(rule, message, offset, broker=broker_id, records=[rendering, *extra])
        broker = self.model.register(broker_id, epoch, record.incarnation_id)
        broker.fenced, broker.shutting_down = record.fenced, record.in_controlled_shutdown
        self.max_epoch[broker_id] = max(epoch, self.max_epoch.get(broker_id, epoch))
        self.last_change[broker_id] = rendering
        self.history.registrations.setdefault((broker_id, epoch), (str(record.incarnation_id), offset))
        self.history.registration_dirs.setdefault((broker_id, epoch), tuple(str(d) for d in record.log_dirs))

    def _registration_faults(self, record: RegisterBrokerRecord) -> list[tuple[str, str]]:
        """The rules a registration breaks, as (rule, message), judged against the one it replaces."""
        faults = []
        previous = self.model.brokers.get(record.broker_id)
        same = previous is not None and previous.incarnation == record.incarnation_id
        highest = self.max_epoch.get(record.broker_id)
        if previous is not None and same and record.broker_epoch < previous.epoch:
            faults.append(("broker-epoch", f"the same incarnation re-registers below its epoch {previous.epoch}"))
        elif not same and highest is not None and record.broker_epoch <= highest:
            faults.append(("broker-epoch", f"a new incarnation's epoch is not above the broker's {highest}"))
        if record.broker_id < 0:
            faults.append(("broker-registration", "a negative broker id is registered"))
        if not same and (not record.fenced or record.in_controlled_shutdown):
            state = "unfenced" if not record.fenced else "in controlled shutdown"
            faults.append(("broker-registration", f"a new incarnation starts {state}"))
        elif previous is not None and same:
            if previous.fenced and not record.fenced:
                faults.append(("broker-registration", "re-registering the same incarnation unfences it"))
            if previous.shutting_down and not record.in_controlled_shutdown:
                faults.append(
                    ("broker-registration", "re-registering the same incarnation ends its controlled shutdown")
                )
        return faults

    def unregister_broker(self, offset: int, record: Data) -> None:
        assert isinstance(record, UnregisterBrokerRecord)
        broker = self.model.brokers.get(record.broker_id)
        if broker is None or broker.epoch != record.broker_epoch:
            self._wrong_epoch(offset, record, record.broker_id, record.broker_epoch)
            return
        del self.model.brokers[record.broker_id]
        self.last_change[record.broker_id] = render_record(record, offset)

    def old_fence(self, offset: int, record: Data) -> None:
        assert isinstance(record, FenceBrokerRecord | UnfenceBrokerRecord)
        fenced = FENCE if isinstance(record, FenceBrokerRecord) else UNFENCE
        self._change(offset, record, record.id, record.epoch, fenced, 0)

    def broker_change(self, offset: int, record: Data) -> None:
        assert isinstance(record, BrokerRegistrationChangeRecord)
        self._change(
            offset, record, record.broker_id, record.broker_epoch, record.fenced, record.in_controlled_shutdown
        )

    def _change(self, offset: int, record: Data, broker_id: int, epoch: int, fenced: int, shutdown: int) -> None:
        broker = self.model.brokers.get(broker_id)
        if broker is None or broker.epoch != epoch:
            self._wrong_epoch(offset, record, broker_id, epoch)
            return
        rendering = render_record(record, offset)
        if fenced not in (FENCE, UNFENCE, 0) or shutdown not in (0, 1):
            self.violation(
                "broker-change",
                f"Fenced {fenced} / InControlledShutdown {shutdown} is not a defined value",
                offset,
                broker=broker_id,
                records=[rendering],
            )
        if fenced == UNFENCE and broker.shutting_down:
            self.violation(
                "broker-change",
                "unfenced while in controlled shutdown (only a new incarnation leaves it)",
                offset,
                broker=broker_id,
                records=[rendering, *self.last_change_of(broker_id)],
            )
        event = BrokerEvent(offset, self.timestamp_ms, rendering)
        if fenced == FENCE:
            if not broker.fenced:
                self._fenced_leaves_everything(offset, broker_id, rendering)
            self.history.fences.setdefault((broker_id, epoch), []).append(event)
            broker.fenced = True
        elif fenced == UNFENCE:
            broker.fenced = False
        if shutdown == 1:
            self.history.shutdowns.setdefault((broker_id, epoch), []).append(event)
            broker.shutting_down = True
        self.last_change[broker_id] = rendering

    def _fenced_leaves_everything(self, offset: int, broker_id: int, rendering: str) -> None:
        led = sorted(p.label for p in self.model.leads.get(broker_id, ()))
        shared = sorted(p.label for p in self.model.in_isrs.get(broker_id, ()) if len(p.isr) > 1)
        for what, labels in (("still leads", led), ("is still in the multi-member ISR of", shared)):
            if labels:
                more = f" and {len(labels) - LISTED} more" if len(labels) > LISTED else ""
                self.violation(
                    "fenced-leader",
                    f"fenced while it {what} {', '.join(labels[:LISTED])}{more}",
                    offset,
                    broker=broker_id,
                    records=[rendering],
                )

    def _wrong_epoch(self, offset: int, record: Data, broker_id: int, epoch: int) -> None:
        broker = self.model.brokers.get(broker_id)
        registered = "it is not registered" if broker is None else f"its registered epoch is {broker.epoch}"
        self.violation(
            "broker-change",
            f"names broker epoch {epoch} but {registered}",
            offset,
            broker=broker_id,
            records=[render_record(record, offset)],
        )

    def last_change_of(self, broker_id: int) -> list[str]:
        last = self.last_change.get(broker_id)
        return [] if last is None else [last]

    # ------------------------------------------------------------------ topics
    def topic(self, offset: int, record: Data) -> None:
        assert isinstance(record, TopicRecord)
        model, key = self.model, record.topic_id.int
        rendering = render_record(record, offset)
        if record.topic_id == ZERO_UUID or not record.name:
            self.violation("unknown-topic", "a topic with the zero id or an empty name", offset, records=[rendering])
        if key in model.topic_ids_seen:
            self.violation("unknown-topic", f"topic id {record.topic_id} is used again", offset, records=[rendering])
        if record.name in model.names:
            self.violation(
                "unknown-topic",
                f"topic name {record.name!r} is taken by an existing topic",
                offset,
                records=[rendering],
            )
        existing = model.topics.get(key)
        if existing is not None:
            model.remove_topic(existing)
        model.add_topic(record.topic_id, record.name, offset)
        self.history.topics.setdefault(key, (record.name, offset, []))

    def remove_topic(self, offset: int, record: Data) -> None:
        assert isinstance(record, RemoveTopicRecord)
        topic = self.model.topics.get(record.topic_id.int)
        if topic is None:
            self.violation(
                "unknown-topic",
                f"removes topic {record.topic_id}, which does not exist",
                offset,
                records=[render_record(record, offset)],
            )
            return
        self.model.remove_topic(topic)


def _render_batch(batch: Batch) -> str:
    first = render_record(batch.records[0][1], batch.records[0][0]) if batch.records else "no record"
    return f"batch @{batch.base_offset} (epoch {batch.epoch}, {len(batch.records)} record(s), first {first})"
