"""BrokerRegistration: hand-derived golden bytes and the version rules of the later fields."""

import uuid

import pytest

from protocol.compiler import codec
from protocol.errors import EncodeError
from protocol.messages.broker_registration import (
    BrokerRegistrationRequest,
    BrokerRegistrationRequestFeature,
    BrokerRegistrationRequestListener,
    BrokerRegistrationResponse,
)

INCARNATION = uuid.UUID("00010203-0405-0607-0809-0a0b0c0d0e0f")
LOG_DIR = uuid.UUID(int=2)


def _request(**changes: object) -> BrokerRegistrationRequest:
    fields: dict[str, object] = {
        "broker_id": 1,
        "cluster_id": "c",
        "incarnation_id": INCARNATION,
        "listeners": (BrokerRegistrationRequestListener(name="L", host="h", port=9092, security_protocol=0),),
        "features": (BrokerRegistrationRequestFeature(name="f", min_supported_version=0, max_supported_version=1),),
        "rack": None,
    }
    fields.update(changes)
    return BrokerRegistrationRequest(**fields)  # type: ignore[arg-type]


def test_request_v3_golden() -> None:
    message = _request(log_dirs=(LOG_DIR,), previous_broker_epoch=7)
    golden = bytes.fromhex(
        "00000001"  # broker_id 1
        "02"
        "63"  # cluster_id "c"
        "000102030405060708090a0b0c0d0e0f"  # incarnation_id
        "02"  # listeners: 1 element
        "02"
        "4c"  # name "L"
        "02"
        "68"  # host "h"
        "2384"  # port 9092 (uint16)
        "0000"  # security_protocol 0
        "00"  # element tag buffer
        "02"  # features: 1 element
        "02"
        "66"  # name "f"
        "0000"
        "0001"  # min_supported_version 0, max_supported_version 1
        "00"  # element tag buffer
        "00"  # rack: null
        "00"  # is_migrating_zk_broker: false (v1+)
        "02"
        "00000000000000000000000000000002"  # log_dirs: 1 uuid (v2+)
        "0000000000000007"  # previous_broker_epoch 7 (v3+)
        "00"  # tag buffer
    )
    assert codec(BrokerRegistrationRequest, 3).encode(message) == golden
    assert codec(BrokerRegistrationRequest, 3).decode_exact(golden) == message


def test_response_v0_golden() -> None:
    message = BrokerRegistrationResponse(throttle_time_ms=0, error_code=0, broker_epoch=42)
    golden = bytes.fromhex(
        "00000000"  # throttle_time_ms 0
        "0000"  # error_code 0
        "000000000000002a"  # broker_epoch 42
        "00"  # tag buffer
    )
    assert codec(BrokerRegistrationResponse, 0).encode(message) == golden
    assert codec(BrokerRegistrationResponse, 0).decode_exact(golden) == message


def test_fields_absent_from_a_version() -> None:
    # IsMigratingZkBroker (v1+) is not ignorable: a v0 request cannot carry it.
    with pytest.raises(EncodeError, match="is_migrating_zk_broker is not in version 0"):
        codec(BrokerRegistrationRequest, 0).encode(_request(is_migrating_zk_broker=True))
    # LogDirs (v2+) and PreviousBrokerEpoch (v3+) are ignorable: dropped below their versions.
    dropped = codec(BrokerRegistrationRequest, 1).encode(_request(log_dirs=(LOG_DIR,), previous_broker_epoch=7))
    assert dropped == codec(BrokerRegistrationRequest, 1).encode(_request())
    assert codec(BrokerRegistrationRequest, 1).decode_exact(dropped) == _request()
