"""FetchSnapshot (api key 59): whole frames written byte by byte from Kafka 3.9's
FetchSnapshotRequest.json / FetchSnapshotResponse.json, never by fencer's encoder.

Both versions of each direction (every version is flexible), with every tagged field of the
schema: the request's ClusterId (tag 0 of the body) and, from v1, ReplicaDirectoryId (tag 0 of
the partition); the response's CurrentLeader (a tagged single struct, tag 0 of the partition)
and, from v1, NodeEndpoints (tag 0 of the body). The snapshot chunk (`records`) is raw bytes.
Each frame is decoded by fencer and by kio, and fencer encodes the decoded message back to the
same bytes. Then the version rules, that the daemon still refuses the API, and a property test
with unknown tags, compiled against interpreted.
"""

import uuid

import pytest
from hypothesis import given
from hypothesis import strategies as st

from controller.ops.served import INBOUND_API_KEYS
from protocol.compiler import codec
from protocol.errors import EncodeError
from protocol.messages.fetch_snapshot import (
    FetchSnapshotRequest,
    FetchSnapshotRequestPartitionSnapshot,
    FetchSnapshotRequestSnapshotId,
    FetchSnapshotRequestTopicSnapshot,
    FetchSnapshotResponse,
    FetchSnapshotResponseLeaderIdAndEpoch,
    FetchSnapshotResponseNodeEndpoint,
    FetchSnapshotResponsePartitionSnapshot,
    FetchSnapshotResponseSnapshotId,
    FetchSnapshotResponseTopicSnapshot,
)
from protocol.registry import decode_request, encode_request
from protocol.spec import ZERO_UUID

from .frames import check_request, check_response, check_round_trip_with_unknown_tags

DIR = uuid.UUID("00112233-4455-6677-8899-aabbccddeeff")
METADATA = "__cluster_metadata"
NAME_HEX = "13 5f5f636c75737465725f6d65746164617461"  # compact string "__cluster_metadata" (uvarint 18+1)


def request(cluster_id: str | None, directory_id: uuid.UUID = ZERO_UUID) -> FetchSnapshotRequest:
    partition = FetchSnapshotRequestPartitionSnapshot(
        partition=0,
        current_leader_epoch=6,
        snapshot_id=FetchSnapshotRequestSnapshotId(end_offset=100, epoch=5),
        position=2048,
        replica_directory_id=directory_id,
    )
    return FetchSnapshotRequest(
        cluster_id=cluster_id,
        replica_id=3002,
        topics=(FetchSnapshotRequestTopicSnapshot(name=METADATA, partitions=(partition,)),),
    )


REQUEST_PARTITION = (
    "00000000"  # -- Partition 0
    "00000006"  # -- CurrentLeaderEpoch 6
    "0000000000000064 00000005"  # -- SnapshotId: EndOffset 100, Epoch 5
    "00"  # -- SnapshotId's tag buffer (a nested struct of a flexible version has one)
    "0000000000000800"  # -- Position 2048
)


def test_request_v0_tagged_cluster_id() -> None:
    body = bytes.fromhex(
        "00000bba"  # ReplicaId 3002 (ClusterId is tagged: it is in the body's tag buffer)
        "7fffffff"  # MaxBytes 2147483647
        "02"  # Topics: compact array 1
        f"{NAME_HEX}"  # - Name
        "02"  # - Partitions: compact array 1
        f"{REQUEST_PARTITION}"
        "00"  # -- partition tag buffer: empty (no ReplicaDirectoryId before v1)
        "00"  # - topic tag buffer
        "01"  # body tag buffer: 1 tagged field
        "00 04 04 616263"  # - tag 0 (ClusterId), size 4: compact nullable string "abc"
    )
    check_request(request("abc"), 0, body)


def test_request_v1_tagged_directory_id_and_no_cluster_id() -> None:
    body = bytes.fromhex(
        "00000bba 7fffffff"  # ReplicaId 3002, MaxBytes
        "02"  # Topics: compact array 1
        f"{NAME_HEX}"  # - Name
        "02"  # - Partitions: compact array 1
        f"{REQUEST_PARTITION}"
        "01"  # -- partition tag buffer: 1 tagged field
        "00 10 00112233445566778899aabbccddeeff"  # --- tag 0 (ReplicaDirectoryId, v1+), size 16, the uuid
        "00"  # - topic tag buffer
        "00"  # body tag buffer: empty (ClusterId null, its default)
    )
    check_request(request(None, DIR), 1, body)


def response(leader: FetchSnapshotResponseLeaderIdAndEpoch, **changes: object) -> FetchSnapshotResponse:
    partition = FetchSnapshotResponsePartitionSnapshot(
        index=0,
        error_code=0,
        snapshot_id=FetchSnapshotResponseSnapshotId(end_offset=100, epoch=5),
        current_leader=leader,
        size=1024,
        position=0,
        unaligned_records=b"\x01\x02\x03",
    )
    topics = (FetchSnapshotResponseTopicSnapshot(name=METADATA, partitions=(partition,)),)
    return FetchSnapshotResponse(topics=topics, **changes)  # type: ignore[arg-type]


RESPONSE_HEAD = (
    "00000000"  # ThrottleTimeMs 0
    "0000"  # ErrorCode 0
    "02"  # Topics: compact array 1
    f"{NAME_HEX}"  # - Name
    "02"  # - Partitions: compact array 1
    "00000000 0000"  # -- Index 0, ErrorCode 0
    "0000000000000064 00000005 00"  # -- SnapshotId: EndOffset 100, Epoch 5, its tag buffer
    "0000000000000400"  # -- Size 1024 (CurrentLeader is tagged: in the partition's tag buffer)
    "0000000000000000"  # -- Position 0
    "04 010203"  # -- UnalignedRecords: compact bytes, uvarint 3+1, raw (never parsed)
)


def test_response_v0_tagged_current_leader() -> None:
    message = response(FetchSnapshotResponseLeaderIdAndEpoch(leader_id=3001, leader_epoch=6))
    body = bytes.fromhex(
        RESPONSE_HEAD + "01"  # -- partition tag buffer: 1 tagged field
        "00 09"  # --- tag 0 (CurrentLeader), size 9
        "00000bb9 00000006 00"  # ---- LeaderId 3001, LeaderEpoch 6, the struct's tag buffer
        "00"  # - topic tag buffer
        "00"  # body tag buffer
    )
    check_response(message, 0, body)


def test_response_v1_tagged_node_endpoints_and_current_leader_at_its_default() -> None:
    message = response(
        FetchSnapshotResponseLeaderIdAndEpoch(),
        node_endpoints=(FetchSnapshotResponseNodeEndpoint(node_id=3001, host="h", port=9093),),
    )
    body = bytes.fromhex(
        RESPONSE_HEAD + "00"  # -- partition tag buffer: empty (CurrentLeader (0, 0) is the default: not written)
        "00"  # - topic tag buffer
        "01"  # body tag buffer: 1 tagged field
        "00 0a"  # - tag 0 (NodeEndpoints, v1+), size 10
        "02 00000bb9 02 68 2385 00"  # -- compact array 1: NodeId 3001, Host "h", Port 9093, tag buffer
    )
    check_response(message, 1, body)


def test_current_leader_with_only_a_leader_epoch_is_written() -> None:
    """Kafka compares the whole struct with its default: (0, 7) differs from (0, 0)."""
    message = response(FetchSnapshotResponseLeaderIdAndEpoch(leader_epoch=7))
    encoded = codec(FetchSnapshotResponse, 0).encode(message)
    assert bytes.fromhex("01 00 09 00000000 00000007 00") in encoded
    assert codec(FetchSnapshotResponse, 0).decode_exact(encoded) == message


def test_version_rules() -> None:
    # ReplicaDirectoryId is ignorable: dropped in v0.
    v0 = codec(FetchSnapshotRequest, 0)
    assert v0.decode_exact(v0.encode(request("abc", DIR))) == request("abc")
    # NodeEndpoints is not: a v0 response cannot carry any.
    with pytest.raises(EncodeError):
        codec(FetchSnapshotResponse, 0).encode(
            response(
                FetchSnapshotResponseLeaderIdAndEpoch(),
                node_endpoints=(FetchSnapshotResponseNodeEndpoint(node_id=1, host="h", port=1),),
            )
        )


@pytest.mark.parametrize("version", range(2))
def test_decoded_and_served(version: int) -> None:
    """The daemon's listener (allowed=INBOUND_API_KEYS) serves it (the quorum's, on every node)."""
    payload = encode_request(request("abc"), version, correlation_id=42)[4:]
    assert decode_request(payload).body == request("abc")
    assert decode_request(payload, allowed=INBOUND_API_KEYS).body == decode_request(payload).body


@pytest.mark.parametrize("version", range(2))
@given(data=st.data())
def test_every_version_round_trips_with_unknown_tags_compiled_and_interpreted(
    version: int, data: st.DataObject
) -> None:
    check_round_trip_with_unknown_tags((FetchSnapshotRequest, FetchSnapshotResponse), version, data)
