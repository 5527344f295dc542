"""Reading the log: an incomplete last batch is not an error; corruption, gaps and truncation in the
middle are problems that fail the check (exit 1 through the CLI); no log at all is exit 2."""

from __future__ import annotations

from pathlib import Path

import pytest

from broker_sim.check import CheckError, check
from broker_sim.check.cli import main
from controller.log import SnapshotId
from controller.log.snapshots import encode_snapshot, write_snapshot_file
from protocol.records.batch import iter_batches
from protocol.records.batch_writer import metadata_batch
from protocol.records.metadata import (
    BeginTransactionRecord,
    ConfigRecord,
    EndTransactionRecord,
    FeatureLevelRecord,
    NoOpRecord,
    PartitionChangeRecord,
    PartitionRecord,
    ProducerIdsRecord,
    RegisterControllerRecord,
    TopicRecord,
)
from protocol.records.metadata_value import encode_metadata_value

from .logs import TOPIC_ID, ControllerLog, LogBuilder


def built(tmp_path: Path, segments: int = 1) -> LogBuilder:
    """The base cluster, then ISR changes, over `segments` segments."""
    log = LogBuilder(tmp_path / "data")
    log.cluster()
    for index in range(segments):
        if index:
            log.roll()
        for _ in range(3):
            log.change(0, isr=(1, 2))
            log.change(0, isr=(1, 2, 3))
    log.write()
    return log


def next_batch(log: LogBuilder) -> bytes:
    value = encode_metadata_value(PartitionChangeRecord(partition_id=0, topic_id=TOPIC_ID, isr=(1, 2)), 0)
    return metadata_batch(log.next_offset, 1, log.timestamp_ms, [value] * 5)


@pytest.mark.parametrize("kept", [5, 30, 70, -1])
def test_a_partly_written_last_batch_is_a_note_not_a_problem(
    tmp_path: Path, kept: int, capsys: pytest.CaptureFixture[str]
) -> None:
    log = built(tmp_path)
    with open(log.segment_path(), "ab") as segment:
        segment.write(next_batch(log)[:kept])  # a write in progress: any prefix of the next batch
    result = check(log.data_dir)
    assert result.ok and result.problems == []
    assert result.end_offset == log.next_offset
    assert any(note.startswith("incomplete last batch") for note in result.notes)
    assert main([str(log.data_dir)]) == 0
    assert "note: incomplete last batch" in capsys.readouterr().out


def flip(path: Path, position: int) -> None:
    data = bytearray(path.read_bytes())
    data[position] ^= 0x40
    path.write_bytes(bytes(data))


def test_a_corrupt_batch_in_the_middle_is_a_problem_and_exits_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = built(tmp_path)
    flip(log.segment_path(), 300)  # inside an early batch: a CRC failure with valid batches after it
    result = check(log.data_dir)
    assert not result.ok and len(result.problems) == 1
    assert "corrupt metadata log" in result.problems[0] and "valid batch(es) follow" in result.problems[0]
    assert result.end_offset < log.next_offset
    assert main([str(log.data_dir)]) == 1
    assert "problem: corrupt metadata log" in capsys.readouterr().out


def test_garbage_between_batches_is_a_problem(tmp_path: Path) -> None:
    log = built(tmp_path)
    path = log.segment_path()
    data = path.read_bytes()
    path.write_bytes(data + b"\x00" * 40 + next_batch(log))
    assert "corrupt metadata log" in check(log.data_dir).problems[0]


def test_a_truncated_segment_before_the_last_is_a_problem_and_exits_1(tmp_path: Path) -> None:
    log = built(tmp_path, segments=2)
    first = log.segment_path(0)
    first.write_bytes(first.read_bytes()[:-70])  # cut through the header of its last batch
    result = check(log.data_dir)
    assert not result.ok and "later segments follow" in result.problems[0]
    assert main([str(log.data_dir)]) == 1


def test_a_segment_cut_at_a_batch_boundary_leaves_a_gap_the_next_segment_shows(tmp_path: Path) -> None:
    log = built(tmp_path, segments=2)
    first = log.segment_path(0)
    data = first.read_bytes()
    last_start = [position for position, _ in iter_batches(data)][-1]
    first.write_bytes(data[:last_start])  # a whole batch lost: every batch left is valid
    result = check(log.data_dir)
    assert not result.ok
    assert "the log continues at" in result.problems[0]


def test_a_log_starting_after_zero_without_a_snapshot_is_a_problem(tmp_path: Path) -> None:
    log = built(tmp_path, segments=2)
    log.segment_path(0).unlink()
    result = check(log.data_dir)
    assert not result.ok and "no valid snapshot covers" in result.problems[0]


def test_records_of_unknown_types_are_skipped_with_a_note_and_garbage_values_are_problems(tmp_path: Path) -> None:
    log = LogBuilder(tmp_path / "data")
    log.cluster()
    future = bytes([1, 99, 0, 0])  # a record type of a future Kafka: skipped with a note
    log._add(metadata_batch(log.next_offset, 1, log.timestamp_ms, [future]), 1)
    log.write()
    result = check(log.data_dir)
    assert result.ok and any("skipped 1 record(s)" in note for note in result.notes)
    assert any("unknown metadata record type 99 (version 0)" in note for note in result.notes)
    log._add(metadata_batch(log.next_offset, 1, log.timestamp_ms, [bytes([1, 5, 0, 0xFF])]), 1)
    log.write()
    result = check(log.data_dir)
    assert not result.ok and "cannot be decoded" in result.problems[0]


def test_kafka_record_types_the_checker_does_not_check_are_read_without_notes(tmp_path: Path) -> None:
    log = LogBuilder(tmp_path / "data")
    log.cluster()
    values = [
        encode_metadata_value(record, 0)
        for record in (
            FeatureLevelRecord(name="metadata.version", feature_level=21),
            BeginTransactionRecord(name="t"),
            ConfigRecord(resource_type=2, resource_name="t1", name="cleanup.policy", value="compact"),
            EndTransactionRecord(),
            NoOpRecord(),
            ProducerIdsRecord(broker_id=1, broker_epoch=5, next_producer_id=1000),
            RegisterControllerRecord(controller_id=3000),
        )
    ]
    log._add(metadata_batch(log.next_offset, 1, log.timestamp_ms, values), 1)
    log.write()
    result = check(log.data_dir)
    assert result.ok, result.problems
    assert not any("skipped" in note for note in result.notes), result.notes


def test_no_log_at_all_is_a_clear_error_and_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "empty").mkdir()
    for path, reason in ((tmp_path / "missing", "no such directory"), (tmp_path / "empty", "no metadata log here")):
        with pytest.raises(CheckError, match=reason):
            check(path)
        assert main([str(path)]) == 2
        err = capsys.readouterr().err
        assert reason in err and err.count("\n") == 1


def test_bad_arguments_exit_2_with_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 2
    assert main([str(tmp_path), "--bogus"]) == 2
    log = built(tmp_path)
    (tmp_path / "journal.jsonl").write_text('{"kind": "registered", "broker": 1}\n')
    assert main([str(log.data_dir), "--journal", str(tmp_path / "journal.jsonl")]) == 2
    assert main([str(log.data_dir), "--journal", str(tmp_path / "absent.jsonl")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 4


@pytest.mark.parametrize("tail", ["crc", "zeros", "wrong-offset"])
def test_bytes_at_the_end_that_are_not_the_next_batch_cut_short_are_a_problem(tmp_path: Path, tail: str) -> None:
    log = built(tmp_path)
    batch = next_batch(log)
    appended = {
        "crc": batch[:-1] + bytes([batch[-1] ^ 0xFF]),  # complete, but fails its CRC
        "zeros": b"\x00" * 80,
        "wrong-offset": (log.next_offset + 7).to_bytes(8, "big") + batch[8:40],  # cut short, but not the next batch
    }[tail]
    with open(log.segment_path(), "ab") as segment:
        segment.write(appended)
    result = check(log.data_dir)
    assert not result.ok and "not the start of the next batch cut short" in result.problems[0]
    assert result.end_offset == log.next_offset


def test_a_snapshot_beyond_the_logs_end_supersedes_it_as_a_controller_restarts_there(tmp_path: Path) -> None:
    """Kafka (and fencer) restart a log that ends below the newest snapshot at that snapshot: the
    checker notes it and checks the snapshot on its own, not a problem."""
    data_dir = tmp_path / "data"
    history = ControllerLog(data_dir)
    history.harness.start_brokers(1, 2, 3)
    history.harness.create_topic("t", assignments=[[1, 2, 3]] * 2)
    history.flush()
    cut = history.log.next_offset
    history.harness.heartbeat(2, want_fence=True)
    end = history.snapshot()
    history.close()
    segment = data_dir / "__cluster_metadata-0" / "00000000000000000000.log"
    data = segment.read_bytes()
    segment.write_bytes(data[: next(p for p, b in iter_batches(data) if b.base_offset == cut)])
    result = check(data_dir)
    assert result.ok, result.violations
    assert any(f"ends at offset {end}, beyond the log's end ({cut})" in note for note in result.notes)
    broken = PartitionRecord(  # a snapshot beyond the end breaking a rule is still judged
        partition_id=0, topic_id=TOPIC_ID, replicas=(1, 2), isr=(1,), leader=2, leader_epoch=0, partition_epoch=0
    )
    records = [(TopicRecord(name="x", topic_id=TOPIC_ID), 0), (broken, 1)]
    write_snapshot_file(segment.parent, SnapshotId(end + 5, 1), encode_snapshot(1, records, 0), fsync=False)
    result = check(data_dir)
    assert not result.ok and "leader-in-isr" in {violation.rule for violation in result.violations}
