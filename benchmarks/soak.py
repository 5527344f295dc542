"""Soak: the daemon under minutes of mixed load must hold its memory, descriptors and disk.

Run on demand: `make soak` (10 minutes) or `.venv/bin/python benchmarks/soak.py --minutes M`;
`--minute-seconds S` shortens each "minute" to S seconds: a smoke run of the script (the suite's
tests/benchmarks runs `--minutes 3 --minute-seconds 1`). Minutes shorter than 60 s are too short for
the growth check (the log does not reach its retention in the warm-up, so the data dir grows): it is
printed but not enforced; the other failures are.

The real daemon (fsync on) runs with small snapshots, segments and retention
(`--snapshot-bytes 65536 --segment-bytes 65536 --metadata-retention-bytes 4194304`) so that
every mechanism that could leak turns over many times: snapshots, retention, segment rolls.
Against it:
- the mixed load of tests/stress/load.py on 4 connections: AlterPartition ISR churn, heartbeats,
  topic creation and deletion, registrations of new incarnations;
- three data brokers with live control listeners (broker_sim's), so the control channel
  delivers every LeaderAndIsr and StopReplica;
- a poller reading `/state` and `/metrics` every second.
Each minute it prints the daemon's resident memory, open descriptors and data-dir size, and the
requests answered. It fails (exit 1) if any client got an error, if the daemon did not stop
cleanly, or if any of the three figures grows by more than 10% over its value at the end of
minute 2 (the first two minutes are warm-up: caches, the first snapshots, the log reaching its
retention).
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import tempfile
import threading
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path

import trio

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.codec import machine
from broker_sim.shell.listener import BrokerControlListener
from tests.e2e.daemon_process import DaemonProcess, free_port
from tests.stress.load import Load
from tests.stress.model import DATA_BROKERS

GROWTH_LIMIT = 1.10
WARM_UP_MINUTES = 2
DAEMON_ARGS = (
    "--snapshot-bytes",
    "65536",
    "--segment-bytes",
    "65536",
    "--metadata-retention-bytes",
    "4194304",
    "--session-timeout-ms",
    "3600000",
)


class Listeners:
    """The data brokers' control listeners, served by trio in a thread of their own."""

    def __init__(self, epochs: Callable[[int], int]) -> None:
        self.brokers = {broker: BrokerControlListener(broker, lambda b=broker: epochs(b)) for broker in DATA_BROKERS}
        self.ports: dict[int, int] = {}
        self._ready = threading.Event()
        self._token: trio.lowlevel.TrioToken | None = None
        self._cancel: trio.CancelScope | None = None
        self._thread = threading.Thread(target=trio.run, args=(self._serve,), daemon=True)

    def __enter__(self) -> Listeners:
        self._thread.start()
        self._ready.wait(10)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._token is not None and self._cancel is not None:
            self._token.run_sync_soon(self._cancel.cancel)
        self._thread.join(10)

    async def _serve(self) -> None:
        self._token = trio.lowlevel.current_trio_token()
        async with trio.open_nursery() as nursery:
            self._cancel = nursery.cancel_scope
            for broker, listener in self.brokers.items():
                self.ports[broker] = await nursery.start(listener.serve)
            self._ready.set()


def sample(pid: int, data_dir: Path) -> tuple[int, int, int]:
    """(resident bytes, open descriptors, data-dir bytes) of the daemon now."""
    return status_bytes(pid, "VmRSS"), len(os.listdir(f"/proc/{pid}/fd")), tree_bytes(data_dir)


def status_bytes(pid: int, field: str) -> int:
    """A size field of /proc/PID/status (VmRSS, VmHWM, ...) in bytes."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024
    raise LookupError(f"no {field} in /proc/{pid}/status")


def tree_bytes(directory: Path) -> int:
    """The bytes of the files under `directory`."""
    return sum(path.stat().st_size for path in directory.rglob("*") if path.is_file())


def poll_http(metrics_port: int, stop: threading.Event, errors: list[str]) -> None:
    while not stop.wait(1.0):
        for route in ("/state", "/metrics"):
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}{route}", timeout=30) as response:
                    response.read()
            except OSError as exc:
                errors.append(f"GET {route}: {exc}")


def grown(samples: list[tuple[int, int, int]]) -> list[str]:
    """Each figure that grew by more than the limit over its value after the warm-up."""
    base = samples[WARM_UP_MINUTES - 1]
    problems = []
    for minute, values in enumerate(samples[WARM_UP_MINUTES:], start=WARM_UP_MINUTES + 1):
        for name, value, reference in zip(("RSS", "descriptors", "data dir"), values, base, strict=True):
            if value > reference * GROWTH_LIMIT:
                problems.append(f"minute {minute}: {name} {value:,} > {GROWTH_LIMIT:.2f} x {reference:,}")
    return problems


def run(minutes: int, seed: int, work: Path, minute_seconds: float = 60.0) -> int:
    data_dir, metrics_port = work / "data", free_port()
    daemon = DaemonProcess(data_dir, *DAEMON_ARGS, "--metrics-listen", f"127.0.0.1:{metrics_port}").start()
    assert daemon.process is not None
    epochs: dict[int, int] = {}
    stop, http_errors = threading.Event(), []
    with Listeners(lambda broker: epochs.get(broker, -1)) as listeners:
        load = Load(daemon.port, 4, random.Random(seed), listener_ports=listeners.ports)
        epochs.update(load.data_epochs)
        poller = threading.Thread(target=poll_http, args=(metrics_port, stop, http_errors), daemon=True)
        load.start(daemon.port)
        poller.start()
        samples: list[tuple[int, int, int]] = []
        length = "" if minute_seconds == 60 else f" of {minute_seconds:g} s"
        print(f"soak: {minutes} min{length} on {machine()}", flush=True)
        print("minute | RSS MiB | descriptors | data dir KiB | control requests received", flush=True)
        for minute in range(1, minutes + 1):
            time.sleep(minute_seconds)
            samples.append(sample(daemon.process.pid, data_dir))
            received = sum(len(listener.received) for listener in listeners.brokers.values())
            rss, descriptors, disk = samples[-1]
            print(
                f"{minute:6d} | {rss / 2**20:7.1f} | {descriptors:11d} | {disk / 1024:12.0f} | {received:,}", flush=True
            )
        stop.set()
        answered = load.halt()
        poller.join(60)
    code = daemon.stop(timeout=60)
    print("answered: " + ", ".join(f"{kind} {count:,}" for kind, count in sorted(answered.items())))
    growth = grown(samples)
    enforced = minute_seconds >= 60
    problems = (growth if enforced else []) + http_errors[:5]
    if code != 0:
        problems.append(f"the daemon exited {code}")
    for problem in problems:
        print(f"FAIL {problem}")
    if not enforced:
        for problem in growth:
            print(f"not enforced with minutes of {minute_seconds:g} s: {problem}")
    smoke = "" if enforced else f" (minutes of {minute_seconds:g} s: the growth check not enforced)"
    print(f"soak {'passed' if not problems else 'failed'}{smoke}", flush=True)
    return 1 if problems else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="fencer daemon soak: memory, descriptors and disk under load")
    parser.add_argument("--minutes", type=int, default=10)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--minute-seconds",
        type=float,
        default=60.0,
        help="length of a 'minute' (default 60); shorter: a smoke run, the growth check not enforced",
    )
    args = parser.parse_args(argv)
    if args.minutes <= WARM_UP_MINUTES:
        parser.error(f"--minutes must be above the {WARM_UP_MINUTES}-minute warm-up")
    if args.minute_seconds <= 0:
        parser.error("--minute-seconds must be positive")
    with tempfile.TemporaryDirectory(prefix="fencer-soak-") as tmp:
        return run(args.minutes, args.seed, Path(tmp), args.minute_seconds)


if __name__ == "__main__":
    raise SystemExit(main())
