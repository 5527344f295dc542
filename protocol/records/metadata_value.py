"""The value framing of a KRaft metadata record: how one record is a value of the
`__cluster_metadata` log, encoded and decoded.

Kept apart from the record classes (`protocol.records.metadata`), which only describe each
record; this module is the one place that reads and writes the framing around a body:

    frame_version:UNSIGNED_VARINT (= 1) | record_type:UNSIGNED_VARINT | version:UNSIGNED_VARINT | body

Rules:
- `decode_metadata_value` accepts exactly one record: frame version 1 only (version 0 was a
  pre-release format), a known record type at a supported version, and nothing after the body.
  Every failure is a `DecodeError` subclass (`UnknownRecordTypeError`,
  `UnsupportedRecordVersionError` for a type or version outside `METADATA_RECORD_TYPES`).
- `encode_metadata_value` takes only a class of `METADATA_RECORD_TYPES` at a version it has, and
  raises `EncodeError` otherwise.
- Codecs and framing prefixes are built on first use and kept: decoding or encoding a record is
  one dict lookup after the first of its type and version.
"""

from __future__ import annotations

from typing import Any

from protocol.compiler import Codec, codec
from protocol.errors import DecodeError, EncodeError, TrailingBytesError, TruncatedError
from protocol.primitives import read_uvarint, uvarint
from protocol.spec import Data

from .metadata import METADATA_RECORD_TYPES

FRAME_VERSION = 1


class UnknownRecordTypeError(DecodeError):
    """A record value (or control record key) names a record type this codec does not know."""


class UnsupportedRecordVersionError(DecodeError):
    """A known record type at a version outside the range this codec reads."""


# (record type, version) -> codec, filled on first use; the decode fast path is one dict lookup.
_CODECS: dict[tuple[int, int], Codec[Any]] = {}
# (record class, version) -> its codec and the value's framing prefix (frame version, type and
# version as uvarints), filled on first use
_ENCODERS: dict[tuple[type[Data], int], tuple[Codec[Any], bytes]] = {}


def _codec_for(record_type: int, version: int) -> Codec[Any]:
    cls = METADATA_RECORD_TYPES.get(record_type)
    if cls is None:
        raise UnknownRecordTypeError(f"unknown metadata record type {record_type} (version {version})")
    if version not in cls.API.valid:
        raise UnsupportedRecordVersionError(
            f"{cls.__name__} (metadata record type {record_type}) version {version} is not supported "
            f"(supported: {cls.API.valid})"
        )
    found = _CODECS[(record_type, version)] = codec(cls, version)
    return found


def encode_metadata_value(record: Data, version: int) -> bytes:
    """The framed value of one metadata record at `version` (raises `EncodeError`)."""
    encoder = _ENCODERS.get((type(record), version))
    if encoder is None:
        encoder = _encoder_for(record, version)
    record_codec, prefix = encoder
    out = bytearray(prefix)
    record_codec.encode_into(record, out)
    return bytes(out)


def _encoder_for(record: Data, version: int) -> tuple[Codec[Any], bytes]:
    """The codec and the framing prefix of a metadata record class at `version`, checked once and
    kept (`_ENCODERS`: a snapshot encodes a million records through one lookup each)."""
    record_type = record.API.key if hasattr(type(record), "API") else -1
    if METADATA_RECORD_TYPES.get(record_type) is not type(record):
        raise EncodeError(f"{type(record).__name__} is not a metadata record")
    try:
        record_codec = _CODECS.get((record_type, version)) or _codec_for(record_type, version)
    except DecodeError as exc:
        raise EncodeError(str(exc)) from None
    prefix = uvarint(FRAME_VERSION) + uvarint(record_type) + uvarint(version)
    found = _ENCODERS[(type(record), version)] = (record_codec, prefix)
    return found


def decode_metadata_value(data: bytes | None) -> tuple[Data, int]:
    """One framed metadata record value -> (record, version). Raises only `DecodeError`s.

    Takes a record's value as a batch gives it, so a null value is a `DecodeError` too.
    """
    if data is None:
        raise DecodeError("a metadata record has a null value")
    if len(data) < 3:
        raise TruncatedError(f"a metadata record value needs at least 3 bytes, got {len(data)}")
    frame_version = data[0]
    record_type = data[1]
    version = data[2]
    pos = 3
    if frame_version >= 0x80 or record_type >= 0x80 or version >= 0x80:  # rare: multi-byte varints
        frame_version, pos = read_uvarint(data, 0)
        record_type, pos = read_uvarint(data, pos)
        version, pos = read_uvarint(data, pos)
    if frame_version != FRAME_VERSION:
        raise DecodeError(f"metadata record frame version {frame_version} is not supported (only 1)")
    record_codec = _CODECS.get((record_type, version)) or _codec_for(record_type, version)
    record, end = record_codec.decode(data, pos)
    if end != len(data):
        raise TrailingBytesError(f"{len(data) - end} bytes left after {type(record).__name__} v{version}")
    return record, version
