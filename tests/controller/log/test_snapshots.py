"""Snapshots: Kafka's names and layout, atomic writes, failures that leave the log as it was,
fallback past corrupt ones, segment deletion."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from controller.log import LogError, SnapshotId
from controller.log.segments import scan_segment
from controller.log.snapshots import RECORDS_PER_BATCH, SnapshotError, read_snapshot_file
from protocol.records.control import SnapshotFooterRecord, SnapshotHeaderRecord, decode_control_record
from tests.controller.log.helpers import build_log, entries, flip_bit, open_log, partition_dir, topic


def test_a_snapshot_is_header_data_batches_footer_under_kafkas_name(tmp_path: Path) -> None:
    records = [topic(f"t{i}") for i in range(2 * RECORDS_PER_BATCH + 5)]
    with build_log(tmp_path, [[topic("a")]]) as log:
        path = log.write_snapshot(2, 1, records, 12_345)
    assert path == partition_dir(tmp_path) / "00000000000000000002-0000000001.checkpoint"
    batches = [scanned.batch for scanned in scan_segment(path)]
    assert [len(b.records) for b in batches] == [1, RECORDS_PER_BATCH, RECORDS_PER_BATCH, 5, 1]
    assert [b.base_offset for b in batches] == [
        0,
        1,
        1 + RECORDS_PER_BATCH,
        1 + 2 * RECORDS_PER_BATCH,
        len(records) + 1,
    ]
    assert [b.is_control for b in batches] == [True, False, False, False, True]
    header = batches[0].records[0]
    footer = batches[-1].records[0]
    assert decode_control_record(header.key, header.value) == (
        SnapshotHeaderRecord(version=0, last_contained_log_timestamp=12_345),
        0,
    )
    assert decode_control_record(footer.key, footer.value) == (SnapshotFooterRecord(version=0), 0)
    assert read_snapshot_file(path) == records


def test_snapshots_are_listed_and_the_latest_loads_after_reopen(tmp_path: Path) -> None:
    with build_log(tmp_path, [[topic("a")], [topic("b")]]) as log:
        log.write_snapshot(2, 1, [topic("a")], 0)
        log.write_snapshot(3, 1, [topic("a"), topic("b")], 0)
        (partition_dir(tmp_path) / "junk.checkpoint").write_text("not a snapshot name")
    with open_log(tmp_path) as log:
        assert log.snapshots() == [SnapshotId(2, 1), SnapshotId(3, 1)]
        assert log.load_latest_snapshot() == (SnapshotId(3, 1), [topic("a"), topic("b")])
        assert log.recovery.messages == []


def test_a_corrupt_newest_snapshot_falls_back_to_the_older_one(tmp_path: Path) -> None:
    with build_log(tmp_path, [[topic("a")], [topic("b")]]) as log:
        log.write_snapshot(2, 1, [topic("a")], 0)
        newest = log.write_snapshot(3, 1, [topic("a"), topic("b")], 0)
    newest.write_bytes(flip_bit(newest.read_bytes(), 100, 2))
    with open_log(tmp_path) as log:
        assert log.load_latest_snapshot() == (SnapshotId(2, 1), [topic("a")])
        assert any(newest.name in message and "skipped" in message for message in log.recovery.messages)


@pytest.mark.parametrize(
    ("surgery", "reason"),
    [
        (lambda data: data[:-10], "declares"),
        (lambda data: data[: data.rindex(b"\x02", 0, len(data) - 40) - 16], "footer"),
        (lambda data: data + data[-75:], "follows the footer"),
        (lambda data: b"", "holds no batch"),
    ],
)
def test_incomplete_snapshots_are_invalid(tmp_path: Path, surgery: object, reason: str) -> None:
    with build_log(tmp_path, [[topic("a")]]) as log:
        path = log.write_snapshot(2, 1, [topic("a")], 0)
    path.write_bytes(surgery(path.read_bytes()))  # type: ignore[operator]
    with pytest.raises(SnapshotError, match=reason):
        read_snapshot_file(path)


def test_part_leftovers_are_ignored_and_deleted(tmp_path: Path) -> None:
    with build_log(tmp_path, [[topic("a")]]) as log:
        log.write_snapshot(2, 1, [topic("a")], 0)
    leftover = partition_dir(tmp_path) / "00000000000000000002-0000000001.checkpoint.part"
    leftover.write_bytes(b"half a snapshot")
    with open_log(tmp_path) as log:
        assert not leftover.exists()
        assert any("interrupted snapshot" in message for message in log.recovery.messages)
        assert log.snapshots() == [SnapshotId(2, 1)]


ROOT = Path(__file__).resolve().parents[3]


def test_a_failed_snapshot_leaves_the_log_as_it_was_and_usable(tmp_path: Path) -> None:
    """Real failures (RLIMIT_FSIZE: EFBIG, as a full disk; RLIMIT_NOFILE: EMFILE) in a subprocess."""
    child = [sys.executable, "-m", "tests.controller.log.failing_snapshots", str(tmp_path / "data")]
    result = subprocess.run(child, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    for case, errno_name in (("file_too_large", "EFBIG"), ("descriptors_exhausted", "EMFILE")):
        failure = report[case]
        error = failure["error"]
        assert (error["type"], error["errno"]) == ("SnapshotWriteError", errno_name), error
        snapshot_name = f"{failure['before']['next_offset']:020d}-0000000001.checkpoint"
        assert snapshot_name in error["message"] and "cannot write snapshot" in error["message"]
        assert failure["after"] == failure["before"]  # no .part, no new file, counters unchanged
        assert not any(name.endswith(".part") for name, _ in failure["after"]["files"])
    assert report["appended_under_the_file_size_limit"] == [report["file_too_large"]["before"]["next_offset"]]
    assert report["appended_after"] == [report["descriptors_exhausted"]["before"]["next_offset"]]
    assert report["snapshot_after"] in [name for name, _ in report["final"]["files"]]
    assert report["final"]["bytes_since_snapshot"] == 0


def test_snapshot_arguments_are_checked(tmp_path: Path) -> None:
    with build_log(tmp_path, [[topic("a")]]) as log:
        with pytest.raises(ValueError, match="end offset"):
            log.write_snapshot(3, 1, [], 0)
        with pytest.raises(ValueError, match="epoch"):
            log.write_snapshot(2, 2, [], 0)
        with pytest.raises(ValueError, match="no snapshot covers"):
            log.delete_segments_below(1)
        assert log.load_latest_snapshot() is None


def test_segments_below_a_snapshot_are_deleted_and_the_log_restarts_from_it(tmp_path: Path) -> None:
    with build_log(tmp_path, [[topic(str(i))] for i in range(10)], segment_bytes=200) as log:
        before = sorted(partition_dir(tmp_path).glob("*.log"))
        end = 8
        log.write_snapshot(end, 1, [topic(str(i)) for i in range(7)], 0)
        deleted = log.delete_segments_below(end)
        assert deleted and deleted == before[: len(deleted)]
        assert all(not path.exists() for path in deleted)
        assert log.log_start_offset <= end
        tail = entries(log, log.log_start_offset)
        assert log.delete_segments_below(end) == []
        assert len(list(partition_dir(tmp_path).glob("*.log"))) >= 1
    with open_log(tmp_path, segment_bytes=200) as log:
        assert log.load_latest_snapshot() == (SnapshotId(end, 1), [topic(str(i)) for i in range(7)])
        assert entries(log, log.log_start_offset) == tail
        with pytest.raises(LogError, match="were deleted"):
            log.read(0)
        everything = log.next_offset
        log.write_snapshot(everything, 1, [], 0)
        log.delete_segments_below(everything)
        assert len(list(partition_dir(tmp_path).glob("*.log"))) == 1  # the active segment stays


def test_a_log_start_no_snapshot_reaches_refuses_to_start(tmp_path: Path) -> None:
    with build_log(tmp_path, [[topic(str(i))] for i in range(6)], segment_bytes=200) as log:
        snapshot = log.write_snapshot(6, 1, [], 0)
        log.delete_segments_below(6)
    snapshot.unlink()
    with pytest.raises(LogError, match="no snapshot covers the offsets below it"):
        open_log(tmp_path, segment_bytes=200)


def test_a_corrupt_snapshot_over_deleted_segments_is_a_gap(tmp_path: Path) -> None:
    with build_log(tmp_path, [[topic(str(i))] for i in range(6)], segment_bytes=200) as log:
        snapshot = log.write_snapshot(6, 1, [topic("x")], 0)
        log.delete_segments_below(6)
    snapshot.write_bytes(flip_bit(snapshot.read_bytes(), 70, 0))
    with open_log(tmp_path, segment_bytes=200) as log, pytest.raises(LogError, match="no valid snapshot"):
        log.load_latest_snapshot()


def test_a_log_cut_below_the_newest_snapshot_restarts_at_its_end(tmp_path: Path) -> None:
    data_dir = tmp_path
    with build_log(data_dir, [[topic("a")], [topic("b")], [topic("c")]]) as log:
        log.write_snapshot(4, 1, [topic("a"), topic("b"), topic("c")], 0)
        positions = [position for _, position, _ in log.batches()]
    segment_file = partition_dir(data_dir) / "00000000000000000000.log"
    segment_file.write_bytes(flip_bit(segment_file.read_bytes(), positions[1] + 30, 1))
    with open_log(data_dir, repair=True) as log:
        assert log.next_offset == 4 and log.log_start_offset == 4
        assert any("restarts there" in message for message in log.recovery.messages)
        assert log.load_latest_snapshot() == (SnapshotId(4, 1), [topic("a"), topic("b"), topic("c")])
        assert log.append([[topic("d")]], 1, 0) == [4]
    with open_log(data_dir) as log:
        assert [e[0] for e in entries(log, 4)] == [4]
