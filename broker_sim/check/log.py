"""Reading a controller's metadata log for the checker, with `protocol` only (never `controller`).

    DATA_DIR/__cluster_metadata-0/<20-digit base offset>.log            segments: record batches v2
    DATA_DIR/__cluster_metadata-0/<20-digit end offset>-<10-digit epoch>.checkpoint   snapshots

Rules:
- DATA_DIR is a controller's data dir or its `__cluster_metadata-0` itself. A missing path, or one
  holding neither segments nor snapshots, is a `CheckError` (one clear line, exit 2).
- Snapshots are listed before the segments, and every segment is opened at once: a running
  controller's retention then cannot delete a file from under the reader, and every snapshot
  listed ends at or below what the segments hold.
- The log is read from offset 0 when its oldest segment starts there. Otherwise (retention deleted
  older segments) from the oldest valid snapshot ending within the segments; none is a problem.
- Batches are validated as Kafka's log recovery does: framing, magic, CRC-32C, every record, a
  lastOffsetDelta that fits the records, base offsets contiguous within and across segments and
  matching the segment's name. Bytes at the end of the last segment that are the next batch cut
  short (its base offset, magic 2, a length reaching past the end; no valid batch after them) are
  an incomplete tail: a write in progress (the controller may be running) or a torn write the
  controller cuts on restart. Reading stops there; it is a note, not a problem (nothing in it was
  acknowledged: answers follow the fsync). Any other fault (a CRC failure, garbage, a cut before
  later batches or segments) is a problem, and reading stops.
- A record of a type or version `protocol` does not know is skipped with a note (Kafka's own logs
  hold records no rule here is about); any other undecodable record is a problem.
"""

from __future__ import annotations

import mmap
import os
import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, NamedTuple

from protocol.errors import DecodeError
from protocol.records.batch import (
    HEADER_SIZE,
    LENGTH_OFFSET,
    LOG_OVERHEAD,
    MAGIC,
    MAGIC_BYTE,
    MAGIC_OFFSET,
    MIN_BATCH_LENGTH,
    RecordBatch,
    batch_size,
    decode_batch,
    read_base_offset,
    read_crc,
)
from protocol.records.control import (
    LeaderChangeMessage,
    SnapshotFooterRecord,
    SnapshotHeaderRecord,
    decode_control_record,
)
from protocol.records.metadata_value import UnknownRecordTypeError, UnsupportedRecordVersionError, decode_metadata_value
from protocol.spec import Data

PARTITION_DIR = "__cluster_metadata-0"
_SEGMENT = re.compile(r"(\d{20})\.log")
_SNAPSHOT = re.compile(r"(\d{20})-(\d{10})\.checkpoint")
NO_END = 1 << 62  # `batches` without an end offset


class CheckError(Exception):
    """The data dir cannot be checked at all (missing, not a metadata log): one line for the user."""


class Outline(NamedTuple):
    """A validated batch as a quorum check compares it: where, its epoch and time, an identity
    (equal for byte-identical batches: its CRC-32C, which covers everything but the offset, length
    and epoch, with a hash of every decoded field and record), its LeaderChange."""

    base_offset: int
    next_offset: int
    epoch: int
    timestamp_ms: int
    identity: tuple[int, int]
    leader_change: LeaderChangeMessage | None


class Batch(NamedTuple):
    """A validated batch: where it starts, its controller epoch, time, kind, and decoded records."""

    base_offset: int
    epoch: int
    timestamp_ms: int
    control: bool
    records: list[tuple[int, Data, int]]  # (offset, record, version) of the records read


@dataclass(frozen=True, slots=True, order=True)
class SnapshotFile:
    end_offset: int
    epoch: int
    path: Path


@dataclass
class LogReading:
    """What reading found besides records: problems (exit non-zero), notes, where the log lies."""

    partition_dir: Path
    segments: list[tuple[int, Path]]
    snapshots: list[SnapshotFile]
    start_offset: int = 0
    base_snapshot: SnapshotFile | None = None
    end_offset: int = 0  # the offset after the last record read
    batches: int = 0
    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    skipped_types: Counter[str] = field(default_factory=Counter)
    complete: bool = True  # False once a problem stopped reading before the end


class SnapshotProblem(Exception):
    """A snapshot file that is not a complete, valid snapshot."""


def locate(data_dir: Path) -> Path:
    """The `__cluster_metadata-0` directory of `data_dir` (or `data_dir` itself if it is one)."""
    if not data_dir.exists():
        raise CheckError(f"{data_dir}: no such directory")
    if not data_dir.is_dir():
        raise CheckError(f"{data_dir}: not a directory")
    for candidate in (data_dir / PARTITION_DIR, data_dir):
        if candidate.is_dir() and _has_log_files(candidate):
            return candidate
    raise CheckError(f"{data_dir}: no metadata log here (no {PARTITION_DIR}/ with segments or snapshots)")


def _has_log_files(directory: Path) -> bool:
    try:
        names = os.listdir(directory)
    except OSError as exc:
        raise CheckError(f"{directory}: cannot list: {exc.strerror}") from None
    return any(_SEGMENT.fullmatch(name) or _SNAPSHOT.fullmatch(name) for name in names)


def _names(directory: Path, pattern: re.Pattern[str]) -> list[tuple[re.Match[str], Path]]:
    try:
        names = os.listdir(directory)
    except OSError as exc:
        raise CheckError(f"{directory}: cannot list: {exc.strerror}") from None
    return [(match, directory / name) for name in names if (match := pattern.fullmatch(name))]


class LogReader:
    """The log of one data dir: `reading` says what was found, `batches()` yields the records.

    Snapshot files are listed and opened first, then the segments (see the module rules); a file
    deleted between its listing and its opening was let go by retention, and is left out."""

    def __init__(self, data_dir: Path) -> None:
        partition_dir = locate(data_dir)
        self.snapshot_streams: dict[SnapshotFile, IO[bytes]] = {}
        self.files: list[tuple[int, Path, IO[bytes]]] = []
        self._next_offset = 0  # where the batch being read should start
        self._view: mmap.mmap | bytes = b""  # the segment `_scan` is reading
        try:
            for match, path in _names(partition_dir, _SNAPSHOT):
                snapshot = SnapshotFile(int(match.group(1)), int(match.group(2)), path)
                if (stream := _open(path)) is not None:
                    self.snapshot_streams[snapshot] = stream
            for match, path in sorted(_names(partition_dir, _SEGMENT), key=lambda found: found[1].name):
                if (stream := _open(path)) is not None:
                    self.files.append((int(match.group(1)), path, stream))
        except CheckError:
            self.close()
            raise
        snapshots = sorted(self.snapshot_streams)
        self.reading = LogReading(partition_dir, [(base, path) for base, path, _ in self.files], snapshots)

    def read_snapshot(self, snapshot: SnapshotFile) -> list[tuple[Data, int]]:
        """The metadata records of a snapshot listed at opening, else `SnapshotProblem`."""
        stream = self.snapshot_streams[snapshot]
        try:
            stream.seek(0)
            data = stream.read()
        except OSError as exc:
            raise SnapshotProblem(f"{snapshot.path.name}: cannot read: {exc.strerror}") from None
        return snapshot_records(snapshot, data)

    def close(self) -> None:
        for stream in [*(stream for _, _, stream in self.files), *self.snapshot_streams.values()]:
            stream.close()
        self.files, self.snapshot_streams = [], {}

    def __enter__(self) -> LogReader:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def batches(self, start_offset: int, until: int = NO_END) -> Iterator[Batch]:
        """Every batch holding records at or after `start_offset` and starting before `until`,
        validated, in order (see the rules)."""
        decode = self._decode
        for path, _, batch in self._checked(start_offset, until):
            yield Batch(
                batch.base_offset,
                batch.partition_leader_epoch,
                batch.base_timestamp,
                batch.is_control,
                decode(batch, path, start_offset),
            )

    def outline(self) -> Iterator[Outline]:
        """Every batch of the segments, validated as `batches` does, without decoding metadata records."""
        start = self.files[0][0] if self.files else 0
        for path, position, batch in self._checked(start, NO_END):
            crc = read_crc(self._view, position)
            leader_change = None
            if batch.is_control:
                leader_change = next(
                    (r for _, r, _ in self._decode(batch, path, start) if isinstance(r, LeaderChangeMessage)), None
                )
            yield Outline(
                batch.base_offset,
                batch.next_offset,
                batch.partition_leader_epoch,
                batch.base_timestamp,
                (crc, hash(batch)),
                leader_change,
            )

    def _checked(self, start_offset: int, until: int) -> Iterator[tuple[Path, int, RecordBatch]]:
        """The validated batches (see `batches`), each with its segment and byte position."""
        reading = self.reading
        reading.start_offset = reading.end_offset = start_offset
        expected: int | None = None
        for index, (base_offset, path, stream) in enumerate(self.files):
            if expected is not None and base_offset != expected:
                self._problem(
                    f"{path.name}: the segment is named for offset {base_offset}, the log continues at {expected}"
                )
                return
            expected = self._next_offset = base_offset
            last = index == len(self.files) - 1
            for position, batch in self._scan(stream, path, last):
                if batch.base_offset != expected:
                    missing = (
                        f": offsets {expected}..{batch.base_offset - 1} are missing (a metadata log never skips one)"
                        if batch.base_offset > expected
                        else ""
                    )
                    self._problem(
                        f"{path.name} at byte {position}: base offset {batch.base_offset}, expected {expected}{missing}"
                    )
                    return
                if batch.base_offset >= until:
                    return
                expected = self._next_offset = batch.next_offset
                reading.batches += 1
                if batch.next_offset > start_offset:
                    reading.end_offset = batch.next_offset
                    yield path, position, batch
            if not reading.complete:
                return

    def _decode(self, batch: RecordBatch, path: Path, start_offset: int) -> list[tuple[int, Data, int]]:
        decoded: list[tuple[int, Data, int]] = []
        base = batch.base_offset
        control = batch.is_control
        for record in batch.records:
            offset = base + record.offset_delta
            if offset < start_offset:
                continue
            try:
                if control:
                    message, version = decode_control_record(record.key, record.value)
                    decoded.append((offset, message, version))
                else:
                    decoded.append((offset, *decode_metadata_value(record.value)))
            except (UnknownRecordTypeError, UnsupportedRecordVersionError) as exc:
                self.reading.skipped_types[str(exc)] += 1
            except DecodeError as exc:
                self.reading.problems.append(f"{path.name}: the record at offset {offset} cannot be decoded: {exc}")
        return decoded

    def _problem(self, message: str) -> None:
        self.reading.problems.append(message)
        self.reading.complete = False

    def _scan(self, stream: IO[bytes], path: Path, last: bool) -> Iterator[tuple[int, RecordBatch]]:
        """The valid batches of one segment as (byte position, batch); a fault ends it (note or problem)."""
        size = os.fstat(stream.fileno()).st_size
        if size == 0:
            return
        with mmap.mmap(stream.fileno(), size, access=mmap.ACCESS_READ) as view:
            self._view = view  # the segment being read (`outline` reads the CRC of the batch yielded)
            position = 0
            while position < size:
                batch, fault = _batch_at(view, position, size)
                if batch is None:
                    self._fault(view, path, position, size, fault, last)
                    return
                yield position, batch
                position += batch_size(view, position)

    def _fault(self, view: mmap.mmap, path: Path, position: int, size: int, reason: str, last: bool) -> None:
        """A note if the bytes from `position` are the next batch cut short at the log's end, else a problem."""
        following = _valid_batches_after(view, position + 1, size)
        where = f"{path.name} at byte {position}: {reason}"
        if last and following == 0 and _cut_short(view, position, size, self._next_offset):
            self.reading.notes.append(
                f"incomplete last batch ({size - position} bytes at the end of {where}): "
                "a write in progress or a torn write; not checked"
            )
            return
        after = f"{following} valid batch(es) follow in the segment" if following else "later segments follow"
        if last and following == 0:
            after = "it is not the start of the next batch cut short"
        self._problem(f"corrupt metadata log: {where}; {after}, so this is not an incomplete tail")


def _batch_at(view: mmap.mmap | bytes, position: int, size: int) -> tuple[RecordBatch | None, str]:
    if size - position < LOG_OVERHEAD:
        return None, f"the last {size - position} bytes cannot hold a batch header"
    end = position + batch_size(view, position)
    length = end - position - LOG_OVERHEAD
    if length < MIN_BATCH_LENGTH:
        return None, f"batch length {length} is below the header's {MIN_BATCH_LENGTH}"
    if end > size:
        return None, f"the batch declares {length} bytes, {size - position - LOG_OVERHEAD} remain"
    try:
        batch, _ = decode_batch(view[position:end])
    except DecodeError as exc:
        return None, str(exc)
    if not batch.records or batch.last_offset_delta != len(batch.records) - 1:
        return None, f"lastOffsetDelta {batch.last_offset_delta} does not fit its {len(batch.records)} records"
    return batch, ""


def _cut_short(view: mmap.mmap, position: int, size: int, expected: int) -> bool:
    """Are the bytes from `position` to `size` the beginning of the batch at offset `expected`, cut
    short? (What a reader sees of a batch being appended: its base offset, magic 2, and a length
    reaching past the end. A complete batch failing its CRC, or garbage, is not.)"""
    remaining = size - position
    if remaining >= LENGTH_OFFSET and read_base_offset(view, position) != expected:  # its baseOffset is there
        return False
    if remaining >= LOG_OVERHEAD:
        declared = batch_size(view, position)
        if declared < HEADER_SIZE or declared <= remaining:
            return False
    return remaining <= MAGIC_OFFSET or view[position + MAGIC_OFFSET] == MAGIC


def _valid_batches_after(view: mmap.mmap, start: int, size: int) -> int:
    """How many valid batches start at positions >= `start` (found by their magic byte, then decoded)."""
    count = 0
    candidate = start
    while True:
        found = view.find(MAGIC_BYTE, candidate + MAGIC_OFFSET)
        if found < 0:
            return count
        candidate = found - MAGIC_OFFSET
        batch, _ = _batch_at(view, candidate, size) if candidate >= 0 else (None, "")
        if batch is None:
            candidate += 1
        else:
            count += 1
            candidate += batch_size(view, candidate)


def _open(path: Path) -> IO[bytes] | None:
    try:
        return open(path, "rb")  # closed in LogReader.close()
    except FileNotFoundError:
        return None  # deleted by retention since the listing
    except OSError as exc:
        raise CheckError(f"{path}: cannot open: {exc.strerror}") from None


def snapshot_records(snapshot: SnapshotFile, data: bytes) -> list[tuple[Data, int]]:
    """The metadata records of a snapshot (header, data batches from offset 1, footer), else `SnapshotProblem`."""
    records: list[tuple[Data, int]] = []
    position = next_offset = 0
    footer = False
    while position < len(data):
        batch, fault = _batch_at(data, position, len(data))
        where = f"{snapshot.path.name} at byte {position}"
        if batch is None:
            raise SnapshotProblem(f"{where}: {fault}")
        if footer or batch.base_offset != next_offset:
            raise SnapshotProblem(f"{where}: offset {batch.base_offset} where {next_offset} (or the end) was due")
        try:
            if batch.is_control:
                message, _ = decode_control_record(batch.records[0].key, batch.records[0].value)
                expected = SnapshotHeaderRecord if next_offset == 0 else SnapshotFooterRecord
                if len(batch.records) != 1 or type(message) is not expected:
                    raise SnapshotProblem(f"{where}: a control batch other than one {expected.__name__}")
                footer = expected is SnapshotFooterRecord
            elif next_offset == 0:
                raise SnapshotProblem(f"{where}: no SnapshotHeader first")
            else:
                records.extend(decode_metadata_value(record.value) for record in batch.records)
        except DecodeError as exc:
            raise SnapshotProblem(f"{where}: {exc}") from None
        next_offset = batch.next_offset
        position += batch_size(data, position)
    if not footer:
        raise SnapshotProblem(f"{snapshot.path.name}: no footer, the snapshot is incomplete")
    return records
