"""Encoding appends as record batches, in slices: the CPU part of a group commit.

Rules:
- Each group (one request's records, or one step of a long operation) becomes exactly one
  record batch (atomic), with consecutive offsets from the log's next offset.
- `encode_groups` yields after every `ENCODE_SLICE_RECORDS` records (a few ms of work here), so
  that a caller on an event loop can let other tasks run; a large batch is encoded and framed a
  slice at a time (`PlainBatchBuilder`), small ones in one go.
- Pure: nothing here touches the files or the log's state (`MetadataLog.write_prepared` does).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from protocol.records.batch_writer import PlainBatchBuilder, metadata_batch
from protocol.records.metadata import encode_metadata_value
from protocol.spec import Data

from ..slices import Slices

#: Records encoded between two pauses (about 2-4 ms of work here).
ENCODE_SLICE_RECORDS = 256


@dataclass(frozen=True)
class PreparedAppend:
    """Batches encoded by `MetadataLog.prepare`, waiting for `write_prepared`."""

    start_offset: int
    end_offset: int
    offsets: list[int]
    batches: list[tuple[int, bytes]]


def encode_groups(
    groups: Sequence[Sequence[tuple[Data, int]]], start_offset: int, epoch: int, timestamp_ms: int
) -> Slices[PreparedAppend]:
    """One batch per non-empty group, from `start_offset` on, in slices (see the module rules)."""
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
