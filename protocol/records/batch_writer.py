"""Writing record batches v2 (the format is `protocol.records.batch`'s): uncompressed, CRC-32C computed.

Rules:
- Writing never compresses. KRaft batches (`metadata_batch`) use producer id, epoch and base
  sequence -1, CreateTime, one timestamp for base and max, and the leader epoch.
- The controller's own appends (null keys, no headers) are framed directly by
  `PlainBatchBuilder`, a chunk of values at a time; the bytes are the general path's.
- `encode_groups` turns a controller's commit (groups of metadata records) into one batch per
  group at consecutive offsets, pausing (a bare `yield`) after every `ENCODE_SLICE_RECORDS`
  records, so that a caller on an event loop can let other work run; large groups are framed a
  slice at a time.
- Bad values raise `EncodeError`, nothing else.
"""

from __future__ import annotations

import struct
from collections.abc import Generator, Sequence
from dataclasses import dataclass

from crc32c import crc32c

from ..errors import EncodeError
from ..primitives import varint, varlong
from ..spec import Data
from .batch import (
    _CRC_COVERED_HEADER,
    _PREFIX,
    COMPRESSION_MASK,
    CONTROL_FLAG,
    CRC_START,
    LOG_OVERHEAD,
    MAGIC,
    Record,
    RecordBatch,
)
from .metadata_value import encode_metadata_value

#: the zig-zag varints of 0 .. `_SMALL_LIMIT - 1` (one or two bytes), made once: a batch frames each
#: record with three (its offset delta, its value's size, its own size), mostly past one byte
_SMALL_LIMIT = 8192
_SMALL_VARINTS = tuple(varint(value) for value in range(_SMALL_LIMIT))

#: Records encoded between two pauses of `encode_groups` (about 2-4 ms of work).
ENCODE_SLICE_RECORDS = 256


def _nullable_bytes(data: bytes | None, out: bytearray) -> None:
    if data is None:
        out += b"\x01"  # zig-zag -1
    else:
        out += varint(len(data))
        out += data


def _encode_record(record: Record, out: bytearray) -> None:
    body = bytearray(b"\x00")  # record attributes: unused, always 0
    body += varlong(record.timestamp_delta)
    body += varint(record.offset_delta)
    _nullable_bytes(record.key, body)
    _nullable_bytes(record.value, body)
    body += varint(len(record.headers))
    for header_key, header_value in record.headers:
        _nullable_bytes(header_key.encode(), body)
        _nullable_bytes(header_value, body)
    out += varint(len(body))
    out += body


def encode_batch(batch: RecordBatch) -> bytes:
    """The bytes of `batch`, uncompressed, with batchLength and CRC computed."""
    if batch.attributes & COMPRESSION_MASK:
        raise EncodeError("compressed batches are not supported")
    try:
        body = bytearray(
            _CRC_COVERED_HEADER.pack(
                batch.attributes,
                batch.last_offset_delta,
                batch.base_timestamp,
                batch.max_timestamp,
                batch.producer_id,
                batch.producer_epoch,
                batch.base_sequence,
                len(batch.records),
            )
        )
        for record in batch.records:
            _encode_record(record, body)
        length = len(body) + CRC_START - LOG_OVERHEAD
        prefix = _PREFIX.pack(batch.base_offset, length, batch.partition_leader_epoch, MAGIC, crc32c(body))
    except (struct.error, AttributeError, TypeError, ValueError, OverflowError) as exc:
        raise EncodeError(f"cannot encode record batch: {type(exc).__name__}: {exc}") from None
    return prefix + body


def metadata_batch(
    base_offset: int,
    leader_epoch: int,
    timestamp_ms: int,
    values: Sequence[bytes],
    *,
    keys: Sequence[bytes | None] | None = None,
    control: bool = False,
) -> bytes:
    """A KRaft batch of consecutive records (keys default to null), as Kafka's raft writes it."""
    if not values:
        raise EncodeError("a metadata batch needs at least one record")
    if keys is not None and len(keys) != len(values):
        raise EncodeError(f"{len(keys)} keys for {len(values)} values")
    if keys is None and not control:
        return _plain_metadata_batch(base_offset, leader_epoch, timestamp_ms, values)
    record_keys = keys if keys is not None else [None] * len(values)
    batch = RecordBatch(
        base_offset=base_offset,
        partition_leader_epoch=leader_epoch,
        attributes=CONTROL_FLAG if control else 0,
        last_offset_delta=len(values) - 1,
        base_timestamp=timestamp_ms,
        max_timestamp=timestamp_ms,
        records=tuple(
            Record(index, 0, key, value) for index, (key, value) in enumerate(zip(record_keys, values, strict=True))
        ),
    )
    return encode_batch(batch)


def _plain_metadata_batch(base_offset: int, leader_epoch: int, timestamp_ms: int, values: Sequence[bytes]) -> bytes:
    """`metadata_batch` for the controller's own appends (null keys, no headers), written directly."""
    builder = PlainBatchBuilder(timestamp_ms)
    builder.add(values)
    return builder.build(base_offset, leader_epoch)


class PlainBatchBuilder:
    """A batch of null-key, header-less records (the controller's own appends), framed a chunk of
    values at a time, so that a caller can pause between chunks of a large batch.

    Same bytes as the general path (the tests check it); each record is
    length | attributes 0 | timestamp delta 0 | offset delta | key -1 | value | 0 headers.
    """

    __slots__ = ("_count", "_records", "_timestamp_ms")

    def __init__(self, timestamp_ms: int) -> None:
        self._records = bytearray()
        self._count = 0
        self._timestamp_ms = timestamp_ms

    def add(self, values: Sequence[bytes]) -> None:
        """Frame the next records, in order."""
        body = self._records
        index = self._count
        try:
            small = _SMALL_VARINTS
            for value in values:
                delta = small[index] if index < _SMALL_LIMIT else varint(index)
                size = len(value)
                size_bytes = small[size] if size < _SMALL_LIMIT else varint(size)
                record_size = 2 + len(delta) + 1 + len(size_bytes) + size + 1
                body += small[record_size] if record_size < _SMALL_LIMIT else varint(record_size)
                body += b"\x00\x00"
                body += delta
                body += b"\x01"
                body += size_bytes
                body += value
                body += b"\x00"
                index += 1
        except (TypeError, ValueError, OverflowError) as exc:
            raise EncodeError(f"cannot encode record batch: {type(exc).__name__}: {exc}") from None
        self._count = index

    def build(self, base_offset: int, leader_epoch: int) -> bytes:
        """The batch of every record added, at `base_offset` in `leader_epoch` (CRC-32C computed here)."""
        if not self._count:
            raise EncodeError("a metadata batch needs at least one record")
        timestamp = self._timestamp_ms
        try:
            header = _CRC_COVERED_HEADER.pack(0, self._count - 1, timestamp, timestamp, -1, -1, -1, self._count)
            body = header + self._records
            length = len(body) + CRC_START - LOG_OVERHEAD
            prefix = _PREFIX.pack(base_offset, length, leader_epoch, MAGIC, crc32c(body))
        except (struct.error, TypeError, ValueError, OverflowError) as exc:
            raise EncodeError(f"cannot encode record batch: {type(exc).__name__}: {exc}") from None
        return prefix + body


@dataclass(frozen=True)
class PreparedAppend:
    """Batches encoded by `encode_groups`, to be written at `start_offset`: `offsets` holds each
    group's first offset (an empty group's too), `batches` the (base offset, bytes) of each batch."""

    start_offset: int
    end_offset: int
    offsets: list[int]
    batches: list[tuple[int, bytes]]


def encode_groups(
    groups: Sequence[Sequence[tuple[Data, int]]], start_offset: int, epoch: int, timestamp_ms: int
) -> Generator[None, None, PreparedAppend]:
    """One batch per non-empty group of (record, version), from `start_offset` on, yielding after
    every `ENCODE_SLICE_RECORDS` records (see the module's rules)."""
    offsets: list[int] = []
    batches: list[tuple[int, bytes]] = []
    next_offset = start_offset
    encoded = 0  # records encoded since the last pause
    for group in groups:
        offsets.append(next_offset)
        if not group:
            continue
        if len(group) <= ENCODE_SLICE_RECORDS:  # most groups: one request's few records
            values = [encode_metadata_value(record, version) for record, version in group]
            batch = metadata_batch(next_offset, epoch, timestamp_ms, values)
        else:  # a large batch: its records encoded and framed a slice at a time
            builder = PlainBatchBuilder(timestamp_ms)
            for start in range(0, len(group), ENCODE_SLICE_RECORDS):
                builder.add(
                    [
                        encode_metadata_value(record, version)
                        for record, version in group[start : start + ENCODE_SLICE_RECORDS]
                    ]
                )
                yield None
            batch = builder.build(next_offset, epoch)
        batches.append((next_offset, batch))
        next_offset += len(group)
        encoded += len(group)
        if encoded >= ENCODE_SLICE_RECORDS:
            encoded = 0
            yield None
    return PreparedAppend(start_offset, next_offset, offsets, batches)
