"""The log's bytes as they lie on disk, for replication: whole batches for Fetch, snapshot chunks
for FetchSnapshot. Nothing is decoded or re-encoded.

Rules:
- A read starts at a byte position known to start a batch (the sparse index's floor) and walks
  batch headers from there (base offset, length, lastOffsetDelta: 27 bytes each, read through
  a 64 KiB block buffer) to the batch holding the offset asked; then one `pread` takes whole
  batches from it, up to `max_bytes`, but always the first one whole (Kafka's minOneMessage),
  and only from that segment, as Kafka's `LogSegment.read` does.
- Reads never go past `end`, the segment's size when the read was planned: what lies before it
  is whole, fsync'd batches. A header that does not fit (a file cut or rewritten under the
  read) is `ChangedUnderRead`; the caller decides whether that is a race or corruption.
- Files are opened read-only for each read and closed after, so a segment deleted meanwhile
  is an `OSError` at open, never a read of some other file.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import NamedTuple

from protocol.records.batch import HEAD_SIZE, HEADER_SIZE, LOG_OVERHEAD, MAGIC, MIN_BATCH_LENGTH, batch_size, read_head

from .model import PositionOutOfRangeError

_BLOCK_BYTES = 64 * 1024


class ChangedUnderRead(Exception):
    """The bytes at a position are not the batch header a validated segment holds there."""


class BatchAt(NamedTuple):
    """A batch's place in its segment: byte position, size in bytes, base and next offsets."""

    position: int
    size: int
    base_offset: int
    next_offset: int


class _Headers:
    """Batch headers of one open segment, read a block at a time."""

    def __init__(self, fd: int, end: int) -> None:
        self._fd = fd
        self._end = end
        self._block = b""
        self._block_start = 0

    def at(self, position: int) -> BatchAt:
        start = position - self._block_start
        if start < 0 or start + HEAD_SIZE > len(self._block):
            self._block = os.pread(self._fd, min(_BLOCK_BYTES, self._end - position), position)
            self._block_start, start = position, 0
            if len(self._block) < HEAD_SIZE:
                raise ChangedUnderRead(f"no batch header at byte {position}")
        head = read_head(self._block, start)
        size = head.size
        if (
            head.magic != MAGIC
            or head.batch_length < MIN_BATCH_LENGTH
            or head.last_offset_delta < 0
            or position + size > self._end
        ):
            raise ChangedUnderRead(f"no valid batch header at byte {position}")
        return BatchAt(position, size, head.base_offset, head.next_offset)


def find_batch(fd: int, position: int, end: int, offset: int) -> BatchAt:
    """The batch holding `offset`, scanning headers from `position` (a batch start before it)."""
    headers = _Headers(fd, end)
    while position < end:
        found = headers.at(position)
        if found.next_offset > offset:
            if found.base_offset > offset:
                raise ChangedUnderRead(f"the batch at byte {position} starts at {found.base_offset}, after {offset}")
            return found
        position += found.size
    raise ChangedUnderRead(f"offset {offset} is not in the {end} bytes read")


def read_batches(path: Path, position: int, end: int, offset: int, max_bytes: int) -> bytes:
    """Whole batches of the segment at `path` from the one holding `offset` (see the rules)."""
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        first = find_batch(fd, position, end, offset)
        wanted = max(first.size, min(max_bytes, end - first.position))
        data = os.pread(fd, wanted, first.position)
    finally:
        os.close(fd)
    if len(data) < wanted:
        raise ChangedUnderRead(f"{path} holds {len(data)} bytes from {first.position}, not {wanted}")
    cut = _whole_batches(data, first.size)
    return data if cut == len(data) else data[:cut]


def _whole_batches(data: bytes, first_size: int) -> int:
    """How many leading bytes of `data` (starting with a batch of `first_size`) are whole batches."""
    cut = first_size
    while cut + LOG_OVERHEAD <= len(data):
        size = batch_size(data, cut)
        if size < HEADER_SIZE:
            raise ChangedUnderRead(f"batch length {size - LOG_OVERHEAD} at byte {cut} of the read")
        if cut + size > len(data):
            break
        cut += size
    return cut


def read_chunk(path: Path, position: int, max_bytes: int) -> tuple[bytes, int]:
    """Up to `max_bytes` of the file at `path` from `position`, and the file's size.

    Kafka's `FileRawSnapshotReader.slice`: any byte range, not aligned to batches. A position
    outside the file is `PositionOutOfRangeError`; a missing file the `OSError` of opening it."""
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        size = os.fstat(fd).st_size
        if not 0 <= position < size:
            raise PositionOutOfRangeError(f"position {position} is outside the {size} bytes of {path.name}")
        return os.pread(fd, min(max_bytes, size - position), position), size
    finally:
        os.close(fd)
