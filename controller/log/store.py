"""The controller's append-only metadata log, in Kafka's `__cluster_metadata` on-disk format.

    DATA_DIR/meta.properties                                  cluster id, node id (KRaft v1)
    DATA_DIR/__cluster_metadata-0/<20-digit base offset>.log  segments of record batches v2
    DATA_DIR/__cluster_metadata-0/<offset>-<epoch>.checkpoint snapshots (offset: end, exclusive)

Rules:
- `MetadataLog.open` formats an empty directory, or validates `meta.properties`, then recovers
  the segments (`recovery.recover`: a torn tail is cut, corruption refused unless `repair`).
  Every OSError on the way is a `LogError` naming the directory.
- `append` is a group commit: each group (one request's records) becomes exactly one record
  batch, so a request is atomic; every batch goes out in one `write()` and one `fsync()` (one
  of each per segment when the commit crosses a roll). A segment rolls before a batch that
  would take it past `segment_bytes`; creating a file fsyncs the directory. `fsync=False`
  skips every fsync (tests, benchmarks), never anything else.
- Epochs follow KRaft: a new epoch starts with `append_leader_change` (a control batch) and
  every batch after it carries that epoch, so `append` takes exactly `last_epoch`. Recovery
  relies on it to catch flipped epoch bits, which the CRC does not cover.
- A failed write or fsync leaves the log unusable (`LogError` on every later append): after
  fsync fails, what reached the disk is unknown, and only a restart's recovery can tell.
- Not thread-safe: one caller at a time (the shell may run `append` in a worker thread).
"""

from __future__ import annotations

import bisect
import os
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import NoReturn

from protocol.errors import DecodeError
from protocol.records.batch import RecordBatch, metadata_batch
from protocol.records.control import LeaderChangeMessage, LeaderChangeMessageVoter, control_batch, decode_control_record
from protocol.records.metadata import decode_metadata_value, encode_metadata_value
from protocol.spec import Data

from ..slices import Slices, finish
from .model import LogEntry, LogError, RecoveryReport, SnapshotId
from .properties import MetaProperties, load_or_format
from .recovery import RecoveredLog, gap_message, recover_from_snapshots
from .segments import PARTITION_DIR, BadBatch, fsync_directory, scan_segment, segment_name
from .snapshots import SnapshotError, list_snapshots, partial_snapshots, read_snapshot_file, write_snapshot_file

__all__ = ["LogEntry", "LogError", "MetadataLog", "PreparedAppend", "RecoveryReport", "SnapshotId"]

#: Records encoded between two pauses of `prepare_steps` (about 2-4 ms of work here).
ENCODE_SLICE_RECORDS = 256
_APPEND_FLAGS = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC


@dataclass(frozen=True)
class PreparedAppend:
    """Batches encoded by `MetadataLog.prepare`, waiting for `write_prepared`."""

    start_offset: int
    end_offset: int
    offsets: list[int]
    batches: list[tuple[int, bytes]]


class MetadataLog:
    """An open metadata log: append, read, snapshot. Build it with `MetadataLog.open`."""

    cluster_id: str
    node_id: int
    data_dir: Path
    recovery: RecoveryReport

    def __init__(
        self, data_dir: Path, meta: MetaProperties, recovered: RecoveredLog, *, segment_bytes: int, fsync: bool
    ):
        self.data_dir = data_dir
        self.cluster_id = meta.cluster_id
        self.node_id = meta.node_id
        self.recovery = recovered.report()
        self._partition = data_dir / PARTITION_DIR
        self._segment_bytes = segment_bytes
        self._fsync = fsync
        self._segments = recovered.segments
        self._next_offset = recovered.next_offset
        self._last_epoch = recovered.last_epoch
        self._bytes_since_snapshot = recovered.bytes_since
        self._failure: str | None = None
        self._fd: int | None = None
        self._active_size = 0

    # ------------------------------------------------------------------------ opening
    @classmethod
    def open(
        cls,
        data_dir: Path,
        *,
        cluster_id: str | None = None,
        node_id: int = 1,
        repair: bool = False,
        segment_bytes: int = 1 << 30,
        fsync: bool = True,
    ) -> MetadataLog:
        """Format (first use) or validate `data_dir`, recover its log and open it for appending."""
        data_dir = Path(data_dir)
        if segment_bytes <= 0:
            raise ValueError(f"segment_bytes must be positive, not {segment_bytes}")
        try:
            messages: list[str] = []
            meta = load_or_format(data_dir, cluster_id, node_id, fsync=fsync, messages=messages)
            partition = data_dir / PARTITION_DIR
            if not partition.is_dir():
                partition.mkdir()
                if fsync:
                    fsync_directory(data_dir)
            for leftover in partial_snapshots(partition):
                leftover.unlink()
                messages.append(f"deleted {leftover}, the leftover of an interrupted snapshot")
            recovered = recover_from_snapshots(partition, repair=repair, fsync=fsync)
            recovered.messages[:0] = messages
            log = cls(data_dir, meta, recovered, segment_bytes=segment_bytes, fsync=fsync)
            log._open_active()
        except OSError as exc:
            raise LogError(f"cannot use data directory {data_dir}: {exc}") from None
        return log

    def _open_active(self) -> None:
        if not self._segments:
            self._segments.append((self._next_offset, self._partition / segment_name(self._next_offset)))
        path = self._segments[-1][1]
        created = not path.exists()
        self._fd = os.open(path, _APPEND_FLAGS, 0o644)
        self._active_size = os.fstat(self._fd).st_size
        if created and self._fsync:
            fsync_directory(self._partition)

    # ------------------------------------------------------------------------ state
    @property
    def next_offset(self) -> int:
        """The offset the next appended record gets."""
        return self._next_offset

    @property
    def last_epoch(self) -> int:
        """The highest epoch of the log and its snapshots (0 for an empty log): the controller epoch."""
        return self._last_epoch

    @property
    def bytes_since_snapshot(self) -> int:
        """Bytes of batches appended since the latest snapshot (the snapshot trigger's input)."""
        return self._bytes_since_snapshot

    @property
    def log_start_offset(self) -> int:
        """The first offset still in the segments (0 until segments are deleted below a snapshot)."""
        return self._segments[0][0]

    # ------------------------------------------------------------------------ appending
    def append(self, groups: Sequence[Sequence[tuple[Data, int]]], epoch: int, timestamp_ms: int) -> list[int]:
        """Append each group as one batch, durably; return each group's base offset."""
        return self.write_prepared(self.prepare(groups, epoch, timestamp_ms))

    def prepare(self, groups: Sequence[Sequence[tuple[Data, int]]], epoch: int, timestamp_ms: int) -> PreparedAppend:
        """Encode groups as batches, one per group, without touching the files or the log's state.

        `write_prepared` then makes them durable. The split lets a caller encode (CPU, under the
        GIL) on its own thread and leave only the write and fsync (which release it) to a worker."""
        return finish(self.prepare_steps(groups, epoch, timestamp_ms))

    def prepare_steps(
        self, groups: Sequence[Sequence[tuple[Data, int]]], epoch: int, timestamp_ms: int
    ) -> Slices[PreparedAppend]:
        """`prepare` in slices: yields after every `ENCODE_SLICE_RECORDS` records encoded."""
        self._check_epoch(epoch)
        offsets: list[int] = []
        batches: list[tuple[int, bytes]] = []
        next_offset = self._next_offset
        for group in groups:
            offsets.append(next_offset)
            if group:
                values: list[bytes] = []
                for start in range(0, len(group), ENCODE_SLICE_RECORDS):
                    if start:
                        yield None
                    values.extend(
                        encode_metadata_value(record, version)
                        for record, version in group[start : start + ENCODE_SLICE_RECORDS]
                    )
                batches.append((next_offset, metadata_batch(next_offset, epoch, timestamp_ms, values)))
                next_offset += len(values)
                yield None
        return PreparedAppend(self._next_offset, next_offset, offsets, batches)

    def write_prepared(self, prepared: PreparedAppend) -> list[int]:
        """Write and fsync what `prepare` encoded; it must be the next thing this log appends."""
        self._check_open()
        if prepared.start_offset != self._next_offset:
            raise ValueError(f"prepared at offset {prepared.start_offset}, but the log is at {self._next_offset}")
        if prepared.batches:
            self._write(prepared.batches)
            self._next_offset = prepared.end_offset
        return prepared.offsets

    def append_leader_change(self, epoch: int, leader_id: int, timestamp_ms: int) -> int:
        """Start `epoch`: append a LeaderChange control batch at it, durably; return its offset."""
        self._check_open()
        if epoch <= self._last_epoch:
            raise ValueError(f"a leader change must raise the epoch: {epoch} <= the log's {self._last_epoch}")
        voter = LeaderChangeMessageVoter(voter_id=leader_id)
        message = LeaderChangeMessage(version=0, leader_id=leader_id, voters=(voter,), granting_voters=(voter,))
        offset = self._next_offset
        self._write([(offset, control_batch(offset, epoch, timestamp_ms, [(message, 0)]))])
        self._next_offset = offset + 1
        self._last_epoch = epoch
        return offset

    def _check_open(self) -> None:
        if self._fd is None:
            raise LogError(f"the metadata log of {self.data_dir} is closed")
        if self._failure is not None:
            raise LogError(f"the metadata log of {self.data_dir} failed ({self._failure}); restart to recover it")

    def _check_epoch(self, epoch: int) -> None:
        self._check_open()
        if epoch < self._last_epoch:
            raise ValueError(f"stale epoch {epoch}: the log is at epoch {self._last_epoch}")
        if epoch > self._last_epoch:
            raise ValueError(
                f"epoch {epoch} is ahead of the log's {self._last_epoch}: "
                f"a new epoch starts with append_leader_change({epoch}, ...)"
            )

    def _write(self, batches: list[tuple[int, bytes]]) -> None:
        """Write batches in order: one write and one fsync per segment touched."""
        pending: list[bytes] = []
        pending_size = 0
        for base_offset, batch in batches:
            size = self._active_size + pending_size
            if size > 0 and size + len(batch) > self._segment_bytes:
                if pending:
                    self._write_active(b"".join(pending))
                    pending, pending_size = [], 0
                self._roll(base_offset)
            pending.append(batch)
            pending_size += len(batch)
        self._write_active(b"".join(pending))
        self._bytes_since_snapshot += sum(len(batch) for _, batch in batches)

    def _write_active(self, data: bytes) -> None:
        assert self._fd is not None
        try:
            written = os.write(self._fd, data)
            while written < len(data):  # a regular file writes everything unless the disk is full
                written += os.write(self._fd, memoryview(data)[written:])
            if self._fsync:
                os.fsync(self._fd)
        except OSError as exc:
            self._fail(exc)
        self._active_size += len(data)

    def _fail(self, exc: OSError) -> NoReturn:
        self._failure = f"{type(exc).__name__}: {exc}"
        try:  # best effort: leave no partial batch for the next reader of this process's files
            assert self._fd is not None
            os.ftruncate(self._fd, self._active_size)
        except OSError:
            pass
        raise LogError(f"cannot append to {self._segments[-1][1]}: {self._failure}") from exc

    def _roll(self, base_offset: int) -> None:
        assert self._fd is not None
        path = self._partition / segment_name(base_offset)
        try:
            fd = os.open(path, _APPEND_FLAGS, 0o644)
        except OSError as exc:
            self._fail(exc)
        os.close(self._fd)
        self._fd, self._active_size = fd, 0
        self._segments.append((base_offset, path))
        try:
            if self._fsync:
                fsync_directory(self._partition)
        except OSError as exc:
            self._fail(exc)

    # ------------------------------------------------------------------------ reading
    def read(self, start_offset: int = 0) -> Iterator[LogEntry]:
        """Every record from `start_offset` on, metadata and control, in offset order.

        Raises `LogError` at once if `start_offset` was deleted (read from a snapshot's end).
        The records are those of the segments as they are when iteration reaches them.
        """
        if start_offset < self.log_start_offset:
            raise LogError(
                f"offsets below {self.log_start_offset} were deleted from {self._partition}; "
                f"read from a snapshot's end offset instead of {start_offset}"
            )
        segments = list(self._segments)
        first = max(bisect.bisect_right([base for base, _ in segments], start_offset) - 1, 0)
        return self._read(segments[first:], start_offset)

    def _read(self, segments: list[tuple[int, Path]], start_offset: int) -> Iterator[LogEntry]:
        for _, path in segments:
            for _, _, batch in self._batches_of(path):
                if batch.base_offset + batch.last_offset_delta >= start_offset:
                    yield from _entries(path, batch, start_offset)

    def batches(self) -> Iterator[tuple[Path, int, RecordBatch]]:
        """Every batch as (segment, byte position, batch), for the dump tool and tests."""
        for _, path in list(self._segments):
            yield from self._batches_of(path)

    def _batches_of(self, path: Path) -> Iterator[tuple[Path, int, RecordBatch]]:
        try:
            for scanned in scan_segment(path):
                yield path, scanned.position, scanned.batch
        except (BadBatch, OSError) as exc:
            raise LogError(f"{path} changed since it was recovered: {exc}") from None

    # ------------------------------------------------------------------------ snapshots
    def snapshots(self) -> list[SnapshotId]:
        """The validly named snapshot files, ascending (contents are checked on load)."""
        return [snapshot_id for snapshot_id, _ in list_snapshots(self._partition)]

    def write_snapshot(
        self, end_offset: int, epoch: int, records: Iterable[tuple[Data, int]], timestamp_ms: int
    ) -> Path:
        """Write the state below `end_offset` as a snapshot, atomically; return its path."""
        self._check_open()
        if not 0 <= end_offset <= self._next_offset:
            raise ValueError(f"snapshot end offset {end_offset} is outside 0..{self._next_offset}")
        if not 0 <= epoch <= self._last_epoch:
            raise ValueError(f"snapshot epoch {epoch} is outside 0..{self._last_epoch}")
        try:
            path = write_snapshot_file(
                self._partition, SnapshotId(end_offset, epoch), records, timestamp_ms, fsync=self._fsync
            )
        except OSError as exc:
            raise LogError(f"cannot write a snapshot in {self._partition}: {exc}") from None
        self._bytes_since_snapshot = 0
        return path

    def load_latest_snapshot(self) -> tuple[SnapshotId, list[tuple[Data, int]]] | None:
        """The newest snapshot that validates completely and its records; None if there is none."""
        for snapshot_id, path in reversed(list_snapshots(self._partition)):
            try:
                records = read_snapshot_file(path)
            except (SnapshotError, OSError) as exc:
                self.recovery.messages.append(f"skipped invalid snapshot {path}: {exc}")
                continue
            if snapshot_id.end_offset < self.log_start_offset:
                why = f"the newest valid snapshot, {path.name}, ends at {snapshot_id.end_offset}"
                raise LogError(gap_message(self._partition, self.log_start_offset, why))
            return snapshot_id, records
        if self.log_start_offset > 0:
            raise LogError(gap_message(self._partition, self.log_start_offset, "no valid snapshot exists"))
        return None

    def delete_segments_below(self, offset: int) -> list[Path]:
        """Delete the segments whose every record is below `offset` (never the active one).

        Only offsets a snapshot covers may go: `offset` above every snapshot's end is a `ValueError`.
        """
        self._check_open()
        covered = max((snapshot_id.end_offset for snapshot_id in self.snapshots()), default=0)
        if offset > covered:
            raise ValueError(f"no snapshot covers the offsets below {offset} (the newest ends at {covered})")
        deleted: list[Path] = []
        while len(self._segments) > 1 and self._segments[1][0] <= offset:
            _, path = self._segments.pop(0)
            path.unlink()
            deleted.append(path)
        if deleted and self._fsync:
            fsync_directory(self._partition)
        return deleted

    # ------------------------------------------------------------------------ closing
    def close(self) -> None:
        """Close the active segment (idempotent)."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def __enter__(self) -> MetadataLog:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, traceback: TracebackType | None
    ) -> None:
        self.close()


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
