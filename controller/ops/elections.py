"""ElectLeaders: preferred and unclean leader elections (an admin's request).

Rules (docs/semantics.md): PREFERRED: replicas[0] already leads -> ELECTION_NOT_NEEDED;
replicas[0] in the ISR and eligible -> it leads (leader epoch + 1); otherwise
PREFERRED_LEADER_NOT_AVAILABLE, never an unclean election. UNCLEAN: only for leaderless
partitions (ELECTION_NOT_NEEDED otherwise); the first eligible replica in assignment order,
even outside the ISR, leads with ISR = [leader] and recovery state RECOVERING; none ->
ELIGIBLE_LEADERS_NOT_AVAILABLE. Unknown topic or partition -> UNKNOWN_TOPIC_OR_PARTITION.
Without a partition list (null), every partition is tried and ELECTION_NOT_NEEDED results are
left out, as Kafka does.
"""

from __future__ import annotations

from protocol.error_codes import ErrorCode
from protocol.messages.elect_leaders import (
    PREFERRED,
    UNCLEAN,
    ElectLeadersRequest,
    ElectLeadersResponse,
    ElectLeadersResponsePartitionResult,
    ElectLeadersResponseReplicaElectionResult,
)
from protocol.records.metadata import PartitionChangeRecord

from ..state.controller_state import ControllerState, Result
from ..state.model import RECOVERING, TopicPartition
from ..state.replication import change_record
from .alter_partition import records_of


def elect_leaders(state: ControllerState, request: ElectLeadersRequest, version: int) -> Result:
    election = request.election_type if version >= 1 else PREFERRED
    everything = request.topic_partitions is None
    if everything:
        wanted: list[tuple[str, list[int]]] = [
            (topic.name, sorted(topic.partitions))
            for topic in sorted(state.replication.topics.values(), key=lambda t: t.name)
        ]
    else:
        wanted = [(entry.topic, list(entry.partitions)) for entry in request.topic_partitions or ()]
    changes: list[PartitionChangeRecord] = []
    seen: set[tuple[str, int]] = set()
    results = []
    for name, indexes in wanted:
        partition_results = []
        for index in indexes:
            duplicate = (name, index) in seen
            seen.add((name, index))
            code, change = (ErrorCode.INVALID_REQUEST, None) if duplicate else _elect(state, name, index, election)
            if change is not None:
                changes.append(change)
            if everything and code == ErrorCode.ELECTION_NOT_NEEDED:
                continue
            message = None if code == ErrorCode.NONE else code.name
            partition_results.append(
                ElectLeadersResponsePartitionResult(partition_id=index, error_code=code, error_message=message)
            )
        if partition_results or not everything:
            results.append(
                ElectLeadersResponseReplicaElectionResult(topic=name, partition_result=tuple(partition_results))
            )
    return Result(ElectLeadersResponse(replica_election_results=tuple(results)), records_of(changes))


def _elect(
    state: ControllerState, name: str, index: int, election: int
) -> tuple[ErrorCode, PartitionChangeRecord | None]:
    topic = state.replication.topic_by_name(name)
    part = None if topic is None else topic.partitions.get(index)
    if topic is None or part is None:
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, None
    tp = TopicPartition(topic.topic_id, index)
    if election == PREFERRED:
        preferred = part.replicas[0]
        if part.leader == preferred:
            return ErrorCode.ELECTION_NOT_NEEDED, None
        if preferred in part.isr and state.eligible(part, preferred):
            return ErrorCode.NONE, change_record(tp, part, leader=preferred)
        return ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE, None
    if election == UNCLEAN:
        if part.has_leader:
            return ErrorCode.ELECTION_NOT_NEEDED, None
        leader = next((r for r in part.replicas if state.eligible(part, r)), None)
        if leader is None:
            return ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE, None
        return ErrorCode.NONE, change_record(tp, part, leader=leader, isr=(leader,), leader_recovery_state=RECOVERING)
    return ErrorCode.INVALID_REQUEST, None
