"""Snapshots and retention as `MetadataLog` methods: write and load snapshots, delete old files.

Rules:
- Snapshots and retention follow Kafka's metadata log: a snapshot deletes nothing by itself;
  `apply_retention` deletes the oldest snapshots, and the segments wholly below the oldest
  snapshot kept, once the segments and snapshots together pass a size (`retention`).
- A snapshot or retention that fails on an OSError is a `SnapshotWriteError`, never a
  `LogError`: a failed snapshot leaves nothing behind and no counter changed, a failed deletion
  leaves the files it had not reached; appends go on either way.
- `write_snapshot`, `write_encoded_snapshot`, `apply_retention` and `delete_segments_below` are
  the snapshotting thread's (`store`'s rules), beside the appending thread: what they change is
  in the `LogCatalog`, whose lock is held only to read or update it, never across a file's
  writing or deletion. A snapshot being written is registered with the catalog until it ends,
  so that no truncation goes below its end offset meanwhile.
- A segment is deleted under `_segment_deletion`, and only if the catalog still holds it: a
  follower's restart at a snapshot (`replication`) may have forgotten it and created a file of
  the same name.
- `load_latest_snapshot` (and `replay_latest_snapshot`, which streams the records) skips a
  snapshot that does not validate (noting it in `recovery`) and falls back to an older one; a
  newest valid one that ends below the log start, or none valid once segments were deleted, is
  a gap: a `LogError`.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from protocol.spec import Data

from .catalog import LogCatalog, SnapshotFile
from .model import LogError, RecoveryReport, SnapshotId, SnapshotWriteError
from .recovery import gap_message
from .retention import delete_file, sync_deletions
from .snapshots import (
    SnapshotError,
    encode_snapshot,
    read_snapshot_file,
    snapshot_batches,
    snapshot_name,
    write_snapshot_file,
)


class SnapshotMethods:
    """The snapshotting side of `MetadataLog` (see the module's rules); `MetadataLog` supplies the rest."""

    if TYPE_CHECKING:
        recovery: RecoveryReport
        _catalog: LogCatalog
        _partition: Path
        _fsync: bool
        _segment_deletion: threading.Lock

        def _check_open(self) -> None: ...
        @property
        def log_start_offset(self) -> int: ...

    # ------------------------------------------------------------------------ snapshots
    def snapshots(self) -> list[SnapshotId]:
        """The log's snapshots (validly named files at open, then those written), ascending."""
        return [snapshot.snapshot_id for snapshot in self._catalog.snapshots()]

    def write_snapshot(
        self, end_offset: int, epoch: int, records: Iterable[tuple[Data, int]], timestamp_ms: int
    ) -> Path:
        """Write the state below `end_offset` as a snapshot, atomically; return its path.

        Deletes nothing: `apply_retention` decides when older files go. Appends may go on in
        another thread meanwhile. An OSError is a `SnapshotWriteError`, after which nothing
        of the attempt is left and the log is as it was."""
        return self.write_encoded_snapshot(end_offset, epoch, encode_snapshot(epoch, records, timestamp_ms))

    def write_encoded_snapshot(self, end_offset: int, epoch: int, chunks: Iterable[bytes]) -> Path:
        """`write_snapshot` of batches already encoded (`snapshots.encode_snapshot`), so that a
        caller can encode on its own thread, in slices, and leave only the file I/O to a worker."""
        self._check_open()
        snapshot_id = SnapshotId(end_offset, epoch)
        self._catalog.snapshot_started(end_offset)  # checks it; no truncation below it meanwhile
        try:
            last_epoch = self._catalog.last_epoch
            if not 0 <= epoch <= last_epoch:
                raise ValueError(f"snapshot epoch {epoch} is outside 0..{last_epoch}")
            try:
                path, size = write_snapshot_file(self._partition, snapshot_id, chunks, fsync=self._fsync)
            except OSError as exc:
                where = self._partition / snapshot_name(snapshot_id)
                raise SnapshotWriteError(f"cannot write snapshot {where}: {exc}") from exc
            self._catalog.add_snapshot(SnapshotFile(snapshot_id, path, size))
        finally:
            self._catalog.snapshot_ended(end_offset)
        return path

    def load_latest_snapshot(self) -> tuple[SnapshotId, list[tuple[Data, int]]] | None:
        """The newest snapshot that validates completely and its records; None if there is none."""
        found: list[tuple[SnapshotId, list[tuple[Data, int]]]] = []

        def start(snapshot_id: SnapshotId) -> Callable[[list[tuple[Data, int]]], None]:
            found[:] = [(snapshot_id, [])]
            return found[0][1].extend

        return found[0] if self.replay_latest_snapshot(start) is not None else None

    def replay_latest_snapshot(
        self, start: Callable[[SnapshotId], Callable[[list[tuple[Data, int]]], None]]
    ) -> SnapshotId | None:
        """Feed the newest snapshot that validates completely, a batch of records at a time as it
        is read, to the consumer that `start(its id)` returns: no list of every record is built (a
        million partitions' would take a gigabyte at once). A snapshot found invalid part-way is
        skipped and the next older one started afresh (`start` again: its consumer begins anew).
        The id of the one fed; None if there is none."""
        for snapshot_id, path, _ in reversed(self._catalog.snapshots()):
            try:
                if snapshot_id.end_offset < self.log_start_offset:  # as is every older one: a gap if it is valid
                    read_snapshot_file(path)
                    why = f"the newest valid snapshot, {path.name}, ends at {snapshot_id.end_offset}"
                    raise LogError(gap_message(self._partition, self.log_start_offset, why))
                consume = start(snapshot_id)
                for batch in snapshot_batches(path):
                    consume(batch)
            except (SnapshotError, OSError) as exc:
                self.recovery.messages.append(f"skipped invalid snapshot {path}: {exc}")
                continue
            return snapshot_id
        if self.log_start_offset > 0:
            raise LogError(gap_message(self._partition, self.log_start_offset, "no valid snapshot exists"))
        return None

    # ------------------------------------------------------------------------ retention
    def apply_retention(self, max_bytes: int) -> list[Path]:
        """Kafka's size retention: while `total_bytes` passes `max_bytes` and more than one
        snapshot is left, delete the oldest snapshot, then every segment wholly below the oldest
        snapshot kept. Returns the deleted files, oldest first; the directory is fsync'd after.

        Until retention needs the space, segments stay (as in Kafka, where a snapshot alone
        deletes nothing). The newest snapshot and the active segment are never deleted. An
        OSError is a `SnapshotWriteError`; what was deleted before it stays deleted, and every
        snapshot left still covers the start of the log."""
        if max_bytes < 0:
            raise ValueError(f"max_bytes must not be negative, not {max_bytes}")
        self._check_open()
        doomed = self._catalog.retention_victims(max_bytes)
        deleted: list[Path] = []
        for snapshot in doomed:  # snapshots first (see `retention`)
            delete_file(snapshot.path)
            self._catalog.forget_snapshot(snapshot)
            deleted.append(snapshot.path)
        if doomed:
            oldest_kept = self._catalog.snapshots()[0].snapshot_id.end_offset
            deleted += self._unlink_segments_below(oldest_kept)
        sync_deletions(self._partition, deleted, fsync=self._fsync)
        return deleted

    def delete_segments_below(self, offset: int) -> list[Path]:
        """Delete the segments whose every record is below `offset` (never the active one).

        Only offsets a snapshot covers may go: `offset` above every snapshot's end is a `ValueError`.
        """
        self._check_open()
        covered = max((snapshot_id.end_offset for snapshot_id in self.snapshots()), default=0)
        if offset > covered:
            raise ValueError(f"no snapshot covers the offsets below {offset} (the newest ends at {covered})")
        deleted = self._unlink_segments_below(offset)
        sync_deletions(self._partition, deleted, fsync=self._fsync)
        return deleted

    def _unlink_segments_below(self, offset: int) -> list[Path]:
        deleted: list[Path] = []
        while (oldest := self._catalog.oldest_segment_below(offset)) is not None:
            with self._segment_deletion:  # a follower's restart may reuse the name (see `replication`)
                if not self._catalog.holds(oldest):
                    continue
                delete_file(oldest.path)
                self._catalog.forget_segment(oldest)
            deleted.append(oldest.path)
        return deleted
