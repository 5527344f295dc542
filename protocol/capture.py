"""The capture format: one row per exchange (request and response frames plus an envelope), as Arrow.

Purpose: the daemon and the fleet write captures in this format and analytics reads them, so the
format lives with the codec that every program shares: the schema, the row type, the conversion
of rows to Arrow record batches, the names of part files and how a part's Parquet is encoded
(`write_parquet`). Publishing parts (temporary names, renames, fsync, threads) belongs to the
programs' shells.

Rules:
- A part file is `<prefix>-<start ns, 19 digits>-<sequence, 6+ digits>.parquet`, so names sort by
  time; readers skip names starting with `.` (temporary files) or not ending in `.parquet`.
- `request` and `response` hold frame payloads without the 4-byte size prefix; `response` is null
  when the connection closed without one.
- pyarrow is imported on first use (`capture_schema()`): a daemon or a fleet that captures nothing
  starts without it (a tenth of a second of every start-up here).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    import pyarrow as pa

INBOUND = "inbound"
OUTBOUND = "outbound"


class Exchange(NamedTuple):
    """One request and its response; a named tuple because it is the cheapest record to build."""

    request_time_ns: int  # time.time_ns() when the request was received (inbound) or sent (outbound)
    response_time_ns: int | None
    direction: str  # INBOUND | OUTBOUND
    connection_id: int
    peer: str  # "host:port"
    api_key: int
    api_version: int
    correlation_id: int
    request: bytes  # the frame payload, without the 4-byte size prefix
    response: bytes | None  # None if the connection closed without a response


class Part(NamedTuple):
    """The rows of one part file, with the start of its collection window and its sequence number."""

    rows: list[Exchange]
    started_ns: int
    sequence: int


#: the columns and their Arrow types (`capture_schema()`), in order; each with whether it is nullable
COLUMNS: tuple[tuple[str, str, bool], ...] = (
    ("request_time_ns", "int64", False),
    ("response_time_ns", "int64", True),
    ("direction", "string", False),
    ("connection_id", "int64", False),
    ("peer", "string", False),
    ("api_key", "int16", False),
    ("api_version", "int16", False),
    ("correlation_id", "int32", False),
    ("request", "binary", False),
    ("response", "binary", True),
)
ENVELOPE_COLUMNS = [name for name, _, _ in COLUMNS if name not in ("request", "response")]
DICTIONARY_COLUMNS = ["direction", "peer", "api_key", "api_version"]
SUFFIX = ".parquet"
CHUNK_ROWS = 256  # about a quarter of a millisecond of conversion


@functools.cache
def capture_schema() -> pa.Schema:
    """The capture's Arrow schema (imports pyarrow the first time)."""
    import pyarrow as pa

    return pa.schema([pa.field(name, getattr(pa, kind)(), nullable=nullable) for name, kind, nullable in COLUMNS])


def to_table(exchanges: Sequence[Exchange]) -> pa.Table:
    """The exchanges as a table of `capture_schema()` (raises pyarrow errors on out-of-type values)."""
    return from_batches(list(to_batches(exchanges)))


def from_batches(batches: Sequence[pa.RecordBatch]) -> pa.Table:
    import pyarrow as pa

    return pa.Table.from_batches(batches, schema=capture_schema())


def to_batches(exchanges: Sequence[Exchange]) -> Iterator[pa.RecordBatch]:
    """The exchanges as record batches of `CHUNK_ROWS` rows, converted one at a time.

    Converting Python objects holds the GIL in pyarrow's C loops, which a worker thread does not
    give up at the interpreter's switch interval: the daemon takes these slices on its own event
    loop, between requests, and leaves only the Parquet encoding (which releases the GIL) to a
    worker thread."""
    import pyarrow as pa

    schema = capture_schema()
    types = schema.types
    for start in range(0, len(exchanges), CHUNK_ROWS):
        columns = zip(*exchanges[start : start + CHUNK_ROWS], strict=True)
        arrays = [pa.array(column, type=kind) for column, kind in zip(columns, types, strict=True)]
        yield pa.RecordBatch.from_arrays(arrays, schema=schema)


def write_parquet(table: pa.Table, path: str) -> None:
    """Encode a part: zstd, the low-cardinality envelope columns dictionary-encoded, statistics on
    the envelope (readers filter on time) and not on the frames, one row group."""
    import pyarrow.parquet as pq

    pq.write_table(
        table,
        path,
        compression="zstd",
        use_dictionary=DICTIONARY_COLUMNS,
        write_statistics=ENVELOPE_COLUMNS,
        row_group_size=max(1, table.num_rows),
    )


def part_name(prefix: str, started_ns: int, sequence: int) -> str:
    """The file name of a part whose collection window opened at `started_ns`."""
    return f"{prefix}-{started_ns:019d}-{sequence:06d}{SUFFIX}"


def temporary_pattern(prefix: str) -> re.Pattern[str]:
    """Names of the temporary files a writer with `prefix` uses before publishing a part."""
    return re.compile(rf"\.{re.escape(prefix)}-\d{{19}}-\d{{6,}}{re.escape(SUFFIX)}\.tmp")
