"""What an open metadata log holds, in memory: its segments and snapshots with their sizes,
where it continues, its epoch, and the bytes appended since the newest snapshot.

`MetadataLog` does the file work; this is the bookkeeping two threads share, one appending
(which rolls segments), one snapshotting (which registers snapshots and deletes old files).

Rules:
- One lock guards everything here; each method holds it only for its own reads and updates,
  and nothing here does I/O, so the lock is never held across a write, an fsync or a deletion.
- The appending thread is the only one that grows the active segment or adds segments, and
  only at the end; the snapshotting thread is the only one that removes segments, and only
  from the front, never the active one. So neither invalidates what the other is working on.
- A file is forgotten only after it was deleted, and registered only once complete.
"""

from __future__ import annotations

import bisect
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

from .appended import AppendedBytes
from .model import LogSizes, SnapshotId
from .retention import snapshots_to_delete


@dataclass(slots=True)
class Segment:
    base_offset: int
    path: Path
    size: int  # grows only for the active segment, under the lock


class SnapshotFile(NamedTuple):
    snapshot_id: SnapshotId
    path: Path
    size: int


class LogCatalog:
    """The shared state of an open log (see the module's rules)."""

    def __init__(
        self,
        segments: list[Segment],
        snapshots: list[SnapshotFile],
        next_offset: int,
        last_epoch: int,
        appended: AppendedBytes,
    ) -> None:
        assert segments, "a log always has an active segment"
        self._lock = threading.Lock()
        self._segments = segments
        self._snapshots = sorted(snapshots)
        self._appended = appended
        self.active = segments[-1]  # read without the lock by the appending thread only
        self.next_offset = next_offset  # written under the lock; a single read needs none
        self.last_epoch = last_epoch

    # ------------------------------------------------------------------ the appending thread
    def add_segment(self, segment: Segment) -> None:
        """A roll: `segment` becomes the active one."""
        with self._lock:
            self._segments.append(segment)
            self.active = segment

    def grow_active(self, size: int) -> None:
        with self._lock:
            self.active.size += size

    def appended(self, batches: Sequence[tuple[int, bytes]], next_offset: int, epoch: int | None) -> None:
        """Durable batches (base offset, bytes): count them and move the log's end (and epoch)."""
        with self._lock:
            for base_offset, batch in batches:
                self._appended.add(base_offset, len(batch))
            self.next_offset = next_offset
            if epoch is not None:
                self.last_epoch = epoch

    # ------------------------------------------------------------------ the snapshotting thread
    def add_snapshot(self, snapshot: SnapshotFile) -> None:
        """A complete snapshot file (replacing one of the same id); the newest starts a new count."""
        with self._lock:
            self._snapshots = [s for s in self._snapshots if s.snapshot_id != snapshot.snapshot_id]
            bisect.insort(self._snapshots, snapshot)
            if self._snapshots[-1].snapshot_id == snapshot.snapshot_id:
                self._appended.forget_below(snapshot.snapshot_id.end_offset)

    def retention_victims(self, max_bytes: int) -> list[SnapshotFile]:
        """The oldest snapshots that retention deletes (`retention.snapshots_to_delete`)."""
        with self._lock:
            snapshot_sizes = [(s.snapshot_id.end_offset, s.size) for s in self._snapshots]
            segment_sizes = [(segment.base_offset, segment.size) for segment in self._segments]
            return self._snapshots[: snapshots_to_delete(snapshot_sizes, segment_sizes, max_bytes)]

    def forget_snapshot(self, snapshot: SnapshotFile) -> None:
        with self._lock:
            self._snapshots.remove(snapshot)

    def oldest_segment_below(self, offset: int) -> Segment | None:
        """The first segment if every record of it is below `offset` and it is not the active one."""
        with self._lock:
            if len(self._segments) < 2 or self._segments[1].base_offset > offset:
                return None
            return self._segments[0]

    def forget_segment(self, segment: Segment) -> None:
        with self._lock:
            self._segments.remove(segment)

    # ------------------------------------------------------------------ either thread
    def snapshots(self) -> list[SnapshotFile]:
        with self._lock:
            return list(self._snapshots)

    def segments(self) -> list[tuple[int, Path]]:
        with self._lock:
            return [(segment.base_offset, segment.path) for segment in self._segments]

    @property
    def log_start_offset(self) -> int:
        with self._lock:
            return self._segments[0].base_offset

    @property
    def bytes_since_snapshot(self) -> int:
        with self._lock:
            return self._appended.since(self._snapshots[-1].snapshot_id.end_offset if self._snapshots else 0)

    @property
    def total_bytes(self) -> int:
        return sum(self.sizes())

    def sizes(self) -> LogSizes:
        with self._lock:
            return LogSizes(sum(segment.size for segment in self._segments), sum(s.size for s in self._snapshots))
