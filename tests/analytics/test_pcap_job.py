"""The job over a real tcpdump of a fleet run: the same exchanges as the daemon's own capture of that run.

The daemon (with `--capture-dir`) listens on a loopback address of its own and the fleet's brokers
on another, so tcpdump's filter takes this test's traffic only, whatever else the suite runs. The
job reads the pcap (`--kafka-port`: the controller's port and the brokers' listener ports, as a user
names their listeners); the daemon's capture is decoded in this process with the job's own
`decode_batch`, so one Spark run is enough.
"""

from __future__ import annotations

import os
import random
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pyarrow as pa
import pyarrow.dataset as ds
from pyspark.sql import SparkSession

from analytics import pipeline
from analytics.decode import decode_batch
from analytics.schema import ENVELOPE, EXCHANGE_ROW
from protocol.capture import OUTBOUND
from tests.e2e.daemon_process import ROOT, DaemonProcess
from tests.tcpdump import tcpdump


def daemon_exchanges(capture_dir: Path) -> pa.Table:
    """The daemon's capture decoded as the job decodes it (its exchange rows)."""
    table = ds.dataset(capture_dir, format="parquet").to_table()
    rows = table.num_rows
    table = (
        table.append_column("source", pa.array(["controller"] * rows))
        .append_column("request_digest", pa.array([0] * rows, pa.int64()))
        .append_column("server", pa.nulls(rows, pa.string()))
    )
    decoded = decode_batch(table.select([*ENVELOPE, "request", "response"]).combine_chunks().to_batches()[0])
    return decoded.filter(pa.compute.equal(decoded["row_kind"], EXCHANGE_ROW))


def test_a_pcap_of_a_fleet_run_gives_the_exchanges_the_daemon_captured(spark: SparkSession, tmp_path: Path) -> None:
    chosen = random.Random(os.getpid()).randrange(1, 250)
    controller_host, broker_host = f"127.77.{chosen}.1", f"127.77.{chosen}.2"
    pcap = tmp_path / "fleet-run.pcap"
    capture_dir = tmp_path / "controller-capture"
    with tcpdump(pcap, "lo", f"host {controller_host} or host {broker_host}", probe_host=controller_host) as capture:
        daemon = DaemonProcess(
            tmp_path / "data", "--listen", f"{controller_host}:0", "--capture-dir", str(capture_dir)
        ).start()
        try:
            fleet = subprocess.run(
                [sys.executable, "-m", "broker_sim", "run", "--controller", f"{controller_host}:{daemon.port}",
                 "--listen-host", broker_host, "--brokers", "3", "--topics", "2", "--partitions", "3",
                 "--replication-factor", "3", "--duration", "5", "--scenario", "chaos", "--seed", "3",
                 "--report", str(tmp_path / "report.json")],
                cwd=ROOT, capture_output=True, text=True, timeout=180,
            )  # fmt: skip
        finally:
            daemon.stop()
    assert fleet.returncode == 0, fleet.stdout[-2000:] + fleet.stderr[-2000:]
    assert capture.dropped == 0, "tcpdump dropped packets: the comparison below would not hold"

    own = daemon_exchanges(capture_dir)
    brokers = {int(peer.rsplit(":", 1)[1]) for peer, direction in zip(
        own["peer"].to_pylist(), own["direction"].to_pylist(), strict=True) if direction == OUTBOUND}  # fmt: skip
    assert brokers, "the daemon sent nothing to the brokers' listeners"
    ports = frozenset({daemon.port, *brokers})
    result = pipeline.run(spark, [], tmp_path / "out", pcap_files=[pcap], kafka_ports=ports, progress=lambda _: None)
    seen = spark.read.parquet(f"{result.out}/exchanges").collect()

    def counted(rows: list[tuple[object, ...]]) -> Counter[tuple[object, ...]]:
        return Counter(rows)

    wanted = counted(list(zip(own["api_name"].to_pylist(), own["api_version"].to_pylist(),
                              own["error_code"].to_pylist(), strict=True)))  # fmt: skip
    got = counted([(row["api_name"], row["api_version"], row["error_code"]) for row in seen])
    assert got == wanted
    keys = ("api_key", "api_version", "correlation_id")
    ids = Counter(zip(*(own[name].to_pylist() for name in keys), strict=True))
    assert Counter((row["api_key"], row["api_version"], row["correlation_id"]) for row in seen) == ids
    assert {row["source"] for row in seen} == {"fleet-run.pcap"}
    assert {row["direction"] for row in seen} == {"inbound"}
    # the controller's LeaderAndIsr and StopReplica: their broker from the server's registered listener
    control = [row for row in seen if row["api_name"] in ("LeaderAndIsr", "StopReplica")]
    assert control and all(row["broker_id"] is not None for row in control)
    errors = spark.read.parquet(f"{result.out}/decode_errors").count()
    assert errors == 0
    # times, against the daemon's own clock readings (the same clock; the pcap's truncated to the
    # microsecond): it reads a request after its packet came, and records an answer it wrote after
    # writing it and one it received after its packet came; it records a request it sent before
    # writing it
    on_wire = {(row["api_key"], row["correlation_id"], row["peer"], row["server"]): row for row in seen}
    checked = 0
    for exchange in own.to_pylist():
        sent = exchange["direction"] == OUTBOUND
        server = exchange["peer"] if sent else f"{controller_host}:{daemon.port}"
        client = None if sent else exchange["peer"]
        matches = [row for key, row in on_wire.items() if key[:2] == (exchange["api_key"], exchange["correlation_id"])
                   and key[3] == server and (client is None or key[2] == client)]  # fmt: skip
        assert len(matches) == 1, exchange
        row, micro = matches[0], 1_000
        first, second = (exchange, row) if sent else (row, exchange)
        assert first["request_time_ns"] <= second["request_time_ns"] + micro
        if exchange["response_time_ns"] is not None:
            assert row["response_time_ns"] <= exchange["response_time_ns"] + micro
        checked += 1
    assert checked == len(seen)
