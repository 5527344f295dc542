"""The checker's own model of the cluster, rebuilt from the metadata log (never the controller's code).

Brokers (registered epoch and incarnation, fenced, in controlled shutdown) and partitions
(replicas, ISR, leader, leader epoch, partition epoch, leader recovery state, offline replicas),
replayed as Kafka's metadata image does: a PartitionChangeRecord's absent fields (None, leader -2,
recovery state -1) mean unchanged; naming a leader, even the same one, bumps the leader epoch;
every change bumps the partition epoch. A replica is offline while its directory is Kafka's LOST
id (`00000000-0000-0000-0000-000000000001`).

Rules:
- The model only records; deciding what is a violation is `rules`' job. `update_partition` is the
  one mutation of a partition, and keeps two per-broker indexes (partitions it leads, ISRs it is
  in) so that a rule about one broker touches only that broker's partitions.
- Topics are keyed by the integer of their id (hashing `uuid.UUID` is a Python call) and
  partitions are objects hashed by identity, so that replay stays O(records) with dicts and sets.
- `watch` names (topic id, partition, partition epoch) states the journal refers to; each is
  captured (`Captured`) the first time replay reaches it, with the broker epochs of the members
  the change added, for the journal rules.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import NamedTuple

from protocol.records.metadata import LOST_DIRECTORY, NO_LEADER, PartitionRecord

LOST = LOST_DIRECTORY.int
RECOVERED = 0
RECOVERING = 1
NO_OFFLINE: frozenset[int] = frozenset()


class Broker:
    """One broker id as the log last registered it."""

    __slots__ = ("broker_id", "epoch", "fenced", "incarnation", "shutting_down")

    def __init__(self, broker_id: int, epoch: int, incarnation: uuid.UUID) -> None:
        self.broker_id = broker_id
        self.epoch = epoch
        self.incarnation = incarnation
        self.fenced = True
        self.shutting_down = False

    @property
    def active(self) -> bool:
        return not self.fenced and not self.shutting_down


class Topic:
    __slots__ = ("created_at", "name", "partitions", "topic_id")

    def __init__(self, topic_id: uuid.UUID, name: str, created_at: int | None) -> None:
        self.topic_id = topic_id
        self.name = name
        self.partitions: dict[int, Partition] = {}
        self.created_at = created_at


class Partition:
    """A partition's registration; mutated in place by `Model.update_partition` only."""

    __slots__ = (
        "index",
        "isr",
        "leader",
        "leader_epoch",
        "offline",
        "partition_epoch",
        "recovery",
        "replica_set",
        "replicas",
        "topic",
    )

    def __init__(self, topic: Topic, index: int) -> None:
        self.topic = topic
        self.index = index
        self.replicas: tuple[int, ...] = ()
        self.replica_set: frozenset[int] = frozenset()
        self.isr: tuple[int, ...] = ()
        self.leader = NO_LEADER
        self.leader_epoch = -1
        self.partition_epoch = -1
        self.recovery = RECOVERED
        self.offline = NO_OFFLINE

    @property
    def label(self) -> str:
        return partition_label(self.topic.name, self.topic.topic_id, self.index)

    def state(self) -> PartitionState:
        return PartitionState(
            self.replicas, self.isr, self.leader, self.leader_epoch, self.partition_epoch, self.recovery, self.offline
        )


class PartitionState(NamedTuple):
    """A partition's fields as one comparable value (snapshots, captures)."""

    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    leader: int
    leader_epoch: int
    partition_epoch: int
    recovery: int
    offline: frozenset[int]


class Captured(NamedTuple):
    """A partition state the journal refers to, as the log first reached it."""

    offset: int | None  # None: the state was loaded from the base snapshot (its history is gone)
    controller_epoch: int
    state: PartitionState
    added_members: dict[int, int | None]  # ISR members this change added -> their broker epoch (None: unregistered)


def partition_label(name: str, topic_id: uuid.UUID, index: int) -> str:
    return f"{name}-{index} ({topic_id})"


def partition_state(record: PartitionRecord) -> PartitionState:
    """The state a PartitionRecord sets."""
    return PartitionState(
        record.replicas,
        record.isr,
        record.leader,
        record.leader_epoch,
        record.partition_epoch,
        record.leader_recovery_state,
        offline_replicas(record.replicas, record.directories),
    )


def offline_replicas(replicas: tuple[int, ...], directories: Iterable[uuid.UUID]) -> frozenset[int]:
    """The replicas whose directory is LOST (directories are positional, one per replica)."""
    lost = [replica for replica, directory in zip(replicas, directories, strict=False) if directory.int == LOST]
    return frozenset(lost) if lost else NO_OFFLINE


@dataclass
class Model:
    brokers: dict[int, Broker] = field(default_factory=dict)
    topics: dict[int, Topic] = field(default_factory=dict)  # by topic id (its int)
    names: dict[str, Topic] = field(default_factory=dict)
    topic_ids_seen: set[int] = field(default_factory=set)
    controller_epoch: int = -1
    leads: dict[int, set[Partition]] = field(default_factory=dict)  # broker id -> partitions it leads
    in_isrs: dict[int, set[Partition]] = field(default_factory=dict)  # broker id -> ISRs it is in
    watch: set[tuple[int, int, int]] = field(default_factory=set)
    captured: dict[tuple[int, int, int], Captured] = field(default_factory=dict)
    #: (topic id int, index) -> partition epoch, for partitions loaded from the base snapshot
    base_epochs: dict[tuple[int, int], int] = field(default_factory=dict)
    #: the partitions changed since the last look (None: nobody looks; see `delivery`)
    changed: list[Partition] | None = None
    #: the log starts at a base snapshot (its older segments deleted), and the timestamp of the first
    #: batch read after it (None: none yet): what happened before then is known only as its result
    based: bool = False
    history_from_ms: int | None = None

    def before_history(self, at_ms: int) -> bool:
        """Does `at_ms` lie before the history the log holds (a base snapshot's deleted past)? Then
        what the journal says happened at that time cannot be held to the log's records."""
        return self.based and (self.history_from_ms is None or at_ms < self.history_from_ms)

    # ------------------------------------------------------------------ brokers
    def register(self, broker_id: int, epoch: int, incarnation: uuid.UUID) -> Broker:
        broker = self.brokers[broker_id] = Broker(broker_id, epoch, incarnation)
        return broker

    def partition_named(self, topic: str, index: int) -> Partition | None:
        """Partition `index` of the topic named `topic` now, if the model holds it."""
        found = self.names.get(topic)
        return None if found is None else found.partitions.get(index)

    def is_active(self, broker_id: int) -> bool:
        broker = self.brokers.get(broker_id)
        return broker is not None and broker.active

    # ------------------------------------------------------------------ topics and partitions
    def add_topic(self, topic_id: uuid.UUID, name: str, offset: int | None) -> Topic:
        topic = Topic(topic_id, name, offset)
        self.topics[topic_id.int] = topic
        self.names[name] = topic
        self.topic_ids_seen.add(topic_id.int)
        return topic

    def remove_topic(self, topic: Topic) -> None:
        del self.topics[topic.topic_id.int]
        if self.names.get(topic.name) is topic:
            del self.names[topic.name]
        for partition in topic.partitions.values():
            self._unindex(partition)

    def update_partition(self, partition: Partition, new: PartitionState) -> None:
        """Set `partition` to `new`, keeping the per-broker indexes (only members that changed move)."""
        if self.changed is not None:
            self.changed.append(partition)
        old_isr, old_leader = partition.isr, partition.leader
        if new.replicas != partition.replicas:
            partition.replica_set = frozenset(new.replicas)
        (
            partition.replicas,
            partition.isr,
            partition.leader,
            partition.leader_epoch,
            partition.partition_epoch,
            partition.recovery,
            partition.offline,
        ) = new
        if new.isr != old_isr:
            in_isrs = self.in_isrs
            for broker_id in old_isr:
                if broker_id not in new.isr:
                    in_isrs[broker_id].discard(partition)
            for broker_id in new.isr:
                if broker_id not in old_isr:
                    in_isrs.setdefault(broker_id, set()).add(partition)
        if new.leader != old_leader:
            if old_leader != NO_LEADER:
                self.leads[old_leader].discard(partition)
            if new.leader != NO_LEADER:
                self.leads.setdefault(new.leader, set()).add(partition)

    def set_isr(self, partition: Partition, isr: tuple[int, ...]) -> None:
        """A change of the ISR alone: `update_partition`'s effect, without building a state."""
        if self.changed is not None:
            self.changed.append(partition)
        old_isr = partition.isr
        partition.isr = isr
        partition.partition_epoch += 1
        in_isrs = self.in_isrs
        for broker_id in old_isr:
            if broker_id not in isr:
                in_isrs[broker_id].discard(partition)
        for broker_id in isr:
            if broker_id not in old_isr:
                in_isrs.setdefault(broker_id, set()).add(partition)

    def capture(self, partition: Partition, offset: int | None, added: Iterable[int]) -> None:
        """Keep the partition's state if the journal refers to it (see the module rules)."""
        key = (partition.topic.topic_id.int, partition.index, partition.partition_epoch)
        if key in self.watch and key not in self.captured:
            brokers = self.brokers
            members = {b: (brokers[b].epoch if b in brokers else None) for b in added}
            self.captured[key] = Captured(offset, self.controller_epoch, partition.state(), members)

    def _unindex(self, partition: Partition) -> None:
        for broker_id in partition.isr:
            self.in_isrs[broker_id].discard(partition)
        if partition.leader != NO_LEADER:
            self.leads[partition.leader].discard(partition)
