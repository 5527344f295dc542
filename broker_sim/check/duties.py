"""Duties: what the controller must send brokers besides partition states, judged on the brokers' side.

`delivery` holds every committed partition state to its replicas (LeaderAndIsr); this holds the
StopReplica requests and the FULL LeaderAndIsr of semantics.md ("Propagation to brokers",
"ControlledShutdown" step 4, "AlterReplicaState", "DeleteTopics") to what the brokers' listeners
journalled: `StopObserved` (each partition of a StopReplica not refused whole) and
`LeaderAndIsrObserved` (each FULL LeaderAndIsr accepted, and an incarnation's first of each
controller epoch).

Rules:
- `delete-delivery`: when the log removes a topic (RemoveTopicRecord, at its batch's timestamp),
  each replica of each of its partitions on a fleet broker then active (registered, unfenced, not
  shutting down) owes a StopReplica of that partition with delete = true and, from v3 on, leader
  epoch -2 (v0-2 carry none). StopReplica names topics, never ids: a stop of the topic's name
  counts (a re-created topic of the name is deleted by the same stop).
- `stop-delivery`: a StopReplica with delete = false and the partition's leader epoch after the
  change or a newer one (any from v0-2; any deleting stop counts too) is owed by a broker,
  unfenced, (a) in controlled shutdown, when a change removes it from an ISR of replication factor
  > 1 that held it when it was flagged (the partitions it now only follows), and (b) whose replica
  a change marks offline (its directory LOST, not before). Partition changes are taken per batch
  (`on_batch_end`: no handler on the log's most frequent record): a partition changed k times in
  one batch owes the leader epoch it ends with less k - 1 (each change raises it by one at most).
  A stop the broker refused for an older leader epoch than its own was still sent: it counts
  (queued orders may merge: a LeaderAndIsr sent before it can carry a newer leader epoch).
- `full-state-delivery`: a FULL LeaderAndIsr (v5+, type 2) of a controller epoch at least the
  current one is owed (a) by every broker active when a LeaderChange raises the controller epoch
  (a controller that starts tells every live broker everything) and (b) by a broker when it is
  unfenced (a new incarnation learns what it hosts). LeaderAndIsr v0-4 carry no type: a broker
  that accepted one of them meets (a) with any LeaderAndIsr of the epoch, and is not held to (b)
  (the journal keeps only an incarnation's first LeaderAndIsr of an epoch but every FULL one).
- Each duty is owed by the broker's incarnation then registered, by the run's bound
  (`shutdown_bound_ms`, as `delivery`), counting what the broker journalled from the change's
  timestamp to the deadline. Excused, as the log says at the deadline: the broker's incarnation
  changed, or it crashed before the deadline (`liveness.crashed_incarnations`), or it was fenced
  at any time from the change on (a fenced broker's queue may be
  dropped: a full LeaderAndIsr follows its unfence; a broker whose controlled shutdown is answered
  complete leaves at once, often before its stops arrive, and is fenced a session later); for
  `stop-delivery`, the topic is gone; for both stops, a new controller epoch began (a controller
  that starts sends the brokers a full LeaderAndIsr, whose v5+ deletes the partitions it does
  not name, and no stops its predecessor left unsent); or the run ended before the deadline. A
  replica back online by the deadline is no excuse: the stop was owed when it went offline.
- Judged only for a journal that says how its run went (RunStarted, RunEnded) and holds at least
  one `LeaderAndIsrObserved` (a fleet that journals these duties writes one for every
  incarnation that accepts any LeaderAndIsr); an older journal is not held to them.
- Obligations wait in a heap by deadline, judged as the log's clock passes it, then dropped.
"""

from __future__ import annotations

import heapq
import uuid
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, NamedTuple

from broker_sim.journal import Entry, LeaderAndIsrObserved, RunStarted, StopObserved
from protocol.records.control import LeaderChangeMessage
from protocol.records.metadata import (
    BrokerRegistrationChangeRecord,
    PartitionRecord,
    RemoveTopicRecord,
    TopicRecord,
)
from protocol.spec import Data

from .events import LogEnd, RecordHandler, SnapshotRecords, Subscriber
from .liveness import NS_PER_MS, crashed_incarnations, due_after_pauses, pauses_of, run_covering, run_end_ns, runs_of
from .log import Batch, SnapshotFile
from .rules import LogRules
from .state import NO_OFFLINE, Model, Partition, Topic, partition_label
from .violations import Violation, ViolationSink

if TYPE_CHECKING:
    from .journal_plan import JournalPlan

DELETE_EPOCH = -2
TYPE_FULL = 2
FIRST_TYPED_VERSION = 5  # LeaderAndIsr carries its type from v5
FIRST_EPOCH_VERSION = 3  # StopReplica carries each partition's leader epoch from v3
UNFENCE = -1
WENT_OFFLINE = "its replica went offline"
LEFT_IN_SHUTDOWN = "it left the ISR in controlled shutdown"
#: what each duty's violation says was owed
OWED = {
    "delete-delivery": "StopReplica(delete=true, leader epoch -2) of the deleted topic",
    "stop-delivery": "StopReplica(delete=false)",
    "full-state-delivery": "FULL LeaderAndIsr",
}


class Owed(NamedTuple):
    deadline_ms: int
    since_ms: int
    rule: str
    broker: int
    broker_epoch: int
    topic_name: str  # "" for a full LeaderAndIsr
    topic: int  # the topic id's int (0 for a full LeaderAndIsr)
    partition: int
    epoch: int  # the leader epoch owed (stops), the controller epoch (full LeaderAndIsr)
    partition_epoch: int  # the partition epoch of the change (stops), -1 otherwise
    why: str
    controller_epoch: int  # the log's when the duty arose


class Stop(NamedTuple):
    """One StopObserved, as judged: when (ms), its leader epoch, delete flag and version."""

    ms: int
    leader_epoch: int
    delete: bool
    api_version: int


class Full(NamedTuple):
    """One LeaderAndIsrObserved, as judged."""

    ms: int
    controller_epoch: int
    request_type: int
    api_version: int


class Duties(Subscriber):
    """Who owes which StopReplica or FULL LeaderAndIsr (from the log's records), judged at each deadline."""

    name = "duties"

    def __init__(self, image: LogRules) -> None:
        super().__init__()
        self.image = image
        self.runs: Sequence[RunStarted] = ()
        self.pauses: dict[int, list[tuple[int, int]]] = {}  # broker -> its pauses (liveness.pauses_of)
        self.run_end_ms: int | None = None
        self.stops: dict[tuple[int, str, int], list[Stop]] = {}  # (broker, topic name, partition) -> its stops
        self.fulls: dict[int, list[Full]] = {}  # broker -> its LeaderAndIsrObserved
        self.untyped: set[int] = set()  # brokers that accepted a LeaderAndIsr v0-4
        self.topics: dict[int, Topic] = {}  # the log's topics, kept past their removal from the model
        self.shutting: dict[int, tuple[int, set[Partition]]] = {}  # broker -> (epoch, ISRs held when flagged)
        self.offline: dict[Partition, frozenset[int]] = {}  # the offline replicas of each partition with any
        self.owed: list[Owed] = []  # a heap
        self.late: list[Owed] = []
        self.crashed: dict[tuple[int, int], int] = {}  # (broker, broker epoch) -> when it crashed (ms)
        self.judged: Counter[str] = Counter()  # duties judged, by rule

    # ------------------------------------------------------------------ the journal
    def on_journal_entry(self, entry: Entry) -> None:
        if isinstance(entry, StopObserved):
            key = (entry.broker, entry.topic, entry.partition)
            stop = Stop(entry.wall_ns // NS_PER_MS, entry.leader_epoch, entry.delete, entry.api_version)
            self.stops.setdefault(key, []).append(stop)
        elif isinstance(entry, LeaderAndIsrObserved):
            full = Full(entry.wall_ns // NS_PER_MS, entry.controller_epoch, entry.request_type, entry.api_version)
            self.fulls.setdefault(entry.broker, []).append(full)
            if entry.api_version < FIRST_TYPED_VERSION:
                self.untyped.add(entry.broker)

    def on_journal_end(self, plan: JournalPlan) -> None:
        self.runs = runs_of(plan.lifecycle)
        self.pauses = pauses_of(plan.lifecycle)
        end_ns = run_end_ns(plan.lifecycle)
        self.run_end_ms = None if end_ns is None else end_ns // NS_PER_MS
        self.wants_changes = bool(self.fulls) and bool(self.runs) and self.run_end_ms is not None
        self.crashed = crashed_incarnations([*plan.judged, *plan.lifecycle])

    def follows(self, hook: str) -> bool:
        if hook in ("on_time", "on_base_snapshot", "on_batch_end"):
            return self.wants_changes  # judged only for a journal of these duties (see the rules)
        return super().follows(hook)

    def record_handlers(self) -> Mapping[type, RecordHandler]:
        # asked before the journal is read: each handler returns at once when nothing is judged
        return {
            TopicRecord: self.topic,
            RemoveTopicRecord: self.remove_topic,
            PartitionRecord: self.partition_record,
            BrokerRegistrationChangeRecord: self.broker_change,
            LeaderChangeMessage: self.leader_change,
        }

    # ------------------------------------------------------------------ the log
    def on_base_snapshot(self, snapshot: SnapshotFile, records: SnapshotRecords) -> None:
        model = self.image.model
        self.topics.update(model.topics)
        for topic in model.topics.values():
            for partition in topic.partitions.values():
                if partition.offline:
                    self.offline[partition] = partition.offline

    def on_time(self, timestamp_ms: int) -> None:
        owed, model = self.owed, self.image.model
        while owed and owed[0].deadline_ms < timestamp_ms:
            self._judge(model, heapq.heappop(owed))

    def on_batch_end(self, batch: Batch, changed: Sequence[Partition]) -> None:
        if not changed:
            return
        shutting, offline = self.shutting, self.offline
        for partition in changed:
            if shutting:
                self._left_in_shutdown(partition, changed)
            if partition.offline or (offline and partition in offline):
                self._went_offline(partition, changed)

    def on_log_end(self, end: LogEnd) -> None:
        self.on_time(1 << 62)
        self.report(self.sink)

    def counts(self) -> Mapping[str, int]:
        return {f"judged {rule}": count for rule, count in self.judged.items()}

    def topic(self, offset: int, record: Data) -> None:
        assert isinstance(record, TopicRecord)
        topic = self.image.model.topics.get(record.topic_id.int)
        if self.wants_changes and topic is not None:
            self.topics[record.topic_id.int] = topic

    def remove_topic(self, offset: int, record: Data) -> None:
        assert isinstance(record, RemoveTopicRecord)
        topic = self.topics.pop(record.topic_id.int, None)
        if topic is None:
            return
        model = self.image.model
        for partition in topic.partitions.values():
            self.offline.pop(partition, None)
            for replica in partition.replicas:
                if model.is_active(replica):
                    self._owe("delete-delivery", replica, partition, DELETE_EPOCH, "the topic was deleted")

    def partition_record(self, offset: int, record: Data) -> None:
        assert isinstance(record, PartitionRecord)
        if not self.wants_changes:
            return
        partition = self._partition(record.topic_id, record.partition_id)
        if partition is not None and partition.offline:
            self.offline[partition] = partition.offline  # created offline: no stop owed

    def _went_offline(self, partition: Partition, changed: Sequence[Partition]) -> None:
        """Owe a stop to each unfenced replica the batch marked offline."""
        before = self.offline.get(partition, NO_OFFLINE)
        if partition.offline == before:
            return
        for replica in partition.offline - before:
            broker = self.image.model.brokers.get(replica)
            if broker is not None and not broker.fenced:
                epoch = partition.leader_epoch - changed.count(partition) + 1
                self._owe("stop-delivery", replica, partition, epoch, WENT_OFFLINE)
        if partition.offline:
            self.offline[partition] = partition.offline
        else:
            del self.offline[partition]

    def _left_in_shutdown(self, partition: Partition, changed: Sequence[Partition]) -> None:
        """Owe a stop to each replica in controlled shutdown that the batch took out of an ISR it held."""
        brokers, shutting = self.image.model.brokers, self.shutting
        for replica in partition.replicas:
            held = shutting.get(replica)
            if held is None or partition not in held[1] or replica in partition.isr:
                continue
            held[1].discard(partition)
            broker = brokers.get(replica)
            if broker is None or broker.epoch != held[0] or broker.fenced or not held[1]:
                del shutting[replica]  # nothing more to owe of this shutdown
            if broker is not None and broker.epoch == held[0] and broker.shutting_down and not broker.fenced:
                epoch = partition.leader_epoch - changed.count(partition) + 1
                self._owe("stop-delivery", replica, partition, epoch, LEFT_IN_SHUTDOWN)

    def broker_change(self, offset: int, record: Data) -> None:
        assert isinstance(record, BrokerRegistrationChangeRecord)
        model = self.image.model
        broker = model.brokers.get(record.broker_id)
        if not self.wants_changes or broker is None or broker.epoch != record.broker_epoch:
            return
        if record.in_controlled_shutdown == 1 and broker.shutting_down and not broker.fenced:
            held = self.shutting.get(broker.broker_id)
            if held is None or held[0] != broker.epoch:
                isrs = {p for p in model.in_isrs.get(broker.broker_id, ()) if len(p.replicas) > 1}
                self.shutting[broker.broker_id] = (broker.epoch, isrs)
        if record.fenced == UNFENCE and broker.active and broker.broker_id not in self.untyped:
            self._owe_full(broker.broker_id, broker.epoch, "it was unfenced")

    def leader_change(self, offset: int, record: Data) -> None:
        if not self.wants_changes:
            return
        model = self.image.model
        for broker in model.brokers.values():
            if broker.active:
                self._owe_full(broker.broker_id, broker.epoch, f"controller epoch {model.controller_epoch} began")

    def _partition(self, topic_id: uuid.UUID, index: int) -> Partition | None:
        topic = self.image.model.topics.get(topic_id.int)
        return None if topic is None else topic.partitions.get(index)

    # ------------------------------------------------------------------ obligations
    def _deadline(self, broker_id: int) -> int | None:
        """When a duty owed to `broker_id` now is due, if its run holds it to one before the run ended."""
        run = run_covering(self.runs, broker_id)
        if run is None or run.delivery_bound <= 0 or self.run_end_ms is None:
            return None
        deadline = due_after_pauses(self.pauses.get(broker_id, ()), self.image.timestamp_ms, run.delivery_bound)
        return deadline if deadline <= self.run_end_ms else None

    def _owe(self, rule: str, broker_id: int, partition: Partition, epoch: int, why: str) -> None:
        deadline = self._deadline(broker_id)
        broker = self.image.model.brokers.get(broker_id)
        if deadline is None or broker is None:
            return
        topic = partition.topic
        owed = Owed(
            deadline, self.image.timestamp_ms, rule, broker_id, broker.epoch, topic.name, topic.topic_id.int,
            partition.index, epoch, partition.partition_epoch, why, self.image.model.controller_epoch,
        )  # fmt: skip
        heapq.heappush(self.owed, owed)

    def _owe_full(self, broker_id: int, broker_epoch: int, why: str) -> None:
        deadline = self._deadline(broker_id)
        if deadline is not None:
            epoch = self.image.model.controller_epoch
            at = self.image.timestamp_ms
            owed = Owed(deadline, at, "full-state-delivery", broker_id, broker_epoch, "", 0, -1, epoch, -1, why, epoch)
            heapq.heappush(self.owed, owed)

    def _judge(self, model: Model, owed: Owed) -> None:
        self.judged[owed.rule] += 1
        if _excused(model, self.image, owed) or self._delivered(owed):
            return
        if self.crashed.get((owed.broker, owed.broker_epoch), owed.deadline_ms + 1) <= owed.deadline_ms:
            return  # that incarnation was gone: nothing could reach it
        if owed.rule != "full-state-delivery" and model.controller_epoch != owed.controller_epoch:
            return  # a new controller sends no old stops: its full LeaderAndIsr deletes strays (v5+)
        if owed.rule == "stop-delivery" and self._topic_gone(model, owed):
            return
        self.late.append(owed)

    def _delivered(self, owed: Owed) -> bool:
        since, deadline = owed.since_ms, owed.deadline_ms
        if owed.rule == "full-state-delivery":
            lenient = owed.broker in self.untyped
            return any(
                since <= full.ms <= deadline
                and full.controller_epoch >= owed.epoch
                and (full.request_type == TYPE_FULL or lenient)
                for full in self.fulls.get(owed.broker, ())
            )
        stops = self.stops.get((owed.broker, owed.topic_name, owed.partition), ())
        if owed.rule == "delete-delivery":
            return any(
                since <= stop.ms <= deadline
                and stop.delete
                and (stop.api_version < FIRST_EPOCH_VERSION or stop.leader_epoch == DELETE_EPOCH)
                for stop in stops
            )
        return any(
            since <= stop.ms <= deadline
            and (stop.delete or stop.api_version < FIRST_EPOCH_VERSION or stop.leader_epoch >= owed.epoch)
            for stop in stops
        )

    def _topic_gone(self, model: Model, owed: Owed) -> bool:
        """The topic is gone by the deadline: its deletion is owed instead."""
        topic = model.topics.get(owed.topic)
        return topic is None or owed.partition not in topic.partitions

    def report(self, sink: ViolationSink) -> None:
        for owed in self.late:
            waited = (owed.deadline_ms - owed.since_ms) / 1000
            label = None
            if owed.topic:
                label = partition_label(owed.topic_name, uuid.UUID(int=owed.topic), owed.partition)
            sink.add(
                Violation(
                    owed.rule,
                    f"broker {owed.broker} (broker epoch {owed.broker_epoch}) had not accepted a {OWED[owed.rule]}"
                    f"{_epoch_owed(owed)} {waited:.1f} s after {owed.why}",
                    partition=label,
                    broker=owed.broker,
                )
            )


def _epoch_owed(owed: Owed) -> str:
    if owed.rule == "stop-delivery":
        return f" at leader epoch {owed.epoch} or later"
    if owed.rule == "full-state-delivery":
        return f" of controller epoch {owed.epoch} or later"
    return ""


def _excused(model: Model, image: LogRules, owed: Owed) -> bool:
    """The log's excuses at the deadline: another incarnation, or fenced since the duty arose."""
    broker = model.brokers.get(owed.broker)
    if broker is None or broker.epoch != owed.broker_epoch or broker.fenced:
        return True
    fences = image.history.fences.get((owed.broker, owed.broker_epoch), ())
    return any(owed.since_ms <= fence.timestamp_ms <= owed.deadline_ms for fence in fences)
