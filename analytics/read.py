"""Finding and reading capture directories: one-line checks, then the parts read and decoded in the executors.

Purpose: `check_capture_dirs` refuses, before any Spark work, what would otherwise fail deep in
a job (a missing, unreadable or empty directory, a part that is no readable Parquet file);
`read_captures` hands the parts to the executors, which read them with pyarrow and decode them
(decode.py), so that Spark only ever takes decoded rows in: the frames never enter the JVM. Every
row gets the two columns every later step relies on: `source` (from the part file's name,
schema.py says how) and `request_digest` (a hash of the request frame, so that the two sides'
rows of one exchange can be joined without carrying the frames around).

Rules:
- A part is a file named like `<prefix>-<19 digits>-<n>.parquet`, not starting with `.` (a
  writer's temporary file); anything else in a capture dir is ignored, as the writers promise.
- The parts are listed by the driver (the same rule as the writers'), their footers read there
  (a truncated or foreign file is refused in one line before any Spark work), and handed to the
  executors by name in tasks of about `TASK_BYTES` (at least one task per core Spark has, so
  that a small capture still runs on every core); a part published after the listing is not read.
- The executors open the parts by their local paths, read literally: on a cluster the capture
  must sit at the same path on every node (a shared mount). A dir whose name the job's output
  rules refuse (paths.py: a `:` with a glob character) is refused in one line, as before.
- `--from`/`--to` filter on the request's time, before decoding, so frames outside the range
  are never decoded.
"""

from __future__ import annotations

import functools
import heapq
import os
import re
from collections.abc import Iterator, Sequence
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from pyspark.sql import DataFrame, SparkSession

from .decode import decode_batch, decode_captures, digested
from .paths import path_problem
from .schema import CAPTURE, PART_NAME_PATTERN, SOURCE_BY_PREFIX, UNKNOWN_SOURCE, decoded_spark_schema

_PART = re.compile(PART_NAME_PATTERN)
#: Capture rows per batch an executor decodes (a part is 50,000 rows as the daemon writes them).
BATCH_ROWS = 10_000
#: Part bytes per task, about (Spark's own file reader splits at 128 MiB; a capture's bytes are
#: zstd-compressed frames, about ten times their size once decoded).
TASK_BYTES = 32 * 2**20


class CaptureError(Exception):
    """A capture directory the job cannot use; the message is the one line the user sees."""


def part_files(directory: Path) -> list[Path]:
    """The published part files of a capture directory, by name (so by time per writer)."""
    return sorted(
        path
        for path in directory.iterdir()
        if not path.name.startswith(".") and _PART.match(path.name) and path.is_file()
    )


def check_capture_dirs(directories: Sequence[str | Path]) -> list[Path]:
    """The directories, absolute; `CaptureError` for the first that is missing, unreadable, empty
    or named so that Spark cannot read it."""
    checked = []
    for given in directories:
        directory = Path(given).resolve()
        if not directory.is_dir():
            raise CaptureError(f"capture dir {given}: not a directory")
        problem = path_problem(directory)
        if problem:
            raise CaptureError(f"capture dir {given}: {problem}")
        try:
            parts = part_files(directory)
        except OSError as error:
            raise CaptureError(f"capture dir {given}: cannot be read ({error.strerror})") from error
        if not parts:
            raise CaptureError(f"capture dir {given}: no capture parts (<prefix>-<ns>-<n>.parquet)")
        unreadable = [path.name for path in parts if not os.access(path, os.R_OK)]
        if unreadable:
            raise CaptureError(f"capture dir {given}: cannot read {unreadable[0]}")
        for part in parts:
            problem = _part_problem(part)
            if problem:
                raise CaptureError(f"capture dir {given}: {part.name}: {problem}")
        checked.append(directory)
    return checked


def _part_problem(part: Path) -> str | None:
    """Why the executors could not read `part` (its footer, its columns), or None."""
    try:
        with part.open("rb") as file:  # Python's open takes any name the OS does (pyarrow's needs UTF-8)
            schema = pq.read_schema(file)
    except (OSError, pa.ArrowException) as error:
        return f"not a readable Parquet file ({str(error).strip().splitlines()[0]})"
    missing = [name for name in CAPTURE.fieldNames() if name not in schema.names]
    return f"not a capture part (no column {missing[0]})" if missing else None


def source_of(part: Path) -> str:
    """The source of a part file's rows, from its name (see schema.py)."""
    matched = _PART.match(part.name)
    prefix = matched.group(1) if matched else ""
    return SOURCE_BY_PREFIX.get(prefix, prefix or UNKNOWN_SOURCE)


def read_captures(
    spark: SparkSession,
    directories: Sequence[Path],
    time_from_ns: int | None = None,
    time_to_ns: int | None = None,
    more: Sequence[DataFrame] = (),
) -> DataFrame:
    """Decoded rows (schema.DECODED_ARROW) of every part under `directories`, read and decoded in
    the executors, and of `more` (capture rows in Spark with `source` and `server`, e.g. a pcap's
    exchanges: pcaps.py, already in the time range), decoded likewise."""
    parts = [(str(part), source_of(part), part.stat().st_size) for d in directories for part in part_files(d)]
    decoded = [decode_captures(frame) for frame in more]
    if parts or not decoded:
        listed = task_frame(spark, balanced(parts, spark.sparkContext.defaultParallelism))
        span = (time_from_ns, time_to_ns)

        def read(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
            for batch in batches:
                for task in batch["parts"].to_pylist():
                    for part in task:
                        for rows in capture_rows(part["path"], part["source"], *span):
                            yield from decode_batch(digested(rows)).to_batches()

        decoded.insert(0, listed.mapInArrow(read, decoded_spark_schema()))
    return functools.reduce(DataFrame.unionByName, decoded)


def task_frame(spark: SparkSession, tasks: list[list[tuple[str, str]]]) -> DataFrame:
    """A row per task (its parts: path and source), each row a partition of its own, so a task of
    `balanced` is a Spark task (`parallelize` cuts a list into slices by position: one element a
    slice only when there are as many slices as elements)."""
    rows = [([{"path": path, "source": source} for path, source in task],) for task in tasks]
    return spark.createDataFrame(
        spark.sparkContext.parallelize(rows, max(1, len(rows))), "parts array<struct<path: string, source: string>>"
    )


def balanced(parts: list[tuple[str, str, int]], slots: int) -> list[list[tuple[str, str]]]:
    """`parts` (path, source, bytes) in tasks of about `TASK_BYTES`, at least `slots` of them (as
    many as there are parts at most), the largest part first to the lightest task; in a task,
    the parts in the order given."""
    count = min(len(parts), max(slots, -(-sum(size for _, _, size in parts) // TASK_BYTES)))
    if count == 0:
        return []
    lightest = [(0, index) for index in range(count)]
    chosen: dict[int, int] = {}
    for position in sorted(range(len(parts)), key=lambda position: -parts[position][2]):
        load, task = heapq.heappop(lightest)
        chosen[position] = task
        heapq.heappush(lightest, (load + parts[position][2], task))
    tasks: list[list[tuple[str, str]]] = [[] for _ in range(count)]
    for position, (path, source, _) in enumerate(parts):
        tasks[chosen[position]].append((path, source))
    return tasks


def capture_rows(
    path: str, source: str, time_from_ns: int | None = None, time_to_ns: int | None = None
) -> Iterator[pa.RecordBatch]:
    """A part's capture rows (`CAPTURE`'s columns, then `source` and a null `server`) in batches of
    `BATCH_ROWS`, those whose request time is in [`time_from_ns`, `time_to_ns`) only."""
    for batch in pq.ParquetFile(path).iter_batches(batch_size=BATCH_ROWS, columns=CAPTURE.fieldNames()):
        if time_from_ns is not None:
            batch = batch.filter(pc.greater_equal(batch.column("request_time_ns"), time_from_ns))
        if time_to_ns is not None:
            batch = batch.filter(pc.less(batch.column("request_time_ns"), time_to_ns))
        if batch.num_rows:
            rows = batch.num_rows
            yield batch.append_column("source", pa.array([source] * rows, pa.string())).append_column(
                "server", pa.nulls(rows, pa.string())
            )
