"""Failover benchmark: a 3-voter controller quorum under a steady fleet,
its leader SIGKILLed N times; and AlterPartition through a 3-voter quorum against a single node.

Run: `make bench-failover` (or `.venv/bin/python benchmarks/failover.py [--kills N] [--brokers B]
[--topics T] [--partitions P] [--election-timeout-ms MS] [--fetch-timeout-ms MS] [--seconds S]
[--rounds R] [--connections C] [--warm-up S]`).

1. Failover. The fleet's own quorum (`broker_sim.shell.quorum`: three `python -m controller`
   processes, fsync on, Kafka's timeouts by default, 1000/2000 ms, reaching each other through the
   fleet's proxies) and a steady fleet (`--brokers`, heartbeats every second, session 9 s) in this
   process. The fleet's controller fault driver (`quorum_faults`) kills the leader `--kills` times,
   one kill at a time once the quorum is whole again (the killed node restarted after 0.5-1.5
   fetch timeouts, seeded, and answering), and times each: until a leader of a newer epoch answers
   DescribeQuorum (polled every 100 ms: "new leader elected"), and until a broker's request is
   first answered, not NOT_CONTROLLER, by another node ("brokers served again"). Printed: p50, p99
   and the worst of both, and the final check of every node's log against the run's journal (the
   checker's quorum check).
2. AlterPartition. `--connections` connections, one partition each, alternately shrinking and
   expanding its ISR, one request in flight per connection (benchmarks/daemon.py's load), against
   a single node and against the leader of a fresh 3-voter quorum (no proxies: the quorum's own
   cost, a replication round trip and the followers' fsyncs, not a proxy's), in `--rounds`
   interleaved rounds; each side's median round is printed and the ratio quorum/single is the
   median of the rounds' ratios (the house rule: a ratio against a baseline measured in the same
   run).
"""

from __future__ import annotations

import argparse
import functools
import random
import socket
import statistics
import sys
import tempfile
import time
from pathlib import Path

import trio

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.codec import machine
from benchmarks.daemon import Run, _load, _median
from broker_sim.model.quorum import (
    DESCRIBE_QUORUM_VERSION,
    LEADER,
    LeaderView,
    QuorumTiming,
    cluster_id,
    describe_quorum_request,
    leader_view,
)
from broker_sim.model.schedule import ControllerFault
from broker_sim.report import FinalCheck, run_quorum_check
from broker_sim.shell.fleet import FleetConfig, run_fleet, timing_of
from broker_sim.shell.quorum import QuorumPlan, open_quorum, pick_ports
from broker_sim.shell.quorum_faults import ControllerFaults
from broker_sim.shell.runner import warm_codecs
from broker_sim.stats import FleetStats, percentile
from protocol.framing import FrameBuffer
from protocol.messages.describe_quorum import DescribeQuorumResponse
from protocol.registry import decode_response, encode_request
from tests.e2e.daemon_process import DaemonProcess
from tests.stress.cluster import setup

SESSION_TIMEOUT_MS = 9000
SETTLE_S = 2.0  # after the last kill's measurement: the fleet goes on this long before it stops
LEADER_WAIT_S = 30.0


# ---- part 1: failover -------------------------------------------------------------------------


def kill_schedule(kills: int, start_s: float, timing: QuorumTiming, seed: int) -> tuple[ControllerFault, ...]:
    """`kills` kills of the leader, all due at `start_s` (the driver applies each once the quorum is
    whole again after the previous one); the downtimes as the fleet's schedule draws them."""
    rng = random.Random(f"{seed}:bench-failover")
    return tuple(
        ControllerFault(start_s, "kill", LEADER, 0, rng.uniform(0.5, 1.5) * timing.fetch_timeout_s)
        for _ in range(kills)
    )


async def failovers(args: argparse.Namespace, work: Path) -> tuple[FleetStats, FinalCheck, float]:
    """The fleet against its own quorum while the leader is killed `args.kills` times."""
    timing = QuorumTiming(args.election_timeout_ms / 1000, args.fetch_timeout_ms / 1000)
    plan = QuorumPlan(
        3, work / "quorum", cluster_id(args.seed), SESSION_TIMEOUT_MS, timing, extra_args=("--log-level", "warning")
    )
    journal = work / "failover.journal.jsonl"
    stats = FleetStats()
    warm_codecs()  # before the quorum: its proxies share this event loop (broker_sim.shell.run)
    started = time.monotonic()
    async with open_quorum(plan) as quorum:
        (host, port), *others = quorum.controllers
        config = FleetConfig(
            controller_host=host,
            controller_port=port,
            other_controllers=tuple(others),
            brokers=args.brokers,
            topics=args.topics,
            partitions=args.partitions,
            replication_factor=3,
            duration_s=24 * 3600.0,  # ended once every kill is measured
            seed=args.seed,
            scenario="steady",
            heartbeat_ms=1000,
            session_timeout_ms=SESSION_TIMEOUT_MS,
            journal_path=journal,
        )
        faults = kill_schedule(args.kills, timing_of(config).warmup_s, timing, args.seed)
        driver = ControllerFaults(quorum, faults, config.duration_s)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(functools.partial(run_fleet, config, stats, alongside=[driver.run]))
            await driver.finished.wait()
            await trio.sleep(SETTLE_S)
            nursery.cancel_scope.cancel()
    elapsed = time.monotonic() - started
    return stats, run_quorum_check(plan.data_dir, plan.node_dirs, journal), elapsed


def print_failovers(args: argparse.Namespace, stats: FleetStats, final: FinalCheck, elapsed: float) -> None:
    kills = [failover for failover in stats.failovers if failover["role"] == "leader"]
    print(
        f"## 1. Failover: the leader of a 3-voter quorum SIGKILLed {len(kills)} times "
        f"(of {args.kills} asked), {args.brokers} brokers steady, {elapsed:.0f} s"
    )
    print()
    print(
        f"Quorum timeouts: election {args.election_timeout_ms} ms, fetch {args.fetch_timeout_ms} ms; "
        f"broker heartbeats every 1000 ms, session {SESSION_TIMEOUT_MS} ms; fsync on."
    )
    print()
    print("| after a kill of the leader | measured | p50 ms | p99 ms | worst ms |")
    print("|---|---:|---:|---:|---:|")
    for label, key in (("new leader elected", "elected_ms"), ("brokers served again", "served_ms")):
        values = [failover[key] for failover in kills if failover[key] is not None]
        print(
            f"| {label} | {len(values)} | {_ms(percentile(values, 0.5))} | {_ms(percentile(values, 0.99))} "
            f"| {_ms(max(values) if values else None)} |"
        )
    print()
    print(
        "Per kill (elected/served ms): "
        + " ".join(f"{_ms(failover['elected_ms'])}/{_ms(failover['served_ms'])}" for failover in kills)
    )
    print(f"final check of the quorum's 3 logs: {len(final.violations)} violation(s), {len(final.problems)} problem(s)")
    for rule, description in final.violations[:5]:
        print(f"  {rule}: {description}")


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:,.0f}"


# ---- part 2: AlterPartition, single node against a 3-voter quorum ------------------------------


def describe(port: int) -> LeaderView | None:
    """DescribeQuorum to the node at `port` (blocking): the leader's view if it leads."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=2) as sock:
            sock.sendall(encode_request(describe_quorum_request(), DESCRIBE_QUORUM_VERSION, 1))
            frames = FrameBuffer()
            while (payload := frames.next_frame()) is None:
                data = sock.recv(65536)
                if not data:
                    return None
                frames.receive_data(data)
    except OSError:
        return None
    _, response = decode_response(payload, 55, DESCRIBE_QUORUM_VERSION)
    return leader_view(response) if isinstance(response, DescribeQuorumResponse) else None


def start_quorum(work: Path, name: str) -> tuple[list[DaemonProcess], int]:
    """Three voters on their real addresses; the leader's port once its epoch's LeaderChange committed."""
    ports = pick_ports(3)  # one draw: three distinct ports
    voters = ",".join(f"{node}@127.0.0.1:{port}" for node, port in enumerate(ports, start=1))
    nodes = []
    for node, port in enumerate(ports, start=1):
        options = ["--listen", f"127.0.0.1:{port}", "--node-id", str(node), "--controller-quorum-voters", voters]
        options += ["--cluster-id", cluster_id(0), "--session-timeout-ms", "600000", "--log-level", "warning"]
        options += ["--allow-unauthenticated-voters"]  # plaintext on loopback, as the single node it is set beside
        nodes.append(DaemonProcess(work / f"{name}-node-{node}", *options).start())
    deadline = time.monotonic() + LEADER_WAIT_S
    while time.monotonic() < deadline:
        for port in ports:
            view = describe(port)
            if view is not None and view.high_watermark > 0:
                return nodes, port
        time.sleep(0.05)
    for daemon in nodes:
        daemon.stop()
    raise RuntimeError("the quorum elected no leader")


def alter_partition(name: str, port: int, args: argparse.Namespace) -> Run:
    cluster = setup(port, args.connections)
    _load(port, cluster, args.warm_up, False)
    requests, elapsed, latencies = _load(port, cluster, args.seconds, False)
    return Run(name, requests, elapsed, latencies)


def single_round(work: Path, name: str, args: argparse.Namespace) -> Run:
    daemon = DaemonProcess(work / name, "--session-timeout-ms", "600000", "--log-level", "warning").start()
    try:
        return alter_partition("single node", daemon.port, args)
    finally:
        daemon.stop()


def quorum_round(work: Path, name: str, args: argparse.Namespace) -> Run:
    nodes, leader_port = start_quorum(work, name)
    try:
        return alter_partition("3-voter quorum", leader_port, args)
    finally:
        for daemon in nodes:
            daemon.stop()


def throughput(args: argparse.Namespace, work: Path) -> None:
    runs: dict[str, list[Run]] = {"single": [], "quorum": []}
    for round_number in range(args.rounds):  # interleaved: a noisy neighbour hits both alike
        runs["single"].append(single_round(work, f"single-{round_number}", args))
        runs["quorum"].append(quorum_round(work, f"quorum-{round_number}", args))
    single, quorum = _median(runs["single"], "single node"), _median(runs["quorum"], "3-voter quorum")
    ratios = [q.rate / s.rate for s, q in zip(runs["single"], runs["quorum"], strict=True)]
    print(
        f"## 2. AlterPartition: a 3-voter quorum against a single node, {args.connections} connections, "
        f"median of {args.rounds} interleaved rounds of {args.seconds:g} s"
    )
    print()
    print("| controller | requests/s | p50 ms | p99 ms | ratio |")
    print("|---|---:|---:|---:|---:|")
    for run, label in ((single, "1.00x"), (quorum, f"**{statistics.median(ratios):.2f}x** single")):
        print(
            f"| {run.name} | {run.rate:,.0f} | {run.percentile(0.5) * 1000:.2f} | {run.percentile(0.99) * 1000:.2f} "
            f"| {label} |"
        )
    print()
    print("Per round: quorum/single " + " ".join(f"{ratio:.2f}x" for ratio in ratios))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--kills", type=int, default=20, help="SIGKILLs of the leader")
    parser.add_argument("--brokers", type=int, default=10)
    parser.add_argument("--topics", type=int, default=3)
    parser.add_argument("--partitions", type=int, default=10, help="per topic (RF 3)")
    parser.add_argument("--election-timeout-ms", type=int, default=1000, help="Kafka's default")
    parser.add_argument("--fetch-timeout-ms", type=int, default=2000, help="Kafka's default")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--seconds", type=float, default=4.0, help="AlterPartition: per measurement")
    parser.add_argument("--rounds", type=int, default=3, help="AlterPartition: interleaved rounds")
    parser.add_argument("--connections", type=int, default=100, help="AlterPartition: one partition each")
    parser.add_argument("--warm-up", type=float, default=1.0, help="AlterPartition: seconds of load first")
    args = parser.parse_args(argv)
    print(f"# fencer failover benchmark, {time.strftime('%Y-%m-%d')}, {machine()}")
    print()
    with tempfile.TemporaryDirectory(prefix="fencer-bench-failover-") as tmp:
        work = Path(tmp)
        stats, final, elapsed = trio.run(failovers, args, work)
        print_failovers(args, stats, final, elapsed)
        print()
        throughput(args, work)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
