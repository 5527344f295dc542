"""AlterPartition (v0 = AlterIsr): a partition leader asks to change its ISR.

Rules (docs/semantics.md): top-level checks (empty request, broker epoch), then per partition
rows a-h in order, first failure wins, and a failed partition carries only its index and error;
a change bumps the partition epoch and keeps the leader epoch; a no-op writes nothing and
answers the current state. A partition named twice in one request is answered
INVALID_REQUEST the second time (its change would otherwise be computed twice from one state).
The partitions are decided in order, in bounded batches (`ops.batches`), each on the state the
previous batches left.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable

from protocol.error_codes import ErrorCode
from protocol.messages.alter_partition import (
    AlterPartitionRequest,
    AlterPartitionRequestPartitionData,
    AlterPartitionRequestTopicData,
    AlterPartitionResponse,
    AlterPartitionResponsePartitionData,
    AlterPartitionResponseTopicData,
)
from protocol.records.metadata import PartitionChangeRecord
from protocol.spec import ZERO_UUID

from ..state.controller_state import ControllerState, Outcome, Result
from ..state.model import RECOVERED, RECOVERING, PartitionRegistration, TopicPartition
from ..state.replication import Topic
from .batches import fits_one_step, piece_by_piece
from .changes import change_record, eligible, records_of


def find_topic(state: ControllerState, name: str, topic_id: uuid.UUID, by_id: bool) -> Topic | None:
    if by_id:
        return None if topic_id == ZERO_UUID else state.replication.topics.get(topic_id)
    return state.replication.topic_by_name(name)


# ---------------------------------------------------------------------- AlterPartition
def alter_partition(state: ControllerState, request: AlterPartitionRequest, version: int) -> Outcome:
    if not request.topics:
        return Result(AlterPartitionResponse())
    if not state.cluster.epoch_matches(request.broker_id, request.broker_epoch):
        return Result(AlterPartitionResponse(error_code=ErrorCode.STALE_BROKER_EPOCH))
    if fits_one_step(state, request.topics):  # the common case: one plain pass, one batch
        _, answers, changes = _alter_piece(state, request.broker_id, version, enumerate(request.topics), set())
        return Result(AlterPartitionResponse(topics=tuple(answers)), records_of(changes))

    def decide(piece: Piece, seen: set[TopicPartition]) -> tuple[list[int], list[TopicAnswer], Changes]:
        return _alter_piece(state, request.broker_id, version, piece, seen)

    respond = lambda topics: AlterPartitionResponse(topics=topics)  # noqa: E731
    return piece_by_piece(
        state, request.topics, decide, respond, name=f"AlterPartition from broker {request.broker_id}"
    )


Changes = list[PartitionChangeRecord]
TopicAnswer = AlterPartitionResponseTopicData
Piece = Iterable[tuple[int, AlterPartitionRequestTopicData]]


def _alter_piece(
    state: ControllerState, requester: int, version: int, piece: Piece, seen: set[TopicPartition]
) -> tuple[list[int], list[TopicAnswer], Changes]:
    """Decide a piece of the request (`ops.batches.piece_by_piece`: topics, each with some of its
    partitions, and their positions in the request), each partition in order; (the topics'
    positions, their answers, the changes)."""
    changes: Changes = []
    positions: list[int] = []
    answers: list[TopicAnswer] = []
    by_id = version >= 2
    for position, topic_request in piece:
        topic = find_topic(state, topic_request.topic_name, topic_request.topic_id, by_id)
        results = []
        for part_request in topic_request.partitions:
            if topic is None:
                code = ErrorCode.UNKNOWN_TOPIC_ID if by_id else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                results.append(
                    AlterPartitionResponsePartitionData(partition_index=part_request.partition_index, error_code=code)
                )
                continue
            tp = TopicPartition(topic.topic_id, part_request.partition_index)
            result, change = _alter_one(state, requester, tp, part_request, version, tp in seen)
            seen.add(tp)
            results.append(result)
            if change is not None:
                changes.append(change)
        positions.append(position)
        answers.append(
            AlterPartitionResponseTopicData(
                topic_name=topic_request.topic_name, topic_id=topic_request.topic_id, partitions=tuple(results)
            )
        )
    return positions, answers, changes


def _new_isr(part_request: AlterPartitionRequestPartitionData, version: int) -> list[tuple[int, int]]:
    if version >= 3:
        return [(state.broker_id, state.broker_epoch) for state in part_request.new_isr_with_epochs]
    return [(broker_id, -1) for broker_id in part_request.new_isr]


def _check_partition(
    state: ControllerState,
    requester: int,
    part: PartitionRegistration,
    part_request: AlterPartitionRequestPartitionData,
    version: int,
) -> ErrorCode:
    """Rows b-h of the AlterPartition table, in order."""
    if part_request.leader_epoch > part.leader_epoch or part_request.partition_epoch > part.partition_epoch:
        return ErrorCode.NOT_CONTROLLER
    if part_request.leader_epoch < part.leader_epoch:
        return ErrorCode.FENCED_LEADER_EPOCH
    if requester != part.leader:
        return ErrorCode.INVALID_REQUEST
    if part_request.partition_epoch < part.partition_epoch:
        return ErrorCode.INVALID_UPDATE_VERSION
    members = _new_isr(part_request, version)
    ids = [broker_id for broker_id, _ in members]
    replicas = part.replicas
    if len(set(ids)) != len(ids) or part.leader not in ids:
        return ErrorCode.INVALID_REQUEST
    for broker_id in ids:
        if broker_id < 0 or broker_id not in replicas:
            return ErrorCode.INVALID_REQUEST
    recovery = part_request.leader_recovery_state
    if recovery not in (RECOVERED, RECOVERING):
        return ErrorCode.INVALID_REQUEST
    if (recovery == RECOVERING and len(ids) > 1) or (
        part.leader_recovery_state == RECOVERED and recovery == RECOVERING
    ):
        return ErrorCode.INVALID_REQUEST
    for broker_id, broker_epoch in members:
        # v3 names each member's broker epoch (KIP-903): another incarnation's is ineligible too
        if not eligible(state, part, broker_id) or (
            broker_epoch != -1 and not state.cluster.epoch_matches(broker_id, broker_epoch)
        ):
            return ErrorCode.INELIGIBLE_REPLICA if version >= 2 else ErrorCode.OPERATION_NOT_ATTEMPTED
    return ErrorCode.NONE


def _alter_one(
    state: ControllerState,
    requester: int,
    tp: TopicPartition,
    part_request: AlterPartitionRequestPartitionData,
    version: int,
    duplicate: bool,
) -> tuple[AlterPartitionResponsePartitionData, PartitionChangeRecord | None]:
    def failed(code: ErrorCode) -> tuple[AlterPartitionResponsePartitionData, None]:
        return AlterPartitionResponsePartitionData(partition_index=tp.partition, error_code=code), None

    part = state.replication.partition(tp)
    if part is None:
        return failed(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
    if duplicate:
        return failed(ErrorCode.INVALID_REQUEST)
    code = _check_partition(state, requester, part, part_request, version)
    if code != ErrorCode.NONE:
        return failed(code)
    isr = tuple(broker_id for broker_id, _ in _new_isr(part_request, version))
    change = change_record(tp, part, isr=isr, leader_recovery_state=part_request.leader_recovery_state)
    after = part if change is None else part.merge(change)  # the leader stays: no leader was asked for
    response = AlterPartitionResponsePartitionData(
        partition_index=tp.partition,
        leader_id=after.leader,
        leader_epoch=after.leader_epoch,
        isr=after.isr,
        leader_recovery_state=after.leader_recovery_state,
        partition_epoch=after.partition_epoch,
    )
    return response, change
