"""BeginQuorumEpoch (api key 53): whole frames written byte by byte from Kafka 3.9's
BeginQuorumEpochRequest.json / BeginQuorumEpochResponse.json, never by fencer's encoder.

v0 (non-flexible: request header v1, response header v0, INT16 strings, INT32 arrays) and v1
(flexible; KIP-853's voter id, directory id, leader endpoints and the tagged NodeEndpoints, tag
0) of each direction. Each frame is decoded by fencer and by kio, and fencer encodes the decoded
message back to the same bytes. Then the version rules, that the daemon still refuses the API,
and a property test with unknown tags, compiled against interpreted.
"""

import uuid

import pytest
from hypothesis import given
from hypothesis import strategies as st

from controller.ops.served import INBOUND_API_KEYS
from protocol.compiler import codec
from protocol.errors import EncodeError
from protocol.messages.begin_quorum_epoch import (
    BeginQuorumEpochRequest,
    BeginQuorumEpochRequestLeaderEndpoint,
    BeginQuorumEpochRequestPartitionData,
    BeginQuorumEpochRequestTopicData,
    BeginQuorumEpochResponse,
    BeginQuorumEpochResponseNodeEndpoint,
    BeginQuorumEpochResponsePartitionData,
    BeginQuorumEpochResponseTopicData,
)
from protocol.registry import decode_request, encode_request

from .frames import check_request, check_response, check_round_trip_with_unknown_tags

VOTER_DIR = uuid.UUID("00112233-4455-6677-8899-aabbccddeeff")
METADATA = "__cluster_metadata"
NAME_HEX = "5f5f636c75737465725f6d65746164617461"  # "__cluster_metadata", 18 bytes


def test_request_v0() -> None:
    message = BeginQuorumEpochRequest(
        cluster_id="abc",
        topics=(
            BeginQuorumEpochRequestTopicData(
                topic_name=METADATA,
                partitions=(BeginQuorumEpochRequestPartitionData(partition_index=0, leader_id=3001, leader_epoch=6),),
            ),
        ),
    )
    body = bytes.fromhex(
        "0003 616263"  # ClusterId: nullable string "abc" (INT16 length); no VoterId before v1
        "00000001"  # Topics: INT32 count 1
        f"0012 {NAME_HEX}"  # - TopicName "__cluster_metadata"
        "00000001"  # - Partitions: count 1
        "00000000"  # -- PartitionIndex 0 (no VoterDirectoryId before v1)
        "00000bb9"  # -- LeaderId 3001
        "00000006"  # -- LeaderEpoch 6 (no tag buffers, no LeaderEndpoints in v0)
    )
    check_request(message, 0, body)


def test_request_v0_null_cluster_id() -> None:
    message = BeginQuorumEpochRequest(cluster_id=None, topics=())
    check_request(message, 0, bytes.fromhex("ffff 00000000"))  # ClusterId null (INT16 -1), Topics empty


def test_request_v1_flexible_voter_key_and_leader_endpoints() -> None:
    message = BeginQuorumEpochRequest(
        cluster_id="abc",
        voter_id=3002,
        topics=(
            BeginQuorumEpochRequestTopicData(
                topic_name=METADATA,
                partitions=(
                    BeginQuorumEpochRequestPartitionData(
                        partition_index=0, voter_directory_id=VOTER_DIR, leader_id=3001, leader_epoch=6
                    ),
                ),
            ),
        ),
        leader_endpoints=(BeginQuorumEpochRequestLeaderEndpoint(name="CONTROLLER", host="h", port=9093),),
    )
    body = bytes.fromhex(
        "04 616263"  # ClusterId: compact nullable string "abc"
        "00000bba"  # VoterId 3002 (v1+)
        "02"  # Topics: compact array 1
        f"13 {NAME_HEX}"  # - TopicName: compact string (uvarint 18+1)
        "02"  # - Partitions: compact array 1
        "00000000"  # -- PartitionIndex 0
        "00112233445566778899aabbccddeeff"  # -- VoterDirectoryId (v1+)
        "00000bb9 00000006"  # -- LeaderId 3001, LeaderEpoch 6
        "00 00"  # partition and topic tag buffers
        "02"  # LeaderEndpoints (v1+): compact array 1
        "0b 434f4e54524f4c4c4552"  # - Name "CONTROLLER" (uvarint 10+1)
        "02 68"  # - Host "h"
        "2385"  # - Port 9093 (uint16)
        "00"  # - endpoint tag buffer
        "00"  # body tag buffer
    )
    check_request(message, 1, body)


def response(**changes: object) -> BeginQuorumEpochResponse:
    partition = BeginQuorumEpochResponsePartitionData(partition_index=0, error_code=0, leader_id=3001, leader_epoch=6)
    fields: dict[str, object] = {
        "topics": (BeginQuorumEpochResponseTopicData(topic_name=METADATA, partitions=(partition,)),)
    }
    fields.update(changes)
    return BeginQuorumEpochResponse(**fields)  # type: ignore[arg-type]


def test_response_v0() -> None:
    body = bytes.fromhex(
        "0000"  # ErrorCode 0
        "00000001"  # Topics: INT32 count 1
        f"0012 {NAME_HEX}"  # - TopicName
        "00000001"  # - Partitions: count 1
        "00000000 0000"  # -- PartitionIndex 0, ErrorCode 0
        "00000bb9 00000006"  # -- LeaderId 3001, LeaderEpoch 6
    )
    check_response(response(), 0, body)


def test_response_v1_tagged_node_endpoints() -> None:
    message = response(
        error_code=0,
        node_endpoints=(
            BeginQuorumEpochResponseNodeEndpoint(node_id=3001, host="h", port=9093),
            BeginQuorumEpochResponseNodeEndpoint(node_id=3002, host="i", port=9094),
        ),
    )
    body = bytes.fromhex(
        "0000"  # ErrorCode 0
        "02"  # Topics: compact array 1
        f"13 {NAME_HEX}"  # - TopicName
        "02"  # - Partitions: compact array 1
        "00000000 0000 00000bb9 00000006"  # -- PartitionIndex 0, ErrorCode 0, LeaderId 3001, LeaderEpoch 6
        "00 00"  # partition and topic tag buffers
        "01"  # body tag buffer: 1 tagged field
        "00 13"  # - tag 0 (NodeEndpoints), size 19
        "03"  # -- compact array 2
        "00000bb9 02 68 2385 00"  # --- NodeId 3001, Host "h", Port 9093, tag buffer
        "00000bba 02 69 2386 00"  # --- NodeId 3002, Host "i", Port 9094, tag buffer
    )
    check_response(message, 1, body)


def test_version_rules() -> None:
    # VoterId, VoterDirectoryId and LeaderEndpoints are ignorable: dropped in v0.
    full = BeginQuorumEpochRequest(
        voter_id=3002,
        topics=(
            BeginQuorumEpochRequestTopicData(
                topic_name=METADATA,
                partitions=(
                    BeginQuorumEpochRequestPartitionData(
                        partition_index=0, voter_directory_id=VOTER_DIR, leader_id=1, leader_epoch=2
                    ),
                ),
            ),
        ),
        leader_endpoints=(BeginQuorumEpochRequestLeaderEndpoint(name="C", host="h", port=1),),
    )
    v0 = codec(BeginQuorumEpochRequest, 0)
    decoded = v0.decode_exact(v0.encode(full))
    assert (decoded.voter_id, decoded.leader_endpoints) == (-1, ())
    assert decoded.topics[0].partitions[0].voter_directory_id == uuid.UUID(int=0)
    # NodeEndpoints is not ignorable: a v0 response cannot carry any.
    with pytest.raises(EncodeError):
        codec(BeginQuorumEpochResponse, 0).encode(
            response(node_endpoints=(BeginQuorumEpochResponseNodeEndpoint(node_id=1, host="h", port=1),))
        )


@pytest.mark.parametrize("version", range(2))
def test_decoded_and_served(version: int) -> None:
    """The daemon's listener (allowed=INBOUND_API_KEYS) serves it (the quorum's, on every node)."""
    body = BeginQuorumEpochRequest(topics=())
    payload = encode_request(body, version, correlation_id=42)[4:]
    assert decode_request(payload).body == body
    assert decode_request(payload, allowed=INBOUND_API_KEYS).body == decode_request(payload).body


@pytest.mark.parametrize("version", range(2))
@given(data=st.data())
def test_every_version_round_trips_with_unknown_tags_compiled_and_interpreted(
    version: int, data: st.DataObject
) -> None:
    check_round_trip_with_unknown_tags((BeginQuorumEpochRequest, BeginQuorumEpochResponse), version, data)
