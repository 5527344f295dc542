"""CreateTopics: hand-derived golden bytes, the served version range and the v5 response fields."""

import uuid

import pytest

from protocol.compiler import codec
from protocol.messages.create_topics import (
    CreateTopicsRequest,
    CreateTopicsRequestCreatableReplicaAssignment,
    CreateTopicsRequestCreatableTopic,
    CreateTopicsRequestCreatableTopicConfig,
    CreateTopicsResponse,
    CreateTopicsResponseCreatableTopicConfigs,
    CreateTopicsResponseCreatableTopicResult,
)

TOPIC_ID = uuid.UUID("00010203-0405-0607-0809-0a0b0c0d0e0f")


def test_request_v5_golden() -> None:
    message = CreateTopicsRequest(
        topics=(
            CreateTopicsRequestCreatableTopic(
                name="t",
                num_partitions=1,
                replication_factor=3,
                configs=(CreateTopicsRequestCreatableTopicConfig(name="k", value=None),),
            ),
        ),
        timeout_ms=30000,
        validate_only=False,
    )
    golden = bytes.fromhex(
        "02"  # topics: compact array, 1 element
        "02"
        "74"  # name "t"
        "00000001"  # num_partitions 1
        "0003"  # replication_factor 3
        "01"  # assignments: empty compact array
        "02"  # configs: 1 element
        "02"
        "6b"  # name "k"
        "00"  # value: null
        "00"  # config tag buffer
        "00"  # topic tag buffer
        "00007530"  # timeout_ms 30000
        "00"  # validate_only: false
        "00"  # tag buffer
    )
    assert codec(CreateTopicsRequest, 5).encode(message) == golden
    assert codec(CreateTopicsRequest, 5).decode_exact(golden) == message


def test_request_v2_golden_with_assignment() -> None:
    message = CreateTopicsRequest(
        topics=(
            CreateTopicsRequestCreatableTopic(
                name="t",
                num_partitions=-1,
                replication_factor=-1,
                assignments=(CreateTopicsRequestCreatableReplicaAssignment(partition_index=0, broker_ids=(1, 2)),),
            ),
        ),
        validate_only=True,
    )
    golden = bytes.fromhex(
        "00000001"  # topics: INT32 count 1
        "0001"
        "74"  # name "t" (INT16 length)
        "ffffffff"  # num_partitions -1
        "ffff"  # replication_factor -1
        "00000001"  # assignments: 1 element
        "00000000"  # partition_index 0
        "00000002"
        "00000001"
        "00000002"  # broker_ids [1, 2]
        "00000000"  # configs: empty
        "0000ea60"  # timeout_ms 60000 (Kafka's default)
        "01"  # validate_only: true
    )  # not flexible: no tag buffers
    assert codec(CreateTopicsRequest, 2).encode(message) == golden
    assert codec(CreateTopicsRequest, 2).decode_exact(golden) == message


def test_response_v7_golden() -> None:
    message = CreateTopicsResponse(
        throttle_time_ms=0,
        topics=(
            CreateTopicsResponseCreatableTopicResult(
                name="t",
                topic_id=TOPIC_ID,
                error_code=0,
                error_message=None,
                topic_config_error_code=0,
                num_partitions=1,
                replication_factor=3,
                configs=(
                    CreateTopicsResponseCreatableTopicConfigs(
                        name="k", value="v", read_only=False, config_source=5, is_sensitive=False
                    ),
                ),
            ),
        ),
    )
    golden = bytes.fromhex(
        "00000000"  # throttle_time_ms 0
        "02"  # topics: 1 element
        "02"
        "74"  # name "t"
        "000102030405060708090a0b0c0d0e0f"  # topic_id (v7+)
        "0000"  # error_code 0
        "00"  # error_message: null
        "00000001"  # num_partitions 1
        "0003"  # replication_factor 3
        "02"  # configs: 1 element
        "02"
        "6b"  # name "k"
        "02"
        "76"  # value "v"
        "00"  # read_only: false
        "05"  # config_source 5
        "00"  # is_sensitive: false
        "00"  # config tag buffer
        "00"  # topic tag buffer (topic_config_error_code 0 is left out)
        "00"  # tag buffer
    )
    assert codec(CreateTopicsResponse, 7).encode(message) == golden
    assert codec(CreateTopicsResponse, 7).decode_exact(golden) == message


def test_response_v5_tagged_config_error_and_null_configs() -> None:
    message = CreateTopicsResponse(
        topics=(
            CreateTopicsResponseCreatableTopicResult(
                name="t", error_message=None, topic_config_error_code=29, configs=None
            ),
        ),
    )
    golden = bytes.fromhex(
        "00000000"  # throttle_time_ms 0
        "02"  # topics: 1 element
        "02"
        "74"  # name "t"
        "0000"  # error_code 0
        "00"  # error_message: null
        "ffffffff"  # num_partitions -1 (default)
        "ffff"  # replication_factor -1 (default)
        "00"  # configs: null
        "01"
        "00"
        "02"
        "001d"  # tag buffer: tag 0 topic_config_error_code, 2 bytes: 29
        "00"  # tag buffer
    )
    assert codec(CreateTopicsResponse, 5).encode(message) == golden
    assert codec(CreateTopicsResponse, 5).decode_exact(golden) == message


def test_v5_response_fields_are_dropped_before_v5() -> None:
    # NumPartitions, ReplicationFactor, Configs and TopicConfigErrorCode are ignorable.
    full = CreateTopicsResponseCreatableTopicResult(
        name="t", topic_id=TOPIC_ID, topic_config_error_code=29, num_partitions=3, replication_factor=2
    )
    encoded = codec(CreateTopicsResponse, 4).encode(CreateTopicsResponse(topics=(full,)))
    assert encoded == bytes.fromhex("000000000000000100017400000000")
    decoded = codec(CreateTopicsResponse, 4).decode_exact(encoded)
    assert decoded == CreateTopicsResponse(topics=(CreateTopicsResponseCreatableTopicResult(name="t"),))


@pytest.mark.parametrize("version", [0, 1, 8])
def test_only_versions_2_to_7_are_served(version: int) -> None:
    with pytest.raises(ValueError, match=f"no version {version}"):
        codec(CreateTopicsRequest, version)
