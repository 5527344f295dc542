"""DescribeQuorum (api key 55): whole frames written byte by byte from Kafka 3.9's
DescribeQuorumRequest.json / DescribeQuorumResponse.json, never by fencer's encoder.

The request (the same in v0-2; every version is flexible) and the response at v0, v1 (KIP-836's
timestamps) and v2 (KIP-853's error messages, directory ids and Nodes). DescribeQuorum has no
tagged field, so the tag buffers are checked with an unknown tag instead. Each frame is decoded
by fencer and by kio, and fencer encodes the decoded message back to the same bytes. Then the
version rules, that the daemon still refuses the API, and a property test with unknown tags,
compiled against interpreted.
"""

import uuid

import pytest
from hypothesis import given
from hypothesis import strategies as st

from controller.ops.served import INBOUND_API_KEYS
from protocol.compiler import codec
from protocol.errors import EncodeError
from protocol.messages.describe_quorum import (
    DescribeQuorumRequest,
    DescribeQuorumRequestPartitionData,
    DescribeQuorumRequestTopicData,
    DescribeQuorumResponse,
    DescribeQuorumResponseListener,
    DescribeQuorumResponseNode,
    DescribeQuorumResponsePartitionData,
    DescribeQuorumResponseReplicaState,
    DescribeQuorumResponseTopicData,
)
from protocol.registry import decode_request, encode_request

from .frames import check_request, check_response, check_round_trip_with_unknown_tags, header_v2

DIR = uuid.UUID("00112233-4455-6677-8899-aabbccddeeff")
METADATA = "__cluster_metadata"
NAME_HEX = "13 5f5f636c75737465725f6d65746164617461"  # compact string "__cluster_metadata" (uvarint 18+1)


def request() -> DescribeQuorumRequest:
    return DescribeQuorumRequest(
        topics=(
            DescribeQuorumRequestTopicData(
                topic_name=METADATA, partitions=(DescribeQuorumRequestPartitionData(partition_index=0),)
            ),
        )
    )


REQUEST_BODY = (
    "02"  # Topics: compact array 1
    f"{NAME_HEX}"  # - TopicName
    "02"  # - Partitions: compact array 1
    "00000000"  # -- PartitionIndex 0
    "00 00 00"  # partition, topic and body tag buffers
)


@pytest.mark.parametrize("version", [0, 1, 2])
def test_request_is_the_same_in_every_version(version: int) -> None:
    check_request(request(), version, bytes.fromhex(REQUEST_BODY))


def test_request_v2_unknown_tag_is_kept() -> None:
    """kio 0.5.0 cannot read a tag it does not know (a KeyError), so this frame is checked against fencer alone."""
    body = bytes.fromhex(
        "01"  # Topics: compact, empty
        "01 07 02 0102"  # body tag buffer: 1 field, tag 7 (unknown to 3.9), size 2
    )
    decoded = decode_request(header_v2(55, 2) + body).body
    assert decoded == DescribeQuorumRequest(topics=(), unknown_tags=((7, b"\x01\x02"),))
    assert codec(DescribeQuorumRequest, 2).encode(decoded) == body


def voter(**changes: object) -> DescribeQuorumResponseReplicaState:
    fields: dict[str, object] = {"replica_id": 3001, "log_end_offset": 100}
    fields.update(changes)
    return DescribeQuorumResponseReplicaState(**fields)  # type: ignore[arg-type]


def response(
    *voters: DescribeQuorumResponseReplicaState, partition_error_message: str | None = "", **changes: object
) -> DescribeQuorumResponse:
    partition = DescribeQuorumResponsePartitionData(
        partition_index=0,
        error_message=partition_error_message,
        leader_id=3001,
        leader_epoch=6,
        high_watermark=99,
        current_voters=voters,
        observers=(),
    )
    topics = (DescribeQuorumResponseTopicData(topic_name=METADATA, partitions=(partition,)),)
    return DescribeQuorumResponse(topics=topics, **changes)  # type: ignore[arg-type]


def test_response_v0() -> None:
    message = response(voter())
    body = bytes.fromhex(
        "0000"  # ErrorCode 0 (no ErrorMessage before v2)
        "02"  # Topics: compact array 1
        f"{NAME_HEX}"  # - TopicName
        "02"  # - Partitions: compact array 1
        "00000000 0000"  # -- PartitionIndex 0, ErrorCode 0
        "00000bb9 00000006"  # -- LeaderId 3001, LeaderEpoch 6
        "0000000000000063"  # -- HighWatermark 99
        "02"  # -- CurrentVoters: compact array 1
        "00000bb9"  # --- ReplicaId 3001 (no ReplicaDirectoryId before v2)
        "0000000000000064"  # --- LogEndOffset 100 (no timestamps before v1)
        "00"  # --- replica tag buffer
        "01"  # -- Observers: compact, empty
        "00 00 00"  # partition, topic and body tag buffers (no Nodes before v2)
    )
    check_response(message, 0, body)


def test_response_v1_timestamps() -> None:
    message = response(voter(last_fetch_timestamp=-1, last_caught_up_timestamp=1_700_000_000_000))
    body = bytes.fromhex(
        "0000 02"  # ErrorCode 0, Topics: compact array 1
        f"{NAME_HEX} 02"  # - TopicName, Partitions: compact array 1
        "00000000 0000 00000bb9 00000006 0000000000000063"  # -- index, error, leader, epoch, high watermark
        "02"  # -- CurrentVoters: compact array 1
        "00000bb9 0000000000000064"  # --- ReplicaId 3001, LogEndOffset 100
        "ffffffffffffffff"  # --- LastFetchTimestamp -1 (v1+)
        "0000018bcfe56800"  # --- LastCaughtUpTimestamp 1700000000000 (v1+)
        "00"  # --- replica tag buffer
        "01 00 00 00"  # -- Observers empty; partition, topic and body tag buffers
    )
    check_response(message, 1, body)


def test_response_v2_error_messages_directory_ids_and_nodes() -> None:
    message = response(
        voter(replica_directory_id=DIR, last_fetch_timestamp=5, last_caught_up_timestamp=6),
        error_message=None,
        partition_error_message="m",
        nodes=(
            DescribeQuorumResponseNode(
                node_id=3001, listeners=(DescribeQuorumResponseListener(name="C", host="h", port=9093),)
            ),
        ),
    )
    body = bytes.fromhex(
        "0000"  # ErrorCode 0
        "00"  # ErrorMessage null (v2+, compact nullable string)
        "02"  # Topics: compact array 1
        f"{NAME_HEX}"  # - TopicName
        "02"  # - Partitions: compact array 1
        "00000000 0000"  # -- PartitionIndex 0, ErrorCode 0
        "02 6d"  # -- ErrorMessage "m" (v2+)
        "00000bb9 00000006 0000000000000063"  # -- LeaderId 3001, LeaderEpoch 6, HighWatermark 99
        "02"  # -- CurrentVoters: compact array 1
        "00000bb9"  # --- ReplicaId 3001
        "00112233445566778899aabbccddeeff"  # --- ReplicaDirectoryId (v2+)
        "0000000000000064"  # --- LogEndOffset 100
        "0000000000000005 0000000000000006"  # --- LastFetchTimestamp 5, LastCaughtUpTimestamp 6
        "00"  # --- replica tag buffer
        "01"  # -- Observers: compact, empty
        "00 00"  # partition and topic tag buffers
        "02"  # Nodes (v2+): compact array 1
        "00000bb9"  # - NodeId 3001
        "02"  # - Listeners: compact array 1
        "02 43 02 68 2385 00"  # -- Name "C", Host "h", Port 9093, tag buffer
        "00"  # - node tag buffer
        "00"  # body tag buffer
    )
    check_response(message, 2, body)


def test_version_rules() -> None:
    # The error messages and timestamps are ignorable: dropped before their versions.
    full = response(
        voter(last_fetch_timestamp=5, last_caught_up_timestamp=6), error_message="e", partition_error_message="m"
    )
    v0 = codec(DescribeQuorumResponse, 0)
    decoded = v0.decode_exact(v0.encode(full))
    assert decoded == response(voter())
    # ReplicaDirectoryId and Nodes are not ignorable.
    with pytest.raises(EncodeError):
        codec(DescribeQuorumResponse, 1).encode(response(voter(replica_directory_id=DIR)))
    with pytest.raises(EncodeError):
        codec(DescribeQuorumResponse, 1).encode(response(nodes=(DescribeQuorumResponseNode(node_id=1),)))


@pytest.mark.parametrize("version", range(3))
def test_decoded_and_served(version: int) -> None:
    """The daemon's listener (allowed=INBOUND_API_KEYS) serves it (the quorum's, on every node)."""
    payload = encode_request(request(), version, correlation_id=42)[4:]
    assert decode_request(payload).body == request()
    assert decode_request(payload, allowed=INBOUND_API_KEYS).body == decode_request(payload).body


@pytest.mark.parametrize("version", range(3))
@given(data=st.data())
def test_every_version_round_trips_with_unknown_tags_compiled_and_interpreted(
    version: int, data: st.DataObject
) -> None:
    check_round_trip_with_unknown_tags((DescribeQuorumRequest, DescribeQuorumResponse), version, data)
