"""Fleet benchmark: a thousand simulated brokers in one process against the daemon.

Run: `.venv/bin/python benchmarks/fleet.py [--brokers 1000] [--topics 100] [--partitions 100]
[--seconds 120] [--scenario chaos] [--seed 1] [--sizes 250,500,1000,1500]`.

One run starts the real daemon (fsync on, default session timeout 9 s) and runs `run_fleet` in this
process (heartbeats every 2 s), then prints: requests/s by API; the controller's latency seen by the
brokers (p50/p99 per API); heartbeat lateness (sent minus due: p50, p99, the maximum of all, and how
many were later than a whole interval); the brokers' unintended fencing seen in the journal;
violations (the invariant checker, when `broker_sim.check` is there); CPU seconds of the fleet and
of the controller. A heartbeat is on time when it leaves at most half a session timeout after it was
due: the gap since the previous one then stays under interval + session/2 (6.5 s with the defaults),
below the session timeout with room for the controller's own delay. `--sizes` repeats the run for
each fleet size (same topics) and reports the largest whose heartbeats were all on time and none of
whose brokers was fenced by its own late heartbeat.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import trio

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.codec import machine
from broker_sim.journal import Fenced, read_journal
from broker_sim.shell.fleet import FleetConfig, run_fleet
from broker_sim.stats import FleetStats, percentile
from tests.e2e.daemon_process import DaemonProcess

HEARTBEAT_MS = 2000
SESSION_TIMEOUT_MS = 9000
ON_TIME_MS = SESSION_TIMEOUT_MS / 2


class MeasuredStats(FleetStats):
    """The fleet's stats plus the exact worst heartbeat lateness (the reservoir only samples)."""

    worst_lateness_ms: float = 0.0
    later_than_an_interval: int = 0

    def heartbeat(self, lateness_ms: float) -> None:
        super().heartbeat(lateness_ms)
        self.worst_lateness_ms = max(self.worst_lateness_ms, lateness_ms)
        self.later_than_an_interval += lateness_ms > HEARTBEAT_MS


@dataclass
class Result:
    brokers: int
    seconds: float
    stats: MeasuredStats
    fleet_cpu_s: float
    controller_cpu_s: float
    unintended_fenced: int
    violations: str

    @property
    def on_time(self) -> bool:
        return self.stats.worst_lateness_ms <= ON_TIME_MS and self.unintended_fenced == 0


def process_cpu_s(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as stream:
        fields = stream.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def check_violations(data_dir: Path, journal: Path) -> str:
    try:
        checker = importlib.import_module("broker_sim.check")
    except ImportError:
        return "not checked (broker_sim.check is not there)"
    result = checker.check(data_dir, read_journal(journal))
    return str(len(result.violations))


def run_once(args: argparse.Namespace, brokers: int, root: Path) -> Result:
    daemon = DaemonProcess(root / "data").start(timeout=60)
    stats = MeasuredStats()
    config = FleetConfig(
        controller_port=daemon.port,
        brokers=brokers,
        topics=args.topics,
        partitions=args.partitions,
        replication_factor=3,
        duration_s=args.seconds,
        seed=args.seed,
        scenario=args.scenario,
        heartbeat_ms=HEARTBEAT_MS,
        session_timeout_ms=SESSION_TIMEOUT_MS,
        journal_path=root / "journal.jsonl",
    )
    cpu = time.process_time()
    started = time.monotonic()
    try:
        outcome = trio.run(run_fleet, config, stats)
    finally:
        controller_cpu = process_cpu_s(daemon.process.pid) if daemon.process else 0.0
        daemon.stop()
    if not outcome.finished:
        raise SystemExit(f"the run did not finish: {outcome.unreachable or 'the controller stopped answering'}")
    fenced = [e for e in read_journal(root / "journal.jsonl") if isinstance(e, Fenced) and not e.intended]
    return Result(
        brokers,
        time.monotonic() - started,
        stats,
        time.process_time() - cpu,
        controller_cpu,
        len(fenced),
        check_violations(root / "data", root / "journal.jsonl"),
    )


def report(result: Result) -> None:
    stats = result.stats
    print(f"\n{result.brokers} brokers, {result.seconds:.0f} s")
    print("requests/s by API:")
    for api, count in sorted(stats.requests_by_api.items()):
        latencies = stats.latencies_ms.get(api, [])
        p50, p99 = percentile(latencies, 0.5), percentile(latencies, 0.99)
        timing = f"controller latency p50 {p50:7.1f} ms  p99 {p99:7.1f} ms" if p50 is not None and p99 else ""
        print(f"  {api:20} {count / result.seconds:8.1f}/s  {timing}")
    lateness = stats.heartbeat_lateness_ms
    print(
        f"heartbeats {stats.heartbeats}: lateness p50 {percentile(lateness, 0.5):.1f} ms, "
        f"p99 {percentile(lateness, 0.99):.1f} ms, worst {stats.worst_lateness_ms:.1f} ms, "
        f"{stats.later_than_an_interval} later than an interval "
        f"({'all on time' if result.on_time else 'NOT all on time'})"
    )
    print(f"brokers fenced by their own late heartbeat: {result.unintended_fenced}")
    replays = f"stale replays {stats.stale_replays_sent}, rejected {stats.stale_replays_rejected}"
    print(f"faults: {dict(stats.faults)}; {replays}")
    print(f"violations: {result.violations}")
    print(f"CPU seconds: fleet {result.fleet_cpu_s:.1f}, controller {result.controller_cpu_s:.1f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--brokers", type=int, default=1000)
    parser.add_argument("--topics", type=int, default=100)
    parser.add_argument("--partitions", type=int, default=100)
    parser.add_argument("--seconds", type=float, default=120.0)
    parser.add_argument("--scenario", default="chaos")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--sizes", default="", help="comma-separated fleet sizes: find the largest on time")
    args = parser.parse_args()
    print(f"fleet benchmark on {machine()}, {time.strftime('%Y-%m-%d')}")
    sizes = [int(size) for size in args.sizes.split(",") if size] or [args.brokers]
    results = []
    for brokers in sizes:
        with tempfile.TemporaryDirectory(prefix="fencer-fleet-bench-") as directory:
            results.append(run_once(args, brokers, Path(directory)))
        report(results[-1])
    on_time = [result.brokers for result in results if result.on_time]
    largest = str(max(on_time)) if on_time else f"none of {sizes}"
    print(f"\nlargest fleet with every heartbeat on time: {largest}")


if __name__ == "__main__":
    main()
