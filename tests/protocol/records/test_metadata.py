"""Metadata records: value framing, golden vectors, round trips and rejection of bad values."""

from __future__ import annotations

import contextlib
import uuid

import pytest
from hypothesis import given
from hypothesis import strategies as st

from protocol.errors import DecodeError, EncodeError, TrailingBytesError, TruncatedError
from protocol.primitives import uvarint
from protocol.records.metadata import (
    LOST_DIRECTORY,
    METADATA_RECORD_TYPES,
    NO_LEADER_CHANGE,
    UNASSIGNED_DIRECTORY,
    BrokerRegistrationChangeRecord,
    PartitionChangeRecord,
    PartitionRecord,
    RegisterBrokerRecord,
    RegisterBrokerRecordBrokerEndpoint,
    TopicRecord,
    latest_version,
)
from protocol.records.metadata_value import (
    UnknownRecordTypeError,
    UnsupportedRecordVersionError,
    decode_metadata_value,
    encode_metadata_value,
)
from protocol.spec import Data

from ..strategies import messages

TOPIC_ID = uuid.UUID("0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0")
CASES = [(cls, version) for cls in METADATA_RECORD_TYPES.values() for version in cls.API.valid]


# Every metadata record type of Kafka 3.9 (its *Record.json schemas) and its versions.
KAFKA_3_9_RECORDS = {
    0: ("RegisterBrokerRecord", 3),
    1: ("UnregisterBrokerRecord", 0),
    2: ("TopicRecord", 0),
    3: ("PartitionRecord", 2),
    4: ("ConfigRecord", 0),
    5: ("PartitionChangeRecord", 2),
    7: ("FenceBrokerRecord", 0),
    8: ("UnfenceBrokerRecord", 0),
    9: ("RemoveTopicRecord", 0),
    10: ("DelegationTokenRecord", 0),
    11: ("UserScramCredentialRecord", 0),
    12: ("FeatureLevelRecord", 0),
    14: ("ClientQuotaRecord", 0),
    15: ("ProducerIdsRecord", 0),
    17: ("BrokerRegistrationChangeRecord", 2),
    18: ("AccessControlEntryRecord", 0),
    19: ("RemoveAccessControlEntryRecord", 0),
    20: ("NoOpRecord", 0),
    21: ("ZkMigrationStateRecord", 0),
    22: ("RemoveUserScramCredentialRecord", 0),
    23: ("BeginTransactionRecord", 0),
    24: ("EndTransactionRecord", 0),
    25: ("AbortTransactionRecord", 0),
    26: ("RemoveDelegationTokenRecord", 0),
    27: ("RegisterControllerRecord", 0),
}


def test_registry_holds_every_record_type_of_kafka_3_9() -> None:
    assert {key: (cls.__name__, latest_version(cls)) for key, cls in METADATA_RECORD_TYPES.items()} == (
        KAFKA_3_9_RECORDS
    )
    assert all(min(cls.API.valid) == 0 for cls in METADATA_RECORD_TYPES.values())


def test_sentinels() -> None:
    assert uuid.UUID(int=1) == LOST_DIRECTORY
    assert uuid.UUID(int=0) == UNASSIGNED_DIRECTORY
    assert PartitionChangeRecord().leader == NO_LEADER_CHANGE
    assert RegisterBrokerRecord().fenced is True


# ---------------------------------------------------------------------------- golden vectors
def test_topic_record_worked_example() -> None:
    # kafka-wire-format.md section 6: frame version 1, type 2, version 0 | "t1" | id | no tags.
    record = TopicRecord(name="t1", topic_id=TOPIC_ID)
    expected = bytes.fromhex("01 02 00" + "03 7431") + TOPIC_ID.bytes + b"\x00"
    assert encode_metadata_value(record, 0) == expected
    assert decode_metadata_value(expected) == (record, 0)


def test_partition_change_record_v1_with_lost_directory() -> None:
    # AlterReplicaState OFFLINE for replica 2 of [1, 2]: ISR shrinks to [1], directories say
    # replica 1's dir is unassigned and replica 2's is LOST.
    record = PartitionChangeRecord(
        partition_id=7,
        topic_id=TOPIC_ID,
        isr=(1,),
        directories=(UNASSIGNED_DIRECTORY, LOST_DIRECTORY),
    )
    expected = (
        bytes.fromhex("01 05 01")  # frame version 1, record type 5, version 1
        + bytes.fromhex("00000007")  # partition_id
        + TOPIC_ID.bytes  # topic_id
        + bytes.fromhex("02")  # two tagged fields follow (leader -2 etc. are defaults: omitted)
        + bytes.fromhex("00 05")  # tag 0 (isr), 5 bytes
        + bytes.fromhex("02 00000001")  # compact array: N+1 = 2, then broker 1
        + bytes.fromhex("08 21")  # tag 8 (directories), 33 bytes
        + bytes.fromhex("03")  # compact array of 2 uuids
        + bytes(16)  # UNASSIGNED_DIRECTORY
        + bytes(15)
        + b"\x01"  # LOST_DIRECTORY
    )
    assert encode_metadata_value(record, 1) == expected
    assert decode_metadata_value(expected) == (record, 1)


def test_broker_registration_change_record_v1_in_controlled_shutdown() -> None:
    record = BrokerRegistrationChangeRecord(broker_id=3, broker_epoch=42, in_controlled_shutdown=1)
    expected = (
        bytes.fromhex("01 11 01")  # frame version 1, record type 17, version 1
        + bytes.fromhex("00000003")  # broker_id
        + bytes.fromhex("000000000000002a")  # broker_epoch
        + bytes.fromhex("01")  # one tagged field (fenced = 0 is the default: omitted)
        + bytes.fromhex("01 01 01")  # tag 1 (in_controlled_shutdown), 1 byte, value 1
    )
    assert encode_metadata_value(record, 1) == expected
    assert decode_metadata_value(expected) == (record, 1)


def test_fields_absent_from_a_version_must_keep_their_defaults() -> None:
    with pytest.raises(EncodeError):
        encode_metadata_value(BrokerRegistrationChangeRecord(broker_id=3, in_controlled_shutdown=1), 0)
    with pytest.raises(EncodeError):
        encode_metadata_value(PartitionChangeRecord(directories=(LOST_DIRECTORY,)), 0)
    with pytest.raises(EncodeError):
        encode_metadata_value(PartitionRecord(directories=(LOST_DIRECTORY,)), 0)


def test_encode_rejects_what_is_not_a_metadata_record_or_version() -> None:
    with pytest.raises(EncodeError):
        encode_metadata_value(RegisterBrokerRecordBrokerEndpoint(name="x"), 0)
    with pytest.raises(EncodeError):
        encode_metadata_value(TopicRecord(name="t"), 1)


# ---------------------------------------------------------------------------- round trips
@pytest.mark.parametrize(("cls", "version"), CASES, ids=lambda case: getattr(case, "__name__", str(case)))
@given(data=st.data())
def test_round_trip(cls: type[Data], version: int, data: st.DataObject) -> None:
    record = data.draw(messages(cls, version, unknown_tags=True))
    value = encode_metadata_value(record, version)
    assert decode_metadata_value(value) == (record, version)


def test_multi_byte_header_varints_are_read() -> None:
    # A non-minimal (two-byte) encoding of the frame version is still frame version 1.
    body = encode_metadata_value(TopicRecord(name="a"), 0)[3:]
    assert decode_metadata_value(b"\x81\x00\x02\x00" + body) == (TopicRecord(name="a"), 0)


# ---------------------------------------------------------------------------- rejection
def _value(frame_version: int, record_type: int, version: int, body: bytes) -> bytes:
    return uvarint(frame_version) + uvarint(record_type) + uvarint(version) + body


TOPIC_BODY = encode_metadata_value(TopicRecord(name="t1", topic_id=TOPIC_ID), 0)[3:]


@pytest.mark.parametrize("frame_version", [0, 2, 200])
def test_rejects_other_frame_versions(frame_version: int) -> None:
    with pytest.raises(DecodeError, match="frame version"):
        decode_metadata_value(_value(frame_version, 2, 0, TOPIC_BODY))


@pytest.mark.parametrize("record_type", [6, 13, 16, 28, 99, 300])
def test_rejects_unknown_record_types(record_type: int) -> None:
    # 6, 13 and 16 were retired before 3.9 (IsrChange, ..., RemoveFeatureLevel); 28+ are a future Kafka's
    with pytest.raises(UnknownRecordTypeError, match=rf"^unknown metadata record type {record_type} \(version 3\)$"):
        decode_metadata_value(_value(1, record_type, 3, TOPIC_BODY))


def test_rejects_unsupported_versions() -> None:
    with pytest.raises(
        UnsupportedRecordVersionError,
        match=r"^TopicRecord \(metadata record type 2\) version 1 is not supported \(supported: 0\)$",
    ):
        decode_metadata_value(_value(1, 2, 1, TOPIC_BODY))
    with pytest.raises(
        UnsupportedRecordVersionError,
        match=r"^RegisterBrokerRecord \(metadata record type 0\) version 4 is not supported \(supported: 0-3\)$",
    ):
        decode_metadata_value(_value(1, 0, 4, TOPIC_BODY))
    with pytest.raises(UnsupportedRecordVersionError, match=r"^NoOpRecord \(metadata record type 20\) version 1 "):
        decode_metadata_value(_value(1, 20, 1, b"\x00"))


def test_rejects_a_null_value() -> None:
    with pytest.raises(DecodeError, match="null"):
        decode_metadata_value(None)


def test_rejects_trailing_bytes() -> None:
    with pytest.raises(TrailingBytesError):
        decode_metadata_value(_value(1, 2, 0, TOPIC_BODY + b"\x00"))


def test_every_truncation_is_a_decode_error() -> None:
    value = encode_metadata_value(
        PartitionChangeRecord(topic_id=TOPIC_ID, isr=(1, 2), leader=1, directories=(LOST_DIRECTORY,)), 1
    )
    for cut in range(len(value)):
        with pytest.raises(DecodeError):
            decode_metadata_value(value[:cut])
    with pytest.raises(TruncatedError):
        decode_metadata_value(b"\x01\x02")


@given(st.binary(max_size=64))
def test_arbitrary_bytes_raise_only_decode_errors(data: bytes) -> None:
    with contextlib.suppress(DecodeError):
        decode_metadata_value(data)


@given(st.sampled_from(CASES), st.data())
def test_mutated_values_raise_only_decode_errors(case: tuple[type[Data], int], data: st.DataObject) -> None:
    cls, version = case
    value = bytearray(encode_metadata_value(data.draw(messages(cls, version)), version))
    index = data.draw(st.integers(0, len(value) - 1))
    value[index] = data.draw(st.integers(0, 255))
    with contextlib.suppress(DecodeError):
        decode_metadata_value(bytes(value))
