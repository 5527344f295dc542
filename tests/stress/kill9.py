"""Durability under SIGKILL: every change acknowledged before the kill survives the restart.

Run on demand: `.venv/bin/python tests/stress/kill9.py --rounds 20` (`make stress`); the suite
runs 5 rounds (tests/stress/test_kill9.py).

The daemon runs with `--snapshot-bytes 65536`, so it writes a snapshot every few hundred
changes. Each round, the mixed load of load.py (four connections: ISR changes, heartbeats,
topic creation and deletion, registrations of new incarnations) runs until the round's moment,
and the daemon is killed with SIGKILL:
- `load`: at a random time;
- `snapshot`: as soon as a snapshot's `.checkpoint.part` file appears;
- `create`, `delete`, `register`: as soon as a client has sent such a request (in flight).
The moments come in a seeded random order, each once in every five rounds. Then the restart
itself is killed 0 to 2 times (seeded), at a random point of start-up (before or while it
replays). The next start must succeed, and the run continues from the recovered state.

Checks; any failure ends the run, naming every problem:
- no client saw an error answer, a timeout or a broken connection before the kill;
- after the kill every complete snapshot file validates (a kill during a snapshot leaves at
  most a `.checkpoint.part`), and the next start deletes the `.part` files it found;
- the recovered `/state` holds every acknowledged change and nothing else but the effect of
  the requests in flight (model.reconcile): registration epochs, every partition of every
  acknowledged topic, deletions, ISR changes.
What this cannot see: writes that reached the page cache but not the disk (SIGKILL keeps the
page cache). fsync_order.py checks that no answer leaves before its records are fsync'd.
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from controller.log.snapshots import PART_SUFFIX, SNAPSHOT_SUFFIX, SnapshotError, read_snapshot_file
from tests.e2e.daemon_process import DaemonProcess, free_port
from tests.stress.cluster import fetch_state
from tests.stress.load import API_NAMES, CHANGES, Load

MOMENTS = ("load", "snapshot", "create", "delete", "register")
SNAPSHOT_BYTES = 64 * 1024
MOMENT_TIMEOUT_S = 10.0


@dataclass
class Rig:
    """The daemon under test, restarted on the same data dir and metrics port."""

    data_dir: Path
    metrics_port: int
    daemon: DaemonProcess | None = None
    startup_seconds: float = 1.0  # of the latest complete start

    @property
    def partition(self) -> Path:
        return self.data_dir / "__cluster_metadata-0"

    def process(self) -> DaemonProcess:
        args = ("--metrics-listen", f"127.0.0.1:{self.metrics_port}", "--session-timeout-ms", "600000")
        return DaemonProcess(self.data_dir, *args, "--snapshot-bytes", str(SNAPSHOT_BYTES))

    def start(self) -> DaemonProcess:
        started = time.monotonic()
        self.daemon = self.process().start()
        self.startup_seconds = time.monotonic() - started
        return self.daemon

    def starts_completed(self) -> int:
        return self.process().stderr().count(" started: ")


def wait_for_moment(moment: str, load: Load, partition: Path, rng: random.Random) -> str:
    """Wait under load until `moment` (the caller then kills); say what the kill lands during."""
    if moment == "load":
        load.stop.wait(rng.uniform(0.3, 1.5))
        return "at a random moment"
    load.stop.wait(rng.uniform(0.2, 0.8))
    if moment == "snapshot":
        if wait_for_part(partition, load):
            return "as a snapshot was being written"
        return f"after {MOMENT_TIMEOUT_S:.0f} s without seeing a snapshot being written"
    if not load.trigger(moment).wait(MOMENT_TIMEOUT_S) and not load.stop.is_set():
        raise AssertionError(f"no {moment} request was sent within {MOMENT_TIMEOUT_S} s")
    time.sleep(rng.uniform(0, 0.005))  # about one request's time under this load: before, during or after its commit
    return f"with a {API_NAMES[moment]} in flight"


def wait_for_part(partition: Path, load: Load) -> bool:
    deadline = time.monotonic() + MOMENT_TIMEOUT_S
    while time.monotonic() < deadline and not load.stop.is_set():
        if any(path.name.endswith(PART_SUFFIX) for path in partition.iterdir()):
            return True
        time.sleep(0.0005)
    return False


def check_snapshot_files(partition: Path) -> list[Path]:
    """Every complete snapshot must validate; return the `.part` leftovers."""
    for path in sorted(partition.glob("*" + SNAPSHOT_SUFFIX)):
        try:
            read_snapshot_file(path)
        except (SnapshotError, OSError) as exc:
            raise AssertionError(f"a kill left a complete but invalid snapshot {path.name}: {exc}") from None
    return sorted(partition.glob("*" + PART_SUFFIX))


def kill_startups(rig: Rig, count: int, rng: random.Random) -> list[str]:
    """Spawn the daemon and SIGKILL it during start-up, `count` times; describe each."""
    described = []
    for _ in range(count):
        before = rig.starts_completed()
        delay = rng.uniform(0.3, 1.0) * rig.startup_seconds
        daemon = rig.process().spawn()
        time.sleep(delay)
        daemon.kill()
        replayed = rig.starts_completed() > before
        described.append(f"at {delay:.2f} s ({'after' if replayed else 'before the end of'} replay)")
    return described


def restart_and_check(rig: Rig, load: Load, leftovers: list[Path]) -> list[str]:
    """Start the daemon; its state must hold what was acknowledged. Return the in-flight outcomes."""
    rig.start()
    kept = [path.name for path in leftovers if path.exists()]
    reconciled = load.reconcile(fetch_state(rig.metrics_port))
    problems = reconciled.problems + [f"start-up did not delete {name}" for name in kept]
    if problems:
        raise AssertionError("not recovered:\n  " + "\n  ".join(problems))
    return reconciled.outcomes


def play_round(rig: Rig, load: Load, moment: str, rng: random.Random) -> tuple[int, str]:
    """One round; return the changes acknowledged in it and its description."""
    assert rig.daemon is not None
    load.start(rig.daemon.port)
    try:
        what = wait_for_moment(moment, load, rig.partition, rng)
    finally:
        load.killing()
        rig.daemon.kill()
        counts = load.halt()
    leftovers = check_snapshot_files(rig.partition)
    startups = kill_startups(rig, rng.randint(0, 2), rng)
    outcomes = restart_and_check(rig, load, leftovers)
    changes = sum(counts[kind] for kind in CHANGES)
    lines = [
        f"SIGKILL {what}" + (f", leaving {', '.join(path.name for path in leftovers)}" if leftovers else ""),
        f"start-up killed {', '.join(startups)}" if startups else "",
        f"{changes} changes acknowledged ({_breakdown(counts)} answered)",
        f"in flight: {'; '.join(outcomes)}" if outcomes else "",
        "all recovered",
    ]
    return changes, "; ".join(line for line in lines if line)


def _breakdown(counts: Counter[str]) -> str:
    return ", ".join(f"{API_NAMES[kind]} {counts[kind]}" for kind in (*CHANGES, "heartbeat"))


def run(rounds: int, seed: int, data_dir: Path, clients: int = 4, verbose: bool = True) -> int:
    """Play `rounds` rounds; return the changes acknowledged (and recovered) in all of them."""
    rng = random.Random(seed)
    rig = Rig(data_dir, free_port())
    daemon = rig.start()
    total = 0
    try:
        load = Load(daemon.port, clients, rng)
        moments: list[str] = []
        for number in range(1, rounds + 1):
            if not moments:
                moments = rng.sample(MOMENTS, len(MOMENTS))
            changes, description = play_round(rig, load, moments.pop(), rng)
            total += changes
            if verbose:
                print(f"round {number}: {description}", flush=True)
    finally:
        assert rig.daemon is not None
        rig.daemon.stop()
    return total


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="SIGKILL durability stress for the fencer daemon")
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--clients", type=int, default=4)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="fencer-kill9-") as tmp:
        total = run(args.rounds, args.seed, Path(tmp) / "data", clients=args.clients)
    print(f"{args.rounds} rounds, {total} acknowledged changes, all recovered after SIGKILL")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
