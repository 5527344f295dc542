"""EndQuorumEpoch (api key 54): whole frames written byte by byte from Kafka 3.9's
EndQuorumEpochRequest.json / EndQuorumEpochResponse.json, never by fencer's encoder.

v0 (non-flexible: request header v1, response header v0; PreferredSuccessors) and v1 (flexible;
KIP-853's PreferredCandidates, leader endpoints and the tagged NodeEndpoints, tag 0) of each
direction. Each frame is decoded by fencer and by kio, and fencer encodes the decoded message
back to the same bytes. Then the version rules, that the daemon still refuses the API, and a
property test with unknown tags, compiled against interpreted.
"""

import uuid

import pytest
from hypothesis import given
from hypothesis import strategies as st

from controller.ops.served import INBOUND_API_KEYS
from protocol.compiler import codec
from protocol.errors import EncodeError
from protocol.messages.end_quorum_epoch import (
    EndQuorumEpochRequest,
    EndQuorumEpochRequestLeaderEndpoint,
    EndQuorumEpochRequestPartitionData,
    EndQuorumEpochRequestReplicaInfo,
    EndQuorumEpochRequestTopicData,
    EndQuorumEpochResponse,
    EndQuorumEpochResponseNodeEndpoint,
    EndQuorumEpochResponsePartitionData,
    EndQuorumEpochResponseTopicData,
)
from protocol.registry import decode_request, encode_request

from .frames import check_request, check_response, check_round_trip_with_unknown_tags

DIR = uuid.UUID("00112233-4455-6677-8899-aabbccddeeff")
METADATA = "__cluster_metadata"
NAME_HEX = "5f5f636c75737465725f6d65746164617461"  # "__cluster_metadata", 18 bytes


def test_request_v0_preferred_successors() -> None:
    message = EndQuorumEpochRequest(
        cluster_id="abc",
        topics=(
            EndQuorumEpochRequestTopicData(
                topic_name=METADATA,
                partitions=(
                    EndQuorumEpochRequestPartitionData(
                        partition_index=0, leader_id=3001, leader_epoch=6, preferred_successors=(3002, 3003)
                    ),
                ),
            ),
        ),
    )
    body = bytes.fromhex(
        "0003 616263"  # ClusterId: nullable string "abc"
        "00000001"  # Topics: INT32 count 1
        f"0012 {NAME_HEX}"  # - TopicName
        "00000001"  # - Partitions: count 1
        "00000000 00000bb9 00000006"  # -- PartitionIndex 0, LeaderId 3001, LeaderEpoch 6
        "00000002 00000bba 00000bbb"  # -- PreferredSuccessors (v0 only): [3002, 3003]
    )
    check_request(message, 0, body)


def test_request_v1_preferred_candidates_and_leader_endpoints() -> None:
    message = EndQuorumEpochRequest(
        cluster_id=None,
        topics=(
            EndQuorumEpochRequestTopicData(
                topic_name=METADATA,
                partitions=(
                    EndQuorumEpochRequestPartitionData(
                        partition_index=0,
                        leader_id=3001,
                        leader_epoch=6,
                        preferred_candidates=(
                            EndQuorumEpochRequestReplicaInfo(candidate_id=3002, candidate_directory_id=DIR),
                        ),
                    ),
                ),
            ),
        ),
        leader_endpoints=(EndQuorumEpochRequestLeaderEndpoint(name="C", host="h", port=9093),),
    )
    body = bytes.fromhex(
        "00"  # ClusterId null (compact nullable string)
        "02"  # Topics: compact array 1
        f"13 {NAME_HEX}"  # - TopicName: compact string
        "02"  # - Partitions: compact array 1
        "00000000 00000bb9 00000006"  # -- PartitionIndex 0, LeaderId 3001, LeaderEpoch 6 (no PreferredSuccessors)
        "02"  # -- PreferredCandidates (v1+): compact array 1
        "00000bba"  # --- CandidateId 3002
        "00112233445566778899aabbccddeeff"  # --- CandidateDirectoryId
        "00"  # --- replica info tag buffer
        "00 00"  # partition and topic tag buffers
        "02"  # LeaderEndpoints (v1+): compact array 1
        "02 43 02 68 2385 00"  # - Name "C", Host "h", Port 9093, tag buffer
        "00"  # body tag buffer
    )
    check_request(message, 1, body)


def response(**changes: object) -> EndQuorumEpochResponse:
    partition = EndQuorumEpochResponsePartitionData(partition_index=0, error_code=0, leader_id=3001, leader_epoch=6)
    fields: dict[str, object] = {
        "topics": (EndQuorumEpochResponseTopicData(topic_name=METADATA, partitions=(partition,)),)
    }
    fields.update(changes)
    return EndQuorumEpochResponse(**fields)  # type: ignore[arg-type]


def test_response_v0() -> None:
    body = bytes.fromhex(
        "0000"  # ErrorCode 0
        "00000001"  # Topics: INT32 count 1
        f"0012 {NAME_HEX}"  # - TopicName
        "00000001"  # - Partitions: count 1
        "00000000 0000 00000bb9 00000006"  # -- PartitionIndex 0, ErrorCode 0, LeaderId 3001, LeaderEpoch 6
    )
    check_response(response(), 0, body)


def test_response_v1_tagged_node_endpoints_and_an_error() -> None:
    message = EndQuorumEpochResponse(
        error_code=0,
        topics=(
            EndQuorumEpochResponseTopicData(
                topic_name=METADATA,
                partitions=(
                    EndQuorumEpochResponsePartitionData(
                        partition_index=0, error_code=74, leader_id=3001, leader_epoch=6
                    ),
                ),
            ),
        ),
        node_endpoints=(EndQuorumEpochResponseNodeEndpoint(node_id=3001, host="h", port=9093),),
    )
    body = bytes.fromhex(
        "0000"  # ErrorCode 0
        "02"  # Topics: compact array 1
        f"13 {NAME_HEX}"  # - TopicName
        "02"  # - Partitions: compact array 1
        "00000000 004a"  # -- PartitionIndex 0, ErrorCode 74 (FENCED_LEADER_EPOCH)
        "00000bb9 00000006"  # -- LeaderId 3001, LeaderEpoch 6
        "00 00"  # partition and topic tag buffers
        "01"  # body tag buffer: 1 tagged field
        "00 0a"  # - tag 0 (NodeEndpoints), size 10
        "02 00000bb9 02 68 2385 00"  # -- compact array 1: NodeId 3001, Host "h", Port 9093, tag buffer
    )
    check_response(message, 1, body)


def test_version_rules() -> None:
    partition = EndQuorumEpochRequestPartitionData(
        partition_index=0,
        leader_id=1,
        leader_epoch=2,
        preferred_successors=(2,),
        preferred_candidates=(EndQuorumEpochRequestReplicaInfo(candidate_id=2, candidate_directory_id=DIR),),
    )
    full = EndQuorumEpochRequest(
        topics=(EndQuorumEpochRequestTopicData(topic_name=METADATA, partitions=(partition,)),),
        leader_endpoints=(EndQuorumEpochRequestLeaderEndpoint(name="C", host="h", port=1),),
    )
    # PreferredSuccessors (v0 only) and PreferredCandidates / LeaderEndpoints (v1+) are ignorable.
    v0 = codec(EndQuorumEpochRequest, 0)
    decoded = v0.decode_exact(v0.encode(full))
    assert decoded.topics[0].partitions[0].preferred_candidates == () and decoded.leader_endpoints == ()
    assert decoded.topics[0].partitions[0].preferred_successors == (2,)
    v1 = codec(EndQuorumEpochRequest, 1)
    decoded = v1.decode_exact(v1.encode(full))
    assert decoded.topics[0].partitions[0].preferred_successors == ()
    assert decoded.topics[0].partitions[0].preferred_candidates == partition.preferred_candidates
    with pytest.raises(EncodeError):
        codec(EndQuorumEpochResponse, 0).encode(
            response(node_endpoints=(EndQuorumEpochResponseNodeEndpoint(node_id=1, host="h", port=1),))
        )


@pytest.mark.parametrize("version", range(2))
def test_decoded_and_served(version: int) -> None:
    """The daemon's listener (allowed=INBOUND_API_KEYS) serves it (the quorum's, on every node)."""
    body = EndQuorumEpochRequest(topics=())
    payload = encode_request(body, version, correlation_id=42)[4:]
    assert decode_request(payload).body == body
    assert decode_request(payload, allowed=INBOUND_API_KEYS).body == decode_request(payload).body


@pytest.mark.parametrize("version", range(2))
@given(data=st.data())
def test_every_version_round_trips_with_unknown_tags_compiled_and_interpreted(
    version: int, data: st.DataObject
) -> None:
    check_round_trip_with_unknown_tags((EndQuorumEpochRequest, EndQuorumEpochResponse), version, data)
