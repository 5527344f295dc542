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
- Every table is a Parquet directory `<out>/<table>`; the report is `<out>/report.html` and the
  console summary also `<out>/summary.txt`.
- The session's time zone is set to UTC, so timestamps mean the same on every machine.
- Spark is handed `file:` path strings from paths.py (`write_path` to write, `read_path` to read),
  never `Path.as_uri()`, whose percent-escapes Hadoop takes as part of the names.
"""

from __future__ import annotations

import shutil
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from pyspark.sql import DataFrame, SparkSession

from . import aggregates, report, transforms
from .decode import decode_captures
from .output import staged_output
from .paths import read_path, write_path
from .read import read_captures
from .schema import decoded_spark_schema

BASE_TABLES = ("exchanges", "partition_results", "decode_errors")
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
TABLES = BASE_TABLES + DERIVED_TABLES


@dataclass(frozen=True)
class Result:
    out: Path
    report: Path
    summary: list[str]


def stderr_progress(message: str) -> None:
    print(f"[fencer-analyze] {message}", file=sys.stderr, flush=True)


def base_tables(decoded: DataFrame) -> dict[str, DataFrame]:
    return {
        "exchanges": transforms.exchanges(decoded),
        "partition_results": transforms.partition_results(decoded),
        "decode_errors": transforms.decode_errors(decoded),
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


def run(
    spark: SparkSession,
    captures: Sequence[Path],
    out: Path,
    *,
    window_seconds: float = 1.0,
    time_from_ns: int | None = None,
    time_to_ns: int | None = None,
    progress: Callable[[str], None] = stderr_progress,
) -> Result:
    """Analyse `captures` (checked directories) into `out`, replacing it only when complete."""
    spark.conf.set("spark.sql.session.timeZone", "UTC")
    with staged_output(out) as staging:
        progress(f"reading {len(captures)} capture dir(s); decoding frames in the executors")
        decoded_path = staging / "_decoded"
        decoded = decode_captures(read_captures(spark, captures, time_from_ns, time_to_ns))
        decoded.write.partitionBy("row_kind").parquet(write_path(decoded_path))
        decoded = spark.read.schema(decoded_spark_schema()).parquet(read_path(decoded_path))
        written = _write(spark, base_tables(decoded), staging, progress)
        derived = derived_tables(written["exchanges"], written["partition_results"], window_seconds)
        written |= _write(spark, derived, staging, progress)
        progress("drawing the report")
        collected = report.collect(written, [str(path) for path in captures], window_seconds)
        (staging / "report.html").write_text(report.html(collected), encoding="utf-8")
        lines = report.summary(collected)
        (staging / "summary.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
        shutil.rmtree(decoded_path)
    final = out.resolve()
    return Result(final, final / "report.html", lines)


def _write(
    spark: SparkSession, tables: dict[str, DataFrame], staging: Path, progress: Callable[[str], None]
) -> dict[str, DataFrame]:
    """Write each table as Parquet under `staging`; the tables read back from what was written."""
    written = {}
    for name, table in tables.items():
        progress(f"writing {name}")
        table.write.parquet(write_path(staging / name))
        written[name] = spark.read.schema(table.schema).parquet(read_path(staging / name))
    return written
