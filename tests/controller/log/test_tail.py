"""The log's tail (`controller.log.tail`): what a follower's standby reads back and what a leader
answers fetches with, from memory, is what the files hold, through appends, truncations, snapshot
resets and a tail too small to hold everything."""

from __future__ import annotations

from pathlib import Path

import pytest

from controller.log import MetadataLog, tail
from tests.controller.log.helpers import open_log
from tests.controller.log.replicas import SMALL, expected_read, grow, leader_log, replicate

EPOCHS = [[1, 2, 1, 3], [1] * 6, [2, 1, 1, 2, 1, 1]]


def entries_on_disk(data_dir: Path, start: int) -> list[object]:
    with open_log(data_dir, **SMALL) as reopened:  # a reopened log reads its files
        return list(reopened.read(start))


def check_reads(log: MetadataLog, data_dir: Path) -> None:
    for offset in range(log.log_start_offset, log.next_offset + 1):
        assert list(log.read(offset)) == entries_on_disk(data_dir, offset), offset
        for max_bytes in (0, 200, 1 << 20):
            assert log.read_records(offset, max_bytes).records == expected_read(data_dir, offset, max_bytes)


@pytest.mark.parametrize("batches_held", [tail.TAIL_BATCHES, 3])
def test_a_followers_reads_from_its_tail_are_what_its_files_hold(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, batches_held: int
) -> None:
    monkeypatch.setattr(tail, "TAIL_BATCHES", batches_held)
    leader = leader_log(tmp_path / "leader", EPOCHS)
    follower = open_log(tmp_path / "follower", **SMALL)
    replicate(leader, follower, 250)
    assert follower._tail.decoded(follower.next_offset - 1) is not None
    check_reads(follower, tmp_path / "follower")
    follower.truncate_to(9)  # a divergent tail cut: nothing of it may be read from memory
    check_reads(follower, tmp_path / "follower")
    grow(follower, [[2, 1]])  # then its own batches as a leader, after the replicated ones
    check_reads(follower, tmp_path / "follower")
    leader.close()
    follower.close()


def test_a_leaders_tail_answers_fetches_as_its_files_would(tmp_path: Path) -> None:
    log = leader_log(tmp_path, EPOCHS)
    check_reads(log, tmp_path)
    assert log._tail.records(log.next_offset - 1, 0)
    log.truncate_to(8)
    grow(log, [[1, 1]])
    check_reads(log, tmp_path)
    log.close()


def test_the_tail_holds_no_more_than_its_bounds(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(tail, "TAIL_BYTES", 300)
    log = leader_log(tmp_path, EPOCHS)
    held = log._tail._batches[log._tail._first :]
    assert 0 < sum(len(batch.raw) for batch in held) <= 300
    assert held[-1].end_offset == log.next_offset
    check_reads(log, tmp_path)
    log.close()
