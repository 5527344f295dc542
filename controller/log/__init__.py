"""The controller's metadata log: Kafka's `__cluster_metadata` format on disk, fsync'd, crash-safe.

`MetadataLog` (in `store`) is the whole interface: open (format or recover), append groups
as batches, read records back, write and load snapshots, apply retention. `dump` is the read-only
`kafka-dump-log`-style inspector behind `python -m controller dump-log`.
"""

from .model import LogEntry, LogError, LogSizes, RecoveryReport, SnapshotId, SnapshotWriteError
from .store import MetadataLog

__all__ = ["LogEntry", "LogError", "LogSizes", "MetadataLog", "RecoveryReport", "SnapshotId", "SnapshotWriteError"]
