"""A follower's truncation of a divergent tail: at every batch boundary, refusals, a crash at every step."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from controller.log import FetchCheck, LogError, MetadataLog, ValidatedFetch, replication
from tests.controller.log.helpers import RecordAndVersion, entries, open_log, tiny, topic
from tests.controller.log.replicas import (
    SMALL,
    copy_dir,
    disk_batches,
    epoch_entries,
    expected_read,
    leader_log,
    log_bytes,
    segment_files,
)

EPOCHS = [[1, 2, 1], [3, 1, 1, 1, 2], [1] * 5, [2, 2]]


def test_truncating_at_every_batch_boundary_leaves_that_prefix_which_reopens_the_same(tmp_path: Path) -> None:
    leader_log(tmp_path / "original", EPOCHS).close()
    original, batches = log_bytes(tmp_path / "original"), disk_batches(tmp_path / "original")
    for case, boundary in enumerate([batch.base_offset for batch in batches]):
        data_dir = copy_dir(tmp_path / "original", tmp_path / f"case-{case}")
        kept = [batch for batch in batches if batch.base_offset < boundary]
        kept_bytes = sum(len(batch.data) for batch in kept)
        with open_log(data_dir, **SMALL) as log:
            log.truncate_to(boundary)
            assert log_bytes(data_dir) == original[:kept_bytes]
            assert (log.next_offset, log.sizes.segments, log.bytes_since_snapshot) == (boundary, kept_bytes, kept_bytes)
            assert log.epoch_entries() == epoch_entries(kept)
            assert log.last_epoch == (kept[-1].epoch if kept else 0)
            assert max(int(name[:20]) for name in segment_files(data_dir)) <= boundary
            for offset in range(0, boundary, 3):
                assert log.read_records(offset, 250).records == expected_read(data_dir, offset, 250)
            log.append_leader_change(log.last_epoch + 1, 2, 0)  # a new leader's log goes on from there
            log.append([[topic("after")]], log.last_epoch, 0)
            assert log.read_records(boundary, 1 << 20).records == expected_read(data_dir, boundary, 1 << 20)
            state = (entries(log), log.epoch_entries(), log.sizes, log.bytes_since_snapshot)
        with open_log(data_dir, **SMALL) as reopened:
            assert reopened.recovery.messages == []
            assert (entries(reopened), reopened.epoch_entries(), reopened.sizes, reopened.bytes_since_snapshot) == state


def test_truncation_to_the_end_or_past_it_does_nothing(tmp_path: Path) -> None:
    with leader_log(tmp_path, EPOCHS) as log:
        before = segment_files(tmp_path), log.next_offset, log.epoch_entries()
        log.truncate_to(log.next_offset)
        log.truncate_to(log.next_offset + 5)
        assert (segment_files(tmp_path), log.next_offset, log.epoch_entries()) == before


def test_truncation_inside_a_batch_or_below_a_snapshot_is_refused(tmp_path: Path) -> None:
    with leader_log(tmp_path, EPOCHS) as log:
        two_records = next(batch for batch in disk_batches(tmp_path) if batch.next_offset - batch.base_offset == 2)
        before = segment_files(tmp_path), log.next_offset, log.epoch_entries()
        with pytest.raises(ValueError, match=f"batch {two_records.base_offset}..{two_records.base_offset + 1}"):
            log.truncate_to(two_records.base_offset + 1)
        snapshot_end = disk_batches(tmp_path)[10].base_offset
        log.write_snapshot(snapshot_end, log.epoch_for_offset(snapshot_end - 1) or 0, [topic("state")], 0)
        with pytest.raises(ValueError, match=f"below {snapshot_end} are in a snapshot"):
            log.truncate_to(snapshot_end - 1)
        log.delete_segments_below(snapshot_end)
        with pytest.raises(ValueError, match="cannot truncate"):
            log.truncate_to(log.log_start_offset - 1)
        assert log.next_offset == before[1] and log.epoch_entries()[-1] == before[2][-1]
        log.truncate_to(snapshot_end)  # at the snapshot's end: allowed
        assert log.next_offset == snapshot_end


def test_a_snapshot_being_written_holds_truncation_above_its_end(tmp_path: Path) -> None:
    log = leader_log(tmp_path, EPOCHS)
    end = log.next_offset
    writing, release = threading.Event(), threading.Event()

    def records() -> Iterator[RecordAndVersion]:
        yield topic("first")
        writing.set()
        assert release.wait(20)
        yield topic("last")

    snapshotter = threading.Thread(target=lambda: log.write_snapshot(end, log.last_epoch, records(), 0), daemon=True)
    snapshotter.start()
    assert writing.wait(20)
    with pytest.raises(ValueError, match=f"below {end} are in a snapshot"):
        log.truncate_to(end - 1)
    release.set()
    snapshotter.join(20)
    assert log.snapshots()[-1].end_offset == end
    log.close()


class Crash(OSError):
    """The machine stops here: nothing after this step reaches the disk."""


def crash_at(step: int, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Make the `step`-th file operation of a truncation raise (unlink, directory fsync, truncate)."""
    steps: list[str] = []

    def counted(name: str, real: Callable[..., object]) -> Callable[..., object]:
        def operation(*args: object, **kwargs: object) -> object:
            steps.append(name)
            if len(steps) == step:
                raise Crash(f"crash at {name}")
            return real(*args, **kwargs)

        return operation

    monkeypatch.setattr(Path, "unlink", counted("unlink", Path.unlink))
    monkeypatch.setattr(replication, "fsync_directory", counted("fsync dir", replication.fsync_directory))
    monkeypatch.setattr(os, "ftruncate", counted("truncate", os.ftruncate))
    return steps


def test_a_crash_at_any_step_of_a_truncation_leaves_a_prefix_that_recovery_takes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    leader_log(tmp_path / "original", EPOCHS).close()
    original, batches = log_bytes(tmp_path / "original"), disk_batches(tmp_path / "original")
    target = batches[4].base_offset  # three later segments to delete
    segments_after = {batch.path.name for batch in batches if batch.base_offset > target} - {batches[4].path.name}
    assert len(segments_after) >= 2
    for step in range(1, 2 * len(segments_after) + 2):
        data_dir = copy_dir(tmp_path / "original", tmp_path / f"crash-{step}")
        log = open_log(data_dir, **{**SMALL, "fsync": True})
        with monkeypatch.context() as patch:
            steps = crash_at(step, patch)
            with pytest.raises(LogError, match="crash at"):
                log.truncate_to(target)
        assert len(steps) == step
        with pytest.raises(LogError):
            log.append([[tiny()]], log.last_epoch, 0)  # unusable until a restart
        log.close()
        with open_log(data_dir, **SMALL) as recovered:
            assert recovered.recovery.messages == []
            assert original.startswith(log_bytes(data_dir))
            assert target <= recovered.next_offset
            assert recovered.epoch_entries() == epoch_entries(disk_batches(data_dir))


def _follower_with_a_divergent_tail(tmp_path: Path) -> tuple[MetadataLog, MetadataLog]:
    """A follower that got epoch 2 in part, then led epoch 3 alone; the leader of epoch 4 never saw it:
    leader 0-3 | 4-7 (epoch 2) | 8-10 (epoch 4), follower 0-3 | 4-5 (epoch 2) | 6-7 (epoch 3)."""
    leader = leader_log(tmp_path / "leader", [[1, 2], [1, 1, 1]])
    leader.append_leader_change(4, 1, 0)
    leader.append([[tiny()], [tiny(), tiny()]], 4, 0)
    follower = open_log(tmp_path / "follower", **SMALL)
    follower.append_as_follower(b"".join(batch.data for batch in disk_batches(tmp_path / "leader")[:5]))
    follower.append_leader_change(3, 2, 0)
    follower.append([[topic("lost")]], 3, 0)
    return leader, follower


def test_a_diverging_follower_truncates_where_the_leader_says_and_then_matches_it(tmp_path: Path) -> None:
    leader, follower = _follower_with_a_divergent_tail(tmp_path)
    assert (follower.next_offset, follower.last_fetched_epoch) == (8, 3)
    check = leader.validate_offset_and_epoch(follower.next_offset, follower.last_fetched_epoch)
    assert check == ValidatedFetch(FetchCheck.DIVERGING, 2, 8)
    local = follower.end_offset_for_epoch(check.epoch)  # Kafka's truncateToEndOffset
    assert local == (2, 6)
    follower.truncate_to(min(local.end_offset, check.end_offset) if local.epoch == check.epoch else local.end_offset)
    assert leader.validate_offset_and_epoch(6, follower.last_fetched_epoch) == ValidatedFetch(FetchCheck.VALID, 2, 6)
    while follower.next_offset < leader.next_offset:
        follower.append_as_follower(leader.read_records(follower.next_offset, 1 << 20).records)
    assert segment_files(tmp_path / "follower") == segment_files(tmp_path / "leader")
    leader.close()
    follower.close()
