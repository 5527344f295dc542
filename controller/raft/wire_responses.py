"""The quorum's responses on the wire: the Raft core's answers to Kafka's Vote, BeginQuorumEpoch,
EndQuorumEpoch, Fetch and FetchSnapshot responses (protocol/messages/), and back.

Rules (Kafka's `KafkaRaftClient` and `RaftUtil`):
- Every answer is about the one partition `__cluster_metadata-0` (`controller.raft.wire`); an
  answer that carries only a top-level error names none (`top_level_error`, DescribeQuorum's
  too, for the shell's refusals).
- Leader ids: the wire's -1 is the core's None. A response that names no partition (a top-level
  error) reaches the core with that error and nothing else (`TOP_LEVEL_ERRORS` are the only
  ones the core reads so; any other top-level error is reported the same way and ignored); one
  with neither an error nor a partition reaches it as UNKNOWN_SERVER_ERROR.
- Record bytes are carried, never decoded: a response's records are split into batches by their
  headers (base offset, length, partition leader epoch, last offset delta) and each batch's bytes
  ride in `Batch.payload`; a truncated last batch (Kafka may send one cut at `max_bytes` only
  for v1 and older messages, never for the v2 batches of a metadata log) is dropped.
- A FetchSnapshot's chunk is the shell's: it goes out as the `(size, position, bytes)` given and
  comes back in the core's `payload` the same way.
"""

from __future__ import annotations

from collections.abc import Iterator

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

from . import messages as rm
from .ids import Epoch, NodeId, OffsetAndEpoch
from .wire import METADATA_PARTITION, METADATA_TOPIC_ID, narrow

RaftResponse = (
    vo.VoteResponse
    | bqe.BeginQuorumEpochResponse
    | eqe.EndQuorumEpochResponse
    | fe.FetchResponse
    | fs.FetchSnapshotResponse
)

_RESPONSE_KEYS: dict[type, int] = {
    rm.VoteResponse: ApiKey.VOTE,
    rm.BeginQuorumEpochResponse: ApiKey.BEGIN_QUORUM_EPOCH,
    rm.EndQuorumEpochResponse: ApiKey.END_QUORUM_EPOCH,
    rm.FetchResponse: ApiKey.FETCH,
    rm.FetchSnapshotResponse: ApiKey.FETCH_SNAPSHOT,
}


def _leader(leader_id: int) -> NodeId | None:
    return None if leader_id < 0 else NodeId(leader_id)


def _wire_leader(leader_id: NodeId | None) -> int:
    return -1 if leader_id is None else leader_id


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


# ---------------------------------------------------------------------- outbound responses
def top_level_error(api_key: int, error: ErrorCode) -> RaftResponse | dq.DescribeQuorumResponse:
    """An answer to a quorum RPC that carries only a top-level error (no partition)."""
    if api_key == ApiKey.DESCRIBE_QUORUM:
        return dq.DescribeQuorumResponse(error_code=error, topics=())
    return raft_top_level_error(api_key, error)


def raft_top_level_error(api_key: int, error: ErrorCode) -> RaftResponse:
    """`top_level_error` for one of the five Raft RPCs."""
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
    raise ValueError(f"api key {api_key} is not a quorum RPC")


def response_to_wire(
    response: rm.Response, *, records: bytes | None = None, snapshot_chunk: tuple[int, int, bytes] | None = None
) -> RaftResponse:
    """The wire response for the core's answer; a Fetch's `records` (the log's bytes from the
    core's `records_from_offset`) and a FetchSnapshot's `(size, position, bytes)` are the shell's."""
    leader_id, epoch = _wire_leader(response.leader_id), response.leader_epoch
    if response.error in rm.TOP_LEVEL_ERRORS:
        return raft_top_level_error(_RESPONSE_KEYS[type(response)], response.error)
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
        return _fetch_to_wire(response, leader_id, records)
    return _fetch_snapshot_to_wire(response, leader_id, snapshot_chunk)


def _fetch_to_wire(response: rm.FetchResponse, leader_id: int, records: bytes | None) -> fe.FetchResponse:
    diverging = (
        fe.FetchResponseEpochEndOffset(epoch=response.diverging_epoch.epoch, end_offset=response.diverging_epoch.offset)
        if response.diverging_epoch is not None
        else fe.FetchResponseEpochEndOffset()
    )
    snapshot = (
        fe.FetchResponseSnapshotId(end_offset=response.snapshot_id.offset, epoch=response.snapshot_id.epoch)
        if response.snapshot_id is not None
        else fe.FetchResponseSnapshotId()
    )
    part = fe.FetchResponsePartitionData(
        partition_index=METADATA_PARTITION,
        error_code=response.error,
        high_watermark=response.high_watermark,
        log_start_offset=response.log_start_offset,
        diverging_epoch=diverging,
        current_leader=fe.FetchResponseLeaderIdAndEpoch(leader_id=leader_id, leader_epoch=response.leader_epoch),
        snapshot_id=snapshot,
        records=records if records else b"",
    )
    return fe.FetchResponse(
        responses=(fe.FetchResponseFetchableTopicResponse(topic_id=METADATA_TOPIC_ID, partitions=(part,)),)
    )


def _fetch_snapshot_to_wire(
    response: rm.FetchSnapshotResponse, leader_id: int, snapshot_chunk: tuple[int, int, bytes] | None
) -> fs.FetchSnapshotResponse:
    snapshot_id = response.snapshot_id
    size, position, chunk = snapshot_chunk if snapshot_chunk is not None else (0, 0, b"")
    part = fs.FetchSnapshotResponsePartitionSnapshot(
        index=METADATA_PARTITION,
        error_code=response.error,
        snapshot_id=fs.FetchSnapshotResponseSnapshotId(
            end_offset=-1 if snapshot_id is None else snapshot_id.offset,
            epoch=-1 if snapshot_id is None else snapshot_id.epoch,
        ),
        current_leader=fs.FetchSnapshotResponseLeaderIdAndEpoch(
            leader_id=leader_id, leader_epoch=response.leader_epoch
        ),
        size=size,
        position=position,
        unaligned_records=chunk,
    )
    return fs.FetchSnapshotResponse(
        topics=(fs.FetchSnapshotResponseTopicSnapshot(name=METADATA_TOPIC, partitions=(part,)),)
    )


# ---------------------------------------------------------------------- inbound responses
def response_from_wire(api_key: int, body: Data) -> rm.Response:
    """The core's view of a Raft response (`body` as the codec decoded it); a Fetch's records
    split into batches (payload: bytes), a FetchSnapshot's chunk left in `payload` as (size,
    position, bytes) for the shell."""
    if api_key == ApiKey.VOTE:
        return _vote_from_wire(narrow(body, vo.VoteResponse))
    if api_key == ApiKey.BEGIN_QUORUM_EPOCH:
        return _epoch_from_wire(narrow(body, bqe.BeginQuorumEpochResponse))
    if api_key == ApiKey.END_QUORUM_EPOCH:
        return _epoch_from_wire(narrow(body, eqe.EndQuorumEpochResponse))
    if api_key == ApiKey.FETCH:
        return _fetch_from_wire(narrow(body, fe.FetchResponse))
    if api_key == ApiKey.FETCH_SNAPSHOT:
        return _fetch_snapshot_from_wire(narrow(body, fs.FetchSnapshotResponse))
    raise ValueError(f"api key {api_key} is not a Raft RPC")


def _vote_from_wire(body: vo.VoteResponse) -> rm.VoteResponse:
    top = ErrorCode(body.error_code)
    parts = [p for t in body.topics for p in t.partitions]
    if top or not parts:
        return rm.VoteResponse(top or ErrorCode.UNKNOWN_SERVER_ERROR, None, Epoch(-1), False)
    p = parts[0]
    return rm.VoteResponse(ErrorCode(p.error_code), _leader(p.leader_id), Epoch(p.leader_epoch), p.vote_granted)


def _epoch_from_wire(
    body: bqe.BeginQuorumEpochResponse | eqe.EndQuorumEpochResponse,
) -> rm.BeginQuorumEpochResponse | rm.EndQuorumEpochResponse:
    """BeginQuorumEpoch's or EndQuorumEpoch's response (the same fields)."""
    cls = rm.BeginQuorumEpochResponse if isinstance(body, bqe.BeginQuorumEpochResponse) else rm.EndQuorumEpochResponse
    top = ErrorCode(body.error_code)
    parts = [p for t in body.topics for p in t.partitions]
    if top or not parts:
        return cls(top or ErrorCode.UNKNOWN_SERVER_ERROR, None, Epoch(-1))
    p = parts[0]
    return cls(ErrorCode(p.error_code), _leader(p.leader_id), Epoch(p.leader_epoch))


def _fetch_from_wire(body: fe.FetchResponse) -> rm.FetchResponse:
    top = ErrorCode(body.error_code)
    parts = [p for t in body.responses for p in t.partitions]
    if top or not parts:
        return rm.FetchResponse(top or ErrorCode.UNKNOWN_SERVER_ERROR, None, Epoch(-1))
    f = parts[0]
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


def _fetch_snapshot_from_wire(body: fs.FetchSnapshotResponse) -> rm.FetchSnapshotResponse:
    top = ErrorCode(body.error_code)
    parts = [p for t in body.topics for p in t.partitions]
    if top or not parts:
        return rm.FetchSnapshotResponse(top or ErrorCode.UNKNOWN_SERVER_ERROR, None, Epoch(-1))
    s = parts[0]
    snapshot_id = (
        OffsetAndEpoch(s.snapshot_id.end_offset, Epoch(s.snapshot_id.epoch)) if s.snapshot_id.end_offset >= 0 else None
    )
    return rm.FetchSnapshotResponse(
        ErrorCode(s.error_code),
        _leader(s.current_leader.leader_id),
        Epoch(s.current_leader.leader_epoch),
        snapshot_id,
        payload=(s.size, s.position, s.unaligned_records),
    )
