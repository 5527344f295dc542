"""Analytics benchmark: the job as a user runs it, over a generated capture, against one plain
Python process doing the same work.

Run: `.venv/bin/python benchmarks/analytics.py [--exchanges N] [--capture-dir DIR] [--rounds R]`
(`make bench-analytics`: 5,000,000 exchanges, 3 rounds).

- The capture: N exchanges of real frames in the fleet's mix (per 100: 55 BrokerHeartbeat, 18
  AlterPartition v3 of 1-4 partitions, 10 LeaderAndIsr v7 of 1-8 partitions to brokers, 3
  StopReplica v4, 3 AlterReplicaState v1, 2 ControlledShutdown v3, 2 BrokerRegistration v3,
  3 DescribeCluster, 2 ApiVersions, 1 CreateTopics, 1 DeleteTopics; a few percent of stale-epoch
  answers), 64 variants of each, at 50,000 exchanges/s, written as the daemon writes its parts
  (50,000 rows each, zstd). Seeded: the same arguments give the same capture. With
  `--capture-dir`, a capture already there (from an earlier run with the same N) is reused.
- The job, as shipped: `python -m analytics CAPTURE --out DIR` in a subprocess, exactly as a user
  runs it (its own session settings, the JVM's start-up included, every table and the report).
  Its CPU is its process tree's, sampled from /proc (the driver, the JVM, the Python workers).
- The same-work baseline, the comparison: `benchmarks.same_work.same_work` in this process, no
  Spark, no JVM: pyarrow reads the parts, `analytics.decode.decode_batch` decodes them (the same
  function the executors run, the request frames hashed as Spark's `xxhash64`), DuckDB builds
  every table of the job and writes it as Parquet, and analytics' own report code writes
  report.html and summary.txt from the same `Report`. tests/analytics/test_same_work.py checks
  that its tables hold the job's rows and its report is the job's (on the tests' scenario; at
  this size its latency percentiles are exact where Spark's are approximate). It reads capture
  dirs only (no pcap reader), which is all this benchmark gives either of them.
- The four-table baseline, kept for the record (the comparison before the same-work one):
  pyarrow and `decode_batch` build the `exchanges` table and three aggregates (requests per
  window and API, latency p50/p95/p99 per API and version, error counts per API and version):
  4 of the job's tables, no report, no request hashing, so its ratio is in its favour.
- `--in-process` also times, on one Spark session in this process (`local[2]`), the job's steps
  for the four-table baseline's work (decode, exchanges, the three aggregates) and
  `analytics.pipeline.run`: parts of the pipeline, printed beside the shipped command's figure,
  never in its place.
Prints times, exchanges/s and the ratios; the last line is `analytics: job vs same-work baseline
N.NNx (CPU M.MMx)`: the baseline's wall time over the job's (medians over the rounds; target:
>= 1.4x on a 2-core machine) and the job's CPU over the baseline's.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from analytics import aggregates, transforms
from analytics.decode import decode_batch
from analytics.job import workers_import_this_code
from analytics.output import staged_output
from analytics.pipeline import run
from analytics.read import check_capture_dirs, read_captures
from analytics.schema import ENVELOPE, EXCHANGE_ROW, LISTENER_ROW, decoded_spark_schema
from benchmarks.analytics_mix import PART_ROWS, write_capture
from benchmarks.codec import machine
from benchmarks.same_work import same_work
from protocol.capture import OUTBOUND


def same_work_baseline(directory: Path, out: Path) -> float:
    """Every table and the report of the job, in this process (benchmarks.same_work); seconds."""
    started = time.perf_counter()
    same_work([directory], out)
    return time.perf_counter() - started


def four_table_baseline(directory: Path, out: Path) -> float:
    """Decode and aggregate in this process (pyarrow + protocol, no Spark), writing 4 of the job's
    tables as Spark does, without the request digest; seconds."""
    started = time.perf_counter()
    out.mkdir(parents=True, exist_ok=True)
    pieces, registrations = [], []
    for batch in ds.dataset(directory, format="parquet").to_batches(batch_size=10_000):
        rows = batch.num_rows
        batch = pa.RecordBatch.from_arrays(
            [
                *batch.columns,
                pa.array(["controller"] * rows),
                pa.array([0] * rows, pa.int64()),
                pa.nulls(rows, pa.string()),
            ],
            names=[*batch.schema.names, "source", "request_digest", "server"],
        )
        decoded = decode_batch(batch.select([*ENVELOPE, "request", "response"]))
        kind = decoded["row_kind"]
        registered = decoded.filter(
            pc.and_(
                pc.equal(kind, LISTENER_ROW),
                pc.and_(pc.equal(decoded["api_key"], 62), pc.equal(decoded["error_code"], 0)),
            )
        )
        if registered.num_rows:
            registrations.append(registered.select(["listener", "request_time_ns", "broker_id"]))
        exchanged = pc.and_(pc.equal(kind, EXCHANGE_ROW), decoded["request_decoded"])
        pieces.append(decoded.filter(exchanged).select(EXCHANGE_SOURCE_COLUMNS))
    table = _exchanges(pa.concat_tables(pieces), registrations)
    pq.write_table(table, out / "exchanges.parquet")
    window = pc.divide(table["request_time_ns"], pa.scalar(1_000_000_000, pa.int64()))
    table = table.append_column("window", window)
    rates = table.group_by(["window", "source", "direction", "api_name"]).aggregate([("api_name", "count")])
    quantiles = pc.TDigestOptions(q=[0.5, 0.95, 0.99])
    latency = table.group_by(["source", "direction", "api_name", "api_version"]).aggregate(
        [("latency_ms", "tdigest", quantiles), ("latency_ms", "count"), ("latency_ms", "mean"), ("latency_ms", "max")]
    )
    answered = table.filter(pc.is_valid(table["error_code"]))
    errors = answered.group_by(
        ["source", "direction", "api_name", "api_version", "error_code", "error_name"]
    ).aggregate([("error_code", "count")])
    for name, aggregate in (("request_rates", rates), ("latency_percentiles", latency), ("error_counts", errors)):
        pq.write_table(aggregate, out / f"{name}.parquet")
    return time.perf_counter() - started


#: The decoded columns the exchanges table keeps (transforms.EXCHANGE_COLUMNS less those computed from them).
EXCHANGE_SOURCE_COLUMNS = [name for name in transforms.EXCHANGE_COLUMNS if name not in ("time", "latency_ms")]


def _exchanges(decoded: pa.Table, registrations: list[pa.Table]) -> pa.Table:
    """transforms.exchanges in pyarrow: time, latency, and control requests' broker from the peer's registration."""
    if registrations:
        listed = pa.concat_tables(registrations).sort_by("request_time_ns")
        latest = listed.group_by("listener", use_threads=False).aggregate([("broker_id", "last")])
        found = pc.take(latest["broker_id_last"], pc.index_in(decoded["peer"], value_set=latest["listener"]))
    else:
        found = pa.nulls(decoded.num_rows, pa.int32())
    control = pc.and_(
        pc.is_in(decoded["api_key"], pa.array([4, 5], pa.int16())), pc.equal(decoded["direction"], OUTBOUND)
    )
    broker = pc.if_else(control, pc.coalesce(decoded["broker_id"], found), decoded["broker_id"])
    micros = pc.divide(decoded["request_time_ns"], pa.scalar(1000, pa.int64()))
    computed = {
        "time": pc.cast(micros, pa.timestamp("us", tz="UTC")),
        "latency_ms": pc.divide(
            pc.cast(pc.subtract(decoded["response_time_ns"], decoded["request_time_ns"]), pa.float64()), 1e6
        ),
        "broker_id": broker,
    }
    return pa.table(
        {name: computed[name] if name in computed else decoded[name] for name in transforms.EXCHANGE_COLUMNS}
    )


def spark_decode_aggregate(spark: Any, directory: Path, out: Path) -> float:
    """The same work with the job's steps on Spark; seconds."""
    started = time.perf_counter()
    with staged_output(out) as staging:
        decoded = read_captures(spark, check_capture_dirs([directory]))
        decoded.write.partitionBy("row_kind").parquet(staging.write_path("_decoded"))
        exchanges = transforms.exchanges(
            spark.read.schema(decoded_spark_schema()).parquet(staging.read_path("_decoded"))
        )
        exchanges.write.parquet(staging.write_path("exchanges"))
        exchanges = spark.read.parquet(staging.read_path("exchanges"))
        aggregates.request_rates(exchanges, 1.0).write.parquet(staging.write_path("request_rates"))
        aggregates.latency_percentiles(exchanges).write.parquet(staging.write_path("latency_percentiles"))
        aggregates.error_counts(exchanges).write.parquet(staging.write_path("error_counts"))
    return time.perf_counter() - started


def whole_job(spark: Any, directory: Path, out: Path) -> float:
    started = time.perf_counter()
    run(spark, check_capture_dirs([directory]), out, progress=lambda _: None)
    return time.perf_counter() - started


def shipped_job(directory: Path, out: Path) -> tuple[float, float]:
    """`python -m analytics DIRECTORY --out OUT` as a user runs it: (wall seconds, CPU seconds of
    its whole process tree: the driver, the JVM and its Python workers, sampled every 0.2 s from
    /proc, since the JVM outlives the driver's wait and a reaped worker's time is not its parent's)."""
    started = time.perf_counter()
    job = subprocess.Popen(
        [sys.executable, "-m", "analytics", str(directory), "--out", str(out)],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    seen: dict[int, float] = {}  # pid -> its own CPU seconds, last seen
    while job.poll() is None:
        seen |= tree_cpu_by_pid(job.pid)
        time.sleep(0.2)
    seconds = time.perf_counter() - started
    _, errors = job.communicate()
    if job.returncode != 0:
        raise RuntimeError(f"the job failed ({job.returncode}): {errors[-2000:]}")
    return seconds, sum(seen.values())


def tree_cpu_by_pid(root: int) -> dict[int, float]:
    """Own CPU seconds (user + system) of `root` and every live descendant, by pid."""
    return {pid: own for pid, (own, _) in process_tree(root).items()}


def process_tree(root: int) -> dict[int, tuple[float, float]]:
    """`root` and its live descendants: pid -> (own CPU seconds, own plus its reaped children's)."""
    tick = os.sysconf("SC_CLK_TCK")
    parents, used = {}, {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        pid = int(stat.parent.name)
        parents[pid] = int(fields[1])
        own = (int(fields[11]) + int(fields[12])) / tick
        used[pid] = (own, own + (int(fields[13]) + int(fields[14])) / tick)
    found = {}
    for pid, times in used.items():
        ancestor = pid
        while ancestor not in (root, 0, 1) and ancestor in parents:
            ancestor = parents[ancestor]
        if ancestor == root:
            found[pid] = times
    return found


ROOT = Path(__file__).resolve().parent.parent


def tree_cpu_seconds() -> float:
    """CPU seconds used so far by this process and every descendant (the JVM, its Python workers).

    Live processes count their own time plus that of the children they reaped (so exited Python
    workers count through the worker daemon that reaped them)."""
    return sum(with_children for _, with_children in process_tree(os.getpid()).values())


def measured(measure: Callable[[], float]) -> tuple[float, float]:
    """(wall seconds `measure` says, CPU seconds of this process tree meanwhile)."""
    cpu = tree_cpu_seconds()
    seconds = measure()
    return seconds, tree_cpu_seconds() - cpu


def medians(rounds: list[tuple[float, float]]) -> tuple[float, float]:
    """(median wall seconds, median CPU seconds) of (wall, CPU) rounds."""
    return statistics.median(wall for wall, _ in rounds), statistics.median(cpu for _, cpu in rounds)


def reported(label: str, index: int, round_: tuple[float, float]) -> tuple[float, float]:
    """`round_` (wall seconds, CPU seconds), printed as round `index` of `label`."""
    print(f"  {label} round {index + 1}: {round_[0]:.1f} s, {round_[1]:.1f} CPU s", flush=True)
    return round_


def timed_rounds(label: str, rounds: int, measure: Callable[[], float]) -> tuple[float, float]:
    """(median wall seconds, median CPU seconds of the whole process tree) over `rounds`."""
    return medians([reported(label, index, measured(measure)) for index in range(rounds)])


def main() -> None:
    parser = argparse.ArgumentParser(description=" ".join(__doc__.split("\n\n")[0].split()))
    parser.add_argument("--exchanges", type=int, default=5_000_000)
    parser.add_argument("--capture-dir", type=Path, help="where the capture is (reused) or generated")
    parser.add_argument("--rounds", type=int, default=1, help="rounds of each measurement (median reported)")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--in-process", action="store_true", help="also time parts of the pipeline on one session")
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
        sames, fours, jobs = [], [], []
        for index in range(args.rounds):  # alternated, so that load on the machine falls on all alike
            same_round = measured(lambda: same_work_baseline(capture, scratch / "same-work"))
            sames.append(reported("same-work baseline", index, same_round))
            four_round = measured(lambda: four_table_baseline(capture, scratch / "four-tables"))
            fours.append(reported("four-table baseline", index, four_round))
            jobs.append(reported("python -m analytics", index, shipped_job(capture, scratch / "job")))
        same, same_cpu = medians(sames)
        four, four_cpu = medians(fours)
        job, job_cpu = medians(jobs)
        count = args.exchanges
        print(
            f"\nsame-work baseline, one Python process, no Spark (every table and the report; capture dirs only, "
            f"no pcap reader): {same:.1f} s ({same_cpu:.1f} CPU s), {count / same:,.0f} exchanges/s"
        )
        print(
            f"four-table baseline, kept for the record (4 of the 17 tables, no report): {four:.1f} s "
            f"({four_cpu:.1f} CPU s), {count / four:,.0f} exchanges/s; the job is {four / job:.2f}x it"
        )
        print(
            f"python -m analytics (every table and the report, start-up included): {job:.1f} s ({job_cpu:.1f} CPU s), "
            f"{count / job:,.0f} exchanges/s, {same / job:.2f}x the same-work baseline (target >= 1.4x)"
        )
        print(
            f"CPU: the job spends {job_cpu / same_cpu:.2f}x the same-work baseline's CPU; on two otherwise idle cores "
            f"that bounds it at {2 * same_cpu / job_cpu:.2f}x (load average now: {os.getloadavg()[0]:.1f})"
        )
        if args.in_process:
            in_process(capture, scratch, args.rounds, four, same)
        print(f"analytics: job vs same-work baseline {same / job:.2f}x (CPU {job_cpu / same_cpu:.2f}x)")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def in_process(capture: Path, scratch: Path, rounds: int, four: float, same: float) -> None:
    """Parts of the pipeline on one warm session in this process (beside the figure, not in its place)."""
    workers_import_this_code()
    from pyspark.sql import SparkSession

    started = time.perf_counter()
    spark = (
        SparkSession.builder.master("local[2]").appName("bench-analytics")
        .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
        .config("spark.driver.memory", "4g")
        .config("spark.driver.extraJavaOptions", "-XX:+UseParallelGC").getOrCreate()
    )  # fmt: skip
    spark.sparkContext.setLogLevel("ERROR")
    print(f"  in-process Spark session start-up: {time.perf_counter() - started:.1f} s (not counted below)")
    part, part_cpu = timed_rounds(
        "in-process decode-and-aggregate", rounds, lambda: spark_decode_aggregate(spark, capture, scratch / "out")
    )
    full, full_cpu = timed_rounds("in-process pipeline.run", rounds, lambda: whole_job(spark, capture, scratch / "run"))
    spark.stop()
    print(
        f"in-process decode-and-aggregate (the four-table baseline's work): {part:.1f} s ({part_cpu:.1f} CPU s), "
        f"{four / part:.2f}x the four-table baseline"
    )
    print(
        f"in-process pipeline.run (warm session, no start-up): {full:.1f} s ({full_cpu:.1f} CPU s), "
        f"{same / full:.2f}x the same-work baseline"
    )


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    main()
