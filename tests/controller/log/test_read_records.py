"""Raw batches for Fetch answers: every offset and size against a scan of the files, the sparse index,
the log's edges, reads beside appends and truncations on other threads."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from controller.log import OffsetOutOfRangeError, replication
from controller.log.offset_index import OffsetIndex
from protocol.records.batch import iter_batches
from tests.controller.log.helpers import open_log, tiny, topic
from tests.controller.log.replicas import SMALL, disk_batches, expected_read, leader_log, log_bytes

EPOCHS = [[1, 2, 1, 3], [1] * 6, [2, 1, 1, 2, 1, 1], [1, 1, 3]]
SIZES = [0, 1, 89, 90, 91, 180, 250, 599, 10_000]


def test_every_offset_and_size_reads_what_a_scan_of_the_files_expects(tmp_path: Path) -> None:
    log = leader_log(tmp_path, EPOCHS)
    assert len({batch.path for batch in disk_batches(tmp_path)}) >= 4  # several rolls
    for reopen in (False, True):  # the index built by appends, then by the recovery scan
        if reopen:
            log.close()
            log = open_log(tmp_path, **SMALL)
        for offset in range(log.next_offset + 1):
            for max_bytes in SIZES:
                read = log.read_records(offset, max_bytes)
                assert read.records == expected_read(tmp_path, offset, max_bytes), (offset, max_bytes, reopen)
                assert (read.log_start_offset, read.log_end_offset) == (0, log.next_offset)
    log.close()


def test_a_read_is_whole_batches_and_at_least_one(tmp_path: Path) -> None:
    with leader_log(tmp_path, EPOCHS) as log:
        batches = disk_batches(tmp_path)
        first, second = batches[0], batches[1]
        assert log.read_records(0, 0).records == first.data  # smaller than a batch: the batch anyway
        assert log.read_records(0, len(first.data) + len(second.data) - 1).records == first.data
        assert log.read_records(0, len(first.data) + len(second.data)).records == first.data + second.data
        last = batches[-1]
        assert log.read_records(last.next_offset - 1, 10_000).records == last.data
        assert log.read_records(log.next_offset, 10_000).records == b""


def test_a_read_stops_at_its_segments_end_and_the_next_starts_the_next_segment(tmp_path: Path) -> None:
    with leader_log(tmp_path, EPOCHS) as log:
        batches = disk_batches(tmp_path)
        roll = next(index for index in range(1, len(batches)) if batches[index].path != batches[index - 1].path)
        before, after = batches[roll - 1], batches[roll]
        assert log.read_records(before.base_offset, 1 << 20).records == before.data
        whole_segment = after.path.read_bytes()
        assert log.read_records(after.base_offset, 1 << 20).records == whole_segment


def test_reads_outside_the_log_are_out_of_range(tmp_path: Path) -> None:
    with leader_log(tmp_path, EPOCHS) as log:
        end = log.next_offset
        with pytest.raises(OffsetOutOfRangeError) as caught:
            log.read_records(end + 1, 100)
        assert (caught.value.offset, caught.value.log_start_offset, caught.value.log_end_offset) == (end + 1, 0, end)
        with pytest.raises(OffsetOutOfRangeError):
            log.read_records(-1, 100)
        log.write_snapshot(end, log.last_epoch, [topic("state")], 0)
        log.delete_segments_below(end)
        start = log.log_start_offset
        assert start > 0
        with pytest.raises(OffsetOutOfRangeError):
            log.read_records(start - 1, 100)
        assert log.read_records(start, 1 << 20).records == expected_read(tmp_path, start, 1 << 20)
        with pytest.raises(ValueError, match="negative"):
            log.read_records(start, -1)


def test_the_index_is_sparse_and_a_read_scans_from_its_floor(tmp_path: Path) -> None:
    with leader_log(tmp_path, [[1] * 60], segment_bytes=1 << 20, index_interval_bytes=1000) as log:
        index = log._catalog.active.index
        batches = disk_batches(tmp_path)
        assert 0 < len(index) <= sum(len(batch.data) for batch in batches) // 1000
        for batch in batches:
            base, position = index.floor(batch.base_offset)
            assert base <= batch.base_offset and batch.position - position < 1000 + len(batch.data)


def test_an_index_entry_every_interval() -> None:
    index = OffsetIndex(100, interval=200)
    for offset, position in [(100, 0), (101, 90), (102, 180), (103, 270), (104, 360), (105, 450), (106, 540)]:
        index.add(offset, position)
    assert [index.floor(offset) for offset in range(99, 108)] == [
        (100, 0),
        (100, 0),
        (100, 0),
        (100, 0),
        (103, 270),
        (103, 270),
        (103, 270),
        (106, 540),
        (106, 540),
    ]
    index.truncate(105)
    assert index.floor(106) == (103, 270) and len(index) == 1
    with pytest.raises(ValueError):
        OffsetIndex(0, interval=0)


def test_reads_on_another_thread_beside_appends_see_whole_durable_batches(tmp_path: Path) -> None:
    log = leader_log(tmp_path, [[1]])
    done = threading.Event()
    fetched: list[bytes] = []
    errors: list[BaseException] = []

    def fetch() -> None:
        try:
            offset = 0
            while not done.is_set() or offset < log.next_offset:
                records = log.read_records(offset, 300).records
                if records:
                    fetched.append(records)
                    offset = [batch for _, batch in iter_batches(records)][-1].next_offset
        except BaseException as exc:
            errors.append(exc)

    reader = threading.Thread(target=fetch, daemon=True)
    reader.start()
    for _ in range(150):
        log.append([[tiny()]], 1, 0)
    done.set()
    reader.join(20)
    assert not reader.is_alive() and not errors
    assert b"".join(fetched) == log_bytes(tmp_path)
    log.close()


def test_a_read_racing_a_truncation_is_planned_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    leader_log(tmp_path, [[1, 1, 1, 1]]).close()
    log = open_log(tmp_path, **SMALL)  # reopened: nothing in the tail, every read goes to the disk
    real_read = replication.read_batches
    raced: list[int] = []

    def read_after_a_truncation(path: Path, position: int, end: int, offset: int, max_bytes: int) -> bytes:
        raced.append(offset)
        if len(raced) == 1:  # another thread truncates and appends between the plan and the read
            log.truncate_to(3)
            log.append([[topic("after")]], 1, 0)
        return real_read(path, position, end, offset, max_bytes)

    monkeypatch.setattr(replication, "read_batches", read_after_a_truncation)
    read = log.read_records(3, 1 << 20)
    assert raced == [3, 3]  # read, then planned and read again
    assert read.records == expected_read(tmp_path, 3, 1 << 20) and read.log_end_offset == 4
    log.close()


def test_reads_on_another_thread_beside_truncations_get_whole_batches_or_out_of_range(tmp_path: Path) -> None:
    log = leader_log(tmp_path, [[1, 2, 1]])
    done = threading.Event()
    reads: list[int] = []
    errors: list[BaseException] = []

    def fetch() -> None:
        try:
            while not done.is_set():
                for offset in range(0, 12, 3):
                    try:
                        records = log.read_records(offset, 250).records
                    except OffsetOutOfRangeError:
                        continue
                    batches = [batch for _, batch in iter_batches(records)]  # decodes: CRC, every record
                    assert not batches or batches[0].base_offset <= offset < batches[0].next_offset
                    reads.append(len(batches))
        except BaseException as exc:
            errors.append(exc)

    reader = threading.Thread(target=fetch, daemon=True)
    reader.start()
    for cycle in range(60):
        log.truncate_to([2, 3, 5][cycle % 3])  # batch boundaries: from 2 on, the batches are of one record
        for _ in range(4):
            log.append([[topic(f"cycle-{cycle}")]], log.last_epoch, 0)
    done.set()
    reader.join(20)
    assert not reader.is_alive() and not errors and reads
    log.close()
