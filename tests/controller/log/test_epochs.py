"""The epoch cache (Kafka's LeaderEpochFileCache) and the Raft questions asked of it: Kafka's own test
cases, then a real log under appends, elections, truncations, snapshots and retention against a
brute-force reading of its files, before and after a reopen."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from controller.log import EpochEnd, FetchCheck, MetadataLog, SnapshotId, ValidatedFetch
from controller.log.epochs import EpochCache, end_offset_for_epoch, validate_offset_and_epoch
from tests.controller.log.helpers import open_log, topic
from tests.controller.log.replicas import SMALL, Batch, disk_batches, epoch_entries, grow


def cache_of(*entries: tuple[int, int]) -> EpochCache:
    cache = EpochCache()
    for epoch, start in entries:
        cache.assign(epoch, start)
    return cache


# ---------------------------------------------------------------------------- Kafka's cases
def test_end_offset_for_follows_kafkas_leader_epoch_file_cache() -> None:
    cache = cache_of((0, 10), (2, 13), (4, 17))
    assert cache.end_offset_for(1, 0) == (0, 13)  # no exact epoch: the one below, ending where 2 starts
    assert cache.end_offset_for(2, 0) == (2, 17)
    assert cache.end_offset_for(3, 0) == (2, 17)
    assert cache.end_offset_for(4, 30) == (4, 30)  # the latest epoch ends at the log end
    assert cache.end_offset_for(5, 30) is None  # above every epoch: UNDEFINED
    assert cache.end_offset_for(-1, 30) is None
    assert EpochCache().end_offset_for(0, 0) is None
    below = cache_of((5, 11), (6, 12), (7, 13))
    assert below.end_offset_for(4, 0) == (4, 11)  # below the first: that epoch, ending at the first start


def test_assign_keeps_the_first_offset_of_each_epoch_and_refuses_going_back() -> None:
    cache = cache_of((2, 6), (2, 7), (3, 9))
    assert cache.entries() == [(2, 6), (3, 9)]
    with pytest.raises(ValueError):
        cache.assign(1, 20)
    with pytest.raises(ValueError):
        cache.assign(4, 9)


def test_truncations_from_either_end_follow_kafka() -> None:
    cache = cache_of((2, 6), (3, 8), (4, 11))
    cache.truncate_from_start(6)
    assert cache.entries() == [(2, 6), (3, 8), (4, 11)]  # on the first boundary: nothing changes
    cache.truncate_from_start(9)
    assert cache.entries() == [(3, 9), (4, 11)]  # between boundaries: the epoch holding it starts there
    cache.truncate_from_start(11)
    assert cache.entries() == [(4, 11)]
    cache = cache_of((2, 6), (3, 8), (4, 11))
    cache.truncate_from_end(11)
    assert cache.entries() == [(2, 6), (3, 8)]
    cache.truncate_from_end(9)
    assert cache.entries() == [(2, 6), (3, 8)]
    cache.truncate_from_end(6)
    assert cache.entries() == []


def test_end_offset_for_epoch_answers_an_old_epoch_with_the_oldest_snapshot() -> None:
    cache = cache_of((3, 10))
    snapshot = SnapshotId(10, 1)
    assert end_offset_for_epoch(cache, 2, 15, snapshot, snapshot) == EpochEnd(1, 10)
    assert end_offset_for_epoch(cache, 3, 15, snapshot, snapshot) == EpochEnd(3, 15)
    assert end_offset_for_epoch(EpochCache(), 3, 10, snapshot, snapshot) == EpochEnd(1, 10)  # no batch: the snapshot's
    assert end_offset_for_epoch(cache, 2, 15, None, None) == EpochEnd(2, 10)


# (epoch cache, offset, epoch, log start, log end, snapshots) -> Kafka's answer (KafkaMetadataLogTest)
KAFKA_VALIDATIONS = [
    ("greater epoch than known", cache_of((1, 0)), 1, 2, 0, 1, [], (FetchCheck.DIVERGING, 1, 1)),
    ("epoch below the oldest snapshot", cache_of((1, 0)), 10, 0, 0, 10, [(10, 1)], (FetchCheck.SNAPSHOT, 1, 10)),
    ("offset below the log start", cache_of((1, 2)), 1, 1, 2, 2, [(2, 1)], (FetchCheck.SNAPSHOT, 1, 2)),
    ("offset at the oldest snapshot", cache_of((1, 0)), 2, 1, 0, 2, [(2, 1)], (FetchCheck.VALID, 1, 2)),
    (
        "unknown epoch between known ones",
        cache_of((1, 10), (2, 15), (4, 20)),
        100,
        3,
        10,
        25,
        [(10, 1)],
        (FetchCheck.DIVERGING, 2, 20),
    ),
    ("epoch below the log's first", cache_of((3, 10)), 100, 2, 10, 15, [(10, 1)], (FetchCheck.DIVERGING, 1, 10)),
    ("offset past the end", cache_of((1, 0)), 2, 1, 0, 1, [], (FetchCheck.DIVERGING, 1, 1)),
    ("offset inside a later epoch", cache_of((1, 0), (2, 10)), 11, 1, 0, 20, [], (FetchCheck.DIVERGING, 1, 10)),
    ("valid", cache_of((1, 0)), 4, 1, 0, 5, [], (FetchCheck.VALID, 1, 4)),
    ("an empty replica", EpochCache(), 0, 0, 0, 0, [], (FetchCheck.VALID, 0, 0)),
    # fencer's log may start below its oldest snapshot: at its start, no epoch is known
    ("at a start no snapshot ends at", cache_of((2, 5)), 5, 1, 5, 20, [(12, 2)], (FetchCheck.SNAPSHOT, 2, 12)),
    ("above it", cache_of((2, 5)), 8, 2, 5, 20, [(12, 2)], (FetchCheck.VALID, 2, 8)),
]


@pytest.mark.parametrize(
    ("cache", "offset", "epoch", "start", "end", "snapshots", "expected"),
    [case[1:] for case in KAFKA_VALIDATIONS],
    ids=[case[0] for case in KAFKA_VALIDATIONS],
)
def test_validate_offset_and_epoch_follows_kafka(
    cache: EpochCache,
    offset: int,
    epoch: int,
    start: int,
    end: int,
    snapshots: list[tuple[int, int]],
    expected: tuple[FetchCheck, int, int],
) -> None:
    snapshot_ids = [SnapshotId(*snapshot) for snapshot in snapshots]
    assert validate_offset_and_epoch(cache, offset, epoch, start, end, snapshot_ids) == ValidatedFetch(*expected)


# ---------------------------------------------------------------------------- a real log against its files
def brute_end_offset(batches: list[Batch], epoch: int, end: int, snapshots: list[SnapshotId]) -> EpochEnd:
    """`end_offset_for_epoch` from the batches themselves: an epoch ends where a later one starts."""
    start = batches[0].base_offset if batches else end
    kept = [snapshot for snapshot in snapshots if snapshot.end_offset >= start]
    last_fetched = batches[-1].epoch if batches else (snapshots[-1].epoch if snapshots else 0)
    found: EpochEnd | None = None
    if epoch != -1 and batches and epoch <= batches[-1].epoch:
        later = [batch.base_offset for batch in batches if batch.epoch > epoch]
        at_or_below = [batch.epoch for batch in batches if batch.epoch <= epoch]
        found = EpochEnd(max(at_or_below, default=epoch), later[0] if later else end)
    if found is None:
        return EpochEnd(last_fetched, end)
    if kept and found == (epoch, kept[0].end_offset):
        return EpochEnd(kept[0].epoch, kept[0].end_offset)
    return found


def test_retention_deleting_every_batch_leaves_no_epoch_a_reopen_would_not_find(tmp_path: Path) -> None:
    log = open_log(tmp_path, **SMALL)
    grow(log, [[1, 2], []])
    log.write_snapshot(log.next_offset, log.last_fetched_epoch, [topic("state")], 0)
    for count in (1, 3):  # the second batch rolls a new segment, which the truncation empties
        log.append([[topic("t")] * count], log.last_epoch, 0)
    log.truncate_to(6)
    log.write_snapshot(log.next_offset, log.last_fetched_epoch, [topic("state")], 0)
    log.apply_retention(0)  # every segment below the newest snapshot goes: no batch is left
    assert disk_batches(tmp_path) == [] and log.log_start_offset == log.next_offset
    check_against_files(log, tmp_path)
    log.close()
    with open_log(tmp_path, **SMALL) as reopened:
        check_against_files(reopened, tmp_path)


def check_against_files(log: MetadataLog, data_dir: Path) -> None:
    batches = disk_batches(data_dir)
    snapshots = log.snapshots()
    assert log.epoch_entries() == epoch_entries(batches)
    last = batches[-1].epoch if batches else (snapshots[-1].epoch if snapshots else 0)
    assert log.last_fetched_epoch == last
    for epoch in range(-1, (batches[-1].epoch if batches else 0) + 3):
        assert log.end_offset_for_epoch(epoch) == brute_end_offset(batches, epoch, log.next_offset, snapshots), epoch
    for batch in batches[:: max(1, len(batches) // 5)]:
        assert log.epoch_for_offset(batch.next_offset - 1) == batch.epoch
    assert log.epoch_for_offset(log.next_offset) is None


OPERATIONS = st.sampled_from(["elect", "append", "append", "truncate", "snapshot", "retain"])


@settings(max_examples=12, deadline=None)
@given(operations=st.lists(OPERATIONS, min_size=3, max_size=12), data=st.data())
def test_the_epoch_cache_is_what_the_files_say_through_every_change(
    tmp_path_factory: pytest.TempPathFactory, operations: list[str], data: st.DataObject
) -> None:
    data_dir = tmp_path_factory.mktemp("log")
    log = open_log(data_dir, **SMALL)
    grow(log, [[1, 2]])
    for operation in operations:
        if operation == "elect":
            grow(log, [[]])
        elif operation == "append":
            for count in data.draw(st.lists(st.integers(1, 3), min_size=1, max_size=6)):
                log.append([[topic("t")] * count], log.last_epoch, 0)
        elif operation == "truncate":
            snapshots = log.snapshots()
            floor = max(log.log_start_offset, snapshots[-1].end_offset if snapshots else 0)
            boundaries = [b.base_offset for b in disk_batches(data_dir) if b.base_offset >= floor] + [log.next_offset]
            log.truncate_to(data.draw(st.sampled_from(boundaries)))
        elif operation == "snapshot":
            log.write_snapshot(log.next_offset, log.last_fetched_epoch, [topic("state")], 0)
        else:
            log.apply_retention(data.draw(st.integers(0, 3_000)))
        check_against_files(log, data_dir)
    log.close()
    with open_log(data_dir, **SMALL) as reopened:
        assert reopened.recovery.messages == []
        check_against_files(reopened, data_dir)
