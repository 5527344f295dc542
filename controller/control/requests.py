"""From a control order (what a broker must be told) to the LeaderAndIsr / StopReplica message at a version,
and from the broker's answer back to its errors.

Pure: no I/O. The control channel (`controller.control.channel`) picks the version from the broker's
ApiVersions answer (`common_version`); these functions shape the order's content for that
version, and `response_errors` reads the top-level error and the partitions that failed otherwise.

Rules (protocol.md "APIs the controller sends to brokers", Kafka 3.9 schemas):
- Every request carries the order's controller id and controller epoch, and the destination's
  broker epoch where the version has the field (LeaderAndIsr v2+, StopReplica v1+).
- LeaderAndIsr: v0-1 list partition states ungrouped, each naming its topic; v2+ group them by
  topic (in order of first appearance; partitions keep the order's order); v5+ add the topic id
  and the request type (2 = full when `order.full`, else 1 = incremental); v6+ the leader
  recovery state; v7 says the controller is a KRaft controller (fencer's broker epochs are
  metadata log offsets, as in KRaft). `is_new` from v1.
- StopReplica: v0-2 have one delete flag for the whole request, so an order mixing deletions and
  plain stops becomes one request per flag (in order of first appearance); v0 lists
  (topic, partition) pairs, v1-2 partition indexes per topic. v3+ carry each partition's leader
  epoch and delete flag, so one request suffices. v4 says the controller is a KRaft controller.
- A message holds only the fields its version has, so decoding its encoding gives it back.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TypeVar

from protocol.api_keys import ApiKey
from protocol.error_codes import ErrorCode
from protocol.messages.leader_and_isr import (
    LeaderAndIsrRequest,
    LeaderAndIsrRequestLiveLeader,
    LeaderAndIsrRequestPartitionState,
    LeaderAndIsrRequestTopicState,
    LeaderAndIsrResponse,
)
from protocol.messages.stop_replica import (
    StopReplicaRequest,
    StopReplicaRequestPartitionState,
    StopReplicaRequestPartitionV0,
    StopReplicaRequestTopicState,
    StopReplicaRequestTopicV1,
    StopReplicaResponse,
)
from protocol.registry import api
from protocol.spec import ZERO_UUID, Data, builder
from protocol.versions import Versions

from .orders import ControlOrder, PartitionState, StopPartition

#: LeaderAndIsr request types (v5+), as Kafka's `LeaderAndIsrRequest.Type` numbers them.
TYPE_UNKNOWN = 0
TYPE_INCREMENTAL = 1
TYPE_FULL = 2

T = TypeVar("T")
K = TypeVar("K")


def leader_and_isr_request(
    order: ControlOrder, version: int, live_leaders: Mapping[int, tuple[str, int]] | None = None
) -> LeaderAndIsrRequest:
    """The LeaderAndIsr request for `order` at `version` (0-7).

    `live_leaders` maps broker id -> (host, port) for the leaders the request names; leaders
    missing from it (or -1) are not listed.
    """
    _check_version(ApiKey.LEADER_AND_ISR, version)
    leaders = _live_leaders(order.partitions, live_leaders or {})
    if version < 2:
        return LeaderAndIsrRequest(
            controller_id=order.controller_id,
            controller_epoch=order.controller_epoch,
            ungrouped_partition_states=tuple(_partition_state(order, state, version) for state in order.partitions),
            live_leaders=leaders,
        )
    # grouped by name and the id's int (a UUID hashes in Python, an int in C: this runs per partition)
    groups = _group(order.partitions, lambda s: (s.topic_name, s.topic_id.int))
    topic_states = tuple(
        LeaderAndIsrRequestTopicState(
            topic_name=name,
            topic_id=states[0].topic_id if version >= 5 else ZERO_UUID,
            partition_states=tuple(_partition_state(order, state, version) for state in states),
        )
        for (name, _), states in groups.items()
    )
    return LeaderAndIsrRequest(
        controller_id=order.controller_id,
        is_k_raft_controller=version >= 7,
        controller_epoch=order.controller_epoch,
        broker_epoch=order.broker_epoch,
        type_=(TYPE_FULL if order.full else TYPE_INCREMENTAL) if version >= 5 else TYPE_UNKNOWN,
        topic_states=topic_states,
        live_leaders=leaders,
    )


def _partition_state(order: ControlOrder, state: PartitionState, version: int) -> LeaderAndIsrRequestPartitionState:
    return _new_partition_state(
        state.topic_name if version < 2 else "",
        state.partition,
        order.controller_epoch,
        state.leader,
        state.leader_epoch,
        state.isr,
        state.partition_epoch,
        state.replicas,
        state.is_new if version >= 1 else False,
        state.leader_recovery_state if version >= 6 else 0,
    )


#: `_partition_state`'s constructor (one per partition of every LeaderAndIsr: positional, fast)
_new_partition_state = builder(
    LeaderAndIsrRequestPartitionState,
    "topic_name",
    "partition_index",
    "controller_epoch",
    "leader",
    "leader_epoch",
    "isr",
    "partition_epoch",
    "replicas",
    "is_new",
    "leader_recovery_state",
)


def _live_leaders(
    states: Sequence[PartitionState], addresses: Mapping[int, tuple[str, int]]
) -> tuple[LeaderAndIsrRequestLiveLeader, ...]:
    leaders = sorted({state.leader for state in states if state.leader >= 0 and state.leader in addresses})
    return tuple(
        LeaderAndIsrRequestLiveLeader(broker_id=leader, host_name=addresses[leader][0], port=addresses[leader][1])
        for leader in leaders
    )


def stop_replica_requests(order: ControlOrder, version: int) -> list[StopReplicaRequest]:
    """The StopReplica request(s) for `order` at `version` (0-4): one, or one per delete flag for v0-2."""
    _check_version(ApiKey.STOP_REPLICA, version)
    if not order.stops:
        return []
    broker_epoch = order.broker_epoch if version >= 1 else -1
    if version >= 3:
        topic_states = tuple(
            StopReplicaRequestTopicState(
                topic_name=name,
                partition_states=tuple(
                    StopReplicaRequestPartitionState(
                        partition_index=stop.partition, leader_epoch=stop.leader_epoch, delete_partition=stop.delete
                    )
                    for stop in stops
                ),
            )
            for name, stops in _group(order.stops, lambda s: s.topic_name).items()
        )
        request = StopReplicaRequest(
            controller_id=order.controller_id,
            is_k_raft_controller=version >= 4,
            controller_epoch=order.controller_epoch,
            broker_epoch=broker_epoch,
            topic_states=topic_states,
        )
        return [request]
    return [
        _stop_replica_legacy(order, version, broker_epoch, delete, stops)
        for delete, stops in _group(order.stops, lambda s: s.delete).items()
    ]


def _stop_replica_legacy(
    order: ControlOrder, version: int, broker_epoch: int, delete: bool, stops: list[StopPartition]
) -> StopReplicaRequest:
    ungrouped: tuple[StopReplicaRequestPartitionV0, ...] = ()
    topics: tuple[StopReplicaRequestTopicV1, ...] = ()
    if version == 0:
        ungrouped = tuple(
            StopReplicaRequestPartitionV0(topic_name=stop.topic_name, partition_index=stop.partition) for stop in stops
        )
    else:
        topics = tuple(
            StopReplicaRequestTopicV1(name=name, partition_indexes=tuple(stop.partition for stop in grouped))
            for name, grouped in _group(stops, lambda s: s.topic_name).items()
        )
    return StopReplicaRequest(
        controller_id=order.controller_id,
        controller_epoch=order.controller_epoch,
        broker_epoch=broker_epoch,
        delete_partitions=delete,
        ungrouped_partitions=ungrouped,
        topics=topics,
    )


def _group(items: Iterable[T], key: Callable[[T], K]) -> dict[K, list[T]]:
    """Items grouped by key, groups in order of first appearance, items in their order."""
    groups: dict[K, list[T]] = {}
    for item in items:
        groups.setdefault(key(item), []).append(item)
    return groups


def _check_version(api_key: int, version: int) -> None:
    info = api(api_key)
    if version not in info.versions:
        raise ValueError(f"{info.name} has no version {version} (valid: {info.versions})")


def common_version(ours: Versions, theirs: Versions | None) -> int | None:
    """The highest version in both ranges, or None (`theirs` None: the peer does not list the API)."""
    if theirs is None:
        return None
    highest = min(ours.highest, theirs.highest)
    return highest if highest >= max(ours.lowest, theirs.lowest) else None


def response_errors(order: ControlOrder, response: Data) -> tuple[int, list[tuple[str, int, int]]]:
    """(top-level error, [(topic, partition, error)]) of a LeaderAndIsr or StopReplica response: the
    partitions that failed with an error of their own (neither NONE nor the top-level one). A broker
    answers every partition of a request, most of them NONE: only the failed ones are named (a
    topic id looked up in the order), so a large answer costs a pass over its error codes."""
    if isinstance(response, LeaderAndIsrResponse):
        top = response.error_code
        failed = [
            (p.topic_name, p.partition_index, p.error_code)
            for p in response.partition_errors
            if p.error_code != ErrorCode.NONE and p.error_code != top
        ]
        by_id = [
            (topic.topic_id, p.partition_index, p.error_code)
            for topic in response.topics
            for p in topic.partition_errors
            if p.error_code != ErrorCode.NONE and p.error_code != top
        ]
        if by_id:
            names = {state.topic_id: state.topic_name for state in order.partitions}
            failed += [(names.get(topic_id, str(topic_id)), index, code) for topic_id, index, code in by_id]
        return top, failed
    if isinstance(response, StopReplicaResponse):
        top = response.error_code
        failed = [
            (p.topic_name, p.partition_index, p.error_code)
            for p in response.partition_errors
            if p.error_code != ErrorCode.NONE and p.error_code != top
        ]
        return top, failed
    return ErrorCode.NONE, []
