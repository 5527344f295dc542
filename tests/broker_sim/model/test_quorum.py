"""The fleet's own quorum as pure logic: the controller fault schedule (seeded, one fault at a time,
every kind within three, pauses and cut-offs long enough to depose a leader), the leader read from
DescribeQuorum answers, the failover clock, the cluster id."""

from __future__ import annotations

import itertools

import pytest

from broker_sim.model.quorum import (
    FOLLOWER,
    LEADER,
    FailoverClock,
    LeaderView,
    QuorumTiming,
    cluster_id,
    describe_quorum_request,
    leader_view,
    newest_leader,
)
from broker_sim.model.schedule import (
    CONTROLLER_FAULT_KINDS,
    SCENARIOS,
    TAIL_S,
    controller_fault_schedule,
    fault_schedule,
)
from protocol.error_codes import ErrorCode
from protocol.messages import describe_quorum as dq
from protocol.registry import decode_request, encode_request

from .helpers import TIMING

FAST = QuorumTiming(election_timeout_s=0.5, fetch_timeout_s=1.0)
KAFKA = QuorumTiming()


@pytest.mark.parametrize("scenario", ["controller-failover", "chaos"])
def test_the_controller_faults_are_seeded_and_fit_the_run_one_at_a_time(scenario: str) -> None:
    faults = controller_fault_schedule(3, scenario, 120.0, TIMING, KAFKA)
    assert faults == controller_fault_schedule(3, scenario, 120.0, TIMING, KAFKA)
    assert faults != controller_fault_schedule(4, scenario, 120.0, TIMING, KAFKA)
    assert len(faults) >= 6
    assert faults[0].at_s >= TIMING.warmup_s and faults[-1].at_s + faults[-1].duration_s <= 120.0 - TAIL_S
    for earlier, later in itertools.pairwise(faults):
        assert earlier.at_s + earlier.duration_s < later.at_s  # never two at once


@pytest.mark.parametrize("seed", range(20))
def test_every_three_faults_see_every_kind_and_a_pause_or_cut_outlasts_a_failover(seed: int) -> None:
    faults = controller_fault_schedule(seed, "controller-failover", 120.0, TIMING, FAST)
    for start in range(0, len(faults) - 2, 3):
        assert {fault.kind for fault in faults[start : start + 3]} == set(CONTROLLER_FAULT_KINDS)
    for fault in faults:
        if fault.kind == "kill":
            assert fault.target == LEADER and 0.5 <= fault.duration_s <= 1.5 * FAST.fetch_timeout_s
        else:  # a paused leader wakes up deposed; a cut-off one has resigned (1.5 fetch timeouts)
            assert fault.duration_s > FAST.deposed_s >= 1.5 * FAST.fetch_timeout_s + 2 * FAST.election_timeout_s
            assert fault.target in (LEADER, FOLLOWER)


def test_pauses_and_cuts_hit_the_leader_mostly_and_followers_too() -> None:
    targets = [
        fault.target
        for seed in range(30)
        for fault in controller_fault_schedule(seed, "controller-failover", 60.0, TIMING, FAST)
        if fault.kind != "kill"
    ]
    assert 0.6 < targets.count(LEADER) / len(targets) < 0.9 and FOLLOWER in targets


def test_a_short_run_at_the_tests_timings_gets_one_fault_of_each_kind() -> None:
    """The fleet test's run (22 s, the quorum's timeouts 500/1000 ms): a kill, a pause and a cut."""
    faults = controller_fault_schedule(1, "controller-failover", 22.0, TIMING, FAST)
    assert sorted(fault.kind for fault in faults) == sorted(CONTROLLER_FAULT_KINDS)


def test_only_controller_failover_and_chaos_have_controller_faults_and_the_brokers_none_in_the_first() -> None:
    for scenario in SCENARIOS:
        if scenario != "chaos":
            assert controller_fault_schedule(1, scenario, 60.0, TIMING, KAFKA) == ()
    assert fault_schedule(1, "controller-failover", range(5), 60.0, TIMING) == ()  # steady broker traffic


def test_describe_quorum_asks_for_the_metadata_partition_and_reads_the_leader_only() -> None:
    request = decode_request(encode_request(describe_quorum_request(), 1, 7)[4:])
    assert request.body.topics[0].topic_name == "__cluster_metadata"
    assert request.body.topics[0].partitions[0].partition_index == 0

    def answer(error: int = 0, top: int = 0, leader: int = 2) -> dq.DescribeQuorumResponse:
        partition = dq.DescribeQuorumResponsePartitionData(
            partition_index=0,
            error_code=error,
            leader_id=leader,
            leader_epoch=5,
            high_watermark=40,
            current_voters=(),
            observers=(),
        )
        topic = dq.DescribeQuorumResponseTopicData(topic_name="__cluster_metadata", partitions=(partition,))
        return dq.DescribeQuorumResponse(error_code=top, topics=(topic,))

    assert leader_view(answer()) == LeaderView(2, 5, 40)
    assert leader_view(answer(error=ErrorCode.NOT_LEADER_OR_FOLLOWER)) is None
    assert leader_view(answer(top=ErrorCode.CLUSTER_AUTHORIZATION_FAILED)) is None
    assert leader_view(answer(leader=-1)) is None
    assert leader_view(dq.DescribeQuorumResponse(topics=())) is None


def test_the_newest_leader_is_the_one_of_the_highest_epoch() -> None:
    """A deposed leader (a woken zombie, a cut-off one) may still say it leads its older epoch."""
    assert newest_leader([None, LeaderView(1, 4, 10), LeaderView(3, 6, 12), None]) == LeaderView(3, 6, 12)
    assert newest_leader([None, None]) is None


def test_a_leaders_failover_ends_with_a_newer_epoch_and_an_answer_from_another_node() -> None:
    clock = FailoverClock()
    before = LeaderView(1, 4, 100)
    failover = clock.begin(10.0, 1, "cut", LEADER, before)
    assert clock.served(1, 10.5) == []  # the cut-off leader itself answers: not served again
    assert clock.leader_seen(LeaderView(1, 4, 100), 10.6) == []  # the old leader, still saying so
    assert clock.served(2, 10.7) == []  # served, but no new leader seen yet
    assert failover.served_s == pytest.approx(0.7)
    assert clock.leader_seen(LeaderView(3, 5, 101), 11.2) == [failover]
    assert failover.elected_s == pytest.approx(1.2) and failover.new_leader == LeaderView(3, 5, 101)
    assert clock.open == []


def test_a_followers_fault_is_over_at_the_first_answer_from_anyone_and_close_keeps_what_is_known() -> None:
    clock = FailoverClock()
    follower = clock.begin(5.0, 2, "pause", FOLLOWER, LeaderView(1, 3, 9))
    assert clock.served(None, 4.9) == []  # before the fault
    assert clock.served(1, 5.3) == [follower] and follower.served_s == pytest.approx(0.3)
    assert follower.elected_s is None
    leader = clock.begin(8.0, 1, "kill", LEADER, LeaderView(1, 3, 9))
    assert clock.close(leader) == [leader] and leader.elected_s is None and leader.served_s is None
    pending = clock.begin(9.0, 3, "kill", LEADER, None)  # no leader known before: any epoch is newer
    clock.leader_seen(LeaderView(2, 1, 0), 9.5)
    assert clock.close_all() == [pending] and pending.elected_s == pytest.approx(0.5)


def test_the_cluster_id_is_kafkas_form_and_seeded() -> None:
    ids = {cluster_id(seed) for seed in range(200)}
    assert len(ids) == 200 and cluster_id(7) == cluster_id(7)
    for text in ids:
        assert len(text) == 22 and not text.startswith("-")
        assert set(text) <= set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
