"""A follower's appends: the leader's bytes verbatim, checked as recovery checks them, refused whole."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from controller.log import InvalidRecordsError, MetadataLog
from protocol.records.batch_writer import metadata_batch
from protocol.records.control import LeaderChangeMessage, LeaderChangeMessageVoter, control_batch
from protocol.records.metadata_value import encode_metadata_value
from tests.controller.log.helpers import entries, flip_bit, open_log, tiny, topic
from tests.controller.log.replicas import SMALL, disk_batches, leader_log, replicate, segment_files

EPOCHS = [[1, 2, 1], [3, 1, 1, 1, 2], [1] * 5, [2, 2]]


@pytest.mark.parametrize("max_bytes", [0, 200, 1 << 20])
def test_a_follower_fed_the_leaders_reads_ends_byte_identical(tmp_path: Path, max_bytes: int) -> None:
    with leader_log(tmp_path / "leader", EPOCHS) as leader, open_log(tmp_path / "follower", **SMALL) as follower:
        fetches = replicate(leader, follower, max_bytes)
        assert fetches >= 4  # one segment at most per fetch
        assert segment_files(tmp_path / "follower") == segment_files(tmp_path / "leader")
        assert follower.epoch_entries() == leader.epoch_entries()
        assert (follower.next_offset, follower.last_epoch) == (leader.next_offset, leader.last_epoch)
        assert follower.read_records(0, 1 << 20) == leader.read_records(0, 1 << 20)
        expected = entries(leader)
    with open_log(tmp_path / "follower", **SMALL) as reopened:
        assert reopened.recovery.messages == []
        assert entries(reopened) == expected


def test_a_follower_continues_as_leader_in_a_later_epoch(tmp_path: Path) -> None:
    with leader_log(tmp_path / "leader", EPOCHS) as leader, open_log(tmp_path / "follower", **SMALL) as follower:
        replicate(leader, follower, 1 << 20)
        epoch = follower.last_epoch + 1
        follower.append_leader_change(epoch, 2, 0)
        follower.append([[topic("new leader")]], epoch, 0)
        assert follower.epoch_entries()[-1] == (epoch, leader.next_offset)
        assert follower.read_records(leader.next_offset, 1 << 20).records == b"".join(
            batch.data for batch in disk_batches(tmp_path / "follower")[-2:]
        )


def test_a_follower_append_is_one_write_and_one_fsync_per_segment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    leader_log(tmp_path / "leader", [[1] * 8]).close()
    raw = b"".join(batch.data for batch in disk_batches(tmp_path / "leader"))  # 9 batches: 6, then 3
    options = {**SMALL, "fsync": True}
    with open_log(tmp_path / "follower", **options) as follower:
        calls: list[str] = []
        real_write, real_fsync = os.write, os.fsync

        def write(fd: int, data: bytes) -> int:
            calls.append("write")
            return real_write(fd, data)

        def fsync(fd: int) -> None:
            calls.append("fsync")
            real_fsync(fd)

        monkeypatch.setattr(os, "write", write)
        monkeypatch.setattr(os, "fsync", fsync)
        assert follower.append_as_follower(raw) == 9
        # a write and an fsync for the first segment, the roll's directory fsync, then the second's
        assert calls == ["write", "fsync", "fsync", "write", "fsync"]


def test_a_batch_cut_short_at_the_end_is_left_out(tmp_path: Path) -> None:
    with leader_log(tmp_path / "leader", [[1, 1, 1]]) as leader, open_log(tmp_path / "follower", **SMALL) as follower:
        raw = leader.read_records(0, 1 << 20).records
        assert follower.append_as_follower(raw[:-10]) == 3
        assert follower.append_as_follower(raw[disk_batches(tmp_path / "leader")[3].position :]) == 4
        assert segment_files(tmp_path / "follower") == segment_files(tmp_path / "leader")


def _leader_raw(tmp_path: Path) -> tuple[bytes, list[bytes]]:
    """A leader's batches, all of them and each: offsets 0 | 1 | 2-3 at epoch 1, 4 | 5 | 6 at epoch 2."""
    leader_log(tmp_path / "leader", [[1, 2], [1, 1]]).close()
    batches = [batch.data for batch in disk_batches(tmp_path / "leader")]
    return b"".join(batches), batches


def _refusals(raw: bytes, batches: list[bytes]) -> dict[str, bytes]:
    first, second, third = batches[0], batches[1], batches[2]
    data_epoch_2 = metadata_batch(4, 2, 0, [encode_metadata_value(*tiny())])
    voter = LeaderChangeMessageVoter(voter_id=1)
    change = LeaderChangeMessage(version=0, leader_id=1, voters=(voter,), granting_voters=(voter,))
    return {
        "empty": b"",
        "only part of a batch": first[:40],
        "a flipped bit in a record": flip_bit(raw, len(first) + 70, 3),
        "an offset skipped": first + third,
        "not at the log end": second,
        "an epoch going down": first + second + third + control_batch(4, 0, 0, [(change, 0)]),
        "a data batch raising the epoch": first + second + third + data_epoch_2,
        "a negative epoch": control_batch(0, -1, 0, [(change, 0)]),
        "a length below the header": first + bytes(8) + (5).to_bytes(4, "big") + bytes(60),
        "garbage": bytes(range(256)) * 2,
    }


@pytest.mark.parametrize(
    "case",
    [
        "empty",
        "only part of a batch",
        "a flipped bit in a record",
        "an offset skipped",
        "not at the log end",
        "an epoch going down",
        "a data batch raising the epoch",
        "a negative epoch",
        "a length below the header",
        "garbage",
    ],
)
def test_invalid_input_is_refused_and_changes_nothing(tmp_path: Path, case: str) -> None:
    raw, batches = _leader_raw(tmp_path)
    with open_log(tmp_path / "follower", **SMALL) as follower:
        before = _state(follower, tmp_path / "follower")
        with pytest.raises(InvalidRecordsError):
            follower.append_as_follower(_refusals(raw, batches)[case])
        assert _state(follower, tmp_path / "follower") == before
        assert follower.append_as_follower(raw) == 7  # and the log goes on


def test_input_continuing_a_log_is_checked_against_its_last_epoch(tmp_path: Path) -> None:
    _, batches = _leader_raw(tmp_path)
    with open_log(tmp_path / "follower", **SMALL) as follower:
        follower.append_as_follower(b"".join(batches[:3]))
        before = _state(follower, tmp_path / "follower")
        with pytest.raises(InvalidRecordsError, match="epoch 0 is below"):
            follower.append_as_follower(metadata_batch(4, 0, 0, [encode_metadata_value(*tiny())]))
        with pytest.raises(InvalidRecordsError, match="base offset 2, expected 4"):
            follower.append_as_follower(batches[2])  # a fetch answered twice
        assert _state(follower, tmp_path / "follower") == before
        assert follower.append_as_follower(b"".join(batches[3:])) == 7


def _state(log: MetadataLog, data_dir: Path) -> tuple[object, ...]:
    return (log.next_offset, log.last_epoch, log.epoch_entries(), log.sizes, segment_files(data_dir))
