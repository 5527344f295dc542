"""The controller's append-only metadata log, in Kafka's `__cluster_metadata` on-disk format.

    DATA_DIR/meta.properties                                  cluster id, node id (KRaft v1, or v0)
    DATA_DIR/__cluster_metadata-0/quorum-state                KRaft election state (`quorum_state`)
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
  relies on it to catch flipped epoch bits, which the CRC does not cover. Once the LeaderChange
  is durable, `quorum-state` is rewritten with the new epoch, as Kafka's controller keeps it.
- A failed write or fsync leaves the log unusable (`LogError` on every later append): after
  fsync fails, what reached the disk is unknown, and only a restart's recovery can tell.
- Snapshots and retention (`snapshotting`) never fail the log: their OSErrors are
  `SnapshotWriteError`s, and appends go on.
- Two threads may share a log: one appending (`write_prepared`, `append_leader_change`, and a
  follower's `append_as_follower`, `truncate_to`, `truncate_to_latest_snapshot`), one
  snapshotting (`write_snapshot` or `write_encoded_snapshot`, then `apply_retention` or
  `delete_segments_below`: `snapshotting`); and any thread may read raw batches, snapshot chunks and epochs
  (`replication`). What they touch is in a `LogCatalog`, whose one lock is held only to read
  or update it: never across a write, an fsync, a file's writing or deletion. Deleting a
  segment is serialised with a follower's restart at a snapshot (`_segment_deletion`), which
  may create a file of the same name. `open`, `read`, `batches` and `close` expect no other
  thread at work.
- Every append, leader's or follower's, extends the segment's sparse offset index and the
  epoch cache (`offset_index`, `epochs`), which the recovery scan builds at open.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Generator, Iterator, Sequence
from pathlib import Path
from types import TracebackType
from typing import NoReturn

from protocol.records.batch import RecordBatch
from protocol.records.batch_writer import PreparedAppend, encode_groups
from protocol.records.control import LeaderChangeMessage, LeaderChangeMessageVoter, control_batch
from protocol.spec import Data

from .. import runtime
from ..slices import finish
from .catalog import LogCatalog, Segment, SegmentWrite, SnapshotFile
from .model import LogEntry, LogError, LogSizes, RecoveryReport, SnapshotId
from .offset_index import INDEX_INTERVAL_BYTES, OffsetIndex
from .properties import MetaProperties, load_or_format
from .quorum_state import QuorumState, read_quorum_state, write_quorum_state
from .reading import read_entries, read_through, segment_batches
from .recovery import RecoveredLog, recover_from_snapshots
from .replication import ReplicationMethods
from .segments import PARTITION_DIR, fsync_directory, segment_name
from .snapshots import list_snapshots, partial_snapshots
from .snapshotting import SnapshotMethods
from .tail import Tail, TailBatch

__all__ = ["LogEntry", "LogError", "LogSizes", "MetadataLog", "PreparedAppend", "RecoveryReport", "SnapshotId"]

#: Kafka's `metadata.log.segment.bytes` default (1 GiB).
DEFAULT_SEGMENT_BYTES = 1 << 30
_APPEND_FLAGS = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC


class MetadataLog(ReplicationMethods, SnapshotMethods):
    """An open metadata log: append and read; snapshot and retain (`snapshotting`); and replicate
    (`replication`). Build it with `MetadataLog.open`."""

    cluster_id: str
    node_id: int
    data_dir: Path
    recovery: RecoveryReport
    #: The `quorum-state` found at open (None when absent or invalid).
    quorum_state: QuorumState | None = None

    def __init__(
        self,
        data_dir: Path,
        meta: MetaProperties,
        recovered: RecoveredLog,
        *,
        segment_bytes: int,
        fsync: bool,
        index_interval_bytes: int = INDEX_INTERVAL_BYTES,
    ):
        self.data_dir = data_dir
        self.cluster_id = meta.cluster_id
        self.node_id = meta.node_id
        self.recovery = recovered.report()
        self._partition = data_dir / PARTITION_DIR
        self._segment_bytes = segment_bytes
        self._fsync = fsync
        self._index_interval = index_interval_bytes
        self._failure: str | None = None
        self._fd: int | None = None
        self._segment_deletion = threading.Lock()
        self._tail = Tail()
        segments = [
            Segment(base, path, path.stat().st_size, index)
            for (base, path), index in zip(recovered.segments, recovered.indexes, strict=True)
        ]
        if not segments:
            segments.append(self._new_segment(recovered.next_offset))
        snapshots = [SnapshotFile(sid, path, path.stat().st_size) for sid, path in list_snapshots(self._partition)]
        self._catalog = LogCatalog(
            segments, snapshots, recovered.next_offset, recovered.last_epoch, recovered.appended, recovered.epochs
        )

    # ------------------------------------------------------------------------ opening
    @classmethod
    def open(
        cls,
        data_dir: Path,
        *,
        cluster_id: str | None = None,
        node_id: int = 1,
        repair: bool = False,
        segment_bytes: int = DEFAULT_SEGMENT_BYTES,
        fsync: bool = True,
        index_interval_bytes: int = INDEX_INTERVAL_BYTES,
    ) -> MetadataLog:
        """Format (first use) or validate `data_dir`, recover its log and open it for appending.

        `index_interval_bytes` spaces the sparse offset index (`offset_index`) of each segment."""
        data_dir = Path(data_dir)
        if segment_bytes <= 0:
            raise ValueError(f"segment_bytes must be positive, not {segment_bytes}")
        if index_interval_bytes <= 0:
            raise ValueError(f"index_interval_bytes must be positive, not {index_interval_bytes}")
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
            quorum_state = read_quorum_state(partition, messages)
            recovered = recover_from_snapshots(
                partition, repair=repair, fsync=fsync, index_interval_bytes=index_interval_bytes
            )
            recovered.messages[:0] = messages
            log = cls(
                data_dir,
                meta,
                recovered,
                segment_bytes=segment_bytes,
                fsync=fsync,
                index_interval_bytes=index_interval_bytes,
            )
            log.quorum_state = quorum_state
            log._open_active()
        except OSError as exc:
            raise LogError(f"cannot use data directory {data_dir}: {exc}") from None
        return log

    def _open_active(self) -> None:
        active = self._catalog.active
        created = not active.path.exists()
        self._fd = os.open(active.path, _APPEND_FLAGS, 0o644)
        active.size = os.fstat(self._fd).st_size  # no other thread yet
        if created and self._fsync:
            fsync_directory(self._partition)

    # ------------------------------------------------------------------------ state
    @property
    def next_offset(self) -> int:
        """The offset the next appended record gets."""
        return self._catalog.next_offset

    @property
    def last_epoch(self) -> int:
        """The highest epoch of the log and its snapshots (0 for an empty log): the controller epoch."""
        return self._catalog.last_epoch

    @property
    def bytes_since_snapshot(self) -> int:
        """Bytes of the batches at or after the newest snapshot's end offset (the snapshot trigger's input).

        Batches appended while that snapshot was being written count: they are after its end."""
        return self._catalog.bytes_since_snapshot

    @property
    def total_bytes(self) -> int:
        """Bytes of every segment and snapshot: the size `apply_retention` bounds."""
        return self._catalog.total_bytes

    @property
    def sizes(self) -> LogSizes:
        """Bytes of the segments and of the snapshots, from the sizes the log keeps as it writes
        and deletes (no directory scan: the metrics read this at every scrape)."""
        return self._catalog.sizes()

    @property
    def log_start_offset(self) -> int:
        """The first offset still in the segments (0 until retention deletes segments)."""
        return self._catalog.log_start_offset

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
    ) -> Generator[None, None, PreparedAppend]:
        """`prepare` in slices: yields after every `ENCODE_SLICE_RECORDS` records encoded."""
        self._check_epoch(epoch)
        return (yield from encode_groups(groups, self._catalog.next_offset, epoch, timestamp_ms))

    def write_prepared(self, prepared: PreparedAppend) -> list[int]:
        """Write and fsync what `prepare` encoded; it must be the next thing this log appends."""
        self._check_open()
        next_offset = self._catalog.next_offset
        if prepared.start_offset != next_offset:
            raise ValueError(f"prepared at offset {prepared.start_offset}, but the log is at {next_offset}")
        if prepared.batches:
            self._write(prepared.batches, prepared.end_offset)
        return prepared.offsets

    def append_leader_change(self, epoch: int, leader_id: int, timestamp_ms: int) -> int:
        """Start `epoch`: append a LeaderChange control batch at it, durably; return its offset."""
        self._check_open()
        if epoch <= self._catalog.last_epoch:
            raise ValueError(f"a leader change must raise the epoch: {epoch} <= the log's {self._catalog.last_epoch}")
        voter = LeaderChangeMessageVoter(voter_id=leader_id)
        message = LeaderChangeMessage(version=0, leader_id=leader_id, voters=(voter,), granting_voters=(voter,))
        offset = self._catalog.next_offset
        self._write([(offset, control_batch(offset, epoch, timestamp_ms, [(message, 0)]))], offset + 1, epoch)
        write_quorum_state(self._partition, leader_id, epoch, fsync=self._fsync)
        return offset

    def _check_open(self) -> None:
        if self._fd is None:
            raise LogError(f"the metadata log of {self.data_dir} is closed")
        if self._failure is not None:
            raise LogError(f"the metadata log of {self.data_dir} failed ({self._failure}); restart to recover it")

    def _check_epoch(self, epoch: int) -> None:
        self._check_open()
        if epoch < self._catalog.last_epoch:
            raise ValueError(f"stale epoch {epoch}: the log is at epoch {self._catalog.last_epoch}")
        if epoch > self._catalog.last_epoch:
            raise ValueError(
                f"epoch {epoch} is ahead of the log's {self._catalog.last_epoch}: "
                f"a new epoch starts with append_leader_change({epoch}, ...)"
            )

    def _write(
        self,
        batches: list[tuple[int, bytes]],
        next_offset: int,
        epoch: int | None = None,
        decoded: list[RecordBatch] | None = None,
    ) -> None:
        """Write batches in order: one write and one fsync per segment touched; then register them
        all at once (sizes, index, epochs, end: `LogCatalog.appended`), and keep them in the tail
        (`controller.log.tail`) with `decoded`, the same batches decoded (a follower's)."""
        writes: list[SegmentWrite] = []
        segment = self._catalog.active  # only this thread changes it
        pending: list[bytes] = []
        positions: list[tuple[int, int]] = []
        tail: list[TailBatch] = []
        size = segment.size
        for index, (base_offset, batch) in enumerate(batches):
            if size > 0 and size + len(batch) > self._segment_bytes:
                if pending:
                    self._write_active(b"".join(pending))
                    writes.append(SegmentWrite(segment, size - segment.size, positions))
                self._roll(base_offset)
                segment, pending, positions, size = self._catalog.active, [], [], 0
            positions.append((base_offset, size))
            pending.append(batch)
            size += len(batch)
            end = batches[index + 1][0] if index + 1 < len(batches) else next_offset
            tail.append(TailBatch(segment.path, base_offset, end, batch, None if decoded is None else decoded[index]))
        self._write_active(b"".join(pending))
        writes.append(SegmentWrite(segment, size - segment.size, positions))
        self._catalog.appended(writes, batches, next_offset, epoch)
        self._tail.add(tail)

    def _write_active(self, data: bytes) -> None:
        assert self._fd is not None
        try:
            written = os.write(self._fd, data)
            while written < len(data):  # a regular file writes everything unless the disk is full
                written += os.write(self._fd, memoryview(data)[written:])
            if self._fsync:
                runtime.fsync(self._fd)
        except OSError as exc:
            self._fail(exc)

    def _fail(self, exc: OSError) -> NoReturn:
        self._failure = f"{type(exc).__name__}: {exc}"
        try:  # best effort: leave no partial batch for the next reader of this process's files
            assert self._fd is not None
            os.ftruncate(self._fd, self._catalog.active.size)
        except OSError:
            pass
        raise LogError(f"cannot append to {self._catalog.active.path}: {self._failure}") from exc

    def _roll(self, base_offset: int) -> None:
        assert self._fd is not None
        path = self._partition / segment_name(base_offset)
        try:
            fd = os.open(path, _APPEND_FLAGS, 0o644)
        except OSError as exc:
            self._fail(exc)
        os.close(self._fd)
        self._fd = fd
        self._catalog.add_segment(self._new_segment(base_offset))
        try:
            if self._fsync:
                fsync_directory(self._partition)
        except OSError as exc:
            self._fail(exc)

    def _new_segment(self, base_offset: int) -> Segment:
        path = self._partition / segment_name(base_offset)
        return Segment(base_offset, path, 0, OffsetIndex(base_offset, self._index_interval))

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
        if start_offset >= self._catalog.next_offset:
            return iter(())  # nothing there yet (no segment to scan for it)
        held = self._tail.decoded(start_offset)
        if held is not None:  # the newest batches, as a follower decoded them
            return read_through(held, start_offset, self.read)
        segments = self._catalog.segments()
        position = 0
        if segments:
            plan = self._catalog.plan_read(max(start_offset, segments[0][0]))
            position = plan.position
        return read_entries(segments, start_offset, position)

    def batches(self) -> Iterator[tuple[Path, int, RecordBatch]]:
        """Every batch as (segment, byte position, batch), for the dump tool and tests."""
        for _, path in self._catalog.segments():
            yield from segment_batches(path)

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
