"""Start-up recovery of the segments: every batch validated, a torn tail cut, corruption refused.

`recover` reads every segment in order (`scan_heads` validates each batch's framing, header and
CRC-32C, as Kafka's recovery does with `ensureValid`, and leaves the records' own framing to the
CRC and to replay; `Continuity` checks base offsets and epochs, which the CRC does not cover) and
stops at the first fault, at byte P of some segment. Then:

- P is in the last segment and no valid batch exists anywhere after it (`count_valid_batches`
  tries every later position whose magic byte is 2): a torn write, the tail of a write that
  never finished. The file is cut at P (truncate + fsync) and the cut is reported.
- Otherwise valid data follows the fault, so it is corruption, not a torn write: `LogError`,
  unless `repair` is set; then the log is cut at P and every later segment deleted.

Rules:
- A segment left without any batch by a cut (P = 0) is deleted unless it is the first one, so
  that an empty file never carries a wrong name.
- After a cut the segments are scanned again from the start: the state (next offset, epoch,
  bytes since the snapshot) is always that of a log that validated completely, whatever the
  fault was. Each cut shrinks the log, so this ends.
- `appended` remembers the batches at or after `count_from` (the latest snapshot's end
  offset) and their bytes, for the controller's snapshot trigger.
- The same scan builds each segment's sparse offset index and the epoch cache (`offset_index`,
  `epochs`), so that opening reads every segment once.
- `recover_from_snapshots` adds the snapshots: the epoch is the highest of log and snapshots; a
  log the newest snapshot supersedes (`epochs.snapshot_supersedes_log`: it ends below the
  snapshot, or its last batch is of an older epoch: a follower that crashed after receiving a
  snapshot, before restarting its log there) restarts at the snapshot's end offset, as Kafka's
  `KafkaMetadataLog` does at open; its segments are deleted oldest first, each deletion made
  durable before the next, so a crash leaves a log this rule restarts again. A log whose first
  segment starts above 0 needs a snapshot reaching its start, else `LogError`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from .appended import AppendedBytes
from .epochs import EpochCache, snapshot_supersedes_log
from .model import LogError, RecoveryReport
from .offset_index import INDEX_INTERVAL_BYTES, OffsetIndex
from .segments import (
    BadBatch,
    Continuity,
    Fault,
    count_valid_batches,
    fsync_directory,
    list_segments,
    scan_heads,
    truncate_file,
)
from .snapshots import list_snapshots

_REPAIR_HINT = (
    "Restore from a replica/backup, or start with --repair-log to truncate the log at this point "
    "(losing every record from offset {offset})"
)


@dataclass(slots=True)
class RecoveredLog:
    """The state of a validated log: its segments, where it continues, what recovery did."""

    segments: list[tuple[int, Path]]
    next_offset: int
    last_epoch: int
    appended: AppendedBytes
    #: each segment's sparse offset index, and the epochs of the batches (built by the same scan)
    indexes: list[OffsetIndex] = field(default_factory=list)
    epochs: EpochCache = field(default_factory=EpochCache)
    truncated_bytes: int = 0
    truncated_file: Path | None = None
    first_lost_offset: int | None = None
    repaired: bool = False
    messages: list[str] = field(default_factory=list)

    def report(self) -> RecoveryReport:
        return RecoveryReport(
            self.truncated_bytes, self.truncated_file, self.first_lost_offset, self.repaired, self.messages
        )


@dataclass(frozen=True, slots=True)
class _Cut:
    truncated_bytes: int
    path: Path
    offset: int
    repaired: bool
    message: str


def recover(
    directory: Path,
    *,
    repair: bool,
    fsync: bool,
    count_from: int = 0,
    index_interval_bytes: int = INDEX_INTERVAL_BYTES,
) -> RecoveredLog:
    """Validate the segments of `directory`, cutting a torn tail (or, with `repair`, corruption)."""
    cuts: list[_Cut] = []
    while True:
        scanned = _scan(directory, count_from, index_interval_bytes)
        if isinstance(scanned, RecoveredLog):
            break
        index, fault = scanned
        cuts.append(_cut(list_segments(directory), index, fault, repair=repair, fsync=fsync))
    for cut in cuts:
        scanned.truncated_bytes += cut.truncated_bytes
        scanned.truncated_file = scanned.truncated_file or cut.path
        lost = scanned.first_lost_offset
        scanned.first_lost_offset = cut.offset if lost is None else min(lost, cut.offset)
        scanned.repaired = scanned.repaired or cut.repaired
        scanned.messages.append(cut.message)
    return scanned


def _scan(directory: Path, count_from: int, index_interval_bytes: int) -> RecoveredLog | tuple[int, Fault]:
    """The validated log, or the index of the segment holding the first fault and the fault."""
    segments = list_segments(directory)
    continuity = Continuity()
    appended = AppendedBytes()
    epochs = EpochCache()
    indexes: list[OffsetIndex] = []
    for index, (base_offset, path) in enumerate(segments):
        fault = continuity.start_segment(base_offset)
        if fault is not None:
            return index, fault
        indexes.append(offset_index := OffsetIndex(base_offset, index_interval_bytes))
        try:
            for scanned in scan_heads(path):
                batch = scanned.batch
                fault = continuity.check(scanned.position, batch)
                if fault is not None:
                    return index, fault
                if batch.base_offset >= count_from:
                    appended.add(batch.base_offset, scanned.size)
                epochs.assign(batch.partition_leader_epoch, batch.base_offset)
                offset_index.add(batch.base_offset, scanned.position)
        except BadBatch as bad:
            expected = continuity.next_offset if continuity.next_offset is not None else base_offset
            return index, Fault(bad.position, expected, bad.reason)
    next_offset = continuity.next_offset if continuity.next_offset is not None else 0
    return RecoveredLog(segments, next_offset, max(continuity.epoch or 0, 0), appended, indexes, epochs)


def _cut(segments: list[tuple[int, Path]], index: int, fault: Fault, *, repair: bool, fsync: bool) -> _Cut:
    """Cut the log at the fault, or raise `LogError` if it is corruption and `repair` is off."""
    path = segments[index][1]
    later = [later_path for _, later_path in segments[index + 1 :]]
    following = count_valid_batches(path, fault.position + 1) + sum(count_valid_batches(p, 0) for p in later)
    where = f"{path} at byte {fault.position} (offset {fault.offset}): {fault.reason}"
    torn = not later and following == 0
    if not torn and not repair:
        hint = _REPAIR_HINT.format(offset=fault.offset)
        raise LogError(
            f"corrupt metadata log: {where}; {following} valid batch(es) follow, so this is not a torn write. {hint}"
        )
    removed = _truncate_or_delete(path, fault.position, first=index == 0, fsync=fsync)
    for later_path in later:
        removed += later_path.stat().st_size
        later_path.unlink()
    if fsync and (later or not path.exists()):
        fsync_directory(path.parent)
    if torn:
        message = f"torn write: cut {removed} byte(s) at the end of {where}"
    else:
        message = (
            f"repaired: cut the log at {where}, losing {removed} byte(s) from offset {fault.offset}, "
            f"{following} valid batch(es) and {len(later)} later segment(s)"
        )
    return _Cut(removed, path, fault.offset, not torn, message)


def _truncate_or_delete(path: Path, position: int, *, first: bool, fsync: bool) -> int:
    """Cut `path` at `position` (deleting it if that empties a segment but the first); bytes removed."""
    size = path.stat().st_size
    if position == 0 and not first:
        path.unlink()
    else:
        truncate_file(path, position, fsync=fsync)
    return size - position


def recover_from_snapshots(
    partition: Path, *, repair: bool, fsync: bool, index_interval_bytes: int = INDEX_INTERVAL_BYTES
) -> RecoveredLog:
    """Recover the segments; if the newest snapshot supersedes the log, restart it from there."""
    snapshots = list_snapshots(partition)
    latest = snapshots[-1][0] if snapshots else None
    count_from = latest.end_offset if latest else 0
    recovered = recover(
        partition, repair=repair, fsync=fsync, count_from=count_from, index_interval_bytes=index_interval_bytes
    )
    if latest is not None:
        recovered.last_epoch = max(recovered.last_epoch, max(snapshot_id.epoch for snapshot_id, _ in snapshots))
        last_batch_epoch = recovered.epochs.latest_epoch
        if not recovered.segments or snapshot_supersedes_log(latest, recovered.next_offset, last_batch_epoch):
            if recovered.segments:
                where = (
                    f"ends at offset {recovered.next_offset}, below"
                    if latest.end_offset > recovered.next_offset
                    else f"ends at epoch {last_batch_epoch}, before the epoch of"
                )
                recovered.messages.append(f"the log {where} snapshot {latest}: it restarts there")
            _delete_oldest_first([path for _, path in recovered.segments], fsync=fsync)
            recovered.segments, recovered.next_offset, recovered.appended = [], latest.end_offset, AppendedBytes()
            recovered.indexes, recovered.epochs = [], EpochCache()
    start = recovered.segments[0][0] if recovered.segments else 0
    if start > 0 and (latest is None or latest.end_offset < start):
        raise LogError(gap_message(partition, start, "no snapshot covers the offsets below it"))
    return recovered


def _delete_oldest_first(paths: list[Path], *, fsync: bool) -> None:
    """Delete segments so that a crash at any point leaves a contiguous log (no gap) behind."""
    for path in paths:
        path.unlink()
        if fsync:
            fsync_directory(path.parent)


def gap_message(partition: Path, start: int, why: str) -> str:
    """Why a log whose start no snapshot reaches cannot be used."""
    return (
        f"{partition} starts at offset {start} (older segments were deleted) but {why}: "
        "the records below are lost. Restore the data directory from a backup"
    )
