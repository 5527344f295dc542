"""Fetch (api key 1): whole frames written byte by byte from Kafka 3.9's FetchRequest.json /
FetchResponse.json, never by fencer's encoder.

The request at v0 (the oldest: request header v1, INT16 strings, INT32 arrays) and v17 (the
newest: topic ids, the tagged ClusterId (tag 0) and ReplicaState (tag 1) of the body and the
tagged ReplicaDirectoryId (tag 0) of a partition); the response at v0, v4 (null aborted
transactions and null records) and v17 (the partition's tagged DivergingEpoch, CurrentLeader
and SnapshotId, tags 0-2, and the body's NodeEndpoints, tag 0). Records are raw bytes, never
parsed. Each frame is decoded by fencer and by kio, and fencer encodes the decoded message back
to the same bytes. Then the version rules, that the daemon still refuses the API, and a property
test with unknown tags, compiled against interpreted.
"""

import dataclasses
import uuid

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from controller.ops.served import INBOUND_API_KEYS
from controller.server.request_checks import decode_served
from protocol.compiler import codec
from protocol.errors import EncodeError, UnsupportedVersionError
from protocol.messages.fetch import (
    FetchRequest,
    FetchRequestFetchPartition,
    FetchRequestFetchTopic,
    FetchRequestReplicaState,
    FetchResponse,
    FetchResponseEpochEndOffset,
    FetchResponseFetchableTopicResponse,
    FetchResponseLeaderIdAndEpoch,
    FetchResponseNodeEndpoint,
    FetchResponsePartitionData,
    FetchResponseSnapshotId,
)
from protocol.registry import decode_request, encode_request

from ..test_conformance_kio import FLOOR_EXAMPLES
from .frames import check_request, check_response, check_round_trip_with_unknown_tags

TOPIC_ID = uuid.UUID("00112233-4455-6677-8899-aabbccddeeff")
DIR = uuid.UUID("ffeeddcc-bbaa-9988-7766-554433221100")


def test_request_v0() -> None:
    message = FetchRequest(
        replica_id=3002,
        max_wait_ms=500,
        min_bytes=1,
        topics=(
            FetchRequestFetchTopic(
                topic="t",
                partitions=(FetchRequestFetchPartition(partition=0, fetch_offset=100, partition_max_bytes=1 << 20),),
            ),
        ),
    )
    body = bytes.fromhex(
        "00000bba"  # ReplicaId 3002 (v0-14)
        "000001f4"  # MaxWaitMs 500
        "00000001"  # MinBytes 1 (no MaxBytes before v3, IsolationLevel v4, session v7)
        "00000001"  # Topics: INT32 count 1
        "0001 74"  # - Topic "t" (v0-12)
        "00000001"  # - Partitions: count 1
        "00000000"  # -- Partition 0 (no CurrentLeaderEpoch before v9)
        "0000000000000064"  # -- FetchOffset 100 (no LastFetchedEpoch before v12, LogStartOffset v5)
        "00100000"  # -- PartitionMaxBytes 1048576 (no ForgottenTopicsData before v7, RackId v11)
    )
    check_request(message, 0, body)


def test_request_v17_topic_ids_and_every_tagged_field() -> None:
    message = FetchRequest(
        cluster_id="abc",
        replica_state=FetchRequestReplicaState(replica_id=3002, replica_epoch=42),
        max_wait_ms=500,
        min_bytes=1,
        max_bytes=8 << 20,
        isolation_level=0,
        session_id=0,
        session_epoch=-1,
        topics=(
            FetchRequestFetchTopic(
                topic_id=TOPIC_ID,
                partitions=(
                    FetchRequestFetchPartition(
                        partition=0,
                        current_leader_epoch=6,
                        fetch_offset=100,
                        last_fetched_epoch=5,
                        log_start_offset=-1,
                        partition_max_bytes=1 << 20,
                        replica_directory_id=DIR,
                    ),
                ),
            ),
        ),
    )
    body = bytes.fromhex(
        "000001f4"  # MaxWaitMs 500 (no ReplicaId from v15: ReplicaState is tagged)
        "00000001"  # MinBytes 1
        "00800000"  # MaxBytes 8388608 (v3+)
        "00"  # IsolationLevel 0 (v4+)
        "00000000 ffffffff"  # SessionId 0, SessionEpoch -1 (v7+)
        "02"  # Topics: compact array 1
        "00112233445566778899aabbccddeeff"  # - TopicId (v13+; no Topic name)
        "02"  # - Partitions: compact array 1
        "00000000"  # -- Partition 0
        "00000006"  # -- CurrentLeaderEpoch 6 (v9+)
        "0000000000000064"  # -- FetchOffset 100
        "00000005"  # -- LastFetchedEpoch 5 (v12+)
        "ffffffffffffffff"  # -- LogStartOffset -1 (v5+)
        "00100000"  # -- PartitionMaxBytes 1048576
        "01"  # -- partition tag buffer: 1 tagged field
        "00 10 ffeeddccbbaa99887766554433221100"  # --- tag 0 (ReplicaDirectoryId, v17+), size 16
        "00"  # - topic tag buffer
        "01"  # ForgottenTopicsData (v7+): compact, empty
        "01"  # RackId (v11+): compact string ""
        "02"  # body tag buffer: 2 tagged fields, in tag order
        "00 04 04 616263"  # - tag 0 (ClusterId, v12+), size 4: compact nullable string "abc"
        "01 0d"  # - tag 1 (ReplicaState, v15+), size 13
        "00000bba 000000000000002a 00"  # -- ReplicaId 3002, ReplicaEpoch 42, the struct's tag buffer
    )
    check_request(message, 17, body)


def test_response_v0() -> None:
    message = FetchResponse(
        responses=(
            FetchResponseFetchableTopicResponse(
                topic="t",
                partitions=(
                    FetchResponsePartitionData(partition_index=0, high_watermark=100, records=b"\x01\x02\x03"),
                ),
            ),
        ),
    )
    body = bytes.fromhex(
        "00000001"  # Responses: INT32 count 1 (no ThrottleTimeMs before v1)
        "0001 74"  # - Topic "t"
        "00000001"  # - Partitions: count 1
        "00000000 0000"  # -- PartitionIndex 0, ErrorCode 0
        "0000000000000064"  # -- HighWatermark 100
        "00000003 010203"  # -- Records: nullable bytes, INT32 length 3, raw (never parsed)
    )
    check_response(message, 0, body)


def test_response_v4_null_aborted_transactions_and_null_records() -> None:
    message = FetchResponse(
        throttle_time_ms=7,
        responses=(
            FetchResponseFetchableTopicResponse(
                topic="t",
                partitions=(
                    FetchResponsePartitionData(
                        partition_index=1,
                        error_code=6,
                        high_watermark=-1,
                        last_stable_offset=-1,
                        aborted_transactions=None,
                        records=None,
                    ),
                ),
            ),
        ),
    )
    body = bytes.fromhex(
        "00000007"  # ThrottleTimeMs 7 (v1+)
        "00000001 0001 74 00000001"  # Responses: 1, Topic "t", Partitions: 1
        "00000001 0006"  # -- PartitionIndex 1, ErrorCode 6 (NOT_LEADER_OR_FOLLOWER)
        "ffffffffffffffff"  # -- HighWatermark -1
        "ffffffffffffffff"  # -- LastStableOffset -1 (v4+)
        "ffffffff"  # -- AbortedTransactions null (v4+, nullable array: INT32 -1)
        "ffffffff"  # -- Records null (nullable bytes: INT32 -1)
    )
    check_response(message, 4, body)


def test_response_v17_every_tagged_field() -> None:
    partition = FetchResponsePartitionData(
        partition_index=0,
        error_code=0,
        high_watermark=100,
        last_stable_offset=100,
        log_start_offset=0,
        diverging_epoch=FetchResponseEpochEndOffset(epoch=4, end_offset=80),
        current_leader=FetchResponseLeaderIdAndEpoch(leader_id=3001, leader_epoch=6),
        snapshot_id=FetchResponseSnapshotId(end_offset=50, epoch=3),
        aborted_transactions=(),
        preferred_read_replica=-1,
        records=b"\x01\x02\x03",
    )
    message = FetchResponse(
        responses=(FetchResponseFetchableTopicResponse(topic_id=TOPIC_ID, partitions=(partition,)),),
        node_endpoints=(FetchResponseNodeEndpoint(node_id=3001, host="h", port=9093, rack=None),),
    )
    body = bytes.fromhex(
        "00000000"  # ThrottleTimeMs 0
        "0000"  # ErrorCode 0 (v7+)
        "00000000"  # SessionId 0 (v7+)
        "02"  # Responses: compact array 1
        "00112233445566778899aabbccddeeff"  # - TopicId (v13+)
        "02"  # - Partitions: compact array 1
        "00000000 0000"  # -- PartitionIndex 0, ErrorCode 0
        "0000000000000064"  # -- HighWatermark 100
        "0000000000000064"  # -- LastStableOffset 100
        "0000000000000000"  # -- LogStartOffset 0
        "01"  # -- AbortedTransactions: compact nullable array, empty
        "ffffffff"  # -- PreferredReadReplica -1 (v11+)
        "04 010203"  # -- Records: compact nullable bytes, uvarint 3+1
        "03"  # -- partition tag buffer: 3 tagged fields
        "00 0d 00000004 0000000000000050 00"  # --- tag 0 DivergingEpoch: Epoch 4, EndOffset 80, tag buffer
        "01 09 00000bb9 00000006 00"  # --- tag 1 CurrentLeader: LeaderId 3001, LeaderEpoch 6, tag buffer
        "02 0d 0000000000000032 00000003 00"  # --- tag 2 SnapshotId: EndOffset 50, Epoch 3, tag buffer
        "00"  # - topic tag buffer
        "01"  # body tag buffer: 1 tagged field
        "00 0d"  # - tag 0 (NodeEndpoints, v16+), size 13
        "02 00000bb9 02 68 00002385 00 00"  # -- 1 endpoint: NodeId 3001, Host "h", Port 9093 (int32), Rack null, tags
    )
    check_response(message, 17, body)


def test_response_v12_tagged_structs_at_their_defaults_are_not_written() -> None:
    message = FetchResponse(
        responses=(
            FetchResponseFetchableTopicResponse(
                topic="t", partitions=(FetchResponsePartitionData(partition_index=0, high_watermark=0, records=None),)
            ),
        ),
    )
    body = bytes.fromhex(
        "00000000 0000 00000000"  # ThrottleTimeMs 0, ErrorCode 0, SessionId 0
        "02 02 74 02"  # Responses: 1, Topic "t" (compact, v0-12), Partitions: 1
        "00000000 0000 0000000000000000"  # -- PartitionIndex 0, ErrorCode 0, HighWatermark 0
        "ffffffffffffffff ffffffffffffffff"  # -- LastStableOffset -1, LogStartOffset -1
        "01 ffffffff"  # -- AbortedTransactions empty, PreferredReadReplica -1
        "00"  # -- Records null (compact nullable bytes: uvarint 0)
        "00"  # -- partition tag buffer: empty, (-1, -1) is each tagged struct's default
        "00 00"  # topic and body tag buffers
    )
    check_response(message, 12, body)


def test_version_rules() -> None:
    partition = FetchRequestFetchPartition(
        partition=0, current_leader_epoch=6, fetch_offset=1, log_start_offset=0, partition_max_bytes=1
    )
    base = FetchRequest(
        max_wait_ms=1, min_bytes=1, topics=(FetchRequestFetchTopic(topic="t", partitions=(partition,)),)
    )
    # ReplicaState (v15+) and ReplicaId (v0-14) are not ignorable; nor LastFetchedEpoch (v12+).
    with pytest.raises(EncodeError):
        codec(FetchRequest, 14).encode(dataclasses.replace(base, replica_state=FetchRequestReplicaState(replica_id=1)))
    with pytest.raises(EncodeError):
        codec(FetchRequest, 15).encode(dataclasses.replace(base, replica_id=1))
    with pytest.raises(EncodeError):
        codec(FetchRequest, 11).encode(
            dataclasses.replace(
                base,
                topics=(
                    FetchRequestFetchTopic(
                        topic="t", partitions=(dataclasses.replace(partition, last_fetched_epoch=3),)
                    ),
                ),
            )
        )
    # CurrentLeaderEpoch, LogStartOffset, the topic name and ClusterId are ignorable.
    v4 = codec(FetchRequest, 4)
    decoded = v4.decode_exact(v4.encode(dataclasses.replace(base, cluster_id="abc")))
    assert decoded.cluster_id is None
    assert (decoded.topics[0].partitions[0].current_leader_epoch, decoded.topics[0].partitions[0].log_start_offset) == (
        -1,
        -1,
    )
    v13 = codec(FetchRequest, 13)
    assert v13.decode_exact(v13.encode(base)).topics[0].topic == ""
    # A response's tagged structs cannot be sent before v12.
    diverged = FetchResponse(
        responses=(
            FetchResponseFetchableTopicResponse(
                topic="t",
                partitions=(
                    FetchResponsePartitionData(
                        partition_index=0, high_watermark=0, diverging_epoch=FetchResponseEpochEndOffset(epoch=1)
                    ),
                ),
            ),
        ),
    )
    with pytest.raises(EncodeError):
        codec(FetchResponse, 11).encode(diverged)


@pytest.mark.parametrize("version", [0, 4, 12, 13, 15, 17])
def test_served_from_v13_only(version: int) -> None:
    """The daemon's listener (allowed=INBOUND_API_KEYS) takes Fetch from v13 (the quorum's
    `__cluster_metadata` by topic id); older versions decode (captures) but are refused there."""
    body = FetchRequest(max_wait_ms=500, min_bytes=1, topics=())
    payload = encode_request(body, version, correlation_id=42)[4:]
    assert decode_request(payload).body == body
    if version >= 13:
        assert decode_served(payload, allowed=INBOUND_API_KEYS).body == body
        return
    with pytest.raises(UnsupportedVersionError) as info:
        decode_served(payload, allowed=INBOUND_API_KEYS)
    assert (info.value.api_key, info.value.api_version, info.value.correlation_id) == (1, version, 42)


@pytest.mark.parametrize("version", range(18))
@settings(max_examples=FLOOR_EXAMPLES)  # 18 versions (test_conformance_kio.py says why)
@given(data=st.data())
def test_every_version_round_trips_with_unknown_tags_compiled_and_interpreted(
    version: int, data: st.DataObject
) -> None:
    check_round_trip_with_unknown_tags((FetchRequest, FetchResponse), version, data)
