"""How a capture part is encoded (`protocol.capture.write_parquet`), shared by the daemon and the fleet."""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq

from protocol.capture import INBOUND, OUTBOUND, Exchange, capture_schema, to_table, write_parquet


def test_a_part_reads_back_whole_in_one_row_group_with_envelope_statistics_only(tmp_path: Path) -> None:
    rows = [
        Exchange(10 + i, 20 + i, INBOUND if i % 2 else OUTBOUND, i, "127.0.0.1:9", 56, 3, i, b"req%d" % i, None)
        for i in range(1_000)
    ]
    path = tmp_path / "part.parquet"
    write_parquet(to_table(rows), str(path))

    read = pq.read_table(path)
    assert read.schema.equals(capture_schema()) and [Exchange(*row.values()) for row in read.to_pylist()] == rows
    metadata = pq.ParquetFile(path).metadata
    assert metadata.num_row_groups == 1
    group = metadata.row_group(0)
    columns = {group.column(i).path_in_schema: group.column(i) for i in range(group.num_columns)}
    assert columns["request"].statistics is None and columns["request_time_ns"].statistics.min == 10
    assert columns["direction"].compression == "ZSTD"
    assert "RLE_DICTIONARY" in columns["direction"].encodings
    assert "RLE_DICTIONARY" not in columns["request"].encodings


def test_an_empty_part_is_still_a_readable_file(tmp_path: Path) -> None:
    path = tmp_path / "empty.parquet"
    write_parquet(to_table([]), str(path))
    assert pq.read_table(path).num_rows == 0
