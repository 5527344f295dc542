"""ElectLeaders: preferred and unclean leader elections (an admin's request).

Rules (docs/semantics.md): PREFERRED: replicas[0] already leads -> ELECTION_NOT_NEEDED;
replicas[0] in the ISR and eligible -> it leads (leader epoch + 1); otherwise
PREFERRED_LEADER_NOT_AVAILABLE, never an unclean election. UNCLEAN: only for leaderless
partitions (ELECTION_NOT_NEEDED otherwise); the first eligible replica in assignment order,
even outside the ISR, leads with ISR = [leader] and recovery state RECOVERING; none ->
ELIGIBLE_LEADERS_NOT_AVAILABLE. Unknown topic or partition -> UNKNOWN_TOPIC_OR_PARTITION.
Without a partition list (null), every partition is tried and ELECTION_NOT_NEEDED results are
left out, as Kafka does.

Bound (Kafka's MAX_RECORDS_PER_USER_OP, `config.max_records_per_operation`): a request naming more
partitions than it, or a null list over a cluster with more partitions than it, is refused
before any partition is evaluated, since evaluating them is the cost and each could be a record:
POLICY_VIOLATION, as Kafka answers its overflow, in Kafka's error response (the top-level code
from v1, every requested partition; v0 has no top-level code, so a null list is answered with
every partition of the cluster). Nothing is written.
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
from .changes import change_record, eligible, records_of
from .topics import TOO_MANY_RECORDS


def elect_leaders(state: ControllerState, request: ElectLeadersRequest, version: int) -> Result:
    if _named_partitions(state, request) > state.config.max_records_per_operation:
        return Result(_refused(state, request, version))
    election = request.election_type if version >= 1 else PREFERRED
    everything = request.topic_partitions is None
    wanted = _requested(state, request)
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


def _requested(state: ControllerState, request: ElectLeadersRequest) -> list[tuple[str, list[int]]]:
    """(topic name, partition indexes) the request names; a null list names every partition, in order."""
    if request.topic_partitions is None:
        return [
            (topic.name, sorted(topic.partitions))
            for topic in sorted(state.replication.topics.values(), key=lambda t: t.name)
        ]
    return [(entry.topic, list(entry.partitions)) for entry in request.topic_partitions]


def _named_partitions(state: ControllerState, request: ElectLeadersRequest) -> int:
    """How many partitions the request would evaluate, counted per topic, not per partition."""
    if request.topic_partitions is None:
        return sum(len(topic.partitions) for topic in state.replication.topics.values())
    return sum(len(entry.partitions) for entry in request.topic_partitions)


def _refused(state: ControllerState, request: ElectLeadersRequest, version: int) -> ElectLeadersResponse:
    """Kafka's error response (ElectLeadersRequest.getErrorResponse) for POLICY_VIOLATION."""
    # v1+ reports the error at the top level; v0 can only report it per partition
    wanted = _requested(state, request) if request.topic_partitions is not None or version == 0 else []
    results = tuple(
        ElectLeadersResponseReplicaElectionResult(
            topic=name,
            partition_result=tuple(
                ElectLeadersResponsePartitionResult(
                    partition_id=index, error_code=ErrorCode.POLICY_VIOLATION, error_message=TOO_MANY_RECORDS
                )
                for index in indexes
            ),
        )
        for name, indexes in wanted
    )
    top_level = ErrorCode.POLICY_VIOLATION if version >= 1 else ErrorCode.NONE
    return ElectLeadersResponse(error_code=top_level, replica_election_results=results)


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
        if preferred in part.isr and eligible(state, part, preferred):
            return ErrorCode.NONE, change_record(tp, part, leader=preferred)
        return ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE, None
    if election == UNCLEAN:
        if part.has_leader:
            return ErrorCode.ELECTION_NOT_NEEDED, None
        leader = next((r for r in part.replicas if eligible(state, part, r)), None)
        if leader is None:
            return ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE, None
        return ErrorCode.NONE, change_record(tp, part, leader=leader, isr=(leader,), leader_recovery_state=RECOVERING)
    return ErrorCode.INVALID_REQUEST, None
