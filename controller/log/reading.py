"""Reading a recovered log back: its records in offset order, or its batches where they lie.

Rules:
- The segments were validated at open; a segment that no longer scans (changed or deleted
  since) is a `LogError` naming it, as is a record that does not decode.
- A batch straddling the start offset yields only its records at or after it.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

from protocol.errors import DecodeError
from protocol.records.batch import RecordBatch
from protocol.records.control import decode_control_record
from protocol.records.metadata_value import decode_metadata_value
from protocol.spec import Data

from .model import LogEntry, LogError
from .segments import BadBatch, scan_segment


def read_entries(
    segments: Sequence[tuple[int, Path]], start_offset: int, first_position: int = 0
) -> Iterator[LogEntry]:
    """Every record of `segments` (base offset, path; ascending) from `start_offset` on; the
    segment holding it is scanned from `first_position` (a batch at or before the offset: the
    offset index's floor), so a read near a large segment's end does not decode all of it."""
    first = max(bisect.bisect_right([base for base, _ in segments], start_offset) - 1, 0)
    for index, (_, path) in enumerate(segments[first:]):
        for _, _, batch in segment_batches(path, first_position if index == 0 else 0):
            if batch.base_offset + batch.last_offset_delta >= start_offset:
                yield from _entries(path, batch, start_offset)


def read_through(
    held: tuple[list[tuple[Path, RecordBatch]], int], start_offset: int, rest: Callable[[int], Iterator[LogEntry]]
) -> Iterator[LogEntry]:
    """The records of the log's tail's decoded batches (`controller.log.tail`) from
    `start_offset`, then what `rest` reads from the offset after them."""
    batches, end_offset = held
    for path, batch in batches:
        yield from _entries(path, batch, start_offset)
    yield from rest(end_offset)


def segment_batches(path: Path, start: int = 0) -> Iterator[tuple[Path, int, RecordBatch]]:
    """Every batch of one segment from byte `start` (a batch's first byte) as (segment, byte
    position, batch)."""
    try:
        for scanned in scan_segment(path, start):
            yield path, scanned.position, scanned.batch
    except (BadBatch, OSError) as exc:
        raise LogError(f"{path} changed since it was recovered: {exc}") from None


def _entries(path: Path, batch: RecordBatch, start_offset: int) -> Iterator[LogEntry]:
    base, epoch, timestamp, control = (
        batch.base_offset,
        batch.partition_leader_epoch,
        batch.base_timestamp,
        batch.is_control,
    )
    for record in batch.records:
        offset = base + record.offset_delta
        if offset < start_offset:
            continue
        message: Data
        try:
            if control:
                message, version = decode_control_record(record.key, record.value)
            else:
                message, version = decode_metadata_value(record.value)
        except DecodeError as exc:
            raise LogError(f"{path}: the record at offset {offset} cannot be decoded: {exc}") from None
        yield LogEntry(offset, epoch, timestamp + record.timestamp_delta, message, version, control)
