"""Which epoch wrote which offsets: Kafka's `LeaderEpochFileCache`, kept in memory, and the Raft
questions a follower's fetch puts to it (`KafkaMetadataLog.endOffsetForEpoch`,
`ReplicatedLog.validateOffsetAndEpoch`, `KafkaMetadataLog.truncateToLatestSnapshot`).

Rules:
- The cache holds one entry per epoch of the log's batches: (epoch, offset of its first batch),
  both ascending. It is built from the batches (the recovery scan at open, then every append)
  and never from snapshots: a snapshot's epoch enters the answers (`end_offset_for_epoch`,
  `last_fetched_epoch`) as Kafka's `KafkaMetadataLog` adds it, not as an entry.
- Truncating the end (`truncate_from_end`) drops the entries starting at or above the cut;
  deleting segments from the front (`truncate_from_start`) moves the first entry kept up to the
  new log start, as Kafka does: so the cache is always the one a reopen would build.
- `end_offset_for` is `LeaderEpochFileCache.endOffsetFor`: the largest epoch at or below the
  one asked and the start of the next epoch, or the log end for the latest epoch; for an epoch
  below the first known one, that epoch and the first entry's start; None (Kafka's
  UNDEFINED_EPOCH_OFFSET) for -1, an empty cache or an epoch above the latest.
- `validate_offset_and_epoch` is Kafka's check of a follower's fetch, for a log that may start
  below its oldest snapshot (fencer's retention deletes whole segments): see its docstring.
- `snapshot_supersedes_log` is Kafka's `truncateToLatestSnapshot` condition, widened to what
  fencer's recovery always did: a snapshot past the log's end restarts it whatever its epoch.
- Pure and not thread-safe: `LogCatalog` holds its lock around every call.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from enum import Enum
from typing import NamedTuple

from .model import OffsetOutOfRangeError, SnapshotId

#: Kafka's UNDEFINED_EPOCH: a fetch from a replica that has never fetched.
UNDEFINED_EPOCH = -1


class EpochEnd(NamedTuple):
    """Kafka's answer for an epoch: the epoch found (at or below the one asked) and where it ends."""

    epoch: int
    end_offset: int


class EpochCache:
    """(epoch, start offset) of each epoch of the log's batches (see the module's rules)."""

    __slots__ = ("_epochs", "_starts")

    def __init__(self) -> None:
        self._epochs: list[int] = []
        self._starts: list[int] = []

    @property
    def latest_epoch(self) -> int | None:
        """The epoch of the log's last batch; None for a log without batches."""
        return self._epochs[-1] if self._epochs else None

    def entries(self) -> list[tuple[int, int]]:
        """(epoch, start offset) per epoch, ascending."""
        return list(zip(self._epochs, self._starts, strict=True))

    def assign(self, epoch: int, start_offset: int) -> None:
        """A batch of `epoch` at `start_offset` was appended; an entry if it opens a new epoch."""
        if not self._epochs or epoch != self._epochs[-1]:
            if self._epochs and (epoch < self._epochs[-1] or start_offset <= self._starts[-1]):
                raise ValueError(f"epoch {epoch} at {start_offset} does not follow {self.entries()[-1]}")
            self._epochs.append(epoch)
            self._starts.append(start_offset)

    def truncate_from_end(self, end_offset: int) -> None:
        """The log now ends at `end_offset`: forget the epochs starting at or above it."""
        keep = bisect.bisect_left(self._starts, end_offset)
        del self._epochs[keep:], self._starts[keep:]

    def truncate_from_start(self, start_offset: int) -> None:
        """The log now starts at `start_offset`: the epoch holding it starts there."""
        first = bisect.bisect_right(self._starts, start_offset) - 1
        if first >= 0:
            del self._epochs[:first], self._starts[:first]
            self._starts[0] = start_offset

    def clear(self) -> None:
        self._epochs.clear()
        self._starts.clear()

    def epoch_for_offset(self, offset: int) -> int | None:
        """The epoch of the batch holding `offset` (the caller knows it is in the log); None before the first."""
        index = bisect.bisect_right(self._starts, offset) - 1
        return self._epochs[index] if index >= 0 else None

    def end_offset_for(self, epoch: int, log_end_offset: int) -> EpochEnd | None:
        """`LeaderEpochFileCache.endOffsetFor` (see the module's rules)."""
        if epoch == UNDEFINED_EPOCH or not self._epochs:
            return None
        if epoch == self._epochs[-1]:
            return EpochEnd(epoch, log_end_offset)
        higher = bisect.bisect_right(self._epochs, epoch)
        if higher == len(self._epochs):
            return None
        if higher == 0:  # below every epoch the log still holds: the data before is gone
            return EpochEnd(epoch, self._starts[0])
        return EpochEnd(self._epochs[higher - 1], self._starts[higher])


def end_offset_for_epoch(
    cache: EpochCache, epoch: int, log_end_offset: int, earliest: SnapshotId | None, latest: SnapshotId | None
) -> EpochEnd:
    """`KafkaMetadataLog.endOffsetForEpoch`: the cache's answer, but the oldest snapshot's id when
    the cache places the epoch asked exactly at that snapshot's end (the epoch is older than the
    log: the snapshot is the best answer); without an answer, the log end and last epoch."""
    found = cache.end_offset_for(epoch, log_end_offset)
    if found is None:
        return EpochEnd(last_fetched_epoch(cache, latest), log_end_offset)
    if earliest is not None and found == (epoch, earliest.end_offset):
        return EpochEnd(earliest.epoch, earliest.end_offset)
    return found


def last_fetched_epoch(cache: EpochCache, latest: SnapshotId | None) -> int:
    """`KafkaMetadataLog.lastFetchedEpoch`: the epoch of the last batch, or of the latest snapshot
    when the log holds no batch, or 0 (Raft's primordial epoch) for an empty log."""
    if cache.latest_epoch is not None:
        return cache.latest_epoch
    return latest.epoch if latest is not None else 0


class FetchCheck(Enum):
    """`ValidOffsetAndEpoch.Kind`: what a leader answers a follower's (fetch offset, last epoch)."""

    VALID = "valid"
    DIVERGING = "diverging"
    SNAPSHOT = "snapshot"


class ValidatedFetch(NamedTuple):
    """The verdict and its (epoch, end offset): the fetch's own for VALID, the diverging epoch's
    end for DIVERGING, the latest snapshot's id for SNAPSHOT."""

    kind: FetchCheck
    epoch: int
    end_offset: int


def validate_offset_and_epoch(
    cache: EpochCache, offset: int, epoch: int, log_start: int, log_end: int, snapshots: Sequence[SnapshotId]
) -> ValidatedFetch:
    """`ReplicatedLog.validateOffsetAndEpoch` for a log whose start may lie below its oldest snapshot.

    Kafka's log starts exactly at its oldest snapshot's end; fencer's starts at its first
    segment, at or below it (retention deletes whole segments). Offsets from the log start up to
    that snapshot are served from the log, so Kafka's "the oldest snapshot" reads "the log start":
    a fetch below it gets the latest snapshot, as does one at it whose epoch nothing confirms
    (no snapshot ends there with that epoch) and one whose epoch is below the oldest snapshot's."""
    if offset == 0 and log_start == 0:
        return ValidatedFetch(FetchCheck.VALID, 0, 0)
    kept = [snapshot for snapshot in snapshots if snapshot.end_offset >= log_start]
    if kept:
        at_start = SnapshotId(log_start, epoch) in kept
        if offset < log_start or (offset == log_start and not at_start) or epoch < kept[0].epoch:
            return ValidatedFetch(FetchCheck.SNAPSHOT, kept[-1].epoch, kept[-1].end_offset)
    elif offset < log_start:  # recovery refuses such a log (no snapshot covers its start)
        raise OffsetOutOfRangeError(offset, log_start, log_end)
    found = end_offset_for_epoch(cache, epoch, log_end, kept[0] if kept else None, kept[-1] if kept else None)
    if found.epoch != epoch or found.end_offset < offset:
        return ValidatedFetch(FetchCheck.DIVERGING, found.epoch, found.end_offset)
    return ValidatedFetch(FetchCheck.VALID, epoch, offset)


def snapshot_supersedes_log(snapshot: SnapshotId, log_end_offset: int, last_batch_epoch: int | None) -> bool:
    """Whether the log must restart at `snapshot`'s end (`KafkaMetadataLog.truncateToLatestSnapshot`):
    the snapshot ends past the log, or it is of a later epoch than the log's last batch (the log
    diverged from the leader that sent it). A log without batches only restarts for the former."""
    if snapshot.end_offset > log_end_offset:
        return True
    return last_batch_epoch is not None and snapshot.epoch > last_batch_epoch
