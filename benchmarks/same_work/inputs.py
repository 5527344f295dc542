"""The same-work baseline's inputs: capture parts decoded with the executors' function, and the fleet's journals.

Purpose: `stage_decoded(directories, staged)` reads every part of the capture dirs with pyarrow
with the executors' own functions (analytics.read's listing and `capture_rows`: the same parts,
the same `source` per part; analytics.decode's `digested`: Spark's `xxhash64` of the request
frame), runs `analytics.decode.decode_batch` on each batch, and writes the decoded rows
as Parquet, a file per row kind, as the job stages them in `_decoded`. `journal_rows(journals)`
reads the fleet's journals into the fields analytics.journal reads with Spark's JSON reader.

Rules:
- A journal line that is not a JSON object is dropped (Spark's reader makes it a row of nulls,
  which has no `wall_ns` and is no event); a field whose value is not of the field's type is null.
"""

from __future__ import annotations

import decimal
import json
import math
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from pyspark.sql.pandas.types import to_arrow_schema

from analytics.decode import decode_batch, digested
from analytics.journal import JOURNAL_FIELDS
from analytics.read import capture_rows, part_files, source_of
from analytics.schema import (
    DECODED_ARROW,
    EXCHANGE_ROW,
    LISTENER_ROW,
    PARTITION_ROW,
    TOPIC_NAME_ROW,
)

#: The staged file of each row kind, under the staging dir.
KIND_FILES = {
    EXCHANGE_ROW: "exchange_rows.parquet",
    PARTITION_ROW: "partition_rows.parquet",
    TOPIC_NAME_ROW: "topic_name_rows.parquet",
    LISTENER_ROW: "listener_rows.parquet",
}


def capture_batches(directories: Sequence[Path]) -> Iterator[pa.RecordBatch]:
    """Each capture dir's parts (analytics.read.part_files), in digested batches (analytics.decode.CAPTURE_ARROW)."""
    for directory in directories:
        for part in part_files(directory):
            for rows in capture_rows(str(part), source_of(part)):
                yield digested(rows)


def stage_decoded(directories: Sequence[Path], staged: Path) -> None:
    """Decode every capture row of `directories` into `staged`, a Parquet file per row kind (`KIND_FILES`)."""
    staged.mkdir(parents=True)
    writers = {kind: pq.ParquetWriter(staged / name, DECODED_ARROW) for kind, name in KIND_FILES.items()}
    try:
        for batch in capture_batches(directories):
            decoded = decode_batch(batch)
            kinds = decoded["row_kind"]
            for kind, writer in writers.items():
                rows = decoded.filter(pc.equal(kinds, kind))
                if rows.num_rows:
                    writer.write_table(rows)
    finally:
        for writer in writers.values():
            writer.close()


#: The journal fields analytics.journal reads, as Arrow.
JOURNAL_ARROW = to_arrow_schema(JOURNAL_FIELDS)


def journal_rows(journals: Sequence[Path]) -> pa.Table:
    """The journals' lines as `JOURNAL_ARROW` rows, plus `duration_text`: Spark's
    `format_string("%.0f ms", duration_ms)` less its " ms", computed here (see `java_whole`)."""
    columns: dict[str, list[Any]] = {field.name: [] for field in JOURNAL_ARROW}
    for path in journals:
        for line in path.read_text(encoding="utf-8").splitlines():
            try:
                row = json.loads(line)
            except ValueError:
                continue
            if not isinstance(row, dict):
                continue
            for field in JOURNAL_ARROW:
                columns[field.name].append(_typed(row.get(field.name), field.type))
    table = pa.table(columns, schema=JOURNAL_ARROW)
    durations = columns["duration_ms"]
    text = [None if value is None else java_whole(value) for value in durations]
    return table.append_column("duration_text", pa.array(text, pa.string()))


def _typed(value: Any, kind: pa.DataType) -> Any:
    """`value` if it is a JSON value of the Arrow type `kind`, else None."""
    if pa.types.is_boolean(kind):
        return value if isinstance(value, bool) else None
    if isinstance(value, bool):
        return None
    if pa.types.is_integer(kind):
        return value if isinstance(value, int) else None
    if pa.types.is_floating(kind):
        return float(value) if isinstance(value, int | float) else None
    return value if isinstance(value, str) else None


def java_whole(value: float) -> str:
    """Java's `%.0f` of a double, which Spark's `format_string` uses: the shortest decimal that
    reads back as the double, rounded half up (Python's `%.0f` rounds the binary value half even:
    2.5 is "2" there, "3" in Java)."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    whole = decimal.Decimal(repr(value)).quantize(decimal.Decimal(1), rounding=decimal.ROUND_HALF_UP)
    return format(whole, "f")
