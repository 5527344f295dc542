"""Finding and reading capture directories: checks that give one clear line, then Spark's reader.

Purpose: `check_capture_dirs` refuses, before any Spark work, what would otherwise fail deep in
a job (a missing, unreadable or empty directory); `read_captures` reads the parts with the
explicit schema and adds the two columns every later step relies on: `source` (from the part
file's name, schema.py says how) and `request_digest` (a hash of the request frame, so that the
two sides' rows of one exchange can be joined without carrying the frames around).

Rules:
- A part is a file named like `<prefix>-<19 digits>-<n>.parquet`, not starting with `.` (a
  writer's temporary file); anything else in a capture dir is ignored, as the writers promise.
- The parts are listed by the driver (the same rule as the writers') and handed to Spark by name,
  per source; a part published after the listing is not read.
- Paths go to Spark as `file:` paths read literally (paths.py: `=`, spaces, `%`, `#`, glob
  characters and non-ASCII names are read as they are): on a cluster the capture must sit at the
  same path on every node (a shared mount), never on the cluster's default filesystem by accident.
  A dir Spark cannot read by its name (a `:` with a glob character) is refused in one line.
- `--from`/`--to` filter on the request's time, before decoding, so frames outside the range
  are never decoded.
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Sequence
from pathlib import Path

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from .paths import path_problem, read_path
from .schema import CAPTURE, PART_NAME_PATTERN, SOURCE_BY_PREFIX, UNKNOWN_SOURCE

_PART = re.compile(PART_NAME_PATTERN)


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
        checked.append(directory)
    return checked


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
    """Capture rows of every part under `directories`, and of `more` (capture rows with `source`
    and `server`, e.g. a pcap's exchanges: pcaps.py), with `source`, `server` (null for parts)
    and `request_digest`.

    The parts are listed here and read per source, so `source` is a constant of each read (no
    per-row work); the union keeps every part's rows."""
    by_source: dict[str, list[str]] = {}
    for directory in directories:
        for part in part_files(directory):
            by_source.setdefault(source_of(part), []).append(read_path(part))
    reads = [
        spark.read.schema(CAPTURE)
        .parquet(*parts)
        .withColumn("source", F.lit(source))
        .withColumn("server", F.lit(None).cast("string"))
        for source, parts in sorted(by_source.items())
    ]
    reads += [frame.select(*CAPTURE.fieldNames(), "source", "server") for frame in more]
    captures = functools.reduce(DataFrame.unionByName, reads)
    if time_from_ns is not None:
        captures = captures.filter(F.col("request_time_ns") >= time_from_ns)
    if time_to_ns is not None:
        captures = captures.filter(F.col("request_time_ns") < time_to_ns)
    return captures.withColumn("request_digest", F.xxhash64("request"))
