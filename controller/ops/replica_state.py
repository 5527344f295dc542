"""AlterReplicaState (fencer's KIP-589): a broker reports replicas OFFLINE (failed log dir) or ONLINE.

Rules (docs/semantics.md): NewState other than 1/2 is UNKNOWN_REPLICA_STATE; the broker epoch
must match exactly; per partition, an unknown topic/partition or one the broker holds no
replica of is UNKNOWN_TOPIC_OR_PARTITION (v1: UNKNOWN_TOPIC_ID for an unknown topic id).
Already in the requested state: NONE, nothing written. OFFLINE records the replica's directory
as LOST and takes it out of the ISR and leadership in the same record. ONLINE records it
unassigned again (the leader may add it back with AlterPartition); a leaderless partition whose
ISR holds it, on an active broker, elects it at once. The partitions are decided in order, in
bounded batches (`ops.batches`).
"""

from __future__ import annotations

from collections.abc import Iterable

from protocol.error_codes import ErrorCode
from protocol.messages.alter_replica_state import (
    OFFLINE,
    ONLINE,
    AlterReplicaStateRequest,
    AlterReplicaStateRequestTopicReplicas,
    AlterReplicaStateResponse,
    AlterReplicaStateResponsePartitionResult,
    AlterReplicaStateResponseTopicResult,
)
from protocol.records.metadata import PartitionChangeRecord

from ..state.controller_state import ControllerState, Outcome, Result
from ..state.model import TopicPartition
from .alter_partition import find_topic
from .batches import fits_one_step, piece_by_piece
from .changes import bring_online, others_eligible, records_of, removal


def alter_replica_state(state: ControllerState, request: AlterReplicaStateRequest, version: int) -> Outcome:
    if request.new_state not in (OFFLINE, ONLINE):
        return Result(AlterReplicaStateResponse(error_code=ErrorCode.UNKNOWN_REPLICA_STATE))
    if not state.cluster.epoch_matches(request.broker_id, request.broker_epoch):
        return Result(AlterReplicaStateResponse(error_code=ErrorCode.STALE_BROKER_EPOCH))
    if fits_one_step(state, request.topics):
        _, answers, changes = _alter_piece(state, request, version, enumerate(request.topics), set())
        return Result(AlterReplicaStateResponse(topics=tuple(answers)), records_of(changes))

    def decide(
        piece: list[tuple[int, AlterReplicaStateRequestTopicReplicas]], seen: set[TopicPartition]
    ) -> tuple[list[int], list[AlterReplicaStateResponseTopicResult], list[PartitionChangeRecord]]:
        return _alter_piece(state, request, version, piece, seen)

    respond = lambda topics: AlterReplicaStateResponse(topics=topics)  # noqa: E731
    name = f"AlterReplicaState from broker {request.broker_id}"
    return piece_by_piece(state, request.topics, decide, respond, name=name)


def _alter_piece(
    state: ControllerState,
    request: AlterReplicaStateRequest,
    version: int,
    piece: Iterable[tuple[int, AlterReplicaStateRequestTopicReplicas]],
    seen: set[TopicPartition],
) -> tuple[list[int], list[AlterReplicaStateResponseTopicResult], list[PartitionChangeRecord]]:
    """Decide a piece of the request (`ops.batches.piece_by_piece`), each partition in order;
    (the topics' positions in the request, their answers, the changes)."""
    changes = []
    positions: list[int] = []
    answers: list[AlterReplicaStateResponseTopicResult] = []
    for position, topic_request in piece:
        topic = find_topic(state, topic_request.name, topic_request.topic_id, by_id=version >= 1)
        results = []
        for index in topic_request.partitions:
            if topic is None:
                code = ErrorCode.UNKNOWN_TOPIC_ID if version >= 1 else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            else:
                tp = TopicPartition(topic.topic_id, index)
                code, change = _one(state, tp, request.broker_id, request.new_state, tp in seen)
                seen.add(tp)
                if change is not None:
                    changes.append(change)
            results.append(AlterReplicaStateResponsePartitionResult(partition_index=index, error_code=code))
        positions.append(position)
        answers.append(
            AlterReplicaStateResponseTopicResult(
                name=topic_request.name, topic_id=topic_request.topic_id, partitions=tuple(results)
            )
        )
    return positions, answers, changes


def _one(
    state: ControllerState, tp: TopicPartition, broker_id: int, new_state: int, duplicate: bool
) -> tuple[ErrorCode, PartitionChangeRecord | None]:
    part = state.replication.partition(tp)
    if part is None or broker_id not in part.replicas:
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, None
    if duplicate:
        return ErrorCode.INVALID_REQUEST, None
    offline = part.is_offline(broker_id)
    if new_state == OFFLINE:
        if offline:
            return ErrorCode.NONE, None
        return ErrorCode.NONE, removal(tp, part, broker_id, others_eligible(state, part, broker_id), offline=True)
    if not offline:
        return ErrorCode.NONE, None
    return ErrorCode.NONE, bring_online(state, tp, part, broker_id, may_lead=True)
