"""The quorum's RPCs between the Raft core's messages and Kafka's wire (controller.raft.wire_requests,
wire_responses): every message survives core -> wire -> bytes -> wire -> core at every version the
quorum sends, requests about anything but `__cluster_metadata-0` are refused before the core sees
them, and a Fetch response's record bytes arrive as whole batches with their offsets and epochs."""

from __future__ import annotations

import pytest

from controller.raft import messages as rm
from controller.raft import wire
from controller.raft.ids import Epoch, NodeId, OffsetAndEpoch
from controller.raft.wire_requests import WireRefusal, request_from_wire, request_to_wire
from controller.raft.wire_responses import batch_bytes, response_from_wire, response_to_wire, split_batches
from protocol.api_keys import ApiKey
from protocol.compiler import codec
from protocol.error_codes import ErrorCode
from protocol.messages import fetch as fe
from protocol.messages import vote as vo
from protocol.records.batch_writer import metadata_batch
from protocol.records.metadata import NoOpRecord
from protocol.records.metadata_value import encode_metadata_value
from protocol.registry import api

KEYS = {
    rm.VoteRequest: ApiKey.VOTE,
    rm.BeginQuorumEpochRequest: ApiKey.BEGIN_QUORUM_EPOCH,
    rm.EndQuorumEpochRequest: ApiKey.END_QUORUM_EPOCH,
    rm.FetchRequest: ApiKey.FETCH,
    rm.FetchSnapshotRequest: ApiKey.FETCH_SNAPSHOT,
}

REQUESTS: list[rm.Request] = [
    rm.VoteRequest("c1", Epoch(7), NodeId(2), NodeId(3), Epoch(6), 120, pre_vote=False),
    rm.VoteRequest("c1", Epoch(6), NodeId(2), NodeId(3), Epoch(6), 120, pre_vote=True),
    rm.BeginQuorumEpochRequest("c1", NodeId(2), Epoch(7), NodeId(3)),
    rm.EndQuorumEpochRequest("c1", NodeId(2), Epoch(7), (NodeId(3), NodeId(1))),
    rm.FetchRequest("c1", NodeId(3), Epoch(7), 500, Epoch(6), max_wait_ms=500),
    rm.FetchSnapshotRequest("c1", NodeId(3), Epoch(7), OffsetAndEpoch(400, Epoch(5)), position=4096),
]


def through_bytes(message: object, version: int) -> object:
    c = codec(type(message), version)  # type: ignore[arg-type]
    return c.decode_exact(c.encode(message))


@pytest.mark.parametrize(
    "request_", REQUESTS, ids=lambda r: type(r).__name__ + ("-pre" if getattr(r, "pre_vote", 0) else "")
)
def test_requests_round_trip_at_every_version_sent(request_: rm.Request) -> None:
    key = KEYS[type(request_)]
    versions = [v for v in api(key).versions if key != ApiKey.FETCH or v in wire.FETCH_VERSIONS]
    for version in versions:
        if getattr(request_, "pre_vote", False) and version < 2:
            continue  # a pre-vote exists from Vote v2 (KIP-996)
        body = through_bytes(request_to_wire(request_, version), version)
        back = request_from_wire(key, version, body)
        if key == ApiKey.VOTE and version == 0:
            assert back == rm.VoteRequest(**{**_fields(request_), "voter_id": NodeId(-1)})  # v0 has no voter id
        elif key == ApiKey.BEGIN_QUORUM_EPOCH and version == 0:
            assert back == rm.BeginQuorumEpochRequest(**{**_fields(request_), "voter_id": NodeId(-1)})
        else:
            assert back == request_, version


def _fields(message: object) -> dict[str, object]:
    return {name: getattr(message, name) for name in message.__slots__}  # type: ignore[attr-defined]


def test_a_pre_vote_cannot_go_below_vote_v2() -> None:
    with pytest.raises(Exception, match="pre_vote"):
        codec(vo.VoteRequest, 1).encode(request_to_wire(REQUESTS[1], 1))


def test_requests_about_another_partition_are_refused_before_the_core() -> None:
    body = request_to_wire(REQUESTS[0], 2)
    other = vo.VoteRequest(
        cluster_id="c1",
        topics=(vo.VoteRequestTopicData(topic_name="orders", partitions=body.topics[0].partitions),),  # type: ignore[attr-defined]
    )
    with pytest.raises(WireRefusal) as info:
        request_from_wire(ApiKey.VOTE, 2, other)
    assert info.value.response == vo.VoteResponse(error_code=ErrorCode.INVALID_REQUEST, topics=())
    fetch = request_to_wire(REQUESTS[4], 17)
    for version in (12, 17):
        wrong = fe.FetchRequest(
            max_wait_ms=0, min_bytes=0, topics=(fe.FetchRequestFetchTopic(topic="x", partitions=()),)
        )
        with pytest.raises(WireRefusal):
            request_from_wire(ApiKey.FETCH, version, wrong)
    with pytest.raises(WireRefusal):
        request_from_wire(ApiKey.FETCH, 12, fetch)  # names the topic by id: v13 and later only


def test_responses_round_trip_and_fetch_records_arrive_as_batches() -> None:
    noop = encode_metadata_value(NoOpRecord(), 0)
    batches = [metadata_batch(base, 4 + i, 0, [noop] * (i + 1)) for i, base in enumerate((100, 101, 103))]
    records = b"".join(batches)
    fetched = rm.FetchResponse(
        ErrorCode.NONE,
        NodeId(2),
        Epoch(7),
        high_watermark=99,
        log_start_offset=0,
        records_from_offset=100,
    )
    body = through_bytes(response_to_wire(fetched, records=records), 17)
    back = response_from_wire(ApiKey.FETCH, body)
    assert isinstance(back, rm.FetchResponse)
    assert [(b.base_offset, b.last_offset, b.epoch) for b in back.records] == [
        (100, 100, 4),
        (101, 102, 5),
        (103, 105, 6),
    ]
    assert b"".join(batch_bytes(back.records)) == records
    assert (back.error, back.leader_id, back.leader_epoch, back.high_watermark) == (ErrorCode.NONE, 2, 7, 99)
    assert back.diverging_epoch is None and back.snapshot_id is None
    cut = split_batches(records[:-5])  # a last batch cut short is left for the next fetch
    assert [b.base_offset for b in cut] == [100, 101]

    diverging = rm.FetchResponse(
        ErrorCode.NONE, NodeId(2), Epoch(7), 99, 0, diverging_epoch=OffsetAndEpoch(90, Epoch(5))
    )
    assert response_from_wire(ApiKey.FETCH, through_bytes(response_to_wire(diverging), 13)) == diverging
    for response, key in [
        (rm.VoteResponse(ErrorCode.NONE, None, Epoch(7), True), ApiKey.VOTE),
        (rm.VoteResponse(ErrorCode.FENCED_LEADER_EPOCH, NodeId(1), Epoch(8), False), ApiKey.VOTE),
        (rm.BeginQuorumEpochResponse(ErrorCode.NONE, NodeId(2), Epoch(7)), ApiKey.BEGIN_QUORUM_EPOCH),
        (rm.EndQuorumEpochResponse(ErrorCode.NOT_LEADER_OR_FOLLOWER, None, Epoch(7)), ApiKey.END_QUORUM_EPOCH),
    ]:
        for version in api(key).versions:
            assert response_from_wire(key, through_bytes(response_to_wire(response), version)) == response
    # a top-level error reaches the core alone
    top = rm.FetchResponse(ErrorCode.INCONSISTENT_CLUSTER_ID, None, Epoch(-1))
    assert response_from_wire(ApiKey.FETCH, through_bytes(response_to_wire(top), 17)) == top
    snap = rm.FetchSnapshotResponse(ErrorCode.NONE, NodeId(2), Epoch(7), OffsetAndEpoch(400, Epoch(5)))
    back_snap = response_from_wire(
        ApiKey.FETCH_SNAPSHOT, through_bytes(response_to_wire(snap, snapshot_chunk=(9000, 4096, b"abc")), 1)
    )
    assert back_snap == rm.FetchSnapshotResponse(
        ErrorCode.NONE, NodeId(2), Epoch(7), OffsetAndEpoch(400, Epoch(5)), payload=(9000, 4096, b"abc")
    )
