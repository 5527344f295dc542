"""Scale benchmark: the daemon restarted on a large image, with the time of each phase and its memory.

Run: `make bench-scale` (or `.venv/bin/python benchmarks/scale.py [--topics T] [--partitions-per-topic P]
[--tail R] [--rounds K]`).

The image is written with the controller's own log writer (`MetadataLog`: the snapshot and the
batches an active controller writes), not created over TCP: B brokers, T topics of P partitions
(RF 3), a snapshot of them, then R ISR changes in the log after it. Each round copies it afresh and
starts the real daemon on the copy (`python -m controller`, fsync on, the shipped defaults), and
reads:
- the seconds from the process's start to its `listening on` line (what a user waits for);
- the phases of its start-up line (snapshot read, snapshot replayed, log replayed);
- its RSS once listening, against an empty daemon's (per partition: the image's cost in memory);
- its peak RSS (VmHWM) once it is the active controller and has built every broker's full
  LeaderAndIsr (the brokers of the image are not running: those orders stay queued);
- then a ControlledShutdown of broker 0, which leads 1/B of the partitions (B = 10: 100,000 of
  1,000,000) and is in the ISR of 3/B: the seconds until it is answered (every leadership moved,
  and broker 0 out of every ISR, committed) and what is left; meanwhile the other brokers
  heartbeat every 500 ms, as live brokers do (without them their sessions would expire and fence
  them, a million ISR changes of its own), each on its own connection: the longest wait for an
  answer, and how many were answered REQUEST_TIMED_OUT (not decided within the controller's
  heartbeat deadline, their sessions kept: the broker sends the next one at once).
Targets (1,000,000 partitions): listening within 10 s; at most 0.5 KB per partition above
an empty daemon's RSS; a controlled shutdown of a broker leading 100,000 partitions answered within 2 s.
"""

from __future__ import annotations

import argparse
import re
import shutil
import statistics
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.codec import machine
from benchmarks.core import brokers_records, topic_records
from benchmarks.core_startup import write_snapshot_image
from benchmarks.daemon import Run, _load
from benchmarks.scale_failover import FETCH_TIMEOUT_MS, failover
from benchmarks.soak import status_bytes, tree_bytes
from protocol.error_codes import ErrorCode
from protocol.messages.broker_heartbeat import BrokerHeartbeatRequest
from protocol.messages.controlled_shutdown import ControlledShutdownRequest
from protocol.records.metadata import PartitionRecord
from protocol.spec import Data
from tests.e2e.daemon_process import DaemonProcess
from tests.e2e.fencer_client import FencerClient
from tests.stress.cluster import setup

NODE_ID = "3000"  # the image's (benchmarks.core_startup)
#: AlterPartition's load: brokers of their own (not the image's), a topic of one partition per
#: connection, each connection shrinking and expanding its ISR in turn (`benchmarks.daemon`)
ALTER_BROKERS = (1001, 1002, 1003)
ALTER_CONNECTIONS = 100
PHASES = re.compile(
    r"replayed in ([\d.]+) s \(snapshot read ([\d.]+) s, snapshot replayed ([\d.]+) s, log replayed ([\d.]+) s\)"
)


@dataclass
class Restart:
    listening_s: float
    phases: tuple[float, float, float, float]  # whole start-up, snapshot read, snapshot replayed, log replayed
    rss: int  # bytes, once listening
    peak_rss: int  # bytes, once active with its full state built
    shutdown_s: float  # broker 0's ControlledShutdown, sent to answered
    shutdown_left: int  # the partitions its answer says are left
    heartbeat_s: float  # the longest wait for a heartbeat's answer meanwhile
    heartbeats_timed_out: int  # answered REQUEST_TIMED_OUT meanwhile
    heartbeats: int  # answered meanwhile
    alter: Run  # AlterPartition through the daemon on the image, before the shutdown


def write_image(data_dir: Path, topics: int, per_topic: int, tail: int, brokers: int) -> None:
    base: list[tuple[Data, int]] = brokers_records(brokers)
    for index in range(topics):
        base += topic_records(f"scale-{index:04d}", per_topic, brokers=brokers)[1]
    partitions = [record for record, _ in base if isinstance(record, PartitionRecord)]
    write_snapshot_image(data_dir, base, partitions, tail)


def start(data_dir: Path, timeout: float) -> tuple[DaemonProcess, float]:
    started = time.perf_counter()
    daemon = DaemonProcess(data_dir, "--node-id", NODE_ID).start(timeout=timeout)
    return daemon, time.perf_counter() - started


def wait_for(daemon: DaemonProcess, text: str, timeout: float) -> str:
    """The daemon's stderr once it holds `text` (its log lines)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        logged = daemon.stderr()
        if text in logged:
            return logged
        time.sleep(0.05)
    raise RuntimeError(f"the daemon never logged {text!r}:\n{daemon.stderr()[-3000:]}")


def empty_rss(work: Path) -> int:
    """An empty daemon's RSS once active (the image's reference)."""
    return empty_daemon(work, "empty", None)[0]


def empty_daemon(work: Path, name: str, alter_s: float | None) -> tuple[int, Run | None]:
    """An empty daemon's RSS once active, and its AlterPartition rate over `alter_s` seconds
    (the image's reference; None: not measured)."""
    daemon, _ = start(work / name, 60)
    try:
        wait_for(daemon, "is the active controller", 30)
        assert daemon.process is not None
        rss = status_bytes(daemon.process.pid, "VmRSS")
        return rss, None if alter_s is None else alter_partition(daemon.port, 60, {}, alter_s)
    finally:
        daemon.stop()
        shutil.rmtree(work / name, ignore_errors=True)


def alter_partition(port: int, timeout: float, live: dict[int, int], seconds: float) -> Run:
    """AlterPartition from `ALTER_CONNECTIONS` connections for `seconds` (after a fifth as long, at
    most 1 s, of warm-up),
    on a topic of their own led by brokers of their own, while those brokers and the `live` ones
    (id: epoch) heartbeat, as live brokers do (a broker whose session expires is fenced, a
    million ISR changes on the image)."""
    heartbeats = Heartbeats(port, timeout, live)
    heartbeats.start()
    try:
        cluster = setup(port, ALTER_CONNECTIONS, brokers=ALTER_BROKERS, name="scale-alter")
        ours = Heartbeats(port, timeout, cluster.epochs)
        ours.start()
        try:
            _load(port, cluster, min(1.0, seconds / 5), False)
            requests, elapsed, latencies = _load(port, cluster, seconds, False)
        finally:
            ours.stop.set()
            ours.join()
    finally:
        heartbeats.stop.set()
        heartbeats.join()
    return Run("AlterPartition", requests, elapsed, latencies)


def restart(
    image: Path, work: Path, round_: int, timeout: float, settle: float, brokers: int, alter_s: float
) -> Restart:
    data_dir = work / f"round-{round_}"
    shutil.copytree(image, data_dir)
    daemon, listening = start(data_dir, timeout)
    try:
        assert daemon.process is not None
        rss = status_bytes(daemon.process.pid, "VmRSS")
        logged = wait_for(daemon, "is the active controller", timeout)
        found = PHASES.search(logged)
        if found is None:
            raise RuntimeError(f"no start-up line with phases:\n{logged[-3000:]}")
        time.sleep(settle)  # the full LeaderAndIsr of every broker is built in slices after activation
        peak = status_bytes(daemon.process.pid, "VmHWM")
        alter = alter_partition(daemon.port, timeout, {broker: broker for broker in range(brokers)}, alter_s)
        shutdown_s, left, heartbeats = controlled_shutdown(daemon.port, timeout, brokers)
    finally:
        daemon.stop(timeout=60)
        shutil.rmtree(data_dir, ignore_errors=True)
    whole, read, replayed, log_replayed = (float(value) for value in found.groups())
    return Restart(
        listening,
        (whole, read, replayed, log_replayed),
        rss,
        peak,
        shutdown_s,
        left,
        heartbeats.longest,
        heartbeats.timed_out,
        heartbeats.answered,
        alter,
    )


def controlled_shutdown(port: int, timeout: float, brokers: int) -> tuple[float, int, Heartbeats]:
    """Broker 0's ControlledShutdown (it is live: sessions restart on activation) while the others
    heartbeat: the seconds to its answer, the partitions it leaves, the heartbeats' figures."""
    heartbeats = Heartbeats(port, timeout, {broker: broker for broker in range(1, brokers)})
    heartbeats.start()
    try:
        with FencerClient(port, timeout=timeout) as client:
            began = time.perf_counter()
            answer = client.request(ControlledShutdownRequest(broker_id=0, broker_epoch=0), 3)
            took = time.perf_counter() - began
    finally:
        heartbeats.stop.set()
        heartbeats.join()
    if answer.error_code != 0:
        raise RuntimeError(f"ControlledShutdown answered error {answer.error_code}")
    return took, len(answer.remaining_partitions), heartbeats


class Heartbeats:
    """The brokers of `epochs` (id: epoch; the image's broker b has epoch b) heartbeat every 500 ms
    until `stop`, each on its own connection (a live broker does not wait for another's answer):
    the longest wait for an answer (`longest`, seconds), the answers, and how many of them were
    REQUEST_TIMED_OUT (sent again at once)."""

    def __init__(self, port: int, timeout: float, epochs: dict[int, int]) -> None:
        self.port, self.timeout = port, timeout
        self.stop = threading.Event()
        self.longest = 0.0
        self.answered = self.timed_out = 0
        self._threads = [
            threading.Thread(target=self._beat, args=(broker, epoch), daemon=True) for broker, epoch in epochs.items()
        ]

    def start(self) -> None:
        for thread in self._threads:
            thread.start()

    def join(self) -> None:
        for thread in self._threads:
            thread.join()

    def _beat(self, broker_id: int, epoch: int) -> None:
        heartbeat = BrokerHeartbeatRequest(broker_id=broker_id, broker_epoch=epoch, current_metadata_offset=0)
        with FencerClient(self.port, timeout=self.timeout) as client:
            while not self.stop.is_set():
                began = time.perf_counter()
                answer = client.request(heartbeat, 1)
                self.longest = max(self.longest, time.perf_counter() - began)
                self.answered += 1
                if answer.error_code == ErrorCode.REQUEST_TIMED_OUT:
                    self.timed_out += 1
                    continue
                if answer.error_code != ErrorCode.NONE:
                    raise RuntimeError(f"broker {broker_id}'s heartbeat answered error {answer.error_code}")
                self.stop.wait(0.5)


def _rate(run: Run) -> str:
    return f"{run.rate:,.0f} ({run.percentile(0.99) * 1e3:.1f})"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--topics", type=int, default=100)
    parser.add_argument("--partitions-per-topic", type=int, default=10_000)
    parser.add_argument("--tail", type=int, default=100_000, help="ISR changes in the log after the snapshot")
    parser.add_argument("--brokers", type=int, default=10, help="brokers (at least 3: RF 3); broker 0 leads 1/B")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds a restart may take")
    parser.add_argument(
        "--settle", type=float, default=5.0, help="seconds after activation before the peak RSS is read (default 5)"
    )
    parser.add_argument(
        "--alter-seconds", type=float, default=5.0, help="seconds of AlterPartition load per daemon (default 5)"
    )
    parser.add_argument(
        "--after", type=float, default=10.0, help="seconds of heartbeats after a failover's first answer (default 10)"
    )
    return parser


def table_head(*columns: str) -> None:
    """A Markdown table's header row and its separator, one cell per column."""
    print("| " + " | ".join(columns) + " |")
    print("|" + "---|" * len(columns))


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    partitions = args.topics * args.partitions_per_topic
    with tempfile.TemporaryDirectory(prefix="fencer-scale-") as tmp:
        work = Path(tmp)
        began = time.perf_counter()
        write_image(work / "image", args.topics, args.partitions_per_topic, args.tail, args.brokers)
        size = tree_bytes(work / "image")
        print(
            f"scale: {partitions:,} partitions ({args.topics} topics x {args.partitions_per_topic:,}, RF 3, "
            f"{args.brokers} brokers) in a snapshot, then {args.tail:,} ISR changes; {size / 2**20:,.0f} MiB on disk, "
            f"written by the controller's log writer in {time.perf_counter() - began:.1f} s"
        )
        print(f"machine: {machine()}; {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")
        empty = empty_rss(work)
        print(f"an empty daemon, listening and active: RSS {empty / 2**20:.0f} MiB")
        table_head(
            "round", "to listening s", "start-up s", "snapshot read s", "snapshot replayed s", "log replayed s",
            "RSS MiB", "B/partition above empty", "peak RSS MiB", "AlterPartition/s (p99 ms)",
            "empty daemon's AlterPartition/s (p99 ms)", "controlled shutdown s (left)", "longest heartbeat s",
            "heartbeats timed out",
        )  # fmt: skip
        runs, empties = [], []
        for round_ in range(1, args.rounds + 1):  # the image and an empty daemon in turn
            run = restart(work / "image", work, round_, args.timeout, args.settle, args.brokers, args.alter_seconds)
            runs.append(run)
            empty_alter = empty_daemon(work, f"empty-{round_}", args.alter_seconds)[1]
            assert empty_alter is not None
            empties.append(empty_alter)
            whole, read, replayed, log_replayed = run.phases
            print(
                f"| {round_} | {run.listening_s:.2f} | {whole:.2f} | {read:.2f} | {replayed:.2f} | {log_replayed:.2f} "
                f"| {run.rss / 2**20:,.0f} | {(run.rss - empty) / partitions:,.0f} | {run.peak_rss / 2**20:,.0f} "
                f"| {_rate(run.alter)} | {_rate(empties[-1])} "
                f"| {run.shutdown_s:.2f} ({run.shutdown_left}) | {run.heartbeat_s:.2f} "
                f"| {run.heartbeats_timed_out} of {run.heartbeats} |",
                flush=True,
            )
        table_head(
            "failover round", "new leader after kill s", "brokers served again after kill s",
            "longest heartbeat at the new leader s", "heartbeats timed out", "wiped voter's log caught up s",
            "its state rebuilt s", "longest heartbeat meanwhile s",
        )  # fmt: skip
        failovers = []
        for round_ in range(1, args.rounds + 1):
            shot = failover(
                work / "image", work / f"quorum-{round_}", args.brokers, args.timeout, args.settle, args.after
            )
            failovers.append(shot)
            print(
                f"| {round_} | {shot.elected_s:.2f} | {shot.served_s:.2f} | {shot.longest_s:.2f} "
                f"| {shot.timed_out} of {shot.answered} | {shot.caught_up_s:.2f} | {shot.rebuilt_s:.2f} "
                f"| {shot.catch_up_longest_s:.2f} |",
                flush=True,
            )
    listening = statistics.median(run.listening_s for run in runs)
    per_partition = statistics.median((run.rss - empty) / partitions for run in runs)
    led = sum(1 for p in range(args.partitions_per_topic) if p % args.brokers == 0) * args.topics
    print(
        f"restart to listening: median {listening:.2f} s (target 10 s at 1,000,000 partitions); "
        f"RSS above an empty daemon's: median {per_partition:,.0f} B/partition (target 512)"
    )
    print(
        f"controlled shutdown of broker 0, leading {led:,} partitions: answered in a median "
        f"{statistics.median(run.shutdown_s for run in runs):.2f} s (target 2 s for 100,000); the longest heartbeat "
        f"meanwhile {max(run.heartbeat_s for run in runs):.2f} s (target 1 s), "
        f"{sum(run.heartbeats_timed_out for run in runs)} of {sum(run.heartbeats for run in runs)} answered "
        "REQUEST_TIMED_OUT"
    )
    alters = [run.alter for run in runs]
    on_image, on_empty = (statistics.median(run.rate for run in group) for group in (alters, empties))
    p99_image, p99_empty = (statistics.median(run.percentile(0.99) for run in group) for group in (alters, empties))
    print(
        f"AlterPartition on the image: median {on_image:,.0f}/s against {on_empty:,.0f}/s on an empty daemon, "
        f"{on_image / on_empty:.2f}x (target 0.9x); p99 {p99_image * 1e3:.1f} against {p99_empty * 1e3:.1f} ms"
    )
    served = statistics.median(shot.served_s for shot in failovers)
    print(
        f"failover of a 3-voter quorum (leader SIGKILLed): brokers served again a median {served:.2f} s after the "
        f"kill (target: within 3 s of the {FETCH_TIMEOUT_MS / 1000:.0f} s fetch timeout); the longest heartbeat "
        f"at the new leader {max(shot.longest_s for shot in failovers):.2f} s (target 1 s), "
        f"{sum(shot.timed_out for shot in failovers)} of {sum(shot.answered for shot in failovers)} answered "
        "REQUEST_TIMED_OUT"
    )
    caught_up = statistics.median(shot.caught_up_s for shot in failovers)
    rebuilt = statistics.median(shot.rebuilt_s for shot in failovers)
    print(
        f"a wiped voter caught up (snapshot + tail) in a median {caught_up:.2f} s (target 15 s), its state rebuilt "
        f"in {rebuilt:.2f} s; the longest heartbeat at the leader meanwhile "
        f"{max(shot.catch_up_longest_s for shot in failovers):.2f} s"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
