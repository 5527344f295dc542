"""The same-work baseline's inputs: capture parts decoded with the executors' function, and the fleet's journals.

Purpose: `stage_decoded(directories, staged)` reads every part of the capture dirs with pyarrow
(the parts the job reads, analytics.read: same listing, same `source` per part), adds what
Spark's reader adds (`source`, a null `server`, `request_digest`: Spark's `xxhash64` of the
request frame), runs `analytics.decode.decode_batch` on each batch, and writes the decoded rows
as Parquet, a file per row kind, as the job stages them in `_decoded`. `journal_rows(journals)`
reads the fleet's journals into the fields analytics.journal reads with Spark's JSON reader.

Rules:
- `request_digest` is XXH64 with Spark's seed (42) from the system's libxxhash (libxxhash0, which
  apt itself depends on): Spark's `xxhash64` of a binary is the standard XXH64 of its bytes,
  as a signed long.
- A journal line that is not a JSON object is dropped (Spark's reader makes it a row of nulls,
  which has no `wall_ns` and is no event); a field whose value is not of the field's type is null.
"""

from __future__ import annotations

import ctypes
import ctypes.util
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

from analytics.decode import decode_batch
from analytics.journal import JOURNAL_FIELDS
from analytics.read import part_files, source_of
from analytics.schema import (
    CAPTURE,
    DECODED_ARROW,
    ENVELOPE_ARROW,
    EXCHANGE_ROW,
    LISTENER_ROW,
    PARTITION_ROW,
    TOPIC_NAME_ROW,
)

#: Capture rows per decoded batch.
BATCH_ROWS = 10_000
#: The staged file of each row kind, under the staging dir.
KIND_FILES = {
    EXCHANGE_ROW: "exchange_rows.parquet",
    PARTITION_ROW: "partition_rows.parquet",
    TOPIC_NAME_ROW: "topic_name_rows.parquet",
    LISTENER_ROW: "listener_rows.parquet",
}
#: What decode_batch takes: the envelope as Spark hands it to the executors, then the frames.
CAPTURE_ARROW = pa.schema([*ENVELOPE_ARROW, pa.field("request", pa.binary()), pa.field("response", pa.binary())])
#: Spark's seed for `xxhash64` (its `XxHash64` expression's default).
XXHASH64_SEED = 42


def _xxh64() -> Any:
    """libxxhash's `XXH64(bytes, length, seed)`, returning the hash as a signed 64-bit integer."""
    library = ctypes.CDLL(ctypes.util.find_library("xxhash") or "libxxhash.so.0")
    function = library.XXH64
    function.restype = ctypes.c_int64
    function.argtypes = [ctypes.c_char_p, ctypes.c_size_t, ctypes.c_uint64]
    return function


_XXH64 = _xxh64()


def request_digests(requests: list[bytes]) -> pa.Array:
    """Spark's `xxhash64(request)` of each request frame."""
    return pa.array([_XXH64(request, len(request), XXHASH64_SEED) for request in requests], pa.int64())


def capture_batches(directories: Sequence[Path]) -> Iterator[pa.RecordBatch]:
    """Each capture dir's parts (analytics.read.part_files), in batches of `CAPTURE_ARROW`."""
    read = CAPTURE.fieldNames()
    for directory in directories:
        for part in part_files(directory):
            source = source_of(part)
            for batch in pq.ParquetFile(part).iter_batches(batch_size=BATCH_ROWS, columns=read):
                rows = batch.num_rows
                added = {
                    "source": pa.array([source] * rows, pa.string()),
                    "request_digest": request_digests(batch.column("request").to_pylist()),
                    "server": pa.nulls(rows, pa.string()),
                }
                columns = [
                    added[field.name] if field.name in added else batch.column(field.name).cast(field.type)
                    for field in CAPTURE_ARROW
                ]
                yield pa.RecordBatch.from_arrays(columns, schema=CAPTURE_ARROW)


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
