"""Vote (api key 52): whole frames written byte by byte from Kafka 3.9's VoteRequest.json /
VoteResponse.json, never by fencer's encoder.

Both versions of each direction (every version is flexible: request header v2, response header
v1): v0, and v1 with KIP-853's voter id, directory ids and the tagged NodeEndpoints (tag 0).
Each frame is decoded by fencer and by kio, and fencer encodes the decoded message back to the
same bytes. Then the version rules, that the daemon still refuses the API, and a property test
with unknown tags, compiled against interpreted.
"""

import dataclasses
import uuid

import pytest
from hypothesis import given
from hypothesis import strategies as st

from controller.ops.served import INBOUND_API_KEYS
from protocol.compiler import codec
from protocol.errors import EncodeError
from protocol.messages.vote import (
    VoteRequest,
    VoteRequestPartitionData,
    VoteRequestTopicData,
    VoteResponse,
    VoteResponseNodeEndpoint,
    VoteResponsePartitionData,
    VoteResponseTopicData,
)
from protocol.registry import decode_request, encode_request

from .frames import check_request, check_response, check_round_trip_with_unknown_tags

CANDIDATE_DIR = uuid.UUID("00112233-4455-6677-8899-aabbccddeeff")
VOTER_DIR = uuid.UUID("ffeeddcc-bbaa-9988-7766-554433221100")
METADATA = "__cluster_metadata"
METADATA_HEX = "13 5f5f636c75737465725f6d65746164617461"  # compact string: uvarint 18+1, then the name


def request_partition(**changes: object) -> VoteRequestPartitionData:
    fields: dict[str, object] = {
        "partition_index": 0,
        "candidate_epoch": 5,
        "candidate_id": 3001,
        "last_offset_epoch": 4,
        "last_offset": 100,
    }
    fields.update(changes)
    return VoteRequestPartitionData(**fields)  # type: ignore[arg-type]


def test_request_v0() -> None:
    message = VoteRequest(
        cluster_id="abc", topics=(VoteRequestTopicData(topic_name=METADATA, partitions=(request_partition(),)),)
    )
    body = bytes.fromhex(
        "04 616263"  # ClusterId: compact nullable string "abc" (uvarint 3+1); no VoterId before v1
        "02"  # Topics: compact array, uvarint 1+1
        f"{METADATA_HEX}"  # - TopicName "__cluster_metadata"
        "02"  # - Partitions: compact array 1
        "00000000"  # -- PartitionIndex 0
        "00000005"  # -- CandidateEpoch 5
        "00000bb9"  # -- CandidateId 3001 (no directory ids before v1)
        "00000004"  # -- LastOffsetEpoch 4
        "0000000000000064"  # -- LastOffset 100
        "00"  # -- partition tag buffer
        "00"  # - topic tag buffer
        "00"  # body tag buffer
    )
    check_request(message, 0, body)


def test_request_v1_voter_key_and_directory_ids() -> None:
    message = VoteRequest(
        cluster_id=None,
        voter_id=3002,
        topics=(
            VoteRequestTopicData(
                topic_name=METADATA,
                partitions=(request_partition(candidate_directory_id=CANDIDATE_DIR, voter_directory_id=VOTER_DIR),),
            ),
        ),
    )
    body = bytes.fromhex(
        "00"  # ClusterId null (compact nullable string: uvarint 0)
        "00000bba"  # VoterId 3002 (v1+)
        "02"  # Topics: compact array 1
        f"{METADATA_HEX}"  # - TopicName
        "02"  # - Partitions: compact array 1
        "00000000 00000005 00000bb9"  # -- PartitionIndex 0, CandidateEpoch 5, CandidateId 3001
        "00112233445566778899aabbccddeeff"  # -- CandidateDirectoryId (v1+)
        "ffeeddccbbaa99887766554433221100"  # -- VoterDirectoryId (v1+)
        "00000004 0000000000000064"  # -- LastOffsetEpoch 4, LastOffset 100
        "00 00 00"  # partition, topic and body tag buffers
    )
    check_request(message, 1, body)


def test_request_v2_pre_vote() -> None:
    """Kafka 4.0's v2 (KIP-996): PreVote, a bool after LastOffset; kio 0.5.0 predates it."""
    message = VoteRequest(
        cluster_id=None,
        voter_id=3002,
        topics=(VoteRequestTopicData(topic_name=METADATA, partitions=(request_partition(pre_vote=True),)),),
    )
    body = bytes.fromhex(
        "00"  # ClusterId null
        "00000bba"  # VoterId 3002
        "02"  # Topics: compact array 1
        f"{METADATA_HEX}"  # - TopicName
        "02"  # - Partitions: compact array 1
        "00000000 00000005 00000bb9"  # -- PartitionIndex 0, CandidateEpoch 5, CandidateId 3001
        "00000000000000000000000000000000"  # -- CandidateDirectoryId: zero
        "00000000000000000000000000000000"  # -- VoterDirectoryId: zero
        "00000004 0000000000000064"  # -- LastOffsetEpoch 4, LastOffset 100
        "01"  # -- PreVote true (v2+)
        "00 00 00"  # partition, topic and body tag buffers
    )
    check_request(message, 2, body)
    # PreVote is not ignorable: a pre-vote cannot be sent at v1 (to a Kafka 3.9 voter)
    with pytest.raises(EncodeError):
        codec(VoteRequest, 1).encode(message)


def response(**changes: object) -> VoteResponse:
    partition = VoteResponsePartitionData(
        partition_index=0, error_code=0, leader_id=-1, leader_epoch=5, vote_granted=True
    )
    fields: dict[str, object] = {"topics": (VoteResponseTopicData(topic_name=METADATA, partitions=(partition,)),)}
    fields.update(changes)
    return VoteResponse(**fields)  # type: ignore[arg-type]


RESPONSE_BODY = (
    "0000"  # ErrorCode 0
    "02"  # Topics: compact array 1
    f"{METADATA_HEX}"  # - TopicName
    "02"  # - Partitions: compact array 1
    "00000000"  # -- PartitionIndex 0
    "0000"  # -- ErrorCode 0
    "ffffffff"  # -- LeaderId -1 (unknown)
    "00000005"  # -- LeaderEpoch 5
    "01"  # -- VoteGranted true
    "00 00"  # partition and topic tag buffers
)


def test_response_v0() -> None:
    check_response(response(), 0, bytes.fromhex(RESPONSE_BODY + "00"))  # body tag buffer: empty


def test_response_v1_tagged_node_endpoints() -> None:
    message = response(node_endpoints=(VoteResponseNodeEndpoint(node_id=3001, host="h", port=9093),))
    body = bytes.fromhex(
        RESPONSE_BODY + "01"  # body tag buffer: 1 tagged field
        "00 0a"  # - tag 0 (NodeEndpoints, v1+), size 10
        "02"  # -- compact array 1
        "00000bb9"  # --- NodeId 3001
        "02 68"  # --- Host "h"
        "2385"  # --- Port 9093 (uint16)
        "00"  # --- endpoint tag buffer
    )
    check_response(message, 1, body)
    check_response(message, 2, body)  # v2's response is v1's
    # at its default (no endpoints) the tag is not written
    check_response(response(), 1, bytes.fromhex(RESPONSE_BODY + "00"))


def test_version_rules() -> None:
    # VoterId and the directory ids are ignorable: dropped in v0, decoded to their defaults.
    full = VoteRequest(
        cluster_id="abc",
        voter_id=3002,
        topics=(
            VoteRequestTopicData(
                topic_name=METADATA,
                partitions=(request_partition(candidate_directory_id=CANDIDATE_DIR, voter_directory_id=VOTER_DIR),),
            ),
        ),
    )
    v0 = codec(VoteRequest, 0)
    decoded = v0.decode_exact(v0.encode(full))
    assert decoded.voter_id == -1
    assert decoded.topics[0].partitions[0] == request_partition()
    # NodeEndpoints is not ignorable: a v0 response cannot carry any.
    with pytest.raises(EncodeError):
        codec(VoteResponse, 0).encode(
            dataclasses.replace(response(), node_endpoints=(VoteResponseNodeEndpoint(node_id=1, host="h", port=1),))
        )


@pytest.mark.parametrize("version", range(3))
def test_decoded_and_served(version: int) -> None:
    """The daemon's listener (allowed=INBOUND_API_KEYS) serves it (the quorum's, on every node)."""
    body = VoteRequest(topics=())
    payload = encode_request(body, version, correlation_id=42)[4:]
    assert decode_request(payload).body == body
    assert decode_request(payload, allowed=INBOUND_API_KEYS).body == decode_request(payload).body


@pytest.mark.parametrize("version", range(3))
@given(data=st.data())
def test_every_version_round_trips_with_unknown_tags_compiled_and_interpreted(
    version: int, data: st.DataObject
) -> None:
    check_round_trip_with_unknown_tags((VoteRequest, VoteResponse), version, data)
