"""The quorum's requests on the wire: Kafka's Vote, BeginQuorumEpoch, EndQuorumEpoch, Fetch and
FetchSnapshot requests (protocol/messages/) to the Raft core's messages, and back.

Rules (Kafka's `KafkaRaftClient` and `RaftUtil`):
- A request about anything but the one partition `__cluster_metadata-0` (`controller.raft.wire`),
  or about more or fewer than that one partition, is answered at once with INVALID_REQUEST at
  the top level, as Kafka does "until it supports multi-raft" (`WireRefusal`); the core never
  sees it. So is a Fetch below v13 or above 17 (`FETCH_VERSIONS`).
- Leader ids: the wire's -1 is the core's None. The replica id of a Fetch is the v15+
  `ReplicaState.ReplicaId` or, before, the top-level `ReplicaId`; the follower's high watermark
  is not on the wire before Fetch v18, so it reaches the core as -1.
- A request the core sends goes out at the version `send_version` picked: the voter id of a Vote
  or BeginQuorumEpoch from v1 (-1 before), EndQuorumEpoch's successors as v0's
  PreferredSuccessors or v1's PreferredCandidates, a Fetch's replica id where its version
  carries it. The shell's `max_bytes` caps a Fetch's answer (per partition and in all) and a
  FetchSnapshot's chunk.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import TypeVar

from protocol.api_keys import ApiKey
from protocol.error_codes import ErrorCode
from protocol.messages import begin_quorum_epoch as bqe
from protocol.messages import end_quorum_epoch as eqe
from protocol.messages import fetch as fe
from protocol.messages import fetch_snapshot as fs
from protocol.messages import vote as vo
from protocol.records.metadata import METADATA_TOPIC
from protocol.spec import Data

from . import messages as rm
from .ids import Epoch, NodeId, OffsetAndEpoch
from .wire import FETCH_VERSIONS, METADATA_PARTITION, METADATA_TOPIC_ID, narrow
from .wire_responses import RaftResponse, raft_top_level_error

RaftRequest = (
    vo.VoteRequest | bqe.BeginQuorumEpochRequest | eqe.EndQuorumEpochRequest | fe.FetchRequest | fs.FetchSnapshotRequest
)

T = TypeVar("T")


class WireRefusal(Exception):
    """A request the core must not see: answer `response` (a top-level error) at once."""

    def __init__(self, response: RaftResponse) -> None:
        super().__init__(type(response).__name__)
        self.response = response


def _the_one(items: tuple[T, ...], key: Callable[[T], object], expected: object, refusal: RaftResponse) -> T:
    """The one item of `items` (a request's topics, or a topic's partitions) if its `key` is
    `expected` (`__cluster_metadata`, partition 0), else `WireRefusal`."""
    if len(items) != 1 or key(items[0]) != expected:
        raise WireRefusal(refusal)
    return items[0]


# ---------------------------------------------------------------------- inbound requests
def request_from_wire(api_key: int, version: int, body: Data) -> rm.Request:
    """The core's view of a Raft request (`body` as the codec decoded it; `WireRefusal` when it
    is not about this partition)."""
    if api_key == ApiKey.VOTE:
        return _vote_from_wire(narrow(body, vo.VoteRequest))
    if api_key == ApiKey.BEGIN_QUORUM_EPOCH:
        return _begin_epoch_from_wire(narrow(body, bqe.BeginQuorumEpochRequest))
    if api_key == ApiKey.END_QUORUM_EPOCH:
        return _end_epoch_from_wire(version, narrow(body, eqe.EndQuorumEpochRequest))
    if api_key == ApiKey.FETCH:
        return _fetch_from_wire(version, narrow(body, fe.FetchRequest))
    if api_key == ApiKey.FETCH_SNAPSHOT:
        return _fetch_snapshot_from_wire(narrow(body, fs.FetchSnapshotRequest))
    raise ValueError(f"api key {api_key} is not a Raft RPC")


def _vote_from_wire(body: vo.VoteRequest) -> rm.VoteRequest:
    refusal = raft_top_level_error(ApiKey.VOTE, ErrorCode.INVALID_REQUEST)
    topic = _the_one(body.topics, lambda t: t.topic_name, METADATA_TOPIC, refusal)
    part = _the_one(topic.partitions, lambda p: p.partition_index, METADATA_PARTITION, refusal)
    return rm.VoteRequest(
        cluster_id=body.cluster_id,
        candidate_epoch=Epoch(part.candidate_epoch),
        candidate_id=NodeId(part.candidate_id),
        voter_id=NodeId(body.voter_id),
        last_offset_epoch=Epoch(part.last_offset_epoch),
        last_offset=part.last_offset,
        pre_vote=part.pre_vote,
    )


def _begin_epoch_from_wire(body: bqe.BeginQuorumEpochRequest) -> rm.BeginQuorumEpochRequest:
    refusal = raft_top_level_error(ApiKey.BEGIN_QUORUM_EPOCH, ErrorCode.INVALID_REQUEST)
    topic = _the_one(body.topics, lambda t: t.topic_name, METADATA_TOPIC, refusal)
    part = _the_one(topic.partitions, lambda p: p.partition_index, METADATA_PARTITION, refusal)
    return rm.BeginQuorumEpochRequest(
        cluster_id=body.cluster_id,
        leader_id=NodeId(part.leader_id),
        leader_epoch=Epoch(part.leader_epoch),
        voter_id=NodeId(body.voter_id),
    )


def _end_epoch_from_wire(version: int, body: eqe.EndQuorumEpochRequest) -> rm.EndQuorumEpochRequest:
    refusal = raft_top_level_error(ApiKey.END_QUORUM_EPOCH, ErrorCode.INVALID_REQUEST)
    topic = _the_one(body.topics, lambda t: t.topic_name, METADATA_TOPIC, refusal)
    part = _the_one(topic.partitions, lambda p: p.partition_index, METADATA_PARTITION, refusal)
    successors = (
        tuple(NodeId(c.candidate_id) for c in part.preferred_candidates)
        if version >= 1
        else tuple(NodeId(i) for i in part.preferred_successors)
    )
    return rm.EndQuorumEpochRequest(
        cluster_id=body.cluster_id,
        leader_id=NodeId(part.leader_id),
        leader_epoch=Epoch(part.leader_epoch),
        preferred_successors=successors,
    )


def _fetch_snapshot_from_wire(body: fs.FetchSnapshotRequest) -> rm.FetchSnapshotRequest:
    refusal = raft_top_level_error(ApiKey.FETCH_SNAPSHOT, ErrorCode.INVALID_REQUEST)
    topic = _the_one(body.topics, lambda t: t.name, METADATA_TOPIC, refusal)
    part = _the_one(topic.partitions, lambda p: p.partition, METADATA_PARTITION, refusal)
    return rm.FetchSnapshotRequest(
        cluster_id=body.cluster_id,
        replica_id=NodeId(body.replica_id),
        current_leader_epoch=Epoch(part.current_leader_epoch),
        snapshot_id=OffsetAndEpoch(part.snapshot_id.end_offset, Epoch(part.snapshot_id.epoch)),
        position=part.position,
    )


def _fetch_from_wire(version: int, body: fe.FetchRequest) -> rm.FetchRequest:
    refusal = raft_top_level_error(ApiKey.FETCH, ErrorCode.INVALID_REQUEST)
    if version not in FETCH_VERSIONS or len(body.topics) != 1 or body.topics[0].topic_id != METADATA_TOPIC_ID:
        raise WireRefusal(refusal)
    partitions = body.topics[0].partitions
    if len(partitions) != 1 or partitions[0].partition != METADATA_PARTITION:
        raise WireRefusal(refusal)
    part = partitions[0]
    replica = body.replica_state.replica_id if version >= 15 else body.replica_id
    return rm.FetchRequest(
        cluster_id=body.cluster_id,
        replica_id=NodeId(replica),
        current_leader_epoch=Epoch(part.current_leader_epoch),
        fetch_offset=part.fetch_offset,
        last_fetched_epoch=Epoch(part.last_fetched_epoch),
        high_watermark=-1,
        max_wait_ms=body.max_wait_ms,
    )


def fetch_limits(body: fe.FetchRequest) -> tuple[int, int]:
    """(partition max bytes, request max bytes) of a Fetch: how much of the log to answer with."""
    return body.topics[0].partitions[0].partition_max_bytes, body.max_bytes


def snapshot_position(body: fs.FetchSnapshotRequest) -> tuple[int, int]:
    """(position, max bytes) of a FetchSnapshot: which chunk of the snapshot to answer with."""
    return body.topics[0].partitions[0].position, body.max_bytes


# ---------------------------------------------------------------------- outbound requests
def request_to_wire(request: rm.Request, version: int, *, max_bytes: int = 8 * 1024 * 1024) -> RaftRequest:
    """The wire request for one the core sends (at `version`, which `send_version` picked)."""
    if isinstance(request, rm.VoteRequest):
        part = vo.VoteRequestPartitionData(
            partition_index=METADATA_PARTITION,
            candidate_epoch=request.candidate_epoch,
            candidate_id=request.candidate_id,
            last_offset_epoch=request.last_offset_epoch,
            last_offset=request.last_offset,
            pre_vote=request.pre_vote,
        )
        return vo.VoteRequest(
            cluster_id=request.cluster_id,
            voter_id=request.voter_id if version >= 1 else -1,
            topics=(vo.VoteRequestTopicData(topic_name=METADATA_TOPIC, partitions=(part,)),),
        )
    if isinstance(request, rm.BeginQuorumEpochRequest):
        bpart = bqe.BeginQuorumEpochRequestPartitionData(
            partition_index=METADATA_PARTITION, leader_id=request.leader_id, leader_epoch=request.leader_epoch
        )
        return bqe.BeginQuorumEpochRequest(
            cluster_id=request.cluster_id,
            voter_id=request.voter_id if version >= 1 else -1,
            topics=(bqe.BeginQuorumEpochRequestTopicData(topic_name=METADATA_TOPIC, partitions=(bpart,)),),
        )
    if isinstance(request, rm.EndQuorumEpochRequest):
        successors = request.preferred_successors
        epart = eqe.EndQuorumEpochRequestPartitionData(
            partition_index=METADATA_PARTITION,
            leader_id=request.leader_id,
            leader_epoch=request.leader_epoch,
            preferred_successors=successors if version == 0 else (),
            preferred_candidates=tuple(eqe.EndQuorumEpochRequestReplicaInfo(candidate_id=c) for c in successors)
            if version >= 1
            else (),
        )
        return eqe.EndQuorumEpochRequest(
            cluster_id=request.cluster_id,
            topics=(eqe.EndQuorumEpochRequestTopicData(topic_name=METADATA_TOPIC, partitions=(epart,)),),
        )
    if isinstance(request, rm.FetchRequest):
        return _fetch_to_wire(request, version, max_bytes)
    spart = fs.FetchSnapshotRequestPartitionSnapshot(
        partition=METADATA_PARTITION,
        current_leader_epoch=request.current_leader_epoch,
        snapshot_id=fs.FetchSnapshotRequestSnapshotId(
            end_offset=request.snapshot_id.offset, epoch=request.snapshot_id.epoch
        ),
        position=request.position,
    )
    return fs.FetchSnapshotRequest(
        cluster_id=request.cluster_id,
        replica_id=request.replica_id,
        max_bytes=max_bytes,
        topics=(fs.FetchSnapshotRequestTopicSnapshot(name=METADATA_TOPIC, partitions=(spart,)),),
    )


def _fetch_to_wire(request: rm.FetchRequest, version: int, max_bytes: int) -> fe.FetchRequest:
    """A Fetch names its replica in `ReplicaState` from v15, in `ReplicaId` before (the other
    field keeps its default)."""
    part = fe.FetchRequestFetchPartition(
        partition=METADATA_PARTITION,
        current_leader_epoch=request.current_leader_epoch,
        fetch_offset=request.fetch_offset,
        last_fetched_epoch=request.last_fetched_epoch,
        partition_max_bytes=max_bytes,
    )
    fetch = fe.FetchRequest(
        cluster_id=request.cluster_id,
        max_wait_ms=request.max_wait_ms,
        min_bytes=0,
        max_bytes=max_bytes,
        topics=(fe.FetchRequestFetchTopic(topic_id=METADATA_TOPIC_ID, partitions=(part,)),),
    )
    if version >= 15:
        return replace(fetch, replica_state=fe.FetchRequestReplicaState(replica_id=request.replica_id))
    return replace(fetch, replica_id=request.replica_id)
