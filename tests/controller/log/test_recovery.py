"""Crash safety: torn tails are cut, corruption with valid data after it is refused (or repaired).

The acceptance loops are exhaustive: every cut inside the last batch, every bit of the last
batch, every bit of a middle batch. Real files, real fsync.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from crc32c import crc32c

from controller.log import LogError
from protocol.records.batch import CRC_OFFSET, CRC_START, HEADER_SIZE
from protocol.records.batch_writer import metadata_batch
from protocol.records.metadata_value import encode_metadata_value
from protocol.spec import Data
from tests.controller.log.helpers import (
    build_log,
    entries,
    flip_bit,
    open_log,
    partition_dir,
    segment,
    tiny,
    topic,
)

EPOCH_FIELD = range(12, 16)  # partitionLeaderEpoch: outside the CRC
BASE_OFFSET_FIELD = range(0, 8)


def _small_log(data_dir: Path) -> tuple[bytes, list[int], list[tuple[int, int, Data, int, bool]]]:
    """A log of a LeaderChange and four one-record batches: (segment bytes, batch positions, entries)."""
    with build_log(data_dir, [[topic("a")], [tiny()], [topic("b")], [tiny()]]) as log:
        positions = [position for _, position, _ in log.batches()]
        return segment(data_dir).read_bytes(), positions, entries(log)


def test_a_cut_anywhere_inside_the_last_batch_is_truncated_as_torn(tmp_path: Path) -> None:
    data, positions, full = _small_log(tmp_path)
    last = positions[-1]
    for cut in range(last + 1, len(data)):
        segment(tmp_path).write_bytes(data[:cut])
        with open_log(tmp_path) as log:
            assert entries(log) == full[:-1], cut
            report = log.recovery
            assert (report.truncated_bytes, report.truncated_file, report.first_lost_offset) == (
                cut - last,
                segment(tmp_path),
                4,
            )
            assert not report.repaired and "torn write" in report.messages[0]
            assert log.next_offset == 4
        assert segment(tmp_path).stat().st_size == last


def test_a_flipped_bit_anywhere_in_the_last_batch_is_truncated_as_torn(tmp_path: Path) -> None:
    data, positions, full = _small_log(tmp_path)
    last = positions[-1]
    for position in range(last, len(data)):
        for bit in range(8):
            segment(tmp_path).write_bytes(flip_bit(data, position, bit))
            with open_log(tmp_path) as log:
                assert entries(log) == full[:-1], (position, bit)
                assert log.recovery.truncated_bytes == len(data) - last
            assert segment(tmp_path).read_bytes() == data[:last]


def test_a_flipped_bit_anywhere_in_a_middle_batch_refuses_to_start(tmp_path: Path) -> None:
    data, positions, _ = _small_log(tmp_path)
    middle, after = positions[2], positions[3]
    for position in range(middle, after):
        for bit in range(8):
            segment(tmp_path).write_bytes(flip_bit(data, position, bit))
            with pytest.raises(LogError) as caught:
                open_log(tmp_path)
            message = str(caught.value)
            assert f"{segment(tmp_path)} at byte {middle} (offset 2)" in message, (position, bit, message)
            assert "not a torn write" in message and "--repair-log" in message
            assert "losing every record from offset 2" in message
    assert segment(tmp_path).read_bytes() == flip_bit(data, after - 1, 7)  # nothing was touched


def test_repair_truncates_at_the_corruption(tmp_path: Path) -> None:
    data, positions, full = _small_log(tmp_path)
    segment(tmp_path).write_bytes(flip_bit(data, positions[2] + 40, 3))
    with open_log(tmp_path, repair=True) as log:
        assert entries(log) == full[:2]
        report = log.recovery
        assert report.repaired and report.first_lost_offset == 2
        assert report.truncated_bytes == len(data) - positions[2]
        assert "repaired" in report.messages[0] and "2 valid batch(es)" in report.messages[0]
        assert log.append([[topic("again")]], 1, 0) == [2]
    with open_log(tmp_path) as log:
        assert log.recovery.truncated_bytes == 0 and len(entries(log)) == 3


@pytest.mark.parametrize(("field", "reason"), [(BASE_OFFSET_FIELD, "base offset"), (EPOCH_FIELD, "epoch")])
def test_continuity_checks_catch_what_the_crc_does_not_cover(tmp_path: Path, field: range, reason: str) -> None:
    data, positions, _ = _small_log(tmp_path)
    for index in field:
        for bit in range(8):
            segment(tmp_path).write_bytes(flip_bit(data, positions[2] + index, bit))
            with pytest.raises(LogError, match=rf"at byte {positions[2]} \(offset 2\): .*{reason}"):
                open_log(tmp_path)


def test_a_raised_epoch_in_a_leader_change_is_blamed_on_it(tmp_path: Path) -> None:
    with build_log(tmp_path, [[topic("a")]]) as log:
        change = log.next_offset
        log.append_leader_change(2, 1, 0)
        log.append([[topic("b")]], 2, 0)
        position = next(p for _, p, b in log.batches() if b.base_offset == change)
    data = segment(tmp_path).read_bytes()
    segment(tmp_path).write_bytes(flip_bit(data, position + 14, 4))  # epoch 2 -> 2 + 2**12
    with pytest.raises(LogError, match=rf"at byte {position} \(offset {change}\): this control batch raises"):
        open_log(tmp_path)


def test_corruption_in_an_older_segment_refuses_to_start_and_repair_drops_later_ones(tmp_path: Path) -> None:
    with build_log(tmp_path, [[topic(str(i))] for i in range(6)], segment_bytes=200) as log:
        full = entries(log)
    files = sorted(partition_dir(tmp_path).glob("*.log"))
    assert len(files) >= 3
    last_of_first = [p for path, p, _ in build_batches(tmp_path) if path == files[0]][-1]
    files[0].write_bytes(flip_bit(files[0].read_bytes(), last_of_first + 30, 0))
    with pytest.raises(LogError, match=rf"{files[0]} at byte {last_of_first}"):
        open_log(tmp_path)
    with open_log(tmp_path, repair=True) as log:
        kept = len(entries(log))
        assert entries(log) == full[:kept]
        assert sorted(partition_dir(tmp_path).glob("*.log")) == files[:1]
        assert log.recovery.repaired and log.recovery.truncated_file == files[0]


def build_batches(data_dir: Path) -> list[tuple[Path, int, object]]:
    with open_log(data_dir) as log:
        return list(log.batches())


def test_a_valid_batch_after_garbage_in_the_last_segment_is_not_a_torn_write(tmp_path: Path) -> None:
    data, positions, _ = _small_log(tmp_path)
    last_batch = data[positions[-1] :]
    segment(tmp_path).write_bytes(data + b"\x00" * 37 + last_batch)
    with pytest.raises(LogError, match=rf"at byte {len(data)} \(offset 5\).*1 valid batch\(es\) follow"):
        open_log(tmp_path)


def test_zeroes_or_junk_after_the_last_batch_are_a_torn_tail(tmp_path: Path) -> None:
    data, _, full = _small_log(tmp_path)
    for tail in (b"\x00" * 4096, b"\x02" * 100, bytes(range(256)) * 3):
        segment(tmp_path).write_bytes(data + tail)
        with open_log(tmp_path) as log:
            assert entries(log) == full
            assert log.recovery.truncated_bytes == len(tail) and log.recovery.first_lost_offset == 5


def test_empty_segments_are_fine(tmp_path: Path) -> None:
    open_log(tmp_path).close()
    assert segment(tmp_path).stat().st_size == 0
    with open_log(tmp_path) as log:
        assert (log.next_offset, log.recovery.truncated_bytes) == (0, 0)
    _, _, full = _small_log(tmp_path / "rolled")
    segment(tmp_path / "rolled", 5).touch()  # rolled, then crashed before the first write
    with open_log(tmp_path / "rolled") as log:
        assert entries(log) == full and log.next_offset == 5
        log.append([[topic("c")]], 1, 0)
    assert segment(tmp_path / "rolled", 5).stat().st_size > 0


def test_a_torn_first_batch_of_a_new_segment_removes_the_segment(tmp_path: Path) -> None:
    _, _, full = _small_log(tmp_path)
    batch = metadata_batch(5, 1, 0, [encode_metadata_value(*topic("lost"))])
    segment(tmp_path, 5).write_bytes(batch[:-3])
    with open_log(tmp_path) as log:
        assert entries(log) == full
        assert not segment(tmp_path, 5).exists()
        assert log.recovery.truncated_bytes == len(batch) - 3
        assert log.append([[topic("c")]], 1, 0) == [5]


def test_a_segment_named_for_the_wrong_offset_is_corruption(tmp_path: Path) -> None:
    _small_log(tmp_path)
    segment(tmp_path, 9).write_bytes(metadata_batch(9, 1, 0, [encode_metadata_value(*tiny())]))
    segment(tmp_path, 20).write_bytes(metadata_batch(20, 1, 0, [encode_metadata_value(*tiny())]))
    with pytest.raises(LogError, match="named for offset 9 but the log continues at 5"):
        open_log(tmp_path)


def test_a_batch_with_an_undecodable_record_value_reads_as_a_log_error(tmp_path: Path) -> None:
    _small_log(tmp_path)
    with segment(tmp_path).open("ab") as out:
        out.write(metadata_batch(5, 1, 0, [b"\x01\x63\x00garbage"]))  # a valid batch, an unknown record type
    with open_log(tmp_path) as log:
        assert log.next_offset == 6
        with pytest.raises(LogError, match="offset 5 cannot be decoded"):
            list(log.read())


def test_a_batch_whose_crc_holds_is_kept_and_its_bad_records_refused_when_read(tmp_path: Path) -> None:
    """Recovery checks a batch's framing, header and CRC-32C (Kafka's `ensureValid`), not its
    records' framing: a batch whose records are malformed under a CRC that holds was written so,
    and is not a torn write to cut. Reading it fails, naming its offset."""
    _small_log(tmp_path)
    batch = bytearray(metadata_batch(5, 1, 0, [encode_metadata_value(*tiny())]))
    batch[HEADER_SIZE] = 0x7E  # the record's length varint: 63 bytes, more than the batch holds
    batch[CRC_OFFSET : CRC_OFFSET + 4] = crc32c(bytes(batch[CRC_START:])).to_bytes(4, "big")
    with segment(tmp_path).open("ab") as out:
        out.write(batch)
    size = segment(tmp_path).stat().st_size
    with open_log(tmp_path) as log:
        assert (log.next_offset, log.recovery.truncated_bytes) == (6, 0)
        with pytest.raises(LogError, match="record length 63 is invalid in the batch at offset 5"):
            list(log.read())
    assert segment(tmp_path).stat().st_size == size


def test_a_torn_first_batch_loses_offset_zero(tmp_path: Path) -> None:
    with open_log(tmp_path) as log:
        log.append_leader_change(1, 1, 0)
    data = segment(tmp_path).read_bytes()
    segment(tmp_path).write_bytes(data[:-1])
    with open_log(tmp_path) as log:
        assert (log.next_offset, log.last_epoch) == (0, 0)
        assert (log.recovery.first_lost_offset, log.recovery.truncated_bytes) == (0, len(data) - 1)
        assert log.append_leader_change(1, 1, 0) == 0


def test_a_log_that_skips_offsets_refuses_to_start_naming_them(tmp_path: Path) -> None:
    """A Raft log's offsets are contiguous: a gap is lost records (dump-log still shows such a log)."""
    _small_log(tmp_path)
    with segment(tmp_path).open("ab") as out:
        out.write(metadata_batch(9, 1, 0, [encode_metadata_value(*tiny())]))
        out.write(metadata_batch(10, 1, 0, [encode_metadata_value(*tiny())]))
    with pytest.raises(LogError, match=r"\(offset 5\): base offset 9, expected 5: offsets 5\.\.8 are missing"):
        open_log(tmp_path)
