"""Record batches v2: the worked example, kio interoperability, corruption and truncation."""

from __future__ import annotations

import contextlib
import datetime
import io
import itertools
import struct
import uuid

import pytest
from crc32c import crc32c
from hypothesis import given
from hypothesis import strategies as st
from kio.records.readers import read_batch
from kio.records.schema import NewRecordBatch
from kio.records.schema import Record as KioRecord
from kio.records.schema import RecordHeader as KioRecordHeader
from kio.records.writers import write_batch
from kio.static.primitive import TZAwareMicros, i8, i16, i32, i64

from protocol.errors import CorruptRecordError, DecodeError, EncodeError, TruncatedError
from protocol.records.batch import CONTROL_FLAG, HEADER_SIZE, Record, RecordBatch, decode_batch, iter_batches
from protocol.records.batch_writer import PlainBatchBuilder, encode_batch, metadata_batch
from protocol.records.metadata import PartitionChangeRecord, TopicRecord
from protocol.records.metadata_value import decode_metadata_value, encode_metadata_value

TOPIC_ID = uuid.UUID("0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0")
NOW_MS = 1_700_000_000_000

int16 = st.integers(-(1 << 15), (1 << 15) - 1)
int32 = st.integers(-(1 << 31), (1 << 31) - 1)
int64 = st.integers(-(1 << 63), (1 << 63) - 1)
nullable_bytes = st.none() | st.binary(max_size=20)
records = st.builds(
    Record,
    offset_delta=int32,
    timestamp_delta=int64,
    key=nullable_bytes,
    value=nullable_bytes,
    headers=st.lists(st.tuples(st.text(max_size=5), nullable_bytes), max_size=3).map(tuple),
)
batches = st.builds(
    RecordBatch,
    base_offset=st.integers(0, (1 << 63) - 1),
    partition_leader_epoch=int32,
    attributes=int16.map(lambda attributes: attributes & ~0x07),
    last_offset_delta=int32,
    base_timestamp=int64,
    max_timestamp=int64,
    producer_id=int64,
    producer_epoch=int16,
    base_sequence=int32,
    records=st.lists(records, max_size=5).map(tuple),
)


def _restamp(data: bytearray) -> bytes:
    """Recompute batchLength and CRC after a test edited a batch (a "valid" corruption)."""
    struct.pack_into(">i", data, 8, len(data) - 12)
    struct.pack_into(">I", data, 17, crc32c(bytes(data[21:])))
    return bytes(data)


def _small_batch() -> bytes:
    values = [
        encode_metadata_value(TopicRecord(name="t1", topic_id=TOPIC_ID), 0),
        encode_metadata_value(PartitionChangeRecord(topic_id=TOPIC_ID, partition_id=0, isr=(1, 2), leader=1), 0),
        encode_metadata_value(PartitionChangeRecord(topic_id=TOPIC_ID, partition_id=1, leader=2), 0),
    ]
    return metadata_batch(100, 3, NOW_MS, values)


# ---------------------------------------------------------------------------- the worked example
def test_topic_record_batch_worked_example() -> None:
    # kafka-wire-format.md section 6: a TopicRecord{name="t1"} batch is 91 bytes. The file the
    # note cites (metadata_record_example.txt) is not in the repository, so the bytes below are
    # derived by hand from the layout; kio checks the CRC independently.
    value = bytes.fromhex("01 02 00 03 7431") + TOPIC_ID.bytes + b"\x00"
    data = metadata_batch(0, 1, NOW_MS, [value])
    record = (
        bytes.fromhex("3a")  # record length 29 (zig-zag 58)
        + bytes.fromhex("00 00 00")  # attributes, timestamp delta 0, offset delta 0
        + bytes.fromhex("01")  # key length -1: null
        + bytes.fromhex("2e")  # value length 23 (zig-zag 46)
        + value
        + bytes.fromhex("00")  # no headers
    )
    covered = (
        bytes.fromhex("0000 00000000")  # attributes, lastOffsetDelta
        + struct.pack(">qq", NOW_MS, NOW_MS)  # base and max timestamp
        + bytes.fromhex("ffffffffffffffff ffff ffffffff")  # producer id, epoch, base sequence: -1
        + bytes.fromhex("00000001")  # one record
        + record
    )
    expected = (
        bytes.fromhex("0000000000000000 0000004f 00000001 02")  # offset 0, length 79, epoch 1, magic
        + struct.pack(">I", crc32c(covered))
        + covered
    )
    assert len(data) == 91
    assert data == expected
    kio_batch, size = read_batch(data, 0)
    assert size == 91
    assert kio_batch.records[0].value == value


# ---------------------------------------------------------------------------- round trips
@given(batches)
def test_round_trip(batch: RecordBatch) -> None:
    data = encode_batch(batch)
    assert decode_batch(data) == (batch, len(data))
    assert decode_batch(b"junk" + data, 4) == (batch, len(data) + 4)
    assert decode_batch(memoryview(bytearray(data))) == (batch, len(data))


def test_metadata_batch_fields() -> None:
    values = [encode_metadata_value(TopicRecord(name=f"t{i}"), 0) for i in range(3)]
    batch, _ = decode_batch(metadata_batch(10, 4, NOW_MS, values))
    assert batch == RecordBatch(
        base_offset=10,
        partition_leader_epoch=4,
        attributes=0,
        last_offset_delta=2,
        base_timestamp=NOW_MS,
        max_timestamp=NOW_MS,
        producer_id=-1,
        producer_epoch=-1,
        base_sequence=-1,
        records=tuple(Record(i, 0, None, value) for i, value in enumerate(values)),
    )
    assert (batch.last_offset, batch.next_offset, batch.is_control) == (12, 13, False)
    assert [decode_metadata_value(r.value)[0] for r in batch.records if r.value] == [
        TopicRecord(name=f"t{i}") for i in range(3)
    ]


def test_encode_rejections() -> None:
    with pytest.raises(EncodeError):
        metadata_batch(0, 0, NOW_MS, [])
    with pytest.raises(EncodeError):
        metadata_batch(0, 0, NOW_MS, [b"a"], keys=[b"k", b"l"])
    with pytest.raises(EncodeError, match="compressed"):
        encode_batch(RecordBatch(base_offset=0, attributes=1, last_offset_delta=0))
    with pytest.raises(EncodeError):
        encode_batch(RecordBatch(base_offset=0, partition_leader_epoch=1 << 31, last_offset_delta=0))


def test_iter_batches() -> None:
    first = metadata_batch(0, 1, NOW_MS, [b"a", b"b"])
    second = metadata_batch(2, 1, NOW_MS, [b"c"], keys=[b"\x00\x00\x00\x02"], control=True)
    found = list(iter_batches(first + second))
    assert [(pos, batch.base_offset, batch.is_control) for pos, batch in found] == [
        (0, 0, False),
        (len(first), 2, True),
    ]
    assert list(iter_batches(b"")) == []
    with pytest.raises(TruncatedError):
        list(iter_batches(first + second[:-1]))


# ---------------------------------------------------------------------------- kio interoperability
@given(st.lists(st.tuples(nullable_bytes, nullable_bytes), min_size=1, max_size=6), st.booleans())
def test_kio_reads_our_batches(items: list[tuple[bytes | None, bytes | None]], control: bool) -> None:
    keys = [key for key, _ in items]
    values = [value or b"" for _, value in items]
    data = metadata_batch(500, 9, NOW_MS, values, keys=keys, control=control)
    kio_batch, size = read_batch(data, 0)  # raises on a CRC mismatch
    assert size == len(data)
    assert kio_batch.partition_leader_epoch == 9
    assert kio_batch.attributes == (CONTROL_FLAG if control else 0)
    assert [(r.offset, r.key, r.value) for r in kio_batch.records] == [
        (500 + i, key, value) for i, (key, value) in enumerate(zip(keys, values, strict=True))
    ]


@given(batches)
def test_kio_reads_arbitrary_batches(batch: RecordBatch) -> None:
    # Timestamps kio can turn into datetimes, a max timestamp it accepts, and record offsets
    # (base offset + offset delta) that fit its int64.
    batch = RecordBatch(
        **{
            **{name: getattr(batch, name) for name in RecordBatch.__dataclass_fields__},
            "base_offset": min(batch.base_offset, (1 << 63) - 1 - (1 << 31)),
            "base_timestamp": NOW_MS,
            "max_timestamp": NOW_MS + 10**6,
            "records": tuple(r._replace(timestamp_delta=abs(r.timestamp_delta) % 1000) for r in batch.records),
        }
    )
    data = encode_batch(batch)
    kio_batch, size = read_batch(data, 0)
    assert size == len(data)
    assert [(r.offset, r.key, r.value) for r in kio_batch.records] == [
        (batch.base_offset + r.offset_delta, r.key, r.value) for r in batch.records
    ]
    assert [tuple((h.key, h.value) for h in r.headers) for r in kio_batch.records] == [
        tuple((name.encode(), value) for name, value in r.headers) for r in batch.records
    ]


@given(
    st.lists(st.tuples(nullable_bytes, nullable_bytes, st.integers(0, 10_000)), min_size=1, max_size=6),
    st.sampled_from([0, CONTROL_FLAG]),
)
def test_we_read_kio_batches(items: list[tuple[bytes | None, bytes | None, int]], attributes: int) -> None:
    base_seconds = NOW_MS // 1000
    kio_records = tuple(
        KioRecord(
            attributes=i8(0),
            timestamp=TZAwareMicros.parse(datetime.datetime.fromtimestamp(base_seconds + seconds, datetime.UTC)),
            offset=i64(77 + index),
            key=key,
            value=value,
            headers=(KioRecordHeader(key=b"h", value=value),),
        )
        for index, (key, value, seconds) in enumerate(items)
    )
    buffer = io.BytesIO()
    new_batch = NewRecordBatch(
        producer_id=i64(-1),
        producer_epoch=i16(-1),
        partition_leader_epoch=i32(5),
        base_sequence=i32(-1),
        records=kio_records,
        attributes=i16(attributes),
    )
    write_batch(buffer, new_batch)
    batch, end = decode_batch(buffer.getvalue())
    assert end == len(buffer.getvalue())
    assert (batch.base_offset, batch.partition_leader_epoch, batch.attributes) == (77, 5, attributes)
    assert batch.last_offset_delta == len(items) - 1
    first_seconds = items[0][2]
    assert [(r.offset_delta, r.timestamp_delta, r.key, r.value, r.headers) for r in batch.records] == [
        (i, (seconds - first_seconds) * 1000, key, value, (("h", value),))
        for i, (key, value, seconds) in enumerate(items)
    ]


# ---------------------------------------------------------------------------- corruption
def test_every_flipped_bit_is_detected_or_outside_the_records() -> None:
    # The CRC covers attributes..end, so any flip there is a CorruptRecordError. The header
    # bytes before it are checked structurally: batchLength (the CRC range or the buffer end
    # moves: corrupt or truncated) and magic. baseOffset and partitionLeaderEpoch are outside
    # the CRC by Kafka's design (a leader restamps them), so a flip there decodes, but only
    # that one field differs: the records are never decoded from corrupted bytes. The log
    # checks offsets and epochs against its own state. A negative base offset is rejected.
    data = _small_batch()
    original, _ = decode_batch(data)
    for bit in range(8 * len(data)):
        flipped = bytearray(data)
        flipped[bit // 8] ^= 0x80 >> (bit % 8)
        byte = bit // 8
        if byte < 8:
            (base_offset,) = struct.unpack_from(">q", flipped)
            if base_offset < 0:
                with pytest.raises(CorruptRecordError):
                    decode_batch(bytes(flipped))
            else:
                batch, _ = decode_batch(bytes(flipped))
                assert batch == RecordBatch(**{**_fields(original), "base_offset": base_offset}), f"bit {bit}"
        elif byte < 12:
            with pytest.raises((CorruptRecordError, TruncatedError)):
                decode_batch(bytes(flipped))
        elif byte < 16:
            (epoch,) = struct.unpack_from(">i", flipped, 12)
            batch, _ = decode_batch(bytes(flipped))
            assert batch == RecordBatch(**{**_fields(original), "partition_leader_epoch": epoch})
        elif byte == 16:
            with pytest.raises(DecodeError, match="magic"):
                decode_batch(bytes(flipped))
        else:
            with pytest.raises(CorruptRecordError, match="CRC"):
                decode_batch(bytes(flipped))


def _fields(batch: RecordBatch) -> dict[str, object]:
    return {name: getattr(batch, name) for name in RecordBatch.__dataclass_fields__}


def test_every_truncation_is_reported() -> None:
    data = _small_batch()
    for cut in range(len(data)):
        with pytest.raises(TruncatedError):
            decode_batch(data[:cut])


def test_structural_checks_behind_a_valid_crc() -> None:
    data = bytearray(_small_batch())
    compressed = bytearray(data)
    compressed[22] |= 0x04  # attributes low byte: zstd
    with pytest.raises(DecodeError, match="compressed batches are not supported"):
        decode_batch(_restamp(compressed))
    for count in (2, 4, -1, 1 << 30):
        miscounted = bytearray(data)
        struct.pack_into(">i", miscounted, 57, count)
        with pytest.raises(CorruptRecordError):
            decode_batch(_restamp(miscounted))
    with pytest.raises(CorruptRecordError, match="left after the records"):
        decode_batch(_restamp(data + b"\x00"))
    for length_byte in (0x02, 0x7E, 0x7F):  # first record's length: too short, too long, negative
        bad_length = bytearray(data)
        bad_length[HEADER_SIZE] = length_byte
        with pytest.raises(CorruptRecordError):
            decode_batch(_restamp(bad_length))
    short = bytearray(data[:HEADER_SIZE])
    struct.pack_into(">i", short, 8, HEADER_SIZE - 13)
    with pytest.raises(CorruptRecordError):
        decode_batch(bytes(short) + bytes(100))
    with pytest.raises(DecodeError):
        decode_batch(bytes(data), -1)


@given(st.data())
def test_mutations_behind_a_valid_crc_raise_only_decode_errors(data: st.DataObject) -> None:
    batch = bytearray(data.draw(st.sampled_from([_small_batch(), encode_batch(data.draw(batches))])))
    for _ in range(data.draw(st.integers(1, 4))):
        index = data.draw(st.integers(HEADER_SIZE - 4, len(batch) - 1))
        batch[index] = data.draw(st.integers(0, 255))
    with contextlib.suppress(DecodeError):
        decode_batch(_restamp(batch))


@given(st.binary(max_size=200))
def test_arbitrary_bytes_raise_only_decode_errors(raw: bytes) -> None:
    with contextlib.suppress(DecodeError):
        list(iter_batches(raw))


@given(
    values=st.lists(st.binary(max_size=300), min_size=1, max_size=80),
    base_offset=st.integers(0, 2**40),
    epoch=st.integers(0, 2**31 - 1),
)
def test_plain_metadata_batches_are_the_general_encoding(values: list[bytes], base_offset: int, epoch: int) -> None:
    """The direct path for the controller's appends writes exactly what `encode_batch` writes."""
    general = encode_batch(
        RecordBatch(
            base_offset=base_offset,
            partition_leader_epoch=epoch,
            attributes=0,
            last_offset_delta=len(values) - 1,
            base_timestamp=1_700_000_000_000,
            max_timestamp=1_700_000_000_000,
            records=tuple(Record(index, 0, None, value) for index, value in enumerate(values)),
        )
    )
    assert metadata_batch(base_offset, epoch, 1_700_000_000_000, values) == general


@given(
    values=st.lists(st.binary(max_size=300), min_size=1, max_size=80),
    cuts=st.lists(st.integers(0, 80), max_size=5),
)
def test_a_batch_built_a_chunk_at_a_time_is_the_same_batch(values: list[bytes], cuts: list[int]) -> None:
    builder = PlainBatchBuilder(1_700_000_000_000)
    bounds = [0, *sorted(cut for cut in cuts if cut < len(values)), len(values)]
    for start, end in itertools.pairwise(bounds):
        builder.add(values[start:end])
    assert builder.build(7, 3) == metadata_batch(7, 3, 1_700_000_000_000, values)


def test_an_empty_builder_cannot_build_a_batch() -> None:
    with pytest.raises(EncodeError, match="at least one record"):
        PlainBatchBuilder(0).build(0, 0)
