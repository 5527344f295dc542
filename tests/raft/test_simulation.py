"""Property tests: Raft's safety over a simulated network of 3 or 5 voters (and an observer),
with loss, duplication, reordering, partitions, crashes and restarts, slow flushes and snapshots
(tests/raft/sim.py checks every property at every step: tests/raft/invariants.py); and liveness:
once the network heals, a leader is elected and commits a new entry on every voter in bounded
simulated time.

The seeds are split in chunks, so that the suite's workers share them.
"""

from __future__ import annotations

from collections import Counter

import pytest

from .sim import Simulation, run
from .simnode import Faults, Report

QUIET = Faults(
    loss=0.0,
    duplicate=0.0,
    crash_every_ms=None,
    partition_every_ms=None,
    snapshot_every_ms=None,
    sudden_crash=0.0,
    slow_flush=0.0,
)
#: what every chunk of seeds must have gone through, so that a change to the harness that quietly
#: stops exercising a path fails here rather than passing vacuously
EXERCISED = (
    "crashes",
    "sudden crashes",
    "partitions",
    "lost",
    "elections won",
    "leaderships lost",
    "truncations",
    "snapshots taken",
    "snapshots installed",
    "pre-votes granted",
    "votes granted",
)


def run_chunk(first: int, count: int, voters: int, observers: int = 0) -> list[Report]:
    reports = [run(seed, voters, observers) for seed in range(first, first + count)]
    seen: Counter[str] = Counter()
    for report in reports:
        seen.update(report.stats)
        assert report.converged_at_ms is not None and report.committed > 0
    assert all(seen[name] > 0 for name in EXERCISED), {name: seen[name] for name in EXERCISED}
    return reports


@pytest.mark.parametrize("first", range(0, 240, 40))
def test_three_voters(first: int) -> None:
    run_chunk(first, 40, voters=3)


@pytest.mark.parametrize("first", range(1000, 1120, 30))
def test_five_voters(first: int) -> None:
    run_chunk(first, 30, voters=5)


@pytest.mark.parametrize("first", range(2000, 2060, 30))
def test_three_voters_and_an_observer(first: int) -> None:
    run_chunk(first, 30, voters=3, observers=1)


def test_runs_are_deterministic() -> None:
    assert run(7, 5) == run(7, 5)


def test_without_faults_one_election_and_everything_commits() -> None:
    sim = Simulation(3, voters=5, chaos_ms=1000, faults=QUIET)
    report = sim.run()
    assert report.stats["elections won"] == 1 and report.max_epoch == 1
    # the last entry is committed everywhere within a held fetch's wait and a round trip or two
    assert report.converged_at_ms is not None and report.converged_at_ms <= 1000 + 100
    assert report.committed == 1 + report.stats["records appended"]  # the LeaderChange, then every record
    assert {node.log.end for node in sim.nodes.values()} == {report.committed}
    assert {node.hw for node in sim.nodes.values()} == {report.committed}
