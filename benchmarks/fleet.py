"""Fleet benchmark: 1,000 simulated brokers in one process against the real daemon, `chaos`, fsync on.

Run on demand: `make bench-fleet` or
`.venv/bin/python benchmarks/fleet.py [--brokers 1000] [--topics 100] [--partitions 100] [--seconds 120]
[--search 250,500,1000,1500,2000 --search-seconds 40]`.

One run: a fresh daemon (fsync on, the default session timeout of 9 s) and `python -m broker_sim run`
as a separate process (one fleet process), both measured from the outside: CPU seconds of each
(from /proc while they run, children included for the fleet), and the fleet's report (requests/s
by API, the controller's latency as the brokers saw it, heartbeat lateness, violations from the
fleet and from the invariant check of the daemon's log at the end). The search then runs shorter
`steady` fleets of growing size and prints the largest whose heartbeat lateness p99 stays under
a quarter of the heartbeat interval with no broker fenced by its own late heartbeat: "the largest
fleet that keeps every heartbeat on time" on this machine.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.codec import machine
from broker_sim.stats import percentile
from tests.e2e.daemon_process import DaemonProcess

ROOT = Path(__file__).resolve().parent.parent
HEARTBEAT_MS = 2000
ON_TIME_MS = HEARTBEAT_MS / 4


def cpu_seconds(pid: int) -> float:
    """User + system CPU of a live process and its waited-for children, from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    ticks = sum(int(value) for value in fields[11:15])  # utime stime cutime cstime
    return ticks / os.sysconf("SC_CLK_TCK")


def run_once(scenario: str, brokers: int, topics: int, partitions: int, seconds: float, work: Path) -> dict[str, Any]:
    data_dir = work / f"data-{scenario}-{brokers}"
    daemon = DaemonProcess(data_dir, log_file=work / f"daemon-{brokers}.stderr").start()
    report = work / f"report-{scenario}-{brokers}.json"
    command = [
        sys.executable,
        "-m",
        "broker_sim",
        "run",
        f"--controller=127.0.0.1:{daemon.port}",
        f"--brokers={brokers}",
        f"--topics={topics}",
        f"--partitions={partitions}",
        "--replication-factor=3",
        f"--duration={seconds}",
        "--seed=1",
        f"--scenario={scenario}",
        f"--heartbeat-ms={HEARTBEAT_MS}",
        f"--report={report}",
        f"--data-dir={data_dir}",
    ]
    started = time.monotonic()
    fleet = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    fleet_cpu = daemon_cpu = 0.0
    assert daemon.process is not None
    while fleet.poll() is None:  # sample while alive: /proc of a reaped process is gone
        fleet_cpu = max(fleet_cpu, _safe_cpu(fleet.pid))
        daemon_cpu = max(daemon_cpu, _safe_cpu(daemon.process.pid))
        time.sleep(0.5)
    elapsed = time.monotonic() - started
    _, stderr = fleet.communicate()
    daemon.stop()
    if not report.exists():
        raise SystemExit(f"the fleet wrote no report (exit {fleet.returncode}): {stderr.strip()[-2000:]}")
    result: dict[str, Any] = json.loads(report.read_text())
    result["_exit"] = fleet.returncode
    result["_fleet_cpu_s"] = fleet_cpu
    result["_daemon_cpu_s"] = daemon_cpu
    result["_elapsed_s"] = elapsed
    return result


def _safe_cpu(pid: int) -> float:
    try:
        return cpu_seconds(pid)
    except (FileNotFoundError, ProcessLookupError, IndexError, ValueError):
        return 0.0


def stats_of(result: dict[str, Any]) -> dict[str, Any]:
    stats: dict[str, Any] = result.get("stats", {})
    return stats


def violations_of(result: dict[str, Any]) -> int:
    check = result.get("check") or {}
    return len(stats_of(result).get("violations", [])) + len(check.get("violations", []))


def unintended_fencings(result: dict[str, Any]) -> int:
    return sum(1 for text in stats_of(result).get("violations", []) if "fenced" in text) + sum(
        1 for violation in (result.get("check") or {}).get("violations", []) if "fenced" in json.dumps(violation)
    )


def print_run(result: dict[str, Any], seconds: float) -> None:
    stats = stats_of(result)
    print(f"  fleet exit {result['_exit']}, {result['_elapsed_s']:.0f} s wall")
    print("  requests/s by API:")
    for api, count in sorted(stats.get("requests_by_api", {}).items(), key=lambda item: -item[1]):
        latencies = stats.get("latencies_ms", {}).get(api, [])
        p50, p99 = percentile(latencies, 0.5), percentile(latencies, 0.99)
        figures = f"p50 {p50:.1f} ms, p99 {p99:.1f} ms" if p50 is not None and p99 is not None else "no latencies"
        print(f"    {api:<22} {count / seconds:>9.1f}/s   {figures}")
    lateness = stats.get("heartbeat_lateness_ms", [])
    print(f"  heartbeats {stats.get('heartbeats', 0)}, lateness p99 {percentile(lateness, 0.99) or 0:.1f} ms")
    print(
        f"  stale replays sent {stats.get('stale_replays_sent', 0)}, rejected {stats.get('stale_replays_rejected', 0)}"
    )
    print(f"  violations {violations_of(result)} (must be 0)")
    print(f"  CPU seconds: fleet {result['_fleet_cpu_s']:.1f}, controller {result['_daemon_cpu_s']:.1f}")


def on_time(result: dict[str, Any]) -> bool:
    lateness = stats_of(result).get("heartbeat_lateness_ms", [])
    p99 = percentile(lateness, 0.99)
    return p99 is not None and p99 < ON_TIME_MS and unintended_fencings(result) == 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--brokers", type=int, default=1000)
    parser.add_argument("--topics", type=int, default=100)
    parser.add_argument("--partitions", type=int, default=100)
    parser.add_argument("--seconds", type=float, default=120.0)
    parser.add_argument("--search", default="250,500,1000,1500,2000", help="fleet sizes to try ('' to skip)")
    parser.add_argument("--search-seconds", type=float, default=40.0)
    args = parser.parse_args(argv)
    print(f"fleet benchmark, {time.strftime('%Y-%m-%d')}, {machine()}")
    failed = False
    with tempfile.TemporaryDirectory(prefix="fencer-bench-fleet-") as temporary:
        work = Path(temporary)
        print(
            f"chaos: {args.brokers} brokers, {args.topics} x {args.partitions} partitions, RF 3, {args.seconds:.0f} s"
        )
        result = run_once("chaos", args.brokers, args.topics, args.partitions, args.seconds, work)
        print_run(result, args.seconds)
        failed = violations_of(result) > 0 or result["_exit"] != 0
        largest = 0
        for size in [int(value) for value in args.search.split(",") if value]:
            trial = run_once("steady", size, args.topics, args.partitions, args.search_seconds, work)
            lateness = percentile(stats_of(trial).get("heartbeat_lateness_ms", []), 0.99) or 0.0
            verdict = "on time" if on_time(trial) else "late"
            print(f"  steady {size:>5} brokers: heartbeat lateness p99 {lateness:.1f} ms, {verdict}")
            if not on_time(trial):
                break
            largest = size
        if args.search:
            print(f"largest fleet with every heartbeat on time (p99 lateness < {ON_TIME_MS:.0f} ms): {largest}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
