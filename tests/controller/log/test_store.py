"""MetadataLog: formatting, identity checks, group commit, epochs, rolling, reading back."""

from __future__ import annotations

import errno
import os
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from controller.log import LogError, MetadataLog
from controller.log import store as store_module
from controller.log.ids import parse_uuid_string
from protocol.errors import EncodeError
from protocol.records.control import LeaderChangeMessage, LeaderChangeMessageVoter
from protocol.spec import Data
from tests.controller.log.helpers import (
    build_log,
    entries,
    isr_change,
    metadata_records,
    open_log,
    partition_dir,
    segment,
    tiny,
    topic,
)


# ---------------------------------------------------------------------------- format and identity
def test_first_open_formats_meta_properties_in_kafkas_format(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    with MetadataLog.open(data_dir, node_id=3) as log:
        lines = (data_dir / "meta.properties").read_text().splitlines()
        assert lines[0] == "#"
        assert re.fullmatch(r"#[A-Z][a-z]{2} [A-Z][a-z]{2} \d\d \d\d:\d\d:\d\d \S+ \d{4}", lines[1])
        assert lines[2:] == [
            f"cluster.id={log.cluster_id}",
            lines[3],
            "node.id=3",
            "version=1",
        ]
        assert re.fullmatch(r"directory\.id=[A-Za-z0-9_-]{22}", lines[3])
        assert len(log.cluster_id) == 22 and not log.cluster_id.startswith("-")
        parse_uuid_string(log.cluster_id)
        assert (log.node_id, log.next_offset, log.last_epoch) == (3, 0, 0)
        assert segment(data_dir).exists()
        assert any("formatted" in message for message in log.recovery.messages)


def test_reopen_keeps_the_cluster_id_and_a_given_id_is_used(tmp_path: Path) -> None:
    with MetadataLog.open(tmp_path / "a") as log:
        generated = log.cluster_id
    with MetadataLog.open(tmp_path / "a") as log:
        assert log.cluster_id == generated
        assert log.recovery.messages == []
    with MetadataLog.open(tmp_path / "b", cluster_id="my-cluster_1.0") as log:
        assert log.cluster_id == "my-cluster_1.0"
    with MetadataLog.open(tmp_path / "b", cluster_id="my-cluster_1.0") as log:
        assert log.cluster_id == "my-cluster_1.0"


def test_a_different_cluster_id_is_refused_naming_both(tmp_path: Path) -> None:
    MetadataLog.open(tmp_path, cluster_id="first-cluster").close()
    with pytest.raises(LogError, match="cluster id mismatch") as caught:
        MetadataLog.open(tmp_path, cluster_id="second-cluster")
    assert "first-cluster" in str(caught.value) and "second-cluster" in str(caught.value)


def test_a_different_node_id_is_refused(tmp_path: Path) -> None:
    MetadataLog.open(tmp_path, node_id=1).close()
    with pytest.raises(LogError, match=r"node id mismatch.*node\.id=1.*node id 2"):
        MetadataLog.open(tmp_path, node_id=2)


def test_a_file_or_a_path_under_a_file_is_not_a_data_dir(tmp_path: Path) -> None:
    a_file = tmp_path / "file"
    a_file.write_text("x")
    with pytest.raises(LogError, match="not a directory"):
        MetadataLog.open(a_file)
    with pytest.raises(LogError, match="cannot use data directory"):
        MetadataLog.open(a_file / "data")


@pytest.mark.skipif(not Path("/sys/kernel").is_dir(), reason="needs sysfs, where even root cannot create a directory")
def test_a_path_nobody_can_create_is_a_log_error() -> None:
    with pytest.raises(LogError, match="cannot use data directory /sys/fencer-data"):
        MetadataLog.open(Path("/sys/fencer-data"))


def test_bad_identity_files_and_ids_are_refused(tmp_path: Path) -> None:
    with pytest.raises(LogError, match="invalid cluster id"):
        MetadataLog.open(tmp_path / "a", cluster_id="has space")
    (tmp_path / "v2").mkdir()
    (tmp_path / "v2" / "meta.properties").write_text("version=2\nnode.id=1\ncluster.id=x\n")
    with pytest.raises(LogError, match=r"v2/meta\.properties: version is '2'"):
        MetadataLog.open(tmp_path / "v2")
    build_log(tmp_path / "lost", [[topic("a")]]).close()
    (tmp_path / "lost" / "meta.properties").unlink()
    with pytest.raises(LogError, match=r"no meta\.properties"):
        MetadataLog.open(tmp_path / "lost")


# ---------------------------------------------------------------------------- appending
def test_each_group_is_one_batch_and_gets_its_base_offset(tmp_path: Path) -> None:
    with open_log(tmp_path) as log:
        assert log.append_leader_change(1, 7, 1_000) == 0
        groups = [[topic("a"), isr_change(0, (1, 2))], [], [topic("b"), topic("c"), tiny()], [tiny()]]
        assert log.append(groups, 1, 2_000) == [1, 3, 3, 6]
        assert log.next_offset == 7
        batches = [batch for _, _, batch in log.batches()]
        assert [(b.base_offset, len(b.records), b.partition_leader_epoch) for b in batches] == [
            (0, 1, 1),
            (1, 2, 1),
            (3, 3, 1),
            (6, 1, 1),
        ]
        assert [b.is_control for b in batches] == [True, False, False, False]
        assert all(b.base_timestamp == b.max_timestamp == 2_000 for b in batches[1:])
        assert log.append([[], []], 1, 3_000) == [7, 7]
        assert log.next_offset == 7


def test_a_group_commit_is_one_write_and_one_fsync(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []
    real_write, real_fsync = os.write, os.fsync

    def write(fd: int, data: bytes) -> int:
        calls.append("write")
        return real_write(fd, data)

    def fsync(fd: int) -> None:
        calls.append("fsync")
        real_fsync(fd)

    with open_log(tmp_path) as log:
        log.append_leader_change(1, 1, 0)
        monkeypatch.setattr(os, "write", write)
        monkeypatch.setattr(os, "fsync", fsync)
        log.append([[topic(str(i)), tiny()] for i in range(50)], 1, 0)
        assert calls == ["write", "fsync"]
        calls.clear()
        log.append_leader_change(2, 1, 0)
        # the batch's write and fsync, then quorum-state's: its temporary file, then its directory
        assert calls == ["write", "fsync", "fsync", "fsync"]


def test_a_commit_across_a_roll_writes_each_segment_once_and_fsyncs_the_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[str] = []
    real_write, real_fsync, real_fsync_directory = os.write, os.fsync, store_module.fsync_directory

    def write(fd: int, data: bytes) -> int:
        calls.append("write")
        return real_write(fd, data)

    def fsync(fd: int) -> None:
        calls.append("fsync")
        real_fsync(fd)

    def fsync_directory(directory: Path) -> None:
        calls.append("fsync directory")
        real_fsync_directory(directory)

    with open_log(tmp_path, segment_bytes=300) as log:
        log.append_leader_change(1, 1, 0)
        monkeypatch.setattr(os, "write", write)
        monkeypatch.setattr(os, "fsync", fsync)
        monkeypatch.setattr(store_module, "fsync_directory", fsync_directory)
        log.append([[topic("a")], [topic("b")], [topic("c")], [topic("d")]], 1, 0)
        # the old segment's write and fsync, the new file made durable, the new segment's write and fsync
        assert calls == ["write", "fsync", "fsync directory", "fsync", "write", "fsync"]
        assert len(list(partition_dir(tmp_path).glob("*.log"))) == 2


def test_fsync_false_skips_every_fsync(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(fd: int) -> None:
        raise AssertionError("fsync called")

    monkeypatch.setattr(os, "fsync", refuse)
    with open_log(tmp_path, fsync=False, segment_bytes=200) as log:
        log.append_leader_change(1, 1, 0)
        log.append([[topic("a")], [topic("b")], [topic("c")]], 1, 0)
        log.write_snapshot(log.next_offset, 1, [topic("a")], 0)


@settings(max_examples=25)
@given(groups=st.lists(st.lists(metadata_records(), max_size=6), min_size=1, max_size=6), data=st.data())
def test_records_read_back_equal_what_was_appended(
    tmp_path_factory: pytest.TempPathFactory, groups: list[list[tuple[Data, int]]], data: st.DataObject
) -> None:
    segment_bytes = data.draw(st.sampled_from([150, 1000, 1 << 30]))
    data_dir = tmp_path_factory.mktemp("log")
    with open_log(data_dir, segment_bytes=segment_bytes) as log:
        log.append_leader_change(1, 1, 100)
        offsets = log.append(groups, 1, 200)
        expected: list[tuple[int, int, Data, int, bool]] = []
        for base, group in zip(offsets, groups, strict=True):
            expected += [(base + i, 1, record, version, False) for i, (record, version) in enumerate(group)]
        assert entries(log)[1:] == expected
        assert len(list(log.batches())) == 1 + sum(1 for group in groups if group)
    with open_log(data_dir, segment_bytes=segment_bytes) as reopened:
        assert entries(reopened)[1:] == expected
        assert reopened.next_offset == 1 + sum(len(group) for group in groups)


def test_an_unencodable_group_writes_nothing(tmp_path: Path) -> None:
    with build_log(tmp_path, [[topic("a")]]) as log:
        size = segment(tmp_path).stat().st_size
        with pytest.raises(EncodeError):
            log.append([[topic("b")], [(LeaderChangeMessage(), 0)]], 1, 0)
        assert (log.next_offset, segment(tmp_path).stat().st_size) == (2, size)


def test_a_failed_write_fails_the_log_until_restart(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    log = build_log(tmp_path, [[topic("a")]])

    def full(fd: int, data: bytes) -> int:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "write", full)
    with pytest.raises(LogError, match="No space left"):
        log.append([[topic("b")]], 1, 0)
    monkeypatch.undo()
    with pytest.raises(LogError, match="failed"):
        log.append([[topic("c")]], 1, 0)
    log.close()
    with open_log(tmp_path) as reopened:
        assert [e[2] for e in entries(reopened)][1:] == [topic("a")[0]]
        assert reopened.next_offset == 2


def test_a_closed_log_refuses_appends(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    log.close()
    log.close()
    with pytest.raises(LogError, match="closed"):
        log.append([[topic("a")]], 0, 0)


# ---------------------------------------------------------------------------- epochs
def test_the_leader_change_starts_an_epoch(tmp_path: Path) -> None:
    with open_log(tmp_path) as log:
        assert log.last_epoch == 0
        log.append_leader_change(log.last_epoch + 1, 5, 1_000)
        log.append([[topic("a")]], 1, 2_000)
    with open_log(tmp_path) as log:
        assert log.last_epoch == 1
        assert log.append_leader_change(log.last_epoch + 1, 5, 3_000) == 2
        first, _, second = list(log.read())
        voter = LeaderChangeMessageVoter(voter_id=5)
        assert first.record == LeaderChangeMessage(leader_id=5, voters=(voter,), granting_voters=(voter,))
        assert (first.offset, first.epoch, first.timestamp_ms, first.version, first.control) == (0, 1, 1_000, 0, True)
        assert (second.offset, second.epoch, second.control) == (2, 2, True)
    with open_log(tmp_path) as log:
        assert log.last_epoch == 2


def test_appends_must_carry_the_current_epoch(tmp_path: Path) -> None:
    with open_log(tmp_path) as log:
        log.append_leader_change(2, 1, 0)
        with pytest.raises(ValueError, match="stale epoch 1"):
            log.append([[topic("a")]], 1, 0)
        with pytest.raises(ValueError, match=r"append_leader_change\(3"):
            log.append([[topic("a")]], 3, 0)
        with pytest.raises(ValueError, match="must raise the epoch"):
            log.append_leader_change(2, 1, 0)
        assert log.next_offset == 1


# ---------------------------------------------------------------------------- segments
def test_segments_roll_and_reads_cross_them(tmp_path: Path) -> None:
    groups = [[topic(f"topic-{i}")] for i in range(20)]
    with build_log(tmp_path, groups, segment_bytes=300) as log:
        files = sorted(partition_dir(tmp_path).glob("*.log"))
        assert len(files) > 3
        for path in files:  # named by the base offset of its first batch, never past segment_bytes
            first_batch = next(batch for file, _, batch in log.batches() if file == path)
            assert path.name == f"{first_batch.base_offset:020d}.log"
            assert path.stat().st_size <= 300
        expected = entries(log)
        assert [e[0] for e in expected] == list(range(21))
        assert entries(log, 13) == expected[13:]
    with open_log(tmp_path, segment_bytes=300) as log:
        assert entries(log) == expected
        assert log.append([[topic("more")]], 1, 0) == [21]
        assert entries(log)[-1][2] == topic("more")[0]


def test_a_batch_larger_than_a_segment_gets_a_segment_of_its_own(tmp_path: Path) -> None:
    with build_log(tmp_path, [[topic("a")]], segment_bytes=200) as log:
        log.append([[topic(str(i)) for i in range(10)], [topic("after")]], 1, 0)
        sizes = [path.stat().st_size for path in sorted(partition_dir(tmp_path).glob("*.log"))]
        assert len(sizes) == 3 and sizes[1] > 200
        assert [e[0] for e in entries(log)] == list(range(13))


def test_bytes_since_snapshot_counts_batches_and_survives_reopen(tmp_path: Path) -> None:
    with build_log(tmp_path, [[topic("a")], [topic("b")]]) as log:
        size = segment(tmp_path).stat().st_size
        assert log.bytes_since_snapshot == size
    with open_log(tmp_path) as log:
        assert log.bytes_since_snapshot == size
        log.write_snapshot(log.next_offset, 1, [topic("a"), topic("b")], 0)
        assert log.bytes_since_snapshot == 0
        log.append([[topic("c")]], 1, 0)
        grown = segment(tmp_path).stat().st_size - size
        assert log.bytes_since_snapshot == grown
    with open_log(tmp_path) as log:
        assert log.bytes_since_snapshot == grown
