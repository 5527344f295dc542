"""DeleteTopics: hand-derived golden bytes and the switch from names to topic states in v6."""

import uuid

import pytest

from protocol.compiler import codec
from protocol.errors import EncodeError
from protocol.messages.delete_topics import (
    DeleteTopicsRequest,
    DeleteTopicsRequestDeleteTopicState,
    DeleteTopicsResponse,
    DeleteTopicsResponseDeletableTopicResult,
)

TOPIC_ID = uuid.UUID("00010203-0405-0607-0809-0a0b0c0d0e0f")


def test_request_v4_golden() -> None:
    message = DeleteTopicsRequest(topic_names=("a", "bc"), timeout_ms=5000)
    golden = bytes.fromhex(
        "03"  # topic_names: compact array, 2 elements
        "02"
        "61"  # "a"
        "03"
        "6263"  # "bc"
        "00001388"  # timeout_ms 5000
        "00"  # tag buffer
    )
    assert codec(DeleteTopicsRequest, 4).encode(message) == golden
    assert codec(DeleteTopicsRequest, 4).decode_exact(golden) == message


def test_request_v6_golden() -> None:
    message = DeleteTopicsRequest(
        topics=(DeleteTopicsRequestDeleteTopicState(name=None, topic_id=TOPIC_ID),), timeout_ms=5000
    )
    golden = bytes.fromhex(
        "02"  # topics: 1 element
        "00"  # name: null
        "000102030405060708090a0b0c0d0e0f"  # topic_id
        "00"  # element tag buffer
        "00001388"  # timeout_ms 5000
        "00"  # tag buffer
    )
    assert codec(DeleteTopicsRequest, 6).encode(message) == golden
    assert codec(DeleteTopicsRequest, 6).decode_exact(golden) == message


def test_response_v1_golden() -> None:
    message = DeleteTopicsResponse(
        throttle_time_ms=0, responses=(DeleteTopicsResponseDeletableTopicResult(name="a", error_code=3),)
    )
    golden = bytes.fromhex(
        "00000000"  # throttle_time_ms 0
        "00000001"  # responses: INT32 count 1
        "0001"
        "61"  # name "a"
        "0003"  # error_code 3 (UNKNOWN_TOPIC_OR_PARTITION)
    )
    assert codec(DeleteTopicsResponse, 1).encode(message) == golden
    assert codec(DeleteTopicsResponse, 1).decode_exact(golden) == message


def test_response_v6_golden() -> None:
    message = DeleteTopicsResponse(
        responses=(
            DeleteTopicsResponseDeletableTopicResult(name=None, topic_id=TOPIC_ID, error_code=100, error_message="x"),
        ),
    )
    golden = bytes.fromhex(
        "00000000"  # throttle_time_ms 0
        "02"  # responses: 1 element
        "00"  # name: null (nullable from v6)
        "000102030405060708090a0b0c0d0e0f"  # topic_id
        "0064"  # error_code 100 (UNKNOWN_TOPIC_ID)
        "02"
        "78"  # error_message "x"
        "00"  # element tag buffer
        "00"  # tag buffer
    )
    assert codec(DeleteTopicsResponse, 6).encode(message) == golden
    assert codec(DeleteTopicsResponse, 6).decode_exact(golden) == message


def test_names_and_topic_states_by_version() -> None:
    states = (DeleteTopicsRequestDeleteTopicState(name="a", topic_id=TOPIC_ID),)
    # Topics (v6+) is not ignorable: a v5 request cannot carry it.
    with pytest.raises(EncodeError, match="topics is not in version 5"):
        codec(DeleteTopicsRequest, 5).encode(DeleteTopicsRequest(topics=states))
    # TopicNames (v0-5) is ignorable: a v6 request drops it.
    with_names = codec(DeleteTopicsRequest, 6).encode(DeleteTopicsRequest(topics=states, topic_names=("a",)))
    assert with_names == codec(DeleteTopicsRequest, 6).encode(DeleteTopicsRequest(topics=states))
    # A null name exists only from v6.
    with pytest.raises(EncodeError, match="not nullable"):
        codec(DeleteTopicsResponse, 5).encode(
            DeleteTopicsResponse(responses=(DeleteTopicsResponseDeletableTopicResult(name=None),))
        )
