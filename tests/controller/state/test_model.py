"""PartitionRegistration.merge (Kafka's rule for applying a PartitionChangeRecord) and the value types."""

from __future__ import annotations

import uuid

import pytest

from controller.state.model import RECOVERED, RECOVERING, BrokerRegistration, PartitionRegistration
from protocol.records.metadata import (
    NO_LEADER,
    NO_LEADER_CHANGE,
    PartitionRecord,
)
from tests.controller.one_partition import LOST, TOPIC, U, change
from tests.controller.one_partition import PART as ONE_PARTITION

PART = ONE_PARTITION._replace(leader_epoch=4, partition_epoch=9)


@pytest.mark.parametrize("leader", [2, 1, NO_LEADER], ids=["other", "same", "none"])
def test_naming_a_leader_bumps_the_leader_epoch_even_the_same_one(leader: int) -> None:
    merged = PART.merge(change(leader=leader))
    assert (merged.leader, merged.leader_epoch, merged.partition_epoch) == (leader, 5, 10)
    assert (merged.isr, merged.replicas, merged.directories) == (PART.isr, PART.replicas, PART.directories)


def test_no_leader_change_keeps_the_leader_epoch_and_still_bumps_the_partition_epoch() -> None:
    merged = PART.merge(change(isr=(1, 2)))
    assert merged == PartitionRegistration(
        replicas=(1, 2, 3), isr=(1, 2), leader=1, leader_epoch=4, partition_epoch=10, directories=(U, U, U)
    )
    assert change().leader == NO_LEADER_CHANGE


def test_every_record_bumps_the_partition_epoch_by_one_even_an_empty_one() -> None:
    assert PART.merge(change()) == PartitionRegistration(
        replicas=(1, 2, 3), isr=(1, 2, 3), leader=1, leader_epoch=4, partition_epoch=10, directories=(U, U, U)
    )
    twice = PART.merge(change(isr=(1,))).merge(change(isr=(1, 2)))
    assert (twice.partition_epoch, twice.leader_epoch) == (11, 4)


def test_absent_fields_change_nothing_and_present_ones_replace() -> None:
    merged = PART.merge(
        change(replicas=(3, 2, 1), leader_recovery_state=RECOVERING, directories=(U, LOST, U), isr=(3,), leader=3)
    )
    assert merged == PartitionRegistration(
        replicas=(3, 2, 1),
        isr=(3,),
        leader=3,
        leader_epoch=5,
        partition_epoch=10,
        leader_recovery_state=RECOVERING,
        directories=(U, LOST, U),
    )
    assert merged.merge(change()).leader_recovery_state == RECOVERING  # -1: unchanged
    assert merged.merge(change(leader_recovery_state=RECOVERED)).leader_recovery_state == RECOVERED


def test_merge_returns_a_new_value() -> None:
    PART.merge(change(isr=(1,), leader=2))
    assert (PART.isr, PART.leader, PART.leader_epoch, PART.partition_epoch) == ((1, 2, 3), 1, 4, 9)


def test_offline_is_the_lost_directory_at_the_replica_position() -> None:
    part = PART.merge(change(directories=(U, LOST, U)))
    assert [part.is_offline(b) for b in (1, 2, 3, 99)] == [False, True, False, False]


def test_from_record_fills_missing_directories_and_to_record_round_trips() -> None:
    record = PartitionRecord(
        partition_id=2, topic_id=TOPIC, replicas=(1, 2), isr=(2,), leader=2, leader_epoch=3, partition_epoch=6
    )
    part = PartitionRegistration.from_record(record)
    assert part.directories == (U, U) and part.has_leader
    assert PartitionRegistration.from_record(part.to_record(TOPIC, 2)) == part
    assert part.to_record(TOPIC, 2) == PartitionRecord(
        partition_id=2,
        topic_id=TOPIC,
        replicas=(1, 2),
        isr=(2,),
        leader=2,
        leader_epoch=3,
        partition_epoch=6,
        directories=(U, U),
    )
    assert not part.merge(change(leader=NO_LEADER)).has_leader


@pytest.mark.parametrize(
    ("fenced", "shutting_down", "active"), [(False, False, True), (True, False, False), (False, True, False)]
)
def test_active_is_unfenced_and_not_in_controlled_shutdown(fenced: bool, shutting_down: bool, active: bool) -> None:
    broker = BrokerRegistration(
        broker_id=1, epoch=5, incarnation_id=uuid.UUID(int=1), fenced=fenced, in_controlled_shutdown=shutting_down
    )
    assert broker.active is active
    assert broker.with_changes(fenced=True).active is False
    assert broker.epoch == 5
