"""The fault schedule is a pure function of seed, scenario, broker ids and duration; versions and lag
are seeded per broker, so a broker behaves the same whatever the process split of the fleet."""

from __future__ import annotations

import itertools

import pytest

from broker_sim.model import versions
from broker_sim.model.lag import LagModel, episodes
from broker_sim.model.schedule import CHAOS_KINDS, SCENARIOS, fault_schedule
from protocol.api_keys import ApiKey
from protocol.versions import Versions

from .helpers import TIMING

DURATION = 60.0


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_the_same_arguments_give_the_same_schedule_and_another_seed_another(scenario: str) -> None:
    first = fault_schedule(1, scenario, range(10), DURATION, TIMING)
    assert first == fault_schedule(1, scenario, range(10), DURATION, TIMING)
    if scenario != "steady":
        assert first != fault_schedule(2, scenario, range(10), DURATION, TIMING)


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_a_brokers_faults_do_not_depend_on_the_other_brokers_of_its_process(scenario: str) -> None:
    whole = fault_schedule(4, scenario, range(10), DURATION, TIMING)
    half = fault_schedule(4, scenario, range(5, 10), DURATION, TIMING)
    assert [f for f in whole if f.broker >= 5] == list(half)


def test_steady_has_no_faults_and_rolling_restart_one_shutdown_per_broker() -> None:
    assert fault_schedule(0, "steady", range(5), DURATION, TIMING) == ()
    rolling = fault_schedule(0, "rolling-restart", range(5), DURATION, TIMING)
    assert sorted(f.broker for f in rolling) == list(range(5))
    assert {f.kind for f in rolling} == {"controlled-shutdown"}
    assert {f.via for f in rolling} == {"rpc", "heartbeat", "rpc+heartbeat"}


@pytest.mark.parametrize("scenario", ["disk-failures", "chaos"])
def test_faults_fit_the_run_and_a_brokers_faults_never_overlap(scenario: str) -> None:
    faults = fault_schedule(9, scenario, range(20), DURATION, TIMING)
    assert faults
    for fault in faults:
        assert TIMING.warmup_s <= fault.at_s and fault.at_s + fault.duration_s <= DURATION
    for broker in range(20):
        own = [f for f in faults if f.broker == broker]
        for earlier, later in itertools.pairwise(own):
            assert earlier.at_s + earlier.duration_s < later.at_s


def test_five_consecutive_brokers_see_every_chaos_fault_and_pauses_outlast_the_session() -> None:
    faults = fault_schedule(5, "chaos", range(10, 15), 30.0, TIMING)
    assert {f.kind for f in faults} == set(CHAOS_KINDS)
    assert all(f.duration_s > TIMING.session_timeout_s for f in faults if f.kind == "pause")
    assert all(f.log_dir in (0, 1) for f in faults if f.kind == "disk-failure")


def test_consecutive_brokers_use_every_version_of_every_api() -> None:
    everything = {key: Versions(versions.ours(key).lowest, versions.ours(key).highest) for key in versions.NEGOTIATED}
    for key in versions.NEGOTIATED:
        span = everything[key].highest - everything[key].lowest + 1
        used = {versions.negotiate(3, broker, everything)[key] for broker in range(20, 20 + span)}
        assert used == set(everything[key])
    for key in (ApiKey.API_VERSIONS, ApiKey.DESCRIBE_CLUSTER):
        assert {versions.first_contact(3, b)[key] for b in range(5)} == set(versions.ours(key))


def test_negotiation_stays_within_both_sides_ranges() -> None:
    theirs = {ApiKey.ALTER_PARTITION: Versions(1, 2), ApiKey.BROKER_HEARTBEAT: Versions(0, 0)}
    for broker in range(10):
        chosen = versions.negotiate(0, broker, theirs)
        assert chosen[ApiKey.ALTER_PARTITION] in (1, 2) and chosen[ApiKey.BROKER_HEARTBEAT] == 0
        assert ApiKey.CONTROLLED_SHUTDOWN not in chosen  # the controller does not offer it


def test_lag_episodes_are_seeded_per_replica_and_start_after_the_warm_up() -> None:
    found = episodes(1, 2, "t", 0, mean_gap_s=5.0, warmup_s=3.0, horizon_s=100.0)
    assert found == episodes(1, 2, "t", 0, mean_gap_s=5.0, warmup_s=3.0, horizon_s=100.0)
    assert found != episodes(1, 3, "t", 0, mean_gap_s=5.0, warmup_s=3.0, horizon_s=100.0)
    assert found and all(3.0 <= start < end <= start + 4.0 for start, end in found)
    lag = LagModel(1, mean_gap_s=5.0, warmup_s=3.0, horizon_s=100.0)
    start, end = found[0]
    assert not lag.lagging(2, "t", 0, start - 0.01)
    assert lag.lagging(2, "t", 0, (start + end) / 2)
    assert not lag.lagging(2, "t", 0, end)
