"""An independent cross-check on a real capture: DuckDB over the raw Parquet, kio 0.5.0 as the decoder.

The real daemon (a subprocess, `--capture-dir`) serves a session driven with kio messages: three
brokers with live control listeners (so the capture also holds the daemon's LeaderAndIsr and
StopReplica), heartbeats, a topic, ISR changes and a stale replay, a bounce with a stale
heartbeat, controlled shutdowns (one stale), a deletion. Then the counts per direction, API and
version, the error codes (kio decodes every response: its own non-zero error code, else the first
non-zero one nested, depth first) and the latency percentiles are computed with DuckDB, and the
job must agree: exactly for counts, and for percentiles within the error README states (a value
whose rank is within n/10,000, plus one for the definition of a rank, of DuckDB's quantile_disc).
"""

from __future__ import annotations

import dataclasses
import math
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import duckdb
import pyarrow.dataset as ds
import pytest
from kio.index import load_response_schema
from kio.serial import entity_reader
from pyspark.sql import SparkSession

from analytics import pipeline
from analytics.aggregates import PERCENTILE_ACCURACY
from analytics.read import check_capture_dirs
from protocol.registry import api
from tests.e2e import kio_messages as m
from tests.e2e.daemon_process import DaemonProcess
from tests.e2e.kio_client import KioClient
from tests.e2e.test_control_channel import ListenerThread, wait_for


@pytest.fixture
def brokers() -> Iterator[dict[int, ListenerThread]]:
    threads = {b: ListenerThread(b) for b in (1, 2, 3)}
    yield threads
    for thread in threads.values():
        thread.stop()


def drive(client: KioClient, brokers: dict[int, ListenerThread]) -> None:
    """A session with every kind of exchange the capture can hold, stale ones included."""
    cluster = client.request(m.describe_cluster(1)).cluster_id
    for version in (0, 1, 2, 3):
        client.request(m.api_versions(version))
    for broker_id, thread in brokers.items():
        answer = client.request(m.broker_registration(3, broker_id, cluster, uuid.UUID(int=broker_id), thread.port))
        thread.epoch = int(answer.broker_epoch)
    for _ in range(20):
        for broker_id, thread in brokers.items():
            client.request(m.broker_heartbeat(1, broker_id, thread.epoch))
    created = client.request(m.create_topics(7, "orders", 0, 0, assignments=[[1, 2, 3], [2, 3, 1], [3, 1, 2]]))
    topic_id = created.topics[0].topic_id
    leader_epoch = brokers[1].epoch
    for isr, partition_epoch in (((1, 2), 0), ((1, 2), 0), ((1, 2, 3), 1)):  # the second is a stale replay
        client.request(m.alter_partition(2, 1, leader_epoch, "orders", topic_id, 0, 0, isr, partition_epoch))
    wait_for(lambda: all(("orders", 0) in thread.listener.partitions for thread in brokers.values()))
    old_epoch = brokers[3].epoch
    bounced = client.request(m.broker_registration(3, 3, cluster, uuid.UUID(int=33), brokers[3].port))
    brokers[3].epoch = int(bounced.broker_epoch)
    client.request(m.broker_heartbeat(1, 3, old_epoch))  # STALE_BROKER_EPOCH
    client.request(m.broker_heartbeat(1, 3, brokers[3].epoch))
    client.request(m.controlled_shutdown(3, 3, old_epoch))  # STALE_BROKER_EPOCH
    client.request(m.controlled_shutdown(3, 2, brokers[2].epoch))
    wait_for(lambda: brokers[2].listener.partitions[("orders", 0)].stopped)
    client.request(m.delete_topics(6, "orders"))
    wait_for(lambda: brokers[1].listener.partitions[("orders", 0)].deleted)


def kio_error(message: Any) -> int:
    """The error a kio response reports (the rule of protocol.error_codes.response_error_code)."""
    fields = dataclasses.fields(message)
    for field in fields:
        if field.name == "error_code" or field.name.endswith("_error_code"):
            code = getattr(message, field.name)
            if int(getattr(code, "value", code)):
                return int(getattr(code, "value", code))
    for field in fields:
        value = getattr(message, field.name)
        if isinstance(value, tuple):
            for element in value:
                if dataclasses.is_dataclass(element):
                    code = kio_error(element)
                    if code:
                        return code
    return 0


def kio_response_error(response: bytes, api_key: int, api_version: int) -> int:
    response_class = load_response_schema(api_key, api_version)
    _, header_size = entity_reader(response_class.__header_schema__)(response, 0)
    body, body_size = entity_reader(response_class)(response, header_size)
    assert header_size + body_size == len(response)
    return kio_error(body)


def duckdb_view(capture: Path) -> duckdb.DuckDBPyConnection:
    connection = duckdb.connect()
    connection.create_function(
        "kio_error", kio_response_error, ["BLOB", "SMALLINT", "SMALLINT"], "INTEGER", null_handling="special"
    )
    connection.execute(
        f"CREATE VIEW capture AS SELECT *, (response_time_ns - request_time_ns) / 1e6 AS latency_ms "
        f"FROM read_parquet('{capture}/*.parquet')"
    )
    return connection


def test_the_job_agrees_with_duckdb_and_kio_on_a_real_capture(
    spark: SparkSession, tmp_path: Path, brokers: dict[int, ListenerThread]
) -> None:
    capture = tmp_path / "capture"
    daemon = DaemonProcess(tmp_path / "data", "--capture-dir", str(capture)).start()
    try:
        with KioClient(daemon.port) as client:
            drive(client, brokers)
    finally:
        assert daemon.stop() == 0, daemon.stderr()
    result = pipeline.run(spark, check_capture_dirs([capture]), tmp_path / "out", progress=lambda _: None)
    db = duckdb_view(capture)

    def job(table: str) -> list[dict[str, Any]]:
        rows: list[dict[str, Any]] = ds.dataset(Path(result.out) / table, format="parquet").to_table().to_pylist()
        return rows

    counts = db.execute("SELECT direction, api_key, api_version, count(*) FROM capture GROUP BY ALL").fetchall()
    assert {row[1] for row in counts} >= {4, 5, 7, 18, 19, 20, 56, 60, 62, 63}, "the session lacks an API"
    job_counts: dict[tuple[str, int, int], int] = {}
    for row in job("exchanges"):
        key = (row["direction"], row["api_key"], row["api_version"])
        job_counts[key] = job_counts.get(key, 0) + 1
    assert job_counts == {(direction, key, version): n for direction, key, version, n in counts}
    assert job("decode_errors") == []

    errors = db.execute(
        "SELECT direction, api_key, api_version, kio_error(response, api_key, api_version) AS error, count(*) "
        "FROM capture WHERE response IS NOT NULL GROUP BY ALL"
    ).fetchall()
    assert {row[3] for row in errors} >= {0, 77, 95}, "the session lacks a stale rejection"
    expected_errors = {(d, api(k).name, v, e): n for d, k, v, e, n in errors}
    job_errors = {
        (row["direction"], row["api_name"], row["api_version"], row["error_code"]): row["exchanges"]
        for row in job("error_counts")
    }
    assert job_errors == expected_errors

    latencies = db.execute(
        "SELECT direction, api_key, api_version, count(*), quantile_disc(latency_ms, [0.5, 0.95, 0.99]), "
        "list_sort(list(latency_ms)) FROM capture WHERE response IS NOT NULL GROUP BY ALL"
    ).fetchall()
    job_latencies = {(row["direction"], row["api_name"], row["api_version"]): row for row in job("latency_percentiles")}
    assert len(job_latencies) == len(latencies)
    for direction, key, version, n, exact, ordered in latencies:
        row = job_latencies[(direction, api(key).name, version)]
        assert row["exchanges"] == n
        slack = math.ceil(n / PERCENTILE_ACCURACY) + 1
        for name, value in zip(("p50_ms", "p95_ms", "p99_ms"), exact, strict=True):
            rank = ordered.index(value)
            low, high = ordered[max(0, rank - slack)], ordered[min(n - 1, rank + slack)]
            assert low <= row[name] <= high, (direction, key, version, name, row[name], value)
