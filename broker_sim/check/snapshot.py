"""Snapshots for the checker: the base state of a log whose old segments are gone, and a check of the others.

Rules:
- A snapshot holds RegisterBrokerRecords (with their fenced and controlled-shutdown flags), then
  TopicRecords each followed by its PartitionRecords: the state below its end offset. Other
  record types are ignored (a Kafka snapshot also holds features, configs, ...).
- Loaded as the base, its partitions are held to the shape rules only: their history is gone, so
  nothing can be said about how members joined. Their states are captured for the journal with no
  offset (`Captured.offset` None).
- Every other snapshot whose end offset the replay passes must hold exactly the replayed state:
  brokers (epoch, incarnation, flags), topics (name) and partitions (every field of
  `PartitionState`); a restart from it must arrive where the log does (`snapshot-state`). It must
  end at a batch boundary, and not inside an open metadata transaction (Kafka snapshots only
  between transactions: `transaction-framing`); no snapshot may hold a transaction marker (the same
  rule).
- The newest snapshot ending beyond the log's end is where a controller restarts the log (Kafka's
  `truncateToLatestSnapshot`, and fencer's), so it is the state from now on: noted, and checked on
  its own (the partition rules a base snapshot gets); the log below it was checked as read.
These are `SnapshotRules`' (a subscriber of the replay: `events`).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import NamedTuple

from protocol.records.metadata import PartitionRecord, RegisterBrokerRecord, TopicRecord
from protocol.records.transactions import MARKERS as TRANSACTION_MARKERS
from protocol.spec import Data

from .events import LogEnd, SnapshotReached, SnapshotRecords, Subscriber
from .log import SnapshotFile
from .rules import LogRules
from .state import Model, PartitionState, partition_label, partition_state
from .violations import Violation

SHOWN_DIFFERENCES = 5


class BrokerFacts(NamedTuple):
    epoch: int
    incarnation: str
    fenced: bool
    shutting_down: bool


class Facts(NamedTuple):
    """A state reduced to comparable values."""

    brokers: dict[int, BrokerFacts]
    topics: dict[int, str]  # topic id (int) -> name
    partitions: dict[tuple[int, int], PartitionState]  # (topic id int, index)


def load_base(rules: LogRules, snapshot: SnapshotFile, records: list[tuple[Data, int]]) -> None:
    """Start `rules`' model from a snapshot (see the module rules): `LogRules.load_base`."""
    rules.load_base(snapshot, records)


class SnapshotRules(Subscriber):
    """Every snapshot against the state the replay reaches at its end (see the module rules)."""

    name = "snapshots"

    def __init__(self, image: LogRules) -> None:
        super().__init__()
        self.image = image
        self.compared = 0
        self._notes: list[str] = []

    def on_base_snapshot(self, snapshot: SnapshotFile, records: SnapshotRecords) -> None:
        self._markers(snapshot, records)

    def on_snapshot(self, reached: SnapshotReached) -> None:
        snapshot, offset = reached.snapshot, reached.offset
        if snapshot.end_offset != offset:
            message = (
                f"snapshot {snapshot.path.name} ends at offset {snapshot.end_offset}, inside the batch at {offset}"
            )
            self.sink.add(Violation("snapshot-state", message, snapshot.end_offset))
            return
        if reached.transaction is not None:
            message = (
                f"snapshot {snapshot.path.name} ends at offset {snapshot.end_offset}, inside the transaction "
                f"begun at offset {reached.transaction.begin} (Kafka snapshots only between transactions)"
            )
            self.sink.add(Violation("transaction-framing", message, snapshot.end_offset))
            return
        records = reached.read(snapshot)
        if records is None:
            return
        self._markers(snapshot, records)
        self.compared += 1
        violation = compare(self.image.model, snapshot, records)
        if violation is not None:
            self.sink.add(violation)

    def on_log_end(self, end: LogEnd) -> None:
        if end.beyond is None:
            return
        snapshot = end.beyond
        records = end.read(snapshot)
        if records is None:
            return
        self._notes.append(
            f"snapshot {snapshot.path.name} ends at offset {snapshot.end_offset}, beyond the log's end "
            f"({end.offset}): a controller restarts the log there, as Kafka does; the snapshot was "
            "checked on its own, the records between are not in the log"
        )
        self._markers(snapshot, records)
        LogRules(Model(), self.sink).load_base(snapshot, records)

    def _markers(self, snapshot: SnapshotFile, records: SnapshotRecords) -> None:
        """A `transaction-framing` violation if the snapshot holds transaction markers."""
        markers = sorted({type(record).__name__ for record, _ in records if isinstance(record, TRANSACTION_MARKERS)})
        if markers:
            self.sink.add(
                Violation(
                    "transaction-framing",
                    f"snapshot {snapshot.path.name} holds {', '.join(markers)}: a snapshot is taken between "
                    "transactions and holds none of their markers",
                    snapshot.end_offset,
                )
            )

    def notes(self) -> list[str]:
        return self._notes

    def counts(self) -> Mapping[str, int]:
        return {"snapshots_compared": self.compared}


def compare(model: Model, snapshot: SnapshotFile, records: list[tuple[Data, int]]) -> Violation | None:
    """A `snapshot-state` violation if the snapshot's state is not the model's, else None."""
    differences = list(_differences(facts_of_model(model), facts_of_records(records), model))
    if not differences:
        return None
    shown = "; ".join(differences[:SHOWN_DIFFERENCES])
    more = f" (and {len(differences) - SHOWN_DIFFERENCES} more)" if len(differences) > SHOWN_DIFFERENCES else ""
    return Violation(
        "snapshot-state",
        f"snapshot {snapshot.path.name} differs from the log's state at offset {snapshot.end_offset}: {shown}{more}",
        snapshot.end_offset,
    )


def facts_of_model(model: Model) -> Facts:
    brokers = {
        b.broker_id: BrokerFacts(b.epoch, str(b.incarnation), b.fenced, b.shutting_down) for b in model.brokers.values()
    }
    topics = {key: topic.name for key, topic in model.topics.items()}
    partitions = {
        (key, index): partition.state()
        for key, topic in model.topics.items()
        for index, partition in topic.partitions.items()
    }
    return Facts(brokers, topics, partitions)


def facts_of_records(records: list[tuple[Data, int]]) -> Facts:
    facts = Facts({}, {}, {})
    for record, _ in records:
        if isinstance(record, RegisterBrokerRecord):
            facts.brokers[record.broker_id] = BrokerFacts(
                record.broker_epoch, str(record.incarnation_id), record.fenced, record.in_controlled_shutdown
            )
        elif isinstance(record, TopicRecord):
            facts.topics[record.topic_id.int] = record.name
        elif isinstance(record, PartitionRecord):
            facts.partitions[(record.topic_id.int, record.partition_id)] = partition_state(record)
    return facts


def _differences(log: Facts, snapshot: Facts, model: Model) -> Iterator[str]:
    for broker_id in sorted(log.brokers.keys() | snapshot.brokers.keys()):
        mine, theirs = log.brokers.get(broker_id), snapshot.brokers.get(broker_id)
        if mine != theirs:
            yield f"broker {broker_id}: {_show(theirs)} in the snapshot, {_show(mine)} in the log"
    for topic_key in sorted(log.topics.keys() | snapshot.topics.keys()):
        mine_name, theirs_name = log.topics.get(topic_key), snapshot.topics.get(topic_key)
        if mine_name != theirs_name:
            yield f"topic {topic_key:032x}: {theirs_name!r} in the snapshot, {mine_name!r} in the log"
    for key in sorted(log.partitions.keys() | snapshot.partitions.keys()):
        mine_state, theirs_state = log.partitions.get(key), snapshot.partitions.get(key)
        if mine_state != theirs_state:
            topic = model.topics.get(key[0])
            name = partition_label(topic.name, topic.topic_id, key[1]) if topic else f"{key[0]:032x}-{key[1]}"
            yield f"{name}: {_show(theirs_state)} in the snapshot, {_show(mine_state)} in the log"


def _show(value: NamedTuple | None) -> str:
    if value is None:
        return "absent"
    return "(" + ", ".join(f"{name}={_plain(item)}" for name, item in zip(value._fields, value, strict=True)) + ")"


def _plain(item: object) -> str:
    if isinstance(item, frozenset):
        return str(sorted(item))
    if isinstance(item, tuple):
        return str(list(item))
    return str(item)
