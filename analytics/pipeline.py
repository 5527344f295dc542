"""The job's steps in order: read, decode once, write the tables, read them back for the report.

Purpose: `run(spark, captures, out, ...)` is the whole job on a given session (job.py makes the
session and handles the command line; tests and `make demo` may call this directly).

Rules:
- Frames are decoded exactly once: the decoded rows (flat, decode.py) are written by Spark's
  own Parquet writer, through its output committer, into the staging output (`_decoded`, one
  directory per row kind, deleted before the output is put in place), and every table is built
  from that; the aggregates are built from the base tables as written, and the report from the
  aggregates as written, so no Spark plan ever decodes twice or recomputes a join it wrote. No
  task writes a file itself: a retried or speculative task leaves nothing the committer did not
  commit.
- Every table is a Parquet directory `<out>/<table>`, written by Spark's `DataFrameWriter`
  through its output committer (each with its `_SUCCESS` marker); the report is
  `<out>/report.html` and the console summary also `<out>/summary.txt`, written by the driver
  through the same filesystem (output.py: a local path, or any Hadoop filesystem URI).
- The session's time zone is set to UTC, so timestamps mean the same on every machine.
- Spark is handed Hadoop path strings (output.py, paths.py: `write_path` to write, `read_path` to
  read), never `Path.as_uri()`, whose percent-escapes Hadoop takes as part of the names.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from pyspark.sql import DataFrame, SparkSession

from . import aggregates, journal, pcaps, report, report_html, report_summary, transforms
from .output import Staging, staged, unsorted_partitioned_writes
from .pcap import DEFAULT_KAFKA_PORTS
from .read import read_captures
from .schema import decoded_spark_schema

BASE_TABLES = ("exchanges", "partition_results", "decode_errors", "other_traffic")
DERIVED_TABLES = (
    "paired_exchanges",
    "request_rates",
    "latency_percentiles",
    "error_counts",
    "broker_epochs",
    "stale_rejections",
    "stale_rejections_per_window",
    "isr_changes",
    "unstable_partitions",
    "controlled_shutdowns",
    "replica_state_events",
)
#: Built from the derived tables as written (the most unstable partitions' rows).
FOCUS_TABLES = ("partition_timelines",)
#: What the fleet did on purpose, from its journals (`--journal`; empty without one).
JOURNAL_TABLES = ("fleet_events",)
TABLES = BASE_TABLES + DERIVED_TABLES + FOCUS_TABLES + JOURNAL_TABLES


@dataclass(frozen=True)
class Result:
    out: str  # a local path, or the output's URI
    report: str
    summary: list[str]


def stderr_progress(message: str) -> None:
    print(f"[fencer-analyze] {message}", file=sys.stderr, flush=True)


def _timed(progress: Callable[[str], None]) -> Callable[[str], None]:
    """`progress`, each message led by the seconds since this call (where a run's time goes)."""
    started = time.monotonic()
    return lambda message: progress(f"{time.monotonic() - started:6.1f} s {message}")


def base_tables(decoded: DataFrame, pcap_rows: DataFrame) -> dict[str, DataFrame]:
    return {
        "exchanges": transforms.exchanges(decoded),
        "partition_results": transforms.partition_results(decoded),
        "decode_errors": transforms.decode_errors(decoded).unionByName(pcaps.stream_problems(pcap_rows)),
        "other_traffic": pcaps.other_traffic(pcap_rows),
    }


def derived_tables(exchanges: DataFrame, partition_rows: DataFrame, window_seconds: float) -> dict[str, DataFrame]:
    rejections = aggregates.stale_rejections(exchanges, partition_rows)
    changes = aggregates.isr_changes(partition_rows)
    return {
        "paired_exchanges": transforms.paired_exchanges(exchanges),
        "request_rates": aggregates.request_rates(exchanges, window_seconds),
        "latency_percentiles": aggregates.latency_percentiles(exchanges),
        "error_counts": aggregates.error_counts(exchanges),
        "broker_epochs": aggregates.broker_epochs(exchanges),
        "stale_rejections": rejections,
        "stale_rejections_per_window": aggregates.stale_rejections_per_window(rejections, window_seconds),
        "isr_changes": changes,
        "unstable_partitions": aggregates.unstable_partitions(changes),
        "controlled_shutdowns": aggregates.controlled_shutdowns(exchanges),
        "replica_state_events": aggregates.replica_state_events(partition_rows),
    }


def focus_tables(written: dict[str, DataFrame]) -> dict[str, DataFrame]:
    timelines = aggregates.partition_timelines(written["partition_results"], written["unstable_partitions"])
    return {"partition_timelines": timelines}


def run(
    spark: SparkSession,
    captures: Sequence[Path],
    out: Path | str,
    *,
    window_seconds: float = 1.0,
    time_from_ns: int | None = None,
    time_to_ns: int | None = None,
    journals: Sequence[Path] = (),
    pcap_files: Sequence[Path] = (),
    kafka_ports: frozenset[int] = DEFAULT_KAFKA_PORTS,
    progress: Callable[[str], None] = stderr_progress,
) -> Result:
    """Analyse `captures` (checked directories) and `pcap_files` into `out` (a local path or a
    Hadoop URI, output.py), replacing it only when complete."""
    spark.conf.set("spark.sql.session.timeZone", "UTC")
    progress = _timed(progress)

    with staged(spark, out) as staging:
        pcap_rows = pcaps.empty_rows(spark)
        if pcap_files:
            progress(f"reading {len(pcap_files)} pcap file(s) in the executors, a task each")
            pcaps.read_pcaps(spark, pcap_files, kafka_ports).write.parquet(staging.write_path(PCAP_ROWS))
            pcap_rows = pcaps.in_time_range(
                spark.read.schema(pcaps.pcap_spark_schema()).parquet(staging.read_path(PCAP_ROWS)),
                time_from_ns,
                time_to_ns,
            )
        progress(f"reading {len(captures)} capture dir(s); decoding frames in the executors")
        more = [pcaps.exchanges_of(pcap_rows)] if pcap_files else []
        decoded = read_captures(spark, captures, time_from_ns, time_to_ns, more)
        with unsorted_partitioned_writes(spark, open_files=4):  # a file per row kind (schema.py)
            decoded.write.partitionBy("row_kind").parquet(staging.write_path(DECODED))
        decoded = spark.read.schema(decoded_spark_schema()).parquet(staging.read_path(DECODED))
        written = _write(spark, base_tables(decoded, pcap_rows), staging, progress)
        derived = derived_tables(written["exchanges"], written["partition_results"], window_seconds)
        written |= _write(spark, derived, staging, progress)
        written |= _write(spark, focus_tables(written), staging, progress)
        written |= _write(spark, {"fleet_events": journal.fleet_events(spark, journals)}, staging, progress)
        progress("drawing the report")
        collected = report.collect(written, [str(path) for path in [*captures, *pcap_files]], window_seconds)
        staging.write_text("report.html", report_html.html(collected))
        lines = report_summary.summary(collected)
        staging.write_text("summary.txt", "\n".join(lines) + "\n")
        staging.delete(DECODED)
        if pcap_files:
            staging.delete(PCAP_ROWS)
        progress("done")
        where = Result(staging.final(), staging.final("report.html"), lines)
    return where


#: The decoded rows, staged inside the output while the tables are built from them.
DECODED = "_decoded"
#: The pcap files' rows (pcaps.py), staged likewise: each file is read once.
PCAP_ROWS = "_pcap"


def _write(
    spark: SparkSession, tables: dict[str, DataFrame], staging: Staging, progress: Callable[[str], None]
) -> dict[str, DataFrame]:
    """Write each table as Parquet with Spark's writer into `staging`; the tables read back from what was written."""
    written = {}
    for name, table in tables.items():
        progress(f"writing {name}")
        table.write.parquet(staging.write_path(name))
        written[name] = spark.read.schema(table.schema).parquet(staging.read_path(name))
    return written
