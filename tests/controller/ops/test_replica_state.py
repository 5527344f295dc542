"""AlterReplicaState (fencer's KIP-589, key 1000) v0 (topic names) and v1 (topic ids)."""

from __future__ import annotations

import uuid

import pytest

from protocol.error_codes import ErrorCode
from protocol.messages.alter_replica_state import (
    OFFLINE,
    ONLINE,
    AlterReplicaStateRequest,
    AlterReplicaStateRequestTopicReplicas,
    AlterReplicaStateResponse,
    AlterReplicaStateResponsePartitionResult,
    AlterReplicaStateResponseTopicResult,
)
from protocol.messages.elect_leaders import PREFERRED, ElectLeadersRequest, ElectLeadersRequestTopicPartitions
from protocol.records.metadata import LOST_DIRECTORY, UNASSIGNED_DIRECTORY, PartitionChangeRecord

from ..harness import Harness

VERSIONS = [0, 1]
U, LOST = UNASSIGNED_DIRECTORY, LOST_DIRECTORY


@pytest.fixture
def h() -> Harness:
    harness = Harness()
    harness.start_brokers(0, 1, 2, 3)
    harness.create_topic("t", assignments=[[0, 1, 2], [1, 2, 0]])
    return harness


def results(response: AlterReplicaStateResponse) -> list[tuple[int, int]]:
    assert response.error_code == ErrorCode.NONE
    return [(p.partition_index, p.error_code) for topic in response.topics for p in topic.partitions]


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("new_state", [0, 3, -1])
def test_unknown_new_state_is_unknown_replica_state_before_the_epoch_check(
    h: Harness, version: int, new_state: int
) -> None:
    log_length = len(h.log)
    for epoch in (h.epoch(2), h.epoch(2) + 1):
        response, records = h.alter_replica_state(2, "t", [0], new_state, version=version, broker_epoch=epoch)
        assert response == AlterReplicaStateResponse(error_code=ErrorCode.UNKNOWN_REPLICA_STATE)
        assert int(ErrorCode.UNKNOWN_REPLICA_STATE) == 1000
        assert records == []
    assert len(h.log) == log_length


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("delta", [-1, 1], ids=["older", "newer"])
def test_other_broker_epoch_is_stale_broker_epoch(h: Harness, version: int, delta: int) -> None:
    log_length = len(h.log)
    response, records = h.alter_replica_state(2, "t", [0], OFFLINE, version=version, broker_epoch=h.epoch(2) + delta)
    assert response == AlterReplicaStateResponse(error_code=ErrorCode.STALE_BROKER_EPOCH)
    assert records == [] and len(h.log) == log_length
    assert not h.partition("t").is_offline(2)


@pytest.mark.parametrize("version", VERSIONS)
def test_unknown_broker_is_stale_broker_epoch(h: Harness, version: int) -> None:
    topic = AlterReplicaStateRequestTopicReplicas(name="t", topic_id=h.topic_id("t"), partitions=(0,))
    request = AlterReplicaStateRequest(broker_id=9, broker_epoch=0, new_state=OFFLINE, topics=(topic,))
    response, records = h.send(request, version)
    assert response == AlterReplicaStateResponse(error_code=ErrorCode.STALE_BROKER_EPOCH)
    assert records == []


def test_v0_unknown_topic_name_is_unknown_topic_or_partition(h: Harness) -> None:
    response, records = h.alter_replica_state(2, "missing", [0, 1], OFFLINE, version=0)
    assert response == AlterReplicaStateResponse(
        topics=(
            AlterReplicaStateResponseTopicResult(
                name="missing",
                partitions=tuple(
                    AlterReplicaStateResponsePartitionResult(
                        partition_index=i, error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                    )
                    for i in (0, 1)
                ),
            ),
        )
    )
    assert records == []


def test_v1_unknown_topic_id_is_unknown_topic_id(h: Harness) -> None:
    missing = uuid.uuid4()
    response, records = h.alter_replica_state(2, "", [0], OFFLINE, version=1, topic_id=missing)
    assert response == AlterReplicaStateResponse(
        topics=(
            AlterReplicaStateResponseTopicResult(
                topic_id=missing,
                partitions=(
                    AlterReplicaStateResponsePartitionResult(partition_index=0, error_code=ErrorCode.UNKNOWN_TOPIC_ID),
                ),
            ),
        )
    )
    assert records == []


@pytest.mark.parametrize("version", VERSIONS)
def test_partition_without_a_replica_on_the_broker_or_unknown_index_is_unknown_topic_or_partition(
    h: Harness, version: int
) -> None:
    log_length = len(h.log)
    response, records = h.alter_replica_state(3, "t", [0, 1], OFFLINE, version=version)  # 3 holds no replica
    assert results(response) == [(0, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION), (1, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)]
    response, records = h.alter_replica_state(2, "t", [5], OFFLINE, version=version)
    assert results(response) == [(5, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)]
    assert records == [] and len(h.log) == log_length


@pytest.mark.parametrize("version", VERSIONS)
def test_offline_follower_is_recorded_lost_and_leaves_the_isr(h: Harness, version: int) -> None:
    before = h.partition("t", 0)
    offset = h.next_offset
    response, records = h.alter_replica_state(2, "t", [0], OFFLINE, version=version)
    assert results(response) == [(0, ErrorCode.NONE)]
    assert response.topics[0].name == ("t" if version == 0 else "")
    assert response.topics[0].topic_id == (h.topic_id("t") if version == 1 else uuid.UUID(int=0))
    assert records == [
        PartitionChangeRecord(partition_id=0, topic_id=h.topic_id("t"), isr=(0, 1), directories=(U, U, LOST))
    ]
    assert h.log[offset][1] == 1  # `directories` is in PartitionChangeRecord v1
    after = h.partition("t", 0)
    assert after.is_offline(2) and after.isr == (0, 1)
    assert (after.leader, after.leader_epoch, after.partition_epoch) == (
        0,
        before.leader_epoch,
        before.partition_epoch + 1,
    )


@pytest.mark.parametrize("version", VERSIONS)
def test_offline_leader_hands_leadership_to_the_first_eligible_isr_replica(h: Harness, version: int) -> None:
    response, records = h.alter_replica_state(1, "t", [1], OFFLINE, version=version)
    assert results(response) == [(1, ErrorCode.NONE)]
    assert records == [
        PartitionChangeRecord(partition_id=1, topic_id=h.topic_id("t"), isr=(2, 0), leader=2, directories=(LOST, U, U))
    ]
    assert (h.partition("t", 1).leader, h.partition("t", 1).leader_epoch) == (2, 1)


@pytest.mark.parametrize("version", VERSIONS)
def test_offline_last_isr_member_stays_in_the_isr_and_the_partition_goes_leaderless(h: Harness, version: int) -> None:
    h.alter_isr("t", 0, [0])
    response, records = h.alter_replica_state(0, "t", [0], OFFLINE, version=version)
    assert results(response) == [(0, ErrorCode.NONE)]
    assert records == [
        PartitionChangeRecord(partition_id=0, topic_id=h.topic_id("t"), leader=-1, directories=(LOST, U, U))
    ]
    assert (h.partition("t").leader, h.partition("t").isr) == (-1, (0,))


@pytest.mark.parametrize("version", VERSIONS)
def test_already_offline_or_online_is_none_and_writes_nothing(h: Harness, version: int) -> None:
    log_length = len(h.log)
    response, records = h.alter_replica_state(2, "t", [0, 1], ONLINE, version=version)
    assert results(response) == [(0, ErrorCode.NONE), (1, ErrorCode.NONE)]
    assert records == [] and len(h.log) == log_length
    h.alter_replica_state(2, "t", [0], OFFLINE, version=version)
    log_length = len(h.log)
    response, records = h.alter_replica_state(2, "t", [0], OFFLINE, version=version)
    assert results(response) == [(0, ErrorCode.NONE)]
    assert records == [] and len(h.log) == log_length


@pytest.mark.parametrize("version", VERSIONS)
def test_online_records_the_unassigned_directory_and_leaves_the_isr_to_the_leader(h: Harness, version: int) -> None:
    h.alter_replica_state(2, "t", [0], OFFLINE, version=version)
    before = h.partition("t", 0)
    response, records = h.alter_replica_state(2, "t", [0], ONLINE, version=version)
    assert results(response) == [(0, ErrorCode.NONE)]
    assert records == [PartitionChangeRecord(partition_id=0, topic_id=h.topic_id("t"), directories=(U, U, U))]
    after = h.partition("t", 0)
    assert not after.is_offline(2) and after.isr == (0, 1) and after.leader == 0
    assert after.partition_epoch == before.partition_epoch + 1 and after.leader_epoch == before.leader_epoch
    # the leader adds it back with AlterPartition
    response_ap, records_ap = h.alter_isr("t", 0, [0, 1, 2])
    assert response_ap.topics[0].partitions[0].isr == (0, 1, 2) and len(records_ap) == 1


@pytest.mark.parametrize("version", VERSIONS)
def test_offline_replica_is_ineligible_for_the_isr_until_online(h: Harness, version: int) -> None:
    h.alter_replica_state(2, "t", [0], OFFLINE, version=version)
    response, records = h.alter_isr("t", 0, [0, 1, 2])
    assert response.topics[0].partitions[0].error_code == ErrorCode.INELIGIBLE_REPLICA and records == []
    h.alter_replica_state(2, "t", [0], ONLINE, version=version)
    response, records = h.alter_isr("t", 0, [0, 1, 2])
    assert response.topics[0].partitions[0].error_code == ErrorCode.NONE and len(records) == 1


def test_online_replica_of_a_leaderless_partition_whose_isr_holds_it_is_elected(h: Harness) -> None:
    h.alter_isr("t", 0, [0])
    h.alter_replica_state(0, "t", [0], OFFLINE)
    assert h.partition("t").leader == -1
    response, records = h.alter_replica_state(0, "t", [0], ONLINE)
    assert results(response) == [(0, ErrorCode.NONE)]
    assert records == [PartitionChangeRecord(partition_id=0, topic_id=h.topic_id("t"), leader=0, directories=(U, U, U))]


def test_offline_replica_is_never_elected_leader(h: Harness) -> None:
    h.alter_replica_state(1, "t", [1], OFFLINE)  # 1 was the leader and preferred replica of t-1
    request = ElectLeadersRequest(
        election_type=PREFERRED, topic_partitions=(ElectLeadersRequestTopicPartitions(topic="t", partitions=(1,)),)
    )
    response, records = h.send(request, 1)
    assert response.replica_election_results[0].partition_result[0].error_code == (
        ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE
    )
    assert records == []
