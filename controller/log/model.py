"""The metadata log's value types and its one exception, shared by every module of `controller.log`.

Rules:
- `LogError` is what the log raises for anything wrong with the data on disk or the data
  directory (unusable path, cluster id mismatch, mid-log corruption, a gap the snapshots do
  not cover). Its message names the file, and for corruption the byte position and offset.
  Misuse by the caller (an epoch going backwards, a snapshot of the future, a truncation
  below a snapshot) is a `ValueError`.
- What a peer asks or sends that the log cannot serve or take has its own type, for the shell
  to map to the wire: `OffsetOutOfRangeError` (a fetch outside the log),
  `InvalidRecordsError` (a leader's batches a follower refuses, nothing written),
  `SnapshotNotFoundError` and `PositionOutOfRangeError` (a FetchSnapshot the log cannot answer).
- `SnapshotWriteError` is deliberately not a `LogError`: a snapshot that could not be written
  (or the files it made redundant that could not be deleted) leaves the log intact and usable,
  so the caller logs it and tries again later, where a `LogError` stops the controller.
- Everything here is immutable, except `RecoveryReport.messages`, a list that later steps of
  the same start-up (loading a snapshot) append to.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

from protocol.spec import Data


class LogError(Exception):
    """The data directory cannot be used as it is: the message says why and where."""


class SnapshotWriteError(Exception):
    """A snapshot, or the retention after it, failed on an OS error; the log stays usable.

    A failed write leaves nothing behind; a failed deletion leaves the files it had not yet
    deleted, to be retained a while longer. The message names the file and the OS error;
    `__cause__` is the `OSError`."""


class OffsetOutOfRangeError(Exception):
    """A fetch offset below the log start or above its end (Kafka's OFFSET_OUT_OF_RANGE)."""

    def __init__(self, offset: int, log_start_offset: int, log_end_offset: int) -> None:
        super().__init__(f"offset {offset} is outside the log's {log_start_offset}..{log_end_offset}")
        self.offset = offset
        self.log_start_offset = log_start_offset
        self.log_end_offset = log_end_offset


class InvalidRecordsError(ValueError):
    """Batches given to `append_as_follower` that the log refuses; nothing of them was written."""


class SnapshotNotFoundError(Exception):
    """No snapshot of that id (Kafka's SNAPSHOT_NOT_FOUND): never written, or deleted by retention."""


class PositionOutOfRangeError(Exception):
    """A snapshot read outside the snapshot's bytes (Kafka's POSITION_OUT_OF_RANGE)."""


@dataclass(frozen=True, slots=True)
class RecoveryReport:
    """What `MetadataLog.open` did to the data directory before handing it over."""

    truncated_bytes: int = 0
    truncated_file: Path | None = None
    first_lost_offset: int | None = None
    repaired: bool = False
    messages: list[str] = field(default_factory=list)


class LogEntry(NamedTuple):
    """One record of the log: a metadata record, or a control record (`control=True`).

    A named tuple: start-up builds one per record of the log, a million of them for a big log.
    """

    offset: int
    epoch: int
    timestamp_ms: int
    record: Data
    version: int
    control: bool


@dataclass(frozen=True, slots=True, order=True)
class SnapshotId:
    """A snapshot holds the state of every record below `end_offset` (exclusive)."""

    end_offset: int
    epoch: int


class LogSizes(NamedTuple):
    """Bytes on disk of a log's segments and of its snapshots (retention bounds their sum)."""

    segments: int
    snapshots: int
