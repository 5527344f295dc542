"""The controller's metadata log: Kafka's `__cluster_metadata` format on disk, fsync'd, crash-safe.

`MetadataLog` (in `store`) is the whole interface: open (format or recover), append groups
as batches, read records back; write and load snapshots, apply retention (`snapshotting`); and
what a quorum needs (`replication`): raw batches for Fetch, the epoch cache, a follower's
verbatim appends and truncations, snapshots sent and received in chunks. `dump` is the read-only
`kafka-dump-log`-style inspector behind `python -m controller dump-log`.
"""

from .epochs import EpochEnd, FetchCheck, ValidatedFetch
from .model import (
    InvalidRecordsError,
    LogEntry,
    LogError,
    LogSizes,
    OffsetOutOfRangeError,
    PositionOutOfRangeError,
    RecoveryReport,
    SnapshotId,
    SnapshotNotFoundError,
    SnapshotWriteError,
)
from .replication import RecordsRead, SnapshotChunk
from .snapshot_transfer import IncomingSnapshot
from .snapshots import SnapshotError
from .store import MetadataLog

__all__ = [
    "EpochEnd",
    "FetchCheck",
    "IncomingSnapshot",
    "InvalidRecordsError",
    "LogEntry",
    "LogError",
    "LogSizes",
    "MetadataLog",
    "OffsetOutOfRangeError",
    "PositionOutOfRangeError",
    "RecordsRead",
    "RecoveryReport",
    "SnapshotChunk",
    "SnapshotError",
    "SnapshotId",
    "SnapshotNotFoundError",
    "SnapshotWriteError",
    "ValidatedFetch",
]
