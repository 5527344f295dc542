"""Event-loop stalls: how long a bystander waits while the daemon does its largest single jobs.

Run on demand: `make bench-stalls` (or `.venv/bin/python benchmarks/stalls.py [--topics N]`).

The real daemon (fsync on, `--snapshot-bytes 4194304` unless `--snapshot-bytes` says otherwise)
gets three brokers (with live control listeners, so every LeaderAndIsr is delivered) and then, one
after another, `--topics` CreateTopics of 9,999 partitions each (RF 3: the largest one topic may be,
10,000 records), so it decides, replays, encodes, commits and sends LeaderAndIsr for ~10,000
partitions at a time and writes snapshots of a state growing to ~100,000 partitions; then it
serves `GET /state` of all of them three times. Meanwhile a bystander thread asks `/healthz`
every 10 ms (a request the event loop answers itself, never the writer): its latency is how
long the loop was held. Printed per phase: the bystander's p50, p99 and worst latency, and the
phase's own duration.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import threading
import time
import urllib.request
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.codec import machine
from benchmarks.soak import Listeners
from protocol.messages.broker_heartbeat import BrokerHeartbeatRequest
from protocol.messages.broker_registration import BrokerRegistrationRequest, BrokerRegistrationRequestListener
from protocol.messages.create_topics import CreateTopicsRequest, CreateTopicsRequestCreatableTopic
from protocol.messages.describe_cluster import DescribeClusterRequest
from tests.e2e.daemon_process import DaemonProcess, free_port
from tests.e2e.fencer_client import FencerClient
from tests.stress.model import DATA_BROKERS

PARTITIONS = 9_999
#: a snapshot every 4 MiB of log (the shipped default is 20 MiB): more snapshots to stall on
STALLS_SNAPSHOT_BYTES = 4 * 1024 * 1024


class Bystander(threading.Thread):
    """Asks /healthz every 10 ms; keeps (time sent, latency) of each answer."""

    def __init__(self, port: int) -> None:
        super().__init__(daemon=True)
        self.url = f"http://127.0.0.1:{port}/healthz"
        self.samples: list[tuple[float, float]] = []
        self.stop = threading.Event()

    def run(self) -> None:
        while not self.stop.is_set():
            sent = time.monotonic()
            with urllib.request.urlopen(self.url, timeout=60) as response:
                response.read()
            self.samples.append((sent, time.monotonic() - sent))
            time.sleep(0.01)

    def between(self, start: float, end: float) -> list[float]:
        return [latency for sent, latency in self.samples if start <= sent <= end]


def setup(client: FencerClient, ports: dict[int, int], epochs: dict[int, int]) -> None:
    """Register and unfence brokers 1-3, each with its live control listener on `ports`."""
    cluster_id = client.request(DescribeClusterRequest(), 1).cluster_id
    for broker in DATA_BROKERS:
        listener = BrokerRegistrationRequestListener(name="PLAINTEXT", host="127.0.0.1", port=ports[broker])
        request = BrokerRegistrationRequest(
            broker_id=broker, cluster_id=cluster_id, incarnation_id=uuid.uuid4(), listeners=(listener,)
        )
        epoch = epochs[broker] = client.request(request, 3).broker_epoch
        heartbeat = BrokerHeartbeatRequest(broker_id=broker, broker_epoch=epoch, current_metadata_offset=1 << 40)
        client.request(heartbeat, 1)


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds the process has used."""
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def report(name: str, latencies: list[float], seconds: float) -> None:
    ms = sorted(latency * 1000 for latency in latencies)
    if not ms:  # the loop held the bystander's one request for the whole phase
        print(f"| {name} | {seconds:.1f} s | 0 | - | - | - |", flush=True)
        return
    p99 = ms[min(len(ms) - 1, int(len(ms) * 0.99))]
    print(
        f"| {name} | {seconds:.1f} s | {len(ms)} | {statistics.median(ms):.1f} | {p99:.1f} | **{ms[-1]:.1f}** |",
        flush=True,
    )


def run(topics: int, work: Path, snapshot_bytes: int = STALLS_SNAPSHOT_BYTES) -> None:
    metrics_port = free_port()
    daemon = DaemonProcess(
        work / "data",
        "--snapshot-bytes",
        str(snapshot_bytes),
        "--session-timeout-ms",
        "3600000",  # the brokers are registered once and never heartbeat again
        "--metrics-listen",
        f"127.0.0.1:{metrics_port}",
        # a diagnostic copy of the daemon and where its log goes, if wanted
        module=os.environ.get("STALLS_MODULE", "controller"),
        log_file=Path(os.environ["STALLS_LOG"]) if "STALLS_LOG" in os.environ else None,
    ).start()
    bystander = Bystander(metrics_port)
    epochs: dict[int, int] = {}
    listeners = Listeners(lambda broker: epochs.get(broker, -1)).__enter__()
    try:
        with FencerClient(daemon.port, timeout=120) as client:
            setup(client, listeners.ports, epochs)
            bystander.start()
            time.sleep(1.0)
            print(f"stalls: {machine()}; {topics} x CreateTopics of {PARTITIONS:,} partitions, RF 3")
            print("| phase | duration | /healthz asked | p50 ms | p99 ms | worst ms |")
            print("|---|---:|---:|---:|---:|---:|")
            quiet = time.monotonic()
            time.sleep(2.0)
            report("idle", bystander.between(quiet, time.monotonic()), 2.0)
            assert daemon.process is not None
            started, cpu_before = time.monotonic(), cpu_seconds(daemon.process.pid)
            for index in range(topics):
                topic = CreateTopicsRequestCreatableTopic(
                    name=f"big{index}", num_partitions=PARTITIONS, replication_factor=3
                )
                result = client.request(CreateTopicsRequest(topics=(topic,)), 7).topics[0]
                assert result.error_code == 0, result
            ended = time.monotonic()
            report(f"{topics} creations (and snapshots)", bystander.between(started, ended), ended - started)
            creation_cpu = cpu_seconds(daemon.process.pid) - cpu_before
        started = time.monotonic()
        for _ in range(3):
            with urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/state", timeout=120) as response:
                body = response.read()
        ended = time.monotonic()
        report(f"3 x GET /state ({len(body) / 2**20:.0f} MiB)", bystander.between(started, ended), ended - started)
        snapshots = sorted((work / "data" / "__cluster_metadata-0").glob("*.checkpoint"))
        # fewer than about 4 topics of 9,999 partitions stay below --snapshot-bytes: no snapshot
        largest = max((path.stat().st_size for path in snapshots), default=0) / 2**20
        print(f"snapshots written: {len(snapshots)}, the largest {largest:.1f} MiB")
        print(f"daemon CPU during the creations: {creation_cpu:.1f} s")
    finally:
        bystander.stop.set()
        bystander.join(60)
        daemon.stop(timeout=60)
        listeners.__exit__()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="event-loop stalls of the fencer daemon under its largest jobs")
    parser.add_argument("--topics", type=int, default=10)
    parser.add_argument(
        "--snapshot-bytes",
        type=int,
        default=STALLS_SNAPSHOT_BYTES,
        help=f"the daemon's --snapshot-bytes (default {STALLS_SNAPSHOT_BYTES}; the daemon's own default: 20971520)",
    )
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="fencer-stalls-") as tmp:
        run(args.topics, Path(tmp), args.snapshot_bytes)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
