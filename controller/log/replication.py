"""What a controller quorum needs of the metadata log, as `MetadataLog` methods: Kafka's
`ReplicatedLog` as `KafkaMetadataLog` implements it, over fencer's segments and snapshots.

    leader:   read_records (Fetch), end_offset_for_epoch / validate_offset_and_epoch (a Fetch's
              DivergingEpoch or SnapshotId), read_snapshot_chunk (FetchSnapshot)
    follower: append_as_follower, truncate_to (a divergent tail), receive_snapshot then
              truncate_to_latest_snapshot (catching up from the leader's snapshot)

Rules:
- Reads (`read_records`, `read_snapshot_chunk`, the epoch questions) may run on any thread, at
  the same time as the appending thread appends and the snapshotting thread snapshots and
  deletes. A read plans under the catalog's lock (which segment, from which indexed byte
  position, up to which size), reads the file without it, and is retried if a truncation
  happened meanwhile (`LogCatalog.generation`); so it returns whole, durable batches of one
  state of the log. A segment retention deleted meanwhile is retried too, and then is out of
  range.
- The follower's writes (`append_as_follower`, `truncate_to`, `truncate_to_latest_snapshot`)
  are the appending thread's, like `write_prepared`: never two at once, never beside a leader
  append. `receive_snapshot`'s transfer may run on any one thread.
- Follower appends are written verbatim after `follower.check_follower_batches`: one write and
  one fsync per segment, segments rolled as for any append; invalid input changes nothing.
- `truncate_to(offset)` takes whole batches off the end: `offset` must start a batch (or be
  the end: nothing to do, nor past it, as Kafka's `UnifiedLog.truncateTo`), and may not go
  below the newest snapshot's end (or one being written), where Kafka's `KafkaMetadataLog`
  refuses to go below its high watermark: a snapshot only holds committed offsets, and the
  high watermark itself is the Raft core's to check. Later segments are deleted newest first,
  each deletion made durable before the next, then the segment holding `offset` is cut and
  fsync'd: a crash at any point leaves a prefix of the log, which recovery takes as it is.
- `truncate_to_latest_snapshot` is Kafka's: when the newest snapshot supersedes the log
  (`epochs.snapshot_supersedes_log`), every segment is deleted (oldest first, each deletion
  durable: a crash leaves a log the same rule restarts at open), the log restarts empty at the
  snapshot's end, and the older snapshots, now below the log start, are deleted.
- An OSError in the middle of a truncation leaves the log unusable (`LogError`), as a failed
  append does: the files are a valid log, but not the one in memory; a restart recovers them.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple, NoReturn

from protocol.records.batch import RecordBatch

from .. import runtime
from .catalog import LogCatalog, Segment, SnapshotFile
from .epochs import EpochEnd, ValidatedFetch, snapshot_supersedes_log
from .follower import check_follower_batches
from .model import LogError, SnapshotId, SnapshotNotFoundError
from .raw import ChangedUnderRead, find_batch, read_batches, read_chunk
from .segments import fsync_directory
from .snapshot_transfer import IncomingSnapshot
from .tail import Tail

_APPEND_FLAGS = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC
_READ_ATTEMPTS = 8


class RecordsRead(NamedTuple):
    """Whole batches as they lie on disk, and the log's start and end offsets when they were read."""

    records: bytes
    log_start_offset: int
    log_end_offset: int


class SnapshotChunk(NamedTuple):
    """Bytes of a snapshot file from a position, and the file's size (a FetchSnapshot answer's)."""

    data: bytes
    size: int


class ReplicationMethods:
    """The quorum's side of `MetadataLog` (see the module's rules); `MetadataLog` supplies the rest."""

    if TYPE_CHECKING:
        data_dir: Path
        _catalog: LogCatalog
        _partition: Path
        _fsync: bool
        _fd: int | None
        _failure: str | None
        _segment_deletion: threading.Lock

        def _check_open(self) -> None: ...

        _tail: Tail

        def _write(
            self,
            batches: list[tuple[int, bytes]],
            next_offset: int,
            epoch: int | None = None,
            decoded: list[RecordBatch] | None = None,
        ) -> None: ...
        def _new_segment(self, base_offset: int) -> Segment: ...

    # ------------------------------------------------------------------------ the leader's reads
    def read_records(self, fetch_offset: int, max_bytes: int) -> RecordsRead:
        """Whole batches from the one holding `fetch_offset`, up to `max_bytes` but at least one,
        from one segment (Kafka's `LogSegment.read` with minOneMessage); empty at the log end.
        `OffsetOutOfRangeError` below the log start or past the end. The bytes are read into
        memory: Kafka's leader bounds them by its own `maxFetchSizeInBytes` (8 MiB), whatever
        the request's MaxBytes, and so should the caller."""
        recent = self.read_recent_records(fetch_offset, max_bytes)
        if recent is not None:
            return recent
        for _ in range(_READ_ATTEMPTS):
            plan = self._catalog.plan_read(fetch_offset)
            if plan.path is None:
                return RecordsRead(b"", plan.log_start_offset, plan.log_end_offset)
            try:
                data = read_batches(plan.path, plan.position, plan.end, fetch_offset, max_bytes)
            except (OSError, ChangedUnderRead) as exc:
                if self._catalog.generation == plan.generation and not isinstance(exc, FileNotFoundError):
                    raise LogError(f"cannot read offset {fetch_offset} from {plan.path}: {exc}") from None
                continue  # truncated or deleted meanwhile: plan again
            if self._catalog.generation == plan.generation:
                return RecordsRead(data, plan.log_start_offset, plan.log_end_offset)
        raise LogError(f"reading offset {fetch_offset} of {self._partition} kept racing truncations or deletions")

    def read_recent_records(self, fetch_offset: int, max_bytes: int) -> RecordsRead | None:
        """`read_records` from the batches the log keeps in memory (its tail, `controller.log.tail`),
        with no system call (a leader answers a fetch for what it just wrote on its event loop);
        None when they do not hold `fetch_offset`."""
        if max_bytes < 0:
            raise ValueError(f"max_bytes must not be negative, not {max_bytes}")
        self._check_readable()
        held = self._tail.records(fetch_offset, max_bytes)
        start_offset = self._catalog.log_start_offset
        if held is None or fetch_offset < start_offset:
            return None
        return RecordsRead(held, start_offset, self._catalog.next_offset)

    @property
    def last_fetched_epoch(self) -> int:
        """The epoch of the last batch, or of the newest snapshot if the log holds no batch, else 0."""
        return self._catalog.last_fetched_epoch()

    def end_offset_for_epoch(self, epoch: int) -> EpochEnd:
        """Kafka's `endOffsetForEpoch`: the largest epoch at or below `epoch` and where it ends (the
        next epoch's start, or the log end for the last one); see `epochs` for the edge cases."""
        return self._catalog.end_offset_for_epoch(epoch)

    def validate_offset_and_epoch(self, offset: int, epoch: int) -> ValidatedFetch:
        """Kafka's `validateOffsetAndEpoch` for a follower fetching `offset` after a batch of
        `epoch`: VALID, DIVERGING (with the epoch's end here) or SNAPSHOT (the newest one's id)."""
        return self._catalog.validate_offset_and_epoch(offset, epoch)

    def epoch_for_offset(self, offset: int) -> int | None:
        """The epoch of the batch holding `offset`; None if the log does not hold it."""
        return self._catalog.epoch_for_offset(offset)

    def epoch_entries(self) -> list[tuple[int, int]]:
        """The epoch cache: (epoch, start offset) of each epoch of the log's batches, ascending."""
        return self._catalog.epochs()

    def read_snapshot_chunk(self, snapshot_id: SnapshotId, position: int, max_bytes: int) -> SnapshotChunk:
        """Up to `max_bytes` of a snapshot from byte `position` (Kafka's `RawSnapshotReader.slice`:
        not aligned to batches). `SnapshotNotFoundError` for a snapshot the log does not hold (or
        retention just deleted), `PositionOutOfRangeError` outside its bytes."""
        if max_bytes <= 0:
            raise ValueError(f"max_bytes must be positive, not {max_bytes}")
        self._check_readable()
        held = [s for s in self._catalog.snapshots() if s.snapshot_id == snapshot_id]
        if not held:
            raise SnapshotNotFoundError(f"no snapshot {snapshot_id} in {self._partition}")
        try:
            data, size = read_chunk(held[0].path, position, max_bytes)
        except FileNotFoundError:
            raise SnapshotNotFoundError(f"snapshot {snapshot_id} was deleted from {self._partition}") from None
        except OSError as exc:
            raise LogError(f"cannot read {held[0].path}: {exc}") from None
        return SnapshotChunk(data, size)

    def _check_readable(self) -> None:
        """A failed log's files and memory may disagree; a closed one's (or one between two
        segments of a truncation, on the appending thread) are still what the catalog says."""
        if self._failure is not None:
            raise LogError(f"the metadata log of {self.data_dir} failed ({self._failure}); restart to recover it")

    # ------------------------------------------------------------------------ the follower's writes
    def append_as_follower(self, raw: bytes) -> int:
        """Append a leader's batches verbatim, durably (see the module's rules); return the log end.

        `InvalidRecordsError` for input that does not continue this log, and then nothing changed."""
        self._check_open()
        floor = self._catalog.latest_batch_epoch()
        snapshots = self._catalog.snapshots()
        if floor is None and snapshots:
            floor = snapshots[-1].snapshot_id.epoch
        checked = check_follower_batches(raw, self._catalog.next_offset, floor)
        self._write(checked.batches, checked.end_offset, checked.last_epoch, checked.decoded)
        return checked.end_offset

    def truncate_to(self, offset: int) -> None:
        """Remove every batch at or above `offset`, durably (see the module's rules)."""
        self._check_open()
        if offset >= self._catalog.next_offset:
            return
        self._catalog.check_truncation(offset)
        self._tail.clear()
        position = self._batch_start(offset)
        removed = self._catalog.truncate(offset, position)  # checks again, with the snapshots as they are now
        active = self._catalog.active
        try:
            if removed:
                self._replace_fd(os.open(active.path, _APPEND_FLAGS, 0o644))
                for segment in reversed(removed):
                    self._unlink_durably(segment.path)
            assert self._fd is not None
            os.ftruncate(self._fd, position)
            if self._fsync:
                runtime.fsync(self._fd)
        except OSError as exc:
            self._truncation_failed(exc)

    def _batch_start(self, offset: int) -> int:
        """The byte position, in its segment, of the batch starting at `offset`; else `ValueError`."""
        plan = self._catalog.plan_read(offset)  # within the log: checked by the caller
        assert plan.path is not None
        try:
            fd = os.open(plan.path, os.O_RDONLY | os.O_CLOEXEC)
            try:
                found = find_batch(fd, plan.position, plan.end, offset)
            finally:
                os.close(fd)
        except (OSError, ChangedUnderRead) as exc:
            raise LogError(f"cannot find offset {offset} in {plan.path}: {exc}") from None
        if found.base_offset != offset:
            last = found.next_offset - 1
            raise ValueError(f"cannot truncate to {offset}: the batch {found.base_offset}..{last} holds it")
        return found.position

    def receive_snapshot(self, snapshot_id: SnapshotId) -> IncomingSnapshot | None:
        """Start writing a snapshot the leader sends in chunks (`snapshot_transfer`); None if the
        log holds it already (Kafka's `createNewSnapshotUnchecked`). Registered once complete."""
        self._check_open()
        if snapshot_id.end_offset < 0 or snapshot_id.epoch < 0:
            raise ValueError(f"invalid snapshot id {snapshot_id}")
        if any(s.snapshot_id == snapshot_id for s in self._catalog.snapshots()):
            return None
        return IncomingSnapshot(self._partition, snapshot_id, fsync=self._fsync, on_complete=self._snapshot_received)

    def _snapshot_received(self, snapshot_id: SnapshotId, path: Path, size: int) -> None:
        self._catalog.add_snapshot(SnapshotFile(snapshot_id, path, size))

    def truncate_to_latest_snapshot(self) -> bool:
        """Kafka's `truncateToLatestSnapshot`: restart the log empty at the newest snapshot's end if
        that snapshot supersedes it (see the module's rules); whether it did."""
        self._check_open()
        snapshots = self._catalog.snapshots()
        if not snapshots:
            return False
        latest = snapshots[-1].snapshot_id
        if not snapshot_supersedes_log(latest, self._catalog.next_offset, self._catalog.latest_batch_epoch()):
            return False
        self._tail.clear()
        segment = self._new_segment(latest.end_offset)
        removed, older = self._catalog.restart_at(latest, segment)
        try:
            with self._segment_deletion:  # retention must not delete a name this restart reuses
                for old in removed:
                    self._unlink_durably(old.path)
                self._replace_fd(os.open(segment.path, _APPEND_FLAGS, 0o644))
                if self._fsync:
                    fsync_directory(self._partition)
        except OSError as exc:
            self._truncation_failed(exc)
        self._delete_quietly([snapshot.path for snapshot in older])
        return True

    def _replace_fd(self, fd: int) -> None:
        """Append to `fd` from now on; never None meanwhile (the other threads check it)."""
        old, self._fd = self._fd, fd
        if old is not None:
            os.close(old)

    def _unlink_durably(self, path: Path) -> None:
        path.unlink(missing_ok=True)
        if self._fsync:
            fsync_directory(self._partition)

    def _delete_quietly(self, paths: list[Path]) -> None:
        """Best effort: a snapshot below the log start that stays is only retained a while longer."""
        try:
            for path in paths:
                path.unlink(missing_ok=True)
            if paths and self._fsync:
                fsync_directory(self._partition)
        except OSError:
            pass

    def _truncation_failed(self, exc: OSError) -> NoReturn:
        self._failure = f"{type(exc).__name__}: {exc}"
        raise LogError(f"cannot truncate the log of {self._partition}: {self._failure}") from exc
