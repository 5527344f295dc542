"""Segment files of `__cluster_metadata-0`: names, listing, reading batches, continuity checks.

Rules:
- A segment is `<20-digit base offset>.log`; its name is the base offset of its first batch.
- Files are read through a read-only mmap (never opened for writing here), one batch sliced out
  at a time and checked with `decode_batch`: framing, magic, CRC-32C, every record. A batch must
  also hold at least one record and its lastOffsetDelta must match its count.
- `scan_segment` yields the valid batches of a file in order and raises `BadBatch` at the first
  bytes that are not one. `scan_heads` does the same without decoding the records (the CRC
  vouches for their bytes, as Kafka's recovery trusts `ensureValid`): recovery reads every
  segment at each start, and decoding a million records only to drop them cost a second.
- The CRC does not cover baseOffset and partitionLeaderEpoch, so `Continuity` checks them
  against the log: base offsets never go back, across batches and files, and epochs follow the
  KRaft discipline: a data batch has the epoch of the batch before it, only a control batch (the
  LeaderChange a new controller writes) may raise it, and no epoch is negative or goes down.
- Offsets that skip forward (a gap) are a fault for recovery: a Raft log's offsets are
  contiguous (Kafka's own metadata log never skips one), so a gap is lost records or a log
  trimmed by hand, and a controller must not replay past it as if nothing were missing. A reader
  that only shows a log (dump-log) passes `allow_gaps`, as Kafka's log layer and dump tool do:
  then a gap is noted (`Continuity.gaps`), and a batch going back after one that skipped forward
  blames the one that skipped (a flipped bit in its base offset is the likelier cause).
- `count_valid_batches` is the torn-write test: it tries `verify_batch` at every position whose
  magic byte (position + 16) is 2, and follows the chain from each valid batch it finds.
"""

from __future__ import annotations

import mmap
import os
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple, TypeVar

from protocol.errors import DecodeError
from protocol.records.batch import (
    HEADER_SIZE,
    LOG_OVERHEAD,
    MAGIC_BYTE,
    MAGIC_OFFSET,
    MIN_BATCH_LENGTH,
    BatchHead,
    RecordBatch,
    batch_size,
    decode_batch,
    read_crc,
    verify_batch,
)

from .. import runtime

PARTITION_DIR = "__cluster_metadata-0"
SEGMENT_SUFFIX = ".log"
_SEGMENT_NAME = re.compile(r"(\d{20})\.log")


class ScannedBatch(NamedTuple):
    """A valid batch of a file: where it starts, its size in bytes, its stored CRC, its content."""

    position: int
    size: int
    crc: int
    batch: RecordBatch


class BadBatch(Exception):
    """The bytes at `position` of a file are not a valid batch."""

    def __init__(self, position: int, reason: str) -> None:
        super().__init__(f"at byte {position}: {reason}")
        self.position = position
        self.reason = reason


@dataclass(frozen=True, slots=True)
class Fault:
    """Where a log stops being valid: byte position, the offset expected there, and why."""

    position: int
    offset: int
    reason: str


def segment_name(base_offset: int) -> str:
    """Kafka's file name of the segment starting at `base_offset`."""
    return f"{base_offset:020d}{SEGMENT_SUFFIX}"


def list_segments(directory: Path) -> list[tuple[int, Path]]:
    """The segments of `directory` as (base offset, path), ascending; other files are ignored."""
    found = []
    for entry in os.scandir(directory):
        match = _SEGMENT_NAME.fullmatch(entry.name)
        if match is not None and entry.is_file():
            found.append((int(match.group(1)), Path(entry.path)))
    return sorted(found)


def scan_segment(path: Path, start: int = 0) -> Iterator[ScannedBatch]:
    """Every valid batch of the file at `path` from byte `start` (a batch's first byte: 0, or a
    position the offset index gave), in order; raises `BadBatch` at the first bad one."""
    for position, size, data, batch in _scan(path, start, check_batch):
        yield ScannedBatch(position, size, read_crc(data), batch)


class ScannedHead(NamedTuple):
    """A valid batch of a file, its records checked by the CRC only: where it starts, its size
    in bytes, its leading header fields."""

    position: int
    size: int
    batch: BatchHead


def scan_heads(path: Path) -> Iterator[ScannedHead]:
    """`scan_segment` for whoever needs only the batches' headers (recovery): the same checks,
    and the same `BadBatch`, but the records' framing left to the CRC."""
    for position, size, _, head in _scan(path, 0, check_head):
        yield ScannedHead(position, size, head)


_Checked = TypeVar("_Checked")


def _scan(
    path: Path, start: int, check: Callable[[bytes, int], _Checked]
) -> Iterator[tuple[int, int, bytes, _Checked]]:
    """(position, size, bytes, `check(bytes, position)`) of each batch of the file from `start`."""
    with open(path, "rb") as file:
        size = os.fstat(file.fileno()).st_size
        if size == 0:
            return
        with mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ) as view:
            position = start
            while position < size:
                if size - position < LOG_OVERHEAD:
                    raise BadBatch(position, f"the {size - position} bytes left cannot hold a batch header")
                end = position + batch_size(view, position)
                length = end - position - LOG_OVERHEAD
                if length < MIN_BATCH_LENGTH:
                    raise BadBatch(position, f"batch length {length} is below the header's {MIN_BATCH_LENGTH}")
                if end > size:
                    remain = size - position - LOG_OVERHEAD
                    raise BadBatch(position, f"the batch declares {length} bytes, {remain} remain")
                data = view[position:end]
                yield position, end - position, data, check(data, position)
                position = end


def check_batch(data: bytes, position: int) -> RecordBatch:
    """The batch that `data` holds exactly, checked as a segment's (see the rules), else `BadBatch`
    naming `position`."""
    try:
        batch, _ = decode_batch(data)
    except DecodeError as exc:
        raise BadBatch(position, str(exc)) from None
    _check_count(len(batch.records), batch.last_offset_delta, position)
    return batch


def check_head(data: bytes, position: int) -> BatchHead:
    """`check_batch` with the records left to the CRC: the header of the batch `data` holds."""
    try:
        head, count, _ = verify_batch(data)
    except DecodeError as exc:
        raise BadBatch(position, str(exc)) from None
    _check_count(count, head.last_offset_delta, position)
    return head


def _check_count(count: int, last_offset_delta: int, position: int) -> None:
    if not count or last_offset_delta != count - 1:
        raise BadBatch(position, f"lastOffsetDelta {last_offset_delta} does not fit its {count} records")


class Continuity:
    """Checks that each batch continues the log: offsets contiguous, epochs disciplined."""

    def __init__(self, *, allow_gaps: bool = False) -> None:
        self.allow_gaps = allow_gaps
        self.next_offset: int | None = None  # None until the first segment names it
        self.epoch: int | None = None  # the epoch of the last batch, None before the first
        self._raised_by: Fault | None = None  # the previous batch, if a control batch raising the epoch
        self._skipped_by: Fault | None = None  # the previous batch, if it skipped offsets
        #: (first, last) offsets no batch holds, in log order
        self.gaps: list[tuple[int, int]] = []

    def start_segment(self, base_offset: int) -> Fault | None:
        """Check a segment's name against the offset the log has reached."""
        self._raised_by = self._skipped_by = None
        if self.next_offset is None:
            self.next_offset = base_offset
        elif base_offset > self.next_offset and self.allow_gaps:
            self.gaps.append((self.next_offset, base_offset - 1))
            self.next_offset = base_offset
        elif base_offset != self.next_offset:
            reason = f"the segment is named for offset {base_offset} but the log continues at {self.next_offset}"
            return Fault(0, self.next_offset, reason)
        return None

    def check(self, position: int, batch: RecordBatch | BatchHead) -> Fault | None:
        """The fault `batch` (at `position` of the current segment) shows, or None: then accepted."""
        expected = self.next_offset if self.next_offset is not None else batch.base_offset
        epoch, previous, base = batch.partition_leader_epoch, self.epoch, batch.base_offset
        if base < expected or (base > expected and not self.allow_gaps):
            if self._skipped_by is not None and base < expected:  # the batch that skipped is the likelier culprit
                skipped = self._skipped_by
                return Fault(skipped.position, skipped.offset, f"{skipped.reason}, but the batch after it has {base}")
            missing = f": offsets {expected}..{base - 1} are missing" if base > expected else ""
            return Fault(position, expected, f"base offset {base}, expected {expected}{missing}")
        if epoch < 0:
            return Fault(position, expected, f"negative epoch {epoch}")
        if previous is not None and epoch < previous:
            if self._raised_by is not None:  # the control batch before it is the likelier culprit
                raised = self._raised_by
                return Fault(raised.position, raised.offset, f"{raised.reason}, but the batch after it has {epoch}")
            return Fault(position, expected, f"epoch {epoch} is below the previous batch's {previous}")
        if previous is not None and epoch > previous and not batch.is_control:
            return Fault(position, expected, f"a data batch raises the epoch from {previous} to {epoch}")
        raises = previous is not None and epoch > previous
        self._raised_by = (
            Fault(position, expected, f"this control batch raises the epoch to {epoch}") if raises else None
        )
        self._skipped_by = None
        if base > expected:
            self.gaps.append((expected, base - 1))
            self._skipped_by = Fault(position, expected, f"base offset {base} skips offsets {expected}..{base - 1}")
        self.next_offset = batch.next_offset
        self.epoch = epoch
        return None


def count_valid_batches(path: Path, start: int) -> int:
    """How many valid batches the file holds at positions >= `start`, found without framing."""
    with open(path, "rb") as file:
        size = os.fstat(file.fileno()).st_size
        if size - start < HEADER_SIZE:
            return 0
        with mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ) as view:
            count = 0
            candidate = start
            while True:
                magic_at = view.find(MAGIC_BYTE, candidate + MAGIC_OFFSET)
                if magic_at < 0:
                    return count
                candidate = magic_at - MAGIC_OFFSET
                end = _valid_batch_end(view, candidate, size)
                if end is None:
                    candidate += 1
                else:
                    count += 1
                    candidate = end


def _valid_batch_end(view: mmap.mmap, position: int, size: int) -> int | None:
    if size - position < HEADER_SIZE:
        return None
    end = position + batch_size(view, position)
    if end - position < HEADER_SIZE or end > size:
        return None
    try:
        verify_batch(view[position:end])
    except DecodeError:
        return None
    return end


def truncate_file(path: Path, size: int, *, fsync: bool) -> None:
    """Cut the file at `size` bytes, durably unless `fsync` is False."""
    fd = os.open(path, os.O_WRONLY)
    try:
        os.ftruncate(fd, size)
        if fsync:
            runtime.fsync(fd)
    finally:
        os.close(fd)


def fsync_directory(directory: Path) -> None:
    """Make a file's creation, rename or removal in `directory` durable."""
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        runtime.fsync(fd)
    finally:
        os.close(fd)


def write_text_atomically(directory: Path, name: str, text: str, *, fsync: bool) -> Path:
    """Write `directory/name` whole or not at all (a temporary file, fsync'd, renamed over it, the
    rename made durable); return its path. For the small files beside the log: meta.properties,
    quorum-state."""
    target = directory / name
    temporary = directory / (name + ".tmp")
    with open(temporary, "w", encoding="utf-8") as out:
        out.write(text)
        out.flush()
        if fsync:
            runtime.fsync(out.fileno())
    runtime.replace(temporary, target)
    if fsync:
        fsync_directory(directory)
    return target
