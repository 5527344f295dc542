"""Control records: key and value encoding, kio conformance, round trips and rejections."""

from __future__ import annotations

import contextlib
import dataclasses
import uuid

import pytest
from hypothesis import given
from hypothesis import strategies as st
from kio.records.readers import read_batch
from kio.schema.k_raft_version_record.v0.data import KRaftVersionRecord as KioKRaftVersionV0
from kio.schema.leader_change_message.v0.data import LeaderChangeMessage as KioLeaderChangeV0
from kio.schema.leader_change_message.v1.data import LeaderChangeMessage as KioLeaderChangeV1
from kio.schema.snapshot_footer_record.v0.data import SnapshotFooterRecord as KioSnapshotFooterV0
from kio.schema.snapshot_header_record.v0.data import SnapshotHeaderRecord as KioSnapshotHeaderV0
from kio.schema.voters_record.v0.data import VotersRecord as KioVotersV0

from protocol.compiler import codec
from protocol.errors import DecodeError, EncodeError, TrailingBytesError, TruncatedError
from protocol.records.batch import decode_batch
from protocol.records.control import (
    CONTROL_RECORD_TYPES,
    ControlMessage,
    KRaftVersionRecord,
    LeaderChangeMessage,
    LeaderChangeMessageVoter,
    SnapshotFooterRecord,
    SnapshotHeaderRecord,
    VotersRecord,
    control_batch,
    control_key,
    decode_control_record,
    encode_control_record,
)
from protocol.records.metadata import TopicRecord
from protocol.records.metadata_value import UnknownRecordTypeError, UnsupportedRecordVersionError

from ..kio_bridge import from_kio, kio_encode, to_kio
from ..strategies import messages

KIO_CASES = [
    (LeaderChangeMessage, 0, KioLeaderChangeV0),
    (LeaderChangeMessage, 1, KioLeaderChangeV1),
    (SnapshotHeaderRecord, 0, KioSnapshotHeaderV0),
    (SnapshotFooterRecord, 0, KioSnapshotFooterV0),
    (KRaftVersionRecord, 0, KioKRaftVersionV0),
    (VotersRecord, 0, KioVotersV0),
]
CASES = [(cls, version) for cls in CONTROL_RECORD_TYPES.values() for version in cls.API.valid]


def test_types_and_keys() -> None:
    assert {key: cls.__name__ for key, cls in CONTROL_RECORD_TYPES.items()} == {
        2: "LeaderChangeMessage",
        3: "SnapshotHeaderRecord",
        4: "SnapshotFooterRecord",
        5: "KRaftVersionRecord",
        6: "VotersRecord",
    }
    assert control_key(2) == bytes.fromhex("0000 0002")  # key version 0, type 2


def test_leader_change_golden_v0() -> None:
    message = LeaderChangeMessage(
        leader_id=1,
        voters=(LeaderChangeMessageVoter(voter_id=1), LeaderChangeMessageVoter(voter_id=2)),
        granting_voters=(LeaderChangeMessageVoter(voter_id=1),),
    )
    key, value = encode_control_record(message, 0)
    assert key == bytes.fromhex("0000 0002")
    assert value == bytes.fromhex(
        "0000"  # version 0
        "00000001"  # leader_id
        "03 00000001 00 00000002 00"  # two voters, each with its empty tag buffer
        "02 00000001 00"  # one granting voter
        "00"  # no tagged fields
    )
    assert decode_control_record(key, value) == (message, 0)


@pytest.mark.parametrize(("cls", "version", "kio_cls"), KIO_CASES, ids=lambda c: getattr(c, "__name__", str(c)))
@given(data=st.data())
def test_conformance_with_kio(cls: type[ControlMessage], version: int, kio_cls: type, data: st.DataObject) -> None:
    kio_message = data.draw(st.from_type(kio_cls))
    kio_bytes = kio_encode(kio_cls, kio_message)
    ours = codec(cls, version).decode_exact(kio_bytes)
    assert to_kio(ours, kio_cls) == kio_message
    assert from_kio(kio_message, cls) == ours
    assert codec(cls, version).encode(ours) == kio_bytes


@pytest.mark.parametrize(("cls", "version"), CASES, ids=lambda c: getattr(c, "__name__", str(c)))
@given(data=st.data())
def test_round_trip(cls: type[ControlMessage], version: int, data: st.DataObject) -> None:
    message = dataclasses.replace(data.draw(messages(cls, version, unknown_tags=True)), version=version)
    key, value = encode_control_record(message, version)
    assert decode_control_record(key, value) == (message, version)


def test_leader_change_v1_carries_directory_ids() -> None:
    voter = LeaderChangeMessageVoter(voter_id=5, voter_directory_id=uuid.UUID(int=9))
    message = LeaderChangeMessage(version=1, leader_id=5, voters=(voter,), granting_voters=(voter,))
    key, value = encode_control_record(message, 1)
    assert decode_control_record(key, value) == (message, 1)
    with pytest.raises(EncodeError):  # v0 has no directory ids
        encode_control_record(dataclasses.replace(message, version=0), 0)


def test_encode_rejections() -> None:
    with pytest.raises(EncodeError, match="version"):
        encode_control_record(LeaderChangeMessage(version=0), 1)
    with pytest.raises(EncodeError):
        encode_control_record(SnapshotFooterRecord(version=1), 1)
    with pytest.raises(EncodeError):
        encode_control_record(TopicRecord(), 0)  # type: ignore[arg-type]


KEY, VALUE = encode_control_record(SnapshotHeaderRecord(last_contained_log_timestamp=12), 0)


@pytest.mark.parametrize(
    ("key", "value", "error"),
    [
        (None, VALUE, DecodeError),
        (KEY, None, DecodeError),
        (KEY[:3], VALUE, DecodeError),
        (KEY + b"\x00", VALUE, DecodeError),
        (bytes.fromhex("0001 0003"), VALUE, DecodeError),  # key version 1
        (bytes.fromhex("ffff 0003"), VALUE, DecodeError),  # negative key version
        (control_key(0), VALUE, UnknownRecordTypeError),  # abort marker: not a KRaft record
        (control_key(1), VALUE, UnknownRecordTypeError),  # commit marker
        (control_key(7), VALUE, UnknownRecordTypeError),  # a future Kafka's control type
        (KEY, b"\x00", TruncatedError),
        (KEY, b"\x00\x01" + VALUE[2:], UnsupportedRecordVersionError),
        (KEY, VALUE + b"\x00", TrailingBytesError),
    ],
)
def test_decode_rejections(key: bytes | None, value: bytes | None, error: type[DecodeError]) -> None:
    with pytest.raises(error):
        decode_control_record(key, value)


def test_unknown_types_and_versions_are_named() -> None:
    with pytest.raises(UnknownRecordTypeError, match=r"^unknown control record type 7 \(version 0\)$"):
        decode_control_record(control_key(7), VALUE)
    with pytest.raises(UnknownRecordTypeError, match=r"^unknown control record type 9$"):
        decode_control_record(control_key(9), b"")
    with pytest.raises(
        UnsupportedRecordVersionError,
        match=r"^VotersRecord \(control record type 6\) version 1 is not supported \(supported: 0\)$",
    ):
        decode_control_record(control_key(6), b"\x00\x01\x01\x00")
    with pytest.raises(
        UnsupportedRecordVersionError, match=r"^LeaderChangeMessage \(control record type 2\) version 2 .*: 0-1\)$"
    ):
        decode_control_record(control_key(2), b"\x00\x02")


def test_every_truncated_value_is_a_decode_error() -> None:
    voter = LeaderChangeMessageVoter(voter_id=1)
    key, value = encode_control_record(LeaderChangeMessage(leader_id=1, voters=(voter,)), 0)
    for cut in range(len(value)):
        with pytest.raises(DecodeError):
            decode_control_record(key, value[:cut])


@given(st.binary(max_size=6), st.binary(max_size=40))
def test_arbitrary_bytes_raise_only_decode_errors(key: bytes, value: bytes) -> None:
    with contextlib.suppress(DecodeError):
        decode_control_record(key, value)


def test_control_batch_is_a_kafka_control_batch() -> None:
    leader_change = LeaderChangeMessage(leader_id=1, voters=(LeaderChangeMessageVoter(voter_id=1),))
    data = control_batch(40, 7, 1_700_000_000_000, [(leader_change, 0)])
    batch, end = decode_batch(data)
    assert end == len(data)
    assert batch.is_control and batch.partition_leader_epoch == 7 and batch.base_offset == 40
    assert [decode_control_record(r.key, r.value) for r in batch.records] == [(leader_change, 0)]
    kio_batch, size = read_batch(data, 0)
    assert size == len(data)
    assert kio_batch.attributes == 0x20
    assert kio_batch.records[0].key == control_key(2)
