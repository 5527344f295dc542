"""CreateTopics and DeleteTopics, with Kafka's striped, rack-aware replica placement.

Rules (docs/semantics.md): a taken name is TOPIC_ALREADY_EXISTS; too few active brokers for the
replication factor is INVALID_REPLICATION_FACTOR; a manual assignment naming an unregistered
broker, a duplicate, an empty list, or no active broker is INVALID_REPLICA_ASSIGNMENT. A new
partition's ISR is its active replicas, its leader the first active replica, leader and
partition epochs 0. Placement uses only active brokers and spreads replicas and leaders evenly.
Deletion writes RemoveTopicRecord. Topic ids come from the caller's seeded random source.
"""

from __future__ import annotations

import random
import re
import uuid

from protocol.error_codes import ErrorCode
from protocol.messages.create_topics import (
    CreateTopicsRequest,
    CreateTopicsRequestCreatableTopic,
    CreateTopicsResponse,
    CreateTopicsResponseCreatableTopicResult,
)
from protocol.messages.delete_topics import (
    DeleteTopicsRequest,
    DeleteTopicsResponse,
    DeleteTopicsResponseDeletableTopicResult,
)
from protocol.records.metadata import (
    LOST_DIRECTORY,
    UNASSIGNED_DIRECTORY,
    PartitionRecord,
    RemoveTopicRecord,
    TopicRecord,
)
from protocol.spec import ZERO_UUID

from ..state.controller_state import ControllerState, RecordAndVersion, Result
from .placement import place_replicas

_LEGAL_NAME = re.compile(r"[a-zA-Z0-9._-]+")
MAX_NAME_LENGTH = 249


class _Rejected(Exception):
    def __init__(self, code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def new_topic_id(rng: random.Random) -> uuid.UUID:
    while True:
        topic_id = uuid.UUID(int=rng.getrandbits(128), version=4)
        if topic_id not in (ZERO_UUID, LOST_DIRECTORY):
            return topic_id


def create_topics(state: ControllerState, request: CreateTopicsRequest, version: int, rng: random.Random) -> Result:
    records: list[RecordAndVersion] = []
    results = []
    names = [topic.name for topic in request.topics]
    for topic in request.topics:
        try:
            if names.count(topic.name) > 1:
                raise _Rejected(ErrorCode.INVALID_REQUEST, f"Topic '{topic.name}' is named more than once.")
            assignments = _assignments(state, topic, rng)
        except _Rejected as rejected:
            results.append(
                CreateTopicsResponseCreatableTopicResult(
                    name=topic.name, error_code=rejected.code, error_message=rejected.message
                )
            )
            continue
        topic_id = new_topic_id(rng)
        if not request.validate_only:
            records.append((TopicRecord(name=topic.name, topic_id=topic_id), 0))
            records.extend((_partition_record(state, topic_id, index, replicas), 1) for index, replicas in assignments)
        results.append(
            CreateTopicsResponseCreatableTopicResult(
                name=topic.name,
                topic_id=topic_id,
                error_message=None,
                num_partitions=len(assignments),
                replication_factor=len(assignments[0][1]),
            )
        )
    return Result(CreateTopicsResponse(topics=tuple(results)), tuple(records))


def _assignments(
    state: ControllerState, topic: CreateTopicsRequestCreatableTopic, rng: random.Random
) -> list[tuple[int, tuple[int, ...]]]:
    if not _LEGAL_NAME.fullmatch(topic.name) or len(topic.name) > MAX_NAME_LENGTH or topic.name in (".", ".."):
        raise _Rejected(ErrorCode.INVALID_TOPIC_EXCEPTION, f"Topic name '{topic.name}' is illegal.")
    if state.replication.topic_by_name(topic.name) is not None:
        raise _Rejected(ErrorCode.TOPIC_ALREADY_EXISTS, f"Topic '{topic.name}' already exists.")
    if topic.assignments:
        return _manual(state, topic)
    partitions = state.config.default_partitions if topic.num_partitions == -1 else topic.num_partitions
    factor = state.config.default_replication_factor if topic.replication_factor == -1 else topic.replication_factor
    if partitions <= 0:
        raise _Rejected(ErrorCode.INVALID_PARTITIONS, "Number of partitions was set to an invalid non-positive value.")
    if factor <= 0:
        raise _Rejected(ErrorCode.INVALID_REPLICATION_FACTOR, "Replication factor must be larger than 0.")
    active = [state.cluster.brokers[b] for b in state.cluster.active_ids()]
    if len(active) < factor:
        raise _Rejected(ErrorCode.INVALID_REPLICATION_FACTOR, _not_enough(state, factor, len(active)))
    placed = place_replicas([(b.broker_id, b.rack) for b in active], partitions, factor, rng)
    return list(enumerate(placed))


def _not_enough(state: ControllerState, factor: int, active: int) -> str:
    prefix = f"Unable to replicate the partition {factor} time(s): "
    if active == 0:
        anyone_shutting_down = any(b.in_controlled_shutdown for b in state.cluster.brokers.values())
        return prefix + (
            "All brokers are currently fenced or in controlled shutdown."
            if anyone_shutting_down
            else "All brokers are currently fenced."
        )
    return (
        prefix
        + f"The target replication factor of {factor} cannot be reached because only {active} broker(s) are active."
    )


def _manual(state: ControllerState, topic: CreateTopicsRequestCreatableTopic) -> list[tuple[int, tuple[int, ...]]]:
    if topic.num_partitions != -1 or topic.replication_factor != -1:
        raise _Rejected(
            ErrorCode.INVALID_REQUEST,
            "Both numPartitions or replicationFactor and replicasAssignments were set. "
            "Both cannot be used at the same time.",
        )
    assignments = sorted((a.partition_index, tuple(a.broker_ids)) for a in topic.assignments)
    if [index for index, _ in assignments] != list(range(len(assignments))):
        raise _Rejected(ErrorCode.INVALID_REPLICA_ASSIGNMENT, "Partitions must be numbered 0 to N-1, each once.")
    for index, replicas in assignments:
        if not replicas:
            raise _Rejected(ErrorCode.INVALID_REPLICA_ASSIGNMENT, f"Partition {index} has an empty replica list.")
        if len(set(replicas)) != len(replicas):
            raise _Rejected(ErrorCode.INVALID_REPLICA_ASSIGNMENT, f"Partition {index} lists a broker twice.")
        unknown = [b for b in replicas if state.cluster.get(b) is None]
        if unknown:
            raise _Rejected(
                ErrorCode.INVALID_REPLICA_ASSIGNMENT, f"Partition {index} names unregistered broker(s) {unknown}."
            )
        if not any(state.cluster.is_active(b) for b in replicas):
            raise _Rejected(
                ErrorCode.INVALID_REPLICA_ASSIGNMENT, f"All brokers of partition {index} are fenced or shutting down."
            )
    return assignments


def _partition_record(
    state: ControllerState, topic_id: uuid.UUID, index: int, replicas: tuple[int, ...]
) -> PartitionRecord:
    isr = tuple(b for b in replicas if state.cluster.is_active(b))
    return PartitionRecord(
        partition_id=index,
        topic_id=topic_id,
        replicas=replicas,
        isr=isr,
        leader=isr[0],
        leader_epoch=0,
        partition_epoch=0,
        directories=tuple(UNASSIGNED_DIRECTORY for _ in replicas),
    )


def delete_topics(state: ControllerState, request: DeleteTopicsRequest, version: int) -> Result:
    if version >= 6:
        wanted = [(entry.name, entry.topic_id) for entry in request.topics]
    else:
        wanted = [(name, ZERO_UUID) for name in request.topic_names]
    records: list[RecordAndVersion] = []
    removed: set[uuid.UUID] = set()
    results = []
    for name, topic_id in wanted:
        by_id = topic_id != ZERO_UUID
        topic = state.replication.topics.get(topic_id) if by_id else state.replication.topic_by_name(name or "")
        if topic is None:
            code = ErrorCode.UNKNOWN_TOPIC_ID if by_id else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            results.append(
                DeleteTopicsResponseDeletableTopicResult(
                    name=name, topic_id=topic_id, error_code=code, error_message=code.name
                )
            )
            continue
        if topic.topic_id not in removed:
            removed.add(topic.topic_id)
            records.append((RemoveTopicRecord(topic_id=topic.topic_id), 0))
        results.append(DeleteTopicsResponseDeletableTopicResult(name=topic.name, topic_id=topic.topic_id))
    return Result(DeleteTopicsResponse(responses=tuple(results)), tuple(records))
