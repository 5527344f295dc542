"""Topics and partitions: replicas, ISRs, leaders, epochs, offline replicas (Kafka's ReplicationControlManager state).

Rules:
- `replay_*` are the only mutations; they keep three indexes per broker (partitions it is a
  replica of, in the ISR of, and leads) so that fencing or shutting down a broker touches only
  its own partitions, and two counts (`partition_count`, `leaderless_count`) so that the
  metrics never walk every partition. A snapshot's load into an empty state defers them
  (`defer_indexes`) and builds them once from the whole state (`build_indexes`): a partition
  at a time they cost about a third of the load.
- `isr_changes` are running totals of the PartitionChangeRecords replayed that took a member out
  of an ISR (a shrink) or put one in (an expand). One that does both (an unclean election's
  (3) -> (1), an AlterPartition swapping a member) counts once as each, a reordering as neither;
  a partition's creation or removal is not an ISR change. They count every replay (the log read
  at start-up, decisions not yet durable): which of them were committed is the engine's to tell.
- Which changes to make is decided in `controller.ops.changes`; this module only replays them.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from protocol.records.metadata import (
    NO_LEADER,
    PartitionChangeRecord,
    PartitionRecord,
    RemoveTopicRecord,
    TopicRecord,
)

from .broker_index import DENSE_LIMIT, BrokerIndex
from .cluster import ReplayError
from .model import PartitionRegistration, TopicPartition


class Replaced(NamedTuple):
    """What replaying a partition record did: the partition, its topic's name, before (None when new) and after."""

    tp: TopicPartition
    topic_name: str
    before: PartitionRegistration | None
    after: PartitionRegistration


class IsrChanges(NamedTuple):
    """Partition changes that shrank or expanded an ISR (running totals, see the module's rules)."""

    shrinks: int = 0
    expands: int = 0

    def since(self, start: IsrChanges) -> IsrChanges:
        """The changes counted after `start` (earlier totals of the same replay)."""
        return IsrChanges(self.shrinks - start.shrinks, self.expands - start.expands)


@dataclass
class Topic:
    topic_id: uuid.UUID
    name: str
    partitions: dict[int, PartitionRegistration] = field(default_factory=dict)
    #: this topic's last frozen copy (`state.frozen`), dropped by every replay that changes it, so
    #: that freezing a state copies only the topics changed since the previous freeze
    frozen: Any = field(default=None, compare=False, repr=False)


@dataclass
class ReplicationState:
    topics: dict[uuid.UUID, Topic] = field(default_factory=dict)
    names: dict[str, uuid.UUID] = field(default_factory=dict)
    #: per broker, the partitions it is a replica of, in the ISR of, leads (`state.broker_index`)
    replica_of: BrokerIndex = field(default_factory=BrokerIndex)
    in_isr_of: BrokerIndex = field(default_factory=BrokerIndex)
    leader_of: BrokerIndex = field(default_factory=BrokerIndex)
    #: partitions of every topic, and those of them without a leader (-1), kept by `_reindex`
    partition_count: int = 0
    leaderless_count: int = 0
    #: ISR shrinks and expands replayed so far (`_count_isr_change`): a tuple, replaced at each
    #: count, so that whoever keeps earlier totals (the engine's commit marks) keeps them unchanged
    isr_changes: IsrChanges = field(default_factory=IsrChanges)
    #: while True, replay leaves the indexes and counts to `build_indexes`
    deferred: bool = field(default=False, compare=False, repr=False)

    # ------------------------------------------------------------------ queries
    def topic_by_name(self, name: str) -> Topic | None:
        topic_id = self.names.get(name)
        return None if topic_id is None else self.topics[topic_id]

    def partition(self, tp: TopicPartition) -> PartitionRegistration | None:
        topic = self.topics.get(tp.topic_id)
        return None if topic is None else topic.partitions.get(tp.partition)

    def partitions(self) -> Iterator[tuple[TopicPartition, PartitionRegistration]]:
        for topic_id, topic in self.topics.items():
            for index, part in topic.partitions.items():
                yield TopicPartition(topic_id, index), part

    def sorted_tps(self, tps: set[TopicPartition]) -> list[TopicPartition]:
        return sorted(tps, key=lambda tp: (self.topics[tp.topic_id].name, tp.partition))

    def led_by(self, broker_id: int) -> list[TopicPartition]:
        return self._listed(broker_id, self.leader_of)

    def isrs_with(self, broker_id: int) -> list[TopicPartition]:
        return self._listed(broker_id, self.in_isr_of)

    def hosted_by(self, broker_id: int) -> list[TopicPartition]:
        return self._listed(broker_id, self.replica_of)

    def in_isr_or_leading(self, broker_id: int) -> list[TopicPartition]:
        return self._listed(broker_id, self.in_isr_of, self.leader_of)

    def _listed(self, broker_id: int, *indexes: BrokerIndex) -> list[TopicPartition]:
        """The partitions the broker is in in any of `indexes`, by topic name, then partition."""
        keys = {key for index in indexes for key in index.topics_of(broker_id)}
        topics = sorted(filter(None, (self.topics.get(uuid.UUID(int=key)) for key in keys)), key=_name)
        listed = []
        for topic in topics:
            topic_id = topic.topic_id
            found = [index.partitions(broker_id, topic_id.int) for index in indexes]
            ids = found[0] if len(found) == 1 else sorted(set().union(*found))
            listed += [TopicPartition(topic_id, partition) for partition in ids]
        return listed

    def leaderless(self) -> list[TopicPartition]:
        return self.sorted_tps({tp for tp, part in self.partitions() if part.leader == NO_LEADER})

    # ------------------------------------------------------------------ indexes
    def defer_indexes(self) -> None:
        """Replay from here on leaves the per-broker indexes and the counts alone, until
        `build_indexes` builds them from the state. Only for an empty state: nothing reads them
        while they are deferred (a snapshot's load)."""
        if self.topics:
            raise ValueError("the indexes are deferred only while the state is empty")
        self.deferred = True

    def build_indexes(self) -> None:
        """The indexes and counts of the whole state, built in one pass per topic; replay keeps
        them from here on. Does nothing unless they were deferred."""
        if not self.deferred:
            return
        self.deferred = False
        count = leaderless = 0
        for topic_id, topic in self.topics.items():
            key, parts = topic_id.int, topic.partitions
            size = max(parts, default=-1) + 1
            if size > DENSE_LIMIT:  # an odd id past the bitmaps (`broker_index`): size them by the others
                size = max((index for index in parts if index < DENSE_LIMIT), default=-1) + 1
            count += len(parts)
            self.replica_of.fill(key, size, [(index, part.replicas) for index, part in parts.items()])
            self.in_isr_of.fill(key, size, [(index, part.isr) for index, part in parts.items()])
            leaders = [(index, (part.leader,)) for index, part in parts.items() if part.leader != NO_LEADER]
            self.leader_of.fill(key, size, leaders)
            leaderless += len(parts) - len(leaders)
        self.partition_count, self.leaderless_count = count, leaderless

    # ------------------------------------------------------------------ replay
    def replay_topic(self, record: TopicRecord) -> None:
        if record.name in self.names or record.topic_id in self.topics:
            raise ReplayError(f"topic {record.name} ({record.topic_id}) already exists")
        self.topics[record.topic_id] = Topic(record.topic_id, record.name)
        self.names[record.name] = record.topic_id

    def replay_partition(self, record: PartitionRecord) -> Replaced:
        topic = self.topics.get(record.topic_id)
        if topic is None:
            raise ReplayError(f"partition of unknown topic {record.topic_id}")
        tp = TopicPartition(topic.topic_id, record.partition_id)  # the topic's id object, shared by its partitions
        new = PartitionRegistration.from_record(record)
        self._reindex(tp, topic.partitions.get(record.partition_id), new)
        topic.partitions[record.partition_id] = new
        topic.frozen = None
        return Replaced(tp, topic.name, None, new)

    def replay_change(self, record: PartitionChangeRecord) -> Replaced:
        topic = self.topics.get(record.topic_id)
        current = None if topic is None else topic.partitions.get(record.partition_id)
        if topic is None or current is None:
            raise ReplayError(f"change to unknown partition {record.topic_id}-{record.partition_id}")
        tp = TopicPartition(topic.topic_id, record.partition_id)
        new = current.merge(record)
        self._reindex(tp, current, new)
        if record.isr is not None:
            self._count_isr_change(current.isr, new.isr)
        topic.partitions[record.partition_id] = new
        topic.frozen = None
        return Replaced(tp, topic.name, current, new)

    def replay_remove(self, record: RemoveTopicRecord) -> None:
        topic = self.topics.pop(record.topic_id, None)
        if topic is None:
            raise ReplayError(f"removal of unknown topic {record.topic_id}")
        del self.names[topic.name]
        for index, part in topic.partitions.items():
            self._reindex(TopicPartition(record.topic_id, index), part, None)
        for broker_index in (self.replica_of, self.in_isr_of, self.leader_of):
            broker_index.forget_topic(record.topic_id.int)

    def _reindex(
        self, tp: TopicPartition, old: PartitionRegistration | None, new: PartitionRegistration | None
    ) -> None:
        """Move `tp` between the per-broker indexes and the counts; only members that changed are
        touched (this runs for every partition record replayed)."""
        if self.deferred:
            return
        if old is None or new is None:
            self._count(old, new)
        empty: tuple[int, ...] = ()
        key, partition = tp.topic_id.int, tp.partition  # the indexes' key of the topic (`broker_index`)
        old_replicas, new_replicas = (old.replicas if old else empty), (new.replicas if new else empty)
        if old_replicas != new_replicas:
            self.replica_of.move(key, partition, old_replicas, new_replicas)
        old_isr, new_isr = (old.isr if old else empty), (new.isr if new else empty)
        if old_isr != new_isr:
            self.in_isr_of.move(key, partition, old_isr, new_isr)
        old_leader = old.leader if old else NO_LEADER
        new_leader = new.leader if new else NO_LEADER
        if old_leader != new_leader:
            self.leader_of.move(
                key,
                partition,
                () if old_leader == NO_LEADER else (old_leader,),
                () if new_leader == NO_LEADER else (new_leader,),
            )
            if old is not None and new is not None:  # a leader change: to or from none?
                if old_leader == NO_LEADER:
                    self.leaderless_count -= 1
                elif new_leader == NO_LEADER:
                    self.leaderless_count += 1

    def _count_isr_change(self, before: tuple[int, ...], after: tuple[int, ...]) -> None:
        """A shrink if a member left the ISR, an expand if one joined (both for a swap). Sets, not
        generators: this runs for every ISR change replayed, at start-up too, and is 5x cheaper."""
        old, new = set(before), set(after)
        shrank, grew = not old <= new, not new <= old
        if shrank or grew:
            totals = self.isr_changes
            self.isr_changes = IsrChanges(totals.shrinks + shrank, totals.expands + grew)

    def _count(self, old: PartitionRegistration | None, new: PartitionRegistration | None) -> None:
        """A partition created (`old` None) or removed (`new` None): the counts follow."""
        if old is None and new is not None:
            self.partition_count += 1
            self.leaderless_count += new.leader == NO_LEADER
        elif old is not None:
            self.partition_count -= 1
            self.leaderless_count -= old.leader == NO_LEADER


def _name(topic: Topic) -> str:
    return topic.name
