"""Traffic capture: rows round-trip through pyarrow's readers, rotation, atomic parts, concurrency, zstd."""

from __future__ import annotations

import operator
import os
import re
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path

import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest
from hypothesis import given
from hypothesis import strategies as st

from controller.log.segments import fsync_directory
from controller.server.capture import CaptureWriter
from protocol.capture import CHUNK_ROWS, INBOUND, OUTBOUND, Exchange, capture_schema, to_table

PART_NAME = re.compile(r"capture-\d{19}-\d{6}\.parquet")

INT64 = st.integers(-(2**63), 2**63 - 1)
frames = st.one_of(
    st.binary(max_size=64),
    st.builds(operator.mul, st.binary(min_size=1, max_size=4), st.integers(1_000, 200_000)),  # large frames
)
exchanges = st.builds(
    Exchange,
    request_time_ns=INT64,
    response_time_ns=st.none() | INT64,
    direction=st.sampled_from([INBOUND, OUTBOUND]),
    connection_id=INT64,
    peer=st.text(max_size=40),
    api_key=st.integers(-(2**15), 2**15 - 1),
    api_version=st.integers(-(2**15), 2**15 - 1),
    correlation_id=st.integers(-(2**31), 2**31 - 1),
    request=frames,
    response=st.none() | frames,
)


def exchange(correlation_id: int = 0, response: bytes | None = b"response") -> Exchange:
    return Exchange(
        request_time_ns=1_700_000_000_000_000_000 + correlation_id,
        response_time_ns=None if response is None else 1_700_000_000_000_050_000 + correlation_id,
        direction=INBOUND,
        connection_id=7,
        peer="127.0.0.1:50123",
        api_key=56,
        api_version=2,
        correlation_id=correlation_id,
        request=b"request-%d" % correlation_id,
        response=response,
    )


def parts(directory: Path) -> list[Path]:
    return sorted(path for path in directory.iterdir() if path.suffix == ".parquet")


def rows_of(table: pa.Table) -> list[Exchange]:
    return [Exchange(**row) for row in table.to_pylist()]


def read_parts_in_order(directory: Path) -> list[Exchange]:
    return [row for part in parts(directory) for row in rows_of(pq.read_table(part))]


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def directory(tmp_path: Path) -> Path:
    return tmp_path / "capture"


# ------------------------------------------------------------------------------- round trip


def test_schema_follows_the_exchange_fields() -> None:
    assert capture_schema().names == list(Exchange._fields)
    nullable = {field.name for field in capture_schema() if field.nullable}
    assert nullable == {"response_time_ns", "response"}


@given(st.lists(exchanges, max_size=12), st.integers(1, 5))
def test_rows_round_trip_through_the_dataset_readers(rows: list[Exchange], rotate_rows: int) -> None:
    with tempfile.TemporaryDirectory() as name:
        directory = Path(name)
        writer = CaptureWriter(directory, rotate_rows=rotate_rows)
        for row in rows:
            writer.add(row)
        writer.close()
        assert read_parts_in_order(directory) == rows
        assert writer.rows_written == len(rows)
        assert writer.parts_written == len(parts(directory)) == -(-len(rows) // rotate_rows)
        assert writer.bytes_written == sum(part.stat().st_size for part in parts(directory))
        if rows:
            dataset = ds.dataset(directory, format="parquet")
            assert dataset.schema == capture_schema()
            assert Counter(rows_of(dataset.to_table())) == Counter(rows)
            table = pq.read_table(directory)
            assert table.schema == capture_schema()
            assert Counter(rows_of(table)) == Counter(rows)


def test_empty_flush_writes_nothing(directory: Path) -> None:
    writer = CaptureWriter(directory)
    assert writer.flush() is None
    assert writer.close() is None
    assert list(directory.iterdir()) == []
    assert to_table([]).schema == capture_schema()


def test_part_is_zstd_one_row_group_named_to_sort(directory: Path) -> None:
    writer = CaptureWriter(directory, rotate_rows=2)
    for index in range(5):
        writer.add(exchange(index, response=None if index == 3 else b"r" * 100))
    written = [writer.flush(), writer.flush(), writer.flush()]
    assert written == parts(directory)  # sorted by name = written order
    assert all(path is not None and PART_NAME.fullmatch(path.name) for path in written)
    for path in parts(directory):
        metadata = pq.ParquetFile(path).metadata
        assert metadata.num_row_groups == 1
        row_group = metadata.row_group(0)
        assert {row_group.column(index).compression for index in range(row_group.num_columns)} == {"ZSTD"}


def test_a_part_of_several_conversion_chunks_is_one_row_group_in_order(directory: Path) -> None:
    rows = [exchange(index, response=None if index % 7 == 0 else b"r") for index in range(2 * CHUNK_ROWS + 5)]
    writer = CaptureWriter(directory, rotate_rows=len(rows))
    for row in rows:
        writer.add(row)
    part = writer.flush()
    assert part is not None and pq.ParquetFile(part).metadata.num_row_groups == 1
    assert read_parts_in_order(directory) == rows


def test_a_malformed_exchange_fails_its_part_only(directory: Path) -> None:
    writer = CaptureWriter(directory)
    writer.add(exchange(1)._replace(api_key=70_000))  # not an int16
    with pytest.raises(pa.ArrowInvalid):
        writer.flush()
    assert list(directory.iterdir()) == []
    assert (writer.rows_dropped, writer.rows_written) == (1, 0)
    writer.add(exchange(2))
    assert writer.flush() is not None
    assert read_parts_in_order(directory) == [exchange(2)]


def test_bad_arguments_are_refused(directory: Path) -> None:
    for kwargs in ({"rotate_rows": 0}, {"rotate_seconds": 0.0}, {"prefix": ".hidden"}, {"prefix": "a/b"}):
        with pytest.raises(ValueError):
            CaptureWriter(directory, **kwargs)


# ------------------------------------------------------------------------------- rotation


def test_rotation_by_rows(directory: Path) -> None:
    writer = CaptureWriter(directory, rotate_rows=3, clock=FakeClock())
    for index in range(7):
        assert writer.due() == (index >= 3)
        writer.add(exchange(index))
    assert writer.due()
    writer.flush()
    assert writer.due()  # a part holds at most rotate_rows: 4 rows were left, 3 still make a part
    writer.flush()
    assert not writer.due() and writer.buffered == 1
    writer.close()
    assert [pq.read_metadata(part).num_rows for part in parts(directory)] == [3, 3, 1]
    assert read_parts_in_order(directory) == [exchange(index) for index in range(7)]


def test_rotation_by_time(directory: Path) -> None:
    clock = FakeClock()
    writer = CaptureWriter(directory, rotate_seconds=2.0, clock=clock)
    clock.now += 5.0
    assert not writer.due()  # time alone: nothing to write
    writer.add(exchange(1))
    assert writer.due()  # rows, and 2 s since the writer started
    writer.flush()
    clock.now += 1.0
    writer.add(exchange(2))
    assert not writer.due()
    clock.now += 0.999
    assert not writer.due()
    clock.now += 0.001
    assert writer.due()  # 2 s since the last part
    writer.flush()
    assert not writer.due()
    assert len(parts(directory)) == 2


def test_an_empty_flush_keeps_the_window_open(directory: Path) -> None:
    clock = FakeClock()
    writer = CaptureWriter(directory, rotate_seconds=2.0, clock=clock)
    clock.now += 3.0
    assert writer.flush() is None
    writer.add(exchange(1))
    assert writer.due()


# ------------------------------------------------------------------------------- atomicity


def test_leftover_temporary_is_ignored_by_readers_and_removed_at_start(directory: Path) -> None:
    writer = CaptureWriter(directory)
    writer.add(exchange(1))
    complete = writer.flush()
    assert complete is not None
    leftover = directory / f".capture-{'1' * 19}-000009.parquet.tmp"
    leftover.write_bytes(complete.read_bytes()[:100])  # a part cut short by a crash
    other = directory / f".capture-fleet-{'1' * 19}-000001.parquet.tmp"  # another writer's, not ours
    other.write_bytes(b"PAR1")
    assert rows_of(ds.dataset(directory, format="parquet").to_table()) == [exchange(1)]
    assert rows_of(pq.read_table(directory)) == [exchange(1)]
    restarted = CaptureWriter(directory)
    assert restarted.removed_temporaries == [leftover]
    assert sorted(path.name for path in directory.iterdir()) == sorted([complete.name, other.name])


def fail_while_writing(table: pa.Table, where: str, **kwargs: object) -> None:
    Path(where).write_bytes(b"PAR1 half a part")
    raise OSError(28, "No space left on device")


def failing_fsync(fd: int) -> None:
    raise OSError(5, "Input/output error")


def failing_replace(source: object, target: object) -> None:
    raise OSError(5, "Input/output error")


@pytest.mark.parametrize(
    ("target", "attribute", "failure"),
    [(pq, "write_table", fail_while_writing), (os, "fsync", failing_fsync), (os, "replace", failing_replace)],
    ids=["write", "fsync", "rename"],
)
def test_a_failed_write_never_publishes_a_part(
    directory: Path, monkeypatch: pytest.MonkeyPatch, target: object, attribute: str, failure: Callable[..., None]
) -> None:
    writer = CaptureWriter(directory)
    writer.add(exchange(1))
    first = writer.flush()
    writer.add(exchange(2))
    with monkeypatch.context() as patch:
        patch.setattr(target, attribute, failure)
        with pytest.raises(OSError):
            writer.flush()
    assert list(directory.iterdir()) == [first]  # no final name, no temporary
    assert (writer.rows_written, writer.rows_dropped, writer.parts_written) == (1, 1, 1)
    writer.add(exchange(3))
    assert writer.flush() is not None
    assert read_parts_in_order(directory) == [exchange(1), exchange(3)]


def test_publish_order_is_write_fsync_rename_fsync_directory(directory: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    writer = CaptureWriter(directory)
    events: list[str] = []

    def record(event: str, real: Callable[..., object]) -> Callable[..., object]:
        def wrapper(*args: object, **kwargs: object) -> object:
            events.append(event)
            return real(*args, **kwargs)

        return wrapper

    monkeypatch.setattr(pq, "write_table", record("write", pq.write_table))
    monkeypatch.setattr(os, "fsync", record("fsync", os.fsync))
    monkeypatch.setattr(os, "replace", record("rename", os.replace))
    monkeypatch.setattr("controller.server.capture.fsync_directory", record("fsync directory", fsync_directory))
    writer.add(exchange(1))
    writer.flush()
    assert events[:4] == ["write", "fsync", "rename", "fsync directory"]


def test_readers_only_ever_see_complete_parts(directory: Path) -> None:
    writer = CaptureWriter(directory, rotate_rows=200)
    done = threading.Event()
    failures: list[BaseException] = []

    def read_repeatedly() -> None:
        while not done.is_set():
            try:
                ds.dataset(directory, format="parquet").to_table()
            except BaseException as error:  # a torn part would fail to read
                failures.append(error)
                return

    reader = threading.Thread(target=read_repeatedly)
    reader.start()
    for index in range(4_000):
        writer.add(exchange(index, response=b"r" * 200))
        if writer.due():
            writer.flush()
    done.set()
    reader.join()
    assert failures == []
    assert pq.read_table(directory).num_rows == 4_000


# ------------------------------------------------------------------------------- concurrency


@pytest.fixture
def frequent_thread_switches() -> Iterator[None]:
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    yield
    sys.setswitchinterval(interval)


@pytest.mark.usefixtures("frequent_thread_switches")
def test_flush_concurrent_with_add_loses_and_duplicates_nothing(directory: Path) -> None:
    """Four adders (the daemon has one) and yields every few rows widen the interleavings: a buffer
    swap that races with `add` (take a copy, then replace the deque) loses rows here nearly every run."""
    adders, per_adder = 4, 10_000
    writer = CaptureWriter(directory, rotate_rows=1_000_000)

    def add_rows(adder: int) -> None:
        for index in range(per_adder):
            writer.add(exchange(adder * per_adder + index, response=None))
            if index % 10 == 0:
                time.sleep(0)

    threads = [threading.Thread(target=add_rows, args=(adder,)) for adder in range(adders)]
    for thread in threads:
        thread.start()
    flushes = 0
    while any(thread.is_alive() for thread in threads):
        flushes += writer.flush() is not None
    writer.close()
    correlation_ids = pq.read_table(directory, columns=["correlation_id"]).column(0).to_pylist()
    assert len(correlation_ids) == writer.rows_written == adders * per_adder
    assert set(correlation_ids) == set(range(adders * per_adder))
    assert flushes > 1, "the test should have flushed while rows were being added"


def test_concurrent_flushes_write_each_row_once(directory: Path) -> None:
    writer = CaptureWriter(directory, rotate_rows=50)
    for index in range(2_000):
        writer.add(exchange(index))
    threads = [threading.Thread(target=writer.close) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    names = [part.name for part in parts(directory)]
    assert len(names) == len(set(names)) == writer.parts_written == 40
    assert sorted(row.correlation_id for row in read_parts_in_order(directory)) == list(range(2_000))
