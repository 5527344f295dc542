"""pcap and pcapng files as the job's input: found by the driver, read by the executors, one task a file.

Purpose: `find_inputs` sorts the command line's inputs into capture dirs (fencer's own Parquet
parts) and pcap files; `read_pcaps` turns the pcap files into rows with Spark, in the executors
(`analytics.pcap.read_pcap`, streaming each file); `exchanges_of`, `other_traffic` and
`stream_problems` split those rows into capture rows (decoded like fencer's own), the traffic
counted but not decoded, and what could not be read (rows of `decode_errors`).

Rules:
- An input is a capture dir, a pcap or pcapng file (told by its first four bytes, whatever its
  name), or a directory holding pcap files (`*.pcap`, `*.pcapng`, `*.cap`, and tcpdump's rotated
  `*.pcapN` names, checked by their first bytes) and/or capture parts; not recursive.
- Each file is one task: a pcap cannot be split (a packet's start is only known from the one
  before), so many files read in parallel and one huge file is one task, streamed (the reader's
  memory is bounded per connection, not by the file's size). Like capture dirs, the files must be
  at the same path on every node of a cluster.
- `source` is the file's name; when several inputs share a name, the path from their common
  parent ("broker-1/capture.pcap"), so every (source, connection id) is one connection.
- Rows are written once (staged, pipeline.py) and read back per kind, so no file is read twice.
- `direction` is inbound (the server received the request); `peer` is the client and `server`
  the side on a Kafka port (`--kafka-port`, repeatable, default 9092 and 9093).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.pandas.types import from_arrow_schema
from pyspark.sql.types import StructType

from protocol.capture import INBOUND, capture_schema

from .pcap import DEFAULT_KAFKA_PORTS, Other, PcapExchange, Problem, read_pcap
from .pcap.files import is_packet_file
from .pcap.kafka_apis import KAFKA_API_NAMES
from .read import CaptureError, check_capture_dirs, part_files
from .transforms import timestamp_of


def is_pcap(path: Path) -> bool:
    """Whether the file at `path` starts like a pcap or pcapng file; `OSError` if it cannot be read."""
    with path.open("rb") as stream:
        return is_packet_file(stream.read(4))


_PCAP_NAME = re.compile(r"^[^.].*\.(pcap|pcapng|cap)[0-9]*$", re.IGNORECASE)


def _pcap_name(path: Path) -> bool:
    return _PCAP_NAME.match(path.name) is not None


def find_inputs(inputs: Sequence[str | Path]) -> tuple[list[Path], list[Path]]:
    """(capture dirs, pcap files), each absolute, in the order given; `CaptureError` (one line) for
    an input that is neither, or cannot be read."""
    directories: list[Path] = []
    pcaps: list[Path] = []
    for given in inputs:
        path = Path(given).resolve()
        if path.is_file():
            try:
                starts_like_one = is_pcap(path)
            except OSError as error:
                raise CaptureError(f"{given}: cannot be read ({error.strerror})") from error
            if not starts_like_one:
                raise CaptureError(f"{given}: not a capture dir, and not a pcap or pcapng file")
            pcaps.append(path)
            continue
        if not path.is_dir():
            raise CaptureError(f"capture dir {given}: not a directory")
        try:
            named = sorted(entry for entry in path.iterdir() if _pcap_name(entry) and entry.is_file())
            has_parts = bool(part_files(path))
        except OSError as error:
            raise CaptureError(f"capture dir {given}: cannot be read ({error.strerror})") from error
        found = []
        for entry in named:  # a pcap's name but not its first bytes (notes, a gzip'd copy): not read
            try:
                if is_pcap(entry):
                    found.append(entry)
            except OSError as error:
                raise CaptureError(f"capture dir {given}: cannot read {entry.name} ({error.strerror})") from error
        pcaps += found
        if has_parts or not found:
            directories += check_capture_dirs([path])  # with no pcap either, its "no capture parts" line
    return directories, pcaps


def source_names(files: Sequence[Path]) -> dict[Path, str]:
    """Each file's `source`: its name, or its path from the common parent where names repeat."""
    names = [path.name for path in files]
    repeated = {name for name in names if names.count(name) > 1}
    if not repeated:
        return {path: path.name for path in files}
    common = Path(os.path.commonpath([str(path.parent) for path in files]))
    return {path: str(path.relative_to(common)) if path.name in repeated else path.name for path in files}


#: `item` values of the rows `read_pcaps` yields.
EXCHANGE_ITEM = 0
OTHER_ITEM = 1
PROBLEM_ITEM = 2

#: The rows of `read_pcaps`: the capture's columns (protocol.capture) plus `server`, then an
#: `Other`'s counts and a `Problem`'s reason; each item uses its subset, the rest null.
PCAP_ROWS = pa.schema(
    [
        pa.field("item", pa.int8()),
        pa.field("source", pa.string()),
        *(pa.field(field.name, field.type) for field in capture_schema()),  # nullable: other items leave them out
        pa.field("server", pa.string()),
        pa.field("kind", pa.string()),
        pa.field("requests", pa.int64()),
        pa.field("responses", pa.int64()),
        pa.field("request_bytes", pa.int64()),
        pa.field("response_bytes", pa.int64()),
        pa.field("last_ns", pa.int64()),
        pa.field("reason", pa.string()),
        pa.field("missing_bytes", pa.int64()),
    ]
)
#: Rows per Arrow batch handed to the JVM (exchanges carry frames: a batch stays a few MiB).
BATCH_ROWS = 2_000


def _row(source: str, item: PcapExchange | Other | Problem) -> dict[str, Any]:
    if isinstance(item, PcapExchange):
        return {"item": EXCHANGE_ITEM, "source": source, **item._asdict()}
    if isinstance(item, Other):
        values = item._asdict()
        values["request_time_ns"] = values.pop("first_ns")
        return {"item": OTHER_ITEM, "source": source, **values}
    return {
        "item": PROBLEM_ITEM,
        "source": source,
        "request_time_ns": item.time_ns,
        "connection_id": item.connection_id,
        "peer": item.peer,
        "server": item.server,
        "reason": item.reason,
        "missing_bytes": item.missing_bytes,
    }


def _batch(rows: list[dict[str, Any]]) -> pa.RecordBatch:
    return pa.RecordBatch.from_pylist(rows, schema=PCAP_ROWS)


def rows_of_files(files: Iterator[tuple[str, str]], kafka_ports: frozenset[int]) -> Iterator[pa.RecordBatch]:
    """The rows of each (path, source), streamed in batches of `BATCH_ROWS`."""
    for path, source in files:
        rows: list[dict[str, Any]] = []
        for item in read_pcap(path, kafka_ports):
            rows.append(_row(source, item))
            if len(rows) == BATCH_ROWS:
                yield _batch(rows)
                rows = []
        if rows:
            yield _batch(rows)


def read_pcaps(
    spark: SparkSession, files: Sequence[Path], kafka_ports: frozenset[int] = DEFAULT_KAFKA_PORTS
) -> DataFrame:
    """The rows (`PCAP_ROWS`) of `files`, one task a file."""
    sources = source_names(files)
    # a slice per file, so a task per file (a DataFrame's round-robin repartition may pair two)
    pairs = spark.sparkContext.parallelize([(str(path), sources[path]) for path in files], len(files))
    listed = spark.createDataFrame(pairs, "path string, source string")
    ports = frozenset(kafka_ports)

    def read(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            yield from rows_of_files(zip(batch["path"].to_pylist(), batch["source"].to_pylist(), strict=True), ports)

    return listed.mapInArrow(read, pcap_spark_schema())


def exchanges_of(rows: DataFrame) -> DataFrame:
    """The exchanges among `read_pcaps`' rows, as capture rows with `source` and `server`."""
    return rows.filter(F.col("item") == EXCHANGE_ITEM).select(*capture_schema().names, "source", "server")


OTHER_TRAFFIC_COLUMNS = [
    "source",
    "kind",
    "api_key",
    "api_name",
    "api_version",
    "connections",
    "requests",
    "responses",
    "request_bytes",
    "response_bytes",
    "first_time",
    "last_time",
]


def other_traffic(rows: DataFrame) -> DataFrame:
    """Per source, kind ("kafka": an API that is not control plane; "tls"; "not-kafka"), API and
    version: the connections, frames and bytes counted without being decoded."""
    others = rows.filter(F.col("item") == OTHER_ITEM)
    counted = others.groupBy("source", "kind", "api_key", "api_version").agg(
        F.countDistinct("connection_id").alias("connections"),
        F.sum("requests").alias("requests"),
        F.sum("responses").alias("responses"),
        F.sum("request_bytes").alias("request_bytes"),
        F.sum("response_bytes").alias("response_bytes"),
        F.min("request_time_ns").alias("first_ns"),
        F.max("last_ns").alias("last_ns"),
    )
    names = F.create_map(*(F.lit(part) for key, name in KAFKA_API_NAMES.items() for part in (key, name)))
    named = F.coalesce(names[F.col("api_key")], F.format_string("api %d", "api_key"))
    name = F.when(F.col("api_key").isNotNull(), named)
    return counted.select(
        "source",
        "kind",
        "api_key",
        name.alias("api_name"),
        "api_version",
        "connections",
        "requests",
        "responses",
        "request_bytes",
        "response_bytes",
        timestamp_of("first_ns").alias("first_time"),
        timestamp_of("last_ns").alias("last_time"),
    )


def stream_problems(rows: DataFrame) -> DataFrame:
    """What the reader could not read, as rows of `decode_errors` (transforms.decode_errors' columns)."""
    problems = rows.filter(F.col("item") == PROBLEM_ITEM)
    return problems.select(
        timestamp_of("request_time_ns").alias("time"),
        "request_time_ns",
        "source",
        F.lit(INBOUND).alias("direction"),
        "peer",
        "connection_id",
        F.lit(None).cast("short").alias("api_key"),
        F.lit(None).cast("short").alias("api_version"),
        F.lit(None).cast("int").alias("correlation_id"),
        F.lit(None).cast("int").alias("request_bytes"),
        F.lit(None).cast("int").alias("response_bytes"),
        "reason",
    )


def pcap_spark_schema() -> StructType:
    """`PCAP_ROWS` as Spark's schema."""
    return from_arrow_schema(PCAP_ROWS)


def empty_rows(spark: SparkSession) -> DataFrame:
    """`read_pcaps`' rows of no file (a run over capture dirs only)."""
    return spark.createDataFrame([], pcap_spark_schema())


def in_time_range(rows: DataFrame, time_from_ns: int | None, time_to_ns: int | None) -> DataFrame:
    """`--from`/`--to` on the rows: exchanges and problems by their time, counted traffic when its
    span (first to last frame of its connection) overlaps the range."""
    start, end = F.col("request_time_ns"), F.coalesce(F.col("last_ns"), F.col("request_time_ns"))
    if time_from_ns is not None:
        rows = rows.filter(end >= time_from_ns)
    if time_to_ns is not None:
        rows = rows.filter(start < time_to_ns)
    return rows
