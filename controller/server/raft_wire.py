"""The quorum's RPCs on the wire: Kafka's Vote, BeginQuorumEpoch, EndQuorumEpoch, Fetch and
FetchSnapshot (protocol/messages/) to and from the Raft core's messages (controller/raft/).

Rules (Kafka's `KafkaRaftClient` and `RaftUtil`):
- Every RPC is about the one partition `__cluster_metadata-0` (Fetch from v13 names it by the
  topic id `METADATA_TOPIC_ID`). A request about anything else, or about more or fewer than that
  one partition, is answered at once with INVALID_REQUEST at the top level, as Kafka does "until
  it supports multi-raft" (`WireRefusal`); the core never sees it.
- Leader ids: the wire's -1 is the core's None. A response that names no partition (a top-level
  error) reaches the core with that error and nothing else (`TOP_LEVEL_ERRORS` are the only
  ones the core reads so; any other top-level error is reported the same way and ignored).
- Fetch is served from v13 (topic ids, as `__cluster_metadata` is fetched by id since Kafka 3.1):
  the replica id is the v15+ `ReplicaState.ReplicaId` or, before, the top-level `ReplicaId`; the
  follower's high watermark is not on the wire before Fetch v18, so it reaches the core as -1.
- Record bytes are carried, never decoded: a response's records are split into batches by their
  headers (base offset, length, partition leader epoch, last offset delta) and each batch's bytes
  ride in `Batch.payload`; a truncated last batch (Kafka may send one cut at `max_bytes` only
  for v1 and older messages, never for the v2 batches of a metadata log) is dropped.
- Vote is sent at v2 when it is a pre-vote (KIP-996: Kafka 4.0), else at the highest version
  both sides speak; BeginQuorumEpoch, EndQuorumEpoch and FetchSnapshot likewise.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

from protocol.api_keys import ApiKey
from protocol.error_codes import ErrorCode
from protocol.messages import begin_quorum_epoch as bqe
from protocol.messages import describe_quorum as dq
from protocol.messages import end_quorum_epoch as eqe
from protocol.messages import fetch as fe
from protocol.messages import fetch_snapshot as fs
from protocol.messages import vote as vo
from protocol.records.batch import HEAD_SIZE, LOG_OVERHEAD, read_head
from protocol.records.metadata import METADATA_TOPIC
from protocol.spec import Data

from ..raft import messages as rm
from ..raft.ids import Epoch, NodeId, OffsetAndEpoch

METADATA_TOPIC_ID = uuid.UUID(int=1)  # Kafka's Uuid.METADATA_TOPIC_ID
METADATA_PARTITION = 0
#: Fetch versions the quorum serves (topic ids; Kafka 3.9's highest is 17)
FETCH_VERSIONS = range(13, 18)
RAFT_API_KEYS = frozenset(
    {ApiKey.VOTE, ApiKey.BEGIN_QUORUM_EPOCH, ApiKey.END_QUORUM_EPOCH, ApiKey.FETCH, ApiKey.FETCH_SNAPSHOT}
)

#: the highest version fencer speaks of each Raft RPC
HIGHEST_VERSIONS: dict[int, int] = {
    ApiKey.VOTE: 2,
    ApiKey.BEGIN_QUORUM_EPOCH: 1,
    ApiKey.END_QUORUM_EPOCH: 1,
    ApiKey.FETCH: FETCH_VERSIONS[-1],
    ApiKey.FETCH_SNAPSHOT: 1,
}

_RESPONSE_KEYS: dict[type, int] = {
    rm.VoteResponse: ApiKey.VOTE,
    rm.BeginQuorumEpochResponse: ApiKey.BEGIN_QUORUM_EPOCH,
    rm.EndQuorumEpochResponse: ApiKey.END_QUORUM_EPOCH,
    rm.FetchResponse: ApiKey.FETCH,
    rm.FetchSnapshotResponse: ApiKey.FETCH_SNAPSHOT,
}


class WireRefusal(Exception):
    """A request the core must not see: answer `response` (a top-level error) at once."""

    def __init__(self, response: Data) -> None:
        super().__init__(type(response).__name__)
        self.response = response


def _leader(leader_id: int) -> NodeId | None:
    return None if leader_id < 0 else NodeId(leader_id)


def _wire_leader(leader_id: NodeId | None) -> int:
    return -1 if leader_id is None else leader_id


def _only_partition(topics: Any, name_of: Any, partitions_of: Any, index_of: Any, refusal: Data) -> Any:
    """The one partition of `__cluster_metadata-0` a request is about, else `WireRefusal`."""
    if len(topics) != 1 or name_of(topics[0]) != METADATA_TOPIC:
        raise WireRefusal(refusal)
    partitions = partitions_of(topics[0])
    if len(partitions) != 1 or index_of(partitions[0]) != METADATA_PARTITION:
        raise WireRefusal(refusal)
    return partitions[0]


def split_batches(records: bytes | None) -> tuple[rm.Batch, ...]:
    """The whole v2 record batches of `records`, each with its bytes as the payload."""
    if not records:
        return ()
    batches = []
    view = memoryview(records)
    position = 0
    while position + HEAD_SIZE <= len(records):
        base, length, epoch, _magic, _crc, _attributes, last_delta = read_head(records, position)
        end = position + LOG_OVERHEAD + length
        if length <= 0 or end > len(records):
            break  # a batch cut at max_bytes: the next fetch starts at it
        batches.append(rm.Batch(base, base + last_delta, Epoch(epoch), bytes(view[position:end])))
        position = end
    return tuple(batches)


def batch_bytes(batches: tuple[rm.Batch, ...]) -> Iterator[bytes]:
    for batch in batches:
        assert isinstance(batch.payload, bytes | bytearray | memoryview)
        yield bytes(batch.payload)


# ---------------------------------------------------------------------- inbound requests
def request_from_wire(api_key: int, version: int, body: Any) -> rm.Request:
    """The core's view of a Raft request (`WireRefusal` when it is not about this partition)."""
    if api_key == ApiKey.VOTE:
        part = _only_partition(
            body.topics,
            lambda t: t.topic_name,
            lambda t: t.partitions,
            lambda p: p.partition_index,
            top_level_error(ApiKey.VOTE, ErrorCode.INVALID_REQUEST),
        )
        return rm.VoteRequest(
            cluster_id=body.cluster_id,
            candidate_epoch=Epoch(part.candidate_epoch),
            candidate_id=NodeId(part.candidate_id),
            voter_id=NodeId(body.voter_id),
            last_offset_epoch=Epoch(part.last_offset_epoch),
            last_offset=part.last_offset,
            pre_vote=part.pre_vote,
        )
    if api_key == ApiKey.BEGIN_QUORUM_EPOCH:
        part = _only_partition(
            body.topics,
            lambda t: t.topic_name,
            lambda t: t.partitions,
            lambda p: p.partition_index,
            top_level_error(ApiKey.BEGIN_QUORUM_EPOCH, ErrorCode.INVALID_REQUEST),
        )
        return rm.BeginQuorumEpochRequest(
            cluster_id=body.cluster_id,
            leader_id=NodeId(part.leader_id),
            leader_epoch=Epoch(part.leader_epoch),
            voter_id=NodeId(body.voter_id),
        )
    if api_key == ApiKey.END_QUORUM_EPOCH:
        part = _only_partition(
            body.topics,
            lambda t: t.topic_name,
            lambda t: t.partitions,
            lambda p: p.partition_index,
            top_level_error(ApiKey.END_QUORUM_EPOCH, ErrorCode.INVALID_REQUEST),
        )
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
    if api_key == ApiKey.FETCH:
        refusal = top_level_error(ApiKey.FETCH, ErrorCode.INVALID_REQUEST)
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
    if api_key == ApiKey.FETCH_SNAPSHOT:
        part = _only_partition(
            body.topics,
            lambda t: t.name,
            lambda t: t.partitions,
            lambda p: p.partition,
            top_level_error(ApiKey.FETCH_SNAPSHOT, ErrorCode.INVALID_REQUEST),
        )
        return rm.FetchSnapshotRequest(
            cluster_id=body.cluster_id,
            replica_id=NodeId(body.replica_id),
            current_leader_epoch=Epoch(part.current_leader_epoch),
            snapshot_id=OffsetAndEpoch(part.snapshot_id.end_offset, Epoch(part.snapshot_id.epoch)),
            position=part.position,
        )
    raise ValueError(f"api key {api_key} is not a Raft RPC")


def fetch_limits(body: Any) -> tuple[int, int]:
    """(partition max bytes, request max bytes) of a Fetch: how much of the log to answer with."""
    return body.topics[0].partitions[0].partition_max_bytes, body.max_bytes


def snapshot_position(body: Any) -> tuple[int, int]:
    """(position, max bytes) of a FetchSnapshot: which chunk of the snapshot to answer with."""
    return body.topics[0].partitions[0].position, body.max_bytes


# ---------------------------------------------------------------------- outbound responses
def top_level_error(api_key: int, error: ErrorCode) -> Data:
    """An answer to a quorum RPC that carries only a top-level error (no partition)."""
    if api_key == ApiKey.VOTE:
        return vo.VoteResponse(error_code=error, topics=())
    if api_key == ApiKey.BEGIN_QUORUM_EPOCH:
        return bqe.BeginQuorumEpochResponse(error_code=error, topics=())
    if api_key == ApiKey.END_QUORUM_EPOCH:
        return eqe.EndQuorumEpochResponse(error_code=error, topics=())
    if api_key == ApiKey.FETCH:
        return fe.FetchResponse(error_code=error, responses=())
    if api_key == ApiKey.FETCH_SNAPSHOT:
        return fs.FetchSnapshotResponse(error_code=error, topics=())
    if api_key == ApiKey.DESCRIBE_QUORUM:
        return dq.DescribeQuorumResponse(error_code=error, topics=())
    raise ValueError(f"api key {api_key} is not a quorum RPC")


def response_to_wire(
    response: rm.Response, *, records: bytes | None = None, snapshot_chunk: tuple[int, int, bytes] | None = None
) -> Data:
    """The wire response for the core's answer; a Fetch's `records` (the log's bytes from the
    core's `records_from_offset`) and a FetchSnapshot's `(size, position, bytes)` are the shell's."""
    leader_id, epoch = _wire_leader(response.leader_id), response.leader_epoch
    if response.error in rm.TOP_LEVEL_ERRORS:
        return top_level_error(_RESPONSE_KEYS[type(response)], response.error)
    if isinstance(response, rm.VoteResponse):
        part = vo.VoteResponsePartitionData(
            partition_index=METADATA_PARTITION,
            error_code=response.error,
            leader_id=leader_id,
            leader_epoch=epoch,
            vote_granted=response.vote_granted,
        )
        return vo.VoteResponse(topics=(vo.VoteResponseTopicData(topic_name=METADATA_TOPIC, partitions=(part,)),))
    if isinstance(response, rm.BeginQuorumEpochResponse):
        bpart = bqe.BeginQuorumEpochResponsePartitionData(
            partition_index=METADATA_PARTITION, error_code=response.error, leader_id=leader_id, leader_epoch=epoch
        )
        return bqe.BeginQuorumEpochResponse(
            topics=(bqe.BeginQuorumEpochResponseTopicData(topic_name=METADATA_TOPIC, partitions=(bpart,)),)
        )
    if isinstance(response, rm.EndQuorumEpochResponse):
        epart = eqe.EndQuorumEpochResponsePartitionData(
            partition_index=METADATA_PARTITION, error_code=response.error, leader_id=leader_id, leader_epoch=epoch
        )
        return eqe.EndQuorumEpochResponse(
            topics=(eqe.EndQuorumEpochResponseTopicData(topic_name=METADATA_TOPIC, partitions=(epart,)),)
        )
    if isinstance(response, rm.FetchResponse):
        diverging = (
            fe.FetchResponseEpochEndOffset(
                epoch=response.diverging_epoch.epoch, end_offset=response.diverging_epoch.offset
            )
            if response.diverging_epoch is not None
            else fe.FetchResponseEpochEndOffset()
        )
        snapshot = (
            fe.FetchResponseSnapshotId(end_offset=response.snapshot_id.offset, epoch=response.snapshot_id.epoch)
            if response.snapshot_id is not None
            else fe.FetchResponseSnapshotId()
        )
        fpart = fe.FetchResponsePartitionData(
            partition_index=METADATA_PARTITION,
            error_code=response.error,
            high_watermark=response.high_watermark,
            log_start_offset=response.log_start_offset,
            diverging_epoch=diverging,
            current_leader=fe.FetchResponseLeaderIdAndEpoch(leader_id=leader_id, leader_epoch=epoch),
            snapshot_id=snapshot,
            records=records if records else b"",
        )
        return fe.FetchResponse(
            responses=(fe.FetchResponseFetchableTopicResponse(topic_id=METADATA_TOPIC_ID, partitions=(fpart,)),)
        )
    snapshot_id = response.snapshot_id
    size, position, chunk = snapshot_chunk if snapshot_chunk is not None else (0, 0, b"")
    spart = fs.FetchSnapshotResponsePartitionSnapshot(
        index=METADATA_PARTITION,
        error_code=response.error,
        snapshot_id=fs.FetchSnapshotResponseSnapshotId(
            end_offset=-1 if snapshot_id is None else snapshot_id.offset,
            epoch=-1 if snapshot_id is None else snapshot_id.epoch,
        ),
        current_leader=fs.FetchSnapshotResponseLeaderIdAndEpoch(leader_id=leader_id, leader_epoch=epoch),
        size=size,
        position=position,
        unaligned_records=chunk,
    )
    return fs.FetchSnapshotResponse(
        topics=(fs.FetchSnapshotResponseTopicSnapshot(name=METADATA_TOPIC, partitions=(spart,)),)
    )


# ---------------------------------------------------------------------- outbound requests
def request_to_wire(request: rm.Request, version: int, *, max_bytes: int = 8 * 1024 * 1024) -> Data:
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
        fpart = fe.FetchRequestFetchPartition(
            partition=METADATA_PARTITION,
            current_leader_epoch=request.current_leader_epoch,
            fetch_offset=request.fetch_offset,
            last_fetched_epoch=request.last_fetched_epoch,
            partition_max_bytes=max_bytes,
        )
        fields: dict[str, Any] = {}
        if version >= 15:
            fields["replica_state"] = fe.FetchRequestReplicaState(replica_id=request.replica_id)
        else:
            fields["replica_id"] = request.replica_id
        return fe.FetchRequest(
            cluster_id=request.cluster_id,
            max_wait_ms=request.max_wait_ms,
            min_bytes=0,
            max_bytes=max_bytes,
            topics=(fe.FetchRequestFetchTopic(topic_id=METADATA_TOPIC_ID, partitions=(fpart,)),),
            **fields,
        )
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


# ---------------------------------------------------------------------- inbound responses
def response_from_wire(api_key: int, body: Any) -> rm.Response:
    """The core's view of a Raft response; a Fetch's records split into batches (payload: bytes),
    a FetchSnapshot's chunk left in `payload` as (size, position, bytes) for the shell."""
    top = ErrorCode(body.error_code)
    if api_key == ApiKey.VOTE:
        parts = [p for t in body.topics for p in t.partitions]
        if top or not parts:
            return rm.VoteResponse(top or ErrorCode.UNKNOWN_SERVER_ERROR, None, Epoch(-1), False)
        p = parts[0]
        return rm.VoteResponse(ErrorCode(p.error_code), _leader(p.leader_id), Epoch(p.leader_epoch), p.vote_granted)
    if api_key in (ApiKey.BEGIN_QUORUM_EPOCH, ApiKey.END_QUORUM_EPOCH):
        cls: Any = rm.BeginQuorumEpochResponse if api_key == ApiKey.BEGIN_QUORUM_EPOCH else rm.EndQuorumEpochResponse
        parts = [p for t in body.topics for p in t.partitions]
        if top or not parts:
            return cls(top or ErrorCode.UNKNOWN_SERVER_ERROR, None, Epoch(-1))  # type: ignore[no-any-return]
        p = parts[0]
        return cls(ErrorCode(p.error_code), _leader(p.leader_id), Epoch(p.leader_epoch))  # type: ignore[no-any-return]
    if api_key == ApiKey.FETCH:
        fparts = [p for t in body.responses for p in t.partitions]
        if top or not fparts:
            return rm.FetchResponse(top or ErrorCode.UNKNOWN_SERVER_ERROR, None, Epoch(-1))
        f = fparts[0]
        diverging = f.diverging_epoch
        snapshot = f.snapshot_id
        return rm.FetchResponse(
            ErrorCode(f.error_code),
            _leader(f.current_leader.leader_id),
            Epoch(f.current_leader.leader_epoch),
            high_watermark=f.high_watermark,
            log_start_offset=f.log_start_offset,
            diverging_epoch=OffsetAndEpoch(diverging.end_offset, Epoch(diverging.epoch))
            if diverging.epoch >= 0 and diverging.end_offset >= 0
            else None,
            snapshot_id=OffsetAndEpoch(snapshot.end_offset, Epoch(snapshot.epoch))
            if snapshot.epoch >= 0 and snapshot.end_offset >= 0
            else None,
            records=split_batches(f.records),
        )
    if api_key == ApiKey.FETCH_SNAPSHOT:
        sparts = [p for t in body.topics for p in t.partitions]
        if top or not sparts:
            return rm.FetchSnapshotResponse(top or ErrorCode.UNKNOWN_SERVER_ERROR, None, Epoch(-1))
        s = sparts[0]
        snapshot_id = (
            OffsetAndEpoch(s.snapshot_id.end_offset, Epoch(s.snapshot_id.epoch))
            if s.snapshot_id.end_offset >= 0
            else None
        )
        return rm.FetchSnapshotResponse(
            ErrorCode(s.error_code),
            _leader(s.current_leader.leader_id),
            Epoch(s.current_leader.leader_epoch),
            snapshot_id,
            payload=(s.size, s.position, s.unaligned_records),
        )
    raise ValueError(f"api key {api_key} is not a Raft RPC")


def send_version(api_key: int, request: rm.Request, peer_max: int | None) -> int:
    """The version to send `request` at: the highest both sides speak (fencer's highest when the
    peer's is unknown); a pre-vote needs Vote v2."""
    ours = HIGHEST_VERSIONS[api_key]
    return ours if peer_max is None else min(ours, peer_max)
