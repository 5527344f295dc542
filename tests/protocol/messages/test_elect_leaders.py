"""ElectLeaders (api key 43): hand-derived golden bytes, including a null partition list."""

import pytest

from protocol.compiler import codec
from protocol.errors import EncodeError
from protocol.messages.elect_leaders import (
    PREFERRED,
    UNCLEAN,
    ElectLeadersRequest,
    ElectLeadersRequestTopicPartitions,
    ElectLeadersResponse,
    ElectLeadersResponsePartitionResult,
    ElectLeadersResponseReplicaElectionResult,
)


def test_request_v1_golden() -> None:
    message = ElectLeadersRequest(
        election_type=UNCLEAN,
        topic_partitions=(ElectLeadersRequestTopicPartitions(topic="t", partitions=(0, 3)),),
        timeout_ms=30000,
    )
    golden = bytes.fromhex(
        "01"  # election_type int8 1 (unclean, KIP-460)
        "00000001"  # topic_partitions: int32 count 1
        "0001 74"  # - topic string: int16 length 1, "t"
        "00000002 00000000 00000003"  # - partitions: int32 count 2, 0, 3
        "00007530"  # timeout_ms int32 30000
    )
    assert codec(ElectLeadersRequest, 1).encode(message) == golden
    assert codec(ElectLeadersRequest, 1).decode_exact(golden) == message


def test_request_v2_golden_all_partitions() -> None:
    message = ElectLeadersRequest(election_type=PREFERRED, topic_partitions=None)
    golden = bytes.fromhex(
        "00"  # election_type int8 0 (preferred)
        "00"  # topic_partitions: compact array, uvarint 0 = null (every partition)
        "0000ea60"  # timeout_ms int32 60000 (Kafka's default)
        "00"  # tag buffer
    )
    assert codec(ElectLeadersRequest, 2).encode(message) == golden
    assert codec(ElectLeadersRequest, 2).decode_exact(golden) == message


def test_request_v0_golden_null() -> None:
    message = ElectLeadersRequest(topic_partitions=None, timeout_ms=1000)
    golden = bytes.fromhex(
        "ffffffff"  # topic_partitions: int32 count -1 = null (no election_type in v0)
        "000003e8"  # timeout_ms int32 1000
    )
    assert codec(ElectLeadersRequest, 0).encode(message) == golden
    assert codec(ElectLeadersRequest, 0).decode_exact(golden) == message


def test_election_type_is_not_in_v0() -> None:
    message = ElectLeadersRequest(election_type=UNCLEAN, topic_partitions=None)
    with pytest.raises(EncodeError):
        codec(ElectLeadersRequest, 0).encode(message)


def test_response_v2_golden() -> None:
    message = ElectLeadersResponse(
        throttle_time_ms=0,
        error_code=0,
        replica_election_results=(
            ElectLeadersResponseReplicaElectionResult(
                topic="t",
                partition_result=(
                    ElectLeadersResponsePartitionResult(partition_id=0, error_code=0, error_message=None),
                    ElectLeadersResponsePartitionResult(partition_id=1, error_code=84, error_message="x"),
                ),
            ),
        ),
    )
    golden = bytes.fromhex(
        "00000000"  # throttle_time_ms int32 0
        "0000"  # error_code int16 0 (v1+)
        "02"  # replica_election_results: compact array, uvarint 1+1
        "02 74"  # - topic compact string: uvarint 1+1, "t"
        "03"  # - partition_result: compact array, uvarint 2+1
        "00000000 0000"  # -- partition_id 0, error_code 0
        "00"  # -- error_message compact nullable string: uvarint 0 = null
        "00"  # -- partition tag buffer
        "00000001 0054"  # -- partition_id 1, error_code 84 (ELECTION_NOT_NEEDED)
        "02 78"  # -- error_message: uvarint 1+1, "x"
        "00"  # -- partition tag buffer
        "00"  # - topic tag buffer
        "00"  # body tag buffer
    )
    assert codec(ElectLeadersResponse, 2).encode(message) == golden
    assert codec(ElectLeadersResponse, 2).decode_exact(golden) == message


def test_response_v0_golden() -> None:
    message = ElectLeadersResponse(
        throttle_time_ms=7,
        replica_election_results=(ElectLeadersResponseReplicaElectionResult(topic="t"),),
    )
    golden = bytes.fromhex(
        "00000007"  # throttle_time_ms int32 7 (no error_code in v0)
        "00000001"  # replica_election_results: int32 count 1
        "0001 74"  # - topic string: int16 length 1, "t"
        "00000000"  # - partition_result: int32 count 0
    )
    assert codec(ElectLeadersResponse, 0).encode(message) == golden
    assert codec(ElectLeadersResponse, 0).decode_exact(golden) == message
