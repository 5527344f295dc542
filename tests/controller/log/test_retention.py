"""Retention by size, as Kafka's metadata log has it: nothing goes until the total passes the limit;
then the oldest snapshots, with the segments wholly below the oldest snapshot kept."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from controller.log import LogError, MetadataLog, SnapshotId
from controller.log.retention import snapshots_to_delete
from tests.controller.log.helpers import build_log, entries, flip_bit, open_log, partition_dir, topic

SEGMENT_BYTES = 300  # a one-topic batch is 91 bytes: three to a segment


def disk_bytes(data_dir: Path) -> int:
    # the log's segments and snapshots: quorum-state is beside them, not part of the log
    return sum(path.stat().st_size for path in partition_dir(data_dir).iterdir() if path.name != "quorum-state")


def segment_files(data_dir: Path) -> list[Path]:
    return sorted(partition_dir(data_dir).glob("*.log"))


def snapshot_files(data_dir: Path) -> list[Path]:
    return sorted(partition_dir(data_dir).glob("*.checkpoint"))


def snapshotted_log(data_dir: Path, ends: list[int]) -> MetadataLog:
    """30 one-topic batches in segments of three, and a snapshot at each of `ends`."""
    log = build_log(data_dir, [[topic(str(i))] for i in range(30)], segment_bytes=SEGMENT_BYTES)
    for end in ends:
        log.write_snapshot(end, 1, [topic(str(i)) for i in range(end - 1)], 0)
    return log


def test_while_the_total_fits_nothing_is_deleted(tmp_path: Path) -> None:
    with snapshotted_log(tmp_path, [10, 20, 30]) as log:
        segments, snapshots = segment_files(tmp_path), snapshot_files(tmp_path)
        assert log.total_bytes == disk_bytes(tmp_path)
        assert log.apply_retention(log.total_bytes) == []
        assert (segment_files(tmp_path), snapshot_files(tmp_path)) == (segments, snapshots)
        assert log.log_start_offset == 0
        assert [e[0] for e in entries(log)] == list(range(31))  # the whole log can still be read


def test_past_the_limit_the_oldest_snapshot_goes_with_the_segments_below_the_next(tmp_path: Path) -> None:
    with snapshotted_log(tmp_path, [10, 20, 30]) as log:
        segments, snapshots = segment_files(tmp_path), snapshot_files(tmp_path)
        deleted = log.apply_retention(log.total_bytes - 1)
        below_20 = [path for path in segments if _next_base(segments, path) <= 20]
        assert deleted == [snapshots[0], *below_20]
        assert not any(path.exists() for path in deleted)
        assert log.snapshots() == [SnapshotId(20, 1), SnapshotId(30, 1)]
        assert log.log_start_offset == int(segments[len(below_20)].stem) <= 20
        assert log.total_bytes == disk_bytes(tmp_path)


def test_the_newest_snapshot_and_the_active_segment_always_stay(tmp_path: Path) -> None:
    with snapshotted_log(tmp_path, [10, 20, 31]) as log:
        active = segment_files(tmp_path)[-1]
        log.apply_retention(0)
        assert log.snapshots() == [SnapshotId(31, 1)]
        assert segment_files(tmp_path) == [active]
        assert log.apply_retention(0) == []
        assert log.append([[topic("more")]], 1, 0) == [31]
        tail = entries(log, 31)
    with open_log(tmp_path, segment_bytes=SEGMENT_BYTES) as log:
        assert log.load_latest_snapshot() == (SnapshotId(31, 1), [topic(str(i)) for i in range(30)])
        assert entries(log, 31) == tail


def test_a_single_snapshot_deletes_nothing_however_large_the_log(tmp_path: Path) -> None:
    with snapshotted_log(tmp_path, [30]) as log:  # as Kafka: retention needs a snapshot to fall back on
        assert log.apply_retention(0) == []
        assert log.log_start_offset == 0


def test_every_snapshot_kept_can_be_started_from(tmp_path: Path) -> None:
    with snapshotted_log(tmp_path, [5, 10, 20, 30]) as log:
        log.apply_retention(disk_bytes(tmp_path) - 1)
        kept = snapshot_files(tmp_path)
        assert len(kept) == 3
        expected_tail = entries(log, 10)
    newest, middle = kept[-1], kept[-2]
    newest.write_bytes(flip_bit(newest.read_bytes(), 70, 0))
    middle.write_bytes(flip_bit(middle.read_bytes(), 70, 0))
    with open_log(tmp_path, segment_bytes=SEGMENT_BYTES) as log:  # falls back to the oldest kept, at 10
        assert log.load_latest_snapshot() == (SnapshotId(10, 1), [topic(str(i)) for i in range(9)])
        assert entries(log, 10) == expected_tail


def test_a_gap_below_every_kept_snapshot_still_refuses_to_start(tmp_path: Path) -> None:
    with snapshotted_log(tmp_path, [10, 20, 30]) as log:
        log.apply_retention(0)
        start = log.log_start_offset
    for snapshot in snapshot_files(tmp_path):
        snapshot.unlink()
    with pytest.raises(LogError, match=f"starts at offset {start}"):
        open_log(tmp_path, segment_bytes=SEGMENT_BYTES)


def test_retention_arguments_are_checked(tmp_path: Path) -> None:
    with snapshotted_log(tmp_path, [10]) as log, pytest.raises(ValueError, match="negative"):
        log.apply_retention(-1)
    with pytest.raises(LogError, match="closed"):
        log.apply_retention(0)


def _next_base(segments: list[Path], path: Path) -> int:
    index = segments.index(path)
    return int(segments[index + 1].stem) if index + 1 < len(segments) else 1 << 62


# ---------------------------------------------------------------------------- the rule, on sizes alone
def _total_after(snapshots: list[tuple[int, int]], segments: list[tuple[int, int]], doomed: int) -> int:
    """The total once the `doomed` oldest snapshots and the segments wholly below the next are gone."""
    log_start = snapshots[doomed][0] if doomed else -1
    following = [base for base, _ in segments[1:]] + [None]  # the active segment has none: it always stays
    kept = [size for (_, size), after in zip(segments, following, strict=True) if after is None or after > log_start]
    return sum(size for _, size in snapshots[doomed:]) + sum(kept)


@st.composite
def logs(draw: st.DrawFn) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
    bases = sorted(set(draw(st.lists(st.integers(1, 500), max_size=12))) | {0})
    ends = sorted(set(draw(st.lists(st.integers(0, bases[-1] + 50), max_size=8))))
    segments = [(base, draw(st.integers(0, 1000))) for base in bases]
    return [(end, draw(st.integers(50, 1000))) for end in ends], segments


@given(log=logs(), max_bytes=st.integers(0, 15_000))
def test_retention_deletes_the_fewest_oldest_snapshots_that_bring_the_total_under_the_limit(
    log: tuple[list[tuple[int, int]], list[tuple[int, int]]], max_bytes: int
) -> None:
    snapshots, segments = log
    doomed = snapshots_to_delete(snapshots, segments, max_bytes)
    if len(snapshots) < 2:
        assert doomed == 0
        return
    assert 0 <= doomed <= len(snapshots) - 1  # the newest stays
    assert _total_after(snapshots, segments, doomed) <= max_bytes or doomed == len(snapshots) - 1
    if doomed:  # and no more than needed
        assert _total_after(snapshots, segments, doomed - 1) > max_bytes
