"""Daemon benchmark: 100 connections sending AlterPartition ISR changes through the real daemon.

Run: `make bench-daemon` (or `.venv/bin/python benchmarks/daemon.py [--seconds S] [--rounds R] [--connections N]
[--warm-up S]`).

Each connection owns one partition and alternates shrinking and expanding its ISR, waiting for
each answer (the daemon fsyncs every group commit). Measured in one run, on this machine:
- the daemon: requests/s, p50 and p99 latency, mean group-commit size (from its /metrics);
- a minimal trio echo server (framing only) under the same load: the ratio daemon / echo;
- the daemon with traffic capture on: its cost relative to the daemon without it.
Targets (issue #4): >= 0.25x the echo server's rate, p99 <= 25 ms, capture costing <= 15%.
The load (`_load`) comes from one epoll loop in this process, the same for all three servers.
"""

from __future__ import annotations

import argparse
import gc
import re
import select
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
import uuid
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.codec import machine
from protocol.framing import FrameBuffer
from protocol.messages.alter_partition import (
    AlterPartitionRequest,
    AlterPartitionRequestPartitionData,
    AlterPartitionRequestTopicData,
    AlterPartitionResponse,
)
from protocol.registry import decode_response, encode_request
from tests.e2e.daemon_process import DaemonProcess, free_port
from tests.stress.cluster import Cluster, setup

ROOT = Path(__file__).resolve().parent.parent


@dataclass
class Run:
    name: str
    requests: int
    seconds: float
    latencies: list[float]
    group_size: float | None = None

    @property
    def rate(self) -> float:
        return self.requests / self.seconds

    def percentile(self, q: float) -> float:
        ordered = sorted(self.latencies)
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


def _request(cluster: Cluster, partition: int, correlation: int) -> bytes:
    state = cluster.partitions[partition]
    replicas = cluster.replicas[partition]
    isr = replicas[:2] if len(state.isr) == 3 else replicas
    data = AlterPartitionRequestPartitionData(
        partition_index=partition, leader_epoch=state.leader_epoch, new_isr=isr, partition_epoch=state.partition_epoch
    )
    body = AlterPartitionRequest(
        broker_id=state.leader,
        broker_epoch=cluster.epochs[state.leader],
        topics=(AlterPartitionRequestTopicData(topic_id=cluster.topic_id, partitions=(data,)),),
    )
    return encode_request(body, 2, correlation)


class _Client:
    """One closed-loop connection: one request in flight, the next sent once its answer is read."""

    def __init__(self, port: int, cluster: Cluster, partition: int, echo: bool) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port))
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.cluster, self.partition, self.echo = cluster, partition, echo
        self.buffer = FrameBuffer()
        self.done = 0
        self.started = 0.0

    def send(self) -> None:
        self.started = time.perf_counter()
        self.sock.sendall(_request(self.cluster, self.partition, self.done + 1))

    def receive(self, polled: float, latencies: list[float]) -> bool:
        """Read what arrived (reported by the poll at `polled`); True once the answer is complete and checked."""
        data = self.sock.recv(65536)
        if not data:
            raise ConnectionError(f"the server closed the connection of partition {self.partition}")
        self.buffer.receive_data(data)
        payload = self.buffer.next_frame()
        if payload is None:
            return False
        latencies.append(polled - self.started)
        self.done += 1
        if not self.echo:
            _, response = decode_response(payload, 56, 2)
            assert isinstance(response, AlterPartitionResponse)
            result = response.topics[0].partitions[0]
            assert result.error_code == 0, result
            state = self.cluster.partitions[self.partition]
            state.partition_epoch, state.isr = result.partition_epoch, tuple(result.isr)
        return True


def _load(port: int, cluster: Cluster, seconds: float, echo: bool) -> tuple[int, float, list[float]]:
    """Drive every partition's connection for `seconds`: (answers, elapsed seconds, latencies).

    The load generator is one thread around epoll with blocking sockets (each send is one small
    frame): it costs a fraction of what an async framework would of the core it shares with the
    kernel. A latency ends when the poll reports its answer readable, not when this loop gets to
    it behind the other answers of the same poll, and the collector is paused during the run, so
    that the figures are the server's and not the load generator's."""
    latencies: list[float] = []
    clients = {}
    poller = select.epoll()
    try:
        for partition in cluster.partitions:
            client = _Client(port, cluster, partition, echo)
            clients[client.sock.fileno()] = client
            poller.register(client.sock.fileno(), select.EPOLLIN)
        gc.collect()
        gc.disable()
        started = time.monotonic()
        until = started + seconds
        for client in clients.values():
            client.send()
        active = len(clients)
        while active:
            events = poller.poll(1.0)
            polled = time.perf_counter()
            for fd, _ in events:
                client = clients[fd]
                if client.receive(polled, latencies):
                    if time.monotonic() < until:
                        client.send()
                    else:
                        active -= 1
        return sum(client.done for client in clients.values()), time.monotonic() - started, latencies
    finally:
        gc.enable()
        poller.close()
        for client in clients.values():
            client.sock.close()


def _group_size(metrics_port: int) -> float | None:
    text = urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/metrics", timeout=5).read().decode()
    total = re.search(r"^fencer_group_commit_requests_sum (\S+)$", text, re.M)
    count = re.search(r"^fencer_group_commit_requests_count (\S+)$", text, re.M)
    if not total or not count or float(count.group(1)) == 0:
        return None
    return float(total.group(1)) / float(count.group(1))


def _median(runs: list[Run], name: str) -> Run:
    """The round with the median rate (its own latencies and group size)."""
    chosen = sorted(runs, key=lambda run: run.rate)[len(runs) // 2]
    return Run(name, chosen.requests, chosen.seconds, chosen.latencies, chosen.group_size)


def run_daemon(name: str, work: Path, connections: int, seconds: float, capture: bool, warm_up: float = 1.0) -> Run:
    metrics_port = free_port()
    extra = [
        "--metrics-listen",
        f"127.0.0.1:{metrics_port}",
        "--session-timeout-ms",
        "600000",
        "--log-level",
        "warning",
    ]
    if capture:
        extra += ["--capture-dir", str(work / f"{name}-capture")]
    daemon = DaemonProcess(work / f"{name}-data", *extra).start()
    try:
        cluster = setup(daemon.port, connections)
        _load(daemon.port, cluster, warm_up, False)
        requests, elapsed, latencies = _load(daemon.port, cluster, seconds, False)
        return Run(name, requests, elapsed, latencies, _group_size(metrics_port))
    finally:
        daemon.stop()


def run_echo(connections: int, seconds: float, warm_up: float = 1.0) -> Run:
    process = subprocess.Popen(
        [sys.executable, str(ROOT / "benchmarks" / "echo_server.py")], stdout=subprocess.PIPE, text=True, cwd=ROOT
    )
    try:
        assert process.stdout is not None
        port = int(process.stdout.readline().rsplit(":", 1)[1])
        cluster = Cluster(uuid.UUID(int=1), {1: 1, 2: 2, 3: 3})
        from tests.stress.cluster import Acked

        for p in range(connections):
            cluster.replicas[p] = (1, 2, 3)
            cluster.partitions[p] = Acked(1, 0, 0, (1, 2, 3))
        _load(port, cluster, warm_up, True)
        requests, elapsed, latencies = _load(port, cluster, seconds, True)
        return Run("echo", requests, elapsed, latencies)
    finally:
        process.terminate()
        process.wait(10)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=4.0, help="per measurement")
    parser.add_argument("--rounds", type=int, default=5, help="interleaved rounds; the median round is reported")
    parser.add_argument("--connections", type=int, default=100)
    parser.add_argument("--warm-up", type=float, default=1.0, help="seconds of load before each measurement")
    args = parser.parse_args(argv)
    runs: dict[str, list[Run]] = {"echo": [], "daemon": [], "capture": []}
    with tempfile.TemporaryDirectory(prefix="fencer-bench-daemon-") as tmp:
        work = Path(tmp)
        for round_number in range(args.rounds):
            # interleaved, so that a noisy neighbour on a shared machine hits all three alike
            runs["echo"].append(run_echo(args.connections, args.seconds, args.warm_up))
            for name, capture in (("daemon", False), ("capture", True)):
                run = run_daemon(f"{name}{round_number}", work, args.connections, args.seconds, capture, args.warm_up)
                runs[name].append(run)
    echo, plain, captured = (_median(runs[name], name) for name in ("echo", "daemon", "capture"))
    # The ratios are taken round by round (each round's servers ran back to back, under the same
    # neighbours) and their median reported: steadier than a ratio of two separate medians.
    ratios = [d.rate / e.rate for e, d in zip(runs["echo"], runs["daemon"], strict=True)]
    costs = [1 - c.rate / d.rate for d, c in zip(runs["daemon"], runs["capture"], strict=True)]
    ratio, cost = statistics.median(ratios), statistics.median(costs)
    print(
        f"# fencer daemon benchmark, {time.strftime('%Y-%m-%d')}, {machine()}, fsync on, "
        f"{args.connections} connections, median of {args.rounds} interleaved rounds of {args.seconds:g} s"
    )
    print()
    print("| server | requests/s | p50 ms | p99 ms | mean group size | ratio |")
    print("|---|---:|---:|---:|---:|---:|")
    for run, label in (
        (echo, "1.00x echo"),
        (plain, f"**{ratio:.2f}x** echo"),
        (captured, f"capture costs **{cost * 100:.1f}%**"),
    ):
        group = f"{run.group_size:.1f}" if run.group_size else "-"
        print(
            f"| {run.name} | {run.rate:,.0f} | {run.percentile(0.5) * 1000:.2f} | {run.percentile(0.99) * 1000:.2f} "
            f"| {group} | {label} |"
        )
    print()
    print(
        "Per round: daemon/echo "
        + " ".join(f"{value:.2f}x" for value in ratios)
        + "; capture cost "
        + " ".join(f"{value * 100:.1f}%" for value in costs)
        + "; the table's rows are each server's median round, its ratios the medians of these."
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
