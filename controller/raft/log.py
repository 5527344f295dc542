"""The local log as the Raft core sees it: where it starts and ends, how far it is flushed, and
its epoch cache (Kafka's `LeaderEpochFileCache`: the offset at which each epoch starts).

Rules:
- `LogView` is a value: every change (`appended`, `truncated`, `flushed`, `snapshot_installed`,
  `snapshot_created`) returns a new one. The core changes its view with the same action it asks
  the shell to take, so the two agree as long as the shell executes the actions in order.
- The log holds offsets `start_offset`..`end_offset - 1`; below `start_offset` is the snapshot
  `snapshot` (end offset = `start_offset`, epoch = that of its last batch), if any.
  `flushed_end_offset` never passes `end_offset`.
- `last_epoch` is Kafka's `lastFetchedEpoch`: the epoch of the last batch, else the snapshot's,
  else 0.
- `end_offset_for_epoch` is Kafka's `KafkaMetadataLog.endOffsetForEpoch` over
  `LeaderEpochFileCache.endOffsetFor`: for the log's last epoch, the log end; for an earlier
  epoch, the start of the next larger epoch in the log and the largest epoch up to the one asked
  (so the answer's epoch may be smaller); for an epoch before the snapshot, the snapshot id;
  for an epoch larger than any, the log end and the last epoch.
- `check_fetch` is `ReplicatedLog.validateOffsetAndEpoch` (a leader answering a Fetch):
  the snapshot when the fetch offset is below the log start (or at it with another epoch, or
  an empty fetcher while a snapshot exists), a diverging epoch when the fetcher's last epoch is
  not the leader's or ends before the fetch offset, else valid.
- `truncation_offset` is `ReplicatedLog.truncateToEndOffset` (a follower told to diverge): the
  smaller of the leader's end of that epoch and the follower's own.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Literal

from .ids import Epoch, OffsetAndEpoch
from .messages import Batch


class LogViewError(ValueError):
    """A change that would break the log's shape (a gap, an epoch going back)."""


@dataclass(frozen=True, slots=True)
class EpochStart:
    epoch: Epoch
    start_offset: int


@dataclass(frozen=True, slots=True)
class FetchCheck:
    """A leader's verdict on a Fetch's (offset, last fetched epoch)."""

    kind: Literal["valid", "diverging", "snapshot"]
    offset_and_epoch: OffsetAndEpoch | None = None


VALID = FetchCheck("valid")


@dataclass(frozen=True, slots=True)
class LogView:
    start_offset: int = 0
    end_offset: int = 0
    flushed_end_offset: int = 0
    epochs: tuple[EpochStart, ...] = ()
    snapshot: OffsetAndEpoch | None = None

    def __post_init__(self) -> None:
        if not self.start_offset <= self.flushed_end_offset <= self.end_offset:
            raise LogViewError(f"log offsets out of order: {self}")
        if self.snapshot is not None and self.snapshot.offset != self.start_offset:
            raise LogViewError(f"the snapshot does not end at the log start: {self}")

    @classmethod
    def recovered(
        cls, end_offset: int, epochs: tuple[EpochStart, ...] = (), snapshot: OffsetAndEpoch | None = None
    ) -> LogView:
        """The log found at start-up: all of it is flushed."""
        start = snapshot.offset if snapshot is not None else 0
        return cls(start, end_offset, end_offset, epochs, snapshot)

    @property
    def last_epoch(self) -> Epoch:
        if self.epochs:
            return self.epochs[-1].epoch
        return self.snapshot.epoch if self.snapshot is not None else Epoch(0)

    @property
    def end(self) -> OffsetAndEpoch:
        return OffsetAndEpoch(self.end_offset, self.last_epoch)

    # ------------------------------------------------------------------ changes
    def appended(self, batches: tuple[Batch, ...]) -> LogView:
        epochs = list(self.epochs)
        end = self.end_offset
        for batch in batches:
            if batch.base_offset != end or batch.last_offset < batch.base_offset:
                raise LogViewError(f"batch {batch.base_offset}..{batch.last_offset} does not follow {end}")
            if batch.epoch < self.last_epoch or (epochs and batch.epoch < epochs[-1].epoch):
                raise LogViewError(f"batch of epoch {batch.epoch} after epoch {epochs[-1].epoch if epochs else -1}")
            if not epochs or epochs[-1].epoch < batch.epoch:
                epochs.append(EpochStart(batch.epoch, batch.base_offset))
            end = batch.end_offset
        return replace(self, end_offset=end, epochs=tuple(epochs))

    def truncated(self, end_offset: int) -> LogView:
        if end_offset >= self.end_offset:
            return self
        if end_offset < self.start_offset:
            raise LogViewError(f"truncation to {end_offset} below the log start {self.start_offset}")
        epochs = tuple(entry for entry in self.epochs if entry.start_offset < end_offset)
        return replace(
            self, end_offset=end_offset, flushed_end_offset=min(self.flushed_end_offset, end_offset), epochs=epochs
        )

    def flushed(self, end_offset: int) -> LogView:
        flushed = max(self.flushed_end_offset, min(end_offset, self.end_offset))
        return self if flushed == self.flushed_end_offset else replace(self, flushed_end_offset=flushed)

    def snapshot_installed(self, snapshot_id: OffsetAndEpoch) -> LogView:
        """The whole log replaced by a snapshot (a follower that fell behind the leader's start)."""
        return LogView(snapshot_id.offset, snapshot_id.offset, snapshot_id.offset, (), snapshot_id)

    def snapshot_created(self, snapshot_id: OffsetAndEpoch) -> LogView:
        """A snapshot of this log's prefix: the log now starts at its end (Kafka's log start
        offset moves when the segments below the latest snapshot are deleted)."""
        offset = snapshot_id.offset
        if not self.start_offset <= offset <= self.end_offset:
            raise LogViewError(f"snapshot {snapshot_id} outside the log {self.start_offset}..{self.end_offset}")
        if offset == self.start_offset:
            return self if self.snapshot is not None else replace(self, snapshot=snapshot_id)
        below = [entry for entry in self.epochs if entry.start_offset <= offset]
        above = [entry for entry in self.epochs if entry.start_offset > offset]
        if below and offset < self.end_offset:
            above.insert(0, EpochStart(below[-1].epoch, offset))
        return replace(
            self,
            start_offset=offset,
            flushed_end_offset=max(self.flushed_end_offset, offset),
            epochs=tuple(above),
            snapshot=snapshot_id,
        )

    # ------------------------------------------------------------------ questions
    def epoch_at(self, offset: int) -> Epoch | None:
        """The epoch of the batch holding `offset` (None outside the log)."""
        if not self.start_offset <= offset < self.end_offset:
            return None
        found = None
        for entry in self.epochs:
            if entry.start_offset > offset:
                break
            found = entry.epoch
        return found

    def end_offset_for_epoch(self, epoch: int) -> OffsetAndEpoch:
        found = self._cache_end_offset_for(epoch)
        snapshot = self.snapshot
        if found is not None and snapshot is not None and found.offset == snapshot.offset and found.epoch == epoch:
            return snapshot
        if found is not None:
            return found
        return self.end

    def _cache_end_offset_for(self, epoch: int) -> OffsetAndEpoch | None:
        if epoch < 0 or not self.epochs:
            return None
        if self.epochs[-1].epoch == epoch:
            return OffsetAndEpoch(self.end_offset, Epoch(epoch))
        higher = next((entry for entry in self.epochs if entry.epoch > epoch), None)
        if higher is None:
            return None
        floor = [entry for entry in self.epochs if entry.epoch <= epoch]
        return OffsetAndEpoch(higher.start_offset, floor[-1].epoch if floor else Epoch(epoch))

    def check_fetch(self, fetch_offset: int, last_fetched_epoch: int) -> FetchCheck:
        snapshot = self.snapshot
        if fetch_offset == 0 and snapshot is not None:
            return FetchCheck("snapshot", snapshot)
        if self.start_offset == 0 and fetch_offset == 0:
            return VALID
        if snapshot is not None and (
            fetch_offset < self.start_offset
            or (fetch_offset == self.start_offset and last_fetched_epoch != snapshot.epoch)
            or last_fetched_epoch < snapshot.epoch
        ):
            return FetchCheck("snapshot", snapshot)
        end = self.end_offset_for_epoch(last_fetched_epoch)
        if end.epoch != last_fetched_epoch or end.offset < fetch_offset:
            return FetchCheck("diverging", end)
        return VALID

    def truncation_offset(self, diverging: OffsetAndEpoch) -> int:
        if diverging.epoch == 0:
            return min(diverging.offset, self.end_offset)
        local = self.end_offset_for_epoch(diverging.epoch)
        if local.epoch == diverging.epoch:
            return min(local.offset, diverging.offset)
        return local.offset
