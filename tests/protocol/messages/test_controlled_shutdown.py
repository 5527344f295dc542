"""ControlledShutdown (api key 7): hand-derived golden bytes, and the broker epoch of v2+."""

from protocol.compiler import codec
from protocol.messages.controlled_shutdown import (
    ControlledShutdownRequest,
    ControlledShutdownResponse,
    ControlledShutdownResponseRemainingPartition,
)


def test_request_v0_golden() -> None:
    message = ControlledShutdownRequest(broker_id=5)
    golden = bytes.fromhex("00000005")  # broker_id int32 5: the whole v0 body
    assert codec(ControlledShutdownRequest, 0).encode(message) == golden
    assert codec(ControlledShutdownRequest, 0).decode_exact(golden) == message


def test_request_v3_golden() -> None:
    message = ControlledShutdownRequest(broker_id=5, broker_epoch=100)
    golden = bytes.fromhex(
        "00000005"  # broker_id int32 5
        "0000000000000064"  # broker_epoch int64 100 (KIP-380)
        "00"  # tag buffer (v3 is flexible)
    )
    assert codec(ControlledShutdownRequest, 3).encode(message) == golden
    assert codec(ControlledShutdownRequest, 3).decode_exact(golden) == message


def test_broker_epoch_is_ignorable_before_v2() -> None:
    # Kafka marks BrokerEpoch ignorable: a v1 request simply leaves it out.
    message = ControlledShutdownRequest(broker_id=5, broker_epoch=100)
    assert codec(ControlledShutdownRequest, 1).encode(message) == bytes.fromhex("00000005")
    assert codec(ControlledShutdownRequest, 1).decode_exact(bytes.fromhex("00000005")).broker_epoch == -1


def test_response_v0_golden() -> None:
    message = ControlledShutdownResponse(
        error_code=0,
        remaining_partitions=(ControlledShutdownResponseRemainingPartition(topic_name="t", partition_index=1),),
    )
    golden = bytes.fromhex(
        "0000"  # error_code int16 0
        "00000001"  # remaining_partitions: int32 count 1
        "0001 74"  # - topic_name string: int16 length 1, "t"
        "00000001"  # - partition_index int32 1
    )
    assert codec(ControlledShutdownResponse, 0).encode(message) == golden
    assert codec(ControlledShutdownResponse, 0).decode_exact(golden) == message


def test_response_v3_golden() -> None:
    message = ControlledShutdownResponse(
        error_code=0,
        remaining_partitions=(ControlledShutdownResponseRemainingPartition(topic_name="t", partition_index=1),),
    )
    golden = bytes.fromhex(
        "0000"  # error_code int16 0
        "02"  # remaining_partitions: compact array, uvarint 1+1
        "02 74"  # - topic_name compact string: uvarint 1+1, "t"
        "00000001"  # - partition_index int32 1
        "00"  # - partition tag buffer
        "00"  # body tag buffer
    )
    assert codec(ControlledShutdownResponse, 3).encode(message) == golden
    assert codec(ControlledShutdownResponse, 3).decode_exact(golden) == message
