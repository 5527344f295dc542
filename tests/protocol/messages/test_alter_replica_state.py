"""AlterReplicaState (api key 1000): golden bytes derived by hand from docs/protocol.md.

Flexible from v0: compact strings and arrays carry uvarint(length + 1), and every struct (the
body, each topic, each partition result) ends with a tag buffer, here always empty (0x00).
"""

import uuid

import pytest
from hypothesis import given
from hypothesis import strategies as st

from protocol.compiler import codec
from protocol.errors import EncodeError
from protocol.messages.alter_replica_state import (
    OFFLINE,
    ONLINE,
    AlterReplicaStateRequest,
    AlterReplicaStateRequestTopicReplicas,
    AlterReplicaStateResponse,
    AlterReplicaStateResponsePartitionResult,
    AlterReplicaStateResponseTopicResult,
)
from protocol.spec import ZERO_UUID, Data

TOPIC_ID = uuid.UUID("01234567-89ab-cdef-0123-456789abcdef")


def _assert_golden(message: Data, version: int, golden: bytes) -> None:
    c = codec(type(message), version)
    assert c.encode(message) == golden
    assert c.decode_exact(golden) == message


def test_request_v0_golden() -> None:
    message = AlterReplicaStateRequest(
        broker_id=3,
        broker_epoch=42,
        new_state=OFFLINE,
        reason="disk",
        topics=(AlterReplicaStateRequestTopicReplicas(name="t1", partitions=(0, 2)),),
    )
    golden = bytes.fromhex(
        "00000003"  # BrokerId int32 3
        "000000000000002a"  # BrokerEpoch int64 42
        "01"  # NewState int8 1 (OFFLINE)
        "05 6469736b"  # Reason compact string: uvarint 4+1, "disk"
        "02"  # Topics compact array: uvarint 1+1
        "03 7431"  # - Name compact string: uvarint 2+1, "t1"
        "03 00000000 00000002"  # - Partitions compact []int32: uvarint 2+1, 0, 2
        "00"  # - topic tag buffer: no tagged fields
        "00"  # body tag buffer
    )
    _assert_golden(message, 0, golden)


def test_request_v1_golden() -> None:
    message = AlterReplicaStateRequest(
        broker_id=1,
        broker_epoch=300,
        new_state=ONLINE,
        reason="",
        topics=(AlterReplicaStateRequestTopicReplicas(topic_id=TOPIC_ID, partitions=(7,)),),
    )
    golden = bytes.fromhex(
        "00000001"  # BrokerId int32 1
        "000000000000012c"  # BrokerEpoch int64 300
        "02"  # NewState int8 2 (ONLINE)
        "01"  # Reason compact string: uvarint 0+1, ""
        "02"  # Topics compact array: uvarint 1+1
        "0123456789abcdef0123456789abcdef"  # - TopicId uuid, 16 bytes (no Name in v1)
        "02 00000007"  # - Partitions compact []int32: uvarint 1+1, 7
        "00"  # - topic tag buffer
        "00"  # body tag buffer
    )
    _assert_golden(message, 1, golden)


def test_response_v0_golden() -> None:
    message = AlterReplicaStateResponse(
        throttle_time_ms=0,
        error_code=0,
        topics=(
            AlterReplicaStateResponseTopicResult(
                name="t1",
                partitions=(
                    AlterReplicaStateResponsePartitionResult(partition_index=0, error_code=0),
                    AlterReplicaStateResponsePartitionResult(partition_index=2, error_code=3),
                ),
            ),
        ),
    )
    golden = bytes.fromhex(
        "00000000"  # ThrottleTimeMs int32 0
        "0000"  # ErrorCode int16 0
        "02"  # Topics compact array: uvarint 1+1
        "03 7431"  # - Name compact string: uvarint 2+1, "t1"
        "03"  # - Partitions compact array: uvarint 2+1
        "00000000 0000 00"  # -- PartitionIndex 0, ErrorCode 0, tag buffer
        "00000002 0003 00"  # -- PartitionIndex 2, ErrorCode 3 (UNKNOWN_TOPIC_OR_PARTITION), tags
        "00"  # - topic tag buffer
        "00"  # body tag buffer
    )
    _assert_golden(message, 0, golden)


def test_response_v1_golden() -> None:
    message = AlterReplicaStateResponse(
        throttle_time_ms=5,
        error_code=0,
        topics=(
            AlterReplicaStateResponseTopicResult(
                topic_id=TOPIC_ID,
                partitions=(AlterReplicaStateResponsePartitionResult(partition_index=1, error_code=100),),
            ),
        ),
    )
    golden = bytes.fromhex(
        "00000005"  # ThrottleTimeMs int32 5
        "0000"  # ErrorCode int16 0
        "02"  # Topics compact array: uvarint 1+1
        "0123456789abcdef0123456789abcdef"  # - TopicId uuid (no Name in v1)
        "02"  # - Partitions compact array: uvarint 1+1
        "00000001 0064 00"  # -- PartitionIndex 1, ErrorCode 100 (UNKNOWN_TOPIC_ID), tag buffer
        "00"  # - topic tag buffer
        "00"  # body tag buffer
    )
    _assert_golden(message, 1, golden)


def test_response_v0_top_level_error_golden() -> None:
    message = AlterReplicaStateResponse(error_code=77)
    golden = bytes.fromhex(
        "00000000"  # ThrottleTimeMs int32 0
        "004d"  # ErrorCode int16 77 (STALE_BROKER_EPOCH)
        "01"  # Topics compact array: uvarint 0+1 (empty)
        "00"  # body tag buffer
    )
    _assert_golden(message, 0, golden)


def test_topic_id_is_not_in_v0() -> None:
    request = AlterReplicaStateRequest(
        broker_id=1,
        broker_epoch=1,
        new_state=OFFLINE,
        topics=(AlterReplicaStateRequestTopicReplicas(topic_id=TOPIC_ID, partitions=(0,)),),
    )
    with pytest.raises(EncodeError):
        codec(AlterReplicaStateRequest, 0).encode(request)
    response = AlterReplicaStateResponse(topics=(AlterReplicaStateResponseTopicResult(topic_id=TOPIC_ID),))
    with pytest.raises(EncodeError):
        codec(AlterReplicaStateResponse, 0).encode(response)


def test_name_is_not_in_v1() -> None:
    request = AlterReplicaStateRequest(
        broker_id=1,
        broker_epoch=1,
        new_state=ONLINE,
        topics=(AlterReplicaStateRequestTopicReplicas(name="t1", partitions=(0,)),),
    )
    with pytest.raises(EncodeError):
        codec(AlterReplicaStateRequest, 1).encode(request)
    response = AlterReplicaStateResponse(topics=(AlterReplicaStateResponseTopicResult(name="t1"),))
    with pytest.raises(EncodeError):
        codec(AlterReplicaStateResponse, 1).encode(response)


# ---------------------------------------------------------------------------- round trip
INT8S = st.integers(-(2**7), 2**7 - 1)
INT16S = st.integers(-(2**15), 2**15 - 1)
INT32S = st.integers(-(2**31), 2**31 - 1)
INT64S = st.integers(-(2**63), 2**63 - 1)
NAMES = st.text(max_size=30)


def _tuples(elements: st.SearchStrategy[object]) -> st.SearchStrategy[tuple[object, ...]]:
    return st.lists(elements, max_size=5).map(tuple)


def _requests(version: int) -> st.SearchStrategy[AlterReplicaStateRequest]:
    topic = st.builds(
        AlterReplicaStateRequestTopicReplicas,
        name=NAMES if version == 0 else st.just(""),
        topic_id=st.just(ZERO_UUID) if version == 0 else st.uuids(),
        partitions=_tuples(INT32S),
    )
    return st.builds(
        AlterReplicaStateRequest,
        broker_id=INT32S,
        broker_epoch=INT64S,
        new_state=st.one_of(st.sampled_from([OFFLINE, ONLINE]), INT8S),
        reason=NAMES,
        topics=_tuples(topic),
    )


def _responses(version: int) -> st.SearchStrategy[AlterReplicaStateResponse]:
    partition = st.builds(AlterReplicaStateResponsePartitionResult, partition_index=INT32S, error_code=INT16S)
    topic = st.builds(
        AlterReplicaStateResponseTopicResult,
        name=NAMES if version == 0 else st.just(""),
        topic_id=st.just(ZERO_UUID) if version == 0 else st.uuids(),
        partitions=_tuples(partition),
    )
    return st.builds(AlterReplicaStateResponse, throttle_time_ms=INT32S, error_code=INT16S, topics=_tuples(topic))


@st.composite
def _versioned(draw: st.DrawFn) -> tuple[int, Data]:
    version = draw(st.sampled_from([0, 1]))
    message: Data = draw(st.one_of(_requests(version), _responses(version)))
    return version, message


@given(_versioned())
def test_round_trip(case: tuple[int, Data]) -> None:
    version, message = case
    c = codec(type(message), version)
    assert c.decode_exact(c.encode(message)) == message
