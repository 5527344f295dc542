"""Kafka's Raft simulation scenarios on the whole simulated cluster (`broker_sim.sim.scenarios`): each
scenario's seeds run clean, its script's faults happen, and its voters are the seed's choice."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from broker_sim.journal import ControllerFaulted, FaultInjected, QuorumStarted, read_journal
from broker_sim.sim.cluster import EPOCH_NS
from broker_sim.sim.run import SimSpec, run_seed, voters_of
from broker_sim.sim.scenarios import NEMESIS, RAFT_SCENARIOS

#: seeds per scenario in the suite (`make sim` runs as many as asked)
SEEDS = 2
DURATION_S = 15.0
#: a longer run where the script needs it (faults stop two deposition times before the end)
DURATIONS_S = {"overlapping-faults": 25.0}

#: what each scenario's journal shows of its script, whatever the seed
FAULTS = {
    "initial-election": set(),
    "leader-failure": {"restart"},
    "all-nodes-killed": {"kill", "restart"},
    "leader-partitioned": {"cut", "heal"},
    "majority-reachable": {"cut", "heal"},
    "back-to-back-leader-failures": {"cut", "heal"},
    "single-node-data-loss": {"wipe", "restart"},
    "overlapping-faults": set(),  # 3-8 of kill, shutdown, cut, pause, each ended (below)
}


def test_every_scenario_of_kafkas_simulation_is_here() -> None:
    assert set(RAFT_SCENARIOS) == set(FAULTS)
    assert {scenario.kafka for scenario in RAFT_SCENARIOS.values()} - {""} == {
        "canElectInitialLeader",
        "canElectNewLeaderAfterOldLeaderFailure",
        "canRecoverAfterAllNodesKilled",
        "canElectNewLeaderAfterOldLeaderPartitionedAway",
        "canMakeProgressIfMajorityIsReachable",
        "canMakeProgressAfterBackToBackLeaderFailures",
        "canRecoverFromSingleNodeCommittedDataLoss",
    }


@pytest.mark.parametrize("scenario", sorted(FAULTS))
def test_the_scenario_runs_clean_with_its_faults(scenario: str, tmp_path: Path) -> None:
    for seed in range(SEEDS):
        spec = SimSpec(seed=seed, scenario=scenario, duration_s=DURATIONS_S.get(scenario, DURATION_S), brokers=3)
        result = run_seed(spec, tmp_path / f"seed-{seed}")
        assert result.status == 0, "\n".join(result.violations + result.run.failures)
        entries = list(read_journal(result.directory / "journal.jsonl"))
        started = next(entry for entry in entries if isinstance(entry, QuorumStarted))
        low, high = RAFT_SCENARIOS[scenario].voters
        assert len(started.nodes) == voters_of(spec) and low <= len(started.nodes) <= high
        kinds = {entry.fault for entry in entries if isinstance(entry, ControllerFaulted)}
        assert FAULTS[scenario] <= kinds, kinds
        if scenario == "leader-failure":
            assert kinds & {"kill", "shutdown"}
        if scenario == "overlapping-faults":
            faults = [entry.fault for entry in entries if isinstance(entry, ControllerFaulted)]
            started = [fault for fault in faults if fault in NEMESIS]
            assert 3 <= len(started) <= 8, faults
            ended = Counter(fault for fault in faults if fault not in NEMESIS)
            assert ended == Counter(NEMESIS[fault] for fault in started), faults  # every fault ended


def test_the_voters_are_drawn_in_the_scenarios_range_unless_given() -> None:
    drawn = {voters_of(SimSpec(seed=seed, scenario="initial-election")) for seed in range(40)}
    assert drawn == {1, 2, 3, 4, 5}
    assert {voters_of(SimSpec(seed=seed, scenario="majority-reachable")) for seed in range(10)} == {5}
    assert voters_of(SimSpec(seed=3, scenario="initial-election", voters=2)) == 2
    assert voters_of(SimSpec(seed=3, scenario="chaos")) == 3


@pytest.mark.parametrize(
    ("scenario", "broker_fault"),
    [("shutdown-during-failover", "controlled-shutdown"), ("offline-replicas-during-failover", "disk-failure")],
)
def test_fencers_own_scenarios_put_broker_faults_under_failovers(
    scenario: str, broker_fault: str, tmp_path: Path
) -> None:
    result = run_seed(SimSpec(seed=1, scenario=scenario, duration_s=30), tmp_path)
    assert result.status == 0, "\n".join(result.violations + result.run.failures)
    entries = list(read_journal(result.directory / "journal.jsonl"))
    assert {entry.fault for entry in entries if isinstance(entry, FaultInjected)} == {broker_fault}
    assert {entry.fault for entry in entries if isinstance(entry, ControllerFaulted)} & {"kill", "pause", "cut"}


def test_a_leader_shut_down_gracefully_hands_over_before_its_followers_time_out(tmp_path: Path) -> None:
    """Seed 1 of leader-failure shuts its leader down gracefully (SIGTERM): the leader resigns with
    EndQuorumEpoch, and another voter leads well within one fetch timeout of the shutdown, where a
    kill costs the followers their whole fetch timeout first (Kafka's graceful shutdown)."""
    result = run_seed(SimSpec(seed=1, scenario="leader-failure", duration_s=15), tmp_path)
    assert result.status == 0, result.violations
    (shutdown,) = [
        e
        for e in read_journal(tmp_path / "journal.jsonl")
        if isinstance(e, ControllerFaulted) and e.fault == "shutdown"
    ]
    at_s = (shutdown.wall_ns - EPOCH_NS) / 1e9
    led = [
        float(line.split()[0]) for line in (tmp_path / "sim.log").read_text().splitlines() if " leads epoch " in line
    ]
    after = [t for t in led if t > at_s]
    assert after and after[0] - at_s < result.spec.timing.fetch_timeout_s / 2, (at_s, led)
