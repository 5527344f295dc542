"""Partition changes (`controller.ops.changes`): `change_record`, `record_version`, `removal`."""

from __future__ import annotations

import uuid

from controller.ops.changes import change_record, record_version, removal
from controller.state.model import RECOVERING, PartitionRegistration
from protocol.records.metadata import (
    NO_LEADER,
    BrokerRegistrationChangeRecord,
    PartitionRecord,
    RegisterBrokerRecord,
    RemoveTopicRecord,
    TopicRecord,
)
from tests.controller.one_partition import LOST, PART, TP, U, change


def everyone(broker_id: int) -> bool:
    return True


# ---------------------------------------------------------------------- change_record
def test_change_record_is_none_for_a_no_op() -> None:
    assert change_record(TP, PART) is None
    assert change_record(TP, PART, isr=(1, 2, 3), leader=1, directories=(U, U, U), leader_recovery_state=0) is None


def test_change_record_carries_only_what_changes() -> None:
    assert change_record(TP, PART, isr=(1, 2), leader=1) == change(isr=(1, 2))
    assert change_record(TP, PART, isr=(1, 2, 3), leader=2) == change(leader=2)
    assert change_record(TP, PART, leader_recovery_state=RECOVERING) == change(leader_recovery_state=RECOVERING)
    assert change_record(TP, PART, directories=(U, LOST, U)) == change(directories=(U, LOST, U))


def test_change_record_counts_a_reordered_isr_as_a_change() -> None:
    assert change_record(TP, PART, isr=(3, 2, 1)) == change(isr=(3, 2, 1))


def test_a_partition_change_is_written_at_v1_only_with_directories() -> None:
    assert record_version(change(isr=(1,))) == 0
    assert record_version(change(directories=(U, U, U))) == 1


# ---------------------------------------------------------------------- removal
def test_removal_of_a_follower_shrinks_the_isr_only() -> None:
    assert removal(TP, PART, 2, everyone) == change(isr=(1, 3))


def test_removal_of_the_leader_elects_the_first_eligible_new_isr_member_by_assignment_order() -> None:
    part = PartitionRegistration(replicas=(1, 2, 3), isr=(1, 3, 2), leader=1, leader_epoch=0, partition_epoch=0)
    assert removal(TP, part, 1, everyone) == change(isr=(3, 2), leader=2)
    assert removal(TP, part, 1, lambda b: b != 2) == change(isr=(3, 2), leader=3)


def test_removal_of_the_leader_with_no_eligible_successor_leaves_no_leader() -> None:
    assert removal(TP, PART, 1, lambda b: False) == change(isr=(2, 3), leader=NO_LEADER)


def test_removal_keeps_the_last_isr_member() -> None:
    last_leader = PartitionRegistration(replicas=(1, 2), isr=(1,), leader=1, leader_epoch=0, partition_epoch=0)
    assert removal(TP, last_leader, 1, everyone) == change(leader=NO_LEADER)
    last_leaderless = PartitionRegistration(replicas=(1, 2), isr=(1,), leader=-1, leader_epoch=1, partition_epoch=1)
    assert removal(TP, last_leaderless, 1, everyone) is None


def test_removal_never_elects_the_broker_being_removed() -> None:
    assert removal(TP, PART, 1, lambda b: True) == change(isr=(2, 3), leader=2)
    only_self = PartitionRegistration(replicas=(1, 2), isr=(1, 2), leader=1, leader_epoch=0, partition_epoch=0)
    assert removal(TP, only_self, 1, lambda b: b == 1) == change(isr=(2,), leader=NO_LEADER)


def test_removal_keeping_a_stuck_leader_changes_nothing() -> None:
    assert removal(TP, PART, 1, lambda b: False, keep_stuck_leader=True) is None
    assert removal(TP, PART, 1, everyone, keep_stuck_leader=True) == change(isr=(2, 3), leader=2)


def test_offline_removal_marks_the_replica_lost_in_the_same_record() -> None:
    assert removal(TP, PART, 3, everyone, offline=True) == change(isr=(1, 2), directories=(U, U, LOST))
    out_of_isr = PartitionRegistration(
        replicas=(1, 2, 3), isr=(1, 2), leader=1, leader_epoch=0, partition_epoch=0, directories=(U, U, U)
    )
    assert removal(TP, out_of_isr, 3, everyone, offline=True) == change(directories=(U, U, LOST))


def test_every_record_is_written_at_the_version_that_carries_its_content() -> None:
    topic_id = uuid.UUID(int=9)
    assert record_version(TopicRecord(name="t", topic_id=topic_id)) == 0
    assert record_version(RemoveTopicRecord(topic_id=topic_id)) == 0
    assert record_version(PartitionRecord(partition_id=0, topic_id=topic_id)) == 1  # directories
    assert record_version(RegisterBrokerRecord(broker_id=1)) == 3  # InControlledShutdown, log dirs
    assert record_version(BrokerRegistrationChangeRecord(broker_id=1, broker_epoch=5, fenced=1)) == 0
    assert record_version(BrokerRegistrationChangeRecord(broker_id=1, broker_epoch=5, in_controlled_shutdown=1)) == 1
