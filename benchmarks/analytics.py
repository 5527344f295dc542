"""Analytics benchmark: the Spark job over a generated capture, against one plain Python process.

Run: `.venv/bin/python benchmarks/analytics.py [--exchanges N] [--capture-dir DIR] [--rounds R]`
(`make bench-analytics`: 5,000,000 exchanges).

- The capture: N exchanges of real frames in the fleet's mix (per 100: 55 BrokerHeartbeat, 18
  AlterPartition v3 of 1-4 partitions, 10 LeaderAndIsr v7 of 1-8 partitions to brokers, 3
  StopReplica v4, 3 AlterReplicaState v1, 2 ControlledShutdown v3, 2 BrokerRegistration v3,
  3 DescribeCluster, 2 ApiVersions, 1 CreateTopics, 1 DeleteTopics; a few percent of stale-epoch
  answers), 64 variants of each, at 50,000 exchanges/s, written as the daemon writes its parts
  (50,000 rows each, zstd). Seeded: the same arguments give the same capture. With
  `--capture-dir`, a capture already there (from an earlier run with the same N) is reused.
- Baseline: one Python process, no Spark: pyarrow reads the parts, `analytics.decode.decode_batch`
  decodes them batch by batch (the same function the executors run), pyarrow computes the same
  three aggregates (requests per window and API, latency p50/p95/p99 per API and version, error
  counts per API and version).
- Spark, decode-and-aggregate: the job's own steps for the same work (decode in the executors,
  staged as Parquet, the exchanges, the same three aggregates written as Parquet), `local[2]`.
- Spark, the whole job: `analytics.pipeline.run` (every table, the report).
Prints times, exchanges/s and the ratios baseline / Spark (target: >= 1.6x for decode-and-aggregate
on a 2-core machine). The session's start-up (JVM) is timed apart and not in the job times.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from analytics import aggregates, transforms
from analytics.decode import decode_batch, stage_decoded
from analytics.job import workers_import_this_code
from analytics.output import staged_output
from analytics.pipeline import run
from analytics.read import check_capture_dirs, read_captures
from analytics.schema import ENVELOPE, decoded_spark_schema
from benchmarks.analytics_mix import PART_ROWS, write_capture
from benchmarks.codec import machine


def baseline(directory: Path) -> float:
    """Decode and aggregate in this process (pyarrow + protocol, no Spark); seconds."""
    started = time.perf_counter()
    kept = ["request_time_ns", "direction", "source", "api_name", "api_version", "error_code", "error_name"]
    pieces = []
    for batch in ds.dataset(directory, format="parquet").to_batches(batch_size=10_000):
        rows = batch.num_rows
        batch = pa.RecordBatch.from_arrays(
            [*batch.columns, pa.array(["controller"] * rows), pa.array([0] * rows, pa.int64())],
            names=[*batch.schema.names, "source", "request_digest"],
        )
        decoded = decode_batch(batch.select([*ENVELOPE, "request", "response"]))
        decoded = decoded.filter(decoded.column("request_decoded"))
        latency = pc.divide(pc.subtract(decoded.column("response_time_ns"), decoded.column("request_time_ns")), 1e6)
        pieces.append(pa.Table.from_batches([decoded.select(kept)]).append_column("latency_ms", latency))
    table = pa.concat_tables(pieces)
    window = pc.divide(table.column("request_time_ns"), pa.scalar(1_000_000_000, pa.int64()))
    table = table.append_column("window", window)
    table.group_by(["window", "source", "direction", "api_name"]).aggregate([("api_name", "count")])
    quantiles = pc.TDigestOptions(q=[0.5, 0.95, 0.99])
    table.group_by(["source", "direction", "api_name", "api_version"]).aggregate(
        [("latency_ms", "tdigest", quantiles), ("latency_ms", "count"), ("latency_ms", "mean"), ("latency_ms", "max")]
    )
    answered = table.filter(pc.is_valid(table.column("error_code")))
    answered.group_by(["source", "direction", "api_name", "api_version", "error_code", "error_name"]).aggregate(
        [("error_code", "count")]
    )
    return time.perf_counter() - started


def spark_decode_aggregate(spark: Any, directory: Path, out: Path) -> float:
    """The same work with the job's steps on Spark; seconds."""
    started = time.perf_counter()
    with staged_output(out) as staging:
        decoded_path = staging / "_decoded"
        stage_decoded(read_captures(spark, check_capture_dirs([directory])), decoded_path)
        exchanges = transforms.exchanges(spark.read.schema(decoded_spark_schema()).parquet(decoded_path.as_uri()))
        exchanges.write.parquet((staging / "exchanges").as_uri())
        exchanges = spark.read.parquet((staging / "exchanges").as_uri())
        aggregates.request_rates(exchanges, 1.0).write.parquet((staging / "request_rates").as_uri())
        aggregates.latency_percentiles(exchanges).write.parquet((staging / "latency_percentiles").as_uri())
        aggregates.error_counts(exchanges).write.parquet((staging / "error_counts").as_uri())
    return time.perf_counter() - started


def whole_job(spark: Any, directory: Path, out: Path) -> float:
    started = time.perf_counter()
    run(spark, check_capture_dirs([directory]), out, progress=lambda _: None)
    return time.perf_counter() - started


def tree_cpu_seconds() -> float:
    """CPU seconds used so far by this process and every descendant (the JVM, its Python workers).

    Live processes count their own time plus that of the children they reaped (so exited Python
    workers count through the worker daemon that reaped them)."""
    tick = os.sysconf("SC_CLK_TCK")
    parents, used = {}, {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        pid = int(stat.parent.name)
        parents[pid] = int(fields[1])
        used[pid] = sum(int(value) for value in fields[11:15]) / tick
    mine, total = os.getpid(), 0.0
    for pid in used:
        ancestor = pid
        while ancestor not in (mine, 0, 1) and ancestor in parents:
            ancestor = parents[ancestor]
        if ancestor == mine:
            total += used[pid]
    return total


def timed_rounds(label: str, rounds: int, measure: Callable[[], float]) -> tuple[float, float]:
    """(median wall seconds, median CPU seconds of the whole process tree) over `rounds`."""
    times, cpus = [], []
    for index in range(rounds):
        cpu = tree_cpu_seconds()
        seconds = measure()
        times.append(seconds)
        cpus.append(tree_cpu_seconds() - cpu)
        print(f"  {label} round {index + 1}: {seconds:.1f} s, {cpus[-1]:.1f} CPU s", flush=True)
    return statistics.median(times), statistics.median(cpus)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--exchanges", type=int, default=5_000_000)
    parser.add_argument("--capture-dir", type=Path, help="where the capture is (reused) or generated")
    parser.add_argument("--rounds", type=int, default=1, help="rounds of each measurement (median reported)")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--skip-whole-job", action="store_true")
    args = parser.parse_args()
    scratch = Path(tempfile.mkdtemp(prefix="fencer-bench-analytics-"))
    capture = args.capture_dir or scratch / "capture"
    try:
        print(f"machine: {machine()}", flush=True)
        started = time.perf_counter()
        made = write_capture(capture, args.exchanges, args.seed)
        size = sum(path.stat().st_size for path in capture.glob("*.parquet"))
        how = f"{'generated' if made else 'reused'} in {time.perf_counter() - started:.1f} s"
        parts = -(-args.exchanges // PART_ROWS)
        print(f"capture: {args.exchanges:,} exchanges, {parts} parts, {size / 2**20:,.0f} MiB ({how})")
        plain, plain_cpu = timed_rounds("baseline (one Python process)", args.rounds, lambda: baseline(capture))
        workers_import_this_code()
        from pyspark.sql import SparkSession

        started = time.perf_counter()
        spark = (
            SparkSession.builder.master("local[2]").appName("bench-analytics")
            .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
            .config("spark.driver.memory", "4g").getOrCreate()
        )  # fmt: skip
        spark.sparkContext.setLogLevel("ERROR")
        print(f"  Spark session start-up: {time.perf_counter() - started:.1f} s (not counted below)")
        same, same_cpu = timed_rounds(
            "Spark decode-and-aggregate", args.rounds, lambda: spark_decode_aggregate(spark, capture, scratch / "out")
        )
        full = None
        if not args.skip_whole_job:
            full = timed_rounds("Spark whole job", args.rounds, lambda: whole_job(spark, capture, scratch / "job"))
        spark.stop()
        count = args.exchanges
        print(
            f"\nbaseline, one Python process: {plain:.1f} s ({plain_cpu:.1f} CPU s), {count / plain:,.0f} exchanges/s"
        )
        print(
            f"Spark local[2], decode-and-aggregate: {same:.1f} s ({same_cpu:.1f} CPU s), "
            f"{count / same:,.0f} exchanges/s, {plain / same:.2f}x the baseline (target >= 1.6x)"
        )
        if full is not None:
            print(
                f"Spark local[2], the whole job (14 tables + report): {full[0]:.1f} s ({full[1]:.1f} CPU s), "
                f"{count / full[0]:,.0f} exchanges/s, {plain / full[0]:.2f}x the baseline"
            )
        print(
            f"CPU: Spark spends {same_cpu / plain_cpu:.2f}x the baseline's CPU for the same work; on two otherwise "
            f"idle cores that bounds decode-and-aggregate at {2 * plain_cpu / same_cpu:.2f}x (load average now: "
            f"{os.getloadavg()[0]:.1f})"
        )
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    main()
