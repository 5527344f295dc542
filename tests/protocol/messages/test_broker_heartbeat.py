"""BrokerHeartbeat: hand-derived golden bytes and the tagged OfflineLogDirs of v1."""

import uuid

import pytest

from protocol.compiler import codec
from protocol.errors import EncodeError
from protocol.messages.broker_heartbeat import BrokerHeartbeatRequest, BrokerHeartbeatResponse

OFFLINE = uuid.UUID("00010203-0405-0607-0809-0a0b0c0d0e0f")


def test_request_v1_golden_with_tagged_offline_log_dirs() -> None:
    message = BrokerHeartbeatRequest(
        broker_id=1,
        broker_epoch=42,
        current_metadata_offset=100,
        want_fence=False,
        want_shut_down=True,
        offline_log_dirs=(OFFLINE,),
    )
    golden = bytes.fromhex(
        "00000001"  # broker_id 1
        "000000000000002a"  # broker_epoch 42
        "0000000000000064"  # current_metadata_offset 100
        "00"  # want_fence: false
        "01"  # want_shut_down: true
        "01"  # tag buffer: 1 tagged field
        "00"
        "11"  # tag 0 offline_log_dirs, 17 bytes:
        "02"
        "000102030405060708090a0b0c0d0e0f"  # compact array of 1 uuid
    )
    assert codec(BrokerHeartbeatRequest, 1).encode(message) == golden
    assert codec(BrokerHeartbeatRequest, 1).decode_exact(golden) == message


def test_response_v0_golden() -> None:
    message = BrokerHeartbeatResponse(is_caught_up=True, is_fenced=False, should_shut_down=False)
    golden = bytes.fromhex(
        "00000000"  # throttle_time_ms 0
        "0000"  # error_code 0
        "01"  # is_caught_up: true
        "00"  # is_fenced: false
        "00"  # should_shut_down: false
        "00"  # tag buffer
    )
    assert codec(BrokerHeartbeatResponse, 0).encode(message) == golden
    assert codec(BrokerHeartbeatResponse, 0).decode_exact(golden) == message
    assert BrokerHeartbeatResponse().is_fenced  # Kafka's default: fenced


def test_offline_log_dirs_are_not_in_v0() -> None:
    # Not ignorable in Kafka's schema: a v0 heartbeat cannot report failed directories.
    with pytest.raises(EncodeError, match="offline_log_dirs is not in version 0"):
        codec(BrokerHeartbeatRequest, 0).encode(BrokerHeartbeatRequest(broker_id=1, offline_log_dirs=(OFFLINE,)))
    # Empty (the default), the v1 tag is left out and v0 is fine.
    assert codec(BrokerHeartbeatRequest, 1).encode(BrokerHeartbeatRequest(broker_id=1)).endswith(b"\x00\x00\x00")
    assert len(codec(BrokerHeartbeatRequest, 0).encode(BrokerHeartbeatRequest(broker_id=1))) == 4 + 8 + 8 + 2 + 1
