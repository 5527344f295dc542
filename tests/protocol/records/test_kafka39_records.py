"""The record types added for Kafka 3.9 completeness: golden bytes written out by hand
from the schemas in Kafka's `*Record.json`, and round trips of every type and version.

Golden values use a distinct, non-default value in every field, so a field encoded with the
wrong width, order, length prefix or tag would change the bytes.
"""

from __future__ import annotations

import dataclasses
import uuid

import pytest
from hypothesis import given
from hypothesis import strategies as st

from protocol.compiler import codec
from protocol.records.control import (
    CONTROL_RECORD_TYPES,
    KRaftVersionRecord,
    VotersRecord,
    VotersRecordEndpoint,
    VotersRecordKRaftVersionFeature,
    VotersRecordVoter,
    decode_control_record,
    encode_control_record,
)
from protocol.records.metadata import (
    METADATA_RECORD_TYPES,
    AbortTransactionRecord,
    BeginTransactionRecord,
    ConfigRecord,
    EndTransactionRecord,
    FeatureLevelRecord,
    NoOpRecord,
    ProducerIdsRecord,
    RegisterControllerRecord,
    RegisterControllerRecordControllerEndpoint,
    RegisterControllerRecordControllerFeature,
)
from protocol.records.metadata_value import decode_metadata_value, encode_metadata_value
from protocol.spec import Data

from ..strategies import messages

INCARNATION = uuid.UUID("00112233-4455-6677-8899-aabbccddeeff")
DIRECTORY = uuid.UUID("f0e1d2c3-b4a5-9687-7869-5a4b3c2d1e0f")
METADATA_CASES = [(cls, version) for cls in METADATA_RECORD_TYPES.values() for version in cls.API.valid]
CONTROL_CASES = [(cls, version) for cls in CONTROL_RECORD_TYPES.values() for version in cls.API.valid]


def _golden(record: Data, version: int, expected: bytes) -> None:
    assert encode_metadata_value(record, version).hex(" ") == expected.hex(" ")
    assert decode_metadata_value(expected) == (record, version)


# ---------------------------------------------------------------------------- golden bytes
def test_feature_level_record_v0() -> None:
    _golden(
        FeatureLevelRecord(name="metadata.version", feature_level=21),
        0,
        bytes.fromhex("01 0c 00")  # frame version 1, record type 12, version 0
        + bytes.fromhex("11")
        + b"metadata.version"  # name: compact string, 16 bytes (N+1 = 17)
        + bytes.fromhex("0015")  # feature_level: INT16 21
        + bytes.fromhex("00"),  # no tagged fields
    )


def test_no_op_record_v0() -> None:
    _golden(NoOpRecord(), 0, bytes.fromhex("01 14 0000"))  # type 20, version 0; no fields, no tags


def test_begin_transaction_record_v0() -> None:
    _golden(
        BeginTransactionRecord(name="migration"),
        0,
        bytes.fromhex("01 17 00")  # frame version 1, record type 23, version 0
        + bytes.fromhex("01")  # one tagged field
        + bytes.fromhex("00 0a")  # tag 0 (name), 10 bytes
        + bytes.fromhex("0a")
        + b"migration",  # compact string, 9 bytes (N+1 = 10)
    )
    _golden(BeginTransactionRecord(), 0, bytes.fromhex("01 17 0000"))  # name null: the default, not written
    _golden(BeginTransactionRecord(name=""), 0, bytes.fromhex("01 17 000100 0101"))  # "" is not null


def test_end_and_abort_transaction_records_v0() -> None:
    _golden(EndTransactionRecord(), 0, bytes.fromhex("01 18 00 00"))  # type 24
    _golden(
        AbortTransactionRecord(reason="x"),
        0,
        bytes.fromhex("01 19 00")  # type 25, version 0
        + bytes.fromhex("01 00 02 02 78"),  # one tag: tag 0, 2 bytes, compact string "x"
    )


def test_config_record_v0() -> None:
    _golden(
        ConfigRecord(resource_type=2, resource_name="t1", name="cleanup.policy", value="compact"),
        0,
        bytes.fromhex("01 04 00")  # frame version 1, record type 4, version 0
        + bytes.fromhex("02")  # resource_type: INT8 2 (TOPIC)
        + bytes.fromhex("03")
        + b"t1"  # resource_name: compact string, 2 bytes
        + bytes.fromhex("0f")
        + b"cleanup.policy"  # name: compact string, 14 bytes
        + bytes.fromhex("08")
        + b"compact"  # value: compact nullable string, 7 bytes
        + bytes.fromhex("00"),  # no tagged fields
    )
    _golden(
        ConfigRecord(resource_type=4, resource_name="", name="a", value=None),
        0,
        bytes.fromhex("01 04 00040102 610000"),  # BROKER, "" (length 0+1), "a", null (0), no tags
    )


def test_producer_ids_record_v0() -> None:
    _golden(
        ProducerIdsRecord(broker_id=1, broker_epoch=5, next_producer_id=1000),
        0,
        bytes.fromhex("01 0f 00")  # frame version 1, record type 15, version 0
        + bytes.fromhex("00000001")  # broker_id: INT32
        + bytes.fromhex("0000000000000005")  # broker_epoch: INT64
        + bytes.fromhex("00000000000003e8")  # next_producer_id: INT64 1000
        + bytes.fromhex("00"),  # no tagged fields
    )
    assert ProducerIdsRecord().broker_epoch == -1  # the schema's default


def test_register_controller_record_v0() -> None:
    record = RegisterControllerRecord(
        controller_id=3000,
        incarnation_id=INCARNATION,
        zk_migration_ready=True,
        end_points=(
            RegisterControllerRecordControllerEndpoint(
                name="CONTROLLER", host="localhost", port=9093, security_protocol=1
            ),
        ),
        features=(
            RegisterControllerRecordControllerFeature(
                name="metadata.version", min_supported_version=1, max_supported_version=21
            ),
        ),
    )
    _golden(
        record,
        0,
        bytes.fromhex("01 1b 00")  # frame version 1, record type 27, version 0
        + bytes.fromhex("00000bb8")  # controller_id: INT32 3000
        + INCARNATION.bytes  # incarnation_id: UUID, 16 bytes
        + bytes.fromhex("01")  # zk_migration_ready: true
        + bytes.fromhex("02")  # end_points: compact array of 1
        + bytes.fromhex("0b")
        + b"CONTROLLER"  # name: 10 bytes
        + bytes.fromhex("0a")
        + b"localhost"  # host: 9 bytes
        + bytes.fromhex("2385")  # port: UINT16 9093
        + bytes.fromhex("0001")  # security_protocol: INT16 1 (SSL)
        + bytes.fromhex("00")  # the endpoint's tag buffer
        + bytes.fromhex("02")  # features: compact array of 1
        + bytes.fromhex("11")
        + b"metadata.version"  # name: 16 bytes
        + bytes.fromhex("0001 0015")  # min 1, max 21 (INT16s)
        + bytes.fromhex("00")  # the feature's tag buffer
        + bytes.fromhex("00"),  # the record's tag buffer
    )


def test_k_raft_version_record_v0() -> None:
    message = KRaftVersionRecord(k_raft_version=1)
    key, value = encode_control_record(message, 0)
    assert key == bytes.fromhex("0000 0005")  # key version 0, control type 5 (KRAFT_VERSION)
    assert value == bytes.fromhex(
        "0000"  # version: INT16 0
        "0001"  # k_raft_version: INT16 1
        "00"  # no tagged fields
    )
    assert decode_control_record(key, value) == (message, 0)


def test_voters_record_v0() -> None:
    voter = VotersRecordVoter(
        voter_id=3000,
        voter_directory_id=DIRECTORY,
        endpoints=(VotersRecordEndpoint(name="CONTROLLER", host="h", port=9093),),
        k_raft_version_feature=VotersRecordKRaftVersionFeature(min_supported_version=0, max_supported_version=1),
    )
    message = VotersRecord(voters=(voter,))
    key, value = encode_control_record(message, 0)
    assert key == bytes.fromhex("0000 0006")  # key version 0, control type 6 (KRAFT_VOTERS)
    assert value.hex(" ") == (
        bytes.fromhex("0000")  # version: INT16 0
        + bytes.fromhex("02")  # voters: compact array of 1
        + bytes.fromhex("00000bb8")  # voter_id: INT32 3000
        + DIRECTORY.bytes  # voter_directory_id: UUID
        + bytes.fromhex("02")  # endpoints: compact array of 1
        + bytes.fromhex("0b")
        + b"CONTROLLER"  # name: 10 bytes
        + bytes.fromhex("02")
        + b"h"  # host: 1 byte
        + bytes.fromhex("2385")  # port: UINT16 9093
        + bytes.fromhex("00")  # the endpoint's tag buffer
        + bytes.fromhex("0000 0001")  # k_raft_version_feature (a single struct, no length): min 0, max 1
        + bytes.fromhex("00")  # the feature's tag buffer
        + bytes.fromhex("00")  # the voter's tag buffer
        + bytes.fromhex("00")  # the record's tag buffer
    ).hex(" ")
    assert decode_control_record(key, value) == (message, 0)


# ---------------------------------------------------------------------------- round trips, both ways
@pytest.mark.parametrize(("cls", "version"), METADATA_CASES, ids=lambda case: getattr(case, "__name__", str(case)))
@given(data=st.data())
def test_metadata_records_round_trip_byte_exactly(cls: type[Data], version: int, data: st.DataObject) -> None:
    record = data.draw(messages(cls, version, unknown_tags=True))
    value = encode_metadata_value(record, version)
    assert decode_metadata_value(value) == (record, version)
    again, _ = decode_metadata_value(value)
    assert encode_metadata_value(again, version) == value
    # the interpreted construct is a second implementation: it must read and write the same bytes
    construct = codec(cls, version).construct
    assert construct.parse(value[3:]) == record
    assert construct.build(record) == value[3:]


@pytest.mark.parametrize(("cls", "version"), CONTROL_CASES, ids=lambda case: getattr(case, "__name__", str(case)))
@given(data=st.data())
def test_control_records_round_trip_byte_exactly(cls: type[Data], version: int, data: st.DataObject) -> None:
    message = dataclasses.replace(data.draw(messages(cls, version, unknown_tags=True)), version=version)
    key, value = encode_control_record(message, version)  # type: ignore[arg-type]
    assert decode_control_record(key, value) == (message, version)
    again, _ = decode_control_record(key, value)
    assert encode_control_record(again, version) == (key, value)
    construct = codec(cls, version).construct
    assert construct.parse(value) == message
    assert construct.build(message) == value
