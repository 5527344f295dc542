"""ElectLeaders v0-2: preferred (every version) and unclean (v1+) elections."""

from __future__ import annotations

import dataclasses

import pytest

from controller.ops import elections
from protocol.error_codes import ErrorCode
from protocol.messages.alter_replica_state import OFFLINE
from protocol.messages.elect_leaders import (
    PREFERRED,
    UNCLEAN,
    ElectLeadersRequest,
    ElectLeadersRequestTopicPartitions,
    ElectLeadersResponse,
    ElectLeadersResponsePartitionResult,
    ElectLeadersResponseReplicaElectionResult,
)
from protocol.records.metadata import PartitionChangeRecord
from protocol.registry import encode_response
from protocol.spec import Data

from ..harness import Harness

VERSIONS = [0, 1, 2]
UNCLEAN_VERSIONS = [1, 2]
RECOVERING = 1


def elect(
    h: Harness, version: int, election: int, wanted: dict[str, list[int]] | None
) -> tuple[ElectLeadersResponse, list[Data]]:
    partitions = (
        None
        if wanted is None
        else tuple(ElectLeadersRequestTopicPartitions(topic=name, partitions=tuple(p)) for name, p in wanted.items())
    )
    response, records = h.send(ElectLeadersRequest(election_type=election, topic_partitions=partitions), version)
    assert isinstance(response, ElectLeadersResponse)
    return response, records


def outcome(response: ElectLeadersResponse) -> list[tuple[str, int, int]]:
    return [
        (topic.topic, p.partition_id, p.error_code)
        for topic in response.replica_election_results
        for p in topic.partition_result
    ]


@pytest.fixture
def h() -> Harness:
    harness = Harness()
    harness.start_brokers(0, 1, 2)
    harness.create_topic("t", assignments=[[0, 1, 2]])
    return harness


def move_leadership_to_1(h: Harness) -> None:
    """Broker 0 is fenced (leadership moves to 1), unfenced, and added back to the ISR by the leader."""
    h.heartbeat(0, want_fence=True)
    h.heartbeat(0)
    h.alter_isr("t", 0, [1, 2, 0])
    part = h.partition("t")
    assert (part.leader, part.isr, part.leader_epoch) == (1, (1, 2, 0), 1)


def make_leaderless(h: Harness) -> None:
    """ISR [0], then broker 0 fenced: leader -1, ISR [0]; brokers 1 and 2 active, outside the ISR."""
    h.alter_isr("t", 0, [0])
    h.heartbeat(0, want_fence=True)
    assert (h.partition("t").leader, h.partition("t").isr) == (-1, (0,))


# ---------------------------------------------------------------------- preferred
@pytest.mark.parametrize("version", VERSIONS)
def test_preferred_already_leading_is_election_not_needed(h: Harness, version: int) -> None:
    log_length = len(h.log)
    response, records = elect(h, version, PREFERRED, {"t": [0]})
    assert response == ElectLeadersResponse(
        replica_election_results=(
            ElectLeadersResponseReplicaElectionResult(
                topic="t",
                partition_result=(
                    ElectLeadersResponsePartitionResult(
                        partition_id=0, error_code=ErrorCode.ELECTION_NOT_NEEDED, error_message="ELECTION_NOT_NEEDED"
                    ),
                ),
            ),
        )
    )
    assert records == [] and len(h.log) == log_length


@pytest.mark.parametrize("version", VERSIONS)
def test_preferred_in_isr_and_eligible_becomes_leader(h: Harness, version: int) -> None:
    move_leadership_to_1(h)
    before = h.partition("t")
    response, records = elect(h, version, PREFERRED, {"t": [0]})
    assert response.replica_election_results[0].partition_result == (
        ElectLeadersResponsePartitionResult(partition_id=0, error_code=ErrorCode.NONE, error_message=None),
    )
    assert records == [PartitionChangeRecord(partition_id=0, topic_id=h.topic_id("t"), leader=0)]
    after = h.partition("t")
    assert (after.leader, after.isr) == (0, before.isr)
    assert (after.leader_epoch, after.partition_epoch) == (before.leader_epoch + 1, before.partition_epoch + 1)


@pytest.mark.parametrize("version", VERSIONS)
def test_preferred_outside_the_isr_is_preferred_leader_not_available(h: Harness, version: int) -> None:
    h.heartbeat(0, want_fence=True)
    h.heartbeat(0)  # active again, but not back in the ISR
    log_length = len(h.log)
    response, records = elect(h, version, PREFERRED, {"t": [0]})
    assert outcome(response) == [("t", 0, ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE)]
    assert records == [] and len(h.log) == log_length


@pytest.mark.parametrize("version", VERSIONS)
def test_preferred_ineligible_in_the_isr_never_falls_back_to_unclean(h: Harness, version: int) -> None:
    make_leaderless(h)  # replicas[0] = 0 is in the ISR but fenced; 1 and 2 could lead uncleanly
    log_length = len(h.log)
    response, records = elect(h, version, PREFERRED, {"t": [0]})
    assert outcome(response) == [("t", 0, ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE)]
    assert records == [] and len(h.log) == log_length
    assert h.partition("t").leader == -1


@pytest.mark.parametrize("version", VERSIONS)
def test_preferred_after_controlled_shutdown_is_not_available(h: Harness, version: int) -> None:
    move_leadership_to_1(h)
    h.controlled_shutdown(0)
    h.heartbeat(1)
    response, records = elect(h, version, PREFERRED, {"t": [0]})
    assert outcome(response) == [("t", 0, ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE)]
    assert records == []


@pytest.mark.parametrize("version", VERSIONS)
def test_unknown_topic_or_partition(h: Harness, version: int) -> None:
    response, records = elect(h, version, PREFERRED, {"t": [3], "missing": [0]})
    assert outcome(response) == [
        ("t", 3, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION),
        ("missing", 0, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION),
    ]
    assert records == []


@pytest.mark.parametrize("version", VERSIONS)
def test_null_partition_list_tries_every_partition_and_leaves_out_not_needed(version: int) -> None:
    h = Harness()
    h.start_brokers(0, 1, 2)
    h.create_topic("a", assignments=[[0, 1, 2]])  # preferred leads: left out
    h.create_topic("b", assignments=[[1, 0, 2], [2, 1, 0]])
    h.heartbeat(1, want_fence=True)  # b-0: leader 0 now; 1 out of the ISR
    h.heartbeat(1)
    h.heartbeat(2, want_fence=True)  # b-1: leader 1 now
    h.heartbeat(2)
    h.alter_isr("b", 1, [1, 0, 2])  # 2 back in b-1's ISR: electable
    response, records = elect(h, version, PREFERRED, None)
    assert outcome(response) == [("b", 0, ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE), ("b", 1, ErrorCode.NONE)]
    assert records == [PartitionChangeRecord(partition_id=1, topic_id=h.topic_id("b"), leader=2)]


def test_v0_has_no_election_type_and_is_preferred() -> None:
    h = Harness()
    h.start_brokers(0, 1, 2)
    h.create_topic("t", assignments=[[0, 1, 2]])
    make_leaderless(h)
    response, records = elect(h, 0, UNCLEAN, {"t": [0]})  # the type is not on the v0 wire
    assert outcome(response) == [("t", 0, ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE)]
    assert records == []


# ---------------------------------------------------------------------- unclean
@pytest.mark.parametrize("version", UNCLEAN_VERSIONS)
def test_unclean_with_a_leader_is_election_not_needed(h: Harness, version: int) -> None:
    response, records = elect(h, version, UNCLEAN, {"t": [0]})
    assert outcome(response) == [("t", 0, ErrorCode.ELECTION_NOT_NEEDED)]
    assert records == []


@pytest.mark.parametrize("version", UNCLEAN_VERSIONS)
def test_unclean_elects_the_first_eligible_replica_outside_the_isr_as_recovering(h: Harness, version: int) -> None:
    make_leaderless(h)
    before = h.partition("t")
    response, records = elect(h, version, UNCLEAN, {"t": [0]})
    assert outcome(response) == [("t", 0, ErrorCode.NONE)]
    assert records == [
        PartitionChangeRecord(
            partition_id=0, topic_id=h.topic_id("t"), isr=(1,), leader=1, leader_recovery_state=RECOVERING
        )
    ]
    after = h.partition("t")
    assert (after.leader, after.isr, after.leader_recovery_state) == (1, (1,), RECOVERING)
    assert (after.leader_epoch, after.partition_epoch) == (before.leader_epoch + 1, before.partition_epoch + 1)


@pytest.mark.parametrize("version", UNCLEAN_VERSIONS)
def test_unclean_skips_ineligible_replicas_in_assignment_order(h: Harness, version: int) -> None:
    make_leaderless(h)
    h.alter_replica_state(1, "t", [0], OFFLINE)
    response, records = elect(h, version, UNCLEAN, {"t": [0]})
    assert outcome(response) == [("t", 0, ErrorCode.NONE)]
    assert records == [
        PartitionChangeRecord(
            partition_id=0, topic_id=h.topic_id("t"), isr=(2,), leader=2, leader_recovery_state=RECOVERING
        )
    ]


@pytest.mark.parametrize("version", UNCLEAN_VERSIONS)
def test_unclean_with_no_eligible_replica_is_eligible_leaders_not_available(h: Harness, version: int) -> None:
    make_leaderless(h)
    h.heartbeat(1, want_fence=True)
    h.controlled_shutdown(2)
    log_length = len(h.log)
    response, records = elect(h, version, UNCLEAN, {"t": [0]})
    assert outcome(response) == [("t", 0, ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE)]
    assert records == [] and len(h.log) == log_length


@pytest.mark.parametrize("version", UNCLEAN_VERSIONS)
def test_unclean_unknown_topic_or_partition(h: Harness, version: int) -> None:
    response, records = elect(h, version, UNCLEAN, {"missing": [0], "t": [9]})
    assert outcome(response) == [
        ("missing", 0, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION),
        ("t", 9, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION),
    ]
    assert records == []


@pytest.mark.parametrize("version", UNCLEAN_VERSIONS)
def test_unclean_null_partition_list_elects_every_leaderless_partition(h: Harness, version: int) -> None:
    make_leaderless(h)
    response, records = elect(h, version, UNCLEAN, None)
    assert outcome(response) == [("t", 0, ErrorCode.NONE)]
    assert [type(r) for r in records] == [PartitionChangeRecord]
    assert h.partition("t").leader == 1


# ---------------------------------------------------------------------- the bound on user operations
TOO_MANY_RECORDS = "Unable to perform excessively large batch operation."


@pytest.fixture
def bounded() -> Harness:
    """Three partitions whose preferred replica (0) is back in the ISR but does not lead, and a bound of 2."""
    harness = Harness()
    harness.start_brokers(0, 1, 2)
    harness.create_topic("a", assignments=[[0, 1, 2], [0, 1, 2]])
    harness.create_topic("b", assignments=[[0, 1, 2]])
    harness.heartbeat(0, want_fence=True)
    harness.heartbeat(0)
    for name, index in (("a", 0), ("a", 1), ("b", 0)):
        harness.alter_isr(name, index, [1, 2, 0])
    harness.core.state.config = dataclasses.replace(harness.core.state.config, max_records_per_operation=2)
    return harness


def refuse_evaluation(monkeypatch: pytest.MonkeyPatch) -> None:
    def evaluated(*args: object) -> None:
        raise AssertionError("a partition was evaluated for a refused request")

    monkeypatch.setattr(elections, "_elect", evaluated)


def leaders(h: Harness) -> list[int]:
    return [h.partition(name, index).leader for name, index in (("a", 0), ("a", 1), ("b", 0))]


@pytest.mark.parametrize("wanted", [{"a": [0, 1], "b": [0]}, {"a": [0, 0, 0]}], ids=["three", "one-named-thrice"])
@pytest.mark.parametrize("version", VERSIONS)
def test_naming_more_partitions_than_the_bound_is_refused_before_any_is_evaluated(
    bounded: Harness, monkeypatch: pytest.MonkeyPatch, version: int, wanted: dict[str, list[int]]
) -> None:
    refuse_evaluation(monkeypatch)
    log_length = len(bounded.log)
    response, records = elect(bounded, version, PREFERRED, wanted)
    assert response.error_code == (ErrorCode.POLICY_VIOLATION if version >= 1 else 0)  # v0 has no top-level code
    assert outcome(response) == [
        (name, index, ErrorCode.POLICY_VIOLATION) for name, indexes in wanted.items() for index in indexes
    ]
    assert {p.error_message for t in response.replica_election_results for p in t.partition_result} == {
        TOO_MANY_RECORDS
    }
    assert records == [] and len(bounded.log) == log_length and leaders(bounded) == [1, 1, 1]
    encode_response(response, version, 1)


@pytest.mark.parametrize("version", VERSIONS)
def test_a_null_list_over_a_cluster_larger_than_the_bound_is_refused(
    bounded: Harness, monkeypatch: pytest.MonkeyPatch, version: int
) -> None:
    refuse_evaluation(monkeypatch)
    response, records = elect(bounded, version, PREFERRED, None)
    if version == 0:  # no top-level code: every partition of the cluster carries the error
        assert response.error_code == 0
        assert outcome(response) == [("a", 0, 44), ("a", 1, 44), ("b", 0, 44)]
    else:  # Kafka's error response: the top-level code, and no partition named
        assert (response.error_code, response.replica_election_results) == (ErrorCode.POLICY_VIOLATION, ())
    assert records == [] and leaders(bounded) == [1, 1, 1]
    encode_response(response, version, 1)


@pytest.mark.parametrize("version", VERSIONS)
def test_naming_as_many_partitions_as_the_bound_elects_them(bounded: Harness, version: int) -> None:
    response, records = elect(bounded, version, PREFERRED, {"a": [0], "b": [0]})
    assert response.error_code == 0
    assert outcome(response) == [("a", 0, ErrorCode.NONE), ("b", 0, ErrorCode.NONE)]
    assert len(records) == 2 and leaders(bounded) == [0, 1, 0]
