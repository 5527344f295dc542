"""Which control requests brokers must receive because of committed records, as data.

Rules (docs/semantics.md "Propagation to brokers"):
- A new partition or a partition change goes as LeaderAndIsr to every replica of the partition
  (unfenced, with a listener), except a replica that is told to stop serving it by the same change.
- StopReplica(delete=false, current leader epoch) goes to a broker for a partition it leaves the
  ISR of while in controlled shutdown, and for a replica marked offline.
- A deleted topic: StopReplica(delete=true, leader epoch -2) to every replica.
- A broker that is unfenced gets a full LeaderAndIsr of every partition it hosts.
- A new active controller sends every live broker a full LeaderAndIsr first: `full_state_orders`,
  paced work over the state frozen at activation; the shell holds the orders decided meanwhile
  and sends them after it (`ControlChannel.hold`, `release`).
- Orders carry the controller id and epoch and the destination's current broker epoch, and are
  batched per broker in log order (a partition appearing twice in one batch keeps its last state).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import NamedTuple

from protocol.records.metadata import (
    BrokerRegistrationChangeRecord,
    RemoveTopicRecord,
)
from protocol.spec import Data

from ..slices import Slices
from ..state.controller_state import ControllerState
from ..state.frozen import FrozenState
from ..state.model import PartitionRegistration, TopicPartition
from ..state.replication import Replaced

DELETE_EPOCH = -2


class PartitionState(NamedTuple):
    """One partition's state in a LeaderAndIsr (a named tuple: one is built per replica per change)."""

    topic_name: str
    topic_id: uuid.UUID
    partition: int
    leader: int
    leader_epoch: int
    isr: tuple[int, ...]
    partition_epoch: int
    replicas: tuple[int, ...]
    leader_recovery_state: int
    is_new: bool = False


class StopPartition(NamedTuple):
    topic_name: str
    topic_id: uuid.UUID
    partition: int
    leader_epoch: int
    delete: bool


class BrokerTarget(NamedTuple):
    """Where a broker's control requests go: its first registered listener's host, port and
    security protocol (Kafka's code: `protocol.security_protocol`), and the broker's current epoch."""

    host: str
    port: int
    broker_epoch: int
    security_protocol: int = 0


@dataclass(frozen=True, slots=True)
class ControlOrder:
    """One LeaderAndIsr (`partitions`) or StopReplica (`stops`) for one broker."""

    broker_id: int
    broker_epoch: int
    controller_id: int
    controller_epoch: int
    partitions: tuple[PartitionState, ...] = ()
    stops: tuple[StopPartition, ...] = ()
    full: bool = False

    @property
    def kind(self) -> str:
        return "StopReplica" if self.stops else "LeaderAndIsr"


@dataclass
class _Pending:
    leader_and_isr: dict[TopicPartition, PartitionState] = field(default_factory=dict)
    stops: dict[TopicPartition, StopPartition] = field(default_factory=dict)
    full: bool = False


class OutboundCollector:
    """Watches records being replayed and accumulates the control requests they call for."""

    def __init__(self, state: ControllerState) -> None:
        self.state = state
        self._pending: dict[int, _Pending] = {}
        self._removed: list[tuple[TopicPartition, str, PartitionRegistration]] = []

    def before(self, record: Data) -> None:
        """Called before `record` is replayed (a removed topic's partitions are gone afterwards)."""
        if isinstance(record, RemoveTopicRecord):
            topic = self.state.replication.topics.get(record.topic_id)
            self._removed = (
                []
                if topic is None
                else [(TopicPartition(topic.topic_id, i), topic.name, p) for i, p in topic.partitions.items()]
            )

    def after(self, record: Data, replaced: Replaced | None) -> None:
        """Called after `record` was replayed; a partition record's replay says what it replaced."""
        if replaced is not None:
            self._partition_changed(replaced)
        elif isinstance(record, RemoveTopicRecord):
            for tp, name, part in self._removed:
                for broker_id in part.replicas:
                    stop = StopPartition(name, tp.topic_id, tp.partition, DELETE_EPOCH, delete=True)
                    self._queue(broker_id).stops[tp] = stop
        elif isinstance(record, BrokerRegistrationChangeRecord) and record.fenced == -1:
            self.request_full(record.broker_id)

    def _queue(self, broker_id: int) -> _Pending:
        pending = self._pending.get(broker_id)
        if pending is None:
            pending = self._pending[broker_id] = _Pending()
        return pending

    def _partition_changed(self, replaced: Replaced) -> None:
        state = self.state
        tp, name, before, after = replaced
        stopped = set()
        if before is not None:
            # the same directories object means no replica went offline (merge keeps it unless changed)
            directories_changed = after.directories is not before.directories
            for broker_id in after.replicas:
                stop = broker_id in before.isr and broker_id not in after.isr  # left the ISR ...
                if stop:  # ... while shutting down
                    reg = state.cluster.get(broker_id)
                    stop = reg is not None and reg.in_controlled_shutdown
                if stop or (directories_changed and after.is_offline(broker_id) and not before.is_offline(broker_id)):
                    self._queue(broker_id).stops[tp] = StopPartition(
                        name, tp.topic_id, tp.partition, after.leader_epoch, delete=False
                    )
                    stopped.add(broker_id)
        partition_state = _state_of(name, tp, after, is_new=before is None)
        for broker_id in after.replicas:
            if broker_id not in stopped:
                self._queue(broker_id).leader_and_isr[tp] = partition_state

    def request_full(self, broker_id: int) -> None:
        """Queue a full LeaderAndIsr of every partition the broker hosts."""
        pending = self._queue(broker_id)
        pending.full = True
        for tp in self.state.replication.hosted_by(broker_id):
            part = self.state.replication.partition(tp)
            if part is not None:
                pending.leader_and_isr[tp] = _state_of(self.state.replication.topics[tp.topic_id].name, tp, part)

    def orders(self) -> list[ControlOrder]:
        out = []
        for broker_id, pending in sorted(self._pending.items()):
            broker = self.state.cluster.get(broker_id)
            if broker is None or broker.fenced or not broker.listeners:
                continue
            common = {
                "broker_id": broker_id,
                "broker_epoch": broker.epoch,
                "controller_id": self.state.config.node_id,
                "controller_epoch": self.state.controller_epoch,
            }
            if pending.leader_and_isr or pending.full:
                out.append(ControlOrder(**common, partitions=tuple(pending.leader_and_isr.values()), full=pending.full))  # type: ignore[arg-type]
            if pending.stops:
                out.append(ControlOrder(**common, stops=tuple(pending.stops.values())))  # type: ignore[arg-type]
        return out


def _state_of(name: str, tp: TopicPartition, part: PartitionRegistration, is_new: bool = False) -> PartitionState:
    # positional: a named tuple built from keywords costs twice as much, and this runs per change
    return PartitionState(
        name,
        tp.topic_id,
        tp.partition,
        part.leader,
        part.leader_epoch,
        part.isr,
        part.partition_epoch,
        part.replicas,
        part.leader_recovery_state,
        is_new,
    )


#: Partitions a full-state build goes through between two yields (`full_state_orders`).
FULL_STATE_SLICE_PARTITIONS = 2000


def full_state_orders(frozen: FrozenState) -> Slices[list[ControlOrder]]:
    """A full LeaderAndIsr for every live broker (unfenced, with a listener): what a controller
    sends when it starts, built from a frozen state so that it can be built in slices while the
    controller goes on deciding (`controller.slices`; it yields every
    `FULL_STATE_SLICE_PARTITIONS` partitions). Each partition's state is built once and shared by
    its replicas' orders; topics in name order, partitions in the topic's order."""
    hosted: dict[int, list[PartitionState]] = {
        broker_id: [] for broker_id, broker in sorted(frozen.brokers.items()) if not broker.fenced and broker.listeners
    }
    seen = 0
    for topic in frozen.sorted_topics():
        name, topic_id = topic.name, topic.topic_id
        for index, part in topic.partitions.items():
            shared = None
            for broker_id in part.replicas:
                states = hosted.get(broker_id)
                if states is not None:
                    if shared is None:
                        shared = _state_of(name, TopicPartition(topic_id, index), part)
                    states.append(shared)
            seen += 1
            if not seen % FULL_STATE_SLICE_PARTITIONS:
                yield None
    return [
        ControlOrder(
            broker_id=broker_id,
            broker_epoch=frozen.brokers[broker_id].epoch,
            controller_id=frozen.config.node_id,
            controller_epoch=frozen.controller_epoch,
            partitions=tuple(states),
            full=True,
        )
        for broker_id, states in hosted.items()
    ]
