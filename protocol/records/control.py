"""KRaft control records: LeaderChange (2), SnapshotHeader (3), SnapshotFooter (4), KRaftVersion (5)
and KRaftVoters (6), every version Kafka 3.9 has.

Control records live in control batches (attributes bit 5). Unlike metadata records, their
key says what they are and their value is the bare message:

    key   = version:INT16 (= 0) | type:INT16
    value = the message body, flexible encoding, at the message's own version

Rules:
- No framing carries the value's schema version; each message starts with its own INT16
  `version` field, and that is the version it is written at (Kafka writes version 0, which
  every Kafka reader assumes). So `encode_control_record(msg, v)` requires `msg.version == v`,
  and `decode_control_record` reads the body at the version the body names.
- The key must be exactly 4 bytes with key version 0; anything else, an unknown type, an
  unsupported version or bytes after the body raise a `DecodeError` subclass.
"""

from __future__ import annotations

import struct
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Annotated, ClassVar

from protocol.compiler import codec
from protocol.errors import DecodeError, EncodeError, TruncatedError
from protocol.spec import ARRAY, CONTROL, INT16, INT32, INT64, STRING, STRUCT, UINT16, UUID, ZERO_UUID, Api, Data, F

from .batch_writer import metadata_batch
from .metadata_value import UnknownRecordTypeError, UnsupportedRecordVersionError

KEY_VERSION = 0
_KEY = struct.Struct(">hh")
_VERSION = struct.Struct(">h")


@dataclass(frozen=True, slots=True, kw_only=True)
class LeaderChangeMessageVoter(Data):
    """A quorum voter; v1 adds its directory id (KIP-853)."""

    voter_id: Annotated[int, F(INT32)] = 0
    voter_directory_id: Annotated[uuid.UUID, F(UUID, "1+")] = ZERO_UUID


@dataclass(frozen=True, slots=True, kw_only=True)
class LeaderChangeMessage(Data):
    """Written by a newly elected quorum leader as the first record of its epoch."""

    API: ClassVar[Api] = Api.of(2, CONTROL, valid="0-1", flexible="0+")
    version: Annotated[int, F(INT16)] = 0
    leader_id: Annotated[int, F(INT32)] = 0
    voters: Annotated[tuple[LeaderChangeMessageVoter, ...], F(ARRAY(LeaderChangeMessageVoter))] = ()
    granting_voters: Annotated[tuple[LeaderChangeMessageVoter, ...], F(ARRAY(LeaderChangeMessageVoter))] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class SnapshotHeaderRecord(Data):
    """The first record of a snapshot."""

    API: ClassVar[Api] = Api.of(3, CONTROL, valid="0", flexible="0+")
    version: Annotated[int, F(INT16)] = 0
    last_contained_log_timestamp: Annotated[int, F(INT64)] = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class SnapshotFooterRecord(Data):
    """The last record of a snapshot."""

    API: ClassVar[Api] = Api.of(4, CONTROL, valid="0", flexible="0+")
    version: Annotated[int, F(INT16)] = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class KRaftVersionRecord(Data):
    """The finalized kraft.version of the quorum (KIP-853): 0 static voters, 1 dynamic ones."""

    API: ClassVar[Api] = Api.of(5, CONTROL, valid="0", flexible="0+")
    version: Annotated[int, F(INT16)] = 0
    k_raft_version: Annotated[int, F(INT16)] = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class VotersRecordEndpoint(Data):
    """A listener a voter can be reached on."""

    name: Annotated[str, F(STRING)] = ""
    host: Annotated[str, F(STRING)] = ""
    port: Annotated[int, F(UINT16)] = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class VotersRecordKRaftVersionFeature(Data):
    """The range of kraft.version levels a voter supports."""

    min_supported_version: Annotated[int, F(INT16)] = 0
    max_supported_version: Annotated[int, F(INT16)] = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class VotersRecordVoter(Data):
    """One voter of the quorum: its id, directory id, endpoints and supported kraft versions."""

    voter_id: Annotated[int, F(INT32)] = 0
    voter_directory_id: Annotated[uuid.UUID, F(UUID)] = ZERO_UUID
    endpoints: Annotated[tuple[VotersRecordEndpoint, ...], F(ARRAY(VotersRecordEndpoint))] = ()
    k_raft_version_feature: Annotated[VotersRecordKRaftVersionFeature, F(STRUCT(VotersRecordKRaftVersionFeature))] = (
        VotersRecordKRaftVersionFeature()
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class VotersRecord(Data):
    """The set of voters of the quorum from this offset on (KIP-853)."""

    API: ClassVar[Api] = Api.of(6, CONTROL, valid="0", flexible="0+")
    version: Annotated[int, F(INT16)] = 0
    voters: Annotated[tuple[VotersRecordVoter, ...], F(ARRAY(VotersRecordVoter))] = ()


ControlMessage = LeaderChangeMessage | SnapshotHeaderRecord | SnapshotFooterRecord | KRaftVersionRecord | VotersRecord

CONTROL_RECORD_TYPES: dict[int, type[ControlMessage]] = {
    cls.API.key: cls
    for cls in (LeaderChangeMessage, SnapshotHeaderRecord, SnapshotFooterRecord, KRaftVersionRecord, VotersRecord)
}


def control_key(record_type: int) -> bytes:
    """The key of a control record of `record_type`."""
    return _KEY.pack(KEY_VERSION, record_type)


def encode_control_record(message: ControlMessage, version: int) -> tuple[bytes, bytes]:
    """(key, value) of a control record holding `message` written at `version`."""
    cls = type(message)
    if CONTROL_RECORD_TYPES.get(cls.API.key) is not cls:
        raise EncodeError(f"{cls.__name__} is not a control record")
    if version not in cls.API.valid:
        raise EncodeError(f"{cls.__name__} has no version {version} (valid: {cls.API.valid})")
    if message.version != version:
        raise EncodeError(f"{cls.__name__}.version is {message.version} but it is written at v{version}")
    return control_key(cls.API.key), codec(cls, version).encode(message)


def decode_control_record(key: bytes | None, value: bytes | None) -> tuple[ControlMessage, int]:
    """A control record's key and value -> (message, version). Raises only `DecodeError`s."""
    if key is None or value is None:
        raise DecodeError("a control record needs both a key and a value")
    if len(key) != _KEY.size:
        raise DecodeError(f"a control record key is {_KEY.size} bytes, got {len(key)}")
    key_version, record_type = _KEY.unpack(key)
    if key_version != KEY_VERSION:
        raise DecodeError(f"control record key version {key_version} is not supported (only 0)")
    cls = CONTROL_RECORD_TYPES.get(record_type)
    if cls is None:
        named = f" (version {_VERSION.unpack_from(value)[0]})" if len(value) >= _VERSION.size else ""
        raise UnknownRecordTypeError(f"unknown control record type {record_type}{named}")
    if len(value) < _VERSION.size:
        raise TruncatedError(f"{cls.__name__} value is {len(value)} bytes, too short for its version")
    (version,) = _VERSION.unpack_from(value)
    if version not in cls.API.valid:
        raise UnsupportedRecordVersionError(
            f"{cls.__name__} (control record type {record_type}) version {version} is not supported "
            f"(supported: {cls.API.valid})"
        )
    return codec(cls, version).decode_exact(value), version


def control_batch(
    base_offset: int, leader_epoch: int, timestamp_ms: int, messages: Sequence[tuple[ControlMessage, int]]
) -> bytes:
    """A KRaft control batch holding `(message, version)` control records, in order."""
    keys, values = [], []
    for message, version in messages:
        key, value = encode_control_record(message, version)
        keys.append(key)
        values.append(value)
    return metadata_batch(base_offset, leader_epoch, timestamp_ms, values, keys=keys, control=True)
