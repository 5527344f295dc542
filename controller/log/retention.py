"""Retention of the metadata log by size, as Kafka's `KafkaMetadataLog.cleanSnapshotsRetentionSize`.

Kafka keeps the log's segments after a snapshot until retention needs the space: a snapshot on
its own deletes nothing. Only once the total size of the segments and the snapshots passes
`metadata.max.retention.bytes` is the oldest snapshot deleted and the log start moved to the
end offset of the next one, taking every segment wholly below it; that repeats while the total
still passes the limit and more than one snapshot is left.

Rules:
- The newest snapshot is always kept; the active (last) segment is never deleted.
- A segment is wholly below offset E when the segment after it starts at or below E.
- Every snapshot kept ends at or above the new log start, so any of them can be loaded and the
  log read on from its end (start-up falls back to an older snapshot if the newest is corrupt).
- `snapshots_to_delete` decides from sizes alone; `MetadataLog.apply_retention` deletes the
  files, snapshots first (a crash in between leaves no snapshot below the log start), with
  `delete_file` and `sync_deletions`, whose OSErrors are `SnapshotWriteError`s: the log is
  still whole, and a file that was not deleted is simply retained a while longer.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from .model import SnapshotWriteError
from .segments import fsync_directory

#: Kafka's `metadata.max.retention.bytes` default (100 MiB).
DEFAULT_RETENTION_BYTES = 100 * 1024 * 1024


def snapshots_to_delete(
    snapshots: Sequence[tuple[int, int]], segments: Sequence[tuple[int, int]], max_bytes: int
) -> int:
    """How many of the oldest snapshots retention deletes (0 when the total fits in `max_bytes`).

    `snapshots` are (end offset, size) ascending; `segments` (base offset, size) ascending, the
    active segment last. The caller deletes those snapshots, then the segments wholly below the
    end offset of the oldest snapshot kept.
    """
    total = sum(size for _, size in snapshots) + sum(size for _, size in segments)
    deleted_snapshots = 0
    deleted_segments = 0
    while total > max_bytes and len(snapshots) - deleted_snapshots > 1:
        total -= snapshots[deleted_snapshots][1]
        deleted_snapshots += 1
        log_start = snapshots[deleted_snapshots][0]
        while deleted_segments + 1 < len(segments) and segments[deleted_segments + 1][0] <= log_start:
            total -= segments[deleted_segments][1]
            deleted_segments += 1
    return deleted_snapshots


def delete_file(path: Path) -> None:
    """Delete a snapshot or segment that retention let go (already gone is fine)."""
    try:
        path.unlink(missing_ok=True)
    except OSError as exc:
        raise SnapshotWriteError(f"cannot delete {path} for retention: {exc}") from exc


def sync_deletions(directory: Path, deleted: Sequence[Path], *, fsync: bool) -> None:
    """Make the deletions in `directory` durable (one fsync of it, if anything was deleted)."""
    if deleted and fsync:
        try:
            fsync_directory(directory)
        except OSError as exc:
            raise SnapshotWriteError(f"cannot make the deletions in {directory} durable: {exc}") from exc
