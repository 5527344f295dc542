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
  `PartitionState`); a restart from it must arrive where the log does (`snapshot-state`).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import NamedTuple

from protocol.records.metadata import PartitionRecord, RegisterBrokerRecord, TopicRecord
from protocol.spec import Data

from .log import SnapshotFile
from .partition_rules import snapshot_partition_checks
from .rules import LogRules
from .state import Model, Partition, PartitionState, offline_replicas, partition_label
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
    """Start the model from a snapshot (see the module rules)."""
    model = rules.model
    model.controller_epoch = snapshot.epoch
    rules.history.epochs_seen.add(snapshot.epoch)
    for record, _ in records:
        if isinstance(record, RegisterBrokerRecord):
            broker = model.register(record.broker_id, record.broker_epoch, record.incarnation_id)
            broker.fenced, broker.shutting_down = record.fenced, record.in_controlled_shutdown
            rules.max_epoch[record.broker_id] = record.broker_epoch
            rules.history.registrations[(record.broker_id, record.broker_epoch)] = (str(record.incarnation_id), None)
        elif isinstance(record, TopicRecord):
            model.add_topic(record.topic_id, record.name, None)
            rules.history.topics[record.topic_id.int] = (record.name, None, [])
        elif isinstance(record, PartitionRecord):
            topic = model.topics.get(record.topic_id.int)
            if topic is None:
                continue  # the snapshot comparison of later snapshots has no use for it either
            partition = topic.partitions[record.partition_id] = Partition(topic, record.partition_id)
            model.update_partition(partition, _state(record))
            model.base_epochs[(record.topic_id.int, record.partition_id)] = record.partition_epoch
            rules.history.topics[record.topic_id.int][2].append(len(record.replicas))
            snapshot_partition_checks(rules, snapshot.end_offset, partition, record)
            if model.watch:
                model.capture(partition, None, ())


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
            facts.partitions[(record.topic_id.int, record.partition_id)] = _state(record)
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


def _state(record: PartitionRecord) -> PartitionState:
    return PartitionState(
        record.replicas,
        record.isr,
        record.leader,
        record.leader_epoch,
        record.partition_epoch,
        record.leader_recovery_state,
        offline_replicas(record.replicas, record.directories),
    )
