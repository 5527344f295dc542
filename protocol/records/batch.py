"""Record batches v2 (magic 2): the on-disk unit of the metadata log, as Kafka writes them; reading them.

    baseOffset:INT64 batchLength:INT32 partitionLeaderEpoch:INT32 magic:INT8 crc:UINT32
    attributes:INT16 lastOffsetDelta:INT32 baseTimestamp:INT64 maxTimestamp:INT64
    producerId:INT64 producerEpoch:INT16 baseSequence:INT32 recordsCount:INT32 records...

    record = length:VARINT attributes:INT8 timestampDelta:VARLONG offsetDelta:VARINT
             keyLength:VARINT key valueLength:VARINT value headersCount:VARINT headers...

Rules:
- CRC-32C covers `attributes` to the end of the batch; baseOffset, batchLength,
  partitionLeaderEpoch and magic are outside it (Kafka's design: a leader may restamp them).
  So a batch can guarantee its records, not where it sits: checking offsets and epochs against
  the log is the log's job. Every other byte is either checked structurally or by the CRC.
- Decoding validates, in this order: the length against the header size and the buffer
  (`TruncatedError` when the buffer ends first), magic, CRC (`CorruptRecordError`), no
  compression, the record count, every record's length and nothing left over inside the batch.
  It raises nothing but `DecodeError` subclasses, whatever the bytes. `verify_batch` checks the
  same up to the records and leaves them to the CRC (a log's recovery scan).
- Writing is `protocol.records.batch_writer`'s.
- The header's layout is declared here only. Readers that frame or index batches without
  decoding them (the log, replication, the checker) use `read_head` (the seven fields up to
  lastOffsetDelta), `batch_size` (from baseOffset and batchLength alone), `read_base_offset`,
  `read_leader_epoch`, `read_crc` and the offsets (`MAGIC_OFFSET`, `CRC_OFFSET`, ...); these
  check nothing.
- Decoding is on the controller's start-up path: one `unpack_from` for the header and an
  inlined one-byte varint fast path per record field; no per-record calls but `Record(...)`.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, NamedTuple

from crc32c import crc32c

from protocol.errors import CorruptRecordError, DecodeError, TruncatedError
from protocol.primitives import read_varint, read_varlong

if TYPE_CHECKING:
    from _typeshed import ReadableBuffer

MAGIC = 2
MAGIC_BYTE = bytes([MAGIC])  # magic as it lies at MAGIC_OFFSET: what a scan for batch starts looks for
COMPRESSION_MASK = 0x07
TIMESTAMP_TYPE_FLAG = 0x08  # set: LogAppendTime
TRANSACTIONAL_FLAG = 0x10
CONTROL_FLAG = 0x20
NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
NO_SEQUENCE = -1
NO_PARTITION_LEADER_EPOCH = -1

# ------------------------------------------------------------------------ the header's layout
# The header as one big-endian format character per field, in order (the module docstring's):
#   0 baseOffset q, 1 batchLength i, 2 partitionLeaderEpoch i, 3 magic b, 4 crc I, 5 attributes h,
#   6 lastOffsetDelta i, 7 baseTimestamp q, 8 maxTimestamp q, 9 producerId q, 10 producerEpoch h,
#   11 baseSequence i, 12 recordsCount i
# Every struct, size and offset below is cut from it, so the layout is written down once.
_FIELDS = "qiibIhiqqqhii"


def _fields(start: int, stop: int) -> struct.Struct:
    """The header's fields `start` to `stop - 1` (their indexes in `_FIELDS`) as one struct."""
    return struct.Struct(">" + _FIELDS[start:stop])


_HEADER = _fields(0, 13)  # the whole header: the codec's, one `unpack_from` per batch
_HEAD_FIELDS = 7
_HEAD = _fields(0, _HEAD_FIELDS)  # baseOffset to lastOffsetDelta: `read_head`
_LENGTH = _fields(0, 2)  # baseOffset and batchLength: the framing
_BASE_OFFSET = _fields(0, 1)
_LEADER_EPOCH = _fields(2, 3)
_CRC = _fields(4, 5)
_PREFIX = _fields(0, 5)  # up to and including the CRC (the writer's)
_CRC_COVERED_HEADER = _fields(5, 13)  # attributes to recordsCount (the writer's)

LOG_OVERHEAD = _LENGTH.size  # 12, baseOffset + batchLength: the bytes batchLength does not count
LENGTH_OFFSET = _BASE_OFFSET.size  # 8: batchLength, after baseOffset
LEADER_EPOCH_OFFSET = _fields(0, 2).size  # 12: partitionLeaderEpoch
MAGIC_OFFSET = _fields(0, 3).size  # 16
CRC_OFFSET = _fields(0, 4).size  # 17
CRC_START = _PREFIX.size  # 21: `attributes`, where the CRC's coverage starts
HEAD_SIZE = _HEAD.size  # 27: what `read_head` needs
HEADER_SIZE = _HEADER.size  # 61
MIN_BATCH_LENGTH = HEADER_SIZE - LOG_OVERHEAD  # 49: the batchLength of a header with no records

_MIN_RECORD_SIZE = 7  # length, attributes, timestamp, offset, key, value, headers: a byte each
_DECODE_FAULTS = (struct.error, IndexError, ValueError, OverflowError, TypeError)

Header = tuple[str, bytes | None]


class Record(NamedTuple):
    """One record of a batch; offset and timestamp are deltas from the batch's base values.

    A named tuple rather than a frozen dataclass: decoding builds one per record, and a
    tuple is built about six times faster.
    """

    offset_delta: int
    timestamp_delta: int = 0
    key: bytes | None = None
    value: bytes | None = None
    headers: tuple[Header, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class RecordBatch:
    """A decoded batch (batchLength, magic and CRC are derived, so not kept)."""

    base_offset: int
    partition_leader_epoch: int = NO_PARTITION_LEADER_EPOCH
    attributes: int = 0
    last_offset_delta: int
    base_timestamp: int = -1
    max_timestamp: int = -1
    producer_id: int = NO_PRODUCER_ID
    producer_epoch: int = NO_PRODUCER_EPOCH
    base_sequence: int = NO_SEQUENCE
    records: tuple[Record, ...] = ()

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & CONTROL_FLAG)

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & TRANSACTIONAL_FLAG)

    @property
    def compression(self) -> int:
        return self.attributes & COMPRESSION_MASK

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def next_offset(self) -> int:
        return self.base_offset + self.last_offset_delta + 1


# --------------------------------------------------------------- header fields, undecoded
class BatchHead(NamedTuple):
    """The seven leading fields of a batch header (`HEAD_SIZE` bytes), as read by `read_head`."""

    base_offset: int
    batch_length: int
    partition_leader_epoch: int
    magic: int
    crc: int
    attributes: int
    last_offset_delta: int

    @property
    def size(self) -> int:
        """The whole batch's size in bytes, header included."""
        return LOG_OVERHEAD + self.batch_length

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & CONTROL_FLAG)

    @property
    def next_offset(self) -> int:
        return self.base_offset + self.last_offset_delta + 1


_new_head = tuple.__new__  # a BatchHead from the unpacked tuple without NamedTuple's keyword-taking __new__


def read_head(data: ReadableBuffer, position: int = 0) -> BatchHead:
    """The leading fields of the batch header at `position`, unchecked; `struct.error` when fewer
    than `HEAD_SIZE` bytes are there."""
    return _new_head(BatchHead, _HEAD.unpack_from(data, position))


def batch_size(data: ReadableBuffer, position: int = 0) -> int:
    """The size in bytes (LOG_OVERHEAD + batchLength, unchecked: below HEADER_SIZE when the length
    is) of the batch at `position`, for framing; `struct.error` when fewer than `LOG_OVERHEAD`
    bytes are there."""
    length: int = _LENGTH.unpack_from(data, position)[1]
    return LOG_OVERHEAD + length


def read_base_offset(data: ReadableBuffer, position: int = 0) -> int:
    """The baseOffset of the batch header at `position` (`struct.error` when it is not whole)."""
    base_offset: int = _BASE_OFFSET.unpack_from(data, position)[0]
    return base_offset


def read_leader_epoch(data: ReadableBuffer, position: int = 0) -> int:
    """The partitionLeaderEpoch of the batch header at `position` (`struct.error` when it is not whole)."""
    epoch: int = _LEADER_EPOCH.unpack_from(data, position + LEADER_EPOCH_OFFSET)[0]
    return epoch


def read_crc(data: ReadableBuffer, position: int = 0) -> int:
    """The CRC-32C stored in the batch header at `position` (`struct.error` when it is not whole)."""
    crc: int = _CRC.unpack_from(data, position + CRC_OFFSET)[0]
    return crc


# ---------------------------------------------------------------------------- decoding
def decode_batch(buf: bytes | bytearray | memoryview, pos: int = 0) -> tuple[RecordBatch, int]:
    """Decode the batch starting at `pos`; return it and the position after it."""
    data = buf if type(buf) is bytes else bytes(buf)
    return _decode_at(data, pos)


def verify_batch(buf: bytes | bytearray | memoryview, pos: int = 0) -> tuple[BatchHead, int, int]:
    """Check the batch at `pos` as `decode_batch` does up to its records (length, magic, CRC-32C,
    base offset, compression, the record count against its bytes), without decoding them: the
    CRC vouches for their bytes (Kafka's `ensureValid` at log recovery). Returns its leading
    fields, its record count and the position after it; raises what `decode_batch` raises."""
    data = buf if type(buf) is bytes else bytes(buf)
    try:
        header, _, end = _checked_header(data, pos)
    except _DECODE_FAULTS as exc:
        raise CorruptRecordError(f"malformed record batch at position {pos}: {type(exc).__name__}: {exc}") from None
    return _new_head(BatchHead, header[:_HEAD_FIELDS]), header[12], end


def iter_batches(buf: bytes | bytearray | memoryview) -> Iterator[tuple[int, RecordBatch]]:
    """Every batch of `buf` as (position, batch), in order; raises at the first bad one.

    A recovering log that wants to truncate a torn tail loops over `decode_batch` instead, so
    that it knows where the last good batch ended.
    """
    data = buf if type(buf) is bytes else bytes(buf)
    pos = 0
    while pos < len(data):
        batch, end = _decode_at(data, pos)
        yield pos, batch
        pos = end


def _decode_at(data: bytes, pos: int) -> tuple[RecordBatch, int]:
    try:
        return _decode(data, pos)
    except _DECODE_FAULTS as exc:
        raise CorruptRecordError(f"malformed record batch at position {pos}: {type(exc).__name__}: {exc}") from None


def _decode(data: bytes, pos: int) -> tuple[RecordBatch, int]:
    header, start, end = _checked_header(data, pos)
    (
        base_offset,
        _,
        leader_epoch,
        _,
        _,
        attributes,
        last_offset_delta,
        base_timestamp,
        max_timestamp,
        producer_id,
        producer_epoch,
        base_sequence,
        count,
    ) = header
    records = _decode_records(data, start, end, count, base_offset)
    batch = RecordBatch(
        base_offset=base_offset,
        partition_leader_epoch=leader_epoch,
        attributes=attributes,
        last_offset_delta=last_offset_delta,
        base_timestamp=base_timestamp,
        max_timestamp=max_timestamp,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        base_sequence=base_sequence,
        records=records,
    )
    return batch, end


def _checked_header(data: bytes, pos: int) -> tuple[tuple[int, ...], int, int]:
    """The header's fields (`_FIELDS`, unpacked), where the records start and where the batch
    ends, checked by the module's rules up to the records."""
    # Long by design: the module's validation rules in their order, on the start-up path, with
    # one `unpack_from` for the header and no helper calls per check.
    if pos < 0:
        raise DecodeError(f"negative batch position {pos}")
    if len(data) - pos < LOG_OVERHEAD:
        raise TruncatedError(f"{len(data) - pos} bytes at position {pos} cannot hold a batch header")
    base_offset, batch_length = _LENGTH.unpack_from(data, pos)
    if batch_length < MIN_BATCH_LENGTH:
        raise CorruptRecordError(f"batch at offset {base_offset} has length {batch_length}, below the header's")
    end = pos + LOG_OVERHEAD + batch_length
    if end > len(data):
        raise TruncatedError(
            f"batch at offset {base_offset} declares {batch_length} bytes, {len(data) - pos - LOG_OVERHEAD} remain"
        )
    header = _HEADER.unpack_from(data, pos)
    magic, crc, attributes, count = header[3], header[4], header[5], header[12]  # indexes in `_FIELDS`
    if magic != MAGIC:
        raise DecodeError(f"batch at offset {base_offset} has magic {magic}; only magic 2 is supported")
    if crc32c(memoryview(data)[pos + CRC_START : end]) != crc:
        raise CorruptRecordError(f"batch at offset {base_offset} (position {pos}) fails its CRC-32C")
    if base_offset < 0:
        raise CorruptRecordError(f"batch at position {pos} has a negative base offset {base_offset}")
    if attributes & COMPRESSION_MASK:
        raise DecodeError("compressed batches are not supported")
    start = pos + HEADER_SIZE
    if count < 0 or count * _MIN_RECORD_SIZE > end - start:
        raise CorruptRecordError(f"batch at offset {base_offset} declares {count} records in {end - start} bytes")
    return header, start, end


def _decode_records(data: bytes, pos: int, end: int, count: int, base_offset: int) -> tuple[Record, ...]:
    # The hot loop (long by design: one call per batch, no helper call per field). Varints of
    # one and two bytes (values up to +-8191) are read inline; the
    # zig-zag decoding of an unsigned u is (u >> 1) ^ -(u & 1).
    records: list[Record] = []
    append = records.append
    new_record = tuple.__new__
    for _ in range(count):
        byte = data[pos]
        if byte < 0x80:
            length = (byte >> 1) ^ -(byte & 1)
            pos += 1
        elif data[pos + 1] < 0x80:
            raw = (byte & 0x7F) | (data[pos + 1] << 7)
            length = (raw >> 1) ^ -(raw & 1)
            pos += 2
        else:
            length, pos = read_varint(data, pos)
        record_end = pos + length
        if length < _MIN_RECORD_SIZE - 1 or record_end > end:
            raise CorruptRecordError(f"record length {length} is invalid in the batch at offset {base_offset}")
        byte = data[pos + 1]  # skips the record attributes (unused)
        if byte < 0x80:
            timestamp_delta = (byte >> 1) ^ -(byte & 1)
            pos += 2
        else:
            timestamp_delta, pos = read_varlong(data, pos + 1)
        byte = data[pos]
        if byte < 0x80:
            offset_delta = (byte >> 1) ^ -(byte & 1)
            pos += 1
        elif data[pos + 1] < 0x80:
            raw = (byte & 0x7F) | (data[pos + 1] << 7)
            offset_delta = (raw >> 1) ^ -(raw & 1)
            pos += 2
        else:
            offset_delta, pos = read_varint(data, pos)
        byte = data[pos]
        if byte == 1:  # zig-zag -1: a null key, as every metadata record has
            key = None
            pos += 1
        else:
            if byte < 0x80:
                size = (byte >> 1) ^ -(byte & 1)
                pos += 1
            else:
                size, pos = read_varint(data, pos)
            if size < 0:
                raise CorruptRecordError(f"record key length {size} in the batch at offset {base_offset}")
            key = data[pos : pos + size]
            pos += size
        byte = data[pos]
        if byte == 1:
            value = None
            pos += 1
        else:
            if byte < 0x80:
                size = (byte >> 1) ^ -(byte & 1)
                pos += 1
            elif data[pos + 1] < 0x80:
                raw = (byte & 0x7F) | (data[pos + 1] << 7)
                size = (raw >> 1) ^ -(raw & 1)
                pos += 2
            else:
                size, pos = read_varint(data, pos)
            if size < 0:
                raise CorruptRecordError(f"record value length {size} in the batch at offset {base_offset}")
            value = data[pos : pos + size]
            pos += size
        if data[pos] == 0:
            headers: tuple[Header, ...] = ()
            pos += 1
        else:
            headers, pos = _decode_headers(data, pos, record_end)
        if pos != record_end:
            raise CorruptRecordError(
                f"record at delta {offset_delta} in the batch at offset {base_offset} "
                f"does not end at its declared length"
            )
        append(new_record(Record, (offset_delta, timestamp_delta, key, value, headers)))
    if pos != end:
        raise CorruptRecordError(f"{end - pos} bytes left after the records of the batch at offset {base_offset}")
    return tuple(records)


def _decode_headers(data: bytes, pos: int, record_end: int) -> tuple[tuple[Header, ...], int]:
    count, pos = read_varint(data, pos)
    if count < 0 or 2 * count > record_end - pos:  # a header takes at least two bytes
        raise CorruptRecordError(f"record header count {count} does not fit in its record")
    headers = []
    for _ in range(count):
        size, pos = read_varint(data, pos)
        if size < 0:
            raise CorruptRecordError(f"record header key length {size}")
        name = data[pos : pos + size].decode()
        pos += size
        size, pos = read_varint(data, pos)
        if size < -1:
            raise CorruptRecordError(f"record header value length {size}")
        header_value = None if size == -1 else data[pos : pos + size]
        pos += max(size, 0)
        headers.append((name, header_value))
    return tuple(headers), pos
