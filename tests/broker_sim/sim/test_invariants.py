"""The simulation's own invariants (`broker_sim.sim.invariants`), on journals and on a planted bug."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from broker_sim.check.liveness import crashed_incarnations
from broker_sim.journal import (
    ControllerFaulted,
    FaultInjected,
    QuorumLeaderSeen,
    QuorumStarted,
    ShutdownTracked,
    read_journal,
)
from broker_sim.sim.cluster import EPOCH_NS
from broker_sim.sim.invariants import _fences, elections_without_fault, fences_of_live_brokers
from broker_sim.sim.run import SimSpec, run_seed

S = 1_000_000_000


def at(seconds: float) -> int:
    return EPOCH_NS + int(seconds * S)


STARTED = QuorumStarted(at(0), [1, 2, 3], 1000, 2000)  # deposed in 1.5 x 2 + 2 x 1 = 5 s


def test_the_first_leader_and_epochs_within_a_fault_s_reach_are_clean() -> None:
    journal = [
        STARTED,
        QuorumLeaderSeen(at(1), 1, 1, 0),
        ControllerFaulted(at(10), 1, "kill", 1500.0, 1, 1),
        QuorumLeaderSeen(at(13), 2, 2, 40),
        ControllerFaulted(at(11.5), 1, "restart", 0.0, 2, 2),
        QuorumLeaderSeen(at(21), 3, 3, 50),  # 11.5 + 2 x 5 = 21.5: still in reach
        QuorumLeaderSeen(at(30), 3, 3, 90),  # the same epoch again: no election
    ]
    assert elections_without_fault(journal) == []


def test_an_epoch_with_no_fault_in_reach_is_reported() -> None:
    early = [STARTED, QuorumLeaderSeen(at(1), 1, 1, 0), QuorumLeaderSeen(at(6), 2, 2, 9)]
    assert [line.split("]")[0] for line in elections_without_fault(early)] == ["[sim-election-without-fault"]
    late = [
        STARTED,
        QuorumLeaderSeen(at(1), 1, 1, 0),
        ControllerFaulted(at(10), 1, "cut", 3000.0, 1, 1),
        QuorumLeaderSeen(at(12), 2, 2, 40),
        ControllerFaulted(at(13), 1, "heal", 0.0, 2, 2),
        QuorumLeaderSeen(at(24), 1, 3, 70),  # 13 + 10 = 23 < 24
    ]
    found = elections_without_fault(late)
    assert len(found) == 1 and "node 1 led epoch 3 (after 2)" in found[0] and "23.000 s" in found[0]


def test_a_follower_whose_fetch_timer_is_never_reset_fails_a_steady_seed() -> None:
    """The planted bug deposes a healthy leader every fetch timeout; no fleet rule names it, this one does."""
    planted = "tests.broker_sim.sim.planted:fetch_timer_never_reset"
    command = [
        "-m",
        "broker_sim",
        "sim",
        "--seeds",
        "1",
        "--scenario",
        "steady",
        "--duration",
        "20",
        "--patch",
        planted,
    ]
    done = subprocess.run(
        [sys.executable, *command],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 1, done.stdout
    rules = {line.split("]")[0].strip(" [") for line in done.stdout.splitlines() if line.startswith("  [")}
    assert rules == {"sim-election-without-fault"}


def test_an_activation_on_a_wrong_clock_fences_live_brokers_and_is_caught() -> None:
    """KAFKA-14392 planted: the brokers' next heartbeats unfence them, so no broker is ever answered
    fenced and no fleet rule speaks; the log's fences of brokers that never stopped do."""
    planted = "tests.broker_sim.sim.planted:activation_on_a_wrong_clock"
    command = ["-m", "broker_sim", "sim", "--seeds", "1", "--scenario", "controller-failover", "--duration", "25"]
    done = subprocess.run([sys.executable, *command, "--patch", planted], capture_output=True, text=True, timeout=300)
    assert done.returncode == 1, done.stdout
    rules = {line.split("]")[0].strip(" [") for line in done.stdout.splitlines() if line.startswith("  [")}
    assert rules == {"sim-live-broker-fenced"}


def test_fences_of_crashed_paused_or_shutting_down_brokers_have_their_cause(tmp_path: Path) -> None:
    """A chaos seed's fences (brokers crashed, paused, shut down) are each excused by the journal;
    without those entries the same fences are reported."""
    run_seed(SimSpec(seed=3, scenario="chaos", duration_s=40), tmp_path)
    nodes = sorted((tmp_path / "quorum").glob("node-*"))
    entries = list(read_journal(tmp_path / "journal.jsonl"))
    assert fences_of_live_brokers(nodes, entries) == []
    causes = (FaultInjected, ShutdownTracked)
    stripped = [entry for entry in entries if not isinstance(entry, causes)]
    assert len(fences_of_live_brokers(nodes, stripped)) >= 1


def test_a_late_fence_of_a_crashed_incarnation_needs_no_cause(tmp_path: Path) -> None:
    """Chaos seed 121: broker 2 crashes at 12.5 s and is back at 18.5 s, its registration held by a
    paused leader until 34 s; the failovers between (each restarting every session, KAFKA-14392)
    put off the fence of its crashed incarnation to 32.8 s, 14 s after the crash ended. Not a live
    broker: clean (the rule before it judged incarnations reported it)."""
    command = ["-m", "broker_sim", "sim", "--seeds", "1", "--first-seed", "121", "--scenario", "chaos"]
    command += ["--keep", str(tmp_path)]
    done = subprocess.run([sys.executable, *command], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout
    seed = tmp_path / "seed-121"
    entries = list(read_journal(seed / "journal.jsonl"))
    crashed = crashed_incarnations(entries)
    crash = next(e for e in entries if isinstance(e, FaultInjected) and e.fault == "crash" and e.broker == 2)
    back_ms = crash.wall_ns // 1_000_000 + int(crash.duration_ms)
    late = [
        (broker, epoch, at)
        for broker, epoch, at in _fences(sorted((seed / "quorum").glob("node-*")))
        if broker == 2 and crashed.get((broker, epoch), at + 1) <= at and at - back_ms > 12_000
    ]
    assert late, _fences(sorted((seed / "quorum").glob("node-*")))
