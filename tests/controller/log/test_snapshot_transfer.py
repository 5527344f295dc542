"""Catching up from the leader's snapshot: chunks read and written, the follower's log restarted at its
end (Kafka's truncateToLatestSnapshot), at runtime and after a crash, and every refusal."""

from __future__ import annotations

from pathlib import Path

import pytest

from controller.log import (
    FetchCheck,
    LogError,
    MetadataLog,
    PositionOutOfRangeError,
    SnapshotError,
    SnapshotId,
    SnapshotNotFoundError,
    ValidatedFetch,
)
from tests.controller.log.helpers import entries, flip_bit, open_log, partition_dir, topic
from tests.controller.log.replicas import SMALL, disk_batches, grow, leader_log, log_bytes, segment_files
from tests.controller.log.test_truncation import crash_at

STATE = [topic(f"topic-{i}") for i in range(30)]


def _leader_past_a_snapshot(data_dir: Path) -> tuple[MetadataLog, SnapshotId]:
    """Epochs 1-3, a snapshot at 12 in epoch 2 (0-4 | 5-13 | 14-18), the segments below it deleted."""
    log = leader_log(data_dir, [[1, 2, 1], [3, 1, 1, 1, 2]])
    snapshot_id = SnapshotId(12, 2)
    log.write_snapshot(snapshot_id.end_offset, snapshot_id.epoch, STATE, 0)
    grow(log, [[1, 1, 2]])
    log.delete_segments_below(snapshot_id.end_offset)
    assert 0 < log.log_start_offset < snapshot_id.end_offset
    return log, snapshot_id


def _transfer(
    leader: MetadataLog,
    follower: MetadataLog,
    snapshot_id: SnapshotId,
    chunk_bytes: int,
    as_id: SnapshotId | None = None,
) -> Path:
    """FetchSnapshot until the follower holds the leader's snapshot (under another id, to fake a history)."""
    incoming = follower.receive_snapshot(as_id or snapshot_id)
    assert incoming is not None
    position = 0
    while True:
        chunk = leader.read_snapshot_chunk(snapshot_id, position, chunk_bytes)
        incoming.append(position, chunk.data)
        position += len(chunk.data)
        if position == chunk.size:
            return incoming.complete()


def test_an_empty_follower_catches_up_from_the_snapshot_then_the_log(tmp_path: Path) -> None:
    leader, snapshot_id = _leader_past_a_snapshot(tmp_path / "leader")
    follower = open_log(tmp_path / "follower", **SMALL)
    check = leader.validate_offset_and_epoch(follower.next_offset, follower.last_fetched_epoch)
    assert check == ValidatedFetch(FetchCheck.SNAPSHOT, snapshot_id.epoch, snapshot_id.end_offset)
    path = _transfer(leader, follower, snapshot_id, 100)
    assert path.read_bytes() == (partition_dir(tmp_path / "leader") / path.name).read_bytes()
    assert not list(partition_dir(tmp_path / "follower").glob("*.part"))
    assert follower.truncate_to_latest_snapshot()
    assert (follower.log_start_offset, follower.next_offset) == (snapshot_id.end_offset, snapshot_id.end_offset)
    assert (follower.last_fetched_epoch, follower.epoch_entries(), follower.last_epoch) == (2, [], 2)
    assert follower.validate_offset_and_epoch(snapshot_id.end_offset, 2).kind is FetchCheck.VALID
    check = leader.validate_offset_and_epoch(follower.next_offset, follower.last_fetched_epoch)
    assert check.kind is FetchCheck.VALID
    while follower.next_offset < leader.next_offset:
        follower.append_as_follower(leader.read_records(follower.next_offset, 250).records)
    after_snapshot = [b.data for b in disk_batches(tmp_path / "leader") if b.base_offset >= snapshot_id.end_offset]
    assert log_bytes(tmp_path / "follower") == b"".join(after_snapshot)
    assert follower.load_latest_snapshot() == leader.load_latest_snapshot()
    expected = entries(leader, snapshot_id.end_offset)
    assert entries(follower, snapshot_id.end_offset) == expected
    leader.close()
    follower.close()
    with open_log(tmp_path / "follower", **SMALL) as reopened:
        assert reopened.recovery.messages == []
        assert entries(reopened, snapshot_id.end_offset) == expected


def test_a_follower_whose_log_diverged_below_the_snapshot_restarts_at_it(tmp_path: Path) -> None:
    leader, snapshot_id = _leader_past_a_snapshot(tmp_path / "leader")
    follower = leader_log(tmp_path / "follower", [[1, 2, 1], [1] * 12])  # epoch 2 runs past the snapshot's end
    follower.write_snapshot(4, 1, STATE[:3], 0)
    assert follower.next_offset > snapshot_id.end_offset and follower.last_fetched_epoch == snapshot_id.epoch
    _transfer(leader, follower, snapshot_id, 1 << 20, SnapshotId(12, 3))  # as if epoch 3 had written it
    assert follower.truncate_to_latest_snapshot()
    assert follower.next_offset == snapshot_id.end_offset and follower.last_fetched_epoch == 3
    assert follower.snapshots() == [SnapshotId(snapshot_id.end_offset, 3)]  # the older one is gone
    assert sorted(path.name for path in partition_dir(tmp_path / "follower").iterdir()) == [
        f"{snapshot_id.end_offset:020d}-0000000003.checkpoint",
        f"{snapshot_id.end_offset:020d}.log",
        "quorum-state",
    ]
    assert not follower.truncate_to_latest_snapshot()  # done: nothing supersedes the log now
    leader.close()
    follower.close()


def test_nothing_to_restart_without_a_snapshot_that_supersedes_the_log(tmp_path: Path) -> None:
    with leader_log(tmp_path, [[1, 2]]) as log:
        assert not log.truncate_to_latest_snapshot()
        log.write_snapshot(log.next_offset, 1, STATE, 0)
        before = segment_files(tmp_path)
        assert not log.truncate_to_latest_snapshot()
        assert segment_files(tmp_path) == before


@pytest.mark.parametrize("follower_epochs", [[[1]], [[1, 2, 1], [1] * 12]], ids=["log below", "log diverged"])
def test_a_crash_before_the_restart_restarts_the_log_at_open(tmp_path: Path, follower_epochs: list[list[int]]) -> None:
    leader, snapshot_id = _leader_past_a_snapshot(tmp_path / "leader")
    received = SnapshotId(snapshot_id.end_offset, 3)
    with leader_log(tmp_path / "follower", follower_epochs) as follower:
        _transfer(leader, follower, snapshot_id, 1 << 20, received)
    leader.close()
    with open_log(tmp_path / "follower", **SMALL) as reopened:
        assert any("restarts there" in message for message in reopened.recovery.messages)
        assert (reopened.log_start_offset, reopened.next_offset) == (received.end_offset, received.end_offset)
        assert reopened.last_fetched_epoch == 3


def test_a_crash_in_the_middle_of_the_restart_restarts_it_at_open(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    leader, snapshot_id = _leader_past_a_snapshot(tmp_path / "leader")
    received = SnapshotId(snapshot_id.end_offset, 3)
    follower = leader_log(tmp_path / "follower", [[1, 2, 1], [1] * 12], fsync=True)
    _transfer(leader, follower, snapshot_id, 1 << 20, received)
    leader.close()
    with monkeypatch.context() as patch:
        steps = crash_at(3, patch)  # the second segment's deletion: the first is gone
        with pytest.raises(LogError, match="crash at"):
            follower.truncate_to_latest_snapshot()
    assert steps == ["unlink", "fsync dir", "unlink"]
    follower.close()
    with open_log(tmp_path / "follower", **SMALL) as reopened:
        assert (reopened.log_start_offset, reopened.next_offset) == (received.end_offset, received.end_offset)


def test_snapshot_reads_outside_what_the_leader_holds_are_refused(tmp_path: Path) -> None:
    leader, snapshot_id = _leader_past_a_snapshot(tmp_path)
    size = leader.read_snapshot_chunk(snapshot_id, 0, 1).size
    whole = (partition_dir(tmp_path) / "00000000000000000012-0000000002.checkpoint").read_bytes()
    assert leader.read_snapshot_chunk(snapshot_id, size - 3, 100) == (whole[-3:], len(whole))
    with pytest.raises(SnapshotNotFoundError):
        leader.read_snapshot_chunk(SnapshotId(snapshot_id.end_offset, 9), 0, 100)
    for position in (size, -1):
        with pytest.raises(PositionOutOfRangeError):
            leader.read_snapshot_chunk(snapshot_id, position, 100)
    with pytest.raises(ValueError, match="positive"):
        leader.read_snapshot_chunk(snapshot_id, 0, 0)
    leader.write_snapshot(leader.next_offset, leader.last_epoch, STATE, 0)
    leader.apply_retention(0)  # deletes the older snapshot
    with pytest.raises(SnapshotNotFoundError):
        leader.read_snapshot_chunk(snapshot_id, 0, 100)
    leader.close()


def test_a_received_snapshot_is_written_whole_and_valid_or_not_at_all(tmp_path: Path) -> None:
    leader, snapshot_id = _leader_past_a_snapshot(tmp_path / "leader")
    data = leader.read_snapshot_chunk(snapshot_id, 0, 1 << 20).data
    with open_log(tmp_path / "follower", **SMALL) as follower:
        incoming = follower.receive_snapshot(snapshot_id)
        assert incoming is not None
        with pytest.raises(ValueError, match="at byte 5"):
            incoming.append(5, data)
        incoming.append(0, flip_bit(data, 200, 1))
        with pytest.raises(SnapshotError):
            incoming.complete()
        assert follower.snapshots() == [] and list(partition_dir(tmp_path / "follower").glob("*.checkpoint*")) == []
        with pytest.raises(ValueError, match="over"):
            incoming.append(len(data), b"")
        aborted = follower.receive_snapshot(snapshot_id)
        assert aborted is not None
        aborted.append(0, data[:100])
        aborted.abort()
        assert list(partition_dir(tmp_path / "follower").glob("*.checkpoint*")) == []
        _transfer(leader, follower, snapshot_id, 1000)
        assert follower.snapshots() == [snapshot_id]
        assert follower.receive_snapshot(snapshot_id) is None  # held already
        with pytest.raises(ValueError, match="invalid snapshot id"):
            follower.receive_snapshot(SnapshotId(-1, 0))
    leader.close()
