"""One thread appending while another writes snapshots and applies retention, with real threads.

The proofs are structural: an append completes while a snapshot file is half written, and a
snapshot and a retention pass complete while an append is held inside its fsync; so the lock
is held across neither. Every wait has a timeout, so a lock held too long fails, never hangs.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from controller.log import MetadataLog
from controller.log.segments import scan_segment
from tests.controller.log.helpers import RecordAndVersion, build_log, entries, open_log, partition_dir, topic

WAIT_S = 20.0


def run_in_thread(target: Callable[[], object], name: str) -> tuple[threading.Thread, list[BaseException]]:
    errors: list[BaseException] = []

    def run() -> None:
        try:
            target()
        except BaseException as exc:  # handed to the test's thread by finish()
            errors.append(exc)

    thread = threading.Thread(target=run, name=name, daemon=True)
    thread.start()
    return thread, errors


def finish(thread: threading.Thread, errors: list[BaseException]) -> None:
    thread.join(WAIT_S)
    assert not thread.is_alive(), "the thread is stuck"
    if errors:
        raise errors[0]


def bytes_of_batches_from(data_dir: Path, offset: int) -> int:
    """What recovery counts for the snapshot trigger: bytes of the batches at or after `offset`."""
    segments = sorted(partition_dir(data_dir).glob("*.log"))
    scanned = [batch for path in segments for batch in scan_segment(path)]
    return sum(batch.size for batch in scanned if batch.batch.base_offset >= offset)


def disk_bytes(data_dir: Path) -> int:
    # the log's segments and snapshots: quorum-state is beside them, not part of the log
    return sum(path.stat().st_size for path in partition_dir(data_dir).iterdir() if path.name != "quorum-state")


def test_appends_go_on_while_a_snapshot_is_written_and_stay_counted(tmp_path: Path) -> None:
    log = build_log(tmp_path, [[topic(str(i))] for i in range(5)], segment_bytes=300)
    end = log.next_offset
    writing, appended = threading.Event(), threading.Event()

    def records() -> Iterator[RecordAndVersion]:
        yield topic("first")
        writing.set()  # the snapshot file is open and being written
        assert appended.wait(WAIT_S), "the appends did not go on while the snapshot was written"
        yield topic("last")

    snapshotter, errors = run_in_thread(lambda: log.write_snapshot(end, 1, records(), 0), "snapshotter")
    assert writing.wait(WAIT_S)
    for i in range(8):  # enough to roll segments twice
        log.append([[topic(f"meanwhile-{i}")]], 1, 0)
    appended.set()
    finish(snapshotter, errors)
    meanwhile = bytes_of_batches_from(tmp_path, end)
    assert meanwhile > 600
    assert log.bytes_since_snapshot == meanwhile  # not 0: the trigger keeps the bytes appended meanwhile
    log.close()
    with open_log(tmp_path, segment_bytes=300) as reopened:
        assert reopened.bytes_since_snapshot == meanwhile


def test_a_snapshot_and_retention_complete_while_an_append_waits_in_fsync(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # segments [0, 1, 2] and [3, 4]: the held append fits in the second, so its first fsync is the segment's
    log = build_log(tmp_path, [[topic(str(i))] for i in range(4)], segment_bytes=300)
    log.write_snapshot(3, 1, [topic("old")], 0)
    real_fsync = os.fsync
    in_fsync, release = threading.Event(), threading.Event()

    def fsync(fd: int) -> None:
        if threading.current_thread().name == "appender":
            in_fsync.set()
            assert release.wait(WAIT_S), "the snapshot path waited for the append's fsync"
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    appender, errors = run_in_thread(lambda: log.append([[topic("held")]], 1, 0), "appender")
    assert in_fsync.wait(WAIT_S)
    end = log.next_offset  # the held batch is not durable yet: the log has not moved
    log.write_snapshot(end, 1, [topic("new")], 0)
    deleted = log.apply_retention(0)
    assert [path.name for path in deleted] == ["00000000000000000003-0000000001.checkpoint", "00000000000000000000.log"]
    assert log.snapshots()[-1].end_offset == end
    assert log.total_bytes > 0 and log.bytes_since_snapshot == 0
    release.set()
    finish(appender, errors)
    assert log.bytes_since_snapshot == bytes_of_batches_from(tmp_path, end) > 0
    log.close()


def test_appending_beside_snapshots_and_retention_leaves_a_log_that_reopens_the_same(tmp_path: Path) -> None:
    log = build_log(tmp_path, [[topic("first")]], segment_bytes=300)
    done = threading.Event()
    deleted: list[Path] = []

    def append_many() -> None:
        for i in range(300):
            log.append([[topic(f"t{i}")]], 1, i)
        done.set()

    def snapshot_until_done() -> None:
        while not done.is_set():
            end = log.next_offset
            log.write_snapshot(end, 1, [topic("state")], 0)
            deleted.extend(log.apply_retention(3_000))

    appender, append_errors = run_in_thread(append_many, "appender")
    snapshotter, snapshot_errors = run_in_thread(snapshot_until_done, "snapshotter")
    finish(appender, append_errors)
    finish(snapshotter, snapshot_errors)
    assert deleted and not any(path.exists() for path in deleted)
    assert log.total_bytes == disk_bytes(tmp_path)
    newest_end = log.snapshots()[-1].end_offset
    assert log.bytes_since_snapshot == bytes_of_batches_from(tmp_path, newest_end)
    state = _observable(log)
    log.close()
    with open_log(tmp_path, segment_bytes=300) as reopened:
        assert _observable(reopened) == state
        assert [e[2] for e in entries(reopened, reopened.log_start_offset)][-1] == topic("t299")[0]


def _observable(log: MetadataLog) -> tuple[object, ...]:
    start = log.log_start_offset
    return (
        log.next_offset,
        start,
        log.snapshots(),
        log.bytes_since_snapshot,
        log.total_bytes,
        entries(log, start),
        log.load_latest_snapshot(),
    )
