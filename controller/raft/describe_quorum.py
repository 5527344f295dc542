"""DescribeQuorum's answer (Kafka's `KafkaRaftClient.handleDescribeQuorumRequest`), from the Raft
node's state: a pure function of the node, the request, the voters' listeners and the two clocks.

Rules (Kafka 3.9):
- The request must name `__cluster_metadata` partition 0 alone; any other topic or partition is
  answered UNKNOWN_TOPIC_OR_PARTITION, per partition asked.
- A node that does not lead answers NOT_LEADER_OR_FOLLOWER (6).
- The leader lists every voter and every observer it tracks (`controller.raft.leader.Observers`:
  those that fetched within the last five minutes, at most `MAX_OBSERVERS`), each with its end
  offset and its last fetch and caught-up times from its progress, turned from the monotonic
  clock into the wall clock (-1 where unknown); itself with its log end and the time now.
  Version 2 adds each voter's CONTROLLER listener (`VoterListener`: the shell's voters, as
  configured; the core knows voters by id only).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from protocol.error_codes import ErrorCode
from protocol.messages import describe_quorum as dq
from protocol.records.metadata import METADATA_TOPIC
from protocol.spec import Data

from .leader import Leader, ReplicaProgress
from .wire import METADATA_PARTITION, narrow

if TYPE_CHECKING:
    from .node import RaftNode


class VoterListener(Protocol):
    """A voter's CONTROLLER listener (the shell's `Voter`)."""

    @property
    def node_id(self) -> int: ...
    @property
    def host(self) -> str: ...
    @property
    def port(self) -> int: ...


def describe_quorum(
    node: RaftNode, body: Data, version: int, voters: tuple[VoterListener, ...], now_ms: int, wall_ms: int
) -> dq.DescribeQuorumResponse:
    """The answer to DescribeQuorum `body` (as the codec decoded it) at `version`."""
    topics = narrow(body, dq.DescribeQuorumRequest).topics
    if (
        len(topics) != 1
        or topics[0].topic_name != METADATA_TOPIC
        or [p.partition_index for p in topics[0].partitions] != [METADATA_PARTITION]
    ):
        return dq.DescribeQuorumResponse(
            topics=tuple(
                dq.DescribeQuorumResponseTopicData(
                    topic_name=topic.topic_name,
                    partitions=tuple(
                        _error(p.partition_index, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION) for p in topic.partitions
                    ),
                )
                for topic in topics
            )
        )
    state = node.state
    if not isinstance(state, Leader):
        partition = _error(METADATA_PARTITION, ErrorCode.NOT_LEADER_OR_FOLLOWER)
        nodes: tuple[dq.DescribeQuorumResponseNode, ...] = ()
    else:
        partition = _leader_partition(node, state, now_ms, wall_ms)
        nodes = _listeners(voters) if version >= 2 else ()
    return dq.DescribeQuorumResponse(
        topics=(dq.DescribeQuorumResponseTopicData(topic_name=METADATA_TOPIC, partitions=(partition,)),),
        nodes=nodes,
    )


def _leader_partition(
    node: RaftNode, state: Leader, now_ms: int, wall_ms: int
) -> dq.DescribeQuorumResponsePartitionData:
    def wall(monotonic_ms: int | None) -> int:
        return -1 if monotonic_ms is None else wall_ms - (now_ms - monotonic_ms)

    def replica(node_id: int, progress: ReplicaProgress | None) -> dq.DescribeQuorumResponseReplicaState:
        if node_id == state.local_id:
            return dq.DescribeQuorumResponseReplicaState(
                replica_id=node_id,
                log_end_offset=node.log.end_offset,
                last_fetch_timestamp=wall_ms,
                last_caught_up_timestamp=wall_ms,
            )
        progress = progress or ReplicaProgress()
        return dq.DescribeQuorumResponseReplicaState(
            replica_id=node_id,
            log_end_offset=-1 if progress.end_offset is None else progress.end_offset,
            last_fetch_timestamp=wall(progress.last_fetch_ms),
            last_caught_up_timestamp=wall(progress.last_caught_up_ms),
        )

    observers = state.observers.active(now_ms)
    return dq.DescribeQuorumResponsePartitionData(
        partition_index=METADATA_PARTITION,
        leader_id=state.local_id,
        leader_epoch=state.epoch,
        high_watermark=-1 if state.high_watermark is None else state.high_watermark,
        current_voters=tuple(replica(voter, state.progress.get(voter)) for voter in sorted(state.voters)),
        observers=tuple(replica(observer, observers[observer]) for observer in sorted(observers)),
    )


def _listeners(voters: tuple[VoterListener, ...]) -> tuple[dq.DescribeQuorumResponseNode, ...]:
    return tuple(
        dq.DescribeQuorumResponseNode(
            node_id=voter.node_id,
            listeners=(dq.DescribeQuorumResponseListener(name="CONTROLLER", host=voter.host, port=voter.port),),
        )
        for voter in voters
    )


def _error(partition: int, error: ErrorCode) -> dq.DescribeQuorumResponsePartitionData:
    return dq.DescribeQuorumResponsePartitionData(
        partition_index=partition,
        error_code=error,
        error_message=None,
        leader_id=-1,
        leader_epoch=-1,
        high_watermark=-1,
        current_voters=(),
        observers=(),
    )
