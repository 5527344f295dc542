"""Shared pieces of the replication tests: logs of several epochs, brute-force answers from the files."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import NamedTuple

from controller.log import MetadataLog
from controller.log.segments import scan_segment
from tests.controller.log.helpers import RecordAndVersion, open_log, partition_dir, tiny

#: Small segments and a small index interval, so that a few dozen 90-byte batches span several
#: segments and index entries.
SMALL = {"fsync": False, "segment_bytes": 600, "index_interval_bytes": 200}


class Batch(NamedTuple):
    """A batch as the files hold it: segment, byte position, bytes, offsets, epoch."""

    path: Path
    position: int
    data: bytes
    base_offset: int
    next_offset: int
    epoch: int


def disk_batches(data_dir: Path) -> list[Batch]:
    """Every batch of every segment, in order, scanned from the files."""
    found = []
    for path in sorted(partition_dir(data_dir).glob("*.log")):
        data = path.read_bytes()
        for scanned in scan_segment(path):
            batch = scanned.batch
            chunk = data[scanned.position : scanned.position + scanned.size]
            found.append(
                Batch(path, scanned.position, chunk, batch.base_offset, batch.next_offset, batch.partition_leader_epoch)
            )
    return found


def log_bytes(data_dir: Path) -> bytes:
    """The segments' bytes, concatenated in order."""
    return b"".join(path.read_bytes() for path in sorted(partition_dir(data_dir).glob("*.log")))


def segment_files(data_dir: Path) -> dict[str, bytes]:
    return {path.name: path.read_bytes() for path in sorted(partition_dir(data_dir).glob("*.log"))}


def expected_read(data_dir: Path, offset: int, max_bytes: int) -> bytes:
    """What a Fetch at `offset` must answer, from a scan of the files: the batch holding it, then
    whole batches of the same segment while they fit in `max_bytes`."""
    batches = disk_batches(data_dir)
    for index, batch in enumerate(batches):
        if batch.base_offset <= offset < batch.next_offset:
            answer = batch.data
            for later in batches[index + 1 :]:
                if later.path != batch.path or len(answer) + len(later.data) > max_bytes:
                    break
                answer += later.data
            return answer
    return b""


def epoch_entries(batches: list[Batch]) -> list[tuple[int, int]]:
    """(epoch, first offset) of each epoch of `batches`, brute force."""
    entries: list[tuple[int, int]] = []
    for batch in batches:
        if not entries or entries[-1][0] != batch.epoch:
            entries.append((batch.epoch, batch.base_offset))
    return entries


def grow(log: MetadataLog, epochs: list[list[int]], leader_id: int = 1) -> None:
    """For each epoch: a LeaderChange, then one batch per count, of that many tiny records."""
    for counts in epochs:
        epoch = log.last_epoch + 1
        log.append_leader_change(epoch, leader_id, 1_000 * epoch)
        for count in counts:
            group: list[RecordAndVersion] = [tiny()] * count
            log.append([group], epoch, 1_000 * epoch + count)


def leader_log(data_dir: Path, epochs: list[list[int]], **options: object) -> MetadataLog:
    log = open_log(data_dir, **{**SMALL, **options})
    grow(log, epochs)
    return log


def copy_dir(source: Path, target: Path) -> Path:
    shutil.copytree(source, target)
    return target


def replicate(leader: MetadataLog, follower: MetadataLog, max_bytes: int) -> int:
    """Fetch from `leader` into `follower` until it holds the whole log; the number of fetches."""
    fetches = 0
    while follower.next_offset < leader.next_offset:
        read = leader.read_records(follower.next_offset, max_bytes)
        follower.append_as_follower(read.records)
        fetches += 1
    return fetches
