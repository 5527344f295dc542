"""Daemon benchmark: 100 connections sending AlterPartition ISR changes through the real daemon.

Run: `make bench-daemon` (or `.venv/bin/python benchmarks/daemon.py [--seconds S] [--rounds R] [--connections N]
[--warm-up S]`).

Each connection owns one partition and alternates shrinking and expanding its ISR, waiting for
each answer (the daemon fsyncs every group commit). Measured in one run, on this machine:
- the daemon: requests/s, p50 and p99 latency, mean group-commit size (from its /metrics);
- a minimal trio echo server (framing only) under the same load: the ratio daemon / echo;
- the daemon with traffic capture on: its cost relative to the daemon without it.
Targets: >= 0.25x the echo server's rate, p99 <= 25 ms, capture costing <= 15%.
`--baseline CHECKOUT` adds the daemon of another checkout to every round (before/after a change, in
one run); `--tls` adds the daemon with TLS and client certificates. Their rows give the ratio of
rates and of the daemon's CPU time per request (read from /proc), the steadier of the two on a
shared machine.
The load (`_load`) comes from one epoll loop in this process, the same for all three servers.
"""

from __future__ import annotations

import argparse
import gc
import os
import re
import select
import socket
import ssl
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
    cpu_seconds: float | None = None  # the server process's CPU time (user + system) during the measurement

    @property
    def cpu_us(self) -> float | None:
        """Server CPU per request (microseconds): what a neighbour on a shared machine disturbs least."""
        return None if self.cpu_seconds is None else self.cpu_seconds / self.requests * 1e6

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

    def __init__(
        self, port: int, cluster: Cluster, partition: int, echo: bool, tls: ssl.SSLContext | None = None
    ) -> None:
        sock = socket.create_connection(("127.0.0.1", port))
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.sock = tls.wrap_socket(sock, server_hostname="127.0.0.1") if tls is not None else sock
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
        if isinstance(self.sock, ssl.SSLSocket):  # decrypted bytes epoll cannot see
            while pending := self.sock.pending():
                data += self.sock.recv(pending)
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


def _load(
    port: int, cluster: Cluster, seconds: float, echo: bool, tls: ssl.SSLContext | None = None
) -> tuple[int, float, list[float]]:
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
            client = _Client(port, cluster, partition, echo, tls)
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
    return Run(name, chosen.requests, chosen.seconds, chosen.latencies, chosen.group_size, chosen.cpu_seconds)


def _cpu_seconds(pid: int) -> float:
    """A process's CPU time so far, user + system, all its threads (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@dataclass
class TlsFiles:
    """The TLS daemon's flags and its clients' context (a CA, the server's and a client's certificates)."""

    flags: tuple[str, ...]
    client: ssl.SSLContext


def _tls_files(work: Path) -> TlsFiles:
    import trustme  # a test dependency: only the TLS rows need it

    ca = trustme.CA()
    server = ca.issue_cert("127.0.0.1")
    cert, key, ca_file = work / "server.pem", work / "server.key", work / "ca.pem"
    server.cert_chain_pems[0].write_to_path(str(cert))
    server.private_key_pem.write_to_path(str(key))
    ca.cert_pem.write_to_path(str(ca_file))
    client = ssl.create_default_context(cafile=str(ca_file))
    ca.issue_cert("bench@example.com", common_name="bench").configure_cert(client)
    return TlsFiles(("--tls-cert", str(cert), "--tls-key", str(key), "--tls-ca", str(ca_file)), client)


def run_daemon(
    name: str,
    work: Path,
    connections: int,
    seconds: float,
    capture: bool,
    warm_up: float = 1.0,
    checkout: Path | None = None,
    tls: TlsFiles | None = None,
) -> Run:
    """The daemon of this checkout, or of `checkout` (another checkout of fencer, e.g. a `git
    worktree` of an older commit: its `python -m controller` runs from there, with this venv).
    With `tls`, the cluster is set up over plaintext, then the daemon restarts TLS-only on its
    data dir and the load's connections are TLS with a client certificate."""
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
    wrapper = ("sh", "-c", 'cd "$0" && exec "$@"', str(checkout)) if checkout is not None else ()
    daemon = DaemonProcess(work / f"{name}-data", *extra, wrapper=wrapper).start()
    try:
        cluster = setup(daemon.port, connections)
        if tls is not None:
            daemon.stop()
            daemon = DaemonProcess(work / f"{name}-data", *extra, *tls.flags).start()
        context = tls.client if tls is not None else None
        _load(daemon.port, cluster, warm_up, False, context)
        assert daemon.process is not None
        cpu = _cpu_seconds(daemon.process.pid)
        requests, elapsed, latencies = _load(daemon.port, cluster, seconds, False, context)
        cpu = _cpu_seconds(daemon.process.pid) - cpu
        return Run(name, requests, elapsed, latencies, _group_size(metrics_port), cpu)
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


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=4.0, help="per measurement")
    parser.add_argument("--rounds", type=int, default=5, help="interleaved rounds; the median round is reported")
    parser.add_argument("--connections", type=int, default=100)
    parser.add_argument("--warm-up", type=float, default=1.0, help="seconds of load before each measurement")
    parser.add_argument(
        "--baseline",
        type=Path,
        metavar="CHECKOUT",
        help="also run the daemon of another checkout (e.g. `git worktree add /tmp/old <commit>`) in every "
        "round, right after this one's, and report its rate and CPU per request relative to this one's",
    )
    parser.add_argument("--no-capture", action="store_true", help="skip the daemon with capture on")
    parser.add_argument(
        "--tls",
        action="store_true",
        help="also run the daemon with TLS and client certificates (--tls-ca; certificates from trustme)",
    )
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    names = ["daemon"] + (["baseline"] if args.baseline else []) + ([] if args.no_capture else ["capture"])
    names += ["tls"] if args.tls else []
    runs: dict[str, list[Run]] = {name: [] for name in ["echo", *names]}
    with tempfile.TemporaryDirectory(prefix="fencer-bench-daemon-") as tmp:
        work = Path(tmp)
        tls = _tls_files(work) if args.tls else None
        for round_number in range(args.rounds):
            # interleaved, so that a noisy neighbour on a shared machine hits every server alike
            runs["echo"].append(run_echo(args.connections, args.seconds, args.warm_up))
            for name in names:
                run = run_daemon(
                    f"{name}{round_number}",
                    work,
                    args.connections,
                    args.seconds,
                    name == "capture",
                    args.warm_up,
                    args.baseline if name == "baseline" else None,
                    tls if name == "tls" else None,
                )
                runs[name].append(run)
    _report(args, runs)
    return 0


def _per_round(runs: dict[str, list[Run]], name: str, reference: str, value: str) -> list[float]:
    """`name`'s rate (or CPU per request) over `reference`'s, round by round."""
    pairs = zip(runs[reference], runs[name], strict=True)
    if value == "rate":
        return [run.rate / ref.rate for ref, run in pairs]
    return [(run.cpu_us or 0) / (ref.cpu_us or 1) for ref, run in pairs]


def _report(args: argparse.Namespace, runs: dict[str, list[Run]]) -> None:
    # Ratios are taken round by round (each round's servers ran back to back, under the same
    # neighbours) and their median reported: steadier than a ratio of two separate medians.
    rates = _per_round(runs, "daemon", "echo", "rate")
    labels = {"echo": "1.00x echo", "daemon": f"**{statistics.median(rates):.2f}x** echo"}
    notes = ["daemon/echo " + " ".join(f"{value:.2f}x" for value in rates)]
    if "capture" in runs:
        costs = [1 - value for value in _per_round(runs, "capture", "daemon", "rate")]
        labels["capture"] = f"capture costs **{statistics.median(costs) * 100:.1f}%**"
        notes.append("capture cost " + " ".join(f"{value * 100:.1f}%" for value in costs))
    for name in ("baseline", "tls"):
        if name not in runs:
            continue
        rates, cpu = _per_round(runs, name, "daemon", "rate"), _per_round(runs, name, "daemon", "cpu")
        labels[name] = f"rate **{statistics.median(rates):.2f}x**, CPU/request **{statistics.median(cpu):.2f}x** daemon"
        notes.append(f"{name}/daemon rate " + " ".join(f"{value:.2f}x" for value in rates))
        notes.append(f"{name}/daemon CPU/request " + " ".join(f"{value:.2f}x" for value in cpu))
    print(
        f"# fencer daemon benchmark, {time.strftime('%Y-%m-%d')}, {machine()}, fsync on, "
        f"{args.connections} connections, median of {args.rounds} interleaved rounds of {args.seconds:g} s"
    )
    print()
    print("| server | requests/s | p50 ms | p99 ms | mean group size | ratio | daemon CPU us/request |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for name, label in labels.items():
        run = _median(runs[name], name)
        group = f"{run.group_size:.1f}" if run.group_size else "-"
        cpu_cell = f"{statistics.median(r.cpu_us or 0 for r in runs[name]):.0f}" if run.cpu_us else "-"
        title = f"baseline ({args.baseline})" if name == "baseline" else name
        print(
            f"| {title} | {run.rate:,.0f} | {run.percentile(0.5) * 1000:.2f} | {run.percentile(0.99) * 1000:.2f} "
            f"| {group} | {label} | {cpu_cell} |"
        )
    print()
    print(
        "Per round: "
        + "; ".join(notes)
        + "; the table's rows are each server's median round (CPU: the median of its rounds), its ratios the "
        "medians of these."
    )


if __name__ == "__main__":
    raise SystemExit(main())
