"""The local log as the Raft core sees it: the epoch cache's answers (after Kafka's
LeaderEpochFileCacheTest and KafkaMetadataLogTest), a leader's fetch checks, truncations, snapshots."""

from __future__ import annotations

import pytest

from controller.raft import Batch, Epoch, EpochStart, LogView, OffsetAndEpoch
from controller.raft.log import LogViewError


def log(end: int, *epochs: tuple[int, int], snapshot: tuple[int, int] | None = None) -> LogView:
    cache = tuple(EpochStart(Epoch(epoch), start) for epoch, start in epochs)
    return LogView.recovered(end, cache, None if snapshot is None else OffsetAndEpoch(snapshot[0], Epoch(snapshot[1])))


def at(offset: int, epoch: int) -> OffsetAndEpoch:
    return OffsetAndEpoch(offset, Epoch(epoch))


def test_end_offset_for_epoch() -> None:
    view = log(20, (2, 6), (4, 11), (5, 15))
    assert view.end_offset_for_epoch(5) == at(20, 5)  # the last epoch ends at the log end
    assert view.end_offset_for_epoch(4) == at(15, 4)
    assert view.end_offset_for_epoch(3) == at(11, 2)  # unknown: the epoch before it, where the next starts
    assert view.end_offset_for_epoch(1) == at(6, 1)  # before every epoch: where the first starts
    assert view.end_offset_for_epoch(7) == at(20, 5)  # after every epoch: the log's end
    assert view.end_offset_for_epoch(-1) == at(20, 5)
    assert LogView().end_offset_for_epoch(3) == at(0, 0)


def test_end_offset_for_an_epoch_the_snapshot_holds() -> None:
    view = log(20, (3, 10), (4, 15), snapshot=(10, 2))
    assert view.end_offset_for_epoch(1) == at(10, 2)  # ends where the log starts: the snapshot's id
    assert view.end_offset_for_epoch(3) == at(15, 3)
    empty = log(10, snapshot=(10, 2))
    assert empty.last_epoch == 2 and empty.end == at(10, 2)


def test_a_leaders_fetch_check() -> None:
    view = log(20, (1, 0), (3, 8))
    assert view.check_fetch(0, 0).kind == "valid"
    assert view.check_fetch(8, 1).kind == "valid"
    assert view.check_fetch(20, 3).kind == "valid"
    assert view.check_fetch(12, 2).offset_and_epoch == at(8, 1)  # an epoch this log never had
    assert view.check_fetch(9, 1).offset_and_epoch == at(8, 1)  # epoch 1 ends before the fetch offset
    assert view.check_fetch(21, 3).offset_and_epoch == at(20, 3)  # past the end
    snapshotted = log(20, (3, 10), snapshot=(10, 1))
    assert snapshotted.check_fetch(5, 1).offset_and_epoch == at(10, 1)
    assert snapshotted.check_fetch(5, 1).kind == "snapshot"
    assert snapshotted.check_fetch(0, 0).kind == "snapshot"  # an empty fetcher
    assert snapshotted.check_fetch(10, 0).kind == "snapshot"  # at the start, another epoch
    assert snapshotted.check_fetch(10, 1).kind == "valid"
    assert snapshotted.check_fetch(12, 3).kind == "valid"


def test_a_followers_truncation_offset() -> None:
    follower = log(9, (1, 0), (2, 5))
    assert follower.truncation_offset(at(5, 1)) == 5
    assert follower.truncation_offset(at(7, 2)) == 7  # the leader's end of epoch 2 comes first
    assert follower.truncation_offset(at(12, 2)) == 9  # the follower's own end of epoch 2 comes first
    assert follower.truncation_offset(at(3, 0)) == 3
    assert log(9, (1, 0), (3, 5)).truncation_offset(at(7, 2)) == 5  # no epoch 2 here: where epoch 1 ends


def test_appends_and_truncations() -> None:
    view = LogView().appended((Batch(0, 2, Epoch(1)), Batch(3, 3, Epoch(1)), Batch(4, 6, Epoch(3))))
    assert view.end == at(7, 3) and view.epochs == (EpochStart(Epoch(1), 0), EpochStart(Epoch(3), 4))
    assert view.epoch_at(3) == 1 and view.epoch_at(4) == 3 and view.epoch_at(7) is None
    flushed = view.flushed(5)
    assert flushed.flushed_end_offset == 5 and flushed.flushed(3).flushed_end_offset == 5
    truncated = flushed.truncated(4)
    assert truncated.end == at(4, 1) and truncated.flushed_end_offset == 4
    with pytest.raises(LogViewError):
        view.appended((Batch(8, 8, Epoch(3)),))  # a gap
    with pytest.raises(LogViewError):
        view.appended((Batch(7, 7, Epoch(2)),))  # an epoch going back


def test_snapshots_move_the_start() -> None:
    view = log(20, (1, 0), (3, 8))
    created = view.snapshot_created(at(10, 3))
    assert created.start_offset == 10 and created.snapshot == at(10, 3)
    assert created.epochs == (EpochStart(Epoch(3), 10),)
    assert created.last_epoch == 3 and created.end == at(20, 3)
    whole = view.snapshot_created(at(20, 3))
    assert whole.epochs == () and whole.end == at(20, 3)
    installed = view.snapshot_installed(at(40, 5))
    assert (installed.start_offset, installed.end_offset, installed.flushed_end_offset) == (40, 40, 40)
    assert installed.end == at(40, 5)
    with pytest.raises(LogViewError):
        created.truncated(5)
