"""What an open metadata log holds, in memory: its segments (with their sizes and sparse offset
indexes) and snapshots, where it continues, its epochs (`EpochCache`), and the bytes appended
since the newest snapshot.

`MetadataLog` does the file work; this is the bookkeeping the threads share: one appending
(which rolls segments, and on a follower truncates the log or restarts it at a snapshot), one
snapshotting (which registers snapshots and deletes old files), any number reading raw batches.

Rules:
- One lock guards everything here; each method holds it only for its own reads and updates,
  and nothing here does I/O, so the lock is never held across a write, an fsync or a deletion.
- The appending thread is the only one that grows the active segment or adds segments, and
  only at the end; the snapshotting thread is the only one that removes segments, and only
  from the front, never the active one. So neither invalidates what the other is working on.
  A truncation (`truncate`, `restart_at`) is the appending thread's too: it takes segments off
  the end, or all of them, in one update, before touching a file; the snapshotting thread
  deletes a segment only while it is still registered (`MetadataLog` checks under its own
  deletion lock), and `forget_*` tolerate a file another path already let go.
- An append is registered once durable, whole (`appended`): segment sizes, index entries,
  epochs, the end offset move together, so a reader never sees a batch past the end.
- Every truncation bumps `generation`; a read planned before it and finished after is retried.
- A file is forgotten only after it was deleted (retention) or before its deletion starts (a
  truncation: the log must stop showing it first), and registered only once complete.
"""

from __future__ import annotations

import bisect
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

from protocol.records.batch import read_leader_epoch

from .appended import AppendedBytes
from .epochs import EpochCache, EpochEnd, ValidatedFetch, end_offset_for_epoch, validate_offset_and_epoch
from .epochs import last_fetched_epoch as last_epoch_of
from .model import LogSizes, OffsetOutOfRangeError, SnapshotId
from .offset_index import OffsetIndex
from .retention import snapshots_to_delete


@dataclass(slots=True)
class Segment:
    base_offset: int
    path: Path
    size: int  # grows only for the active segment, under the lock
    index: OffsetIndex


class SnapshotFile(NamedTuple):
    snapshot_id: SnapshotId
    path: Path
    size: int


class SegmentWrite(NamedTuple):
    """What one write added to a segment: its bytes, and (base offset, position) of each batch."""

    segment: Segment
    size: int
    batches: list[tuple[int, int]]


class ReadPlan(NamedTuple):
    """Where a read of raw batches starts: the segment (None at the log end), a batch position at
    or before the offset, the segment's size, and the log as it was then."""

    path: Path | None
    position: int
    end: int
    generation: int
    log_start_offset: int
    log_end_offset: int


class LogCatalog:
    """The shared state of an open log (see the module's rules)."""

    def __init__(
        self,
        segments: list[Segment],
        snapshots: list[SnapshotFile],
        next_offset: int,
        last_epoch: int,
        appended: AppendedBytes,
        epochs: EpochCache,
    ) -> None:
        assert segments, "a log always has an active segment"
        self._lock = threading.Lock()
        self._segments = segments
        self._snapshots = sorted(snapshots)
        self._appended = appended
        self._epochs = epochs
        self._snapshots_in_progress: list[int] = []  # end offsets of snapshots being written
        self.active = segments[-1]  # read without the lock by the appending thread only
        self.next_offset = next_offset  # written under the lock; a single read needs none
        self.last_epoch = last_epoch
        self.generation = 0  # bumped by every truncation, under the lock

    # ------------------------------------------------------------------ the appending thread
    def add_segment(self, segment: Segment) -> None:
        """A roll: `segment` becomes the active one (empty: nothing in it is read before `appended`)."""
        with self._lock:
            self._segments.append(segment)
            self.active = segment

    def appended(
        self, writes: Sequence[SegmentWrite], batches: Sequence[tuple[int, bytes]], next_offset: int, epoch: int | None
    ) -> None:
        """Durable batches (base offset, bytes), written as `writes` says: count and index them,
        record their epochs and move the log's end (and its epoch)."""
        with self._lock:
            for write in writes:
                for base_offset, position in write.batches:
                    write.segment.index.add(base_offset, position)
                write.segment.size += write.size
            for base_offset, batch in batches:
                self._appended.add(base_offset, len(batch))
                self._epochs.assign(read_leader_epoch(batch), base_offset)
            self.next_offset = next_offset
            if epoch is not None:
                self.last_epoch = max(self.last_epoch, epoch)

    def truncate(self, offset: int, position: int) -> list[Segment]:
        """The log now ends at `offset`, at byte `position` of the segment holding it: that one
        becomes the active segment; returns the later ones, forgotten. `ValueError` below a
        snapshot's end offset, written or being written: what a snapshot holds is committed."""
        with self._lock:
            self._check_truncation(offset)
            keep = bisect.bisect_right(self._segments, offset, key=_base_offset)
            removed = self._segments[keep:]
            del self._segments[keep:]
            self.active = self._segments[-1]
            self.active.size = position
            self.active.index.truncate(offset)
            self._epochs.truncate_from_end(offset)
            self._appended.truncate(offset)
            self._moved(offset)
            return removed

    def check_truncation(self, offset: int) -> None:
        """`ValueError` if the log may not be truncated to `offset` (see `truncate`)."""
        with self._lock:
            self._check_truncation(offset)

    def _check_truncation(self, offset: int) -> None:
        start = self._segments[0].base_offset
        if offset < start:
            raise ValueError(f"cannot truncate to {offset}: the log starts at {start}")
        floor = max([0, *self._snapshots_in_progress])
        if self._snapshots:
            floor = max(floor, self._snapshots[-1].snapshot_id.end_offset)
        if offset < floor:
            raise ValueError(f"cannot truncate to {offset}: offsets below {floor} are in a snapshot")

    def restart_at(self, snapshot_id: SnapshotId, segment: Segment) -> tuple[list[Segment], list[SnapshotFile]]:
        """The log now starts and ends at `snapshot_id`'s end, in the empty `segment`; returns the
        segments and the older snapshots it forgot (Kafka's `truncateToLatestSnapshot`)."""
        with self._lock:
            removed, self._segments = self._segments, [segment]
            self.active = segment
            older = [s for s in self._snapshots if s.snapshot_id < snapshot_id]
            self._snapshots = [s for s in self._snapshots if s.snapshot_id >= snapshot_id]
            self._epochs.clear()
            self._appended = AppendedBytes()
            self._moved(snapshot_id.end_offset)
            return removed, older

    def _moved(self, next_offset: int) -> None:
        self.next_offset = next_offset
        self.last_epoch = max([self._epochs.latest_epoch or 0, *(s.snapshot_id.epoch for s in self._snapshots)])
        self.generation += 1

    # ------------------------------------------------------------------ the snapshotting thread
    def snapshot_started(self, end_offset: int) -> None:
        """A snapshot ending at `end_offset` is being written: no truncation below it meanwhile."""
        with self._lock:
            if not 0 <= end_offset <= self.next_offset:
                raise ValueError(f"snapshot end offset {end_offset} is outside 0..{self.next_offset}")
            self._snapshots_in_progress.append(end_offset)

    def snapshot_ended(self, end_offset: int) -> None:
        with self._lock:
            self._snapshots_in_progress.remove(end_offset)

    def add_snapshot(self, snapshot: SnapshotFile) -> None:
        """A complete snapshot file (replacing one of the same id); the newest starts a new count."""
        with self._lock:
            self._snapshots = [s for s in self._snapshots if s.snapshot_id != snapshot.snapshot_id]
            bisect.insort(self._snapshots, snapshot)
            if self._snapshots[-1].snapshot_id == snapshot.snapshot_id:
                self._appended.forget_below(snapshot.snapshot_id.end_offset)
            self.last_epoch = max(self.last_epoch, snapshot.snapshot_id.epoch)

    def retention_victims(self, max_bytes: int) -> list[SnapshotFile]:
        """The oldest snapshots that retention deletes (`retention.snapshots_to_delete`)."""
        with self._lock:
            snapshot_sizes = [(s.snapshot_id.end_offset, s.size) for s in self._snapshots]
            segment_sizes = [(segment.base_offset, segment.size) for segment in self._segments]
            return self._snapshots[: snapshots_to_delete(snapshot_sizes, segment_sizes, max_bytes)]

    def forget_snapshot(self, snapshot: SnapshotFile) -> None:
        with self._lock:
            if snapshot in self._snapshots:
                self._snapshots.remove(snapshot)

    def oldest_segment_below(self, offset: int) -> Segment | None:
        """The first segment if every record of it is below `offset` and it is not the active one."""
        with self._lock:
            if len(self._segments) < 2 or self._segments[1].base_offset > offset:
                return None
            return self._segments[0]

    def holds(self, segment: Segment) -> bool:
        """Whether `segment` is still one of the log's (a truncation may have forgotten it)."""
        with self._lock:
            return self._holds(segment)

    def forget_segment(self, segment: Segment) -> None:
        """A deleted first segment: the log starts at the next one (the epochs too)."""
        with self._lock:
            if self._holds(segment) and segment is not self.active:
                self._segments.remove(segment)
                self._epochs.truncate_from_start(self._segments[0].base_offset)
                # no batch left at all (the active segment is empty): an epoch no batch holds
                # is one a reopen would not find
                self._epochs.truncate_from_end(self.next_offset)

    def _holds(self, segment: Segment) -> bool:
        return any(held is segment for held in self._segments)

    # ------------------------------------------------------------------ any thread
    def snapshots(self) -> list[SnapshotFile]:
        with self._lock:
            return list(self._snapshots)

    def segments(self) -> list[tuple[int, Path]]:
        with self._lock:
            return [(segment.base_offset, segment.path) for segment in self._segments]

    def plan_read(self, offset: int) -> ReadPlan:
        """Where the batch holding `offset` is to be looked for; `OffsetOutOfRangeError` outside the log."""
        with self._lock:
            start, end = self._segments[0].base_offset, self.next_offset
            if not start <= offset <= end:
                raise OffsetOutOfRangeError(offset, start, end)
            if offset == end:
                return ReadPlan(None, 0, 0, self.generation, start, end)
            segment = self._segments[bisect.bisect_right(self._segments, offset, key=_base_offset) - 1]
            _, position = segment.index.floor(offset)
            return ReadPlan(segment.path, position, segment.size, self.generation, start, end)

    def epochs(self) -> list[tuple[int, int]]:
        """The epoch cache's entries: (epoch, start offset) per epoch of the log's batches."""
        with self._lock:
            return self._epochs.entries()

    def latest_batch_epoch(self) -> int | None:
        with self._lock:
            return self._epochs.latest_epoch

    def last_fetched_epoch(self) -> int:
        with self._lock:
            return last_epoch_of(self._epochs, self._latest_snapshot_id())

    def end_offset_for_epoch(self, epoch: int) -> EpochEnd:
        with self._lock:
            kept = self._snapshots_from_start()
            earliest = kept[0] if kept else None
            return end_offset_for_epoch(self._epochs, epoch, self.next_offset, earliest, self._latest_snapshot_id())

    def epoch_for_offset(self, offset: int) -> int | None:
        with self._lock:
            if not self._segments[0].base_offset <= offset < self.next_offset:
                return None
            return self._epochs.epoch_for_offset(offset)

    def validate_offset_and_epoch(self, offset: int, epoch: int) -> ValidatedFetch:
        with self._lock:
            start = self._segments[0].base_offset
            snapshot_ids = [s.snapshot_id for s in self._snapshots]
            return validate_offset_and_epoch(self._epochs, offset, epoch, start, self.next_offset, snapshot_ids)

    def _latest_snapshot_id(self) -> SnapshotId | None:
        return self._snapshots[-1].snapshot_id if self._snapshots else None

    def _snapshots_from_start(self) -> list[SnapshotId]:
        start = self._segments[0].base_offset
        return [s.snapshot_id for s in self._snapshots if s.snapshot_id.end_offset >= start]

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


def _base_offset(segment: Segment) -> int:
    return segment.base_offset
